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

static void mpi_coll_once(test_id_t test, const void *sbuf, void *rbuf,
                          int count)
{
    switch (test) {
    case T_ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case T_BCAST:
        MPI_Bcast(rbuf, count, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case T_ALLGATHER:
        MPI_Allgather(sbuf, count, MPI_BYTE, rbuf, count, MPI_BYTE,
                      MPI_COMM_WORLD);
        break;
    case T_ALLTOALL:
        MPI_Alltoall(sbuf, count, MPI_BYTE, rbuf, count, MPI_BYTE,
                     MPI_COMM_WORLD);
        break;
    case T_REDUCE:
        MPI_Reduce(sbuf, rbuf, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case T_REDUCE_SCATTER:
        MPI_Reduce_scatter_block(sbuf, rbuf, count, MPI_DOUBLE, MPI_SUM,
                                 MPI_COMM_WORLD);
        break;
    default:
        bench_die("no MPI collective for test %d", (int)test);
    }
}

void bench_mpi_joint_barrier(void (*poll)(void *arg), void *arg)
{
    MPI_Request req;
    int         done = 0;
    stall_t     st;
    stall_init(&st, "barrier between pami and MPI");
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    while (!done) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        poll(arg);
        stall_check(&st);
    }
}

double bench_mpi_coll(test_id_t test, const void *sbuf, void *rbuf,
                      size_t count, size_t ops)
{
    if (count > 0x7fffffff)
        bench_die("count %zu does not fit an MPI int", count);
    /* The pami loop starts from a barrier too: both enter together. */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bench_now();
    for (size_t i = 0; i < ops; i++)
        mpi_coll_once(test, sbuf, rbuf, (int)count);
    /* A root (bcast) may finish its sends long before the others
     * received them: the closing barrier makes the time the group's. */
    MPI_Barrier(MPI_COMM_WORLD);
    return bench_now() - t0;
}

const char *bench_mpi_pml(void)
{
    /* What the job chose is in the MCA parameter the launcher passed. */
    const char *pml = getenv("OMPI_MCA_pml");
    return pml != NULL ? pml : "default";
}
