/*
 * rma_huge: one pami_send of 1 GiB (or the size given), every byte
 * checked.
 *
 * Task 0 fills a buffer with a pattern defined by offset and sends it to
 * task 1 with local_fn and remote_fn; task 1's handler gives a buffer of
 * its own (or, if the payload arrived whole, checks it at once) and checks
 * all of it, 8 bytes at a time, in recv local_fn. Task 0 then finds its
 * local_fn ran once before remote_fn, both with PAMI_SUCCESS.
 *
 *   pamirun -n 2 rma_huge [bytes]      (suite 'slow')
 */
#include "rma_util.h"

#include <sys/mman.h>

enum { ID_HUGE = 70 };

static mp_job_t job;
static size_t   bytes = (size_t)1 << 30;
static uint8_t *rbuf;
static bool     received, whole;
static cb_count_t sent = {.what = "1 GiB send"};
static double   t_recv;

static void *map(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    MP_EXPECT(p != MAP_FAILED, "mmap of %zu bytes failed", n);
    return p;
}

static void check(const uint8_t *p, const char *how)
{
    long bad = rma_check(p, 0, bytes, rma_seed(0, 1));
    MP_EXPECT(bad < 0, "%zu-byte payload (%s) wrong at byte %ld", bytes, how,
              bad);
}

static void on_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "receive of %zu bytes: %s", bytes,
              pami_error_text(rc));
    MP_EXPECT(!received, "recv local_fn ran twice");
    t_recv = mp_now();
    check(rbuf, "in recv local_fn");
    received = true;
}

static void on_huge(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)hdr; (void)hlen; (void)origin;
    MP_EXPECT(dlen == bytes, "payload of %zu bytes, sent %zu", dlen, bytes);
    if (data != NULL) {
        whole = true;
        t_recv = mp_now();
        check(data, "whole");
        received = true;
        return;
    }
    MP_EXPECT(recv != NULL, "no data and no recv");
    rbuf = map(bytes);
    recv->addr     = rbuf;
    recv->local_fn = on_done;
}

int main(int argc, char **argv)
{
    mp_init(&job, "rma_huge", &argc, argv, NULL, 1, false);
    if (argc > 1)
        bytes = strtoull(argv[1], NULL, 0);
    MP_EXPECT(job.size == 2, "runs on 2 tasks");
    pami_context_t ctx = job.ctx[0];
    MP_CHECK(pami_dispatch_set(ctx, ID_HUGE, on_huge, NULL, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));

    double t0 = mp_now(), t1 = 0;
    if (job.me == 0) {
        uint8_t *buf = map(bytes);
        rma_fill(buf, 0, bytes, rma_seed(0, 1));
        t1 = mp_now();
        pami_send_t s = {.send = {.dest = mp_ep(&job, 1, 0),
                                  .dispatch = ID_HUGE, .data = buf,
                                  .data_len = bytes},
                         .local_fn = cb_count_local,
                         .remote_fn = cb_count_remote, .cookie = &sent};
        sent.in_call = true;
        MP_CHECK(pami_send(ctx, &s));
        sent.in_call = false;
        MP_WAIT(&job, ctx, sent.local == 1 && sent.remote == 1,
                4 * MP_WAIT_S, "local_fn %u, remote_fn %u", sent.local,
                sent.remote);
        rma_op_wait(&job, &sent, true, true);
        munmap(buf, bytes);
        printf("%zu bytes: filled in %.2f s, sent and checked in %.2f s\n",
               bytes, t1 - t0, mp_now() - t1);
    } else {
        MP_WAIT(&job, ctx, received, 4 * MP_WAIT_S, "the %zu-byte payload",
                bytes);
        printf("task 1: payload %s, checked in %.2f s\n",
               whole ? "arrived whole" : "fetched into my buffer",
               mp_now() - t_recv);
        if (rbuf != NULL)
            munmap(rbuf, bytes);
    }
    mp_sync(&job);
    mp_finish(&job);
    return 0;
}
