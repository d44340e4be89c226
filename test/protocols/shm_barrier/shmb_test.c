/*
 * shmb_test: the shared-memory barrier register, run under pamirun on
 * one node.
 *
 *   shmb_test loop ITERS          ITERS barriers in a row, each checked
 *                                 with a counter in test-owned shared
 *                                 memory; then queued non-blocking
 *                                 barriers; rank 0 prints the latency
 *   shmb_test hier ITERS          the same through pami_barrier_hier
 *   shmb_test inline ITERS        the same through shmb_barrier_inline
 *                                 (the blocking form's fast path)
 *   shmb_test bench|bench-hier|bench-inline ITERS
 *                                 barriers alone; rank 0 prints the best
 *                                 average of three runs
 *   shmb_test late-leader         the leader starts 400 ms after the
 *                                 others: they poll for its region
 *   shmb_test late-followers      the followers start 400 ms late
 *   shmb_test dead                the last task leaves (_exit(0)) after 50
 *                                 barriers: the others' barrier ends with
 *                                 PAMI_PEER_FAILED
 *   shmb_test dead-setup          the same before it ever attached
 *   shmb_test dead-hier           dead, with hierarchical barriers
 *   shmb_test two-contexts ITERS  barriers on two contexts, interleaved
 *   shmb_test shutdown            the last task destroys its client with 3
 *                                 barriers pending (its waiter thread
 *                                 asleep): PAMI_SHUTDOWN, in order
 *   shmb_test shutdown-setup      the same for the leader while its set-up
 *                                 waits for tasks that never attach
 *   shmb_test malformed           (several nodes) task 0 sends broken
 *                                 leader announcements: dropped, counted;
 *                                 hierarchical barriers still work
 *   shmb_test kill DIR            the last task raise(SIGKILL)s while the
 *                                 leader waits for it to attach (the
 *                                 objects exist); driven by shmb_kill.sh
 *   shmb_test foreign KIND        task 1 plants an object under the
 *                                 region's name before anyone starts: of
 *                                 another job (KIND job), or malformed
 *                                 (magic, version, ntasks, size); every
 *                                 task's barrier fails with PAMI_ERROR
 *                                 and counts it, nothing crashes
 *
 * Every mode ends by checking, after pami_client_destroy, that nothing
 * named /dev/shm/pami-<job id>-shmbar* is left. With DIR, task 0 writes
 * the job id to DIR/jobid for the driver.
 */
#include "mp_util.h"

#include <pami_barrier.h>
#include <pami_protocol.h>
#include <shm_barrier_inline.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static mp_job_t job;
static const char *job_id;
static bool hier_mode;
static bool inline_mode; /* through shmb_barrier_inline, as a blocking form */

/* ---- barriers ---- */

typedef struct {
    int           runs;
    pami_result_t rc;
    unsigned      order; /* completion order, for the queued ones */
} done_t;

static unsigned completions;

static void on_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    done_t *d = cookie;
    d->runs++;
    d->rc    = rc;
    d->order = completions++;
}

static void start(done_t *d)
{
    *d = (done_t){0};
    pami_result_t rc = hier_mode ? pami_barrier_hier(job.ctx[0], on_done, d)
                                 : pami_barrier_shm(job.ctx[0], on_done, d);
    MP_EXPECT(rc == PAMI_SUCCESS, "barrier start: %s", pami_error_text(rc));
    MP_EXPECT(d->runs == 0, "done_fn ran inside the start call");
}

/* Waits for d without yielding after each event (latency counts). */
static pami_result_t finish(done_t *d, double secs)
{
    double deadline = mp_now() + secs;
    while (d->runs == 0) {
        pami_result_t rc = pami_context_wait(job.ctx[0], 100);
        MP_EXPECT(rc == PAMI_SUCCESS || rc == PAMI_TIMEOUT,
                  "pami_context_wait: %s", pami_error_text(rc));
        MP_EXPECT(mp_now() < deadline, "barrier not done after %.0f s",
                  secs);
    }
    MP_EXPECT(d->runs == 1, "done_fn ran %d times", d->runs);
    return d->rc;
}

static pami_result_t barrier(void)
{
    done_t d;
    if (inline_mode) {
        d = (done_t){0};
        pami_result_t rc = shmb_barrier_inline(job.ctx[0], hier_mode,
                                               on_done, &d);
        if (rc != PAMI_EAGAIN) {
            MP_EXPECT(d.runs == 0, "done_fn ran for an inline barrier");
            return rc;
        }
        MP_EXPECT(d.runs == 0, "done_fn ran inside the start call");
    } else {
        start(&d);
    }
    return finish(&d, MP_WAIT_S);
}

static uint64_t stat_of(const char *name)
{
    pami_protocol_stat_t s[32];
    size_t               n = 0;
    MP_CHECK(pami_protocol_stats(job.ctx[0], "shm_barrier", s, 32, &n));
    for (size_t i = 0; i < n && i < 32; i++)
        if (strcmp(s[i].name, name) == 0)
            return s[i].value;
    mp_fail("no stat '%s'", name);
}

/* ---- what is left in /dev/shm ---- */

static int count_objects_quiet(const char *what, bool quiet)
{
    char prefix[128];
    snprintf(prefix, sizeof(prefix), "pami-%s-%s", job_id, what);
    DIR *d = opendir("/dev/shm");
    MP_EXPECT(d != NULL, "opendir /dev/shm: %s", strerror(errno));
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            if (!quiet)
                fprintf(stderr, "shmb_test: task %u: left: /dev/shm/%s\n",
                    job.me, e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

/* This node's objects: with shmb_nodes.sh all nodes share /dev/shm. */
static int count_objects(const char *what)
{
    char node_what[64];
    snprintf(node_what, sizeof(node_what), "%s-%u-", what,
             job.attr.local_tasks[0]);
    return count_objects_quiet(node_what, false);
}

/* ---- a counter nobody may see incomplete after a barrier ---- */

static _Atomic uint64_t *counter;
static char counter_name[128];

static void counter_map(void)
{
    /* One per node: the shared-memory barrier holds a node together. With
     * shmb_nodes.sh the nodes share /dev/shm, so hier sees one counter. */
    pami_task_t owner = hier_mode ? 0 : job.attr.local_tasks[0];
    snprintf(counter_name, sizeof(counter_name), "/pami-%s-test-counter-%u",
             job_id, owner);
    if (job.me == owner) {
        int fd = shm_open(counter_name, O_CREAT | O_EXCL | O_RDWR, 0600);
        MP_EXPECT(fd >= 0, "shm_open %s: %s", counter_name, strerror(errno));
        MP_EXPECT(ftruncate(fd, 4096) == 0, "ftruncate: %s", strerror(errno));
        close(fd);
    }
    mp_sync(&job);
    int fd = shm_open(counter_name, O_RDWR, 0);
    MP_EXPECT(fd >= 0, "shm_open %s: %s", counter_name, strerror(errno));
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    MP_EXPECT(p != MAP_FAILED, "mmap: %s", strerror(errno));
    counter = p;
    mp_sync(&job);
    if (job.me == owner)
        shm_unlink(counter_name); /* mapped everywhere: the name can go */
}

/* Round k: everybody adds 1, then meets; after it each task must see all
 * n additions of round k, and none beyond what the others can have made
 * of round k + 1 while this task has not arrived there. */
static void rounds(long iters, bool timed)
{
    uint64_t n = hier_mode ? job.size : job.attr.num_local_tasks;
    double   t0 = mp_now();
    for (long k = 0; k < iters; k++) {
        atomic_fetch_add(counter, 1);
        pami_result_t rc = barrier();
        MP_EXPECT(rc == PAMI_SUCCESS, "barrier %ld: %s", k,
                  pami_error_text(rc));
        uint64_t c = atomic_load(counter);
        MP_EXPECT(c >= n * (uint64_t)(k + 1) && c < n * (uint64_t)(k + 2),
                  "after barrier %ld the counter is %llu; expected %llu to "
                  "%llu", k, (unsigned long long)c,
                  (unsigned long long)(n * (k + 1)),
                  (unsigned long long)(n * (k + 2) - 1));
    }
    double t = mp_now() - t0;
    if (timed && job.me == 0)
        printf("%s barrier, %zu tasks: %ld barriers, %.2f us each\n",
               hier_mode ? "hier" : "shm", job.size, iters,
               t * 1e6 / (double)iters);
}

/* Barriers alone, for their latency: the best of three runs of iters. */
static void bench(long iters)
{
    double best = 1e9;
    for (int run = 0; run < 3; run++) {
        MP_EXPECT(barrier() == PAMI_SUCCESS, "barrier failed");
        double t0 = mp_now();
        for (long k = 0; k < iters; k++)
            MP_EXPECT(barrier() == PAMI_SUCCESS, "barrier %ld failed", k);
        double t = (mp_now() - t0) * 1e6 / (double)iters;
        best = t < best ? t : best;
    }
    if (job.me == 0)
        printf("%s%s barrier, %zu tasks: %.3f us (best of 3 x %ld)\n",
               hier_mode ? "hier" : "shm", inline_mode ? " inline" : "", job.size, best, iters);
}

/* Several started at once complete in order, each exactly once. */
static void queued(int reps)
{
    enum { Q = 8 };
    for (int r = 0; r < reps; r++) {
        done_t d[Q];
        unsigned first = completions;
        for (int i = 0; i < Q; i++)
            start(&d[i]);
        for (int i = 0; i < Q; i++) {
            MP_EXPECT(finish(&d[i], MP_WAIT_S) == PAMI_SUCCESS,
                      "queued barrier %d: %s", i, pami_error_text(d[i].rc));
            MP_EXPECT(d[i].order == first + (unsigned)i,
                      "queued barrier %d completed as %u", i,
                      d[i].order - first);
        }
    }
}

static void check_stats_clean(void)
{
    MP_EXPECT(stat_of("barriers") == stat_of("completed"),
              "%llu barriers started, %llu completed",
              (unsigned long long)stat_of("barriers"),
              (unsigned long long)stat_of("completed"));
    MP_EXPECT(stat_of("bad_region") == 0 && stat_of("bad_register") == 0 &&
                  stat_of("failed") == 0,
              "bad regions %llu, bad registers %llu, failed %llu",
              (unsigned long long)stat_of("bad_region"),
              (unsigned long long)stat_of("bad_register"),
              (unsigned long long)stat_of("failed"));
}

/* ---- modes ---- */

static void mode_loop(long iters)
{
    counter_map();
    /* Once everyone attached, the leader has removed the names. */
    MP_EXPECT(barrier() == PAMI_SUCCESS, "first barrier failed");
    MP_EXPECT(barrier() == PAMI_SUCCESS, "second barrier failed");
    MP_EXPECT(count_objects("shmbar") == 0,
              "objects still named after set-up");
    atomic_store(counter, 0);
    MP_EXPECT(barrier() == PAMI_SUCCESS, "third barrier failed");
    rounds(iters, true);
    queued(50);
    check_stats_clean();
    munmap((void *)counter, 4096);
}

/* Nodes of per tasks each, numbered in task order; the node map agrees
 * with local_tasks. */
static void check_node_map(size_t per)
{
    const uint32_t *node = job.attr.task_node;
    MP_EXPECT(node != NULL, "no node map");
    size_t want = (job.size + per - 1) / per;
    MP_EXPECT(job.attr.num_nodes == want, "%zu nodes, expected %zu",
              job.attr.num_nodes, want);
    size_t local = 0;
    for (size_t t = 0; t < job.size; t++) {
        MP_EXPECT(node[t] == t / per, "task %zu on node %u, expected %zu", t,
                  node[t], t / per);
        if (node[t] == node[job.me]) {
            MP_EXPECT(local < job.attr.num_local_tasks &&
                          job.attr.local_tasks[local] == t,
                      "task %zu shares my node but is not local", t);
            local++;
        }
    }
    MP_EXPECT(local == job.attr.num_local_tasks, "%zu tasks on my node by "
              "the map, %zu local", local, job.attr.num_local_tasks);
}

static void mode_late(bool leader_late)
{
    bool late = (job.me == 0) == leader_late;
    if (late)
        mp_sleep_ms(400);
    /* CLOCK_MONOTONIC is one clock for the whole node, so entry and exit
     * times compare across tasks whatever their start-up skew. */
    double entered = mp_now();
    MP_EXPECT(barrier() == PAMI_SUCCESS, "first barrier failed");
    double left = mp_now();
    if (leader_late && job.me != 0)
        MP_EXPECT(stat_of("setup_retries") > 0,
                  "the region was there before the leader started");
    counter_map();
    MP_EXPECT(job.size <= 256, "too many tasks for the time slots");
    _Atomic double *entry = (_Atomic double *)((char *)counter + 2048);
    atomic_store(&entry[job.me], late ? entered : 0.0);
    MP_EXPECT(barrier() == PAMI_SUCCESS, "barrier failed");
    for (size_t t = 0; t < job.size; t++) {
        double e = atomic_load(&entry[t]);
        MP_EXPECT(left >= e, "left the first barrier %.6f s before late "
                  "task %zu entered it", e - left, t);
    }
    atomic_store(counter, 0);
    MP_EXPECT(barrier() == PAMI_SUCCESS, "barrier failed");
    rounds(200, false);
    check_stats_clean();
    munmap((void *)counter, 4096);
}

/* PAMI_SHM_BARRIER_TIMEOUT short (the environment sets it), the last
 * task late: the leader gives up before it attaches. Every task's
 * barriers must fail with PAMI_TIMEOUT, none may wait for ever (a
 * follower that attached before the leader gave up, or after it, used
 * to take the set-up for done and wait in barriers the leader had left).
 * With late_ms 0 and a timeout of 0 the outcome may be either, but the
 * same for both barriers of a task (pamirun's timeout catches a hang). */
static void mode_timeout(int late_ms)
{
    if (late_ms > 0 && job.me == job.size - 1)
        mp_sleep_ms(late_ms);
    pami_result_t first  = barrier();
    pami_result_t second = barrier();
    if (late_ms > 0) {
        MP_EXPECT(first == PAMI_TIMEOUT && second == PAMI_TIMEOUT,
                  "barriers after the leader gave up: %s, %s",
                  pami_error_text(first), pami_error_text(second));
    } else {
        MP_EXPECT(first == second && (first == PAMI_SUCCESS ||
                                      first == PAMI_TIMEOUT),
                  "barriers with a set-up deadline of 0: %s, %s",
                  pami_error_text(first), pami_error_text(second));
    }
}

static void mode_dead(bool in_setup)
{
    pami_task_t victim = (pami_task_t)(job.size - 1);
    int before = in_setup ? 0 : 50;
    for (int k = 0; k < before; k++)
        MP_EXPECT(barrier() == PAMI_SUCCESS, "barrier %d failed", k);
    if (job.me == victim) {
        mp_sleep_ms(200); /* the others are waiting for it by now */
        fflush(stdout);
        _exit(0);
    }
    double t0 = mp_now();
    pami_result_t rc = barrier();
    MP_EXPECT(rc == PAMI_PEER_FAILED, "barrier with a dead task: %s",
              pami_error_text(rc));
    MP_EXPECT(mp_now() - t0 < 15, "took %.1f s to notice", mp_now() - t0);
    /* And every later one fails at once. */
    MP_EXPECT(barrier() == PAMI_PEER_FAILED, "barrier after the death");
    MP_EXPECT(stat_of("peer_failed") == 2, "peer_failed stat %llu",
              (unsigned long long)stat_of("peer_failed"));
}

static void mode_kill(const char *dir)
{
    pami_task_t victim = (pami_task_t)(job.size - 1);
    char path[512];
    if (job.me == victim) {
        /* Once the leader has made both objects it waits for us. */
        double deadline = mp_now() + MP_WAIT_S;
        while (count_objects_quiet("shmbar-0-", true) < 2) {
            MP_EXPECT(mp_now() < deadline, "the leader made no objects");
            mp_sleep_ms(5);
        }
        snprintf(path, sizeof(path), "%s/died", dir);
        FILE *f = fopen(path, "w");
        if (f != NULL)
            fclose(f);
        raise(SIGKILL);
    }
    /* Either pamirun kills us first, or the barrier notices the death. */
    pami_result_t rc = barrier();
    MP_EXPECT(rc == PAMI_PEER_FAILED, "barrier returned %s although task "
              "%u was killed", pami_error_text(rc), victim);
    mp_sleep_ms(60000);
    mp_fail("pamirun did not end the job");
}

/* The header of a region (docs/protocols/shm-barrier.md), written the way
 * the leader of another job, or a broken one, would. */
static void plant(const char *kind, char *name, size_t cap)
{
    snprintf(name, cap, "/pami-%s-shmbar-%u-0", job_id,
             job.attr.local_tasks[0]);
    size_t bytes = 192 + 4 * job.attr.num_local_tasks;
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    MP_EXPECT(fd >= 0, "shm_open %s: %s", name, strerror(errno));
    size_t file_bytes = strcmp(kind, "size") == 0 ? 100 : bytes;
    MP_EXPECT(ftruncate(fd, (off_t)file_bytes) == 0, "ftruncate");
    uint8_t *p = mmap(NULL, file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                      fd, 0);
    close(fd);
    MP_EXPECT(p != MAP_FAILED, "mmap");
    uint64_t magic = 0x524d4853494d4150ull, hash = 0xcbf29ce484222325ull;
    const char *id = strcmp(kind, "job") == 0 ? "another-job" : job_id;
    for (const char *s = id; *s; s++)
        hash = (hash ^ (uint8_t)*s) * 0x100000001b3ull;
    uint32_t version = strcmp(kind, "version") == 0 ? 2 : 1;
    uint32_t ntasks  = (uint32_t)job.attr.num_local_tasks +
                       (strcmp(kind, "ntasks") == 0 ? 1000 : 0);
    uint32_t u32[] = {version, (uint32_t)bytes};
    if (strcmp(kind, "magic") == 0)
        magic ^= 1;
    if (file_bytes >= 64) {
        memcpy(p + 8, u32, 8);
        memcpy(p + 16, &hash, 8);
        memcpy(p + 24, &ntasks, 4);
        memcpy(p + 28, &job.attr.local_tasks[0], 4);
        uint32_t published = 2, one = 1;
        if (file_bytes >= 192) {
            memcpy(p + 64, &published, 4);
            memcpy(p + 128, &one, 4);
        }
    }
    memcpy(p, &magic, 8);
    munmap(p, file_bytes);
}

static void mode_foreign(const char *kind)
{
    char name[256] = "";
    if (job.me == 1)
        plant(kind, name, sizeof(name));
    mp_sync(&job);
    pami_result_t rc = barrier();
    MP_EXPECT(rc == PAMI_ERROR, "barrier on a %s region: %s", kind,
              pami_error_text(rc));
    MP_EXPECT(stat_of("bad_region") >= 1, "bad region not counted");
    MP_EXPECT(barrier() == PAMI_ERROR, "the next barrier did not fail");
    mp_sync(&job);
    if (job.me == 1)
        MP_EXPECT(shm_unlink(name) == 0, "planted region gone: %s",
                  strerror(errno));
}

/* Two contexts: each offset has its own register and waiter; barriers
 * on both, interleaved, never mix. */
static void mode_two_contexts(long iters)
{
    for (long k = 0; k < iters; k++) {
        done_t d[2];
        for (int c = 0; c < 2; c++) {
            d[c] = (done_t){0};
            MP_CHECK(pami_barrier_shm(job.ctx[c], on_done, &d[c]));
        }
        for (int c = 0; c < 2; c++) {
            double deadline = mp_now() + MP_WAIT_S;
            while (d[c].runs == 0) {
                /* Either context may be the one the others wait for. */
                pami_context_advance(job.ctx[0], 1);
                pami_context_advance(job.ctx[1], 1);
                if (job.attr.num_local_tasks > 2)
                    sched_yield();
                MP_EXPECT(mp_now() < deadline, "barrier %ld on context %d "
                          "not done", k, c);
            }
            MP_EXPECT(d[c].rc == PAMI_SUCCESS, "barrier %ld on context %d: "
                      "%s", k, c, pami_error_text(d[c].rc));
        }
    }
    for (int c = 0; c < 2; c++) {
        size_t n = 0;
        pami_protocol_stat_t st[32];
        MP_CHECK(pami_protocol_stats(job.ctx[c], "shm_barrier", st, 32, &n));
        for (size_t i = 0; i < n; i++)
            if (strcmp(st[i].name, "completed") == 0)
                MP_EXPECT(st[i].value == (uint64_t)iters, "context %d "
                          "completed %llu of %ld", c,
                          (unsigned long long)st[i].value, iters);
    }
}

/* Barriers still pending at destroy complete there with PAMI_SHUTDOWN, in
 * order, once each; with in_setup the leader's set-up is still waiting
 * for the others to attach (they never start a barrier). */
static done_t pending[3];

static void mode_shutdown(bool in_setup)
{
    pami_task_t who = in_setup ? 0 : (pami_task_t)(job.size - 1);
    if (!in_setup)
        MP_EXPECT(barrier() == PAMI_SUCCESS, "first barrier failed");
    mp_sync(&job);
    if (job.me == who) {
        for (int i = 0; i < 3; i++)
            start(&pending[i]);
        /* Long enough to give the wait to the waiter thread. */
        double until = mp_now() + 0.3;
        while (mp_now() < until)
            pami_context_wait(job.ctx[0], 50);
        for (int i = 0; i < 3; i++)
            MP_EXPECT(pending[i].runs == 0, "barrier %d completed alone", i);
        if (!in_setup)
            MP_EXPECT(stat_of("sleeps") >= 1, "the wait never went to sleep");
    }
    mp_sync(&job);
}

static void check_shutdown(bool in_setup)
{
    pami_task_t who = in_setup ? 0 : (pami_task_t)(job.size - 1);
    if (job.me != who)
        return;
    for (int i = 0; i < 3; i++) {
        MP_EXPECT(pending[i].runs == 1, "barrier %d: done_fn ran %d times",
                  i, pending[i].runs);
        MP_EXPECT(pending[i].rc == PAMI_SHUTDOWN, "barrier %d: %s", i,
                  pami_error_text(pending[i].rc));
        MP_EXPECT(pending[i].order == pending[0].order + (unsigned)i,
                  "barrier %d completed out of order", i);
    }
}

/* Announcements that must be dropped (docs/protocols/shm-barrier.md),
 * from task 0 to every task of another node; then the real ones still
 * make hierarchical barriers work. Needs shmb_nodes.sh. */
static void mode_malformed(void)
{
    pami_protocol_info_t info;
    size_t i = 0;
    do
        MP_CHECK(pami_protocol_query(job.client, i++, &info));
    while (strcmp(info.name, "shm_barrier") != 0);
    bool on_node0 = job.attr.local_tasks[0] == 0;
    MP_EXPECT(job.attr.num_local_tasks < job.size, "needs several nodes");
    enum { KINDS = 9 };
    if (job.me == 0) {
        for (pami_task_t t = 0; t < job.size; t++) {
            bool local = false;
            for (size_t k = 0; k < job.attr.num_local_tasks; k++)
                local |= job.attr.local_tasks[k] == t;
            if (local)
                continue;
            for (int kind = 0; kind < KINDS; kind++) {
                /* version, type, reserved, leader, ntasks, offset (LE) */
                uint8_t h[24] = {1, 1, 0, 0, 0, 0, 0, 0,
                                 (uint8_t)job.attr.num_local_tasks};
                size_t hlen = 16, dlen = 0;
                switch (kind) {
                case 0: hlen = 8; break;           /* short */
                case 1: hlen = 24; break;          /* long */
                case 2: h[0] = 2; break;           /* version */
                case 3: h[1] = 7; break;           /* unknown type */
                case 4: h[3] = 1; break;           /* reserved */
                case 5: h[4] = (uint8_t)t; break;  /* not the sender */
                case 6: h[8] = (uint8_t)job.size; break; /* too many */
                case 7: h[12] = 3; break;          /* another offset */
                case 8: dlen = 4; break;           /* carries data */
                }
                pami_send_immediate_t si = {
                    .dest = mp_ep(&job, t, 0), .dispatch = info.dispatch_base,
                    .header = h, .header_len = hlen, .data = "data",
                    .data_len = dlen};
                mp_inject_imm(&job, job.ctx[0], &si);
            }
        }
    }
    if (!on_node0)
        MP_WAIT(&job, job.ctx[0], stat_of("bad_packets") >= KINDS, MP_WAIT_S,
                "%llu of %d malformed announcements counted",
                (unsigned long long)stat_of("bad_packets"), KINDS);
    MP_EXPECT(stat_of("bad_packets") == (on_node0 ? 0 : KINDS),
              "%llu announcements dropped",
              (unsigned long long)stat_of("bad_packets"));
    hier_mode = true;
    for (int k = 0; k < 50; k++)
        MP_EXPECT(barrier() == PAMI_SUCCESS, "hier barrier %d failed", k);
}

int main(int argc, char **argv)
{
    bool two = argc > 1 && strcmp(argv[1], "two-contexts") == 0;
    mp_init(&job, "shmb_test", &argc, argv, NULL, two ? 2 : 1, true);
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_JOB_ID};
    MP_CHECK(pami_client_query(job.client, &a));
    job_id = a.job_id;
    /* shmb_nodes.sh splits the job into nodes of SHMB_NODES_PER tasks. */
    const char *per = getenv("SHMB_NODES_PER");
    size_t want = per != NULL ? (size_t)strtoul(per, NULL, 10) : job.size;
    if (job.size % want != 0 && job.me >= job.size / want * want)
        want = job.size % want;
    MP_EXPECT(job.attr.num_local_tasks == want, "%zu tasks on this node, "
              "expected %zu", job.attr.num_local_tasks, want);
    check_node_map(per != NULL ? (size_t)strtoul(per, NULL, 10) : job.size);
    const char *mode = argc > 1 ? argv[1] : "loop";
    const char *arg  = argc > 2 ? argv[2] : NULL;
    bool finish_clean = true;
    /* Any mode through the blocking form's fast path. */
    inline_mode = getenv("SHMB_TEST_INLINE") != NULL;

    if (strcmp(mode, "loop") == 0 || strcmp(mode, "hier") == 0 ||
        strcmp(mode, "inline") == 0) {
        hier_mode   = strcmp(mode, "hier") == 0;
        inline_mode = inline_mode || strcmp(mode, "inline") == 0;
        mode_loop(arg != NULL ? strtol(arg, NULL, 10) : 1000);
    } else if (strcmp(mode, "bench") == 0 ||
               strcmp(mode, "bench-hier") == 0 ||
               strcmp(mode, "bench-inline") == 0) {
        hier_mode   = strcmp(mode, "bench-hier") == 0;
        inline_mode = strcmp(mode, "bench-inline") == 0;
        bench(arg != NULL ? strtol(arg, NULL, 10) : 100000);
    } else if (strcmp(mode, "shutdown") == 0 ||
               strcmp(mode, "shutdown-setup") == 0) {
        mode_shutdown(strcmp(mode, "shutdown-setup") == 0);
        finish_clean = false;
    } else if (two) {
        mode_two_contexts(arg != NULL ? strtol(arg, NULL, 10) : 500);
    } else if (strcmp(mode, "malformed") == 0) {
        mode_malformed();
    } else if (strcmp(mode, "late-leader") == 0) {
        mode_late(true);
    } else if (strcmp(mode, "late-followers") == 0) {
        mode_late(false);
    } else if (strcmp(mode, "timeout") == 0) {
        mode_timeout(arg != NULL ? (int)strtol(arg, NULL, 10) : 0);
    } else if (strcmp(mode, "dead") == 0 || strcmp(mode, "dead-setup") == 0 ||
               strcmp(mode, "dead-hier") == 0) {
        hier_mode = strcmp(mode, "dead-hier") == 0;
        mode_dead(strcmp(mode, "dead-setup") == 0);
        finish_clean = false;
    } else if (strcmp(mode, "kill") == 0 && arg != NULL) {
        if (job.me == 0) {
            char path[512];
            snprintf(path, sizeof(path), "%s/jobid", arg);
            FILE *f = fopen(path, "w");
            MP_EXPECT(f != NULL, "cannot write %s", path);
            fprintf(f, "%s\n", job_id);
            fclose(f);
        }
        mode_kill(arg);
    } else if (strcmp(mode, "foreign") == 0 && arg != NULL) {
        MP_EXPECT(job.size >= 2, "foreign needs 2 tasks");
        mode_foreign(arg);
    } else {
        mp_fail("usage: shmb_test loop|hier|inline|bench|bench-hier|bench-inline [ITERS] | late-leader | "
                "late-followers | timeout [LATE_MS] | dead | dead-setup | dead-hier | two-contexts | shutdown | shutdown-setup | malformed | kill DIR | foreign "
                "job|magic|version|ntasks|size");
    }

    char *id = strdup(job_id);
    pami_task_t node_leader = job.attr.local_tasks[0]; /* freed by destroy */
    if (finish_clean)
        mp_finish(&job);
    else if (strncmp(mode, "shutdown", 8) == 0) {
        MP_CHECK(pami_client_destroy(&job.client));
        check_shutdown(strcmp(mode, "shutdown-setup") == 0);
        finish_clean = true; /* every task's fini is done: check all */
    } else
        pami_client_destroy(&job.client); /* a task is gone: may fail */
    job_id = id;
    job.attr.local_tasks = &node_leader;
    /* After a death only the leader knows its own fini is done. */
    if (finish_clean || job.me == 0)
        MP_EXPECT(count_objects("shmbar") == 0,
                  "shared objects left at exit");
    free(id);
    printf("shmb_test %s: ok\n", mode);
    return 0;
}
