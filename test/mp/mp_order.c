/*
 * mp_order: handler order per origin under a burst.
 *
 * Every task sends `count` messages (default 20000) to every other task,
 * interleaving the targets. Each message carries its sequence number; its
 * size, its dispatch id (two ids alternate in runs) and the way it is sent
 * follow from the number: header only (immediate or pami_send), 40 bytes
 * immediate, 1 KiB, 16 KiB, 64 KiB and, now and then, 100 KiB and 1 MiB,
 * which cross the rendezvous threshold. The target checks that its
 * handlers run, per origin, in exactly the order of the sequence numbers,
 * whatever the id or size, and checks every payload byte: at once when it
 * arrived whole, in recv->local_fn when the handler had to give a buffer.
 *
 *   pamirun -n N mp_order [count]
 */
#include "mp_util.h"

enum { ID_A = 40, ID_B = 41, ID_CREDIT = 42 };

/* Flow control: a target returns a credit every CREDIT_EVERY messages of
 * an origin, and an origin keeps at most WINDOW messages per target
 * without credit, so a burst waits (sleeping) instead of flooding queues
 * while the targets have no processor. */
#define CREDIT_EVERY 512
#define WINDOW       4096

enum {
    CLS_HDR_IMM, CLS_HDR_SEND, CLS_40_IMM, CLS_1K, CLS_16K, CLS_64K,
    CLS_100K, CLS_1M, NCLS
};

static const size_t cls_size[NCLS] = {0, 0, 40, 1024, 16384, 65536,
                                      100 * 1024, 1024 * 1024};
static const char *const cls_name[NCLS] = {
    "header, immediate", "header, send", "40 B immediate", "1 KiB",
    "16 KiB", "64 KiB", "100 KiB", "1 MiB"};

/* Payloads come from a few read-only variants per class, so a payload of
 * another message of the same class is caught too. */
#define VARIANTS 7

typedef struct {
    uint64_t seq;
    uint32_t cls;
    uint32_t id;
} msg_hdr_t;

static mp_job_t  job;
static uint64_t  count = 20000;
static uint64_t *next_seq;       /* per origin */
static uint64_t *credited;       /* per target: messages it confirmed */
static uint64_t  rndv_pending;
static uint64_t  rndv_total;
static uint64_t  by_cls[NCLS];   /* received, per class */
static size_t    outstanding;
static uint8_t  *src[NCLS][VARIANTS];

static int cls_of(uint64_t seq)
{
    if (seq % 5000 == 2500)
        return CLS_1M;
    if (seq % 1000 == 500)
        return CLS_100K;
    if (seq % 200 == 100)
        return CLS_64K;
    if (seq % 50 == 10)
        return CLS_16K;
    if (seq % 4 == 1)
        return CLS_1K;
    if (seq % 4 == 3)
        return CLS_40_IMM;
    return seq % 8 == 0 ? CLS_HDR_IMM : CLS_HDR_SEND;
}

static size_t id_of(uint64_t seq)
{
    return (seq / 3) % 2 ? ID_B : ID_A;
}

/* The pattern of a variant: the variant is the "sequence number", the
 * class the salt, the sender the origin. */
static uint64_t variant_of(uint64_t seq)
{
    return (seq * 2654435761u >> 7) % VARIANTS;
}

static void check_payload(const void *data, size_t len, const msg_hdr_t *h,
                          pami_task_t origin, const char *how)
{
    long bad = mp_verify(data, len, origin, variant_of(h->seq), h->cls);
    MP_EXPECT(bad < 0, "message %llu from task %u (%s, %s): wrong at byte "
                       "%ld", (unsigned long long)h->seq, origin,
              cls_name[h->cls], how, bad);
}

static void on_rndv_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    mp_pending_t *p = cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "receive of message %llu from task %u: %s",
              (unsigned long long)p->seq, p->origin, pami_error_text(rc));
    msg_hdr_t h = {.seq = p->seq, .cls = (uint32_t)cls_of(p->seq)};
    check_payload(p->buf, cls_size[h.cls], &h, p->origin, "in recv local_fn");
    rndv_pending--;
    free(p->buf);
    free(p);
}

static void on_msg(pami_context_t ctx, void *cookie, const void *hdr,
                   size_t hlen, const void *data, size_t dlen,
                   pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx;
    size_t id = (size_t)(uintptr_t)cookie;
    pami_task_t origin;
    pami_endpoint_query(origin_ep, &origin, NULL);
    msg_hdr_t h;
    MP_EXPECT(hlen == sizeof(h), "message with a %zu-byte header from task "
                                 "%u", hlen, origin);
    memcpy(&h, hdr, sizeof(h));
    uint64_t want = next_seq[origin];
    MP_EXPECT(h.seq == want,
              "from task %u: handler ran for message %llu (%s, id %zu) when "
              "%llu (%s, id %zu) was due: order broken", origin,
              (unsigned long long)h.seq,
              h.cls < NCLS ? cls_name[h.cls] : "?", id,
              (unsigned long long)want, cls_name[cls_of(want)], id_of(want));
    next_seq[origin]++;
    MP_EXPECT(want < count, "from task %u: message %llu, only %llu sent",
              origin, (unsigned long long)want, (unsigned long long)count);
    MP_EXPECT(id == id_of(h.seq) && h.id == id,
              "message %llu from task %u on id %zu, sent on %u", 
              (unsigned long long)h.seq, origin, id, h.id);
    MP_EXPECT(h.cls == (uint32_t)cls_of(h.seq) && dlen == cls_size[h.cls],
              "message %llu from task %u: class %u, %zu bytes",
              (unsigned long long)h.seq, origin, h.cls, dlen);
    by_cls[h.cls]++;
    if (next_seq[origin] % CREDIT_EVERY == 0) {
        uint64_t n = next_seq[origin];
        pami_send_immediate_t c = {.dest = origin_ep, .dispatch = ID_CREDIT,
                                   .header = &n, .header_len = sizeof(n)};
        mp_send_imm_in_handler(ctx, &c);
    }
    if (dlen == 0)
        return;
    if (data != NULL) {
        check_payload(data, dlen, &h, origin, "whole");
        return;
    }
    MP_EXPECT(recv != NULL, "no data and no recv");
    MP_EXPECT(dlen >= job.attr.rndv_threshold,
              "%zu bytes left at the origin, below the threshold %zu", dlen,
              job.attr.rndv_threshold);
    mp_recv_into_new(recv, dlen, origin, h.seq, on_rndv_done);
    rndv_pending++;
    rndv_total++;
}

static void on_credit(pami_context_t ctx, void *cookie, const void *hdr,
                      size_t hlen, const void *data, size_t dlen,
                      pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)data; (void)dlen; (void)recv;
    pami_task_t from;
    pami_endpoint_query(origin_ep, &from, NULL);
    uint64_t n;
    MP_EXPECT(hlen == sizeof(n), "credit of %zu bytes", hlen);
    memcpy(&n, hdr, sizeof(n));
    MP_EXPECT(n > credited[from] && n <= count,
              "credit %llu from task %u after %llu",
              (unsigned long long)n, from,
              (unsigned long long)credited[from]);
    credited[from] = n;
}

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "send completion: %s", pami_error_text(rc));
    outstanding--;
}

static bool all_in(void)
{
    for (size_t t = 0; t < job.size; t++)
        if (t != job.me && next_seq[t] != count)
            return false;
    return rndv_pending == 0;
}

static uint64_t total_in(void)
{
    uint64_t n = 0;
    for (size_t t = 0; t < job.size; t++)
        n += next_seq[t];
    return n;
}

int main(int argc, char **argv)
{
    mp_init(&job, "mp_order", &argc, argv, NULL, 1, false);
    if (argc > 1)
        count = strtoull(argv[1], NULL, 10);
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");
    pami_context_t ctx = job.ctx[0];
    MP_CHECK(pami_dispatch_set(ctx, ID_A, on_msg, (void *)(uintptr_t)ID_A,
                               NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_B, on_msg, (void *)(uintptr_t)ID_B,
                               NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_CREDIT, on_credit, NULL, NULL));
    next_seq = calloc(job.size, sizeof(*next_seq));
    credited = calloc(job.size, sizeof(*credited));
    MP_EXPECT(next_seq != NULL && credited != NULL, "out of memory");
    for (int c = 0; c < NCLS; c++)
        for (int v = 0; v < VARIANTS; v++) {
            src[c][v] = malloc(cls_size[c] ? cls_size[c] : 1);
            MP_EXPECT(src[c][v] != NULL, "out of memory");
            mp_fill(src[c][v], cls_size[c], job.me, (uint64_t)v, (uint32_t)c);
        }
    MP_CHECK(pami_dispatch_fence(job.client));

    double t0 = mp_now();
    unsigned long again = 0;
    for (uint64_t seq = 0; seq < count; seq++) {
        int       c  = cls_of(seq);
        size_t    id = id_of(seq);
        msg_hdr_t h  = {seq, (uint32_t)c, (uint32_t)id};
        const uint8_t *data = cls_size[c] ? src[c][variant_of(seq)] : NULL;
        for (size_t k = 1; k < job.size; k++) {
            pami_task_t     t  = mp_peer(&job, k);
            pami_endpoint_t to = mp_ep(&job, t, 0);
            if (seq >= credited[t] + WINDOW)
                MP_WAIT(&job, ctx, seq < credited[t] + WINDOW, MP_WAIT_S,
                        "credit from task %u (%llu of %llu confirmed)", t,
                        (unsigned long long)credited[t],
                        (unsigned long long)seq);
            pami_send_immediate_t s = {.dest = to, .dispatch = id,
                                       .header = &h, .header_len = sizeof(h),
                                       .data = data, .data_len = cls_size[c]};
            if (c == CLS_HDR_IMM || c == CLS_40_IMM) {
                again += mp_send_imm(&job, ctx, &s);
                continue;
            }
            if (outstanding >= 1024)
                MP_WAIT(&job, ctx, outstanding < 512, MP_WAIT_S,
                        "%zu sends outstanding", outstanding);
            pami_send_t ps = {.send = s, .local_fn = on_local};
            outstanding++;
            MP_CHECK(pami_send(ctx, &ps));
        }
    }
    double t_send = mp_now() - t0;
    MP_WAIT(&job, ctx, all_in() && outstanding == 0, MP_WAIT_S,
            "%llu of %llu messages in, %llu payloads being received, %zu "
            "sends outstanding", (unsigned long long)total_in(),
            (unsigned long long)(count * (job.size - 1)),
            (unsigned long long)rndv_pending, outstanding);
    mp_sync(&job);
    MP_EXPECT(all_in(), "messages arrived after the end");
    printf("%llu messages from each of %zu peers in order (sent in %.2f s, "
           "all in after %.2f s, %lu EAGAIN); %llu payloads by rendezvous; "
           "1 MiB: %llu, 100 KiB: %llu, 64 KiB: %llu\n",
           (unsigned long long)count, job.size - 1, t_send, mp_now() - t0,
           again, (unsigned long long)rndv_total,
           (unsigned long long)by_cls[CLS_1M],
           (unsigned long long)by_cls[CLS_100K],
           (unsigned long long)by_cls[CLS_64K]);
    mp_finish(&job);
    for (int c = 0; c < NCLS; c++)
        for (int v = 0; v < VARIANTS; v++)
            free(src[c][v]);
    free(next_seq);
    free(credited);
    return 0;
}
