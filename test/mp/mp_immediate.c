/*
 * mp_immediate: the limit of pami_send_immediate and its behaviour when the
 * transport is full.
 *
 *  1. header + data == immediate_max, split several ways, is accepted and
 *     arrives intact at the next task;
 *  2. immediate_max + 1, split the same ways, is PAMI_INVAL at once and
 *     nothing of it arrives;
 *  3. a flood to every other task without advancing: every call returns
 *     PAMI_SUCCESS or PAMI_EAGAIN, nothing else and never blocks. The
 *     counts are printed; afterwards each target receives exactly the
 *     messages that were accepted, in order, with their contents.
 *
 *   pamirun -n N mp_immediate [attempts]
 */
#include "mp_util.h"

enum { ID_LIMIT = 20, ID_FLOOD = 21, ID_COUNT = 22 };

#define FLOOD_DATA 24

static mp_job_t job;

/* Limit messages received from the previous task. */
static size_t   limit_got;
static size_t   limit_expected_h[8], limit_expected_d[8];
static size_t   n_splits;

/* Flood: per origin, messages received, and the count it says it sent. */
static uint64_t *flood_got;
static uint64_t *flood_announced; /* UINT64_MAX until the count arrives */
static size_t    counts_in;

static void on_limit(pami_context_t ctx, void *cookie, const void *hdr,
                     size_t hlen, const void *data, size_t dlen,
                     pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)recv;
    pami_task_t origin;
    pami_endpoint_query(origin_ep, &origin, NULL);
    pami_task_t prev = (pami_task_t)((job.me + job.size - 1) % job.size);
    MP_EXPECT(origin == prev, "limit message from task %u, expected %u",
              origin, prev);
    size_t i = limit_got++;
    MP_EXPECT(i < n_splits, "more limit messages than sent (%zu)", i + 1);
    MP_EXPECT(hlen == limit_expected_h[i] && dlen == limit_expected_d[i],
              "limit message %zu: header %zu data %zu, expected %zu + %zu",
              i, hlen, dlen, limit_expected_h[i], limit_expected_d[i]);
    MP_EXPECT(hlen + dlen == job.attr.immediate_max, "not at the limit");
    long bad = mp_verify(hdr, hlen, origin, i, 1);
    MP_EXPECT(bad < 0, "limit message %zu: header wrong at byte %ld", i, bad);
    bad = mp_verify(data, dlen, origin, i, 2);
    MP_EXPECT(bad < 0, "limit message %zu: data wrong at byte %ld", i, bad);
}

static void on_flood(pami_context_t ctx, void *cookie, const void *hdr,
                     size_t hlen, const void *data, size_t dlen,
                     pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)recv;
    pami_task_t origin;
    pami_endpoint_query(origin_ep, &origin, NULL);
    uint64_t seq;
    MP_EXPECT(hlen == sizeof(seq) && dlen == FLOOD_DATA,
              "flood message of %zu + %zu bytes from task %u", hlen, dlen,
              origin);
    memcpy(&seq, hdr, sizeof(seq));
    MP_EXPECT(flood_announced[origin] == UINT64_MAX,
              "flood message %llu from task %u after its count (%llu)",
              (unsigned long long)seq, origin,
              (unsigned long long)flood_announced[origin]);
    MP_EXPECT(seq == flood_got[origin],
              "flood message %llu from task %u, expected %llu (lost, doubled "
              "or reordered)", (unsigned long long)seq, origin,
              (unsigned long long)flood_got[origin]);
    long bad = mp_verify(data, dlen, origin, seq, 3);
    MP_EXPECT(bad < 0, "flood message %llu from task %u: data wrong at %ld",
              (unsigned long long)seq, origin, bad);
    flood_got[origin]++;
}

static void on_count(pami_context_t ctx, void *cookie, const void *hdr,
                     size_t hlen, const void *data, size_t dlen,
                     pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)data; (void)recv;
    pami_task_t origin;
    pami_endpoint_query(origin_ep, &origin, NULL);
    uint64_t n;
    MP_EXPECT(hlen == sizeof(n) && dlen == 0, "bad count message");
    memcpy(&n, hdr, sizeof(n));
    MP_EXPECT(flood_announced[origin] == UINT64_MAX,
              "two count messages from task %u", origin);
    flood_announced[origin] = n;
    /* Order: every flood message the origin had sent is here now. */
    MP_EXPECT(flood_got[origin] == n,
              "task %u sent %llu flood messages, %llu arrived before its "
              "count", origin, (unsigned long long)n,
              (unsigned long long)flood_got[origin]);
    counts_in++;
}

/* What the previous task will send: known before anyone can send, since
 * a peer past the fence may send while we are still in it. */
static void limit_setup(void)
{
    size_t imax = job.attr.immediate_max, hmax = job.attr.header_max;
    size_t hcap = hmax < imax ? hmax : imax;
    size_t split_h[] = {0, hcap, imax / 2, 1, 8};
    n_splits = sizeof(split_h) / sizeof(split_h[0]);
    for (size_t i = 0; i < n_splits; i++) {
        limit_expected_h[i] = split_h[i];
        limit_expected_d[i] = imax - split_h[i];
    }
}

static void limit_phase(void)
{
    pami_context_t ctx  = job.ctx[0];
    size_t         imax = job.attr.immediate_max, hmax = job.attr.header_max;
    uint8_t *hdr  = malloc(hmax + 1);
    uint8_t *data = malloc(imax + 2);
    MP_EXPECT(hdr && data, "out of memory");
    pami_endpoint_t next =
        mp_ep(&job, (pami_task_t)((job.me + 1) % job.size), 0);

    /* One over the limit first: refused at once, whatever the split. */
    for (size_t i = 0; i < n_splits; i++) {
        size_t h = limit_expected_h[i], d = imax + 1 - h;
        pami_send_immediate_t s = {.dest = next, .dispatch = ID_LIMIT,
                                   .header = hdr, .header_len = h,
                                   .data = data, .data_len = d};
        MP_CHECK_RC(pami_send_immediate(ctx, &s), PAMI_INVAL);
    }
    /* Exactly at the limit: accepted (after EAGAIN while connecting). */
    unsigned long again = 0;
    for (size_t i = 0; i < n_splits; i++) {
        size_t h = limit_expected_h[i], d = imax - h;
        mp_fill(hdr, h, job.me, i, 1);
        mp_fill(data, d, job.me, i, 2);
        pami_send_immediate_t s = {.dest = next, .dispatch = ID_LIMIT,
                                   .header = h ? hdr : NULL, .header_len = h,
                                   .data = d ? data : NULL, .data_len = d};
        again += mp_send_imm(&job, ctx, &s);
        /* The buffers are ours again on return. */
        memset(hdr, 0xa5, h);
        memset(data, 0x5a, d);
    }
    MP_WAIT(&job, ctx, limit_got == n_splits, MP_WAIT_S,
            "%zu of %zu limit messages", limit_got, n_splits);
    mp_sync(&job);
    MP_EXPECT(limit_got == n_splits, "%zu limit messages, sent %zu",
              limit_got, n_splits);
    if (job.me == 0)
        printf("limit: %zu messages of exactly %zu bytes accepted (%lu "
               "EAGAIN), %zu of %zu bytes refused\n", n_splits, imax, again,
               n_splits, imax + 1);
    free(hdr);
    free(data);
}

static void flood_phase(unsigned long attempts)
{
    pami_context_t ctx = job.ctx[0];
    size_t         npeers = job.size - 1;
    uint64_t      *sent   = calloc(job.size, sizeof(*sent));
    unsigned long  ok = 0, again = 0;
    uint8_t        data[FLOOD_DATA];
    MP_EXPECT(sent != NULL, "out of memory");

    double t0 = mp_now();
    for (unsigned long a = 0; a < attempts; a++) {
        pami_task_t to = (pami_task_t)((job.me + 1 + a % npeers) % job.size);
        uint64_t seq = sent[to];
        mp_fill(data, sizeof(data), job.me, seq, 3);
        pami_send_immediate_t s = {
            .dest = mp_ep(&job, to, 0), .dispatch = ID_FLOOD,
            .header = &seq, .header_len = sizeof(seq),
            .data = data, .data_len = sizeof(data)};
        pami_result_t rc = pami_send_immediate(ctx, &s);
        if (rc == PAMI_SUCCESS) {
            sent[to]++;
            ok++;
        } else if (rc == PAMI_EAGAIN) {
            again++;
        } else {
            mp_fail("flood: pami_send_immediate returned %s after %lu "
                    "attempts without advancing", pami_error_text(rc), a);
        }
    }
    double t_flood = mp_now() - t0;

    for (size_t k = 1; k < job.size; k++) {
        pami_task_t to = mp_peer(&job, k);
        pami_send_immediate_t s = {.dest = mp_ep(&job, to, 0),
                                   .dispatch = ID_COUNT, .header = &sent[to],
                                   .header_len = sizeof(sent[to])};
        mp_send_imm(&job, ctx, &s);
    }
    MP_WAIT(&job, ctx, counts_in == npeers, MP_WAIT_S,
            "flood counts from %zu of %zu peers", counts_in, npeers);
    mp_sync(&job);
    for (size_t t = 0; t < job.size; t++)
        MP_EXPECT(t == job.me || flood_got[t] == flood_announced[t],
                  "task %zu: %llu flood messages received, %llu sent", t,
                  (unsigned long long)flood_got[t],
                  (unsigned long long)flood_announced[t]);
    MP_EXPECT(ok + again == attempts, "lost calls");
    printf("flood: %lu calls without advancing in %.3f s: %lu accepted, %lu "
           "PAMI_EAGAIN; all accepted ones received exactly once, in order\n",
           attempts, t_flood, ok, again);
    free(sent);
}

int main(int argc, char **argv)
{
    mp_init(&job, "mp_immediate", &argc, argv, NULL, 1, false);
    unsigned long attempts = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");
    flood_got       = calloc(job.size, sizeof(*flood_got));
    flood_announced = malloc(job.size * sizeof(*flood_announced));
    MP_EXPECT(flood_got && flood_announced, "out of memory");
    for (size_t t = 0; t < job.size; t++)
        flood_announced[t] = UINT64_MAX;
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_LIMIT, on_limit, NULL, NULL));
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_FLOOD, on_flood, NULL, NULL));
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_COUNT, on_count, NULL, NULL));
    limit_setup();
    MP_CHECK(pami_dispatch_fence(job.client));

    limit_phase();
    flood_phase(attempts);

    mp_finish(&job);
    free(flood_got);
    free(flood_announced);
    return 0;
}
