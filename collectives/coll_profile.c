/*
 * The profile file (docs/tuning.md): JSON through json-c. The reader
 * checks every field it uses and rejects the whole file on the first
 * problem (with one sentence saying what and where); fields it does not
 * know are ignored, so files written by newer versions still load.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "coll_profile.h"

static const char *const kind_names[PAMI_XFER_COUNT] = {
    "barrier", "broadcast", "reduce", "allreduce", "allgather", "gather",
    "scatter", "alltoall", "reduce_scatter", "scan", "exscan", "allgatherv",
    "gatherv", "scatterv", "alltoallv"};

static const char *const type_names[PAMI_TYPE_COUNT] = {
    "byte", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float", "double", "long_double"};

static const char *const op_names[PAMI_OP_COUNT + 1] = {
    "sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor",
    "user", "none"};

static int by_name(const char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return (int)i;
    return -1;
}

const char *coll_kind_name(unsigned k)
{
    return k < PAMI_XFER_COUNT ? kind_names[k] : NULL;
}

int coll_kind_by_name(const char *name)
{
    return by_name(kind_names, PAMI_XFER_COUNT, name);
}

const char *coll_type_name(unsigned t)
{
    return t < PAMI_TYPE_COUNT ? type_names[t] : NULL;
}

int coll_type_by_name(const char *name)
{
    return by_name(type_names, PAMI_TYPE_COUNT, name);
}

const char *coll_op_name(unsigned op)
{
    return op <= PAMI_OP_COUNT ? op_names[op] : NULL;
}

int coll_op_by_name(const char *name)
{
    return by_name(op_names, PAMI_OP_COUNT + 1, name);
}

bool coll_kind_reduces(unsigned k)
{
    return k == PAMI_XFER_REDUCE || k == PAMI_XFER_ALLREDUCE ||
           k == PAMI_XFER_REDUCE_SCATTER || k == PAMI_XFER_SCAN ||
           k == PAMI_XFER_EXSCAN;
}

/* ---- reading ---- */

typedef struct {
    char  *why;
    size_t len;
    size_t entry; /* 1-based while in entries, else 0 */
} perr_t;

static bool fail(perr_t *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static bool fail(perr_t *e, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (e->entry > 0)
        snprintf(e->why, e->len, "entry %zu: %s", e->entry, msg);
    else
        snprintf(e->why, e->len, "%s", msg);
    return false;
}

static json_object *field(json_object *o, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* A whole number in lo..hi (json integer; no fraction, no exponent). */
static bool get_uint(perr_t *e, json_object *o, const char *key, uint64_t lo,
                     uint64_t hi, bool required, uint64_t *out)
{
    json_object *v = field(o, key);
    if (v == NULL) {
        if (required)
            return fail(e, "\"%s\" is missing", key);
        return true;
    }
    if (!json_object_is_type(v, json_type_int))
        return fail(e, "\"%s\" is not a whole number", key);
    errno = 0;
    int64_t x = json_object_get_int64(v);
    /* json-c saturates at INT64_MAX (errno may stay 0): any value that
     * large is beyond every hi used here. */
    if (x < 0 || (uint64_t)x < lo || (uint64_t)x > hi)
        return fail(e, "\"%s\" is %lld, not in %llu..%llu", key, (long long)x,
                    (unsigned long long)lo, (unsigned long long)hi);
    *out = (uint64_t)x;
    return true;
}

static bool get_time(perr_t *e, json_object *o, const char *key, double *out)
{
    json_object *v = field(o, key);
    if (v == NULL)
        return fail(e, "\"%s\" is missing", key);
    if (!json_object_is_type(v, json_type_double) &&
        !json_object_is_type(v, json_type_int))
        return fail(e, "\"%s\" is not a number", key);
    double x = json_object_get_double(v);
    if (!isfinite(x) || x < 0 || x > COLL_PROFILE_MAX_US)
        return fail(e, "\"%s\" is %g, not in 0..%g microseconds", key, x,
                    COLL_PROFILE_MAX_US);
    *out = x;
    return true;
}

/* A string of at most cap - 1 bytes, without a NUL inside. */
static bool get_str(perr_t *e, json_object *o, const char *key, char *out,
                    size_t cap, bool required)
{
    json_object *v = field(o, key);
    if (v == NULL) {
        if (required)
            return fail(e, "\"%s\" is missing", key);
        return true;
    }
    if (!json_object_is_type(v, json_type_string))
        return fail(e, "\"%s\" is not a string", key);
    const char *s = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    if (n >= cap || strlen(s) != n)
        return fail(e, "\"%s\" is longer than %zu bytes or holds a NUL", key,
                    cap - 1);
    memcpy(out, s, n + 1);
    return true;
}

static bool get_object(perr_t *e, json_object *o, const char *key,
                       json_object **out)
{
    *out = field(o, key);
    if (*out == NULL)
        return fail(e, "\"%s\" is missing", key);
    if (!json_object_is_type(*out, json_type_object))
        return fail(e, "\"%s\" is not an object", key);
    return true;
}

static bool read_machine(perr_t *e, json_object *top, coll_machine_t *m)
{
    json_object *o;
    uint64_t v;
    if (!get_object(e, top, "machine", &o) ||
        !get_str(e, o, "cpu", m->cpu, sizeof(m->cpu), true) ||
        !get_str(e, o, "ucx", m->ucx, sizeof(m->ucx), false) ||
        !get_str(e, o, "transports", m->transports, sizeof(m->transports),
                 false))
        return false;
    static const char *const keys[] = {"cores", "nodes", "tasks_per_node"};
    uint32_t *dst[] = {&m->cores, &m->nodes, &m->ppn};
    for (size_t i = 0; i < 3; i++) {
        v = 0;
        if (!get_uint(e, o, keys[i], 1, COLL_PROFILE_MAX_TASKS, true, &v))
            return false;
        *dst[i] = (uint32_t)v;
    }
    return true;
}

static bool read_shape(perr_t *e, json_object *o, coll_shape_t *s)
{
    json_object *sh;
    uint64_t size = 0, nodes = 0, ppn = 0;
    char layout[16] = "contiguous";
    if (!get_object(e, o, "shape", &sh) ||
        !get_uint(e, sh, "size", 1, COLL_PROFILE_MAX_TASKS, true, &size) ||
        !get_uint(e, sh, "nodes", 1, COLL_PROFILE_MAX_TASKS, true, &nodes) ||
        !get_uint(e, sh, "tasks_per_node", 1, COLL_PROFILE_MAX_TASKS, true,
                  &ppn) ||
        !get_str(e, sh, "layout", layout, sizeof(layout), false))
        return false;
    if (nodes > size || ppn > size || nodes * ppn < size)
        return fail(e, "shape of %llu tasks on %llu nodes with at most %llu "
                    "per node is impossible", (unsigned long long)size,
                    (unsigned long long)nodes, (unsigned long long)ppn);
    if (strcmp(layout, "contiguous") == 0)
        s->layout = COLL_LAYOUT_CONTIGUOUS;
    else if (strcmp(layout, "strided") == 0)
        s->layout = COLL_LAYOUT_STRIDED;
    else
        return fail(e, "unknown layout \"%s\"", layout);
    s->size  = (uint32_t)size;
    s->nodes = (uint32_t)nodes;
    s->ppn   = (uint32_t)ppn;
    return true;
}

/* A floor in microseconds, optional (0: unknown). */
static bool get_floor(perr_t *e, json_object *o, const char *key, double *out)
{
    *out = 0;
    return field(o, key) == NULL || get_time(e, o, key, out);
}

/* "rounds": optional in format 1 (one round), required in 2. */
static bool read_rounds(perr_t *e, json_object *top, uint32_t version,
                        coll_profile_t *p)
{
    json_object *arr = field(top, "rounds");
    if (arr == NULL)
        return version < 2 ? true : fail(e, "\"rounds\" is missing");
    if (!json_object_is_type(arr, json_type_array))
        return fail(e, "\"rounds\" is not an array");
    size_t n = json_object_array_length(arr);
    if (n == 0 || n > COLL_PROFILE_MAX_ROUNDS)
        return fail(e, "%zu rounds, not in 1..%d", n, COLL_PROFILE_MAX_ROUNDS);
    for (size_t i = 0; i < n; i++) {
        json_object *r = json_object_array_get_idx(arr, i);
        coll_round_t *d = &p->rounds[i];
        if (!json_object_is_type(r, json_type_object))
            return fail(e, "rounds[%zu] is not an object", i);
        if (!get_floor(e, r, "floor_lat_us", &d->floor_us) ||
            !get_floor(e, r, "floor_lat_end_us", &d->floor_end_us) ||
            !get_str(e, r, "started", d->started, sizeof(d->started), false))
            return false;
    }
    p->nrounds = (uint32_t)n;
    return true;
}

static bool read_entry(perr_t *e, json_object *o, uint32_t nrounds,
                       coll_prof_entry_t *pe)
{
    char name[32], type[16] = "byte", op[16] = "none";
    uint64_t bytes = 0, count = 0, round = 0;
    if (!json_object_is_type(o, json_type_object))
        return fail(e, "not an object");
    if (!get_str(e, o, "collective", name, sizeof(name), true))
        return false;
    int k = coll_kind_by_name(name);
    if (k < 0)
        return fail(e, "unknown collective \"%s\"", name);
    pe->kind = (uint8_t)k;
    if (!get_str(e, o, "algorithm", pe->algo, sizeof(pe->algo), true) ||
        !read_shape(e, o, &pe->shape) ||
        !get_str(e, o, "type", type, sizeof(type), false) ||
        !get_str(e, o, "op", op, sizeof(op), false) ||
        !get_uint(e, o, "bytes", 0, COLL_PROFILE_MAX_BYTES, true, &bytes) ||
        !get_uint(e, o, "round", 0, nrounds - 1, false, &round))
        return false;
    pe->round = (uint8_t)round;
    int t = coll_type_by_name(type), p = coll_op_by_name(op);
    if (t < 0)
        return fail(e, "unknown type \"%s\"", type);
    if (p < 0)
        return fail(e, "unknown op \"%s\"", op);
    if (coll_kind_reduces((unsigned)k) != (p != COLL_PROFILE_OP_NONE))
        return fail(e, "op \"%s\" for %s", op, name);
    pe->type  = (uint8_t)t;
    pe->op    = (uint8_t)p;
    pe->bytes = bytes;
    json_object *f = field(o, "failed");
    if (f != NULL) {
        if (!get_str(e, o, "failed", pe->why, sizeof(pe->why), true))
            return false;
        pe->failed = true;
        return true;
    }
    json_object *m;
    if (!get_object(e, o, "metrics", &m) ||
        !get_time(e, m, "median_us", &pe->median_us) ||
        !get_time(e, m, "min_us", &pe->min_us) ||
        !get_time(e, m, "max_us", &pe->max_us) ||
        !get_uint(e, m, "count", 1, UINT32_MAX, true, &count))
        return false;
    if (pe->min_us > pe->median_us || pe->median_us > pe->max_us)
        return fail(e, "metrics do not hold min <= median <= max");
    pe->count = (uint32_t)count;
    json_object *c = field(m, "cpu"); /* optional: files before it lack it */
    if (c != NULL) {
        if (!json_object_is_type(c, json_type_double) &&
            !json_object_is_type(c, json_type_int))
            return fail(e, "\"cpu\" is not a number");
        pe->cpu = json_object_get_double(c);
        if (!isfinite(pe->cpu) || pe->cpu < 0 || pe->cpu > 1)
            return fail(e, "\"cpu\" is %g, not in 0..1", pe->cpu);
    }
    return true;
}

/* Entries sorted by key find duplicates in n log n. */
static int key_cmp(const void *a, const void *b)
{
    const coll_prof_entry_t *x = a, *y = b;
#define CMP_(f) if (x->f != y->f) return x->f < y->f ? -1 : 1
    CMP_(kind);
    int c = strcmp(x->algo, y->algo);
    if (c != 0)
        return c;
    CMP_(shape.size);
    CMP_(shape.nodes);
    CMP_(shape.ppn);
    CMP_(shape.layout);
    CMP_(type);
    CMP_(op);
    CMP_(bytes);
    CMP_(round);
#undef CMP_
    return 0;
}

static bool same_key(const coll_prof_entry_t *x, const coll_prof_entry_t *y)
{
    return key_cmp(x, y) == 0;
}

bool coll_profile_add(coll_profile_t *p, const coll_prof_entry_t *e)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        if (cap > COLL_PROFILE_MAX_ENTRIES)
            cap = COLL_PROFILE_MAX_ENTRIES;
        if (cap <= p->n)
            return false;
        coll_prof_entry_t *ne = realloc(p->e, cap * sizeof(*ne));
        if (ne == NULL)
            return false;
        p->e   = ne;
        p->cap = cap;
    }
    p->e[p->n++] = *e;
    return true;
}

coll_prof_entry_t *coll_profile_find(coll_profile_t *p,
                                     const coll_prof_entry_t *e)
{
    for (size_t i = 0; i < p->n; i++)
        if (same_key(&p->e[i], e))
            return &p->e[i];
    return NULL;
}

uint32_t coll_profile_rounds(const coll_profile_t *p)
{
    return p->nrounds > 0 ? p->nrounds : 1;
}

bool coll_profile_add_rounds(coll_profile_t *dst, const coll_profile_t *src)
{
    uint32_t base = dst->n > 0 || dst->nrounds > 0 ? coll_profile_rounds(dst)
                                                   : 0;
    uint32_t add = coll_profile_rounds(src);
    if (base + add > COLL_PROFILE_MAX_ROUNDS)
        return false;
    for (uint32_t i = 0; i < add; i++)
        dst->rounds[base + i] = i < src->nrounds ? src->rounds[i]
                                                 : (coll_round_t){0};
    dst->nrounds = base + add;
    for (size_t i = 0; i < src->n; i++) {
        coll_prof_entry_t e = src->e[i];
        e.round = (uint8_t)(e.round + base);
        if (!coll_profile_add(dst, &e))
            return false;
    }
    return true;
}

bool coll_profile_merge(coll_profile_t *dst, const coll_profile_t *src)
{
    /* Round k of src is round k of dst: one-round files merge as before
     * rounds existed; a round src records describes the round. */
    for (uint32_t i = 0; i < src->nrounds; i++)
        dst->rounds[i] = src->rounds[i];
    if (src->nrounds > dst->nrounds)
        dst->nrounds = src->nrounds;
    for (size_t i = 0; i < src->n; i++) {
        coll_prof_entry_t *old = coll_profile_find(dst, &src->e[i]);
        if (old != NULL)
            *old = src->e[i];
        else if (!coll_profile_add(dst, &src->e[i]))
            return false;
    }
    return true;
}

void coll_profile_free(coll_profile_t *p)
{
    free(p->e);
    memset(p, 0, sizeof(*p));
}

static bool parse_top(perr_t *e, json_object *top, coll_profile_known_fn known,
                      coll_profile_t *p, size_t *skipped, char *skip_why,
                      size_t skip_len)
{
    uint64_t v = 0;
    if (!json_object_is_type(top, json_type_object))
        return fail(e, "the top level is not an object");
    if (!get_uint(e, top, "format_version", 1, UINT32_MAX, true, &v))
        return false;
    if (v > COLL_PROFILE_FORMAT)
        return fail(e, "format_version %llu; this pami reads 1..%d",
                    (unsigned long long)v, COLL_PROFILE_FORMAT);
    p->format_version = (uint32_t)v;
    if (!get_str(e, top, "producer", p->producer, sizeof(p->producer), true) ||
        !read_machine(e, top, &p->machine) ||
        !read_rounds(e, top, p->format_version, p))
        return false;
    json_object *arr = field(top, "entries");
    if (arr == NULL)
        return fail(e, "\"entries\" is missing");
    if (!json_object_is_type(arr, json_type_array))
        return fail(e, "\"entries\" is not an array");
    size_t n = json_object_array_length(arr);
    if (n > COLL_PROFILE_MAX_ENTRIES)
        return fail(e, "%zu entries, more than %d", n,
                    COLL_PROFILE_MAX_ENTRIES);
    for (size_t i = 0; i < n; i++) {
        coll_prof_entry_t pe;
        memset(&pe, 0, sizeof(pe));
        e->entry = i + 1;
        if (!read_entry(e, json_object_array_get_idx(arr, i),
                        coll_profile_rounds(p), &pe))
            return false;
        if (known != NULL && !known(pe.algo, pe.kind)) {
            if (*skipped == 0 && skip_why != NULL)
                snprintf(skip_why, skip_len,
                         "entry %zu: unknown %s algorithm \"%s\"", i + 1,
                         kind_names[pe.kind], pe.algo);
            ++*skipped;
            continue;
        }
        if (!coll_profile_add(p, &pe))
            return fail(e, "out of memory");
    }
    e->entry = 0;
    /* Duplicates: sort a copy of the keys. */
    if (p->n > 1) {
        coll_prof_entry_t *s = malloc(p->n * sizeof(*s));
        if (s == NULL)
            return fail(e, "out of memory");
        memcpy(s, p->e, p->n * sizeof(*s));
        qsort(s, p->n, sizeof(*s), key_cmp);
        for (size_t i = 1; i < p->n; i++)
            if (same_key(&s[i - 1], &s[i])) {
                fail(e, "two entries for %s %s at %llu bytes on %u tasks "
                     "(%s, %s, round %u)", kind_names[s[i].kind], s[i].algo,
                     (unsigned long long)s[i].bytes, s[i].shape.size,
                     type_names[s[i].type], op_names[s[i].op], s[i].round);
                free(s);
                return false;
            }
        free(s);
    }
    return true;
}

bool coll_profile_parse(const char *buf, size_t len, coll_profile_known_fn known,
                        coll_profile_t *p, size_t *skipped, char *skip_why,
                        size_t skip_len, char *why, size_t why_len)
{
    char dummy[8];
    size_t skip0 = 0;
    perr_t e = {.why = why ? why : dummy, .len = why ? why_len : sizeof(dummy)};
    memset(p, 0, sizeof(*p));
    if (skipped == NULL)
        skipped = &skip0;
    *skipped = 0;
    if (buf == NULL || len == 0)
        return fail(&e, "empty file");
    if (len > INT32_MAX)
        return fail(&e, "larger than 2 GiB");
    if (memchr(buf, '\0', len) != NULL)
        return fail(&e, "not text (holds a NUL byte)");
    json_tokener *tok = json_tokener_new();
    if (tok == NULL)
        return fail(&e, "out of memory");
    json_object *top = json_tokener_parse_ex(tok, buf, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    bool ok;
    if (top == NULL) {
        ok = fail(&e, "not JSON: %s at byte %zu",
                  jerr == json_tokener_continue
                      ? "truncated" : json_tokener_error_desc(jerr), used);
    } else {
        while (used < len && (buf[used] == ' ' || buf[used] == '\n' ||
                              buf[used] == '\t' || buf[used] == '\r'))
            used++;
        ok = used == len
                 ? parse_top(&e, top, known, p, skipped, skip_why, skip_len)
                 : fail(&e, "text after the JSON value at byte %zu", used);
        json_object_put(top);
    }
    if (!ok)
        coll_profile_free(p);
    return ok;
}

bool coll_profile_load(const char *path, coll_profile_known_fn known,
                       coll_profile_t *p, size_t *skipped, char *skip_why,
                       size_t skip_len, char *why, size_t why_len)
{
    memset(p, 0, sizeof(*p));
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(why, why_len, "cannot be read: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > ((off_t)256 << 20)) {
        snprintf(why, why_len, "%s", S_ISDIR(st.st_mode)
                 ? "is a directory" : !S_ISREG(st.st_mode)
                 ? "is not a regular file" : "is larger than 256 MiB");
        close(fd);
        return false;
    }
    size_t len = (size_t)st.st_size;
    char *buf = malloc(len + 1);
    size_t got = 0;
    while (buf != NULL && got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (buf == NULL || got != len) {
        snprintf(why, why_len, "cannot be read: %s",
                 buf == NULL ? "out of memory" : "short read");
        free(buf);
        return false;
    }
    bool ok = coll_profile_parse(buf, len, known, p, skipped, skip_why,
                                 skip_len, why, why_len);
    free(buf);
    return ok;
}

/* ---- writing ---- */

static json_object *entry_json(const coll_prof_entry_t *e)
{
    json_object *o = json_object_new_object(), *sh = json_object_new_object();
    json_object_object_add(o, "collective",
                           json_object_new_string(kind_names[e->kind]));
    json_object_object_add(o, "algorithm", json_object_new_string(e->algo));
    json_object_object_add(sh, "size", json_object_new_int64(e->shape.size));
    json_object_object_add(sh, "nodes", json_object_new_int64(e->shape.nodes));
    json_object_object_add(sh, "tasks_per_node",
                           json_object_new_int64(e->shape.ppn));
    json_object_object_add(sh, "layout", json_object_new_string(
        e->shape.layout == COLL_LAYOUT_STRIDED ? "strided" : "contiguous"));
    json_object_object_add(o, "shape", sh);
    json_object_object_add(o, "type",
                           json_object_new_string(type_names[e->type]));
    json_object_object_add(o, "op", json_object_new_string(op_names[e->op]));
    json_object_object_add(o, "bytes", json_object_new_int64((int64_t)e->bytes));
    if (e->round > 0)
        json_object_object_add(o, "round", json_object_new_int64(e->round));
    if (e->failed) {
        json_object_object_add(o, "failed", json_object_new_string(e->why));
    } else {
        json_object *m = json_object_new_object();
        json_object_object_add(m, "median_us",
                               json_object_new_double(e->median_us));
        json_object_object_add(m, "min_us", json_object_new_double(e->min_us));
        json_object_object_add(m, "max_us", json_object_new_double(e->max_us));
        json_object_object_add(m, "count", json_object_new_int64(e->count));
        if (e->cpu > 0)
            json_object_object_add(m, "cpu", json_object_new_double(e->cpu));
        json_object_object_add(o, "metrics", m);
    }
    return o;
}

/* n rounds: those recorded, unknown ones after them. */
static json_object *rounds_json(const coll_profile_t *p, uint32_t n)
{
    json_object *a = json_object_new_array();
    for (uint32_t i = 0; i < n; i++) {
        coll_round_t none = {0};
        const coll_round_t *r = i < p->nrounds ? &p->rounds[i] : &none;
        json_object *o = json_object_new_object();
        if (r->floor_us > 0)
            json_object_object_add(o, "floor_lat_us",
                                   json_object_new_double(r->floor_us));
        if (r->floor_end_us > 0)
            json_object_object_add(o, "floor_lat_end_us",
                                   json_object_new_double(r->floor_end_us));
        if (r->started[0] != '\0')
            json_object_object_add(o, "started",
                                   json_object_new_string(r->started));
        json_object_array_add(a, o);
    }
    return a;
}

int coll_profile_write(const coll_profile_t *p, FILE *f)
{
    /* 1 while every entry is of round 0, so that older readers load it
     * ("rounds" is a field they ignore). */
    int version = 1;
    uint32_t nr = p->nrounds;
    for (size_t i = 0; i < p->n; i++) {
        if (p->e[i].round > 0)
            version = 2;
        if (p->e[i].round >= nr)
            nr = p->e[i].round + 1u;
    }
    json_object *prod = json_object_new_string(p->producer);
    json_object *m = json_object_new_object();
    json_object_object_add(m, "cpu", json_object_new_string(p->machine.cpu));
    json_object_object_add(m, "cores", json_object_new_int64(p->machine.cores));
    json_object_object_add(m, "nodes", json_object_new_int64(p->machine.nodes));
    json_object_object_add(m, "tasks_per_node",
                           json_object_new_int64(p->machine.ppn));
    json_object_object_add(m, "ucx", json_object_new_string(p->machine.ucx));
    json_object_object_add(m, "transports",
                           json_object_new_string(p->machine.transports));
    fprintf(f, "{\n  \"format_version\": %d,\n  \"producer\": %s,\n"
            "  \"machine\": %s,\n", version,
            json_object_to_json_string_ext(prod, JSON_C_TO_STRING_PLAIN),
            json_object_to_json_string_ext(m, JSON_C_TO_STRING_SPACED));
    json_object_put(prod);
    json_object_put(m);
    if (p->nrounds > 0 || version > 1) {
        json_object *r = rounds_json(p, nr);
        fprintf(f, "  \"rounds\": %s,\n",
                json_object_to_json_string_ext(r, JSON_C_TO_STRING_SPACED));
        json_object_put(r);
    }
    fprintf(f, "  \"entries\": [");
    for (size_t i = 0; i < p->n; i++) {
        json_object *o = entry_json(&p->e[i]);
        fprintf(f, "%s\n    %s", i ? "," : "",
                json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
    }
    fprintf(f, "\n  ]\n}\n");
    return ferror(f) ? -1 : 0;
}

int coll_profile_save(const coll_profile_t *p, const char *path)
{
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    if (tmp == NULL)
        return -1;
    snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    int rc = f == NULL ? -1 : coll_profile_write(p, f);
    if (f != NULL && fclose(f) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc != 0)
        unlink(tmp);
    free(tmp);
    return rc;
}

/* ---- this machine ---- */

void coll_machine_local(coll_machine_t *m)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->cpu, sizeof(m->cpu), "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *c = strchr(line, ':');
        if (c == NULL)
            break;
        c++;
        while (*c == ' ' || *c == '\t')
            c++;
        snprintf(m->cpu, sizeof(m->cpu), "%s", c);
        m->cpu[strcspn(m->cpu, "\n")] = '\0';
        break;
    }
    if (f != NULL)
        fclose(f);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    m->cores = n > 0 ? (uint32_t)n : 1;
    m->nodes = m->ppn = 1;
}
