/*
 * Active messages to a task that waits inline in a blocking shared-memory
 * collective: the wait must deliver them (run the handler, answer the
 * sender) instead of sleeping on the barrier alone until the call ends.
 *
 *   coll_shm_busy ALGORITHM COUNT
 *
 * Every task but the last enters pami_collective_wait of ALGORITHM (an
 * allreduce)
 * (COUNT int64 per task) and waits there for the last one. The last task
 * first sends MSGS messages to task 0 (small ones and, every fourth, one
 * of 256 KiB by rendezvous, which task 0 must fetch), each with
 * remote_fn, and joins the call only when all were answered: a wait that
 * does not progress the context hangs here (pamirun's timeout). Rounds
 * repeat so both the first (segment set up) and later calls are seen.
 * With PAMI_ASYNC_PROGRESS=1 every call holds the context lock, the
 * collective's wait too, so the progress thread cannot answer for it.
 */
#include "coll_util.h"

#define ROUNDS 5
#define MSGS   64
#define BIG    (256 * 1024)
#define ID_BUSY 90

static mp_job_t job;
static size_t   handled, answered;
static uint8_t *landing;

static void on_busy(pami_context_t c, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)c; (void)cookie; (void)hdr; (void)hlen; (void)data; (void)origin;
    if (recv != NULL)
        recv->addr = landing; /* one buffer: contents are not checked */
    MP_EXPECT(dlen <= BIG, "message of %zu bytes", dlen);
    handled++;
}

static void on_answered(pami_context_t c, void *cookie, pami_result_t rc)
{
    (void)c; (void)cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "a message to task 0: %s",
              pami_error_text(rc));
    answered++;
}

int main(int argc, char **argv)
{
    mp_init(&job, "coll_shm_busy", &argc, argv, NULL, 1, false);
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_BUSY, on_busy, NULL, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));
    MP_EXPECT(argc == 3, "usage: coll_shm_busy ALGORITHM COUNT");
    const char *name  = argv[1];
    size_t      count = strtoull(argv[2], NULL, 10);
    ct_geom_t   world = {.name = "world"};
    ct_world(&job, &world);
    MP_EXPECT(job.attr.num_local_tasks == job.size && job.size >= 2,
              "the test needs two or more tasks, all on this node");
    landing = malloc(BIG);
    uint8_t *src  = calloc(1, BIG);
    int64_t *sbuf = malloc(count * sizeof(int64_t));
    int64_t *rbuf = malloc(count * sizeof(int64_t));
    MP_EXPECT(landing && src && sbuf && rbuf, "no memory");
    pami_xfer_t x = ct_xfer(world.g, PAMI_XFER_ALLREDUCE, name, sbuf, rbuf,
                            count, PAMI_TYPE_INT64, 0);
    bool sender = job.me == job.size - 1;
    for (int round = 0; round < ROUNDS; round++) {
        for (size_t i = 0; i < count; i++)
            sbuf[i] = (int64_t)(job.me + 1) * (int64_t)(i % 1000 + round);
        if (sender) {
            size_t want = answered + MSGS;
            mp_sleep_ms(100); /* the others past their spin, asleep */
            mp_lock(&job, job.ctx[0]);
            for (int m = 0; m < MSGS; m++) {
                pami_send_t s = {
                    .send = {.dest = mp_ep(&job, 0, 0), .dispatch = ID_BUSY,
                             .data = src, .data_len = m % 4 == 3 ? BIG : 64},
                    .remote_fn = on_answered};
                MP_CHECK(pami_send(job.ctx[0], &s));
            }
            mp_unlock(&job, job.ctx[0]);
            MP_WAIT(&job, job.ctx[0], answered == want, MP_WAIT_S,
                    "round %d: %zu of %d messages answered by task 0, "
                    "which waits in %s", round, answered - (want - MSGS),
                    MSGS, name);
        }
        /* With a progress thread (PAMI_ASYNC_PROGRESS=1) the call holds
         * the lock throughout: its own wait must answer the messages. */
        mp_lock(&job, job.ctx[0]);
        MP_CHECK(pami_collective_wait(job.ctx[0], &x));
        mp_unlock(&job, job.ctx[0]);
        for (size_t i = 0; i < count; i += count / 7 + 1) {
            int64_t v = (int64_t)(i % 1000 + round);
            int64_t want = v * (int64_t)(job.size * (job.size + 1) / 2);
            MP_EXPECT(rbuf[i] == want, "round %d: element %zu is %lld, not "
                      "%lld", round, i, (long long)rbuf[i], (long long)want);
        }
    }
    if (job.me == 0) {
        mp_lock(&job, job.ctx[0]); /* the progress thread's counts */
        MP_EXPECT(handled == (size_t)ROUNDS * MSGS, "task 0 handled %zu "
                  "messages, not %d", handled, ROUNDS * MSGS);
        /* The first call may go queued (it sets the segment up). */
        uint64_t in = ct_stat(job.ctx[0], "coll_shm", "inline");
        MP_EXPECT(in >= ROUNDS - 1, "only %llu of %d calls ran inline",
                  (unsigned long long)in, ROUNDS);
        mp_unlock(&job, job.ctx[0]);
    }
    free(landing); free(src); free(sbuf); free(rbuf);
    mp_finish(&job);
    printf("coll_shm_busy %s: ok\n", name);
    return 0;
}
