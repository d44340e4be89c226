/*
 * rma_forge: memregion handles that their owner did not make.
 *
 * Every task registers a region and exchanges it. Then, toward the next
 * task:
 *
 *  local  copies of the next task's region with random key bytes (the
 *         header intact), a grown length, a moved base, another
 *         generation, another owner, resealed with another job's secret,
 *         and wholly random bytes with a valid magic: pami_put, pami_get
 *         and pami_rmw each answer PAMI_INVAL and never call back,
 *         pami_memregion_query answers PAMI_INVAL, the context counts
 *         every refusal in bad_regions; the genuine copy still works.
 *  wire   raw packets through the transport, as a peer could send them:
 *         a rendezvous request whose region carries random key bytes,
 *         and an SVD NOTIFY of the GET kind whose source region carries
 *         random key bytes (the packet of issue 12, defect 1). The
 *         receiver stays up, drops both (dropped_malformed and
 *         bad_regions for the request, SVD's drop_bad for the NOTIFY),
 *         never calls the request's handler, and serves a genuine large
 *         message afterwards.
 *
 *   pamirun -n N rma_forge [local|wire|all]     (N >= 2)
 *
 * White-box: it builds the wire forms of docs/protocols/rma.md,
 * rendezvous.md and svd.md by hand and sends them under pami's AM header.
 */
#include "rma_util.h"

#include <errno.h>

#include "internal.h"
#include "siphash.h"
#include "svd/pami_svd.h"
#include "svd/svd_wire.h"

enum { ID_SINK = 30 };

#define REGION (64 * 1024)
#define LARGE  (256 * 1024)

/* The region's wire form as docs/protocols/rma.md gives it. */
typedef struct {
    uint32_t magic;
    uint16_t version, rkey_len;
    uint32_t owner_task;
    uint16_t owner_ctx, reserved;
    uint32_t id, generation;
    uint64_t base, bytes, seal;
    uint8_t  rkey[PAMI_MEMREGION_SIZE - 48];
} doc_mr_t;

/* The rendezvous request of docs/protocols/rendezvous.md. */
typedef struct {
    uint32_t         version, dispatch;
    uint64_t         bytes;
    uint32_t         flags, reserved;
    uint64_t         base;
    pami_memregion_t mr;
} doc_rts_t;

static mp_job_t          job;
static uint8_t          *region;
static pami_memregion_t  my_mr;
static pami_memregion_t *mrs;
static uint64_t          rnd_state = 0x9e3779b97f4a7c15ull;

static struct {
    unsigned calls, done;
    size_t   bytes;
    uint8_t *buf;
} sink;

static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static void rnd_fill(void *p, size_t n)
{
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)rnd();
}

static pami_context_stats_t stats(void)
{
    pami_context_stats_t st;
    MP_CHECK(pami_context_stats(job.ctx[0], &st));
    return st;
}

static void on_sink_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "large message: %s", pami_error_text(rc));
    sink.done++;
}

static void on_sink(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)hdr; (void)hlen; (void)origin;
    sink.calls++;
    sink.bytes = dlen;
    if (data != NULL) {
        sink.done++;
        return;
    }
    MP_EXPECT(dlen <= LARGE, "large message of %zu bytes", dlen);
    recv->addr     = sink.buf;
    recv->local_fn = on_sink_done;
}

/* put, get and rmw through mr toward dest: each must be PAMI_INVAL. */
static unsigned refuse_all(pami_task_t dest, const pami_memregion_t *mr,
                           const char *what)
{
    uint8_t  buf[64];
    uint64_t old = 0;
    char     w[160];
    memset(buf, 0x5a, sizeof(buf));
    snprintf(w, sizeof(w), "put through %s", what);
    MP_CHECK_RC(rma_xfer(&job, RMA_PUT, dest, buf, sizeof(buf), mr, 0, w),
                PAMI_INVAL);
    snprintf(w, sizeof(w), "get through %s", what);
    MP_CHECK_RC(rma_xfer(&job, RMA_GET, dest, buf, sizeof(buf), mr, 0, w),
                PAMI_INVAL);
    snprintf(w, sizeof(w), "fetch-add through %s", what);
    MP_CHECK_RC(rma_rmw(&job, dest, mr, 0, PAMI_RMW_FETCH_ADD, 8, 1, 0, &old,
                        w), PAMI_INVAL);
    void  *b = NULL;
    size_t n = 0;
    MP_CHECK_RC(pami_memregion_query(mr, &b, &n, NULL), PAMI_INVAL);
    return 3;
}

static void reseal(doc_mr_t *m, const uint8_t *secret)
{
    uint8_t msg[sizeof(*m)];
    memcpy(msg, m, 40);
    memcpy(msg + 40, m->rkey, m->rkey_len);
    m->seal = pami_siphash24(secret, msg, 40 + m->rkey_len);
}

static void test_local(void)
{
    pami_task_t dest = mp_peer(&job, 1);
    doc_mr_t    genuine;
    memcpy(&genuine, &mrs[dest], sizeof(genuine));
    MP_EXPECT(genuine.version == 2 && genuine.rkey_len > 0 &&
                  genuine.rkey_len <= sizeof(genuine.rkey),
              "task %u's region: version %u, key of %u bytes", dest,
              genuine.version, genuine.rkey_len);
    uint64_t before = stats().bad_regions;
    unsigned refused = 0;

    for (int round = 0; round < 8; round++) {
        doc_mr_t m = genuine;
        rnd_fill(m.rkey, m.rkey_len);
        refused += refuse_all(dest, (pami_memregion_t *)&m,
                              "random key bytes");
    }
    doc_mr_t m = genuine;
    m.bytes = 1ull << 40;
    refused += refuse_all(dest, (pami_memregion_t *)&m, "a grown length");
    m = genuine;
    m.base -= 4096;
    refused += refuse_all(dest, (pami_memregion_t *)&m, "a moved base");
    m = genuine;
    m.generation++;
    refused += refuse_all(dest, (pami_memregion_t *)&m, "another generation");
    m = genuine;
    m.rkey_len = (uint16_t)(genuine.rkey_len - 1);
    refused += refuse_all(dest, (pami_memregion_t *)&m, "a shorter key");
    uint8_t secret[16];
    rnd_fill(secret, sizeof(secret));
    m = genuine;
    reseal(&m, secret);
    refused += refuse_all(dest, (pami_memregion_t *)&m,
                          "a seal of another job");
    m = genuine;
    rnd_fill(m.rkey, m.rkey_len);
    reseal(&m, secret);
    refused += refuse_all(dest, (pami_memregion_t *)&m,
                          "random key bytes sealed by another job");
    for (int round = 0; round < 8; round++) {
        rnd_fill(&m, sizeof(m));
        m.magic      = genuine.magic;
        m.version    = genuine.version;
        m.reserved   = 0;
        m.owner_task = dest;
        m.owner_ctx  = 0;
        m.rkey_len   = (uint16_t)(1 + rnd() % sizeof(m.rkey));
        refused += refuse_all(dest, (pami_memregion_t *)&m, "random bytes");
    }
    uint64_t after = stats().bad_regions;
    MP_EXPECT(after - before == refused, "bad_regions rose by %llu for %u "
              "refusals", (unsigned long long)(after - before), refused);

    /* A forged copy of our own region destroys nothing. */
    doc_mr_t mine;
    memcpy(&mine, &my_mr, sizeof(mine));
    rnd_fill(mine.rkey, mine.rkey_len);
    MP_CHECK_RC(pami_memregion_destroy(job.ctx[0], (pami_memregion_t *)&mine),
                PAMI_INVAL);

    /* The genuine copy still works: a word there and back. */
    uint64_t word = 0x1122334455667788ull ^ job.me, back = 0, old = 0;
    size_t   off  = 8 * (1 + job.me);
    RMA_PUT_OK(&job, dest, &word, 8, &mrs[dest], off, "genuine put");
    RMA_GET_OK(&job, dest, &back, 8, &mrs[dest], off, "genuine get");
    MP_EXPECT(back == word, "got 0x%llx back, put 0x%llx",
              (unsigned long long)back, (unsigned long long)word);
    MP_CHECK(rma_rmw(&job, dest, &mrs[dest], off, PAMI_RMW_FETCH_ADD, 8, 1,
                     0, &old, "genuine fetch-add"));
    MP_EXPECT(old == word, "fetch-add saw 0x%llx, expected 0x%llx",
              (unsigned long long)old, (unsigned long long)word);
    mp_sync(&job);
}

/* Sends one message as pami's transport would carry it, without pami. */
typedef struct {
    tp_req_t tp;
    int      done, status;
} raw_req_t;

static void raw_done(tp_req_t *tp, int status)
{
    raw_req_t *r = container_of(tp, raw_req_t, tp);
    r->status = status;
    r->done   = 1;
}

static void raw_send(pami_task_t to, const void *hdr, size_t hlen,
                     const void *data, size_t dlen)
{
    struct pami_context *ctx = job.ctx[0];
    uint32_t             index;
    pami_peer_t         *peer;
    MP_CHECK(pami_peer_index(ctx, mp_ep(&job, to, 0), &index));
    MP_CHECK(pami_peer_by_index(ctx, index, &peer));
    raw_req_t r = {.tp.fn = raw_done};
    int rc = ctx->tp->am_send(peer->ep, hdr, hlen, data, dlen, TP_SEND_EAGER,
                              &r.tp);
    if (rc == 1) {
        MP_WAIT(&job, ctx, r.done, MP_WAIT_S, "raw send of %zu + %zu bytes",
                hlen, dlen);
        rc = r.status;
    }
    MP_EXPECT(rc == 0, "raw send of %zu + %zu bytes: %d", hlen, dlen, rc);
}

static size_t svd_base(void)
{
    for (size_t i = 0;; i++) {
        pami_protocol_info_t info;
        MP_EXPECT(pami_protocol_query(job.client, i, &info) == PAMI_SUCCESS,
                  "no svd protocol on the client");
        if (strcmp(info.name, "svd") == 0)
            return info.dispatch_base;
    }
}

static uint64_t svd_stat(const char *name)
{
    pami_protocol_stat_t st[64];
    size_t               n = 0;
    MP_CHECK(pami_protocol_stats(job.ctx[0], "svd", st, 64, &n));
    for (size_t i = 0; i < n && i < 64; i++)
        if (strcmp(st[i].name, name) == 0)
            return st[i].value;
    mp_fail("svd has no counter %s", name);
    return 0;
}

static void test_wire(void)
{
    pami_task_t to   = mp_peer(&job, 1);
    pami_task_t from = mp_peer(&job, job.size - 1);
    pami_context_stats_t s0 = stats();
    uint64_t drop0 = svd_stat("drop_bad");
    /* Cleared before anything here advances: the raw sends below advance
     * while they wait for room, and the peer's genuine message may land
     * then (with the shared-memory queues it often does). */
    memset(sink.buf, 0, LARGE);
    mp_sync(&job);

    /* A rendezvous request for our sink whose region has random key
     * bytes; without the CMA flag the target would use the key. */
    doc_mr_t m;
    memcpy(&m, &my_mr, sizeof(m));
    m.bytes = 4096;
    rnd_fill(m.rkey, m.rkey_len);
    doc_rts_t rts = {.version = 1, .dispatch = ID_SINK, .bytes = 4096,
                     .base = m.base};
    memcpy(&rts.mr, &m, sizeof(m));
    pami_am_hdr_t am = {.origin_task = job.me, .dispatch = PAMI_DISPATCH_RNDV,
                        .origin_ctx = 0, .flags = PAMI_AM_FLAG_ACK};
    uint64_t cookie = rnd();
    uint8_t  hdr[sizeof(am) + sizeof(cookie) + sizeof(rts)];
    memcpy(hdr, &am, sizeof(am));
    memcpy(hdr + sizeof(am), &cookie, sizeof(cookie));
    memcpy(hdr + sizeof(am) + sizeof(cookie), &rts, sizeof(rts));
    raw_send(to, hdr, sizeof(hdr), NULL, 0);

    /* An SVD NOTIFY of the GET kind from us as the owner, DIRECT to the
     * target, whose source region has random key bytes. */
    svd_notify_hdr_t n;
    memset(&n, 0, sizeof(n));
    n.version       = SVD_WIRE_VERSION;
    n.type          = SVD_PKT_NOTIFY;
    n.htype         = PAMI_SVD_HEADER_GET;
    n.sched         = PAMI_SVD_SCHEDULE_DIRECT;
    n.fanout        = 1;
    n.key           = 0x5eed;
    n.owner         = job.me;
    n.ntasks        = 1;
    n.entry_version = 1;
    n.rec_len       = 4096;
    n.ready         = 4096;
    memcpy(&m, &my_mr, sizeof(m));
    rnd_fill(m.rkey, m.rkey_len);
    memcpy(&n.src, &m, sizeof(m));
    /* The user list: the target's id and its (here unknown) tag. */
    uint32_t target[3] = {to, 0, 0};
    uint8_t  nh[sizeof(am) + sizeof(n)];
    am.dispatch = (uint16_t)(svd_base() + SVD_PKT_NOTIFY);
    am.flags    = 0;
    memcpy(nh, &am, sizeof(am));
    memcpy(nh + sizeof(am), &n, sizeof(n));
    raw_send(to, nh, sizeof(nh), target, sizeof(target));

    /* Both drops happen in order before our marker, a genuine large
     * message, is handled; the request's answer is an ack nobody waits
     * for, dropped here. */
    rma_fill(region, 0, REGION, rma_seed(job.me, 7));
    pami_send_t big = {.send = {.dest = mp_ep(&job, to, 0),
                                .dispatch = ID_SINK, .data = region,
                                .data_len = REGION}};
    MP_CHECK(pami_send(job.ctx[0], &big));
    MP_WAIT(&job, job.ctx[0], sink.done == 1, MP_WAIT_S,
            "the genuine message after the forged ones: %u calls, %u done",
            sink.calls, sink.done);
    MP_EXPECT(sink.calls == 1 && sink.bytes == REGION,
              "the sink was called %u times (last %zu bytes): the forged "
              "request reached it", sink.calls, sink.bytes);
    long bad = rma_check(sink.buf, 0, REGION, rma_seed(from, 7));
    MP_EXPECT(bad < 0, "large message differs at byte %ld", bad);
    mp_sync(&job);

    pami_context_stats_t s1 = stats();
    MP_EXPECT(s1.bad_regions >= s0.bad_regions + 1,
              "bad_regions %llu -> %llu: the forged request's region was not "
              "counted", (unsigned long long)s0.bad_regions,
              (unsigned long long)s1.bad_regions);
    /* One forged request dropped here, one stray ack dropped here. */
    MP_EXPECT(s1.dropped_malformed == s0.dropped_malformed + 2,
              "dropped_malformed %llu -> %llu, expected +2",
              (unsigned long long)s0.dropped_malformed,
              (unsigned long long)s1.dropped_malformed);
    uint64_t drop1 = svd_stat("drop_bad");
    MP_EXPECT(drop1 == drop0 + 1, "svd drop_bad %llu -> %llu, expected +1",
              (unsigned long long)drop0, (unsigned long long)drop1);
}

int main(int argc, char **argv)
{
    mp_init(&job, "rma_forge", &argc, argv, NULL, 1, false);
    const char *mode = argc > 1 ? argv[1] : "all";
    bool all = strcmp(mode, "all") == 0;
    MP_EXPECT(all || strcmp(mode, "local") == 0 || strcmp(mode, "wire") == 0,
              "unknown mode %s", mode);
    MP_EXPECT(job.size >= 2, "needs 2 tasks or more");
    rma_xchg_init(&job);
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_SINK, on_sink, NULL, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));

    region   = rma_alloc(REGION);
    sink.buf = rma_alloc(LARGE);
    mrs      = calloc(job.size, sizeof(*mrs));
    MP_EXPECT(mrs != NULL, "out of memory");
    memset(region, 0, REGION);
    MP_CHECK(pami_memregion_create(job.ctx[0], region, REGION, &my_mr));
    rma_exchange(&job, &my_mr, region, REGION, mrs);
    rnd_state ^= (uint64_t)job.me << 32;

    if (all || strcmp(mode, "local") == 0)
        test_local();
    if (all || strcmp(mode, "wire") == 0)
        test_wire();

    mp_sync(&job);
    MP_CHECK(pami_memregion_destroy(job.ctx[0], &my_mr));
    MP_CHECK(pami_client_destroy(&job.client));
    free(mrs);
    free(sink.buf);
    free(region);
    printf("rma_forge %s: task %u ok\n", mode, job.me);
    return 0;
}
