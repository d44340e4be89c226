/*
 * The sweep: for every shape (world and sub-geometries), collective,
 * data type, algorithm the registry lists for the geometry (those that
 * always work and those whose check accepts the call) and size: each
 * algorithm's warm-up, then rounds of one repetition of every algorithm
 * in a shuffled order, each timed as the slowest member's time (one
 * allreduce of the times per point). Every member takes the same
 * decisions from agreed values (allreduce MAX of the warm-up time and
 * the failure and stop flags), so all run the same calls.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schedstat.h"
#include "tune.h"

#include <pami_protocol.h>

#define TUNE_GEOM_ID 4100 /* first sub-geometry id; one per shape */
#define MAX_ALGOS 64
#define SAVE_EVERY_S 5.0
/* A repetition is a batch of back-to-back calls that lasts about
 * --batch-us (at most TUNE_BATCH_MAX calls), as programs and
 * pami-bench call collectives: a single call after a barrier hides what
 * an algorithm leaves for the next call (alltoall_linear's sends all at
 * once measured 10 % ahead alone and 20-30 % behind in a loop). Calls
 * shorter than TUNE_CAL_US are sized by CAL_CALLS more calls. */
#define TUNE_CAL_US 500.0
/* As auto_vs_best's MAX_OPS: at most 4096 calls cut the batches of the
 * 2-task profile's calls under 1.2 us (280 of its 784 entries) to
 * 0.4-5 ms, where the bench's windows last 5 ms or more. */
#define TUNE_BATCH_MAX 100000
#define TUNE_GROW_STEPS 3
#define CAL_CALLS 16
/* Candidates whose first look's median is within this of the fastest
 * get a second look (measure_point). */
#define TUNE_TIE 0.05
/* So do those faster than the fastest in at least this share of the
 * rounds both ran: where one repetition's noise is larger than their
 * difference, the medians' order is the look's luck (measure_point). */
#define TUNE_WINS 0.25

volatile sig_atomic_t tune_stop_signal;

typedef struct {
    pami_geometry_t g;
    coll_shape_t    key;
    const char     *name;
    uint64_t        list; /* hash of the task list: each list once */
} shape_t;

typedef struct {
    pami_client_t      client;
    pami_context_t     ctx;
    pami_task_t        me;
    size_t             ntasks;
    const uint32_t    *task_node;
    size_t             num_nodes;
    const tune_opts_t *o;
    coll_profile_t    *prof;   /* results (task 0 keeps them) */
    coll_profile_t     old;    /* --resume: points already measured */
    double             t0, last_save;
    size_t             total, ndone;
    double             point_s; /* budget per point */
    bool               stop;
    unsigned char     *sbuf, *rbuf;
    size_t            *vc, *vd; /* v collectives: counts, displacements */
    double            *times;
    size_t             cap_times;
    uint8_t            round;   /* the round being measured */
} run_t;

static void user_sum(void *inout, const void *in, size_t count, void *cookie)
{
    (void)cookie;
    double *o = inout;
    const double *i = in;
    for (size_t k = 0; k < count; k++)
        o[k] += i[k];
}

static coll_shape_t shape_key(const run_t *r, const pami_task_t *t, size_t n)
{
    coll_shape_t s = {.size = (uint32_t)n, .nodes = 1, .ppn = (uint32_t)n};
    for (size_t i = 1; i < n; i++)
        if (t[i] != t[0] + i)
            s.layout = COLL_LAYOUT_STRIDED;
    if (r->task_node == NULL)
        return s;
    uint32_t *cnt = calloc(r->num_nodes, sizeof(*cnt));
    if (cnt == NULL)
        return s;
    s.nodes = s.ppn = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t nd = r->task_node[t[i]];
        if (cnt[nd]++ == 0)
            s.nodes++;
        if (cnt[nd] > s.ppn)
            s.ppn = cnt[nd];
    }
    free(cnt);
    return s;
}

static pami_result_t wait_geometry(pami_context_t ctx, pami_geometry_t g)
{
    return pami_geometry_wait_ready(ctx, g);
}

/* Shapes asked for that this job has, each once; members get their
 * geometry, others NULL. */
static size_t make_shapes(run_t *r, shape_t *out)
{
    size_t n = r->ntasks, ns = 0;
    pami_task_t *t = malloc(n * sizeof(*t));
    if (t == NULL)
        return 0;
    pami_geometry_t world;
    pami_geometry_world(r->ctx, &world);
    for (unsigned bit = 0; bit < 5; bit++) {
        if (!(r->o->shapes & (1u << bit)))
            continue;
        size_t k = 0;
        const char *name = NULL;
        switch (1u << bit) {
        case TUNE_SHAPE_WORLD:
            for (size_t i = 0; i < n; i++)
                t[k++] = (pami_task_t)i;
            name = "world";
            break;
        case TUNE_SHAPE_HALF:
            for (size_t i = 0; n >= 4 && i < (n + 1) / 2; i++)
                t[k++] = (pami_task_t)i;
            name = "half";
            break;
        case TUNE_SHAPE_STRIDED:
            for (size_t i = 0; n >= 4 && i < n; i += 2)
                t[k++] = (pami_task_t)i;
            name = "strided";
            break;
        case TUNE_SHAPE_SPREAD:
            for (size_t i = 0; r->task_node && r->num_nodes > 1 && i < n;
                 i++) {
                bool first = true;
                for (size_t j = 0; j < i && first; j++)
                    first = r->task_node[j] != r->task_node[i];
                if (first)
                    t[k++] = (pami_task_t)i;
            }
            name = "spread";
            break;
        case TUNE_SHAPE_PACKED:
            for (size_t i = 0; r->task_node && r->num_nodes > 1 && i < n; i++)
                if (r->task_node[i] == r->task_node[0])
                    t[k++] = (pami_task_t)i;
            name = "packed";
            break;
        }
        if (k < 2 && !(k == 1 && n == 1))
            continue;
        coll_shape_t key = shape_key(r, t, k);
        /* As a geometry hashes its task list. */
        uint64_t list = pami_protocol_hash(PAMI_PROTOCOL_HASH_INIT ^ k, t,
                                           k * sizeof(*t));
        bool dup = false;
        for (size_t i = 0; i < ns; i++)
            dup |= out[i].list == list;
        if (dup)
            continue;
        out[ns] = (shape_t){.key = key, .name = name, .list = list};
        if (k == n) {
            out[ns].g = world;
        } else {
            pami_result_t rc = pami_geometry_create_tasklist(
                r->ctx, world, TUNE_GEOM_ID + (uint32_t)ns, t, k, NULL,
                &out[ns].g, NULL, NULL);
            if (rc == PAMI_SUCCESS && out[ns].g != NULL)
                rc = wait_geometry(r->ctx, out[ns].g);
            if (rc != PAMI_SUCCESS) {
                fprintf(stderr, "pami-tune: shape %s: %s\n", name,
                        pami_error_text(rc));
                out[ns].g = NULL;
            }
        }
        ns++;
    }
    free(t);
    return ns;
}

static const pami_type_t red_types[] = {PAMI_TYPE_INT32, PAMI_TYPE_INT64,
                                        PAMI_TYPE_FLOAT, PAMI_TYPE_DOUBLE,
                                        PAMI_TYPE_DOUBLE};

/* The (type, op) pairs of kind: bytes for moves; for reductions sum on
 * int32 .. double and a user op (sum on doubles), or int32 and double. */
static size_t types_of(const run_t *r, unsigned kind, pami_type_t *t,
                       unsigned *op)
{
    if (!coll_kind_reduces(kind)) {
        t[0]  = PAMI_TYPE_BYTE;
        op[0] = COLL_PROFILE_OP_NONE;
        return 1;
    }
    if (!r->o->all_types) {
        t[0] = PAMI_TYPE_INT32;
        t[1] = PAMI_TYPE_DOUBLE;
        op[0] = op[1] = PAMI_OP_SUM;
        return 2;
    }
    for (size_t i = 0; i < 5; i++) {
        t[i]  = red_types[i];
        op[i] = i == 4 ? PAMI_OP_USER : PAMI_OP_SUM;
    }
    return 5;
}

static size_t sizes_of(const run_t *r, unsigned kind, uint64_t *b)
{
    if (kind == PAMI_XFER_BARRIER) {
        b[0] = 0;
        return 1;
    }
    size_t n = 0;
    unsigned step = r->o->quick ? 8 : 2;
    for (uint64_t x = r->o->min_bytes; x <= r->o->max_bytes && n < 48;
         x *= step)
        b[n++] = x;
    return n;
}

/* Algorithms of kind on g: ids and metadata, both lists. */
static size_t algos_of(pami_geometry_t g, unsigned kind, pami_algorithm_t *id,
                       pami_algorithm_metadata_t *md)
{
    size_t na = 0, nc = 0;
    if (pami_geometry_algorithms_num(g, kind, &na, &nc) != PAMI_SUCCESS ||
        na + nc > MAX_ALGOS)
        return 0;
    pami_geometry_algorithms_query(g, kind, id, md, na, id + na, md + na, nc);
    return na + nc;
}

static bool agree_max(run_t *r, pami_geometry_t g, double *v, size_t n)
{
    double *in = malloc(n * sizeof(*in));
    if (in == NULL)
        return false;
    memcpy(in, v, n * sizeof(*in));
    pami_result_t rc = pami_geometry_allreduce(r->ctx, g, in, v, n,
                                               PAMI_TYPE_DOUBLE, PAMI_OP_MAX);
    free(in);
    return rc == PAMI_SUCCESS;
}

static void save(run_t *r, bool force)
{
    if (r->me != 0 || r->o->out == NULL)
        return;
    double t = tune_now();
    if (!force && t - r->last_save < SAVE_EVERY_S)
        return;
    r->last_save = t;
    if (coll_profile_save(r->prof, r->o->out) != 0)
        fprintf(stderr, "pami-tune: cannot write %s\n", r->o->out);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    pami_geometry_t  g;
    size_t           n; /* geometry size */
    unsigned         kind;
    pami_algorithm_t id;
    const pami_algorithm_metadata_t *md;
    pami_type_t      type;
    unsigned         op;
    uint64_t         bytes;
    coll_shape_t     key;
    uint8_t          round;
} point_t;

static pami_xfer_t xfer_of(run_t *r, const point_t *p)
{
    size_t es = pami_type_size(p->type), count = es ? p->bytes / es : 0;
    pami_xfer_t x = {.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                     .kind = (pami_xfer_type_t)p->kind, .geometry = p->g,
                     .algorithm = p->id, .root = 0, .sbuf = r->sbuf,
                     .rbuf = r->rbuf, .count = count, .dtype = p->type,
                     .op = p->op == COLL_PROFILE_OP_NONE ? PAMI_OP_SUM
                                                         : (pami_op_t)p->op};
    if (p->op == PAMI_OP_USER) {
        x.field_mask |= PAMI_XFER_FIELD_USER_OP;
        x.user_fn = user_sum;
        x.user_commutative = 1;
    }
    if (p->kind == PAMI_XFER_ALLGATHERV || p->kind == PAMI_XFER_GATHERV ||
        p->kind == PAMI_XFER_SCATTERV || p->kind == PAMI_XFER_ALLTOALLV) {
        for (size_t i = 0; i < p->n; i++) {
            r->vc[i] = count;
            r->vd[i] = i * count;
        }
        x.field_mask |= PAMI_XFER_FIELD_VCOUNTS;
        x.rcounts = x.scounts = r->vc;
        x.rdispls = x.sdispls = r->vd;
    }
    return x;
}

static coll_prof_entry_t entry_of(const point_t *p)
{
    coll_prof_entry_t e = {.kind = (uint8_t)p->kind, .type = (uint8_t)p->type,
                           .op = (uint8_t)p->op, .bytes = p->bytes,
                           .shape = p->key, .round = p->round};
    snprintf(e.algo, sizeof(e.algo), "%s", p->md->name);
    return e;
}

static void record(run_t *r, coll_prof_entry_t *e)
{
    if (r->me != 0)
        return;
    coll_prof_entry_t *old = coll_profile_find(r->prof, e);
    if (old != NULL)
        *old = *e;
    else if (!coll_profile_add(r->prof, e))
        fprintf(stderr, "pami-tune: out of memory for results\n");
}

/* One candidate of a point: its call, calls per repetition, and what
 * the rounds gathered. */
typedef struct {
    point_t       p;
    pami_xfer_t   x;
    unsigned      ops, reps;
    bool          live; /* warmed up: measured in the rounds */
    bool          grow; /* out: go on to the next size */
    pami_result_t rc;   /* sticky: a failed call skips its later batches */
    double        waited, wall; /* run-queue wait and time of its batches */
    size_t        off;  /* its repetitions' place in r->times */
    size_t        ai;   /* its algorithm's index in the sweep */
} cand_t;

/* Warm-up and batch size of c: false when it is out of the point (failed
 * or over the deadline: recorded, c->grow cleared; or the sweep stops:
 * r->stop). */
static bool warm(run_t *r, cand_t *c)
{
    coll_prof_entry_t e = entry_of(&c->p);
    /* The first call builds, the second is timed. */
    double t = 0;
    pami_result_t rc = PAMI_SUCCESS;
    for (int i = 0; i < 2 && rc == PAMI_SUCCESS; i++) {
        double a = tune_now();
        rc = pami_collective_wait(r->ctx, &c->x);
        t = tune_now() - a;
    }
    bool limit = r->o->limit_s > 0 && tune_now() - r->t0 > r->o->limit_s;
    double v[4] = {t * 1e6, rc != PAMI_SUCCESS,
                   tune_stop_signal != 0 || limit, 0};
    if (!agree_max(r, c->p.g, v, 3) || v[2] != 0) {
        r->stop = true;
        return false;
    }
    if (v[1] != 0 || v[0] > r->o->deadline_s * 1e6) {
        e.failed = true;
        snprintf(e.why, sizeof(e.why), "%s", v[1] != 0
                 ? "the call failed" : "over the deadline");
        record(r, &e);
        c->grow = false;
        return false;
    }
    /* Short calls: CAL_CALLS more, timed together and agreed, give the
     * time of one call that sizes the repetitions' batches (one call of
     * a few microseconds is mostly the wake-ups of a busy machine). The
     * agreed warm-up time decides, so every member runs them or none. */
    if (v[0] < TUNE_CAL_US) {
        double a = tune_now();
        for (int i = 0; i < CAL_CALLS && rc == PAMI_SUCCESS; i++)
            rc = pami_collective_wait(r->ctx, &c->x);
        double cal[2] = {(tune_now() - a) * 1e6 / CAL_CALLS,
                         rc != PAMI_SUCCESS};
        if (!agree_max(r, c->p.g, cal, 2)) {
            r->stop = true;
            return false;
        }
        if (cal[1] != 0) {
            e.failed = true;
            snprintf(e.why, sizeof(e.why), "the call failed");
            record(r, &e);
            c->grow = false;
            return false;
        }
        v[3] = cal[0];
    }
    /* Calls per repetition, the same on every member (agreed times). */
    double one = v[3] > 0 ? v[3] : v[0];
    double f = r->o->batch_us / (one > 0.01 ? one : 0.01);
    c->ops = f < 1 ? 1 : f > TUNE_BATCH_MAX ? TUNE_BATCH_MAX : (unsigned)f;
    /* Short calls: the guess, made right after an allreduce, is grown
     * by up to TUNE_GROW_STEPS batches (each to a barrier, as the
     * repetitions) until one lasts half of --batch-us by the slowest
     * member, as auto_vs_best sizes its windows: the first calls after
     * a barrier are slow (wake-ups), so the guess alone gave the bench
     * windows of 0.2 ms for 0.4 us broadcasts at 8 tasks. */
    for (int step = 0; v[3] > 0 && step < TUNE_GROW_STEPS &&
                       c->ops < TUNE_BATCH_MAX; step++) {
        double a = tune_now();
        for (unsigned j = 0; j < c->ops && rc == PAMI_SUCCESS; j++)
            rc = pami_collective_wait(r->ctx, &c->x);
        pami_result_t brc = pami_geometry_barrier(r->ctx, c->p.g);
        double gr[2] = {(tune_now() - a) * 1e6,
                        rc != PAMI_SUCCESS || brc != PAMI_SUCCESS};
        if (!agree_max(r, c->p.g, gr, 2)) {
            r->stop = true;
            return false;
        }
        if (gr[1] != 0) {
            e.failed = true;
            snprintf(e.why, sizeof(e.why), "the call failed");
            record(r, &e);
            c->grow = false;
            return false;
        }
        one = gr[0] / c->ops;
        if (gr[0] >= r->o->batch_us / 2)
            break;
        f = (double)c->ops * r->o->batch_us / (gr[0] > 0.01 ? gr[0] : 0.01);
        c->ops = f > TUNE_BATCH_MAX ? TUNE_BATCH_MAX : (unsigned)f;
    }
    c->reps = r->o->reps;
    if (r->point_s > 0) {
        double fit = r->point_s * 1e6 /
                     (one * c->ops > 0.01 ? one * c->ops : 0.01);
        c->reps = fit < 3 ? 3 : fit > 1000 ? 1000 : (unsigned)fit;
    }
    return true;
}

/* The same order on every member: a shuffle seeded by the point and the
 * round (splitmix64). */
static void round_order(size_t *order, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = n; i > 1; i--) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        size_t j = (size_t)(z % i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

/* One batch of c's calls up to a barrier after it, as auto_vs_best's
 * windows: a member's own calls alone leave out the members that started
 * late (8 tasks on 2 CPUs leave an allreduce milliseconds apart), which
 * a decoupled algorithm (eager slots, a one-sided copy) hides better
 * than one whose members wait for each other; a barrier costs every
 * algorithm of the point alike. Every member reaches it: a failed call
 * ends the other members' instance too. */
static double batch(run_t *r, cand_t *c)
{
    double w0 = tool_cpu_waited(0), a = tune_now();
    for (unsigned j = 0; j < c->ops && c->rc == PAMI_SUCCESS; j++)
        c->rc = pami_collective_wait(r->ctx, &c->x);
    pami_result_t brc = pami_geometry_barrier(r->ctx, c->p.g);
    if (c->rc == PAMI_SUCCESS)
        c->rc = brc;
    double b = tune_now(), w1 = tool_cpu_waited(0);
    if (w0 >= 0 && w1 >= 0) {
        c->waited += w1 - w0;
        c->wall += b - a;
    }
    return (b - a) * 1e6 / c->ops;
}

/* Rounds of the candidates in look (0 or 1: the first or the second
 * look), each round after an allreduce of the members' stop flags (the
 * round's barrier, and a point of long batches stops within one round of
 * a signal: pamirun kills 2 s after it); a candidate's repetition i goes
 * to r->times[off + look * reps + i]. False when the sweep stops. */
static bool rounds(run_t *r, cand_t *c, size_t n, unsigned look,
                   uint64_t seed)
{
    unsigned nr = 0;
    for (size_t k = 0; k < n; k++)
        if (c[k].live && c[k].reps > nr)
            nr = c[k].reps;
    size_t order[MAX_ALGOS];
    for (unsigned i = 0; i < nr; i++) {
        double stop = tune_stop_signal != 0;
        if (!agree_max(r, c[0].p.g, &stop, 1) || stop != 0) {
            r->stop = true;
            return false;
        }
        round_order(order, n, seed ^ ((uint64_t)look << 32 | i) *
                                         0xd1b54a32d192ed03ull);
        for (size_t o = 0; o < n; o++) {
            cand_t *ck = &c[order[o]];
            if (ck->live && i < ck->reps)
                r->times[ck->off + look * ck->reps + i] = batch(r, ck);
        }
    }
    /* After each candidate's repetitions (two looks' room): whether a
     * call failed and the share of its batches this member waited for a
     * CPU (the largest over the members gives the entry's cpu, 1 - it).
     * Then the slowest member's of everything. */
    for (size_t k = 0; k < n; k++) {
        if (!c[k].live)
            continue;
        double busy = c[k].wall > 0 ? c[k].waited / c[k].wall : 0;
        double *t = r->times + c[k].off + 2 * c[k].reps;
        t[0] = c[k].rc != PAMI_SUCCESS;
        t[1] = busy < 0 ? 0 : busy > 1 ? 1 : busy;
    }
    size_t need = 0;
    for (size_t k = 0; k < n; k++)
        if (c[k].live)
            need = c[k].off + 2 * c[k].reps + 2;
    if (!agree_max(r, c[0].p.g, r->times, need)) {
        r->stop = true;
        return false;
    }
    return true;
}

static double median_of(double *t, unsigned n)
{
    qsort(t, n, sizeof(double), cmp_double);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* The share of the first look's rounds that both ran in which k was
 * faster than f (agreed times: every member computes the same). */
static double wins_over(const double *times, const cand_t *k,
                        const cand_t *f)
{
    unsigned both = k->reps < f->reps ? k->reps : f->reps, won = 0;
    for (unsigned i = 0; i < both; i++)
        won += times[k->off + i] < times[f->off + i];
    return both > 0 ? (double)won / both : 0;
}

/* The candidates of one point (collective, type, size), measured
 * interleaved: every candidate's warm-up, then rounds in which each
 * runs one repetition, in an order shuffled anew every round (alike on
 * every member), so that a change of the machine's load during the
 * point falls on all candidates alike, as in auto_vs_best (measured one
 * after the other, a quiet 2-task profile and the bench disagreed by up
 * to 2x on which was faster). The candidates within TUNE_TIE of the
 * fastest median, or faster than the fastest in TUNE_WINS of the rounds,
 * get a second look, as many rounds again among themselves, and their
 * entries the repetitions of both: a near tie is where one look's noise
 * decides the choice. Every member computes the
 * same medians from the agreed times (the slowest member's). Each
 * candidate's entry is recorded and its grow flag set (false: failed or
 * over the deadline here). */
static void measure_point(run_t *r, cand_t *c, size_t n)
{
    size_t need = 0, live = 0;
    for (size_t k = 0; k < n && !r->stop; k++) {
        c[k].live = warm(r, &c[k]);
        if (!c[k].live)
            continue;
        c[k].off = need;
        need += 2 * c[k].reps + 2;
        live++;
    }
    if (r->stop || live == 0)
        return;
    if (need > r->cap_times) {
        double *nt = realloc(r->times, need * sizeof(*nt));
        if (nt == NULL) {
            r->stop = true;
            return;
        }
        r->times = nt;
        r->cap_times = need;
    }
    memset(r->times, 0, need * sizeof(*r->times));
    uint64_t seed = (uint64_t)c[0].p.kind << 56 ^
                    (uint64_t)c[0].p.type << 48 ^ c[0].p.bytes;
    if (!rounds(r, c, n, 0, seed))
        return;
    /* Medians of the first look (on a copy: the entries sort later). */
    double med[MAX_ALGOS], best = -1;
    size_t fast = 0;
    double *tmp = malloc(need * sizeof(*tmp));
    if (tmp == NULL) {
        r->stop = true;
        return;
    }
    for (size_t k = 0; k < n; k++) {
        med[k] = -1;
        if (!c[k].live || r->times[c[k].off + 2 * c[k].reps] != 0)
            continue;
        memcpy(tmp, r->times + c[k].off, c[k].reps * sizeof(double));
        med[k] = median_of(tmp, c[k].reps);
        if (best < 0 || med[k] < best) {
            best = med[k];
            fast = k;
        }
    }
    free(tmp);
    bool tie[MAX_ALGOS];
    size_t tied = 0;
    for (size_t k = 0; k < n; k++) {
        tie[k] = med[k] >= 0 &&
                 (med[k] <= best * (1 + TUNE_TIE) ||
                  wins_over(r->times, &c[k], &c[fast]) >= TUNE_WINS);
        tied += tie[k];
    }
    bool second = tied >= 2;
    if (second) {
        cand_t g[MAX_ALGOS];
        for (size_t k = 0; k < n; k++) {
            g[k] = c[k];
            g[k].live = tie[k];
        }
        if (!rounds(r, g, n, 1, seed))
            return;
        for (size_t k = 0; k < n; k++) /* the looks' failures and waits */
            if (g[k].live)
                c[k] = g[k];
    }
    for (size_t k = 0; k < n; k++) {
        if (!c[k].live)
            continue;
        coll_prof_entry_t e = entry_of(&c[k].p);
        double *t = r->times + c[k].off;
        unsigned reps = c[k].reps;
        unsigned nrep = second && tie[k] ? 2 * reps : reps;
        if (t[2 * reps] != 0) {
            e.failed = true;
            snprintf(e.why, sizeof(e.why), "the call failed");
            c[k].grow = false;
        } else {
            e.median_us = median_of(t, nrep);
            e.min_us    = t[0];
            e.max_us    = t[nrep - 1];
            e.count     = nrep;
            e.cpu       = 1.0 - t[2 * reps + 1];
            if (e.cpu <= 0)
                e.cpu = 1e-3; /* 0 means unknown in the file */
            c[k].grow = e.median_us <= r->o->deadline_s * 1e6;
        }
        record(r, &e);
    }
    save(r, false);
}

/* Points of one shape, in order; count only (run == false) or run. */
static size_t sweep(run_t *r, const shape_t *s, bool run)
{
    pami_geometry_attr_t a = {.field_mask = PAMI_GEOMETRY_ATTR_SIZE};
    if (s->g == NULL || pami_geometry_query(s->g, &a) != PAMI_SUCCESS)
        return 0;
    size_t points = 0;
    pami_algorithm_t id[MAX_ALGOS];
    pami_algorithm_metadata_t md[MAX_ALGOS];
    for (unsigned k = 0; k < PAMI_XFER_COUNT && !r->stop; k++) {
        if (!r->o->kinds[k])
            continue;
        size_t na = algos_of(s->g, k, id, md);
        pami_type_t types[5];
        unsigned ops[5];
        size_t nt = types_of(r, k, types, ops);
        uint64_t sizes[48];
        size_t nb = sizes_of(r, k, sizes);
        /* Sizes outside, algorithms inside, measured interleaved
         * (measure_point). */
        for (size_t ti = 0; ti < nt && !r->stop; ti++) {
            bool grow[MAX_ALGOS];
            for (size_t ai = 0; ai < na; ai++)
                grow[ai] = true;
            for (size_t bi = 0; bi < nb && !r->stop; bi++) {
                cand_t cand[MAX_ALGOS];
                size_t nc = 0, first = r->ndone;
                for (size_t ai = 0; ai < na; ai++) {
                    point_t p = {.g = s->g, .n = a.size, .kind = k,
                                 .id = id[ai], .md = &md[ai],
                                 .type = types[ti], .op = ops[ti],
                                 .bytes = sizes[bi], .key = s->key,
                                 .round = r->round};
                    size_t es = pami_type_size(p.type);
                    if (k != PAMI_XFER_BARRIER && p.bytes < es)
                        continue;
                    points++;
                    if (!run)
                        continue;
                    coll_prof_entry_t e = entry_of(&p);
                    pami_xfer_t x = xfer_of(r, &p);
                    bool done_before = coll_profile_find(&r->old, &e) != NULL;
                    bool accepted = md[ai].check == NULL ||
                                    md[ai].check(&x) == PAMI_SUCCESS;
                    if (!done_before && accepted && grow[ai])
                        cand[nc++] = (cand_t){.p = p, .x = x, .grow = true,
                                              .ai = ai};
                    else if (!done_before && accepted && r->me == 0) {
                        e.failed = true;
                        snprintf(e.why, sizeof(e.why),
                                 "skipped after a smaller size failed");
                        record(r, &e);
                    }
                    r->ndone++;
                }
                if (!run)
                    continue;
                if (nc > 0)
                    measure_point(r, cand, nc);
                for (size_t ci = 0; ci < nc; ci++)
                    grow[cand[ci].ai] = cand[ci].grow;
                if (r->me == 0 && r->ndone > first) {
                    char what[160];
                    snprintf(what, sizeof(what), "%s %s %s %llu B",
                             s->name, coll_kind_name(k),
                             coll_type_name(types[ti]),
                             (unsigned long long)sizes[bi]);
                    tune_progress(r->ndone, what);
                }
            }
        }
    }
    return points;
}

/* Round k begins: its time and the machine's floor (docs/tuning.md).
 * A resumed round keeps what its file recorded of its start. */
static void round_start(run_t *r, unsigned k)
{
    double fl = tune_floor(r->client, r->ctx);
    if (r->me != 0)
        return;
    coll_round_t *d = &r->prof->rounds[k];
    if (k >= r->prof->nrounds) {
        *d = (coll_round_t){0};
        r->prof->nrounds = k + 1;
    }
    if (d->floor_us <= 0)
        d->floor_us = fl;
    if (d->started[0] == '\0') {
        time_t now = time(NULL);
        struct tm tm;
        if (gmtime_r(&now, &tm) != NULL)
            strftime(d->started, sizeof(d->started), "%Y-%m-%dT%H:%M:%SZ",
                     &tm);
    }
    if (r->o->progress && r->o->rounds > 1)
        fprintf(stderr, "pami-tune: round %u of %u, floor %.3f us\n", k + 1,
                r->o->rounds, fl);
}

/* --round-gap: every task sleeps, then all agree to go on (false: a
 * signal or the time limit stopped the sweep). */
static bool gap(run_t *r, pami_geometry_t world)
{
    double end = tune_now() + r->o->gap_s;
    while (tune_now() < end && !tune_stop_signal &&
           !(r->o->limit_s > 0 && tune_now() - r->t0 > r->o->limit_s)) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    double stop = tune_stop_signal != 0 ||
                  (r->o->limit_s > 0 && tune_now() - r->t0 > r->o->limit_s);
    if (!agree_max(r, world, &stop, 1) || stop != 0)
        r->stop = true;
    return !r->stop;
}

int tune_run(pami_client_t client, pami_context_t ctx, const tune_opts_t *o,
             coll_profile_t *prof)
{
    run_t r = {.client = client, .ctx = ctx, .o = o, .prof = prof};
    pami_client_attr_t ca = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                           PAMI_CLIENT_ATTR_SIZE |
                                           PAMI_CLIENT_ATTR_NODES};
    if (pami_client_query(client, &ca) != PAMI_SUCCESS)
        return -1;
    r.me = ca.task;
    r.ntasks = ca.size;
    r.task_node = ca.task_node;
    r.num_nodes = ca.num_nodes;
    r.t0 = r.last_save = tune_now();
    if (o->resume != NULL) {
        char why[256];
        if (!coll_profile_load(o->resume, NULL, &r.old, NULL, NULL, 0, why,
                               sizeof(why))) {
            fprintf(stderr, "pami-tune: --resume %s: %s\n", o->resume, why);
            return -1;
        }
        /* Failed points are measured again. */
        size_t k = 0;
        for (size_t i = 0; i < r.old.n; i++)
            if (!r.old.e[i].failed)
                r.old.e[k++] = r.old.e[i];
        r.old.n = k;
        if (r.me == 0 && !coll_profile_merge(prof, &r.old))
            return -1;
    }
    uint64_t biggest = o->max_bytes;
    r.sbuf = malloc(biggest * r.ntasks + 64);
    r.rbuf = malloc(biggest * r.ntasks + 64);
    r.vc = malloc(r.ntasks * sizeof(size_t));
    r.vd = malloc(r.ntasks * sizeof(size_t));
    if (r.sbuf == NULL || r.rbuf == NULL || r.vc == NULL || r.vd == NULL) {
        fprintf(stderr, "pami-tune: no memory for %llu-byte buffers\n",
                (unsigned long long)(biggest * r.ntasks));
        return -1;
    }
    /* Small whole doubles, as pami-bench's auto_vs_best sends: bytes of
     * any pattern would make doubles of any exponent (NaN, infinities,
     * subnormals, whose arithmetic is slow on some CPUs) and time a
     * reduction on data no program sends. Seen as int32, int64 or float
     * the words stay ordinary numbers too. */
    memset(r.sbuf, 0, biggest * r.ntasks + 64);
    size_t words = (biggest * r.ntasks + 64) / sizeof(double);
    for (size_t i = 0; i < words; i++) {
        double v = (double)(i % 7 + r.me);
        memcpy(r.sbuf + i * sizeof(double), &v, sizeof(v));
    }
    memset(r.rbuf, 0, biggest * r.ntasks + 64);

    shape_t shapes[5];
    size_t ns = make_shapes(&r, shapes);
    /* Task 0 is in every shape: its count is the job's. */
    double total = 0;
    for (size_t i = 0; i < ns; i++)
        total += (double)sweep(&r, &shapes[i], false);
    pami_geometry_t world;
    pami_geometry_world(ctx, &world);
    if (r.me != 0)
        total = 0;
    agree_max(&r, world, &total, 1);
    unsigned nrounds = o->rounds > 0 ? o->rounds : 1;
    r.total = (size_t)total * nrounds;
    if (o->budget_s > 0 && r.total > 0)
        r.point_s = o->budget_s / (double)r.total;
    if (r.me == 0)
        tune_progress_start(r.total, o->progress);
    for (unsigned k = 0; k < nrounds && !r.stop; k++) {
        if (k > 0 && !gap(&r, world))
            break;
        r.round = (uint8_t)k;
        round_start(&r, k);
        for (size_t i = 0; i < ns; i++) {
            if (!r.stop)
                sweep(&r, &shapes[i], true);
            /* Non-members and members meet here and agree to go on. */
            double stop = r.stop;
            agree_max(&r, world, &stop, 1);
            r.stop = stop != 0;
        }
        /* The end's floor also of a stopped round: it says what the
         * round's points saw. */
        double fl = tune_floor(r.client, r.ctx);
        if (r.me == 0)
            r.prof->rounds[k].floor_end_us = fl;
    }
    if (r.me == 0)
        tune_progress_end(r.ndone, r.stop);
    for (size_t i = 0; i < ns; i++)
        if (shapes[i].g != NULL && shapes[i].g != world)
            pami_geometry_destroy(&shapes[i].g);
    save(&r, true);
    free(r.sbuf);
    free(r.rbuf);
    free(r.vc);
    free(r.vd);
    free(r.times);
    coll_profile_free(&r.old);
    return r.stop ? 1 : 0;
}
