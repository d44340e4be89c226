/*
 * A task dies in the middle of a split read on one node
 * (docs/protocols/rendezvous.md, "Two cores on one transfer"): a large
 * send whose target reads the lower part itself and asks the origin to
 * write the upper part. The survivor must see its callbacks once each,
 * with PAMI_PEER_FAILED, and destroy must return.
 *
 *   split_death origin|target     which of the two dies (task 1)
 *
 * Two processes on the oob bootstrap (no launcher kills the survivor);
 * a second socketpair orders the steps so that the death falls at the
 * same point every run:
 *  - origin: the target's handler has run, its request to the origin is
 *    out and its own part read while the origin does not progress; the
 *    origin dies before it could write. The target waits for an answer
 *    that never comes: PAMI_PEER_FAILED to the handler's local_fn.
 *  - target: it dies right after its part and its request; the origin
 *    then finds the request (or the death first): its send ends with
 *    remote_fn(PAMI_PEER_FAILED).
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

#define OOB_PROG "split_death"
#include "oob_pair.h"

#define ID_DATA 3
#define BYTES   ((size_t)16 << 20) /* above the split threshold (8 MiB) */

static int           step_fd; /* the second socketpair: ordering only */
static char         *landing;
static int           handled, recv_calls, local_calls, remote_calls;
static pami_result_t recv_rc, local_rc, remote_rc;

static void step_send(char c)
{
    CHECK(write(step_fd, &c, 1) == 1, "step write");
}

static void step_wait(char want)
{
    char c = 0;
    CHECK(read(step_fd, &c, 1) == 1 && c == want, "step read (%c)", want);
}

static bool step_ready(void)
{
    struct pollfd p = {.fd = step_fd, .events = POLLIN};
    return poll(&p, 1, 0) == 1;
}

static void on_recv_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    recv_calls++;
    recv_rc = rc;
}

static void on_data(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)hdr; (void)hlen; (void)origin;
    CHECK(data == NULL && recv != NULL && dlen == BYTES,
          "a %zu-byte message did not come by rendezvous", dlen);
    /* Tell the origin, and hold on (a socket, not pami) until it stopped
     * progressing: the request to write leaves after we return. */
    step_send('h');
    step_wait('a');
    recv->addr     = landing;
    recv->local_fn = on_recv_done;
    handled++;
}

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    local_calls++;
    local_rc = rc;
}

static void on_remote(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    remote_calls++;
    remote_rc = rc;
}

static void run(int rank, int fd, bool origin_dies)
{
    oob_t          oob = {.fd = fd, .rank = rank};
    pami_client_t  client;
    pami_context_t ctx;
    oob_pair_open(&oob, "split_death", &client, &ctx);
    CHECK(pami_dispatch_set(ctx, ID_DATA, on_data, NULL, NULL) ==
          PAMI_SUCCESS, "dispatch_set");
    CHECK(pami_dispatch_fence(client) == PAMI_SUCCESS, "task %d: fence",
          rank);

    /* Task 1 dies: it is the origin or the target as asked. */
    bool is_origin = (rank == 1) == origin_dies;
    bool dies      = rank == 1;
    if (is_origin) {
        char *buf = malloc(BYTES);
        CHECK(buf != NULL, "out of memory");
        memset(buf, 0x3c, BYTES);
        pami_endpoint_t peer;
        pami_endpoint_create(client, (pami_task_t)(1 - rank), 0, &peer);
        pami_send_t s = {
            .send = {.dest = peer, .dispatch = ID_DATA, .data = buf,
                     .data_len = BYTES},
            .local_fn = on_local, .remote_fn = on_remote};
        CHECK(pami_send(ctx, &s) == PAMI_SUCCESS, "send");
        /* Progress (the request must leave) until the handler ran. */
        double end = now() + 30;
        while (!step_ready() && now() < end)
            pami_context_advance(ctx, 1);
        CHECK(step_ready(), "the target's handler did not run in 30 s");
        step_wait('h');
        step_send('a');
        step_wait('r'); /* the target read its part; we never wrote */
        if (dies)
            raise(SIGKILL);
        /* The target died: the send ends, remote_fn with the failure. */
        end = now() + 30;
        while (remote_calls == 0 && now() < end)
            pami_context_wait(ctx, 100);
        CHECK(local_calls == 1 && remote_calls == 1, "local_fn %d times, "
              "remote_fn %d times 30 s after the target died", local_calls,
              remote_calls);
        CHECK(remote_rc == PAMI_PEER_FAILED, "remote_fn got %s",
              pami_error_text(remote_rc));
        CHECK(local_rc == PAMI_SUCCESS || local_rc == PAMI_PEER_FAILED,
              "local_fn got %s", pami_error_text(local_rc));
        free(buf);
    } else {
        landing = malloc(BYTES);
        CHECK(landing != NULL, "out of memory");
        double end = now() + 30;
        while (handled == 0 && now() < end)
            pami_context_wait(ctx, 100);
        CHECK(handled == 1, "no large message in 30 s");
        /* The call that ran the handler read our part too. */
        step_send('r');
        if (dies)
            raise(SIGKILL);
        end = now() + 30;
        while (recv_calls == 0 && now() < end)
            pami_context_wait(ctx, 100);
        CHECK(recv_calls == 1, "the receive ended %d times in 30 s after "
              "the origin died", recv_calls);
        CHECK(recv_rc == PAMI_PEER_FAILED, "the receive ended with %s",
              pami_error_text(recv_rc));
        free(landing);
    }
    double took = oob_survivor_end(ctx, &client);
    printf("split_death: the %s died; the survivor's callbacks ran once "
           "with PAMI_PEER_FAILED, destroy in %.2f s\n",
           origin_dies ? "origin" : "target", took);
}

int main(int argc, char **argv)
{
    CHECK(argc == 2 && (strcmp(argv[1], "origin") == 0 ||
                        strcmp(argv[1], "target") == 0),
          "usage: split_death origin|target");
    bool origin_dies = strcmp(argv[1], "origin") == 0;
    oob_pair_run_killed(run, &step_fd, origin_dies);
    return 0;
}
