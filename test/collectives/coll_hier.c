/*
 * allreduce_hier on fake nodes (run under shmb_nodes.sh, which gives each
 * group of ranks its own host name): on the world, the reversed task list
 * and an interleaved one (geometry rank i on node i % nodes, so a node's
 * ranks are not a run), with several types, ops, both user ops, sizes
 * from 0 to 1 MiB, in place and not; each element checked against the
 * serial fold in rank order. Then 64 calls in flight on the world and on
 * the interleaved geometry at once.
 *
 *   coll_hier NODES   NODES: how many nodes the job must span
 */
#include "coll_util.h"

static mp_job_t         job;
static pami_algorithm_t hier;
static size_t           runs;

static const red_t hier_reds[] = {
    {PAMI_TYPE_DOUBLE, PAMI_OP_SUM, 0},  {PAMI_TYPE_DOUBLE, PAMI_OP_MAX, 0},
    {PAMI_TYPE_DOUBLE, PAMI_OP_PROD, 0}, {PAMI_TYPE_INT32, PAMI_OP_SUM, 0},
    {PAMI_TYPE_INT32, PAMI_OP_MAX, 0},   {PAMI_TYPE_INT32, PAMI_OP_PROD, 0},
    {PAMI_TYPE_INT32, PAMI_OP_BXOR, 0},  {PAMI_TYPE_INT64, PAMI_OP_SUM, 0},
    {PAMI_TYPE_INT64, PAMI_OP_MAX, 0},   {PAMI_TYPE_INT64, PAMI_OP_PROD, 0},
    {PAMI_TYPE_INT64, PAMI_OP_BXOR, 0},
    {PAMI_TYPE_INT32, PAMI_OP_USER, CT_USER_COMM},
    {PAMI_TYPE_UINT32, PAMI_OP_USER, CT_USER_MATRIX},
};

static const size_t sizes[] = {0, 8, 1024, 64 * 1024, 1024 * 1024};

static pami_xfer_t call_of(const ct_geom_t *cg, const red_t *rd,
                           const void *sbuf, void *rbuf, size_t count)
{
    return (pami_xfer_t){
        .field_mask = PAMI_XFER_FIELD_ALGORITHM | PAMI_XFER_FIELD_USER_OP,
        .kind = PAMI_XFER_ALLREDUCE, .geometry = cg->g, .algorithm = hier,
        .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = rd->t,
        .op = rd->op,
        .user_fn = rd->user == CT_USER_MATRIX ? ct_user_matrix : ct_user_sum,
        .user_commutative = rd->user != CT_USER_MATRIX};
}

/* The check function of allreduce_hier, from the geometry's list of
 * algorithms that must be checked (it is never in the other list). */
static pami_result_t (*hier_check(const ct_geom_t *cg))(const pami_xfer_t *)
{
    size_t na, nc;
    MP_CHECK(pami_geometry_algorithms_num(cg->g, PAMI_XFER_ALLREDUCE, &na,
                                          &nc));
    pami_algorithm_t ids[64];
    pami_algorithm_metadata_t md[64];
    MP_EXPECT(na + nc <= 64, "%zu algorithms", na + nc);
    MP_CHECK(pami_geometry_algorithms_query(cg->g, PAMI_XFER_ALLREDUCE, ids,
                                            md, na, ids + na, md + na, nc));
    for (size_t a = 0; a < na + nc; a++)
        if (ids[a] == hier) {
            MP_EXPECT(a >= na && md[a].check != NULL &&
                          strcmp(md[a].name, "allreduce_hier") == 0,
                      "%s: allreduce_hier listed without its check",
                      cg->name);
            return md[a].check;
        }
    mp_fail("%s: allreduce_hier not listed", cg->name);
}

static bool accepts(const ct_geom_t *cg, const red_t *rd)
{
    pami_xfer_t probe = call_of(cg, rd, NULL, NULL, 1);
    return hier_check(cg)(&probe) == PAMI_SUCCESS;
}

static void run_case(const ct_geom_t *cg, const red_t *rd, size_t bytes,
                     bool in_place)
{
    size_t es = pami_type_size(rd->t), count = bytes / es, n = cg->n;
    unsigned char *sbuf = malloc(bytes + 1), *rbuf = malloc(bytes + 1);
    if (sbuf == NULL || rbuf == NULL)
        mp_fail("out of memory");
    memset(rbuf, 0xEE, bytes);
    unsigned char *in = in_place ? rbuf : sbuf;
    for (size_t i = 0; i < count; i++)
        ct_put(rd->t, rd->user, in + i * es, cg->rank, i);
    pami_xfer_t x = call_of(cg, rd, in_place ? PAMI_IN_PLACE : sbuf, rbuf,
                            count);
    pami_result_t rc = pami_collective_wait(job.ctx[0], &x);
    if (rc != PAMI_SUCCESS)
        mp_fail("%s: type %d op %d user %d, %zu bytes%s: %s", cg->name,
                (int)rd->t, (int)rd->op, rd->user, bytes,
                in_place ? " in place" : "", pami_error_text(rc));
    unsigned char want[32];
    for (size_t i = 0; i < count; i++) {
        long double mag;
        ct_fold(rd->t, rd->op, rd->user, 0, n - 1, i, want, &mag);
        if (!ct_same(rd->t, rbuf + i * es, want, mag, n))
            mp_fail("%s: type %d op %d user %d, %zu bytes%s: element %zu "
                    "is wrong", cg->name, (int)rd->t, (int)rd->op, rd->user,
                    bytes, in_place ? " in place" : "", i);
    }
    free(sbuf);
    free(rbuf);
    runs++;
}

/* Every reduction x size on cg, in place on alternate cases (both ways
 * for 0 bytes); contiguous: each node's ranks are a run. */
static void sweep(const ct_geom_t *cg, bool contiguous)
{
    for (size_t k = 0; k < sizeof(hier_reds) / sizeof(hier_reds[0]); k++) {
        const red_t *rd = &hier_reds[k];
        bool ok = accepts(cg, rd);
        /* Rank order survives only when nodes are runs of ranks. */
        bool want = rd->user != CT_USER_MATRIX || contiguous;
        MP_EXPECT(ok == want, "%s: check says %d for type %d op %d user %d",
                  cg->name, ok, (int)rd->t, (int)rd->op, rd->user);
        if (!ok) {
            /* Asked by name anyway: refused on every member, no hang. */
            unsigned v = 7;
            pami_xfer_t x = call_of(cg, rd, &v, &v, 1);
            MP_CHECK_RC(pami_collective_wait(job.ctx[0], &x), PAMI_INVAL);
            continue;
        }
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            if (s == 0 || (k + s) % 2 == 0)
                run_case(cg, rd, sizes[s], false);
            if (s == 0 || (k + s) % 2 == 1)
                run_case(cg, rd, sizes[s], true);
        }
    }
}

/* The same call (buffers, count) on each geometry in turn, twice: a
 * task with the same rank in two of them must not get the schedule of
 * the other's node layout. */
static void same_call(const ct_geom_t *const *gs, size_t ngs)
{
    static int64_t in[16], out[16];
    static const red_t sum = {PAMI_TYPE_INT64, PAMI_OP_SUM, 0};
    for (size_t round = 0; round < 2 * ngs; round++) {
        const ct_geom_t *cg = gs[round % ngs];
        for (size_t i = 0; i < 16; i++)
            in[i] = (int64_t)((cg->rank + 1) << i);
        pami_xfer_t x = call_of(cg, &sum, in, out, 16);
        MP_CHECK(pami_collective_wait(job.ctx[0], &x));
        for (size_t i = 0; i < 16; i++)
            MP_EXPECT(out[i] == (int64_t)((cg->n * (cg->n + 1) / 2) << i),
                      "%s: same call, round %zu: element %zu is %lld",
                      cg->name, round, i, (long long)out[i]);
        runs++;
    }
}

/* ---- many in flight ---- */

#define WINDOW 64
#define FLIGHT_COUNT 300 /* int64 elements: 2400 bytes */

typedef struct {
    int64_t in[FLIGHT_COUNT], out[FLIGHT_COUNT];
    bool    done;
} slot_t;

static void on_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    if (rc != PAMI_SUCCESS)
        mp_fail("in-flight allreduce: %s", pami_error_text(rc));
    ((slot_t *)cookie)->done = true;
}

static int64_t flight_val(size_t call, size_t rank, size_t i)
{
    return (int64_t)(call * 1000003u + rank * 7919u + i * 31u) % 100000;
}

static void start(const ct_geom_t *cg, slot_t *s, size_t call)
{
    static const red_t sum = {PAMI_TYPE_INT64, PAMI_OP_SUM, 0};
    s->done = false;
    for (size_t i = 0; i < FLIGHT_COUNT; i++)
        s->in[i] = flight_val(call, cg->rank, i);
    pami_xfer_t x = call_of(cg, &sum, s->in, s->out, FLIGHT_COUNT);
    x.done_fn = on_done;
    x.cookie  = s;
    MP_CHECK(pami_collective(job.ctx[0], &x));
}

static void check(const ct_geom_t *cg, const slot_t *s, size_t call)
{
    for (size_t i = 0; i < FLIGHT_COUNT; i++) {
        int64_t want = 0;
        for (size_t q = 0; q < cg->n; q++)
            want += flight_val(call, q, i);
        if (s->out[i] != want)
            mp_fail("%s: in-flight allreduce %zu element %zu is %lld, "
                    "expected %lld", cg->name, call, i,
                    (long long)s->out[i], (long long)want);
    }
}

static void in_flight(const ct_geom_t *a, const ct_geom_t *b)
{
    static slot_t sa[WINDOW], sb[WINDOW];
    for (size_t i = 0; i < WINDOW; i++) {
        start(a, &sa[i], i);
        start(b, &sb[i], i + WINDOW);
    }
    for (size_t i = 0; i < WINDOW; i++) {
        MP_WAIT(&job, job.ctx[0], sa[i].done && sb[i].done, MP_WAIT_S,
                "in-flight allreduce %zu", i);
        check(a, &sa[i], i);
        check(b, &sb[i], i + WINDOW);
    }
}

int main(int argc, char **argv)
{
    mp_init(&job, "coll_hier", &argc, argv, NULL, 1, true);
    MP_EXPECT(argc > 1, "usage: coll_hier NODES");
    size_t want_nodes = strtoul(argv[1], NULL, 10), n = job.size;
    double t0 = mp_now();
    pami_client_attr_t ca = {.field_mask = PAMI_CLIENT_ATTR_NODES};
    MP_CHECK(pami_client_query(job.client, &ca));
    MP_EXPECT(ca.num_nodes == want_nodes, "%zu nodes, expected %zu (run "
              "under shmb_nodes.sh)", ca.num_nodes, want_nodes);
    MP_CHECK(pami_algorithm_by_name("allreduce_hier", &hier));

    ct_geom_t world = {.name = "world"};
    ct_world(&job, &world);
    sweep(&world, true);

    pami_task_t *list = malloc(n * sizeof(*list));
    MP_EXPECT(list != NULL, "out of memory");
    for (size_t i = 0; i < n; i++)
        list[i] = (pami_task_t)(n - 1 - i);
    ct_geom_t rev;
    MP_EXPECT(ct_create(&job, &rev, "reversed", 1, list, n, NULL), "member");
    sweep(&rev, true);

    /* Round robin over the nodes: the k-th task of each node in turn. */
    size_t k = 0;
    for (size_t pos = 0; k < n; pos++)
        for (uint32_t nd = 0; nd < ca.num_nodes; nd++) {
            size_t seen = 0;
            for (size_t t = 0; t < n; t++)
                if (ca.task_node[t] == nd && seen++ == pos)
                    list[k++] = (pami_task_t)t;
        }
    ct_geom_t il;
    MP_EXPECT(ct_create(&job, &il, "interleaved", 2, list, n, NULL),
              "member");
    bool runs_of_nodes = true;
    for (size_t i = 1; i < n; i++)
        if (ca.task_node[il.tasks[i]] != ca.task_node[il.tasks[i - 1]] &&
            ca.task_node[il.tasks[i]] < ca.task_node[il.tasks[i - 1]])
            runs_of_nodes = false;
    MP_EXPECT(!runs_of_nodes, "the interleaved list keeps nodes together");
    sweep(&il, false);

    const ct_geom_t *all[] = {&world, &rev, &il};
    same_call(all, 3);
    in_flight(&world, &il);

    /* Where it saves nothing the check refuses: the tasks of one node,
     * and one task of each node. */
    static const red_t sum = {PAMI_TYPE_INT64, PAMI_OP_SUM, 0};
    k = 0;
    for (size_t t = 0; t < n; t++)
        if (ca.task_node[t] == ca.task_node[job.me])
            list[k++] = (pami_task_t)t;
    ct_geom_t node;
    MP_EXPECT(ct_create(&job, &node, "node", 100 + ca.task_node[job.me],
                        list, k, NULL), "member");
    MP_EXPECT(!accepts(&node, &sum), "accepted on one node");
    k = 0;
    for (size_t t = 0; t < n; t++)
        if (t == 0 || ca.task_node[t] != ca.task_node[t - 1])
            list[k++] = (pami_task_t)t;
    ct_geom_t leaders;
    if (ct_create(&job, &leaders, "leaders", 200, list, k, NULL)) {
        MP_EXPECT(!accepts(&leaders, &sum), "accepted with one task a node");
        MP_CHECK(pami_geometry_destroy(&leaders.g));
    }
    MP_CHECK(pami_geometry_destroy(&node.g));
    MP_CHECK(pami_geometry_destroy(&il.g));
    MP_CHECK(pami_geometry_destroy(&rev.g));
    free(list);

    pami_protocol_stat_t st[32];
    size_t ns;
    MP_CHECK(pami_protocol_stats(job.ctx[0], "collectives", st, 32, &ns));
    for (size_t i = 0; i < ns && i < 32; i++)
        /* Not late_dropped: each member tells the others of a call it
         * refused, and they refused it too. */
        if ((strcmp(st[i].name, "malformed_dropped") == 0 ||
             strcmp(st[i].name, "connid_in_use") == 0) && st[i].value != 0)
            mp_fail("stat %s is %llu", st[i].name,
                    (unsigned long long)st[i].value);
    mp_sync(&job);
    if (job.me == 0)
        printf("coll_hier: %zu tasks on %zu nodes, %zu allreduce_hier "
               "checked (task 0) and %d in flight, in %.1f s\n", n,
               ca.num_nodes, runs, 2 * WINDOW, mp_now() - t0);
    mp_finish(&job);
    return 0;
}
