/* The symmetric heap's allocator: blocks are aligned, distinct, of the
 * same offset on every PE (every PE reports its offsets, PE 0 compares),
 * reusable after free, zeroed by calloc, kept by realloc; exhaustion
 * returns NULL and leaves the heap usable; shmem_align up to 1 MiB
 * aligns the address on every PE, beyond the heap base's alignment it
 * returns NULL. Run with
 * SHMEM_SYMMETRIC_SIZE=4M. */
#include <stdint.h>
#include <string.h>

#include <shmem.h>
#include <shmemx.h>

#include "shmem_check.h"

/* shmemx.h says it has shmemx_wtime, as Sandia OpenSHMEM's does. */
#ifndef HAVE_SHMEMX_WTIME
#error "shmemx.h does not define HAVE_SHMEMX_WTIME"
#endif

#define NBLOCKS 32

int main(void)
{
    char *blk[NBLOCKS];
    size_t size, used, used0;
    char *big, *a, *c;

    shmem_init();
    shmemx_heap_query(&size, &used0);
    CHECK(size == (size_t)4 << 20, "heap size %zu (SHMEM_SYMMETRIC_SIZE=%s)",
          size, getenv("SHMEM_SYMMETRIC_SIZE"));

    for (int i = 0; i < NBLOCKS; i++) {
        blk[i] = shmem_malloc((size_t)(i * 37 + 1));
        CHECK(blk[i] != NULL, "malloc %d", i);
        CHECK((uintptr_t)blk[i] % 16 == 0, "block %d misaligned", i);
        memset(blk[i], i, (size_t)(i * 37 + 1));
    }
    for (int i = 0; i < NBLOCKS; i++)
        for (int j = 0; j < (i * 37 + 1); j++)
            CHECK(blk[i][j] == (char)i, "block %d overlaps another", i);
    for (int i = 0; i < NBLOCKS; i += 2)
        shmem_free(blk[i]);
    for (int i = 1; i < NBLOCKS; i += 2)
        shmem_free(blk[i]);
    shmemx_heap_query(NULL, &used);
    CHECK(used == used0, "%zu bytes still used after every free", used);

    a = shmem_align(4096, 100);
    CHECK(a != NULL && (uintptr_t)a % 4096 == 0, "align 4096: %p", a);
    CHECK(shmem_align(3, 8) == NULL, "alignment 3 accepted");
    /* Alignments above a page hold on every PE (the heap's base is
     * aligned that far), and a put from the neighbour lands there. */
    for (size_t al = 8192; al <= ((size_t)1 << 20); al *= 2) {
        long *w = shmem_align(al, sizeof(long));
        int me = shmem_my_pe(), n = shmem_n_pes();
        CHECK(w != NULL && (uintptr_t)w % al == 0, "align %zu: %p", al,
              (void *)w);
        shmem_long_p(w, (long)(al + (size_t)me), (me + 1) % n);
        shmem_barrier_all();
        CHECK(*w == (long)(al + (size_t)((me + n - 1) % n)),
              "align %zu: %ld after the neighbour's put", al, *w);
        shmem_free(w);
    }
    /* Beyond what the heap's base is aligned to on every PE: NULL (before,
     * an address aligned only to the base's alignment). */
    for (int sh = 40; sh <= 63; sh += 23) {
        void *w = shmem_align((size_t)1 << sh, 8);
        CHECK(w == NULL || (uintptr_t)w % ((size_t)1 << sh) == 0,
              "align 2^%d: %p", sh, w);
        shmem_free(w);
    }
    c = shmem_calloc(1000, sizeof(int));
    CHECK(c != NULL, "calloc");
    for (int i = 0; i < 1000 * (int)sizeof(int); i++)
        CHECK(c[i] == 0, "calloc byte %d is %d", i, c[i]);
    memset(c, 0x5a, 1000 * sizeof(int));
    c = shmem_realloc(c, 100000);
    CHECK(c != NULL, "realloc");
    for (int i = 0; i < 1000 * (int)sizeof(int); i++)
        CHECK(c[i] == 0x5a, "realloc lost byte %d", i);
    CHECK(shmem_malloc(0) == NULL, "malloc(0) is not NULL");

    /* Exhaustion: NULL on every PE, and the heap still serves. */
    big = shmem_malloc(size);
    CHECK(big == NULL, "a block as large as the heap was given");
    CHECK(shmem_calloc(SIZE_MAX / 2, 4) == NULL, "calloc overflow");
    big = shmem_malloc(size / 2);
    CHECK(big != NULL, "half the heap refused after an exhaustion");
    shmem_free(big);
    shmem_free(c);
    shmem_free(a);
    shmem_malloc_with_hints(64, SHMEM_MALLOC_ATOMICS_REMOTE);
    shmem_finalize();
    return 0;
}
