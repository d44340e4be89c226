/*
 * Team collectives of OpenSHMEM 1.5 on pami: broadcast, collect,
 * fcollect, alltoall, alltoalls (typed and mem forms; barrier_all and
 * sync_all are the core's, shmem_order.c). Each is a pami collective
 * with AUTO on the team's geometry, landing directly in dest; a large
 * broadcast and a collect within a node copy through the mappings
 * instead, between pami's synchronizations.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_coll.h"

int shmemi_coll_run(struct shmemi_team *t, pami_xfer_t *x, const char *what)
{
    pami_geometry_t g = shmemi_team_geometry(t);
    if (g == NULL)
        return -1;
    x->geometry = g;
    x->algorithm = PAMI_ALGORITHM_AUTO;
    pami_result_t rc = shmemi_collective_run(x);
    if (rc != PAMI_SUCCESS) {
        shmemi_warn("%s on a team of %d PEs: %s", what, t->n_pes,
                         pami_error_text(rc));
        return -1;
    }
    return 0;
}

__attribute__((noreturn)) void shmemi_coll_fatal(const char *what)
{
    shmemi_fatal("%s: invalid call (see the message above), the job stops",
                 what);
}

int shmemi_coll_sync(struct shmemi_team *t, const char *what)
{
    pami_xfer_t x = { .kind = PAMI_XFER_BARRIER };
    return shmemi_coll_run(t, &x, what);
}

int shmemi_coll_direct(struct shmemi_team *t, const void *addr, size_t bytes,
                       const char *what)
{
    struct shmemi_team_ext *e = shmemi_team_ext(t);
    if (!e->on_node_known) {
        int all = 1;
        for (int j = 0; j < t->n_pes; j++)
            if (!shmemi.same_node[shmemi_team_world_pe(t, j)])
                all = 0;
        e->on_node = all;
        e->on_node_known = 1;
    }
    if (!e->on_node)
        return 0;
    size_t offset;
    int s = shmemi_segment_of(addr, bytes, &offset);
    if (s < 0)
        shmemi_fatal("%s: [%p, +%zu) is not symmetric (neither in the "
                     "symmetric heap nor in the program's global variables)",
                     what, addr, bytes);
    return shmemi.node_mapped[s];
}

uint8_t *shmemi_coll_mapped(struct shmemi_team *t, int j, const void *addr,
                            size_t bytes)
{
    size_t offset;
    int    s = shmemi_segment_of(addr, bytes, &offset);
    if (s < 0)
        return NULL;
    uint8_t *base = (uint8_t *)shmemi.seg[s].mapped[shmemi_team_world_pe(t, j)];
    return base != NULL ? base + offset : NULL;
}

int shmemi_coll_map_all(struct shmemi_team *t, uint8_t **maps,
                        const void *addr, size_t bytes)
{
    int all = 1;
    for (int j = 0; j < t->n_pes; j++)
        if ((maps[j] = shmemi_coll_mapped(t, j, addr, bytes)) == NULL)
            all = 0;
    return all;
}

uint8_t **shmemi_coll_maps(struct shmemi_team *t, const char *what)
{
    struct shmemi_team_ext *e = shmemi_team_ext(t);
    if (e->maps == NULL) {
        e->maps = malloc(2 * (size_t)t->n_pes * sizeof(*e->maps));
        if (e->maps == NULL)
            shmemi_warn("%s: out of memory", what);
    }
    return e->maps;
}

/* A large broadcast within a node: each member copies from the root's
 * source through its mapping of the root's heap or globals, all at once
 * and one copy each, instead of a copy into pami's shared slots and one
 * out. A root that has no copy of its own to make (the deprecated forms,
 * or dest == source) copies the last 1/n of the data into every other
 * member's dest meanwhile, and the others copy the rest: each PE then
 * copies about (n-1)/n of the data, not the readers all of it while the
 * root waits. Whether the members can (shmemi_coll_direct) every member
 * knows without a message, so a barrier is the entry synchronization
 * (no member reads the root's source before the root entered, the root
 * writes no dest before its member entered); the barrier after the
 * copies keeps the root from changing source while it is read. Returns 1
 * when done, 0 when pami's broadcast must run, -1 on error. */
#define SHMEMI_BCAST_DIRECT_MIN 1024

static int broadcast_direct(struct shmemi_team *t, void *dest,
                            const void *source, size_t bytes, int PE_root,
                            int root_updates, const char *what)
{
    if (!shmemi_coll_direct(t, source, bytes, what))
        return 0;
    int push = (!root_updates || dest == source) &&
               shmemi_coll_direct(t, dest, bytes, what);
    if (shmemi_coll_sync(t, what) != 0)
        return -1;
    /* The root's part starts on a cache line, so no line is written by
     * two PEs. */
    size_t root_part = push ? bytes / (size_t)t->n_pes / 64 * 64 : 0;
    size_t readers_part = bytes - root_part;
    if (t->my_pe != PE_root) {
        memcpy(dest, shmemi_coll_mapped(t, PE_root, source, bytes),
               readers_part);
    } else if (root_part > 0) {
        for (int j = 0; j < t->n_pes; j++)
            if (j != PE_root)
                memcpy(shmemi_coll_mapped(t, j, dest, bytes) + readers_part,
                       (const uint8_t *)source + readers_part, root_part);
    } else if (root_updates && dest != source) {
        memmove(dest, source, bytes);
    }
    return shmemi_coll_sync(t, what) == 0 ? 1 : -1;
}

int shmemi_broadcast(struct shmemi_team *t, void *dest, const void *source,
                     size_t bytes, int PE_root, int root_updates,
                     const char *what)
{
    if (PE_root < 0 || PE_root >= t->n_pes) {
        shmemi_warn("%s: root %d is not a PE of a team of %d", what,
                         PE_root, t->n_pes);
        return -1;
    }
    if (bytes == 0)
        return 0;
    if (bytes >= SHMEMI_BCAST_DIRECT_MIN && t->n_pes > 1) {
        int rc = broadcast_direct(t, dest, source, bytes, PE_root,
                                  root_updates, what);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    }
    void *buf = dest;
    if (t->my_pe == PE_root) {
        if (root_updates) {
            if (dest != source)
                memmove(dest, source, bytes);
        } else {
            buf = (void *)source; /* the root's buffer is only read */
        }
    }
    pami_xfer_t x = { .kind = PAMI_XFER_BROADCAST, .root = (size_t)PE_root,
                      .rbuf = buf, .count = bytes, .dtype = PAMI_TYPE_BYTE };
    return shmemi_coll_run(t, &x, what);
}

int shmemi_fcollect(struct shmemi_team *t, void *dest, const void *source,
                    size_t bytes, const char *what)
{
    if (bytes == 0)
        return 0;
    const void *s = source;
    if ((const char *)source == (char *)dest + (size_t)t->my_pe * bytes)
        s = PAMI_IN_PLACE;
    pami_xfer_t x = { .kind = PAMI_XFER_ALLGATHER, .sbuf = s, .rbuf = dest,
                      .count = bytes, .dtype = PAMI_TYPE_BYTE };
    return shmemi_coll_run(t, &x, what);
}

/* collect: each PE's size travels in a record of an allgather that also
 * carries its data when that is small, so a small collect is a single
 * collective; when some PE's data does not fit its record, an allgatherv
 * follows, its counts from the records. */
#define COLLECT_INLINE 64
#define COLLECT_CHUNK  (32 * 1024) /* written to every dest while in cache */

struct collect_record {
    uint64_t bytes;
    uint64_t maps_all;  /* this PE maps every member's dest */
    unsigned char data[COLLECT_INLINE];
};

/* Whether this PE maps every member's dest (its first byte: the sizes
 * are not known yet; the whole of it is checked before any write). */
static uint64_t maps_all_dests(struct shmemi_team *t, const void *dest)
{
    for (int j = 0; j < t->n_pes; j++)
        if (shmemi_coll_mapped(t, j, dest, 1) == NULL)
            return 0;
    return 1;
}

int shmemi_collect(struct shmemi_team *t, void *dest, const void *source,
                   size_t bytes, const char *what)
{
    size_t n = (size_t)t->n_pes;
    struct shmemi_team_ext *e = shmemi_team_ext(t);
    if (e->counts == NULL) {
        e->counts = malloc(n * sizeof(*e->counts));
        e->displs = malloc(n * sizeof(*e->displs));
        e->records = malloc((n + 1) * sizeof(struct collect_record));
        if (e->counts == NULL || e->displs == NULL || e->records == NULL) {
            free(e->counts);
            free(e->displs);
            free(e->records);
            e->counts = e->displs = NULL;
            e->records = NULL;
            shmemi_warn("%s: out of memory", what);
            return -1;
        }
    }
    struct collect_record *all = e->records, *mine = &all[n];
    mine->bytes = bytes;
    mine->maps_all = maps_all_dests(t, dest);
    if (bytes <= COLLECT_INLINE)
        memcpy(mine->data, source, bytes);
    pami_xfer_t c = { .kind = PAMI_XFER_ALLGATHER, .sbuf = mine,
                      .rbuf = all, .count = sizeof(*mine),
                      .dtype = PAMI_TYPE_BYTE };
    if (shmemi_coll_run(t, &c, what) != 0)
        return -1;
    size_t total = 0;
    int inline_all = 1, direct = 1;
    for (size_t i = 0; i < n; i++) {
        e->counts[i] = (size_t)all[i].bytes;
        e->displs[i] = total;
        total += e->counts[i];
        if (e->counts[i] > COLLECT_INLINE)
            inline_all = 0;
        /* Every PE must map the others' dests: the decision is the same
         * on all, from the records all have. */
        if (!all[i].maps_all)
            direct = 0;
    }
    if (inline_all) {
        for (size_t i = 0; i < n; i++)
            memcpy((char *)dest + e->displs[i], all[i].data, e->counts[i]);
        return 0;
    }
    if (direct) {
        /* Within a node: each PE writes its own part straight into every
         * member's dest (one copy, not two through pami's slots), a chunk
         * at a time so that its source is read from memory once, not once
         * per member. The allgather of the records was the entry
         * synchronization (no dest is written before its PE entered); the
         * barrier keeps every PE inside until all parts have landed. The
         * small parts came in the records: each PE copies those itself. */
        size_t mine_bytes = e->counts[t->my_pe];
        size_t at = e->displs[t->my_pe];
        if (mine_bytes > COLLECT_INLINE) {
            uint8_t **to = shmemi_coll_maps(t, what);
            if (to == NULL)
                shmemi_fatal("%s: out of memory in a collect the others "
                             "take part in", what);
            if (!shmemi_coll_map_all(t, to, dest, total))
                shmemi_fatal("%s: the %zu bytes at dest are not all "
                             "symmetric", what, total);
            for (size_t off = 0; off < mine_bytes; off += COLLECT_CHUNK) {
                size_t m = mine_bytes - off < COLLECT_CHUNK
                               ? mine_bytes - off : COLLECT_CHUNK;
                const char *from = (const char *)source + off;
                for (size_t j = 0; j < n; j++)
                    memmove(to[j] + at + off, from, m);
            }
        }
        for (size_t i = 0; i < n; i++)
            if (e->counts[i] <= COLLECT_INLINE)
                memcpy((char *)dest + e->displs[i], all[i].data,
                       e->counts[i]);
        return shmemi_coll_sync(t, what);
    }
    pami_xfer_t x = { .field_mask = PAMI_XFER_FIELD_VCOUNTS,
                      .kind = PAMI_XFER_ALLGATHERV, .sbuf = source,
                      .rbuf = dest, .count = bytes,
                      .dtype = PAMI_TYPE_BYTE, .rcounts = e->counts,
                      .rdispls = e->displs };
    return shmemi_coll_run(t, &x, what);
}

int shmemi_alltoall(struct shmemi_team *t, void *dest, const void *source,
                    size_t bytes, const char *what)
{
    if (bytes == 0)
        return 0;
    pami_xfer_t x = { .kind = PAMI_XFER_ALLTOALL, .sbuf = source,
                      .rbuf = dest, .count = bytes,
                      .dtype = PAMI_TYPE_BYTE };
    return shmemi_coll_run(t, &x, what);
}

/* Strided alltoall: packed into a contiguous buffer, exchanged, then
 * spread with the destination stride (strides in elements of esize). */
int shmemi_alltoalls(struct shmemi_team *t, void *dest, const void *source,
                     ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                     size_t esize, const char *what)
{
    if (dst < 1 || sst < 1) {
        shmemi_warn("%s: strides %td and %td must be at least 1", what, dst,
                    sst);
        return -1;
    }
    if (nelems == 0)
        return 0;
    size_t n = (size_t)t->n_pes, total = n * nelems;
    char *packed = malloc(2 * total * esize);
    if (packed == NULL) {
        shmemi_warn("%s: out of memory for %zu bytes", what,
                         2 * total * esize);
        return -1;
    }
    char *got = packed + total * esize;
    const char *s = source;
    for (size_t i = 0; i < total; i++)
        memcpy(packed + i * esize, s + (ptrdiff_t)i * sst * (ptrdiff_t)esize,
               esize);
    int rc = shmemi_alltoall(t, got, packed, nelems * esize, what);
    if (rc == 0) {
        char *d = dest;
        for (size_t i = 0; i < total; i++)
            memcpy(d + (ptrdiff_t)i * dst * (ptrdiff_t)esize,
                   got + i * esize, esize);
    }
    free(packed);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Public team forms                                                         */
/* ------------------------------------------------------------------------ */

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source,
                       size_t nelems, int PE_root)
{
    struct shmemi_team *t = shmemi_team_get(team, "broadcastmem");
    return t == NULL ? -1 : shmemi_broadcast(t, dest, source, nelems,
                                             PE_root, 1, "broadcastmem");
}

int shmem_collectmem(shmem_team_t team, void *dest, const void *source,
                     size_t nelems)
{
    struct shmemi_team *t = shmemi_team_get(team, "collectmem");
    return t == NULL ? -1 : shmemi_collect(t, dest, source, nelems,
                                           "collectmem");
}

int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source,
                      size_t nelems)
{
    struct shmemi_team *t = shmemi_team_get(team, "fcollectmem");
    return t == NULL ? -1 : shmemi_fcollect(t, dest, source, nelems,
                                            "fcollectmem");
}

int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source,
                      size_t nelems)
{
    struct shmemi_team *t = shmemi_team_get(team, "alltoallmem");
    return t == NULL ? -1 : shmemi_alltoall(t, dest, source, nelems,
                                            "alltoallmem");
}

int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source,
                       ptrdiff_t dst, ptrdiff_t sst, size_t nelems)
{
    struct shmemi_team *t = shmemi_team_get(team, "alltoallsmem");
    return t == NULL ? -1 : shmemi_alltoalls(t, dest, source, dst, sst,
                                             nelems, 1, "alltoallsmem");
}

#define SHMEMI_TEAM_COLL(TYPE, NAME)                                          \
    int shmem_##NAME##_broadcast(shmem_team_t team, TYPE *dest,               \
                                 const TYPE *source, size_t nelems,           \
                                 int PE_root)                                 \
    {                                                                         \
        struct shmemi_team *t = shmemi_team_get(team, #NAME "_broadcast");    \
        return t == NULL ? -1                                                 \
                         : shmemi_broadcast(t, dest, source,                  \
                                            nelems * sizeof(TYPE), PE_root,   \
                                            1, #NAME "_broadcast");           \
    }                                                                         \
    int shmem_##NAME##_collect(shmem_team_t team, TYPE *dest,                 \
                               const TYPE *source, size_t nelems)             \
    {                                                                         \
        struct shmemi_team *t = shmemi_team_get(team, #NAME "_collect");      \
        return t == NULL ? -1                                                 \
                         : shmemi_collect(t, dest, source,                    \
                                          nelems * sizeof(TYPE),              \
                                          #NAME "_collect");                  \
    }                                                                         \
    int shmem_##NAME##_fcollect(shmem_team_t team, TYPE *dest,                \
                                const TYPE *source, size_t nelems)            \
    {                                                                         \
        struct shmemi_team *t = shmemi_team_get(team, #NAME "_fcollect");     \
        return t == NULL ? -1                                                 \
                         : shmemi_fcollect(t, dest, source,                   \
                                           nelems * sizeof(TYPE),             \
                                           #NAME "_fcollect");                \
    }                                                                         \
    int shmem_##NAME##_alltoall(shmem_team_t team, TYPE *dest,                \
                                const TYPE *source, size_t nelems)            \
    {                                                                         \
        struct shmemi_team *t = shmemi_team_get(team, #NAME "_alltoall");     \
        return t == NULL ? -1                                                 \
                         : shmemi_alltoall(t, dest, source,                   \
                                           nelems * sizeof(TYPE),             \
                                           #NAME "_alltoall");                \
    }                                                                         \
    int shmem_##NAME##_alltoalls(shmem_team_t team, TYPE *dest,               \
                                 const TYPE *source, ptrdiff_t dst,           \
                                 ptrdiff_t sst, size_t nelems)                \
    {                                                                         \
        struct shmemi_team *t = shmemi_team_get(team, #NAME "_alltoalls");    \
        return t == NULL ? -1                                                 \
                         : shmemi_alltoalls(t, dest, source, dst, sst,        \
                                            nelems, sizeof(TYPE),             \
                                            #NAME "_alltoalls");              \
    }

SHMEMI_RMA_TYPES(SHMEMI_TEAM_COLL)
