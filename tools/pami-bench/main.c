/*
 * pami-bench: point-to-point latency, message rate and bandwidth of pami,
 * and with --vs-ucx of the same patterns written directly on UCP in the
 * same job, so that every line carries the ratio pami / ucx.
 *
 *   pamirun -n 2 pami-bench [tests...] [--vs-ucx] [--json] [--iters N]
 *                           [--warmup N] [--reps R] [--window W]
 *                           [--min-bytes B] [--max-bytes B] [--min-cpu F]
 *
 * Task 0 drives and prints; task 1 serves. See docs/PERFORMANCE.md for
 * what each test measures.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* Bandwidth lines move at most this much per measurement (and per window),
 * so the large sizes stay short. */
#define BW_BUDGET (256ull << 20)

static const size_t am_lat_sizes[] = {8, 64, 512, 1024, 4096};

static int my_task = -1;

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pami-bench: task %d: ", my_task);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

void bench_check(pami_result_t rc, const char *what)
{
    if (rc != PAMI_SUCCESS)
        bench_die("%s: %s", what, pami_error_text(rc));
}

void stall_slow(stall_t *s)
{
    double t = bench_now();
    if (s->start == 0)
        s->start = t;
    else if (t - s->start > BENCH_STALL_S)
        bench_die("%s: waited more than %.0f s", s->what, BENCH_STALL_S);
}

/* ---- options ---- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: pamirun -n 2 pami-bench [tests...] [options]\n"
        "tests (all when none is named):\n"
        "  am_lat    half round trip of pami_send_immediate, 8 B .. 4 KiB\n"
        "  am_rate   8 B pami_send_immediate per second, acked per window\n"
        "  send_bw   pami_send bandwidth, 1 KiB .. 64 MiB (powers of 4)\n"
        "  put_lat   8 B pami_put until its remote completion (remote_fn,\n"
        "            or the call's completed = 1)\n"
        "  put_bw    pami_put windows closed by pami_fence_endpoint\n"
        "  get_bw    pami_get windows\n"
        "  rmw_lat   8 B fetch-add round trip\n"
        "  put_lat_shm  put_lat on a region pami_memregion_alloc made (on\n"
        "            one node: a store through pami's mapping); ucx: UCP on\n"
        "            memory ucp_mem_map allocated (UCP_MEM_MAP_ALLOCATE);\n"
        "            ucx_private_us: UCP on put_lat's private buffers, in\n"
        "            the same repetitions\n"
        "  rmw_lat_shm  rmw_lat the same way\n"
        "group tests (any number of tasks, named explicitly):\n"
        "  barrier     pami_barrier_wait with each algorithm\n"
        "  svd_update  pami_svd_update_wait to 1, 4, 7 users, 64 B .. 4 MiB\n"
        "  allreduce bcast allgather alltoall reduce_scatter reduce\n"
        "  auto_vs_best    (with --profile P) AUTO beside the best algorithm\n"
        "                  at every size of the profile, interleaved (its\n"
        "                  second pass, which it reports, runs 2 x --reps)\n"
        "  burst_oversub   every task sends --iters (100000) 8 B messages to\n"
        "                  the others, retrying EAGAIN with\n"
        "                  pami_context_advance, then with pami_context_wait\n"
        "  footprint       largest VmHWM among the tasks after --iters (20)\n"
        "                  alltoalls of 1 KiB per peer; with --vs-mpi\n"
        "                  (pami-bench-mpi) Open MPI alone, no pami\n"
        "              each registry algorithm that can run the call, and\n"
        "              AUTO, 8 B .. 4 MiB per rank (MPI_Allreduce, MPI_Bcast,\n"
        "              MPI_Allgather, MPI_Alltoall, MPI_Reduce_scatter_block)\n"
        "options:\n"
        "  --vs-ucx        run the same patterns on raw UCP, print ratios\n"
        "  --vs-mpi        group tests: the same loop on Open MPI too\n"
        "                  (pami-bench-mpi under mpirun only)\n"
        "  --json          one JSON object per line\n"
        "  --iters N       operations per measurement (default per test)\n"
        "  --warmup N      untimed operations first (default per test)\n"
        "  --reps R        measurements per line, 1..63 (default 7)\n"
        "  --window W      messages per window (default 128 rate, 32 bw)\n"
        "  --min-cpu F     measure a repetition again (at most reps times\n"
        "                  per line) when a task waited for a CPU during\n"
        "                  more than 1 - F of it (default 0.9; 0: never)\n"
        "  --min-bytes B   smallest size of the sweeps (K, M suffixes)\n"
        "  --any-range     collectives: run an algorithm at every size its\n"
        "                  check accepts, also outside its message range\n"
        "  --profile P     auto_vs_best: the profile (AUTO selects from it)\n"
        "  --aa            auto_vs_best: pass 2 also runs the best a second\n"
        "                  time, as its own candidate (the bench's A/A)\n"
        "  --coll-stats    collectives: each task prints on stderr how the\n"
        "                  collectives protocol's counters moved per line\n"
        "  --max-bytes B   largest size of the sweeps (default 64M)\n");
}

static int parse_size(const char *text, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text)
        return -1;
    unsigned shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10;
    else if (*end == 'm' || *end == 'M')
        shift = 20;
    else if (*end == 'g' || *end == 'G')
        shift = 30;
    if (shift != 0)
        end++;
    if (*end != '\0' || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

static int parse_opts(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){.iters = -1, .warmup = -1, .min_bytes = 0,
                  .max_bytes = 64u << 20, .reps = 7, .min_cpu = 0.9};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        size_t v;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--vs-ucx") == 0) {
            o->vs_ucx = true;
        } else if (strcmp(a, "--vs-mpi") == 0) {
            o->vs_mpi = true;
        } else if (strcmp(a, "--json") == 0) {
            o->json = true;
        } else if (strcmp(a, "--any-range") == 0) {
            o->any_range = true;
        } else if (strcmp(a, "--coll-stats") == 0) {
            o->coll_stats = true;
        } else if (strcmp(a, "--aa") == 0) {
            o->aa = true;
        } else if (strcmp(a, "--profile") == 0 && i + 1 < argc) {
            /* AUTO selects from it: the client reads it when created. */
            o->profile = argv[++i];
            setenv("PAMI_COLL_PROFILE", o->profile, 1);
        } else if (strcmp(a, "--min-cpu") == 0 && i + 1 < argc) {
            char *end;
            o->min_cpu = strtod(argv[++i], &end);
            if (*end != '\0' || o->min_cpu < 0 || o->min_cpu > 1) {
                fprintf(stderr, "pami-bench: --min-cpu takes 0 .. 1\n");
                return -1;
            }
        } else if (a[0] == '-' && a[1] == '-' && i + 1 < argc &&
                   (strcmp(a, "--iters") == 0 || strcmp(a, "--warmup") == 0 ||
                    strcmp(a, "--reps") == 0 || strcmp(a, "--window") == 0 ||
                    strcmp(a, "--min-bytes") == 0 ||
                    strcmp(a, "--max-bytes") == 0)) {
            if (parse_size(argv[++i], &v) != 0) {
                fprintf(stderr, "pami-bench: bad value '%s' for %s\n",
                        argv[i], a);
                return -1;
            }
            if (strcmp(a, "--iters") == 0)
                o->iters = v == 0 ? 1 : (long)v;
            else if (strcmp(a, "--warmup") == 0)
                o->warmup = (long)v;
            else if (strcmp(a, "--reps") == 0)
                o->reps = (unsigned)v;
            else if (strcmp(a, "--window") == 0)
                o->window = v;
            else if (strcmp(a, "--min-bytes") == 0)
                o->min_bytes = v;
            else
                o->max_bytes = v;
        } else {
            int t;
            for (t = 0; t < T_COUNT; t++)
                if (strcmp(a, test_name((test_id_t)t)) == 0)
                    break;
            if (t == T_COUNT) {
                fprintf(stderr, "pami-bench: unknown test or option '%s'\n",
                        a);
                usage(stderr);
                return -1;
            }
            o->tests |= 1u << t;
        }
    }
    if (o->tests == 0)
        o->tests = TESTS_P2P;
    if ((o->tests & TESTS_P2P) && (o->tests & TESTS_GROUP)) {
        fprintf(stderr, "pami-bench: run two-task tests and group tests "
                        "(barrier) in separate jobs\n");
        return -1;
    }
    if (o->reps < 1 || o->reps > 63 || o->max_bytes < 8 ||
        o->min_bytes > o->max_bytes) {
        fprintf(stderr, "pami-bench: --reps must be 1..63, --max-bytes at "
                        "least 8 and not below --min-bytes\n");
        return -1;
    }
    return 0;
}

/* ---- plans ---- */

static size_t round_up(size_t v, size_t m)
{
    return (v + m - 1) / m * m;
}

static size_t or_default(long v, size_t def)
{
    return v < 0 ? def : (size_t)v;
}

static plan_t make_plan(const opts_t *o, test_id_t t, size_t bytes)
{
    plan_t p = {.test = t, .bytes = bytes, .window = 1};
    switch (t) {
    case T_AM_LAT:
    case T_PUT_LAT:
    case T_RMW_LAT:
    case T_PUT_LAT_SHM:
    case T_RMW_LAT_SHM:
        p.ops      = or_default(o->iters, 10000);
        p.warm_ops = or_default(o->warmup, 1000);
        break;
    case T_AM_RATE:
        p.window   = o->window ? o->window : 128;
        p.ops      = round_up(or_default(o->iters, 200000), p.window);
        p.warm_ops = round_up(or_default(o->warmup, 10000), p.window);
        break;
    default: {
        size_t fit = BW_BUDGET / bytes ? BW_BUDGET / bytes : 1;
        p.window = o->window ? o->window : 32;
        if (p.window > fit)
            p.window = fit;
        size_t ops = or_default(o->iters, 20000);
        if (ops > fit)
            ops = fit;
        p.ops      = round_up(ops < p.window ? p.window : ops, p.window);
        p.warm_ops = or_default(o->warmup, 1) ? p.window : 0;
        break;
    }
    }
    return p;
}

/* The sizes of one test's lines; returns how many. */
static size_t sizes_of(const bench_t *b, test_id_t t, size_t *out, size_t max)
{
    const opts_t *o = &b->opt;
    size_t n = 0;
    switch (t) {
    case T_AM_LAT:
        for (size_t i = 0; i < sizeof(am_lat_sizes) / sizeof(am_lat_sizes[0]);
             i++) {
            size_t s = am_lat_sizes[i];
            if (s < o->min_bytes || s > o->max_bytes)
                continue;
            if (s > b->immediate_max) {
                fprintf(stderr, "pami-bench: am_lat %zu B skipped: above "
                                "immediate_max (%zu B; PAMI_IMMEDIATE_MAX "
                                "raises it up to 4096)\n", s,
                        b->immediate_max);
                continue;
            }
            if (n < max)
                out[n++] = s;
        }
        break;
    case T_SEND_BW:
    case T_PUT_BW:
    case T_GET_BW:
        for (size_t s = o->min_bytes ? o->min_bytes : 1024;
             s <= o->max_bytes && n < max; s *= 4)
            out[n++] = s;
        break;
    default:
        out[n++] = 8;
        break;
    }
    return n;
}

/* ---- task 0 ---- */

/* Where both tasks stood at the start of a repetition. */
typedef struct {
    double wall, me, peer;
} cpu_mark_t;

static cpu_mark_t cpu_mark(const bench_t *b)
{
    return (cpu_mark_t){.wall = bench_now(), .me = tool_cpu_waited(0),
                        .peer = b->peer_pid ? tool_cpu_waited(b->peer_pid)
                                            : -1};
}

/* The smaller share of the wall time since m during which a task was not
 * kept waiting for a CPU; 1 when it cannot be told. */
static double cpu_share(const bench_t *b, const cpu_mark_t *m)
{
    double wall   = bench_now() - m->wall;
    double waited = 0;
    double me     = tool_cpu_waited(0);
    if (wall <= 0)
        return 1.0;
    if (m->me >= 0 && me >= 0)
        waited = me - m->me;
    if (m->peer >= 0) {
        double peer = tool_cpu_waited(b->peer_pid);
        if (peer >= 0 && peer - m->peer > waited)
            waited = peer - m->peer;
    }
    return 1.0 - waited / wall;
}

/* The floor measured last (before the next latency line). */
static summary_t floor_last;

static bool is_lat(test_id_t t)
{
    return t == T_AM_LAT || t == T_PUT_LAT || t == T_RMW_LAT ||
           t == T_PUT_LAT_SHM || t == T_RMW_LAT_SHM;
}

/* Measures and prints the floor; false without one. */
static bool floor_line(bench_t *b)
{
    summary_t rate;
    if (!floor_measure(b, &floor_last, &rate))
        return false;
    report_floor(b, &floor_last, &rate);
    return true;
}

static void run_line(bench_t *b, test_id_t t, size_t bytes)
{
    plan_t    p    = make_plan(&b->opt, t, bytes);
    unsigned  reps = b->opt.reps;
    bool      vs   = b->opt.vs_ucx;
    bool      get  = vs && t == T_SEND_BW;
    bool      priv = vs && (t == T_PUT_LAT_SHM || t == T_RMW_LAT_SHM);
    double    ps[64], us[64], gs[64], vs_priv[64];
    quality_t q    = {.cpu_share = 1.0};
    /* The floor before and after each latency line, so that a change of
     * the machine's state during the line shows; the line after reuses
     * this line's after. */
    bool      fl   = is_lat(t) && b->floor != NULL;
    if (!is_lat(t))
        floor_last.valid = false; /* it was not measured next to this */
    summary_t before = floor_last;
    if (fl && !before.valid && floor_line(b))
        before = floor_last;

    for (unsigned r = 0; r < reps;) {
        cpu_mark_t m = cpu_mark(b);
        double     pv = -1, uv = -1, gv = -1, xv = -1;
        /* Alternate who goes first, so a drift of the machine does not
         * always favour the same side. */
        if (r % 2 == 0)
            pv = to_metric(&p, pami_side_run(b, &p));
        if (vs) {
            ucx_side_enter(b->ucx, b, &p);
            uv = to_metric(&p, ucx_side_run(b->ucx, b, &p, UCX_SAME));
            if (get)
                gv = to_metric(&p, ucx_side_run(b->ucx, b, &p,
                                                UCX_GET_FOR_SEND));
            if (priv)
                xv = to_metric(&p, ucx_side_run(b->ucx, b, &p, UCX_PRIVATE));
            ucx_side_leave(b->ucx, b);
        }
        if (r % 2 == 1)
            pv = to_metric(&p, pami_side_run(b, &p));
        /* Another program took a CPU from one of the tasks: both sides of
         * this repetition are suspect, measure it again. */
        double share = cpu_share(b, &m);
        if (share < b->opt.min_cpu && q.redone < reps) {
            q.redone++;
            continue;
        }
        if (share < q.cpu_share)
            q.cpu_share = share;
        ps[r] = pv;
        us[r] = uv;
        gs[r] = gv;
        vs_priv[r] = xv;
        r++;
    }
    summary_t sp = summarize(ps, reps);
    summary_t su = vs ? summarize(us, reps) : (summary_t){0};
    if (priv) {
        summary_t sx = summarize(vs_priv, reps);
        q.ucx_private = sx.valid ? sx.median : 0;
    }
    metric_t  m  = test_metric(t);
    if (fl && before.valid && floor_line(b) && t == T_AM_LAT && sp.valid)
        q.vs_floor = sp.median / ((before.median + floor_last.median) / 2);
    report_line(b, test_name(t), bytes, m, &sp, &su,
                ucx_side_op_name(t, UCX_SAME), &p, &q);
    if (get) {
        summary_t sg = summarize(gs, reps);
        report_line(b, "send_bw_get", bytes, m, &sp, &sg,
                    ucx_side_op_name(t, UCX_GET_FOR_SEND), &p, &q);
    }
}

static void drive(bench_t *b)
{
    report_header(b);
    bool warned = false;
    for (int t = 0; t < T_P2P_COUNT; t++) {
        if (!(b->opt.tests & (1u << t)))
            continue;
        bool rma = t == T_PUT_LAT || t == T_PUT_BW || t == T_GET_BW ||
                   t == T_RMW_LAT || t == T_PUT_LAT_SHM ||
                   t == T_RMW_LAT_SHM;
        if (rma && !b->have_rma && !warned) {
            fprintf(stderr, "pami-bench: pami memory regions are not "
                            "available here; RMA lines have no pami "
                            "value\n");
            warned = true;
        }
        size_t sizes[32];
        size_t n = sizes_of(b, (test_id_t)t, sizes, 32);
        for (size_t i = 0; i < n; i++)
            run_line(b, (test_id_t)t, sizes[i]);
    }
    pami_side_ctrl(b, CTRL_QUIT, NULL);
}

/* ---- task 1 ---- */

static void serve(bench_t *b)
{
    uint64_t n = 0;
    b->last_cmd = bench_now();
    while (b->mode != MODE_QUIT) {
        if (b->mode == MODE_UCX_ENTER) {
            ucx_side_serve(b->ucx, b);
            continue;
        }
        if (b->mode == MODE_FLOOR) {
            floor_serve(b);
            continue;
        }
        pami_context_advance(b->ctx, 1);
        if ((++n & 0xffff) == 0 &&
            bench_now() - b->last_cmd > 2 * BENCH_STALL_S)
            bench_die("heard nothing from task 0 for %.0f s",
                      2 * BENCH_STALL_S);
    }
}

/* ---- setup ---- */

/* What both tasks tell each other before any measurement. */
typedef struct {
    uint32_t         have_mr;
    uint32_t         vs_ucx;
    uint64_t         buf_bytes;
    uint64_t         pid;
    uint32_t         have_shm;
    uint32_t         reserved;
    pami_memregion_t mr;
    pami_memregion_t shm_mr;
} card_t;

/* The *_shm tests' target: one page is plenty for 8 B at offset 0. */
#define SHM_BYTES 4096

static void *alloc_buffer(size_t bytes)
{
    void *p = aligned_alloc(4096, round_up(bytes, 4096));
    if (p == NULL)
        bench_die("cannot allocate %zu bytes", bytes);
    memset(p, 0xa5, bytes); /* touch every page before timing */
    return p;
}

static void setup(bench_t *b)
{
    pami_client_attr_t a = {
        .field_mask = PAMI_CLIENT_ATTR_TASK | PAMI_CLIENT_ATTR_SIZE |
                      PAMI_CLIENT_ATTR_IMMEDIATE_MAX |
                      PAMI_CLIENT_ATTR_RNDV_THRESHOLD |
                      PAMI_CLIENT_ATTR_LOCAL_TASKS |
                      PAMI_CLIENT_ATTR_TRANSPORT};
    bench_check(pami_client_create("pami-bench", NULL, &b->client),
                "pami_client_create");
    bench_check(pami_client_query(b->client, &a), "pami_client_query");
    b->me = a.task;
    my_task = (int)a.task;
    if (a.size != 2)
        bench_die("run it as 2 tasks (pamirun -n 2 pami-bench), not %zu",
                  a.size);
    b->immediate_max  = a.immediate_max;
    b->rndv_threshold = a.rndv_threshold;
    b->ucx_version    = a.ucx_version;
    b->transports     = a.transports;

    bench_check(pami_context_createv(b->client, NULL, 1, &b->ctx),
                "pami_context_createv");
    bench_check(pami_endpoint_create(b->client, 1 - b->me, 0, &b->peer),
                "pami_endpoint_create");
    b->buf_bytes = b->opt.max_bytes < 4096 ? 4096 : b->opt.max_bytes;
    b->sbuf = alloc_buffer(b->buf_bytes);
    b->rbuf = alloc_buffer(b->buf_bytes);
    pami_side_register(b);
    bench_check(pami_dispatch_fence(b->client), "pami_dispatch_fence");

    card_t mine = {.vs_ucx = b->opt.vs_ucx, .buf_bytes = b->buf_bytes,
                   .pid = (uint64_t)getpid()};
    pami_result_t rc = pami_memregion_create(b->ctx, b->rbuf, b->buf_bytes,
                                             &b->mr);
    b->own_mr    = rc == PAMI_SUCCESS;
    mine.have_mr = b->own_mr;
    if (b->own_mr)
        mine.mr = b->mr;
    else if (b->me == 0)
        fprintf(stderr, "pami-bench: pami_memregion_create: %s\n",
                pami_error_text(rc));
    rc = pami_memregion_alloc(b->ctx, SHM_BYTES, &b->shm, &b->shm_mr);
    mine.have_shm = rc == PAMI_SUCCESS;
    if (mine.have_shm)
        mine.shm_mr = b->shm_mr;
    else
        fprintf(stderr, "pami-bench: task %u: pami_memregion_alloc: %s\n",
                b->me, pami_error_text(rc));
    size_t len;
    card_t *theirs = pami_side_exchange(b, &mine, sizeof(mine), &len, NULL,
                                        NULL);
    if (len != sizeof(*theirs))
        bench_die("malformed setup card from the peer");
    if (theirs->vs_ucx != mine.vs_ucx || theirs->buf_bytes != mine.buf_bytes)
        bench_die("the two tasks were started with different options");
    b->have_rma = mine.have_mr && theirs->have_mr;
    /* The peer's scheduling can be read only when it runs on this node. */
    for (size_t i = 0; i < a.num_local_tasks; i++)
        if (a.local_tasks[i] == 1 - b->me)
            b->peer_pid = (long)theirs->pid;
    b->peer_mr  = theirs->mr;
    b->have_shm = mine.have_shm && theirs->have_shm;
    b->peer_shm_mr = theirs->shm_mr;
    free(theirs);

    if (b->opt.vs_ucx) {
        b->ucx = ucx_side_create(b);
        ucx_side_connect(b->ucx, b);
    }
    floor_setup(b);
}

static void teardown(bench_t *b)
{
    floor_teardown(b);
    if (b->ucx != NULL)
        ucx_side_destroy(b->ucx, b);
    /* Neither task may drop its region while the other could still use
     * it: meet first. */
    bench_check(pami_dispatch_fence(b->client), "pami_dispatch_fence");
    if (b->own_mr)
        bench_check(pami_memregion_destroy(b->ctx, &b->mr),
                    "pami_memregion_destroy");
    if (b->shm != NULL)
        bench_check(pami_memregion_destroy(b->ctx, &b->shm_mr),
                    "pami_memregion_destroy of the shared region");
    bench_check(pami_client_destroy(&b->client), "pami_client_destroy");
    free(b->sbuf);
    free(b->rbuf);
}

int main(int argc, char **argv)
{
    static bench_t b;
    if (parse_opts(argc, argv, &b.opt) != 0)
        return 2;
    if (b.opt.tests & TESTS_GROUP)
        return group_main(&b.opt, &argc, &argv);
    setup(&b);
    if (b.me == 0)
        drive(&b);
    else
        serve(&b);
    teardown(&b);
    return 0;
}
