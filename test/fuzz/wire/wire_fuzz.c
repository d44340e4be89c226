/*
 * The wire fuzzer: two tasks under pamirun, task 0 the attacker, task 1
 * the target. The attacker sends seeded, field-mutated packets of every
 * built-in protocol through real UCX: the core's AM header (user ids,
 * reserved ids, the packed form), acks, core barrier messages, rendezvous
 * requests (with and without a sealed region), barrier packets, every SVD
 * packet type, collectives headers and the shm barrier's announcements.
 * Then both check that the target still serves correct traffic (messages
 * eager and rendezvous, verified; a barrier of packets and one of shared
 * memory; an allreduce) and that its drop counters rose for each family.
 *
 * White-box: core packets go straight to the transport (their ids are
 * the core's own), protocol packets through pami_test_send_raw.
 *
 *   wire_fuzz [--seed=N] [--packets=N] [--no-key-bytes]
 *
 * The seed is printed first; the same seed sends the same packets.
 * --no-key-bytes leaves the packed remote-key bytes of regions alone.
 */
#include <errno.h>

#include "../../mp/mp_util.h"

#include "internal.h"
#include "pami_barrier.h"
#include "pami_collectives.h"
#include "pami_svd.h"
#include "bp_wire.h"
#include "coll.h"
#include "svd_wire.h"
#include "raw_send.h"

#define ID_CHECK 7   /* correct traffic and the attacker's "done" */
#define ID_FUZZ  8   /* the user id forged messages aim at */
#define MAGIC    0x57465a5au
#define CHECK_MSGS 64
#define LAND_MAX ((size_t)1 << 20) /* larger forged payloads: discarded */

/* F_RMA and the rendezvous request served by its origin come only with
 * --all-families: they change what a seed sends, and the fixed seeds of
 * the suite must keep sending what found their defects. */
enum { F_AM, F_PACKED, F_ACK, F_BAR, F_RNDV, F_BP, F_SVD, F_COLL, F_SHMB,
       F_CHUNK, F_WRITE, F_RMA, F_COUNT };
static const char *const fname[F_COUNT] = {
    "am", "packed", "ack", "core-barrier", "rendezvous", "barrier_packets",
    "svd", "collectives", "shm_barrier", "rendezvous chunks",
    "rendezvous split read", "owner's path"};
static bool all_families;
static int  families = F_RMA; /* F_COUNT with --all-families */

typedef struct {
    uint32_t magic;
    uint32_t phase;   /* PH_* */
    uint32_t seq;
    uint32_t len;
    uint64_t sent[F_COUNT];
} check_hdr_t;
enum { PH_DONE = 1, PH_CHECK = 2 };

/* ---- seeded randomness ---- */

static uint64_t rng;

static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rnd_below(uint64_t n) { return n ? rnd() % n : 0; }

/* ---- packets and their mutation ---- */

typedef struct {
    uint16_t off, size; /* a field of the template: bytes 1, 2, 4 or 8 */
} field_t;

#define PKT_MAX 2048
typedef struct {
    uint8_t hdr[PKT_MAX];
    size_t  hlen;
    uint8_t data[PKT_MAX];
    size_t  dlen;
    field_t fields[48];
    size_t  nfields;
    size_t  key_off, key_len; /* packed key bytes in hdr, 0 if none */
} pkt_t;

static void add_field(pkt_t *p, size_t off, size_t size)
{
    p->fields[p->nfields++] = (field_t){(uint16_t)off, (uint16_t)size};
}

static uint64_t get_field(const pkt_t *p, field_t f)
{
    uint64_t v = 0;
    memcpy(&v, p->hdr + f.off, f.size);
    return v;
}

static void set_field(pkt_t *p, field_t f, uint64_t v)
{
    memcpy(p->hdr + f.off, &v, f.size);
}

/* A value a decoder may not expect: an edge of the field's range, a
 * neighbour of the current value, a random one, or a bit flipped. */
static uint64_t mutant(uint64_t cur, size_t size)
{
    uint64_t max = size == 8 ? UINT64_MAX : (1ull << (8 * size)) - 1;
    static const uint64_t edge[] = {0, 1, 2, 7, 8, 255, 256, 1023, 1024,
                                    65535, 65536, 0x7fffffff, 0x80000000u,
                                    0xffffffffu, 1ull << 32, 1ull << 40,
                                    1ull << 62, 1ull << 63};
    switch (rnd_below(5)) {
    case 0:  return edge[rnd_below(sizeof(edge) / sizeof(edge[0]))] & max;
    case 1:  return max - rnd_below(3);
    case 2:  return (cur + 1 - 2 * rnd_below(2) * (1 + rnd_below(4))) & max;
    case 3:  return rnd() & max;
    default: return cur ^ (1ull << rnd_below(8 * size));
    }
}

static bool key_bytes = true;

/* One to three fields changed; sometimes a random byte, the length cut or
 * grown. Returns how many changes it made (at least one). */
static void mutate(pkt_t *p)
{
    unsigned n = 1 + (unsigned)rnd_below(3);
    for (unsigned i = 0; i < n; i++) {
        field_t f = p->fields[rnd_below(p->nfields)];
        set_field(p, f, mutant(get_field(p, f), f.size));
    }
    if (rnd_below(8) == 0 && p->hlen > 0) {
        size_t at = rnd_below(p->hlen);
        bool in_key = p->key_len > 0 && at >= p->key_off &&
                      at < p->key_off + p->key_len;
        if (key_bytes || !in_key)
            p->hdr[at] ^= (uint8_t)(1 + rnd_below(255));
    }
    if (key_bytes && p->key_len > 0 && rnd_below(8) == 0)
        for (size_t i = 0; i < p->key_len; i++)
            p->hdr[p->key_off + i] = (uint8_t)rnd();
    switch (rnd_below(16)) {
    case 0:
        p->hlen = rnd_below(p->hlen + 1);
        break;
    case 1: {
        size_t grow = 1 + rnd_below(64);
        if (p->hlen + grow <= PKT_MAX) {
            for (size_t i = 0; i < grow; i++)
                p->hdr[p->hlen + i] = (uint8_t)rnd();
            p->hlen += grow;
        }
        break;
    }
    case 2:
        p->dlen = rnd_below(p->dlen + 64 < PKT_MAX ? p->dlen + 64 : PKT_MAX);
        break;
    default:
        break;
    }
}

/* ---- the two tasks ---- */

typedef struct {
    mp_job_t         job;
    pami_context_t   ctx;
    pami_task_t      me, peer;
    /* the target */
    atomic_bool      done;
    check_hdr_t      done_hdr;
    /* both: correct traffic */
    unsigned         check_next;   /* seq expected next */
    unsigned         check_ok;
    atomic_uint      sends_done;
    /* what the forged messages on ID_FUZZ did at the target */
    unsigned long    fuzz_seen, fuzz_landed;
    /* ids */
    size_t           bp_base, svd_base, coll_base, shmb_base;
} wf_t;

static void on_landed(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    (void)rc; /* a forged source address may fail the read: fine */
    free(cookie);
}

/* Forged user messages: read all of it, land what is not absurd. */
static void on_fuzz(pami_context_t ctx, void *cookie, const void *header,
                    size_t header_size, const void *data, size_t data_size,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx;
    (void)origin;
    wf_t *w = cookie;
    w->fuzz_seen++;
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < header_size; i++)
        sum ^= ((const uint8_t *)header)[i];
    if (data != NULL) {
        for (size_t i = 0; i < data_size; i++)
            sum ^= ((const uint8_t *)data)[i];
        return;
    }
    if (recv != NULL && data_size > 0 && data_size <= LAND_MAX) {
        void *buf = malloc(data_size);
        if (buf != NULL) {
            w->fuzz_landed++;
            recv->addr     = buf;
            recv->local_fn = on_landed;
            recv->cookie   = buf;
        }
    }
}

typedef struct {
    wf_t    *w;
    uint32_t seq;
    size_t   len;
    uint8_t *buf;
} landing_t;

static void check_one(wf_t *w, uint32_t seq, const void *buf, size_t len)
{
    MP_EXPECT(seq == w->check_next, "correct message %u arrived when %u was "
              "due", seq, w->check_next);
    long bad = mp_verify(buf, len, w->peer, seq, MAGIC);
    MP_EXPECT(bad < 0, "correct message %u of %zu bytes: byte %ld differs",
              seq, len, bad);
    w->check_next++;
    w->check_ok++;
}

static void on_check_landed(pami_context_t ctx, void *cookie,
                            pami_result_t rc)
{
    (void)ctx;
    landing_t *l = cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "correct message %u: %s", l->seq,
              pami_error_text(rc));
    check_one(l->w, l->seq, l->buf, l->len);
    free(l->buf);
    free(l);
}

static void on_check(pami_context_t ctx, void *cookie, const void *header,
                     size_t header_size, const void *data, size_t data_size,
                     pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx;
    (void)origin;
    wf_t       *w = cookie;
    check_hdr_t h;
    MP_EXPECT(header_size == sizeof(h), "a %zu-byte header on the check id",
              header_size);
    memcpy(&h, header, sizeof(h));
    MP_EXPECT(h.magic == MAGIC, "check message with magic 0x%x", h.magic);
    if (h.phase == PH_DONE) {
        w->done_hdr = h;
        atomic_store(&w->done, true);
        return;
    }
    MP_EXPECT(h.phase == PH_CHECK && h.len == data_size,
              "check message phase %u, %u bytes announced, %zu came",
              h.phase, h.len, data_size);
    if (data != NULL || data_size == 0) {
        check_one(w, h.seq, data, data_size);
        return;
    }
    landing_t *l = malloc(sizeof(*l));
    MP_EXPECT(l != NULL, "out of memory");
    *l = (landing_t){w, h.seq, data_size, malloc(data_size)};
    MP_EXPECT(l->buf != NULL, "out of memory");
    recv->addr     = l->buf;
    recv->local_fn = on_check_landed;
    recv->cookie   = l;
}

/* ---- sending forged packets ---- */

static struct pami_context *core(wf_t *w) { return w->ctx; }

/* Straight to the transport: the AM header is whatever the packet says. */
static void send_core(wf_t *w, const pkt_t *p)
{
    raw_send(&w->job, w->ctx, w->peer, p->hdr, p->hlen, p->data, p->dlen);
}

static void send_protocol(wf_t *w, size_t id, const pkt_t *p)
{
    pami_send_immediate_t s = {
        .dest = mp_ep(&w->job, w->peer, 0), .dispatch = id,
        .header = p->hdr, .header_len = p->hlen,
        .data = p->dlen ? p->data : NULL, .data_len = p->dlen};
    double deadline = mp_now() + MP_EAGAIN_S;
    for (;;) {
        pami_result_t rc = pami_test_send_raw(w->ctx, &s);
        /* A forged header may be refused by the sender's own checks:
         * that is a packet that never left, not a failure. */
        if (rc == PAMI_SUCCESS || rc == PAMI_INVAL)
            return;
        MP_EXPECT(rc == PAMI_EAGAIN, "raw protocol send: %s",
                  pami_error_text(rc));
        MP_EXPECT(mp_now() < deadline, "raw protocol send kept failing");
        pami_context_advance(w->ctx, 16);
    }
}

static void am_header(pkt_t *p, uint32_t task, uint16_t dispatch,
                      uint8_t flags)
{
    pami_am_hdr_t h = {.origin_task = task, .dispatch = dispatch,
                       .origin_ctx = 0, .flags = flags};
    memcpy(p->hdr, &h, sizeof(h));
    p->hlen = sizeof(h);
    add_field(p, offsetof(pami_am_hdr_t, origin_task), 4);
    add_field(p, offsetof(pami_am_hdr_t, dispatch), 2);
    add_field(p, offsetof(pami_am_hdr_t, origin_ctx), 1);
    add_field(p, offsetof(pami_am_hdr_t, flags), 1);
}

static void append(pkt_t *p, const void *b, size_t n)
{
    memcpy(p->hdr + p->hlen, b, n);
    p->hlen += n;
}

/* A forged id must not land on the test's own ids (a forged "done" or
 * sync message would test the test, not pami). */
static void keep_off_test_ids(pkt_t *p, size_t off, size_t size)
{
    uint64_t id = 0;
    memcpy(&id, p->hdr + off, size);
    if (id == ID_CHECK || id == MP_ID_SYNC) {
        id = ID_FUZZ;
        memcpy(p->hdr + off, &id, size);
    }
}

static void fill(uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)rnd();
}

static uint8_t          src_buf[4096];   /* what forged requests point at */
static pami_memregion_t src_mr;

static void region_fields(pkt_t *p, size_t at)
{
    /* docs/protocols/rma.md, version 2 */
    static const uint8_t off[] = {0, 4, 6, 8, 12, 14, 16, 20, 24, 32, 40};
    static const uint8_t len[] = {4, 2, 2, 4, 2, 2, 4, 4, 8, 8, 8};
    for (size_t i = 0; i < sizeof(off); i++)
        add_field(p, at + off[i], len[i]);
    p->key_off = at + 48;
    p->key_len = PAMI_MEMREGION_SIZE - 48;
}

/* A request (after the AM header and cookie) the origin serves itself,
 * with the first chunk as the AM data (MSG, DATA), now and then with
 * NOACK (the whole payload there, no answer wanted), or announcing more
 * than a packet holds (docs/protocols/rendezvous.md). */
static void build_rts_served(wf_t *w, pkt_t *p)
{
    (void)w;
    pami_rndv_rts_t r = {.version = RNDV_VERSION, .dispatch = ID_FUZZ,
                         .bytes = 1 + rnd_below(PKT_MAX),
                         .flags = RNDV_FLAG_MSG | RNDV_FLAG_DATA};
    if (rnd_below(2))
        r.flags |= RNDV_FLAG_NOACK;
    p->dlen = r.bytes;
    if (rnd_below(8) == 0)
        r.bytes = rnd_below(2) ? RNDV_MSG_CHUNK + 1 : 1ull << 30;
    fill(p->data, p->dlen);
    size_t at = p->hlen;
    append(p, &r, sizeof(r));
    fill(p->hdr + p->hlen, 16);
    p->hlen += 16;
    add_field(p, 8, 8);
    add_field(p, at + offsetof(pami_rndv_rts_t, version), 4);
    add_field(p, at + offsetof(pami_rndv_rts_t, dispatch), 4);
    add_field(p, at + offsetof(pami_rndv_rts_t, bytes), 8);
    add_field(p, at + offsetof(pami_rndv_rts_t, flags), 4);
    add_field(p, at + offsetof(pami_rndv_rts_t, reserved), 4);
    add_field(p, at + offsetof(pami_rndv_rts_t, base), 8);
    add_field(p, at + offsetof(pami_rndv_rts_t, mr), 8);
}

/* A cookie the target's own requests may have (small index and
 * generation), or any. */
static uint64_t guess_cookie(void)
{
    return rnd_below(2) ? rnd_below(64) << 32 | rnd_below(128) : rnd();
}

/* Region generations of the owner's path's requests get their top bit
 * (attack()): no slot of the target reaches it, so a forged put never
 * lands in memory the checks use. */
#define RMA_GEN_FORGED 0x80000000u

static size_t rma_msg(uint8_t *at, uint8_t type, uint64_t cookie,
                      uint64_t bytes, const uint8_t *data, size_t dlen)
{
    pami_rma_msg_t m = {.version = PAMI_RMA_MSG_VERSION, .type = type,
                        .cookie = cookie, .id = (uint32_t)rnd_below(8),
                        .generation = RMA_GEN_FORGED |
                                      (uint32_t)rnd_below(4),
                        .offset = rnd_below(4) * 1024, .bytes = bytes};
    memcpy(at, &m, sizeof(m));
    if (dlen > 0)
        memcpy(at + sizeof(m), data, dlen);
    return sizeof(m) + dlen;
}

/* The owner's path (docs/protocols/rma.md): requests to the target for
 * regions it does not have; answers (REPLY, PUT_DONE, REPLIES) for
 * operations of its that are not waiting, to guessed cookies. */
static void build_rma(wf_t *w, pkt_t *p)
{
    static const uint8_t types[] = {
        PAMI_RMA_MSG_PUT,   PAMI_RMA_MSG_GET,      PAMI_RMA_MSG_ATOMIC,
        PAMI_RMA_MSG_FENCE, PAMI_RMA_MSG_REPLY,    PAMI_RMA_MSG_PUT_DONE,
        PAMI_RMA_MSG_REPLIES, PAMI_RMA_MSG_REQUESTS};
    uint8_t type = types[rnd_below(sizeof(types))];
    am_header(p, w->me, PAMI_DISPATCH_RMA, 0);
    uint8_t junk[256];
    fill(junk, sizeof(junk));
    uint64_t bytes = 0;
    switch (type) {
    case PAMI_RMA_MSG_PUT:
        bytes   = rnd_below(PKT_MAX);
        p->dlen = bytes;
        fill(p->data, p->dlen);
        break;
    case PAMI_RMA_MSG_GET:
        bytes = 1 + rnd_below(1 << 20);
        break;
    case PAMI_RMA_MSG_ATOMIC:
        bytes = rnd_below(2) ? 8 : 4;
        break;
    case PAMI_RMA_MSG_REPLY:
        bytes   = rnd_below(2) ? 0 : 1 + rnd_below(256);
        p->dlen = bytes;
        memcpy(p->data, junk, p->dlen);
        break;
    case PAMI_RMA_MSG_PUT_DONE: {
        size_t n = 1 + rnd_below(PAMI_RMA_PUT_DONE_MAX);
        for (size_t i = 0; i < n; i++) {
            uint64_t c = guess_cookie();
            memcpy(p->data + 8 * i, &c, sizeof(c));
        }
        bytes = p->dlen = 8 * n;
        break;
    }
    default: { /* REPLIES, REQUESTS: two to four messages inside */
        size_t n = 2 + rnd_below(3);
        for (size_t i = 0; i < n && p->dlen + 64 + 256 <= PKT_MAX; i++) {
            uint8_t t = type == PAMI_RMA_MSG_REPLIES ? PAMI_RMA_MSG_REPLY
                        : rnd_below(2)               ? PAMI_RMA_MSG_PUT
                                                     : PAMI_RMA_MSG_GET;
            size_t  d = t == PAMI_RMA_MSG_GET ? 0 : rnd_below(256);
            p->dlen += rma_msg(p->data + p->dlen, t, guess_cookie(),
                               t == PAMI_RMA_MSG_GET ? 1 + rnd_below(4096)
                                                     : d,
                               junk, d);
        }
        bytes = p->dlen;
        break;
    }
    }
    rma_msg(p->hdr + p->hlen,
            type, type == PAMI_RMA_MSG_REPLY ? guess_cookie() : rnd(),
            bytes, NULL, 0);
    if (type == PAMI_RMA_MSG_ATOMIC) {
        p->hdr[p->hlen + 2] = (uint8_t)rnd_below(4);
        p->hdr[p->hlen + 3] = (uint8_t)bytes;
    }
    static const uint8_t off[] = {0, 1, 2, 3, 4, 8, 16, 20, 24, 28, 32, 40,
                                  48, 56};
    static const uint8_t len[] = {1, 1, 1, 1, 4, 8, 4, 4, 4, 4, 8, 8, 8, 8};
    for (size_t i = 0; i < sizeof(off); i++)
        add_field(p, p->hlen + off[i], len[i]);
    p->hlen += sizeof(pami_rma_msg_t);
}

static void build(wf_t *w, int fam, pkt_t *p)
{
    memset(p, 0, sizeof(*p));
    uint64_t cookie = rnd();
    switch (fam) {
    case F_AM:
        am_header(p, w->me, ID_FUZZ, rnd_below(2) ? PAMI_AM_FLAG_ACK : 0);
        if (p->hdr[7] & PAMI_AM_FLAG_ACK) {
            append(p, &cookie, sizeof(cookie));
            add_field(p, sizeof(pami_am_hdr_t), 8);
        }
        fill(p->hdr + p->hlen, 24);
        p->hlen += 24;
        p->dlen = rnd_below(200);
        fill(p->data, p->dlen);
        break;
    case F_PACKED: {
        /* hdr empty; everything in the payload */
        pami_am_hdr_t h = {.origin_task = w->me, .dispatch = ID_FUZZ,
                           .flags = PAMI_AM_FLAG_PACKED};
        uint16_t uhlen = (uint16_t)rnd_below(40);
        memcpy(p->hdr, &h, sizeof(h));
        memcpy(p->hdr + sizeof(h), &uhlen, sizeof(uhlen));
        p->hlen = sizeof(h) + sizeof(uhlen) + uhlen + rnd_below(100);
        fill(p->hdr + sizeof(h) + sizeof(uhlen), p->hlen - 10);
        add_field(p, 0, 4);
        add_field(p, 4, 2);
        add_field(p, 6, 1);
        add_field(p, 7, 1);
        add_field(p, 8, 2);
        break;
    }
    case F_ACK: {
        am_header(p, w->me, PAMI_DISPATCH_ACK, 0);
        pami_ack_t a = {.cookie = cookie, .result = (int32_t)rnd_below(20)};
        append(p, &a, sizeof(a));
        add_field(p, 8, 8);
        add_field(p, 16, 4);
        add_field(p, 20, 4);
        break;
    }
    case F_BAR: {
        am_header(p, w->me, PAMI_DISPATCH_BARRIER, 0);
        pami_barrier_msg_t b = {.epoch = core(w)->bar_epoch +
                                         (uint32_t)rnd_below(3),
                                .round = (uint32_t)rnd_below(2)};
        append(p, &b, sizeof(b));
        add_field(p, 8, 4);
        add_field(p, 12, 4);
        break;
    }
    case F_RNDV: {
        am_header(p, w->me, PAMI_DISPATCH_RNDV, PAMI_AM_FLAG_ACK);
        append(p, &cookie, sizeof(cookie));
        if (all_families && rnd_below(3) == 0) {
            build_rts_served(w, p);
            break;
        }
        bool cma = rnd_below(2);
        /* Large messages reach protocols too: half aim at one. */
        size_t ids[] = {w->bp_base, w->coll_base, w->shmb_base,
                        w->svd_base + rnd_below(SVD_PKT_COUNT)};
        uint32_t id = (uint32_t)(rnd_below(2) ? ID_FUZZ : ids[rnd_below(4)]);
        pami_rndv_rts_t r = {.version = RNDV_VERSION, .dispatch = id,
                             .bytes = 1 + rnd_below(sizeof(src_buf)),
                             .flags = cma ? RNDV_FLAG_CMA : 0,
                             .base = (uint64_t)(uintptr_t)src_buf};
        if (!cma) {
            r.bytes = sizeof(src_buf);
            r.mr    = src_mr;
        }
        size_t at = p->hlen;
        if (id == w->coll_base && rnd_below(4) == 0) {
            /* A payload as large as an edge value, announced alike in
             * the request and in the collectives header: what the
             * target keeps for a geometry it does not know yet. */
            r.bytes = mutant(r.bytes, 8);
            r.flags = RNDV_FLAG_CMA;
        }
        append(p, &r, sizeof(r));
        if (id == w->coll_base) {
            uint32_t   seq = (uint32_t)rnd_below(4);
            coll_hdr_t h = {.version = COLL_WIRE_VERSION,
                            .type = COLL_MSG_DATA, .kind = PAMI_XFER_ALLREDUCE,
                            .connid = (uint16_t)(seq % PAMI_CONNID_BUFFER),
                            .geom_id = 1 + (uint32_t)rnd_below(4), .seq = seq,
                            .total = r.bytes};
            append(p, &h, sizeof(h));
        } else {
            fill(p->hdr + p->hlen, 16);
            p->hlen += 16;
        }
        add_field(p, 8, 8);
        add_field(p, at + offsetof(pami_rndv_rts_t, version), 4);
        add_field(p, at + offsetof(pami_rndv_rts_t, dispatch), 4);
        add_field(p, at + offsetof(pami_rndv_rts_t, bytes), 8);
        add_field(p, at + offsetof(pami_rndv_rts_t, flags), 4);
        add_field(p, at + offsetof(pami_rndv_rts_t, reserved), 4);
        add_field(p, at + offsetof(pami_rndv_rts_t, base), 8);
        if (!cma)
            region_fields(p, at + offsetof(pami_rndv_rts_t, mr));
        break;
    }
    case F_CHUNK: {
        /* The rendezvous served by its origin: a FETCH for a send the
         * target never made, or a DATA for a transfer it is not running
         * (docs/protocols/rendezvous.md). */
        am_header(p, w->me, PAMI_DISPATCH_RNDV_CHUNK, 0);
        pami_rndv_chunk_t c = {
            .version = RNDV_VERSION,
            .type = (uint32_t)(RNDV_CHUNK_FETCH + rnd_below(2)),
            .send_cookie = cookie, .recv_cookie = rnd(),
            .offset = rnd_below(4) * 256 * 1024,
            .bytes = 1 + rnd_below(PKT_MAX)};
        if (c.type == RNDV_CHUNK_DATA && rnd_below(4) == 0)
            c.result = (int32_t)rnd_below(20);
        append(p, &c, sizeof(c));
        static const uint8_t off[] = {0, 4, 8, 12, 16, 24, 32, 40};
        static const uint8_t len[] = {4, 4, 4, 4, 8, 8, 8, 8};
        for (size_t i = 0; i < sizeof(off); i++)
            add_field(p, sizeof(pami_am_hdr_t) + off[i], len[i]);
        if (c.type == RNDV_CHUNK_DATA && c.result == 0) {
            p->dlen = c.bytes;
            fill(p->data, p->dlen);
        }
        break;
    }
    case F_WRITE: {
        /* The split read on one node: an ASK to write a send the target
         * never made into the attacker, or a DONE for a transfer it is
         * not running (docs/protocols/rendezvous.md). */
        am_header(p, w->me, PAMI_DISPATCH_RNDV_WRITE, 0);
        pami_rndv_write_t m = {
            .version = RNDV_VERSION,
            .type = (uint32_t)(RNDV_WRITE_ASK + rnd_below(2)),
            .send_cookie = cookie, .recv_cookie = rnd(),
            .offset = rnd_below(4) << 20, .bytes = 1 + rnd_below(8 << 20),
            .dest = rnd()};
        if (m.type == RNDV_WRITE_DONE && rnd_below(4) == 0)
            m.result = (int32_t)rnd_below(20);
        append(p, &m, sizeof(m));
        static const uint8_t off[] = {0, 4, 8, 12, 16, 24, 32, 40, 48};
        static const uint8_t len[] = {4, 4, 4, 4, 8, 8, 8, 8, 8};
        for (size_t i = 0; i < sizeof(off); i++)
            add_field(p, sizeof(pami_am_hdr_t) + off[i], len[i]);
        break;
    }
    case F_BP: {
        uint64_t g = bp_group_seed(0, 2) + bp_group_term(0) +
                     bp_group_term(1);
        bp_packet_t b = {.version = BP_VERSION, .type = BP_TYPE_ARRIVE,
                         .size = 2, .epoch = (uint32_t)rnd_below(4),
                         .group = rnd_below(2) ? g : rnd()};
        append(p, &b, sizeof(b));
        add_field(p, offsetof(bp_packet_t, version), 1);
        add_field(p, offsetof(bp_packet_t, type), 1);
        add_field(p, offsetof(bp_packet_t, reserved0), 2);
        add_field(p, offsetof(bp_packet_t, size), 4);
        add_field(p, offsetof(bp_packet_t, epoch), 4);
        add_field(p, offsetof(bp_packet_t, reserved1), 4);
        add_field(p, offsetof(bp_packet_t, group), 8);
        break;
    }
    case F_SVD:
        /* built by build_svd: the type picks the id */
        break;
    case F_RMA:
        build_rma(w, p);
        break;
    case F_COLL: {
        uint32_t seq = (uint32_t)rnd_below(4);
        coll_hdr_t h = {.version = COLL_WIRE_VERSION, .type = COLL_MSG_DATA,
                        .kind = PAMI_XFER_ALLREDUCE,
                        .connid = (uint16_t)(seq % PAMI_CONNID_BUFFER),
                        .geom_id = 1 + (uint32_t)rnd_below(4), .seq = seq,
                        .src_rank = 0, .total = 64};
        if (rnd_below(4) == 0) {
            h.flags = COLL_FLAG_CREATE;
            h.kind  = COLL_KIND_CREATE;
        }
        append(p, &h, sizeof(h));
        static const uint8_t off[] = {0, 1, 2, 3, 4, 6, 8, 12, 16, 20, 24,
                                      28, 36};
        static const uint8_t len[] = {1, 1, 1, 1, 2, 2, 4, 4, 4, 4, 4, 8, 8};
        for (size_t i = 0; i < sizeof(off); i++)
            add_field(p, off[i], len[i]);
        p->dlen = rnd_below(65);
        fill(p->data, p->dlen);
        break;
    }
    case F_SHMB: {
        uint8_t a[16] = {1, 1, 0, 0};
        uint32_t v[3] = {w->me, 1, 0};
        memcpy(a + 4, v, sizeof(v));
        append(p, a, sizeof(a));
        for (size_t i = 0; i < 4; i++)
            add_field(p, i, 1);
        add_field(p, 4, 4);
        add_field(p, 8, 4);
        add_field(p, 12, 4);
        break;
    }
    }
}

/* An SVD packet of a random type, valid before mutation. */
static unsigned build_svd(wf_t *w, pkt_t *p)
{
    memset(p, 0, sizeof(*p));
    unsigned type = (unsigned)rnd_below(SVD_PKT_COUNT);
    uint64_t key = rnd_below(4), version = 1 + rnd_below(3);
    size_t   hsize = 0;
    switch (type) {
    case SVD_PKT_FETCH:
    case SVD_PKT_RELEASE:    hsize = 16; break;
    case SVD_PKT_FETCHED:
    case SVD_PKT_ACK:        hsize = 24; break;
    case SVD_PKT_CHUNK:      hsize = 32; break;
    case SVD_PKT_ENTRY:      hsize = sizeof(svd_entry_hdr_t); break;
    case SVD_PKT_NOTIFY:     hsize = sizeof(svd_notify_hdr_t); break;
    }
    p->hdr[0] = SVD_WIRE_VERSION;
    p->hdr[1] = (uint8_t)type;
    p->hlen   = hsize;
    add_field(p, 0, 1);
    add_field(p, 1, 1);
    add_field(p, 2, 1);
    add_field(p, 3, 1);
    add_field(p, 4, 4);
    add_field(p, 8, 8);
    if (hsize >= 24)
        add_field(p, 16, 8);
    if (hsize >= 32)
        add_field(p, 24, 8);
    memcpy(p->hdr + 8, &key, sizeof(key));
    svd_record_hdr_t rec = {.version = SVD_WIRE_VERSION,
                            .entry_version = version, .data_size = 8};
    size_t rlen = sizeof(rec) + 8;
    if (type == SVD_PKT_NOTIFY) {
        svd_notify_hdr_t h = {.version = SVD_WIRE_VERSION, .type = type,
                              .htype = PAMI_SVD_HEADER_INLINE,
                              .sched = PAMI_SVD_SCHEDULE_DIRECT,
                              .fanout = 2, .key = key, .owner = w->me,
                              .ntasks = 1, .entry_version = version,
                              .rec_len = rlen};
        if (rnd_below(3) == 0) {
            h.htype = PAMI_SVD_HEADER_GET;
            h.sched = (uint8_t)(1 + rnd_below(3));
            h.chunk = 4096;
            h.ready = rlen;
            h.src   = src_mr;
        }
        memcpy(p->hdr, &h, sizeof(h));
        static const uint8_t off[] = {2, 3, 4, 16, 20, 24, 32, 40, 48};
        static const uint8_t len[] = {1, 1, 2, 4, 4, 8, 8, 8, 8};
        for (size_t i = 0; i < sizeof(off); i++)
            add_field(p, off[i], len[i]);
        region_fields(p, offsetof(svd_notify_hdr_t, src));
        /* The user and a guess of its tag (the owner's MAC under a
         * secret only the user and the owner's SVD know). */
        uint32_t user = w->peer;
        uint64_t tag  = rnd();
        memcpy(p->data, &user, sizeof(user));
        memcpy(p->data + sizeof(user), &tag, sizeof(tag));
        p->dlen = sizeof(user) + sizeof(tag);
        if (h.htype == PAMI_SVD_HEADER_INLINE) {
            memcpy(p->data + p->dlen, &rec, sizeof(rec));
            p->dlen += rlen;
        }
    } else if (type == SVD_PKT_ENTRY) {
        svd_entry_hdr_t e = {.version = SVD_WIRE_VERSION, .type = type,
                             .status = SVD_ST_OK, .req = (uint32_t)rnd(),
                             .key = key, .entry_version = version,
                             .rec_len = rlen};
        memcpy(p->hdr, &e, sizeof(e));
        add_field(p, 24, 8);
        region_fields(p, offsetof(svd_entry_hdr_t, src));
        memcpy(p->data, &rec, sizeof(rec));
        p->dlen = rlen;
    }
    return type;
}

static void attack(wf_t *w, unsigned long packets, uint64_t sent[F_COUNT])
{
    for (unsigned long i = 0; i < packets; i++) {
        int   fam = (int)(i % (unsigned long)families);
        pkt_t p;
        unsigned svd_type = 0;
        if (fam == F_SVD)
            svd_type = build_svd(w, &p);
        else
            build(w, fam, &p);
        mutate(&p);
        switch (fam) {
        case F_AM:
        case F_ACK:
        case F_BAR:
            keep_off_test_ids(&p, offsetof(pami_am_hdr_t, dispatch), 2);
            send_core(w, &p);
            break;
        case F_PACKED: {
            keep_off_test_ids(&p, offsetof(pami_am_hdr_t, dispatch), 2);
            pkt_t q = p; /* the packed form is all payload */
            memcpy(q.data, p.hdr, p.hlen);
            q.dlen = p.hlen;
            q.hlen = 0;
            send_core(w, &q);
            break;
        }
        case F_CHUNK:
        case F_WRITE:
            keep_off_test_ids(&p, offsetof(pami_am_hdr_t, dispatch), 2);
            send_core(w, &p);
            break;
        case F_RMA: {
            keep_off_test_ids(&p, offsetof(pami_am_hdr_t, dispatch), 2);
            /* Whatever the mutation did: no live region of the target
             * (RMA_GEN_FORGED), and no HELP that would make the target
             * take and give back an eventfd counter of this process
             * (result, its descriptor, negative: malformed). */
            size_t body = sizeof(pami_am_hdr_t);
            if (p.hlen >= body + offsetof(pami_rma_msg_t, reserved))
                p.hdr[body + offsetof(pami_rma_msg_t, generation) + 3] |=
                    0x80;
            if (p.hlen >= body + offsetof(pami_rma_msg_t, cookie) &&
                p.hdr[body + 1] == PAMI_RMA_MSG_HELP)
                p.hdr[body + offsetof(pami_rma_msg_t, result) + 3] |= 0x80;
            send_core(w, &p);
            break;
        }
        case F_RNDV:
            keep_off_test_ids(&p, offsetof(pami_am_hdr_t, dispatch), 2);
            keep_off_test_ids(&p, 16 + offsetof(pami_rndv_rts_t, dispatch),
                              4);
            send_core(w, &p);
            break;
        case F_BP:
            send_protocol(w, w->bp_base, &p);
            break;
        case F_SVD:
            /* now and then on another type's id */
            send_protocol(w, w->svd_base + (rnd_below(8) == 0
                                                ? rnd_below(SVD_PKT_COUNT)
                                                : svd_type), &p);
            break;
        case F_COLL: {
            /* The world geometry (id 0) carries the checks' allreduce:
             * forged messages there would be data, not malformed. */
            uint32_t g;
            memcpy(&g, p.hdr + 8, sizeof(g));
            if (g == 0 && p.hlen >= 12) {
                g = 1;
                memcpy(p.hdr + 8, &g, sizeof(g));
            }
            send_protocol(w, w->coll_base, &p);
            break;
        }
        case F_SHMB:
            send_protocol(w, w->shmb_base, &p);
            break;
        }
        sent[fam]++;
        if (i % 32 == 31)
            pami_context_advance(w->ctx, 64);
    }
}

/* ---- counters ---- */

typedef struct {
    uint64_t v[F_COUNT];
} drops_t;

static uint64_t protocol_drops(wf_t *w, const char *name)
{
    pami_protocol_stat_t st[64];
    size_t n = 0;
    if (pami_protocol_stats(w->ctx, name, st, 64, &n) != PAMI_SUCCESS)
        return 0;
    uint64_t sum = 0;
    for (size_t i = 0; i < n && i < 64; i++)
        if (strstr(st[i].name, "drop") || strstr(st[i].name, "malformed") ||
            strstr(st[i].name, "bad_"))
            sum += st[i].value;
    return sum;
}

static void drops(wf_t *w, drops_t *d)
{
    pami_context_stats_t cs;
    MP_CHECK(pami_context_stats(w->ctx, &cs));
    uint64_t core_drops = cs.dropped_malformed + cs.dropped_unknown +
                          cs.bad_regions;
    memset(d, 0, sizeof(*d));
    /* The core's counters are shared by its families. */
    d->v[F_AM] = d->v[F_PACKED] = d->v[F_ACK] = d->v[F_BAR] =
        d->v[F_RNDV] = d->v[F_CHUNK] = d->v[F_WRITE] = d->v[F_RMA] =
            core_drops;
    d->v[F_BP]   = protocol_drops(w, "barrier_packets");
    d->v[F_SVD]  = protocol_drops(w, "svd");
    d->v[F_COLL] = protocol_drops(w, "collectives");
    /* The announcement id has a handler only with tasks on several nodes;
     * on one node the core drops them as for no handler. */
    d->v[F_SHMB] = protocol_drops(w, "shm_barrier") + cs.dropped_unknown;
}

/* ---- correct traffic ---- */

static void on_sent(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    wf_t *w = cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "correct send: %s", pami_error_text(rc));
    atomic_fetch_add(&w->sends_done, 1);
}

static void check_traffic(wf_t *w)
{
    static const size_t sizes[] = {0, 8, 1000, 70000, 300000};
    static uint8_t      bufs[CHECK_MSGS][300000 / 64 + 1];
    for (uint32_t seq = 0; seq < CHECK_MSGS; seq++) {
        size_t   len = sizes[seq % (sizeof(sizes) / sizeof(sizes[0]))];
        uint8_t *buf = len > sizeof(bufs[0]) ? malloc(len) : bufs[seq];
        MP_EXPECT(buf != NULL, "out of memory");
        mp_fill(buf, len, w->me, seq, MAGIC);
        check_hdr_t h = {.magic = MAGIC, .phase = PH_CHECK, .seq = seq,
                         .len = (uint32_t)len};
        pami_send_t s = {.send = {.dest = mp_ep(&w->job, w->peer, 0),
                                  .dispatch = ID_CHECK, .header = &h,
                                  .header_len = sizeof(h), .data = buf,
                                  .data_len = len},
                         .local_fn = on_sent, .cookie = w};
        MP_CHECK(pami_send(w->ctx, &s));
        /* pami_send copies the header; the data waits for local_fn. */
        MP_WAIT(&w->job, w->ctx, atomic_load(&w->sends_done) == seq + 1,
                MP_WAIT_S, "correct message %u to leave", seq);
        if (buf != bufs[seq])
            free(buf);
    }
    MP_WAIT(&w->job, w->ctx, w->check_ok == CHECK_MSGS, MP_WAIT_S,
            "%u of %d correct messages", w->check_ok, CHECK_MSGS);
}

/* Virtual memory of this process, kB: a forged size must not make the
 * target reserve memory no real message could need. */
static unsigned long vm_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char  line[256];
    unsigned long kb = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmSize: %lu kB", &kb) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return kb;
}

#define VM_GROWTH_MAX_KB (1024ul * 1024) /* 1 GiB */

/* State for the forged packets to meet: SVD entries owned by each task
 * (keys 0..3) and used by the other, and a geometry of both (id 1) that
 * no check uses afterwards (forged but well-formed messages may be kept
 * for it). */
#define SVD_KEYS 4
static uint64_t svd_data[SVD_KEYS];

static void setup_state(wf_t *w, pami_geometry_t *geom)
{
    for (pami_svd_key_t k = 0; k < SVD_KEYS; k++) {
        svd_data[k] = 1000 * w->me + k;
        pami_svd_register_t r = {
            .field_mask = PAMI_SVD_REGISTER_DATA, .key = k,
            .addr = &svd_data[k], .size = sizeof(svd_data[k]),
            .data = &svd_data[k], .data_size = sizeof(svd_data[k])};
        MP_CHECK(pami_svd_register(w->ctx, &r));
    }
    mp_sync(&w->job);
    for (pami_svd_key_t k = 0; k < SVD_KEYS; k++) {
        pami_svd_lookup_t l = {.field_mask = PAMI_SVD_LOOKUP_TIMEOUT,
                               .owner = w->peer, .key = k,
                               .timeout_ms = 30000};
        pami_svd_entry_t e;
        MP_CHECK(pami_svd_lookup_wait(w->ctx, &l, &e));
        MP_EXPECT(e.version == 1, "SVD key %llu at version %llu",
                  (unsigned long long)k, (unsigned long long)e.version);
    }
    pami_geometry_t world;
    pami_task_t     both[2] = {0, 1};
    MP_CHECK(pami_geometry_world(w->ctx, &world));
    MP_CHECK(pami_geometry_create_tasklist(w->ctx, world, 1, both, 2, NULL,
                                           geom, NULL, NULL));
    MP_CHECK(pami_geometry_wait_ready(w->ctx, *geom));
}

static uint64_t parse_u64(const char *s, const char *what)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    MP_EXPECT(errno == 0 && *end == '\0' && end != s, "bad %s '%s'", what, s);
    return v;
}

int main(int argc, char **argv)
{
    static wf_t w;
    uint64_t      seed = 0;
    bool          seeded = false;
    unsigned long packets = 10000;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--seed=", 7) == 0) {
            seed   = parse_u64(argv[i] + 7, "seed");
            seeded = true;
        } else if (strncmp(argv[i], "--packets=", 10) == 0) {
            packets = (unsigned long)parse_u64(argv[i] + 10, "packet count");
        } else if (strcmp(argv[i], "--no-key-bytes") == 0) {
            key_bytes = false;
        } else if (strcmp(argv[i], "--all-families") == 0) {
            all_families = true;
            families     = F_COUNT;
        }
    }
    if (!seeded && getenv("WIRE_FUZZ_SEED") != NULL) {
        seed   = parse_u64(getenv("WIRE_FUZZ_SEED"), "WIRE_FUZZ_SEED");
        seeded = true;
    }
    if (!seeded) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
    }

    mp_init(&w.job, "wire-fuzz", NULL, NULL, NULL, 1, false);
    MP_EXPECT(w.job.size == 2, "runs as 2 tasks, not %zu", w.job.size);
    w.ctx  = w.job.ctx[0];
    w.me   = w.job.me;
    w.peer = 1 - w.me;
    MP_CHECK(pami_dispatch_set(w.ctx, ID_CHECK, on_check, &w, NULL));
    MP_CHECK(pami_dispatch_set(w.ctx, ID_FUZZ, on_fuzz, &w, NULL));
    MP_CHECK(pami_dispatch_fence(w.job.client));

    pami_protocol_info_t info;
    for (size_t i = 0;
         pami_protocol_query(w.job.client, i, &info) == PAMI_SUCCESS; i++) {
        if (strcmp(info.name, "barrier_packets") == 0)
            w.bp_base = info.dispatch_base;
        else if (strcmp(info.name, "svd") == 0)
            w.svd_base = info.dispatch_base;
        else if (strcmp(info.name, "collectives") == 0)
            w.coll_base = info.dispatch_base;
        else if (strcmp(info.name, "shm_barrier") == 0)
            w.shmb_base = info.dispatch_base;
    }
    MP_EXPECT(w.bp_base && w.svd_base && w.coll_base && w.shmb_base,
              "a built-in protocol is missing");
    pami_memregion_t *mr = &src_mr;
    MP_CHECK(pami_memregion_create(w.ctx, src_buf, sizeof(src_buf), mr));

    pami_geometry_t geom1 = NULL;
    setup_state(&w, &geom1);

    drops_t before, after;
    drops(&w, &before);
    unsigned long vm_before = vm_kb();
    mp_sync(&w.job);

    uint64_t sent[F_COUNT] = {0};
    if (w.me == 0) {
        printf("wire-fuzz: seed %llu, %lu packets%s%s (rerun: wire_fuzz "
               "--seed=%llu%s)\n", (unsigned long long)seed, packets,
               key_bytes ? "" : ", key bytes left alone",
               all_families ? ", all families" : "",
               (unsigned long long)seed,
               all_families ? " --all-families" : "");
        fflush(stdout);
        rng = seed;
        attack(&w, packets, sent);
        MP_WAIT(&w.job, w.ctx, raw_inflight == 0, MP_WAIT_S,
                "%lu forged packets to leave", raw_inflight);
        check_hdr_t h = {.magic = MAGIC, .phase = PH_DONE};
        memcpy(h.sent, sent, sizeof(sent));
        pami_send_immediate_t s = {.dest = mp_ep(&w.job, w.peer, 0),
                                   .dispatch = ID_CHECK, .header = &h,
                                   .header_len = sizeof(h)};
        mp_send_imm(&w.job, w.ctx, &s);
    } else {
        MP_WAIT(&w.job, w.ctx, atomic_load(&w.done), 120.0,
                "the attacker's last packet");
        memcpy(sent, w.done_hdr.sent, sizeof(sent));
    }

    /* Still serving: an AM barrier, messages, barriers, a collective. */
    mp_sync(&w.job);
    check_traffic(&w);
    MP_CHECK(pami_barrier_wait(w.ctx, PAMI_BARRIER_PACKETS, NULL, 0));
    MP_CHECK(pami_barrier_wait(w.ctx, PAMI_BARRIER_SHM, NULL, 0));
    pami_geometry_t world;
    MP_CHECK(pami_geometry_world(w.ctx, &world));
    int64_t in[2] = {(int64_t)w.me + 1, 7}, out[2] = {0, 0};
    MP_CHECK(pami_geometry_allreduce(w.ctx, world, in, out, 2,
                                     PAMI_TYPE_INT64, PAMI_OP_SUM));
    MP_EXPECT(out[0] == 3 && out[1] == 14, "allreduce gave %lld %lld",
              (long long)out[0], (long long)out[1]);
    /* The directory still updates: whether the other task still counts
     * as a user after forged releases, the update ends, successfully; a
     * forged NOTIFY of the next version (its tag is a guess) took
     * nothing. */
    svd_data[0]++;
    pami_svd_update_t u = {.field_mask = PAMI_SVD_UPDATE_DATA |
                                         PAMI_SVD_UPDATE_TIMEOUT,
                           .key = 0, .data = &svd_data[0],
                           .data_size = sizeof(svd_data[0]),
                           .timeout_ms = 30000};
    pami_result_t urc = pami_svd_update_wait(w.ctx, &u);
    MP_EXPECT(urc == PAMI_SUCCESS, "svd update after the attack: %s",
              pami_error_text(urc));

    if (w.me == 1) {
        unsigned long vm_after = vm_kb();
        MP_EXPECT(vm_after < vm_before + VM_GROWTH_MAX_KB,
                  "the forged packets grew the target from %lu to %lu kB",
                  vm_before, vm_after);
        drops(&w, &after);
        printf("wire-fuzz: target task 1: %lu forged user messages handled "
               "(%lu landed)\n", w.fuzz_seen, w.fuzz_landed);
        /* The core's families share its counters: one line. */
        uint64_t core_sent = sent[F_CHUNK] + sent[F_WRITE] + sent[F_RMA];
        for (int f = 0; f <= F_RNDV; f++)
            core_sent += sent[f];
        printf("wire-fuzz: core (am, packed, ack, core-barrier, rendezvous, "
               "rendezvous chunks and split read, owner's path): %llu "
               "sent, drops "
               "+%llu\n",
               (unsigned long long)core_sent,
               (unsigned long long)(after.v[F_RNDV] - before.v[F_RNDV]));
        MP_EXPECT(core_sent < 50 || after.v[F_RNDV] > before.v[F_RNDV],
                  "the core's drop counters did not rise");
        for (int f = F_RNDV + 1; f < F_COUNT; f++) {
            if (f == F_CHUNK || f == F_WRITE || f == F_RMA)
                continue;
            printf("wire-fuzz: %s: %llu sent, drops +%llu\n", fname[f],
                   (unsigned long long)sent[f],
                   (unsigned long long)(after.v[f] - before.v[f]));
            MP_EXPECT(sent[f] < 50 || after.v[f] > before.v[f],
                      "%s: %llu forged packets and its drop counters did "
                      "not rise", fname[f], (unsigned long long)sent[f]);
        }
    }
    mp_sync(&w.job);
    MP_CHECK(pami_geometry_destroy(&geom1));
    MP_CHECK(pami_memregion_destroy(w.ctx, mr));
    MP_CHECK(pami_client_destroy(&w.job.client));
    printf("wire-fuzz: task %u: ok\n", w.me);
    return 0;
}
