/*
 * A task dies holding a claim word of small puts by message
 * (docs/protocols/rma.md, "Small puts by message"): its word says BUSY
 * (a copy under way) and never clears.
 *
 *   rma_claim_death origin   task 1, the origin, sets its word for task 0
 *                            to BUSY, sends 64 claimed puts of 8 bytes,
 *                            and is SIGKILLed once task 0, the owner,
 *                            dropped one: the owner must apply none of
 *                            them (its region keeps its bytes), spend
 *                            about one second on the word, not one per
 *                            put, and find task 1 dead;
 *   rma_claim_death owner    task 1, the owner, sets task 0's word in
 *                            task 0's page to BUSY and is SIGKILLed:
 *                            task 0, the origin, keeps putting 8 bytes
 *                            until a put ends with PAMI_PEER_FAILED, each
 *                            put's callbacks once, with PAMI_SUCCESS or,
 *                            from the death on, PAMI_PEER_FAILED;
 *   ... origin-quiet, owner-quiet   the same with puts without callbacks
 *                            (quiet: no request, no answer; the claim
 *                            word alone says they were applied), each
 *                            of the surviving origin's followed by a
 *                            fence, which ends with PAMI_SUCCESS or,
 *                            from the death on, PAMI_PEER_FAILED;
 *   ... origin-get, owner-get   the same with gets of 8 bytes by message
 *                            (docs/protocols/rma.md, "Small gets by
 *                            message") in place of the tested puts: the
 *                            owner answers none of the dead origin's,
 *                            and the surviving origin's gets end with
 *                            PAMI_SUCCESS or, from the death on,
 *                            PAMI_PEER_FAILED.
 *
 * Two processes on the oob bootstrap (no launcher kills the survivor);
 * white-box only for the claim words (pami_rma_claim_word) and the
 * context's counters.
 */
#include <pami.h>

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define OOB_PROG "rma_claim_death"
#include "oob_pair.h"

#define BYTES  ((size_t)64 << 10)
#define PUTS   64
#define BUSY   ((uint64_t)1 << 63)
#define FILLED 0xa5

static int  step_fd;
static bool quiet; /* the tested puts have no callbacks */
static bool gets;  /* gets by message are tested, not puts */

/* The tested operations this context sent as claimed messages. */
static uint64_t claimed(pami_context_t ctx)
{
    pami_context_stats_t st;
    pami_context_stats(ctx, &st);
    return gets ? ctx->claim_gets : st.claim_puts;
}

#include "../cb_count.h"

/* One operation, waited for (30 s at most); its callbacks' results. */
static void op_wait(pami_context_t ctx, cb_count_t *o, bool remote)
{
    double end = now() + 30;
    while ((o->local == 0 || (remote && o->remote == 0)) && now() < end)
        pami_context_wait(ctx, 100);
    for (int k = 0; k < 8; k++)
        pami_context_advance(ctx, 8);
    CHECK(o->local == 1 && o->remote == (remote ? 1 : 0),
          "local_fn %u times, remote_fn %u times", o->local, o->remote);
}

static pami_result_t xfer(pami_context_t ctx, pami_endpoint_t peer,
                          const pami_memregion_t *mr, void *buf,
                          size_t bytes, size_t off, bool put, cb_count_t *o)
{
    pami_rma_t r = {.dest = peer, .local = buf, .bytes = bytes,
                    .remote_mr = mr, .remote_offset = off,
                    .local_fn = cb_count_local,
                    .remote_fn = put ? cb_count_remote : NULL, .cookie = o};
    if (put && quiet && o == NULL) {
        r.local_fn  = NULL; /* a quiet put */
        r.remote_fn = NULL;
    }
    return put ? pami_put(ctx, &r) : pami_get(ctx, &r);
}

/* The origin's start: a get (the client's first CMA call, after which
 * puts may be claimed), then claimed puts waited for until one went by
 * message (the owner polls meanwhile). */
static void claims_begin(pami_context_t ctx, pami_endpoint_t peer,
                         const pami_memregion_t *mr, uint8_t *buf)
{
    cb_count_t o = {0};
    CHECK(xfer(ctx, peer, mr, buf, 4096, 0, false, &o) == PAMI_SUCCESS,
          "first get");
    op_wait(ctx, &o, false);
    CHECK(o.local_rc == PAMI_SUCCESS, "first get: %s",
          pami_error_text(o.local_rc));
    pami_context_stats_t st = {0};
    for (int i = 0; i < 100 && st.claim_puts == 0; i++) {
        cb_count_t p = {0};
        memset(buf, FILLED, 8);
        CHECK(xfer(ctx, peer, mr, buf, 8, 0, true, &p) == PAMI_SUCCESS,
              "put %d", i);
        op_wait(ctx, &p, true);
        CHECK(p.remote_rc == PAMI_SUCCESS, "put %d: %s", i,
              pami_error_text(p.remote_rc));
        pami_context_stats(ctx, &st);
    }
    CHECK(st.claim_puts > 0, "no put went as a claimed message");
}

static void step_write(char c)
{
    CHECK(write(step_fd, &c, 1) == 1, "step write");
}

static char step_wait(pami_context_t ctx)
{
    struct pollfd pf = {.fd = step_fd, .events = POLLIN};
    double end = now() + 60;
    while (poll(&pf, 1, 0) == 0) {
        CHECK(now() < end, "no step from the other task in 60 s");
        pami_context_wait(ctx, 10);
    }
    char c;
    CHECK(read(step_fd, &c, 1) == 1, "step read");
    return c;
}

static void on_fence(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)rc;
    (*(int *)cookie)++;
}

/* Progress until task 1 is found dead (a fence to it refused); the
 * seconds that took. With drop_step, a step 'd' to task 1 once this
 * context dropped a message. */
static double until_dead(pami_context_t ctx, pami_endpoint_t peer,
                         const pami_context_stats_t *s0, bool drop_step)
{
    double t0 = now(), end = t0 + 60;
    int    fences = 0;
    pami_context_stats_t s;
    for (;;) {
        CHECK(now() < end, "task 1 not found dead in 60 s");
        pami_context_wait(ctx, 10);
        pami_context_stats(ctx, &s);
        if (drop_step && s.dropped_malformed > s0->dropped_malformed) {
            step_write('d');
            drop_step = false;
        }
        pami_result_t rc = pami_fence_endpoint(ctx, peer, on_fence, &fences);
        if (rc == PAMI_PEER_FAILED)
            return now() - t0;
        CHECK(rc == PAMI_SUCCESS, "fence: %s", pami_error_text(rc));
    }
}

/* Task 1, the origin: its word BUSY, 64 claimed puts out, then death. */
static void origin_dies(pami_context_t ctx, pami_endpoint_t peer,
                        const pami_memregion_t *mr)
{
    uint8_t *buf = calloc(1, BYTES);
    CHECK(buf != NULL, "out of memory");
    claims_begin(ctx, peer, mr, buf);
    /* A take-back in claims_begin (a slow owner) sends puts by CMA for
     * up to 128 ms; with the word BUSY none is taken back any more. */
    struct timespec ts = {.tv_nsec = 200000000L};
    nanosleep(&ts, NULL);
    uint64_t *w = pami_rma_claim_word(ctx, 0, true);
    CHECK(w != NULL, "no claim word for task 0");
    __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_ACQUIRE) | BUSY,
                     __ATOMIC_RELEASE);
    static cb_count_t ops[PUTS];
    memset(buf, 0xee, BYTES);
    uint64_t c0 = claimed(ctx);
    for (int i = 0; i < PUTS; i++)
        CHECK(xfer(ctx, peer, mr, buf + 64 * (i + 1), 8, 64 * (size_t)(i + 1),
                   !gets, quiet ? NULL : &ops[i]) == PAMI_SUCCESS,
              "operation %d", i);
    uint64_t c1 = claimed(ctx);
    CHECK(c1 - c0 == PUTS, "%llu of %d %s went as claimed messages",
          (unsigned long long)(c1 - c0), PUTS, gets ? "gets" : "puts");
    /* Puts of the owner's path leave gathered from a progress call
     * (which may also meet the BUSY word taking them back: left then). */
    for (int k = 0; k < 4; k++)
        pami_context_advance(ctx, 1);
    step_write('k');
    /* Alive (and not progressing) until the owner refused the word, so
     * that it meets the word before it can know of the death. */
    struct pollfd pf = {.fd = step_fd, .events = POLLIN};
    CHECK(poll(&pf, 1, 60000) == 1, "the owner never refused the word");
    raise(SIGKILL);
}

/* Task 0, the owner of the region the dead origin put to. */
static void owner_survives(pami_context_t ctx, pami_endpoint_t peer,
                           const uint8_t *mem)
{
    /* (the puts may come, and be dropped, while this waits for 'k') */
    pami_context_stats_t s0, s1;
    pami_context_stats(ctx, &s0);
    CHECK(step_wait(ctx) == 'k', "unexpected step");
    double took = until_dead(ctx, peer, &s0, true);
    pami_context_stats(ctx, &s1);
    /* Each put would have cost a second's wait on the word. */
    CHECK(took < 30, "task 1 found dead after %.1f s", took);
    CHECK(s1.dropped_malformed > s0.dropped_malformed,
          "the owner dropped nothing");
    for (size_t i = 64; i < 64 * (PUTS + 1); i++)
        CHECK(mem[i] == FILLED, "byte %zu is 0x%02x: a put of the dead "
              "origin's, whose word said BUSY, was applied", i, mem[i]);
    printf("rma_claim_death origin: the owner found the origin dead in "
           "%.2f s, served none of its %d %s (%llu claimed messages "
           "dropped as malformed)\n", took, PUTS, gets ? "gets" : "puts",
           (unsigned long long)(s1.dropped_malformed - s0.dropped_malformed));
}

/* Task 1, the owner: task 0's word in task 0's page BUSY, then death. */
static void owner_dies(pami_context_t ctx)
{
    CHECK(step_wait(ctx) == 'c', "unexpected step");
    /* Its CLAIMS came before its first claimed put, which may have been
     * taken back before this task read either. */
    uint64_t *w   = NULL;
    double    end = now() + 30;
    while ((w = pami_rma_claim_word(ctx, 0, false)) == NULL && now() < end)
        pami_context_wait(ctx, 10);
    CHECK(w != NULL, "task 0's claim words are not mapped here");
    __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_ACQUIRE) | BUSY,
                     __ATOMIC_RELEASE);
    step_write('k');
    raise(SIGKILL);
}

/* A quiet put, then a fence waited for (30 s at most): the fence's
 * result in o (remote_rc). */
static pami_result_t quiet_put(pami_context_t ctx, pami_endpoint_t peer,
                               const pami_memregion_t *mr, void *buf,
                               cb_count_t *o)
{
    pami_result_t rc = xfer(ctx, peer, mr, buf, 8, 64, true, NULL);
    if (rc == PAMI_SUCCESS)
        rc = pami_fence_endpoint(ctx, peer, cb_count_remote, o);
    if (rc != PAMI_SUCCESS)
        return rc;
    double end = now() + 30;
    while (o->remote == 0 && now() < end)
        pami_context_wait(ctx, 100);
    for (int k = 0; k < 8; k++)
        pami_context_advance(ctx, 8);
    CHECK(o->remote == 1, "the fence ran %d times", o->remote);
    o->local    = 1;
    o->local_rc = o->remote_rc;
    return PAMI_SUCCESS;
}

/* Task 0, the origin: puts until one ends with PAMI_PEER_FAILED. */
static void origin_survives(pami_context_t ctx, pami_endpoint_t peer,
                            const pami_memregion_t *mr)
{
    uint8_t *buf = calloc(1, BYTES);
    CHECK(buf != NULL, "out of memory");
    claims_begin(ctx, peer, mr, buf);
    step_write('c');
    CHECK(step_wait(ctx) == 'k', "unexpected step");
    double   t0 = now(), end = t0 + 60;
    unsigned i  = 0;
    for (bool failed = false; !failed; i++) {
        CHECK(now() < end, "no put failed in 60 s (%u puts)", i);
        cb_count_t    o  = {0};
        pami_result_t rc = quiet ? quiet_put(ctx, peer, mr, buf, &o)
                                 : xfer(ctx, peer, mr, buf, 8, 64, !gets, &o);
        if (rc == PAMI_PEER_FAILED)
            break; /* known dead at the call */
        CHECK(rc == PAMI_SUCCESS, "put %u: %s", i, pami_error_text(rc));
        if (!quiet)
            op_wait(ctx, &o, !gets);
        if (gets)
            o.remote_rc = o.local_rc; /* a get has local_fn only */
        CHECK((o.local_rc == PAMI_SUCCESS || o.local_rc == PAMI_PEER_FAILED) &&
                  (o.remote_rc == PAMI_SUCCESS ||
                   o.remote_rc == PAMI_PEER_FAILED),
              "put %u ended with %s / %s", i, pami_error_text(o.local_rc),
              pami_error_text(o.remote_rc));
        failed = o.remote_rc == PAMI_PEER_FAILED;
    }
    printf("rma_claim_death owner: %s %u of the origin ended with "
           "PAMI_PEER_FAILED %.2f s after the owner's death\n",
           gets ? "get" : "put", i,
           now() - t0);
    free(buf);
}

static void run(int rank, int fd, bool origin_is_dying)
{
    oob_t          oob = {.fd = fd, .rank = rank};
    pami_client_t  client;
    pami_context_t ctx;
    oob_pair_open(&oob, OOB_PROG, &client, &ctx);
    CHECK(pami_dispatch_fence(client) == PAMI_SUCCESS, "task %d: fence",
          rank);
    pami_endpoint_t peer;
    pami_endpoint_create(client, (pami_task_t)(1 - rank), 0, &peer);
    /* The owner is task 0 when the origin dies, else task 1. */
    bool     is_owner = (rank == 0) == origin_is_dying;
    uint8_t *mem      = NULL;
    pami_memregion_t mr;
    if (is_owner) {
        mem = malloc(BYTES);
        CHECK(mem != NULL, "out of memory");
        memset(mem, FILLED, BYTES);
        CHECK(pami_memregion_create(ctx, mem, BYTES, &mr) == PAMI_SUCCESS,
              "memregion_create");
        CHECK(write(step_fd, &mr, sizeof(mr)) == (ssize_t)sizeof(mr),
              "step write");
    } else {
        CHECK(read(step_fd, &mr, sizeof(mr)) == (ssize_t)sizeof(mr),
              "step read");
    }
    if (rank == 1) {
        if (origin_is_dying)
            origin_dies(ctx, peer, &mr);
        else
            owner_dies(ctx);
        CHECK(0, "task 1 was still alive after its work");
    }
    if (origin_is_dying)
        owner_survives(ctx, peer, mem);
    else
        origin_survives(ctx, peer, &mr);
    double took = oob_survivor_end(ctx, &client);
    printf("rma_claim_death: destroy in %.2f s\n", took);
    free(mem); /* its region went with the client */
}

int main(int argc, char **argv)
{
    CHECK(argc == 2 && (strncmp(argv[1], "owner", 5) == 0 ||
                        strncmp(argv[1], "origin", 6) == 0),
          "usage: rma_claim_death owner|origin[-quiet|-get]");
    quiet = strstr(argv[1], "-quiet") != NULL;
    gets  = strstr(argv[1], "-get") != NULL;
    oob_pair_run_killed(run, &step_fd, strncmp(argv[1], "origin", 6) == 0);
    return 0;
}
