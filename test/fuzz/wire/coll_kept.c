/*
 * The bound on collectives messages kept for later (collectives/
 * coll_kept.c, docs/collectives.md "Messages kept for later").
 *
 *   coll_kept flood N   task 1 forges N messages to task 0 for geometries
 *                       not created there and for collectives far ahead on
 *                       one that is: task 0 keeps them up to the bounds
 *                       (set small by the test's environment), drops and
 *                       counts the rest, its resident memory stays near
 *                       the byte bound; then real collectives are correct
 *                       (the forger's own ones once the geometry it
 *                       flooded is destroyed and its share has room).
 *   coll_kept skew N    legitimate early arrivals: 8 ranks, the world and
 *                       three geometries, N broadcasts rooted at rank 0
 *                       and allreduces in flight on each while the last
 *                       rank starts 1 s late: none is dropped, all
 *                       correct; the waiting high water is printed.
 *
 * White-box: the forger builds collectives packets with coll.h's layout
 * (coll_hdr_t), which the public headers do not show.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pami_collectives.h>
#include <pami_protocol.h>

#include "coll.h"
#include "mp_util.h"

static mp_job_t job;
#define CTX (job.ctx[0])

static uint64_t stat(const char *name)
{
    pami_protocol_stat_t st[64];
    size_t n = 0;
    MP_CHECK(pami_protocol_stats(CTX, "collectives", st, 64, &n));
    for (size_t i = 0; i < n && i < 64; i++)
        if (strcmp(st[i].name, name) == 0)
            return st[i].value;
    mp_fail("no collectives counter %s", name);
}

static unsigned long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char  line[256];
    unsigned long kb = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return kb;
}

static pami_geometry_t create(uint32_t id, const pami_task_t *tasks,
                              size_t n)
{
    pami_geometry_t world, g;
    MP_CHECK(pami_geometry_world(CTX, &world));
    MP_CHECK(pami_geometry_create_tasklist(CTX, world, id, tasks, n, NULL,
                                           &g, NULL, NULL));
    if (g != NULL)
        MP_CHECK(pami_geometry_wait_ready(CTX, g));
    return g;
}

static void allreduce_check(pami_geometry_t g, size_t n, int64_t salt)
{
    int64_t in[3] = {(int64_t)job.me + salt, 1, -salt};
    int64_t out[3];
    MP_CHECK(pami_geometry_allreduce(CTX, g, in, out, 3, PAMI_TYPE_INT64,
                                     PAMI_OP_SUM));
    (void)n;
    MP_EXPECT(out[1] == (int64_t)n && out[2] == -salt * (int64_t)n,
              "allreduce gave %lld %lld %lld", (long long)out[0],
              (long long)out[1], (long long)out[2]);
}

/* ---- flood ---- */

static void flood(unsigned long n)
{
    MP_EXPECT(job.size >= 2, "needs 2 tasks");
    pami_task_t pair[2] = {0, 1};
    /* Geometry 5 of tasks 0 and 1: forged collectives far ahead on it. */
    pami_geometry_t g5 = create(5, pair, 2);
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_IMMEDIATE_MAX};
    MP_CHECK(pami_client_query(job.client, &a));
    size_t base = mp_protocol_base(&job, "collectives");
    /* Before the sync: a task may leave it first and send while another
     * is still inside it, whose progress takes the packets there. */
    uint64_t drop0 = stat("kept_dropped");
    mp_sync(&job);
    unsigned long rss0 = rss_kb();
    size_t   len   = a.immediate_max - sizeof(coll_hdr_t);
    if (len > 4096)
        len = 4096;
    if (job.me == 1) {
        uint8_t *data = malloc(len);
        memset(data, 0xa5, len);
        for (unsigned long i = 0; i < n; i++) {
            bool     ahead = i % 4 == 0;
            uint32_t seq   = ahead ? 1000 + (uint32_t)i : (uint32_t)(i % 7);
            coll_hdr_t h = {.version = COLL_WIRE_VERSION,
                            .type = COLL_MSG_DATA,
                            .kind = PAMI_XFER_BROADCAST,
                            .connid = (uint16_t)(seq % PAMI_CONNID_BUFFER),
                            .geom_id = ahead ? 5 : 1000 + (uint32_t)(i % 64),
                            .seq = seq, .src_rank = 1, .total = len};
            pami_send_immediate_t s = {.dest = mp_ep(&job, 0, 0),
                                       .dispatch = base, .header = &h,
                                       .header_len = sizeof(h),
                                       .data = data, .data_len = len};
            mp_inject_imm(&job, CTX, &s);
        }
        free(data);
    }
    mp_sync(&job);
    if (job.me == 0) {
        unsigned long rss1 = rss_kb();
        uint64_t dropped = stat("kept_dropped") - drop0;
        uint64_t waiting = stat("waiting_now");
        uint64_t wbytes  = stat("waiting_bytes_now");
        const char *e = getenv("PAMI_COLL_KEPT_MAX");
        size_t max_n  = e != NULL ? strtoul(e, NULL, 10) : 65536;
        printf("coll_kept flood: %lu forged messages of %zu bytes, %llu "
               "kept (%llu bytes), %llu dropped; resident %lu -> %lu kB\n",
               n, len, (unsigned long long)waiting,
               (unsigned long long)wbytes, (unsigned long long)dropped,
               rss0, rss1);
        /* One sender takes at most half of the room; what was kept
         * counts a message of the geometry's creation too. */
        MP_EXPECT(waiting <= max_n / 2 && waiting + dropped >= n &&
                      dropped <= n,
                  "kept %llu + dropped %llu of %lu (bound %zu)",
                  (unsigned long long)waiting, (unsigned long long)dropped,
                  n, max_n);
        MP_EXPECT(dropped > 0, "nothing dropped");
        /* The offered bytes are far above this; what is kept is not. */
        MP_EXPECT(rss1 < rss0 + 64 * 1024, "resident memory grew from %lu "
                  "to %lu kB", rss0, rss1);
    }
    /* The forger's share of the room is full: its own early messages
     * are dropped too, and a geometry's creation has one from every task
     * of the parent. Destroying the geometry it flooded frees part. */
    mp_sync(&job);
    if (g5 != NULL) {
        uint64_t w0 = job.me == 0 ? stat("waiting_now") : 0;
        MP_CHECK(pami_geometry_destroy(&g5));
        if (job.me == 0)
            MP_EXPECT(stat("waiting_now") < w0, "destroying geometry 5 "
                      "did not free its kept messages (%llu)",
                      (unsigned long long)w0);
    }
    mp_sync(&job);
    /* Real collectives are right: among the others ... */
    pami_task_t *list = malloc(job.size * sizeof(*list));
    size_t m = 0;
    for (size_t i = 0; i < job.size; i++)
        if (i != 1)
            list[m++] = (pami_task_t)(job.size - 1 - i);
    pami_geometry_t g6 = create(6, list, m);
    if (g6 != NULL) {
        allreduce_check(g6, m, 5);
        MP_CHECK(pami_geometry_destroy(&g6));
    }
    /* ... and with the forger. */
    pami_geometry_t world;
    MP_CHECK(pami_geometry_world(CTX, &world));
    allreduce_check(world, job.size, 3);
    for (size_t i = 0; i < job.size; i++)
        list[i] = (pami_task_t)(job.size - 1 - i);
    pami_geometry_t g7 = create(7, list, job.size);
    allreduce_check(g7, job.size, 11);
    MP_CHECK(pami_geometry_destroy(&g7));
    free(list);
    mp_sync(&job);
}

/* ---- skew ---- */

#define NGEOM 4
#define WINDOW 48

typedef struct {
    int64_t buf[8];
    int64_t in[2], out[2];
    bool    done;
} call_t;

static void on_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    if (rc != PAMI_SUCCESS)
        mp_fail("collective: %s", pami_error_text(rc));
    ((call_t *)cookie)->done = true;
}

static void skew(unsigned long n)
{
    pami_geometry_t g[NGEOM];
    size_t          gn[NGEOM], grank[NGEOM];
    pami_task_t    *list = malloc(job.size * sizeof(*list));
    MP_CHECK(pami_geometry_world(CTX, &g[0]));
    for (int k = 1; k < NGEOM; k++) {
        size_t m = 0;
        for (size_t t = 0; t < job.size; t++)
            if ((k == 1 && t % 2 == 0) || (k == 2 && t >= job.size / 2) ||
                k == 3)
                list[m++] = (pami_task_t)(k == 3 ? job.size - 1 - t : t);
        g[k] = create(20 + (uint32_t)k, list, m);
    }
    for (int k = 0; k < NGEOM; k++)
        if (g[k] != NULL) {
            pami_geometry_attr_t at = {.field_mask = PAMI_GEOMETRY_ATTR_SIZE |
                                                     PAMI_GEOMETRY_ATTR_RANK};
            MP_CHECK(pami_geometry_query(g[k], &at));
            gn[k]    = at.size;
            grank[k] = at.rank;
        }
    mp_sync(&job);
    if (job.me == job.size - 1) {
        /* Late, but handling what comes: the others run ahead and their
         * messages wait here for collectives not posted yet. */
        double until = mp_now() + 1.0;
        while (mp_now() < until)
            pami_context_wait(CTX, 10);
    }
    call_t *calls = calloc(NGEOM * WINDOW, sizeof(*calls));
    for (unsigned long i = 0; i < n; i += WINDOW) {
        for (unsigned long j = 0; j < WINDOW; j++)
            for (int k = 0; k < NGEOM; k++) {
                call_t *c = &calls[k * WINDOW + j];
                if (g[k] == NULL)
                    continue;
                memset(c, 0, sizeof(*c));
                bool bcast = (i + j) % 3 != 2;
                for (int e = 0; e < 8; e++)
                    c->buf[e] = grank[k] == 0 ? (int64_t)(i + j) * 8 + e : -1;
                c->in[0] = (int64_t)grank[k];
                c->in[1] = (int64_t)(i + j);
                pami_xfer_t x = {.kind = bcast ? PAMI_XFER_BROADCAST
                                               : PAMI_XFER_ALLREDUCE,
                                 .geometry = g[k], .root = 0,
                                 .done_fn = on_done, .cookie = c,
                                 .sbuf = bcast ? NULL : c->in,
                                 .rbuf = bcast ? (void *)c->buf : c->out,
                                 .count = bcast ? 8 : 2,
                                 .dtype = PAMI_TYPE_INT64,
                                 .op = PAMI_OP_SUM};
                MP_CHECK(pami_collective(CTX, &x));
            }
        for (unsigned long j = 0; j < WINDOW; j++)
            for (int k = 0; k < NGEOM; k++) {
                call_t *c = &calls[k * WINDOW + j];
                if (g[k] == NULL)
                    continue;
                MP_WAIT(&job, CTX, c->done, MP_WAIT_S, "call %lu on "
                        "geometry %d", i + j, k);
                if ((i + j) % 3 != 2) {
                    for (int e = 0; e < 8; e++)
                        MP_EXPECT(c->buf[e] == (int64_t)(i + j) * 8 + e,
                                  "broadcast %lu element %d: %lld", i + j,
                                  e, (long long)c->buf[e]);
                } else {
                    int64_t s = (int64_t)(gn[k] * (gn[k] - 1) / 2);
                    MP_EXPECT(c->out[0] == s &&
                                  c->out[1] == (int64_t)((i + j) * gn[k]),
                              "allreduce %lu: %lld %lld", i + j,
                              (long long)c->out[0], (long long)c->out[1]);
                }
            }
    }
    mp_sync(&job);
    uint64_t dropped = stat("kept_dropped");
    printf("coll_kept skew: task %u: %lu calls on %d geometries, waiting "
           "high water %llu messages / %llu bytes, %llu unexpected and "
           "%llu orphans kept, %llu dropped\n", job.me, n, NGEOM,
           (unsigned long long)stat("waiting_high_water"),
           (unsigned long long)stat("waiting_bytes_high_water"),
           (unsigned long long)stat("unexpected_kept"),
           (unsigned long long)stat("orphans_kept"),
           (unsigned long long)dropped);
    MP_EXPECT(dropped == 0, "%llu legitimate messages dropped",
              (unsigned long long)dropped);
    for (int k = 1; k < NGEOM; k++)
        if (g[k] != NULL)
            MP_CHECK(pami_geometry_destroy(&g[k]));
    free(calls);
    free(list);
    mp_sync(&job);
}

int main(int argc, char **argv)
{
    mp_init(&job, "coll_kept", &argc, argv, NULL, 1, true);
    const char   *mode = argc > 1 ? argv[1] : "";
    unsigned long n    = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
    if (strcmp(mode, "flood") == 0)
        flood(n);
    else if (strcmp(mode, "skew") == 0)
        skew(n);
    else
        mp_fail("usage: coll_kept flood|skew N");
    mp_finish(&job);
    printf("coll_kept %s: task %u ok\n", mode, job.me);
    return 0;
}
