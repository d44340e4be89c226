/* What the openshmem test programs share: a check that names the PE and
 * the line, and ends the job (non-zero) on failure. */
#ifndef SHMEM_CHECK_H
#define SHMEM_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s: ",              \
                    shmem_my_pe(), __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            fflush(stderr);                                                  \
            shmem_global_exit(1);                                            \
        }                                                                    \
    } while (0)

#endif
