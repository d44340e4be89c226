/* Distributed locks on a symmetric long: the word of PE 0 holds 0 (free)
 * or 1 + the holder's PE, changed by compare-and-swap. A PE that finds it
 * held polls it, driving progress and yielding between tries. */
#include "shmem_internal.h"

static long take(long *lock)
{
    return shmem_long_atomic_compare_swap(lock, 0, shmemi.my_pe + 1L, 0);
}

void shmem_set_lock(long *lock)
{
    shmemi_poll_t ps = { 0 };

    shmemi_require_init("shmem_set_lock");
    while (take(lock) != 0)
        shmemi_poll(shmemi.context, &ps);
}

int shmem_test_lock(long *lock)
{
    shmemi_require_init("shmem_test_lock");
    if (take(lock) == 0)
        return 0;
    /* A program that loops on test_lock must still serve the operations
     * of the PEs that go through pami to this PE's memory (the holder's
     * release among them). */
    shmemi_progress(shmemi.context);
    return 1;
}

void shmem_clear_lock(long *lock)
{
    long holder;

    shmemi_require_init("shmem_clear_lock");
    /* What was written under the lock is complete before it is free. */
    shmem_quiet();
    holder = shmem_long_atomic_compare_swap(lock, shmemi.my_pe + 1L, 0, 0);
    if (holder != shmemi.my_pe + 1L)
        shmemi_warn("shmem_clear_lock(%p): this PE does not hold the lock "
                    "(%s); left as it was", (void *)lock,
                    holder == 0 ? "free" : "held by another PE");
}

/* The deprecated cache calls: the memory is coherent, nothing to do. */
void shmem_clear_cache_inv(void) {}
void shmem_set_cache_inv(void) {}
void shmem_clear_cache_line_inv(void *dest) { (void)dest; }
void shmem_set_cache_line_inv(void *dest) { (void)dest; }
void shmem_udcflush(void) {}
void shmem_udcflush_line(void *dest) { (void)dest; }
