/*
 * A peer that dies turns pending operations into errors, not hangs.
 *
 * Two processes joined by the oob bootstrap over a socketpair (so no
 * launcher kills the survivor). Task 1 kills itself with SIGKILL from
 * inside a handler, in the middle of a stream of sends from task 0 that
 * ask for remote completion, some of them large (rendezvous). Task 0 must
 * then see every send's local_fn and remote_fn exactly once, the ones
 * still pending with PAMI_PEER_FAILED, new sends refused with
 * PAMI_PEER_FAILED, and destroy must return within its timeout.
 *
 *   peer_death [small|large]
 */
#include <pami.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define OOB_PROG "peer_death"
#include "oob_pair.h"

#define ID_DATA   3
#define MAX_SENDS 4096
#define DIE_AFTER 50

/* ---- task 1: receives, then dies mid-stream ---- */

static int received;
static char *landing;

static void on_data(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)hdr; (void)hlen; (void)data;
    (void)origin;
    if (recv != NULL)
        recv->addr = landing; /* large: fetch it (we may die meanwhile) */
    (void)dlen;
    if (++received == DIE_AFTER)
        raise(SIGKILL);
}

/* ---- task 0: counts every callback ---- */

typedef struct {
    int           local_calls, remote_calls;
    pami_result_t local_rc, remote_rc;
} track_t;

static track_t track[MAX_SENDS + 1];

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    track_t *t = cookie;
    t->local_calls++;
    t->local_rc = rc;
}

static void on_remote(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    track_t *t = cookie;
    t->remote_calls++;
    t->remote_rc = rc;
}

static void run(int rank, int fd, bool large)
{
    size_t         big = large ? (4u << 20) : (128u << 10);
    oob_t          oob = {.fd = fd, .rank = rank};
    pami_client_t  client;
    pami_context_t ctx;
    oob_pair_open(&oob, "peer_death", &client, &ctx);
    landing = malloc(big);
    CHECK(landing != NULL, "out of memory");
    CHECK(pami_dispatch_set(ctx, ID_DATA, on_data, NULL, NULL) == PAMI_SUCCESS,
          "dispatch_set");
    CHECK(pami_dispatch_fence(client) == PAMI_SUCCESS, "task %d: fence", rank);

    if (rank == 1) {
        /* Receive until the handler kills us. */
        double end = now() + 30;
        while (now() < end)
            pami_context_wait(ctx, 1000);
        CHECK(0, "task 1 did not die after %d messages", received);
    }

    pami_endpoint_t peer;
    pami_endpoint_create(client, 1, 0, &peer);
    char *buf = calloc(1, big);
    CHECK(buf != NULL, "out of memory");
    int sent = 0, refused = 0;
    double end = now() + 20;
    while (now() < end && sent <= MAX_SENDS) {
        /* All sent: wait for the death to be noticed, then try once more. */
        if (sent == MAX_SENDS) {
            pami_context_stats_t st;
            pami_context_stats(ctx, &st);
            if (st.peer_failures == 0) {
                pami_context_wait(ctx, 50);
                continue;
            }
        }
        /* Every fourth send is large enough for the rendezvous path. */
        size_t len = (sent % 4 == 3) ? big : 64;
        pami_send_t s = {
            .send = {.dest = peer, .dispatch = ID_DATA, .data = buf,
                     .data_len = len},
            .local_fn = on_local, .remote_fn = on_remote,
            .cookie = &track[sent],
        };
        pami_result_t rc = pami_send(ctx, &s);
        if (rc == PAMI_PEER_FAILED) {
            refused++;
            break;
        }
        CHECK(rc == PAMI_SUCCESS, "send %d: %s", sent, pami_error_text(rc));
        sent++;
        pami_context_advance(ctx, 4);
    }
    CHECK(refused == 1, "no send was refused with PAMI_PEER_FAILED within "
                        "20 s (%d sent)", sent);

    /* Every callback of every send must arrive, soon. */
    end = now() + 15;
    int no_local, no_remote;
    do {
        no_local = no_remote = 0;
        for (int i = 0; i < sent; i++) {
            no_local += track[i].local_calls == 0;
            no_remote += track[i].remote_calls == 0;
        }
        if (no_local + no_remote > 0)
            pami_context_wait(ctx, 100);
    } while (no_local + no_remote > 0 && now() < end);
    CHECK(no_local + no_remote == 0, "of %d sends, %d still wait for local_fn "
          "and %d for remote_fn 15 s after the peer died", sent, no_local,
          no_remote);

    int failed = 0;
    for (int i = 0; i < sent; i++) {
        CHECK(track[i].local_calls == 1 && track[i].remote_calls == 1,
              "send %d: local_fn %d times, remote_fn %d times", i,
              track[i].local_calls, track[i].remote_calls);
        if (track[i].remote_rc != PAMI_SUCCESS) {
            CHECK(track[i].remote_rc == PAMI_PEER_FAILED,
                  "send %d: remote_fn got %s", i,
                  pami_error_text(track[i].remote_rc));
            failed++;
        }
    }
    CHECK(failed > 0, "no send reported PAMI_PEER_FAILED");
    double took = oob_survivor_end(ctx, &client);
    printf("peer_death: %d sends, %d failed with PAMI_PEER_FAILED, destroy "
           "in %.2f s\n", sent, failed, took);
    free(buf);
    free(landing);
}

int main(int argc, char **argv)
{
    oob_pair_run_killed(run, NULL, argc > 1 && strcmp(argv[1], "large") == 0);
    return 0;
}
