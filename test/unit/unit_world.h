/*
 * Scaffolding shared by the one-process unit tests: a client of one task
 * with n contexts that talk to each other, and callback counters.
 * Include after <cmocka.h> and "pami.h"; everything is static.
 */
#ifndef UNIT_WORLD_H
#define UNIT_WORLD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define UNIT_MAX_CTX 4

static inline uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

typedef struct {
    pami_client_t      client;
    pami_context_t     ctx[UNIT_MAX_CTX];
    size_t             n;
    pami_client_attr_t attr;
} world_t;

/* n may be 0: a client without contexts. */
static inline world_t *world_up(size_t n)
{
    world_t *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    assert_true(n <= UNIT_MAX_CTX);
    assert_int_equal(pami_client_create("unit", NULL, &w->client),
                     PAMI_SUCCESS);
    if (n > 0)
        assert_int_equal(pami_context_createv(w->client, NULL, n, w->ctx),
                         PAMI_SUCCESS);
    w->n = n;
    w->attr.field_mask = PAMI_CLIENT_ATTR_DISPATCH_MAX |
                         PAMI_CLIENT_ATTR_HEADER_MAX |
                         PAMI_CLIENT_ATTR_IMMEDIATE_MAX |
                         PAMI_CLIENT_ATTR_RNDV_THRESHOLD;
    assert_int_equal(pami_client_query(w->client, &w->attr), PAMI_SUCCESS);
    return w;
}

static inline void world_down(world_t *w)
{
    if (w->client != NULL)
        assert_int_equal(pami_client_destroy(&w->client), PAMI_SUCCESS);
    assert_null(w->client);
    free(w);
}

static inline pami_endpoint_t endpoint(world_t *w, size_t offset)
{
    pami_endpoint_t ep = PAMI_ENDPOINT_NULL;
    assert_int_equal(pami_endpoint_create(w->client, 0, offset, &ep),
                     PAMI_SUCCESS);
    return ep;
}

static inline void advance_all(world_t *w)
{
    for (size_t i = 0; i < w->n; i++) {
        pami_result_t rc = pami_context_advance(w->ctx[i], 1);
        if (rc != PAMI_SUCCESS && rc != PAMI_EAGAIN)
            fail_msg("advance of context %zu: %s", i, pami_error_text(rc));
    }
}

#include "../cb_count.h"

/* Runs this program again as "--child <name>" in a fresh process, so a
 * crash or a UCX abort there fails one test instead of ending the group.
 * Returns the child's exit code, or 128 + the signal that killed it. */
static inline int run_child(const char *name)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char *argv[] = {(char *)"unit-child", (char *)"--child",
                        (char *)name, NULL};
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

#endif
