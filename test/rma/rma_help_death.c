/*
 * A task dies while a large put or get on one node is copied by both
 * sides (docs/protocols/rma.md, "Two cores on a large put or get"): the
 * origin copies the lower half, the owner, having claimed it, the upper.
 *
 *   rma_help_death owner|origin [get]   which of the two dies (task 1);
 *                                       get: the origin only gets
 *
 * With PAMI_RMA_VIA_OWNER=1 the same operations go through the owner in
 * pieces of PAMI_RMA_OWNER_PIECE (256 KiB): the owner dies while many of
 * an operation's pieces are out, which still ends it once.
 *
 * Two processes on the oob bootstrap (no launcher kills the survivor).
 * The dying task runs a thread that SIGKILLs it a few milliseconds after
 * the transfers began, so the death falls at a different point of them
 * from run to run (in the owner's part or the origin's, between them);
 * what is checked holds wherever it falls:
 *  - owner dies: the origin keeps putting and getting 32 MiB (the owner
 *    polling meanwhile) until one ends with PAMI_PEER_FAILED; every
 *    operation's callbacks ran exactly once, each with PAMI_SUCCESS or,
 *    from the death on, PAMI_PEER_FAILED; no offer stays open.
 *  - origin dies: the owner, which serves parts of the origin's puts and
 *    gets, survives, finds the origin dead (a fence to it is refused
 *    with PAMI_PEER_FAILED) and is destroyed in time.
 */
#include <pami.h>

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define OOB_PROG "rma_help_death"
#include "oob_pair.h"

#define BYTES ((size_t)32 << 20) /* above PAMI_CMA_SPLIT (2 MiB) */

static int  step_fd; /* the second socketpair: the region and the start */
static bool only_gets;

#include "../cb_count.h"

static void run_origin(pami_context_t ctx, pami_endpoint_t peer,
                       const pami_memregion_t *mr, bool dies)
{
    char *buf = malloc(BYTES);
    CHECK(buf != NULL, "out of memory");
    memset(buf, 0x5a, BYTES);
    /* A first small get: the client's first CMA call moves alone, the
     * large ones after it are offered. */
    cb_count_t w  = {0};
    pami_rma_t wr = {.dest = peer, .local = buf, .bytes = 4096,
                     .remote_mr = mr, .local_fn = cb_count_local, .cookie = &w};
    CHECK(pami_get(ctx, &wr) == PAMI_SUCCESS, "first get");
    while (w.local == 0)
        pami_context_wait(ctx, 100);
    CHECK(w.local_rc == PAMI_SUCCESS, "first get: %s",
          pami_error_text(w.local_rc));
    char go = 'g';
    CHECK(write(step_fd, &go, 1) == 1, "step write");
    if (dies)
        die_soon();
    bool     failed = false;
    double   end    = now() + 60;
    unsigned i      = 0;
    for (; !failed; i++) {
        CHECK(now() < end, "no failure seen in 60 s (%u operations)", i);
        bool       put = !only_gets && i % 2 == 0;
        cb_count_t o   = {0};
        pami_rma_t r   = {.dest = peer, .local = buf, .bytes = BYTES,
                          .remote_mr = mr, .local_fn = cb_count_local,
                          .remote_fn = put ? cb_count_remote : NULL,
                          .cookie = &o};
        pami_result_t rc = put ? pami_put(ctx, &r) : pami_get(ctx, &r);
        if (rc == PAMI_PEER_FAILED)
            break; /* refused at the call: known dead already */
        CHECK(rc == PAMI_SUCCESS, "operation %u: %s", i,
              pami_error_text(rc));
        double op_end = now() + 30;
        while ((o.local == 0 || (put && o.remote == 0)) && now() < op_end)
            pami_context_wait(ctx, 100);
        for (int k = 0; k < 8; k++)
            pami_context_advance(ctx, 8);
        CHECK(o.local == 1 && o.remote == (put ? 1 : 0),
              "operation %u: local_fn %u times, remote_fn %u times", i,
              o.local, o.remote);
        CHECK(ok_or_failed(o.local_rc, &failed) &&
                  (!put || ok_or_failed(o.remote_rc, &failed)),
              "operation %u ended with %s / %s", i,
              pami_error_text(o.local_rc), pami_error_text(o.remote_rc));
    }
    CHECK(ctx->help_posted == 0, "%u offers still open", ctx->help_posted);
    printf("rma_help_death: the owner died; operation %u of the origin "
           "ended with PAMI_PEER_FAILED, %llu parts taken back\n", i,
           (unsigned long long)ctx->help_taken_back);
    free(buf);
}

static void on_fence(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)rc;
    (*(int *)cookie)++;
}

static void run_owner(pami_context_t ctx, pami_endpoint_t peer, bool dies)
{
    /* Polling meanwhile: through the owner, the origin's first get needs
     * this task's progress. */
    struct pollfd pf = {.fd = step_fd, .events = POLLIN};
    while (poll(&pf, 1, 0) == 0)
        pami_context_wait(ctx, 10);
    char go;
    CHECK(read(step_fd, &go, 1) == 1 && go == 'g', "step read");
    if (dies)
        die_soon();
    /* Serve until the origin is found dead: a fence to it is refused. */
    double end    = now() + 60;
    int    fences = 0;
    for (;;) {
        CHECK(now() < end, "the origin not found dead in 60 s");
        pami_context_wait(ctx, 10);
        pami_result_t rc = pami_fence_endpoint(ctx, peer, on_fence, &fences);
        if (rc == PAMI_PEER_FAILED)
            break;
        CHECK(rc == PAMI_SUCCESS, "fence: %s", pami_error_text(rc));
    }
    printf("rma_help_death: the origin died; the owner copied %llu parts "
           "and found it dead\n", (unsigned long long)ctx->help_served);
}

static void run(int rank, int fd, bool owner_dies)
{
    oob_t          oob = {.fd = fd, .rank = rank};
    pami_client_t  client;
    pami_context_t ctx;
    oob_pair_open(&oob, "rma_help_death", &client, &ctx);
    CHECK(pami_dispatch_fence(client) == PAMI_SUCCESS, "task %d: fence",
          rank);
    pami_endpoint_t peer;
    pami_endpoint_create(client, (pami_task_t)(1 - rank), 0, &peer);

    bool is_owner = (rank == 1) == owner_dies;
    bool dies     = rank == 1;
    if (is_owner) {
        char *mem = malloc(BYTES);
        CHECK(mem != NULL, "out of memory");
        memset(mem, 0xa5, BYTES);
        pami_memregion_t mr;
        CHECK(pami_memregion_create(ctx, mem, BYTES, &mr) == PAMI_SUCCESS,
              "memregion_create");
        CHECK(write(step_fd, &mr, sizeof(mr)) == (ssize_t)sizeof(mr),
              "step write");
        run_owner(ctx, peer, dies);
        /* mem stays registered: destroy deregisters it. */
    } else {
        pami_memregion_t mr;
        CHECK(read(step_fd, &mr, sizeof(mr)) == (ssize_t)sizeof(mr),
              "step read");
        run_origin(ctx, peer, &mr, dies);
    }
    CHECK(!dies, "task 1 was still alive after its work");
    double took = oob_survivor_end(ctx, &client);
    printf("rma_help_death: destroy in %.2f s\n", took);
}

int main(int argc, char **argv)
{
    CHECK((argc == 2 || (argc == 3 && strcmp(argv[2], "get") == 0)) &&
              (strcmp(argv[1], "owner") == 0 ||
               strcmp(argv[1], "origin") == 0),
          "usage: rma_help_death owner|origin [get]");
    only_gets = argc == 3;
    bool owner_dies = strcmp(argv[1], "owner") == 0;
    oob_pair_run_killed(run, &step_fd, owner_dies);
    return 0;
}
