/*
 * Barrier control packets under pamirun. Every task checks its own
 * results and exits 1 with a line naming what went wrong.
 *
 *   bp_test groups ROUNDS   world and task lists (odd-sized, reversed,
 *                           interleaved, all but one, two disjoint groups
 *                           at once); in each round every member adds 1 to
 *                           a counter on the group's first task, passes
 *                           the barrier and reads it: it must be complete
 *   bp_test api             bad arguments, one participant, barriers
 *                           started before the previous ones completed
 *                           (in order), a chain started from done_fns, two
 *                           groups at once
 *   bp_test loop COUNT      COUNT back-to-back world barriers; prints the
 *                           average time of one
 *   bp_test late            the last task arrives 1 s late: nobody leaves
 *                           before it arrived
 *   bp_test malformed       each kind of bad packet injected to the next
 *                           task: counted, dropped, barriers still work
 *   bp_test dead            the last task leaves: barriers with it end
 *                           with PAMI_PEER_FAILED, others go on
 *   bp_test shutdown        a barrier task 1 never enters ends with
 *                           PAMI_SHUTDOWN at destroy on task 0
 *   bp_test contexts        barriers on two contexts at once: each meets
 *                           its own offset on the other tasks
 *   bp_test eagain          task 0 fills its send path toward task 1,
 *                           which does not progress, until
 *                           pami_send_immediate says PAMI_EAGAIN; its
 *                           barrier packets then wait and go later
 */
#include "bp_util.h"

#include <unistd.h>

static mp_job_t job;

/* ---- groups ---- */

typedef struct {
    const char *name;
    pami_task_t tasks[RMA_MAX_TASKS];
    size_t      n;
} shape_t;

static bool member(const shape_t *s, pami_task_t t)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->tasks[i] == t)
            return true;
    return false;
}

/* rounds barriers over s (NULL list when world), each proven by the
 * counter pair at slot, slot + 1 on the group's first listed task. */
static void rounds_over(const shape_t *s, bool world, unsigned slot,
                        unsigned rounds)
{
    if (!member(s, job.me))
        return;
    pami_task_t owner = s->tasks[0];
    for (unsigned r = 0; r < rounds; r++) {
        bp_fadd(&job, owner, slot + (r & 1), 1);
        bar_ok(&job, world ? NULL : s->tasks, world ? 0 : s->n);
        uint64_t seen = bp_fadd(&job, owner, slot + (r & 1), 0);
        uint64_t want = (uint64_t)(r / 2 + 1) * s->n;
        MP_EXPECT(seen == want, "%s, round %u: counter is %llu after the "
                  "barrier, expected %llu", s->name, r,
                  (unsigned long long)seen, (unsigned long long)want);
    }
}

static void groups_mode(unsigned rounds)
{
    size_t n = job.size;
    MP_EXPECT(n <= RMA_MAX_TASKS, "at most %d tasks", RMA_MAX_TASKS);
    shape_t world = {.name = "world"}, rev = {.name = "reversed"},
            inter = {.name = "interleaved"}, odd = {.name = "odd-sized"},
            but1 = {.name = "all but task 1"}, evens = {.name = "evens"},
            odds = {.name = "odds"};
    for (size_t i = 0; i < n; i++) {
        world.tasks[world.n++] = (pami_task_t)i;
        rev.tasks[rev.n++]     = (pami_task_t)(n - 1 - i);
    }
    for (size_t i = 0; i < n; i += 2)
        inter.tasks[inter.n++] = (pami_task_t)i;
    for (size_t i = n - 1 - (n % 2 == 0 ? 0 : 1); i < n; i -= 2)
        inter.tasks[inter.n++] = (pami_task_t)i;
    /* The largest odd count, listed from the middle out. */
    size_t k = n % 2 ? n : n - 1;
    for (size_t i = 0; i < k; i++)
        odd.tasks[odd.n++] = (pami_task_t)((i + k / 2) % k);
    for (size_t i = n; i-- > 0;)
        if (i != 1)
            but1.tasks[but1.n++] = (pami_task_t)i;
    for (size_t i = 0; i < n; i++) {
        shape_t *s = i % 2 ? &odds : &evens;
        s->tasks[s->n++] = (pami_task_t)i;
    }
    MP_EXPECT(inter.n == n, "interleaved list of %zu", inter.n);

    bp_counters_init(&job);
    /* Members of one shape finish it while the others are already in
     * the next one: early packets of a group not yet entered. */
    rounds_over(&world, true, 0, rounds);
    rounds_over(&rev, false, 2, rounds);
    rounds_over(&inter, false, 4, rounds);
    rounds_over(&odd, false, 6, rounds);
    if (n >= 3)
        rounds_over(&but1, false, 8, rounds);
    /* Two disjoint groups, at the same time. */
    rounds_over(job.me % 2 ? &odds : &evens, false, job.me % 2 ? 12 : 10,
                rounds);
    /* World through NULL and through lists, mixed: one group. */
    for (unsigned r = 0; r < rounds; r++) {
        const shape_t *s = r % 3 == 0 ? &rev : r % 3 == 1 ? &inter : NULL;
        bp_fadd(&job, 0, 14 + (r & 1), 1);
        bar_ok(&job, s ? s->tasks : NULL, s ? n : 0);
        uint64_t seen = bp_fadd(&job, 0, 14 + (r & 1), 0);
        MP_EXPECT(seen == (uint64_t)(r / 2 + 1) * n, "mixed world, round "
                  "%u: counter %llu", r, (unsigned long long)seen);
    }
    bar_ok(&job, NULL, 0);
    bp_expect_no_drops(&job);
    MP_EXPECT(bp_stat(&job, "failed") == 0, "failed barriers");
    bp_counters_fini(&job);
    printf("task %u: %u rounds over each of 7 shapes, %llu barriers, "
           "%llu packets in\n", job.me, rounds,
           (unsigned long long)bp_stat(&job, "barriers"),
           (unsigned long long)bp_stat(&job, "packets_in"));
}

/* ---- api ---- */

#define PIPE 64

static bar_t    chain_bar;
static unsigned chain_left;
static uint64_t chain_done;

static void on_chain(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "chained barrier: %s", pami_error_text(rc));
    chain_done++;
    if (--chain_left > 0)
        MP_CHECK(pami_barrier_packets(ctx, NULL, 0, on_chain, NULL));
}

static bar_t    order_bar[PIPE];
static uint64_t order_next;

static void on_ordered(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    bar_t *b = cookie;
    bar_on_done(ctx, cookie, rc);
    MP_EXPECT(b->seq == order_next, "barrier %llu completed when %llu was "
              "due", (unsigned long long)b->seq,
              (unsigned long long)order_next);
    order_next++;
}

static void api_mode(void)
{
    pami_context_t ctx = job.ctx[0];
    pami_task_t    me  = job.me;
    pami_task_t    bad[3];
    bar_t          b = {0};

    /* Refused at once, no callback ever. */
    bad[0] = me; bad[1] = me;
    MP_CHECK_RC(pami_barrier_packets(ctx, bad, 2, bar_on_done, &b),
                PAMI_INVAL);
    bad[0] = me; bad[1] = (pami_task_t)job.size;
    MP_CHECK_RC(pami_barrier_packets(ctx, bad, 2, bar_on_done, &b),
                PAMI_INVAL);
    if (job.size > 1) {
        bad[0] = (me + 1) % job.size;
        MP_CHECK_RC(pami_barrier_packets(ctx, bad, 1, bar_on_done, &b),
                    PAMI_INVAL);
    }
    MP_CHECK_RC(pami_barrier_packets(ctx, bad, 0, bar_on_done, &b),
                PAMI_INVAL);
    MP_CHECK_RC(pami_barrier_packets(ctx, NULL, 3, bar_on_done, &b),
                PAMI_INVAL);
    MP_CHECK_RC(pami_barrier_packets(NULL, NULL, 0, bar_on_done, &b),
                PAMI_INVAL);
    for (int i = 0; i < 20; i++)
        pami_context_advance(ctx, 8);
    MP_EXPECT(b.runs == 0, "a refused barrier ran its done_fn");

    /* One participant: done at once, yet reported from progress. */
    bar_start(&job, &me, 1, &b);
    MP_EXPECT(bar_wait(&job, &b, 5) == PAMI_SUCCESS, "barrier of one");

    /* PIPE barriers started before any completed: in order. */
    order_next = 0;
    for (unsigned i = 0; i < PIPE; i++) {
        order_bar[i] = (bar_t){.seq = i, .in_call = true};
        MP_CHECK(pami_barrier_packets(ctx, NULL, 0, on_ordered,
                                      &order_bar[i]));
        order_bar[i].in_call = false;
    }
    MP_WAIT(&job, ctx, order_next == PIPE, MP_WAIT_S,
            "%llu of %d pipelined barriers", (unsigned long long)order_next,
            PIPE);
    for (unsigned i = 0; i < PIPE; i++)
        MP_EXPECT(order_bar[i].runs == 1 && order_bar[i].rc == PAMI_SUCCESS,
                  "pipelined barrier %u: %u runs, %s", i, order_bar[i].runs,
                  pami_error_text(order_bar[i].rc));

    /* A chain: each done_fn starts the next. */
    chain_left = 1000;
    chain_done = 0;
    MP_CHECK(pami_barrier_packets(ctx, NULL, 0, on_chain, &chain_bar));
    MP_WAIT(&job, ctx, chain_done == 1000, MP_WAIT_S,
            "%llu of 1000 chained barriers", (unsigned long long)chain_done);

    /* World and a pair (or this task alone) at once, in both orders. */
    pami_task_t pair[2] = {me, me ^ 1};
    size_t      npair   = pair[1] < job.size ? 2 : 1;
    for (int i = 0; i < 100; i++) {
        bar_t w = {.seq = 0}, p = {.seq = 1};
        if (i % 2) {
            bar_start(&job, NULL, 0, &w);
            bar_start(&job, pair, npair, &p);
        } else {
            bar_start(&job, pair, npair, &p);
            bar_start(&job, NULL, 0, &w);
        }
        MP_EXPECT(bar_wait(&job, &w, MP_WAIT_S) == PAMI_SUCCESS &&
                      bar_wait(&job, &p, MP_WAIT_S) == PAMI_SUCCESS,
                  "two groups at once: %s, %s", pami_error_text(w.rc),
                  pami_error_text(p.rc));
    }
    bar_ok(&job, NULL, 0);
    bp_expect_no_drops(&job);
    printf("task %u: api checks passed (%llu barriers)\n", me,
           (unsigned long long)bp_stat(&job, "barriers"));
}

/* ---- loop ---- */

static void loop_mode(unsigned long count)
{
    bar_ok(&job, NULL, 0); /* connect everything first */
    uint64_t b0 = bp_stat(&job, "barriers");
    bar_t    b  = {0};
    double   t0 = mp_now();
    for (unsigned long i = 0; i < count; i++) {
        b.seq = i;
        bar_start(&job, NULL, 0, &b);
        pami_result_t rc = bar_wait(&job, &b, MP_WAIT_S);
        MP_EXPECT(rc == PAMI_SUCCESS, "barrier %lu: %s", i,
                  pami_error_text(rc));
    }
    double us = (mp_now() - t0) * 1e6 / (double)count;
    MP_EXPECT(bp_stat(&job, "barriers") - b0 == count, "%llu barriers "
              "counted for %lu", (unsigned long long)(bp_stat(&job,
              "barriers") - b0), count);
    bp_expect_no_drops(&job);
    pami_context_stats_t cs;
    MP_CHECK(pami_context_stats(job.ctx[0], &cs));
    printf("task %u: %lu barriers over %zu tasks, %.2f us each, %llu send "
           "retries, %llu sleeps\n", job.me, count, job.size, us,
           (unsigned long long)bp_stat(&job, "send_retries"),
           (unsigned long long)cs.sleeps);
    if (job.me == 0)
        printf("{\"test\":\"barrier_packets\",\"metric\":\"lat_us\","
               "\"ranks\":%zu,\"value\":%.3f}\n", job.size, us);
}

/* ---- late ---- */

static void late_mode(void)
{
    pami_task_t last = (pami_task_t)(job.size - 1);
    bp_counters_init(&job);
    bar_ok(&job, NULL, 0);
    for (int r = 0; r < 3; r++) {
        if (job.me == last)
            mp_sleep_ms(1000);
        double t0 = mp_now();
        bp_fadd(&job, 0, r, 1);
        bar_ok(&job, NULL, 0);
        double waited = mp_now() - t0;
        uint64_t seen = bp_fadd(&job, 0, r, 0);
        MP_EXPECT(seen == job.size, "round %d: counter %llu after the "
                  "barrier, expected %zu", r, (unsigned long long)seen,
                  job.size);
        MP_EXPECT(job.me == last || waited > 0.8, "round %d: left the "
                  "barrier after %.3f s, task %u was 1 s late", r, waited,
                  last);
        if (job.me == 0)
            printf("round %d: task 0 waited %.3f s for the late task\n", r,
                   waited);
    }
    bp_expect_no_drops(&job);
    bp_counters_fini(&job);
}

/* ---- malformed ---- */

/* The wire form as docs/protocols/barrier-packets.md gives it. */
typedef struct {
    uint8_t  version, type;
    uint16_t reserved0;
    uint32_t size, epoch, reserved1;
    uint64_t group;
} wire_t;

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t world_id(void)
{
    uint64_t id = mix64(0x6270000000000000ull ^ (uint64_t)0 << 32 ^
                        (uint64_t)job.size);
    for (uint32_t t = 0; t < job.size; t++)
        id += mix64((uint64_t)t + 0x5851f42d4c957f2dull);
    return id;
}

static size_t bp_dispatch(void)
{
    pami_protocol_info_t info;
    for (size_t i = 0; pami_protocol_query(job.client, i, &info) ==
                       PAMI_SUCCESS; i++)
        if (strcmp(info.name, "barrier_packets") == 0) {
            MP_EXPECT(info.num_dispatch == 1 && info.builtin && info.version == 1,
                      "barrier_packets: %zu ids, builtin %d, v%u",
                      info.num_dispatch, info.builtin, info.version);
            return info.dispatch_base;
        }
    mp_fail("no protocol named barrier_packets");
}

static void inject(size_t id, pami_task_t to, const void *hdr, size_t hlen,
                   const void *data, size_t dlen)
{
    pami_send_immediate_t s = {.dest = mp_ep(&job, to, 0), .dispatch = id,
                               .header = hdr, .header_len = hlen,
                               .data = data, .data_len = dlen};
    mp_inject_imm(&job, job.ctx[0], &s);
}

static void malformed_mode(void)
{
    MP_EXPECT(job.size >= 2, "malformed needs 2 tasks");
    size_t      id = bp_dispatch();
    pami_task_t to = (pami_task_t)((job.me + 1) % job.size);
    uint64_t    w  = world_id();
    wire_t      ok = {.version = 1, .type = 1, .size = (uint32_t)job.size,
                      .epoch = 0, .group = w};
    wire_t      p;
    uint8_t     big[40] = {0};
    bool        mismatch = job.size >= 3;

    /* The target is at world epoch 0 (entered or not), so its window is
     * epochs 0 and 1: 2 and beyond are outside it whatever it does. A
     * packet inside the window from a member cannot be told from its
     * real one, so none is sent. */
    inject(id, to, &ok, 10, NULL, 0);                     /* short */
    inject(id, to, NULL, 0, NULL, 0);                     /* short */
    memcpy(big, &ok, sizeof(ok));
    inject(id, to, big, sizeof(big), NULL, 0);            /* long */
    inject(id, to, &ok, sizeof(ok), big, 8);              /* long */
    p = ok; p.version = 2;  inject(id, to, &p, sizeof(p), NULL, 0);
    p = ok; p.version = 0;  inject(id, to, &p, sizeof(p), NULL, 0);
    p = ok; p.type = 7;     inject(id, to, &p, sizeof(p), NULL, 0);
    p = ok; p.type = 0;     inject(id, to, &p, sizeof(p), NULL, 0);
    p = ok; p.reserved0 = 1; inject(id, to, &p, sizeof(p), NULL, 0);
    p = ok; p.reserved1 = 9; inject(id, to, &p, sizeof(p), NULL, 0);
    p = ok; p.size = 0;     inject(id, to, &p, sizeof(p), NULL, 0);
    p = ok; p.size = 1;     inject(id, to, &p, sizeof(p), NULL, 0);
    p = ok; p.size = 1u << 30; inject(id, to, &p, sizeof(p), NULL, 0);
    if (mismatch) {
        p = ok; p.size = (uint32_t)job.size - 1;
        inject(id, to, &p, sizeof(p), NULL, 0);           /* size */
    }
    p = ok; p.epoch = 2;    inject(id, to, &p, sizeof(p), NULL, 0);
    p = ok; p.epoch = 1000; inject(id, to, &p, sizeof(p), NULL, 0);
    p = ok; p.epoch = ~0u;  inject(id, to, &p, sizeof(p), NULL, 0);
    /* A group nobody entered: epoch 0 is kept (a group is made), a later
     * epoch is not, and a second packet of a 2-task group is one too
     * many. */
    p = ok; p.group = 0x1234567890abcdefull; p.size = 2; p.epoch = 3;
    inject(id, to, &p, sizeof(p), NULL, 0);               /* epoch */
    p.epoch = 0;
    inject(id, to, &p, sizeof(p), NULL, 0);               /* kept */
    inject(id, to, &p, sizeof(p), NULL, 0);               /* excess */

    /* Our own world packets follow the bad ones to the same task, in
     * order: once the barriers are through, all of them were handled. */
    for (int i = 0; i < 50; i++)
        bar_ok(&job, NULL, 0);

    static const struct {
        const char *name;
        unsigned    want;
    } want[] = {
        {"dropped_short", 2},   {"dropped_long", 2},   {"dropped_version", 2},
        {"dropped_type", 2},    {"dropped_field", 5},  {"dropped_size", 1},
        {"dropped_epoch", 4},   {"dropped_excess", 1}, {"dropped_groups", 0},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        unsigned expect = want[i].want;
        if (strcmp(want[i].name, "dropped_size") == 0 && !mismatch)
            expect = 0;
        uint64_t got = bp_stat(&job, want[i].name);
        MP_EXPECT(got == expect, "%s is %llu, expected %u", want[i].name,
                  (unsigned long long)got, expect);
    }
    uint64_t in = bp_stat(&job, "packets_in");
    MP_EXPECT(in == 50 * (job.size - 1) + 1, "packets_in %llu, expected "
              "%zu", (unsigned long long)in, 50 * (job.size - 1) + 1);
    MP_EXPECT(bp_stat(&job, "groups") == 2, "%llu groups (world and the "
              "injected one expected)",
              (unsigned long long)bp_stat(&job, "groups"));
    MP_EXPECT(bp_stat(&job, "barriers") == 50, "%llu barriers",
              (unsigned long long)bp_stat(&job, "barriers"));
    printf("task %u: every bad packet counted and dropped; 50 barriers "
           "after them\n", job.me);
}

/* ---- dead ---- */

static void dead_mode(void)
{
    MP_EXPECT(job.size >= 3, "dead needs 3 tasks");
    pami_task_t victim = (pami_task_t)(job.size - 1);
    pami_task_t surv[RMA_MAX_TASKS], pair[2] = {0, victim};
    size_t      ns = 0;
    for (pami_task_t t = 0; t < job.size; t++)
        if (t != victim)
            surv[ns++] = t;
    for (int i = 0; i < 10; i++)
        bar_ok(&job, NULL, 0);
    if (job.me == 0)
        bar_ok(&job, pair, 2);
    if (job.me == victim) {
        bar_ok(&job, pair, 2);
        fflush(stdout);
        _exit(0); /* no destroy: a crash that pamirun accepts */
    }

    /* Pending when the victim goes: the world and the pair. */
    bar_t w = {.seq = 1}, pr = {.seq = 2};
    double t0 = mp_now();
    bar_start(&job, NULL, 0, &w);
    if (job.me == 0)
        bar_start(&job, pair, 2, &pr);
    /* The survivors meanwhile still pass their own barriers. */
    for (int i = 0; i < 20; i++)
        bar_ok(&job, surv, ns);
    pami_result_t rc = bar_wait(&job, &w, 15.0);
    double detected = mp_now() - t0;
    MP_EXPECT(rc == PAMI_PEER_FAILED, "world barrier with a dead task: %s",
              pami_error_text(rc));
    if (job.me == 0)
        MP_EXPECT(bar_wait(&job, &pr, 5.0) == PAMI_PEER_FAILED,
                  "pair barrier with the dead task: %s",
                  pami_error_text(pr.rc));
    /* From now on at once (from progress), and the others still work. */
    bar_start(&job, NULL, 0, &w);
    MP_EXPECT(bar_wait(&job, &w, 5.0) == PAMI_PEER_FAILED, "world barrier "
              "after the death: %s", pami_error_text(w.rc));
    for (int i = 0; i < 20; i++)
        bar_ok(&job, surv, ns);
    MP_EXPECT(bp_stat(&job, "failed") >= 2, "failed %llu",
              (unsigned long long)bp_stat(&job, "failed"));
    printf("task %u: PAMI_PEER_FAILED %.2f s after the barrier started; "
           "survivors still pass theirs\n", job.me, detected);
    const char *sto = getenv("PAMI_SHUTDOWN_TIMEOUT");
    double limit = (sto ? strtod(sto, NULL) / 1000.0 : 10.0) + 5.0;
    double td = mp_now();
    pami_client_destroy(&job.client);
    MP_EXPECT(mp_now() - td < limit, "destroy took %.1f s", mp_now() - td);
}

/* ---- shutdown ---- */

static bar_t orphan;

static void shutdown_mode(void)
{
    /* With 2 tasks the pair would be the world itself. */
    MP_EXPECT(job.size >= 3, "shutdown needs 3 tasks");
    pami_task_t pair[2] = {0, 1};
    bar_ok(&job, NULL, 0);
    if (job.me == 0)
        bar_start(&job, pair, 2, &orphan);
    for (int i = 0; i < 20; i++)
        pami_context_advance(job.ctx[0], 8);
    bar_ok(&job, NULL, 0);
    MP_EXPECT(orphan.runs == 0, "a barrier task 1 never entered completed");
    MP_CHECK(pami_client_destroy(&job.client));
    if (job.me == 0)
        MP_EXPECT(orphan.runs == 1 && orphan.rc == PAMI_SHUTDOWN,
                  "pending barrier at destroy: %u runs, %s", orphan.runs,
                  pami_error_text(orphan.rc));
    printf("task %u: pending barrier ended with PAMI_SHUTDOWN\n", job.me);
}

/* ---- contexts ---- */

static void contexts_mode(void)
{
    const unsigned rounds = 300;
    for (unsigned r = 0; r < rounds; r++) {
        bar_t b[2] = {{.seq = 0}, {.seq = 1}};
        /* Half the tasks start on context 1 first. */
        for (size_t k = 0; k < 2; k++) {
            size_t i = (k + job.me + r) % 2;
            b[i].in_call = true;
            MP_CHECK(pami_barrier_packets(job.ctx[i], NULL, 0, bar_on_done,
                                          &b[i]));
            b[i].in_call = false;
        }
        double deadline = mp_now() + MP_WAIT_S;
        while (b[0].runs == 0 || b[1].runs == 0) {
            for (size_t i = 0; i < 2; i++)
                pami_context_wait(job.ctx[i], 1);
            MP_EXPECT(mp_now() < deadline, "round %u: contexts done %u %u",
                      r, b[0].runs, b[1].runs);
        }
        MP_EXPECT(b[0].rc == PAMI_SUCCESS && b[1].rc == PAMI_SUCCESS,
                  "round %u: %s, %s", r, pami_error_text(b[0].rc),
                  pami_error_text(b[1].rc));
    }
    for (size_t i = 0; i < 2; i++) {
        uint64_t in = bp_stat_ctx(&job, i, "packets_in");
        uint64_t done = bp_stat_ctx(&job, i, "barriers");
        MP_EXPECT(in == rounds * (job.size - 1) && done == rounds,
                  "context %zu: %llu packets in, %llu barriers", i,
                  (unsigned long long)in, (unsigned long long)done);
    }
    printf("task %u: %u barriers on each of 2 contexts\n", job.me, rounds);
}

/* ---- eagain ---- */

#define ID_FLOOD 100
#define FLOOD_MAX 200000

static uint64_t flood_got;
static uint64_t flood_total = ~0ull;

static void on_flood_total(pami_context_t ctx, void *cookie, const void *hdr,
                           size_t hlen, const void *data, size_t dlen,
                           pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)data; (void)dlen; (void)origin;
    (void)recv;
    MP_EXPECT(hlen == sizeof(flood_total), "count of %zu bytes", hlen);
    memcpy(&flood_total, hdr, sizeof(flood_total));
}

static void on_flood(pami_context_t ctx, void *cookie, const void *hdr,
                     size_t hlen, const void *data, size_t dlen,
                     pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)hdr; (void)hlen; (void)data;
    (void)origin; (void)recv;
    MP_EXPECT(dlen == 64, "flood message of %zu bytes", dlen);
    flood_got++;
}

static void eagain_mode(void)
{
    MP_EXPECT(job.size == 2, "eagain runs on 2 tasks");
    bar_ok(&job, NULL, 0);
    uint64_t sent = 0;
    if (job.me == 1) {
        mp_sleep_ms(1500); /* no progress: task 0's sends pile up */
    } else {
        uint8_t data[64] = {0};
        pami_send_immediate_t s = {.dest = mp_ep(&job, 1, 0),
                                   .dispatch = ID_FLOOD, .data = data,
                                   .data_len = sizeof(data)};
        pami_result_t rc = PAMI_SUCCESS;
        while (sent < FLOOD_MAX &&
               (rc = pami_send_immediate(job.ctx[0], &s)) == PAMI_SUCCESS)
            sent++;
        MP_EXPECT(rc == PAMI_EAGAIN, "%llu immediate sends toward a task "
                  "that does not progress, and no PAMI_EAGAIN (%s)",
                  (unsigned long long)sent, pami_error_text(rc));
    }
    /* Task 0's packets meet a full path: queued, not lost. Several at
     * once, so the queue holds more than one. */
    bar_t b[4];
    for (int i = 0; i < 4; i++) {
        b[i] = (bar_t){.seq = (uint64_t)i};
        bar_start(&job, NULL, 0, &b[i]);
    }
    for (int i = 0; i < 4; i++)
        MP_EXPECT(bar_wait(&job, &b[i], MP_WAIT_S) == PAMI_SUCCESS,
                  "barrier %d after the flood: %s", i,
                  pami_error_text(b[i].rc));
    if (job.me == 0)
        MP_EXPECT(bp_stat(&job, "send_retries") >= 1, "no packet waited "
                  "after PAMI_EAGAIN");
    /* The flood arrived whole, before the barrier packets that followed
     * it: tell task 1 how much to expect. */
    uint64_t want = sent;
    pami_send_immediate_t c = {.dest = mp_ep(&job, job.me ^ 1, 0),
                               .dispatch = ID_FLOOD + 1, .header = &want,
                               .header_len = sizeof(want)};
    mp_send_imm(&job, job.ctx[0], &c);
    MP_WAIT(&job, job.ctx[0], flood_total != ~0ull, MP_WAIT_S,
            "flood count from the peer");
    if (job.me == 1)
        MP_EXPECT(flood_got == flood_total, "%llu of %llu flood messages",
                  (unsigned long long)flood_got,
                  (unsigned long long)flood_total);
    bar_ok(&job, NULL, 0);
    bp_expect_no_drops(&job);
    printf("task %u: %llu sends before PAMI_EAGAIN, %llu barrier packets "
           "retried\n", job.me, (unsigned long long)sent,
           (unsigned long long)bp_stat(&job, "send_retries"));
}

int main(int argc, char **argv)
{
    bool two = argc > 1 && strcmp(argv[1], "contexts") == 0;
    mp_init(&job, "bp_test", &argc, argv, NULL, two ? 2 : 1, false);
    rma_xchg_init(&job);
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_FLOOD, on_flood, NULL, NULL));
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_FLOOD + 1, on_flood_total,
                               NULL, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "groups") == 0)
        groups_mode(argc > 2 ? (unsigned)atoi(argv[2]) : 100);
    else if (strcmp(mode, "api") == 0)
        api_mode();
    else if (strcmp(mode, "loop") == 0)
        loop_mode(argc > 2 ? strtoul(argv[2], NULL, 10) : 10000);
    else if (strcmp(mode, "late") == 0)
        late_mode();
    else if (strcmp(mode, "contexts") == 0)
        contexts_mode();
    else if (strcmp(mode, "eagain") == 0)
        eagain_mode();
    else if (strcmp(mode, "malformed") == 0)
        malformed_mode();
    else if (strcmp(mode, "dead") == 0) {
        dead_mode();
        return 0;
    } else if (strcmp(mode, "shutdown") == 0) {
        shutdown_mode();
        return 0;
    } else
        mp_fail("usage: bp_test groups|api|loop|late|malformed|dead|"
                "shutdown|contexts|eagain [n]");
    mp_finish(&job);
    return 0;
}
