/*
 * Selection from a profile, in a job (suite tuning). Each task writes a
 * synthetic profile for the world's shape and points PAMI_COLL_PROFILE
 * at it before the client exists.
 *
 *   tune_select slow      allreduce_reduce_broadcast (slow here) declared
 *                         best for 1-4 KiB of int32: AUTO takes it there
 *                         (query and counters), the built-in rule elsewhere,
 *                         also when calls alternate between the two
 *   tune_select differ    task 0's profile differs: every member falls
 *                         back to the built-in rules, results stay right
 *   tune_select bad KIND  a profile that cannot be used (KIND: garbage,
 *                         empty, truncated, huge, negative, dup, unknown,
 *                         dir, missing): one warning, built-in rules,
 *                         collectives still right
 *   tune_select forced    PAMI_COLL_ALLREDUCE_ALGORITHM (set by meson)
 *                         wins over the profile; AUTO calls that alternate
 *                         user ops (commutative or not) and sums each run
 *                         what their op allows
 *   tune_select run       the PAMI_COLL_PROFILE of the environment: AUTO
 *                         allreduces of many sizes, checked
 */
#include "../collectives/coll_util.h"

#include <sys/stat.h>
#include <unistd.h>

#define COLL_CT_MAX 128

static mp_job_t job;
static char     path[128];
static const char *bad_kind = "garbage";

static long env_rank(void)
{
    const char *r = getenv("PAMI_RANK");
    return r != NULL ? strtol(r, NULL, 10) : 0;
}

static long env_size(void)
{
    const char *r = getenv("PAMI_SIZE");
    return r != NULL ? strtol(r, NULL, 10) : 1;
}

/* Entries of allreduce, int32 sum, on n tasks of one node at 1, 2 and 4
 * KiB: algo best at 1 us, the other at 5. */
static void write_profile(const char *best, const char *other, bool garbage)
{
    snprintf(path, sizeof(path), "/tmp/pami-tune-select-%ld-%ld.json",
             (long)getppid(), env_rank());
    FILE *f = fopen(path, "w");
    if (f == NULL)
        mp_fail("cannot write %s", path);
    if (garbage) {
        static const struct {
            const char *kind, *text;
        } bad[] = {
            {"garbage", "{\"format_version\": 1, \"entries\": [\x01\x02 oops"},
            {"empty", ""},
            {"truncated", "{\"format_version\": 1, \"producer\": \"x\", "
                          "\"machine\": {\"cpu\": \"x\", \"cores\""},
            {"huge", "{\"format_version\": 99999999999999999999999}"},
            {"negative", "{\"format_version\": 1, \"producer\": \"x\", "
             "\"machine\": {\"cpu\": \"x\", \"cores\": 1, \"nodes\": 1, "
             "\"tasks_per_node\": 1}, \"entries\": [{\"collective\": "
             "\"barrier\", \"algorithm\": \"barrier_packets\", \"shape\": "
             "{\"size\": 2, \"nodes\": 1, \"tasks_per_node\": 2}, "
             "\"bytes\": -1, \"metrics\": {\"median_us\": 1, \"min_us\": 1, "
             "\"max_us\": 1, \"count\": 1}}]}"},
            {"dup", "{\"format_version\": 1, \"producer\": \"x\", "
             "\"machine\": {\"cpu\": \"x\", \"cores\": 1, \"nodes\": 1, "
             "\"tasks_per_node\": 1}, \"entries\": [{\"collective\": "
             "\"barrier\", \"algorithm\": \"barrier_packets\", \"shape\": "
             "{\"size\": 2, \"nodes\": 1, \"tasks_per_node\": 2}, "
             "\"bytes\": 0, \"failed\": \"x\"}, {\"collective\": "
             "\"barrier\", \"algorithm\": \"barrier_packets\", \"shape\": "
             "{\"size\": 2, \"nodes\": 1, \"tasks_per_node\": 2}, "
             "\"bytes\": 0, \"failed\": \"x\"}]}"},
            {"unknown", "{\"format_version\": 1, \"producer\": \"x\", "
             "\"machine\": {\"cpu\": \"x\", \"cores\": 1, \"nodes\": 1, "
             "\"tasks_per_node\": 1}, \"entries\": [{\"collective\": "
             "\"allfoo\", \"algorithm\": \"x\", \"shape\": "
             "{\"size\": 2, \"nodes\": 1, \"tasks_per_node\": 2}, "
             "\"bytes\": 0, \"failed\": \"x\"}]}"},
        };
        size_t k = 0;
        while (k < sizeof(bad) / sizeof(bad[0]) &&
               strcmp(bad[k].kind, bad_kind) != 0)
            k++;
        if (strcmp(bad_kind, "dir") == 0 || strcmp(bad_kind, "missing") == 0) {
            fclose(f);
            unlink(path);
            if (strcmp(bad_kind, "dir") == 0 && mkdir(path, 0700) != 0)
                mp_fail("cannot make %s", path);
            setenv("PAMI_COLL_PROFILE", path, 1);
            return;
        }
        if (k == sizeof(bad) / sizeof(bad[0]))
            mp_fail("no bad profile %s", bad_kind);
        fputs(bad[k].text, f);
    } else {
        long n = env_size();
        fprintf(f, "{\"format_version\": 1, \"producer\": \"tune_select\", "
                "\"machine\": {\"cpu\": \"synthetic\", \"cores\": 1, "
                "\"nodes\": 1, \"tasks_per_node\": %ld}, \"entries\": [", n);
        const char *sep = "";
        for (unsigned b = 1024; b <= 4096; b *= 2)
            for (int k = 0; k < 2; k++) {
                double us = k == 0 ? 1.0 : 5.0;
                fprintf(f, "%s{\"collective\": \"allreduce\", \"algorithm\": "
                        "\"%s\", \"shape\": {\"size\": %ld, \"nodes\": 1, "
                        "\"tasks_per_node\": %ld}, \"type\": \"int32\", "
                        "\"op\": \"sum\", \"bytes\": %u, \"metrics\": "
                        "{\"median_us\": %g, \"min_us\": %g, \"max_us\": %g, "
                        "\"count\": 3}}", sep, k == 0 ? best : other, n, n, b,
                        us, us, us);
                sep = ", ";
            }
        fputs("]}\n", f);
    }
    fclose(f);
    setenv("PAMI_COLL_PROFILE", path, 1);
}

static pami_algorithm_selection_t query(pami_geometry_t g, size_t count,
                                        pami_type_t t)
{
    pami_xfer_t x = ct_xfer(g, PAMI_XFER_ALLREDUCE, NULL, NULL, NULL, count,
                            t, 0);
    pami_algorithm_selection_t s;
    MP_CHECK(pami_geometry_algorithm_selected(&x, &s));
    return s;
}

/* How an AUTO allreduce passes its op: a sum, a user op (wrapping int32
 * sum) said commutative or not, or a sum with a user op's fields set
 * (nothing may read them: op is not PAMI_OP_USER). */
enum { OP_SUM, OP_USER_COMM, OP_USER_NONCOMM, OP_SUM_USER_FIELDS };

/* An AUTO allreduce of count int32 on g, its op passed as how, checked;
 * returns the name the counters show it ran with (exactly one of them
 * rose by one). */
static const char *run_allreduce_op(const ct_geom_t *cg, size_t count,
                                    int how)
{
    int32_t *in = malloc(count * 4), *out = malloc(count * 4);
    if (in == NULL || out == NULL)
        mp_fail("no memory");
    for (size_t i = 0; i < count; i++)
        in[i] = (int32_t)(cg->rank * 3 + i);
    uint64_t before[COLL_CT_MAX];
    size_t na = 0;
    pami_protocol_stat_t st[128];
    MP_CHECK(pami_protocol_stats(job.ctx[0], "coll_select", st, 128, &na));
    for (size_t i = 0; i < na && i < COLL_CT_MAX; i++)
        before[i] = st[i].value;
    pami_xfer_t x = ct_xfer(cg->g, PAMI_XFER_ALLREDUCE, NULL, in, out, count,
                            PAMI_TYPE_INT32, 0);
    if (how != OP_SUM) {
        x.field_mask |= PAMI_XFER_FIELD_USER_OP;
        x.user_fn = ct_user_sum;
        x.user_commutative = how != OP_USER_NONCOMM;
        if (how != OP_SUM_USER_FIELDS)
            x.op = PAMI_OP_USER;
    }
    MP_CHECK(pami_collective_wait(job.ctx[0], &x));
    int64_t base = (int64_t)cg->n * (int64_t)(cg->n - 1) / 2 * 3;
    for (size_t i = 0; i < count; i++)
        if (out[i] != (int32_t)(base + (int64_t)cg->n * (int64_t)i))
            mp_fail("allreduce of %zu: element %zu is %d", count, i, out[i]);
    free(in);
    free(out);
    size_t nb;
    MP_CHECK(pami_protocol_stats(job.ctx[0], "coll_select", st, 128, &nb));
    const char *ran = NULL;
    /* The reasons and mismatches first; then one per algorithm. */
    for (size_t i = 0; i < nb && i < COLL_CT_MAX; i++)
        if (strncmp(st[i].name, "selected_", 9) != 0 &&
            strncmp(st[i].name, "table_", 6) != 0 &&
            st[i].value != before[i]) {
            if (ran != NULL || st[i].value != before[i] + 1)
                mp_fail("allreduce of %zu: more than one algorithm counted",
                        count);
            ran = st[i].name;
        }
    if (ran == NULL)
        mp_fail("allreduce of %zu: no algorithm counted", count);
    return ran;
}

static const char *run_allreduce(const ct_geom_t *cg, size_t count)
{
    return run_allreduce_op(cg, count, OP_SUM);
}

static void expect_builtin(pami_geometry_t g, size_t count, pami_type_t t)
{
    pami_algorithm_selection_t s = query(g, count, t);
    MP_EXPECT(s.reason == PAMI_SELECTED_BUILTIN,
              "%zu elements of type %d: reason %d (%s), not built-in", count,
              (int)t, (int)s.reason, s.name);
}

static void slow(void)
{
    ct_geom_t w;
    ct_world(&job, &w);
    /* 1-4 KiB measured: the table serves 512 B to 8 KiB. */
    static const size_t in_range[] = {128, 256, 512, 1024, 2048};
    for (size_t i = 0; i < sizeof(in_range) / sizeof(in_range[0]); i++) {
        size_t c = in_range[i];
        const char *ran = run_allreduce(&w, c);
        pami_algorithm_selection_t s = query(w.g, c, PAMI_TYPE_INT32);
        MP_EXPECT(strcmp(s.name, "allreduce_reduce_broadcast") == 0 &&
                      s.reason == PAMI_SELECTED_PROFILE,
                  "%zu int32: query says %s (reason %d)", c, s.name,
                  (int)s.reason);
        MP_EXPECT(strcmp(ran, "allreduce_reduce_broadcast") == 0,
                  "%zu int32 ran %s", c, ran);
        MP_EXPECT(s.range_lo <= c * 4 && c * 4 <= s.range_hi &&
                      s.shape_size == w.n,
                  "%zu int32: range %zu..%zu shape %zu", c, s.range_lo,
                  s.range_hi, s.shape_size);
    }
    /* Outside the range, and another type class: the built-in rule. */
    static const size_t outside[] = {2, 64, 4096, 262144};
    for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
        expect_builtin(w.g, outside[i], PAMI_TYPE_INT32);
        const char *ran = run_allreduce(&w, outside[i]);
        MP_EXPECT(strcmp(ran, "allreduce_reduce_broadcast") != 0,
                  "%zu int32 outside the profile ran %s", outside[i], ran);
    }
    /* AUTO keeps its last decision per geometry (coll_select.c): calls
     * that alternate between inputs that decide differently each get
     * their own decision, never the one kept for the other. */
    for (int k = 0; k < 4; k++) {
        bool in = strcmp(run_allreduce(&w, 512),
                         "allreduce_reduce_broadcast") == 0;
        bool out = strcmp(run_allreduce(&w, 64),
                          "allreduce_reduce_broadcast") != 0;
        MP_EXPECT(in && out, "alternating %d: 512 int32 %s the profile's, "
                  "64 int32 %s the built-in rule's", k,
                  in ? "took" : "did not take", out ? "took" : "did not take");
    }
    expect_builtin(w.g, 512, PAMI_TYPE_DOUBLE);
    MP_EXPECT(ct_stat(job.ctx[0], "coll_select", "selected_profile") >= 5,
              "selected_profile below 5");
    /* A sub-geometry of the same shape (every task, reversed) uses the
     * table too; its members confirmed it in the creation exchange. */
    pami_task_t rev[64];
    for (size_t i = 0; i < w.n; i++)
        rev[i] = (pami_task_t)(w.n - 1 - i);
    ct_geom_t r;
    if (w.n <= 64 && ct_create(&job, &r, "reversed", 7, rev, w.n, NULL)) {
        pami_algorithm_selection_t s = query(r.g, 512, PAMI_TYPE_INT32);
        if (w.n > 1)
            MP_EXPECT(s.reason == PAMI_SELECTED_NEAREST ||
                          s.reason == PAMI_SELECTED_PROFILE,
                      "reversed: reason %d", (int)s.reason);
        const char *ran = run_allreduce(&r, 512);
        MP_EXPECT(strcmp(ran, s.name) == 0, "reversed ran %s, query %s", ran,
                  s.name);
        MP_CHECK(pami_geometry_destroy(&r.g));
    }
    MP_EXPECT(ct_stat(job.ctx[0], "coll_select", "table_mismatches") == 0,
              "tables differ with the same profile");
}

static void differ(void)
{
    ct_geom_t w;
    ct_world(&job, &w);
    for (int round = 0; round < 3; round++) {
        const char *ran = run_allreduce(&w, 512); /* in the range */
        if (w.n > 1)
            MP_EXPECT(strcmp(ran, "allreduce_reduce_broadcast") != 0 &&
                          strcmp(ran, "allreduce_ring") != 0,
                      "with differing profiles ran %s", ran);
        run_allreduce(&w, 2);
    }
    if (w.n > 1) {
        expect_builtin(w.g, 512, PAMI_TYPE_INT32);
        MP_EXPECT(ct_stat(job.ctx[0], "coll_select", "table_mismatches") ==
                      1, "world: no table mismatch counted");
    }
    /* A sub-geometry of all tasks: the creation exchange finds it too. */
    pami_task_t all[64];
    for (size_t i = 0; i < w.n && i < 64; i++)
        all[i] = (pami_task_t)i;
    ct_geom_t s;
    if (w.n <= 64 && ct_create(&job, &s, "all", 9, all, w.n, NULL)) {
        if (w.n > 1)
            expect_builtin(s.g, 512, PAMI_TYPE_INT32);
        run_allreduce(&s, 512);
        MP_CHECK(pami_geometry_destroy(&s.g));
    }
}

static void bad(void)
{
    ct_geom_t w;
    ct_world(&job, &w);
    expect_builtin(w.g, 512, PAMI_TYPE_INT32);
    pami_algorithm_selection_t s = query(w.g, 512, PAMI_TYPE_INT32);
    MP_EXPECT(strcmp(s.why, "no profile") == 0, "why: %s", s.why);
    run_allreduce(&w, 512);
    run_allreduce(&w, 100000);
}

static void run(void)
{
    ct_geom_t w;
    ct_world(&job, &w);
    for (size_t c = 1; c <= 65536; c *= 4)
        run_allreduce(&w, c);
    MP_CHECK(pami_geometry_barrier(job.ctx[0], w.g));
}

static void forced(void)
{
    ct_geom_t w;
    ct_world(&job, &w);
    pami_algorithm_selection_t s = query(w.g, 512, PAMI_TYPE_INT32);
    MP_EXPECT(s.reason == PAMI_SELECTED_FORCED &&
                  strcmp(s.name, "allreduce_ring") == 0,
              "forced: %s (reason %d)", s.name, (int)s.reason);
    const char *ran = run_allreduce(&w, 512);
    MP_EXPECT(strcmp(ran, "allreduce_ring") == 0, "forced ran %s", ran);
    /* AUTO's memo of the last decision keys on the user op's fields only
     * when op is PAMI_OP_USER: equal calls in a row that differ in the
     * op, its commutativity or unread fields must decide each anew
     * where it matters. The ring needs a commutative op. */
    static const struct {
        int  how;
        bool ring;
    } seq[] = {{OP_USER_COMM, true},    {OP_USER_COMM, true},
               {OP_USER_NONCOMM, false}, {OP_USER_NONCOMM, false},
               {OP_USER_COMM, true},    {OP_SUM_USER_FIELDS, true},
               {OP_SUM, true},          {OP_USER_NONCOMM, false},
               {OP_SUM_USER_FIELDS, true}};
    for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
        ran = run_allreduce_op(&w, 512, seq[i].how);
        MP_EXPECT((strcmp(ran, "allreduce_ring") == 0) == seq[i].ring,
                  "call %zu (op %d): ran %s", i, seq[i].how, ran);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "run") == 0)
        path[0] = '\0';
    else if (strcmp(mode, "differ") == 0 && env_rank() == 0)
        write_profile("allreduce_ring", "allreduce_reduce_broadcast", false);
    else if (strcmp(mode, "bad") == 0) {
        if (argc > 2)
            bad_kind = argv[2];
        write_profile("", "", true);
    }
    else
        write_profile("allreduce_reduce_broadcast",
                      "allreduce_recursive_doubling", false);
    mp_init(&job, "tune_select", &argc, argv, NULL, 1, true);
    if (strcmp(mode, "slow") == 0)
        slow();
    else if (strcmp(mode, "differ") == 0)
        differ();
    else if (strcmp(mode, "bad") == 0)
        bad();
    else if (strcmp(mode, "forced") == 0)
        forced();
    else if (strcmp(mode, "run") == 0)
        run();
    else
        mp_fail("usage: tune_select slow | differ | bad | forced | run");
    mp_sync(&job);
    if (path[0] != '\0' && unlink(path) != 0)
        rmdir(path);
    mp_finish(&job);
    return 0;
}
