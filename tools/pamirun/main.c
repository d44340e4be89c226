/*
 * pamirun -n N [--timeout S] [--tag-output] [--] program [args...]
 *
 * Arguments, setup in order (job id, private directory, bootstrap server,
 * ranks), one event loop until every rank is reaped, and cleanup in
 * reverse order on every path. See docs/pamirun.md.
 */
#include "pamirun.h"

#include "local_wire.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* LOCAL_WIRE_MAX_SIZE, spelled out for messages built at compile time. */
#define PAMIRUN_MAX_SIZE_TEXT "4096"
_Static_assert(LOCAL_WIRE_MAX_SIZE == 4096, "update PAMIRUN_MAX_SIZE_TEXT");

static void usage(FILE *to)
{
    fprintf(to,
            "usage: pamirun -n N [--timeout S] [--tag-output] [--] program "
            "[args...]\n"
            "  -n, -np, --np N   number of ranks to start (1..%u)\n"
            "  --timeout S       kill the job after S seconds (exit 124)\n"
            "  --tag-output      prefix each output line with \"[rank] \"\n"
            "  -h, --help        this text\n"
            "Each rank gets PAMI_RANK, PAMI_SIZE, PAMI_JOB_ID and "
            "PAMI_BOOTSTRAP_SOCKET.\n",
            LOCAL_WIRE_MAX_SIZE);
}

__attribute__((format(printf, 1, 2)))
static int bad_usage(const char *fmt, ...)
{
    va_list ap;

    fputs("pamirun: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nrun 'pamirun --help' for usage\n", stderr);
    return -1;
}

static int parse_size(const char *text, uint32_t *out)
{
    char *end;

    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-' ||
        v < 1 || v > LOCAL_WIRE_MAX_SIZE)
        return bad_usage("-n wants a number of ranks from 1 to "
                         PAMIRUN_MAX_SIZE_TEXT ", got '%s'", text);
    *out = (uint32_t)v;
    return 0;
}

static int parse_timeout(const char *text, double *out)
{
    char *end;

    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(v) || v <= 0)
        return bad_usage("--timeout wants a positive number of seconds, "
                         "got '%s'", text);
    *out = v;
    return 0;
}

/* Returned for an option given without its value (already reported). */
static const char missing_value[] = "";

/* Matches "-n V", "-nV", "--np=V" style options; returns the value or
 * NULL, advancing *i past what it used. */
static const char *option_value(int argc, char **argv, int *i,
                                const char *name, int glued)
{
    const char *arg = argv[*i];
    size_t      len = strlen(name);

    if (strcmp(arg, name) == 0) {
        if (*i + 1 >= argc) {
            bad_usage("%s needs a value", name);
            return missing_value;
        }
        return argv[++*i];
    }
    if (strncmp(arg, name, len) == 0 &&
        (arg[len] == '=' || (glued && arg[len] != '\0')))
        return arg + len + (arg[len] == '=');
    return NULL;
}

/* Returns 0, 1 for --help, or -1 on bad usage. */
static int parse_args(int argc, char **argv, pamirun_job_t *job)
{
    int         have_n = 0;
    const char *v;
    int         i;

    for (i = 1; i < argc && argv[i][0] == '-'; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
            return 1;
        if (strcmp(arg, "--tag-output") == 0) {
            job->tag_output = 1;
            continue;
        }
        if ((v = option_value(argc, argv, &i, "--timeout", 0)) != NULL) {
            if (v == missing_value || parse_timeout(v, &job->timeout) != 0)
                return -1;
        } else if ((v = option_value(argc, argv, &i, "-np", 0)) != NULL ||
                   (v = option_value(argc, argv, &i, "--np", 0)) != NULL ||
                   (v = option_value(argc, argv, &i, "-n", 1)) != NULL) {
            if (v == missing_value || parse_size(v, &job->size) != 0)
                return -1;
            have_n = 1;
        } else {
            return bad_usage("unknown option '%s'", arg);
        }
    }
    if (!have_n)
        return bad_usage("missing -n N");
    if (i >= argc)
        return bad_usage("missing the program to run");
    job->argv = argv + i;
    return 0;
}

/* Each rank costs pamirun three descriptors (two pipes and a socket),
 * plus the connections it lets strangers hold and a spare (admit.c).
 * Raised only as far as needed, and the ranks get the original limit
 * back; refusing up front beats starting half a job. */
static int raise_fd_limit(pamirun_job_t *job)
{
    struct rlimit rl;
    rlim_t        need = (rlim_t)job->size * 3 + 32 + PAMIRUN_STRANGERS_MAX + 1;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_max < need) {
        fprintf(stderr, "pamirun: %u ranks need about %llu open files but "
                "the limit is %llu; raise it (ulimit -n)\n", job->size,
                (unsigned long long)need, (unsigned long long)rl.rlim_max);
        return -1;
    }
    job->saved_nofile = rl;
    rl.rlim_cur       = need;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0; /* let the first failing pipe or accept say why */
    job->nofile_raised = 1;
    return 0;
}

static int run(pamirun_job_t *job)
{
    job->loop = ev_default_loop(EVFLAG_AUTO);
    if (job->loop == NULL) {
        fprintf(stderr, "pamirun: cannot create the event loop\n");
        return PAMIRUN_EXIT_INTERNAL;
    }
    ev_set_userdata(job->loop, job);
    job->ranks = calloc(job->size, sizeof(*job->ranks));
    if (job->ranks == NULL) {
        fprintf(stderr, "pamirun: out of memory\n");
        return PAMIRUN_EXIT_INTERNAL;
    }
    job_make_id(job);
    job->started = time(NULL);
    job_watch_signals(job);
    if (workdir_create(job) == 0 && server_start(job) == 0) {
        spawn_ranks(job);
        job_start_timeout(job);
        if (job->running > 0)
            ev_run(job->loop, 0);
    } else {
        job->exit_code = PAMIRUN_EXIT_INTERNAL;
    }
    job_stop_watchers(job);
    server_stop(job);
    sysv_remove_orphans(job);
    workdir_remove(job);
    free(job->ranks);
    ev_loop_destroy(job->loop);
    return job->exit_code < 0 ? 0 : job->exit_code;
}

/* With 0, 1 or 2 closed, a pipe could land there and be clobbered when a
 * child sets up its stdio; fill the holes with /dev/null. */
static void ensure_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
            return;
}

int main(int argc, char **argv)
{
    pamirun_job_t job = {.exit_code = -1};

    ensure_std_fds();
    pami_log_init();
    int rc = parse_args(argc, argv, &job);
    if (rc != 0) {
        if (rc > 0)
            usage(stdout);
        return rc > 0 ? 0 : PAMIRUN_EXIT_USAGE;
    }
    if (raise_fd_limit(&job) != 0)
        return PAMIRUN_EXIT_INTERNAL;
    return run(&job);
}
