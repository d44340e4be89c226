/*
 * fault_run: one task of the fault suite. Runs a workload until a task of
 * the job dies (the driver, fault_drive.sh, kills one at a random moment),
 * then checks what the survivors must see:
 *
 *   - an operation fails with PAMI_PEER_FAILED (in cycle: any call of the
 *     create/destroy cycle fails), and when that happened;
 *   - every callback of every operation started runs exactly once (a
 *     second run fails the task at once), all within FAULT_SETTLE_S of
 *     the detection;
 *   - pami_client_destroy returns within FAULT_DESTROY_S (plus
 *     FAULT_SLACK seconds from the environment, as fault_drive.sh).
 *
 *   fault_run WORKLOAD DIR [--no-fault]
 *
 * WORKLOAD: am (small sends to every task), rndv (large sends), barrier,
 * coll (allreduce and broadcast), rma (put/get/rmw on every task's
 * region; rma-shm: the same on regions from pami_memregion_alloc, which
 * tasks of a node reach by load and store), svd (every task updates its
 * key, which all others use), cycle
 * (client create, contexts, an exchange, destroy, again and again),
 * destroy (am, but the survivors destroy their client as soon as the
 * driver announces the kill, most often before the death is noticed: the
 * destroy itself must notice it, fail, and return within 1 s).
 *
 * Files in DIR (the driver reads them): ready-<task> "<pid> <job id>" once
 * the workload runs; result-<task> one line of figures at the end. The
 * driver writes DIR/killed (CLOCK_REALTIME of the kill) once the signal
 * is sent, so the victim never acts on it.
 *
 * The launcher starts a small parent that forks the task proper and waits
 * for it: a task killed by a signal then looks to pamirun like a task that
 * ended (as _exit(0) does), so pamirun lets the survivors go on, and the
 * parent exits with the task's code when it failed on its own. SIGUSR1
 * makes a task _exit(0) from inside whatever it does. With --no-fault
 * nobody dies: the workload runs FAULT_CALM_ROUNDS rounds (cycle:
 * FAULT_CALM_CYCLES cycles) and must see no failure.
 */
#include "../mp/mp_util.h"
#include "pami_collectives.h"
#include "pami_svd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define FAULT_WAIT_S    20.0 /* for the death, after ready */
#define FAULT_SETTLE_S  2.0  /* for the callbacks, after the detection */
#define FAULT_DESTROY_S 1.0
#define FAULT_CALM_DESTROY_S 10.0
#define FAULT_CALM_CYCLES 10
#define FAULT_CALM_ROUNDS 300

#define MAX_OPS  16384
#define SMALL    64
#define BIG      (256 * 1024)
#define REGION   4096
#define ID_DATA  100
#define ID_MR    101

enum { CB_LOCAL = 1, CB_REMOTE = 2, CB_DONE = 4 };

typedef struct op {
    uint8_t       want;  /* CB_* it will get */
    uint8_t       got;
    pami_task_t   to;
    pami_result_t rc;
    struct op    *next_free;
} op_t;

static const char *workload, *dir;
static bool        calm;
static mp_job_t    job;
static op_t        ops[MAX_OPS], *free_ops;
static size_t      started, open_ops;
static double      detected;      /* mp_now() of the first failure seen */
static pami_result_t detected_rc;
static uint64_t    failures;      /* failed results, any source */
static uint8_t    *src, *landing;

/* ---- bookkeeping ---- */

static void saw(pami_result_t rc)
{
    if (rc == PAMI_SUCCESS)
        return;
    failures++;
    if (detected == 0) {
        detected    = mp_now();
        detected_rc = rc;
    }
}

static void ops_init(void)
{
    for (size_t i = MAX_OPS; i-- > 0;) {
        ops[i].next_free = free_ops;
        free_ops = &ops[i];
    }
}

static void op_free(op_t *o)
{
    o->next_free = free_ops;
    free_ops = o;
    open_ops--;
}

/* A slot stays marked with its callbacks until it is reused, so a second
 * run of one is seen in the meantime. */
static op_t *op_new(pami_task_t to, uint8_t want)
{
    MP_EXPECT(free_ops != NULL, "more than %d operations open", MAX_OPS);
    op_t *o  = free_ops;
    free_ops = o->next_free;
    *o = (op_t){.want = want, .to = to};
    open_ops++;
    started++;
    return o;
}

/* An operation that failed to start gets no callback. */
static void op_unstart(op_t *o, pami_result_t rc)
{
    started--;
    op_free(o);
    saw(rc);
}

static void op_cb(op_t *o, uint8_t which, pami_result_t rc)
{
    if (o->got & which)
        mp_fail("a callback (%u) of an operation to task %u ran twice",
                which, o->to);
    o->got |= which;
    if (rc != PAMI_SUCCESS && o->rc == PAMI_SUCCESS)
        o->rc = rc;
    saw(rc);
    if (o->got == o->want)
        op_free(o);
}

static void on_local(pami_context_t c, void *cookie, pami_result_t rc)
{
    (void)c;
    op_cb(cookie, CB_LOCAL, rc);
}

static void on_remote(pami_context_t c, void *cookie, pami_result_t rc)
{
    (void)c;
    op_cb(cookie, CB_REMOTE, rc);
}

static void on_done(pami_context_t c, void *cookie, pami_result_t rc)
{
    (void)c;
    op_cb(cookie, CB_DONE, rc);
}

static void write_file(const char *name, const char *text)
{
    char path[700], tmp[720];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    MP_EXPECT(fd >= 0, "cannot write %s: %s", tmp, strerror(errno));
    size_t len = strlen(text);
    MP_EXPECT(write(fd, text, len) == (ssize_t)len, "short write");
    close(fd);
    /* Whole or absent for the driver. */
    MP_EXPECT(rename(tmp, path) == 0, "rename %s: %s", path, strerror(errno));
}

static double realtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void announce_ready(pami_client_t client)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_JOB_ID |
                                          PAMI_CLIENT_ATTR_TASK};
    MP_CHECK(pami_client_query(client, &a));
    char name[32], text[160];
    snprintf(name, sizeof(name), "ready-%u", a.task);
    snprintf(text, sizeof(text), "%ld %s\n", (long)getpid(), a.job_id);
    write_file(name, text);
}

/* ---- workloads: one round each; a failure shows through saw() ---- */

static void on_data(pami_context_t c, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)c; (void)cookie; (void)hdr; (void)hlen; (void)data; (void)origin;
    if (recv != NULL && dlen <= BIG)
        recv->addr = landing; /* contents are not what is tested here */
}

static void round_send(size_t len)
{
    for (size_t k = 1; k < job.size; k++) {
        pami_task_t to = mp_peer(&job, k);
        op_t *o = op_new(to, CB_LOCAL | CB_REMOTE);
        pami_send_t s = {
            .send = {.dest = mp_ep(&job, to, 0), .dispatch = ID_DATA,
                     .data = src, .data_len = len},
            .local_fn = on_local, .remote_fn = on_remote, .cookie = o};
        pami_result_t rc = pami_send(job.ctx[0], &s);
        if (rc != PAMI_SUCCESS)
            op_unstart(o, rc);
    }
}

static pami_geometry_t world;

static void round_coll(pami_xfer_type_t kind, size_t count)
{
    static uint64_t in[64], out[64];
    op_t *o = op_new(job.me, CB_DONE);
    pami_xfer_t x = {.kind = kind, .geometry = world, .done_fn = on_done,
                     .cookie = o, .sbuf = in, .rbuf = out, .count = count,
                     .dtype = PAMI_TYPE_UINT64, .op = PAMI_OP_SUM};
    if (kind == PAMI_XFER_BROADCAST)
        x.sbuf = NULL;
    pami_result_t rc = pami_collective(job.ctx[0], &x);
    if (rc != PAMI_SUCCESS)
        op_unstart(o, rc);
}

/* rma: every task's region, learned from a message at setup. */
static pami_memregion_t  my_mr, *peer_mr;
static bool             *have_mr;
static size_t            mrs_seen;
static uint8_t          *region;

static void on_mr(pami_context_t c, void *cookie, const void *hdr,
                  size_t hlen, const void *data, size_t dlen,
                  pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)c; (void)cookie; (void)data; (void)dlen; (void)recv;
    pami_task_t t;
    pami_endpoint_query(origin, &t, NULL);
    MP_EXPECT(hlen == sizeof(pami_memregion_t) && t < job.size && !have_mr[t],
              "bad region message from task %u", t);
    memcpy(&peer_mr[t], hdr, hlen);
    have_mr[t] = true;
    mrs_seen++;
}

/* rma-shm: region is pami's (freed by destroy, or by the context). */
static bool region_alloc;

static void rma_setup(void)
{
    region_alloc = strcmp(workload, "rma-shm") == 0;
    if (region_alloc) {
        MP_CHECK(pami_memregion_alloc(job.ctx[0], REGION, (void **)&region,
                                      &my_mr));
    } else {
        region = calloc(1, REGION);
        MP_EXPECT(region != NULL, "out of memory");
        MP_CHECK(pami_memregion_create(job.ctx[0], region, REGION, &my_mr));
    }
    for (size_t k = 1; k < job.size; k++) {
        pami_send_immediate_t s = {.dest = mp_ep(&job, mp_peer(&job, k), 0),
                                   .dispatch = ID_MR, .header = &my_mr,
                                   .header_len = sizeof(my_mr)};
        mp_send_imm(&job, job.ctx[0], &s);
    }
    MP_WAIT(&job, job.ctx[0], mrs_seen == job.size - 1, MP_WAIT_S,
            "regions: %zu of %zu", mrs_seen, job.size - 1);
}

static void round_rma(unsigned round)
{
    static uint64_t fetched[MAX_OPS];
    for (size_t k = 1; k < job.size; k++) {
        pami_task_t     to = mp_peer(&job, k);
        pami_endpoint_t ep = mp_ep(&job, to, 0);
        pami_result_t   rc;
        op_t *o;
        switch (round % 3) {
        case 0: {
            o = op_new(to, CB_LOCAL | CB_REMOTE);
            pami_rma_t r = {.dest = ep, .local = src, .bytes = 512,
                            .remote_mr = &peer_mr[to],
                            .remote_offset = 512 * (job.me % 4),
                            .local_fn = on_local, .remote_fn = on_remote,
                            .cookie = o};
            rc = pami_put(job.ctx[0], &r);
            break;
        }
        case 1: {
            o = op_new(to, CB_LOCAL);
            pami_rma_t r = {.dest = ep, .local = landing, .bytes = REGION,
                            .remote_mr = &peer_mr[to], .local_fn = on_local,
                            .cookie = o};
            rc = pami_get(job.ctx[0], &r);
            break;
        }
        default: {
            o = op_new(to, CB_LOCAL);
            pami_rmw_t m = {.dest = ep, .remote_mr = &peer_mr[to],
                            .remote_offset = 3072, .op = PAMI_RMW_FETCH_ADD,
                            .size = 8, .value = 1,
                            .result = &fetched[(size_t)(o - ops)],
                            .done_fn = on_local, .cookie = o};
            rc = pami_rmw(job.ctx[0], &m);
            break;
        }
        }
        if (rc != PAMI_SUCCESS)
            op_unstart(o, rc);
    }
}

/* svd: every task owns key 1 and uses everyone else's. */
#define SVD_KEY 1

static size_t lookups_done;

static void on_lookup(pami_context_t c, void *cookie, pami_result_t rc,
                      const pami_svd_entry_t *e)
{
    (void)c; (void)e;
    op_cb(cookie, CB_DONE, rc);
    if (rc == PAMI_SUCCESS)
        lookups_done++;
}

static void svd_setup(void)
{
    pami_svd_register_t r = {.key = SVD_KEY, .addr = region, .size = 64,
                             .field_mask = PAMI_SVD_REGISTER_DATA,
                             .data = src, .data_size = 32};
    MP_CHECK(pami_svd_register(job.ctx[0], &r));
    mp_sync(&job);
    for (size_t k = 1; k < job.size; k++) {
        pami_task_t to = mp_peer(&job, k);
        op_t *o = op_new(to, CB_DONE);
        pami_svd_lookup_t l = {.owner = to, .key = SVD_KEY,
                               .done_fn = on_lookup, .cookie = o};
        MP_CHECK(pami_svd_lookup(job.ctx[0], &l));
    }
    MP_WAIT(&job, job.ctx[0], lookups_done == job.size - 1, MP_WAIT_S,
            "svd lookups: %zu of %zu", lookups_done, job.size - 1);
    /* Everyone uses everyone's key before the first update. */
    mp_sync(&job);
}

static void round_svd(unsigned round)
{
    uint64_t data[4] = {round, job.me, 0, 0};
    op_t *o = op_new(job.me, CB_DONE);
    pami_svd_update_t u = {.field_mask = PAMI_SVD_UPDATE_DATA, .key = SVD_KEY,
                           .data = data, .data_size = sizeof(data),
                           .done_fn = on_done, .cookie = o};
    pami_result_t rc = pami_svd_update(job.ctx[0], &u);
    if (rc != PAMI_SUCCESS)
        op_unstart(o, rc);
}

static void round_run(unsigned round)
{
    if (strcmp(workload, "am") == 0 || strcmp(workload, "destroy") == 0)
        round_send(SMALL);
    else if (strcmp(workload, "rndv") == 0)
        round_send(round % 2 ? BIG : SMALL);
    else if (strcmp(workload, "barrier") == 0)
        round_coll(PAMI_XFER_BARRIER, 0);
    else if (strcmp(workload, "coll") == 0)
        round_coll(round % 2 ? PAMI_XFER_BROADCAST : PAMI_XFER_ALLREDUCE,
                   round % 4 == 3 ? 64 : 1);
    else if (strcmp(workload, "rma") == 0 || strcmp(workload, "rma-shm") == 0)
        round_rma(round);
    else
        round_svd(round);
}

/* Rounds until a failure is seen, a few always in flight; calm: a fixed
 * number, since every task must call the collectives alike. */
static void run_workload(void)
{
    MP_CHECK(pami_geometry_world(job.ctx[0], &world));
    if (strcmp(workload, "rma") == 0 || strcmp(workload, "rma-shm") == 0 ||
        strcmp(workload, "svd") == 0)
        rma_setup();
    if (strcmp(workload, "svd") == 0)
        svd_setup();
    mp_sync(&job);
    announce_ready(job.client);

    double   end    = mp_now() + (calm ? MP_WAIT_S : FAULT_WAIT_S);
    unsigned rounds = calm ? FAULT_CALM_ROUNDS : UINT32_MAX;
    unsigned round  = 0;
    bool     at_kill = strcmp(workload, "destroy") == 0 && !calm;
    char     killed[700];
    snprintf(killed, sizeof(killed), "%s/killed", dir);
    while (detected == 0 && mp_now() < end &&
           (round < rounds || open_ops > 0)) {
        if (at_kill && access(killed, F_OK) == 0)
            return; /* the destroy is to see it */
        if (round < rounds && open_ops < 2 * job.size)
            round_run(round++);
        else
            pami_context_wait(job.ctx[0], 5);
        pami_context_advance(job.ctx[0], 16);
    }
    if (calm) {
        MP_EXPECT(detected == 0, "a failure (%s) with nobody killed",
                  pami_error_text(detected_rc));
        MP_EXPECT(open_ops == 0, "%zu operations never ended", open_ops);
        mp_sync(&job);
        return;
    }
    MP_EXPECT(detected != 0, "no failure seen %.0f s after ready (%u "
              "rounds)", FAULT_WAIT_S, round);
    /* Every callback of what was started, exactly once, soon. */
    double settle = mp_now() + FAULT_SETTLE_S;
    while (open_ops > 0 && mp_now() < settle)
        pami_context_wait(job.ctx[0], 10);
    MP_EXPECT(open_ops == 0, "%zu of %zu operations still wait for a "
              "callback %.1f s after the failure", open_ops, started,
              FAULT_SETTLE_S);
}

/* ---- cycle: the client's whole life, again and again ---- */

static void on_ping(pami_context_t c, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)c; (void)hdr; (void)hlen; (void)data; (void)dlen; (void)origin;
    (void)recv;
    (*(size_t *)cookie)++;
}

/* One cycle; false when a call failed (recorded by saw()). */
static bool one_cycle(unsigned cycle, double *destroy_s)
{
    pami_client_t  client;
    pami_context_t ctx;
    pami_result_t  rc = pami_client_create("fault_cycle", NULL, &client);
    if (rc != PAMI_SUCCESS) {
        saw(rc);
        return false;
    }
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                          PAMI_CLIENT_ATTR_SIZE};
    MP_CHECK(pami_client_query(client, &a));
    job.me = a.task;
    job.size = a.size;
    mp_task_id = a.task;
    size_t pings = 0;
    rc = pami_context_createv(client, NULL, 1, &ctx);
    if (rc == PAMI_SUCCESS) {
        MP_CHECK(pami_dispatch_set(ctx, ID_DATA, on_ping, &pings, NULL));
        rc = pami_dispatch_fence(client);
    }
    if (cycle == 0 && rc == PAMI_SUCCESS)
        announce_ready(client);
    /* A message to the next task, one from the previous. */
    if (rc == PAMI_SUCCESS && a.size > 1) {
        pami_endpoint_t next;
        MP_CHECK(pami_endpoint_create(client, (a.task + 1) % (pami_task_t)a.size,
                                      0, &next));
        pami_send_immediate_t s = {.dest = next, .dispatch = ID_DATA,
                                   .data = &cycle, .data_len = sizeof(cycle)};
        do {
            rc = pami_send_immediate(ctx, &s);
            if (rc == PAMI_EAGAIN)
                pami_context_advance(ctx, 1);
        } while (rc == PAMI_EAGAIN);
        double end = mp_now() + 5.0;
        while (rc == PAMI_SUCCESS && pings == 0 && mp_now() < end) {
            pami_context_stats_t st;
            pami_context_wait(ctx, 10);
            pami_context_stats(ctx, &st);
            if (st.peer_failures > 0)
                rc = PAMI_PEER_FAILED;
        }
        if (rc == PAMI_SUCCESS && pings == 0)
            rc = PAMI_TIMEOUT;
    }
    saw(rc);
    double t0 = mp_now();
    pami_result_t drc = pami_client_destroy(&client);
    *destroy_s = mp_now() - t0;
    saw(drc);
    MP_EXPECT(client == NULL, "destroy kept the client");
    return rc == PAMI_SUCCESS && drc == PAMI_SUCCESS;
}

static double run_cycles(void)
{
    double end = mp_now() + FAULT_WAIT_S;
    double destroy_s = 0;
    unsigned cycle = 0;
    /* Calm: a fixed count, since every task must make as many. */
    do {
        bool ok = one_cycle(cycle++, &destroy_s);
        if (!ok)
            break;
    } while (calm ? cycle < FAULT_CALM_CYCLES : mp_now() < end);
    if (calm)
        MP_EXPECT(detected == 0, "cycle %u failed (%s) with nobody killed",
                  cycle, pami_error_text(detected_rc));
    else
        MP_EXPECT(detected != 0, "no cycle failed %.0f s after ready (%u "
                  "cycles)", FAULT_WAIT_S, cycle);
    return destroy_s;
}

/* ---- the task ---- */

static void on_usr1(int sig)
{
    (void)sig;
    _exit(0);
}

static int task_main(void)
{
    signal(SIGUSR1, on_usr1);
    ops_init();
    src     = calloc(1, BIG);
    landing = malloc(BIG);
    MP_EXPECT(src && landing, "out of memory");
    double destroy_s;
    if (strcmp(workload, "cycle") == 0) {
        destroy_s = run_cycles();
    } else {
        mp_init(&job, "fault_run", NULL, NULL, NULL, 1, false);
        /* Before the fence: peers' regions may come right after it. */
        peer_mr = calloc(job.size, sizeof(*peer_mr));
        have_mr = calloc(job.size, sizeof(*have_mr));
        MP_EXPECT(peer_mr && have_mr, "out of memory");
        MP_CHECK(pami_dispatch_set(job.ctx[0], ID_DATA, on_data, NULL, NULL));
        MP_CHECK(pami_dispatch_set(job.ctx[0], ID_MR, on_mr, NULL, NULL));
        MP_CHECK(pami_dispatch_fence(job.client));
        run_workload();
        if (region != NULL && calm)
            MP_CHECK(pami_memregion_destroy(job.ctx[0], &my_mr));
        double t0 = mp_now();
        pami_result_t rc = pami_client_destroy(&job.client);
        destroy_s = mp_now() - t0;
        if (strcmp(workload, "destroy") == 0 && !calm) {
            saw(rc);
            MP_EXPECT(rc != PAMI_SUCCESS, "destroy with a task killed "
                      "returned success");
        }
        MP_EXPECT(calm ? rc == PAMI_SUCCESS : true, "destroy: %s",
                  pami_error_text(rc));
    }
    /* Calm, destroy meets the other tasks, which a loaded machine may
     * not run at once; after a death it must not wait for anyone. */
    const char *slack = getenv("FAULT_SLACK"); /* as fault_drive.sh */
    double limit = calm ? FAULT_CALM_DESTROY_S
                        : FAULT_DESTROY_S + (slack ? atof(slack) : 0.0);
    MP_EXPECT(destroy_s < limit, "destroy took %.2f s", destroy_s);
    char name[32], text[256];
    snprintf(name, sizeof(name), "result-%u", job.me);
    snprintf(text, sizeof(text), "task=%u detected=%.6f rc=%s failures=%llu "
             "ops=%zu destroy=%.6f\n", job.me,
             detected ? realtime() - (mp_now() - detected) : 0.0,
             pami_error_text(detected_rc), (unsigned long long)failures, started,
             destroy_s);
    write_file(name, text);
    printf("fault_run %s: task %u: %s", workload, job.me, text);
    free(src);
    free(landing);
    /* After a death a survivor that has not seen it yet still writes here
     * by CMA, which this task cannot stop: its memory stays until exit
     * (freed, the heap would take those writes; docs/faults.md). */
    if (!region_alloc && calm)
        free(region);
    free(peer_mr);
    free(have_mr);
    return 0;
}

int main(int argc, char **argv)
{
    static const char *const known[] = {"am", "rndv", "barrier", "coll",
                                        "rma", "rma-shm", "svd", "cycle",
                                        "destroy"};
    bool ok = false;
    if (argc >= 3)
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
            ok |= strcmp(argv[1], known[i]) == 0;
    if (!ok || (argc > 3 && strcmp(argv[3], "--no-fault") != 0)) {
        fprintf(stderr, "usage: fault_run am|rndv|barrier|coll|rma|svd|cycle|destroy "
                        "DIR [--no-fault]\n");
        return 2;
    }
    workload = argv[1];
    dir      = argv[2];
    calm     = argc > 3;
    mp_test_name = "fault_run";
    setvbuf(stdout, NULL, _IOLBF, 0);

    pid_t child = fork();
    if (child < 0) {
        perror("fault_run: fork");
        return 1;
    }
    if (child == 0)
        return task_main();
    /* The parent only waits: a signal the driver sends is for the task. */
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    /* The victim's end, or a survivor's crash: the driver's count of
     * result files tells them apart, this line says which signal. */
    if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
        fprintf(stderr, "fault_run: task process %d ended by signal %d (%s)\n",
                (int)child, WTERMSIG(status), strsignal(WTERMSIG(status)));
    return 0;
}
