/*
 * immediate_backpressure: api.md, pami_send_immediate: "when UCX cannot
 * take it at once ... copies header and data ... and sends the copy,
 * which leaves only as the context advances"; "PAMI_EAGAIN 1024 copies of
 * this context are in flight ... advance and retry". Task 0 sends to task
 * 1 while task 1 waits in the runner's exchange (it cannot receive), until
 * PAMI_EAGAIN; then every message sent arrives, in order and intact.
 */
#include "cf.h"

#include <stdio.h>
#include <string.h>

#define BP_ID    13
#define BP_BYTES 1000
#define BP_LIMIT 200000

typedef struct {
    size_t n;
    int    bad;
    char   why[96];
} bp_t;

static void bp_handler(pami_context_t ctx, void *cookie, const void *h,
                       size_t hs, const void *d, size_t ds,
                       pami_endpoint_t o, pami_recv_t *r)
{
    (void)ctx, (void)o, (void)r;
    bp_t *s = cookie;
    uint32_t seq;
    if (hs != sizeof(seq) || ds != BP_BYTES) {
        if (!s->bad++)
            snprintf(s->why, sizeof(s->why), "header %zu, data %zu bytes",
                     hs, ds);
        s->n++;
        return;
    }
    memcpy(&seq, h, sizeof(seq));
    if (seq != s->n || cf_verify(d, ds, 0xb9, seq, 0) != ds) {
        if (!s->bad++)
            snprintf(s->why, sizeof(s->why), "message %u as number %zu%s",
                     seq, s->n, seq == s->n ? ", its data changed" : "");
    }
    s->n++;
}

static void immediate_backpressure(cf_env_t *e)
{
    static bp_t s;
    s = (bp_t){0};
    CF_OK(e, pami_dispatch_set(e->ctx, BP_ID, bp_handler, &s, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    uint64_t sent = 0;
    pami_result_t last = PAMI_SUCCESS;
    if (e->task == 0) {
        /* Task 1 is in the exchange below: nothing it receives moves. */
        static uint8_t data[BP_BYTES];
        pami_endpoint_t to = cf_ep(e, 1);
        for (uint32_t seq = 0; seq < BP_LIMIT; seq++) {
            cf_fill(data, sizeof(data), 0xb9, seq, 0);
            pami_send_immediate_t m = {.dest = to, .dispatch = BP_ID,
                                       .header = &seq,
                                       .header_len = sizeof(seq),
                                       .data = data, .data_len = BP_BYTES};
            last = pami_send_immediate(e->ctx, &m);
            if (last != PAMI_SUCCESS)
                break;
            sent++;
        }
    }
    uint64_t all[1024];
    CF_CHECK(e, e->size <= 1024 && cf_allgather(&sent, all, sizeof(sent)) ==
                                       0,
             "expected the runner's exchange to work");
    if (e->task == 0)
        CF_CHECK(e, last == PAMI_EAGAIN && sent >= 1024, "expected "
                 "PAMI_EAGAIN once 1024 copies are in flight (after at least "
                 "1024 accepted sends), seen %s after %llu sends",
                 cf_rc_name(last), (unsigned long long)sent);
    if (e->task == 1) {
        if (cf_wait_count(e, &s.n, all[0], "every accepted message") != 0)
            return;
        CF_CHECK(e, s.n == all[0] && !s.bad, "expected the %llu accepted "
                 "messages in order and intact, seen %zu (%d bad; first: "
                 "%s)", (unsigned long long)all[0], s.n, s.bad, s.why);
    }
    /* Task 0's copies leave as it advances: inside the fence. */
    CF_OK(e, pami_dispatch_fence(e->client));
}

const cf_case_t cf_backpressure_cases[] = {
    {"core", "immediate_backpressure", 2, 0, 0, immediate_backpressure,
     NULL},
};
const size_t cf_num_backpressure_cases =
    sizeof(cf_backpressure_cases) / sizeof(cf_backpressure_cases[0]);
