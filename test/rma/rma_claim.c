/*
 * rma_claim: small puts and gets to a task of this node on a region over
 * its own memory, which go as messages the owner applies (or answers
 * with the data) in its progress, or which their origin takes back and
 * copies by CMA when the owner does not answer (docs/protocols/rma.md,
 * "Small puts by message", "Small gets by message"). White-box only to
 * read the counters (puts and gets sent so, and taken back).
 *
 * Task 0 owns a region with a slice of 64 KiB per other task; each other
 * task, keeping a shadow of what its slice must hold:
 *  - one put of 8 B alone (the client's first CMA call);
 *  - 64 puts of 1 B to 4 KiB at scattered offsets, one at a time, each
 *    waited for (remote_fn), every 8th followed by a get of the whole
 *    slice compared with the shadow;
 *  - 16 puts in flight together to one range of 256 B, each with other
 *    bytes, then a fence: the range must hold the last one;
 *  - 8 puts in flight to one range, then a put of 32 KiB over it by CMA
 *    (it must land after them), then a get, compared;
 *  - 8 puts in flight, then a fence, and a get of the slice, compared;
 *  - quiet puts (no callbacks: no request, no answer, the claim word
 *    says when each was applied): 32 of 1 KiB side by side and 8 of
 *    256 B to one range (the last must hold it), then a fence, a get,
 *    compared; 16 more, then a put of 32 KiB over them by CMA (it must
 *    land after them), a fence, a get, compared;
 *  - small gets (by message): twice 32 gets of 1 B to 1 KiB in flight at
 *    scattered offsets, every 4th behind a quiet put to its bytes (the
 *    get must read that put's data), each compared with the slice as it
 *    was when the get was issued; then a put of 32 KiB by CMA over a
 *    window of 8 gets in flight (they must read the bytes before it).
 * Every callback runs once, never inside its call, with PAMI_SUCCESS.
 *
 *  poll  task 0 waits in pami's progress meanwhile: puts went as messages.
 *  busy  task 0 makes no pami call until every other task is through (a
 *        file per task in /tmp says so): the origins took puts back, and
 *        once task 0 progresses again it must skip every message taken
 *        back (the slices still equal the shadows afterwards).
 *
 *   pamirun -n N rma_claim poll|busy     (N >= 2)
 */
#include <time.h>

#include "rma_util.h"

#include "internal.h"

#define SLICE ((size_t)64 << 10)

static mp_job_t job;

static void issue(const pami_memregion_t *mr, void *local, size_t bytes,
                  size_t off, cb_count_t *op)
{
    pami_rma_t p = {.dest = mp_ep(&job, 0, 0), .local = local,
                    .bytes = bytes, .remote_mr = mr, .remote_offset = off,
                    .local_fn = cb_count_local, .remote_fn = cb_count_remote,
                    .cookie = op};
    op->in_call = true;
    pami_result_t rc = pami_put(job.ctx[0], &p);
    op->in_call = false;
    MP_EXPECT(rc == PAMI_SUCCESS, "%s: %s", op->what, pami_error_text(rc));
}

static void check_slice(const pami_memregion_t *mr, size_t base,
                        const uint8_t *shadow, const char *what)
{
    uint8_t *back = rma_alloc(SLICE);
    memset(back, 0xee, SLICE);
    RMA_GET_OK(&job, 0, back, SLICE, mr, base, "get: %s", what);
    for (size_t i = 0; i < SLICE; i++)
        MP_EXPECT(back[i] == shadow[i], "%s: byte %zu of the slice is "
                  "0x%02x, expected 0x%02x", what, i, back[i], shadow[i]);
    free(back);
}

/* n puts in flight to [off, off + len), put k with salt base_salt + k;
 * their sources stay untouched until they completed. */
static void burst(const pami_memregion_t *mr, size_t base, uint8_t *shadow,
                  uint8_t *src, size_t n, size_t off, size_t len,
                  uint32_t salt, cb_count_t *ops)
{
    for (size_t k = 0; k < n; k++) {
        rma_fill(src + k * len, base + off, len,
                 rma_seed(job.me, salt + (uint32_t)k));
        ops[k] = (cb_count_t){.what = "put in flight"};
        issue(mr, src + k * len, len, base + off, &ops[k]);
    }
    memcpy(shadow + off, src + (n - 1) * len, len);
}

/* n puts without callbacks, put k of len bytes at off + k * step with
 * salt base_salt + k (step 0: all to one range, the last one wins);
 * their sources stay untouched until a fence completed. */
static void quiet(const pami_memregion_t *mr, size_t base, uint8_t *shadow,
                  uint8_t *src, size_t n, size_t off, size_t len,
                  size_t step, uint32_t salt)
{
    for (size_t k = 0; k < n; k++) {
        size_t at = off + k * step;
        rma_fill(src + k * len, base + at, len,
                 rma_seed(job.me, salt + (uint32_t)k));
        pami_rma_t p = {.dest = mp_ep(&job, 0, 0), .local = src + k * len,
                        .bytes = len, .remote_mr = mr,
                        .remote_offset = base + at};
        pami_result_t rc = pami_put(job.ctx[0], &p);
        MP_EXPECT(rc == PAMI_SUCCESS, "quiet put %zu: %s", k,
                  pami_error_text(rc));
        memcpy(shadow + at, src + k * len, len);
    }
}

/* n gets in flight (n <= 32) of 1 B to 1 KiB at scattered offsets, the
 * k-th behind a quiet put to the same bytes when k % 4 == 0, then, when
 * big != NULL, a put of 32 KiB by CMA over [8000, 40768) before any of
 * them completed; each get must read the slice as it was at its call. */
static void gets(const pami_memregion_t *mr, size_t base, uint8_t *shadow,
                 uint8_t *src, size_t n, uint32_t salt, uint8_t *big)
{
    enum { MAXG = 32, GMAX = 1024 };
    uint8_t   *dst = rma_alloc(MAXG * GMAX), *want = rma_alloc(MAXG * GMAX);
    size_t     len[MAXG];
    cb_count_t ops[MAXG];
    uint64_t   x = rma_seed(job.me, salt);
    for (size_t k = 0; k < n; k++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        len[k]     = 1 + (size_t)(x >> 33) % GMAX;
        size_t off = big != NULL ? 8000 + (size_t)(x >> 13) % (32768 - GMAX)
                                 : (size_t)(x >> 13) % (SLICE - len[k]);
        if (k % 4 == 0) {
            rma_fill(src + k * GMAX, base + off, len[k],
                     rma_seed(job.me, salt + 1 + (uint32_t)k));
            pami_rma_t q = {.dest = mp_ep(&job, 0, 0),
                            .local = src + k * GMAX, .bytes = len[k],
                            .remote_mr = mr, .remote_offset = base + off};
            MP_CHECK(pami_put(job.ctx[0], &q));
            memcpy(shadow + off, src + k * GMAX, len[k]);
        }
        memcpy(want + k * GMAX, shadow + off, len[k]);
        memset(dst + k * GMAX, 0xee, len[k]);
        ops[k] = (cb_count_t){.what = "small get in flight"};
        pami_rma_t p = {.dest = mp_ep(&job, 0, 0), .local = dst + k * GMAX,
                        .bytes = len[k], .remote_mr = mr,
                        .remote_offset = base + off,
                        .local_fn = cb_count_local, .cookie = &ops[k]};
        ops[k].in_call = true;
        pami_result_t rc = pami_get(job.ctx[0], &p);
        ops[k].in_call = false;
        MP_EXPECT(rc == PAMI_SUCCESS, "small get %zu: %s", k,
                  pami_error_text(rc));
    }
    if (big != NULL) {
        rma_fill(big, base + 8000, 32768, rma_seed(job.me, salt + 100));
        RMA_PUT_OK(&job, 0, big, 32768, mr, base + 8000,
                   "32 KiB over gets in flight");
        memcpy(shadow + 8000, big, 32768);
    }
    for (size_t k = 0; k < n; k++) {
        rma_op_wait(&job, &ops[k], true, false);
        MP_EXPECT(memcmp(dst + k * GMAX, want + k * GMAX, len[k]) == 0,
                  "small get %zu of %zu bytes (salt %u) read other bytes "
                  "than the slice held at its call", k, len[k], salt);
    }
    rma_fence(&job, 0, "fence after small gets"); /* the quiet puts' src */
    free(dst);
    free(want);
}

static void burst_wait(cb_count_t *ops, size_t n)
{
    for (size_t k = 0; k < n; k++)
        rma_op_wait(&job, &ops[k], true, true);
}

static uint8_t *origin(const pami_memregion_t *mr, bool busy)
{
    size_t   base   = SLICE * (job.me - 1);
    uint8_t *src    = rma_alloc(SLICE);
    uint8_t *shadow = rma_alloc(SLICE);
    memset(shadow, 0, SLICE);
    cb_count_t ops[16];

    rma_fill(src, base, 8, rma_seed(job.me, 1));
    RMA_PUT_OK(&job, 0, src, 8, mr, base, "first put");
    memcpy(shadow, src, 8);

    uint64_t x = rma_seed(job.me, 2);
    for (uint32_t i = 0; i < 64; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t len = 1 + (size_t)(x >> 33) % 4096;
        size_t off = (size_t)(x >> 13) % (SLICE - len);
        rma_fill(src, base + off, len, rma_seed(job.me, 10 + i));
        RMA_PUT_OK(&job, 0, src, len, mr, base + off,
                   "put %u of %zu bytes at %zu", i, len, off);
        memcpy(shadow + off, src, len);
        if (i % 8 == 7)
            check_slice(mr, base, shadow, "after the single puts");
    }

    burst(mr, base, shadow, src, 16, 512, 256, 100, ops);
    rma_fence(&job, 0, "fence after 16 puts");
    burst_wait(ops, 16);
    check_slice(mr, base, shadow, "16 puts to one range, fenced");

    burst(mr, base, shadow, src, 8, 1024, 2048, 200, ops);
    uint8_t *big = rma_alloc(32768);
    rma_fill(big, base + 1000, 32768, rma_seed(job.me, 300));
    RMA_PUT_OK(&job, 0, big, 32768, mr, base + 1000, "32 KiB over them");
    memcpy(shadow + 1000, big, 32768);
    burst_wait(ops, 8);
    check_slice(mr, base, shadow, "a CMA put after 8 in flight");

    burst(mr, base, shadow, src, 8, 40000, 4096, 400, ops);
    rma_fence(&job, 0, "fence after 8 puts");
    burst_wait(ops, 8);
    check_slice(mr, base, shadow, "8 puts of 4 KiB, fenced");

    quiet(mr, base, shadow, src, 32, 0, 1024, 1024, 500);
    quiet(mr, base, shadow, src + 32768, 8, 50000, 256, 0, 600);
    rma_fence(&job, 0, "fence after 40 quiet puts");
    check_slice(mr, base, shadow, "quiet puts, fenced");

    quiet(mr, base, shadow, src, 16, 2000, 512, 700, 700);
    rma_fill(big, base + 4000, 32768, rma_seed(job.me, 800));
    RMA_PUT_OK(&job, 0, big, 32768, mr, base + 4000,
               "32 KiB over quiet puts");
    memcpy(shadow + 4000, big, 32768);
    rma_fence(&job, 0, "fence after quiet puts and a CMA put");
    check_slice(mr, base, shadow, "a CMA put after 16 quiet puts");

    /* A cool-down (at most 128 ms) of the take-backs above would send
     * the gets by CMA: let it pass, so that the first gets go by
     * message whatever the owner does. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        pami_context_advance(job.ctx[0], 1);
        clock_gettime(CLOCK_MONOTONIC, &t1);
    } while ((t1.tv_sec - t0.tv_sec) * 1000 +
                 (t1.tv_nsec - t0.tv_nsec) / 1000000 < 300);
    gets(mr, base, shadow, src, 32, 900, NULL);
    gets(mr, base, shadow, src, 32, 1000, NULL);
    gets(mr, base, shadow, src, 8, 1100, big);
    check_slice(mr, base, shadow, "after the small gets");

    /* The counters of pami_context_stats (docs/api.md). */
    pami_context_stats_t st;
    MP_CHECK(pami_context_stats(job.ctx[0], &st));
    uint64_t cgets = job.ctx[0]->claim_gets;
    printf("rma_claim: task %u: %llu puts and %llu gets by message, %llu "
           "taken back, %llu cool-downs\n",
           job.me, (unsigned long long)st.claim_puts,
           (unsigned long long)cgets,
           (unsigned long long)st.claim_taken_back,
           (unsigned long long)st.claim_cooldowns);
    MP_EXPECT(st.claim_puts > 0, "no put went as a message");
    MP_EXPECT(cgets > 0, "no get went as a message");
    MP_EXPECT(st.claim_taken_back <= st.claim_puts + cgets,
              "%llu puts and gets taken back of %llu sent",
              (unsigned long long)st.claim_taken_back,
              (unsigned long long)(st.claim_puts + cgets));
    if (busy)
        MP_EXPECT(st.claim_taken_back > 0 && st.claim_cooldowns > 0,
                  "the owner made no call, yet no put was taken back "
                  "(%llu) or no cool-down began (%llu)",
                  (unsigned long long)st.claim_taken_back,
                  (unsigned long long)st.claim_cooldowns);
    free(big);
    free(src);
    return shadow;
}

int main(int argc, char **argv)
{
    MP_EXPECT(argc == 2 && (strcmp(argv[1], "poll") == 0 ||
                            strcmp(argv[1], "busy") == 0),
              "usage: rma_claim poll|busy");
    bool busy = strcmp(argv[1], "busy") == 0;
    mp_init(&job, "rma_claim", &argc, argv, NULL, 1, false);
    MP_EXPECT(job.size >= 2, "needs 2 tasks or more");
    rma_xchg_init(&job);
    MP_CHECK(pami_dispatch_fence(job.client));

    size_t total = SLICE * (job.size - 1);
    rma_to0_t r;
    rma_to0_init(&job, total, &r);

    uint8_t *shadow = NULL;
    if (job.me != 0) {
        shadow = origin(&r.owner[0], busy);
        if (busy)
            rma_busy_done(&job, "rma_claim");
    } else if (busy) {
        rma_busy_wait(&job, "rma_claim");
    }
    /* Task 0 took in every message before this (one queue, in order):
     * those taken back must have been skipped. */
    mp_sync(&job);
    if (job.me == 0) {
        pami_context_stats_t st;
        MP_CHECK(pami_context_stats(job.ctx[0], &st));
        printf("rma_claim: task 0: %llu claimed puts and gets applied here\n",
               (unsigned long long)st.claim_applied);
        MP_EXPECT(st.claim_puts == 0, "the owner sent %llu claimed puts",
                  (unsigned long long)st.claim_puts);
    }
    if (job.me != 0) {
        check_slice(&r.owner[0], SLICE * (job.me - 1), shadow,
                    "after the owner's late progress");
        free(shadow);
    }
    mp_sync(&job);
    rma_to0_fini(&job, &r);
    mp_finish(&job);
    return 0;
}
