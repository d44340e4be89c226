/* Prints what the environment set up, for the env-* tests (expect_exit.sh
 * matches the line): the heap's size (SHMEM_SYMMETRIC_SIZE). */
#include <stdio.h>

#include <shmem.h>
#include <shmemx.h>

int main(void)
{
    size_t size = 0;

    shmem_init();
    shmemx_heap_query(&size, NULL);
    if (shmem_my_pe() == 0)
        printf("heap %zu bytes\n", size);
    shmem_finalize();
    return 0;
}
