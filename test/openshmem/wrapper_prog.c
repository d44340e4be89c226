/* Built by the oshcc test with oshcc alone (as a program outside pami
 * would be), run by oshrun: a heap block and a global array, each PE
 * puts its number into its right neighbour's, PE 0 sums them by get. */
#include <stdio.h>

#include <shmem.h>

static int ring[2];

int main(void)
{
    int me, n, *cell, sum = 0, want = 0;

    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    cell = shmem_malloc(sizeof(int));
    shmem_int_p(cell, me, (me + 1) % n);
    shmem_int_p(&ring[1], me, (me + 1) % n);
    shmem_barrier_all();
    if (me == 0) {
        for (int pe = 0; pe < n; pe++) {
            sum += shmem_int_g(cell, pe) + shmem_int_g(&ring[1], pe);
            want += 2 * pe;
        }
        printf("sum %d of %d PEs: %s\n", sum, n, sum == want ? "ok" : "WRONG");
    }
    shmem_barrier_all();
    shmem_free(cell);
    shmem_finalize();
    return me == 0 && sum != want;
}
