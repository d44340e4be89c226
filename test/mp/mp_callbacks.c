/*
 * mp_callbacks: the completion callbacks of pami_send.
 *
 * Every task sends to every other one, for payloads from 0 bytes to past
 * the rendezvous threshold, with local_fn and remote_fn, with local_fn
 * only, and with remote_fn only. Each send has its own record, so a
 * callback that runs twice, never, with an error, inside pami_send, or
 * remote_fn before local_fn, fails the test.
 *
 * The buffer is overwritten as soon as the callback that releases it runs
 * (local_fn, or remote_fn without local_fn), and the target checks every
 * byte: a buffer released before the target had the data shows up as
 * corrupt contents.
 *
 * remote_fn must come after the target's handler (and, for a payload left
 * at the origin, its recv local_fn): the target answers each message with
 * a receipt from exactly there, before pami sends its completion ack on
 * the same endpoint, and the origin requires the receipt to have arrived
 * when remote_fn runs.
 *
 *   pamirun -n N mp_callbacks [repetitions]
 */
#include "mp_util.h"

enum { ID_DATA = 30, ID_RECEIPT = 31 };
enum { MODE_BOTH, MODE_LOCAL, MODE_REMOTE, MODES };

static const char *const mode_name[MODES] = {"local+remote", "local only",
                                             "remote only"};

typedef struct {
    uint32_t slot;
    uint32_t size;
} msg_hdr_t;

typedef struct {
    uint8_t *buf;
    size_t   size;
    int      mode;
    unsigned local_runs;
    unsigned remote_runs;
    unsigned receipts;
    pami_task_t target;
} slot_t;

static mp_job_t job;
static slot_t  *slots;
static size_t   nslots;
static bool     in_send;
static size_t   early_remote;  /* remote_fn before the receipt */
static size_t   late_receipts; /* receipts that came after remote_fn */
static uint64_t received; /* messages complete at this target */
static uint64_t rndv_received;

static void scribble(slot_t *s)
{
    memset(s->buf, 0xdb, s->size);
}

static slot_t *slot_of(void *cookie, const char *who)
{
    slot_t *s = cookie;
    MP_EXPECT(s >= slots && s < slots + nslots, "%s with a foreign cookie",
              who);
    MP_EXPECT(!in_send, "%s ran inside pami_send", who);
    return s;
}

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    slot_t *s = slot_of(cookie, "local_fn");
    MP_EXPECT(rc == PAMI_SUCCESS, "local_fn of send %zu: %s",
              (size_t)(s - slots), pami_error_text(rc));
    MP_EXPECT(s->mode != MODE_REMOTE, "local_fn of send %zu that has none",
              (size_t)(s - slots));
    MP_EXPECT(s->local_runs == 0, "local_fn of send %zu (%zu bytes) ran "
                                  "twice", (size_t)(s - slots), s->size);
    MP_EXPECT(s->remote_runs == 0, "local_fn of send %zu ran after its "
                                   "remote_fn", (size_t)(s - slots));
    s->local_runs++;
    scribble(s);
}

static void on_remote(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    slot_t *s = slot_of(cookie, "remote_fn");
    size_t  i = (size_t)(s - slots);
    MP_EXPECT(rc == PAMI_SUCCESS, "remote_fn of send %zu: %s", i,
              pami_error_text(rc));
    MP_EXPECT(s->mode != MODE_LOCAL, "remote_fn of send %zu that has none",
              i);
    MP_EXPECT(s->remote_runs == 0, "remote_fn of send %zu (%zu bytes) ran "
                                   "twice", i, s->size);
    MP_EXPECT(s->mode != MODE_BOTH || s->local_runs == 1,
              "remote_fn of send %zu (%zu bytes) before its local_fn", i,
              s->size);
    if (s->receipts == 0) {
        /* Reported with the whole picture at the end. */
        if (early_remote++ < 5)
            fprintf(stderr, "mp_callbacks: task %u: remote_fn of send %zu "
                            "(%zu bytes, %s, to task %u) ran before the "
                            "target's receipt arrived\n", job.me, i, s->size,
                    mode_name[s->mode], s->target);
    }
    s->remote_runs++;
    if (s->mode == MODE_REMOTE)
        scribble(s);
}

static void on_receipt(pami_context_t ctx, void *cookie, const void *hdr,
                       size_t hlen, const void *data, size_t dlen,
                       pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)data; (void)dlen; (void)origin;
    (void)recv;
    uint32_t i;
    MP_EXPECT(hlen == sizeof(i), "receipt of %zu bytes", hlen);
    memcpy(&i, hdr, sizeof(i));
    MP_EXPECT(i < nslots, "receipt for send %u of %zu", i, nslots);
    MP_EXPECT(slots[i].receipts == 0, "two receipts for send %u", i);
    if (slots[i].remote_runs != 0)
        late_receipts++;
    slots[i].receipts++;
}

static void send_receipt(pami_context_t ctx, pami_task_t to, uint32_t slot)
{
    pami_send_immediate_t s = {.dest = mp_ep(&job, to, 0),
                               .dispatch = ID_RECEIPT, .header = &slot,
                               .header_len = sizeof(slot)};
    mp_send_imm_in_handler(ctx, &s);
}

static void check_payload(const void *data, const msg_hdr_t *h,
                          pami_task_t origin, const char *how)
{
    long bad = mp_verify(data, h->size, origin, h->slot, 4);
    MP_EXPECT(bad < 0, "send %u from task %u (%u bytes, %s): wrong at byte "
                       "%ld; was the buffer released too early?", h->slot,
              origin, h->size, how, bad);
}

typedef struct {
    msg_hdr_t   h;
    pami_task_t origin;
    uint8_t    *buf;
} pending_t;

static void on_recv_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    pending_t *p = cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "receive of send %u: %s", p->h.slot,
              pami_error_text(rc));
    check_payload(p->buf, &p->h, p->origin, "rendezvous");
    received++;
    send_receipt(ctx, p->origin, p->h.slot);
    free(p->buf);
    free(p);
}

static void on_data(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)cookie;
    pami_task_t origin;
    pami_endpoint_query(origin_ep, &origin, NULL);
    msg_hdr_t h;
    MP_EXPECT(hlen == sizeof(h), "data message with a %zu-byte header", hlen);
    memcpy(&h, hdr, sizeof(h));
    MP_EXPECT(dlen == h.size, "send %u from task %u: %zu bytes, header says "
                              "%u", h.slot, origin, dlen, h.size);
    if (data != NULL || dlen == 0) {
        check_payload(data, &h, origin, "eager");
        received++;
        send_receipt(ctx, origin, h.slot);
        return;
    }
    MP_EXPECT(recv != NULL, "no data and no recv");
    pending_t *p = malloc(sizeof(*p));
    MP_EXPECT(p != NULL, "out of memory");
    p->h      = h;
    p->origin = origin;
    p->buf    = malloc(dlen);
    MP_EXPECT(p->buf != NULL, "out of memory");
    recv->addr     = p->buf;
    recv->local_fn = on_recv_done;
    recv->cookie   = p;
    rndv_received++;
}

static bool slot_done(const slot_t *s)
{
    return (s->receipts == 1 || (s->receipts == 0 && s->remote_runs)) &&
           (s->mode == MODE_REMOTE || s->local_runs == 1) &&
           (s->mode == MODE_LOCAL || s->remote_runs == 1);
}

/* True when sends first..next-1 are complete; *done is the first that
 * is not. */
static bool batch_done(size_t first, size_t next, size_t *done)
{
    *done = first;
    while (*done < next && slot_done(&slots[*done]))
        (*done)++;
    return *done == next;
}

int main(int argc, char **argv)
{
    mp_init(&job, "mp_callbacks", &argc, argv, NULL, 1, false);
    unsigned reps = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 4;
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");
    pami_context_t ctx = job.ctx[0];
    MP_CHECK(pami_dispatch_set(ctx, ID_DATA, on_data, NULL, NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_RECEIPT, on_receipt, NULL, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));

    size_t rt = job.attr.rndv_threshold;
    const size_t sizes[] = {0, 1, 100, 1000, 8192, 60000, rt - 1, rt, rt + 1,
                            65536, 200000};
    const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
    size_t npeers = job.size - 1;
    nslots = (size_t)MODES * nsizes * reps * npeers;
    slots  = calloc(nslots, sizeof(*slots));
    MP_EXPECT(slots != NULL, "out of memory");

    double t0 = mp_now();
    size_t next = 0;
    for (int mode = 0; mode < MODES; mode++) {
        for (size_t si = 0; si < nsizes; si++) {
            size_t first = next;
            for (unsigned r = 0; r < reps; r++) {
                for (size_t k = 1; k < job.size; k++) {
                    slot_t *s = &slots[next];
                    s->size = sizes[si];
                    s->mode = mode;
                    s->target = mp_peer(&job, k);
                    s->buf  = malloc(s->size ? s->size : 1);
                    MP_EXPECT(s->buf != NULL, "out of memory");
                    mp_fill(s->buf, s->size, job.me, next, 4);
                    msg_hdr_t h = {(uint32_t)next, (uint32_t)s->size};
                    pami_send_t ps = {
                        .send = {.dest = mp_ep(&job, mp_peer(&job, k), 0),
                                 .dispatch = ID_DATA, .header = &h,
                                 .header_len = sizeof(h),
                                 .data = s->size ? s->buf : NULL,
                                 .data_len = s->size},
                        .local_fn  = mode != MODE_REMOTE ? on_local : NULL,
                        .remote_fn = mode != MODE_LOCAL ? on_remote : NULL,
                        .cookie    = s};
                    in_send = true;
                    MP_CHECK(pami_send(ctx, &ps));
                    in_send = false;
                    next++;
                }
            }
            /* Each batch completes before the next, which bounds memory
             * and shows which case hangs. */
            size_t done = first;
            MP_WAIT(&job, ctx, batch_done(first, next, &done), MP_WAIT_S,
                    "callbacks of %zu-byte sends (%s): send %zu has local "
                    "%u remote %u receipt %u", sizes[si], mode_name[mode],
                    done, slots[done].local_runs, slots[done].remote_runs,
                    slots[done].receipts);
            for (size_t i = first; i < next; i++) {
                free(slots[i].buf);
                slots[i].buf  = NULL;
                slots[i].size = 0;
            }
        }
    }
    uint64_t expect = (uint64_t)nslots; /* as many come in as go out */
    MP_WAIT(&job, ctx, received == expect, MP_WAIT_S,
            "%llu of %llu messages received", (unsigned long long)received,
            (unsigned long long)expect);
    mp_sync(&job);
    /* Late doubles would show up now. */
    for (int i = 0; i < 5; i++)
        pami_context_wait(ctx, 20);
    mp_sync(&job);
    MP_EXPECT(early_remote == 0,
              "remote_fn ran before the target's handler had finished for "
              "%zu of %zu sends (%zu of those receipts came later)",
              early_remote, nslots, late_receipts);
    for (size_t i = 0; i < nslots; i++)
        MP_EXPECT(slot_done(&slots[i]), "send %zu not complete at the end", i);
    MP_EXPECT(received == expect, "%llu messages received, expected %llu",
              (unsigned long long)received, (unsigned long long)expect);
    if (job.me == 0)
        printf("%zu sends per task (%d modes x %zu sizes x %u x %zu peers) "
               "in %.3f s; every callback once, in order, after the "
               "target's receipt; %llu payloads arrived by rendezvous "
               "at task 0\n", nslots, MODES, nsizes, reps, npeers,
               mp_now() - t0, (unsigned long long)rndv_received);
    mp_finish(&job);
    free(slots);
    return 0;
}
