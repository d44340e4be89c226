/*
 * env_malformed_every: every variable of config.md with a number or a
 * bool as its default set to a malformed value at once, on a second
 * client of the case process whose stderr goes to a file (the case's own
 * client was made at level error by the runner: the warnings must still
 * come, at the level of the client that reads the variables).
 */
#include "cf.h"

#include <pami_collectives.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_VARS 128

static int runner_allgather(void *k, const void *s, void *r, size_t len)
{
    (void)k;
    return cf_allgather(s, r, len);
}

/* A size or a bool: "12q" is neither (config.md, "Value syntax"). */
static int numeric_default(const char *d)
{
    if (d == NULL || !isdigit((unsigned char)d[0]))
        return 0;
    size_t n = strspn(d, "0123456789");
    return d[n] == '\0' || (strchr("kKmMgG", d[n]) && d[n + 1] == '\0');
}

/* Lines of text naming var as a whole word. */
static size_t lines_naming(const char *text, const char *var)
{
    size_t n = 0, len = strlen(var);
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        for (const char *p = line; p + len <= line + ll; p++)
            if (strncmp(p, var, len) == 0 &&
                (p + len == line + ll ||
                 !(isalnum((unsigned char)p[len]) || p[len] == '_'))) {
                n++;
                break;
            }
        line += ll + (end ? 1 : 0);
    }
    return n;
}

static void env_malformed_every(cf_env_t *e)
{
    static char names[MAX_VARS][64];
    size_t nv = 0;
    pami_config_var_t v;
    for (unsigned i = 0; nv < MAX_VARS && pami_config_var(i, &v) ==
                                              PAMI_SUCCESS; i++)
        if (numeric_default(v.default_value))
            snprintf(names[nv++], sizeof(names[0]), "%s", v.name);
    CF_CHECK(e, nv >= 20, "expected config.md's numeric and bool variables "
             "from pami_config_var, seen %zu", nv);
    /* "the built-in protocols' variables take an empty value as unset,
     * without a warning": one of them empty instead. */
    const char *empty_ok = "PAMI_SVD_TREE_FANOUT";
    for (size_t i = 0; i < nv; i++)
        setenv(names[i], strcmp(names[i], empty_ok) == 0 ? "" : "12q", 1);
    setenv("PAMI_LOG_LEVEL", "loud", 1);
    /* "For the core's variables an empty value is malformed too" (the
     * params choose oob whatever PAMI_BOOTSTRAP says). */
    setenv("PAMI_BOOTSTRAP", "", 1);

    char path[] = "/tmp/pami-cf-env-XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    CF_CHECK(e, fd >= 0 && saved >= 0, "expected a scratch file for stderr");
    unlink(path);
    fflush(stderr);
    dup2(fd, 2);
    pami_client_params_t p = {.field_mask = PAMI_CLIENT_PARAM_OOB,
                              .oob_allgather = runner_allgather,
                              .oob_task = e->task, .oob_size = e->size};
    pami_client_t c2 = NULL;
    pami_context_t cx = NULL;
    pami_result_t rc_client = pami_client_create("malformed", &p, &c2);
    pami_result_t rc_ctx = rc_client == PAMI_SUCCESS
                               ? pami_context_createv(c2, NULL, 1, &cx)
                               : PAMI_ERROR;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    for (size_t i = 0; i < nv; i++)
        unsetenv(names[i]);
    unsetenv("PAMI_LOG_LEVEL");
    unsetenv("PAMI_BOOTSTRAP");
    static char log[65536];
    ssize_t got = pread(fd, log, sizeof(log) - 1, 0);
    log[got > 0 ? got : 0] = '\0';
    close(fd);

    /* "A malformed value is not fatal". */
    CF_CHECK(e, rc_client == PAMI_SUCCESS && rc_ctx == PAMI_SUCCESS,
             "expected malformed values to be no error, seen %s from "
             "pami_client_create and %s from pami_context_createv",
             cf_rc_name(rc_client), cf_rc_name(rc_ctx));
    /* "logs a warning naming the variable" (the built-in protocols': "a
     * warning naming the variable"): one each, and the log level's. */
    pami_client_attr_t node = {.field_mask =
                                   PAMI_CLIENT_ATTR_LOCAL_TASKS |
                                   PAMI_CLIENT_ATTR_LOCAL_CPUS};
    CF_OK(e, pami_client_query(c2, &node));
    char off[512] = "";
    size_t noff = 0;
    for (size_t i = 0; i < nv; i++) {
        size_t n = lines_naming(log, names[i]), want = 1;
        /* coll_select's variables are "read once per process, when the
         * first context starts": the case's own client read them. */
        if (strcmp(names[i], "PAMI_COLL_LOG") == 0 ||
            strcmp(names[i], empty_ok) == 0)
            want = 0;
        /* "only when the node has a cpu for each of its tasks". */
        if (strcmp(names[i], "PAMI_COLL_SPIN_US") == 0 &&
            node.num_local_cpus < node.num_local_tasks)
            want = 0;
        if (n != want) {
            size_t l = strlen(off);
            snprintf(off + l, sizeof(off) - l, " %.48s:%zu", names[i], n);
            noff++;
        }
    }
    CF_CHECK(e, noff == 0, "expected one warning naming each variable set "
             "to 12q (config.md, \"Value syntax\"; none for coll_select's, "
             "read once per process), seen %zu of %zu otherwise "
             "(variable:lines):%s", noff, nv, off);
    size_t n = lines_naming(log, "PAMI_LOG_LEVEL");
    CF_CHECK(e, n == 1, "expected one warning naming PAMI_LOG_LEVEL=loud, "
             "seen %zu", n);
    n = lines_naming(log, "PAMI_BOOTSTRAP");
    CF_CHECK(e, n == 1, "expected one warning naming PAMI_BOOTSTRAP= (empty), "
             "seen %zu", n);
    /* "and keeps the default": what the client and its world show. */
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_IMMEDIATE_MAX |
                                          PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    CF_OK(e, pami_client_query(c2, &a));
    CF_CHECK(e, a.immediate_max == 1024 && a.rndv_threshold == 65536,
             "expected the defaults 1024 and 65536, seen %zu and %zu",
             a.immediate_max, a.rndv_threshold);
    pami_geometry_t world;
    CF_OK(e, pami_geometry_world(cx, &world));
    pami_geometry_attr_t ga = {.field_mask = PAMI_GEOMETRY_ATTR_CONNID};
    CF_OK(e, pami_geometry_query(world, &ga));
    CF_CHECK(e, ga.connid_threshold == 64, "expected PAMI_CONNID_THRESHOLD's "
             "default 64, seen %u", ga.connid_threshold);
    CF_OK(e, pami_geometry_barrier(cx, world));
    CF_OK(e, pami_dispatch_fence(c2));
    CF_OK(e, pami_client_destroy(&c2));
}

const cf_case_t cf_config_bad_cases[] = {
    {"core", "env_malformed_every", 1, 0, 0, env_malformed_every, NULL},
};
const size_t cf_num_config_bad_cases =
    sizeof(cf_config_bad_cases) / sizeof(cf_config_bad_cases[0]);
