/*
 * The Open MPI reference of the group tests, built into pami-bench-mpi
 * only: the same loop as pami's, on MPI, in the same processes, so each
 * line is a ratio measured moments apart. Run it under mpirun with the UCX
 * pml (docs/PERFORMANCE.md gives the command).
 */
#include <mpi.h>
#include <stdlib.h>

#include "bench.h"

int bench_mpi_init(int *argc, char ***argv)
{
    return MPI_Init(argc, argv) == MPI_SUCCESS ? 0 : -1;
}

void bench_mpi_fini(void)
{
    MPI_Finalize();
}

double bench_mpi_barrier(size_t ops)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bench_now();
    for (size_t i = 0; i < ops; i++)
        MPI_Barrier(MPI_COMM_WORLD);
    return bench_now() - t0;
}

const char *bench_mpi_pml(void)
{
    /* What the job chose is in the MCA parameter the launcher passed. */
    const char *pml = getenv("OMPI_MCA_pml");
    return pml != NULL ? pml : "default";
}
