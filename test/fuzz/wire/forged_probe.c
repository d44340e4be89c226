/*
 * Liveness probes (PAMI_DISPATCH_PROBE, pami/liveness.c) from a peer that
 * forges them. Task 0 sends task 1, on the transport itself: probes of a
 * wrong length, of an unknown kind, with reserved bytes set, answers to
 * probes task 1 never sent, and ASKS well-formed probes. Task 1 must count
 * every forged one as a dropped malformed message and answer each
 * well-formed one from its progress; task 0, which never probed task 1,
 * must count those answers as drops in turn. Then both still exchange
 * messages.
 */
#include "../../mp/mp_util.h"
#include "raw_send.h"

#define ID_DONE 9
#define ROUNDS  50
#define ASKS    20

static atomic_bool done;

static void on_done(pami_context_t ctx, void *cookie, const void *header,
                    size_t header_size, const void *data, size_t data_size,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)header; (void)header_size; (void)data;
    (void)data_size; (void)origin; (void)recv;
    atomic_store(&done, true);
}

static void probe(mp_job_t *job, pami_context_t ctx, const void *body,
                  size_t len)
{
    uint8_t       pkt[sizeof(pami_am_hdr_t) + 32];
    pami_am_hdr_t h = {.origin_task = 0, .dispatch = PAMI_DISPATCH_PROBE};
    memcpy(pkt, &h, sizeof(h));
    memcpy(pkt + sizeof(h), body, len);
    raw_send(job, ctx, 1, pkt, sizeof(h) + len, NULL, 0);
}

static uint64_t dropped(pami_context_t ctx)
{
    pami_context_stats_t st;
    MP_CHECK(pami_context_stats(ctx, &st));
    return st.dropped_malformed;
}

int main(int argc, char **argv)
{
    static mp_job_t job;
    mp_init(&job, "forged-probe", &argc, argv, NULL, 1, false);
    MP_EXPECT(job.size == 2, "runs as 2 tasks, not %zu", job.size);
    pami_context_t ctx = job.ctx[0];
    MP_CHECK(pami_dispatch_set(ctx, ID_DONE, on_done, NULL, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));
    /* Before the sync: task 0 may leave it first and forge while task 1
     * is still inside it, dropping the first probes there. */
    uint64_t before = dropped(ctx);
    mp_sync(&job);

    if (job.me == 0) {
        unsigned forged = 0;
        for (uint32_t i = 0; i < ROUNDS; i++) {
            pami_probe_msg_t m = {.kind = PAMI_PROBE_ASK, .seq = i};
            uint8_t long_one[sizeof(m) + 4] = {0};
            memcpy(long_one, &m, sizeof(m));
            probe(&job, ctx, long_one, sizeof(long_one));  /* too long */
            probe(&job, ctx, &m, sizeof(m) - 1);           /* too short */
            pami_probe_msg_t k = {.kind = (uint8_t)(3 + i), .seq = i};
            probe(&job, ctx, &k, sizeof(k));               /* no such kind */
            pami_probe_msg_t r = m;
            r.reserved[i % 3] = (uint8_t)(1 + i);
            probe(&job, ctx, &r, sizeof(r));               /* reserved set */
            pami_probe_msg_t a = {.kind = PAMI_PROBE_ANSWER,
                                  .seq = i * 7919u};
            probe(&job, ctx, &a, sizeof(a));               /* never asked */
            forged += 5;
            if (i < ASKS)
                probe(&job, ctx, &m, sizeof(m));           /* well formed */
            pami_context_advance(ctx, 16);
        }
        MP_EXPECT(forged == ROUNDS * 5, "bookkeeping");
        /* After the probes on the same endpoint, so it lands after them. */
        pami_send_immediate_t s = {.dest = mp_ep(&job, 1, 0),
                                   .dispatch = ID_DONE};
        MP_WAIT(&job, ctx, raw_inflight == 0, MP_WAIT_S,
                "%lu forged probes to leave", raw_inflight);
        MP_CHECK(pami_send_immediate(ctx, &s));
        /* Task 1's answers to the well-formed ones: none was asked. */
        MP_WAIT(&job, ctx, dropped(ctx) - before >= ASKS, MP_WAIT_S,
                "%llu of %d unasked answers dropped",
                (unsigned long long)(dropped(ctx) - before), ASKS);
        printf("forged-probe: task 0: %d answers from task 1, all dropped "
               "as not asked\n", ASKS);
    } else {
        MP_WAIT(&job, ctx, atomic_load(&done), MP_WAIT_S,
                "the end of the forged probes");
        /* The forgeries leave as transport requests, the end mark as a
         * short send: UCX may deliver the mark first. */
        MP_WAIT(&job, ctx, dropped(ctx) - before >= ROUNDS * 5, MP_WAIT_S,
                "%llu of %d forged probes dropped",
                (unsigned long long)(dropped(ctx) - before), ROUNDS * 5);
        uint64_t n = dropped(ctx) - before;
        printf("forged-probe: task 1: %llu of %d forged probes dropped\n",
               (unsigned long long)n, ROUNDS * 5);
        MP_EXPECT(n == ROUNDS * 5, "%llu forged probes dropped, not %d",
                  (unsigned long long)n, ROUNDS * 5);
    }
    mp_sync(&job);
    MP_EXPECT(dropped(ctx) - before == (job.me == 0 ? ASKS : ROUNDS * 5),
              "drops after the exchange: %llu",
              (unsigned long long)(dropped(ctx) - before));
    MP_CHECK(pami_client_destroy(&job.client));
    return 0;
}
