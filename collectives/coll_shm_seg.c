/*
 * The shared-memory collectives' own protocol ("coll_shm": per-context
 * state, counters, PAMI_COLL_SHM_SLOT; no dispatch ids, no messages) and
 * the node's segment: its name, creation by the node's lowest task,
 * attachment by the others, the checks of its header, and its removal.
 * The set-up order (create, barrier, attach, barrier, unlink) is driven
 * by coll_alg_shm.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coll_shm.h"

#define SLOT_DEFAULT "262144"
#define SLOT_MIN     64
#define SLOT_MAX     ((size_t)1 << 30)

static const pami_config_var_t cshm_config[] = {
    {"PAMI_COLL_SHM_SLOT", SLOT_DEFAULT,
     "bytes of one slot of the shared-memory collectives' segment (each "
     "task of the node has two); larger messages go in rounds of a slot; "
     "64..2^30, rounded down to a multiple of 64; the same on every task "
     "of a node"},
    {"PAMI_COLL_SHM_AUTO", "1",
     "1: PAMI_ALGORITHM_AUTO picks the shared-memory collectives on a "
     "geometry of this node's tasks; 0: only when named (the same on every "
     "task of a node)"},
};

static const pami_protocol_ops_t cshm_ops;

static bool read_auto(void)
{
    const char *text = getenv("PAMI_COLL_SHM_AUTO");
    if (text == NULL || *text == '\0' || strcmp(text, "1") == 0)
        return true;
    if (strcmp(text, "0") != 0)
        cshm_log(PAMI_PROTOCOL_LOG_WARN, "PAMI_COLL_SHM_AUTO='%s' is not 0 "
                 "or 1; using 1", text);
    return strcmp(text, "0") != 0;
}

cshm_t *cshm_of(pami_context_t ctx)
{
    return pami_protocol_state(ctx, &cshm_ops);
}

static size_t read_slot(void)
{
    const char *text = getenv("PAMI_COLL_SHM_SLOT");
    size_t      v    = strtoull(SLOT_DEFAULT, NULL, 10);
    if (text != NULL && *text != '\0') {
        char *end = NULL;
        errno = 0;
        unsigned long long x = strtoull(text, &end, 10);
        if (errno != 0 || *end != '\0' || text[0] == '-' || x < SLOT_MIN ||
            x > SLOT_MAX)
            cshm_log(PAMI_PROTOCOL_LOG_WARN, "PAMI_COLL_SHM_SLOT='%s' is not "
                     "in %d..%zu; using %s", text, SLOT_MIN, SLOT_MAX,
                     SLOT_DEFAULT);
        else
            v = (size_t)x;
    }
    return v / 64 * 64;
}

/* As the shm barrier names its objects: only [A-Za-z0-9._-] of the job
 * id survive, so pamirun's clean-up of "pami-<job>*" finds them. */
static void sanitize(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src[i] != '\0' && i + 1 < cap; i++) {
        char c  = src[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        dst[i] = ok ? c : '_';
    }
    dst[i] = '\0';
}

static uint64_t hash(const char *str)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *str; str++)
        h = (h ^ (uint8_t)*str) * 0x100000001b3ull;
    return h;
}

static pami_result_t cshm_init(const pami_protocol_env_t *env, void **state)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                          PAMI_CLIENT_ATTR_LOCAL_TASKS |
                                          PAMI_CLIENT_ATTR_JOB_ID |
                                          PAMI_CLIENT_ATTR_LOCAL_CPUS};
    pami_result_t rc = pami_client_query(env->client, &a);
    if (rc != PAMI_SUCCESS)
        return rc;
    cshm_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return PAMI_ENOMEM;
    s->idx = calloc(a.num_local_tasks ? a.num_local_tasks : 1,
                    sizeof(*s->idx));
    if (s->idx == NULL) {
        free(s);
        return PAMI_ENOMEM;
    }
    s->ctx    = env->context;
    s->me     = a.task;
    s->local  = a.local_tasks;
    s->nlocal = a.num_local_tasks;
    s->offset = env->context_offset;
    s->ncpus  = a.num_local_cpus;
    for (size_t i = 0; i < s->nlocal; i++)
        if (s->local[i] == s->me)
            s->my_index = i;
    const char *job = a.job_id != NULL ? a.job_id : "nojob";
    sanitize(s->job_id, sizeof(s->job_id), job);
    s->job_hash = hash(job);
    s->slot     = read_slot();
    s->auto_ok  = read_auto();
    s->hdr_bytes = (CSHM_CTL_OFF + 2 * s->nlocal * CSHM_LINE + 4095) / 4096 *
                   4096;
    s->seg_bytes = s->hdr_bytes + 2 * s->nlocal * s->slot;
    snprintf(s->name, sizeof(s->name), "/pami-%s-collshm-%" PRIu32 "-%zu",
             s->job_id, s->nlocal > 0 ? s->local[0] : s->me, s->offset);
    *state = s;
    return PAMI_SUCCESS;
}

static pami_result_t map(cshm_t *s, int fd)
{
    void *p = mmap(NULL, s->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                   fd, 0);
    if (p == MAP_FAILED) {
        cshm_log(PAMI_PROTOCOL_LOG_ERROR, "mmap of %s (%zu bytes): %s",
                 s->name, s->seg_bytes, strerror(errno));
        return PAMI_ERROR;
    }
    s->seg = p;
    return PAMI_SUCCESS;
}

/* Leader. A name taken already can only be left by an earlier context of
 * this offset in this job that died in its set-up: replaced. */
pami_result_t cshm_seg_create(cshm_t *s)
{
    int fd = shm_open(s->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {
        cshm_log(PAMI_PROTOCOL_LOG_WARN, "%s exists (left by an earlier "
                 "context of this job): replacing it", s->name);
        shm_unlink(s->name);
        fd = shm_open(s->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    if (fd < 0) {
        cshm_log(PAMI_PROTOCOL_LOG_ERROR, "cannot create %s: %s", s->name,
                 strerror(errno));
        return PAMI_ERROR;
    }
    s->named = true;
    pami_result_t rc = PAMI_ERROR;
    if (ftruncate(fd, (off_t)s->seg_bytes) != 0)
        cshm_log(PAMI_PROTOCOL_LOG_ERROR, "cannot size %s to %zu bytes: %s",
                 s->name, s->seg_bytes, strerror(errno));
    else
        rc = map(s, fd);
    close(fd);
    if (rc != PAMI_SUCCESS)
        return rc;
    cshm_hdr_t *h = (cshm_hdr_t *)s->seg; /* zero-filled by ftruncate */
    h->version   = CSHM_VERSION;
    h->nlocal    = (uint32_t)s->nlocal;
    h->slot      = s->slot;
    h->hdr_bytes = s->hdr_bytes;
    h->job_hash  = s->job_hash;
    h->magic     = CSHM_MAGIC;
    atomic_store(&h->attached, 1);
    return PAMI_SUCCESS;
}

/* Follower, after the leader's barrier: maps the segment and counts
 * itself in only when the header says what this task expects. */
pami_result_t cshm_seg_attach(cshm_t *s)
{
    int fd = shm_open(s->name, O_RDWR, 0);
    if (fd < 0) {
        cshm_log(PAMI_PROTOCOL_LOG_ERROR, "cannot open %s: %s", s->name,
                 strerror(errno));
        return PAMI_ERROR;
    }
    struct stat sb;
    pami_result_t rc = PAMI_ERROR;
    if (fstat(fd, &sb) != 0 || (size_t)sb.st_size < s->seg_bytes)
        cshm_log(PAMI_PROTOCOL_LOG_ERROR, "%s has %lld bytes, expected %zu "
                 "(PAMI_COLL_SHM_SLOT differs between tasks?)", s->name,
                 (long long)sb.st_size, s->seg_bytes);
    else
        rc = map(s, fd);
    close(fd);
    if (rc != PAMI_SUCCESS)
        return rc;
    const cshm_hdr_t *h = (const cshm_hdr_t *)s->seg;
    if (h->magic != CSHM_MAGIC || h->version != CSHM_VERSION ||
        h->nlocal != s->nlocal || h->slot != s->slot ||
        h->hdr_bytes != s->hdr_bytes || h->job_hash != s->job_hash) {
        cshm_log(PAMI_PROTOCOL_LOG_ERROR, "%s: header differs (version %u, "
                 "%u tasks, slot %llu; here %d, %zu, %zu)", s->name,
                 h->version, h->nlocal, (unsigned long long)h->slot,
                 CSHM_VERSION, s->nlocal, s->slot);
        cshm_seg_release(s);
        return PAMI_ERROR;
    }
    atomic_fetch_add(&((cshm_hdr_t *)s->seg)->attached, 1);
    return PAMI_SUCCESS;
}

/* After the second barrier: the leader removes the name (the mappings
 * stay); everyone reads the same count, so all agree on the outcome. */
bool cshm_seg_finish(cshm_t *s)
{
    if (s->named) {
        shm_unlink(s->name);
        s->named = false;
    }
    return s->seg != NULL &&
           atomic_load(&((cshm_hdr_t *)s->seg)->attached) == s->nlocal;
}

void cshm_seg_release(cshm_t *s)
{
    if (s->named) {
        shm_unlink(s->name);
        s->named = false;
    }
    if (s->seg != NULL)
        munmap(s->seg, s->seg_bytes);
    s->seg = NULL;
}

/* Entries still queued belong to requests the collectives protocol has
 * finished already (it ends before this one): they are only dropped. */
static void cshm_fini(pami_context_t context, void *state)
{
    (void)context;
    cshm_t *s = state;
    cshm_seg_release(s);
    free(s->q);
    free(s->idx);
    free(s);
}

static size_t cshm_stats(void *state, pami_protocol_stat_t *out, size_t max)
{
    static const char *const names[CSHM_NUM_STATS] = {
        "ops", "register_barriers", "rounds", "barriers", "queued",
        "queue_high_water", "mismatches", "failed", "setups", "inline"};
    cshm_t *s = state;
    for (size_t i = 0; i < CSHM_NUM_STATS && i < max; i++)
        out[i] = (pami_protocol_stat_t){.name = names[i],
                                        .value = s->stats[i]};
    return CSHM_NUM_STATS;
}

static const pami_protocol_ops_t cshm_ops = {
    .name       = "coll_shm",
    .version    = CSHM_VERSION,
    .init       = cshm_init,
    .fini       = cshm_fini,
    .stats      = cshm_stats,
    .config     = cshm_config,
    .num_config = sizeof(cshm_config) / sizeof(cshm_config[0]),
};

PAMI_PROTOCOL_BUILTIN(cshm_ops)
