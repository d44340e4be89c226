/*
 * rma_region: the life of a memregion.
 *
 *  - pami_memregion_query gives back base, bytes and owner (task and
 *    context), on the owner and on copies received by the others (on two
 *    contexts, so the owner's context is part of it);
 *  - create with a NULL address or 0 bytes is PAMI_INVAL;
 *  - destroy twice: the second is PAMI_INVAL (with the very same handle
 *    and with a copy of it); destroy on a context that did not create the
 *    region, of a copy received from another task, of NULL: PAMI_INVAL,
 *    and the owner's region keeps working;
 *  - a destroyed local region, or another task's region, as local_mr of
 *    rput/rget: PAMI_INVAL, nothing written; a remote region whose owner
 *    is not dest: PAMI_INVAL;
 *  - destroy while an rget/rput of 32 MiB uses the region locally: from
 *    main it returns PAMI_SUCCESS once the operation completed (its
 *    local_fn ran before destroy returned, with the data there); from a
 *    handler it may not advance, so it answers PAMI_EAGAIN (the operation
 *    then completes and a later destroy succeeds), or, when the operation
 *    no longer needs the region, PAMI_SUCCESS; either way the operation's
 *    callback runs exactly once and the data is right;
 *  - destroy from main while an rget uses the region, and the rget's
 *    local_fn (run by destroy's own progress) creates 200 regions, so the
 *    context's table of regions grows under destroy: destroy returns
 *    PAMI_SUCCESS (not PAMI_TIMEOUT, nor hangs: an alarm fails the test
 *    after 45 s), a second destroy is PAMI_INVAL, and the new regions work
 *    and destroy normally;
 *  - destroy from main while an rget uses the region, and posted work
 *    (run by destroy's own progress, after the rget completed) destroys
 *    the same region through a copy of the handle: no crash, exactly one
 *    of the two destroys succeeds, the other is PAMI_INVAL;
 *  - the owner destroys its region while a peer's put into it may be in
 *    flight: nobody crashes, the put's callbacks run once each.
 *
 *   pamirun -n N rma_region      (N >= 2)
 */
#include "rma_util.h"

#include <signal.h>
#include <unistd.h>

enum { ID_TRIGGER = 20, ID_STALE = 21 };

#define SMALL (1024 * 1024 + 5)
#define BIG   (32u << 20)

static mp_job_t          job;
static uint8_t          *small_buf;
static pami_memregion_t  small_mr;
static pami_memregion_t *smalls;     /* every task's small region */
static uint8_t          *big_buf;    /* BIG bytes, pattern rma_seed(me, 1) */
static pami_memregion_t  big_mr;
static pami_memregion_t *bigs;

static void check_query(const pami_memregion_t *mr, const void *base,
                        size_t bytes, pami_task_t task, size_t offset,
                        const char *what)
{
    void           *b = NULL;
    size_t          n = 0;
    pami_endpoint_t o = PAMI_ENDPOINT_NULL;
    MP_CHECK(pami_memregion_query(mr, &b, &n, &o));
    pami_task_t t = ~0u;
    size_t      c = ~(size_t)0;
    MP_CHECK(pami_endpoint_query(o, &t, &c));
    MP_EXPECT(b == base && n == bytes && t == task && c == offset,
              "%s: query gives base %p, %zu bytes, owner task %u context "
              "%zu; expected %p, %zu, task %u context %zu", what, b, n, t, c,
              base, bytes, task, offset);
}

static void test_create_query(void)
{
    pami_context_t   ctx = job.ctx[0];
    pami_memregion_t mr;
    uint8_t          byte;
    MP_CHECK_RC(pami_memregion_create(ctx, NULL, 64, &mr), PAMI_INVAL);
    MP_CHECK_RC(pami_memregion_create(ctx, &byte, 0, &mr), PAMI_INVAL);
    MP_CHECK_RC(pami_memregion_create(ctx, NULL, 0, &mr), PAMI_INVAL);

    /* One byte works; on context 1 the owner names context 1. */
    MP_CHECK(pami_memregion_create(ctx, &byte, 1, &mr));
    check_query(&mr, &byte, 1, job.me, 0, "1-byte region");
    MP_CHECK(pami_memregion_destroy(ctx, &mr));
    MP_CHECK(pami_memregion_create(job.ctx[1], small_buf, 100, &mr));
    check_query(&mr, small_buf, 100, job.me, 1, "region of context 1");
    MP_CHECK_RC(pami_memregion_destroy(ctx, &mr), PAMI_INVAL);
    MP_CHECK(pami_memregion_destroy(job.ctx[1], &mr));

    /* Destroy twice: with the same handle and with a copy of it. */
    pami_memregion_t a, copy;
    MP_CHECK(pami_memregion_create(ctx, small_buf + 7, 4096, &a));
    memcpy(&copy, &a, sizeof(a));
    MP_CHECK(pami_memregion_destroy(ctx, &a));
    MP_CHECK_RC(pami_memregion_destroy(ctx, &a), PAMI_INVAL);
    MP_CHECK_RC(pami_memregion_destroy(ctx, &copy), PAMI_INVAL);
    MP_CHECK_RC(pami_memregion_destroy(ctx, NULL), PAMI_INVAL);

    /* Two regions over the same memory are two regions. */
    pami_memregion_t b1, b2;
    MP_CHECK(pami_memregion_create(ctx, small_buf, 256, &b1));
    MP_CHECK(pami_memregion_create(ctx, small_buf, 256, &b2));
    MP_CHECK(pami_memregion_destroy(ctx, &b1));
    check_query(&b2, small_buf, 256, job.me, 0, "second region over the "
                "same memory");
    MP_CHECK(pami_memregion_destroy(ctx, &b2));
    MP_CHECK_RC(pami_memregion_destroy(ctx, &b1), PAMI_INVAL);

    check_query(&small_mr, small_buf, SMALL, job.me, 0, "my region");
}

/* Other tasks' regions are not this task's to destroy or use locally. */
static void test_foreign(void)
{
    pami_context_t ctx  = job.ctx[0];
    pami_task_t    next = mp_peer(&job, 1);
    for (size_t k = 1; k < job.size; k++) {
        pami_task_t      p = mp_peer(&job, k);
        pami_memregion_t c = smalls[p];
        MP_CHECK_RC(pami_memregion_destroy(ctx, &c), PAMI_INVAL);
        MP_CHECK_RC(pami_memregion_destroy(job.ctx[1], &c), PAMI_INVAL);
    }
    mp_sync(&job);
    /* ...and refusing left the owners' regions intact. */
    uint8_t *tmp = rma_alloc(SMALL);
    RMA_GET_OK(&job, next, tmp, SMALL, &smalls[next], 0,
               "get after refused destroys of copies");
    MP_EXPECT(rma_check(tmp, 0, SMALL, rma_seed(next, 0)) < 0,
              "region of task %u has wrong contents", next);

    /* A region of another task as the local side: pami would write into
     * this task's memory at the other task's address. */
    memset(tmp, 0, 4096);
    MP_CHECK_RC(rma_rxfer(&job, RMA_GET, next, &smalls[next], 0,
                          &smalls[next], 0, 64, "rget into another task's "
                          "region"), PAMI_INVAL);
    MP_CHECK_RC(rma_rxfer(&job, RMA_PUT, next, &smalls[next], 0,
                          &smalls[next], 0, 64, "rput from another task's "
                          "region"), PAMI_INVAL);
    /* A remote region that belongs to someone else than dest (with 2
     * tasks: to this task). */
    pami_task_t other = mp_peer(&job, 2 % job.size);
    char what[128];
    snprintf(what, sizeof(what), "put to task %u into a region of task %u",
             next, other);
    MP_CHECK_RC(rma_xfer(&job, RMA_PUT, next, tmp, 64, &smalls[other], 0,
                         what), PAMI_INVAL);
    snprintf(what, sizeof(what), "get from task %u of a region of task %u",
             next, other);
    MP_CHECK_RC(rma_xfer(&job, RMA_GET, next, tmp, 64, &smalls[other], 0,
                         what), PAMI_INVAL);
    MP_EXPECT(rma_check_byte(tmp, 4096, 0) < 0,
              "a refused get wrote into the local buffer");
    mp_sync(&job);
    MP_EXPECT(rma_check(small_buf, 0, SMALL, rma_seed(job.me, 0)) < 0,
              "my region changed after refused operations");
    free(tmp);
}

static void test_destroyed_local(void)
{
    pami_context_t   ctx  = job.ctx[0];
    pami_task_t      next = mp_peer(&job, 1);
    uint8_t         *buf  = rma_alloc(8192);
    pami_memregion_t lmr, keep;
    MP_CHECK(pami_memregion_create(ctx, buf, 8192, &lmr));
    keep = lmr;
    MP_CHECK(rma_rxfer(&job, RMA_GET, next, &lmr, 0, &smalls[next], 0, 8192,
                       "rget into a live local region"));
    MP_EXPECT(rma_check(buf, 0, 8192, rma_seed(next, 0)) < 0,
              "rget into a live local region: wrong data");
    MP_CHECK(pami_memregion_destroy(ctx, &lmr));
    memset(buf, 0x11, 8192);
    MP_CHECK_RC(rma_rxfer(&job, RMA_GET, next, &keep, 0, &smalls[next], 0,
                          64, "rget into a destroyed local region"),
                PAMI_INVAL);
    MP_CHECK_RC(rma_rxfer(&job, RMA_GET, next, &lmr, 0, &smalls[next], 0,
                          64, "rget into a destroyed local region (the "
                          "handle given to destroy)"), PAMI_INVAL);
    MP_CHECK_RC(rma_rxfer(&job, RMA_PUT, next, &keep, 0, &smalls[next], 0,
                          64, "rput from a destroyed local region"),
                PAMI_INVAL);
    MP_EXPECT(rma_check_byte(buf, 8192, 0x11) < 0,
              "a refused rget wrote into the destroyed region's memory");
    mp_sync(&job);
    MP_EXPECT(rma_check(small_buf, 0, SMALL, rma_seed(job.me, 0)) < 0,
              "my region changed after rputs from destroyed regions");
    free(buf);
}

/* ---- destroy while in use ---- */

static cb_count_t  busy_op;
static uint8_t  *busy_buf;
static pami_memregion_t busy_mr;
static int       handler_destroy_rc = -1;
static bool      handler_op_done_at_destroy;
static unsigned  triggers;

static void start_busy_rget(pami_context_t ctx, const char *what)
{
    memset(&busy_op, 0, sizeof(busy_op));
    busy_op.what = what;
    pami_task_t next = mp_peer(&job, 1);
    pami_rrma_t p = {.dest = mp_ep(&job, next, 0), .local_mr = &busy_mr,
                     .local_offset = 0, .remote_mr = &bigs[next],
                     .remote_offset = 0, .bytes = BIG,
                     .local_fn = cb_count_local, .cookie = &busy_op};
    busy_op.in_call = true;
    MP_CHECK(pami_rget(ctx, &p));
    busy_op.in_call = false;
}

static void on_trigger(pami_context_t ctx, void *cookie, const void *hdr,
                       size_t hlen, const void *data, size_t dlen,
                       pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)cookie; (void)hdr; (void)hlen; (void)data; (void)dlen;
    (void)origin; (void)recv;
    triggers++;
    start_busy_rget(ctx, "rget of 32 MiB started in a handler");
    handler_op_done_at_destroy = busy_op.local != 0;
    handler_destroy_rc = pami_memregion_destroy(ctx, &busy_mr);
}

static void test_destroy_busy(void)
{
    pami_context_t ctx  = job.ctx[0];
    pami_task_t    next = mp_peer(&job, 1);
    uint64_t       seed = rma_seed(next, 1);
    busy_buf = rma_alloc(BIG);

    /* From main: destroy completes the rget first. */
    memset(busy_buf, 0, BIG);
    MP_CHECK(pami_memregion_create(ctx, busy_buf, BIG, &busy_mr));
    start_busy_rget(ctx, "rget of 32 MiB, then destroy");
    pami_result_t rc = pami_memregion_destroy(ctx, &busy_mr);
    MP_EXPECT(rc == PAMI_SUCCESS, "destroy while an rget uses the region: %s",
              pami_error_text(rc));
    MP_EXPECT(busy_op.local == 1 && busy_op.local_rc == PAMI_SUCCESS,
              "destroy of a region in use returned before the rget's "
              "local_fn ran (ran %u times, %s)", busy_op.local,
              pami_error_text(busy_op.local_rc));
    rma_op_wait(&job, &busy_op, true, false);
    long bad = rma_check(busy_buf, 0, BIG, seed);
    MP_EXPECT(bad < 0, "rget completed by destroy: byte %ld wrong", bad);

    /* rput from a region, then destroy: the local side completes first. */
    MP_CHECK(pami_memregion_create(ctx, busy_buf, BIG, &busy_mr));
    cb_count_t put_op = {.what = "rput of 32 MiB, then destroy"};
    rma_fill(busy_buf, 0, BIG, rma_seed(job.me, 2));
    pami_rrma_t p = {.dest = mp_ep(&job, next, 0), .local_mr = &busy_mr,
                     .remote_mr = &bigs[next], .bytes = BIG,
                     .local_fn = cb_count_local, .remote_fn = cb_count_remote,
                     .cookie = &put_op};
    MP_CHECK(pami_rput(ctx, &p));
    MP_CHECK(pami_memregion_destroy(ctx, &busy_mr));
    MP_EXPECT(put_op.local == 1, "destroy of a region in use returned before "
              "the rput's local_fn ran (ran %u times)", put_op.local);
    rma_op_wait(&job, &put_op, true, true);
    mp_sync(&job);
    /* The previous task's rput arrived; restore my pattern. */
    bad = rma_check(big_buf, 0, BIG, rma_seed(mp_peer(&job, job.size - 1),
                                              2));
    MP_EXPECT(bad < 0, "the rput before destroy: my region wrong at byte "
                       "%ld", bad);
    rma_fill(big_buf, 0, BIG, rma_seed(job.me, 1));
    mp_sync(&job);

    /* From a handler: destroy may not advance. */
    memset(busy_buf, 0, BIG);
    MP_CHECK(pami_memregion_create(ctx, busy_buf, BIG, &busy_mr));
    pami_memregion_t keep = busy_mr;
    mp_sync(&job);
    pami_task_t prev_task = mp_peer(&job, job.size - 1);
    pami_send_immediate_t s = {.dest = mp_ep(&job, prev_task, 0),
                               .dispatch = ID_TRIGGER};
    mp_send_imm(&job, ctx, &s);
    MP_WAIT(&job, ctx, triggers == 1, MP_WAIT_S, "the trigger message");
    const char *path;
    if (handler_destroy_rc == PAMI_EAGAIN) {
        path = "PAMI_EAGAIN, then destroyed from main";
        MP_EXPECT(!handler_op_done_at_destroy, "destroy answered PAMI_EAGAIN "
                  "though the rget had completed");
        rma_op_wait(&job, &busy_op, true, false);
        MP_CHECK(pami_memregion_destroy(ctx, &busy_mr));
    } else {
        MP_EXPECT(handler_destroy_rc == PAMI_SUCCESS,
                  "destroy in a handler while an rget uses the region: %s",
                  pami_error_text((pami_result_t)handler_destroy_rc));
        path = "PAMI_SUCCESS at once";
        rma_op_wait(&job, &busy_op, true, false);
        MP_CHECK_RC(pami_memregion_destroy(ctx, &keep), PAMI_INVAL);
    }
    bad = rma_check(busy_buf, 0, BIG, seed);
    MP_EXPECT(bad < 0, "rget started in the handler: byte %ld wrong", bad);
    mp_sync(&job);
    if (job.me == 0)
        printf("destroy in a handler while an rget runs: %s\n", path);
    free(busy_buf);
}

/* ---- the table of regions grows while destroy waits ---- */

#define EXTRA 200

static pami_memregion_t extra[EXTRA];
static unsigned         extra_n;

static void on_rget_create(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    cb_count_local(ctx, cookie, rc);
    for (unsigned i = 0; i < EXTRA; i++)
        MP_CHECK(pami_memregion_create(ctx, small_buf + i, 64 + i,
                                       &extra[i]));
    extra_n = EXTRA;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "rma_region: FAIL: pami_memregion_destroy "
        "did not return within 45 s after the rget's local_fn created "
        "regions (the table of regions grew while destroy waited)\n";
    ssize_t n = write(2, msg, sizeof(msg) - 1);
    (void)n;
    _exit(1);
}

static void test_destroy_grow(void)
{
    pami_context_t ctx  = job.ctx[0];
    pami_task_t    next = mp_peer(&job, 1);
    uint8_t       *buf  = rma_alloc(BIG);
    pami_memregion_t lmr, keep;
    MP_CHECK(pami_memregion_create(ctx, buf, BIG, &lmr));
    keep = lmr;
    cb_count_t op = {.what = "rget whose local_fn creates regions"};
    pami_rrma_t p = {.dest = mp_ep(&job, next, 0), .local_mr = &lmr,
                     .remote_mr = &bigs[next], .bytes = BIG,
                     .local_fn = on_rget_create, .cookie = &op};
    MP_CHECK(pami_rget(ctx, &p));
    signal(SIGALRM, on_alarm);
    alarm(45); /* a hang, not slowness: loaded CI machines are slow */
    pami_result_t rc = pami_memregion_destroy(ctx, &lmr);
    alarm(0);
    MP_EXPECT(rc == PAMI_SUCCESS, "destroy while an rget used the region, "
              "whose local_fn created %u regions meanwhile (local_fn ran %u "
              "times): %s", extra_n, op.local, pami_error_text(rc));
    MP_EXPECT(op.local == 1 && extra_n == EXTRA, "destroy returned before "
              "the rget's local_fn ran");
    MP_CHECK_RC(pami_memregion_destroy(ctx, &keep), PAMI_INVAL);
    MP_EXPECT(rma_check(buf, 0, BIG, rma_seed(next, 1)) < 0,
              "rget completed by destroy: wrong data");
    /* The regions made in the callback are fine. */
    for (unsigned i = 0; i < EXTRA; i++)
        check_query(&extra[i], small_buf + i, 64 + i, job.me, 0,
                    "region created in a callback");
    MP_CHECK(rma_rxfer(&job, RMA_GET, next, &extra[EXTRA - 1], 0,
                       &smalls[next], 0, 64, "rget into a region created "
                       "in a callback"));
    MP_EXPECT(rma_check(small_buf + EXTRA - 1, 0, 64, rma_seed(next, 0)) < 0,
              "rget into a region created in a callback: wrong data");
    for (unsigned i = 0; i < EXTRA; i++)
        MP_CHECK(pami_memregion_destroy(ctx, &extra[i]));
    /* Put back what that rget overwrote in my small region. */
    rma_fill(small_buf, 0, SMALL, rma_seed(job.me, 0));
    mp_sync(&job);
    free(buf);
}

/* ---- two destroys of one region, one inside the other's wait ---- */

static pami_memregion_t race_copy;
static pami_result_t    race_inner;
static bool             race_ran;
static pami_work_t      race_work;

static pami_result_t race_destroy(pami_context_t ctx, void *cookie)
{
    (void)cookie;
    pami_result_t rc = pami_memregion_destroy(ctx, &race_copy);
    if (rc == PAMI_EAGAIN)
        return PAMI_EAGAIN;     /* the rget still runs: again later */
    race_inner = rc;
    race_ran   = true;
    return PAMI_SUCCESS;
}

static void test_destroy_race(void)
{
    pami_context_t ctx  = job.ctx[0];
    pami_task_t    next = mp_peer(&job, 1);
    uint8_t       *buf  = rma_alloc(BIG);
    pami_memregion_t lmr, keep;
    MP_CHECK(pami_memregion_create(ctx, buf, BIG, &lmr));
    keep = race_copy = lmr;
    cb_count_t op = {.what = "rget into a region destroyed twice"};
    pami_rrma_t p = {.dest = mp_ep(&job, next, 0), .local_mr = &lmr,
                     .remote_mr = &bigs[next], .bytes = BIG,
                     .local_fn = cb_count_local, .cookie = &op};
    MP_CHECK(pami_rget(ctx, &p));
    MP_CHECK(pami_context_post(ctx, &race_work, race_destroy, NULL));
    pami_result_t outer = pami_memregion_destroy(ctx, &lmr);
    MP_WAIT(&job, ctx, race_ran, MP_WAIT_S, "the posted destroy");
    rma_op_wait(&job, &op, true, false);
    MP_EXPECT((outer == PAMI_SUCCESS && race_inner == PAMI_INVAL) ||
                  (outer == PAMI_INVAL && race_inner == PAMI_SUCCESS),
              "destroy from main returned %s, the destroy of a copy by "
              "posted work during its wait returned %s: exactly one must "
              "succeed", pami_error_text(outer),
              pami_error_text(race_inner));
    MP_CHECK_RC(pami_memregion_destroy(ctx, &keep), PAMI_INVAL);
    MP_EXPECT(rma_check(buf, 0, BIG, rma_seed(next, 1)) < 0,
              "rget into a region destroyed twice: wrong data");
    mp_sync(&job);
    if (job.me == 0)
        printf("two destroys of one region: main %s, posted work %s\n",
               pami_error_text(outer), pami_error_text(race_inner));
    free(buf);
}

/* ---- the owner destroys a region a peer is writing ---- */

static unsigned stale_msgs;
static pami_memregion_t stale_mr;

static void on_stale(pami_context_t ctx, void *cookie, const void *hdr,
                     size_t hlen, const void *data, size_t dlen,
                     pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)cookie; (void)hdr; (void)hlen; (void)data; (void)dlen;
    (void)origin; (void)recv;
    MP_CHECK(pami_memregion_destroy(ctx, &stale_mr));
    stale_msgs++;
}

static void test_destroy_remote(void)
{
    pami_context_t ctx  = job.ctx[0];
    pami_task_t    next = mp_peer(&job, 1);
    uint8_t       *mem  = rma_alloc(BIG);
    uint8_t       *src  = rma_alloc(BIG);
    pami_memregion_t *all = rma_alloc(job.size * sizeof(*all));
    MP_CHECK(pami_memregion_create(ctx, mem, BIG, &stale_mr));
    rma_exchange(&job, &stale_mr, mem, BIG, all);
    rma_fill(src, 0, BIG, rma_seed(job.me, 3));
    cb_count_t op = {.what = "put of 32 MiB into a region its owner destroys"};
    pami_rma_t p = {.dest = mp_ep(&job, next, 0), .local = src, .bytes = BIG,
                    .remote_mr = &all[next], .local_fn = cb_count_local,
                    .remote_fn = cb_count_remote, .cookie = &op};
    MP_CHECK(pami_put(ctx, &p));
    pami_send_immediate_t s = {.dest = mp_ep(&job, next, 0),
                               .dispatch = ID_STALE};
    mp_send_imm(&job, ctx, &s);
    MP_WAIT(&job, ctx, stale_msgs == 1 && op.local == 1 && op.remote == 1,
            MP_WAIT_S, "destroyed-region put: %u messages, local_fn %u, "
            "remote_fn %u", stale_msgs, op.local, op.remote);
    for (int i = 0; i < 4; i++)
        pami_context_advance(ctx, 8);
    MP_EXPECT(op.local == 1 && op.remote == 1, "%s: local_fn ran %u times, "
              "remote_fn %u times", op.what, op.local, op.remote);
    mp_sync(&job);
    if (job.me == 0)
        printf("put into a region destroyed meanwhile: local_fn %s, "
               "remote_fn %s\n", pami_error_text(op.local_rc),
               pami_error_text(op.remote_rc));
    free(mem);
    free(src);
    free(all);
}

int main(int argc, char **argv)
{
    mp_init(&job, "rma_region", &argc, argv, NULL, 2, false);
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");
    pami_context_t ctx = job.ctx[0];
    rma_xchg_init(&job);
    MP_CHECK(pami_dispatch_set(ctx, ID_TRIGGER, on_trigger, NULL, NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_STALE, on_stale, NULL, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));

    small_buf = rma_alloc(SMALL);
    big_buf   = rma_alloc(BIG);
    smalls    = rma_alloc(job.size * sizeof(*smalls));
    bigs      = rma_alloc(job.size * sizeof(*bigs));
    rma_fill(small_buf, 0, SMALL, rma_seed(job.me, 0));
    rma_fill(big_buf, 0, BIG, rma_seed(job.me, 1));
    MP_CHECK(pami_memregion_create(ctx, small_buf, SMALL, &small_mr));
    MP_CHECK(pami_memregion_create(ctx, big_buf, BIG, &big_mr));
    rma_exchange(&job, &small_mr, small_buf, SMALL, smalls);
    rma_exchange(&job, &big_mr, big_buf, BIG, bigs);

    test_create_query();
    test_foreign();
    test_destroyed_local();
    test_destroy_busy();
    test_destroy_grow();
    test_destroy_race();
    test_destroy_remote();

    mp_sync(&job);
    MP_CHECK(pami_memregion_destroy(ctx, &small_mr));
    MP_CHECK(pami_memregion_destroy(ctx, &big_mr));
    MP_CHECK_RC(pami_memregion_destroy(ctx, &small_mr), PAMI_INVAL);
    mp_finish(&job);
    free(small_buf);
    free(big_buf);
    free(smalls);
    free(bigs);
    return 0;
}
