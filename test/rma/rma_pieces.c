/*
 * rma_pieces: puts and gets on the owner's path longer than
 * PAMI_RMA_OWNER_PIECE, which leave in pieces (docs/protocols/rma.md,
 * "The owner's path"). Run it where the owner's path carries them
 * (PAMI_RMA_VIA_OWNER=1, or across nodes over TCP).
 *
 * Each task puts into the next task's region, all at once, 1 byte,
 * piece - 1, piece, piece + 1, 3 pieces + 1 and 16 MiB, at odd offsets
 * with gaps between them, then fences that task; then gets the same
 * sizes from the next task's other half, all at once. Checked: every
 * callback once, never inside the call, with PAMI_SUCCESS, local_fn
 * before remote_fn; the fence's callback after every put's remote_fn;
 * after a barrier, every byte of each put in its owner's region and the
 * gaps untouched; every byte of each get, and its gaps untouched.
 *
 *   pamirun -n N rma_pieces        (N >= 2; the piece from the
 *                                   environment as pami reads it)
 */
#include "rma_util.h"

#define NSIZES 6
#define GAP    13

typedef struct {
    unsigned      local, remote, seq_local, seq_remote;
    pami_result_t local_rc, remote_rc;
} op_t;

static mp_job_t job;
static bool     in_call;
static unsigned seq;
static op_t     ops[NSIZES];
static unsigned fence_calls, puts_seen_at_fence;

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    op_t *o = cookie;
    MP_EXPECT(!in_call, "local_fn ran inside the call");
    o->local++;
    o->seq_local = ++seq;
    o->local_rc  = rc;
}

static void on_remote(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    op_t *o = cookie;
    MP_EXPECT(!in_call, "remote_fn ran inside the call");
    o->remote++;
    o->seq_remote = ++seq;
    o->remote_rc  = rc;
}

static void on_fence(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "fence: %s", pami_error_text(rc));
    fence_calls++;
    for (int i = 0; i < NSIZES; i++)
        puts_seen_at_fence += ops[i].remote;
}

static unsigned ops_done(bool put)
{
    unsigned n = 0;
    for (int i = 0; i < NSIZES; i++)
        n += ops[i].local == 1 && (!put || ops[i].remote == 1);
    return n;
}

/* Every op ended once, with SUCCESS, local_fn first. */
static void check_ops(bool put)
{
    for (int k = 0; k < 8; k++)
        pami_context_advance(job.ctx[0], 8);
    for (int i = 0; i < NSIZES; i++) {
        op_t *o = &ops[i];
        MP_EXPECT(o->local == 1 && o->remote == (put ? 1u : 0u),
                  "%s %d: local_fn ran %u times, remote_fn %u times",
                  put ? "put" : "get", i, o->local, o->remote);
        MP_EXPECT(o->local_rc == PAMI_SUCCESS &&
                      (!put || o->remote_rc == PAMI_SUCCESS),
                  "%s %d: %s / %s", put ? "put" : "get", i,
                  pami_error_text(o->local_rc),
                  pami_error_text(o->remote_rc));
        MP_EXPECT(!put || o->seq_local < o->seq_remote,
                  "put %d: remote_fn before local_fn", i);
    }
}

/* buf[0 .. total) holds the pattern of seed at each op's place (pattern
 * offset base + place) and 0 in every gap. */
static void check_area(const uint8_t *buf, const size_t *size,
                       const size_t *off, size_t total, uint64_t base,
                       uint64_t seed, const char *what)
{
    size_t at = 0;
    for (int i = 0; i < NSIZES; i++) {
        long bad = rma_check_byte(buf + at, off[i] - at, 0);
        MP_EXPECT(bad < 0, "%s: gap before op %d touched at byte %zu", what,
                  i, at + (size_t)bad);
        bad = rma_check(buf + off[i], base + off[i], size[i], seed);
        MP_EXPECT(bad < 0, "%s: op %d (%zu bytes at %zu) wrong at byte %ld",
                  what, i, size[i], off[i], bad);
        at = off[i] + size[i];
    }
    long bad = rma_check_byte(buf + at, total - at, 0);
    MP_EXPECT(bad < 0, "%s: gap after the last op touched at byte %zu", what,
              at + (size_t)bad);
}

int main(int argc, char **argv)
{
    mp_init(&job, "rma_pieces", &argc, argv, NULL, 1, false);
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");
    rma_xchg_init(&job);
    MP_CHECK(pami_dispatch_fence(job.client));
    const char *env   = getenv("PAMI_RMA_OWNER_PIECE");
    size_t      piece = env != NULL ? strtoull(env, NULL, 0) : 262144;
    if (piece < 2)
        piece = 262144; /* off: the same sizes, each one message */
    size_t size[NSIZES] = {1, piece - 1, piece, piece + 1, 3 * piece + 1,
                           (size_t)16 << 20};
    size_t off[NSIZES], total = 5;
    for (int i = 0; i < NSIZES; i++) {
        off[i] = total;
        total += size[i] + GAP;
    }
    pami_context_t ctx  = job.ctx[0];
    pami_task_t    to   = (pami_task_t)((job.me + 1) % job.size);
    pami_task_t    from = (pami_task_t)((job.me + job.size - 1) % job.size);

    /* [0, total): the previous task's puts land; [total, 2 total): the
     * next task's gets read. */
    uint8_t *region = rma_alloc(2 * total);
    memset(region, 0, total);
    rma_fill(region + total, total, total, rma_seed(job.me, 7));
    pami_memregion_t  mine;
    pami_memregion_t *mrs = rma_alloc(job.size * sizeof(*mrs));
    MP_CHECK(pami_memregion_create(ctx, region, 2 * total, &mine));
    rma_exchange(&job, &mine, region, 2 * total, mrs);

    uint8_t *src = rma_alloc(total);
    rma_fill(src, 0, total, rma_seed(job.me, 3));
    in_call = true;
    for (int i = 0; i < NSIZES; i++) {
        pami_rma_t p = {.dest = mp_ep(&job, to, 0), .local = src + off[i],
                        .bytes = size[i], .remote_mr = &mrs[to],
                        .remote_offset = off[i], .local_fn = on_local,
                        .remote_fn = on_remote, .cookie = &ops[i]};
        MP_CHECK(pami_put(ctx, &p));
    }
    MP_CHECK(pami_fence_endpoint(ctx, mp_ep(&job, to, 0), on_fence, NULL));
    in_call = false;
    MP_WAIT(&job, ctx, ops_done(true) == NSIZES && fence_calls == 1,
            MP_WAIT_S, "puts: %u of %d done, %u fence callbacks",
            ops_done(true), NSIZES, fence_calls);
    check_ops(true);
    MP_EXPECT(fence_calls == 1 && puts_seen_at_fence == NSIZES,
              "the fence called back %u times, after %u of %d puts' "
              "remote_fn", fence_calls, puts_seen_at_fence, NSIZES);
    mp_sync(&job);
    check_area(region, size, off, total, 0, rma_seed(from, 3),
               "puts from the previous task");

    uint8_t *dst = rma_alloc(total);
    memset(dst, 0, total);
    memset(ops, 0, sizeof(ops));
    in_call = true;
    for (int i = 0; i < NSIZES; i++) {
        pami_rma_t p = {.dest = mp_ep(&job, to, 0), .local = dst + off[i],
                        .bytes = size[i], .remote_mr = &mrs[to],
                        .remote_offset = total + off[i],
                        .local_fn = on_local, .cookie = &ops[i]};
        MP_CHECK(pami_get(ctx, &p));
    }
    in_call = false;
    MP_WAIT(&job, ctx, ops_done(false) == NSIZES, MP_WAIT_S,
            "gets: %u of %d done", ops_done(false), NSIZES);
    check_ops(false);
    check_area(dst, size, off, total, total, rma_seed(to, 7),
               "gets from the next task");
    printf("rma_pieces: task %u: puts and gets of 1 .. %zu bytes (piece "
           "%zu) checked\n", job.me, size[NSIZES - 1], piece);

    mp_sync(&job);
    MP_CHECK(pami_memregion_destroy(ctx, &mine));
    mp_finish(&job);
    free(region);
    free(src);
    free(dst);
    free(mrs);
    return 0;
}
