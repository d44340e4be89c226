/*
 * Client create/destroy cycles on the oob bootstrap: two processes joined
 * by a socketpair (the program's own allgather), each cycle a client, a
 * context, a message each way and a destroy.
 *
 *   oob_cycle calm   40 cycles, every one must succeed
 *   oob_cycle die    task 1 _exit(0)s after its 6th destroy; task 0's next
 *                    cycle must fail (its allgather sees the socket close)
 *                    within a second, and its destroys stay within 1 s
 */
#include <pami.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OOB_PROG "oob_cycle"
#include "oob_pair.h"

#define ID_PING 7
#define CYCLES  40
#define DIE_AT  5


static void on_ping(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)hdr; (void)hlen; (void)data; (void)dlen; (void)origin;
    (void)recv;
    (*(int *)cookie)++;
}

/* One cycle; the first failing call's result, or PAMI_SUCCESS. */
static pami_result_t cycle(oob_t *oob, double *destroy_s)
{
    pami_client_params_t params = oob_params(oob);
    pami_client_t  client;
    pami_context_t ctx;
    int            pings = 0;
    *destroy_s = 0;
    pami_result_t rc = pami_client_create("oob_cycle", &params, &client);
    if (rc != PAMI_SUCCESS)
        return rc;
    rc = pami_context_createv(client, NULL, 1, &ctx);
    if (rc == PAMI_SUCCESS) {
        CHECK(pami_dispatch_set(ctx, ID_PING, on_ping, &pings, NULL) ==
                  PAMI_SUCCESS, "dispatch_set");
        rc = pami_dispatch_fence(client);
    }
    if (rc == PAMI_SUCCESS) {
        pami_endpoint_t peer;
        pami_endpoint_create(client, (pami_task_t)(1 - oob->rank), 0, &peer);
        pami_send_immediate_t s = {.dest = peer, .dispatch = ID_PING};
        while ((rc = pami_send_immediate(ctx, &s)) == PAMI_EAGAIN)
            pami_context_advance(ctx, 1);
        double end = now() + 10;
        while (rc == PAMI_SUCCESS && pings == 0 && now() < end)
            pami_context_wait(ctx, 10);
        if (rc == PAMI_SUCCESS && pings == 0)
            rc = PAMI_TIMEOUT;
    }
    double t0 = now();
    pami_result_t drc = pami_client_destroy(&client);
    *destroy_s = now() - t0;
    CHECK(client == NULL, "destroy kept the client");
    return rc != PAMI_SUCCESS ? rc : drc;
}

static int run(int rank, int fd, int die)
{
    oob_t  oob = {.fd = fd, .rank = rank};
    double destroy_s, failed_at = 0;
    int    i;
    for (i = 0; i < CYCLES; i++) {
        pami_result_t rc = cycle(&oob, &destroy_s);
        /* Calm, destroy waits for the other task, which may not run at
         * once on a loaded machine; after a death it must not wait. */
        CHECK(destroy_s < (die && i > DIE_AT ? 1.0 : 10.0),
              "task %d cycle %d: destroy took %.2f s", rank, i, destroy_s);
        if (die && rank == 1 && i == DIE_AT) {
            fflush(NULL);
            _exit(0);
        }
        if (rc != PAMI_SUCCESS) {
            CHECK(die, "task %d cycle %d failed: %s", rank, i,
                  pami_error_text(rc));
            failed_at = now();
            printf("oob_cycle: task %d: cycle %d failed as it should (%s)\n",
                   rank, i, pami_error_text(rc));
            break;
        }
    }
    CHECK(!die || failed_at != 0, "task %d: no cycle failed though task 1 "
          "left after cycle %d", rank, DIE_AT);
    CHECK(die || i == CYCLES, "task %d: %d cycles", rank, i);
    if (!die)
        printf("oob_cycle: task %d: %d cycles\n", rank, CYCLES);
    return 0;
}

int main(int argc, char **argv)
{
    int die = argc > 1 && strcmp(argv[1], "die") == 0;
    CHECK(argc > 1 && (die || strcmp(argv[1], "calm") == 0),
          "usage: oob_cycle calm|die");
    setvbuf(stdout, NULL, _IOLBF, 0);
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
    double t0    = now();
    pid_t  child = fork();
    CHECK(child >= 0, "fork");
    if (child == 0) {
        close(sv[0]);
        exit(run(1, sv[1], die));
    }
    close(sv[1]);
    run(0, sv[0], die);
    int status;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "task 1 ended with status 0x%x", status);
    CHECK(now() - t0 < 30, "the whole run took %.1f s", now() - t0);
    return 0;
}
