/* shmem_malloc and its family: collective calls over the heap
 * allocator, with the synchronization the specification gives each. */
#include <string.h>

#include "shmem_internal.h"

static void *alloc_collective(const char *fn, size_t alignment, size_t size)
{
    void *p;

    shmemi_require_init(fn);
    if (size == 0)
        return NULL;
    p = shmemi_heap_alloc(alignment, size);
    if (p == NULL)
        shmemi_debug("%s(%zu): the symmetric heap (SHMEM_SYMMETRIC_SIZE="
                     "%zu) has no free block that large", fn, size,
                     shmemi.seg[SHMEMI_SEG_HEAP].size);
    shmemi_heap_prefault(p, size);
    /* Every PE returns once all have allocated. */
    shmemi_barrier_world();
    return p;
}

void *shmem_malloc(size_t size)
{
    return alloc_collective("shmem_malloc", 0, size);
}

void *shmem_malloc_with_hints(size_t size, long hints)
{
    /* Hints are performance advice; every block serves every use. */
    (void)hints;
    return alloc_collective("shmem_malloc_with_hints", 0, size);
}

void *shmem_calloc(size_t count, size_t size)
{
    void *p;

    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    shmemi_require_init("shmem_calloc");
    if (count * size == 0)
        return NULL;
    p = shmemi_heap_alloc(0, count * size);
    /* Zeroed before the barrier: no peer can store into it first. */
    if (p != NULL)
        memset(p, 0, count * size);
    else
        shmemi_debug("shmem_calloc(%zu, %zu): the symmetric heap has no "
                     "free block that large", count, size);
    shmemi_heap_prefault(p, count * size);
    shmemi_barrier_world();
    return p;
}

void *shmem_align(size_t alignment, size_t size)
{
    /* A power of two, as for posix_memalign. */
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        shmemi_require_init("shmem_align");
        shmemi_debug("shmem_align(%zu, %zu): alignment is not a power of "
                     "two", alignment, size);
        shmemi_barrier_world();
        return NULL;
    }
    return alloc_collective("shmem_align", alignment, size);
}

void shmem_free(void *ptr)
{
    shmemi_require_init("shmem_free");
    if (ptr == NULL)
        return;
    /* No PE may still access the block: every PE enters first. */
    shmemi_barrier_world();
    shmemi_heap_free(ptr);
}

void *shmem_realloc(void *ptr, size_t size)
{
    size_t old;
    void *p;

    shmemi_require_init("shmem_realloc");
    if (ptr == NULL)
        return shmem_malloc(size);
    if (size == 0) {
        shmem_free(ptr);
        return NULL;
    }
    old = shmemi_heap_block_size(ptr);
    if (old == 0) {
        shmemi_warn("shmem_realloc(%p): not a block of the symmetric heap",
                    ptr);
        shmemi_barrier_world();
        return NULL;
    }
    shmemi_barrier_world();
    /* Allocate before freeing, so the contents are copied whole; on
     * failure the old block stays, as for realloc. */
    p = shmemi_heap_alloc(0, size);
    shmemi_heap_prefault(p, size);
    if (p != NULL) {
        memcpy(p, ptr, old < size ? old : size);
        shmemi_heap_free(ptr);
    } else {
        shmemi_debug("shmem_realloc(%zu): the symmetric heap has no free "
                     "block that large", size);
    }
    shmemi_barrier_world();
    return p;
}

void *shmalloc(size_t size)
{
    return shmem_malloc(size);
}

void *shmemalign(size_t alignment, size_t size)
{
    return shmem_align(alignment, size);
}

void *shrealloc(void *ptr, size_t size)
{
    return shmem_realloc(ptr, size);
}

void shfree(void *ptr)
{
    shmem_free(ptr);
}
