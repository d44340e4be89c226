/*
 * rma_stale: a peer uses a copy of a region its owner destroyed.
 *
 * Task 0 owns a region over an anonymous mapping and gives every other
 * task a copy. It destroys the region and, in mode "unmapped", unmaps the
 * memory too, so that any touch of it at the owner would fault. The other
 * tasks then use their stale copies: get, put (with remote completion),
 * fetch-add and compare-and-swap of 4 and 8 bytes. Each must end in an
 * error, either the call's result or the result its callback receives
 * (exactly once), never PAMI_SUCCESS; and the owner must keep running: it
 * then creates a new region over fresh memory, and every task puts to it
 * and gets it back.
 *
 * In mode "mapped" the memory stays mapped after destroy: fetch-adds and
 * compare-and-swaps through the stale copy must still fail (the owner
 * checks the region of every atomic it applies), and the memory must be
 * unchanged by them. With PAMI_RMA_VIA_OWNER=1, puts and gets go through
 * the owner too and are checked the same way there: they must fail in
 * this mode as well (on one node they otherwise use CMA, which only the
 * kernel's mapping bounds: docs/protocols/rma.md).
 *
 *   pamirun -n N rma_stale [unmapped|mapped]     (N >= 2)
 */
#include "rma_util.h"

#include <sys/mman.h>

#define BYTES (64 * 1024)

static mp_job_t job;

typedef struct {
    unsigned      calls;
    pami_result_t rc;
} done_t;

static void on_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    done_t *d = cookie;
    d->calls++;
    d->rc = rc;
}

/* The outcome of an operation: the call's refusal, or what its callback
 * said (waited for, and checked to run once). */
static pami_result_t outcome(pami_result_t call, done_t *d, unsigned want,
                             const char *what)
{
    if (call != PAMI_SUCCESS) {
        for (int i = 0; i < 8; i++)
            pami_context_advance(job.ctx[0], 8);
        MP_EXPECT(d->calls == 0, "%s: refused (%s) yet called back", what,
                  pami_error_text(call));
        return call;
    }
    MP_WAIT(&job, job.ctx[0], d->calls >= want, MP_WAIT_S,
            "%s: %u of %u callbacks", what, d->calls, want);
    for (int i = 0; i < 8; i++)
        pami_context_advance(job.ctx[0], 8);
    MP_EXPECT(d->calls == want, "%s: %u callbacks, expected %u", what,
              d->calls, want);
    return d->rc;
}

static void expect_error(pami_result_t rc, const char *what)
{
    MP_EXPECT(rc != PAMI_SUCCESS, "%s through a destroyed region succeeded",
              what);
    printf("task %u: %s through a destroyed region: %s\n", job.me, what,
           pami_error_text(rc));
}

static pami_result_t stale_rmw(const pami_memregion_t *mr, pami_rmw_op_t op,
                               size_t size, const char *what)
{
    uint64_t   result = 0;
    done_t     d = {0};
    pami_rmw_t r = {.dest = mp_ep(&job, 0, 0), .remote_mr = mr,
                    .remote_offset = 64, .op = op, .size = size, .value = 7,
                    .compare = 0, .result = &result, .done_fn = on_done,
                    .cookie = &d};
    return outcome(pami_rmw(job.ctx[0], &r), &d, 1, what);
}

int main(int argc, char **argv)
{
    mp_init(&job, "rma_stale", &argc, argv, NULL, 1, false);
    const char *mode = argc > 1 ? argv[1] : "unmapped";
    bool unmap = strcmp(mode, "unmapped") == 0;
    const char *via = getenv("PAMI_RMA_VIA_OWNER");
    bool checked_xfer = unmap || (via != NULL && strcmp(via, "1") == 0);
    MP_EXPECT(unmap || strcmp(mode, "mapped") == 0, "unknown mode %s", mode);
    MP_EXPECT(job.size >= 2, "needs 2 tasks or more");
    rma_xchg_init(&job);
    MP_CHECK(pami_dispatch_fence(job.client));
    pami_memregion_t *mrs = calloc(job.size, sizeof(*mrs));
    MP_EXPECT(mrs != NULL, "out of memory");

    /* Everybody takes part in the exchange; only task 0's region counts. */
    uint8_t *mem = mmap(NULL, BYTES, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    MP_EXPECT(mem != MAP_FAILED, "mmap failed");
    memset(mem, 0xab, BYTES);
    pami_memregion_t mine;
    MP_CHECK(pami_memregion_create(job.ctx[0], mem, BYTES, &mine));
    rma_exchange(&job, &mine, mem, BYTES, mrs);
    pami_memregion_t stale = mrs[0];
    mp_sync(&job);

    if (job.me == 0) {
        MP_CHECK(pami_memregion_destroy(job.ctx[0], &mine));
        if (unmap)
            MP_EXPECT(munmap(mem, BYTES) == 0, "munmap failed");
    }
    mp_sync(&job);

    if (job.me != 0) {
        uint8_t buf[256];
        done_t  d = {0};
        if (checked_xfer) {
            pami_rma_t g = {.dest = mp_ep(&job, 0, 0), .local = buf,
                            .bytes = sizeof(buf), .remote_mr = &stale,
                            .remote_offset = 128, .local_fn = on_done,
                            .cookie = &d};
            expect_error(outcome(pami_get(job.ctx[0], &g), &d, 1, "get"),
                         "get");
            memset(buf, 0x11, sizeof(buf));
            d = (done_t){0};
            pami_rma_t p = g;
            p.local_fn  = NULL;
            p.remote_fn = on_done;
            expect_error(outcome(pami_put(job.ctx[0], &p), &d, 1, "put"),
                         "put");
        }
        expect_error(stale_rmw(&stale, PAMI_RMW_FETCH_ADD, 8, "fetch-add 8"),
                     "fetch-add 8");
        expect_error(stale_rmw(&stale, PAMI_RMW_FETCH_ADD, 4, "fetch-add 4"),
                     "fetch-add 4");
        expect_error(stale_rmw(&stale, PAMI_RMW_CSWAP, 8, "cswap 8"),
                     "cswap 8");
        expect_error(stale_rmw(&stale, PAMI_RMW_SWAP, 4, "swap 4"), "swap 4");
    }
    mp_sync(&job);
    if (job.me == 0 && !unmap) {
        for (size_t i = 0; i < BYTES; i++)
            MP_EXPECT(mem[i] == 0xab, "byte %zu of the destroyed region "
                      "changed to 0x%02x", i, mem[i]);
    }

    /* The owner is alive and serves a fresh region. */
    uint8_t *fresh = rma_alloc(BYTES);
    rma_fill(fresh, 0, BYTES, rma_seed(job.me, 3));
    pami_memregion_t fmr;
    MP_CHECK(pami_memregion_create(job.ctx[0], fresh, BYTES, &fmr));
    rma_exchange(&job, &fmr, fresh, BYTES, mrs);
    if (job.me != 0) {
        uint64_t word = 0xc0ffee00ull + job.me, back = 0;
        size_t   off  = 8 * job.me;
        RMA_PUT_OK(&job, 0, &word, 8, &mrs[0], off, "put to the new region");
        RMA_GET_OK(&job, 0, &back, 8, &mrs[0], off, "get from it");
        MP_EXPECT(back == word, "got 0x%llx back", (unsigned long long)back);
        uint64_t old = 0;
        MP_CHECK(rma_rmw(&job, 0, &mrs[0], off, PAMI_RMW_FETCH_ADD, 8, 1, 0,
                         &old, "fetch-add on the new region"));
        MP_EXPECT(old == word, "fetch-add saw 0x%llx", (unsigned long long)old);
    }
    mp_sync(&job);
    MP_CHECK(pami_memregion_destroy(job.ctx[0], &fmr));
    if (job.me != 0 || !unmap) {
        if (job.me != 0)
            MP_CHECK(pami_memregion_destroy(job.ctx[0], &mine));
        munmap(mem, BYTES);
    }
    MP_CHECK(pami_client_destroy(&job.client));
    free(fresh);
    free(mrs);
    printf("rma_stale %s: task %u ok\n", mode, job.me);
    return 0;
}
