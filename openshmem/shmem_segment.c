/* A symmetric segment as pami sees it: one memregion per PE, exchanged
 * at init, and the addresses at which this PE can reach its peers' copies
 * by load and store. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_internal.h"

static int count_mapped(const shmemi_segment_t *seg)
{
    int n = 0;

    for (int pe = 0; pe < shmemi.n_pes; pe++)
        n += pe != shmemi.my_pe && seg->mapped[pe] != NULL;
    return n;
}

/* An address translates by its offset alone, so a peer's segment smaller
 * than this PE's would take puts past its end (through the mapping:
 * into whatever this process has mapped there) and make the heaps'
 * allocations differ. Sizes differ when PEs were given different
 * SHMEM_SYMMETRIC_SIZE values or run different programs. Every PE sees
 * the same regions, so all of them refuse together. */
static int sizes_differ(const shmemi_segment_t *seg)
{
    size_t mine, theirs;

    if (pami_memregion_query(&seg->mr, NULL, &mine, NULL) != PAMI_SUCCESS)
        mine = seg->size;
    for (int pe = 0; pe < shmemi.n_pes; pe++) {
        if (pami_memregion_query(&seg->mrs[pe], NULL, &theirs, NULL) !=
            PAMI_SUCCESS) {
            shmemi_warn("PE %d's %s region does not decode", pe,
                        seg == &shmemi.seg[SHMEMI_SEG_HEAP] ? "heap"
                                                            : "globals");
            return 1;
        }
        if (theirs != mine) {
            shmemi_warn("PE %d's %s is %zu bytes, this PE's %zu: every PE "
                        "needs the same (SHMEM_SYMMETRIC_SIZE, the same "
                        "program)", pe,
                        seg == &shmemi.seg[SHMEMI_SEG_HEAP] ? "symmetric heap"
                                                            : "global data",
                        theirs, mine);
            return 1;
        }
    }
    return 0;
}

int shmemi_segment_exchange(shmemi_segment_t *seg)
{
    size_t n = (size_t)shmemi.n_pes;
    pami_result_t rc;

    if (!seg->registered) {
        rc = pami_memregion_create(shmemi.context, seg->base, seg->size,
                                   &seg->mr);
        if (rc != PAMI_SUCCESS) {
            shmemi_warn("pami_memregion_create(%p, %zu): %s",
                        (void *)seg->base, seg->size, pami_error_text(rc));
            return -1;
        }
        seg->registered = 1;
    }
    seg->mrs = calloc(n, sizeof(*seg->mrs));
    seg->mapped = calloc(n, sizeof(*seg->mapped));
    if (seg->mrs == NULL || seg->mapped == NULL) {
        shmemi_warn("out of memory for %zu regions", n);
        return -1;
    }
    if (shmemi_allgather(&seg->mr, seg->mrs, sizeof(seg->mr)) != 0)
        return -1;
    if (sizes_differ(seg))
        return -1;
    seg->mapped[shmemi.my_pe] = seg->base;
    for (int pe = 0; pe < shmemi.n_pes; pe++) {
        void *addr;

        if (pe == shmemi.my_pe || !shmemi.same_node[pe])
            continue;
        /* NOT_FOUND: private memory (the data segment), reached by
         * pami_put/get instead. */
        rc = pami_memregion_map(shmemi.context, &seg->mrs[pe], &addr);
        if (rc == PAMI_SUCCESS)
            seg->mapped[pe] = addr;
        else if (rc != PAMI_NOT_FOUND)
            shmemi_warn("pami_memregion_map(PE %d): %s", pe,
                        pami_error_text(rc));
    }
    shmemi_debug("segment %p: %zu bytes, mapped from %d PEs of the node",
                 (void *)seg->base, seg->size, count_mapped(seg));
    return 0;
}

int shmemi_segments_agree(void)
{
    /* mine[0]: the segments this PE maps on all its node's PEs (a bit
     * each); mine[1]: log2 of its heap base's alignment. */
    uint32_t mine[2] = { 0, 0 };
    uint32_t *all = malloc((size_t)shmemi.n_pes * sizeof(mine));

    if (all == NULL) {
        shmemi_warn("out of memory for %d PEs", shmemi.n_pes);
        return -1;
    }
    for (int s = 0; s < SHMEMI_SEG_COUNT; s++) {
        int every = 1;
        for (int pe = 0; pe < shmemi.n_pes; pe++)
            if (shmemi.same_node[pe] && shmemi.seg[s].mapped[pe] == NULL)
                every = 0;
        mine[0] |= (uint32_t)every << s;
    }
    uintptr_t base = (uintptr_t)shmemi.seg[SHMEMI_SEG_HEAP].base;
    mine[1] = base != 0 ? (uint32_t)__builtin_ctzll(base) : 63;
    if (mine[1] > 63)
        mine[1] = 63;
    if (shmemi_allgather(mine, all, sizeof(mine)) != 0) {
        free(all);
        return -1;
    }
    for (int pe = 0; pe < shmemi.n_pes; pe++) {
        mine[0] &= all[2 * pe];
        if (all[2 * pe + 1] < mine[1])
            mine[1] = all[2 * pe + 1];
    }
    free(all);
    for (int s = 0; s < SHMEMI_SEG_COUNT; s++)
        shmemi.node_mapped[s] = (mine[0] >> s) & 1;
    shmemi.heap_align = (size_t)1 << mine[1];
    shmemi_debug("mapped by every PE of its node: heap %s, globals %s; "
                 "alignments up to %zu on every PE",
                 shmemi.node_mapped[SHMEMI_SEG_HEAP] ? "yes" : "no",
                 shmemi.node_mapped[SHMEMI_SEG_DATA] ? "yes" : "no",
                 shmemi.heap_align);
    return 0;
}

void shmemi_segment_release(shmemi_segment_t *seg)
{
    pami_result_t rc;

    if (seg->registered) {
        rc = pami_memregion_destroy(shmemi.context, &seg->mr);
        if (rc != PAMI_SUCCESS)
            shmemi_warn("pami_memregion_destroy: %s", pami_error_text(rc));
        seg->registered = 0;
    }
    free(seg->mrs);
    free(seg->mapped);
    seg->mrs = NULL;
    seg->mapped = NULL;
}

void *shmem_ptr(const void *dest, int pe)
{
    size_t offset;
    int s;

    shmemi_require_init("shmem_ptr");
    if (pe < 0 || pe >= shmemi.n_pes)
        return NULL;
    s = shmemi_segment_of(dest, 1, &offset);
    if (s < 0 || shmemi.seg[s].mapped[pe] == NULL)
        return NULL;
    return shmemi.seg[s].mapped[pe] + offset;
}
