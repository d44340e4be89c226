/*
 * mp_threads: two contexts per task, each driven by its own thread.
 *
 * Context i of every task exchanges `count` messages (default 5000) with
 * context i of every other task, both threads at once, through the same
 * dispatch id registered on each context with a different cookie. The
 * target checks, per context: the cookie is that context's, the origin is
 * context i of the sender, the handler runs on the thread that drives the
 * context, messages of one origin come in order, sizes and contents are
 * right (whole payloads and ones received into a buffer), and the counts
 * add up exactly.
 *
 *   pamirun -n N mp_threads [count]
 */
#include "mp_util.h"

#include <pthread.h>

enum { ID_T = 60, ID_READY = 61 };
#define NCTX 2
#define NSIZES 5

static const size_t sizes[NSIZES] = {0, 24, 1000, 16384, 70000};

typedef struct {
    uint64_t seq;
    uint32_t ctx;
    uint32_t size_idx;
} msg_hdr_t;

typedef struct {
    size_t     index;
    pthread_t  thread;
    pthread_t  self;         /* set by the thread itself before it advances */
    uint64_t  *next_seq;     /* per origin task */
    atomic_uint ready;       /* peers whose thread i runs */
    uint64_t   received;
    uint64_t   rndv_pending;
    uint64_t   rndv_total;
    uint64_t   outstanding;  /* pami_send without local completion */
    uint8_t   *src[NSIZES];
    double     seconds;
} ctx_state_t;

static mp_job_t    job;
static uint64_t    count = 5000;
static ctx_state_t state[NCTX];

static int size_idx_of(uint64_t seq)
{
    if (seq % 50 == 25)
        return 4;
    return (int)(seq % 4);
}

static uint32_t salt_of(size_t ctx, int size_idx)
{
    return (uint32_t)(ctx * 16 + (size_t)size_idx);
}

typedef struct {
    ctx_state_t *st;
    uint8_t     *buf;
    msg_hdr_t    h;
    pami_task_t  origin;
} pending_t;

static void on_rndv_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    pending_t *p = cookie;
    MP_EXPECT(ctx == job.ctx[p->st->index], "recv local_fn on context %p",
              (void *)ctx);
    MP_EXPECT(rc == PAMI_SUCCESS, "receive: %s", pami_error_text(rc));
    long bad = mp_verify(p->buf, sizes[p->h.size_idx], p->origin, p->h.ctx,
                         salt_of(p->h.ctx, (int)p->h.size_idx));
    MP_EXPECT(bad < 0, "context %zu: message %llu from task %u wrong at "
                       "byte %ld", p->st->index,
              (unsigned long long)p->h.seq, p->origin, bad);
    p->st->rndv_pending--;
    free(p->buf);
    free(p);
}

static void on_msg(pami_context_t ctx, void *cookie, const void *hdr,
                   size_t hlen, const void *data, size_t dlen,
                   pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    ctx_state_t *st = cookie;
    MP_EXPECT(st == &state[0] || st == &state[1], "foreign cookie");
    MP_EXPECT(ctx == job.ctx[st->index], "handler of context %zu called "
                                         "with another context", st->index);
    MP_EXPECT(pthread_equal(pthread_self(), st->self),
              "handler of context %zu ran on another thread", st->index);
    pami_task_t origin;
    size_t      off;
    pami_endpoint_query(origin_ep, &origin, &off);
    msg_hdr_t h;
    MP_EXPECT(hlen == sizeof(h), "header of %zu bytes", hlen);
    memcpy(&h, hdr, sizeof(h));
    MP_EXPECT(off == st->index && h.ctx == st->index,
              "context %zu got a message from context %zu (header says %u) "
              "of task %u", st->index, off, h.ctx, origin);
    MP_EXPECT(h.seq == st->next_seq[origin],
              "context %zu: message %llu from task %u, expected %llu",
              st->index, (unsigned long long)h.seq, origin,
              (unsigned long long)st->next_seq[origin]);
    st->next_seq[origin]++;
    MP_EXPECT(h.size_idx == (uint32_t)size_idx_of(h.seq) &&
                  dlen == sizes[h.size_idx],
              "context %zu: message %llu of %zu bytes", st->index,
              (unsigned long long)h.seq, dlen);
    st->received++;
    if (data != NULL || dlen == 0) {
        long bad = mp_verify(data, dlen, origin, h.ctx,
                             salt_of(h.ctx, (int)h.size_idx));
        MP_EXPECT(bad < 0, "context %zu: message %llu from task %u wrong "
                           "at byte %ld", st->index,
                  (unsigned long long)h.seq, origin, bad);
        return;
    }
    MP_EXPECT(recv != NULL, "no data and no recv");
    pending_t *p = malloc(sizeof(*p));
    MP_EXPECT(p != NULL, "out of memory");
    p->st     = st;
    p->buf    = malloc(dlen);
    p->h      = h;
    p->origin = origin;
    MP_EXPECT(p->buf != NULL, "out of memory");
    recv->addr     = p->buf;
    recv->local_fn = on_rndv_done;
    recv->cookie   = p;
    st->rndv_pending++;
    st->rndv_total++;
}

/* May run in pami_dispatch_fence on the main thread: counts only. */
static void on_ready(pami_context_t ctx, void *cookie, const void *hdr,
                     size_t hlen, const void *data, size_t dlen,
                     pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)hdr; (void)hlen; (void)data; (void)dlen; (void)origin;
    (void)recv;
    ctx_state_t *st = cookie;
    atomic_fetch_add(&st->ready, 1);
}

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    ctx_state_t *st = cookie;
    MP_EXPECT(ctx == job.ctx[st->index], "local_fn on another context");
    MP_EXPECT(pthread_equal(pthread_self(), st->self),
              "local_fn of context %zu ran on another thread", st->index);
    MP_EXPECT(rc == PAMI_SUCCESS, "send completion: %s", pami_error_text(rc));
    st->outstanding--;
}

static bool ctx_done(const ctx_state_t *st)
{
    return st->received == count * (job.size - 1) && st->rndv_pending == 0 &&
           st->outstanding == 0;
}

static void *drive(void *arg)
{
    ctx_state_t   *st  = arg;
    size_t         i   = st->index;
    pami_context_t ctx = job.ctx[i];
    double         t0  = mp_now();
    st->self = pthread_self();
    /* Data goes to context i of a peer only once its thread i drives it
     * (the fence may progress contexts on the main thread). */
    for (size_t k = 1; k < job.size; k++) {
        pami_send_immediate_t r = {
            .dest = mp_ep(&job, mp_peer(&job, k), i),
            .dispatch = ID_READY};
        mp_send_imm(&job, ctx, &r);
    }
    MP_WAIT(&job, ctx, atomic_load(&st->ready) == job.size - 1, MP_WAIT_S,
            "context %zu: %u of %zu peers ready", i,
            atomic_load(&st->ready), job.size - 1);
    for (uint64_t seq = 0; seq < count; seq++) {
        int       si = size_idx_of(seq);
        msg_hdr_t h  = {seq, (uint32_t)i, (uint32_t)si};
        for (size_t k = 1; k < job.size; k++) {
            pami_send_immediate_t s = {
                .dest = mp_ep(&job, mp_peer(&job, k), i),
                .dispatch = ID_T, .header = &h, .header_len = sizeof(h),
                .data = sizes[si] ? st->src[si] : NULL,
                .data_len = sizes[si]};
            if (sizeof(h) + sizes[si] <= 64) {
                mp_send_imm(&job, ctx, &s);
                continue;
            }
            if (st->outstanding >= 512)
                MP_WAIT(&job, ctx, st->outstanding < 256, MP_WAIT_S,
                        "context %zu: %llu sends outstanding", i,
                        (unsigned long long)st->outstanding);
            pami_send_t ps = {.send = s, .local_fn = on_local, .cookie = st};
            st->outstanding++;
            MP_CHECK(pami_send(ctx, &ps));
        }
    }
    MP_WAIT(&job, ctx, ctx_done(st), MP_WAIT_S,
            "context %zu: %llu of %llu messages, %llu receives and %llu "
            "sends pending", i, (unsigned long long)st->received,
            (unsigned long long)(count * (job.size - 1)),
            (unsigned long long)st->rndv_pending,
            (unsigned long long)st->outstanding);
    st->seconds = mp_now() - t0;
    /* Our receives may still owe the origins a completion message, which
     * goes out only while this context progresses: meet over context i
     * before this thread stops driving it. */
    mp_sync_ctx(&job, i);
    return NULL;
}

int main(int argc, char **argv)
{
    mp_init(&job, "mp_threads", &argc, argv, NULL, NCTX, false);
    if (argc > 1)
        count = strtoull(argv[1], NULL, 10);
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");
    for (size_t i = 0; i < NCTX; i++) {
        ctx_state_t *st = &state[i];
        st->index    = i;
        st->next_seq = calloc(job.size, sizeof(*st->next_seq));
        MP_EXPECT(st->next_seq != NULL, "out of memory");
        for (int s = 0; s < NSIZES; s++) {
            st->src[s] = malloc(sizes[s] ? sizes[s] : 1);
            MP_EXPECT(st->src[s] != NULL, "out of memory");
            mp_fill(st->src[s], sizes[s], job.me, i, salt_of(i, s));
        }
        MP_CHECK(pami_dispatch_set(job.ctx[i], ID_T, on_msg, st, NULL));
        MP_CHECK(pami_dispatch_set(job.ctx[i], ID_READY, on_ready, st, NULL));
    }
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_NUM_CONTEXTS};
    MP_CHECK(pami_client_query(job.client, &a));
    MP_EXPECT(a.num_contexts == NCTX, "num_contexts %zu", a.num_contexts);
    MP_CHECK(pami_dispatch_fence(job.client));

    /* From here until the join only thread i advances context i. */
    for (size_t i = 0; i < NCTX; i++)
        MP_EXPECT(pthread_create(&state[i].thread, NULL, drive, &state[i]) == 0,
                  "pthread_create");
    for (size_t i = 0; i < NCTX; i++)
        pthread_join(state[i].thread, NULL);
    for (size_t i = 0; i < NCTX; i++)
        MP_EXPECT(ctx_done(&state[i]), "context %zu not done", i);
    /* Context 0 is the main thread's again. */
    mp_sync(&job);
    for (size_t i = 0; i < NCTX; i++) {
        pami_context_stats_t s;
        MP_CHECK(pami_context_stats(job.ctx[i], &s));
        MP_EXPECT(s.receives >= count * (job.size - 1),
                  "context %zu counted %llu receives", i,
                  (unsigned long long)s.receives);
        for (size_t t = 0; t < job.size; t++)
            MP_EXPECT(t == job.me || state[i].next_seq[t] == count,
                      "context %zu: %llu messages from task %zu", i,
                      (unsigned long long)state[i].next_seq[t], t);
    }
    if (job.me == 0)
        printf("2 contexts x %zu peers x %llu messages each way: context 0 "
               "took %.3f s, context 1 %.3f s; %llu + %llu payloads by "
               "rendezvous at task 0\n", job.size - 1,
               (unsigned long long)count, state[0].seconds, state[1].seconds,
               (unsigned long long)state[0].rndv_total,
               (unsigned long long)state[1].rndv_total);
    mp_finish(&job);
    for (size_t i = 0; i < NCTX; i++) {
        for (int s = 0; s < NSIZES; s++)
            free(state[i].src[s]);
        free(state[i].next_seq);
    }
    return 0;
}
