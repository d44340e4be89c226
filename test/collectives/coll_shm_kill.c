/*
 * A task dies inside a loop of blocking shared-memory collectives: every
 * survivor's pami_collective_wait must end with PAMI_PEER_FAILED within a
 * bounded time (no hang in the inline barriers), and so must the next
 * call.
 *
 *   coll_shm_kill ALGORITHM COUNT [in-fold|stop|queued|in-fold-queued|
 *                                 stop-queued]
 *
 * ALGORITHM is one of the _shm / _shm_cma algorithms (or barrier_shm),
 * COUNT the elements per task (blocks: per block). The last task starts
 * a thread that, after some calls, _exits the process from wherever its
 * main thread is: most often in the middle of a call, between two of
 * its barriers. With in-fold (reduce_scatter_shm_cma) the reduction is
 * a user op, slow on the others: the last task folds its block, waits in
 * the second barrier and dies there while the others still read its
 * input chunk by chunk; their barrier still completes (it had arrived),
 * so only the reads tell the death (before: PAMI_INVAL). With stop the
 * last task stops (SIGSTOP) instead: the others' calls must fail after
 * PAMI_PEER_TIMEOUT; task 0 then lets it go on (SIGCONT) to _exit.
 * With queued (alone or after in-fold or stop) the calls are
 * non-blocking (pami_collective, done_fn), waited for with
 * pami_context_wait: the queued rounds, not the inline ones. With
 * PAMI_ASYNC_PROGRESS=1 pami's progress thread runs beside the calls,
 * which hold the context's lock.
 */
#include "coll_util.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

static mp_job_t job;
static volatile unsigned long calls;

static bool in_fold, stop, queued;
static pami_result_t done_rc;
static volatile bool done; /* set by the progress thread, with it */

static void on_done(pami_context_t c, void *cookie, pami_result_t rc)
{
    (void)c; (void)cookie;
    done_rc = rc;
    done    = true;
}

/* One call, blocking or (queued) started and waited for. With
 * PAMI_ASYNC_PROGRESS=1 each pami call holds the context's lock, and the
 * queued wait lets go of it between its waits, so the progress thread
 * advances the context beside this one. */
static pami_result_t call(pami_xfer_t *x)
{
    pami_result_t rc;
    if (!queued) {
        mp_lock(&job, job.ctx[0]);
        rc = pami_collective_wait(job.ctx[0], x);
        mp_unlock(&job, job.ctx[0]);
        return rc;
    }
    done       = false;
    x->done_fn = on_done;
    mp_lock(&job, job.ctx[0]);
    rc = pami_collective(job.ctx[0], x);
    mp_unlock(&job, job.ctx[0]);
    if (rc != PAMI_SUCCESS)
        return rc;
    while (!done) {
        mp_lock(&job, job.ctx[0]);
        rc = done ? PAMI_SUCCESS : pami_context_wait(job.ctx[0], 100);
        mp_unlock(&job, job.ctx[0]);
        MP_EXPECT(rc == PAMI_SUCCESS || rc == PAMI_TIMEOUT,
                  "pami_context_wait: %s", pami_error_text(rc));
    }
    return done_rc;
}
static volatile bool folding; /* the last task's fold of call 50 began */

static void *killer(void *arg)
{
    (void)arg;
    /* warm: the segment and every peer set up */
    while (in_fold ? !folding : calls < 50)
        mp_sleep_ms(1);
    mp_sleep_ms(in_fold ? 40 : 30 + 7 * (double)(job.size % 5));
    fflush(stdout);
    if (stop)
        raise(SIGSTOP); /* the whole process, until task 0's SIGCONT */
    _exit(0);
    return NULL;
}

static void user_sum(void *inout, const void *in, size_t count, void *cookie)
{
    (void)cookie;
    if (in_fold && calls >= 50) {
        if (job.me == job.size - 1)
            folding = true;
        else
            mp_sleep_ms(3);
    }
    int64_t *acc = inout;
    const int64_t *v = in;
    for (size_t i = 0; i < count; i++)
        acc[i] += v[i];
}

static pami_xfer_type_t kind_of(const char *name)
{
    static const struct {
        const char      *prefix;
        pami_xfer_type_t kind;
    } kinds[] = {{"barrier", PAMI_XFER_BARRIER},
                 {"allreduce", PAMI_XFER_ALLREDUCE},
                 {"broadcast", PAMI_XFER_BROADCAST},
                 {"reduce_scatter", PAMI_XFER_REDUCE_SCATTER},
                 {"reduce", PAMI_XFER_REDUCE},
                 {"allgather", PAMI_XFER_ALLGATHER},
                 {"alltoall", PAMI_XFER_ALLTOALL}};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strncmp(name, kinds[i].prefix, strlen(kinds[i].prefix)) == 0)
            return kinds[i].kind;
    mp_fail("no kind for %s", name);
}

int main(int argc, char **argv)
{
    mp_init(&job, "coll_shm_kill", &argc, argv, NULL, 1, true);
    static const char *const modes[] = {"in-fold", "stop", "queued",
                                        "in-fold-queued", "stop-queued"};
    bool known = argc == 3;
    for (size_t i = 0; argc == 4 && i < sizeof(modes) / sizeof(modes[0]); i++)
        known |= strcmp(argv[3], modes[i]) == 0;
    MP_EXPECT(known, "usage: coll_shm_kill ALGORITHM COUNT "
              "[in-fold|stop][-queued]");
    in_fold = argc == 4 && strncmp(argv[3], "in-fold", 7) == 0;
    stop    = argc == 4 && strncmp(argv[3], "stop", 4) == 0;
    queued  = argc == 4 && strstr(argv[3], "queued") != NULL;
    const char *name  = argv[1];
    size_t      count = strtoull(argv[2], NULL, 10);
    ct_geom_t   world = {.name = "world"};
    ct_world(&job, &world);
    MP_EXPECT(job.attr.num_local_tasks == job.size && job.size >= 2,
              "the test needs two or more tasks, all on this node");

    size_t   bytes = count * sizeof(int64_t) * job.size;
    int64_t *sbuf  = calloc(1, bytes + 1);
    int64_t *rbuf  = calloc(1, bytes + 1);
    MP_EXPECT(sbuf != NULL && rbuf != NULL, "no memory");
    pami_xfer_t x = ct_xfer(world.g, kind_of(name), name, sbuf, rbuf, count,
                            PAMI_TYPE_INT64, 0);
    if (in_fold) {
        x.field_mask |= PAMI_XFER_FIELD_USER_OP;
        x.op               = PAMI_OP_USER;
        x.user_fn          = user_sum;
        x.user_commutative = 1;
    }
    /* Every task's pid, for the SIGCONT. */
    int64_t  mypid = getpid(), *pids = calloc(job.size, sizeof(int64_t));
    MP_EXPECT(pids != NULL, "no memory");
    pami_xfer_t ag = ct_xfer(world.g, PAMI_XFER_ALLGATHER, NULL, &mypid,
                             pids, 1, PAMI_TYPE_INT64, 0);
    mp_lock(&job, job.ctx[0]);
    MP_CHECK(pami_collective_wait(job.ctx[0], &ag));
    mp_unlock(&job, job.ctx[0]);
    pthread_t th;
    if (job.me == job.size - 1)
        MP_EXPECT(pthread_create(&th, NULL, killer, NULL) == 0, "thread");

    pami_result_t rc;
    double        t0 = mp_now();
    while ((rc = call(&x)) == PAMI_SUCCESS) {
        calls++;
        MP_EXPECT(mp_now() - t0 < 60, "%s: no failure after %lu calls",
                  name, calls);
    }
    if (job.me == job.size - 1)
        for (;;) /* its thread _exits; what its calls saw is not checked */
            pause();
    double failed = mp_now();
    if (stop && job.me == 0)
        kill((pid_t)pids[job.size - 1], SIGCONT);
    MP_EXPECT(rc == PAMI_PEER_FAILED, "%s after %lu calls: %s", name, calls,
              pami_error_text(rc));
    rc = call(&x);
    MP_EXPECT(rc == PAMI_PEER_FAILED, "%s after the death: %s", name,
              pami_error_text(rc));
    MP_EXPECT(mp_now() - failed < 15, "the second call took %.1f s",
              mp_now() - failed);
    free(sbuf);
    free(rbuf);
    free(pids);
    pami_client_destroy(&job.client); /* a task is gone: may fail */
    printf("coll_shm_kill %s: ok after %lu calls\n", name, calls);
    return 0;
}
