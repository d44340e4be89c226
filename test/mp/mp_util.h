/*
 * Helpers shared by the multi-process tests (test/mp). Each test is one
 * program run by pamirun (or mpirun); it checks its own results and exits
 * 1 with a line naming the test, the task and what went wrong.
 *
 * Everything here is static: each test is a single translation unit.
 */
#ifndef MP_UTIL_H
#define MP_UTIL_H

#include <pami.h>
#include <pami_test.h>
#include <pami_protocol.h>

#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* The dispatch id the helpers use for their message barrier (mp_sync). */
#define MP_ID_SYNC 255
#define MP_SYNC_EPOCHS 64

/* Default bound of every wait loop. */
#define MP_WAIT_S 30.0
/* How long pami_send_immediate may keep answering PAMI_EAGAIN while we
 * advance before the test calls it stuck. */
#define MP_EAGAIN_S 10.0

typedef struct mp_job {
    const char     *name;
    pami_client_t   client;
    pami_context_t  ctx[PAMI_CONTEXT_MAX];
    size_t          nctx;
    pami_task_t     me;
    size_t          size;
    pami_client_attr_t attr;
    /* With a progress thread the program holds the context lock around its
     * own calls; the helpers do so when this is set. */
    bool            locked;
    /* mp_sync, per context: messages received per epoch, the epoch we
     * are in, and our own barrier messages that completed locally. */
    struct mp_sync_state {
        struct mp_job *job;
        atomic_uint    seen[MP_SYNC_EPOCHS];
        unsigned       epoch;
        atomic_uint    sent;
    } sync[PAMI_CONTEXT_MAX];
    /* Expectations from the command line (--expect-bootstrap=,
     * --expect-size=, --expect-nodes=). */
    int             expect_bootstrap; /* -1: none */
    long            expect_size;      /* -1: none */
    const char     *expect_nodes;     /* NULL: none */
} mp_job_t;

static const char *mp_test_name = "mp";
static long        mp_task_id   = -1;

static inline double mp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void mp_sleep_ms(double ms)
{
    long long ns = (long long)(ms * 1e6);
    struct timespec ts = {.tv_sec  = (time_t)(ns / 1000000000LL),
                          .tv_nsec = (long)(ns % 1000000000LL)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

__attribute__((format(printf, 1, 2), noreturn))
static inline void mp_fail(const char *fmt, ...)
{
    char    line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: task %ld: FAIL: %s\n", mp_test_name, mp_task_id, line);
    fflush(stderr);
    fflush(stdout);
    exit(1);
}

#define MP_EXPECT(cond, ...)                                                \
    do {                                                                    \
        if (!(cond))                                                        \
            mp_fail(__VA_ARGS__);                                           \
    } while (0)

#define MP_CHECK(expr)                                                      \
    do {                                                                    \
        pami_result_t mp_rc_ = (expr);                                      \
        if (mp_rc_ != PAMI_SUCCESS)                                         \
            mp_fail("%s:%d: %s returned %s", __FILE__, __LINE__, #expr,     \
                    pami_error_text(mp_rc_));                               \
    } while (0)

#define MP_CHECK_RC(expr, want)                                             \
    do {                                                                    \
        pami_result_t mp_rc_ = (expr);                                      \
        if (mp_rc_ != (want))                                               \
            mp_fail("%s:%d: %s returned %s, expected %s", __FILE__,        \
                    __LINE__, #expr, pami_error_text(mp_rc_),               \
                    pami_error_text(want));                                 \
    } while (0)

static inline void mp_lock(mp_job_t *job, pami_context_t ctx)
{
    if (job->locked)
        MP_CHECK(pami_context_lock(ctx));
}

static inline void mp_unlock(mp_job_t *job, pami_context_t ctx)
{
    if (job->locked)
        MP_CHECK(pami_context_unlock(ctx));
}

/* One blocking progress step of at most 100 ms; fails on anything but
 * progress or a timeout. When something happened but the caller still
 * waits, the processor goes to the other tasks first: with more tasks than
 * cores, the one we wait for may be the one that cannot run. */
static inline void mp_wait_step(mp_job_t *job, pami_context_t ctx)
{
    mp_lock(job, ctx);
    pami_result_t rc = pami_context_wait(ctx, 100);
    mp_unlock(job, ctx);
    if (rc != PAMI_SUCCESS && rc != PAMI_TIMEOUT)
        mp_fail("pami_context_wait returned %s", pami_error_text(rc));
    if (rc == PAMI_SUCCESS)
        sched_yield();
}

/* Waits (blocking, never spinning) until cond holds; fails after secs. */
#define MP_WAIT(job, ctx, cond, secs, ...)                                  \
    do {                                                                    \
        double mp_deadline_ = mp_now() + (secs);                            \
        while (!(cond)) {                                                   \
            if (mp_now() > mp_deadline_) {                                  \
                fprintf(stderr, "%s: task %ld: waited %.0f s for: ",        \
                        mp_test_name, mp_task_id, (double)(secs));          \
                mp_fail(__VA_ARGS__);                                       \
            }                                                               \
            mp_wait_step((job), (ctx));                                     \
        }                                                                   \
    } while (0)

static inline pami_endpoint_t mp_ep(mp_job_t *job, pami_task_t task,
                                    size_t offset)
{
    pami_endpoint_t ep;
    MP_CHECK(pami_endpoint_create(job->client, task, offset, &ep));
    return ep;
}

/* The task k places after this one, around the ring. */
static inline pami_task_t mp_peer(const mp_job_t *job, size_t k)
{
    return (pami_task_t)((job->me + k) % job->size);
}

typedef pami_result_t (*mp_send_imm_fn)(pami_context_t,
                                         const pami_send_immediate_t *);

/* An immediate send by send, advancing while the transport is busy (not
 * from a handler). Returns the number of PAMI_EAGAIN answers it saw. */
static inline unsigned long mp_send_imm_by(mp_job_t *job, pami_context_t ctx,
                                           const pami_send_immediate_t *s,
                                           mp_send_imm_fn send)
{
    unsigned long again = 0;
    double deadline = mp_now() + MP_EAGAIN_S;
    for (;;) {
        mp_lock(job, ctx);
        pami_result_t rc = send(ctx, s);
        if (rc == PAMI_EAGAIN)
            pami_context_advance(ctx, 1);
        mp_unlock(job, ctx);
        /* The target must run to make room: with more tasks than cores,
         * give it the processor instead of polling. */
        if (rc == PAMI_EAGAIN && (again & 15) == 15)
            sched_yield();
        if (rc == PAMI_SUCCESS)
            return again;
        if (rc != PAMI_EAGAIN)
            mp_fail("pami_send_immediate (%zu + %zu bytes, id %zu): %s",
                    s->header_len, s->data_len, s->dispatch,
                    pami_error_text(rc));
        again++;
        if ((again & 1023) == 0 && mp_now() > deadline)
            mp_fail("pami_send_immediate of %zu + %zu bytes (id %zu) kept "
                    "returning PAMI_EAGAIN for %.0f s while advancing",
                    s->header_len, s->data_len, s->dispatch, MP_EAGAIN_S);
    }
}

static inline unsigned long mp_send_imm(mp_job_t *job, pami_context_t ctx,
                                        const pami_send_immediate_t *s)
{
    return mp_send_imm_by(job, ctx, s, pami_send_immediate);
}

/* A forged packet on a protocol's id (which pami_send_immediate refuses),
 * as a misbehaving peer would send it. */
static inline unsigned long mp_inject_imm(mp_job_t *job, pami_context_t ctx,
                                          const pami_send_immediate_t *s)
{
    return mp_send_imm_by(job, ctx, s, pami_test_send_raw);
}

/* An immediate send that never advances, for tests whose progress thread
 * does: the lock is held only for the call; on PAMI_EAGAIN it sleeps while
 * the thread makes room, and retries. */
static inline void mp_send_imm_no_advance(pami_context_t ctx,
                                          const pami_send_immediate_t *s)
{
    double deadline = mp_now() + MP_EAGAIN_S;
    for (;;) {
        MP_CHECK(pami_context_lock(ctx));
        pami_result_t rc = pami_send_immediate(ctx, s);
        MP_CHECK(pami_context_unlock(ctx));
        if (rc == PAMI_SUCCESS)
            return;
        MP_EXPECT(rc == PAMI_EAGAIN, "send_immediate: %s",
                  pami_error_text(rc));
        MP_EXPECT(mp_now() < deadline, "send_immediate kept returning "
                                       "PAMI_EAGAIN for %.0f s with the "
                                       "progress thread running",
                  MP_EAGAIN_S);
        mp_sleep_ms(0.2);
    }
}

/* An immediate send from a handler, where advancing is not allowed: falls
 * back to pami_send, which copies the header; data must be NULL or stay
 * valid (the callers pass static or header-only payloads). */
static inline void mp_send_imm_in_handler(pami_context_t ctx,
                                   const pami_send_immediate_t *s)
{
    pami_result_t rc = pami_send_immediate(ctx, s);
    if (rc == PAMI_EAGAIN) {
        pami_send_t full = {.send = *s};
        rc = pami_send(ctx, &full);
    }
    if (rc != PAMI_SUCCESS)
        mp_fail("send from a handler: %s", pami_error_text(rc));
}

/* ---- contents ---- */

/* The bytes of a payload identified by (origin, seq, salt): they differ
 * for neighbouring positions, messages and origins, and are not periodic
 * in 256. Computed per 256-byte block so checking megabytes stays cheap. */
static inline uint32_t mp_pattern_block(uint32_t origin, uint64_t seq,
                                        uint32_t salt, size_t block)
{
    uint64_t x = (uint64_t)origin * 0x9e3779b97f4a7c15ull ^
                 (seq + 1) * 0xc2b2ae3d27d4eb4full ^ (uint64_t)salt << 40;
    x ^= (uint64_t)block * 0x165667b19e3779f9ull;
    x ^= x >> 29;
    return (uint32_t)((x >> 8) + (x >> 32));
}

static inline void mp_fill(void *buf, size_t len, uint32_t origin,
                           uint64_t seq, uint32_t salt)
{
    uint8_t *p = buf;
    for (size_t b = 0; b * 256 < len; b++) {
        uint32_t base = mp_pattern_block(origin, seq, salt, b);
        size_t   end  = len - b * 256 < 256 ? len : b * 256 + 256;
        for (size_t i = b * 256; i < end; i++)
            p[i] = (uint8_t)(base + i * 13u);
    }
}

/* Returns the first wrong position, or -1 when all len bytes are right. */
static inline long mp_verify(const void *buf, size_t len, uint32_t origin,
                             uint64_t seq, uint32_t salt)
{
    const uint8_t *p = buf;
    if (len > 0 && p == NULL)
        return 0;
    for (size_t b = 0; b * 256 < len; b++) {
        uint32_t base = mp_pattern_block(origin, seq, salt, b);
        size_t   end  = len - b * 256 < 256 ? len : b * 256 + 256;
        for (size_t i = b * 256; i < end; i++)
            if (p[i] != (uint8_t)(base + i * 13u))
                return (long)i;
    }
    return -1;
}

/* The sequence number a message carries as its whole header, checked to
 * be the next one expected from its origin (next_seq per task, advanced
 * here); *origin gets the sending task. */
static inline uint64_t mp_expect_next(const void *hdr, size_t hlen,
                                      pami_endpoint_t origin_ep,
                                      uint64_t *next_seq, pami_task_t *origin)
{
    uint64_t seq;
    pami_endpoint_query(origin_ep, origin, NULL);
    MP_EXPECT(hlen == sizeof(seq), "header of %zu bytes", hlen);
    memcpy(&seq, hdr, sizeof(seq));
    MP_EXPECT(seq == next_seq[*origin], "message %llu from task %u, expected "
              "%llu (lost, doubled or reordered)", (unsigned long long)seq,
              *origin, (unsigned long long)next_seq[*origin]);
    next_seq[*origin]++;
    return seq;
}

/* Fails the test unless buf holds message seq of origin (mp_fill). */
static inline void mp_expect_payload(const void *buf, size_t len,
                                     uint32_t origin, uint64_t seq,
                                     uint32_t salt)
{
    long bad = mp_verify(buf, len, origin, seq, salt);
    MP_EXPECT(bad < 0, "message %llu from task %u wrong at byte %ld",
              (unsigned long long)seq, origin, bad);
}

/* A message received by rendezvous into a buffer of its own. */
typedef struct {
    uint8_t    *buf;
    uint64_t    seq;
    pami_task_t origin;
} mp_pending_t;

/* From a dispatch handler given no data: points recv at a new buffer of
 * len bytes; done gets the mp_pending_t as its cookie. */
static inline void mp_recv_into_new(pami_recv_t *recv, size_t len,
                                    pami_task_t origin, uint64_t seq,
                                    pami_event_fn done)
{
    MP_EXPECT(recv != NULL, "no data and no recv");
    mp_pending_t *p = malloc(sizeof(*p));
    MP_EXPECT(p != NULL, "out of memory");
    p->buf    = malloc(len);
    p->seq    = seq;
    p->origin = origin;
    MP_EXPECT(p->buf != NULL, "out of memory");
    recv->addr     = p->buf;
    recv->local_fn = done;
    recv->cookie   = p;
}

/* From done: checks the receive's result and its len bytes (mp_fill's
 * pattern with salt), then frees p. */
static inline void mp_pending_end(mp_pending_t *p, pami_result_t rc,
                                  size_t len, uint32_t salt)
{
    MP_EXPECT(rc == PAMI_SUCCESS, "receive: %s", pami_error_text(rc));
    mp_expect_payload(p->buf, len, p->origin, p->seq, salt);
    free(p->buf);
    free(p);
}

/* ---- setup, message barrier, teardown ---- */

static inline void mp_on_sync(pami_context_t ctx, void *cookie,
                              const void *hdr, size_t hlen, const void *data,
                              size_t dlen, pami_endpoint_t origin,
                              pami_recv_t *recv)
{
    (void)ctx; (void)data; (void)dlen; (void)origin; (void)recv;
    struct mp_sync_state *st = cookie;
    uint32_t epoch;
    if (hlen != sizeof(epoch))
        mp_fail("sync message with a %zu-byte header", hlen);
    memcpy(&epoch, hdr, sizeof(epoch));
    atomic_fetch_add(&st->seen[epoch % MP_SYNC_EPOCHS], 1);
}

static inline void mp_on_sync_sent(pami_context_t ctx, void *cookie,
                                   pami_result_t rc)
{
    (void)ctx;
    struct mp_sync_state *st = cookie;
    if (rc != PAMI_SUCCESS)
        mp_fail("sync message: %s", pami_error_text(rc));
    atomic_fetch_add(&st->sent, 1);
}

static inline void mp_parse_args(mp_job_t *job, int *argc, char **argv)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        if (strncmp(argv[i], "--expect-bootstrap=", 19) == 0) {
            const char *b = argv[i] + 19;
            static const struct {
                const char *name;
                int         kind;
            } kinds[] = {{"pmix", PAMI_BOOTSTRAP_PMIX},
                         {"local", PAMI_BOOTSTRAP_LOCAL},
                         {"oob", PAMI_BOOTSTRAP_OOB}};
            job->expect_bootstrap = -2;
            for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
                if (strcmp(b, kinds[k].name) == 0)
                    job->expect_bootstrap = kinds[k].kind;
            if (job->expect_bootstrap == -2)
                mp_fail("unknown bootstrap '%s'", b);
        } else if (strncmp(argv[i], "--expect-size=", 14) == 0) {
            job->expect_size = strtol(argv[i] + 14, NULL, 10);
        } else if (strncmp(argv[i], "--expect-nodes=", 15) == 0) {
            job->expect_nodes = argv[i] + 15;
        } else {
            argv[out++] = argv[i];
        }
    }
    *argc = out;
    argv[out] = NULL;
}

/* --expect-nodes=N0,N1,...: the node of every task as the launcher placed
 * them (numbered by their lowest task, as pami numbers them); the node
 * count, every task's node and this task's list of local tasks must match
 * what the client reports. */
static inline void mp_check_nodes(const mp_job_t *job, const char *list)
{
    const pami_client_attr_t *a = &job->attr;
    size_t      nodes = 0, local = 0;
    const char *p     = list;
    for (size_t t = 0; t < job->size; t++) {
        char *end;
        unsigned long nd = strtoul(p, &end, 10);
        MP_EXPECT(end != p && (*end == ',' || *end == '\0') &&
                      (*end == ',') == (t + 1 < job->size),
                  "--expect-nodes=%s does not list %zu nodes", list,
                  job->size);
        p = end + 1;
        nodes = nd + 1 > nodes ? nd + 1 : nodes;
        MP_EXPECT(a->task_node[t] == nd, "task %zu is on node %u, expected "
                  "node %lu", t, a->task_node[t], nd);
        if (a->task_node[t] != a->task_node[job->me])
            continue;
        MP_EXPECT(local < a->num_local_tasks && a->local_tasks[local] == t,
                  "local task %zu of this node is not task %zu", local, t);
        local++;
    }
    MP_EXPECT(a->num_nodes == nodes, "%zu nodes, expected %zu", a->num_nodes,
              nodes);
    MP_EXPECT(a->num_local_tasks == local, "%zu tasks on this node, expected "
              "%zu", a->num_local_tasks, local);
}

/* Creates the client and nctx contexts, queries every attribute, registers
 * the barrier handler on context 0 and, unless the caller registers more
 * and fences itself (fence == false), fences. */
static inline void mp_init(mp_job_t *job, const char *name, int *argc,
                           char **argv, const pami_client_params_t *params,
                           size_t nctx, bool fence)
{
    memset(job, 0, sizeof(*job));
    job->name             = name;
    job->expect_bootstrap = -1;
    job->expect_size      = -1;
    mp_test_name          = name;
    const char *rank = getenv("PAMI_RANK");
    if (rank == NULL)
        rank = getenv("PMIX_RANK");
    if (rank != NULL)
        mp_task_id = strtol(rank, NULL, 10);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != NULL)
        mp_parse_args(job, argc, argv);

    MP_CHECK(pami_client_create(name, params, &job->client));
    job->attr.field_mask = PAMI_CLIENT_ATTR_TASK | PAMI_CLIENT_ATTR_SIZE |
                           PAMI_CLIENT_ATTR_DISPATCH_MAX |
                           PAMI_CLIENT_ATTR_HEADER_MAX |
                           PAMI_CLIENT_ATTR_IMMEDIATE_MAX |
                           PAMI_CLIENT_ATTR_RNDV_THRESHOLD |
                           PAMI_CLIENT_ATTR_BOOTSTRAP |
                           PAMI_CLIENT_ATTR_LOCAL_TASKS |
                           PAMI_CLIENT_ATTR_NODES;
    MP_CHECK(pami_client_query(job->client, &job->attr));
    job->me   = job->attr.task;
    job->size = job->attr.size;
    mp_task_id = job->me;
    MP_EXPECT(job->me < job->size, "task %u >= size %zu", job->me, job->size);
    MP_EXPECT(job->attr.dispatch_max > MP_ID_SYNC,
              "dispatch_max %zu leaves no room for the sync id %d",
              job->attr.dispatch_max, MP_ID_SYNC);
    if (job->expect_bootstrap >= 0)
        MP_EXPECT((int)job->attr.bootstrap == job->expect_bootstrap,
                  "bootstrap is %d, expected %d", (int)job->attr.bootstrap,
                  job->expect_bootstrap);
    if (job->expect_size >= 0)
        MP_EXPECT(job->size == (size_t)job->expect_size,
                  "job size is %zu, expected %ld", job->size, job->expect_size);
    if (job->expect_nodes != NULL)
        mp_check_nodes(job, job->expect_nodes);

    /* With a progress thread, hold the lock around our own calls. */
    if (params != NULL &&
        (params->field_mask & PAMI_CLIENT_PARAM_ASYNC_PROGRESS))
        job->locked = params->async_progress != 0;
    else if (getenv("PAMI_ASYNC_PROGRESS") != NULL) {
        static const char *const yes[] = {"1", "y", "yes", "on", "true"};
        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
            if (strcasecmp(getenv("PAMI_ASYNC_PROGRESS"), yes[i]) == 0)
                job->locked = true;
    }

    job->nctx = nctx;
    MP_CHECK(pami_context_createv(job->client, NULL, nctx, job->ctx));
    for (size_t i = 0; i < nctx; i++) {
        job->sync[i].job = job;
        mp_lock(job, job->ctx[i]);
        MP_CHECK(pami_dispatch_set(job->ctx[i], MP_ID_SYNC, mp_on_sync,
                                   &job->sync[i], NULL));
        mp_unlock(job, job->ctx[i]);
    }
    if (fence)
        MP_CHECK(pami_dispatch_fence(job->client));
}

/* A barrier over active messages on context i: everybody sends one
 * message per epoch to context i of everybody else, waits for size - 1 of
 * them and for its own to have left (local completion), so nothing of it
 * needs this task's progress afterwards. Unlike the bootstrap barrier it
 * keeps progressing, so it may follow traffic whose completion needs the
 * peers' progress. Call it once all of this task's own operations on
 * context i are complete, from the thread that drives context i. */
static inline void mp_sync_ctx(mp_job_t *job, size_t i)
{
    pami_context_t        ctx   = job->ctx[i];
    struct mp_sync_state *st    = &job->sync[i];
    uint32_t              epoch = st->epoch++;
    atomic_store(&st->sent, 0);
    for (size_t k = 1; k < job->size; k++) {
        pami_task_t to = mp_peer(job, k);
        pami_send_t s = {
            .send = {.dest = mp_ep(job, to, i), .dispatch = MP_ID_SYNC,
                     .header = &epoch, .header_len = sizeof(epoch)},
            .local_fn = mp_on_sync_sent,
            .cookie   = st};
        mp_lock(job, ctx);
        MP_CHECK(pami_send(ctx, &s));
        mp_unlock(job, ctx);
    }
    atomic_uint *seen = &st->seen[epoch % MP_SYNC_EPOCHS];
    MP_WAIT(job, ctx, atomic_load(seen) >= job->size - 1 &&
                          atomic_load(&st->sent) == job->size - 1,
            MP_WAIT_S, "sync %u on context %zu: %u of %zu peers, %u of our "
            "messages out", epoch, i, atomic_load(seen), job->size - 1,
            atomic_load(&st->sent));
    MP_EXPECT(atomic_load(seen) == job->size - 1, "sync %u: %u messages",
              epoch, atomic_load(seen));
    atomic_store(seen, 0);
}

static inline void mp_sync(mp_job_t *job)
{
    mp_sync_ctx(job, 0);
}

/* The first dispatch id of a protocol of pami's (pami_protocol_query),
 * for the tests that forge its packets; fails the test without it. */
static inline size_t mp_protocol_base(mp_job_t *job, const char *name)
{
    pami_protocol_info_t info;
    for (size_t i = 0; pami_protocol_query(job->client, i, &info) ==
                       PAMI_SUCCESS; i++)
        if (strcmp(info.name, name) == 0)
            return info.dispatch_base;
    mp_fail("no %s protocol", name);
}

static inline void mp_finish(mp_job_t *job)
{
    for (size_t i = 0; i < job->nctx; i++) {
        pami_context_stats_t st;
        mp_lock(job, job->ctx[i]);
        MP_CHECK(pami_context_stats(job->ctx[i], &st));
        mp_unlock(job, job->ctx[i]);
        MP_EXPECT(st.dropped_unknown == 0 && st.dropped_malformed == 0,
                  "context %zu dropped %llu unknown and %llu malformed "
                  "messages", i, (unsigned long long)st.dropped_unknown,
                  (unsigned long long)st.dropped_malformed);
        MP_EXPECT(st.peer_failures == 0, "context %zu saw %llu peer failures",
                  i, (unsigned long long)st.peer_failures);
    }
    MP_CHECK(pami_client_destroy(&job->client));
}

#endif
