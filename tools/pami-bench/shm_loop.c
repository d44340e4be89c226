/*
 * pami-shm-loop: the software cost of a message through the shared-memory
 * queues, without the cross-core transfer and without waiting for another
 * task: one task, two contexts, one thread; context 0 sends to context 1,
 * whose handler answers, and the thread advances each in turn. Prints the
 * round trip (two messages) per batch: the smallest batch is what the
 * code costs, and on a machine shared with other work it moves far less
 * than a two-task latency does (docs/PERFORMANCE.md).
 *
 *   pamirun -n 1 pami-shm-loop [bytes [round trips per batch [batches]]]
 */
#include <pami.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ID_PING 1

static volatile unsigned long answered, pinged;
static pami_context_t         ctx[2];
static pami_endpoint_t        to0;
static char                   buf[4096];

static void die(const char *what, pami_result_t rc)
{
    fprintf(stderr, "pami-shm-loop: %s: %s\n", what, pami_error_text(rc));
    exit(1);
}

static void on_ping(pami_context_t c, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)c; (void)cookie; (void)hdr; (void)hlen; (void)data; (void)origin;
    (void)recv;
    pinged++;
    pami_send_immediate_t m = {.dest = to0, .dispatch = ID_PING,
                               .data = buf, .data_len = dlen};
    pami_result_t rc = pami_send_immediate(ctx[1], &m);
    if (rc != PAMI_SUCCESS)
        die("answer", rc); /* a queue of 256 lines has room for one */
}

static void on_answer(pami_context_t c, void *cookie, const void *hdr,
                      size_t hlen, const void *data, size_t dlen,
                      pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)c; (void)cookie; (void)hdr; (void)hlen; (void)data; (void)dlen;
    (void)origin; (void)recv;
    answered++;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    size_t bytes   = argc > 1 ? strtoul(argv[1], NULL, 0) : 8;
    long   n       = argc > 2 ? strtol(argv[2], NULL, 0) : 10000;
    int    batches = argc > 3 ? atoi(argv[3]) : 15;
    if (bytes > sizeof(buf) || n <= 0 || batches <= 0 || batches > 1000) {
        fprintf(stderr, "usage: pamirun -n 1 pami-shm-loop [bytes (<= %zu) "
                        "[round trips per batch [batches (<= 1000)]]]\n",
                sizeof(buf));
        return 2;
    }
    pami_client_t cl;
    pami_result_t rc = pami_client_create("shm-loop", NULL, &cl);
    if (rc != PAMI_SUCCESS)
        die("pami_client_create", rc);
    if ((rc = pami_context_createv(cl, NULL, 2, ctx)) != PAMI_SUCCESS)
        die("pami_context_createv", rc);
    pami_dispatch_set(ctx[1], ID_PING, on_ping, NULL, NULL);
    pami_dispatch_set(ctx[0], ID_PING, on_answer, NULL, NULL);
    pami_endpoint_t to1;
    pami_endpoint_create(cl, 0, 1, &to1);
    pami_endpoint_create(cl, 0, 0, &to0);
    pami_send_immediate_t m = {.dest = to1, .dispatch = ID_PING,
                               .data = buf, .data_len = bytes};
    double *rt = malloc((size_t)batches * sizeof(*rt));
    if (rt == NULL)
        die("malloc", PAMI_ENOMEM);
    for (int b = 0; b < batches; b++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
            unsigned long a = answered, p = pinged;
            while ((rc = pami_send_immediate(ctx[0], &m)) == PAMI_EAGAIN)
                pami_context_advance(ctx[0], 1);
            if (rc != PAMI_SUCCESS)
                die("pami_send_immediate", rc);
            while (pinged == p)
                pami_context_advance(ctx[1], 1);
            while (answered == a)
                pami_context_advance(ctx[0], 1);
        }
        rt[b] = (now_ns() - t0) / (double)n;
    }
    qsort(rt, (size_t)batches, sizeof(*rt), by_value);
    pami_context_stats_t s;
    pami_context_stats(ctx[0], &s);
    /* Round trips that did not go by queue measure something else. */
    if (s.shm_sent < (uint64_t)n * (uint64_t)batches) {
        fprintf(stderr, "pami-shm-loop: only %llu of %llu messages went by "
                        "queue (PAMI_SHM_FASTPATH=0?)\n",
                (unsigned long long)s.shm_sent,
                (unsigned long long)n * (unsigned long long)batches);
        return 1;
    }
    printf("{\"test\": \"shm_loop\", \"bytes\": %zu, \"rt_ns_min\": %.1f, "
           "\"rt_ns_median\": %.1f, \"round_trips\": %ld, \"batches\": %d}\n",
           bytes, rt[0], rt[batches / 2], n, batches);
    free(rt);
    pami_client_destroy(&cl);
    return 0;
}
