/*
 * Helpers of the RMA tests (test/rma), on top of test/mp/mp_util.h: a
 * content pattern defined by absolute offset (so any sub-range of a region
 * can be checked), the exchange of memregions over active messages, and
 * blocking put/get/rput/rget/rmw/fence wrappers that check that every
 * callback runs exactly once, with PAMI_SUCCESS, and never inside the call.
 *
 * Everything here is static: each test is a single translation unit.
 */
#ifndef RMA_UTIL_H
#define RMA_UTIL_H

#include "mp_util.h"

/* The dispatch id of the region exchange (user ids below MP_ID_SYNC). */
#define RMA_ID_XCHG 250

/* ---- contents by absolute offset ---- */

/* The seed of a pattern: who owns it and which variant. */
static inline uint64_t rma_seed(uint32_t owner, uint32_t salt)
{
    uint64_t x = ((uint64_t)owner << 32 | salt) + 0x2545f4914f6cdd1dull;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x | 1;
}

/* The 8 bytes at offsets 8w .. 8w+7 of a pattern. */
static inline uint64_t rma_word(uint64_t seed, uint64_t w)
{
    uint64_t x = w * 0x9e3779b97f4a7c15ull + seed;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return x;
}

static inline uint8_t rma_byte(uint64_t seed, uint64_t off)
{
    uint64_t v = rma_word(seed, off >> 3);
    uint8_t  b[8];
    memcpy(b, &v, 8);
    return b[off & 7];
}

/* Writes bytes off .. off+len-1 of the pattern to buf[0 .. len-1]. */
static inline void rma_fill(void *buf, uint64_t off, size_t len, uint64_t seed)
{
    uint8_t *p = buf;
    size_t   i = 0;
    for (; i < len && ((off + i) & 7) != 0; i++)
        p[i] = rma_byte(seed, off + i);
    for (; i + 8 <= len; i += 8) {
        uint64_t v = rma_word(seed, (off + i) >> 3);
        memcpy(p + i, &v, 8);
    }
    for (; i < len; i++)
        p[i] = rma_byte(seed, off + i);
}

/* The first index in buf that differs from the pattern, or -1. */
static inline long rma_check(const void *buf, uint64_t off, size_t len,
                             uint64_t seed)
{
    const uint8_t *p = buf;
    size_t         i = 0;
    for (; i < len && ((off + i) & 7) != 0; i++)
        if (p[i] != rma_byte(seed, off + i))
            return (long)i;
    for (; i + 8 <= len; i += 8) {
        uint64_t v = rma_word(seed, (off + i) >> 3);
        if (memcmp(p + i, &v, 8) != 0)
            break;
    }
    for (; i < len; i++)
        if (p[i] != rma_byte(seed, off + i))
            return (long)i;
    return -1;
}

/* The first index whose byte is not c, or -1. */
static inline long rma_check_byte(const void *buf, size_t len, uint8_t c)
{
    const uint8_t *p = buf;
    for (size_t i = 0; i < len; i++)
        if (p[i] != c)
            return (long)i;
    return -1;
}

/* ---- the exchange of memregions ---- */

typedef struct {
    uint32_t         tag;
    uint32_t         origin;
    uint64_t         base;
    uint64_t         bytes;
    pami_memregion_t mr;
} rma_xchg_msg_t;

#define RMA_XCHG_TAGS 8
#define RMA_MAX_TASKS 64

static struct {
    pami_memregion_t mr[RMA_XCHG_TAGS][RMA_MAX_TASKS];
    uint64_t         base[RMA_XCHG_TAGS][RMA_MAX_TASKS];
    uint64_t         bytes[RMA_XCHG_TAGS][RMA_MAX_TASKS];
    unsigned         got[RMA_XCHG_TAGS];
    uint32_t         next_tag;
} rma_xchg;

static inline void rma_on_xchg(pami_context_t ctx, void *cookie,
                               const void *hdr, size_t hlen, const void *data,
                               size_t dlen, pami_endpoint_t origin,
                               pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)data; (void)recv;
    rma_xchg_msg_t m;
    MP_EXPECT(hlen == sizeof(m) && dlen == 0,
              "region exchange message with %zu + %zu bytes", hlen, dlen);
    memcpy(&m, hdr, sizeof(m));
    pami_task_t from;
    MP_CHECK(pami_endpoint_query(origin, &from, NULL));
    MP_EXPECT(m.origin == from && from < RMA_MAX_TASKS,
              "region of task %u came from task %u", m.origin, from);
    unsigned t = m.tag % RMA_XCHG_TAGS;
    rma_xchg.mr[t][from]    = m.mr;
    rma_xchg.base[t][from]  = m.base;
    rma_xchg.bytes[t][from] = m.bytes;
    rma_xchg.got[t]++;
}

/* Registers the exchange handler; call before the dispatch fence. */
static inline void rma_xchg_init(mp_job_t *job)
{
    MP_EXPECT(job->size <= RMA_MAX_TASKS, "at most %d tasks", RMA_MAX_TASKS);
    MP_CHECK(pami_dispatch_set(job->ctx[0], RMA_ID_XCHG, rma_on_xchg, NULL,
                               NULL));
}

/* Collective: every task passes its region (created over [base, base +
 * bytes)); all[t] receives task t's copy (all[me] = *mine). The region
 * travels inside an active-message header as a plain value. Checks that
 * pami_memregion_query on each received copy gives what its owner said. */
static inline void rma_exchange(mp_job_t *job, const pami_memregion_t *mine,
                                void *base, size_t bytes,
                                pami_memregion_t *all)
{
    pami_context_t ctx = job->ctx[0];
    uint32_t       tag = rma_xchg.next_tag++;
    unsigned       t   = tag % RMA_XCHG_TAGS;
    rma_xchg_msg_t m;
    memset(&m, 0, sizeof(m));
    m.tag    = tag;
    m.origin = job->me;
    m.base   = (uint64_t)(uintptr_t)base;
    m.bytes  = bytes;
    m.mr     = *mine;
    for (size_t k = 1; k < job->size; k++) {
        pami_send_immediate_t s = {.dest = mp_ep(job, mp_peer(job, k), 0),
                                   .dispatch = RMA_ID_XCHG, .header = &m,
                                   .header_len = sizeof(m)};
        if (sizeof(m) <= job->attr.immediate_max) {
            mp_send_imm(job, ctx, &s);
        } else {
            pami_send_t full = {.send = s};
            MP_CHECK(pami_send(ctx, &full));
        }
    }
    MP_WAIT(job, ctx, rma_xchg.got[t] >= job->size - 1, MP_WAIT_S,
            "region exchange %u: %u of %zu regions", tag, rma_xchg.got[t],
            job->size - 1);
    MP_EXPECT(rma_xchg.got[t] == job->size - 1, "region exchange %u: %u "
              "regions for %zu peers", tag, rma_xchg.got[t], job->size - 1);
    rma_xchg.got[t] = 0;
    for (size_t p = 0; p < job->size; p++) {
        if (p == job->me) {
            all[p] = *mine;
            continue;
        }
        all[p] = rma_xchg.mr[t][p];
        void           *qb = NULL;
        size_t          qn = 0;
        pami_endpoint_t qo = PAMI_ENDPOINT_NULL;
        MP_CHECK(pami_memregion_query(&all[p], &qb, &qn, &qo));
        pami_task_t ot = ~0u;
        size_t      oc = ~(size_t)0;
        MP_CHECK(pami_endpoint_query(qo, &ot, &oc));
        MP_EXPECT((uint64_t)(uintptr_t)qb == rma_xchg.base[t][p] &&
                      qn == rma_xchg.bytes[t][p] && ot == p && oc == 0,
                  "copy of task %zu's region queries as base %p, %zu bytes, "
                  "owner task %u context %zu; its owner said %p, %llu "
                  "bytes, task %zu context 0", p, qb, qn, ot, oc,
                  (void *)(uintptr_t)rma_xchg.base[t][p],
                  (unsigned long long)rma_xchg.bytes[t][p], p);
    }
}

/* ---- operations that wait for their callbacks ---- */

/* A callback inside the call that started its operation fails the task
 * at once (cb_count.h). */
#define CB_COUNT_IN_CALL(c, which)                                          \
    MP_EXPECT(false, "%s: %s ran inside the call", (c)->what, which)
#include "../cb_count.h"

/* Waits until the op's callbacks ran (want_local, want_remote: 0 or 1),
 * then checks they ran once with SUCCESS. A little more progress follows,
 * so a second run would be seen. */
static inline void rma_op_wait(mp_job_t *job, cb_count_t *op, bool want_local,
                               bool want_remote)
{
    pami_context_t ctx = job->ctx[0];
    MP_WAIT(job, ctx, op->local >= (unsigned)want_local &&
                          op->remote >= (unsigned)want_remote,
            MP_WAIT_S, "%s: local_fn ran %u times, remote_fn %u times",
            op->what, op->local, op->remote);
    for (int i = 0; i < 4; i++)
        pami_context_advance(ctx, 8);
    MP_EXPECT(op->local == (unsigned)want_local &&
                  op->remote == (unsigned)want_remote,
              "%s: local_fn ran %u times, remote_fn %u times (expected %d, "
              "%d)", op->what, op->local, op->remote, want_local,
              want_remote);
    MP_EXPECT(!want_local || op->local_rc == PAMI_SUCCESS,
              "%s: local_fn got %s", op->what, pami_error_text(op->local_rc));
    MP_EXPECT(!want_remote || op->remote_rc == PAMI_SUCCESS,
              "%s: remote_fn got %s", op->what,
              pami_error_text(op->remote_rc));
}

/* After a call that must have been refused: no callback may ever run. */
static inline void rma_op_none(mp_job_t *job, cb_count_t *op)
{
    for (int i = 0; i < 8; i++)
        pami_context_advance(job->ctx[0], 8);
    MP_EXPECT(op->local == 0 && op->remote == 0,
              "%s was refused, yet local_fn ran %u times and remote_fn %u "
              "times", op->what, op->local, op->remote);
}

enum { RMA_PUT, RMA_GET };

/* put or get of bytes between local and (mr, off) at task dest; returns
 * the call's result. When it is PAMI_SUCCESS, waits for the callbacks
 * (put: local_fn and remote_fn; get: local_fn) and checks them; otherwise
 * checks that none runs. */
static inline pami_result_t rma_xfer(mp_job_t *job, int kind,
                                     pami_task_t dest, void *local,
                                     size_t bytes, const pami_memregion_t *mr,
                                     size_t off, const char *what)
{
    pami_context_t ctx = job->ctx[0];
    cb_count_t op = {.what = what};
    pami_rma_t p = {.dest = mp_ep(job, dest, 0), .local = local,
                    .bytes = bytes, .remote_mr = mr, .remote_offset = off,
                    .local_fn = cb_count_local,
                    .remote_fn = kind == RMA_PUT ? cb_count_remote : NULL,
                    .cookie = &op};
    op.in_call = true;
    pami_result_t rc = kind == RMA_PUT ? pami_put(ctx, &p) : pami_get(ctx, &p);
    op.in_call = false;
    if (rc == PAMI_SUCCESS)
        rma_op_wait(job, &op, true, kind == RMA_PUT);
    else
        rma_op_none(job, &op);
    return rc;
}

static inline pami_result_t rma_rxfer(mp_job_t *job, int kind,
                                      pami_task_t dest,
                                      const pami_memregion_t *lmr,
                                      size_t loff,
                                      const pami_memregion_t *rmr,
                                      size_t roff, size_t bytes,
                                      const char *what)
{
    pami_context_t ctx = job->ctx[0];
    cb_count_t op = {.what = what};
    pami_rrma_t p = {.dest = mp_ep(job, dest, 0), .local_mr = lmr,
                     .local_offset = loff, .remote_mr = rmr,
                     .remote_offset = roff, .bytes = bytes,
                     .local_fn = cb_count_local,
                     .remote_fn = kind == RMA_PUT ? cb_count_remote : NULL,
                     .cookie = &op};
    op.in_call = true;
    pami_result_t rc = kind == RMA_PUT ? pami_rput(ctx, &p)
                                       : pami_rget(ctx, &p);
    op.in_call = false;
    if (rc == PAMI_SUCCESS)
        rma_op_wait(job, &op, true, kind == RMA_PUT);
    else
        rma_op_none(job, &op);
    return rc;
}

/* The same, failing the test unless the call succeeded. */
#define RMA_PUT_OK(job, dest, local, bytes, mr, off, ...)                  \
    rma_xfer_ok((job), RMA_PUT, (dest), (local), (bytes), (mr), (off),      \
                __VA_ARGS__)
#define RMA_GET_OK(job, dest, local, bytes, mr, off, ...)                  \
    rma_xfer_ok((job), RMA_GET, (dest), (local), (bytes), (mr), (off),      \
                __VA_ARGS__)

__attribute__((format(printf, 8, 9)))
static inline void rma_xfer_ok(mp_job_t *job, int kind, pami_task_t dest,
                               void *local, size_t bytes,
                               const pami_memregion_t *mr, size_t off,
                               const char *fmt, ...)
{
    char    what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    pami_result_t rc = rma_xfer(job, kind, dest, local, bytes, mr, off, what);
    MP_EXPECT(rc == PAMI_SUCCESS, "%s: %s", what, pami_error_text(rc));
}

/* A blocking rmw; returns the call's result, checks done_fn when it was
 * accepted (once, SUCCESS) and that it never runs when refused. */
static inline pami_result_t rma_rmw(mp_job_t *job, pami_task_t dest,
                                    const pami_memregion_t *mr, size_t off,
                                    pami_rmw_op_t kind, size_t size,
                                    uint64_t value, uint64_t compare,
                                    void *result, const char *what)
{
    pami_context_t ctx = job->ctx[0];
    cb_count_t op = {.what = what};
    pami_rmw_t r = {.dest = mp_ep(job, dest, 0), .remote_mr = mr,
                    .remote_offset = off, .op = kind, .size = size,
                    .value = value, .compare = compare, .result = result,
                    .done_fn = cb_count_local, .cookie = &op};
    op.in_call = true;
    pami_result_t rc = pami_rmw(ctx, &r);
    op.in_call = false;
    if (rc == PAMI_SUCCESS)
        rma_op_wait(job, &op, true, false);
    else
        rma_op_none(job, &op);
    return rc;
}

/* A blocking fence (to one endpoint, or all when dest is ~0u). */
static inline void rma_fence(mp_job_t *job, pami_task_t dest,
                             const char *what)
{
    pami_context_t ctx = job->ctx[0];
    cb_count_t op = {.what = what};
    op.in_call = true;
    pami_result_t rc =
        dest == ~0u ? pami_fence_all(ctx, cb_count_local, &op)
                    : pami_fence_endpoint(ctx, mp_ep(job, dest, 0),
                                          cb_count_local, &op);
    op.in_call = false;
    MP_EXPECT(rc == PAMI_SUCCESS, "%s: %s", what, pami_error_text(rc));
    rma_op_wait(job, &op, true, false);
}

/* ---- an owner that makes no pami call meanwhile ---- */

#include <fcntl.h>
#include <unistd.h>

static inline void rma_busy_path(char *buf, size_t len, const char *test,
                                 uint32_t task)
{
    const char *id = getenv("PAMI_JOB_ID");
    snprintf(buf, len, "/tmp/%s.%s.%u", test, id != NULL ? id : "none", task);
}

/* An origin says it is through, by a file (no pami call of task 0's
 * would see a message). */
static inline void rma_busy_done(mp_job_t *job, const char *test)
{
    char path[128];
    rma_busy_path(path, sizeof(path), test, job->me);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    MP_EXPECT(fd >= 0, "cannot create %s", path);
    close(fd);
}

/* Task 0 makes no pami call until every other task is through. */
static inline void rma_busy_wait(mp_job_t *job, const char *test)
{
    char path[128];
    for (uint32_t t = 1; t < job->size; t++) {
        rma_busy_path(path, sizeof(path), test, t);
        double end = mp_now() + 120;
        while (access(path, F_OK) != 0 && mp_now() < end)
            usleep(10000);
        MP_EXPECT(access(path, F_OK) == 0, "task %u did not finish its "
                  "operations in 120 s while task 0 made no call", t);
        unlink(path);
    }
}

static inline void *rma_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    MP_EXPECT(p != NULL, "out of memory (%zu bytes)", bytes);
    return p;
}

/* Task 0's region of `total` zeroed bytes (every other task's of one
 * byte), made on context 0 and exchanged: owner[t] is task t's. For the
 * tests where every task puts to or gets from task 0. */
typedef struct {
    uint8_t         *mem;
    pami_memregion_t mine;
    pami_memregion_t *owner;
} rma_to0_t;

static inline void rma_to0_init(mp_job_t *job, size_t total, rma_to0_t *r)
{
    size_t len = job->me == 0 ? total : 1;
    r->owner   = calloc(job->size, sizeof(*r->owner));
    MP_EXPECT(r->owner != NULL, "out of memory");
    r->mem = rma_alloc(len);
    memset(r->mem, 0, len);
    MP_CHECK(pami_memregion_create(job->ctx[0], r->mem, len, &r->mine));
    rma_exchange(job, &r->mine, r->mem, len, r->owner);
    mp_sync(job);
}

static inline void rma_to0_fini(mp_job_t *job, rma_to0_t *r)
{
    MP_CHECK(pami_memregion_destroy(job->ctx[0], &r->mine));
    free(r->mem);
    free(r->owner);
}

#endif
