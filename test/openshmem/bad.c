/* Bad use and global exit; each mode ends the job, and the test checks
 * how (expect_exit.sh: the exit code and a line of the output).
 *   exit N     PE n-1 calls shmem_global_exit(N) while the others wait
 *              in a barrier: every PE ends, the job's code is N
 *   pe-range   a put to PE n: the job ends with a message, code 1
 *   nonsym     a put to a stack address: the same
 *   atomic-pe  an atomic to PE -1: the same
 *   coll-nonsym a 4 KiB broadcast on the world team (one node) whose
 *              source is a stack array on every PE: the same
 *   heap-sizes PE 1's symmetric heap smaller than the others' (its
 *              SHMEM_SYMMETRIC_SIZE differs): shmem_init ends the job
 *              with a message, code 1
 *   exhaust    shmem_malloc beyond the heap: NULL on every PE (with
 *              SHMEM_DEBUG a message says why), then exit 0 */
#include <string.h>
#include <unistd.h>

#include <shmem.h>

#include "shmem_check.h"

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    long *heap, local = 0;
    int me, n;

    if (strcmp(mode, "heap-sizes") == 0) {
        /* Heaps of different sizes: PE 1's is smaller. */
        const char *rank = getenv("PAMI_RANK");

        setenv("SHMEM_SYMMETRIC_SIZE",
               rank != NULL && strcmp(rank, "1") == 0 ? "1M" : "8M", 1);
    }
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    heap = shmem_malloc(sizeof(long));
    if (strcmp(mode, "exit") == 0 && argc > 2) {
        if (me == n - 1) {
            usleep(100 * 1000); /* the others are in the barrier */
            shmem_global_exit(atoi(argv[2]));
        }
        shmem_barrier_all();
        CHECK(0, "the barrier returned after shmem_global_exit");
    } else if (strcmp(mode, "pe-range") == 0) {
        shmem_long_p(heap, 1, n);
    } else if (strcmp(mode, "nonsym") == 0) {
        shmem_long_put(&local, heap, 1, (me + 1) % n);
    } else if (strcmp(mode, "coll-nonsym") == 0) {
        static char dest[4096]; /* a global: symmetric */
        char stack[4096];

        memset(stack, me, sizeof(stack));
        shmem_char_broadcast(SHMEM_TEAM_WORLD, dest, stack, sizeof(stack),
                             0);
    } else if (strcmp(mode, "heap-sizes") == 0) {
        /* Inside PE 0's heap, past PE 1's. */
        char *big = shmem_malloc(4 << 20);
        static char src[1 << 20];

        if (big != NULL && me == 0)
            shmem_putmem(big + (3 << 20), src, sizeof(src), 1);
        shmem_barrier_all();
        CHECK(0, "heaps of different sizes were used");
    } else if (strcmp(mode, "atomic-pe") == 0) {
        shmem_long_atomic_add(heap, 1, -1);
    } else if (strcmp(mode, "exhaust") == 0) {
        void *p = shmem_malloc((size_t)1 << 40);

        CHECK(p == NULL, "1 TiB of symmetric heap given");
        p = shmem_malloc(1024);
        CHECK(p != NULL, "no heap left after an exhaustion");
        shmem_free(p);
        shmem_finalize();
        return 0;
    } else {
        CHECK(0, "unknown mode '%s'", mode);
    }
    CHECK(0, "mode %s went on", mode);
    return 0;
}
