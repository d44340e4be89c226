/*
 * rma_large: pami_send of large payloads (the rendezvous path).
 *
 * The threshold comes from pami_client_query (PAMI_RNDV_THRESHOLD may set
 * it; --expect-threshold=N checks that it did). Modes:
 *
 *  sizes    every task sends to every task (itself too) 0 bytes,
 *           threshold - 1, threshold, threshold + 1, 1 MiB and 16 MiB with
 *           local_fn and remote_fn, then 1 MiB + 3 from one read-only
 *           mapping to every task at once; the origin scribbles over its
 *           buffer in local_fn and frees it in remote_fn; the target
 *           checks every byte, the order of arrival, that payloads below
 *           the threshold arrive whole and the others stay at the origin
 *           (data == NULL), and local_fn runs once before remote_fn, never
 *           inside the call.
 *  discard  the handler leaves recv empty: the origin's local_fn and
 *           remote_fn still run once with PAMI_SUCCESS (and with local_fn
 *           only, local_fn alone), and the buffer is unmapped at once (a
 *           late read would fail); afterwards traffic still flows.
 *  mr       the handler names a region (recv.mr + mr_offset) instead of an
 *           address: at offset 0, ending at the region's last byte, inside;
 *           out of bounds (one byte beyond, offset at the end, SIZE_MAX,
 *           offset + size wrapping), another task's region, a destroyed
 *           region: recv local_fn gets PAMI_INVAL, the region is untouched,
 *           the origin still completes (local_fn SUCCESS, remote_fn once
 *           with the target's verdict: PAMI_SUCCESS or PAMI_INVAL); a
 *           region destroyed by main right after the handler named it:
 *           destroy waits until the data landed.
 *  reply    pairs ping-pong large payloads: the answer is sent from inside
 *           the handler (before the payload is here), the next ping from
 *           the recv local_fn of the answer.
 *  flood    pairs send each other 64 x 4 MiB at once, all in flight.
 *  order    every task streams messages to every other one mixing header
 *           only and small immediate sends, small pami_send, threshold - 1,
 *           threshold, threshold + 1, 256 KiB and 1 MiB, on two dispatch
 *           ids; handlers must run in send order per origin.
 *
 *   pamirun -n N rma_large MODE [--expect-threshold=N] [count]
 */
#include "rma_util.h"

#include <sys/mman.h>

enum { ID_A = 60, ID_B = 61, ID_CTL = 62 };

typedef struct {
    uint32_t seq;
    uint32_t origin;
    uint64_t size;
    uint64_t salt;
    uint64_t mr_off;   /* mr mode */
    uint32_t mr_case;  /* mr mode: which region */
    uint32_t expect;   /* mr mode: PAMI_SUCCESS or PAMI_INVAL */
    uint32_t imm;      /* sent by pami_send_immediate: always whole */
    uint32_t pad;
} lhdr_t;

static mp_job_t job;
static size_t   thr;
static long     expect_thr = -1;
static unsigned count;

/* ---- the origin side ---- */

typedef struct {
    uint8_t      *buf;
    size_t        size;
    bool          mapped;
    bool          want_local, want_remote, keep, autofree;
    unsigned      local, remote;
    pami_result_t local_rc, remote_rc;
} slot_t;

static bool     in_send;
static unsigned slots_done;

static uint8_t *payload_alloc(size_t size, bool mapped)
{
    if (!mapped)
        return rma_alloc(size);
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    MP_EXPECT(p != MAP_FAILED, "mmap of %zu bytes failed", size);
    return p;
}

static void payload_free(slot_t *s)
{
    if (s->keep)
        return;
    if (s->mapped)
        munmap(s->buf, s->size ? s->size : 1);
    else
        free(s->buf);
    s->buf = NULL;
}

static bool slot_complete(const slot_t *s)
{
    return s->local == (unsigned)s->want_local &&
           s->remote == (unsigned)s->want_remote;
}

static void on_slot_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    slot_t *s = cookie;
    MP_EXPECT(!in_send, "local_fn ran inside pami_send");
    MP_EXPECT(s->want_local && s->local == 0, "local_fn of a %zu-byte send "
              "ran %u times before", s->size, s->local);
    MP_EXPECT(s->remote == 0, "local_fn of a %zu-byte send after its "
              "remote_fn", s->size);
    MP_EXPECT(rc == PAMI_SUCCESS, "local_fn of a %zu-byte send: %s", s->size,
              pami_error_text(rc));
    s->local++;
    s->local_rc = rc;
    if (!s->keep)
        memset(s->buf, 0xdb, s->size);   /* released: the target is done */
    if (!s->want_remote) {
        payload_free(s);
        slots_done++;
        if (s->autofree)
            free(s);
    }
}

static void on_slot_remote(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    slot_t *s = cookie;
    MP_EXPECT(!in_send, "remote_fn ran inside pami_send");
    MP_EXPECT(s->want_remote && s->remote == 0, "remote_fn of a %zu-byte "
              "send ran %u times before", s->size, s->remote);
    MP_EXPECT(!s->want_local || s->local == 1, "remote_fn of a %zu-byte "
              "send before its local_fn", s->size);
    s->remote++;
    s->remote_rc = rc;
    payload_free(s);
    slots_done++;
    if (s->autofree)
        free(s);
}

enum {
    SL_LOCAL    = 1,   /* with local_fn */
    SL_REMOTE   = 2,   /* with remote_fn */
    SL_MAPPED   = 4,   /* payload mmap()ed, munmap()ed when released */
    SL_AUTOFREE = 8    /* the slot frees itself when complete */
};

/* Sends h (payload pattern rma_seed(me, h->salt) unless buf is given).
 * Returns the slot, which is the caller's unless SL_AUTOFREE. */
static slot_t *send_large(pami_context_t ctx, pami_task_t to, size_t id,
                          lhdr_t *h, const uint8_t *given, unsigned flags)
{
    slot_t *s = calloc(1, sizeof(*s));
    MP_EXPECT(s != NULL, "out of memory");
    bool want_local  = (flags & SL_LOCAL) != 0;
    bool want_remote = (flags & SL_REMOTE) != 0;
    h->origin      = job.me;
    s->size        = h->size;
    s->mapped      = (flags & SL_MAPPED) != 0;
    s->autofree    = (flags & SL_AUTOFREE) != 0;
    s->want_local  = want_local;
    s->want_remote = want_remote;
    if (given != NULL) {
        s->buf  = (uint8_t *)given;
        s->keep = true;
    } else {
        s->buf = payload_alloc(h->size, s->mapped);
        rma_fill(s->buf, 0, h->size, rma_seed(job.me, (uint32_t)h->salt));
    }
    pami_send_t p = {.send = {.dest = mp_ep(&job, to, 0), .dispatch = id,
                              .header = h, .header_len = sizeof(*h),
                              .data = h->size ? s->buf : NULL,
                              .data_len = h->size},
                     .local_fn  = want_local ? on_slot_local : NULL,
                     .remote_fn = want_remote ? on_slot_remote : NULL,
                     .cookie    = s};
    bool outer = in_send;
    in_send = true;
    MP_CHECK(pami_send(ctx, &p));
    in_send = outer;
    return s;
}

/* ---- the target side ---- */

typedef void (*arrived_fn)(pami_context_t ctx, const lhdr_t *h);

typedef struct {
    lhdr_t     h;
    uint8_t   *buf;
    arrived_fn done;
} pending_t;

static uint64_t rndv;   /* payloads that stayed at the origin */

static void check_payload(const void *data, const lhdr_t *h, const char *how)
{
    long bad = rma_check(data, 0, h->size, rma_seed(h->origin,
                                                    (uint32_t)h->salt));
    MP_EXPECT(bad < 0, "message %u from task %u (%llu bytes, %s): byte %ld "
              "is wrong", h->seq, h->origin, (unsigned long long)h->size,
              how, bad);
}

static void on_pending_done(pami_context_t ctx, void *cookie,
                            pami_result_t rc)
{
    pending_t *p = cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "receive of message %u from task %u "
              "(%llu bytes): %s", p->h.seq, p->h.origin,
              (unsigned long long)p->h.size, pami_error_text(rc));
    check_payload(p->buf, &p->h, "in recv local_fn");
    free(p->buf);
    if (p->done)
        p->done(ctx, &p->h);
    free(p);
}

static lhdr_t read_hdr(const void *hdr, size_t hlen, size_t dlen,
                       pami_endpoint_t origin)
{
    lhdr_t h;
    MP_EXPECT(hlen == sizeof(h), "message with a %zu-byte header", hlen);
    memcpy(&h, hdr, sizeof(h));
    pami_task_t t;
    MP_CHECK(pami_endpoint_query(origin, &t, NULL));
    MP_EXPECT(t == h.origin, "message of task %u from task %u", h.origin, t);
    MP_EXPECT(dlen == h.size, "message %u from task %u: %zu bytes, header "
              "says %llu", h.seq, t, dlen, (unsigned long long)h.size);
    return h;
}

/* Takes the payload: checks it now, or gives a buffer and checks it in
 * local_fn; then calls done. */
static void take_payload(pami_context_t ctx, const lhdr_t *h,
                         const void *data, pami_recv_t *recv,
                         arrived_fn done)
{
    if (h->size == 0 || data != NULL) {
        MP_EXPECT(recv == NULL, "recv given with the payload present");
        /* docs/guide.md: at or above the threshold a payload of
         * pami_send always stays at the origin (immediate sends are whole
         * whatever the threshold). */
        MP_EXPECT(h->size < thr || h->imm, "message %u from task %u: %llu "
                  "bytes by pami_send, at or above the threshold %zu, "
                  "arrived whole", h->seq, h->origin,
                  (unsigned long long)h->size, thr);
        check_payload(data, h, "whole");
        if (done)
            done(ctx, h);
        return;
    }
    MP_EXPECT(recv != NULL, "message %u from task %u: no data and no recv",
              h->seq, h->origin);
    MP_EXPECT(h->size >= thr, "message %u from task %u: %llu bytes, below "
              "the threshold %zu, arrived without its payload", h->seq,
              h->origin, (unsigned long long)h->size, thr);
    rndv++;
    pending_t *p = malloc(sizeof(*p));
    MP_EXPECT(p != NULL, "out of memory");
    p->h    = *h;
    p->buf  = rma_alloc(h->size);
    p->done = done;
    memset(p->buf, 0xee, h->size);
    recv->addr     = p->buf;
    recv->local_fn = on_pending_done;
    recv->cookie   = p;
}

/* ---- mode sizes ---- */

static unsigned *next_seq;    /* per origin: handler order */
static unsigned *arrived;     /* per origin: payloads complete */

static void count_arrival(pami_context_t ctx, const lhdr_t *h)
{
    (void)ctx;
    arrived[h->origin]++;
}

static void on_ordered(pami_context_t ctx, void *cookie, const void *hdr,
                       size_t hlen, const void *data, size_t dlen,
                       pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)cookie;
    lhdr_t h = read_hdr(hdr, hlen, dlen, origin);
    MP_EXPECT(h.seq == next_seq[h.origin], "from task %u: handler for "
              "message %u (%llu bytes) when %u was due", h.origin, h.seq,
              (unsigned long long)h.size, next_seq[h.origin]);
    next_seq[h.origin]++;
    take_payload(ctx, &h, data, recv, count_arrival);
}

static bool self_too;   /* sizes: tasks send to themselves as well */

static bool all_arrived(unsigned n)
{
    for (size_t t = 0; t < job.size; t++)
        if ((t != job.me || self_too) && arrived[t] != n)
            return false;
    return true;
}

static void mode_sizes(void)
{
    pami_context_t ctx = job.ctx[0];
    size_t sizes[] = {0, thr - 1, thr, thr + 1, 1u << 20, 16u << 20};
    unsigned n = sizeof(sizes) / sizeof(sizes[0]);
    unsigned sent = 0;
    self_too = true;    /* k == 0: to this task's own endpoint */
    for (unsigned i = 0; i < n; i++)
        for (size_t k = 0; k < job.size; k++) {
            lhdr_t h = {.seq = i, .size = sizes[i], .salt = 100 + i};
            send_large(ctx, mp_peer(&job, k), i % 2 ? ID_B : ID_A, &h, NULL,
                       SL_LOCAL | SL_REMOTE | SL_AUTOFREE);
            sent++;
        }
    /* Last, from read-only memory (data is const): the same buffer to
     * every peer at once. */
    size_t   ro_len = (1u << 20) + 3;
    uint8_t *ro = payload_alloc(ro_len, true);
    rma_fill(ro, 0, ro_len, rma_seed(job.me, 100 + n));
    MP_EXPECT(mprotect(ro, ro_len, PROT_READ) == 0, "mprotect failed");
    for (size_t k = 0; k < job.size; k++) {
        lhdr_t h = {.seq = n, .size = ro_len, .salt = 100 + n};
        send_large(ctx, mp_peer(&job, k), ID_A, &h, ro,
                   SL_LOCAL | SL_REMOTE | SL_AUTOFREE);
        sent++;
    }
    n++;
    MP_WAIT(&job, ctx, slots_done == sent && all_arrived(n), MP_WAIT_S,
            "%u of %u sends complete, payloads in: %u from the next task",
            slots_done, sent, arrived[mp_peer(&job, 1)]);
    munmap(ro, ro_len);
    mp_sync(&job);
    if (job.me == 0)
        printf("sizes: threshold %zu; task 0 got %llu payloads by "
               "rendezvous\n", thr, (unsigned long long)rndv);
}

/* ---- mode discard ---- */

static unsigned discarded;

static void on_discard(pami_context_t ctx, void *cookie, const void *hdr,
                       size_t hlen, const void *data, size_t dlen,
                       pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)data;
    lhdr_t h = read_hdr(hdr, hlen, dlen, origin);
    (void)h;
    if (recv != NULL)
        MP_EXPECT(recv->addr == NULL && recv->mr == NULL &&
                      recv->local_fn == NULL,
                  "recv handed to the handler is not empty");
    discarded++;    /* recv left as it is */
}

static void mode_discard(void)
{
    pami_context_t ctx = job.ctx[0];
    size_t sizes[] = {thr, thr + 1, 1u << 20, 16u << 20};
    unsigned n = sizeof(sizes) / sizeof(sizes[0]), sent = 0;
    pami_task_t to = mp_peer(&job, 1);
    for (int pass = 0; pass < 2; pass++)
        for (unsigned i = 0; i < n; i++) {
            lhdr_t h = {.seq = sent, .size = sizes[i], .salt = 200 + i};
            /* pass 0: both callbacks; pass 1: local_fn only */
            send_large(ctx, to, ID_A, &h, NULL, SL_MAPPED | SL_LOCAL |
                       SL_AUTOFREE | (pass == 0 ? SL_REMOTE : 0));
            sent++;
        }
    MP_WAIT(&job, ctx, slots_done == sent && discarded == sent, MP_WAIT_S,
            "%u of %u discarded sends complete, %u discarded here",
            slots_done, sent, discarded);
    mp_sync(&job);
    /* The buffers are gone; traffic still flows. */
    for (size_t id = ID_A; id <= ID_B; id++)
        MP_CHECK(pami_dispatch_set(ctx, id, on_ordered, NULL, NULL));
    mp_sync(&job);
    lhdr_t h = {.seq = 0, .size = thr + 5, .salt = 9};
    send_large(ctx, to, ID_A, &h, NULL, SL_LOCAL | SL_REMOTE | SL_AUTOFREE);
    pami_task_t prev = mp_peer(&job, job.size - 1);
    MP_WAIT(&job, ctx, slots_done == sent + 1 && arrived[prev] == 1,
            MP_WAIT_S, "a send after the discards");
    mp_sync(&job);
    if (job.me == 0)
        printf("discard: %u large sends discarded by the handler, origins "
               "completed and unmapped their buffers\n", sent);
}

/* ---- mode mr ---- */

#define MR_BYTES ((16u << 20) + 4096)

enum { MR_MINE, MR_FOREIGN, MR_DESTROYED, MR_TEMP };

static uint8_t          *mr_mem;
static pami_memregion_t  mr_mine, mr_dead;
static pami_memregion_t *mr_all;
static uint64_t          mr_guard;
static unsigned          mr_done;
static uint8_t          *temp_mem;    /* MR_TEMP: destroyed while landing */
static pami_memregion_t  temp_mr;
static bool              temp_given;
static unsigned          temp_done;
static pami_result_t     mr_rc[16];   /* per case, as received here */

static void on_mr_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    lhdr_t *h = cookie;
    MP_EXPECT(rc == (pami_result_t)h->expect, "message %u (%llu bytes into "
              "region %u at offset %llu): recv local_fn got %s, expected %s",
              h->seq, (unsigned long long)h->size, h->mr_case,
              (unsigned long long)h->mr_off, pami_error_text(rc),
              pami_error_text((pami_result_t)h->expect));
    if (rc == PAMI_SUCCESS) {
        long bad = rma_check(mr_mem + h->mr_off, 0, h->size,
                             rma_seed(h->origin, (uint32_t)h->salt));
        MP_EXPECT(bad < 0, "message %u: region at offset %llu wrong at "
                  "byte %ld", h->seq, (unsigned long long)h->mr_off, bad);
        rma_fill(mr_mem + h->mr_off, h->mr_off, h->size, mr_guard);
    }
    long bad = rma_check(mr_mem, 0, MR_BYTES, mr_guard);
    MP_EXPECT(bad < 0, "message %u (%llu bytes at offset %llu, %s): the "
              "region is wrong at byte %ld", h->seq,
              (unsigned long long)h->size, (unsigned long long)h->mr_off,
              pami_error_text(rc), bad);
    if (h->seq < 16)
        mr_rc[h->seq] = rc;
    mr_done++;
    free(h);
}

static void on_temp_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    lhdr_t *h = cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "landing in a region destroyed meanwhile: "
              "%s", pami_error_text(rc));
    long bad = rma_check(temp_mem, 0, h->size,
                         rma_seed(h->origin, (uint32_t)h->salt));
    MP_EXPECT(bad < 0, "landing in a region destroyed meanwhile: byte %ld "
              "wrong", bad);
    temp_done++;
    free(h);
}

static void on_mr(pami_context_t ctx, void *cookie, const void *hdr,
                  size_t hlen, const void *data, size_t dlen,
                  pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie;
    lhdr_t h = read_hdr(hdr, hlen, dlen, origin);
    MP_EXPECT(data == NULL && recv != NULL, "message %u of %zu bytes (at or "
              "above the threshold %zu) arrived whole: cannot hand it a "
              "region", h.seq, dlen, thr);
    if (h.mr_case == MR_TEMP) {
        lhdr_t *keep = malloc(sizeof(*keep));
        MP_EXPECT(keep != NULL, "out of memory");
        *keep = h;
        recv->mr       = &temp_mr;
        recv->local_fn = on_temp_done;
        recv->cookie   = keep;
        temp_given     = true;
        return;
    }
    lhdr_t *keep = malloc(sizeof(*keep));
    MP_EXPECT(keep != NULL, "out of memory");
    *keep = h;
    recv->mr = h.mr_case == MR_MINE      ? &mr_mine
             : h.mr_case == MR_DESTROYED ? &mr_dead
                                         : &mr_all[mp_peer(&job, 1)];
    recv->mr_offset = h.mr_off;
    recv->local_fn  = on_mr_done;
    recv->cookie    = keep;
}

static void mode_mr(void)
{
    pami_context_t ctx = job.ctx[0];
    mr_mem   = rma_alloc(MR_BYTES);
    mr_all   = rma_alloc(job.size * sizeof(*mr_all));
    mr_guard = rma_seed(job.me, 999);
    rma_fill(mr_mem, 0, MR_BYTES, mr_guard);
    MP_CHECK(pami_memregion_create(ctx, mr_mem, MR_BYTES, &mr_mine));
    MP_CHECK(pami_memregion_create(ctx, mr_mem, 4096, &mr_dead));
    MP_CHECK(pami_memregion_destroy(ctx, &mr_dead));
    rma_exchange(&job, &mr_mine, mr_mem, MR_BYTES, mr_all);

    struct {
        size_t   size;
        uint64_t off;
        uint32_t which;
        int      expect;
        const char *what;
    } cases[] = {
        {thr, 0, MR_MINE, PAMI_SUCCESS, "at 0"},
        {thr + 1, MR_BYTES - thr - 1, MR_MINE, PAMI_SUCCESS,
         "ending at the last byte"},
        {1u << 20, 12345, MR_MINE, PAMI_SUCCESS, "inside"},
        {16u << 20, 4096, MR_MINE, PAMI_SUCCESS, "16 MiB ending at the end"},
        {thr, MR_BYTES - thr + 1, MR_MINE, PAMI_INVAL, "one byte beyond"},
        {1u << 20, MR_BYTES, MR_MINE, PAMI_INVAL, "offset at the end"},
        {thr, SIZE_MAX, MR_MINE, PAMI_INVAL, "offset SIZE_MAX"},
        {thr, (uint64_t)SIZE_MAX - thr + 2, MR_MINE, PAMI_INVAL,
         "offset + size wraps"},
        {thr, 0, MR_FOREIGN, PAMI_INVAL, "another task's region"},
        {thr, 0, MR_DESTROYED, PAMI_INVAL, "a destroyed region"},
    };
    unsigned n = sizeof(cases) / sizeof(cases[0]);
    pami_result_t remote_rc[16];
    MP_EXPECT(n <= 16, "too many cases");
    pami_task_t to = mp_peer(&job, 1);
    /* One message at a time to the next task (its region sees one
     * writer); the previous task may be ahead or behind. */
    for (unsigned i = 0; i < n; i++) {
        lhdr_t h = {.seq = i, .size = cases[i].size, .salt = 300 + i,
                    .mr_off = cases[i].off, .mr_case = cases[i].which,
                    .expect = (uint32_t)cases[i].expect};
        slot_t *s = send_large(ctx, to, ID_A, &h, NULL, SL_LOCAL | SL_REMOTE);
        MP_WAIT(&job, ctx, slot_complete(s), MP_WAIT_S, "region case %u "
                "(%s): origin local_fn %u, remote_fn %u", i, cases[i].what,
                s->local, s->remote);
        MP_EXPECT(s->remote_rc == (pami_result_t)cases[i].expect,
                  "region case %u (%s): remote_fn got %s, expected %s "
                  "(the target's verdict)", i, cases[i].what,
                  pami_error_text(s->remote_rc),
                  pami_error_text((pami_result_t)cases[i].expect));
        remote_rc[i] = s->remote_rc;
        free(s);
    }
    MP_WAIT(&job, ctx, mr_done == n, MP_WAIT_S, "%u of %u region cases "
            "received", mr_done, n);
    mp_sync(&job);
    MP_EXPECT(mr_done == n, "%u region cases received, %u sent", mr_done, n);
    if (job.me == 0)
        for (unsigned i = 0; i < n; i++)
            printf("mr: %-26s recv local_fn %s, origin remote_fn %s\n",
                   cases[i].what, pami_error_text(mr_rc[i]),
                   pami_error_text(remote_rc[i]));

    /* The handler names a region that main destroys as soon as the
     * handler ran: destroy waits for the landing. */
    temp_mem = rma_alloc(16u << 20);
    memset(temp_mem, 0, 16u << 20);
    MP_CHECK(pami_memregion_create(ctx, temp_mem, 16u << 20, &temp_mr));
    mp_sync(&job);
    lhdr_t h = {.seq = n, .size = 16u << 20, .salt = 300 + n,
                .mr_case = MR_TEMP};
    slot_t *s = send_large(ctx, to, ID_A, &h, NULL, SL_LOCAL | SL_REMOTE);
    MP_WAIT(&job, ctx, temp_given, MP_WAIT_S, "the message for the region "
            "destroyed while the data lands");
    bool early = temp_done == 0;
    MP_CHECK(pami_memregion_destroy(ctx, &temp_mr));
    MP_EXPECT(temp_done == 1, "destroy returned before the landing's "
              "local_fn ran");
    MP_WAIT(&job, ctx, slot_complete(s), MP_WAIT_S, "origin of the message "
            "into the region destroyed meanwhile");
    MP_EXPECT(s->remote_rc == PAMI_SUCCESS, "origin of the message into the "
              "region destroyed meanwhile: remote_fn got %s",
              pami_error_text(s->remote_rc));
    free(s);
    mp_sync(&job);
    if (job.me == 0)
        printf("mr: destroy right after the handler: the data was %s\n",
               early ? "still landing (destroy waited)" : "already there");
    free(temp_mem);
    MP_CHECK(pami_memregion_destroy(ctx, &mr_mine));
    free(mr_mem);
    free(mr_all);
}

/* ---- mode reply ---- */

static pami_task_t partner;
static unsigned    pongs, pings;

static void send_round(pami_context_t ctx, size_t id, unsigned r)
{
    static const size_t kinds[] = {1u << 20, 0, 300000, 1};
    size_t sz = kinds[r % 4] == 0 ? thr : kinds[r % 4] == 1 ? thr + 1
                                                          : kinds[r % 4];
    lhdr_t h = {.seq = r, .size = sz, .salt = (id == ID_A ? 400 : 500) + r};
    send_large(ctx, partner, id, &h, NULL, SL_LOCAL | SL_REMOTE |
               SL_AUTOFREE);
}

static void ping_arrived(pami_context_t ctx, const lhdr_t *h)
{
    (void)ctx; (void)h;
    pings++;
}

static void pong_arrived(pami_context_t ctx, const lhdr_t *h)
{
    pongs++;
    if (h->seq + 1 < count)
        send_round(ctx, ID_A, h->seq + 1);    /* from recv local_fn */
}

static void on_ping(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)cookie;
    lhdr_t h = read_hdr(hdr, hlen, dlen, origin);
    MP_EXPECT(h.seq == next_seq[h.origin], "ping %u, expected %u", h.seq,
              next_seq[h.origin]);
    next_seq[h.origin]++;
    send_round(ctx, ID_B, h.seq);               /* from the handler */
    take_payload(ctx, &h, data, recv, ping_arrived);
}

static void on_pong(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)cookie;
    lhdr_t h = read_hdr(hdr, hlen, dlen, origin);
    MP_EXPECT(h.seq == pongs, "pong %u, expected %u", h.seq, pongs);
    take_payload(ctx, &h, data, recv, pong_arrived);
}

static void mode_reply(void)
{
    pami_context_t ctx = job.ctx[0];
    MP_EXPECT(job.size % 2 == 0, "reply needs an even number of tasks");
    bool initiator = job.me % 2 == 0;
    partner = initiator ? job.me + 1 : job.me - 1;
    MP_CHECK(pami_dispatch_set(ctx, ID_A, on_ping, NULL, NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_B, on_pong, NULL, NULL));
    mp_sync(&job);
    double t0 = mp_now();
    if (initiator)
        send_round(ctx, ID_A, 0);
    MP_WAIT(&job, ctx, (initiator ? pongs : pings) == count &&
                           slots_done == count, 2 * MP_WAIT_S,
            "%u pings, %u pongs, %u sends complete of %u", pings, pongs,
            slots_done, count);
    mp_sync(&job);
    if (job.me == 0)
        printf("reply: %u large round trips answered from handlers and "
               "recv callbacks in %.2f s\n", count, mp_now() - t0);
}

/* ---- mode flood ---- */

#define FLOOD_N       64
#define FLOOD_BYTES   (4u << 20)
#define FLOOD_VARIANT 8

static void mode_flood(void)
{
    pami_context_t ctx = job.ctx[0];
    MP_EXPECT(job.size % 2 == 0, "flood needs an even number of tasks");
    pami_task_t to = job.me ^ 1u;
    uint8_t *var[FLOOD_VARIANT];
    for (int v = 0; v < FLOOD_VARIANT; v++) {
        var[v] = rma_alloc(FLOOD_BYTES);
        rma_fill(var[v], 0, FLOOD_BYTES, rma_seed(job.me, 600 + v));
    }
    slot_t *s[FLOOD_N];
    double t0 = mp_now();
    for (unsigned i = 0; i < FLOOD_N; i++) {
        lhdr_t h = {.seq = i, .size = FLOOD_BYTES,
                    .salt = 600 + i % FLOOD_VARIANT};
        s[i] = send_large(ctx, to, i % 2 ? ID_B : ID_A, &h,
                          var[i % FLOOD_VARIANT], SL_LOCAL | SL_REMOTE);
    }
    MP_WAIT(&job, ctx, slots_done == FLOOD_N && arrived[to] == FLOOD_N,
            2 * MP_WAIT_S, "%u of %d sends complete, %u of %d payloads in",
            slots_done, FLOOD_N, arrived[to], FLOOD_N);
    double t = mp_now() - t0;
    for (unsigned i = 0; i < FLOOD_N; i++) {
        MP_EXPECT(s[i]->remote_rc == PAMI_SUCCESS, "flood send %u: remote_fn "
                  "got %s", i, pami_error_text(s[i]->remote_rc));
        free(s[i]);
    }
    mp_sync(&job);
    if (job.me == 0)
        printf("flood: %d x %u MiB each way in %.2f s (%.0f MiB/s each "
               "way), %llu by rendezvous\n", FLOOD_N, FLOOD_BYTES >> 20, t,
               FLOOD_N * (FLOOD_BYTES >> 20) / t, (unsigned long long)rndv);
    for (int v = 0; v < FLOOD_VARIANT; v++)
        free(var[v]);
}

/* ---- mode order ---- */

enum { C_HDR_IMM, C_8_IMM, C_100, C_THR_M1, C_THR, C_THR_P1, C_256K, C_1M,
       NCLS };

static size_t cls_size(int c)
{
    static const size_t fixed[NCLS] = {0, 8, 100, 0, 0, 0, 256 << 10,
                                       1 << 20};
    if (c == C_THR_M1)
        return thr - 1;
    if (c == C_THR)
        return thr;
    if (c == C_THR_P1)
        return thr + 1;
    return fixed[c];
}

static int cls_of(unsigned seq)
{
    /* Mostly small, with large ones in between, not periodic in NCLS. */
    unsigned x = (seq * 2654435761u) >> 13;
    if (x % 16 == 0)
        return C_1M;
    return (int)(x % (NCLS - 1));
}

#define ORDER_WINDOW 32

static void mode_order(void)
{
    pami_context_t ctx = job.ctx[0];
    uint8_t *src[NCLS];
    for (int c = 0; c < NCLS; c++) {
        src[c] = rma_alloc(cls_size(c));
        rma_fill(src[c], 0, cls_size(c), rma_seed(job.me, 700 + c));
    }
    slot_t **live = calloc((size_t)count * job.size, sizeof(*live));
    MP_EXPECT(live != NULL, "out of memory");
    unsigned sends = 0, imm = 0;
    double   t0 = mp_now();
    for (unsigned i = 0; i < count; i++) {
        int c = cls_of(i);
        for (size_t k = 1; k < job.size; k++) {
            pami_task_t to = mp_peer(&job, k);
            size_t      id = (i / 3) % 2 ? ID_B : ID_A;
            lhdr_t h = {.seq = i, .origin = job.me, .size = cls_size(c),
                        .salt = 700 + (uint64_t)c};
            if (c == C_HDR_IMM || c == C_8_IMM) {
                h.imm = 1;
                pami_send_immediate_t s = {
                    .dest = mp_ep(&job, to, 0), .dispatch = id,
                    .header = &h, .header_len = sizeof(h),
                    .data = h.size ? src[c] : NULL, .data_len = h.size};
                mp_send_imm(&job, ctx, &s);
                imm++;
                continue;
            }
            /* A window of outstanding sends over all targets. */
            MP_WAIT(&job, ctx, sends - slots_done < ORDER_WINDOW * (job.size
                    - 1), MP_WAIT_S, "%u sends outstanding",
                    sends - slots_done);
            live[sends++] = send_large(ctx, to, id, &h, src[c],
                                       SL_LOCAL | SL_REMOTE);
        }
    }
    MP_WAIT(&job, ctx, slots_done == sends && all_arrived(count),
            2 * MP_WAIT_S, "%u of %u sends complete, %u of %u in from the "
            "next task", slots_done, sends, arrived[mp_peer(&job, 1)], count);
    double t = mp_now() - t0;
    for (unsigned i = 0; i < sends; i++)
        free(live[i]);
    mp_sync(&job);
    if (job.me == 0)
        printf("order: %u messages per pair (%u immediate from task 0), "
               "threshold %zu, %.2f s; task 0 got %llu payloads by "
               "rendezvous\n", count, imm, thr, t, (unsigned long long)rndv);
    for (int c = 0; c < NCLS; c++)
        free(src[c]);
    free(live);
}

int main(int argc, char **argv)
{
    mp_init(&job, "rma_large", &argc, argv, NULL, 1, false);
    int out = 1;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--expect-threshold=", 19) == 0)
            expect_thr = strtol(argv[i] + 19, NULL, 10);
        else
            argv[out++] = argv[i];
    }
    argc = out;
    const char *mode = argc > 1 ? argv[1] : "sizes";
    count = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 0;
    thr = job.attr.rndv_threshold;
    if (expect_thr >= 0)
        MP_EXPECT(thr == (size_t)expect_thr, "rndv_threshold is %zu, "
                  "expected %ld", thr, expect_thr);
    MP_EXPECT(thr >= 1, "rndv_threshold %zu", thr);
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");

    next_seq = calloc(job.size, sizeof(*next_seq));
    arrived  = calloc(job.size, sizeof(*arrived));
    MP_EXPECT(next_seq && arrived, "out of memory");
    pami_context_t ctx = job.ctx[0];
    rma_xchg_init(&job);
    pami_dispatch_fn fn = on_ordered;
    if (strcmp(mode, "discard") == 0)
        fn = on_discard;
    else if (strcmp(mode, "mr") == 0)
        fn = on_mr;
    for (size_t id = ID_A; id <= ID_B; id++)
        MP_CHECK(pami_dispatch_set(ctx, id, fn, NULL, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));

    if (strcmp(mode, "sizes") == 0) {
        mode_sizes();
    } else if (strcmp(mode, "discard") == 0) {
        mode_discard();
    } else if (strcmp(mode, "mr") == 0) {
        mode_mr();
    } else if (strcmp(mode, "reply") == 0) {
        if (count == 0)
            count = 400;
        mode_reply();
    } else if (strcmp(mode, "flood") == 0) {
        mode_flood();
    } else if (strcmp(mode, "order") == 0) {
        if (count == 0)
            count = 2000;
        mode_order();
    } else {
        mp_fail("unknown mode '%s'", mode);
    }
    mp_finish(&job);
    free(next_seq);
    free(arrived);
    return 0;
}
