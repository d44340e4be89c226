/*
 * Selection from a profile (seed 004, docs/tuning.md): the profile is
 * read once per process (PAMI_COLL_PROFILE), each geometry filters it
 * for its shape into a decision table at creation, the members compare
 * the tables' hashes (in the creation exchange; for the world before
 * its first collective), and AUTO looks the table up per call.
 * PAMI_COLL_<COLLECTIVE>_ALGORITHM forces an algorithm; PAMI_COLL_LOG=1
 * logs decisions. Counters: the protocol coll_select.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "coll_builtin.h"

static struct {
    pthread_once_t   once;
    coll_profile_t   prof;
    bool             have;
    bool             log;
    pami_algorithm_t forced[PAMI_XFER_COUNT];
    coll_machine_t   here;
    bool             online;  /* PAMI_COLL_TUNE=online */
    const char      *out;     /* PAMI_COLL_PROFILE_OUT */
    coll_profile_t   learnt;  /* what contexts that ended learnt */
} sel = {.once = PTHREAD_ONCE_INIT};

static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static bool            warned_mismatch;

static bool known_algo(const char *name, unsigned kind)
{
    pami_algorithm_t id;
    return pami_algorithm_by_name(name, &id) == PAMI_SUCCESS &&
           (unsigned)coll_algos[id - 1].kind == kind;
}

/* One file of the list: merged over what came before, or one warning. */
static void load_one(const char *path)
{
    coll_profile_t p;
    char why[256], skip_why[160];
    size_t skipped = 0;
    if (!coll_profile_load(path, known_algo, &p, &skipped, skip_why,
                           sizeof(skip_why), why, sizeof(why))) {
        coll_warn("PAMI_COLL_PROFILE: %s: %s; not used (built-in rules "
                  "where no other profile applies)", path, why);
        return;
    }
    if (skipped > 0)
        coll_warn("PAMI_COLL_PROFILE: %s: %zu entries skipped (%s)", path,
                  skipped, skip_why);
    if (strcmp(p.machine.cpu, sel.here.cpu) != 0 ||
        p.machine.cores != sel.here.cores)
        coll_warn("PAMI_COLL_PROFILE: %s was measured on another machine "
                  "(%s, %u cores; here %s, %u); used anyway", path,
                  p.machine.cpu, p.machine.cores, sel.here.cpu,
                  sel.here.cores);
    if (!coll_profile_merge(&sel.prof, &p))
        coll_warn("PAMI_COLL_PROFILE: %s: out of memory; part not used",
                  path);
    coll_profile_free(&p);
}

static void load_forced(void)
{
    for (unsigned k = 0; k < PAMI_XFER_COUNT; k++) {
        char var[64];
        snprintf(var, sizeof(var), "PAMI_COLL_%s_ALGORITHM",
                 coll_kind_name(k));
        for (char *c = var; *c; c++)
            *c = (char)toupper((unsigned char)*c);
        const char *v = getenv(var);
        if (v == NULL || *v == '\0')
            continue;
        pami_algorithm_t id;
        if (pami_algorithm_by_name(v, &id) != PAMI_SUCCESS ||
            (unsigned)coll_algos[id - 1].kind != k) {
            coll_warn("%s=%s is not an algorithm of %s; ignored", var, v,
                      coll_kind_name(k));
            continue;
        }
        sel.forced[k] = id;
    }
}

static void load(void)
{
    coll_machine_local(&sel.here);
    sel.log = pami_protocol_env_bool(COLL_SUBSYS, "PAMI_COLL_LOG", 0) != 0;
    const char *tune = getenv("PAMI_COLL_TUNE");
    sel.online = tune != NULL && strcmp(tune, "online") == 0;
    if (tune != NULL && *tune != '\0' && !sel.online &&
        strcmp(tune, "off") != 0)
        coll_warn("PAMI_COLL_TUNE=%s is not online or off; off", tune);
    sel.out = getenv("PAMI_COLL_PROFILE_OUT");
    if (sel.out != NULL && *sel.out == '\0')
        sel.out = NULL;
    load_forced();
    const char *list = getenv("PAMI_COLL_PROFILE");
    if (list == NULL || *list == '\0')
        return;
    char *copy = strdup(list), *save = NULL;
    for (char *f = copy ? strtok_r(copy, ":", &save) : NULL; f != NULL;
         f = strtok_r(NULL, ":", &save))
        load_one(f);
    free(copy);
    sel.have = sel.prof.n > 0;
}

/* ---- the geometry's table ---- */

typedef struct {
    struct pami_geometry *g;
} runnable_arg_t;

/* A probe call of the class: what the geometry itself lets run. */
static unsigned runnable(void *arg, const char *name, unsigned kind,
                         unsigned tclass)
{
    struct pami_geometry *g = ((runnable_arg_t *)arg)->g;
    pami_algorithm_t id;
    if (pami_algorithm_by_name(name, &id) != PAMI_SUCCESS)
        return 0;
    static const pami_type_t types[5] = {PAMI_TYPE_BYTE, PAMI_TYPE_INT32,
                                         PAMI_TYPE_INT64, PAMI_TYPE_FLOAT,
                                         PAMI_TYPE_DOUBLE};
    pami_xfer_t x = {.kind = (pami_xfer_type_t)kind, .geometry = g,
                     .count = 1, .dtype = types[tclass % 5],
                     .op = tclass >= 5 ? PAMI_OP_USER : PAMI_OP_SUM};
    if (coll_algos[id - 1].build == coll_shm_build &&
        !coll_shm_auto_allowed(g->cc->ctx))
        return 0; /* PAMI_COLL_SHM_AUTO=0 keeps AUTO off them */
    return coll_algo_runs(&coll_algos[id - 1], &x, g) ? id : 0;
}

static coll_shape_t shape_of(coll_ctx_t *cc, struct pami_geometry *g)
{
    coll_shape_t s = {.size = (uint32_t)g->size, .nodes = 1,
                      .ppn = (uint32_t)g->size};
    for (size_t i = 1; i < g->size; i++)
        if (g->tasks[i] != g->tasks[0] + i)
            s.layout = COLL_LAYOUT_STRIDED;
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_NODES};
    if (pami_client_query(cc->client, &a) != PAMI_SUCCESS ||
        a.task_node == NULL || a.num_nodes == 0)
        return s;
    uint32_t *cnt = calloc(a.num_nodes, sizeof(*cnt));
    if (cnt == NULL)
        return s;
    s.nodes = s.ppn = 0;
    for (size_t i = 0; i < g->size; i++) {
        uint32_t nd = a.task_node[g->tasks[i]];
        if (nd >= a.num_nodes)
            continue;
        if (cnt[nd]++ == 0)
            s.nodes++;
        if (cnt[nd] > s.ppn)
            s.ppn = cnt[nd];
    }
    free(cnt);
    if (s.nodes == 0)
        s.nodes = s.ppn = 1;
    return s;
}

void coll_select_geometry(coll_ctx_t *cc, struct pami_geometry *g)
{
    pthread_once(&sel.once, load);
    g->shape = shape_of(cc, g);
    coll_builtin_geometry(g);
    g->agreed = g->size == 1;
    if (sel.online)
        coll_online_geometry(g);
    if (!sel.have)
        return;
    runnable_arg_t arg = {g};
    g->table = coll_table_build(&sel.prof, &g->shape, runnable, &arg);
}

uint64_t coll_select_hash(const struct pami_geometry *g)
{
    return g->table != NULL ? g->table->hash : 0;
}

void coll_select_agreed(struct pami_geometry *g, bool same)
{
    g->agreed = true;
    if (same)
        return;
    free(g->table);
    g->table = NULL;
    g->cc->table_mismatches++;
    pthread_mutex_lock(&warn_lock);
    bool first = !warned_mismatch;
    warned_mismatch = true;
    pthread_mutex_unlock(&warn_lock);
    if (first)
        coll_warn("geometry %u: the members' profile tables differ (other "
                  "PAMI_COLL_PROFILE files?); built-in rules on it and on "
                  "any other geometry where this happens", g->id);
}

void coll_select_free(struct pami_geometry *g)
{
    free(g->table);
    g->table = NULL;
    coll_online_free(g);
}

bool coll_select_logging(void)
{
    return sel.log;
}

bool coll_select_online(void)
{
    pthread_once(&sel.once, load);
    return sel.online;
}

void coll_select_context_end(coll_ctx_t *cc)
{
    if (!sel.online || sel.out == NULL || cc->me != 0)
        return;
    pthread_mutex_lock(&warn_lock);
    coll_online_collect(cc, &sel.learnt);
    if (sel.learnt.n > 0) {
        snprintf(sel.learnt.producer, sizeof(sel.learnt.producer),
                 "pami %d.%d.%d online", PAMI_VERSION_MAJOR,
                 PAMI_VERSION_MINOR, PAMI_VERSION_PATCH);
        sel.learnt.machine = sel.here;
        sel.learnt.machine.nodes = cc->world->shape.nodes;
        sel.learnt.machine.ppn = cc->world->shape.ppn;
        if (coll_profile_save(&sel.learnt, sel.out) != 0)
            coll_warn("PAMI_COLL_PROFILE_OUT: cannot write %s", sel.out);
    }
    pthread_mutex_unlock(&warn_lock);
}

static void agree_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    struct pami_geometry *g = cookie;
    uint64_t h = coll_select_hash(g);
    coll_select_agreed(g, rc == PAMI_SUCCESS && g->agree_v[0] == h &&
                              ~g->agree_v[1] == h);
}

/* The world has no creation exchange: its members compare tables in an
 * allreduce (min of h and of ~h) that each starts, without waiting, at
 * its first collective call on the world. Only a member with a table
 * waits for the result, before its first AUTO decision: one without a
 * table uses the built-in rules whatever the others have. */
static pami_result_t world_ready(coll_ctx_t *cc, struct pami_geometry *g,
                                 const pami_xfer_t *x);

pami_result_t coll_select_ready(coll_ctx_t *cc, struct pami_geometry *g,
                                const pami_xfer_t *x)
{
    pami_result_t rc = world_ready(cc, g, x);
    bool named = (x->field_mask & PAMI_XFER_FIELD_ALGORITHM) &&
                 x->algorithm != PAMI_ALGORITHM_AUTO;
    if (rc == PAMI_SUCCESS && g->online != NULL && !named &&
        (unsigned)x->kind < PAMI_XFER_COUNT)
        rc = coll_online_ready(cc, g, x);
    return rc;
}

static pami_result_t world_ready(coll_ctx_t *cc, struct pami_geometry *g,
                                 const pami_xfer_t *x)
{
    if (g->agreed)
        return PAMI_SUCCESS;
    if (!g->agree_started) {
        pami_algorithm_t id;
        if (pami_algorithm_by_name("allreduce_recursive_doubling", &id) !=
            PAMI_SUCCESS)
            return PAMI_ERROR;
        uint64_t h = coll_select_hash(g);
        g->agree_v[0] = h;
        g->agree_v[1] = ~h;
        pami_xfer_t ax = {.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                          .kind = PAMI_XFER_ALLREDUCE, .geometry = g,
                          .algorithm = id, .done_fn = agree_done,
                          .cookie = g, .sbuf = PAMI_IN_PLACE,
                          .rbuf = g->agree_v, .count = 2,
                          .dtype = PAMI_TYPE_UINT64, .op = PAMI_OP_MIN};
        g->agree_started = true; /* the allreduce itself goes through */
        pami_result_t rc = pami_collective(cc->ctx, &ax);
        if (rc != PAMI_SUCCESS) {
            g->agree_started = false;
            return rc;
        }
        /* Not the program's call: not in its counters. */
        cc->algo_calls[id - 1]--;
        cc->selected[PAMI_SELECTED_NAMED]--;
    }
    bool named = (x->field_mask & PAMI_XFER_FIELD_ALGORITHM) &&
                 x->algorithm != PAMI_ALGORITHM_AUTO;
    if (named || g->table == NULL)
        return PAMI_SUCCESS;
    if (pami_protocol_in_handler(cc->ctx)) {
        cc->st.eagain++;
        return PAMI_EAGAIN;
    }
    while (!g->agreed) {
        pami_result_t rc = pami_context_wait(cc->ctx, 100);
        if (rc != PAMI_SUCCESS && rc != PAMI_TIMEOUT)
            return rc;
    }
    return PAMI_SUCCESS;
}

/* ---- per call ---- */

/* The size a call is selected by: equal on every member. */
uint64_t coll_select_bytes(const pami_xfer_t *x, const struct pami_geometry *g)
{
    if (x->kind == PAMI_XFER_BARRIER || !coll_type_valid(x->dtype))
        return 0;
    size_t es = pami_type_size(x->dtype);
    switch (x->kind) {
    case PAMI_XFER_ALLGATHERV: {
        /* Every member passes the same rcounts: their mean. */
        if (x->rcounts == NULL)
            return 0;
        uint64_t sum = 0;
        for (size_t i = 0; i < g->size; i++)
            sum += x->rcounts[i];
        return sum / g->size * es;
    }
    case PAMI_XFER_GATHERV:
    case PAMI_XFER_SCATTERV:
    case PAMI_XFER_ALLTOALLV:
        return 0; /* no total that every member knows */
    default:
        return (uint64_t)x->count * es;
    }
}

static unsigned bucket(uint64_t b)
{
    return b == 0 ? 0 : 64 - (unsigned)__builtin_clzll(b);
}

static const char *reason_name(pami_selected_reason_t r)
{
    static const char *const n[] = {"named", "forced", "profile", "nearest",
                                    "built-in", "online"};
    return n[r];
}

static void log_once(struct pami_geometry *g, const pami_xfer_t *x,
                     const pami_algorithm_selection_t *s)
{
    unsigned b = bucket(s->bytes);
    if (b > 63 || (g->logged[x->kind] & (1ull << b)))
        return;
    g->logged[x->kind] |= 1ull << b;
    coll_warn("select: geometry %u (%zu tasks) %s %zu B -> %s (%s: %s)",
              g->id, g->size, coll_kind_name(x->kind), s->bytes,
              s->name ? s->name : "none", reason_name(s->reason), s->why);
}

/* The memo holds a started call's decision once the members agreed on the
 * table and while nothing can change it (no online tuning); v-variants
 * decide by their counts arrays and are not kept. The table and the
 * forced algorithms are fixed, and the checks read only the geometry and
 * the inputs compared (coll_auto_memo), so an equal call decides alike. */
static bool memo_usable(const pami_xfer_t *x, const struct pami_geometry *g)
{
    return g->agreed && g->online == NULL && x->kind < PAMI_XFER_ALLGATHERV;
}

pami_algorithm_t coll_auto_select(const pami_xfer_t *x,
                                  struct pami_geometry *g,
                                  pami_algorithm_selection_t *out, bool call)
{
    bool memo = call && memo_usable(x, g);
    pami_selected_reason_t hit_why;
    if (memo && coll_auto_memo(x, g, &hit_why) != 0) {
        /* logged when it was first made */
        if (out != NULL)
            *out = g->memo[x->kind].sel;
        return g->memo[x->kind].sel.algorithm;
    }
    pami_algorithm_selection_t s = {.reason = PAMI_SELECTED_BUILTIN};
    pthread_once(&sel.once, load);
    s.bytes = coll_select_bytes(x, g);
    pami_algorithm_t id = sel.forced[x->kind];
    if (id != 0 && coll_algo_runs(&coll_algos[id - 1], x, g)) {
        s.reason = PAMI_SELECTED_FORCED;
        s.why    = "PAMI_COLL_<COLLECTIVE>_ALGORITHM";
        goto found;
    }
    const coll_rule_t *r = NULL;
    if (g->table != NULL) {
        unsigned cls = coll_tclass(x->kind, x->dtype, x->op);
        r = coll_table_lookup(g->table, x->kind, cls, s.bytes);
        if (r != NULL && coll_algo_runs(&coll_algos[r->algo - 1], x, g)) {
            const coll_span_t *sp = &g->table->span[x->kind][cls];
            id = r->algo;
            s.reason = sp->exact ? PAMI_SELECTED_PROFILE
                                 : PAMI_SELECTED_NEAREST;
            s.why = sp->exact ? "the best measured at the nearest size"
                              : "the best measured on the nearest shape";
            s.point_bytes = r->point;
            s.range_lo    = r->lo;
            s.range_hi    = r + 1 < &g->table->rules[sp->first + sp->n]
                                ? r[1].lo - 1 : sp->hi;
            s.shape_size  = sp->shape.size;
            s.shape_nodes = sp->shape.nodes;
            s.shape_tasks_per_node = sp->shape.ppn;
            goto found;
        }
    }
    if (g->online != NULL) {
        bool exploring;
        unsigned cls = coll_tclass(x->kind, x->dtype, x->op);
        id = coll_online_peek(g, x, cls, s.bytes, &exploring);
        if (id != 0) {
            s.reason = PAMI_SELECTED_ONLINE;
            s.why = exploring ? "trying the candidates"
                              : "the fastest the members measured";
            goto found;
        }
    }
    id = coll_auto_builtin(x, g);
    s.reason = PAMI_SELECTED_BUILTIN;
    s.why = sel.forced[x->kind] != 0 ? "the forced algorithm cannot run it"
          : r != NULL   ? "the profile's algorithm cannot run this call"
          : !sel.have   ? "no profile"
          : g->table == NULL
              ? (g->agreed && g->cc->table_mismatches > 0 && g->size > 1
                     ? "no table (members differ, or none runnable)"
                     : "nothing in the profile for this geometry")
              : "the profile has no point near this call";
found:
    s.algorithm = id;
    s.name = id != 0 ? coll_algos[id - 1].name : NULL;
    if (!call) { /* the query: the built-in rules' pick beside it */
        s.builtin = s.reason == PAMI_SELECTED_BUILTIN ? id
                                                      : coll_auto_builtin(x, g);
        s.builtin_name = s.builtin != 0 ? coll_algos[s.builtin - 1].name
                                        : NULL;
    }
    if (sel.log && call)
        log_once(g, x, &s);
    if (memo && id != 0)
        g->memo[x->kind] = (struct coll_memo){
            .dtype = x->dtype, .op = x->op,
            .flags = coll_memo_flags(x), .count = x->count,
            .root = x->root, .sel = s};
    if (out != NULL)
        *out = s;
    return id;
}

pami_result_t coll_algorithm_selected(const pami_xfer_t *x,
                                      pami_algorithm_selection_t *out)
{
    if (x == NULL || out == NULL || x->geometry == NULL ||
        !x->geometry->ready || (unsigned)x->kind >= PAMI_XFER_COUNT ||
        (x->kind != PAMI_XFER_BARRIER && !coll_type_valid(x->dtype))) {
        coll_warn("algorithm_selected: NULL argument, geometry not ready, "
                  "or unknown kind or type");
        return PAMI_INVAL;
    }
    const char *mask_why = coll_xfer_mask_invalid(x->field_mask);
    if (mask_why != NULL) {
        coll_warn("algorithm_selected: pami_xfer_t %s", mask_why);
        return PAMI_INVAL;
    }
    if ((x->field_mask & PAMI_XFER_FIELD_ALGORITHM) &&
        x->algorithm != PAMI_ALGORITHM_AUTO) {
        if (x->algorithm > coll_num_algos)
            return PAMI_INVAL;
        memset(out, 0, sizeof(*out));
        out->algorithm = x->algorithm;
        out->name      = coll_algos[x->algorithm - 1].name;
        out->reason    = PAMI_SELECTED_NAMED;
        out->why       = "the call names it";
        out->bytes     = coll_select_bytes(x, x->geometry);
        out->builtin   = coll_auto_builtin(x, x->geometry);
        out->builtin_name = out->builtin != 0
                                ? coll_algos[out->builtin - 1].name : NULL;
        return PAMI_SUCCESS;
    }
    coll_auto_select(x, x->geometry, out, false);
    return PAMI_SUCCESS;
}

/* ---- counters: the protocol coll_select ---- */

static pami_result_t cs_init(const pami_protocol_env_t *env, void **state)
{
    *state = env->context;
    return PAMI_SUCCESS;
}

static void cs_fini(pami_context_t context, void *state)
{
    (void)context;
    (void)state;
}

static size_t cs_stats(void *state, pami_protocol_stat_t *out, size_t max)
{
    coll_ctx_t *cc = coll_ctx_of((pami_context_t)state);
    static const char *const names[] = {
        "selected_named", "selected_forced", "selected_profile",
        "selected_nearest", "selected_builtin", "selected_online"};
    size_t n = 0;
    for (size_t i = 0; i < 6; i++, n++)
        if (n < max)
            out[n] = (pami_protocol_stat_t){names[i],
                                            cc ? cc->selected[i] : 0};
    if (n < max)
        out[n] = (pami_protocol_stat_t){"table_mismatches",
                                        cc ? cc->table_mismatches : 0};
    n++;
    for (size_t i = 0; i < coll_num_algos && i < COLL_MAX_ALGOS; i++, n++)
        if (n < max)
            out[n] = (pami_protocol_stat_t){coll_algos[i].name,
                                            cc ? cc->algo_calls[i] : 0};
    return n;
}

static const pami_config_var_t cs_config[] = {
    {"PAMI_COLL_PROFILE", "(none)",
     "profile file(s) of pami-tune, colon-separated (later ones override "
     "earlier ones); AUTO selects from it per geometry (docs/tuning.md)"},
    /* Read by coll_builtin.c; listed here, with the others AUTO follows. */
    {"PAMI_COLL_BUILTIN", "measured",
     "measured: AUTO's built-in rules take the table generated from the "
     "committed profiles where it has a row, the hand-set rules elsewhere; "
     "rules: the hand-set rules only (docs/tuning.md)"},
    {"PAMI_COLL_LOG", "0",
     "1: log AUTO's first decision per geometry, collective and power of "
     "two of the size, with why"},
    {"PAMI_COLL_TUNE", "off",
     "online: AUTO calls the profile does not decide try the candidate "
     "algorithms during their first calls at each point and keep the "
     "fastest the members measured (docs/tuning.md)"},
    {"PAMI_COLL_PROFILE_OUT", "(none)",
     "with PAMI_COLL_TUNE=online: task 0 writes what was learnt there as "
     "a profile when its contexts end"},
    {"PAMI_COLL_<COLLECTIVE>_ALGORITHM", "(none)",
     "forces AUTO calls of the collective (e.g. PAMI_COLL_ALLREDUCE_"
     "ALGORITHM=allreduce_ring) where the algorithm can run them"},
};

static const pami_protocol_ops_t coll_select_ops = {
    PAMI_PROTOCOL_OPS_HEADER,
    .name         = "coll_select",
    .version      = 1,
    .num_dispatch = 0,
    .init         = cs_init,
    .fini         = cs_fini,
    .stats        = cs_stats,
    .config       = cs_config,
    .num_config   = sizeof(cs_config) / sizeof(cs_config[0]),
};

PAMI_PROTOCOL_BUILTIN(coll_select_ops)
