/*
 * shm_sizes: messages of every size around the queue's limits arrive
 * whole, byte for byte, and in order (docs/protocols/shm-queue.md):
 * around one line, an entry of the start lap (2032 B by default), the
 * start lap (16 KiB), an entry of a grown queue (65520 B) and the
 * rendezvous threshold (65536 B of data), in steps of 8 bytes across each
 * limit, so that the limit itself is crossed whatever pami's own header
 * adds. Every task sends the list to every task (itself included) with
 * pami_send, those up to the immediate limit also with
 * pami_send_immediate, for several rounds, with up to 32 sends in
 * flight; each receiver checks sizes, contents and sequence numbers per
 * origin, and the counts at the end.
 *
 *   pamirun -n N shm_sizes [rounds]
 */
#include "../mp/mp_util.h"

enum { ID_SIZES = 40 };

#define SALT     11
#define INFLIGHT 32

static mp_job_t  job;
static size_t   *sizes;
static size_t    nsizes;
static uint64_t *next_seq;   /* per origin */
static uint64_t  received, rndv_done, rndv_started;
static uint64_t  local_done;
static bool      busy[INFLIGHT]; /* a send from that buffer is out */

/* Message seq's size: the list, each size once by pami_send and, when
 * it fits, once more by pami_send_immediate. */
static size_t size_of(uint64_t seq)
{
    return sizes[(seq / 2) % nsizes];
}

static void add_around(size_t at, size_t span)
{
    for (size_t s = at > span ? at - span : 0; s <= at + span; s += 8)
        sizes[nsizes++] = s;
}

static void on_rndv_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    mp_pending_t *p = cookie;
    mp_pending_end(p, rc, size_of(p->seq), SALT);
    rndv_done++;
}

static void on_msg(pami_context_t ctx, void *cookie, const void *hdr,
                   size_t hlen, const void *data, size_t dlen,
                   pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx; (void)cookie;
    pami_task_t origin;
    uint64_t    seq = mp_expect_next(hdr, hlen, origin_ep, next_seq, &origin);
    received++;
    size_t len = size_of(seq);
    MP_EXPECT(dlen == len, "message %llu from task %u: %zu bytes, expected "
              "%zu", (unsigned long long)seq, origin, dlen, len);
    if (data == NULL && dlen > 0) {
        MP_EXPECT(dlen >= job.attr.rndv_threshold, "message %llu: %zu bytes "
                  "without data below the threshold", (unsigned long long)seq,
                  dlen);
        rndv_started++;
        mp_recv_into_new(recv, dlen, origin, seq, on_rndv_done);
        return;
    }
    mp_expect_payload(data, dlen, origin, seq, SALT);
}

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    MP_EXPECT(rc == PAMI_SUCCESS, "pami_send: %s", pami_error_text(rc));
    busy[(uintptr_t)cookie] = false;
    local_done++;
}

int main(int argc, char **argv)
{
    mp_init(&job, "shm_sizes", &argc, argv, NULL, 1, false);
    uint64_t rounds = argc > 1 ? strtoull(argv[1], NULL, 10) : 3;
    sizes = malloc(512 * sizeof(*sizes));
    next_seq = calloc(job.size, sizeof(*next_seq));
    MP_EXPECT(sizes != NULL && next_seq != NULL, "out of memory");
    sizes[nsizes++] = 0;
    add_around(48, 40);        /* one line */
    add_around(1024, 16);      /* the immediate limit */
    add_around(2032, 40);      /* an entry of the start lap */
    add_around(16384, 40);     /* the start lap */
    add_around(65520, 48);     /* an entry of a grown queue, the threshold */
    sizes[nsizes++] = 100 * 1024;
    size_t max = 100 * 1024;
    uint8_t *bufs[INFLIGHT];
    for (int i = 0; i < INFLIGHT; i++) {
        bufs[i] = malloc(max);
        MP_EXPECT(bufs[i] != NULL, "out of memory");
    }
    pami_context_t ctx = job.ctx[0];
    MP_CHECK(pami_dispatch_set(ctx, ID_SIZES, on_msg, NULL, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));

    uint64_t n = rounds * nsizes * 2, sends = 0, rndv_expected = 0;
    for (uint64_t seq = 0; seq < n; seq++)
        for (size_t k = 0; k < job.size; k++) {
            pami_task_t to  = mp_peer(&job, k);
            size_t      len = size_of(seq);
            if (len >= job.attr.rndv_threshold)
                rndv_expected++;
            /* A buffer is reused once its send completed locally;
             * immediates copy (buffers free on return). */
            size_t slot = sends % INFLIGHT;
            MP_WAIT(&job, ctx, !busy[slot], MP_WAIT_S,
                    "local completion of send %llu",
                    (unsigned long long)(sends - INFLIGHT));
            uint8_t *buf = bufs[slot];
            mp_fill(buf, len, job.me, seq, SALT);
            pami_send_immediate_t s = {
                .dest = mp_ep(&job, to, 0), .dispatch = ID_SIZES,
                .header = &seq, .header_len = sizeof(seq),
                .data = buf, .data_len = len};
            if (seq % 2 == 1 && len + sizeof(seq) <= job.attr.immediate_max) {
                mp_send_imm(&job, ctx, &s);
                continue;
            }
            busy[slot] = true;
            pami_send_t full = {.send = s, .local_fn = on_local,
                                .cookie = (void *)(uintptr_t)slot};
            MP_CHECK(pami_send(ctx, &full));
            sends++;
        }
    MP_WAIT(&job, ctx, local_done == sends && received == n * job.size &&
                           rndv_done == rndv_expected,
            120.0, "%llu of %llu messages in, %llu of %llu rendezvous "
            "done, %llu of %llu sends out", (unsigned long long)received,
            (unsigned long long)(n * job.size), (unsigned long long)rndv_done,
            (unsigned long long)rndv_expected,
            (unsigned long long)local_done, (unsigned long long)sends);
    for (size_t t = 0; t < job.size; t++)
        MP_EXPECT(next_seq[t] == n, "%llu messages from task %zu, expected "
                  "%llu", (unsigned long long)next_seq[t], t,
                  (unsigned long long)n);
    MP_EXPECT(rndv_started == rndv_expected, "%llu rendezvous, expected %llu",
              (unsigned long long)rndv_started,
              (unsigned long long)rndv_expected);
    pami_context_stats_t st;
    MP_CHECK(pami_context_stats(ctx, &st));
    printf("shm_sizes: task %u: %llu messages of %zu sizes; shm on=%llu "
           "sent=%llu received=%llu full=%llu\n", job.me,
           (unsigned long long)received, nsizes,
           (unsigned long long)st.shm_on, (unsigned long long)st.shm_sent,
           (unsigned long long)st.shm_received,
           (unsigned long long)st.shm_full);
    mp_sync(&job);
    for (int i = 0; i < INFLIGHT; i++)
        free(bufs[i]);
    free(sizes);
    free(next_seq);
    mp_finish(&job);
    return 0;
}
