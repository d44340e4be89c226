/*
 * An ack names the send it completes by a cookie (request index and
 * generation), which a peer can guess. Three tasks: task 1 sends to task
 * 2, waiting for remote completion, while task 2 does not advance; task 0
 * sends task 1 acks for every likely cookie. None may complete task 1's
 * sends: an ack counts only from the task the send went to.
 *
 * Ordering without timing: task 2 tells task 1 when it has stopped
 * advancing (it may still be inside the sync when task 1 leaves it), and
 * before it advances again sends task 1 a "release" message; its acks
 * follow it on the same endpoint, so a remote completion task 1 sees
 * before the release is a forged one.
 */
#include "../../mp/mp_util.h"
#include "raw_send.h"

#define ID_MSG     7
#define ID_RELEASE 8
#define ID_READY   9
#define SENDS      16
#define GENERATIONS 64
#define INDEXES    128

typedef struct {
    atomic_uint received;    /* task 2: task 1's messages */
    atomic_bool released;    /* task 1: task 2's release arrived */
    atomic_bool ready;       /* task 1: task 2 stopped advancing */
    atomic_uint completed;   /* task 1: remote completions */
    atomic_uint early;       /* task 1: of those, before the release */
} fa_t;

static void on_msg(pami_context_t ctx, void *cookie, const void *header,
                   size_t header_size, const void *data, size_t data_size,
                   pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)header; (void)header_size; (void)data;
    (void)data_size; (void)origin; (void)recv;
    atomic_fetch_add(&((fa_t *)cookie)->received, 1);
}

static void on_release(pami_context_t ctx, void *cookie, const void *header,
                       size_t header_size, const void *data, size_t data_size,
                       pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)header; (void)header_size; (void)data;
    (void)data_size; (void)origin; (void)recv;
    atomic_store(&((fa_t *)cookie)->released, true);
}

static void on_ready(pami_context_t ctx, void *cookie, const void *header,
                     size_t header_size, const void *data, size_t data_size,
                     pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)header; (void)header_size; (void)data;
    (void)data_size; (void)origin; (void)recv;
    atomic_store(&((fa_t *)cookie)->ready, true);
}

static void on_remote(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    fa_t *fa = cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "remote completion: %s",
              pami_error_text(rc));
    if (!atomic_load(&fa->released))
        atomic_fetch_add(&fa->early, 1);
    atomic_fetch_add(&fa->completed, 1);
}

int main(int argc, char **argv)
{
    static mp_job_t job;
    static fa_t     fa;
    mp_init(&job, "forged-ack", &argc, argv, NULL, 1, false);
    MP_EXPECT(job.size == 3, "runs as 3 tasks, not %zu", job.size);
    pami_context_t ctx = job.ctx[0];
    MP_CHECK(pami_dispatch_set(ctx, ID_MSG, on_msg, &fa, NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_RELEASE, on_release, &fa, NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_READY, on_ready, &fa, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));
    mp_sync(&job);

    if (job.me == 1) {
        /* Task 2 may still be inside the sync, advancing: its messages
         * would be taken and acked there. Send once it has stopped. */
        MP_WAIT(&job, ctx, atomic_load(&fa.ready), MP_WAIT_S,
                "task 2's ready message");
        for (uint32_t i = 0; i < SENDS; i++) {
            pami_send_t s = {.send = {.dest = mp_ep(&job, 2, 0),
                                      .dispatch = ID_MSG, .header = &i,
                                      .header_len = sizeof(i)},
                             .remote_fn = on_remote, .cookie = &fa};
            MP_CHECK(pami_send(ctx, &s));
        }
        MP_WAIT(&job, ctx, atomic_load(&fa.completed) == SENDS, MP_WAIT_S,
                "%u of %d remote completions", atomic_load(&fa.completed),
                SENDS);
        pami_context_stats_t st;
        MP_CHECK(pami_context_stats(ctx, &st));
        printf("forged-ack: task 1: %u of %d sends completed before task 2 "
               "could answer; %llu acks dropped\n", atomic_load(&fa.early),
               SENDS, (unsigned long long)st.dropped_malformed);
        MP_EXPECT(atomic_load(&fa.early) == 0,
                  "%u sends completed by acks of a task they did not go to",
                  atomic_load(&fa.early));
        MP_EXPECT(st.dropped_malformed >= (uint64_t)GENERATIONS * INDEXES -
                                              SENDS,
                  "only %llu forged acks dropped",
                  (unsigned long long)st.dropped_malformed);
    } else if (job.me == 0) {
        /* Every cookie task 1's sends are likely to have. */
        for (uint32_t g = 0; g < GENERATIONS; g++)
            for (uint32_t i = 0; i < INDEXES; i++) {
                uint8_t       pkt[sizeof(pami_am_hdr_t) + sizeof(pami_ack_t)];
                pami_am_hdr_t h = {.origin_task = 0,
                                   .dispatch = PAMI_DISPATCH_ACK};
                pami_ack_t    a = {.cookie = (uint64_t)g << 32 | i,
                                   .result = PAMI_SUCCESS};
                memcpy(pkt, &h, sizeof(h));
                memcpy(pkt + sizeof(h), &a, sizeof(a));
                raw_send(&job, ctx, 1, pkt, sizeof(pkt), NULL, 0);
                if (i % 32 == 31)
                    pami_context_advance(ctx, 64);
            }
        MP_WAIT(&job, ctx, raw_inflight == 0, MP_WAIT_S,
                "%lu forged acks to leave", raw_inflight);
    } else {
        /* From here not a single advance until the acks had time to
         * arrive (an immediate send does not advance). */
        pami_send_immediate_t ready = {.dest = mp_ep(&job, 1, 0),
                                       .dispatch = ID_READY};
        MP_CHECK(pami_send_immediate(ctx, &ready));
        mp_sleep_ms(2000);
        pami_send_immediate_t s = {.dest = mp_ep(&job, 1, 0),
                                   .dispatch = ID_RELEASE};
        MP_CHECK(pami_send_immediate(ctx, &s));
        MP_WAIT(&job, ctx, atomic_load(&fa.received) == SENDS, MP_WAIT_S,
                "%u of %d messages from task 1", atomic_load(&fa.received),
                SENDS);
    }
    mp_sync(&job);
    MP_CHECK(pami_client_destroy(&job.client));
    return 0;
}
