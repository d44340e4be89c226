/*
 * mp_fault: a task that dies in the middle of a message exchange.
 *
 *   mp_fault exit DIR   the last task _exit(3)s mid-exchange
 *   mp_fault kill DIR   the last task raise(SIGKILL)s mid-exchange
 *       Driven by mp_fault.sh: every task writes DIR/pid-<task>; the
 *       victim writes DIR/died (its CLOCK_REALTIME death time) just before
 *       dying, with sends still in flight. The traffic stays below the
 *       rendezvous threshold: what is checked here is pamirun. The
 *       survivors keep exchanging (counting errors, never exiting by
 *       themselves) until pamirun kills them; if nobody does in 60 s they
 *       exit 1.
 *
 *   mp_fault peer-eager
 *   mp_fault peer
 *       Task 1 leaves mid-exchange with _exit(0), which pamirun accepts as
 *       a normal end, so the others see the core's failure handling:
 *       within 15 s they get PAMI_PEER_FAILED (from a callback or a
 *       send), every operation toward task 1 completes exactly once, new
 *       sends to it fail at once with PAMI_PEER_FAILED, the survivors
 *       still exchange among themselves, and the client is destroyed
 *       within PAMI_SHUTDOWN_TIMEOUT plus 5 s. With "peer", task 1 leaves
 *       200 KiB payloads behind that the survivors have yet to fetch
 *       (rendezvous from a dead origin); with "peer-eager" only eager
 *       messages are in flight from it. With PAMI_ASYNC_PROGRESS=1 the
 *       progress thread advances the context too (the calls here hold
 *       its lock).
 */
#include "mp_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

enum { ID_X = 100, ID_SURV = 101 };

#define BIG        (200 * 1024)
#define SMALL      100
#define MID        (16 * 1024)
#define MAX_SENDS  8192

typedef struct {
    pami_task_t to;
    size_t      len;
    bool        want_remote;
    int         local_runs;
    int         remote_runs;
    pami_result_t local_rc;
    pami_result_t remote_rc;
} op_t;

static mp_job_t job;
static op_t     ops[MAX_SENDS];
static size_t   nops;
static uint8_t *src_big, *src_small;
static uint64_t *got;             /* messages received per origin */
static uint64_t recv_errors;      /* rendezvous receives that failed */
static uint64_t recv_pending;
static uint64_t peer_failed_seen; /* PAMI_PEER_FAILED results, any source */
static uint64_t surv_got;

static bool op_done(const op_t *o)
{
    return o->local_runs == 1 && (!o->want_remote || o->remote_runs == 1);
}

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    op_t *o = cookie;
    MP_EXPECT(o->local_runs == 0, "local_fn of a send to task %u ran twice",
              o->to);
    MP_EXPECT(o->remote_runs == 0, "local_fn after remote_fn");
    o->local_runs++;
    o->local_rc = rc;
    if (rc == PAMI_PEER_FAILED)
        peer_failed_seen++;
}

static void on_remote(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    op_t *o = cookie;
    MP_EXPECT(o->remote_runs == 0, "remote_fn of a send to task %u ran "
                                   "twice", o->to);
    o->remote_runs++;
    o->remote_rc = rc;
    if (rc == PAMI_PEER_FAILED)
        peer_failed_seen++;
}

typedef struct {
    uint8_t *buf;
} pending_t;

static void on_recv_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    pending_t *p = cookie;
    if (rc != PAMI_SUCCESS)
        recv_errors++;
    if (rc == PAMI_PEER_FAILED)
        peer_failed_seen++;
    recv_pending--;
    free(p->buf);
    free(p);
}

static void on_x(pami_context_t ctx, void *cookie, const void *hdr,
                 size_t hlen, const void *data, size_t dlen,
                 pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)hdr; (void)hlen;
    pami_task_t origin;
    pami_endpoint_query(origin_ep, &origin, NULL);
    got[origin]++;
    if (data != NULL || dlen == 0)
        return;
    pending_t *p = malloc(sizeof(*p));
    MP_EXPECT(p != NULL, "out of memory");
    p->buf = malloc(dlen);
    MP_EXPECT(p->buf != NULL, "out of memory");
    recv->addr     = p->buf;
    recv->local_fn = on_recv_done;
    recv->cookie   = p;
    recv_pending++;
}

static void on_surv(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)recv;
    pami_task_t origin;
    pami_endpoint_query(origin_ep, &origin, NULL);
    uint32_t i;
    MP_EXPECT(hlen == sizeof(i), "survivor message header of %zu bytes",
              hlen);
    memcpy(&i, hdr, sizeof(i));
    long bad = mp_verify(data, dlen, origin, i, 5);
    MP_EXPECT(dlen == 32 && bad < 0, "survivor message %u from task %u: "
                                     "%zu bytes, wrong at %ld", i, origin,
              dlen, bad);
    surv_got++;
}

/* Starts a send of len bytes to `to`; returns the send's result. */
static pami_result_t start(pami_task_t to, size_t len, bool remote)
{
    MP_EXPECT(nops < MAX_SENDS, "too many sends");
    op_t *o = &ops[nops];
    memset(o, 0, sizeof(*o));
    o->to          = to;
    o->len         = len;
    o->want_remote = remote;
    uint32_t h = (uint32_t)nops;
    pami_send_t ps = {
        .send = {.dest = mp_ep(&job, to, 0), .dispatch = ID_X, .header = &h,
                 .header_len = sizeof(h),
                 .data = len > SMALL ? src_big : src_small, .data_len = len},
        .local_fn  = on_local,
        .remote_fn = remote ? on_remote : NULL,
        .cookie    = o};
    pami_result_t rc = pami_send(job.ctx[0], &ps);
    if (rc == PAMI_SUCCESS)
        nops++;
    else if (rc == PAMI_PEER_FAILED)
        peer_failed_seen++;
    return rc;
}

static size_t ops_open(void)
{
    size_t n = 0;
    for (size_t i = 0; i < nops; i++)
        n += !op_done(&ops[i]);
    return n;
}

/* Oldest sends are retired when all are done, to reuse the table. */
static void recycle(void)
{
    if (ops_open() == 0)
        nops = 0;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    MP_EXPECT(fd >= 0, "cannot write %s: %s", path, strerror(errno));
    size_t len = strlen(text);
    MP_EXPECT(write(fd, text, len) == (ssize_t)len, "short write");
    close(fd);
}

/* ---- exit / kill: die and let pamirun clean up ---- */

static void die_mode(bool kill_self, const char *dir)
{
    char text[64];
    pami_task_t victim = (pami_task_t)(job.size - 1);
    double      give_up = mp_now() + 60.0;

    for (uint64_t round = 0;; round++) {
        for (size_t k = 1; k < job.size; k++) {
            pami_task_t to = mp_peer(&job, k);
            start(to, round % 4 == 3 ? MID : SMALL, true);
        }
        if (job.me == victim && round == 20) {
            /* Mid-exchange, with sends still in flight. */
            for (size_t k = 1; k < job.size; k++)
                start(mp_peer(&job, k), MID, true);
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            snprintf(text, sizeof(text), "%lld.%09ld\n",
                     (long long)ts.tv_sec, ts.tv_nsec);
            write_file(dir, "died", text);
            if (kill_self)
                raise(SIGKILL);
            /* _exit: no clean-up, as in a crash; under LeakSanitizer,
             * exit() would also report the client as a leak and turn the
             * code into 1. */
            fflush(NULL);
            _exit(3);
        }
        /* Survivors: wait for this round, errors included, then go on.
         * pamirun's SIGTERM ends this loop. */
        while (ops_open() > 0 || recv_pending > 0) {
            MP_EXPECT(mp_now() < give_up, "still running 60 s after the "
                                          "victim should have died: "
                                          "pamirun did not end the job");
            pami_context_wait(job.ctx[0], 100);
        }
        recycle();
        if (peer_failed_seen > 0)
            pami_context_wait(job.ctx[0], 100);
        MP_EXPECT(mp_now() < give_up, "pamirun did not end the job");
    }
}

/* ---- peer: the core's own failure handling ---- */

static void peer_mode(bool rndv_in_flight)
{
    const pami_task_t victim = 1;
    pami_context_t    ctx    = job.ctx[0];
    MP_EXPECT(job.size >= 3, "peer mode needs at least 3 tasks");

    /* Warm up: everyone talks to everyone, all endpoints connected.
     * With a progress thread (PAMI_ASYNC_PROGRESS=1) every call here
     * holds the context lock. */
    mp_lock(&job, ctx);
    for (int round = 0; round < 20; round++)
        for (size_t k = 1; k < job.size; k++)
            start(mp_peer(&job, k),
                  round % 4 == 3 ? BIG : SMALL, true);
    mp_unlock(&job, ctx);
    MP_WAIT(&job, ctx, ops_open() == 0 && recv_pending == 0, MP_WAIT_S,
            "warm-up: %zu sends open", ops_open());
    recycle();
    mp_sync(&job);

    if (job.me == victim) {
        /* With rndv_in_flight, the survivors are still to fetch these
         * payloads from us when we are gone. */
        mp_lock(&job, ctx);
        for (size_t k = 1; k < job.size && rndv_in_flight; k++)
            start(mp_peer(&job, k), BIG, true);
        for (size_t k = 1; k < job.size; k++)
            start(mp_peer(&job, k), SMALL, true);
        fflush(stdout);
        _exit(0); /* no destroy: a crash that pamirun accepts */
    }

    /* Let task 1 be gone before we look at what it sent. */
    mp_sleep_ms(200);

    /* Keep sending to everyone, a round every 20 ms, until the death is
     * noticed. */
    double t0 = mp_now(), detected = 0, next_round = 0;
    unsigned round = 0;
    for (;;) {
        mp_lock(&job, ctx);
        if (peer_failed_seen > 0) {
            mp_unlock(&job, ctx);
            break;
        }
        MP_EXPECT(mp_now() - t0 < 15.0, "task %u left 15 s ago and no "
                                        "operation has reported "
                                        "PAMI_PEER_FAILED", victim);
        if (mp_now() >= next_round) {
            for (size_t k = 1; k < job.size; k++) {
                pami_task_t   to = mp_peer(&job, k);
                pami_result_t rc = start(to, round % 2 ? BIG : SMALL, true);
                MP_EXPECT(rc == PAMI_SUCCESS ||
                              (to == victim && rc == PAMI_PEER_FAILED),
                          "send to task %u: %s", to, pami_error_text(rc));
            }
            round++;
            next_round = mp_now() + 0.02;
        }
        pami_context_wait(ctx, 20);
        recycle();
        mp_unlock(&job, ctx);
    }
    detected = mp_now() - t0;

    /* Every operation ends, none twice (checked in the callbacks). */
    MP_WAIT(&job, ctx, ops_open() == 0 && recv_pending == 0, 15.0,
            "after the failure %zu sends and %llu receives never ended",
            ops_open(), (unsigned long long)recv_pending);
    size_t failed = 0;
    mp_lock(&job, ctx);
    for (size_t i = 0; i < nops; i++) {
        const op_t *o = &ops[i];
        bool ok = o->local_rc == PAMI_SUCCESS &&
                  (!o->want_remote || o->remote_rc == PAMI_SUCCESS);
        MP_EXPECT(ok || o->to == victim, "a send to live task %u failed: "
                                         "local %s, remote %s", o->to,
                  pami_error_text(o->local_rc),
                  pami_error_text(o->remote_rc));
        failed += !ok;
    }
    recycle();

    /* The dead peer is refused at once from now on. */
    pami_send_immediate_t si = {.dest = mp_ep(&job, victim, 0),
                                .dispatch = ID_X};
    MP_CHECK_RC(pami_send_immediate(ctx, &si), PAMI_PEER_FAILED);
    pami_send_t ps = {.send = si, .local_fn = on_local, .cookie = &ops[0]};
    MP_CHECK_RC(pami_send(ctx, &ps), PAMI_PEER_FAILED);
    pami_context_stats_t st;
    MP_CHECK(pami_context_stats(ctx, &st));
    MP_EXPECT(st.peer_failures >= 1, "stats show no peer failure");
    mp_unlock(&job, ctx);

    /* The survivors still talk: each sends 100 messages to each other
     * survivor, and waits for theirs. */
    uint64_t want = 100 * (job.size - 2);
    for (uint32_t i = 0; i < 100; i++)
        for (size_t k = 1; k < job.size; k++) {
            pami_task_t to = mp_peer(&job, k);
            if (to == victim)
                continue;
            uint8_t data[32];
            mp_fill(data, sizeof(data), job.me, i, 5);
            pami_send_immediate_t s = {.dest = mp_ep(&job, to, 0),
                                       .dispatch = ID_SURV, .header = &i,
                                       .header_len = sizeof(i), .data = data,
                                       .data_len = sizeof(data)};
            mp_send_imm(&job, ctx, &s);
        }
    MP_WAIT(&job, ctx, surv_got >= want, MP_WAIT_S,
            "survivors: %llu of %llu messages",
            (unsigned long long)surv_got, (unsigned long long)want);

    /* Destroy is collective over a job with a dead member: it must end
     * within the shutdown timeout, whatever it returns. */
    const char *sto = getenv("PAMI_SHUTDOWN_TIMEOUT");
    double limit = (sto ? strtod(sto, NULL) / 1000.0 : 10.0) + 5.0;
    double td = mp_now();
    pami_result_t rc = pami_client_destroy(&job.client);
    td = mp_now() - td;
    MP_EXPECT(td < limit, "client_destroy took %.1f s", td);
    MP_EXPECT(job.client == NULL, "client_destroy kept the client");
    printf("task %u: PAMI_PEER_FAILED seen %.3f s after task %u left (%llu "
           "results, %zu sends failed, %llu receives failed, %llu peer "
           "failures in stats); survivors still exchange; destroy took "
           "%.2f s and returned %s\n", job.me, detected, victim,
           (unsigned long long)peer_failed_seen, failed,
           (unsigned long long)recv_errors,
           (unsigned long long)st.peer_failures, td, pami_error_text(rc));
}

int main(int argc, char **argv)
{
    mp_init(&job, "mp_fault", &argc, argv, NULL, 1, false);
    const char *mode = argc > 1 ? argv[1] : "";
    got       = calloc(job.size, sizeof(*got));
    src_big   = malloc(BIG);
    src_small = malloc(SMALL);
    MP_EXPECT(got && src_big && src_small, "out of memory");
    mp_fill(src_big, BIG, job.me, 0, 6);
    mp_fill(src_small, SMALL, job.me, 1, 6);
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_X, on_x, NULL, NULL));
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_SURV, on_surv, NULL, NULL));
    if (strcmp(mode, "exit") == 0 || strcmp(mode, "kill") == 0) {
        /* Before the fence: handlers run inside it, so the victim can be
         * through its rounds and dead before this task leaves it. */
        MP_EXPECT(argc > 2, "usage: mp_fault exit|kill DIR");
        char name[32], text[64];
        snprintf(name, sizeof(name), "pid-%u", job.me);
        snprintf(text, sizeof(text), "%ld\n", (long)getpid());
        write_file(argv[2], name, text);
    }
    MP_CHECK(pami_dispatch_fence(job.client));

    if (strcmp(mode, "exit") == 0 || strcmp(mode, "kill") == 0) {
        die_mode(mode[0] == 'k', argv[2]);
    } else if (strcmp(mode, "peer") == 0 ||
               strcmp(mode, "peer-eager") == 0) {
        peer_mode(strcmp(mode, "peer") == 0);
    } else {
        mp_fail("usage: mp_fault exit|kill DIR | mp_fault peer|peer-eager");
    }
    free(got);
    free(src_big);
    free(src_small);
    return 0;
}
