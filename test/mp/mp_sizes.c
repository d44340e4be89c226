/*
 * mp_sizes: every header size 0..header_max and data sizes 0..64 KiB, with
 * contents derived from (origin, message, size) and checked byte by byte,
 * sent by every task to every other one, first with pami_send_immediate
 * (where header + data fit immediate_max), then with pami_send.
 *
 * The target knows the list of messages and expects them from each origin
 * in send order, so a lost, doubled, reordered or resized message fails.
 * Payloads that arrive with data == NULL are received into a buffer given
 * in pami_recv_t and checked in its local_fn.
 *
 *   pamirun -n N mp_sizes [--quick]
 */
#include "mp_util.h"

enum { ID_IMM = 10, ID_SEND = 11 };
enum { PHASE_IMM = 1, PHASE_SEND = 2 };

#define MAX_OUTSTANDING 256

typedef struct {
    uint32_t hlen;
    uint32_t dlen;
} msg_case_t;

typedef struct {
    msg_case_t *cases;
    size_t      n;
    size_t      cap;
} case_list_t;

static mp_job_t job;
static case_list_t lists[3]; /* by phase */
static int       phase;
static size_t   *next_idx;   /* per origin: index of the next message */
static size_t   *done;       /* per origin: messages complete */
static size_t    rndv_recvs; /* payloads that arrived with data == NULL */
static size_t    outstanding;
static uint64_t  local_done;

static void add_case(case_list_t *l, size_t h, size_t d)
{
    if (l->n == l->cap) {
        l->cap   = l->cap ? 2 * l->cap : 256;
        l->cases = realloc(l->cases, l->cap * sizeof(*l->cases));
        if (l->cases == NULL)
            mp_fail("out of memory");
    }
    l->cases[l->n++] = (msg_case_t){(uint32_t)h, (uint32_t)d};
}

static void build_cases(bool quick)
{
    size_t hmax = job.attr.header_max, imax = job.attr.immediate_max;
    size_t hsizes[256], nh = 0;
    for (size_t h = 0; h <= 64 && h <= hmax; h++)
        hsizes[nh++] = h;
    for (size_t h = 64 + 37; h < hmax; h += 37)
        hsizes[nh++] = h;
    if (hsizes[nh - 1] != hmax)
        hsizes[nh++] = hmax;

    size_t dsizes[128], nd = 0;
    for (size_t d = 0; d <= 8; d++)
        dsizes[nd++] = d;
    for (size_t p = 16; p <= 65536; p *= 2) {
        dsizes[nd++] = p - 1;
        dsizes[nd++] = p;
        if (p < 65536)
            dsizes[nd++] = p + 1;
    }

    static const size_t hdr_data[] = {0, 1, 19};
    size_t hdr_for_data[] = {0, 8, hmax};
    for (int ph = PHASE_IMM; ph <= PHASE_SEND; ph++) {
        case_list_t *l = &lists[ph];
        for (size_t i = 0; i < nh; i++) {
            if (quick && i % 5 != 0 && i != nh - 1)
                continue;
            for (size_t j = 0; j < sizeof(hdr_data) / sizeof(hdr_data[0]); j++)
                if (ph == PHASE_SEND || hsizes[i] + hdr_data[j] <= imax)
                    add_case(l, hsizes[i], hdr_data[j]);
        }
        for (size_t i = 0; i < nd; i++) {
            if (quick && i % 3 != 0 && i != nd - 1)
                continue;
            for (size_t j = 0; j < 3; j++)
                if (ph == PHASE_SEND || dsizes[i] + hdr_for_data[j] <= imax)
                    add_case(l, hdr_for_data[j], dsizes[i]);
        }
        /* The immediate limit exactly. */
        if (ph == PHASE_IMM) {
            size_t hcap = hmax < imax ? hmax : imax;
            add_case(l, 0, imax);
            add_case(l, hcap, imax - hcap);
        }
    }
}

static uint64_t seq_of(int ph, size_t idx)
{
    return ((uint64_t)ph << 32) | idx;
}

typedef struct {
    uint8_t *buf;
    uint32_t origin;
    size_t   idx;
    int      phase;
} rndv_t;

static void check_data(const void *data, size_t dlen, uint32_t origin,
                       int ph, size_t idx, const char *how)
{
    long bad = mp_verify(data, dlen, origin, seq_of(ph, idx), 2);
    if (bad >= 0)
        mp_fail("phase %d message %zu from task %u: data of %zu bytes (%s) "
                "wrong at byte %ld", ph, idx, origin, dlen, how, bad);
}

static void on_rndv_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    rndv_t *r = cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "rendezvous receive: %s",
              pami_error_text(rc));
    const msg_case_t *c = &lists[r->phase].cases[r->idx];
    check_data(r->buf, c->dlen, r->origin, r->phase, r->idx, "rendezvous");
    done[r->origin]++;
    free(r->buf);
    free(r);
}

static void on_msg(pami_context_t ctx, void *cookie, const void *hdr,
                   size_t hlen, const void *data, size_t dlen,
                   pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx;
    int id = (int)(intptr_t)cookie;
    pami_task_t origin;
    size_t      off;
    MP_CHECK(pami_endpoint_query(origin_ep, &origin, &off));
    MP_EXPECT(origin < job.size && origin != job.me && off == 0,
              "message from endpoint task %u context %zu", origin, off);
    MP_EXPECT(id == (phase == PHASE_IMM ? ID_IMM : ID_SEND),
              "message on id %d during phase %d", id, phase);
    case_list_t *l = &lists[phase];
    size_t idx = next_idx[origin]++;
    MP_EXPECT(idx < l->n, "phase %d: message %zu from task %u, only %zu sent",
              phase, idx, origin, l->n);
    const msg_case_t *c = &l->cases[idx];
    MP_EXPECT(hlen == c->hlen && dlen == c->dlen,
              "phase %d message %zu from task %u: header %zu data %zu, "
              "expected header %u data %u (lost or reordered message?)",
              phase, idx, origin, hlen, dlen, c->hlen, c->dlen);
    long bad = mp_verify(hdr, hlen, origin, seq_of(phase, idx), 1);
    MP_EXPECT(bad < 0, "phase %d message %zu from task %u: header of %zu "
                       "bytes wrong at byte %ld", phase, idx, origin, hlen,
              bad);
    if (dlen == 0) {
        MP_EXPECT(recv == NULL, "recv given for an empty payload");
        done[origin]++;
        return;
    }
    if (data != NULL) {
        MP_EXPECT(recv == NULL, "recv given with the data present");
        check_data(data, dlen, origin, phase, idx, "eager");
        done[origin]++;
        return;
    }
    MP_EXPECT(recv != NULL, "data == NULL and recv == NULL for %zu bytes",
              dlen);
    MP_EXPECT(phase == PHASE_SEND && dlen >= job.attr.rndv_threshold,
              "phase %d: %zu bytes arrived without data below the "
              "rendezvous threshold %zu", phase, dlen,
              job.attr.rndv_threshold);
    rndv_t *r = malloc(sizeof(*r));
    MP_EXPECT(r != NULL, "out of memory");
    r->buf    = malloc(dlen);
    r->origin = origin;
    r->idx    = idx;
    r->phase  = phase;
    MP_EXPECT(r->buf != NULL, "out of memory");
    memset(r->buf, 0xee, dlen);
    recv->addr     = r->buf;
    recv->local_fn = on_rndv_done;
    recv->cookie   = r;
    rndv_recvs++;
}

typedef struct {
    uint8_t *buf;
    size_t   refs;
} send_buf_t;

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    send_buf_t *b = cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "send local completion: %s",
              pami_error_text(rc));
    MP_EXPECT(b->refs > 0, "local_fn ran more often than sends were made");
    outstanding--;
    local_done++;
    if (--b->refs == 0) {
        free(b->buf);
        free(b);
    }
}

static bool all_done(const case_list_t *l)
{
    for (size_t t = 0; t < job.size; t++)
        if (t != job.me && done[t] != l->n)
            return false;
    return true;
}

static size_t count_done(void)
{
    size_t n = 0;
    for (size_t t = 0; t < job.size; t++)
        n += done[t];
    return n;
}

static void run_phase(int ph)
{
    pami_context_t ctx = job.ctx[0];
    case_list_t   *l   = &lists[ph];
    uint8_t hdr[4096];
    MP_EXPECT(job.attr.header_max <= sizeof(hdr), "header_max %zu too big",
              job.attr.header_max);
    memset(next_idx, 0, job.size * sizeof(*next_idx));
    memset(done, 0, job.size * sizeof(*done));
    phase = ph;
    mp_sync(&job); /* nobody sends before everyone switched phase */

    double   t0     = mp_now();
    uint64_t sends  = 0;
    unsigned long again = 0;
    local_done = 0;
    for (size_t idx = 0; idx < l->n; idx++) {
        const msg_case_t *c = &l->cases[idx];
        mp_fill(hdr, c->hlen, job.me, seq_of(ph, idx), 1);
        if (ph == PHASE_IMM) {
            uint8_t data[4096];
            MP_EXPECT(c->dlen <= sizeof(data), "immediate data too big");
            mp_fill(data, c->dlen, job.me, seq_of(ph, idx), 2);
            for (size_t k = 1; k < job.size; k++) {
                pami_send_immediate_t s = {
                    .dest = mp_ep(&job, mp_peer(&job, k), 0),
                    .dispatch = ID_IMM,
                    .header = c->hlen ? hdr : NULL, .header_len = c->hlen,
                    .data = c->dlen ? data : NULL, .data_len = c->dlen};
                again += mp_send_imm(&job, ctx, &s);
                sends++;
            }
            continue;
        }
        send_buf_t *b = malloc(sizeof(*b));
        MP_EXPECT(b != NULL, "out of memory");
        b->buf  = malloc(c->dlen ? c->dlen : 1);
        b->refs = job.size - 1;
        MP_EXPECT(b->buf != NULL, "out of memory");
        mp_fill(b->buf, c->dlen, job.me, seq_of(ph, idx), 2);
        for (size_t k = 1; k < job.size; k++) {
            MP_WAIT(&job, ctx, outstanding < MAX_OUTSTANDING, MP_WAIT_S,
                    "%zu sends outstanding", outstanding);
            pami_send_t s = {
                .send = {.dest = mp_ep(&job, mp_peer(&job, k), 0),
                         .dispatch = ID_SEND,
                         .header = c->hlen ? hdr : NULL, .header_len = c->hlen,
                         .data = c->dlen ? b->buf : NULL, .data_len = c->dlen},
                .local_fn = on_local,
                .cookie   = b};
            outstanding++;
            MP_CHECK(pami_send(ctx, &s));
            sends++;
        }
        /* The header was copied at the call: scribble on it. */
        memset(hdr, 0x5a, c->hlen);
    }
    MP_WAIT(&job, ctx, all_done(l) && (ph == PHASE_IMM || outstanding == 0),
            MP_WAIT_S, "phase %d: %zu of %zu messages in, %zu sends "
            "outstanding", ph, count_done(), l->n * (job.size - 1),
            outstanding);
    if (ph == PHASE_SEND)
        MP_EXPECT(local_done == sends, "%llu local completions for %llu sends",
                  (unsigned long long)local_done, (unsigned long long)sends);
    mp_sync(&job);
    for (size_t t = 0; t < job.size; t++)
        MP_EXPECT(t == job.me || next_idx[t] == l->n,
                  "phase %d: %zu messages from task %u, expected %zu", ph,
                  next_idx[t], (unsigned)t, l->n);
    if (job.me == 0)
        printf("%s: %zu messages per pair, %llu sent by task 0 in %.3f s, "
               "%lu EAGAIN retries\n",
               ph == PHASE_IMM ? "send_immediate" : "send", l->n,
               (unsigned long long)sends, mp_now() - t0, again);
}

/* Requests the limits refuse, and nothing of them arrives. */
static void check_limits(void)
{
    pami_context_t ctx = job.ctx[0];
    static uint8_t big[8192];
    pami_endpoint_t to = mp_ep(&job, (pami_task_t)((job.me + 1) % job.size), 0);
    pami_send_immediate_t s = {.dest = to, .dispatch = ID_IMM, .header = big,
                               .header_len = job.attr.header_max + 1};
    MP_CHECK_RC(pami_send_immediate(ctx, &s), PAMI_INVAL);
    pami_send_t full = {.send = s};
    full.send.dispatch = ID_SEND;
    MP_CHECK_RC(pami_send(ctx, &full), PAMI_INVAL);
    s.header_len = 0;
    s.data       = big;
    s.data_len   = job.attr.immediate_max + 1;
    MP_CHECK_RC(pami_send_immediate(ctx, &s), PAMI_INVAL);
    /* Ids from dispatch_max up are the protocols' (256..511) and the
     * core's (512..) (docs/api.md): both sends refuse every one of them,
     * a handler cannot be set there, and an id that does not fit the
     * wire's 16 bits must not wrap. */
    s.data_len = 0;
    static const size_t reserved[] = {256, 257, 300, 511, 512, 513, 515,
                                      516, 4096, 65535};
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
        s.dispatch = reserved[i];
        MP_CHECK_RC(pami_send_immediate(ctx, &s), PAMI_INVAL);
        full.send = s;
        MP_CHECK_RC(pami_send(ctx, &full), PAMI_INVAL);
    }
    s.dispatch = (size_t)1 << 16 | ID_IMM;
    MP_CHECK_RC(pami_send_immediate(ctx, &s), PAMI_INVAL);
    full.send = s;
    MP_CHECK_RC(pami_send(ctx, &full), PAMI_INVAL);
    MP_CHECK_RC(pami_dispatch_set(ctx, job.attr.dispatch_max, on_msg, NULL,
                                  NULL), PAMI_INVAL);
}

int main(int argc, char **argv)
{
    mp_init(&job, "mp_sizes", &argc, argv, NULL, 1, false);
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_IMM, on_msg,
                               (void *)(intptr_t)ID_IMM, NULL));
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_SEND, on_msg,
                               (void *)(intptr_t)ID_SEND, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));
    next_idx = calloc(job.size, sizeof(*next_idx));
    done     = calloc(job.size, sizeof(*done));
    MP_EXPECT(next_idx && done, "out of memory");

    build_cases(quick);
    check_limits();
    run_phase(PHASE_IMM);
    run_phase(PHASE_SEND);
    if (job.me == 0)
        printf("header_max %zu, immediate_max %zu, rndv_threshold %zu; "
               "task 0 received %zu payloads by rendezvous\n",
               job.attr.header_max, job.attr.immediate_max,
               job.attr.rndv_threshold, rndv_recvs);
    mp_finish(&job);
    for (int ph = 0; ph < 3; ph++)
        free(lists[ph].cases);
    free(next_idx);
    free(done);
    return 0;
}
