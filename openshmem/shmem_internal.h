/*
 * State and helpers shared by the files of libpami-shmem. Everything here
 * has the shmemi_ prefix and hidden visibility; the library exports only
 * shmem_*, shmemx_* and the pre-1.2 names (openshmem/shmem.map).
 *
 * The library is a client of pami's public API only, as any runtime
 * outside pami would be.
 */
#ifndef SHMEM_INTERNAL_H
#define SHMEM_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <pami.h>
#include <pami_collectives.h>

#include "shmem.h"

#define SHMEMI_HIDDEN __attribute__((visibility("hidden")))

/* A symmetric segment: the heap, or the executable's writable data and
 * bss (global and static variables). Every PE has one of each, with the
 * same layout, so an address translates by its offset from the base. */
typedef struct {
    char             *base;    /* this PE's copy */
    size_t            size;
    pami_memregion_t  mr;      /* this PE's region */
    int               registered; /* mr exists (destroy it at the end) */
    pami_memregion_t *mrs;     /* n_pes regions, from the exchange at init */
    /* n_pes addresses at which this PE can load and store a peer's copy
     * (NULL: not mapped, go through pami_put/get/rmw). */
    char            **mapped;
} shmemi_segment_t;

enum { SHMEMI_SEG_HEAP = 0, SHMEMI_SEG_DATA = 1, SHMEMI_SEG_COUNT = 2 };

/* A team: a pami geometry over some PEs of the world (teams.c, owned by
 * the collectives side). The predefined ones are static objects. */
struct shmemi_team {
    pami_geometry_t     geometry;
    int                 my_pe;     /* -1 when this PE is not a member */
    int                 n_pes;
    int                 start;     /* world PE of team PE 0 */
    int                 stride;    /* world PEs between team PEs */
    shmem_team_config_t config;
    long                config_mask;
    int                 contexts;  /* contexts made from it and alive */
};

/* A communication context. pami makes contexts collectively, at once,
 * so every shmem context uses the one pami context of the library; a
 * shmem context has its own count of operations in flight, which its
 * quiet waits for. */
struct shmemi_ctx {
    pami_context_t  context;
    long            options;
    shmem_team_t    team;
    /* Operations issued and not yet completed (quiet waits for 0);
     * decremented by shmemi_count_done. */
    volatile uint64_t pending;
};

typedef struct {
    int               initialized;  /* shmem_init ran */
    int               finalized;    /* shmem_finalize ran */
    int               thread_level; /* provided */
    /* Every pami call holds the context's lock: at SHMEM_THREAD_MULTIPLE,
     * and whenever pami's progress thread runs (PAMI_ASYNC_PROGRESS),
     * which advances the context beside the program at any level. */
    int               pami_locked;
    pami_client_t     client;
    pami_context_t    context;      /* of SHMEM_CTX_DEFAULT */
    pami_geometry_t   world;
    int               my_pe;
    int               n_pes;
    pami_endpoint_t  *endpoints;    /* n_pes, on context offset 0 */
    /* Which PEs share this node (1) or not (0). */
    unsigned char    *same_node;
    shmemi_segment_t  seg[SHMEMI_SEG_COUNT];
    /* Per segment: every PE maps that segment of every other PE of its
     * node (agreed by all PEs at init), so the collectives' direct paths
     * need no message to know what the members can reach. */
    int               node_mapped[SHMEMI_SEG_COUNT];
    /* The largest alignment every PE's heap base has (agreed at init): a
     * block's offset aligned to it is an aligned address on every PE. */
    size_t            heap_align;
    int               debug;        /* SHMEM_DEBUG */
    /* A pami put or rmw was issued since the last pami_fence_all: quiet
     * needs one (through mappings a memory fence is all it takes). */
    int               pami_unfenced;
    /* pami_fence_all calls not completed yet: a quiet waits for all of
     * them, also those another thread started (that fence may be the one
     * that covers this thread's puts). */
    volatile uint64_t fences_in_flight;
    /* The first failure a completion callback saw (it cannot end the
     * program from inside progress); the waits report it. */
    pami_result_t     op_error;
    /* Smallest copy through a mapping offered to the target's core
     * (SHMEM_COPY_HELP); SIZE_MAX: never. */
    size_t            copy_help_min;
} shmemi_state_t;

extern shmemi_state_t shmemi SHMEMI_HIDDEN;

/* The library's active-message ids (pami user ids, registered at init):
 * this list is the only place they are given out. */
enum {
    SHMEMI_DISPATCH_GLOBAL_EXIT = 0, /* header: int32 status */
    SHMEMI_DISPATCH_HELP = 1         /* shmem_help.c */
};

/* Puts this PE (all its threads) on a CPU of its own when that takes
 * no CPU from anyone who chose (shmem_bind.c, docs/openshmem.md). */
SHMEMI_HIDDEN void shmemi_bind(pami_task_t me, const pami_task_t *local_tasks,
                               size_t num_local, size_t num_local_cpus,
                               int thread_level);

/* Registers the library's handlers (init, before its first barrier). */
SHMEMI_HIDDEN int shmemi_exit_init(void);

/* Messages. shmemi_fatal prints and ends the whole job (global exit with
 * status 1): it serves errors the specification gives no way to report. */
SHMEMI_HIDDEN void shmemi_debug(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
SHMEMI_HIDDEN void shmemi_warn(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
SHMEMI_HIDDEN __attribute__((noreturn)) void shmemi_fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* For completion callbacks: records a failed operation (the waits then
 * end the job with shmemi_fatal, outside progress). */
SHMEMI_HIDDEN void shmemi_op_failed(pami_result_t result);

/* Ends the program with a message unless shmem_init ran (fn names the
 * caller). */
SHMEMI_HIDDEN void shmemi_require_init(const char *fn);


/* Blocks through pami progress until *done is non-zero (advance, then
 * pami_context_wait, so that waiting PEs do not take turns spinning). */
SHMEMI_HIDDEN void shmemi_wait_flag(pami_context_t context,
                                    volatile int *done);

/* Makes progress once and yields when nothing happened (retries after
 * EAGAIN, test_lock). */
SHMEMI_HIDDEN void shmemi_progress(pami_context_t context);

/* Threads (SHMEM_THREAD_MULTIPLE, or pami's progress thread): the
 * threads share the one pami context, which is not thread safe, so every
 * pami call holds the context's lock (recursive; shmemi_lock,
 * shmemi_unlock: nothing when shmemi.pami_locked is 0). The waits advance pami only when they can take the lock
 * at once (shmemi_advance, shmemi_sleep): a thread that cannot leaves the
 * progress to the holder and looks at its variable again, so no thread
 * waits for something while holding the lock another needs to issue. */
static inline void shmemi_lock(void)
{
    if (shmemi.pami_locked)
        pami_context_lock(shmemi.context);
}
static inline void shmemi_unlock(void)
{
    if (shmemi.pami_locked)
        pami_context_unlock(shmemi.context);
}

/* Ends this PE (shmemi_fatal) when pami found a PE of the job dead or
 * hung: for waits that no pami operation of their own would fail. */
SHMEMI_HIDDEN void shmemi_check_peers(pami_context_t context);

/* Advances pami once (under the lock when it is free at once); 1 when
 * something happened. */
SHMEMI_HIDDEN int shmemi_advance(pami_context_t context);

/* Sleeps in pami_context_wait for at most ms (1 with several threads, and
 * not at all, a yield instead, while another thread holds the lock). */
SHMEMI_HIDDEN void shmemi_sleep(pami_context_t context, int ms);

/* A collective on a geometry with AUTO, waited for: blocking pami calls
 * at the lower thread levels (a barrier polls the register inline); with
 * several threads, pami_collective under the lock and a wait that does
 * not hold it. */
SHMEMI_HIDDEN pami_result_t shmemi_collective_run(pami_xfer_t *xfer);

/* The body of a wait on memory (wait_until, set_lock): progress, and
 * when nothing happened a yield; once nothing has happened for
 * SHMEMI_POLL_SPIN_NS, a sleep in pami_context_wait of at most 1 ms
 * (woken at once by pami's events; a store through a mapping makes
 * none, so the variable is looked at again after the nap). Start each
 * wait with a zeroed state. */
typedef struct {
    uint64_t idle_since_ns; /* 0: something happened on the last look */
} shmemi_poll_t;
#define SHMEMI_POLL_SPIN_NS 100000
SHMEMI_HIDDEN void shmemi_poll(pami_context_t context, shmemi_poll_t *state);

/* Waits until every operation of ctx is complete at its target. */
SHMEMI_HIDDEN void shmemi_ctx_quiet(struct shmemi_ctx *ctx);

/* Quiet on the default context, then a barrier of the world geometry. */
SHMEMI_HIDDEN void shmemi_barrier_world(void);

/* Allgather of len bytes per PE over the world geometry. */
SHMEMI_HIDDEN int shmemi_allgather(const void *send, void *recv, size_t len);

/* Fills shmemi.node_mapped from every PE's mappings and
 * shmemi.heap_align from every PE's heap base (an allgather of
 * the world; after the heap and the data segment are set up). 0, or -1
 * logged. */
SHMEMI_HIDDEN int shmemi_segments_agree(void);

/* The heap (heap.c). */
SHMEMI_HIDDEN int shmemi_heap_init(void);
SHMEMI_HIDDEN void shmemi_heap_fini(void);
SHMEMI_HIDDEN void *shmemi_heap_alloc(size_t alignment, size_t size);
/* The heap's last bytes (64-aligned), for the library's own use: only at
 * init, while the heap is one free block, so that the program's blocks
 * start at offset 0 as without it. NULL when that is not so. */
SHMEMI_HIDDEN void *shmemi_heap_alloc_tail(size_t size);
SHMEMI_HIDDEN void shmemi_heap_free(void *ptr);
SHMEMI_HIDDEN size_t shmemi_heap_block_size(void *ptr);
SHMEMI_HIDDEN size_t shmemi_heap_used(void);
/* Fills this PE's page tables for [p, p + size) of the heap in its
 * mappings of the node's other PEs, so that the first put or get to
 * each page takes no page fault; blocks larger than
 * SHMEMI_PREFAULT_MAX are left to fault as they are touched. */
SHMEMI_HIDDEN void shmemi_heap_prefault(void *p, size_t size);

/* The executable's data and bss (data_segment.c). */
SHMEMI_HIDDEN int shmemi_data_init(void);
SHMEMI_HIDDEN void shmemi_data_fini(void);

/* Segment exchange (segment.c): registers seg->base unless
 * seg->registered, exchanges the regions and maps those of the node's
 * peers that pami can map. */
SHMEMI_HIDDEN int shmemi_segment_exchange(shmemi_segment_t *seg);
SHMEMI_HIDDEN void shmemi_segment_release(shmemi_segment_t *seg);

/* Where an access to [addr, addr + bytes) of PE pe goes: r->local, the
 * address to load and store (the own PE, or a peer of the node whose
 * segment pami mapped), or NULL and then r->mr and r->offset for pami's
 * put, get and rmw. A PE out of range or an address outside the
 * symmetric segments ends the job with a message naming fn. */
typedef struct {
    char                   *local;
    const pami_memregion_t *mr;
    size_t                  offset;
    pami_endpoint_t         endpoint;
} shmemi_remote_t;

/* Which symmetric segment holds [addr, addr + bytes) of this PE, and the
 * offset in it; -1 when none does (not symmetric). Inline: every RMA and
 * atomic asks, and a put through a mapping is little more than this and
 * a memcpy. */
static inline int shmemi_segment_of(const void *addr, size_t bytes,
                                    size_t *offset)
{
    for (int s = 0; s < SHMEMI_SEG_COUNT; s++) {
        const shmemi_segment_t *seg = &shmemi.seg[s];
        uintptr_t off = (uintptr_t)addr - (uintptr_t)seg->base;

        /* one unsigned compare: below base wraps to a huge offset */
        if (off < seg->size) {
            if (bytes > seg->size - off)
                return -1;
            *offset = off;
            return s;
        }
    }
    return -1;
}

SHMEMI_HIDDEN __attribute__((noreturn)) void
shmemi_bad_target(const char *fn, const void *addr, size_t bytes, int pe);

/* A context made from a team names PEs by their number in that team
 * (OpenSHMEM 1.5, 9.4.1): the world PE of pe, or the job ends. */
SHMEMI_HIDDEN int shmemi_ctx_team_pe(const struct shmemi_ctx *ctx, int pe,
                                     const char *fn);
static inline int shmemi_ctx_pe(const struct shmemi_ctx *ctx, int pe,
                                const char *fn)
{
    return ctx->team == SHMEM_TEAM_WORLD ? pe
                                         : shmemi_ctx_team_pe(ctx, pe, fn);
}

static inline void shmemi_resolve(const char *fn, const void *addr,
                                  size_t bytes, int pe, shmemi_remote_t *r)
{
    size_t offset;
    int s;

    if (pe < 0 || pe >= shmemi.n_pes ||
        (s = shmemi_segment_of(addr, bytes, &offset)) < 0)
        shmemi_bad_target(fn, addr, bytes, pe);
    r->local = shmemi.seg[s].mapped[pe] != NULL
                   ? shmemi.seg[s].mapped[pe] + offset : NULL;
    r->mr = &shmemi.seg[s].mrs[pe];
    r->offset = offset;
    r->endpoint = shmemi.endpoints[pe];
}

/* pami completion callback whose cookie is a volatile uint64_t count of
 * operations in flight: decrements it; a failed operation ends the job
 * (the specification has no way to report it). */
SHMEMI_HIDDEN void shmemi_count_done(pami_context_t context, void *cookie,
                                     pami_result_t result);

/* Blocks through progress until *count is 0. */
SHMEMI_HIDDEN void shmemi_wait_count(pami_context_t context,
                                     volatile uint64_t *count);

/* Contiguous put and get; with count NULL they return complete (put:
 * source reusable; get: data in dest), else each pami operation they
 * start increments *count and decrements it when done. */
SHMEMI_HIDDEN void shmemi_put(shmem_ctx_t ctx, void *dest, const void *src,
                              size_t bytes, int pe, volatile uint64_t *count);
SHMEMI_HIDDEN void shmemi_get(shmem_ctx_t ctx, void *dest, const void *src,
                              size_t bytes, int pe, volatile uint64_t *count);

/* A put's copy through a mapping (shmem_copy.c) to PE pe: memcpy,
 * non-temporal stores within a long run of puts that each start where the
 * last ended, or, from shmemi.copy_help_min bytes, a copy the target's
 * core may share (shmemi_help_copy). sym is the remote side's symmetric
 * address as the caller names it (put: dest; get: src). */
SHMEMI_HIDDEN void shmemi_copy_put(int pe, void *dest, const void *src,
                                   size_t bytes, const void *sym);
/* The same for a get's copy into this PE's dest (a run of gets of its
 * own). */
SHMEMI_HIDDEN void shmemi_copy_get(int pe, void *dest, const void *src,
                                   size_t bytes, const void *sym);

/* Orders this thread's streamed copies (non-temporal stores) before its
 * later stores: a store fence when one is owed. quiet's full fence does
 * it too. */
SHMEMI_HIDDEN void shmemi_copy_drain(void);

/* Two cores on a large copy through a mapping (shmem_help.c): the caller
 * and PE pe (the target), when pe is in pami's progress. dst and src are
 * the addresses the caller copies between (one of them its mapping of
 * pe's segment), sym the remote side as a symmetric address of the
 * caller; the caller's own side must be symmetric too. 1: copied (on
 * return, as a memcpy); 0: nothing done (off, too small, a side not
 * symmetric or not mapped by the node's PEs, another thread's copy under
 * way), the caller copies. */
SHMEMI_HIDDEN int shmemi_help_copy(int put, int pe, void *dst,
                                   const void *src, size_t bytes,
                                   const void *sym);
/* Reads SHMEM_COPY_HELP, makes this PE's help block (the first block of
 * the heap) and registers the HELP handler: at init, after the heap,
 * before the first barrier. 0, or -1 logged. */
SHMEMI_HIDDEN int shmemi_help_init(void);
SHMEMI_HIDDEN void shmemi_help_fini(void);

/* Parses "64M", "1G", "4096", "2k" (K, M, G, T: powers of 1024). 0 on
 * success. */
SHMEMI_HIDDEN int shmemi_parse_size(const char *text, size_t *bytes);

#endif /* SHMEM_INTERNAL_H */
