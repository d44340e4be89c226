/*
 * rndv_sizes: large messages of many sizes between every pair of tasks
 * (each task to itself too), around the 256 KiB chunks and the 2 MiB
 * window in which an origin serves a payload over TCP
 * (docs/protocols/rendezvous.md): the first chunk travels with the RTS,
 * so 64 KiB (the threshold) and 256 KiB - 1 come whole with it, 256 KiB
 * + 1 needs one FETCH of a single byte; on one node with
 * PAMI_RNDV_VIA_ORIGIN=1 the same path, without it CMA.
 *
 *   rndv_sizes [ROUNDS] [split]
 *
 * With split: sizes around the size from which a transfer on one node is
 * read by two cores (8 MiB: the target reads the lower part, the origin
 * writes the upper part; rendezvous.md "Two cores on one transfer").
 *
 * Every payload lands, in turn, in a buffer of the handler's or in a
 * memory region of the target at an odd offset; the target checks every
 * byte (and that the bytes around a region slot stay untouched), the
 * origin that local_fn and remote_fn each run once with PAMI_SUCCESS.
 * At the end no message may have been dropped (mp_finish).
 */
#include <dirent.h>
#include <sched.h>
#include <unistd.h>
#include "mp_util.h"

enum { ID_SIZES = 70 };

#define KIB 1024u
#define MIB (1024u * KIB)
static const size_t chunk_sizes[] = {
    64 * KIB,        256 * KIB - 1,   256 * KIB,       256 * KIB + 1,
    512 * KIB - 1,   512 * KIB + 1,   2048 * KIB - 1,  2048 * KIB,
    2048 * KIB + 1,  2304 * KIB + 7,  9 * MIB + 5,
};
static const size_t split_sizes[] = {
    64 * KIB, 8 * MIB - 1, 8 * MIB, 8 * MIB + 4097, 16 * MIB + 3,
};
#define NSIZES_MAX (sizeof(chunk_sizes) / sizeof(chunk_sizes[0]))
static const size_t *sizes = chunk_sizes;
static size_t        nsizes = NSIZES_MAX;
#define GUARD  13u /* odd offset of a slot, and bytes kept around it */
#define FENCE  0x5a

typedef struct {
    uint32_t round;
    uint32_t index;
} hdr_t;

typedef struct {
    pami_task_t origin;
    hdr_t       h;
    uint8_t    *buf;   /* the handler's buffer, or NULL: the region */
    int         runs;
} recv_op_t;

typedef struct {
    uint8_t *buf;
    int      local_runs, remote_runs;
} send_op_t;

static mp_job_t         job;
static pami_memregion_t region;
static uint8_t         *region_mem;
static size_t           per_origin;   /* region bytes per origin */
static size_t           slot_at[NSIZES_MAX];
static unsigned         received, local_done, remote_done;

static uint32_t salt(uint32_t round) { return 7 + round; }
static uint64_t seq_of(const hdr_t *h, pami_task_t to)
{
    return ((uint64_t)h->round << 40) | ((uint64_t)to << 8) | h->index;
}

/* Region slots: odd payloads (by index) land there. */
static bool in_region(uint32_t index) { return index % 2 == 1; }

static uint8_t *slot(pami_task_t origin, uint32_t index)
{
    return region_mem + origin * per_origin + slot_at[index];
}

static void on_recv_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    recv_op_t *o = cookie;
    size_t     len = sizes[o->h.index];
    MP_EXPECT(++o->runs == 1, "receive %u of round %u from task %u ended "
              "twice", o->h.index, o->h.round, o->origin);
    MP_EXPECT(rc == PAMI_SUCCESS, "receive of %zu bytes from task %u: %s",
              len, o->origin, pami_error_text(rc));
    const uint8_t *p = o->buf != NULL ? o->buf : slot(o->origin, o->h.index);
    long bad = mp_verify(p, len, o->origin, seq_of(&o->h, job.me),
                         salt(o->h.round));
    MP_EXPECT(bad < 0, "%zu bytes from task %u (round %u) wrong at byte %ld",
              len, o->origin, o->h.round, bad);
    if (o->buf == NULL) {
        for (size_t i = 1; i <= GUARD; i++)
            MP_EXPECT(p[-(long)i] == FENCE && p[len + i - 1] == FENCE,
                      "bytes around the slot of %zu bytes from task %u "
                      "overwritten", len, o->origin);
        memset((uint8_t *)p, 0, len);
    }
    free(o->buf);
    free(o);
    received++;
}

static void on_msg(pami_context_t ctx, void *cookie, const void *hdr,
                   size_t hlen, const void *data, size_t dlen,
                   pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx; (void)cookie;
    pami_task_t origin;
    hdr_t       h;
    pami_endpoint_query(origin_ep, &origin, NULL);
    MP_EXPECT(hlen == sizeof(h) && origin < job.size, "a message of %zu "
              "header bytes from task %u", hlen, origin);
    memcpy(&h, hdr, sizeof(h));
    MP_EXPECT(h.index < nsizes && dlen == sizes[h.index], "%zu bytes from "
              "task %u for size %u", dlen, origin, h.index);
    if (data != NULL) { /* below the threshold (PAMI_RNDV_THRESHOLD) */
        mp_expect_payload(data, dlen, origin, seq_of(&h, job.me),
                          salt(h.round));
        received++;
        return;
    }
    recv_op_t *o = calloc(1, sizeof(*o));
    MP_EXPECT(o != NULL, "out of memory");
    o->origin = origin;
    o->h      = h;
    if (in_region(h.index)) {
        recv->mr        = &region;
        recv->mr_offset = (size_t)(slot(origin, h.index) - region_mem);
    } else {
        o->buf = malloc(dlen);
        MP_EXPECT(o->buf != NULL, "out of memory");
        recv->addr = o->buf;
    }
    recv->local_fn = on_recv_done;
    recv->cookie   = o;
}

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    send_op_t *o = cookie;
    MP_EXPECT(++o->local_runs == 1, "local_fn ran twice");
    MP_EXPECT(rc == PAMI_SUCCESS, "send: %s", pami_error_text(rc));
    local_done++;
    if (o->remote_runs == 1) {
        free(o->buf);
        free(o);
    }
}

static void on_remote(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    send_op_t *o = cookie;
    MP_EXPECT(++o->remote_runs == 1, "remote_fn ran twice");
    MP_EXPECT(rc == PAMI_SUCCESS, "remote completion: %s",
              pami_error_text(rc));
    remote_done++;
    if (o->local_runs == 1) {
        free(o->buf);
        free(o);
    }
}

static void round_once(uint32_t round)
{
    unsigned want = (unsigned)(job.size * nsizes) * (round + 1);
    unsigned base = (unsigned)(job.size * nsizes) * round;
    for (uint32_t i = 0; i < nsizes; i++) {
        for (size_t k = 0; k < job.size; k++) {
            pami_task_t to = (pami_task_t)((job.me + k) % job.size);
            hdr_t       h  = {.round = round, .index = i};
            send_op_t  *o  = calloc(1, sizeof(*o));
            MP_EXPECT(o != NULL, "out of memory");
            o->buf = malloc(sizes[i]);
            MP_EXPECT(o->buf != NULL, "out of memory");
            mp_fill(o->buf, sizes[i], job.me, seq_of(&h, to), salt(round));
            pami_send_t s = {
                .send = {.dest = mp_ep(&job, to, 0), .dispatch = ID_SIZES,
                         .header = &h, .header_len = sizeof(h),
                         .data = o->buf, .data_len = sizes[i]},
                .local_fn = on_local, .remote_fn = on_remote, .cookie = o};
            MP_CHECK(pami_send(job.ctx[0], &s));
        }
        /* Two sizes in flight at most: memory stays bounded. */
        MP_WAIT(&job, job.ctx[0],
                remote_done + 2 * job.size >= base + (i + 1) * job.size,
                MP_WAIT_S, "size %zu: %u of %u sends answered", sizes[i],
                remote_done, want);
    }
    MP_WAIT(&job, job.ctx[0],
            remote_done == want && local_done == want && received == want,
            MP_WAIT_S, "round %u: %u sent, %u answered, %u received of %u",
            round, local_done, remote_done, received, want);
    /* Every task has its slots back before the next round writes them. */
    mp_sync(&job);
}

static int cpus_here(void)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                        : 1;
}

/* Threads of this process named like pami's large-read helper. */
static int helper_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int  n = 0;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[300], comm[32] = "";
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(comm, sizeof(comm), f) != NULL &&
            strncmp(comm, "pami-cma", 8) == 0)
            n++;
        fclose(f);
    }
    if (d != NULL)
        closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    mp_init(&job, "rndv_sizes", &argc, argv, NULL, 1, false);
    uint32_t rounds = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 2;
    MP_EXPECT(rounds >= 1 && rounds <= 1000, "rounds: 1..1000");
    if (argc > 2) {
        MP_EXPECT(strcmp(argv[2], "split") == 0, "usage: rndv_sizes "
                  "[ROUNDS] [split]");
        sizes  = split_sizes;
        nsizes = sizeof(split_sizes) / sizeof(split_sizes[0]);
    }
    for (size_t i = 0; i < nsizes; i++) {
        slot_at[i] = per_origin + GUARD;
        if (in_region((uint32_t)i))
            per_origin += sizes[i] + 2 * GUARD;
    }
    size_t bytes = per_origin * job.size;
    region_mem = malloc(bytes);
    MP_EXPECT(region_mem != NULL, "out of memory");
    memset(region_mem, FENCE, bytes);
    for (pami_task_t t = 0; t < job.size; t++)
        for (uint32_t i = 0; i < nsizes; i++)
            if (in_region(i))
                memset(slot(t, i), 0, sizes[i]);
    MP_CHECK(pami_memregion_create(job.ctx[0], region_mem, bytes, &region));
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_SIZES, on_msg, NULL, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));
    double t0 = mp_now();
    for (uint32_t r = 0; r < rounds; r++)
        round_once(r);
    double secs = mp_now() - t0;
    MP_CHECK(pami_memregion_destroy(job.ctx[0], &region));
    if (job.me == 0) {
        size_t total = 0;
        for (size_t i = 0; i < nsizes; i++)
            total += sizes[i];
        printf("rndv_sizes: %zu tasks, %u rounds of %zu sizes (64 KiB .. "
               "%zu B) to every task, %.2f s (%.0f MiB/s out of task 0)"
               "\n", job.size, rounds, nsizes, sizes[nsizes - 1], secs,
               (double)total * job.size * rounds / secs / (1 << 20));
    }
    /* Alone on the node (more CPUs than tasks) the 9 MiB reads were
     * split: the helper runs now, and client destroy must join it. */
    int helpers = helper_threads();
    MP_EXPECT(job.size > 1 || helpers == 1 || cpus_here() < 2,
              "%d large-read helper threads while alone on the node",
              helpers);
    mp_finish(&job);
    /* A joined thread's /proc entry can outlast the join by a moment (the
     * kernel clears the tid before it reaps the thread). */
    for (int i = 0; i < 200 && helper_threads() != 0; i++)
        usleep(10000);
    MP_EXPECT(helper_threads() == 0, "a large-read helper thread outlived "
              "pami_client_destroy");
    free(region_mem);
    return 0;
}
