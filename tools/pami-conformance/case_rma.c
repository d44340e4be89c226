/* Suite rma: regions, bounds, fences, atomics, region lifetime. */
#include "cf.h"

#include <stdlib.h>
#include <string.h>

#define RMA_LEN (256 * 1024)

typedef struct {
    size_t n, bad;
    int    rc;
} done_t;

static void done_fn(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    done_t *d = k;
    d->n++;
    if (rc != PAMI_SUCCESS) {
        d->bad++;
        d->rc = rc;
    }
}

/* Every task's region, gathered through the runner's exchange. */
static pami_memregion_t *share_region(cf_env_t *e, const pami_memregion_t *mr)
{
    pami_memregion_t *all = calloc(e->size, sizeof(*all));
    if (cf_allgather(mr, all, sizeof(*mr)) != 0) {
        CF_FAIL(e, "expected the runner's exchange to work");
        free(all);
        return NULL;
    }
    return all;
}

static void put_get(cf_env_t *e)
{
    uint8_t *win = calloc(1, RMA_LEN), *src = malloc(RMA_LEN),
            *back = calloc(1, RMA_LEN);
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_create(e->ctx, win, RMA_LEN, &mr));
    void *base;
    size_t bytes;
    pami_endpoint_t owner;
    CF_OK(e, pami_memregion_query(&mr, &base, &bytes, &owner));
    CF_CHECK(e, base == win && bytes == RMA_LEN,
             "expected the region's base and length back, seen %p/%zu",
             base, bytes);
    pami_memregion_t *all = share_region(e, &mr);
    if (all == NULL)
        return;
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    pami_endpoint_t ep = cf_ep(e, to);
    cf_fill(src, RMA_LEN, e->seed, e->task, 1);
    done_t local = {0}, remote = {0};
    /* Sizes from 0 to the whole region, at offsets that end at its end. */
    size_t sizes[] = {0, 1, 8, 4096, 65536 + 3, RMA_LEN};
    size_t ns = sizeof(sizes) / sizeof(sizes[0]);
    for (size_t i = 0; i < ns; i++) {
        size_t off = RMA_LEN - sizes[i];
        pami_rma_t p = {.dest = ep, .local = src + off, .bytes = sizes[i],
                        .remote_mr = &all[to], .remote_offset = off,
                        .local_fn = done_fn, .remote_fn = done_fn,
                        .cookie = &remote};
        p.local_fn = NULL;
        CF_OK(e, pami_put(e->ctx, &p));
        cf_wait_count(e, &remote.n, i + 1, "put remote_fn callbacks");
    }
    CF_CHECK(e, remote.bad == 0, "expected put callbacks PAMI_SUCCESS, seen "
             "%s", cf_rc_name(remote.rc));
    /* Reading back what this task wrote at the neighbour. */
    pami_rma_t g = {.dest = ep, .local = back, .bytes = RMA_LEN,
                    .remote_mr = &all[to], .local_fn = done_fn,
                    .cookie = &local};
    CF_OK(e, pami_get(e->ctx, &g));
    cf_wait_count(e, &local.n, 1, "get local_fn");
    size_t bad = cf_verify(back, RMA_LEN, e->seed, e->task, 1);
    CF_CHECK(e, bad == RMA_LEN, "expected the put data back by get, first "
             "difference at byte %zu", bad);
    /* rput/rget: both sides regions. */
    pami_memregion_t lmr;
    CF_OK(e, pami_memregion_create(e->ctx, back, RMA_LEN, &lmr));
    memset(back, 0, RMA_LEN);
    done_t rg = {0};
    pami_rrma_t r = {.dest = ep, .local_mr = &lmr, .local_offset = 100,
                     .remote_mr = &all[to], .remote_offset = 100,
                     .bytes = 5000, .local_fn = done_fn, .cookie = &rg};
    CF_OK(e, pami_rget(e->ctx, &r));
    cf_wait_count(e, &rg.n, 1, "rget local_fn");
    for (size_t i = 0; i < 5000; i++)
        CF_CHECK(e, back[100 + i] == cf_byte(e->seed, e->task, 1, 100 + i),
                 "expected rget data at byte %zu", i);
    r.local_offset = RMA_LEN - 10;
    CF_RC(e, PAMI_INVAL, pami_rget(e->ctx, &r));
    r.local_offset = 0;
    r.remote_fn = done_fn;
    CF_RC(e, PAMI_INVAL, pami_rget(e->ctx, &r));
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_OK(e, pami_memregion_destroy(e->ctx, &lmr));
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
    free(all);
    free(win);
    free(src);
    free(back);
}

static void bounds(cf_env_t *e)
{
    static uint8_t win[4096], loc[8192];
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_create(e->ctx, win, sizeof(win), &mr));
    pami_memregion_t *all = share_region(e, &mr);
    if (all == NULL)
        return;
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    pami_endpoint_t ep = cf_ep(e, to);
    done_t d = {0};
    pami_rma_t p = {.dest = ep, .local = loc, .bytes = 1,
                    .remote_mr = &all[to], .remote_offset = sizeof(win),
                    .local_fn = done_fn, .cookie = &d};
    CF_RC(e, PAMI_INVAL, pami_put(e->ctx, &p));
    CF_RC(e, PAMI_INVAL, pami_get(e->ctx, &p));
    p.remote_offset = 1;
    p.bytes = sizeof(win);
    CF_RC(e, PAMI_INVAL, pami_put(e->ctx, &p));
    p.remote_offset = SIZE_MAX - 2;
    p.bytes = 8;
    CF_RC(e, PAMI_INVAL, pami_put(e->ctx, &p));
    p.remote_offset = 0;
    p.local = NULL;
    CF_RC(e, PAMI_INVAL, pami_put(e->ctx, &p));
    p.local = loc;
    p.remote_fn = done_fn;
    CF_RC(e, PAMI_INVAL, pami_get(e->ctx, &p));
    p.remote_fn = NULL;
    /* A region of another task used with this endpoint's task. */
    if (e->size > 2) {
        pami_task_t other = (pami_task_t)((e->task + 2) % e->size);
        p.remote_mr = &all[other];
        CF_RC(e, PAMI_INVAL, pami_put(e->ctx, &p));
        p.remote_mr = &all[to];
    }
    /* A forged handle: counted in bad_regions. */
    pami_context_stats_t s0, s1;
    CF_OK(e, pami_context_stats(e->ctx, &s0));
    pami_memregion_t forged = all[to];
    /* The first key bytes (offset 48, docs/protocols/rma.md) are sealed. */
    forged.opaque[6] ^= 0x5a5a5a5a5a5a5a5aull;
    p.remote_mr = &forged;
    CF_RC(e, PAMI_INVAL, pami_put(e->ctx, &p));
    CF_OK(e, pami_context_stats(e->ctx, &s1));
    CF_CHECK(e, s1.bad_regions > s0.bad_regions,
             "expected bad_regions to rise for a forged region, seen %llu",
             (unsigned long long)s1.bad_regions);
    /* No callback ran for any refused call; bytes == 0 completes. */
    p.remote_mr = &all[to];
    p.bytes = 0;
    p.remote_offset = sizeof(win);
    CF_OK(e, pami_put(e->ctx, &p));
    CF_CHECK(e, d.n == 0, "expected no callback inside the call, seen %zu",
             d.n);
    cf_wait_count(e, &d.n, 1, "the zero-byte put's local_fn");
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
    free(all);
}

/* Puts, then a fence, then a message: the target sees the data. */
#define FENCE_ID 20

typedef struct {
    cf_env_t *e;
    int       got;
    uint8_t  *win;
} fence_t;

static void on_fenced(pami_context_t c, void *k, const void *h, size_t hs,
                      const void *d, size_t ds, pami_endpoint_t o,
                      pami_recv_t *r)
{
    (void)c; (void)hs; (void)d; (void)ds; (void)o; (void)r;
    fence_t *s = k;
    uint32_t from;
    memcpy(&from, h, sizeof(from));
    size_t bad = cf_verify(s->win, RMA_LEN, s->e->seed, from, 2);
    if (bad != RMA_LEN)
        CF_FAIL(s->e, "expected every put of task %u visible after its "
                "fence, first difference at byte %zu", from, bad);
    s->got = 1;
}

static void fence(cf_env_t *e)
{
    fence_t s = {.e = e, .win = calloc(1, RMA_LEN)};
    uint8_t *src = malloc(RMA_LEN);
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_create(e->ctx, s.win, RMA_LEN, &mr));
    CF_OK(e, pami_dispatch_set(e->ctx, FENCE_ID, on_fenced, &s, NULL));
    pami_memregion_t *all = share_region(e, &mr);
    if (all == NULL)
        return;
    CF_OK(e, pami_dispatch_fence(e->client));
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    pami_endpoint_t ep = cf_ep(e, to);
    cf_fill(src, RMA_LEN, e->seed, e->task, 2);
    done_t d = {0}, f = {0};
    for (size_t off = 0; off < RMA_LEN; off += 8192) {
        pami_rma_t p = {.dest = ep, .local = src + off, .bytes = 8192,
                        .remote_mr = &all[to], .remote_offset = off,
                        .local_fn = done_fn, .cookie = &d};
        CF_OK(e, pami_put(e->ctx, &p));
    }
    int all_fence = (int)(e->seed & 1);
    if (all_fence)
        CF_OK(e, pami_fence_all(e->ctx, done_fn, &f));
    else
        CF_OK(e, pami_fence_endpoint(e->ctx, ep, done_fn, &f));
    cf_wait_count(e, &f.n, 1, "the fence's callback");
    CF_CHECK(e, f.bad == 0, "expected the fence PAMI_SUCCESS, seen %s",
             cf_rc_name(f.rc));
    uint32_t me = e->task;
    pami_send_immediate_t m = {.dest = ep, .dispatch = FENCE_ID,
                               .header = &me, .header_len = sizeof(me)};
    CF_OK(e, cf_send_immediate(e, &m));
    cf_wait_flag(e, &s.got, "the message after the fence");
    cf_wait_count(e, &d.n, RMA_LEN / 8192, "put local_fn callbacks");
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
    free(all);
    free(src);
    free(s.win);
}

/* Every task adds to task 0's counters; swap and compare-swap. */
#define ATOM_ROUNDS 50

static void atomics(cf_env_t *e)
{
    static uint64_t cell[4] __attribute__((aligned(8)));
    memset(cell, 0, sizeof(cell));
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_create(e->ctx, cell, sizeof(cell), &mr));
    pami_memregion_t *all = share_region(e, &mr);
    if (all == NULL)
        return;
    pami_endpoint_t ep = cf_ep(e, 0);
    done_t d = {0};
    uint64_t olds[ATOM_ROUNDS];
    for (size_t i = 0; i < ATOM_ROUNDS; i++) {
        pami_rmw_t r = {.dest = ep, .remote_mr = &all[0], .remote_offset = 0,
                        .op = PAMI_RMW_FETCH_ADD, .size = 8, .value = 1,
                        .result = &olds[i], .done_fn = done_fn, .cookie = &d};
        CF_OK(e, pami_rmw(e->ctx, &r));
        uint32_t add = 3;
        (void)add;
        pami_rmw_t a = {.dest = ep, .remote_mr = &all[0], .remote_offset = 8,
                        .op = PAMI_RMW_ADD, .size = 4, .value = 3,
                        .done_fn = done_fn, .cookie = &d};
        CF_OK(e, pami_rmw(e->ctx, &a));
    }
    cf_wait_count(e, &d.n, 2 * ATOM_ROUNDS, "rmw callbacks");
    /* Atomics may need the target's progress: meet in a fence (which
     * advances) before anything that does not. */
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_CHECK(e, d.bad == 0, "expected rmw PAMI_SUCCESS, seen %s",
             cf_rc_name(d.rc));
    for (size_t i = 1; i < ATOM_ROUNDS; i++)
        CF_CHECK(e, olds[i] != olds[i - 1] || e->size == 0,
                 "expected distinct old values from fetch-add, seen %llu "
                 "twice", (unsigned long long)olds[i]);
    /* Compare-swap: exactly one task wins cell[2] from 0 to its id + 1. */
    uint64_t old = 99;
    done_t c = {0};
    pami_rmw_t cs = {.dest = ep, .remote_mr = &all[0], .remote_offset = 16,
                     .op = PAMI_RMW_CSWAP, .size = 8, .value = e->task + 1,
                     .compare = 0, .result = &old, .done_fn = done_fn,
                     .cookie = &c};
    CF_OK(e, pami_rmw(e->ctx, &cs));
    cf_wait_count(e, &c.n, 1, "the compare-swap");
    CF_OK(e, pami_dispatch_fence(e->client));
    int won = old == 0;
    int wins[64] = {0};
    if (e->size <= 64 && cf_allgather(&won, wins, sizeof(int)) == 0) {
        int total = 0;
        for (size_t t = 0; t < e->size; t++)
            total += wins[t];
        CF_CHECK(e, total == 1, "expected exactly one compare-swap to win, "
                 "seen %d", total);
    }
    /* Misaligned and wrongly sized operations are refused. */
    pami_rmw_t bad = {.dest = ep, .remote_mr = &all[0], .remote_offset = 4,
                      .op = PAMI_RMW_SWAP, .size = 8, .value = 1,
                      .result = &old, .done_fn = done_fn, .cookie = &c};
    CF_RC(e, PAMI_INVAL, pami_rmw(e->ctx, &bad));
    bad.remote_offset = 0;
    bad.size = 2;
    CF_RC(e, PAMI_INVAL, pami_rmw(e->ctx, &bad));
    bad.size = 8;
    bad.remote_offset = 32;
    CF_RC(e, PAMI_INVAL, pami_rmw(e->ctx, &bad));
    CF_OK(e, pami_dispatch_fence(e->client));
    if (e->task == 0) {
        CF_CHECK(e, cell[0] == ATOM_ROUNDS * e->size,
                 "expected the fetch-add counter at %zu, seen %llu",
                 (size_t)(ATOM_ROUNDS * e->size),
                 (unsigned long long)cell[0]);
        uint32_t lo;
        memcpy(&lo, &cell[1], sizeof(lo));
        CF_CHECK(e, lo == 3u * ATOM_ROUNDS * e->size,
                 "expected the 4-byte add counter at %zu, seen %u",
                 (size_t)(3u * ATOM_ROUNDS * e->size), lo);
    }
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
    free(all);
}

static void region_lifetime(cf_env_t *e)
{
    static uint8_t buf[4096];
    pami_memregion_t mr, copy;
    CF_RC(e, PAMI_INVAL, pami_memregion_create(e->ctx, NULL, 16, &mr));
    CF_RC(e, PAMI_INVAL, pami_memregion_create(e->ctx, buf, 0, &mr));
    CF_RC(e, PAMI_INVAL, pami_memregion_create(NULL, buf, 16, &mr));
    CF_OK(e, pami_memregion_create(e->ctx, buf, sizeof(buf), &mr));
    copy = mr;
    pami_memregion_t *all = share_region(e, &mr);
    if (all == NULL)
        return;
    /* Another task's region cannot be destroyed here. */
    if (e->size > 1) {
        pami_memregion_t theirs = all[(e->task + 1) % e->size];
        CF_RC(e, PAMI_INVAL, pami_memregion_destroy(e->ctx, &theirs));
    }
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
    static const pami_memregion_t zero;
    CF_CHECK(e, memcmp(&mr, &zero, sizeof(mr)) == 0,
             "expected the handle zeroed by destroy");
    CF_RC(e, PAMI_INVAL, pami_memregion_destroy(e->ctx, &copy));
    CF_RC(e, PAMI_INVAL, pami_memregion_destroy(e->ctx, &mr));
    CF_RC(e, PAMI_INVAL, pami_memregion_query(NULL, NULL, NULL, NULL));
    /* The copies stay readable: query needs no registration. */
    void *base;
    CF_OK(e, pami_memregion_query(&copy, &base, NULL, NULL));
    CF_CHECK(e, base == buf, "expected the base of the destroyed region's "
             "copy, seen %p", base);
    CF_OK(e, pami_dispatch_fence(e->client));
    free(all);
}

const cf_case_t cf_rma_cases[] = {
    {"rma", "put_get", 1, 0, 0, put_get, NULL},
    {"rma", "bounds", 1, 0, 0, bounds, NULL},
    {"rma", "fence", 1, 0, 0, fence, NULL},
    {"rma", "atomics", 1, 0, 0, atomics, NULL},
    {"rma", "region_lifetime", 1, 0, 0, region_lifetime, NULL},
};
const size_t cf_num_rma_cases = sizeof(cf_rma_cases) / sizeof(cf_rma_cases[0]);
