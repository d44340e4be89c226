/*
 * rma_atomic: pami_rmw under contention, and a lock built from it.
 *
 * Task 0's region holds the shared words; every task (task 0 too, through
 * its own endpoint) works on them:
 *
 *  - semantics, one task at a time: SWAP and CSWAP (hit and miss) give the
 *    old value and change the word as they should, 32-bit operations leave
 *    the neighbouring 32 bits alone; misaligned, out-of-bounds, wrong
 *    size, unknown op, NULL result for an op that returns one, NULL
 *    region: PAMI_INVAL and no callback;
 *  - fetch-add: every task adds 1 `count` times (default 10000) to one
 *    64-bit counter, up to 64 operations in flight; after a fence and a
 *    barrier task 0 finds exactly size * count, and the fetched values,
 *    gathered into task 0's region with puts, are exactly 0 .. size*count-1
 *    (all distinct, none missing); then PAMI_RMW_ADD without a result adds
 *    3 a hundred times per task;
 *  - the same with a 32-bit counter that starts at 0xffff0000 and wraps:
 *    fetched values are distinct modulo 2^32, the final value is exact, and
 *    the 32-bit guard next to it is untouched;
 *  - a lock: CSWAP 0 -> task+1 to acquire (retrying while it fails), SWAP
 *    back to 0 to release (which must return task+1); inside the critical
 *    section a non-atomic counter is incremented by get, then put, then
 *    pami_fence_endpoint before the release. The final count is exactly
 *    size * rounds.
 *
 * With RMA_ATOMIC_ALLOC=1 task 0's region is one pami allocated
 * (pami_memregion_alloc): the other tasks of its node then apply their
 * operations with CPU atomics through their mapping, task 0 through its
 * own endpoint (the owner's path), tasks of other nodes through the
 * owner's path too; all must stay atomic with respect to each other.
 *
 *   [RMA_ATOMIC_ALLOC=1] pamirun -n N rma_atomic [fadd|lock|all] [count]
 *                                                [rounds]
 */
#include "rma_util.h"

/* Layout of every task's region (only task 0's is the target). */
enum {
    OFF_C64    = 0,
    OFF_C32    = 8,
    OFF_GUARD  = 12,   /* 32 bits */
    OFF_LOCK   = 16,
    OFF_SHARED = 24,
    OFF_SCR64  = 32,   /* scratch for the semantics checks */
    OFF_SCR32  = 40,
    OFF_SCR32B = 44,
    OFF_GATHER = 64
};

#define C32_START 0xffff0000u
#define GUARD32   0x5a5a5a5au
#define WINDOW    64

static mp_job_t          job;
static uint8_t          *region;
static size_t            R;
static pami_memregion_t  my_mr;
static pami_memregion_t *mrs;
static uint64_t          count  = 10000;
static unsigned          rounds = 150;

static uint64_t load64(size_t off)
{
    uint64_t v;
    __atomic_load((uint64_t *)(region + off), &v, __ATOMIC_SEQ_CST);
    return v;
}

static uint32_t load32(size_t off)
{
    uint32_t v;
    __atomic_load((uint32_t *)(region + off), &v, __ATOMIC_SEQ_CST);
    return v;
}

static uint64_t rmw0(pami_rmw_op_t op, size_t off, size_t size,
                     uint64_t value, uint64_t compare, const char *what)
{
    uint64_t res = 0x1111111111111111ull;
    void    *out = &res;
    uint32_t res32 = 0x22222222u;
    if (size == 4)
        out = &res32;
    MP_CHECK(rma_rmw(&job, 0, &mrs[0], off, op, size, value, compare, out,
                     what));
    return size == 4 ? res32 : res;
}

static void refused_rmw(size_t off, pami_rmw_op_t op, size_t size,
                        void *result, const pami_memregion_t *mr,
                        const char *why)
{
    char what[160];
    snprintf(what, sizeof(what), "rmw op %d of %zu bytes at offset %zu "
             "(%s)", (int)op, size, off, why);
    MP_CHECK_RC(rma_rmw(&job, 0, mr, off, op, size, 1, 0, result, what),
                PAMI_INVAL);
}

static void test_semantics(void)
{
    for (pami_task_t t = 0; t < job.size; t++) {
        if (t == job.me) {
            uint64_t v;
            char     w[64];
            snprintf(w, sizeof(w), "task %u", t);
            v = rmw0(PAMI_RMW_SWAP, OFF_SCR64, 8, 1000 + t, 0, "swap64");
            MP_EXPECT(v == (t == 0 ? 0 : 999 + t), "%s: swap64 returned "
                      "%llu", w, (unsigned long long)v);
            v = rmw0(PAMI_RMW_CSWAP, OFF_SCR64, 8, 7, 999 + t, "cswap64 miss");
            MP_EXPECT(v == 1000 + t, "%s: cswap64 (miss) returned %llu", w,
                      (unsigned long long)v);
            v = rmw0(PAMI_RMW_CSWAP, OFF_SCR64, 8, 0x100000000ull + t,
                     1000 + t, "cswap64 hit");
            MP_EXPECT(v == 1000 + t, "%s: cswap64 (hit) returned %llu", w,
                      (unsigned long long)v);
            v = rmw0(PAMI_RMW_FETCH_ADD, OFF_SCR64, 8, (uint64_t)-1, 0,
                     "fadd64 of -1");
            MP_EXPECT(v == 0x100000000ull + t, "%s: fadd64 returned %llu",
                      w, (unsigned long long)v);
            v = rmw0(PAMI_RMW_FETCH_ADD, OFF_SCR64, 8, 0, 0, "fadd64 of 0");
            MP_EXPECT(v == 0xffffffffull + t, "%s: fadd64 of -1 gave %llu",
                      w, (unsigned long long)v);
            rmw0(PAMI_RMW_SWAP, OFF_SCR64, 8, 1000 + t, 0, "swap64");
            /* 32-bit, at both halves of one 64-bit word: the lower one
             * wraps, the upper one must not see a carry. */
            v = rmw0(PAMI_RMW_SWAP, OFF_SCR32B, 4, 0xabcd0000u + t, 0,
                     "swap32");
            MP_EXPECT(v == (t == 0 ? 0 : 0xabcd0000u + t - 1),
                      "%s: swap32 returned %#llx", w, (unsigned long long)v);
            v = rmw0(PAMI_RMW_CSWAP, OFF_SCR32, 4, 0xffffffffu, 0xffffffffu,
                     "cswap32 miss");
            MP_EXPECT(v == (t == 0 ? 0 : 0xfffffffeu), "%s: cswap32 (miss) "
                      "returned %#llx", w, (unsigned long long)v);
            rmw0(PAMI_RMW_CSWAP, OFF_SCR32, 4, 0xfffffffeu, v, "cswap32 hit");
            v = rmw0(PAMI_RMW_FETCH_ADD, OFF_SCR32, 4, 0, 0, "fadd32 of 0");
            MP_EXPECT(v == 0xfffffffeu, "%s: cswap32 (hit) left %#llx", w,
                      (unsigned long long)v);
            rmw0(PAMI_RMW_FETCH_ADD, OFF_SCR32, 4, 3, 0, "fadd32 wraps");
            v = rmw0(PAMI_RMW_FETCH_ADD, OFF_SCR32, 4, (uint32_t)-3, 0,
                     "fadd32 back");
            MP_EXPECT(v == 1, "%s: 0xfffffffe + 3 in 32 bits gave %#llx", w,
                      (unsigned long long)v);
            v = rmw0(PAMI_RMW_FETCH_ADD, OFF_SCR32B, 4, 0, 0, "fadd32 of 0");
            MP_EXPECT(v == 0xabcd0000u + t, "%s: the 32-bit word next to one "
                      "that wrapped became %#llx", w, (unsigned long long)v);
            /* The last word of the region is in bounds. */
            v = rmw0(PAMI_RMW_FETCH_ADD, R - 8, 8, 0, 0, "fadd64 of the last "
                     "word");
            MP_EXPECT(v == 0, "%s: last word holds %#llx", w,
                      (unsigned long long)v);
            v = rmw0(PAMI_RMW_FETCH_ADD, R - 4, 4, 0, 0, "fadd32 of the last "
                     "word");

            uint64_t res;
            refused_rmw(R, PAMI_RMW_FETCH_ADD, 8, &res, &mrs[0], "at the end");
            refused_rmw(R - 4, PAMI_RMW_FETCH_ADD, 8, &res, &mrs[0],
                        "4 bytes beyond the end");
            refused_rmw(SIZE_MAX - 7, PAMI_RMW_SWAP, 8, &res, &mrs[0],
                        "offset wraps");
            refused_rmw(OFF_SCR64 + 4, PAMI_RMW_FETCH_ADD, 8, &res, &mrs[0],
                        "misaligned");
            refused_rmw(OFF_SCR32 + 2, PAMI_RMW_SWAP, 4, &res, &mrs[0],
                        "misaligned");
            refused_rmw(OFF_SCR64, PAMI_RMW_FETCH_ADD, 2, &res, &mrs[0],
                        "size 2");
            refused_rmw(OFF_SCR64, PAMI_RMW_FETCH_ADD, 16, &res, &mrs[0],
                        "size 16");
            refused_rmw(OFF_SCR64, PAMI_RMW_FETCH_ADD, 0, &res, &mrs[0],
                        "size 0");
            refused_rmw(OFF_SCR64, (pami_rmw_op_t)9, 8, &res, &mrs[0],
                        "unknown op");
            refused_rmw(OFF_SCR64, PAMI_RMW_FETCH_ADD, 8, NULL, &mrs[0],
                        "fetch-add without a result");
            refused_rmw(OFF_SCR64, PAMI_RMW_CSWAP, 8, NULL, &mrs[0],
                        "cswap without a result");
            refused_rmw(OFF_SCR64, PAMI_RMW_FETCH_ADD, 8, &res, NULL,
                        "NULL region");
            refused_rmw(OFF_SCR64, PAMI_RMW_FETCH_ADD, 8, &res, &mrs[1],
                        "region of task 1, dest task 0");
        }
        mp_sync(&job);
    }
    if (job.me == 0) {
        MP_EXPECT(load64(OFF_SCR64) == 999 + job.size,
                  "scratch word is %llu",
                  (unsigned long long)load64(OFF_SCR64));
        MP_EXPECT(load32(OFF_C32) == C32_START && load32(OFF_GUARD) == GUARD32
                      && load64(OFF_C64) == 0,
                  "the semantics checks changed the counters");
    }
}

/* ---- fetch-add under contention ---- */

typedef struct {
    uint64_t v64;
    uint32_t v32;
    bool     done;
} fetch_t;

static fetch_t *fetched;
static size_t   outstanding;
static size_t   done_count;

static void on_fetch(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    fetch_t *f = cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "fetch-add %zu: %s",
              (size_t)(f - fetched), pami_error_text(rc));
    MP_EXPECT(!f->done, "fetch-add %zu completed twice",
              (size_t)(f - fetched));
    f->done = true;
    outstanding--;
    done_count++;
}

static void wait_step_until(double deadline, const char *what)
{
    if (mp_now() > deadline)
        mp_fail("%s: %zu of %llu done, %zu in flight after %.0f s", what,
                done_count, (unsigned long long)count, outstanding,
                MP_WAIT_S);
    mp_wait_step(&job, job.ctx[0]);
}

static int cmp64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void fetch_add_round(size_t size)
{
    pami_context_t ctx  = job.ctx[0];
    size_t         off  = size == 8 ? OFF_C64 : OFF_C32;
    const char    *what = size == 8 ? "64-bit fetch-add" : "32-bit fetch-add";
    memset(fetched, 0, count * sizeof(*fetched));
    outstanding = done_count = 0;
    mp_sync(&job);
    double   t0 = mp_now(), deadline = t0 + MP_WAIT_S;
    for (uint64_t i = 0; i < count; i++) {
        while (outstanding >= WINDOW)
            wait_step_until(deadline, what);
        /* Let the other tasks in, so the operations interleave even with
         * more tasks than cores. */
        if (i % 256 == 255)
            sched_yield();
        pami_rmw_t r = {.dest = mp_ep(&job, 0, 0), .remote_mr = &mrs[0],
                        .remote_offset = off, .op = PAMI_RMW_FETCH_ADD,
                        .size = size, .value = 1,
                        .result = size == 8 ? (void *)&fetched[i].v64
                                            : (void *)&fetched[i].v32,
                        .done_fn = on_fetch, .cookie = &fetched[i]};
        outstanding++;
        MP_CHECK(pami_rmw(ctx, &r));
    }
    while (outstanding > 0)
        wait_step_until(deadline, what);
    double t = mp_now() - t0;

    /* Mine, as 64-bit offsets from the start value, to task 0. */
    uint64_t *mine = rma_alloc(count * sizeof(*mine));
    bool      monotonic = true;
    uint64_t  jumps = 0;   /* another task's operation came in between */
    for (uint64_t i = 0; i < count; i++) {
        mine[i] = size == 8 ? fetched[i].v64
                            : (uint32_t)(fetched[i].v32 - C32_START);
        if (i > 0 && mine[i] <= mine[i - 1])
            monotonic = false;
        if (i > 0 && mine[i] != mine[i - 1] + 1)
            jumps++;
    }
    RMA_PUT_OK(&job, 0, mine, count * sizeof(*mine), &mrs[0],
               OFF_GATHER + job.me * count * sizeof(*mine),
               "put of my fetched values to task 0");
    rma_fence(&job, 0, "fence to task 0 after the fetch-adds");
    /* Meet: after this every task's operations are complete at task 0. */
    MP_CHECK(pami_dispatch_fence(job.client));
    free(mine);
    if (job.me == 0) {
        uint64_t total = job.size * count;
        if (size == 8) {
            MP_EXPECT(load64(OFF_C64) == total, "%s: counter is %llu, "
                      "expected %llu", what,
                      (unsigned long long)load64(OFF_C64),
                      (unsigned long long)total);
        } else {
            uint32_t want = (uint32_t)(C32_START + total);
            MP_EXPECT(load32(OFF_C32) == want, "%s: counter is %#x, expected "
                      "%#x", what, load32(OFF_C32), want);
            MP_EXPECT(load32(OFF_GUARD) == GUARD32, "%s: the 32 bits next "
                      "to the counter became %#x", what, load32(OFF_GUARD));
            MP_EXPECT(load64(OFF_C64) == total, "%s changed the 64-bit "
                      "counter", what);
        }
        uint64_t *all = (uint64_t *)(region + OFF_GATHER);
        qsort(all, total, sizeof(*all), cmp64);
        for (uint64_t i = 0; i < total; i++)
            MP_EXPECT(all[i] == i, "%s: sorted fetched values: position "
                      "%llu holds %llu (a value %s)", what,
                      (unsigned long long)i, (unsigned long long)all[i],
                      all[i] < i ? "fetched twice" : "never fetched");
        printf("%s: %zu tasks x %llu, %.3f s (%.0f ops/s per task), task 0's "
               "values %s, interleaved with others' %llu times\n", what,
               job.size, (unsigned long long)count, t, count / t,
               monotonic ? "increasing" : "not in issue order",
               (unsigned long long)jumps);
    }
    mp_sync(&job);
}

static void add_round(void)
{
    pami_context_t ctx = job.ctx[0];
    cb_count_t op[100];
    memset(op, 0, sizeof(op));
    for (int i = 0; i < 100; i++) {
        op[i].what = "PAMI_RMW_ADD";
        pami_rmw_t r = {.dest = mp_ep(&job, 0, 0), .remote_mr = &mrs[0],
                        .remote_offset = OFF_C64, .op = PAMI_RMW_ADD,
                        .size = 8, .value = 3, .result = NULL,
                        .done_fn = cb_count_local, .cookie = &op[i]};
        MP_CHECK(pami_rmw(ctx, &r));
    }
    for (int i = 0; i < 100; i++)
        rma_op_wait(&job, &op[i], true, false);
    rma_fence(&job, ~0u, "fence all after the adds");
    mp_sync(&job);
    if (job.me == 0) {
        uint64_t want = job.size * count + 300 * job.size;
        MP_EXPECT(load64(OFF_C64) == want, "after the adds the counter is "
                  "%llu, expected %llu", (unsigned long long)load64(OFF_C64),
                  (unsigned long long)want);
    }
}

/* ---- a lock ---- */

static void lock_rounds(void)
{
    pami_context_t ctx = job.ctx[0];
    uint64_t       tries = 0, old;
    mp_sync(&job);
    double t0 = mp_now();
    for (unsigned r = 0; r < rounds; r++) {
        double deadline = mp_now() + MP_WAIT_S;
        for (;;) {
            MP_CHECK(rma_rmw(&job, 0, &mrs[0], OFF_LOCK, PAMI_RMW_CSWAP, 8,
                             job.me + 1, 0, &old, "lock acquire"));
            MP_EXPECT(old <= job.size, "lock word holds %llu",
                      (unsigned long long)old);
            MP_EXPECT(old != job.me + 1u, "acquired a lock this task holds");
            if (old == 0)
                break;
            tries++;
            MP_EXPECT(mp_now() < deadline, "round %u: lock held by task %llu "
                      "for %.0f s", r, (unsigned long long)old - 1,
                      MP_WAIT_S);
            /* Back off while progressing (task 0 serves the others). */
            pami_context_wait(ctx, tries % 4 == 0);
            sched_yield();
        }
        uint64_t v = 0;
        RMA_GET_OK(&job, 0, &v, 8, &mrs[0], OFF_SHARED,
                   "get of the shared counter (round %u)", r);
        v++;
        /* Hold the lock across a reschedule now and then, so the others
         * find it taken. */
        if (r % 4 == 0)
            sched_yield();
        cb_count_t put = {.what = "put of the shared counter"};
        pami_rma_t p = {.dest = mp_ep(&job, 0, 0), .local = &v, .bytes = 8,
                        .remote_mr = &mrs[0], .remote_offset = OFF_SHARED,
                        .local_fn = cb_count_local, .cookie = &put};
        MP_CHECK(pami_put(ctx, &p));
        rma_fence(&job, 0, "fence before the release");
        rma_op_wait(&job, &put, true, false);
        MP_CHECK(rma_rmw(&job, 0, &mrs[0], OFF_LOCK, PAMI_RMW_SWAP, 8, 0, 0,
                         &old, "lock release"));
        MP_EXPECT(old == job.me + 1u, "round %u: released a lock that held "
                  "%llu instead of %u", r, (unsigned long long)old,
                  job.me + 1);
    }
    double t = mp_now() - t0;
    mp_sync(&job);
    if (job.me == 0) {
        uint64_t want = (uint64_t)job.size * rounds;
        MP_EXPECT(load64(OFF_SHARED) == want, "the counter under the lock is "
                  "%llu, expected %llu: mutual exclusion or the fence is "
                  "broken", (unsigned long long)load64(OFF_SHARED),
                  (unsigned long long)want);
        MP_EXPECT(load64(OFF_LOCK) == 0, "lock word is %llu at the end",
                  (unsigned long long)load64(OFF_LOCK));
        printf("lock: %zu tasks x %u critical sections in %.3f s, task 0 "
               "found the lock taken %llu times\n", job.size, rounds, t,
               (unsigned long long)tries);
    }
}

int main(int argc, char **argv)
{
    mp_init(&job, "rma_atomic", &argc, argv, NULL, 1, false);
    const char *mode = argc > 1 ? argv[1] : "all";
    if (argc > 2)
        count = strtoull(argv[2], NULL, 10);
    if (argc > 3)
        rounds = (unsigned)strtoul(argv[3], NULL, 10);
    bool fadd = strcmp(mode, "fadd") == 0 || strcmp(mode, "all") == 0;
    bool lock = strcmp(mode, "lock") == 0 || strcmp(mode, "all") == 0;
    MP_EXPECT(fadd || lock, "unknown mode '%s'", mode);
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");
    rma_xchg_init(&job);
    MP_CHECK(pami_dispatch_fence(job.client));

    const char *alloc_env = getenv("RMA_ATOMIC_ALLOC");
    bool alloc = alloc_env != NULL && strcmp(alloc_env, "1") == 0;
    R = OFF_GATHER + job.size * count * sizeof(uint64_t);
    mrs     = rma_alloc(job.size * sizeof(*mrs));
    fetched = rma_alloc(count * sizeof(*fetched));
    if (alloc) {
        MP_CHECK(pami_memregion_alloc(job.ctx[0], R, (void **)&region,
                                      &my_mr));
        MP_EXPECT(rma_check_byte(region, R, 0) < 0, "allocated region is "
                  "not zero-filled");
    } else {
        region = rma_alloc(R);
        memset(region, 0, R);
    }
    uint32_t c32 = C32_START, guard = GUARD32;
    memcpy(region + OFF_C32, &c32, 4);
    memcpy(region + OFF_GUARD, &guard, 4);
    if (!alloc)
        MP_CHECK(pami_memregion_create(job.ctx[0], region, R, &my_mr));
    rma_exchange(&job, &my_mr, region, R, mrs);

    test_semantics();
    if (fadd) {
        fetch_add_round(8);
        fetch_add_round(4);
        add_round();
    }
    if (lock)
        lock_rounds();

    mp_sync(&job);
    MP_CHECK(pami_memregion_destroy(job.ctx[0], &my_mr));
    mp_finish(&job);
    if (!alloc)
        free(region);
    free(mrs);
    free(fetched);
    return 0;
}
