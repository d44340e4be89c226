/*
 * pami-coll-loop: one blocking collective on the world geometry in a
 * loop, named or AUTO, and its time per call (task 0's, per batch
 * between two barriers). Made to compare what AUTO's call costs beside
 * the named call of the algorithm AUTO picks: under callgrind the
 * instructions per call do not move with the machine's load, which the
 * times do (docs/PERFORMANCE.md, "AUTO's call beside the named one").
 *
 *   pamirun -n N pami-coll-loop bcast|allreduce|allgather|alltoall|barrier
 *           BYTES ALGORITHM|auto [CALLS [BATCHES]]
 *   pamirun -n N pami-coll-loop geometry_barrier 0 auto [CALLS [BATCHES]]
 *
 * bcast moves bytes from rank 0; allreduce sums BYTES / 8 doubles;
 * allgather gathers BYTES from each task, alltoall sends BYTES to each
 * (BYTES x N at most 4 MiB);
 * geometry_barrier calls pami_geometry_barrier (AUTO only).
 */
#include <pami.h>
#include <pami_collectives.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_BYTES (4u << 20)

static void die(const char *what, pami_result_t rc)
{
    fprintf(stderr, "pami-coll-loop: %s: %s\n", what, pami_error_text(rc));
    exit(1);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void usage(void)
{
    fprintf(stderr, "usage: pami-coll-loop bcast|allreduce|allgather|"
                    "alltoall|barrier|geometry_barrier BYTES ALGORITHM|auto "
                    "[CALLS [BATCHES]]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 6)
        usage();
    const char *kind = argv[1], *name = argv[3];
    long bytes = atol(argv[2]);
    long calls = argc > 4 ? atol(argv[4]) : 100000;
    long batches = argc > 5 ? atol(argv[5]) : 5;
    bool red = strcmp(kind, "allreduce") == 0;
    bool gat = strcmp(kind, "allgather") == 0;
    bool a2a = strcmp(kind, "alltoall") == 0;
    bool gbar = strcmp(kind, "geometry_barrier") == 0;
    bool bar = gbar || strcmp(kind, "barrier") == 0;
    if ((!red && !gat && !a2a && !bar && strcmp(kind, "bcast") != 0) ||
        (gbar && strcmp(name, "auto") != 0) || bytes < 0 ||
        bytes > (long)MAX_BYTES || (red && bytes % 8 != 0) || calls < 1 ||
        batches < 1)
        usage();

    pami_client_t client;
    pami_context_t ctx;
    pami_result_t rc = pami_client_create("pami-coll-loop", NULL, &client);
    if (rc != PAMI_SUCCESS)
        die("pami_client_create", rc);
    pami_client_attr_t ca = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                           PAMI_CLIENT_ATTR_SIZE};
    if ((rc = pami_client_query(client, &ca)) != PAMI_SUCCESS)
        die("pami_client_query", rc);
    if ((gat || a2a) && (size_t)bytes * ca.size > MAX_BYTES)
        usage();
    if ((rc = pami_context_createv(client, NULL, 1, &ctx)) != PAMI_SUCCESS)
        die("pami_context_createv", rc);
    pami_geometry_t world;
    if ((rc = pami_geometry_world(ctx, &world)) != PAMI_SUCCESS)
        die("pami_geometry_world", rc);
    pami_algorithm_t id = PAMI_ALGORITHM_AUTO;
    if (strcmp(name, "auto") != 0 &&
        (rc = pami_algorithm_by_name(name, &id)) != PAMI_SUCCESS)
        die(name, rc);
    double *sbuf = calloc(MAX_BYTES / 8 + 1, sizeof(double));
    double *rbuf = calloc(MAX_BYTES / 8 + 1, sizeof(double));
    if (sbuf == NULL || rbuf == NULL)
        die("calloc", PAMI_ENOMEM);
    pami_xfer_t x = {
        .field_mask = id != PAMI_ALGORITHM_AUTO ? PAMI_XFER_FIELD_ALGORITHM : 0,
        .kind = red ? PAMI_XFER_ALLREDUCE : gat ? PAMI_XFER_ALLGATHER
              : a2a ? PAMI_XFER_ALLTOALL : bar ? PAMI_XFER_BARRIER
                    : PAMI_XFER_BROADCAST,
        .geometry = world, .algorithm = id, .root = 0,
        .sbuf = red || gat || a2a ? sbuf : NULL, .rbuf = rbuf,
        .count = red ? (size_t)bytes / 8 : (size_t)bytes,
        .dtype = red ? PAMI_TYPE_DOUBLE : PAMI_TYPE_BYTE, .op = PAMI_OP_SUM};
    for (long b = 0; b < batches; b++) {
        if ((rc = pami_geometry_barrier(ctx, world)) != PAMI_SUCCESS)
            die("barrier", rc);
        double t0 = now_s();
        for (long i = 0; i < calls; i++)
            if ((rc = gbar ? pami_geometry_barrier(ctx, world)
                           : pami_collective_wait(ctx, &x)) != PAMI_SUCCESS)
                die(kind, rc);
        double t = now_s() - t0;
        if ((rc = pami_geometry_barrier(ctx, world)) != PAMI_SUCCESS)
            die("barrier", rc);
        if (ca.task == 0)
            printf("%s %ld B %s: %.4f us a call\n", kind, bytes, name,
                   t * 1e6 / (double)calls);
    }
    free(sbuf);
    free(rbuf);
    pami_context_destroyv(&ctx, 1);
    pami_client_destroy(&client);
    return 0;
}
