/*
 * The checks of what the shared-memory collectives read from their
 * segment. The segment is written by the other processes of the node,
 * so it is input from outside this process: pure functions over the
 * values read, which the readers (coll_shm_seg.c, coll_alg_shm.c) call
 * and the fuzz target fuzz_coll_shm runs.
 */
#ifndef PAMI_COLL_SHM_CHECK_H
#define PAMI_COLL_SHM_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* The layout of a segment for nlocal tasks and slots of slot bytes:
 * where the slots start, where the eager ring starts, and its size
 * (the numbered lines' areas follow the ring).
 * False when it does not fit a size_t (a forged or absurd header). */
static inline bool cshm_layout(uint64_t nlocal, uint64_t slot,
                               size_t *hdr_bytes, size_t *ring_off,
                               size_t *bytes)
{
    /* Bounds far above any node, so nothing below can overflow. */
    if (nlocal == 0 || nlocal > (1u << 20) || slot > ((uint64_t)1 << 40))
        return false;
    size_t h = (CSHM_CTL_OFF + 2 * nlocal * CSHM_LINE + 4095) / 4096 * 4096;
    size_t r = h + 2 * nlocal * slot;
    *hdr_bytes = h;
    *ring_off  = r;
    *bytes     = r + nlocal * CSHM_LINE + CSHM_RING_BYTES +
                 2 * nlocal * CSHM_LL_BYTES;
    return true;
}

/* What this task expects of the segment's header. */
typedef struct {
    uint32_t nlocal;
    uint64_t slot, hdr_bytes, job_hash;
    size_t   bytes; /* mapped */
} cshm_expect_t;

/* NULL when the header h (a copy of what was read) is the one this task
 * expects and its layout fits the mapped bytes; else why not. */
static inline const char *cshm_hdr_check(const cshm_hdr_t *h,
                                         uint32_t attached,
                                         const cshm_expect_t *e)
{
    size_t hb, ro, bytes;
    if (h->magic != CSHM_MAGIC)
        return "not a segment of the shared-memory collectives";
    if (h->version != CSHM_VERSION)
        return "another version";
    if (h->nlocal != e->nlocal || h->slot != e->slot ||
        h->job_hash != e->job_hash)
        return "another node layout, slot size or job";
    if (h->slot < 64 || h->slot % 64 != 0 ||
        !cshm_layout(h->nlocal, h->slot, &hb, &ro, &bytes) ||
        h->hdr_bytes != hb || h->hdr_bytes != e->hdr_bytes ||
        bytes > e->bytes)
        return "a layout that does not fit the segment";
    if (attached == 0 || attached > h->nlocal)
        return "an attach count out of range";
    return NULL;
}

/* A round's number in a control line against the round's target: 1
 * there, 0 not yet, -1 ahead (no task writes a number ahead of the
 * round all are in: written by something else). */
static inline int cshm_line_state(uint64_t seq, uint64_t target)
{
    int64_t d = (int64_t)(seq - target);
    return d == 0 ? 1 : d < 0 ? 0 : -1;
}

/* An eager broadcast's ring entry as the reader of call k (signature
 * sig, total bytes) finds it: CSHM_ENTRY_OK to copy total bytes out, or
 * not (yet) its call, or not what the reader's call says. */
enum { CSHM_ENTRY_OK, CSHM_ENTRY_NOT_YET, CSHM_ENTRY_AHEAD,
       CSHM_ENTRY_MISMATCH };

static inline int cshm_ring_entry_check(uint64_t seq, uint32_t esig,
                                        uint32_t elen, uint64_t k,
                                        uint32_t sig, size_t total)
{
    int st = cshm_line_state(seq, k + 1);
    if (st == 0)
        return CSHM_ENTRY_NOT_YET;
    if (st < 0)
        return CSHM_ENTRY_AHEAD;
    if (esig != sig || elen != total || elen > CSHM_RING_MAX)
        return CSHM_ENTRY_MISMATCH;
    return CSHM_ENTRY_OK;
}

#endif
