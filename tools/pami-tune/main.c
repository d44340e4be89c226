/*
 * pami-tune: the profiler of the collectives (docs/tuning.md).
 *
 *   pamirun -n N pami-tune [options] -o PROFILE.json   measure (a job)
 *   pami-tune --table PROFILE.json                     print, by hand
 *   pami-tune --plot PROFILE.json -o DIR               draw (matplotlib)
 *   pami-tune --merge A.json B.json... -o C.json       rounds of A, B, ...
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune.h"

static void usage(FILE *f)
{
    fprintf(f,
"usage: pamirun -n N pami-tune [options] -o PROFILE.json\n"
"       pami-tune --table PROFILE.json\n"
"       pami-tune --plot PROFILE.json -o DIR\n"
"       pami-tune --merge A.json B.json... -o OUT.json  (the files' rounds\n"
"                         one after another: sweeps of other times)\n"
"options of a measurement:\n"
"  --sizes MIN:MAX        bytes per rank, powers of two (default 8:4M; K, M)\n"
"  --collectives LIST     comma-separated names (default: every collective\n"
"                         but gatherv, scatterv, alltoallv)\n"
"  --shapes LIST          world,half,strided,spread,packed (default: all\n"
"                         that this job has)\n"
"  --types all|basic      reductions: int32 int64 float double + a user op\n"
"                         (all, default), or int32 and double\n"
"  --reps N               repetitions per point (default 20)\n"
"  --budget MINUTES       repetitions per point chosen to fit this time\n"
"  --time-limit MINUTES   stop after this long (a valid partial profile)\n"
"  --deadline SECONDS     a call slower than this fails its point (2)\n"
"  --batch-us US          a repetition: back-to-back calls for about this\n"
"                         long (default 5000; 1: one call)\n"
"  --quick                8 B - 32 KiB by x8, world only, int32 and double,\n"
"                         5 repetitions\n"
"  --rounds N             N sweeps, each a round of the profile with the\n"
"                         machine's floor at its start and end (default 1;\n"
"                         at most 64)\n"
"  --round-gap MINUTES    wait this long between rounds\n"
"  --resume PROFILE.json  keep its measured points, measure the rest\n"
"                         (-o defaults to it)\n"
"  --no-progress          no progress output\n");
}

static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *s == '-' || v > COLL_PROFILE_MAX_BYTES)
        return false;
    /* Checked before the shift, which could wrap a huge count to a
     * small one. */
    if (*end == 'K' || *end == 'k')
        v <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        v <<= 20, end++;
    /* Powers of two, as the sweep doubles from MIN (docs/tuning.md). */
    if (*end != '\0' || v == 0 || v > COLL_PROFILE_MAX_BYTES ||
        (v & (v - 1)) != 0)
        return false;
    *out = v;
    return true;
}

static bool parse_list(const char *s, tune_opts_t *o, bool shapes)
{
    char *copy = strdup(s), *save = NULL;
    bool ok = copy != NULL;
    if (shapes)
        o->shapes = 0;
    else
        memset(o->kinds, 0, sizeof(o->kinds));
    for (char *w = ok ? strtok_r(copy, ",", &save) : NULL; w && ok;
         w = strtok_r(NULL, ",", &save)) {
        if (shapes) {
            static const char *const n[] = {"world", "half", "strided",
                                            "spread", "packed"};
            int k = -1;
            for (int i = 0; i < 5; i++)
                if (strcmp(w, n[i]) == 0)
                    k = i;
            ok = k >= 0;
            if (ok)
                o->shapes |= 1u << k;
        } else {
            int k = coll_kind_by_name(w);
            ok = k >= 0;
            if (ok)
                o->kinds[k] = true;
        }
    }
    free(copy);
    /* An empty list (or only commas) would measure nothing. */
    bool any = shapes ? o->shapes != 0 : false;
    for (unsigned k = 0; !shapes && k < PAMI_XFER_COUNT; k++)
        any = any || o->kinds[k];
    return ok && any;
}

static double minutes(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    return *end == '\0' && v > 0 ? v * 60 : -1;
}

static void on_signal(int sig)
{
    if (tune_stop_signal) { /* asked twice: go */
        signal(sig, SIG_DFL);
        raise(sig);
    }
    tune_stop_signal = 1;
}

static int plot(const char *profile, const char *dir)
{
    const char *scripts[] = {PAMI_TUNE_PLOT_SRC, PAMI_TUNE_PLOT_INST};
    /* Debian's python3-matplotlib is for /usr/bin/python3, which another
     * python3 on the PATH may hide; PAMI_TUNE_PYTHON chooses. */
    const char *py = getenv("PAMI_TUNE_PYTHON");
    if (py == NULL || *py == '\0')
        py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3"
                                                    : "python3";
    for (size_t i = 0; i < 2; i++)
        if (access(scripts[i], R_OK) == 0) {
            execlp(py, py, scripts[i], profile, dir, (char *)NULL);
            fprintf(stderr, "pami-tune: cannot run %s: %s\n", py,
                    strerror(errno));
            return 1;
        }
    fprintf(stderr, "pami-tune: plot.py not found (%s)\n", scripts[1]);
    return 1;
}

int main(int argc, char **argv)
{
    tune_opts_t o = {.min_bytes = 8, .max_bytes = 4u << 20,
                     .shapes = 0x1f, .all_types = true, .reps = 20,
                     .deadline_s = 2, .batch_us = 5000,
                     .progress = true, .rounds = 1};
    for (unsigned k = 0; k < PAMI_XFER_COUNT; k++)
        o.kinds[k] = k != PAMI_XFER_GATHERV && k != PAMI_XFER_SCATTERV &&
                     k != PAMI_XFER_ALLTOALLV;
    const char *table = NULL, *plot_in = NULL;
    const char **merge_in = NULL;
    size_t nmerge = 0;
    bool sizes_set = false, shapes_set = false, reps_set = false,
         types_set = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true, takes = true;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--quick") == 0) {
            o.quick = true;
            takes = false;
        } else if (strcmp(a, "--no-progress") == 0) {
            o.progress = false;
            takes = false;
        } else if (v == NULL) {
            ok = false;
        } else if (strcmp(a, "-o") == 0) {
            o.out = v;
        } else if (strcmp(a, "--table") == 0) {
            table = v;
        } else if (strcmp(a, "--plot") == 0) {
            plot_in = v;
        } else if (strcmp(a, "--merge") == 0) {
            /* The files up to the next option. */
            merge_in = (const char **)&argv[i + 1];
            while (i + 1 + (int)nmerge < argc &&
                   argv[i + 1 + nmerge][0] != '-')
                nmerge++;
            ok = nmerge > 0;
            i += (int)nmerge - 1;
        } else if (strcmp(a, "--rounds") == 0) {
            char *end;
            long n = strtol(v, &end, 10);
            ok = *end == '\0' && n >= 1 && n <= COLL_PROFILE_MAX_ROUNDS;
            o.rounds = (unsigned)n;
        } else if (strcmp(a, "--round-gap") == 0) {
            ok = (o.gap_s = minutes(v)) > 0;
        } else if (strcmp(a, "--resume") == 0) {
            o.resume = v;
        } else if (strcmp(a, "--sizes") == 0) {
            char *c = strchr(v, ':'), lo[32];
            ok = c != NULL && (size_t)(c - v) < sizeof(lo);
            if (ok) {
                memcpy(lo, v, (size_t)(c - v));
                lo[c - v] = '\0';
                ok = parse_size(lo, &o.min_bytes) &&
                     parse_size(c + 1, &o.max_bytes) &&
                     o.min_bytes <= o.max_bytes;
            }
            sizes_set = true;
        } else if (strcmp(a, "--collectives") == 0) {
            ok = parse_list(v, &o, false);
        } else if (strcmp(a, "--shapes") == 0) {
            ok = parse_list(v, &o, true);
            shapes_set = true;
        } else if (strcmp(a, "--types") == 0) {
            ok = strcmp(v, "all") == 0 || strcmp(v, "basic") == 0;
            o.all_types = strcmp(v, "all") == 0;
            types_set = true;
        } else if (strcmp(a, "--reps") == 0) {
            char *end;
            long r = strtol(v, &end, 10);
            ok = *end == '\0' && r >= 1 && r <= 100000;
            o.reps = (unsigned)r;
            reps_set = true;
        } else if (strcmp(a, "--budget") == 0) {
            ok = (o.budget_s = minutes(v)) > 0;
        } else if (strcmp(a, "--time-limit") == 0) {
            ok = (o.limit_s = minutes(v)) > 0;
        } else if (strcmp(a, "--deadline") == 0) {
            char *end;
            o.deadline_s = strtod(v, &end);
            ok = *end == '\0' && o.deadline_s > 0;
        } else if (strcmp(a, "--batch-us") == 0) {
            char *end;
            o.batch_us = strtod(v, &end);
            ok = *end == '\0' && o.batch_us >= 1 && o.batch_us <= 1e7;
        } else {
            ok = false;
        }
        if (!ok) {
            fprintf(stderr, "pami-tune: bad option %s%s%s\n", a,
                    takes && v ? " " : "", takes && v ? v : "");
            usage(stderr);
            return 2;
        }
        if (takes)
            i++;
    }
    if (table != NULL)
        return tune_table(table);
    if (merge_in != NULL) {
        if (o.out == NULL) {
            fprintf(stderr, "pami-tune: --merge needs -o OUT.json\n");
            return 2;
        }
        return tune_merge(merge_in, nmerge, o.out);
    }
    if (plot_in != NULL) {
        if (o.out == NULL) {
            fprintf(stderr, "pami-tune: --plot needs -o DIR\n");
            return 2;
        }
        return plot(plot_in, o.out);
    }
    if (o.out == NULL)
        o.out = o.resume;
    if (o.out == NULL) {
        fprintf(stderr, "pami-tune: no output file (-o PROFILE.json)\n");
        usage(stderr);
        return 2;
    }
    if (o.quick) {
        if (!sizes_set) {
            o.min_bytes = 8;
            o.max_bytes = 32 * 1024;
        }
        if (!shapes_set)
            o.shapes = TUNE_SHAPE_WORLD;
        if (!reps_set)
            o.reps = 5;
        if (!types_set)
            o.all_types = false;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    pami_client_t client;
    pami_context_t ctx;
    pami_result_t rc = pami_client_create("pami-tune", NULL, &client);
    if (rc == PAMI_SUCCESS)
        rc = pami_context_createv(client, NULL, 1, &ctx);
    if (rc != PAMI_SUCCESS) {
        fprintf(stderr, "pami-tune: cannot start: %s\n", pami_error_text(rc));
        return 1;
    }
    coll_profile_t prof = {0};
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_NODES |
                                          PAMI_CLIENT_ATTR_SIZE |
                                          PAMI_CLIENT_ATTR_TASK |
                                          PAMI_CLIENT_ATTR_TRANSPORT};
    pami_client_query(client, &a);
    snprintf(prof.producer, sizeof(prof.producer), "pami %d.%d.%d pami-tune",
             PAMI_VERSION_MAJOR, PAMI_VERSION_MINOR, PAMI_VERSION_PATCH);
    coll_machine_local(&prof.machine);
    prof.machine.nodes = a.num_nodes > 0 ? (uint32_t)a.num_nodes : 1;
    uint32_t ppn = 0;
    for (size_t n = 0; a.task_node != NULL && n < a.num_nodes; n++) {
        uint32_t c = 0;
        for (size_t t = 0; t < a.size; t++)
            c += a.task_node[t] == n;
        if (c > ppn)
            ppn = c;
    }
    prof.machine.ppn = ppn > 0 ? ppn : (uint32_t)a.size;
    snprintf(prof.machine.ucx, sizeof(prof.machine.ucx), "%s",
             a.ucx_version ? a.ucx_version : "");
    snprintf(prof.machine.transports, sizeof(prof.machine.transports), "%s",
             a.transports ? a.transports : "");
    int r = tune_run(client, ctx, &o, &prof);
    if (a.task == 0 && r >= 0)
        fprintf(stderr, "pami-tune: %s %s (%zu points)\n",
                r == 0 ? "wrote" : "wrote a partial profile to", o.out,
                prof.n);
    coll_profile_free(&prof);
    pami_context_destroyv(&ctx, 1);
    pami_client_destroy(&client);
    return r < 0 ? 1 : r == 1 ? 130 : 0;
}
