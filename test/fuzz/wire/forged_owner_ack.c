/*
 * A put, get or rmw through the owner's path (PAMI_RMA_VIA_OWNER=1 here,
 * over TCP across nodes) is a request waiting for the owner's answer,
 * named by a cookie a peer can guess; so is a send waiting for the
 * core's ack. An ack must not end such an operation: it carries no data,
 * so a get (or a get's piece) would end with PAMI_SUCCESS and its buffer
 * as it was, an rmw without its old value.
 *
 * Three tasks. Task 0 gets 256 KiB from task 1 in pieces
 * (PAMI_RMA_OWNER_PIECE=16384: 16 pieces), puts 64 KiB in pieces and
 * makes a fetch-add, while task 1 does not advance the context that owns
 * the region; task 2 sends task 0 acks for every likely cookie, in the
 * name of task 1 (the AM header's origin, which is what a receiver
 * knows). None may end an operation.
 *
 * Ordering without timing: task 2 sends its acks and then a "forged"
 * message on the same endpoint, so when task 0 has it, every ack was
 * handled; only then does task 0 tell task 1 (on a second context, whose
 * progress does not serve the first) to answer.
 */
#include "../../mp/mp_util.h"
#include "raw_send.h"

#define ID_MR      7  /* task 1 -> 0: the region */
#define ID_ISSUED  8  /* task 0 -> 2: the operations are out */
#define ID_FORGED  9  /* task 2 -> 0: every forged ack is out */
#define ID_GO      10 /* task 0 -> 1, context 1: answer now */
#define GET_BYTES  (256u * 1024)
#define PUT_BYTES  (64u * 1024)
#define COUNTER_AT (GET_BYTES + PUT_BYTES)
#define REGION     (COUNTER_AT + 8)
#define GENERATIONS 64
#define INDEXES    128
#define MAGIC      0x4f41434bu
#define COUNTER0   41

typedef struct {
    pami_memregion_t mr;
    atomic_bool      have_mr, issued, forged, go;
    atomic_uint      ended;      /* task 0: operations ended */
    atomic_uint      early;      /* of those, before task 1 could answer */
    atomic_bool      answerable; /* task 0: GO was sent */
    pami_result_t    rc[3];
} oa_t;

static oa_t oa;

static void on_mr(pami_context_t ctx, void *cookie, const void *header,
                  size_t header_size, const void *data, size_t data_size,
                  pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)data; (void)data_size; (void)origin;
    (void)recv;
    MP_EXPECT(header_size == sizeof(oa.mr), "a %zu-byte region",
              header_size);
    memcpy(&oa.mr, header, sizeof(oa.mr));
    atomic_store(&oa.have_mr, true);
}

#define FLAG_HANDLER(name, flag)                                            \
    static void name(pami_context_t ctx, void *cookie, const void *header,  \
                     size_t header_size, const void *data, size_t dsize,    \
                     pami_endpoint_t origin, pami_recv_t *recv)             \
    {                                                                       \
        (void)ctx; (void)cookie; (void)header; (void)header_size;          \
        (void)data; (void)dsize; (void)origin; (void)recv;                  \
        atomic_store(&oa.flag, true);                                       \
    }
FLAG_HANDLER(on_issued, issued)
FLAG_HANDLER(on_forged, forged)
FLAG_HANDLER(on_go, go)

static void on_end(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    size_t which = (size_t)(uintptr_t)cookie;
    oa.rc[which] = rc;
    if (!atomic_load(&oa.answerable))
        atomic_fetch_add(&oa.early, 1);
    atomic_fetch_add(&oa.ended, 1);
}

static void signal_to(mp_job_t *job, pami_context_t ctx, pami_task_t to,
                      size_t offset, size_t id)
{
    pami_send_immediate_t s = {.dest = mp_ep(job, to, offset),
                               .dispatch = id};
    mp_send_imm(job, ctx, &s);
}

static void origin(mp_job_t *job)
{
    pami_context_t ctx = job->ctx[0];
    static uint8_t got[GET_BYTES], put[PUT_BYTES];
    uint64_t       old = 0xdeadbeefull;
    memset(got, 0xee, sizeof(got));
    mp_fill(put, sizeof(put), 0, 1, MAGIC);
    pami_endpoint_t owner = mp_ep(job, 1, 0);

    pami_rma_t g = {.dest = owner, .local = got, .bytes = GET_BYTES,
                    .remote_mr = &oa.mr, .remote_offset = 0,
                    .local_fn = on_end, .cookie = (void *)(uintptr_t)0};
    MP_CHECK(pami_get(ctx, &g));
    pami_rma_t p = {.dest = owner, .local = put, .bytes = PUT_BYTES,
                    .remote_mr = &oa.mr, .remote_offset = GET_BYTES,
                    .remote_fn = on_end, .cookie = (void *)(uintptr_t)1};
    MP_CHECK(pami_put(ctx, &p));
    pami_rmw_t r = {.dest = owner, .remote_mr = &oa.mr,
                    .remote_offset = COUNTER_AT, .op = PAMI_RMW_FETCH_ADD,
                    .size = 8, .value = 1, .result = &old,
                    .done_fn = on_end, .cookie = (void *)(uintptr_t)2};
    MP_CHECK(pami_rmw(ctx, &r));

    signal_to(job, ctx, 2, 0, ID_ISSUED);
    MP_WAIT(job, ctx, atomic_load(&oa.forged), MP_WAIT_S,
            "task 2's acks");
    /* Whatever the acks ended has reported by now. */
    for (int i = 0; i < 16; i++)
        pami_context_advance(ctx, 64);
    unsigned early = atomic_load(&oa.ended);
    atomic_store(&oa.answerable, true);
    signal_to(job, ctx, 1, 1, ID_GO);
    MP_WAIT(job, ctx, atomic_load(&oa.ended) == 3, MP_WAIT_S,
            "%u of 3 operations to end", atomic_load(&oa.ended));

    pami_context_stats_t st;
    MP_CHECK(pami_context_stats(ctx, &st));
    printf("forged-owner-ack: task 0: %u of 3 operations ended before the "
           "owner answered; %llu messages dropped\n", early,
           (unsigned long long)st.dropped_malformed);
    MP_EXPECT(early == 0 && atomic_load(&oa.early) == 0,
              "%u operations through the owner ended by forged acks",
              early);
    for (int i = 0; i < 3; i++)
        MP_EXPECT(oa.rc[i] == PAMI_SUCCESS, "operation %d: %s", i,
                  pami_error_text(oa.rc[i]));
    long bad = mp_verify(got, sizeof(got), 1, 0, MAGIC);
    MP_EXPECT(bad < 0, "the get's byte %ld differs", bad);
    MP_EXPECT(old == COUNTER0, "the fetch-add gave %llu, not %d",
              (unsigned long long)old, COUNTER0);
    MP_EXPECT(st.dropped_malformed >= (uint64_t)GENERATIONS * INDEXES - 64,
              "only %llu forged acks dropped",
              (unsigned long long)st.dropped_malformed);
}

static void owner(mp_job_t *job, uint8_t *mem)
{
    /* From the sync on, context 0 (the region's) waits for GO: only
     * context 1 progresses. */
    MP_WAIT(job, job->ctx[1], atomic_load(&oa.go), MP_WAIT_S,
            "task 0's go");
    (void)mem;
}

static void forger(mp_job_t *job)
{
    pami_context_t ctx = job->ctx[0];
    MP_WAIT(job, ctx, atomic_load(&oa.issued), MP_WAIT_S,
            "task 0's operations");
    for (uint32_t g = 0; g < GENERATIONS; g++)
        for (uint32_t i = 0; i < INDEXES; i++) {
            uint8_t       pkt[sizeof(pami_am_hdr_t) + sizeof(pami_ack_t)];
            pami_am_hdr_t h = {.origin_task = 1, .origin_ctx = 0,
                               .dispatch = PAMI_DISPATCH_ACK};
            pami_ack_t    a = {.cookie = (uint64_t)g << 32 | i,
                               .result = PAMI_SUCCESS};
            memcpy(pkt, &h, sizeof(h));
            memcpy(pkt + sizeof(h), &a, sizeof(a));
            raw_send(job, ctx, 0, pkt, sizeof(pkt), NULL, 0);
            if (i % 32 == 31)
                pami_context_advance(ctx, 64);
        }
    MP_WAIT(job, ctx, raw_inflight == 0, MP_WAIT_S,
            "%lu forged acks to leave", raw_inflight);
    /* Behind the acks on the same endpoint. */
    signal_to(job, ctx, 0, 0, ID_FORGED);
}

int main(int argc, char **argv)
{
    static mp_job_t job;
    mp_init(&job, "forged-owner-ack", &argc, argv, NULL, 2, false);
    MP_EXPECT(job.size == 3, "runs as 3 tasks, not %zu", job.size);
    for (size_t c = 0; c < 2; c++) {
        MP_CHECK(pami_dispatch_set(job.ctx[c], ID_MR, on_mr, NULL, NULL));
        MP_CHECK(pami_dispatch_set(job.ctx[c], ID_ISSUED, on_issued, NULL,
                                   NULL));
        MP_CHECK(pami_dispatch_set(job.ctx[c], ID_FORGED, on_forged, NULL,
                                   NULL));
        MP_CHECK(pami_dispatch_set(job.ctx[c], ID_GO, on_go, NULL, NULL));
    }
    MP_CHECK(pami_dispatch_fence(job.client));
    pami_context_t ctx = job.ctx[0];

    uint8_t *mem = NULL;
    pami_memregion_t mr;
    if (job.me == 1) {
        mem = calloc(1, REGION);
        MP_EXPECT(mem != NULL, "out of memory");
        mp_fill(mem, GET_BYTES, 1, 0, MAGIC);
        uint64_t c0 = COUNTER0;
        memcpy(mem + COUNTER_AT, &c0, sizeof(c0));
        MP_CHECK(pami_memregion_create(ctx, mem, REGION, &mr));
    }
    mp_sync(&job);
    /* The region goes out only after the sync, from context 1: mp_sync
     * lets a task leave before the others have, and a task 1 still in it
     * would progress context 0 and answer the operations before the acks
     * (seen under load: 3 of 3 "early", every ack for no waiting send). */
    if (job.me == 1) {
        pami_send_t s = {.send = {.dest = mp_ep(&job, 0, 0),
                                  .dispatch = ID_MR, .header = &mr,
                                  .header_len = sizeof(mr)}};
        MP_CHECK(pami_send(job.ctx[1], &s));
    } else if (job.me == 0) {
        MP_WAIT(&job, ctx, atomic_load(&oa.have_mr), MP_WAIT_S,
                "task 1's region");
    }

    if (job.me == 0)
        origin(&job);
    else if (job.me == 1)
        owner(&job, mem);
    else
        forger(&job);

    /* Task 1 serves the operations here. */
    mp_sync(&job);
    if (job.me == 1) {
        long bad = mp_verify(mem + GET_BYTES, PUT_BYTES, 0, 1, MAGIC);
        MP_EXPECT(bad < 0, "the put's byte %ld differs at the owner", bad);
        uint64_t c;
        memcpy(&c, mem + COUNTER_AT, sizeof(c));
        MP_EXPECT(c == COUNTER0 + 1, "the counter is %llu",
                  (unsigned long long)c);
        MP_CHECK(pami_memregion_destroy(ctx, &mr));
    }
    mp_sync(&job);
    MP_CHECK(pami_client_destroy(&job.client));
    free(mem);
    return 0;
}
