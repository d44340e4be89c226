/*
 * Profiles of several rounds of measurement (docs/tuning.md, "Rounds and
 * the machine's state"): the table takes, per size, the algorithm whose
 * worst ratio to a round's fastest is smallest (minimax regret), which
 * can be neither round's fastest; the file keeps the rounds (format 2
 * only when an entry is of a later round); format 1 files without
 * rounds still load; pami-tune --merge's coll_profile_add_rounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "coll_profile.h"

static const char *const algos[] = {"", "a2a_shm", "a2a_shm_cma",
                                    "a2a_pairwise"};
enum { SHM = 1, CMA = 2, PAIR = 3 };

static unsigned runnable(void *arg, const char *name, unsigned kind,
                         unsigned tclass)
{
    (void)arg;
    (void)kind;
    (void)tclass;
    for (unsigned i = 1; i < 4; i++)
        if (strcmp(name, algos[i]) == 0)
            return i;
    return 0;
}

static const coll_shape_t shape4 = {4, 1, 4, COLL_LAYOUT_CONTIGUOUS};

static void add(coll_profile_t *p, uint8_t round, uint64_t bytes,
                unsigned algo, double us)
{
    coll_prof_entry_t e = {.kind = PAMI_XFER_ALLTOALL, .type = PAMI_TYPE_BYTE,
                           .op = COLL_PROFILE_OP_NONE, .bytes = bytes,
                           .shape = shape4, .median_us = us, .min_us = us,
                           .max_us = us, .count = 5, .round = round};
    snprintf(e.algo, sizeof(e.algo), "%s", algos[algo]);
    assert_true(coll_profile_add(p, &e));
}

/* The algorithm of the table's row at bytes. */
static unsigned pick(const coll_profile_t *p, uint64_t bytes)
{
    coll_shape_t want = shape4;
    coll_table_t *t = coll_table_build(p, &want, runnable, NULL);
    assert_non_null(t);
    const coll_rule_t *r = coll_table_lookup(t, PAMI_XFER_ALLTOALL, 0, bytes);
    assert_non_null(r);
    unsigned a = r->algo;
    free(t);
    return a;
}

/* Near state: shm_cma 10, shm 30 (3 x), pairwise 13 (1.3 x); far state:
 * shm 100, shm_cma 200 (2 x), pairwise 130 (1.3 x). Each state's
 * fastest is 2 x or more behind in the other, and the mean of the
 * rounds (the rule before rounds: 105, 65, 71.5) would take shm, 3 x
 * behind when near; pairwise is never more than 1.3 x behind: minimax
 * takes it. Each round alone takes its own fastest (a profile of one
 * state behaves as before rounds). */
static void test_minimax_differs_from_both(void **state)
{
    (void)state;
    coll_profile_t near = {0}, far = {0}, both = {0};
    add(&near, 0, 65536, CMA, 10);
    add(&near, 0, 65536, SHM, 30);
    add(&near, 0, 65536, PAIR, 13);
    add(&far, 0, 65536, CMA, 200);
    add(&far, 0, 65536, SHM, 100);
    add(&far, 0, 65536, PAIR, 130);
    near.nrounds = far.nrounds = 1;
    near.rounds[0].floor_us = 0.04;
    far.rounds[0].floor_us = 0.2;
    assert_int_equal(pick(&near, 65536), CMA);
    assert_int_equal(pick(&far, 65536), SHM);
    assert_true(coll_profile_add_rounds(&both, &near));
    assert_true(coll_profile_add_rounds(&both, &far));
    assert_int_equal(both.nrounds, 2);
    assert_true(both.rounds[0].floor_us == 0.04);
    assert_true(both.rounds[1].floor_us == 0.2);
    assert_int_equal(both.n, 6);
    for (size_t i = 0; i < both.n; i++)
        assert_int_equal(both.e[i].round, i < 3 ? 0 : 1);
    assert_int_equal(pick(&both, 65536), PAIR);
    coll_profile_free(&near);
    coll_profile_free(&far);
    coll_profile_free(&both);
}

/* An algorithm measured in one round of two cannot win on that round
 * alone: the candidates are those measured in the most rounds. */
static void test_measured_in_every_round_first(void **state)
{
    (void)state;
    coll_profile_t p = {.nrounds = 2};
    add(&p, 0, 1024, SHM, 10);
    add(&p, 0, 1024, CMA, 11);
    add(&p, 1, 1024, CMA, 30);
    add(&p, 1, 1024, PAIR, 1); /* fastest of round 1, absent from 0 */
    assert_int_equal(pick(&p, 1024), CMA);
    coll_profile_free(&p);
}

/* Stickiness compares worst ratios: between two sizes whose choice is
 * shm, a size where shm's worst ratio (1.2) is within COLL_TABLE_STICKY
 * (5 %) of pairwise's (1.15) keeps shm; 13 % above (1.3), pairwise. */
static void test_sticky_on_worst_ratio(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        coll_profile_t p = {.nrounds = 2};
        for (uint8_t r = 0; r < 2; r++) {
            add(&p, r, 8, SHM, 1);
            add(&p, r, 8, PAIR, 2);
            add(&p, r, 512, SHM, 1);
            add(&p, r, 512, PAIR, 2);
        }
        /* 64 B: round 0 shm fastest, round 1 pairwise 1.2 x or 1.3 x
         * ahead: shm's worst 1.2 or 1.3 against pairwise's 1.15. */
        double shm1 = k == 0 ? 1.2 : 1.3;
        add(&p, 0, 64, SHM, 1);
        add(&p, 0, 64, PAIR, 1.15);
        add(&p, 1, 64, SHM, shm1);
        add(&p, 1, 64, PAIR, 1);
        assert_int_equal(pick(&p, 64), k == 0 ? SHM : PAIR);
        coll_profile_free(&p);
    }
}

static bool parse(const char *text, coll_profile_t *p, char *why,
                  size_t len)
{
    return coll_profile_parse(text, strlen(text), NULL, p, NULL, NULL, 0,
                              why, len);
}

#define MACHINE "\"producer\":\"t\",\"machine\":{\"cpu\":\"x\",\"cores\":2," \
    "\"nodes\":1,\"tasks_per_node\":4},"
#define E(extra) "{\"collective\":\"alltoall\",\"algorithm\":\"a2a_shm\"," \
    "\"shape\":{\"size\":4,\"nodes\":1,\"tasks_per_node\":4}," \
    "\"bytes\":64,\"metrics\":{\"median_us\":1,\"min_us\":1,\"max_us\":1," \
    "\"count\":1}" extra "}"

/* Write -> read of two rounds (format 2), of one round with its floor
 * (format 1, readable by readers of 1), and a format 1 file of before
 * rounds (no "rounds", no "round"). */
static void test_file(void **state)
{
    (void)state;
    coll_profile_t p = {.nrounds = 2}, q;
    snprintf(p.producer, sizeof(p.producer), "t");
    coll_machine_local(&p.machine);
    p.rounds[0] = (coll_round_t){0.045, 0.05, "2026-11-28T22:00:00Z"};
    p.rounds[1] = (coll_round_t){0.21, 0, ""};
    add(&p, 0, 64, SHM, 1);
    add(&p, 1, 64, SHM, 2); /* the same key in another round */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(coll_profile_write(&p, f), 0);
    fclose(f);
    char why[256] = "";
    if (!parse(buf, &q, why, sizeof(why)))
        fail_msg("%s", why);
    assert_non_null(strstr(buf, "\"format_version\": 2"));
    free(buf);
    assert_int_equal(q.format_version, 2);
    assert_int_equal(q.nrounds, 2);
    assert_true(q.rounds[0].floor_us == 0.045);
    assert_true(q.rounds[0].floor_end_us == 0.05);
    assert_string_equal(q.rounds[0].started, "2026-11-28T22:00:00Z");
    assert_true(q.rounds[1].floor_us == 0.21);
    assert_true(q.rounds[1].floor_end_us == 0);
    assert_int_equal(q.n, 2);
    assert_int_equal(q.e[0].round, 0);
    assert_int_equal(q.e[1].round, 1);
    assert_true(q.e[1].median_us == 2);
    coll_profile_free(&q);

    p.n = 1; /* round 0 only: format 1, the rounds kept */
    f = open_memstream(&buf, &len);
    assert_int_equal(coll_profile_write(&p, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "\"format_version\": 1"));
    assert_null(strstr(buf, "\"round\":"));
    assert_true(parse(buf, &q, why, sizeof(why)));
    free(buf);
    assert_int_equal(q.format_version, 1);
    assert_int_equal(q.nrounds, 2);
    assert_true(q.rounds[0].floor_us == 0.045);
    coll_profile_free(&q);
    coll_profile_free(&p);

    /* Before rounds. */
    assert_true(parse("{\"format_version\":1," MACHINE "\"entries\":["
                      E("") "]}", &q, why, sizeof(why)));
    assert_int_equal(q.nrounds, 0);
    assert_int_equal(coll_profile_rounds(&q), 1);
    assert_int_equal(q.e[0].round, 0);
    coll_profile_free(&q);
}

static void test_malformed_rounds(void **state)
{
    (void)state;
    char many[4096] = "{\"format_version\":2," MACHINE "\"rounds\":[";
    for (int i = 0; i <= COLL_PROFILE_MAX_ROUNDS; i++)
        strcat(many, i ? ",{}" : "{}");
    strcat(many, "],\"entries\":[]}");
    static const struct {
        const char *text, *fragment;
    } bad[] = {
        {"{\"format_version\":2," MACHINE "\"entries\":[]}",
         "\"rounds\" is missing"},
        {"{\"format_version\":2," MACHINE "\"rounds\":{},\"entries\":[]}",
         "not an array"},
        {"{\"format_version\":2," MACHINE "\"rounds\":[],\"entries\":[]}",
         "0 rounds"},
        {"{\"format_version\":2," MACHINE "\"rounds\":[7],\"entries\":[]}",
         "rounds[0] is not an object"},
        {"{\"format_version\":2," MACHINE "\"rounds\":[{\"floor_lat_us\":"
         "-1}],\"entries\":[]}", "floor_lat_us"},
        {"{\"format_version\":2," MACHINE "\"rounds\":[{\"started\":3}],"
         "\"entries\":[]}", "started"},
        {"{\"format_version\":2," MACHINE "\"rounds\":[{},{}],\"entries\":["
         E(",\"round\":2") "]}", "\"round\" is 2"},
        {"{\"format_version\":1," MACHINE "\"entries\":[" E(",\"round\":1")
         "]}", "\"round\" is 1"},
        {"{\"format_version\":2," MACHINE "\"rounds\":[{},{}],\"entries\":["
         E(",\"round\":1") "," E(",\"round\":1") "]}", "round 1"},
        {"{\"format_version\":3," MACHINE "\"entries\":[]}",
         "format_version 3"},
    };
    char why[256];
    coll_profile_t p;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        if (parse(bad[i].text, &p, why, sizeof(why)))
            fail_msg("case %zu was accepted", i);
        if (strstr(why, bad[i].fragment) == NULL)
            fail_msg("case %zu: reason \"%s\" lacks \"%s\"", i, why,
                     bad[i].fragment);
        coll_profile_free(&p);
    }
    assert_false(parse(many, &p, why, sizeof(why)));
    assert_non_null(strstr(why, "65 rounds"));
    coll_profile_free(&p);
    /* Two entries of one key in two rounds are not duplicates. */
    assert_true(parse("{\"format_version\":2," MACHINE "\"rounds\":[{},{}],"
                      "\"entries\":[" E("") "," E(",\"round\":1") "]}", &p,
                      why, sizeof(why)));
    coll_profile_free(&p);
}

/* coll_profile_add_rounds refuses more than COLL_PROFILE_MAX_ROUNDS. */
static void test_add_rounds_limit(void **state)
{
    (void)state;
    coll_profile_t dst = {0}, one = {0};
    add(&one, 0, 8, SHM, 1);
    for (int i = 0; i < COLL_PROFILE_MAX_ROUNDS; i++)
        assert_true(coll_profile_add_rounds(&dst, &one));
    assert_int_equal(dst.nrounds, COLL_PROFILE_MAX_ROUNDS);
    assert_false(coll_profile_add_rounds(&dst, &one));
    assert_int_equal(dst.n, COLL_PROFILE_MAX_ROUNDS);
    coll_profile_free(&dst);
    coll_profile_free(&one);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimax_differs_from_both),
        cmocka_unit_test(test_measured_in_every_round_first),
        cmocka_unit_test(test_sticky_on_worst_ratio),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_malformed_rounds),
        cmocka_unit_test(test_add_rounds_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
