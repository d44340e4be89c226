/*
 * Large payloads (from the rendezvous threshold on, fetched by the
 * receiver with a get) arriving before the receiver is ready for them.
 *
 *   coll_large late     the root broadcasts 1 MiB while the others post
 *                       100 ms later: the request finds no collective,
 *                       the payload goes to a staging buffer (counted in
 *                       large_staged) and is copied once the broadcast
 *                       is posted
 *   coll_large flight   8 broadcasts and 8 allreduces of 256 KiB in
 *                       flight at once, ranks posting them staggered, so
 *                       payloads arrive for collectives and steps not
 *                       reached yet
 *   coll_large warm     a stream of 1 MiB allreduces (recursive doubling,
 *                       reduce+broadcast): once warm, their temporaries
 *                       and staging buffers come from the free lists and
 *                       the calls take (almost) no page fault; memory
 *                       given back and touched again costs a fault per
 *                       page (about 10 us here), which made these calls
 *                       10-20x slower
 */
#include <sys/resource.h>

#include "coll_util.h"

static mp_job_t job;

static uint64_t stat(const char *name)
{
    return ct_stat(job.ctx[0], "collectives", name);
}

static void on_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    if (rc != PAMI_SUCCESS)
        mp_fail("collective: %s", pami_error_text(rc));
    ++*(size_t *)cookie;
}

static size_t rndv_threshold(void)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    MP_CHECK(pami_client_query(job.client, &a));
    return a.rndv_threshold;
}

static void late(pami_geometry_t world, size_t n)
{
    const size_t bytes = 1u << 20;
    pami_algorithm_t algo;
    MP_CHECK(pami_algorithm_by_name("broadcast_binomial", &algo));
    uint8_t *buf = malloc(bytes);
    for (int round = 0; round < 3; round++) {
        size_t root = (size_t)round % n;
        /* The count before anyone can send this round's request: a root
         * leaving the previous sync first could otherwise be handled
         * inside this task's sync, before the count was read. */
        uint64_t staged0 = stat("large_staged");
        mp_sync(&job);
        if (job.me == root)
            ct_fill(buf, 500 + (size_t)round, bytes);
        else
            memset(buf, 0, bytes);
        bool first_child = n > 1 && job.me == (root + 1) % n &&
                           bytes >= rndv_threshold();
        if (job.me != root) {
            /* Progress meanwhile: the request is handled before the
             * broadcast is posted. The root's first child waits for it
             * to come (its payload is staged then), not for a time: a
             * root descheduled under load may send late. */
            double t0 = mp_now(), until = t0 + 0.1;
            while (mp_now() < until ||
                   (first_child && stat("large_staged") == staged0 &&
                    mp_now() - t0 < MP_WAIT_S))
                pami_context_wait(job.ctx[0], 10);
        }
        pami_xfer_t x = {.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                         .kind = PAMI_XFER_BROADCAST, .geometry = world,
                         .algorithm = algo, .root = root, .rbuf = buf,
                         .count = bytes, .dtype = PAMI_TYPE_BYTE};
        MP_CHECK(pami_collective_wait(job.ctx[0], &x));
        long bad = ct_check(buf, 500 + (size_t)round, bytes);
        if (bad >= 0)
            mp_fail("late broadcast from %zu: byte %ld wrong", root, bad);
        /* The root's first child got the request before it posted. */
        if (first_child)
            MP_EXPECT(stat("large_staged") > staged0,
                      "round %d: the early payload was not staged", round);
        mp_sync(&job);
    }
    free(buf);
}

#define FLIGHT 8

static void flight(pami_geometry_t world, size_t n)
{
    const size_t count = 32768; /* doubles: 256 KiB */
    double *bin[FLIGHT], *bout[FLIGHT];
    uint8_t *bc[FLIGHT];
    size_t done = 0;
    for (int i = 0; i < FLIGHT; i++) {
        bin[i]  = malloc(count * sizeof(double));
        bout[i] = malloc(count * sizeof(double));
        bc[i]   = malloc(count * sizeof(double));
        for (size_t k = 0; k < count; k++)
            bin[i][k] = (double)(job.me * 3 + (size_t)i + k % 17);
        if (job.me == (size_t)i % n)
            ct_fill(bc[i], 900 + (size_t)i, count * sizeof(double));
        else
            memset(bc[i], 0, count * sizeof(double));
    }
    mp_sleep_ms(20.0 * (double)((job.me * 3) % n));
    for (int i = 0; i < FLIGHT; i++) {
        pami_xfer_t b = {.kind = PAMI_XFER_BROADCAST, .geometry = world,
                         .done_fn = on_done, .cookie = &done,
                         .root = (size_t)i % n, .rbuf = bc[i],
                         .count = count * sizeof(double),
                         .dtype = PAMI_TYPE_BYTE};
        MP_CHECK(pami_collective(job.ctx[0], &b));
        pami_xfer_t a = {.kind = PAMI_XFER_ALLREDUCE, .geometry = world,
                         .done_fn = on_done, .cookie = &done,
                         .sbuf = bin[i], .rbuf = bout[i], .count = count,
                         .dtype = PAMI_TYPE_DOUBLE, .op = PAMI_OP_SUM};
        MP_CHECK(pami_collective(job.ctx[0], &a));
        if (job.me % 2 == 1)
            mp_sleep_ms(5);
    }
    MP_WAIT(&job, job.ctx[0], done == 2 * FLIGHT, MP_WAIT_S,
            "%zu of %d collectives done", done, 2 * FLIGHT);
    for (int i = 0; i < FLIGHT; i++) {
        long bad = ct_check(bc[i], 900 + (size_t)i, count * sizeof(double));
        if (bad >= 0)
            mp_fail("broadcast %d: byte %ld wrong", i, bad);
        for (size_t k = 0; k < count; k++) {
            double want = (double)(3 * n * (n - 1) / 2) +
                          (double)n * (double)((size_t)i + k % 17);
            if (bout[i][k] != want)
                mp_fail("allreduce %d: element %zu is %g, expected %g", i, k,
                        bout[i][k], want);
        }
        free(bin[i]);
        free(bout[i]);
        free(bc[i]);
    }
    if (n > 1)
        MP_EXPECT(stat("large_direct") + stat("large_staged") > 0,
                  "no payload went by get");
}

static long minor_faults(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        mp_fail("getrusage failed");
    return ru.ru_minflt;
}

#define WARM_UP    10
#define WARM_CALLS 30

static void warm(pami_geometry_t world, size_t n)
{
    static const char *const names[] = {"allreduce_recursive_doubling",
                                        "allreduce_reduce_broadcast"};
    const size_t count = 131072; /* doubles: 1 MiB */
    double *in = malloc(count * sizeof(double));
    double *out = malloc(count * sizeof(double));
    for (size_t a = 0; a < 2; a++) {
        pami_algorithm_t algo;
        MP_CHECK(pami_algorithm_by_name(names[a], &algo));
        uint64_t allocs0 = 0;
        long faults0 = 0;
        for (int call = 0; call < WARM_UP + WARM_CALLS; call++) {
            if (call == WARM_UP) {
                allocs0 = stat("allocations");
                faults0 = minor_faults();
            }
            for (size_t k = 0; k < count; k++)
                in[k] = (double)(job.me * 5 + (size_t)call + k % 13);
            pami_xfer_t x = {.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                             .kind = PAMI_XFER_ALLREDUCE, .geometry = world,
                             .algorithm = algo, .sbuf = in, .rbuf = out,
                             .count = count, .dtype = PAMI_TYPE_DOUBLE,
                             .op = PAMI_OP_SUM};
            MP_CHECK(pami_collective_wait(job.ctx[0], &x));
            for (size_t k = 0; k < count; k++) {
                double want = (double)(5 * n * (n - 1) / 2) +
                              (double)n * (double)((size_t)call + k % 13);
                if (out[k] != want)
                    mp_fail("%s call %d: element %zu is %g, expected %g",
                            names[a], call, k, out[k], want);
            }
        }
        /* Before the free lists kept large rooms, every call allocated
         * its 1 MiB temporaries again (two per call on most ranks: 512
         * faults a call). Staging may still grow, when a call gets more
         * pieces before it is posted than any call before it (16 pages
         * a piece), so allow a quarter MiB of new memory a call. */
        uint64_t grown  = stat("allocations") - allocs0;
        long     faults = minor_faults() - faults0;
        if (getenv("COLL_LARGE_VERBOSE"))
            printf("task %u %s: %llu allocations, %ld page faults in %d "
                   "warm calls\n", job.me, names[a],
                   (unsigned long long)grown, faults, WARM_CALLS);
        MP_EXPECT(faults < 64 * WARM_CALLS,
                  "%s: %ld page faults (%llu allocations) in %d warm calls",
                  names[a], faults, (unsigned long long)grown, WARM_CALLS);
    }
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    mp_init(&job, "coll_large", &argc, argv, NULL, 1, true);
    if (argc < 2)
        mp_fail("usage: coll_large late|flight|warm");
    pami_geometry_t world;
    MP_CHECK(pami_geometry_world(job.ctx[0], &world));
    if (strcmp(argv[1], "late") == 0)
        late(world, job.size);
    else if (strcmp(argv[1], "flight") == 0)
        flight(world, job.size);
    else if (strcmp(argv[1], "warm") == 0)
        warm(world, job.size);
    else
        mp_fail("unknown mode %s", argv[1]);
    MP_EXPECT(stat("collectives_failed") == 0 &&
                  stat("malformed_dropped") == 0,
              "failures or malformed messages");
    mp_sync(&job);
    if (job.me == 0)
        printf("coll_large %s: %zu tasks; %llu payloads fetched in place, "
               "%llu staged (task 0)\n", argv[1], job.size,
               (unsigned long long)stat("large_direct"),
               (unsigned long long)stat("large_staged"));
    mp_finish(&job);
    return 0;
}
