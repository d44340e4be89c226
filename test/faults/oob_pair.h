/*
 * The oob bootstrap of two processes joined by a socketpair: the
 * program's own allgather, as pami_client_params_t takes it. Shared by
 * the tests that fork a pair of tasks without a launcher, with what
 * their death tests share.
 */
#ifndef OOB_PAIR_H
#define OOB_PAIR_H

#include <pami.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"

/* Seconds on the monotonic clock. */
static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Ends the test with a line naming it (OOB_PROG, defined before this
 * header is included) when cond is false. */
#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, OOB_PROG ": " __VA_ARGS__);                     \
            fprintf(stderr, "\n");                                          \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

typedef struct {
    int fd;   /* this task's end of the socketpair */
    int rank; /* 0 or 1 */
} oob_t;

/* Two tasks: send ours, read the other's, lay both out by rank. */
static inline int oob_allgather(void *cookie, const void *send, void *recv,
                                size_t len)
{
    oob_t *o   = cookie;
    char  *out = recv;
    memcpy(out + (size_t)o->rank * len, send, len);
    if (pami_fd_write_all(o->fd, send, len) != 0)
        return -1;
    return pami_fd_read_all(o->fd, out + (size_t)(1 - o->rank) * len, len);
}

/* pami_client_create's parameters for this task of the pair. */
static inline pami_client_params_t oob_params(oob_t *o)
{
    pami_client_params_t p = {.field_mask    = PAMI_CLIENT_PARAM_OOB,
                              .oob_allgather = oob_allgather,
                              .oob_cookie    = o,
                              .oob_task      = (pami_task_t)o->rank,
                              .oob_size      = 2};
    return p;
}

/* This task's client, named name, on the pair's bootstrap (oob lives as
 * long as the client), and its one context. */
static inline void oob_pair_open(oob_t *oob, const char *name,
                                 pami_client_t *client, pami_context_t *ctx)
{
    pami_client_params_t params = oob_params(oob);
    CHECK(pami_client_create(name, &params, client) == PAMI_SUCCESS,
          "task %d: client_create", oob->rank);
    CHECK(pami_context_createv(*client, NULL, 1, ctx) == PAMI_SUCCESS,
          "task %d: createv", oob->rank);
}

/* The survivor's end: its context counted the death, and its client
 * goes within 15 s; the seconds destroy took. */
static inline double oob_survivor_end(pami_context_t ctx,
                                      pami_client_t *client)
{
    pami_context_stats_t st;
    pami_context_stats(ctx, &st);
    CHECK(st.peer_failures >= 1, "stats show no peer failure");
    double t0 = now();
    pami_client_destroy(client);
    double took = now() - t0;
    CHECK(took < 15, "destroy took %.1f s", took);
    return took;
}

static inline void *oob_killer(void *arg)
{
    (void)arg;
    struct timespec ts = {.tv_nsec = (5 + getpid() % 60) * 1000000L};
    nanosleep(&ts, NULL);
    raise(SIGKILL);
    return NULL;
}

/* SIGKILLs this process 5-64 ms from now, varying by pid, from a thread:
 * the death falls at a different point of the work from run to run
 * (one part of 16 MiB, or a few sends, take a few ms). */
static inline void die_soon(void)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, oob_killer, NULL) == 0,
          "pthread_create");
}

/* A survivor's operation ends well or with its peer's death (noted in
 * *failed). */
static inline bool ok_or_failed(pami_result_t rc, bool *failed)
{
    if (rc == PAMI_PEER_FAILED)
        *failed = true;
    return rc == PAMI_SUCCESS || rc == PAMI_PEER_FAILED;
}

/* The pair: task 1 forked, task 0 here, each run(rank, its end of the
 * bootstrap socketpair, arg); with step_fd, *step_fd is its end of a
 * second socketpair for the test's own steps. Task 1 must end by a
 * SIGKILL (the test's death); task 0's run returns. */
static inline void oob_pair_run_killed(void (*run)(int, int, bool),
                                       int *step_fd, bool arg)
{
    int sv[2], st[2] = {-1, -1};
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 &&
          (step_fd == NULL ||
           socketpair(AF_UNIX, SOCK_STREAM, 0, st) == 0), "socketpair");
    /* Destroy waits this long at most for a peer that is gone. */
    setenv("PAMI_SHUTDOWN_TIMEOUT", "5000", 1);
    pid_t child = fork();
    CHECK(child >= 0, "fork");
    int me = child == 0 ? 1 : 0;
    close(sv[1 - me]);
    if (step_fd != NULL) {
        close(st[1 - me]);
        *step_fd = st[me];
    }
    run(me, sv[me], arg);
    if (me == 1)
        _exit(0);
    int status;
    waitpid(child, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
          "task 1 ended otherwise than by its SIGKILL (status 0x%x)", status);
}

#endif
