/*
 * rma_batch: many small puts and gets to a task of this node in flight at
 * once, which pami moves together in one kernel call per batch
 * (docs/protocols/rma.md, "CMA"; PAMI_CMA_BATCH=0 moves each alone, and
 * the test expects the same of both).
 *
 * Task 0 owns a region; every other task writes its own slice of it with
 * OPS puts of mixed sizes (1 B to 20000 B: some above the batch limit, so
 * a burst mixes both ways), never waiting between them, then reads every
 * range back with as many gets issued right behind the puts. Checked:
 * each callback runs exactly once, never inside its call, with
 * PAMI_SUCCESS; the gets see the puts' bytes (a get issued after a put of
 * this context to the same task moves after it); task 0 finds every
 * slice byte-exact.
 *
 * Then one burst mixes good ranges with ranges of a region whose owner
 * destroyed and unmapped it: the bad ones, and only they, end with
 * PAMI_INVAL; the good ones land.
 *
 *   pamirun -n N rma_batch     (N >= 2)
 */
#include "rma_util.h"

#include <sys/mman.h>

#define SLICE ((size_t)2 << 20)
#define OPS   300
#define DEAD_BYTES (64 * 1024)

static mp_job_t job;

static const size_t sizes[] = {1, 7, 64, 1000, 4096, 16384, 20000, 8, 333};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

typedef struct {
    unsigned      local, remote;
    pami_result_t local_rc, remote_rc;
} count_t;

static bool in_call;

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    count_t *c = cookie;
    MP_EXPECT(!in_call, "local_fn ran inside its call");
    c->local++;
    c->local_rc = rc;
}

static void on_remote(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    count_t *c = cookie;
    MP_EXPECT(!in_call, "remote_fn ran inside its call");
    c->remote++;
    c->remote_rc = rc;
}

/* Where op k of a slice goes and how long it is. */
static void op_range(size_t k, size_t *off, size_t *len)
{
    size_t o = 0;
    for (size_t i = 0; i < k; i++)
        o += sizes[i % NSIZES];
    *off = o;
    *len = sizes[k % NSIZES];
}

static void issue(bool put, const pami_memregion_t *mr, void *local,
                  size_t bytes, size_t off, count_t *c)
{
    pami_rma_t p = {.dest = mp_ep(&job, 0, 0), .local = local,
                    .bytes = bytes, .remote_mr = mr, .remote_offset = off,
                    .local_fn = on_local,
                    .remote_fn = put ? on_remote : NULL, .cookie = c};
    in_call = true;
    pami_result_t rc = put ? pami_put(job.ctx[0], &p)
                           : pami_get(job.ctx[0], &p);
    in_call = false;
    MP_EXPECT(rc == PAMI_SUCCESS, "%s of %zu bytes at %zu: %s",
              put ? "put" : "get", bytes, off, pami_error_text(rc));
}

static bool all_called(const count_t *c, size_t n, bool put)
{
    for (size_t k = 0; k < n; k++)
        if (c[k].local == 0 || (put && c[k].remote == 0))
            return false;
    return true;
}

/* Waits for every callback of n operations (puts also remote_fn). */
static void wait_all(count_t *c, size_t n, bool put, const char *what)
{
    MP_WAIT(&job, job.ctx[0], all_called(c, n, put), MP_WAIT_S,
            "%s: callbacks missing", what);
    for (int i = 0; i < 8; i++)
        pami_context_advance(job.ctx[0], 8);
    for (size_t k = 0; k < n; k++)
        MP_EXPECT(c[k].local == 1 && c[k].remote == (put ? 1u : 0u),
                  "%s %zu: local_fn ran %u times, remote_fn %u", what, k,
                  c[k].local, c[k].remote);
}

int main(int argc, char **argv)
{
    mp_init(&job, "rma_batch", &argc, argv, NULL, 1, false);
    MP_EXPECT(job.size >= 2, "needs 2 tasks or more");
    rma_xchg_init(&job);
    MP_CHECK(pami_dispatch_fence(job.client));
    pami_memregion_t *mrs = calloc(job.size, sizeof(*mrs));
    MP_EXPECT(mrs != NULL, "out of memory");

    size_t   total = SLICE * (job.size - 1);
    uint8_t *mem   = rma_alloc(total);
    memset(mem, 0, total);
    pami_memregion_t mine;
    MP_CHECK(pami_memregion_create(job.ctx[0], mem, total, &mine));
    rma_exchange(&job, &mine, mem, total, mrs);
    pami_memregion_t dead_mine;
    uint8_t *dead = mmap(NULL, DEAD_BYTES, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    MP_EXPECT(dead != MAP_FAILED, "mmap failed");
    MP_CHECK(pami_memregion_create(job.ctx[0], dead, DEAD_BYTES, &dead_mine));
    pami_memregion_t *dmrs = calloc(job.size, sizeof(*dmrs));
    MP_EXPECT(dmrs != NULL, "out of memory");
    rma_exchange(&job, &dead_mine, dead, DEAD_BYTES, dmrs);
    mp_sync(&job);
    if (job.me == 0) {
        MP_CHECK(pami_memregion_destroy(job.ctx[0], &dead_mine));
        MP_EXPECT(munmap(dead, DEAD_BYTES) == 0, "munmap failed");
    }
    mp_sync(&job);

    uint64_t seed = rma_seed(0, 7);
    size_t   used, last;
    op_range(OPS, &used, &last);
    MP_EXPECT(used <= SLICE, "ops need %zu bytes of a %zu-byte slice", used,
              SLICE);
    if (job.me != 0) {
        size_t   base = SLICE * (job.me - 1);
        uint8_t *src  = rma_alloc(SLICE);
        uint8_t *back = rma_alloc(SLICE);
        rma_fill(src, base, SLICE, seed);
        memset(back, 0, SLICE);
        count_t *puts = calloc(OPS, sizeof(*puts));
        count_t *gets = calloc(OPS, sizeof(*gets));
        MP_EXPECT(puts != NULL && gets != NULL, "out of memory");
        for (size_t k = 0; k < OPS; k++) {
            size_t off, len;
            op_range(k, &off, &len);
            issue(true, &mrs[0], src + off, len, base + off, &puts[k]);
        }
        for (size_t k = 0; k < OPS; k++) {
            size_t off, len;
            op_range(k, &off, &len);
            issue(false, &mrs[0], back + off, len, base + off, &gets[k]);
        }
        wait_all(puts, OPS, true, "put");
        wait_all(gets, OPS, false, "get");
        for (size_t k = 0; k < OPS; k++)
            MP_EXPECT(puts[k].local_rc == PAMI_SUCCESS &&
                          puts[k].remote_rc == PAMI_SUCCESS &&
                          gets[k].local_rc == PAMI_SUCCESS,
                      "op %zu: put %s/%s, get %s", k,
                      pami_error_text(puts[k].local_rc),
                      pami_error_text(puts[k].remote_rc),
                      pami_error_text(gets[k].local_rc));
        long bad = rma_check(back, base, used, seed);
        MP_EXPECT(bad < 0, "byte %ld of the slice read back is wrong", bad);

        /* Good, bad, good, bad, good: put, put, put, get, get. Only the
         * ranges of the destroyed region fail. */
        uint64_t words[5] = {0x1111, 0x2222, 0x3333, 0, 0};
        count_t  mix[5]   = {{0}};
        size_t   woff     = base + used; /* past the slice's written part */
        issue(true, &mrs[0], &words[0], 8, woff, &mix[0]);
        issue(true, &dmrs[0], &words[1], 8, 64, &mix[1]);
        issue(true, &mrs[0], &words[2], 8, woff + 8, &mix[2]);
        issue(false, &dmrs[0], &words[3], 8, 128, &mix[3]);
        issue(false, &mrs[0], &words[4], 8, woff + 8, &mix[4]);
        MP_WAIT(&job, job.ctx[0],
                mix[0].remote && mix[1].remote && mix[2].remote &&
                    mix[3].local && mix[4].local,
                MP_WAIT_S, "mixed burst: callbacks missing");
        for (int i = 0; i < 8; i++)
            pami_context_advance(job.ctx[0], 8);
        static const pami_result_t want[5] = {PAMI_SUCCESS, PAMI_INVAL,
                                              PAMI_SUCCESS, PAMI_INVAL,
                                              PAMI_SUCCESS};
        for (int i = 0; i < 5; i++) {
            MP_EXPECT(mix[i].local == 1 && mix[i].remote == (i < 3 ? 1u : 0u),
                      "mixed op %d: local_fn %u times, remote_fn %u", i,
                      mix[i].local, mix[i].remote);
            MP_EXPECT(mix[i].local_rc == want[i] &&
                          (i >= 3 || mix[i].remote_rc == want[i]),
                      "mixed op %d ended with %s, expected %s", i,
                      pami_error_text(mix[i].local_rc),
                      pami_error_text(want[i]));
        }
        MP_EXPECT(words[4] == 0x3333, "the get behind the put read 0x%llx",
                  (unsigned long long)words[4]);
        free(puts);
        free(gets);
        free(src);
        free(back);
    }
    mp_sync(&job);
    if (job.me == 0) {
        for (size_t t = 1; t < job.size; t++) {
            size_t base = SLICE * (t - 1);
            long   bad  = rma_check(mem + base, base, used, seed);
            MP_EXPECT(bad < 0, "byte %ld of task %zu's slice is wrong", bad,
                      t);
            uint64_t w[2];
            memcpy(w, mem + base + used, sizeof(w));
            MP_EXPECT(w[0] == 0x1111 && w[1] == 0x3333,
                      "task %zu's words after the slice: 0x%llx 0x%llx", t,
                      (unsigned long long)w[0], (unsigned long long)w[1]);
        }
    }
    mp_sync(&job);
    MP_CHECK(pami_memregion_destroy(job.ctx[0], &mine));
    if (job.me != 0) {
        MP_CHECK(pami_memregion_destroy(job.ctx[0], &dead_mine));
        munmap(dead, DEAD_BYTES);
    }
    MP_CHECK(pami_client_destroy(&job.client));
    free(mem);
    free(mrs);
    free(dmrs);
    printf("rma_batch: task %u ok\n", job.me);
    return 0;
}
