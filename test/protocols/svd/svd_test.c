/*
 * SVD conformance: svd_test MODE [args], run under pamirun at 4-8 ranks.
 *
 *   basic                     register, lookup (fetch, then cache), own
 *                             and unknown keys, bad input
 *   update USERS HDR SCHED BYTES [EXPECT]
 *                             USERS one|some|all, HDR auto|inline|get,
 *                             SCHED auto|direct|tree|pipeline: three
 *                             updates checked byte for byte on every user,
 *                             nothing on the others; EXPECT
 *                             (e.g. get/tree) is what the rule must pick
 *   race BYTES                updates racing with lookups and re-fetches
 *   release                   a released user gets no more updates
 *   malformed                 bad packets to every SVD id, then SVD works
 *   shutdown                  updates and lookups under way at destroy
 *   handler                   the _wait forms from posted work refuse
 *                             with PAMI_IN_HANDLER and start nothing
 *   peer                      a user (a TREE forwarder) dies
 *   bench [SCHED]             update latency, 1/4/7 users (8 ranks),
 *                             by the rule or with SCHED forced
 */
#include "svd_util.h"
#include "svd_wire.h"
#include "pami_barrier.h"

#include <unistd.h>

static mp_job_t job;
#define CTX (job.ctx[0])

/* ---- small helpers ---- */

static void reg(pami_svd_key_t key, uint64_t v, size_t bytes)
{
    void *buf = malloc(bytes ? bytes : 1);
    mp_fill(buf, bytes, job.me, v, (uint32_t)key);
    pami_svd_register_t r = {
        .field_mask = PAMI_SVD_REGISTER_DATA, .key = key,
        .addr = (void *)(uintptr_t)svd_addr_of(v), .size = v, .data = buf,
        .data_size = bytes};
    MP_CHECK(pami_svd_register(CTX, &r));
    free(buf);
}

static pami_svd_entry_t lookup(pami_task_t owner, pami_svd_key_t key,
                               pami_svd_change_fn fn, void *cookie)
{
    pami_svd_lookup_t l = {.field_mask = PAMI_SVD_LOOKUP_TIMEOUT,
                           .owner = owner, .key = key, .timeout_ms = 20000};
    if (fn != NULL) {
        l.field_mask   |= PAMI_SVD_LOOKUP_CHANGE;
        l.change_fn     = fn;
        l.change_cookie = cookie;
    }
    pami_svd_entry_t e;
    MP_CHECK(pami_svd_lookup_wait(CTX, &l, &e));
    return e;
}

typedef struct {
    int           calls;
    pami_result_t rc;
    uint64_t      version;
    bool          in_call;
} lk_t;

static void on_lookup(pami_context_t ctx, void *cookie, pami_result_t rc,
                      const pami_svd_entry_t *e)
{
    (void)ctx;
    lk_t *l = cookie;
    MP_EXPECT(!l->in_call, "lookup callback ran inside pami_svd_lookup");
    l->calls++;
    l->rc      = rc;
    l->version = e != NULL ? e->version : 0;
    MP_EXPECT((rc == PAMI_SUCCESS) == (e != NULL),
              "lookup callback: result %s with entry %p",
              pami_error_text(rc), (const void *)e);
}

static void lookup_nb(pami_task_t owner, pami_svd_key_t key, lk_t *l)
{
    pami_svd_lookup_t p = {.owner = owner, .key = key, .done_fn = on_lookup,
                           .cookie = l};
    l->in_call = true;
    MP_CHECK(pami_svd_lookup(CTX, &p));
    l->in_call = false;
}

typedef struct {
    int      calls;
    uint64_t last;
    size_t   bytes;
} change_t;

static void on_change(pami_context_t ctx, void *cookie,
                      const pami_svd_entry_t *e)
{
    (void)ctx;
    change_t *c = cookie;
    MP_EXPECT(e->version > c->last, "change to version %llu after %llu",
              (unsigned long long)e->version, (unsigned long long)c->last);
    svd_expect_entry(e, e->owner, e->key, e->version, c->bytes);
    c->calls++;
    c->last = e->version;
}

/* ---- basic ---- */

static void test_basic(void)
{
    const pami_svd_key_t k = 100 + job.me;
    pami_task_t next = (pami_task_t)((job.me + 1) % job.size);
    pami_task_t prev = (pami_task_t)((job.me + job.size - 1) % job.size);
    reg(k, 1, 777);

    /* bad input: clear results */
    pami_svd_register_t dup = {.key = k};
    MP_CHECK_RC(pami_svd_register(CTX, &dup), PAMI_INVAL);
    pami_svd_update_t nokey = {.key = 5};
    MP_CHECK_RC(pami_svd_update(CTX, &nokey), PAMI_NOT_FOUND);
    pami_svd_lookup_t far = {.owner = (pami_task_t)job.size, .key = 1,
                             .done_fn = on_lookup};
    MP_CHECK_RC(pami_svd_lookup(CTX, &far), PAMI_INVAL);
    pami_svd_lookup_t nofn = {.owner = next, .key = 1};
    MP_CHECK_RC(pami_svd_lookup(CTX, &nofn), PAMI_INVAL);
    MP_CHECK_RC(pami_svd_release(CTX, next, 42), PAMI_NOT_FOUND);
    pami_svd_update_t badhdr = {.field_mask = PAMI_SVD_UPDATE_HEADER,
                                .key = k, .header = 9};
    MP_CHECK_RC(pami_svd_update(CTX, &badhdr), PAMI_INVAL);

    /* own key: from the directory, no user recorded */
    pami_svd_entry_t e = lookup(job.me, k, NULL, NULL);
    svd_expect_entry(&e, job.me, k, 1, 777);
    mp_sync(&job);

    /* first lookup fetches, the next ones hit the cache */
    uint64_t f0 = svd_stat(CTX, "fetch_sent");
    e = lookup(next, 100 + next, NULL, NULL);
    svd_expect_entry(&e, next, 100 + next, 1, 777);
    MP_EXPECT(svd_stat(CTX, "fetch_sent") == f0 + 1, "first lookup sent %llu "
              "fetches", (unsigned long long)(svd_stat(CTX, "fetch_sent") - f0));
    uint64_t h0 = svd_stat(CTX, "cache_hits");
    for (int i = 0; i < 5; i++) {
        e = lookup(next, 100 + next, NULL, NULL);
        svd_expect_entry(&e, next, 100 + next, 1, 777);
    }
    lk_t l = {0};
    lookup_nb(next, 100 + next, &l);
    MP_WAIT(&job, CTX, l.calls == 1, 10, "cached lookup callback");
    MP_EXPECT(l.rc == PAMI_SUCCESS && l.version == 1, "cached lookup: %s v%llu",
              pami_error_text(l.rc), (unsigned long long)l.version);
    MP_EXPECT(svd_stat(CTX, "fetch_sent") == f0 + 1 &&
                  svd_stat(CTX, "cache_hits") == h0 + 6,
              "cached lookups: %llu fetches, %llu hits",
              (unsigned long long)(svd_stat(CTX, "fetch_sent") - f0),
              (unsigned long long)(svd_stat(CTX, "cache_hits") - h0));

    /* several non-blocking lookups of a new key share one fetch */
    reg(200 + job.me, 1, 10);
    mp_sync(&job);
    lk_t many[4] = {{0}};
    for (int i = 0; i < 4; i++)
        lookup_nb(prev, 200 + prev, &many[i]);
    MP_WAIT(&job, CTX, many[0].calls + many[1].calls + many[2].calls +
                           many[3].calls == 4, 10, "4 lookups");
    for (int i = 0; i < 4; i++)
        MP_EXPECT(many[i].calls == 1 && many[i].rc == PAMI_SUCCESS,
                  "lookup %d: %d calls, %s", i, many[i].calls,
                  pami_error_text(many[i].rc));
    MP_EXPECT(svd_stat(CTX, "fetch_sent") == f0 + 2, "4 lookups sent %llu "
              "fetches", (unsigned long long)(svd_stat(CTX, "fetch_sent") - f0 - 1));

    /* unknown key */
    pami_svd_lookup_t unk = {.owner = next, .key = 9999};
    pami_svd_entry_t ue;
    MP_CHECK_RC(pami_svd_lookup_wait(CTX, &unk, &ue), PAMI_NOT_FOUND);
    lk_t lu = {0};
    lookup_nb(next, 9998, &lu);
    MP_WAIT(&job, CTX, lu.calls == 1, 10, "unknown-key lookup callback");
    MP_EXPECT(lu.rc == PAMI_NOT_FOUND, "unknown key: %s",
              pami_error_text(lu.rc));
    mp_sync(&job);

    /* the owner recorded exactly its users */
    pami_svd_info_t info;
    pami_task_t users[8];
    MP_CHECK(pami_svd_query(CTX, k, &info, users, 8));
    MP_EXPECT(info.num_users == 1 && users[0] == prev && info.version == 1,
              "key %llu: %zu users (first %u), version %llu, expected 1 user "
              "%u", (unsigned long long)k, info.num_users, users[0],
              (unsigned long long)info.version, prev);
    MP_CHECK(pami_svd_query(CTX, 200 + job.me, &info, users, 8));
    MP_EXPECT(info.num_users == 1 && users[0] == next,
              "key %u: %zu users, expected task %u", 200 + job.me,
              info.num_users, next);
    MP_CHECK_RC(pami_svd_query(CTX, 12345, &info, NULL, 0), PAMI_NOT_FOUND);
    MP_EXPECT(svd_stat(CTX, "fetch_not_found") == 2, "%llu fetches not "
              "found, expected 2",
              (unsigned long long)svd_stat(CTX, "fetch_not_found"));
    mp_sync(&job);
}

/* ---- update ---- */

static int parse_hdr(const char *s)
{
    return strcmp(s, "inline") == 0 ? PAMI_SVD_HEADER_INLINE
           : strcmp(s, "get") == 0  ? PAMI_SVD_HEADER_GET
           : strcmp(s, "auto") == 0 ? PAMI_SVD_HEADER_AUTO
                                    : (mp_fail("header type %s?", s), 0);
}

static int parse_sched(const char *s)
{
    return strcmp(s, "direct") == 0     ? PAMI_SVD_SCHEDULE_DIRECT
           : strcmp(s, "tree") == 0     ? PAMI_SVD_SCHEDULE_TREE
           : strcmp(s, "pipeline") == 0 ? PAMI_SVD_SCHEDULE_PIPELINE
           : strcmp(s, "auto") == 0     ? PAMI_SVD_SCHEDULE_AUTO
                                        : (mp_fail("schedule %s?", s), 0);
}

static bool is_user(const char *set, pami_task_t t, pami_task_t owner)
{
    if (t == owner)
        return false;
    if (strcmp(set, "one") == 0)
        return t == job.size - 1;
    if (strcmp(set, "some") == 0)
        return t % 2 == 1;
    return true;
}

static const char *const stat_of_hdr[] = {NULL, "hdr_inline", "hdr_get"};
static const char *const stat_of_sched[] = {NULL, "sched_direct",
                                            "sched_tree", "sched_pipeline"};

/* expect: "HDR/SCHED" the rule must pick (for auto), or NULL. */
static void test_update(const char *set, int hdr, int sched, size_t bytes,
                        const char *expect)
{
    const pami_task_t    owner = 0;
    const pami_svd_key_t key   = 7;
    const int            rounds = 3;
    change_t chg = {.bytes = bytes};
    size_t nusers = 0;
    for (pami_task_t t = 0; t < job.size; t++)
        nusers += is_user(set, t, owner);
    bool user = is_user(set, job.me, owner);

    if (job.me == owner)
        reg(key, 1, bytes);
    mp_sync(&job);
    if (user) {
        pami_svd_entry_t e = lookup(owner, key, on_change, &chg);
        svd_expect_entry(&e, owner, key, 1, bytes);
        chg.last = 1;
    }
    mp_sync(&job);

    uint8_t *buf = malloc(bytes ? bytes : 1);
    for (int r = 0; r < rounds; r++) {
        uint64_t v = 2 + (uint64_t)r;
        if (job.me == owner) {
            pami_svd_info_t info;
            pami_task_t users[64];
            MP_CHECK(pami_svd_query(CTX, key, &info, users, 64));
            MP_EXPECT(info.num_users == nusers, "%zu users, expected %zu",
                      info.num_users, nusers);
            for (size_t i = 0; i < info.num_users; i++)
                MP_EXPECT(is_user(set, users[i], owner), "task %u is "
                          "recorded as a user", users[i]);
            int h = hdr ? hdr : (int)info.header;
            int s = sched ? sched : (int)info.schedule;
            if (expect != NULL) {
                char want[64];
                snprintf(want, sizeof(want), "%s/%s", stat_of_hdr[h] + 4,
                         stat_of_sched[s] + 6);
                MP_EXPECT(strcmp(want, expect) == 0, "the rule chose %s, "
                          "expected %s", want, expect);
            }
            uint64_t h0 = svd_stat(CTX, stat_of_hdr[h]);
            uint64_t s0 = svd_stat(CTX, stat_of_sched[s]);
            pami_svd_update_t u = svd_update_params(owner, key, v, buf, bytes);
            if (hdr) {
                u.field_mask |= PAMI_SVD_UPDATE_HEADER;
                u.header = (pami_svd_header_t)hdr;
            }
            if (sched) {
                u.field_mask |= PAMI_SVD_UPDATE_SCHEDULE;
                u.schedule = (pami_svd_schedule_t)sched;
            }
            u.field_mask |= PAMI_SVD_UPDATE_TIMEOUT;
            u.timeout_ms = 20000;
            MP_CHECK(pami_svd_update_wait(CTX, &u));
            MP_EXPECT(svd_stat(CTX, stat_of_hdr[h]) == h0 + 1 &&
                          svd_stat(CTX, stat_of_sched[s]) == s0 + 1,
                      "update %d not counted as %s/%s", r, stat_of_hdr[h],
                      stat_of_sched[s]);
        }
        mp_sync(&job);
        if (user) {
            MP_EXPECT(chg.calls == r + 1 && chg.last == v, "after update %d: "
                      "%d change callbacks, last version %llu", r, chg.calls,
                      (unsigned long long)chg.last);
            uint64_t f0 = svd_stat(CTX, "fetch_sent");
            pami_svd_entry_t e = lookup(owner, key, NULL, NULL);
            svd_expect_entry(&e, owner, key, v, bytes);
            MP_EXPECT(svd_stat(CTX, "fetch_sent") == f0, "lookup after the "
                      "update fetched instead of using the cache");
        } else if (job.me != owner) {
            MP_EXPECT(chg.calls == 0 && svd_stat(CTX, "notify_received") == 0 &&
                          svd_stat(CTX, "commits") == 0,
                      "a task that is not a user received %llu notifications",
                      (unsigned long long)svd_stat(CTX, "notify_received"));
        }
        mp_sync(&job); /* checked before the next update starts */
    }
    if (user)
        MP_EXPECT(svd_stat(CTX, "notify_received") == (uint64_t)rounds &&
                      svd_stat(CTX, "commits") == (uint64_t)rounds,
                  "user: %llu notifications, %llu commits for %d updates",
                  (unsigned long long)svd_stat(CTX, "notify_received"),
                  (unsigned long long)svd_stat(CTX, "commits"), rounds);
    if (job.me == owner)
        MP_EXPECT(svd_stat(CTX, "updates") == (uint64_t)rounds,
                  "owner counted %llu updates",
                  (unsigned long long)svd_stat(CTX, "updates"));
    free(buf);
    mp_sync(&job);
}

/* ---- race ---- */

typedef struct {
    uint64_t last;
    size_t   bytes;
    int      calls;
} race_t;

static void on_race_lookup(pami_context_t ctx, void *cookie, pami_result_t rc,
                           const pami_svd_entry_t *e)
{
    (void)ctx;
    race_t *r = cookie;
    r->calls++;
    MP_EXPECT(rc == PAMI_SUCCESS, "racing lookup: %s", pami_error_text(rc));
    svd_expect_entry(e, 0, 9, e->version, r->bytes);
}

static void on_update_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    MP_EXPECT(rc == PAMI_SUCCESS, "update: %s", pami_error_text(rc));
    (*(int *)cookie)++;
}

static void test_race(size_t bytes)
{
    const pami_svd_key_t key = 9;
    const int updates = 200, depth = 4;
    const uint64_t final = 1 + (uint64_t)updates;
    if (job.me == 0)
        reg(key, 1, bytes);
    mp_sync(&job);
    race_t rl = {.bytes = bytes};
    if (job.me != 0) {
        pami_svd_entry_t e = lookup(0, key, NULL, NULL);
        svd_expect_entry(&e, 0, key, 1, bytes);
    }
    mp_sync(&job);
    if (job.me == 0) {
        /* Up to depth updates in flight, each with its own buffer. */
        uint8_t *bufs = malloc(depth * (bytes ? bytes : 1));
        int done = 0;
        for (int i = 0; i < updates; i++) {
            MP_WAIT(&job, CTX, i - done < depth, 30, "update %d: %d done",
                    i, done);
            pami_svd_update_t u = svd_update_params(
                0, key, 2 + (uint64_t)i, bufs + (i % depth) * bytes, bytes);
            u.done_fn = on_update_done;
            u.cookie  = &done;
            MP_CHECK(pami_svd_update(CTX, &u));
        }
        MP_WAIT(&job, CTX, done == updates, 30, "%d of %d updates", done,
                updates);
        free(bufs);
    } else {
        /* Read all the time: every entry seen is whole and none is older
         * than one seen before. Task 1 also leaves and comes back, so its
         * fetches race with the updates. */
        uint64_t last = 1;
        int      rejoin = 0, issued = 0;
        double   deadline = mp_now() + 40;
        while (last < final) {
            MP_EXPECT(mp_now() < deadline, "saw version %llu of %llu",
                      (unsigned long long)last, (unsigned long long)final);
            pami_svd_entry_t e = lookup(0, key, NULL, NULL);
            svd_expect_entry(&e, 0, key, e.version, bytes);
            MP_EXPECT(e.version >= last, "version went back from %llu to "
                      "%llu", (unsigned long long)last,
                      (unsigned long long)e.version);
            last = e.version;
            if (job.me == 1 && rejoin < 20 && last > (uint64_t)rejoin * 8) {
                MP_CHECK(pami_svd_release(CTX, 0, key));
                rejoin++;
                continue;
            }
            if (issued < 50) {
                issued++;
                pami_svd_lookup_t p = {.owner = 0, .key = key,
                                       .done_fn = on_race_lookup,
                                       .cookie = &rl};
                MP_CHECK(pami_svd_lookup(CTX, &p));
            }
            pami_context_advance(CTX, 10);
            sched_yield();
        }
        MP_WAIT(&job, CTX, rl.calls == issued, 10, "%d of %d racing lookups",
                rl.calls, issued);
        if (job.me == 1)
            MP_EXPECT(rejoin > 0, "task 1 never left and came back");
    }
    mp_sync(&job);
    if (job.me == 0) {
        pami_svd_info_t info;
        MP_CHECK(pami_svd_query(CTX, key, &info, NULL, 0));
        MP_EXPECT(info.num_users == job.size - 1 && info.version == final &&
                      info.updates_in_flight == 0,
                  "after the race: %zu users, version %llu, %zu in flight",
                  info.num_users, (unsigned long long)info.version,
                  info.updates_in_flight);
    }
    mp_sync(&job);
}

/* ---- release ---- */

static void test_release(void)
{
    const pami_svd_key_t key = 11;
    const size_t bytes = 1000;
    change_t chg = {.bytes = bytes};
    bool leaves = job.me % 2 == 1;
    uint8_t buf[1000];
    if (job.me == 0)
        reg(key, 1, bytes);
    mp_sync(&job);
    if (job.me != 0)
        lookup(0, key, on_change, &chg);
    mp_sync(&job);
    if (job.me == 0) {
        pami_svd_update_t u = svd_update_params(0, key, 2, buf, bytes);
        MP_CHECK(pami_svd_update_wait(CTX, &u));
    }
    mp_sync(&job);
    if (job.me != 0)
        MP_EXPECT(chg.calls == 1, "%d change callbacks", chg.calls);
    /* Counted before the next sync: the owner leaves it first and its
     * second update may reach us while we still progress inside it. */
    uint64_t n0 = svd_stat(CTX, "notify_received");
    if (leaves) {
        MP_CHECK(pami_svd_release(CTX, 0, key));
        MP_CHECK_RC(pami_svd_release(CTX, 0, key), PAMI_NOT_FOUND);
    }
    mp_sync(&job);
    if (job.me == 0) {
        pami_svd_info_t info;
        pami_task_t users[16];
        MP_CHECK(pami_svd_query(CTX, key, &info, users, 16));
        MP_EXPECT(info.num_users == (job.size - 1) / 2, "%zu users after "
                  "the releases", info.num_users);
        for (size_t i = 0; i < info.num_users; i++)
            MP_EXPECT(users[i] % 2 == 0, "task %u still a user", users[i]);
        pami_svd_update_t u = svd_update_params(0, key, 3, buf, bytes);
        MP_CHECK(pami_svd_update_wait(CTX, &u));
    }
    mp_sync(&job);
    if (job.me != 0) {
        MP_EXPECT(chg.calls == (leaves ? 1 : 2), "%d change callbacks after "
                  "the second update", chg.calls);
        MP_EXPECT(svd_stat(CTX, "notify_received") == n0 + (leaves ? 0 : 1),
                  "%llu notifications after the release",
                  (unsigned long long)(svd_stat(CTX, "notify_received") - n0));
        /* Back again: fetched afresh, the newest version. */
        uint64_t f0 = svd_stat(CTX, "fetch_sent");
        pami_svd_entry_t e = lookup(0, key, NULL, NULL);
        svd_expect_entry(&e, 0, key, 3, bytes);
        MP_EXPECT(svd_stat(CTX, "fetch_sent") == f0 + (leaves ? 1 : 0),
                  "fetches on return: %llu",
                  (unsigned long long)(svd_stat(CTX, "fetch_sent") - f0));
    }
    mp_sync(&job);
}

/* ---- handler ---- */

typedef struct {
    bool          ran;
    pami_result_t update_rc, lookup_rc, own_rc;
    uint64_t      own_version;
} in_handler_t;

/* Posted work runs under the handler rules: the blocking forms cannot
 * wait there, so they must refuse before they start anything. */
static pami_result_t blocking_from_work(pami_context_t ctx, void *cookie)
{
    in_handler_t *h = cookie;
    uint8_t buf[64];
    pami_svd_update_t u = svd_update_params(0, 21, 2, buf, sizeof(buf));
    h->update_rc = pami_svd_update_wait(ctx, &u);
    pami_svd_lookup_t l = {.owner = 1, .key = 22};
    pami_svd_entry_t  e;
    h->lookup_rc = pami_svd_lookup_wait(ctx, &l, &e);
    /* Answered from the own directory: no wait, so it may. */
    pami_svd_lookup_t own = {.owner = 0, .key = 21};
    h->own_rc      = pami_svd_lookup_wait(ctx, &own, &e);
    h->own_version = h->own_rc == PAMI_SUCCESS ? e.version : 0;
    h->ran = true;
    return PAMI_SUCCESS;
}

static void test_handler(void)
{
    if (job.me == 0)
        reg(21, 1, 64);
    if (job.me == 1)
        reg(22, 1, 64);
    mp_sync(&job);
    if (job.me == 2)
        lookup(0, 21, NULL, NULL);
    mp_sync(&job);
    if (job.me == 0) {
        in_handler_t h = {0};
        pami_work_t  w;
        uint64_t     updates = svd_stat(CTX, "updates");
        MP_CHECK(pami_context_post(CTX, &w, blocking_from_work, &h));
        while (!h.ran)
            pami_context_wait(CTX, -1);
        MP_EXPECT(h.update_rc == PAMI_IN_HANDLER, "update_wait from posted "
                  "work: %s", pami_error_text(h.update_rc));
        MP_EXPECT(h.lookup_rc == PAMI_IN_HANDLER, "lookup_wait from posted "
                  "work: %s", pami_error_text(h.lookup_rc));
        MP_EXPECT(h.own_rc == PAMI_SUCCESS && h.own_version == 1,
                  "lookup_wait of an own key from posted work: %s, "
                  "version %llu", pami_error_text(h.own_rc),
                  (unsigned long long)h.own_version);
        pami_svd_info_t info;
        MP_CHECK(pami_svd_query(CTX, 21, &info, NULL, 0));
        MP_EXPECT(info.version == 1 && info.updates_in_flight == 0 &&
                      svd_stat(CTX, "updates") == updates,
                  "a refused update_wait made version %llu (%zu in flight)",
                  (unsigned long long)info.version, info.updates_in_flight);
        MP_CHECK_RC(pami_svd_release(CTX, 1, 22), PAMI_NOT_FOUND);
    }
    mp_sync(&job);
    if (job.me == 1) {
        pami_svd_info_t info;
        MP_CHECK(pami_svd_query(CTX, 22, &info, NULL, 0));
        MP_EXPECT(info.num_users == 0, "a refused lookup_wait made %zu "
                  "users", info.num_users);
    }
    mp_sync(&job);
}

/* ---- malformed ---- */

static const char *const drop_stats[] = {"drop_short", "drop_long",
                                         "drop_version", "drop_type",
                                         "drop_size", "drop_bad",
                                         "drop_stale", "drop_forged"};
#define NDROP (sizeof(drop_stats) / sizeof(drop_stats[0]))

static void inject(pami_task_t to, size_t id, const void *hdr, size_t hlen,
                   const void *data, size_t dlen)
{
    pami_send_immediate_t s = {.dest = mp_ep(&job, to, 0), .dispatch = id,
                               .header = hdr, .header_len = hlen,
                               .data = data, .data_len = dlen};
    mp_inject_imm(&job, CTX, &s);
}

static void test_malformed(void)
{
    size_t num, base = svd_dispatch_base(&job, &num);
    MP_EXPECT(num == SVD_PKT_COUNT, "svd has %zu dispatch ids, expected %d",
              num, SVD_PKT_COUNT);
    static const size_t hsize[SVD_PKT_COUNT] = {
        sizeof(svd_fetch_hdr_t),  sizeof(svd_entry_hdr_t),
        sizeof(svd_release_hdr_t), sizeof(svd_notify_hdr_t),
        sizeof(svd_ack_hdr_t),    sizeof(svd_chunk_hdr_t),
        sizeof(svd_fetched_hdr_t)};
    const unsigned np = SVD_PKT_COUNT;
    uint64_t before[NDROP];
    for (size_t i = 0; i < NDROP; i++)
        before[i] = svd_stat(CTX, drop_stats[i]);
    mp_sync(&job);

    /* Task 1 sends every kind of bad packet to task 0. */
    pami_task_t victim = 0;
    uint64_t    want[NDROP] = {0};
    if (job.me == 1) {
        uint8_t  h[400];
        uint32_t junk[4] = {1, 2, 3, 4};
        for (size_t t = 0; t < np; t++) {
            memset(h, 0, sizeof(h));
            h[0] = SVD_WIRE_VERSION;
            h[1] = (uint8_t)t;
            inject(victim, base + t, h, hsize[t] - 1, NULL, 0); /* short */
            inject(victim, base + t, h, 0, NULL, 0);            /* empty */
            inject(victim, base + t, h, hsize[t] + 1, NULL, 0); /* long */
            h[0] = 99;
            inject(victim, base + t, h, hsize[t], NULL, 0);     /* version */
            h[0] = SVD_WIRE_VERSION;
            h[1] = 77;
            inject(victim, base + t, h, hsize[t], NULL, 0);     /* type */
            h[1] = (uint8_t)((t + 1) % np);
            inject(victim, base + t, h, hsize[t], NULL, 0);     /* other type */
            h[1] = (uint8_t)t;
        }
        /* absurd sizes: payloads where none belong, sizes beyond limits */
        memset(h, 0, sizeof(h));
        h[0] = SVD_WIRE_VERSION;
        for (size_t t = 0; t < np; t++) {
            if (t == SVD_PKT_ENTRY || t == SVD_PKT_NOTIFY)
                continue;
            h[1] = (uint8_t)t;
            inject(victim, base + t, h, hsize[t], junk, sizeof(junk));
        }
        svd_entry_hdr_t e = {.version = SVD_WIRE_VERSION, .type = 1, .status = 0,
                             .rec_len = 1ull << 62};
        inject(victim, base + 1, &e, sizeof(e), junk, sizeof(junk));
        svd_notify_hdr_t n;
        memset(&n, 0, sizeof(n));
        n.version = SVD_WIRE_VERSION; n.type = 3; n.htype = 1; n.sched = 1; n.fanout = 2;
        n.owner = 2; n.ntasks = 1000000; n.rec_len = 400;
        inject(victim, base + 3, &n, sizeof(n), junk, sizeof(junk));
        n.ntasks = 1; n.rec_len = 1ull << 50;
        inject(victim, base + 3, &n, sizeof(n), junk, sizeof(junk));
        /* inconsistent content */
        n.rec_len = 296; n.htype = 5;
        inject(victim, base + 3, &n, sizeof(n), junk, sizeof(junk));
        n.htype = 1; n.owner = 0;                       /* owner is me */
        inject(victim, base + 3, &n, sizeof(n), junk, sizeof(junk));
        /* a task list that does not hold the receiver: 4 + 8 + 296
         * bytes */
        uint8_t pay[308];
        memset(pay, 0, sizeof(pay));
        uint32_t other = 3;
        memcpy(pay, &other, 4);
        n.owner = 2;
        inject(victim, base + 3, &n, sizeof(n), pay, sizeof(pay));
        /* stale: an ACK and a CHUNK for nothing */
        svd_ack_hdr_t a = {.version = SVD_WIRE_VERSION, .type = 4, .owner = 0, .key = 1,
                           .entry_version = 5};
        inject(victim, base + 4, &a, sizeof(a), NULL, 0);
        svd_chunk_hdr_t c = {.version = SVD_WIRE_VERSION, .type = 5, .owner = 2, .key = 1,
                             .entry_version = 5};
        inject(victim, base + 5, &c, sizeof(c), NULL, 0);
    }
    /* short: hsize-1 and empty; long; version; type: 77 and another id's */
    want[0] = 2 * np; want[1] = np; want[2] = np; want[3] = 2 * np;
    /* payloads on the ids that take none, ENTRY rec_len, NOTIFY x2 */
    want[4] = (np - 2) + 1 + 2;
    want[5] = 3;         /* header type, owner, task list */
    want[6] = 2;
    want[7] = 0;
    mp_sync(&job);
    if (job.me == victim)
        for (size_t i = 0; i < NDROP; i++) {
            uint64_t got = svd_stat(CTX, drop_stats[i]) - before[i];
            MP_EXPECT(got == want[i], "%s: %llu, expected %llu",
                      drop_stats[i], (unsigned long long)got,
                      (unsigned long long)want[i]);
        }
    MP_EXPECT(svd_stat(CTX, "notify_received") == 0,
              "a malformed NOTIFY was taken");
    /* and the directory still works */
    test_update("all", PAMI_SVD_HEADER_GET, PAMI_SVD_SCHEDULE_TREE, 5000,
                NULL);
}

/* ---- forged NOTIFY ---- */

/* A NOTIFY for (owner, key) version v to task `to`, INLINE, carrying a
 * record with the wrong data and a tag that is not the owner's. */
static void forge_notify(pami_task_t to, size_t base, pami_task_t owner,
                         pami_svd_key_t key, uint64_t v, uint8_t sched,
                         const uint32_t *users, size_t n, size_t bytes)
{
    svd_notify_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.version = SVD_WIRE_VERSION; h.type = SVD_PKT_NOTIFY;
    h.htype = PAMI_SVD_HEADER_INLINE; h.sched = sched; h.fanout = 1;
    h.key = key; h.owner = owner; h.ntasks = (uint32_t)n;
    h.entry_version = v; h.rec_len = SVD_REC_HDR + bytes;
    size_t   len = n * SVD_USER_BYTES + h.rec_len;
    uint8_t *pay = calloc(1, len);
    MP_EXPECT(pay != NULL, "no memory");
    memcpy(pay, users, n * sizeof(uint32_t));
    for (size_t i = 0; i < n; i++) { /* tags: guesses */
        uint64_t tag = 0x5eedull * (i + 1) ^ v;
        memcpy(pay + n * 4 + i * 8, &tag, 8);
    }
    svd_record_hdr_t r;
    memset(&r, 0, sizeof(r));
    r.version = SVD_WIRE_VERSION; r.addr = svd_addr_of(v); r.size = v;
    r.entry_version = v; r.data_size = bytes;
    memcpy(pay + n * SVD_USER_BYTES, &r, sizeof(r));
    mp_fill(pay + n * SVD_USER_BYTES + SVD_REC_HDR, bytes, owner, v + 100,
            (uint32_t)key);
    inject(to, base + SVD_PKT_NOTIFY, &h, sizeof(h), pay, len);
    free(pay);
}

/* Forged NOTIFYs that announce the next version (from the owner's own
 * task, and from a user posing as a tree parent) are dropped as forged:
 * nobody takes their data, and the owner's real update of that version
 * succeeds everywhere. */
static void test_forged(void)
{
    const pami_svd_key_t key = 21;
    const pami_task_t owner = 1;
    const size_t bytes = 64;
    size_t num, base = svd_dispatch_base(&job, &num);
    change_t chg = {.bytes = bytes};
    if (job.me == owner)
        reg(key, 1, bytes);
    mp_sync(&job);
    if (job.me != owner)
        lookup(owner, key, on_change, &chg);
    /* Before the sync: a task that leaves it first may forge to one still
     * inside it, whose progress drops the packet there. */
    uint64_t f0 = svd_stat(CTX, "drop_forged");
    mp_sync(&job);
    if (job.me == owner)
        for (pami_task_t t = 0; t < job.size; t++)
            if (t != owner) {
                uint32_t u = t;
                forge_notify(t, base, owner, key, 2,
                             PAMI_SVD_SCHEDULE_DIRECT, &u, 1, bytes);
            }
    if (job.me == 2) {
        uint32_t users[2] = {2, 3}; /* tree, fanout 1: 2 is 3's parent */
        forge_notify(3, base, owner, key, 2, PAMI_SVD_SCHEDULE_TREE, users,
                     2, bytes);
    }
    mp_sync(&job);
    uint64_t forged = svd_stat(CTX, "drop_forged") - f0;
    uint64_t want   = job.me == owner ? 0 : job.me == 3 ? 2 : 1;
    MP_EXPECT(forged == want, "drop_forged +%llu, expected +%llu",
              (unsigned long long)forged, (unsigned long long)want);
    MP_EXPECT(chg.calls == 0, "a forged NOTIFY made %d change callbacks",
              chg.calls);
    mp_sync(&job);
    if (job.me == owner) {
        uint8_t buf[64];
        pami_svd_update_t u = svd_update_params(owner, key, 2, buf, bytes);
        u.field_mask |= PAMI_SVD_UPDATE_TIMEOUT;
        u.timeout_ms  = 20000;
        MP_CHECK(pami_svd_update_wait(CTX, &u));
    }
    mp_sync(&job);
    if (job.me != owner) {
        MP_EXPECT(chg.calls == 1, "%d change callbacks after the update",
                  chg.calls);
        pami_svd_entry_t e = lookup(owner, key, NULL, NULL);
        svd_expect_entry(&e, owner, key, 2, bytes);
    }
    mp_sync(&job);
}

/* ---- shutdown ---- */

static int sd_updates[2], sd_lookups[2]; /* SUCCESS, SHUTDOWN */

static void on_sd_update(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    (void)cookie;
    MP_EXPECT(rc == PAMI_SUCCESS || rc == PAMI_SHUTDOWN, "update at "
              "shutdown: %s", pami_error_text(rc));
    sd_updates[rc == PAMI_SHUTDOWN]++;
}

static void on_sd_lookup(pami_context_t ctx, void *cookie, pami_result_t rc,
                         const pami_svd_entry_t *e)
{
    (void)ctx;
    (void)cookie;
    (void)e;
    MP_EXPECT(rc == PAMI_SUCCESS || rc == PAMI_SHUTDOWN, "lookup at "
              "shutdown: %s", pami_error_text(rc));
    sd_lookups[rc == PAMI_SHUTDOWN]++;
}

/* Operations still under way at destroy end once each, with SUCCESS or
 * SHUTDOWN, and nothing leaks (under ASan). */
static void test_shutdown(void)
{
    const size_t bytes = 100000;
    pami_task_t next = (pami_task_t)((job.me + 1) % job.size);
    reg(13, 1, bytes);
    reg(20 + job.me, 1, 70000);
    mp_sync(&job);
    lookup(next, 13, NULL, NULL);
    mp_sync(&job);
    uint8_t *buf = malloc(bytes);
    for (uint64_t v = 2; v < 5; v++) {
        pami_svd_update_t u = svd_update_params(job.me, 13, v, buf, bytes);
        u.done_fn = on_sd_update;
        MP_CHECK(pami_svd_update(CTX, &u));
    }
    for (int i = 0; i < 2; i++) {
        pami_svd_lookup_t l = {.owner = next, .key = 20 + next,
                               .done_fn = on_sd_lookup};
        MP_CHECK(pami_svd_lookup(CTX, &l));
    }
    free(buf);
    mp_finish(&job);
    MP_EXPECT(sd_updates[0] + sd_updates[1] == 3 &&
                  sd_lookups[0] + sd_lookups[1] == 2,
              "at destroy: %d+%d of 3 updates, %d+%d of 2 lookups ended",
              sd_updates[0], sd_updates[1], sd_lookups[0], sd_lookups[1]);
    printf("svd shutdown: task %u ok (%d updates, %d lookups ended with "
           "SHUTDOWN)\n", job.me, sd_updates[1], sd_lookups[1]);
    exit(0);
}

/* ---- peer ---- */

static pami_result_t peer_rc = PAMI_RESULT_LAST;

static void on_peer_update(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    (void)cookie;
    MP_EXPECT(peer_rc == PAMI_RESULT_LAST, "update ended twice");
    peer_rc = rc;
}

/* Task 1, a forwarder of a TREE update, dies: the owner's update ends
 * with PAMI_PEER_FAILED, a lookup of its entries fails the same way, the
 * directory goes on among the survivors. */
static void test_peer(void)
{
    const pami_task_t victim = 1;
    const size_t bytes = 100000;
    if (job.me == 0)
        reg(15, 1, bytes);
    if (job.me == victim)
        reg(16, 1, 10);
    mp_sync(&job);
    if (job.me != 0)
        lookup(0, 15, NULL, NULL);
    mp_sync(&job);
    if (job.me == victim)
        _exit(0); /* pamirun takes exit 0 as a normal end */
    uint8_t *buf = malloc(bytes);
    if (job.me == 0) {
        pami_svd_update_t u = svd_update_params(0, 15, 2, buf, bytes);
        u.field_mask |= PAMI_SVD_UPDATE_SCHEDULE;
        u.schedule = PAMI_SVD_SCHEDULE_TREE;
        u.done_fn  = on_peer_update;
        MP_CHECK(pami_svd_update(CTX, &u));
        MP_WAIT(&job, CTX, peer_rc != PAMI_RESULT_LAST, 20, "the update");
        MP_EXPECT(peer_rc == PAMI_PEER_FAILED, "update with a dead user: %s",
                  pami_error_text(peer_rc));
        MP_EXPECT(svd_stat(CTX, "peer_failed_ops") >= 1, "no peer failure "
                  "counted");
        pami_svd_info_t info;
        MP_CHECK(pami_svd_query(CTX, 15, &info, NULL, 0));
        MP_EXPECT(info.num_users == job.size - 2, "%zu users left",
                  info.num_users);
    } else {
        /* Until this task, too, knows task 1 is gone. mp_sync lets a
         * task leave before the victim has (the victim still waits for
         * its own messages to complete), so the victim may answer the
         * first lookup before it exits: then release and ask again. */
        pami_svd_lookup_t l = {.field_mask = PAMI_SVD_LOOKUP_TIMEOUT,
                               .owner = victim, .key = 16,
                               .timeout_ms = 20000};
        pami_svd_entry_t e;
        double until = mp_now() + 20;
        pami_result_t rc;
        while ((rc = pami_svd_lookup_wait(CTX, &l, &e)) == PAMI_SUCCESS) {
            svd_expect_entry(&e, victim, 16, 1, 10);
            rc = pami_svd_release(CTX, victim, 16);
            MP_EXPECT(rc == PAMI_SUCCESS || rc == PAMI_PEER_FAILED ||
                          rc == PAMI_NOT_FOUND,
                      "release of the victim's entry: %s",
                      pami_error_text(rc));
            mp_wait_step(&job, CTX);
            MP_EXPECT(mp_now() < until, "task 1 still answers lookups");
        }
        MP_EXPECT(rc == PAMI_PEER_FAILED, "lookup at a dead owner: %s",
                  pami_error_text(rc));
    }
    /* the survivors go on: one more update, checked everywhere */
    double deadline = mp_now() + 20;
    if (job.me == 0) {
        pami_svd_update_t u = svd_update_params(0, 15, 3, buf, bytes);
        u.field_mask |= PAMI_SVD_UPDATE_SCHEDULE | PAMI_SVD_UPDATE_TIMEOUT;
        u.schedule   = PAMI_SVD_SCHEDULE_DIRECT;
        u.timeout_ms = 20000;
        MP_CHECK(pami_svd_update_wait(CTX, &u));
    } else {
        pami_svd_entry_t e;
        do {
            e = lookup(0, 15, NULL, NULL);
            mp_wait_step(&job, CTX);
            MP_EXPECT(mp_now() < deadline, "version 3 never came");
        } while (e.version < 3);
        svd_expect_entry(&e, 0, 15, 3, bytes);
    }
    /* The owner may not leave before every survivor saw version 3: a
     * lookup still on its way to a task that left fails as its death. */
    pami_task_t survivors[job.size];
    size_t ns = 0;
    for (pami_task_t t = 0; t < job.size; t++)
        if (t != victim)
            survivors[ns++] = t;
    MP_CHECK(pami_barrier_wait(CTX, PAMI_BARRIER_PACKETS, survivors, ns));
    free(buf);
    pami_result_t rc = pami_client_destroy(&job.client);
    MP_EXPECT(rc == PAMI_SUCCESS || rc == PAMI_PEER_FAILED,
              "destroy: %s", pami_error_text(rc));
    printf("svd peer: task %u ok\n", job.me);
    exit(0);
}

/* ---- bench ---- */

static void test_bench(int sched)
{
    static const size_t sizes[] = {64, 64 << 10, 4 << 20};
    static const size_t users[] = {1, 4, 7};
    uint8_t *buf = malloc(4 << 20);
    memset(buf, 1, 4 << 20);
    pami_svd_key_t key = 1000;
    for (size_t u = 0; u < 3; u++) {
        if (users[u] >= job.size)
            continue;
        for (size_t s = 0; s < 3; s++, key++) {
            if (job.me == 0) {
                pami_svd_register_t r = {
                    .field_mask = PAMI_SVD_REGISTER_DATA, .key = key,
                    .addr = buf, .size = sizes[s], .data = buf,
                    .data_size = sizes[s]};
                if (sched) {
                    r.field_mask |= PAMI_SVD_REGISTER_SCHEDULE;
                    r.schedule = (pami_svd_schedule_t)sched;
                }
                MP_CHECK(pami_svd_register(CTX, &r));
            }
            mp_sync(&job);
            if (job.me >= 1 && job.me <= users[u])
                lookup(0, key, NULL, NULL);
            mp_sync(&job);
            if (job.me == 0) {
                int iters = sizes[s] >= (1 << 20) ? 20 : 200;
                double min;
                double mean = svd_bench_update(CTX, key, buf, sizes[s], 5,
                                               iters, &min);
                pami_svd_info_t info;
                MP_CHECK(pami_svd_query(CTX, key, &info, NULL, 0));
                printf("svd_update users %zu bytes %8zu: mean %9.1f us, min "
                       "%9.1f us (%s, %s)\n", users[u], sizes[s], mean, min,
                       info.header == PAMI_SVD_HEADER_INLINE ? "inline"
                                                             : "get",
                       info.schedule == PAMI_SVD_SCHEDULE_DIRECT ? "direct"
                       : info.schedule == PAMI_SVD_SCHEDULE_TREE ? "tree"
                                                                 : "pipeline");
            }
            mp_sync(&job);
        }
    }
    free(buf);
}

int main(int argc, char **argv)
{
    mp_init(&job, "svd", &argc, argv, NULL, 1, true);
    const char *mode = argc > 1 ? argv[1] : "basic";
    MP_EXPECT(job.size >= 4 || strcmp(mode, "bench") == 0,
              "run at 4 ranks or more");
    if (strcmp(mode, "basic") == 0)
        test_basic();
    else if (strcmp(mode, "update") == 0 && (argc == 6 || argc == 7))
        test_update(argv[2], parse_hdr(argv[3]), parse_sched(argv[4]),
                    strtoul(argv[5], NULL, 10), argc == 7 ? argv[6] : NULL);
    else if (strcmp(mode, "race") == 0 && argc == 3)
        test_race(strtoul(argv[2], NULL, 10));
    else if (strcmp(mode, "release") == 0)
        test_release();
    else if (strcmp(mode, "peer") == 0)
        test_peer();
    else if (strcmp(mode, "shutdown") == 0)
        test_shutdown();
    else if (strcmp(mode, "handler") == 0)
        test_handler();
    else if (strcmp(mode, "malformed") == 0)
        test_malformed();
    else if (strcmp(mode, "forged") == 0)
        test_forged();
    else if (strcmp(mode, "bench") == 0)
        test_bench(argc > 2 ? parse_sched(argv[2]) : 0);
    else
        mp_fail("usage: svd_test basic|update USERS HDR SCHED BYTES|race "
                "BYTES|release|malformed|forged|shutdown|handler|peer|bench "
                "[SCHED]");
    mp_finish(&job);
    printf("svd %s: task %u ok\n", mode, job.me);
    return 0;
}
