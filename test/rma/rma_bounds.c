/*
 * rma_bounds: put/get/rput/rget at the edges of regions, and sizes from
 * 1 byte to 64 MiB with every byte checked.
 *
 * Every task registers a region of R = max + 1000 bytes filled with its own
 * pattern (defined by absolute offset) and exchanges it with the others
 * inside active-message headers. Then:
 *
 *  1. from every task (this one too): gets at offset 0, inside, and ending
 *     exactly at the
 *     last byte, of several sizes, checked against the peer's pattern,
 *     with the bytes behind the local buffer untouched; 0-byte put and get
 *     complete with their callbacks; puts and gets one byte past the end,
 *     ending beyond it, with huge offsets or sizes whose sum overflows,
 *     with a NULL region or a NULL local buffer are refused with
 *     PAMI_INVAL at the call and never call back. After a barrier, each
 *     task checks its whole region: nothing of the refused puts (nor of
 *     the 0-byte ones) arrived. Gets of every size of the sweep below from
 *     the next task, against its untouched pattern.
 *  2. to the next task: for sizes 1 B .. max (powers of 2, their
 *     neighbours and a few odd sizes), a put of a fresh pattern at offset
 *     0, ending at the last byte or in between, then a get of the same
 *     range back into a cleared buffer, checked byte by byte.
 *  3. rput/rget with a local region on both sides: put from one end of
 *     the local region, get back into the other end (ending exactly at its
 *     last byte); local or remote side out of bounds is PAMI_INVAL (an
 *     rget beyond the local region writes nothing locally, an rput
 *     refused for its local side changes nothing remotely).
 *
 *   pamirun -n N rma_bounds [max_bytes]     (default 64 MiB)
 */
#include "rma_util.h"

#include <limits.h>

#define GUARD 64
#define GUARD_BYTE 0xa5

static mp_job_t          job;
static size_t            R;        /* region bytes */
static uint8_t          *region;   /* mine, pattern rma_seed(me, 0) */
static pami_memregion_t  my_mr;
static pami_memregion_t *mrs;      /* every task's */
static uint8_t          *src;      /* put source; the local region in 3 */
static uint8_t          *back;     /* get target, R + GUARD bytes */

static const char *kind_name(int kind)
{
    return kind == RMA_PUT ? "put" : "get";
}

/* A get of [off, off + len) of task p's region into back, checked against
 * the pattern seed, with the guard behind it untouched. */
static void get_check(pami_task_t p, size_t off, size_t len, uint64_t seed,
                      const char *where)
{
    memset(back, GUARD_BYTE, len + GUARD);
    RMA_GET_OK(&job, p, back, len, &mrs[p], off,
               "get of %zu bytes at offset %zu (%s) of task %u's region of "
               "%zu", len, off, where, p, R);
    long bad = rma_check(back, off, len, seed);
    MP_EXPECT(bad < 0, "get of %zu bytes at offset %zu (%s) from task %u: "
                       "byte %ld (offset %zu) is wrong", len, off, where, p,
              bad, off + (size_t)bad);
    bad = rma_check_byte(back + len, GUARD, GUARD_BYTE);
    MP_EXPECT(bad < 0, "get of %zu bytes at offset %zu (%s) from task %u "
                       "wrote past the local buffer (byte %ld behind it)",
              len, off, where, p, bad);
}

/* A put or get that must be refused: PAMI_INVAL, no callback, and for a
 * get nothing written locally (put targets are checked after the
 * barrier). */
static void refused(int kind, pami_task_t p, void *local, size_t len,
                    const pami_memregion_t *mr, size_t off, const char *why)
{
    char what[256];
    snprintf(what, sizeof(what), "%s of %zu bytes at offset %zu of task "
             "%u's region of %zu bytes (%s)", kind_name(kind), len, off, p,
             R, why);
    if (kind == RMA_GET && local == back)
        memset(back, GUARD_BYTE, 4096);
    pami_result_t rc = rma_xfer(&job, kind, p, local, len, mr, off, what);
    MP_EXPECT(rc == PAMI_INVAL, "%s returned %s, expected %s", what,
              pami_error_text(rc), pami_error_text(PAMI_INVAL));
    if (kind == RMA_GET && local == back) {
        long bad = rma_check_byte(back, 4096, GUARD_BYTE);
        MP_EXPECT(bad < 0, "refused %s wrote byte %ld of the local buffer",
                  what, bad);
    }
}

static void refused_both(pami_task_t p, size_t len, size_t off,
                         const char *why)
{
    refused(RMA_PUT, p, src, len, &mrs[p], off, why);
    refused(RMA_GET, p, back, len, &mrs[p], off, why);
}

/* Sizes of the sweep: powers of 2, their neighbours up to 8 MiB, odd
 * ones, the whole region (max + 1000). */
static size_t *sweep;
static size_t  nsweep;

static void build_sweep(size_t max)
{
    sweep = rma_alloc(256 * sizeof(*sweep));
    static const size_t odd[] = {3, 5, 7, 13, 100, 1000, 12345, 99999,
                                 1234567};
    for (size_t s = 1; s <= max; s *= 2) {
        bool near = s <= (8u << 20);
        if (near && s > 4 && s - 1 != sweep[nsweep - 1])
            sweep[nsweep++] = s - 1;
        sweep[nsweep++] = s;
        if (near && s > 2)
            sweep[nsweep++] = s + 1;
    }
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
        if (odd[i] <= max)
            sweep[nsweep++] = odd[i];
    sweep[nsweep++] = R;
}

/* Where the i-th transfer of len bytes goes: 0, the end, or in between. */
static size_t offset_for(size_t i, size_t len)
{
    switch (i % 3) {
    case 0: return 0;
    case 1: return R - len;
    default: return (len * 131 + 17 + i) % (R - len + 1);
    }
}

static void phase_edges(void)
{
    static const size_t lens[] = {1, 7, 8, 4097, 1024 * 1024 + 3};
    /* k == 0: this task's own region, through its own endpoint. */
    for (size_t k = 0; k < job.size; k++) {
        pami_task_t p    = mp_peer(&job, k);
        uint64_t    seed = rma_seed(p, 0);
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            size_t len = lens[i];
            if (len > R)
                continue;
            get_check(p, 0, len, seed, "at 0");
            get_check(p, (R / 3) | 1, len > R - ((R / 3) | 1) ? 1 : len,
                      seed, "inside");
            get_check(p, R - len, len, seed, "ending at the last byte");
        }

        /* 0 bytes: accepted, callbacks run, nothing moves. */
        rma_fill(src, 0, 64, rma_seed(job.me, 77));
        RMA_PUT_OK(&job, p, src, 0, &mrs[p], 0, "0-byte put at 0");
        RMA_PUT_OK(&job, p, src, 0, &mrs[p], R / 2, "0-byte put inside");
        memset(back, GUARD_BYTE, GUARD);
        RMA_GET_OK(&job, p, back, 0, &mrs[p], 0, "0-byte get at 0");
        RMA_GET_OK(&job, p, back, 0, &mrs[p], R / 2, "0-byte get inside");
        MP_EXPECT(rma_check_byte(back, GUARD, GUARD_BYTE) < 0,
                  "a 0-byte get wrote into the local buffer");

        /* Outside the region: refused, nothing sent. */
        rma_fill(src, 0, 8192, rma_seed(job.me, 66));
        refused_both(p, 1, R, "one past the end");
        refused_both(p, 8, R, "at the end");
        refused_both(p, 2, R - 1, "last byte plus one");
        refused_both(p, 4096, R - 4095, "ending one byte beyond");
        refused_both(p, 8, R + 1000, "far beyond the end");
        refused_both(p, R + 1, 0, "one byte more than the region");
        refused_both(p, 1, SIZE_MAX, "offset SIZE_MAX");
        refused_both(p, 16, SIZE_MAX - 7, "offset + bytes wraps to 8");
        refused_both(p, 8, (size_t)1 << 63, "offset 2^63");
        refused_both(p, 8, (size_t)0 - R, "offset 2^64 - R");
        /* For put, reading SIZE_MAX bytes of src would crash: it must be
         * refused before anything is read. */
        refused(RMA_PUT, p, src, SIZE_MAX, &mrs[p], 1, "bytes SIZE_MAX");
        refused(RMA_GET, p, back, SIZE_MAX, &mrs[p], 1, "bytes SIZE_MAX");
        refused(RMA_PUT, p, src, SIZE_MAX - R / 2 + 2, &mrs[p], R / 2,
                "offset + bytes wraps to 1");
        refused(RMA_GET, p, back, SIZE_MAX - R / 2 + 2, &mrs[p], R / 2,
                "offset + bytes wraps to 1");
        refused(RMA_PUT, p, src, 8, NULL, 0, "NULL region");
        refused(RMA_GET, p, back, 8, NULL, 0, "NULL region");
        refused(RMA_PUT, p, NULL, 8, &mrs[p], 0, "NULL local buffer");
        refused(RMA_GET, p, NULL, 8, &mrs[p], 0, "NULL local buffer");
    }
    mp_sync(&job);
    long bad = rma_check(region, 0, R, rma_seed(job.me, 0));
    MP_EXPECT(bad < 0, "my region changed at offset %ld after refused and "
                       "0-byte puts", bad);

    /* Gets of every size of the sweep from the untouched next task. */
    pami_task_t next = mp_peer(&job, 1);
    for (size_t i = 0; i < nsweep; i++)
        get_check(next, offset_for(i, sweep[i]), sweep[i],
                  rma_seed(next, 0), "sweep");
    mp_sync(&job);
}

static void phase_sweep(void)
{
    pami_task_t next = mp_peer(&job, 1);
    double      t0   = mp_now();
    size_t      total = 0;
    for (size_t i = 0; i < nsweep; i++) {
        size_t   len  = sweep[i];
        size_t   off  = offset_for(i + 1, len);
        uint64_t seed = rma_seed(job.me, 1000 + (uint32_t)i);
        rma_fill(src, off, len, seed);
        RMA_PUT_OK(&job, next, src, len, &mrs[next], off,
                   "sweep put of %zu bytes at offset %zu", len, off);
        /* The source is free again: scribble on it. */
        memset(src, 0x3c, len < 4096 ? len : 4096);
        get_check(next, off, len, seed, "back after the put");
        total += 2 * len;
    }
    mp_sync(&job);
    if (job.me == 0)
        printf("sweep: %zu sizes from 1 to %zu bytes, %.1f MiB moved by task "
               "0 in %.2f s\n", nsweep, R, total / 1048576.0, mp_now() - t0);
}

static void phase_regions(void)
{
    pami_context_t   ctx  = job.ctx[0];
    pami_task_t      next = mp_peer(&job, 1);
    pami_memregion_t lmr;
    MP_CHECK(pami_memregion_create(ctx, src, R, &lmr));
    static const size_t lens[] = {1, 8, 4097, 1048577, 0};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        size_t   len  = lens[i] ? lens[i] : R / 2;
        size_t   roff = offset_for(i, len);
        uint64_t seed = rma_seed(job.me, 5000 + (uint32_t)i);
        char     what[160];
        /* From the start of the local region... */
        rma_fill(src, roff, len, seed);
        snprintf(what, sizeof(what), "rput of %zu bytes, local 0, remote %zu",
                 len, roff);
        MP_CHECK(rma_rxfer(&job, RMA_PUT, next, &lmr, 0, &mrs[next], roff,
                           len, what));
        /* ...back into its end, ending exactly at its last byte. */
        size_t loff = R - len;
        memset(src + loff, 0, len);
        snprintf(what, sizeof(what), "rget of %zu bytes, local %zu, remote %zu",
                 len, loff, roff);
        MP_CHECK(rma_rxfer(&job, RMA_GET, next, &lmr, loff, &mrs[next], roff,
                           len, what));
        long bad = rma_check(src + loff, roff, len, seed);
        MP_EXPECT(bad < 0, "%s: byte %ld is wrong", what, bad);

        /* The local side out of bounds. The tail of the local region
         * keeps what the rget brought; a refused rget must not touch it,
         * and a refused rput must not change the remote range. */
        struct {
            size_t loff, bytes;
            const char *why;
        } bad_local[] = {
            {R - len + 1, len, "local range ends one byte beyond"},
            {R, 1, "local offset at the end"},
            {R + 4096, len, "local offset far beyond"},
            {SIZE_MAX, len, "local offset SIZE_MAX"},
            {SIZE_MAX - len / 2, len, "local offset + bytes wraps"},
        };
        for (size_t j = 0; j < sizeof(bad_local) / sizeof(bad_local[0]);
             j++) {
            snprintf(what, sizeof(what), "rget of %zu bytes at local %zu "
                     "(%s)", bad_local[j].bytes, bad_local[j].loff,
                     bad_local[j].why);
            MP_CHECK_RC(rma_rxfer(&job, RMA_GET, next, &lmr, bad_local[j].loff,
                                  &mrs[next], roff, bad_local[j].bytes, what),
                        PAMI_INVAL);
            snprintf(what, sizeof(what), "rput of %zu bytes at local %zu "
                     "(%s)", bad_local[j].bytes, bad_local[j].loff,
                     bad_local[j].why);
            MP_CHECK_RC(rma_rxfer(&job, RMA_PUT, next, &lmr, bad_local[j].loff,
                                  &mrs[next], roff, bad_local[j].bytes, what),
                        PAMI_INVAL);
        }
        bad = rma_check(src + loff, roff, len, seed);
        MP_EXPECT(bad < 0, "after refused rgets of %zu bytes, the end of the "
                           "local region changed at byte %ld", len, bad);
        /* The remote side out of bounds. */
        MP_CHECK_RC(rma_rxfer(&job, RMA_PUT, next, &lmr, 0, &mrs[next],
                              R - len + 1, len, "rput ending one beyond the "
                              "remote region"), PAMI_INVAL);
        MP_CHECK_RC(rma_rxfer(&job, RMA_GET, next, &lmr, 0, &mrs[next],
                              SIZE_MAX, len, "rget at remote offset "
                              "SIZE_MAX"), PAMI_INVAL);
        MP_CHECK_RC(rma_rxfer(&job, RMA_PUT, next, NULL, 0, &mrs[next], 0,
                              len, "rput with a NULL local region"),
                    PAMI_INVAL);
        MP_CHECK_RC(rma_rxfer(&job, RMA_GET, next, &lmr, 0, NULL, 0, len,
                              "rget with a NULL remote region"), PAMI_INVAL);
        /* Nothing of the refused rputs arrived. */
        memset(src + loff, 0, len);
        MP_CHECK(rma_rxfer(&job, RMA_GET, next, &lmr, loff, &mrs[next], roff,
                           len, "rget after refused rputs"));
        bad = rma_check(src + loff, roff, len, seed);
        MP_EXPECT(bad < 0, "remote range of %zu bytes at %zu changed at byte "
                           "%ld after refused rputs", len, roff, bad);
    }
    mp_sync(&job);
    MP_CHECK(pami_memregion_destroy(ctx, &lmr));
}

int main(int argc, char **argv)
{
    mp_init(&job, "rma_bounds", &argc, argv, NULL, 1, false);
    size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : 64u << 20;
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");
    R = max + 1000;
    rma_xchg_init(&job);
    MP_CHECK(pami_dispatch_fence(job.client));

    region = rma_alloc(R);
    src    = rma_alloc(R);
    back   = rma_alloc(R + GUARD);
    mrs    = rma_alloc(job.size * sizeof(*mrs));
    rma_fill(region, 0, R, rma_seed(job.me, 0));
    MP_CHECK(pami_memregion_create(job.ctx[0], region, R, &my_mr));
    rma_exchange(&job, &my_mr, region, R, mrs);
    build_sweep(max);

    double t0 = mp_now();
    phase_edges();
    double t1 = mp_now();
    phase_sweep();
    double t2 = mp_now();
    phase_regions();
    if (job.me == 0)
        printf("region %zu bytes, %zu tasks: edges %.2f s, sweep %.2f s, "
               "rput/rget %.2f s\n", R, job.size, t1 - t0, t2 - t1,
               mp_now() - t2);
    MP_CHECK(pami_memregion_destroy(job.ctx[0], &my_mr));
    mp_finish(&job);
    free(region);
    free(src);
    free(back);
    free(mrs);
    free(sweep);
    return 0;
}
