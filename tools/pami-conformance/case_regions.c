/*
 * Suite rma, the calls one by one: every rmw op and its refusals, the
 * local side of rput/rget, fences' arguments, pami_memregion_map and
 * pami_memregion_alloc, and the completed field (docs/api.md, "Memory
 * regions"). Each case names the sentences it checks in
 * docs/conformance.md.
 */
#include "cf.h"

#include <pami_protocol.h>

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pami_memregion_t *gather_regions(cf_env_t *e,
                                        const pami_memregion_t *mr)
{
    pami_memregion_t *all = calloc(e->size, sizeof(*all));
    if (all == NULL || cf_allgather(mr, all, sizeof(*mr)) != 0) {
        CF_FAIL(e, "expected the runner's exchange to work");
        free(all);
        return NULL;
    }
    return all;
}

/* One rmw to completion; *completed honoured. */
static pami_result_t rmw_wait(cf_env_t *e, pami_rmw_t *r)
{
    cf_count_t d = {0};
    int done_in_call = 0;
    r->done_fn = cf_count_fn;
    r->cookie = &d;
    r->completed = &done_in_call;
    pami_result_t rc = pami_rmw(e->ctx, r);
    if (rc != PAMI_SUCCESS)
        return rc;
    if (done_in_call)
        return PAMI_SUCCESS;
    if (cf_wait_count(e, &d.n, 1, "the rmw's done_fn") != 0)
        return PAMI_TIMEOUT;
    return d.rc;
}

/* ---- rmw_ops ---- */

static void rmw_ops(cf_env_t *e)
{
    /* Slot t (16 bytes) of every region is task t's alone. */
    /* aligned_alloc wants a multiple of the alignment. */
    size_t    len   = (16 * e->size + 64 + 63) & ~(size_t)63;
    uint64_t *cells = aligned_alloc(64, len);
    CF_CHECK(e, cells != NULL, "expected memory");
    memset(cells, 0, len);
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_create(e->ctx, cells, len, &mr));
    pami_memregion_t *all = gather_regions(e, &mr);
    if (all == NULL)
        return;
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    size_t off8 = 16 * e->task, off4 = off8 + 8;
    pami_rmw_t r = {.dest = cf_ep(e, to), .remote_mr = &all[to]};
    uint64_t old = 0;
    uint32_t old4 = 0;
    /* 8 bytes: swap, compare-swap that misses and hits, fetch-add, add. */
    r.remote_offset = off8;
    r.size = 8;
    r.result = &old;
    r.op = PAMI_RMW_SWAP;
    r.value = 0x0123456789abcdefull;
    CF_OK(e, rmw_wait(e, &r));
    CF_CHECK(e, old == 0, "expected swap's old value 0, seen %llx",
             (unsigned long long)old);
    r.op = PAMI_RMW_CSWAP;
    r.compare = 5;
    r.value = 77;
    CF_OK(e, rmw_wait(e, &r));
    CF_CHECK(e, old == 0x0123456789abcdefull, "expected a missing "
             "compare-swap to give the old value, seen %llx",
             (unsigned long long)old);
    r.compare = 0x0123456789abcdefull;
    CF_OK(e, rmw_wait(e, &r));
    CF_CHECK(e, old == 0x0123456789abcdefull, "expected a hitting "
             "compare-swap to give the old value, seen %llx",
             (unsigned long long)old);
    r.op = PAMI_RMW_FETCH_ADD;
    r.value = 3;
    CF_OK(e, rmw_wait(e, &r));
    CF_CHECK(e, old == 77, "expected 77 after the hitting compare-swap, "
             "seen %llu", (unsigned long long)old);
    r.op = PAMI_RMW_ADD;
    r.result = NULL;
    r.value = (uint64_t)-1;
    CF_OK(e, rmw_wait(e, &r));
    r.op = PAMI_RMW_FETCH_ADD;
    r.result = &old;
    r.value = 0;
    CF_OK(e, rmw_wait(e, &r));
    CF_CHECK(e, old == 79, "expected 77 + 3 - 1 = 79, seen %llu",
             (unsigned long long)old);
    /* 4 bytes: the low 32 bits of value and compare. */
    r.remote_offset = off4;
    r.size = 4;
    r.result = &old4;
    r.op = PAMI_RMW_SWAP;
    r.value = 0xffffffff00000010ull;
    CF_OK(e, rmw_wait(e, &r));
    r.op = PAMI_RMW_CSWAP;
    r.compare = 0xabcdef0000000010ull;
    r.value = 0x5555555500000020ull;
    CF_OK(e, rmw_wait(e, &r));
    CF_CHECK(e, old4 == 0x10, "expected the 4-byte compare-swap's old 0x10, "
             "seen %x", old4);
    r.op = PAMI_RMW_FETCH_ADD;
    r.value = 0x100000001ull;
    CF_OK(e, rmw_wait(e, &r));
    CF_CHECK(e, old4 == 0x20, "expected 0x20 after the 4-byte compare-swap, "
             "seen %x", old4);
    r.value = 0;
    CF_OK(e, rmw_wait(e, &r));
    CF_CHECK(e, old4 == 0x21, "expected 0x21 (only the low 32 bits added), "
             "seen %x", old4);
    /* The next 4 bytes of the slot were not touched by 4-byte ops. */
    pami_rmw_t peek = {.dest = cf_ep(e, to), .remote_mr = &all[to],
                       .remote_offset = off4, .op = PAMI_RMW_FETCH_ADD,
                       .size = 8, .result = &old};
    CF_OK(e, rmw_wait(e, &peek));
    CF_CHECK(e, (old >> 32) == 0 || (old & 0xffffffffu) == 0,
             "expected a 4-byte rmw to leave its neighbour alone, seen "
             "%llx", (unsigned long long)old);
    /* Refusals: op, size, result NULL for fetching ops. */
    cf_count_t d = {0};
    pami_rmw_t b = {.dest = cf_ep(e, to), .remote_mr = &all[to],
                    .remote_offset = off8, .op = (pami_rmw_op_t)4, .size = 8,
                    .result = &old, .done_fn = cf_count_fn, .cookie = &d};
    CF_RC(e, PAMI_INVAL, pami_rmw(e->ctx, &b));
    b.op = (pami_rmw_op_t)-1;
    CF_RC(e, PAMI_INVAL, pami_rmw(e->ctx, &b));
    b.op = PAMI_RMW_SWAP;
    size_t sizes[] = {0, 1, 2, 16};
    for (size_t i = 0; i < 4; i++) {
        b.size = sizes[i];
        CF_RC(e, PAMI_INVAL, pami_rmw(e->ctx, &b));
    }
    b.size = 8;
    b.result = NULL;
    pami_rmw_op_t fetching[] = {PAMI_RMW_FETCH_ADD, PAMI_RMW_SWAP,
                                PAMI_RMW_CSWAP};
    for (size_t i = 0; i < 3; i++) {
        b.op = fetching[i];
        CF_RC(e, PAMI_INVAL, pami_rmw(e->ctx, &b));
    }
    CF_RC(e, PAMI_INVAL, pami_rmw(NULL, &b));
    b.op = PAMI_RMW_ADD;
    b.remote_mr = NULL;
    CF_RC(e, PAMI_INVAL, pami_rmw(e->ctx, &b));
    for (int k = 0; k < 10; k++)
        pami_context_advance(e->ctx, 1);
    CF_CHECK(e, d.n == 0, "expected no done_fn for a refused rmw, seen %zu",
             d.n);
    CF_OK(e, pami_dispatch_fence(e->client));
    uint64_t *mine = cells + 2 * ((e->task + e->size - 1) % e->size);
    CF_CHECK(e, mine[0] == 79, "expected this task's 8-byte cell at 79 from "
             "the previous task, seen %llu", (unsigned long long)mine[0]);
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
    free(all);
    free(cells);
}

/* ---- local_side: rput/rget's local region checks ---- */

static void local_side(cf_env_t *e)
{
    static uint8_t win[4096], loc[4096];
    pami_memregion_t mr, lmr, gone;
    CF_OK(e, pami_memregion_create(e->ctx, win, sizeof(win), &mr));
    CF_OK(e, pami_memregion_create(e->ctx, loc, sizeof(loc), &lmr));
    CF_OK(e, pami_memregion_create(e->ctx, loc, 64, &gone));
    pami_memregion_t gone_copy = gone;
    CF_OK(e, pami_memregion_destroy(e->ctx, &gone));
    pami_memregion_t *all = gather_regions(e, &mr);
    if (all == NULL)
        return;
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    cf_count_t d = {0};
    pami_rrma_t r = {.dest = cf_ep(e, to), .local_mr = NULL,
                     .remote_mr = &all[to], .bytes = 16,
                     .local_fn = cf_count_fn, .cookie = &d};
    CF_RC(e, PAMI_INVAL, pami_rput(e->ctx, &r));
    CF_RC(e, PAMI_INVAL, pami_rget(e->ctx, &r));
    static const pami_memregion_t zero;
    r.local_mr = &zero;
    CF_RC(e, PAMI_INVAL, pami_rput(e->ctx, &r));
    r.local_mr = &gone_copy;
    CF_RC(e, PAMI_INVAL, pami_rput(e->ctx, &r));
    CF_RC(e, PAMI_INVAL, pami_rget(e->ctx, &r));
    if (e->size > 1) {
        /* Another task's region as the local side. */
        r.local_mr = &all[to];
        CF_RC(e, PAMI_INVAL, pami_rput(e->ctx, &r));
    }
    r.local_mr = &lmr;
    r.local_offset = sizeof(loc) - 8;
    CF_RC(e, PAMI_INVAL, pami_rput(e->ctx, &r));
    r.local_offset = SIZE_MAX - 4;
    CF_RC(e, PAMI_INVAL, pami_rget(e->ctx, &r));
    CF_RC(e, PAMI_INVAL, pami_rput(NULL, &r));
    for (int k = 0; k < 10; k++)
        pami_context_advance(e->ctx, 1);
    CF_CHECK(e, d.n == 0, "expected no callback for refused calls, seen %zu",
             d.n);
    /* Zero bytes at the very end of both regions: issued, callbacks run
     * from progress, not inside. */
    r.local_offset = sizeof(loc);
    r.remote_offset = sizeof(win);
    r.bytes = 0;
    r.remote_fn = cf_count_fn;
    CF_OK(e, pami_rput(e->ctx, &r));
    CF_CHECK(e, d.n == 0, "expected no callback inside pami_rput");
    cf_wait_count(e, &d.n, 2, "the zero-byte rput's local_fn and remote_fn");
    r.remote_fn = NULL;
    CF_OK(e, pami_rget(e->ctx, &r));
    cf_wait_count(e, &d.n, 3, "the zero-byte rget's local_fn");
    CF_CHECK(e, d.bad == 0, "expected PAMI_SUCCESS, seen %s",
             cf_rc_name(d.rc));
    /* put/get with bytes == 0 and local NULL: every check still applies,
     * but local may be NULL. */
    pami_rma_t p = {.dest = cf_ep(e, to), .local = NULL, .bytes = 0,
                    .remote_mr = &all[to], .remote_offset = sizeof(win),
                    .local_fn = cf_count_fn, .cookie = &d};
    CF_OK(e, pami_put(e->ctx, &p));
    CF_OK(e, pami_get(e->ctx, &p));
    cf_wait_count(e, &d.n, 5, "the zero-byte put and get");
    p.remote_offset = sizeof(win) + 1;
    CF_RC(e, PAMI_INVAL, pami_put(e->ctx, &p));
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_OK(e, pami_memregion_destroy(e->ctx, &lmr));
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
    free(all);
}

/* ---- fence_calls ---- */

static void fence_calls(cf_env_t *e)
{
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    cf_count_t d = {0};
    CF_RC(e, PAMI_INVAL, pami_fence_all(NULL, cf_count_fn, &d));
    CF_RC(e, PAMI_INVAL, pami_fence_endpoint(NULL, cf_ep(e, to), cf_count_fn,
                                             &d));
    CF_RC(e, PAMI_INVAL, pami_fence_endpoint(e->ctx, PAMI_ENDPOINT_NULL,
                                             cf_count_fn, &d));
    /* fn may be NULL; with nothing issued the fence still completes. */
    CF_OK(e, pami_fence_all(e->ctx, NULL, NULL));
    CF_OK(e, pami_fence_endpoint(e->ctx, cf_ep(e, to), NULL, NULL));
    CF_OK(e, pami_fence_endpoint(e->ctx, cf_ep(e, to), cf_count_fn, &d));
    CF_OK(e, pami_fence_all(e->ctx, cf_count_fn, &d));
    CF_CHECK(e, d.n == 0, "expected no fence callback inside the call");
    cf_wait_count(e, &d.n, 2, "the fences' callbacks");
    for (int k = 0; k < 10; k++)
        pami_context_advance(e->ctx, 1);
    CF_CHECK(e, d.n == 2 && d.bad == 0, "expected each fence callback once "
             "with PAMI_SUCCESS, seen %zu (%s)", d.n, cf_rc_name(d.rc));
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- map_and_alloc ---- */

static void map_and_alloc(cf_env_t *e)
{
    static uint8_t priv[4096];
    long page = sysconf(_SC_PAGESIZE);
    void *addr = NULL, *again = NULL, *shared = NULL;
    pami_memregion_t pmr, smr;
    CF_OK(e, pami_memregion_create(e->ctx, priv, sizeof(priv), &pmr));
    CF_OK(e, pami_memregion_map(e->ctx, &pmr, &addr));
    CF_CHECK(e, addr == priv, "expected an own region mapped at its base, "
             "seen %p for %p", addr, (void *)priv);
    CF_RC(e, PAMI_INVAL, pami_memregion_map(NULL, &pmr, &addr));
    CF_RC(e, PAMI_INVAL, pami_memregion_map(e->ctx, &pmr, NULL));
    static const pami_memregion_t zero;
    CF_RC(e, PAMI_INVAL, pami_memregion_map(e->ctx, &zero, &addr));
    CF_RC(e, PAMI_INVAL, pami_memregion_alloc(e->ctx, 0, &shared, &smr));
    CF_RC(e, PAMI_INVAL, pami_memregion_alloc(NULL, 64, &shared, &smr));
    CF_RC(e, PAMI_INVAL, pami_memregion_alloc(e->ctx, 64, NULL, &smr));
    CF_RC(e, PAMI_INVAL, pami_memregion_alloc(e->ctx, 64, &shared, NULL));
    CF_RC(e, PAMI_INVAL, pami_memregion_alloc(e->ctx, SIZE_MAX - 10,
                                              &shared, &smr));
    const size_t len = 3 * 4096 + 100, tail = len + 8 * e->size;
    CF_OK(e, pami_memregion_alloc(e->ctx, tail, &shared, &smr));
    CF_CHECK(e, ((uintptr_t)shared % (uintptr_t)page) == 0, "expected a page "
             "aligned allocation, seen %p", shared);
    uint8_t *s = shared;
    for (size_t i = 0; i < tail; i++)
        CF_CHECK(e, s[i] == 0, "expected zero-filled memory, byte %zu is %u",
                 i, s[i]);
    void *base = NULL;
    size_t bytes = 0;
    pami_endpoint_t owner;
    CF_OK(e, pami_memregion_query(&smr, &base, &bytes, &owner));
    CF_CHECK(e, base == shared && bytes >= tail, "expected base %p and at "
             "least %zu bytes, seen %p and %zu", shared, tail, base, bytes);
    CF_OK(e, pami_memregion_map(e->ctx, &smr, &addr));
    CF_CHECK(e, addr == shared, "expected an own allocation mapped at its "
             "base");
    cf_fill(s, len, e->seed, e->task, 7);
    pami_memregion_t mine[2] = {pmr, smr};
    pami_memregion_t *all = calloc(2 * e->size, sizeof(*all));
    CF_CHECK(e, all && cf_allgather(mine, all, sizeof(mine)) == 0,
             "expected the runner's exchange to work");
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_NODES};
    CF_OK(e, pami_client_query(e->client, &a));
    /* Every other task: on this node its allocation maps, reads what it
     * wrote and maps again at the same address; its private region is
     * PAMI_NOT_FOUND. A put through the mapping completes in the call. */
    cf_count_t d = {0};
    size_t expect_cb = 0;
    /* The puts' source: it must outlive every put not complete at return
     * (until its local_fn), so not a variable of the loop's body. */
    uint8_t probe[8];
    cf_fill(probe, 8, e->seed, e->task, 8);
    for (size_t t = 0; t < e->size; t++) {
        if (t == e->task)
            continue;
        pami_memregion_t *theirs = &all[2 * t];
        int local = a.task_node[t] == a.task_node[e->task];
        pami_result_t rc = pami_memregion_map(e->ctx, &theirs[0], &addr);
        CF_CHECK(e, rc == PAMI_NOT_FOUND, "expected PAMI_NOT_FOUND mapping "
                 "task %zu's private region, seen %s", t, cf_rc_name(rc));
        rc = pami_memregion_map(e->ctx, &theirs[1], &addr);
        if (!local) {
            CF_CHECK(e, rc == PAMI_NOT_FOUND, "expected PAMI_NOT_FOUND for "
                     "task %zu on another node, seen %s", t, cf_rc_name(rc));
            continue;
        }
        CF_CHECK(e, rc == PAMI_SUCCESS, "expected task %zu's allocation to "
                 "map, seen %s", t, cf_rc_name(rc));
        size_t bad = cf_verify(addr, len, e->seed, t, 7);
        CF_CHECK(e, bad == len, "expected task %zu's bytes through the "
                 "mapping, first difference at %zu", t, bad);
        CF_OK(e, pami_memregion_map(e->ctx, &theirs[1], &again));
        CF_CHECK(e, again == addr, "expected the same address when mapping "
                 "again");
        /* Past the pattern, 8 bytes that only this task writes. */
        int completed = -1;
        pami_rma_t p = {.dest = cf_ep(e, (pami_task_t)t), .local = probe,
                        .bytes = 8, .remote_mr = &theirs[1],
                        .remote_offset = len + 8 * e->task,
                        .local_fn = cf_count_fn, .remote_fn = cf_count_fn,
                        .cookie = &d, .completed = &completed};
        CF_OK(e, pami_put(e->ctx, &p));
        CF_CHECK(e, completed == 1, "expected *completed 1 for a put into a "
                 "node peer's pami_memregion_alloc region, seen %d",
                 completed);
        CF_CHECK(e, memcmp((uint8_t *)addr + len + 8 * e->task, probe, 8) == 0,
                 "expected the put's data in the owner's memory at return");
        completed = -1;
        p.remote_mr = &theirs[0];
        p.remote_offset = (8 * e->task) % sizeof(priv);
        CF_OK(e, pami_put(e->ctx, &p));
        CF_CHECK(e, completed == 0, "expected *completed 0 for a put to "
                 "private memory, seen %d", completed);
        expect_cb += 2;
    }
    cf_wait_count(e, &d.n, expect_cb, "callbacks of the puts that did not "
                  "complete in the call");
    CF_OK(e, pami_dispatch_fence(e->client));
    for (int k = 0; k < 10; k++)
        pami_context_advance(e->ctx, 1);
    CF_CHECK(e, d.n == expect_cb && d.bad == 0, "expected exactly %zu "
             "callbacks with PAMI_SUCCESS (none for a put done in the "
             "call), seen %zu (%s)", expect_cb, d.n, cf_rc_name(d.rc));
    CF_OK(e, pami_memregion_destroy(e->ctx, &smr));
    CF_OK(e, pami_memregion_destroy(e->ctx, &pmr));
    free(all);
}

/* ---- alloc_segment: the shared object behind pami_memregion_alloc ---- */

/* Objects in /dev/shm whose name starts with prefix; the last one's mode
 * and size. */
static size_t shm_objects(const char *prefix, mode_t *mode, off_t *size)
{
    DIR *d = opendir("/dev/shm");
    size_t n = 0;
    if (d == NULL)
        return 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char path[512];
        struct stat st;
        snprintf(path, sizeof(path), "/dev/shm/%s", de->d_name);
        if (stat(path, &st) == 0) {
            *mode = st.st_mode & 0777;
            *size = st.st_size;
        }
        n++;
    }
    closedir(d);
    return n;
}

static void alloc_segment(cf_env_t *e)
{
    pami_protocol_job_key_t jk;
    CF_OK(e, pami_protocol_job_key(e->client, &jk));
    char prefix[160];
    snprintf(prefix, sizeof(prefix), "pami-%s-mr-%u-0-", jk.name, e->task);
    mode_t mode = 0;
    off_t size = 0;
    CF_CHECK(e, shm_objects(prefix, &mode, &size) == 0, "expected no object "
             "%s* before the allocation", prefix);
    long page = sysconf(_SC_PAGESIZE);
    void *addr;
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_alloc(e->ctx, (size_t)page + 1, &addr, &mr));
    size_t n = shm_objects(prefix, &mode, &size);
    CF_CHECK(e, n == 1, "expected one object /dev/shm/%s* (protocols/rma.md, "
             "shared regions), seen %zu", prefix, n);
    CF_CHECK(e, mode == 0600 && size == 2 * page, "expected mode 0600 and "
             "%ld bytes (rounded up to whole pages), seen %o and %lld",
             2 * page, (unsigned)mode, (long long)size);
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
    n = shm_objects(prefix, &mode, &size);
    CF_CHECK(e, n == 0, "expected pami_memregion_destroy to remove the "
             "name, seen %zu objects left", n);
    /* "a full `/dev/shm` is `PAMI_ENOMEM` here, never a fault later" (1
     * TiB), and nothing is left behind. */
    CF_RC(e, PAMI_ENOMEM, pami_memregion_alloc(e->ctx, 1ull << 40, &addr,
                                               &mr));
    n = shm_objects(prefix, &mode, &size);
    CF_CHECK(e, n == 0, "expected no object left by a refused allocation, "
             "seen %zu", n);
    /* api.md: "too large for a file once rounded up to a page (above
     * 2^63 - 1 bytes)" is PAMI_INVAL, outputs untouched, no object. */
    static const size_t huge[] = {(size_t)INT64_MAX, (size_t)INT64_MAX + 1,
                                  SIZE_MAX - 4096, SIZE_MAX};
    for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
        void *a2 = &n;
        pami_memregion_t m2;
        memset(&m2, 0x5a, sizeof(m2));
        CF_RC(e, PAMI_INVAL, pami_memregion_alloc(e->ctx, huge[i], &a2, &m2));
        CF_CHECK(e, a2 == (void *)&n && ((uint8_t *)&m2)[0] == 0x5a &&
                        shm_objects(prefix, &mode, &size) == 0,
                 "expected a refused allocation of %zu bytes to leave its "
                 "outputs and no object", huge[i]);
    }
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- slot_reuse: a stale copy of a region whose slot was reused ---- */

static void slot_reuse(cf_env_t *e)
{
    static uint8_t a[256], b[256];
    pami_memregion_t ra, rb, stale;
    CF_OK(e, pami_memregion_create(e->ctx, a, sizeof(a), &ra));
    stale = ra;
    CF_OK(e, pami_memregion_destroy(e->ctx, &ra));
    CF_OK(e, pami_memregion_create(e->ctx, b, sizeof(b), &rb));
    /* "already destroyed (or a copy of an earlier region in a reused
     * slot)" */
    CF_RC(e, PAMI_INVAL, pami_memregion_destroy(e->ctx, &stale));
    /* Nor is it a live local side: "`local_mr` ... destroyed". */
    cf_count_t d = {0};
    pami_rrma_t r = {.dest = cf_ep(e, e->task), .local_mr = &stale,
                     .remote_mr = &rb, .bytes = 16, .local_fn = cf_count_fn,
                     .cookie = &d};
    CF_RC(e, PAMI_INVAL, pami_rput(e->ctx, &r));
    /* The new region is untouched by all that. */
    memset(a, 0x11, sizeof(a));
    CF_OK(e, pami_memregion_create(e->ctx, a, sizeof(a), &ra));
    r.local_mr = &ra;
    r.remote_fn = cf_count_fn;
    CF_OK(e, pami_rput(e->ctx, &r));
    cf_wait_count(e, &d.n, 2, "the rput's callbacks");
    CF_CHECK(e, d.bad == 0 && b[0] == 0x11 && b[15] == 0x11 && b[16] == 0,
             "expected the rput into the new region, seen %s",
             cf_rc_name(d.rc));
    CF_OK(e, pami_memregion_destroy(e->ctx, &rb));
    CF_OK(e, pami_memregion_destroy(e->ctx, &ra));
}

const cf_case_t cf_regions_cases[] = {
    {"rma", "rmw_ops", 1, 0, 0, rmw_ops, NULL},
    {"rma", "local_side", 1, 0, 0, local_side, NULL},
    {"rma", "fence_calls", 1, 0, 0, fence_calls, NULL},
    {"rma", "map_and_alloc", 1, 0, 0, map_and_alloc, NULL},
    {"rma", "alloc_segment", 1, 0, 0, alloc_segment, NULL},
    {"rma", "slot_reuse", 1, 0, 0, slot_reuse, NULL},
};
const size_t cf_num_regions_cases =
    sizeof(cf_regions_cases) / sizeof(cf_regions_cases[0]);
