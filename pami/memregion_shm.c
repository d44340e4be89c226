/*
 * Regions over memory the tasks of a node share. pami_memregion_alloc
 * makes a POSIX shared segment of pami's and registers it as any region;
 * pami_memregion_map gives a region's address in this process, mapping a
 * node peer's segment once per context. A segment's name is built only
 * from the sealed fields of the handle, the job's id and the owner's
 * secret, so no handle can make a task open anything but pami's own
 * segments of this job (docs/protocols/rma.md, "Shared regions").
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

#include "internal.h"
#include "siphash.h"

/* "/pami-<job>-mr-<task>-<ctx>-<id>-<generation>-<tag>" for shm_open,
 * whose prefix pamirun removes after the job whatever way it ended; or,
 * when the launcher removes the job's directory instead (PMIx),
 * "<job_dir>/mr-<task>-<ctx>-<id>-<generation>-<tag>". */
#define SHM_NAME_MAX 256

/* The tag keeps two clients of one process (same task, other secrets)
 * apart and makes the name unguessable outside the job. */
static void shm_name(pami_client_impl_t *c, uint32_t task, uint32_t octx,
                     uint32_t id, uint32_t gen, bool in_dir, char *out)
{
    uint32_t what[6] = {0x2d6d6873u /* "shm-" */, task, octx, id, gen, 0};
    uint64_t tag = pami_siphash24(c->secrets + (size_t)task *
                                                   PAMI_SIPHASH_KEY_LEN,
                                  what, sizeof(what));
    if (in_dir) {
        /* The owner's directory: every task of the node names it alike
         * (job_dir.c), also one whose own registration failed. */
        char dir[sizeof(c->job_dir)];
        if (c->job_dir[0] != '\0')
            snprintf(dir, sizeof(dir), "%s", c->job_dir);
        else
            (void)pami_job_dir_name(c, dir, sizeof(dir));
        snprintf(out, SHM_NAME_MAX, "%s/mr-%" PRIu32 "-%" PRIu32 "-%" PRIu32
                 "-%" PRIu32 "-%016" PRIx64, dir, task, octx, id, gen, tag);
        return;
    }
    pami_protocol_job_key_t key;
    if (pami_protocol_job_key(c, &key) != PAMI_SUCCESS)
        snprintf(key.name, sizeof(key.name), "nojob");
    snprintf(out, SHM_NAME_MAX, "/pami-%s-mr-%" PRIu32 "-%" PRIu32 "-%" PRIu32
             "-%" PRIu32 "-%016" PRIx64, key.name, task, octx, id, gen, tag);
}

static int seg_open(const char *name, bool in_dir, int flags, mode_t mode)
{
    return in_dir ? open(name, flags, mode) : shm_open(name, flags, mode);
}

static int seg_unlink(const char *name, bool in_dir)
{
    return in_dir ? unlink(name) : shm_unlink(name);
}

/* A segment's length: whole pages, and a file size (off_t), since a
 * larger one would reach posix_fallocate as a negative length. */
static bool page_round(size_t bytes, size_t *out)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (bytes > (size_t)INT64_MAX - (page - 1))
        return false;
    *out = (bytes + page - 1) & ~(page - 1);
    return true;
}

pami_result_t pami_memregion_alloc(pami_context_t ctx, size_t bytes,
                                   void **addr, pami_memregion_t *mr)
{
    PAMI_CHECK(ctx != NULL && addr != NULL && mr != NULL, PAMI_INVAL, "rma",
               "memregion_alloc with a NULL context or output");
    size_t len;
    PAMI_CHECK(bytes > 0 && page_round(bytes, &len), PAMI_INVAL, "rma",
               "memregion_alloc of %zu bytes", bytes);
    uint32_t id;
    pami_result_t rc = pami_region_slot(ctx, &id);
    if (rc != PAMI_SUCCESS)
        return rc;
    pami_region_t *r = &ctx->regions[id];
    char name[SHM_NAME_MAX];
    bool in_dir = ctx->client->job_dir[0] != '\0';
    shm_name(ctx->client, ctx->client->task, (uint32_t)ctx->offset, id,
             r->generation + 1, in_dir, name);
    int fd = seg_open(name, in_dir,
                      O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        pami_warn("rma", "memregion_alloc: cannot create %s: %s", name,
                  strerror(e));
        return e == ENOMEM || e == ENOSPC ? PAMI_ENOMEM : PAMI_ERROR;
    }
    /* Reserved now, not on first touch: a full /dev/shm must be
     * PAMI_ENOMEM here, never a SIGBUS in a task that stores later. */
    int e = posix_fallocate(fd, 0, (off_t)len);
    void *p = MAP_FAILED;
    if (e == 0) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            e = errno;
    }
    close(fd);
    if (p == MAP_FAILED) {
        pami_warn("rma", "memregion_alloc of %zu bytes in %s: %s", len, name,
                  strerror(e));
        seg_unlink(name, in_dir);
        return e == ENOMEM || e == ENOSPC || e == EFBIG ? PAMI_ENOMEM
                                                        : PAMI_ERROR;
    }
    r->shm_bytes  = len;
    r->shm_in_dir = in_dir;
    rc = pami_mr_pack(ctx, p, bytes, id, r, mr);
    if (rc != PAMI_SUCCESS) {
        r->shm_bytes = 0;
        munmap(p, len);
        seg_unlink(name, in_dir);
        return rc;
    }
    *addr = p;
    return PAMI_SUCCESS;
}

void pami_shm_region_free(struct pami_context *ctx, uint32_t id,
                          pami_region_t *r)
{
    char name[SHM_NAME_MAX];
    shm_name(ctx->client, ctx->client->task, (uint32_t)ctx->offset, id,
             r->generation, r->shm_in_dir, name);
    /* Peers that mapped it keep their pages; only the name and our view
     * go. ENOENT: context close removed the name already. */
    if (seg_unlink(name, r->shm_in_dir) != 0 && errno != ENOENT)
        pami_warn("rma", "cannot remove %s: %s", name, strerror(errno));
    munmap((void *)(uintptr_t)r->base, r->shm_bytes);
    r->shm_bytes = 0;
}

void pami_shm_close(struct pami_context *ctx)
{
    for (size_t i = 0; i < ctx->nregions; i++) {
        pami_region_t *r = &ctx->regions[i];
        if (!r->live || r->shm_bytes == 0)
            continue;
        char name[SHM_NAME_MAX];
        shm_name(ctx->client, ctx->client->task, (uint32_t)ctx->offset,
                 (uint32_t)i, r->generation, r->shm_in_dir, name);
        seg_unlink(name, r->shm_in_dir);
    }
    for (size_t i = 0; i < ctx->shm_nmaps; i++)
        munmap(ctx->shm_maps[i].addr, ctx->shm_maps[i].len);
    free(ctx->shm_maps);
    ctx->shm_maps  = NULL;
    ctx->shm_nmaps = ctx->shm_cap = 0;
}

static pami_shm_map_t *map_find(struct pami_context *ctx,
                                const pami_mr_view_t *v)
{
    for (size_t i = 0; i < ctx->shm_nmaps; i++) {
        pami_shm_map_t *m = &ctx->shm_maps[i];
        if (m->owner_task == v->owner_task && m->owner_ctx == v->owner_ctx &&
            m->id == v->id && m->generation == v->generation)
            return m;
    }
    return NULL;
}

/* Opens a peer's segment, checking that it is what pami would have made
 * for this handle before mapping it. */
static pami_result_t map_open(struct pami_context *ctx,
                              const pami_mr_view_t *v, void **out,
                              size_t *out_len)
{
    size_t len;
    if (!page_round(v->bytes, &len))
        return PAMI_INVAL;
    char name[SHM_NAME_MAX];
    bool in_dir = (v->flags & PAMI_MR_FLAG_JOBDIR) != 0;
    shm_name(ctx->client, v->owner_task, v->owner_ctx, v->id, v->generation,
             in_dir, name);
    int fd = seg_open(name, in_dir, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        pami_warn("rma", "memregion_map: region %u/%u of task %u context %u "
                         "is gone (%s: %s): destroyed by its owner?",
                  v->id, v->generation, v->owner_task, v->owner_ctx, name,
                  strerror(e));
        return e == ENOENT ? PAMI_INVAL : PAMI_ERROR;
    }
    struct stat st;
    pami_result_t rc = PAMI_SUCCESS;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != geteuid() || (st.st_mode & 077) != 0 ||
        (uint64_t)st.st_size != len) {
        pami_warn("rma", "memregion_map: %s is not the segment its region "
                         "describes (%zu bytes, ours, 0600); not mapping it",
                  name, len);
        rc = PAMI_INVAL;
    }
    void *p = MAP_FAILED;
    if (rc == PAMI_SUCCESS) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            pami_warn("rma", "memregion_map: mmap of %s: %s", name,
                      strerror(errno));
            rc = errno == ENOMEM ? PAMI_ENOMEM : PAMI_ERROR;
        }
    }
    close(fd);
    if (rc == PAMI_SUCCESS) {
        *out     = p;
        *out_len = len;
    }
    return rc;
}

pami_result_t pami_memregion_map(pami_context_t ctx,
                                 const pami_memregion_t *mr, void **addr)
{
    PAMI_CHECK(ctx != NULL && addr != NULL, PAMI_INVAL, "rma",
               "memregion_map with a NULL context or output");
    pami_mr_view_t v;
    pami_result_t  rc = pami_mr_decode(ctx, mr, &v);
    if (rc != PAMI_SUCCESS)
        return rc;
    pami_client_impl_t *c = ctx->client;
    if (v.owner_task == c->task) {
        *addr = (void *)(uintptr_t)v.base;
        return PAMI_SUCCESS;
    }
    if (!c->tasks[v.owner_task].local || (v.flags & PAMI_MR_FLAG_SHM) == 0) {
        pami_debug("rma", "memregion_map: region of task %u is %s",
                   v.owner_task, c->tasks[v.owner_task].local
                                     ? "over its private memory"
                                     : "on another node");
        return PAMI_NOT_FOUND;
    }
    return pami_shm_map_view(ctx, &v, addr);
}

pami_result_t pami_shm_map_view(struct pami_context *ctx,
                                const pami_mr_view_t *v, void **addr)
{
    pami_shm_map_t *m = map_find(ctx, v);
    if (m != NULL) {
        *addr = m->addr;
        return PAMI_SUCCESS;
    }
    if (ctx->shm_nmaps == ctx->shm_cap) {
        size_t cap = ctx->shm_cap ? ctx->shm_cap * 2 : 8;
        pami_shm_map_t *t = realloc(ctx->shm_maps, cap * sizeof(*t));
        if (t == NULL)
            return PAMI_ENOMEM;
        ctx->shm_maps = t;
        ctx->shm_cap  = cap;
    }
    void  *p;
    size_t len;
    pami_result_t rc = map_open(ctx, v, &p, &len);
    if (rc != PAMI_SUCCESS)
        return rc;
    ctx->shm_maps[ctx->shm_nmaps++] = (pami_shm_map_t){
        .owner_task = v->owner_task, .owner_ctx = v->owner_ctx, .id = v->id,
        .generation = v->generation, .addr = p, .len = len};
    *addr = p;
    return PAMI_SUCCESS;
}
