/*
 * AUTO's fast ways in counted as what they run (coll_select's counters):
 * small AUTO broadcasts on the eager ring (kept in the ring's memo),
 * AUTO allreduces (the geometry's memo per collective, with barriers and
 * broadcasts between), and blocking barriers on the register in every
 * form: pami_geometry_barrier, pami_collective_wait AUTO and named
 * barrier_shm, each with its done_fn run once before the return. Every
 * result is checked; every algorithm's counter must grow by exactly the
 * calls that AUTO's query (pami_geometry_algorithm_selected) or the name
 * says, and selected_named / selected_builtin (+ _forced) by the named
 * and AUTO calls. With PAMI_COLL_BROADCAST_ALGORITHM=broadcast_shm the
 * AUTO broadcasts run the ring as broadcast_shm, and are counted so.
 *
 *   coll_auto_counts [ITERATIONS]     (all tasks on one node, no profile)
 */
#include "coll_util.h"

static mp_job_t  job;
static ct_geom_t world;

static uint64_t stat_of(const char *name)
{
    pami_protocol_stat_t st[128];
    size_t ns;
    MP_CHECK(pami_protocol_stats(job.ctx[0], "coll_select", st, 128, &ns));
    for (size_t i = 0; i < ns && i < 128; i++)
        if (strcmp(st[i].name, name) == 0)
            return st[i].value;
    mp_fail("no counter %s of coll_select", name);
}

typedef struct {
    unsigned calls;
    void    *last;
} done_t;

static void on_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    MP_EXPECT(rc == PAMI_SUCCESS, "barrier done_fn: %s", pami_error_text(rc));
    done_t *d = cookie;
    d->calls++;
    d->last = cookie;
}

/* What AUTO runs for x, by the query. */
static const char *auto_pick(const pami_xfer_t *x)
{
    pami_algorithm_selection_t sel;
    MP_CHECK(pami_geometry_algorithm_selected(x, &sel));
    MP_EXPECT(sel.name != NULL && (sel.reason == PAMI_SELECTED_BUILTIN ||
                                   sel.reason == PAMI_SELECTED_FORCED),
              "AUTO without a profile: no built-in or forced pick");
    return sel.name;
}

#define NAMES 6

int main(int argc, char **argv)
{
    mp_init(&job, "coll_auto_counts", &argc, argv, NULL, 1, true);
    size_t iters = argc > 1 ? strtoull(argv[1], NULL, 10) : 300;
    ct_world(&job, &world);
    size_t n = world.n, me = world.rank;
    MP_EXPECT(n >= 2 && job.attr.num_local_tasks == job.size,
              "needs 2 or more tasks, all on this node");
    pami_context_t ctx = job.ctx[0];
    uint8_t b64[64];
    double ar[1], ar_out[1];
    pami_xfer_t bc = ct_xfer(world.g, PAMI_XFER_BROADCAST, NULL, NULL, b64,
                             sizeof(b64), PAMI_TYPE_BYTE, 0);
    pami_xfer_t be = ct_xfer(world.g, PAMI_XFER_BROADCAST,
                             "broadcast_shm_eager", NULL, b64, 8,
                             PAMI_TYPE_BYTE, 0);
    pami_xfer_t al = ct_xfer(world.g, PAMI_XFER_ALLREDUCE, NULL, ar, ar_out,
                             1, PAMI_TYPE_DOUBLE, 0);
    pami_xfer_t ba = ct_xfer(world.g, PAMI_XFER_BARRIER, NULL, NULL, NULL,
                             0, PAMI_TYPE_BYTE, 0);
    pami_xfer_t bn = ct_xfer(world.g, PAMI_XFER_BARRIER, "barrier_shm", NULL,
                             NULL, 0, PAMI_TYPE_BYTE, 0);
    done_t dn = {0};
    ba.done_fn = bn.done_fn = on_done;
    ba.cookie = bn.cookie = &dn;

    /* The algorithms the calls run, and what each counter must gain. */
    const char *names[NAMES] = {auto_pick(&bc), "broadcast_shm_eager",
                                auto_pick(&al), auto_pick(&ba),
                                "barrier_shm", NULL};
    uint64_t want[NAMES] = {0}, before[NAMES];
    for (size_t k = 0; k < NAMES && names[k] != NULL; k++)
        before[k] = stat_of(names[k]);
    uint64_t named0 = stat_of("selected_named");
    uint64_t builtin0 = stat_of("selected_builtin") +
                        stat_of("selected_forced");
    uint64_t named = 0, autos = 0;
    mp_sync(&job);

    for (size_t i = 0; i < iters; i++) {
        /* Three equal calls in a row: the second and third take the
         * ring's memo of AUTO's pick. */
        for (size_t rep = 0; rep < 3; rep++) {
            size_t root = i % n;
            for (size_t k = 0; k < sizeof(b64); k++)
                b64[k] = me == root ? ct_pat(i + rep, k) : 0;
            bc.root = root;
            MP_CHECK(pami_collective_wait(ctx, &bc));
            for (size_t k = 0; k < sizeof(b64); k++)
                MP_EXPECT(b64[k] == ct_pat(i + rep, k),
                          "AUTO broadcast %zu.%zu byte %zu", i, rep, k);
            want[0]++, autos++;
        }

        for (size_t k = 0; k < 8; k++)
            b64[k] = me == 0 ? ct_pat(i + 1, k) : 0;
        MP_CHECK(pami_collective_wait(ctx, &be));
        for (size_t k = 0; k < 8; k++)
            MP_EXPECT(b64[k] == ct_pat(i + 1, k), "named ring %zu byte %zu",
                      i, k);
        want[1]++, named++;

        ar[0] = (double)(me + i);
        MP_CHECK(pami_collective_wait(ctx, &al));
        MP_EXPECT(ar_out[0] == (double)(n * i + n * (n - 1) / 2),
                  "AUTO allreduce %zu: %g", i, ar_out[0]);
        want[2]++, autos++;

        /* The members mix the barrier's forms. */
        unsigned d0 = dn.calls;
        switch ((i + me) % 3) {
        case 0:
            MP_CHECK(pami_geometry_barrier(ctx, world.g));
            want[3]++, autos++;
            break;
        case 1:
            MP_CHECK(pami_collective_wait(ctx, &ba));
            MP_EXPECT(dn.calls == d0 + 1 && dn.last == &dn,
                      "AUTO barrier %zu: done_fn ran %u times", i,
                      dn.calls - d0);
            want[3]++, autos++;
            break;
        default:
            MP_CHECK(pami_collective_wait(ctx, &bn));
            MP_EXPECT(dn.calls == d0 + 1 && dn.last == &dn,
                      "named barrier %zu: done_fn ran %u times", i,
                      dn.calls - d0);
            want[4]++, named++;
        }
    }

    /* Counters: the same name may stand for several rows. */
    for (size_t k = 0; k < NAMES && names[k] != NULL; k++) {
        uint64_t sum = 0;
        for (size_t j = 0; j < NAMES && names[j] != NULL; j++)
            if (strcmp(names[j], names[k]) == 0)
                sum += want[j];
        uint64_t got = stat_of(names[k]) - before[k];
        MP_EXPECT(got == sum, "%s: %llu calls counted, %llu made", names[k],
                  (unsigned long long)got, (unsigned long long)sum);
    }
    uint64_t gn = stat_of("selected_named") - named0;
    uint64_t ga = stat_of("selected_builtin") + stat_of("selected_forced") -
                  builtin0;
    MP_EXPECT(gn == named && ga == autos,
              "selected_named %llu (made %llu), selected_builtin and "
              "_forced %llu (made %llu)", (unsigned long long)gn,
              (unsigned long long)named, (unsigned long long)ga,
              (unsigned long long)autos);
    mp_sync(&job);
    if (me == 0)
        printf("coll_auto_counts: %zu tasks, %zu iterations; AUTO runs %s, "
               "%s, %s\n", n, iters, names[0], names[2], names[3]);
    mp_finish(&job);
    return 0;
}
