/* The symmetric heap: one block of SHMEM_SYMMETRIC_SIZE bytes per PE and
 * an allocator that every PE runs with the same calls in the same order,
 * so a block has the same offset on every PE. The allocator's bookkeeping
 * is private memory (a sorted list of blocks), never the heap itself: a
 * remote put cannot corrupt it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shmem_internal.h"

#define HEAP_DEFAULT_SIZE ((size_t)128 << 20)
/* Every block starts on a cache line: no false sharing between blocks,
 * and any scalar type (long double, 16-byte atomics) is aligned. */
#define HEAP_MIN_ALIGN 64

typedef struct {
    size_t offset;
    size_t size;
    int    used;
} heap_block_t;

static heap_block_t *blocks;
static size_t nblocks, cap_blocks;

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

static int insert_block(size_t at, heap_block_t b)
{
    if (nblocks == cap_blocks) {
        size_t cap = cap_blocks ? cap_blocks * 2 : 64;
        heap_block_t *nb = realloc(blocks, cap * sizeof(*nb));

        if (nb == NULL)
            return -1;
        blocks = nb;
        cap_blocks = cap;
    }
    memmove(&blocks[at + 1], &blocks[at], (nblocks - at) * sizeof(*blocks));
    blocks[at] = b;
    nblocks++;
    return 0;
}

static void remove_block(size_t at)
{
    memmove(&blocks[at], &blocks[at + 1],
            (nblocks - at - 1) * sizeof(*blocks));
    nblocks--;
}

static size_t heap_size_from_env(void)
{
    const char *text = getenv("SHMEM_SYMMETRIC_SIZE");
    size_t bytes;

    if (text == NULL)
        return HEAP_DEFAULT_SIZE;
    /* (a size within a page of SIZE_MAX would round up to 0) */
    if (shmemi_parse_size(text, &bytes) != 0 || bytes == 0 ||
        bytes > SIZE_MAX - (size_t)sysconf(_SC_PAGESIZE)) {
        shmemi_warn("SHMEM_SYMMETRIC_SIZE=%s is not a size (a number with "
                    "an optional K, M, G or T); using %zu", text,
                    HEAP_DEFAULT_SIZE);
        return HEAP_DEFAULT_SIZE;
    }
    return round_up(bytes, (size_t)sysconf(_SC_PAGESIZE));
}

/* Set when the heap is used through an aligned second mapping. */
static void *heap_alias;

/* The largest power of two not above v (v > 0). */
static size_t pow2_floor(size_t v)
{
    size_t p = 1;

    while (p <= v / 2)
        p *= 2;
    return p;
}

/* Blocks have the same offset on every PE, so shmem_align(A) gives an
 * address aligned to A on every PE only if every heap base is: the
 * region pami allocates is page aligned only. So the heap is used through
 * a second mapping of the region's pages (mremap with old size 0, as for
 * the globals) at an address aligned to the largest power of two not
 * above its size; pami keeps reaching the pages through the region.
 * Returns the alias, or the region's base when that fails. */
static void *heap_aligned_alias(void *base, size_t size)
{
    size_t align = pow2_floor(size);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *room, *at;
    void *alias;

    if (align <= page || (uintptr_t)base % align == 0)
        return base;
    room = mmap(NULL, size + align, PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (room == MAP_FAILED) {
        shmemi_debug("heap aligned to pages only: mmap(%zu): %s",
                     size + align, strerror(errno));
        return base;
    }
    at = (char *)round_up((uintptr_t)room, align);
    /* The system call itself: UCX's memory hooks replace mremap and
     * refuse this form. MREMAP_FIXED replaces the reservation at at. */
    alias = (void *)syscall(SYS_mremap, base, (size_t)0, size,
                            MREMAP_MAYMOVE | MREMAP_FIXED, at);
    if (alias != (void *)at) {
        shmemi_debug("heap aligned to pages only: mremap onto %p: %s",
                     (void *)at, strerror(errno));
        munmap(room, size + align);
        return base;
    }
    if (at > room)
        munmap(room, (size_t)(at - room));
    if (room + size + align > at + size)
        munmap(at + size, (size_t)(room + size + align - (at + size)));
    heap_alias = alias;
    return alias;
}

int shmemi_heap_init(void)
{
    shmemi_segment_t *seg = &shmemi.seg[SHMEMI_SEG_HEAP];
    size_t size = heap_size_from_env();
    void *base;
    pami_result_t rc;

    /* pami's shared segment: the node's other PEs map it (shmem_ptr,
     * load/store RMA, CPU atomics); pages are taken as they are
     * touched. */
    rc = pami_memregion_alloc(shmemi.context, size, &base, &seg->mr);
    if (rc != PAMI_SUCCESS) {
        shmemi_warn("cannot allocate a symmetric heap of %zu bytes "
                    "(SHMEM_SYMMETRIC_SIZE): %s", size, pami_error_text(rc));
        return -1;
    }
    seg->base = heap_aligned_alias(base, size);
    seg->size = size;
    seg->registered = 1;
    nblocks = 0;
    if (insert_block(0, (heap_block_t){ 0, size, 0 }) != 0)
        return -1;
    return shmemi_segment_exchange(seg);
}

void shmemi_heap_fini(void)
{
    shmemi_segment_t *seg = &shmemi.seg[SHMEMI_SEG_HEAP];

    /* Destroying the region frees the memory once the alias is gone. */
    shmemi_segment_release(seg);
    if (heap_alias != NULL)
        munmap(heap_alias, seg->size);
    heap_alias = NULL;
    seg->base = NULL;
    seg->size = 0;
    free(blocks);
    blocks = NULL;
    nblocks = cap_blocks = 0;
}

void *shmemi_heap_alloc_tail(size_t size)
{
    shmemi_segment_t *seg = &shmemi.seg[SHMEMI_SEG_HEAP];

    size = round_up(size == 0 ? 1 : size, HEAP_MIN_ALIGN);
    if (nblocks != 1 || blocks[0].used || blocks[0].size < size)
        return NULL;
    blocks[0].size -= size;
    if (insert_block(1, (heap_block_t){ seg->size - size, size, 1 }) != 0) {
        blocks[0].size += size;
        return NULL;
    }
    return seg->base + seg->size - size;
}

/* First fit: the lowest free block that holds an aligned start. */
void *shmemi_heap_alloc(size_t alignment, size_t size)
{
    shmemi_segment_t *seg = &shmemi.seg[SHMEMI_SEG_HEAP];

    if (alignment < HEAP_MIN_ALIGN)
        alignment = HEAP_MIN_ALIGN;
    /* Offsets align only as far as every PE's base does (0 before init's
     * agreement: the help block, which asks for no alignment). */
    if (shmemi.heap_align != 0 && alignment > shmemi.heap_align) {
        shmemi_debug("heap: alignment %zu is beyond the %zu every PE's "
                     "heap has", alignment, shmemi.heap_align);
        return NULL;
    }
    if (size > seg->size)
        return NULL;
    size = round_up(size == 0 ? 1 : size, HEAP_MIN_ALIGN);
    for (size_t i = 0; i < nblocks; i++) {
        heap_block_t b = blocks[i];
        size_t start, lead;

        if (b.used)
            continue;
        start = round_up(b.offset, alignment);
        lead = start - b.offset;
        if (start < b.offset || lead > b.size || b.size - lead < size)
            continue;
        if (lead > 0) {
            /* The skipped lead stays a free block of its own. */
            blocks[i].size = lead;
            if (insert_block(++i, (heap_block_t){ start, b.size - lead, 0 }))
                return NULL;
            b = blocks[i];
        }
        if (b.size > size &&
            insert_block(i + 1, (heap_block_t){ start + size,
                                               b.size - size, 0 }) != 0)
            return NULL;
        blocks[i].size = size;
        blocks[i].used = 1;
        return seg->base + start;
    }
    return NULL;
}

/* A first store to a page of a peer's heap through the mapping costs a
 * page fault (about 1 us here, more than a 64 KiB copy takes); a
 * benchmark's first put of each size, or a program's first pass over a
 * block, pays one per page. Filling the page tables at allocation moves
 * that cost into shmem_malloc. It also makes the block's pages resident
 * on its owner, which is why a very large block is left alone. */
#define SHMEMI_PREFAULT_MAX ((size_t)64 << 20)

void shmemi_heap_prefault(void *p, size_t size)
{
#ifdef MADV_POPULATE_WRITE
    static int unsupported;
    shmemi_segment_t *seg = &shmemi.seg[SHMEMI_SEG_HEAP];
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    if (p == NULL || size > SHMEMI_PREFAULT_MAX || unsupported)
        return;
    size_t lo = (size_t)((char *)p - seg->base) / page * page;
    size_t hi = round_up((size_t)((char *)p - seg->base) + size, page);
    for (int pe = 0; pe < shmemi.n_pes; pe++) {
        if (pe == shmemi.my_pe || seg->mapped[pe] == NULL)
            continue;
        if (madvise(seg->mapped[pe] + lo, hi - lo, MADV_POPULATE_WRITE)
            != 0) {
            /* An older kernel (before 5.14) has no such advice: the pages
             * then fault when first touched, as without it. */
            shmemi_debug("madvise(MADV_POPULATE_WRITE) of PE %d's heap: %s",
                         pe, strerror(errno));
            if (errno == EINVAL)
                unsupported = 1;
            return;
        }
    }
#else
    (void)p;
    (void)size;
#endif
}

static size_t find_used(void *ptr)
{
    shmemi_segment_t *seg = &shmemi.seg[SHMEMI_SEG_HEAP];
    size_t offset;
    size_t lo = 0, hi = nblocks;

    if ((char *)ptr < seg->base || (char *)ptr >= seg->base + seg->size)
        return SIZE_MAX;
    offset = (size_t)((char *)ptr - seg->base);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (blocks[mid].offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < nblocks && blocks[lo].offset == offset && blocks[lo].used)
        return lo;
    return SIZE_MAX;
}

size_t shmemi_heap_block_size(void *ptr)
{
    size_t i = find_used(ptr);

    return i == SIZE_MAX ? 0 : blocks[i].size;
}

void shmemi_heap_free(void *ptr)
{
    size_t i = find_used(ptr);

    if (i == SIZE_MAX) {
        shmemi_warn("shmem_free(%p): not a block of the symmetric heap; "
                    "ignored", ptr);
        return;
    }
    blocks[i].used = 0;
    if (i + 1 < nblocks && !blocks[i + 1].used) {
        blocks[i].size += blocks[i + 1].size;
        remove_block(i + 1);
    }
    if (i > 0 && !blocks[i - 1].used) {
        blocks[i - 1].size += blocks[i].size;
        remove_block(i);
    }
}

size_t shmemi_heap_used(void)
{
    size_t used = 0;

    for (size_t i = 0; i < nblocks; i++)
        if (blocks[i].used)
            used += blocks[i].size;
    return used;
}
