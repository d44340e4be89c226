/*
 * Teams and collectives of libpami-shmem: a team is a pami geometry on
 * the library's default context, and every collective is a pami
 * collective with PAMI_ALGORITHM_AUTO on it, or, for large data within a
 * node, copies through the mappings between such collectives. Internal
 * to openshmem/.
 */
#ifndef SHMEM_COLL_H
#define SHMEM_COLL_H

#include <stddef.h>
#include <stdint.h>

#include <pami.h>
#include <pami_collectives.h>

#include "shmem_internal.h"

/* Geometry ids. Ids of split teams come from an allreduce (max) over the
 * parent of each PE's next free id, so they count up from TEAM_ID_FIRST
 * and never reach the bit that marks the ids derived from an active set
 * or the node's shared team. */
#define SHMEMI_TEAM_ID_SHARED  1u
#define SHMEMI_TEAM_ID_FIRST   2u
#define SHMEMI_TEAM_ID_ACTIVE  0x80000000u

/* What the collectives keep beside a team's public part (struct
 * shmemi_team, shmem_internal.h): a split team or active set is one of
 * these, the predefined teams have static ones (shmemi_team_ext). */
struct shmemi_team_ext {
    struct shmemi_team pub;     /* first: a team handle points here */
    uint32_t id;                /* of its geometry */
    /* Team PE i is world PE pub.start + i * pub.stride when pub.stride is
     * not 0, else world_pes[i]; world_pes is also the geometry's list. */
    pami_task_t *world_pes;     /* n_pes entries or NULL; owned */
    size_t *counts;             /* collect's per-PE sizes, n_pes entries */
    size_t *displs;
    void *records;              /* collect's allgather, n_pes + 1 records */
    uint8_t **maps;             /* the direct paths' 2 * n_pes mappings */
    int on_node_known;          /* on_node has been worked out */
    int on_node;                /* every member is on this PE's node */
};

struct shmemi_team_ext *shmemi_team_ext(struct shmemi_team *t);

/* Fills SHMEM_TEAM_SHARED (its PEs, my_pe, start and stride) once,
 * locally; every team call runs it first. 0, or -1 logged before
 * shmem_init. */
int shmemi_team_init(void);

/* The pami team behind a public handle; NULL (with a log line naming
 * what) for SHMEM_TEAM_INVALID or a team this PE is not in. */
struct shmemi_team *shmemi_team_get(shmem_team_t team, const char *what);

/* The geometry of t, created on first use for the shared team and
 * active sets (collective over the members, who all call it in the same
 * order). NULL on failure, logged. */
pami_geometry_t shmemi_team_geometry(struct shmemi_team *t);

/* The cached team of the deprecated active set (PE_start, logPE_stride,
 * PE_size), or the world team when the set is every PE; NULL (logged,
 * what names the call) when the set is malformed or this PE is not in
 * it. */
struct shmemi_team *shmemi_active_set(int PE_start, int logPE_stride,
                                      int PE_size, const char *what);

/* World PE of team PE pe (0 <= pe < n_pes). */
int shmemi_team_world_pe(struct shmemi_team *t, int pe);

/* Runs xfer (its geometry, context filled here) with AUTO and waits for
 * it through pami's progress. 0 on success, -1 logged otherwise. */
int shmemi_coll_run(struct shmemi_team *t, pami_xfer_t *xfer,
                    const char *what);

/* A barrier of the team's PEs: 0, or -1 logged. */
int shmemi_coll_sync(struct shmemi_team *t, const char *what);

/* Where this PE loads and stores team PE j's copy of the symmetric
 * object at addr (bytes long, as this PE's own), or NULL when it does
 * not map it (another node, or addr not symmetric). */
uint8_t *shmemi_coll_mapped(struct shmemi_team *t, int j, const void *addr,
                            size_t bytes);

/* Fills maps[j] with shmemi_coll_mapped(t, j, addr, bytes) for every
 * team PE j, looked up once per call rather than per chunk; 1 when all
 * are mapped, else 0. */
int shmemi_coll_map_all(struct shmemi_team *t, uint8_t **maps,
                        const void *addr, size_t bytes);

/* The team's array of 2 * n_pes mapping slots for the direct paths
 * (allocated on first use, freed with the team); NULL when out of
 * memory, logged. */
uint8_t **shmemi_coll_maps(struct shmemi_team *t, const char *what);

/* Whether the direct paths apply to the symmetric object [addr,
 * +bytes) on t: every member is on this node and every PE maps that
 * segment of every other PE of its node (shmemi.node_mapped). Every
 * member decides alike from its own arguments, without a message, as
 * long as the arguments are symmetric, which the specification requires:
 * an addr outside the symmetric memory on a team within one node ends
 * the job with a message naming what (the others would read or write
 * through mappings where its data is not). */
int shmemi_coll_direct(struct shmemi_team *t, const void *addr, size_t bytes,
                       const char *what);

/* What a void-returning deprecated call does with an error: a clear
 * message and a non-zero exit of the job, never silent corruption. */
__attribute__((noreturn)) void shmemi_coll_fatal(const char *what);

/* The data movers behind the typed and deprecated forms; sizes in
 * bytes (alltoalls: nelems elements of esize, strides in elements).
 * 0 on success, -1 logged. root_updates: the team form's root also
 * receives into dest; the deprecated one's does not. */
int shmemi_broadcast(struct shmemi_team *t, void *dest, const void *source,
                     size_t bytes, int PE_root, int root_updates,
                     const char *what);
int shmemi_collect(struct shmemi_team *t, void *dest, const void *source,
                   size_t bytes, const char *what);
int shmemi_fcollect(struct shmemi_team *t, void *dest, const void *source,
                    size_t bytes, const char *what);
int shmemi_alltoall(struct shmemi_team *t, void *dest, const void *source,
                    size_t bytes, const char *what);
int shmemi_alltoalls(struct shmemi_team *t, void *dest, const void *source,
                     ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                     size_t esize, const char *what);

#endif /* SHMEM_COLL_H */
