/*
 * The shared objects: their names, creation by the leader, attachment by
 * the followers, and the checks of everything read from them before use.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm_internal.h"

void shmb_names(shmb_state_t *st, pami_task_t leader)
{
    snprintf(st->region_name, sizeof(st->region_name),
             "/pami-%s-shmbar-%" PRIu32 "-%zu", st->job_id, leader,
             st->offset);
}

void shmb_reg_name(shmb_state_t *st, uint64_t reg_id)
{
    snprintf(st->reg_name, sizeof(st->reg_name), "%s-reg-%016" PRIx64,
             st->region_name, reg_id);
}

static pami_result_t map_fd(shmb_state_t *st, int fd, size_t bytes,
                            const char *name, void **out)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, SHMB_SUBSYS,
                          "mmap of %s (%zu bytes): %s", name, bytes,
                          strerror(errno));
        return PAMI_ERROR;
    }
    (void)st;
    *out = p;
    return PAMI_SUCCESS;
}

/* Leader: a region another task might find, header first, magic last. A
 * name taken already is ours to replace only when it is a region of this
 * job its leader closed; anything else is refused. */
pami_result_t shmb_region_create(shmb_state_t *st)
{
    size_t bytes = SHMB_REGION_BYTES(st->nlocal);
    int    fd    = shm_open(st->region_name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {
        pami_result_t rc = shmb_region_open(st);
        bool stale = rc == PAMI_SUCCESS &&
                     atomic_load(&st->region->state) == SHMB_REGION_CLOSED;
        shmb_objects_unmap(st);
        if (!stale) {
            shmb_count(st, SHMB_STAT_bad_region);
            pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                              "%s exists and is not a closed region of this "
                              "job: not replacing it", st->region_name);
            return PAMI_ERROR;
        }
        shm_unlink(st->region_name);
        fd = shm_open(st->region_name, O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    if (fd < 0) {
        pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, SHMB_SUBSYS,
                          "cannot create %s: %s", st->region_name,
                          strerror(errno));
        return PAMI_ERROR;
    }
    st->region_named = true;
    void *p = NULL;
    pami_result_t rc = PAMI_ERROR;
    if (ftruncate(fd, (off_t)bytes) != 0)
        pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, SHMB_SUBSYS,
                          "cannot size %s to %zu bytes: %s", st->region_name,
                          bytes, strerror(errno));
    else
        rc = map_fd(st, fd, bytes, st->region_name, &p);
    close(fd);
    if (rc != PAMI_SUCCESS)
        return rc;

    shmb_region_t *r = p; /* zero-filled by ftruncate */
    r->version    = SHMB_VERSION;
    r->bytes      = (uint32_t)bytes;
    r->job_hash   = st->job_hash;
    r->ntasks     = (uint32_t)st->nlocal;
    r->leader     = st->me;
    r->offset     = (uint32_t)st->offset;
    r->leader_pid = (uint32_t)getpid();
    atomic_store(&r->pid[st->my_index], (uint32_t)getpid());
    atomic_store(&r->attached, 1);
    atomic_store(&r->state, SHMB_REGION_CREATED);
    __atomic_store_n(&r->magic, SHMB_REGION_MAGIC, __ATOMIC_RELEASE);
    st->region       = r;
    st->region_bytes = bytes;
    return PAMI_SUCCESS;
}

static pami_result_t bad_region(shmb_state_t *st, const char *what,
                                uint64_t got, uint64_t want)
{
    shmb_count(st, SHMB_STAT_bad_region);
    pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                      "%s: %s is %" PRIu64 ", expected %" PRIu64
                      "; not attaching", st->region_name, what, got, want);
    return PAMI_ERROR;
}

/* Checks every field a follower relies on; nothing is used before. */
static pami_result_t region_check(shmb_state_t *st, const shmb_region_t *r,
                                  size_t file_bytes)
{
    if (r->magic != SHMB_REGION_MAGIC)
        return bad_region(st, "magic", r->magic, SHMB_REGION_MAGIC);
    if (r->version != SHMB_VERSION)
        return bad_region(st, "version", r->version, SHMB_VERSION);
    if (r->job_hash != st->job_hash)
        return bad_region(st, "job hash (another job's region)", r->job_hash,
                          st->job_hash);
    if (r->ntasks != st->nlocal)
        return bad_region(st, "task count", r->ntasks, st->nlocal);
    if (r->bytes != st->region_bytes || file_bytes != st->region_bytes)
        return bad_region(st, "size", file_bytes, st->region_bytes);
    if (r->leader != st->local[0])
        return bad_region(st, "leader", r->leader, st->local[0]);
    if (r->offset != st->offset)
        return bad_region(st, "context offset", r->offset, st->offset);
    uint32_t s = atomic_load(&r->state);
    if (s < SHMB_REGION_CREATED || s > SHMB_REGION_DEAD)
        return bad_region(st, "state", s, SHMB_REGION_PUBLISHED);
    uint32_t a = atomic_load(&r->attached);
    if (a < 1 || a > st->nlocal)
        return bad_region(st, "attached count", a, st->nlocal);
    return PAMI_SUCCESS;
}

pami_result_t shmb_region_open(shmb_state_t *st)
{
    int fd = shm_open(st->region_name, O_RDWR, 0);
    if (fd < 0) {
        if (errno == ENOENT)
            return PAMI_EAGAIN;
        pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, SHMB_SUBSYS,
                          "cannot open %s: %s", st->region_name,
                          strerror(errno));
        return PAMI_ERROR;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || sb.st_size == 0) {
        close(fd); /* created, not sized yet */
        return PAMI_EAGAIN;
    }
    if (sb.st_uid != geteuid() || (sb.st_mode & 077) != 0) {
        close(fd);
        shmb_count(st, SHMB_STAT_bad_region);
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                          "%s belongs to uid %u with mode %o: not ours",
                          st->region_name, (unsigned)sb.st_uid,
                          (unsigned)(sb.st_mode & 0777));
        return PAMI_ERROR;
    }
    st->region_bytes = SHMB_REGION_BYTES(st->nlocal);
    if ((size_t)sb.st_size < sizeof(shmb_region_t)) {
        close(fd);
        return bad_region(st, "size", (uint64_t)sb.st_size,
                          st->region_bytes);
    }
    /* Map what the file holds, never more: reading past it faults. */
    size_t map_bytes = (size_t)sb.st_size < st->region_bytes
                           ? (size_t)sb.st_size : st->region_bytes;
    void *p = NULL;
    pami_result_t rc = map_fd(st, fd, map_bytes, st->region_name, &p);
    close(fd);
    if (rc != PAMI_SUCCESS)
        return rc;
    shmb_region_t *r = p;
    if (__atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) == 0) {
        munmap(p, map_bytes); /* the leader is still writing it */
        return PAMI_EAGAIN;
    }
    rc = region_check(st, r, (size_t)sb.st_size);
    if (rc != PAMI_SUCCESS) {
        munmap(p, map_bytes);
        return rc;
    }
    st->region = r;
    return PAMI_SUCCESS;
}

pami_result_t shmb_reg_create(shmb_state_t *st, uint64_t reg_id)
{
    shmb_reg_name(st, reg_id);
    int fd = shm_open(st->reg_name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, SHMB_SUBSYS,
                          "cannot create %s: %s", st->reg_name,
                          strerror(errno));
        return PAMI_ERROR;
    }
    st->reg_named = true;
    st->reg_bytes = SHMB_REG_BYTES(st->nlocal);
    void *p = NULL;
    pami_result_t rc = PAMI_ERROR;
    if (ftruncate(fd, (off_t)st->reg_bytes) != 0)
        pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, SHMB_SUBSYS,
                          "cannot size %s: %s", st->reg_name, strerror(errno));
    else
        rc = map_fd(st, fd, st->reg_bytes, st->reg_name, &p);
    close(fd);
    if (rc != PAMI_SUCCESS)
        return rc;
    shmb_register_t *g = p;
    g->version  = SHMB_VERSION;
    g->ntasks   = (uint32_t)st->nlocal;
    g->reg_id   = reg_id;
    g->job_hash = st->job_hash;
    g->bytes    = (uint32_t)st->reg_bytes;
    __atomic_store_n(&g->magic, SHMB_REG_MAGIC, __ATOMIC_RELEASE);
    st->reg = g;
    return PAMI_SUCCESS;
}

static pami_result_t bad_reg(shmb_state_t *st, const char *what,
                             uint64_t got, uint64_t want)
{
    shmb_count(st, SHMB_STAT_bad_register);
    pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                      "%s: %s is %" PRIu64 ", expected %" PRIu64
                      "; not attaching", st->reg_name, what, got, want);
    return PAMI_ERROR;
}

pami_result_t shmb_reg_open(shmb_state_t *st, uint64_t reg_id)
{
    shmb_reg_name(st, reg_id);
    int fd = shm_open(st->reg_name, O_RDWR, 0);
    if (fd < 0) {
        shmb_count(st, SHMB_STAT_bad_register);
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                          "the region names register %016" PRIx64
                          " but %s cannot be opened: %s", reg_id,
                          st->reg_name, strerror(errno));
        return PAMI_ERROR;
    }
    /* Exactly the size its task count gives, so every slot is inside. */
    st->reg_bytes = SHMB_REG_BYTES(st->nlocal);
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (size_t)sb.st_size != st->reg_bytes ||
        sb.st_uid != geteuid() || (sb.st_mode & 077) != 0) {
        close(fd);
        return bad_reg(st, "size", (uint64_t)sb.st_size, st->reg_bytes);
    }
    void *p = NULL;
    pami_result_t rc = map_fd(st, fd, st->reg_bytes, st->reg_name, &p);
    close(fd);
    if (rc != PAMI_SUCCESS)
        return rc;
    shmb_register_t *g = p;
    uint64_t magic = __atomic_load_n(&g->magic, __ATOMIC_ACQUIRE);
    if (magic != SHMB_REG_MAGIC)
        rc = bad_reg(st, "magic", magic, SHMB_REG_MAGIC);
    else if (g->version != SHMB_VERSION)
        rc = bad_reg(st, "version", g->version, SHMB_VERSION);
    else if (g->ntasks != st->nlocal)
        rc = bad_reg(st, "task count", g->ntasks, st->nlocal);
    else if (g->reg_id != reg_id)
        rc = bad_reg(st, "id", g->reg_id, reg_id);
    else if (g->job_hash != st->job_hash)
        rc = bad_reg(st, "job hash", g->job_hash, st->job_hash);
    else if (g->bytes != st->reg_bytes)
        rc = bad_reg(st, "size field", g->bytes, st->reg_bytes);
    if (rc != PAMI_SUCCESS) {
        munmap(p, st->reg_bytes);
        return rc;
    }
    st->reg = g;
    return PAMI_SUCCESS;
}

/* The leader drops the names once every task is attached (or at fini):
 * from then on a crash leaves nothing in /dev/shm. */
void shmb_objects_unlink(shmb_state_t *st)
{
    if (st->reg_named && shm_unlink(st->reg_name) != 0 && errno != ENOENT)
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                          "cannot remove %s: %s", st->reg_name,
                          strerror(errno));
    st->reg_named = false;
    if (st->region_named && shm_unlink(st->region_name) != 0 &&
        errno != ENOENT)
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                          "cannot remove %s: %s", st->region_name,
                          strerror(errno));
    st->region_named = false;
}

void shmb_objects_unmap(shmb_state_t *st)
{
    if (st->reg != NULL)
        munmap(st->reg, st->reg_bytes);
    st->reg = NULL;
    if (st->region != NULL)
        munmap(st->region, st->region_bytes);
    st->region = NULL;
}
