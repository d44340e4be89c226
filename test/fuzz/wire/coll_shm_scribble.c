/*
 * One task of the node scribbles into the shared-memory collectives'
 * segment (collectives/coll_shm_check.h): the others get errors and
 * counted refusals (coll_shm's segment_bad), never a crash or a hang.
 * All tasks on one node, world geometry (the shared-memory algorithms'
 * domain).
 *
 *   coll_shm_scribble setup  task 1 overwrites the segment's header with
 *                            seeded garbage while the node's leader waits
 *                            in the set-up: every follower refuses it, the
 *                            first shared-memory call fails on all tasks
 *                            (PAMI_ERROR), later ones too (or PAMI_INVAL
 *                            by a member's abort); collectives of other
 *                            algorithms stay correct
 *   coll_shm_scribble ring   after a good set-up, task 1 writes garbage
 *                            into the header, the ring's next entry (a
 *                            claim that is not the root's) and the slots:
 *                            the eager broadcast fails on every task
 *                            (PAMI_INVAL), nobody hangs, and the calls
 *                            after it are correct
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <pami_collectives.h>
#include <pami_protocol.h>

#include "coll_shm.h"
#include "mp_util.h"

static mp_job_t        job;
static pami_geometry_t world;
#define CTX (job.ctx[0])
#define SCRIBBLER 1

static uint64_t rng = 0x5c21bb1e;

static uint8_t rnd8(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint8_t)(rng >> 56);
}

static void garbage(void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ((uint8_t *)p)[i] = rnd8();
}

static uint64_t shm_stat(const char *name)
{
    pami_protocol_stat_t st[32];
    size_t n = 0;
    MP_CHECK(pami_protocol_stats(CTX, "coll_shm", st, 32, &n));
    for (size_t i = 0; i < n && i < 32; i++)
        if (strcmp(st[i].name, name) == 0)
            return st[i].value;
    mp_fail("no coll_shm counter %s", name);
}

static pami_result_t call(const char *algo, pami_xfer_type_t kind,
                          void *sbuf, void *rbuf, size_t count)
{
    pami_algorithm_t id;
    MP_CHECK(pami_algorithm_by_name(algo, &id));
    pami_xfer_t x = {.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                     .kind = kind, .geometry = world, .algorithm = id,
                     .root = 0, .sbuf = sbuf, .rbuf = rbuf, .count = count,
                     .dtype = PAMI_TYPE_INT64, .op = PAMI_OP_SUM};
    return pami_collective_wait(CTX, &x);
}

static void allreduce_ok(const char *algo, int64_t salt)
{
    int64_t in[2] = {salt, (int64_t)job.me}, out[2] = {0, 0};
    MP_CHECK(call(algo, PAMI_XFER_ALLREDUCE, in, out, 2));
    int64_t n = (int64_t)job.size;
    MP_EXPECT(out[0] == salt * n && out[1] == n * (n - 1) / 2,
              "%s gave %lld %lld", algo, (long long)out[0],
              (long long)out[1]);
}

static void bcast_ok(const char *algo, int64_t salt)
{
    int64_t buf[8];
    for (int i = 0; i < 8; i++)
        buf[i] = job.me == 0 ? salt + i : -1;
    MP_CHECK(call(algo, PAMI_XFER_BROADCAST, NULL, buf, 8));
    for (int i = 0; i < 8; i++)
        MP_EXPECT(buf[i] == salt + i, "%s element %d: %lld", algo, i,
                  (long long)buf[i]);
}

static void scribble_setup(void)
{
    cshm_t *s = cshm_of(CTX);
    MP_EXPECT(s != NULL && s->nlocal == job.size, "all tasks on one node");
    int64_t in[2] = {1, 2}, out[2];
    if (job.me == SCRIBBLER) {
        /* The leader creates the segment at its first call and waits in
         * the set-up's barrier for us: scribble, then come. */
        int fd = -1;
        double until = mp_now() + 20;
        while (fd < 0 && mp_now() < until) {
            fd = shm_open(s->name, O_RDWR, 0);
            if (fd < 0)
                usleep(1000);
        }
        MP_EXPECT(fd >= 0, "the segment %s never appeared", s->name);
        unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                MAP_SHARED, fd, 0);
        MP_EXPECT(p != MAP_FAILED, "mmap of %s", s->name);
        while (((cshm_hdr_t *)p)->magic != CSHM_MAGIC && mp_now() < until)
            usleep(1000);
        garbage(p, 4096);
        munmap(p, 4096);
        close(fd);
        printf("coll_shm_scribble: task %u wrote 4096 garbage bytes over "
               "the segment's header\n", job.me);
    }
    pami_result_t rc = call("allreduce_shm", PAMI_XFER_ALLREDUCE, in, out, 2);
    MP_EXPECT(rc == PAMI_ERROR, "the first shared-memory call: %s",
              pami_error_text(rc));
    /* Later ones fail too: PAMI_ERROR here, or PAMI_INVAL where a
     * member's abort of the call came first. */
    rc = call("broadcast_shm", PAMI_XFER_BROADCAST, NULL, out, 2);
    MP_EXPECT(rc == PAMI_ERROR || rc == PAMI_INVAL,
              "a later shared-memory call: %s", pami_error_text(rc));
    uint64_t bad = shm_stat("segment_bad");
    /* Every follower refused the header (the leader did not read it). */
    MP_EXPECT(job.me == s->local[0] ? bad == 0 : bad == 1,
              "segment_bad %llu", (unsigned long long)bad);
    allreduce_ok("allreduce_recursive_doubling", 5);
    bcast_ok("broadcast_binomial", 9);
}

static void scribble_ring(void)
{
    cshm_t *s = cshm_of(CTX);
    MP_EXPECT(s != NULL && s->nlocal == job.size, "all tasks on one node");
    allreduce_ok("allreduce_shm", 3); /* the set-up, good */
    bcast_ok("broadcast_shm_eager", 100);
    mp_sync(&job);
    if (job.me == SCRIBBLER) {
        /* The header, the slots, and the next ring entry's claim. */
        garbage(s->seg, offsetof(cshm_hdr_t, sleepers));
        garbage(s->seg + s->hdr_bytes, s->ring_off - s->hdr_bytes);
        atomic_store(cshm_ring_claim(s, s->ring_next), ~0ull);
        printf("coll_shm_scribble: task %u wrote garbage over the header, "
               "the slots and ring entry %llu\n", job.me,
               (unsigned long long)s->ring_next);
    }
    mp_sync(&job);
    uint64_t bad0 = shm_stat("mismatches");
    int64_t  buf[8] = {0};
    pami_result_t rc = call("broadcast_shm_eager", PAMI_XFER_BROADCAST,
                            NULL, buf, 8);
    MP_EXPECT(rc == PAMI_INVAL, "the eager broadcast over a forged claim: "
              "%s", pami_error_text(rc));
    MP_EXPECT(shm_stat("mismatches") == bad0 + 1, "mismatches %llu -> %llu",
              (unsigned long long)bad0,
              (unsigned long long)shm_stat("mismatches"));
    /* The next calls write what they read first: all correct. */
    for (int i = 0; i < 20; i++) {
        bcast_ok("broadcast_shm_eager", 200 + i);
        allreduce_ok("allreduce_shm", 300 + i);
    }
    bcast_ok("broadcast_shm", 400);
}

int main(int argc, char **argv)
{
    mp_init(&job, "coll_shm_scribble", &argc, argv, NULL, 1, true);
    MP_CHECK(pami_geometry_world(CTX, &world));
    const char *mode = argc > 1 ? argv[1] : "";
    MP_EXPECT(job.size >= 3, "run at 3 tasks or more");
    if (strcmp(mode, "setup") == 0)
        scribble_setup();
    else if (strcmp(mode, "ring") == 0)
        scribble_ring();
    else
        mp_fail("usage: coll_shm_scribble setup|ring");
    mp_sync(&job);
    mp_finish(&job);
    printf("coll_shm_scribble %s: task %u ok\n", mode, job.me);
    return 0;
}
