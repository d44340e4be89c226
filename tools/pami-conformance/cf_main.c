/*
 * pami-conformance: pami's semantic suite, run under the job's launcher.
 *
 *   pamirun -n N pami-conformance [--suite S] [--protocol P.so]... [--list]
 *       [--filter GLOB] [--repeat N] [--seed S] [--timeout SEC] [--tap]
 *       [--junit FILE] [--verbose]
 *
 * Each rank's runner runs every selected case as a process of its own that
 * joins a fresh pami job through the runners' exchange; see
 * docs/conformance.md.
 */
#include "cf_cases.h"
#include "cf_child.h"
#include "cf_plugin.h"
#include "cf_report.h"
#include "cf_run.h"

#include <fnmatch.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: pamirun -n N pami-conformance [options]\n"
        "  --suite S        core, rma, coll, protocols, user or all (default;\n"
        "                   may be given more than once); selftest (the\n"
        "                   runner's own cases that die on purpose) only\n"
        "                   when named\n"
        "  --protocol P.so  also run the generic protocol suite over the\n"
        "                   plug-in and its own cases (suite user); repeatable\n"
        "  --list           print the selected cases and exit\n"
        "  --filter GLOB    only cases whose suite.name matches (repeatable)\n"
        "  --repeat N       run each case N times (default 1)\n"
        "  --seed S         seed of the cases' data (default: from the clock,\n"
        "                   printed)\n"
        "  --timeout SEC    per case run (default 60)\n"
        "  --tap            TAP 13 on stdout instead of the summary\n"
        "  --junit FILE     also write JUnit XML to FILE\n"
        "  --verbose        keep pami's warnings (the cases provoke many);\n"
        "                   without it PAMI_LOG_LEVEL defaults to error\n"
        "Exit status 0 only when every selected case passed.\n");
}

/* The launcher's rank, before pami is up (for --list). */
static long launcher_rank(void)
{
    const char *vars[] = {"PAMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                          "PMI_RANK"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL)
            return atol(v);
    }
    return 0;
}

static int case_process(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "pami-conformance: --case-process is the runner's "
                "own (got %d arguments)\n", argc);
        return 2;
    }
    const char *plugin = argv[7][0] ? argv[7] : NULL;
    cf_entry_t ent;
    if (cf_cases_find(argv[2], plugin, &ent) != 0) {
        fprintf(stderr, "pami-conformance: no case %s\n", argv[2]);
        return 2;
    }
    if (ent.c.run == NULL) {
        /* A plug-in's own case: its client loads the plug-in. */
        cf_plugin_select_user(ent.user_index);
        ent.c.run = cf_plugin_user_run;
        ent.c.flags |= CF_LOAD_PLUGIN;
    }
    cf_child_args_t a = {.rank = (pami_task_t)strtoul(argv[3], NULL, 10),
                         .size = strtoul(argv[4], NULL, 10),
                         .seed = strtoull(argv[5], NULL, 10),
                         .timeout = strtod(argv[6], NULL),
                         .plugin = plugin};
    return cf_child_main(&ent.c, &a);
}

/* Joins the per-rank results into one outcome. */
static void outcome_of(const cf_result_msg_t *all, size_t size,
                       cf_outcome_t *o)
{
    int worst = CF_PASSED;
    size_t len = 0, rlen = 0;
    o->ranks[0] = '\0';
    for (size_t r = 0; r < size; r++)
        if (all[r].status != CF_PASSED) {
            len += strlen(all[r].msg) + 2;
            if (worst == CF_PASSED || all[r].status == CF_CRASHED ||
                (all[r].status == CF_FAILED && worst == CF_TIMEOUT))
                worst = all[r].status;
            int n = snprintf(o->ranks + rlen, sizeof(o->ranks) - rlen,
                             "%s%zu", rlen ? "," : "", r);
            if (n > 0 && (size_t)n < sizeof(o->ranks) - rlen)
                rlen += (size_t)n;
        }
    o->status = worst;
    if (worst == CF_PASSED)
        return;
    o->detail = calloc(1, len + 1);
    if (o->detail == NULL)
        return;
    /* The ranks whose status is the case's first, so its first line says
     * what was expected and what was seen. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t r = 0; r < size; r++)
            if (all[r].status != CF_PASSED &&
                (all[r].status == worst) == (pass == 0)) {
                if (o->detail[0])
                    strcat(o->detail, "\n");
                strcat(o->detail, all[r].msg);
            }
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--case-process") == 0)
        return case_process(argc, argv);

    static const struct option opts[] = {
        {"suite", required_argument, NULL, 's'},
        {"protocol", required_argument, NULL, 'p'},
        {"list", no_argument, NULL, 'l'},
        {"filter", required_argument, NULL, 'f'},
        {"repeat", required_argument, NULL, 'r'},
        {"seed", required_argument, NULL, 'S'},
        {"timeout", required_argument, NULL, 't'},
        {"tap", no_argument, NULL, 'T'},
        {"junit", required_argument, NULL, 'j'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *suites[8], *filters[32], *plugins[CF_MAX_PLUGINS];
    size_t nsuites = 0, nfilters = 0, nplugins = 0;
    int list = 0, tap = 0, verbose = 0;
    long repeat = 1;
    uint64_t seed = (uint64_t)time(NULL);
    double timeout = 60;
    const char *junit = NULL;
    int o;
    while ((o = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (o) {
        case 's':
            if (!cf_suite_known(optarg) || nsuites == 8) {
                fprintf(stderr, "pami-conformance: unknown suite '%s'\n",
                        optarg);
                return 2;
            }
            suites[nsuites++] = optarg;
            break;
        case 'p':
            if (nplugins == CF_MAX_PLUGINS) {
                fprintf(stderr, "pami-conformance: at most %d plug-ins\n",
                        CF_MAX_PLUGINS);
                return 2;
            }
            plugins[nplugins++] = optarg;
            break;
        case 'l': list = 1; break;
        case 'f':
            if (nfilters == 32) {
                fprintf(stderr, "pami-conformance: too many filters\n");
                return 2;
            }
            filters[nfilters++] = optarg;
            break;
        case 'r':
            repeat = atol(optarg);
            if (repeat < 1) {
                fprintf(stderr, "pami-conformance: --repeat needs >= 1\n");
                return 2;
            }
            break;
        case 'S': seed = strtoull(optarg, NULL, 0); break;
        case 't':
            timeout = strtod(optarg, NULL);
            if (!(timeout > 0)) {
                fprintf(stderr, "pami-conformance: --timeout needs > 0\n");
                return 2;
            }
            break;
        case 'T': tap = 1; break;
        case 'j': junit = optarg; break;
        case 'v': verbose = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "pami-conformance: unexpected argument '%s'\n",
                argv[optind]);
        usage(stderr);
        return 2;
    }
    if (nsuites == 0)
        suites[nsuites++] = "all";
    /* Negative cases make pami warn by design, thousands of lines per run;
     * the case processes inherit this, a level the user set still wins. */
    if (!verbose)
        setenv("PAMI_LOG_LEVEL", "error", 0);

    cf_entry_t *cases = NULL;
    size_t ncases = 0;
    if (cf_cases_select(suites, nsuites, plugins, nplugins, &cases,
                        &ncases) != 0)
        return 2;
    /* Filters keep the cases whose suite.name matches any of them. */
    size_t kept = 0;
    for (size_t i = 0; i < ncases; i++) {
        int keep = nfilters == 0;
        for (size_t f = 0; f < nfilters && !keep; f++)
            keep = fnmatch(filters[f], cases[i].id, 0) == 0;
        if (keep)
            cases[kept++] = cases[i];
    }
    ncases = kept;

    if (list) {
        if (launcher_rank() == 0)
            for (size_t i = 0; i < ncases; i++)
                printf("%s\n", cases[i].id);
        free(cases);
        return 0;
    }

    cf_channel_t *ch = cf_channel_open();
    if (ch == NULL)
        return 2;
    size_t size = cf_channel_size(ch);
    int lead = cf_channel_rank(ch) == 0;
    /* One seed for the job: rank 0's (the clocks' seconds may differ). */
    uint64_t *seeds = calloc(size, sizeof(*seeds));
    if (seeds == NULL ||
        cf_channel_put(ch, UINT32_MAX, 0, &seed, sizeof(seed)) != 0)
        return 2;
    while (cf_channel_take(ch, UINT32_MAX, 0, seeds, sizeof(seed)) == 0)
        cf_channel_wait(ch, 50);
    seed = seeds[0];
    free(seeds);
    size_t nout = ncases * (size_t)repeat;
    cf_outcome_t *out = calloc(nout ? nout : 1, sizeof(*out));
    cf_result_msg_t *all = calloc(size, sizeof(*all));
    if (out == NULL || all == NULL)
        return 2;
    if (lead) {
        if (tap) {
            printf("# pami-conformance: %zu ranks, seed %llu, timeout %.0f s\n",
                   size, (unsigned long long)seed, timeout);
            cf_report_tap_plan(stdout, nout);
        } else {
            printf("pami-conformance: %zu cases on %zu ranks, seed %llu, "
                   "timeout %.0f s\n", nout, size, (unsigned long long)seed,
                   timeout);
        }
    }
    int broken = 0;
    size_t k = 0;
    for (long rep = 0; rep < repeat; rep++)
        for (size_t i = 0; i < ncases; i++, k++) {
            cf_outcome_t *oc = &out[k];
            if (rep == 0)
                snprintf(oc->id, sizeof(oc->id), "%s", cases[i].id);
            else
                snprintf(oc->id, sizeof(oc->id), "%s@%ld", cases[i].id,
                         rep + 1);
            snprintf(oc->suite, sizeof(oc->suite), "%s", cases[i].suite);
            const cf_case_t *c = &cases[i].c;
            if (size < c->min_ranks || (c->max_ranks && size > c->max_ranks)) {
                oc->status = CF_SKIPPED;
                char why[64];
                snprintf(why, sizeof(why), "needs %zu..%zu ranks",
                         c->min_ranks, c->max_ranks);
                if (!c->max_ranks)
                    snprintf(why, sizeof(why), "needs %zu ranks or more",
                             c->min_ranks);
                oc->detail = strdup(why);
            } else if (!broken) {
                cf_run_args_t a = {.self = argv[0], .case_id = cases[i].id,
                                   .run = (uint32_t)k,
                                   .seed = seed + (uint64_t)rep,
                                   .timeout = timeout,
                                   .plugin = cases[i].plugin};
                double t0 = cf_now();
                if (cf_run_case(ch, &a, all) != 0) {
                    /* The runners lost each other: nothing more can run. */
                    broken = 1;
                    oc->status = CF_TIMEOUT;
                    oc->detail = strdup("the runners of the other ranks did "
                                        "not report: the job is broken");
                    snprintf(oc->ranks, sizeof(oc->ranks), "?");
                } else {
                    outcome_of(all, size, oc);
                }
                oc->seconds = cf_now() - t0;
            } else {
                oc->status = CF_CRASHED;
                oc->detail = strdup("not run: the job broke earlier");
            }
            if (lead) {
                if (tap)
                    cf_report_tap(stdout, k + 1, oc);
                else
                    cf_report_line(stdout, oc);
            }
        }
    int ok = 1;
    for (size_t i = 0; i < nout; i++)
        if (out[i].status != CF_PASSED && out[i].status != CF_SKIPPED)
            ok = 0;
    if (lead) {
        if (!tap)
            cf_report_summary(stdout, out, nout);
        if (junit != NULL && cf_report_junit(junit, out, nout) != 0) {
            fprintf(stderr, "pami-conformance: cannot write %s\n", junit);
            ok = 0;
        }
    }
    if (!broken)
        cf_channel_close(ch);
    for (size_t i = 0; i < nout; i++)
        free(out[i].detail);
    free(out);
    free(all);
    free(cases);
    return ok ? 0 : 1;
}
