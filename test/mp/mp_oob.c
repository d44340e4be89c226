/*
 * mp_oob: the oob bootstrap, driven by the test's own allgather.
 *
 * The program runs under pamirun but does not use its bootstrap: it passes
 * PAMI_CLIENT_PARAM_OOB with task and size from PAMI_RANK / PAMI_SIZE and an
 * allgather that works through files, without pami: call k of task r
 * writes $TMPDIR/pami-mp-oob-<PAMI_JOB_ID>-<k>-<r> (under a temporary name,
 * then renamed, so it appears whole), then polls with nanosleep until the
 * files of every task for call k exist and reads them. A task removes its
 * file of call k-1 once it has seen all files of call k (everyone is past
 * reading k-1 then). At the end every task leaves a "bye" file; task 0
 * waits for all of them, removes whatever is left and checks that nothing
 * with the job's prefix remains. A task that fails or is terminated by
 * pamirun removes its own files on the way out.
 *
 * Checked: the client reports the oob bootstrap, the task and size given;
 * the callback ran (client and context creation, destroy); a ring
 * exchange of an immediate message and a 200 KiB pami_send, and an
 * all-to-all of small messages, arrive intact.
 *
 *   pamirun -n N mp_oob
 */
#include "mp_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "fdio.h"

enum { ID_RING = 90, ID_ALL = 91 };

#define RING_BIG (200 * 1024)
#define POLL_S   60.0

typedef struct {
    char     dir[512];
    char     prefix[160];
    unsigned rank;
    unsigned size;
    uint64_t seq;   /* allgathers so far */
    size_t   bytes; /* moved through files, for the report */
} file_group_t;

static mp_job_t     job;
static file_group_t group;
static volatile sig_atomic_t group_done; /* task 0 sweeps from here on */

static void part_path(char *out, size_t n, const file_group_t *g,
                      const char *what, unsigned rank)
{
    snprintf(out, n, "%s/%s-%s-%u", g->dir, g->prefix, what, rank);
}

/* Publishes len bytes as file `what` of this task: whole or not at all. */
static int publish(file_group_t *g, const char *what, const void *data,
                   uint64_t len)
{
    char path[800], tmp[820];
    part_path(path, sizeof(path), g, what, g->rank);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        fprintf(stderr, "mp_oob: cannot create %s: %s\n", tmp,
                strerror(errno));
        return -1;
    }
    int rc = pami_fd_write_all(fd, &len, sizeof(len));
    if (rc == 0)
        rc = pami_fd_write_all(fd, data, len);
    close(fd);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc != 0) {
        fprintf(stderr, "mp_oob: cannot write %s: %s\n", path,
                strerror(errno));
        unlink(tmp);
    }
    return rc;
}

/* Waits for file `what` of task r and reads len bytes of it into out
 * (out may be NULL to only wait). */
static int collect(file_group_t *g, const char *what, unsigned r, void *out,
                   uint64_t len)
{
    char   path[800];
    double deadline = mp_now() + POLL_S;
    double nap_ms   = 0.05;
    part_path(path, sizeof(path), g, what, r);
    for (;;) {
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            uint64_t have;
            int rc = pami_fd_read_all(fd, &have, sizeof(have));
            if (rc == 0 && have != len) {
                fprintf(stderr, "mp_oob: %s holds %llu bytes, expected "
                                "%llu\n", path, (unsigned long long)have,
                        (unsigned long long)len);
                rc = -1;
            }
            if (rc == 0 && out != NULL)
                rc = pami_fd_read_all(fd, out, len);
            close(fd);
            return rc;
        }
        if (errno != ENOENT || mp_now() > deadline) {
            fprintf(stderr, "mp_oob: waiting for %s: %s\n", path,
                    errno == ENOENT ? "timed out" : strerror(errno));
            return -1;
        }
        mp_sleep_ms(nap_ms);
        if (nap_ms < 5.0)
            nap_ms *= 2;
    }
}

/* The pami_oob_allgather_fn. */
static int file_allgather(void *cookie, const void *send, void *recv,
                          size_t len)
{
    file_group_t *g = cookie;
    char what[32];
    uint64_t k = g->seq++;
    snprintf(what, sizeof(what), "%llu", (unsigned long long)k);
    if (publish(g, what, send, len) != 0)
        return -1;
    for (unsigned r = 0; r < g->size; r++)
        if (collect(g, what, r, (uint8_t *)recv + (size_t)r * len, len) != 0)
            return -2;
    g->bytes += len * g->size;
    /* Everyone wrote call k, so everyone has read call k-1. */
    if (k > 0) {
        char prev[32], path[800];
        snprintf(prev, sizeof(prev), "%llu", (unsigned long long)(k - 1));
        part_path(path, sizeof(path), g, prev, g->rank);
        unlink(path);
    }
    return 0;
}

/* After the last allgather: tell task 0, which removes what is left. */
static void file_group_finish(file_group_t *g)
{
    if (publish(g, "bye", "", 0) != 0)
        mp_fail("cannot leave the bye file");
    group_done = 1;
    if (g->rank != 0)
        return;
    for (unsigned r = 0; r < g->size; r++)
        MP_EXPECT(collect(g, "bye", r, NULL, 0) == 0,
                  "task %u never finished", r);
    size_t plen = strlen(g->prefix);
    for (int pass = 0; pass < 2; pass++) {
        DIR *d = opendir(g->dir);
        MP_EXPECT(d != NULL, "cannot list %s", g->dir);
        size_t left = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strncmp(e->d_name, g->prefix, plen) != 0)
                continue;
            left++;
            if (pass == 0) {
                char path[800];
                snprintf(path, sizeof(path), "%s/%s", g->dir, e->d_name);
                MP_EXPECT(unlink(path) == 0, "cannot remove %s", path);
            }
        }
        closedir(d);
        MP_EXPECT(pass == 0 || left == 0, "%zu files of the job are left in "
                                          "%s", left, g->dir);
    }
}

/* When a task fails (mp_fail exits) or pamirun ends the job (SIGTERM),
 * it removes its own files, so a failed run leaves nothing behind either.
 * Async-signal-safe: no stdio, only unlink. */
static size_t fmt_uint(char *out, uint64_t v)
{
    char   rev[24];
    size_t n = 0, len = 0;
    do {
        rev[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    while (n > 0)
        out[len++] = rev[--n];
    return len;
}

static void unlink_own(const char *what, uint64_t k, bool numbered,
                       bool tmp)
{
    char   path[800];
    size_t len = 0, dl = strlen(group.dir), pl = strlen(group.prefix);
    if (dl + pl + 64 > sizeof(path))
        return;
    memcpy(path, group.dir, dl);
    len = dl;
    path[len++] = '/';
    memcpy(path + len, group.prefix, pl);
    len += pl;
    path[len++] = '-';
    if (numbered) {
        len += fmt_uint(path + len, k);
    } else {
        size_t wl = strlen(what);
        memcpy(path + len, what, wl);
        len += wl;
    }
    path[len++] = '-';
    len += fmt_uint(path + len, group.rank);
    if (tmp) {
        memcpy(path + len, ".tmp", 4);
        len += 4;
    }
    path[len] = '\0';
    unlink(path);
}

static void remove_own_files(void)
{
    if (group_done || group.prefix[0] == '\0')
        return;
    for (uint64_t k = 0; k <= group.seq; k++) {
        unlink_own(NULL, k, true, false);
        unlink_own(NULL, k, true, true);
    }
    unlink_own("bye", 0, false, false);
    unlink_own("bye", 0, false, true);
}

static void on_sigterm(int sig)
{
    remove_own_files();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ---- messages ---- */

static int      ring_got;
static uint64_t all_got;
static uint8_t *ring_buf;

static void on_ring_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "ring receive: %s", pami_error_text(rc));
    pami_task_t prev = (pami_task_t)((job.me + job.size - 1) % job.size);
    long bad = mp_verify(ring_buf, RING_BIG, prev, 2, 9);
    MP_EXPECT(bad < 0, "ring payload wrong at byte %ld", bad);
    ring_got++;
}

static void on_ring(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)cookie;
    pami_task_t origin;
    pami_endpoint_query(origin_ep, &origin, NULL);
    pami_task_t prev = (pami_task_t)((job.me + job.size - 1) % job.size);
    uint32_t    seq;
    MP_EXPECT(origin == prev, "ring message from task %u, expected %u",
              origin, prev);
    MP_EXPECT(hlen == sizeof(seq), "ring header of %zu bytes", hlen);
    memcpy(&seq, hdr, sizeof(seq));
    MP_EXPECT(seq == (uint32_t)ring_got + 1, "ring message %u out of order",
              seq);
    if (seq == 1) {
        MP_EXPECT(dlen == 64 && data != NULL, "ring message 1: %zu bytes",
                  dlen);
        long bad = mp_verify(data, dlen, origin, 1, 9);
        MP_EXPECT(bad < 0, "ring message 1 wrong at byte %ld", bad);
        ring_got++;
        return;
    }
    MP_EXPECT(dlen == RING_BIG, "ring message 2: %zu bytes", dlen);
    if (data != NULL) {
        memcpy(ring_buf, data, dlen);
        on_ring_done(ctx, NULL, PAMI_SUCCESS);
        return;
    }
    recv->addr     = ring_buf;
    recv->local_fn = on_ring_done;
}

static void on_all(pami_context_t ctx, void *cookie, const void *hdr,
                   size_t hlen, const void *data, size_t dlen,
                   pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)data; (void)dlen; (void)recv;
    pami_task_t origin, claimed;
    pami_endpoint_query(origin_ep, &origin, NULL);
    MP_EXPECT(hlen == sizeof(claimed), "all-to-all header of %zu bytes",
              hlen);
    memcpy(&claimed, hdr, sizeof(claimed));
    MP_EXPECT(claimed == origin, "message of task %u came from %u", claimed,
              origin);
    all_got++;
}

static int local_done;

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "ring send: %s", pami_error_text(rc));
    local_done = 1;
}

int main(int argc, char **argv)
{
    const char *rank = getenv("PAMI_RANK"), *size = getenv("PAMI_SIZE");
    const char *jobid = getenv("PAMI_JOB_ID"), *tmp = getenv("TMPDIR");
    if (rank == NULL || size == NULL || jobid == NULL) {
        fprintf(stderr, "mp_oob: run under pamirun (PAMI_RANK, PAMI_SIZE, "
                        "PAMI_JOB_ID)\n");
        return 1;
    }
    group.rank = (unsigned)strtoul(rank, NULL, 10);
    group.size = (unsigned)strtoul(size, NULL, 10);
    snprintf(group.dir, sizeof(group.dir), "%s",
             tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    snprintf(group.prefix, sizeof(group.prefix), "pami-mp-oob-%s", jobid);
    atexit(remove_own_files);
    signal(SIGTERM, on_sigterm);

    pami_client_params_t params = {
        .field_mask    = PAMI_CLIENT_PARAM_OOB,
        .oob_allgather = file_allgather,
        .oob_cookie    = &group,
        .oob_task      = group.rank,
        .oob_size      = group.size,
    };
    mp_init(&job, "mp_oob", &argc, argv, &params, 1, false);
    MP_EXPECT(job.attr.bootstrap == PAMI_BOOTSTRAP_OOB,
              "bootstrap %d, expected oob (%d)", (int)job.attr.bootstrap,
              (int)PAMI_BOOTSTRAP_OOB);
    MP_EXPECT(job.me == group.rank && job.size == group.size,
              "task %u of %zu, the oob group says %u of %u", job.me,
              job.size, group.rank, group.size);
    uint64_t after_init = group.seq;
    MP_EXPECT(after_init >= 2, "only %llu allgathers by client and context "
                               "creation", (unsigned long long)after_init);
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");

    pami_context_t ctx = job.ctx[0];
    ring_buf = malloc(RING_BIG);
    uint8_t *big = malloc(RING_BIG);
    MP_EXPECT(ring_buf && big, "out of memory");
    MP_CHECK(pami_dispatch_set(ctx, ID_RING, on_ring, NULL, NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_ALL, on_all, NULL, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));
    uint64_t before_destroy = group.seq;

    pami_endpoint_t next =
        mp_ep(&job, (pami_task_t)((job.me + 1) % job.size), 0);
    uint8_t  small[64];
    uint32_t seq = 1;
    mp_fill(small, sizeof(small), job.me, 1, 9);
    pami_send_immediate_t s = {.dest = next, .dispatch = ID_RING,
                               .header = &seq, .header_len = sizeof(seq),
                               .data = small, .data_len = sizeof(small)};
    mp_send_imm(&job, ctx, &s);
    seq = 2;
    mp_fill(big, RING_BIG, job.me, 2, 9);
    pami_send_t ps = {.send = {.dest = next, .dispatch = ID_RING,
                               .header = &seq, .header_len = sizeof(seq),
                               .data = big, .data_len = RING_BIG},
                      .local_fn = on_local};
    MP_CHECK(pami_send(ctx, &ps));
    for (size_t k = 1; k < job.size; k++) {
        pami_send_immediate_t a = {
            .dest = mp_ep(&job, mp_peer(&job, k), 0),
            .dispatch = ID_ALL, .header = &job.me,
            .header_len = sizeof(job.me)};
        mp_send_imm(&job, ctx, &a);
    }
    MP_WAIT(&job, ctx, ring_got == 2 && local_done &&
                           all_got == job.size - 1,
            MP_WAIT_S, "ring %d of 2, all-to-all %llu of %zu", ring_got,
            (unsigned long long)all_got, job.size - 1);
    mp_sync(&job);
    mp_finish(&job);
    MP_EXPECT(group.seq > before_destroy, "context destroy made no "
                                          "allgather");
    file_group_finish(&group);
    if (job.me == 0)
        printf("oob bootstrap over files: %llu allgathers (%zu bytes), ring "
               "and all-to-all verified, files cleaned up\n",
               (unsigned long long)group.seq, group.bytes);
    free(ring_buf);
    free(big);
    return 0;
}
