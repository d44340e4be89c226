/*
 * rma_shm: regions pami allocates in node-shared memory
 * (pami_memregion_alloc) and their mapping on the node's other tasks
 * (pami_memregion_map).
 *
 * Every task allocates a shared region (not a page multiple) and creates
 * a private one over malloc'ed memory; all exchange both. Then:
 * - the shared memory is page aligned and zero-filled;
 * - map of a peer's shared region succeeds, twice at the same address;
 *   map of an own region gives its address; a peer's private region is
 *   PAMI_NOT_FOUND; so is a peer's shared region while the test pretends
 *   that peer lives on another node (white-box: it flips the client's
 *   node table for a moment);
 * - every task stores its pattern into its slot of every peer's region
 *   through the mapping; each owner reads them all with plain loads, and
 *   every task reads them back with pami_get;
 * - pami_put into every peer's shared region (through the mapping) is
 *   seen by the owner's loads once remote_fn ran and a barrier passed;
 *   pami_get reads what the owner stored; every task and the owner itself
 *   (through its own endpoint: the owner's path) fetch-add one word of
 *   task 0's region ADDS times: the sum is exact and each task's fetched
 *   values ascend;
 * - with `completed` set, put, get, rput, rget and rmw (fetch-add, a
 *   4-byte compare-and-swap) through the mapping are
 *   done at return (1, no callback), on a private region 0 and the
 *   callbacks run once; a refused call leaves it unwritten, also right
 *   after a call through the same copy (misaligned rmw, NULL local
 *   buffer, the region toward a task that does not own it); an old
 *   layout without the field gets its callbacks;
 * - forged or corrupted copies (base, bytes, flag, key bytes, random) are
 *   PAMI_INVAL and counted in bad_regions; NULL arguments are PAMI_INVAL;
 * - the owner destroys its region while the peers have it mapped: its
 *   name is gone from /dev/shm at once, the peers still load and store
 *   (no fault) and see what was there, and pami_put / pami_rmw through
 *   their copy land in their mapping (they succeed: the path is load and
 *   store; CMA would fail on the unmapped memory); a region destroyed before anyone
 *   mapped it cannot be mapped any more (PAMI_INVAL);
 * - after pami_client_destroy nothing of this task is left in /dev/shm;
 *   under PMIx (mpirun) the segments live in the job's directory
 *   /dev/shm/pami-<job id>-ucx, which the launcher removes, not in
 *   /dev/shm itself.
 *
 *   pamirun -n N rma_shm      (N >= 2, all on one node)
 */
#include "rma_util.h"

#include <dirent.h>
#include <errno.h>

#include "internal.h"

#define BYTES (3 * 4096 + 100)
#define SLOT  512
#define PUTS  4096          /* offset of the put slots */
#define WORD  (2 * 4096)    /* the fetch-add word, in task 0's region */
#define ADDS  500

static mp_job_t job;

/* Entries of dir whose names start with prefix (none: no dir). */
static unsigned count_in(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    unsigned       n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            n++;
    closedir(d);
    return n;
}

static char job_dir[256], dir_prefix[64];

/* How many names this task's segments hold now, in /dev/shm or in the
 * job's directory. */
static unsigned names_left(const char *prefix)
{
    return count_in("/dev/shm", prefix) + count_in(job_dir, dir_prefix);
}

static uint64_t bad_regions(void)
{
    pami_context_stats_t st;
    MP_CHECK(pami_context_stats(job.ctx[0], &st));
    return st.bad_regions;
}

static void expect_map(const pami_memregion_t *mr, pami_result_t want,
                       const char *what)
{
    void *p = (void *)&job;
    pami_result_t rc = pami_memregion_map(job.ctx[0], mr, &p);
    MP_EXPECT(rc == want, "map of %s: %s, expected %s", what,
              pami_error_text(rc), pami_error_text(want));
}

/* Forged or corrupted copies of a peer's shared region. */
static void forgeries(const pami_memregion_t *good)
{
    uint64_t before = bad_regions();
    unsigned forged = 0;
    /* Byte offsets in the wire form (docs/protocols/rma.md): flags 14,
     * id 16, base 24, bytes 32, seal 40, key 48 (sealed over its length). */
    static const size_t at[] = {14, 16, 24, 32, 40, 48, 49};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        pami_memregion_t f = *good;
        ((uint8_t *)&f)[at[i]] ^= 0x01;
        expect_map(&f, PAMI_INVAL, "a copy with a flipped bit");
        forged++;
    }
    pami_memregion_t f;
    srand(job.me + 7);
    for (size_t i = 0; i < sizeof(f); i++)
        ((uint8_t *)&f)[i] = (uint8_t)rand();
    expect_map(&f, PAMI_INVAL, "random bytes");
    forged++;
    /* The form, then random everywhere after the magic and version. */
    f = *good;
    for (size_t i = 8; i < sizeof(f); i++)
        ((uint8_t *)&f)[i] = (uint8_t)rand();
    ((uint16_t *)&f)[3] = 16; /* a plausible key length */
    expect_map(&f, PAMI_INVAL, "a valid head over random fields");
    forged++;
    MP_EXPECT(bad_regions() - before == forged,
              "%u forgeries, bad_regions went up by %llu", forged,
              (unsigned long long)(bad_regions() - before));
    void *p = NULL;
    MP_CHECK_RC(pami_memregion_map(job.ctx[0], NULL, &p), PAMI_INVAL);
    MP_CHECK_RC(pami_memregion_map(job.ctx[0], good, NULL), PAMI_INVAL);
    MP_CHECK_RC(pami_memregion_map(NULL, good, &p), PAMI_INVAL);
    pami_memregion_t mr;
    MP_CHECK_RC(pami_memregion_alloc(job.ctx[0], 0, &p, &mr), PAMI_INVAL);
    MP_CHECK_RC(pami_memregion_alloc(job.ctx[0], 8, NULL, &mr), PAMI_INVAL);
    MP_CHECK_RC(pami_memregion_alloc(job.ctx[0], 8, &p, NULL), PAMI_INVAL);
    MP_CHECK_RC(pami_memregion_alloc(job.ctx[0], SIZE_MAX, &p, &mr),
                PAMI_INVAL);
}

/* pami_rma_t.completed and friends: through a mapping the operation is
 * done at return, 1 is written and no callback runs; on a private
 * region 0 and the callbacks run once; a refused call leaves it alone. */
static void completed_at_return(const pami_memregion_t *shm_all,
                                const pami_memregion_t *priv_all,
                                const pami_memregion_t *priv_mr,
                                uint8_t **peer)
{
    pami_task_t t   = (job.me + 1) % job.size;
    size_t      off = WORD + 64 + 8 * job.me; /* our word in t's region */
    uint64_t    v   = 0xc0ffee00ull + job.me, back = 0;
    int         done = -1;
    cb_count_t  op  = {.in_call = true, .what = "put with completed"};
    pami_rma_t  r   = {.dest = mp_ep(&job, t, 0), .local = &v, .bytes = 8,
                       .remote_mr = &shm_all[t], .remote_offset = off,
                       .local_fn = cb_count_local, .remote_fn = cb_count_remote,
                       .cookie = &op, .completed = &done};
    MP_CHECK(pami_put(job.ctx[0], &r));
    MP_EXPECT(done == 1, "put through a mapping: completed %d", done);
    MP_EXPECT(memcmp(peer[t] + off, &v, 8) == 0,
              "put with completed: not in the mapping at return");
    op.in_call = false;
    rma_op_none(&job, &op);

    done = -1;
    op   = (cb_count_t){.in_call = true, .what = "get with completed"};
    r    = (pami_rma_t){.dest = mp_ep(&job, t, 0), .local = &back, .bytes = 8,
                        .remote_mr = &shm_all[t], .remote_offset = off,
                        .local_fn = cb_count_local, .cookie = &op,
                        .completed = &done};
    MP_CHECK(pami_get(job.ctx[0], &r));
    MP_EXPECT(done == 1 && back == v, "get through a mapping: completed "
              "%d, read %#llx", done, (unsigned long long)back);
    op.in_call = false;
    rma_op_none(&job, &op);

    /* rput from a local region: not left in use (destroy would wait) */
    done = -1;
    op   = (cb_count_t){.in_call = true, .what = "rput with completed"};
    pami_rrma_t rr = {.dest = mp_ep(&job, t, 0), .local_mr = priv_mr,
                      .local_offset = job.me * SLOT, .remote_mr = &shm_all[t],
                      .remote_offset = off, .bytes = 8,
                      .local_fn = cb_count_local, .remote_fn = cb_count_remote,
                      .cookie = &op, .completed = &done};
    MP_CHECK(pami_rput(job.ctx[0], &rr));
    MP_EXPECT(done == 1, "rput through a mapping: completed %d", done);
    op.in_call = false;
    rma_op_none(&job, &op);

    uint64_t old = ~0ull;
    done = -1;
    op   = (cb_count_t){.in_call = true, .what = "rmw with completed"};
    uint64_t before = *(volatile uint64_t *)(peer[t] + off);
    pami_rmw_t m = {.dest = mp_ep(&job, t, 0), .remote_mr = &shm_all[t],
                    .remote_offset = off, .op = PAMI_RMW_FETCH_ADD,
                    .size = 8, .value = 5, .result = &old,
                    .done_fn = cb_count_local, .cookie = &op,
                    .completed = &done};
    MP_CHECK(pami_rmw(job.ctx[0], &m));
    MP_EXPECT(done == 1 && old == before &&
                  *(volatile uint64_t *)(peer[t] + off) == before + 5,
              "rmw through a mapping: completed %d, fetched %#llx of %#llx",
              done, (unsigned long long)old, (unsigned long long)before);
    op.in_call = false;
    rma_op_none(&job, &op);

    /* rget back into the local region, and a 4-byte compare-and-swap. */
    done = -1;
    op   = (cb_count_t){.in_call = true, .what = "rget with completed"};
    pami_rrma_t rg = rr;
    rg.local_offset = job.me * SLOT + 8;
    rg.remote_fn    = NULL;
    rg.cookie       = &op;
    MP_CHECK(pami_rget(job.ctx[0], &rg));
    MP_EXPECT(done == 1, "rget through a mapping: completed %d", done);
    op.in_call = false;
    rma_op_none(&job, &op);
    uint32_t old32 = 0, cur32;
    memcpy(&cur32, peer[t] + off, 4);
    done = -1;
    op   = (cb_count_t){.in_call = true, .what = "cswap with completed"};
    pami_rmw_t cs = {.dest = mp_ep(&job, t, 0), .remote_mr = &shm_all[t],
                     .remote_offset = off, .op = PAMI_RMW_CSWAP, .size = 4,
                     .value = 0x5eed, .compare = cur32, .result = &old32,
                     .done_fn = cb_count_local, .cookie = &op,
                     .completed = &done};
    MP_CHECK(pami_rmw(job.ctx[0], &cs));
    uint32_t now32;
    memcpy(&now32, peer[t] + off, 4);
    MP_EXPECT(done == 1 && old32 == cur32 && now32 == 0x5eed,
              "cswap through a mapping: completed %d, fetched %#x of %#x, "
              "now %#x", done, old32, cur32, now32);
    op.in_call = false;
    rma_op_none(&job, &op);

    /* A private region: CMA or UCX, reported from advance as always. */
    done = -1;
    op   = (cb_count_t){.in_call = true, .what = "private put with completed"};
    r    = (pami_rma_t){.dest = mp_ep(&job, t, 0), .local = &v, .bytes = 8,
                        .remote_mr = &priv_all[t], .remote_offset = off,
                        .local_fn = cb_count_local,
                        .remote_fn = cb_count_remote, .cookie = &op,
                        .completed = &done};
    MP_CHECK(pami_put(job.ctx[0], &r));
    MP_EXPECT(done == 0, "put to a private region: completed %d", done);
    op.in_call = false;
    rma_op_wait(&job, &op, true, true);
    done = -1;
    op   = (cb_count_t){.in_call = true, .what = "private rmw with completed"};
    m.remote_mr = &priv_all[t];
    m.cookie    = &op;
    MP_CHECK(pami_rmw(job.ctx[0], &m));
    MP_EXPECT(done == 0, "rmw on a private region: completed %d", done);
    op.in_call = false;
    rma_op_wait(&job, &op, true, false);

    /* Refused (outside the region): not written, no callback. */
    done = 42;
    op   = (cb_count_t){.what = "refused put with completed"};
    r    = (pami_rma_t){.dest = mp_ep(&job, t, 0), .local = &v, .bytes = 8,
                        .remote_mr = &shm_all[t], .remote_offset = BYTES,
                        .remote_fn = cb_count_remote, .cookie = &op,
                        .completed = &done};
    MP_CHECK_RC(pami_put(job.ctx[0], &r), PAMI_INVAL);
    MP_EXPECT(done == 42, "a refused put wrote completed = %d", done);
    rma_op_none(&job, &op);

    /* Refused right after a call that went through the same copy (the
     * check before the full path has it at hand): a misaligned rmw, a
     * put of bytes without a local buffer, the region toward a task
     * that does not own it. Nothing written, no callback. */
    r.remote_offset = off;
    r.completed     = &done;
    MP_CHECK(pami_put(job.ctx[0], &r));
    MP_EXPECT(done == 1, "put before the refused ones: completed %d", done);
    uint8_t word[8];
    memcpy(word, peer[t] + off, 8);
    uint32_t res32 = 7;
    done = 42;
    m    = (pami_rmw_t){.dest = mp_ep(&job, t, 0), .remote_mr = &shm_all[t],
                        .remote_offset = off + 2, .op = PAMI_RMW_SWAP,
                        .size = 4, .value = 1, .result = &res32,
                        .done_fn = cb_count_local, .cookie = &op,
                        .completed = &done};
    MP_CHECK_RC(pami_rmw(job.ctx[0], &m), PAMI_INVAL);
    r.local = NULL;
    MP_CHECK_RC(pami_put(job.ctx[0], &r), PAMI_INVAL);
    r.local = &v;
    r.dest  = mp_ep(&job, job.me, 0);
    MP_CHECK_RC(pami_put(job.ctx[0], &r), PAMI_INVAL);
    MP_EXPECT(done == 42 && res32 == 7 &&
                  memcmp(peer[t] + off, word, 8) == 0,
              "refused calls on a copy in use: completed %d, result %#x, "
              "or the region written", done, res32);
    rma_op_none(&job, &op);

    /* A program built before the field: its callbacks, as before. */
    op = (cb_count_t){.in_call = true, .what = "old-layout put"};
    r  = (pami_rma_t){.dest = mp_ep(&job, t, 0), .local = &v, .bytes = 8,
                      .remote_mr = &shm_all[t], .remote_offset = off,
                      .remote_fn = cb_count_remote, .cookie = &op};
    MP_CHECK(pami_put_sized(job.ctx[0], &r, offsetof(pami_rma_t, completed)));
    op.in_call = false;
    rma_op_wait(&job, &op, false, true);
}

int main(int argc, char **argv)
{
    mp_init(&job, "rma_shm", &argc, argv, NULL, 1, false);
    MP_EXPECT(job.size >= 2 && job.attr.num_local_tasks == job.size,
              "needs 2 tasks or more, all on one node");
    MP_EXPECT(job.size * SLOT <= BYTES, "at most %d tasks", BYTES / SLOT);
    rma_xchg_init(&job);
    MP_CHECK(pami_dispatch_fence(job.client));
    pami_protocol_job_key_t key;
    MP_CHECK(pami_protocol_job_key(job.client, &key));
    char mine_prefix[128];
    snprintf(mine_prefix, sizeof(mine_prefix), "pami-%s-mr-%u-", key.name,
             job.me);
    pami_client_attr_t ja = {.field_mask = PAMI_CLIENT_ATTR_JOB_ID};
    MP_CHECK(pami_client_query(job.client, &ja));
    snprintf(job_dir, sizeof(job_dir), "/dev/shm/pami-%s-ucx", ja.job_id);
    snprintf(dir_prefix, sizeof(dir_prefix), "mr-%u-", job.me);
    /* Under PMIx pami keeps its segments in the directory the launcher
     * removes (unless the program chose UCX's directory itself). */
    bool in_dir = job.attr.bootstrap == PAMI_BOOTSTRAP_PMIX &&
                  getenv("UCX_POSIX_DIR") == NULL;

    pami_memregion_t shm_mr, priv_mr;
    uint8_t *shm = NULL;
    MP_CHECK(pami_memregion_alloc(job.ctx[0], BYTES, (void **)&shm, &shm_mr));
    MP_EXPECT(((uintptr_t)shm & 4095) == 0, "shared memory at %p", shm);
    MP_EXPECT(rma_check_byte(shm, BYTES, 0) < 0, "shared memory not zeroed");
    MP_EXPECT(names_left(mine_prefix) == 1, "%u names of ours in /dev/shm",
              names_left(mine_prefix));
    MP_EXPECT(count_in(job_dir, dir_prefix) == (in_dir ? 1u : 0u),
              "the segment is %sin %s", in_dir ? "not " : "", job_dir);
    uint8_t *priv = rma_alloc(BYTES);
    MP_CHECK(pami_memregion_create(job.ctx[0], priv, BYTES, &priv_mr));

    pami_memregion_t *shm_all  = calloc(job.size, sizeof(*shm_all));
    pami_memregion_t *priv_all = calloc(job.size, sizeof(*priv_all));
    uint8_t         **peer     = calloc(job.size, sizeof(*peer));
    MP_EXPECT(shm_all && priv_all && peer, "out of memory");
    rma_exchange(&job, &shm_mr, shm, BYTES, shm_all);
    rma_exchange(&job, &priv_mr, priv, BYTES, priv_all);

    /* Mapping: own regions, peers' shared and private ones. */
    for (pami_task_t t = 0; t < job.size; t++) {
        void *a = NULL, *b = NULL;
        MP_CHECK(pami_memregion_map(job.ctx[0], &shm_all[t], &a));
        MP_CHECK(pami_memregion_map(job.ctx[0], &shm_all[t], &b));
        MP_EXPECT(a == b, "task %u's region mapped at %p, then %p", t, a, b);
        MP_EXPECT(t != job.me || a == shm, "own region maps at %p, not %p",
                  a, shm);
        peer[t] = a;
        if (t == job.me) {
            MP_CHECK(pami_memregion_map(job.ctx[0], &priv_all[t], &a));
            MP_EXPECT(a == priv, "own private region maps at %p", a);
        } else {
            expect_map(&priv_all[t], PAMI_NOT_FOUND, "a private region");
        }
    }
    /* A peer on another node, seen white-box: before and after mapping. */
    pami_task_t other = (job.me + 1) % job.size;
    job.client->tasks[other].local = false;
    expect_map(&shm_all[other], PAMI_NOT_FOUND, "another node's region");
    job.client->tasks[other].local = true;

    /* Stores through the mapping, seen by the owner and by pami_get. */
    for (pami_task_t t = 0; t < job.size; t++)
        rma_fill(peer[t] + job.me * SLOT, job.me * SLOT, SLOT,
                 rma_seed(job.me, t));
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    mp_sync(&job);
    for (pami_task_t o = 0; o < job.size; o++)
        MP_EXPECT(rma_check(shm + o * SLOT, o * SLOT, SLOT,
                            rma_seed(o, job.me)) < 0,
                  "task %u's stores into our region are not there", o);
    uint8_t buf[SLOT];
    for (pami_task_t t = 0; t < job.size; t++) {
        if (t == job.me)
            continue;
        for (pami_task_t o = 0; o < job.size; o++) {
            memset(buf, 0, sizeof(buf));
            RMA_GET_OK(&job, t, buf, SLOT, &shm_all[t], o * SLOT,
                       "get of task %u's slot in task %u's region", o, t);
            MP_EXPECT(rma_check(buf, o * SLOT, SLOT, rma_seed(o, t)) < 0,
                      "get of task %u's slot in task %u's region: wrong data",
                      o, t);
        }
    }
    /* pami_put and pami_get through the mapping, rmw mixed with the
     * owner's own (its owner's path). */
    for (pami_task_t t = 0; t < job.size; t++) {
        if (t == job.me)
            continue;
        rma_fill(buf, PUTS + job.me * SLOT, SLOT, rma_seed(job.me, t + 100));
        RMA_PUT_OK(&job, t, buf, SLOT, &shm_all[t], PUTS + job.me * SLOT,
                   "put into task %u's shared region", t);
        MP_EXPECT(rma_check(peer[t] + PUTS + job.me * SLOT,
                            PUTS + job.me * SLOT, SLOT,
                            rma_seed(job.me, t + 100)) < 0,
                  "put into task %u's region: not in the mapping at "
                  "remote completion", t);
    }
    rma_fill(shm + PUTS + job.me * SLOT, PUTS + job.me * SLOT, SLOT,
             rma_seed(job.me, 999));
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    mp_sync(&job);
    for (pami_task_t o = 0; o < job.size; o++)
        MP_EXPECT(rma_check(shm + PUTS + o * SLOT, PUTS + o * SLOT, SLOT,
                            rma_seed(o, o == job.me ? 999 : job.me + 100)) < 0,
                  "task %u's put into our region is not there", o);
    for (pami_task_t t = 0; t < job.size; t++) {
        if (t == job.me)
            continue;
        memset(buf, 0, sizeof(buf));
        RMA_GET_OK(&job, t, buf, SLOT, &shm_all[t], PUTS + t * SLOT,
                   "get of task %u's own stores", t);
        MP_EXPECT(rma_check(buf, PUTS + t * SLOT, SLOT,
                            rma_seed(t, 999)) < 0,
                  "get of task %u's own stores: wrong data", t);
    }
    uint64_t *seen = calloc(ADDS, sizeof(*seen));
    MP_EXPECT(seen != NULL, "out of memory");
    for (unsigned i = 0; i < ADDS; i++) {
        uint64_t old = ~0ull;
        MP_CHECK(rma_rmw(&job, 0, &shm_all[0], WORD, PAMI_RMW_FETCH_ADD, 8,
                         1, 0, &old, "fetch-add on task 0's shared word"));
        MP_EXPECT(old < (uint64_t)ADDS * job.size, "fetched %llu",
                  (unsigned long long)old);
        MP_EXPECT(i == 0 || old > seen[i - 1], "fetched %llu after %llu",
                  (unsigned long long)old, (unsigned long long)seen[i - 1]);
        seen[i] = old;
    }
    /* A lost or doubled update shows in the sum; rma-atomic-shm checks
     * that all fetched values are distinct. */
    free(seen);
    mp_sync(&job);
    if (job.me == 0)
        MP_EXPECT(*(volatile uint64_t *)(shm + WORD) ==
                      (uint64_t)ADDS * job.size,
                  "the shared word holds %llu after %u fetch-adds by %zu "
                  "tasks", (unsigned long long)*(volatile uint64_t *)(shm +
                                                                    WORD),
                  ADDS, job.size);
    mp_sync(&job);
    completed_at_return(shm_all, priv_all, &priv_mr, peer);
    mp_sync(&job);
    forgeries(&shm_all[other]);
    mp_sync(&job);

    /* A second region, destroyed by its owner (task 0) before anyone maps
     * it; then the first one, destroyed while mapped. */
    pami_memregion_t early, *early_all = calloc(job.size, sizeof(*early_all));
    void *early_mem = NULL;
    MP_EXPECT(early_all != NULL, "out of memory");
    MP_CHECK(pami_memregion_alloc(job.ctx[0], 100, &early_mem, &early));
    rma_exchange(&job, &early, early_mem, 100, early_all);
    if (job.me == 0)
        MP_CHECK(pami_memregion_destroy(job.ctx[0], &early));
    mp_sync(&job);
    if (job.me != 0) {
        expect_map(&early_all[0], PAMI_INVAL, "a region destroyed unmapped");
        MP_CHECK(pami_memregion_destroy(job.ctx[0], &early));
    }
    if (job.me == 0) {
        MP_CHECK(pami_memregion_destroy(job.ctx[0], &shm_mr));
        MP_EXPECT(names_left(mine_prefix) == 0, "destroyed, yet %u names of "
                  "ours in /dev/shm", names_left(mine_prefix));
    }
    mp_sync(&job);
    if (job.me != 0) {
        uint8_t *gone = peer[0];
        MP_EXPECT(rma_check(gone + job.me * SLOT, job.me * SLOT, SLOT,
                            rma_seed(job.me, 0)) < 0,
                  "our stores into task 0's destroyed region changed");
        memset(gone, 0x5a, SLOT); /* must not fault */
        MP_EXPECT(gone[SLOT - 1] == 0x5a, "store into a destroyed region");
        void *again = NULL;
        MP_CHECK(pami_memregion_map(job.ctx[0], &shm_all[0], &again));
        MP_EXPECT(again == gone, "mapped again at %p, first at %p", again,
                  gone);
        uint64_t word = 0x0123456789abcdefull + job.me, old = 0;
        RMA_PUT_OK(&job, 0, &word, 8, &shm_all[0], SLOT * job.me,
                   "put through a copy of a destroyed, mapped region");
        MP_EXPECT(memcmp(gone + SLOT * job.me, &word, 8) == 0,
                  "that put is not in our mapping");
        MP_CHECK(rma_rmw(&job, 0, &shm_all[0], SLOT * job.me,
                         PAMI_RMW_FETCH_ADD, 8, 1, 0, &old,
                         "fetch-add through that copy"));
        MP_EXPECT(old == word, "that fetch-add saw %llx",
                  (unsigned long long)old);
        MP_CHECK(pami_memregion_destroy(job.ctx[0], &shm_mr));
    }
    MP_EXPECT(names_left(mine_prefix) == 0, "%u names of ours left",
              names_left(mine_prefix));
    MP_CHECK(pami_memregion_destroy(job.ctx[0], &priv_mr));
    mp_sync(&job);

    /* Left to context destroy: a live shared region. */
    void *last = NULL;
    pami_memregion_t last_mr;
    MP_CHECK(pami_memregion_alloc(job.ctx[0], 1, &last, &last_mr));
    MP_EXPECT(names_left(mine_prefix) == 1, "no name for the last region");
    mp_finish(&job);
    MP_EXPECT(names_left(mine_prefix) == 0,
              "client destroyed, yet %u names of ours in /dev/shm",
              names_left(mine_prefix));
    free(priv);
    free(shm_all);
    free(priv_all);
    free(early_all);
    free(peer);
    printf("rma_shm: task %u ok\n", job.me);
    return 0;
}
