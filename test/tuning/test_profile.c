/*
 * The profile file's reader and writer (collectives/coll_profile.c):
 * write -> read round trip, and every malformed file the reader must
 * refuse with a reason (never crash), from bytes and from paths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "coll_profile.h"

static coll_prof_entry_t entry(unsigned kind, const char *algo, uint32_t n,
                               unsigned type, unsigned op, uint64_t bytes,
                               double us)
{
    coll_prof_entry_t e = {.kind = (uint8_t)kind, .type = (uint8_t)type,
                           .op = (uint8_t)op, .bytes = bytes,
                           .shape = {n, 1, n, COLL_LAYOUT_CONTIGUOUS},
                           .median_us = us, .min_us = us * 0.9,
                           .max_us = us * 1.5, .count = 10};
    snprintf(e.algo, sizeof(e.algo), "%s", algo);
    return e;
}

static void test_round_trip(void **state)
{
    (void)state;
    coll_profile_t p = {0}, q;
    snprintf(p.producer, sizeof(p.producer), "pami 0.1.0");
    coll_machine_local(&p.machine);
    p.machine.ppn = 4;
    snprintf(p.machine.ucx, sizeof(p.machine.ucx), "1.16.0");
    snprintf(p.machine.transports, sizeof(p.machine.transports), "shm,tcp");
    coll_prof_entry_t a = entry(PAMI_XFER_ALLREDUCE, "allreduce_ring", 4,
                                PAMI_TYPE_DOUBLE, PAMI_OP_SUM, 1 << 20, 812.25);
    coll_prof_entry_t b = entry(PAMI_XFER_BROADCAST, "broadcast_binomial", 8,
                                PAMI_TYPE_BYTE, COLL_PROFILE_OP_NONE, 8, 1.5);
    b.shape = (coll_shape_t){8, 2, 4, COLL_LAYOUT_STRIDED};
    b.cpu = 0.75;
    coll_prof_entry_t c = entry(PAMI_XFER_ALLTOALL, "alltoall_bruck", 4,
                                PAMI_TYPE_BYTE, COLL_PROFILE_OP_NONE, 64, 0);
    c.failed = true;
    c.median_us = c.min_us = c.max_us = 0;
    c.count = 0;
    snprintf(c.why, sizeof(c.why), "deadline");
    assert_true(coll_profile_add(&p, &a));
    assert_true(coll_profile_add(&p, &b));
    assert_true(coll_profile_add(&p, &c));

    char path[] = "/tmp/pami-profile-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(coll_profile_save(&p, path), 0);
    char why[256] = "";
    size_t skipped = 99;
    assert_true(coll_profile_load(path, NULL, &q, &skipped, NULL, 0, why,
                                  sizeof(why)));
    unlink(path);
    assert_int_equal(skipped, 0);
    assert_int_equal(q.format_version, 1); /* one round: format 1 */
    assert_string_equal(q.producer, p.producer);
    assert_string_equal(q.machine.cpu, p.machine.cpu);
    assert_int_equal(q.machine.cores, p.machine.cores);
    assert_int_equal(q.machine.ppn, 4);
    assert_string_equal(q.machine.ucx, "1.16.0");
    assert_string_equal(q.machine.transports, "shm,tcp");
    assert_int_equal(q.n, 3);
    for (size_t i = 0; i < 3; i++) {
        const coll_prof_entry_t *x = &p.e[i], *y = &q.e[i];
        assert_int_equal(x->kind, y->kind);
        assert_string_equal(x->algo, y->algo);
        assert_memory_equal(&x->shape, &y->shape, sizeof(x->shape));
        assert_int_equal(x->type, y->type);
        assert_int_equal(x->op, y->op);
        assert_int_equal(x->bytes, y->bytes);
        assert_int_equal(x->failed, y->failed);
        assert_true(x->median_us == y->median_us);
        assert_true(x->min_us == y->min_us);
        assert_true(x->max_us == y->max_us);
        assert_int_equal(x->count, y->count);
        assert_true(x->cpu == y->cpu); /* 0: not written, read as 0 */
        assert_string_equal(x->why, y->why);
    }
    /* Merge: a later profile's entry replaces the same key. */
    coll_profile_t r = {0};
    coll_prof_entry_t a2 = a;
    a2.median_us = a2.min_us = a2.max_us = 3;
    assert_true(coll_profile_add(&r, &a2));
    assert_true(coll_profile_merge(&q, &r));
    assert_int_equal(q.n, 3);
    assert_true(coll_profile_find(&q, &a)->median_us == 3);
    coll_profile_free(&p);
    coll_profile_free(&q);
    coll_profile_free(&r);
}

#define HEAD "{\"format_version\":1,\"producer\":\"pami test\"," \
    "\"machine\":{\"cpu\":\"x\",\"cores\":2,\"nodes\":1,\"tasks_per_node\":4},"
#define SHAPE "\"shape\":{\"size\":4,\"nodes\":1,\"tasks_per_node\":4}"
#define GOOD_ENTRY "{\"collective\":\"allreduce\",\"algorithm\":" \
    "\"allreduce_ring\"," SHAPE ",\"type\":\"int32\",\"op\":\"sum\"," \
    "\"bytes\":64,\"metrics\":{\"median_us\":2,\"min_us\":1,\"max_us\":3," \
    "\"count\":5}}"

static bool parse(const char *text, char *why, size_t *skipped,
                  coll_profile_known_fn known)
{
    coll_profile_t p;
    bool ok = coll_profile_parse(text, strlen(text), known, &p, skipped, NULL,
                                 0, why, 256);
    if (ok)
        assert_int_equal(p.n, 1);
    else
        assert_int_equal(p.n, 0);
    coll_profile_free(&p);
    return ok;
}

static void test_good(void **state)
{
    (void)state;
    char why[256];
    size_t sk;
    /* Unknown fields anywhere are ignored. */
    assert_true(parse("{\"format_version\":1,\"producer\":\"p\",\"future\":"
                      "[1,{\"a\":2}],\"machine\":{\"cpu\":\"x\",\"cores\":2,"
                      "\"nodes\":1,\"tasks_per_node\":4,\"gpu\":\"none\"},"
                      "\"entries\":[{\"collective\":\"allreduce\","
                      "\"algorithm\":\"allreduce_ring\"," SHAPE ","
                      "\"type\":\"int32\",\"op\":\"sum\",\"bytes\":64,"
                      "\"new\":true,\"metrics\":{\"median_us\":2,"
                      "\"min_us\":1,\"max_us\":3,\"count\":5,\"p99\":4}}]}",
                      why, &sk, NULL));
}

static bool only_ring(const char *name, unsigned kind)
{
    (void)kind;
    return strcmp(name, "allreduce_ring") == 0;
}

static void test_unknown_algorithm_skipped(void **state)
{
    (void)state;
    char why[256], skip_why[128] = "";
    size_t sk = 0;
    const char *text = HEAD "\"entries\":[" GOOD_ENTRY ","
        "{\"collective\":\"allreduce\",\"algorithm\":\"allreduce_future\","
        SHAPE ",\"type\":\"int32\",\"op\":\"sum\",\"bytes\":64,\"metrics\":"
        "{\"median_us\":2,\"min_us\":1,\"max_us\":3,\"count\":5}}]}";
    coll_profile_t p;
    assert_true(coll_profile_parse(text, strlen(text), only_ring, &p, &sk,
                                   skip_why, sizeof(skip_why), why,
                                   sizeof(why)));
    assert_int_equal(p.n, 1);
    assert_int_equal(sk, 1);
    assert_non_null(strstr(skip_why, "allreduce_future"));
    coll_profile_free(&p);
}

/* Each text must be refused, with a reason containing the fragment. */
static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *text, *fragment;
    } bad[] = {
        {"", "empty"},
        {"{\"format_version\":1,\"produc", "truncated"},
        {"\x7f\x45\x4c\x46\x02\x01\x01 garbage \xff\xfe", "not JSON"},
        {"[1,2,3]", "top level"},
        {"{} {}", "text after"},
        {"{\"producer\":\"p\"}", "format_version"},
        {"{\"format_version\":\"1\"}", "format_version"},
        {"{\"format_version\":3,\"producer\":\"p\"}", "format_version 3"},
        {"{\"format_version\":1.5}", "format_version"},
        {HEAD "\"entries\":{}}", "not an array"},
        {HEAD "\"entries\":[1]}", "not an object"},
        {"{\"format_version\":1,\"producer\":\"p\",\"machine\":{\"cpu\":\"x\","
         "\"cores\":-2,\"nodes\":1,\"tasks_per_node\":1},\"entries\":[]}",
         "cores"},
        {"{\"format_version\":1,\"producer\":7,\"machine\":{},\"entries\":[]}",
         "producer"},
        /* Unknown collective, type, op; wrong JSON types. */
        {HEAD "\"entries\":[{\"collective\":\"allfoo\",\"algorithm\":\"a\","
         SHAPE ",\"bytes\":8,\"metrics\":{\"median_us\":1,\"min_us\":1,"
         "\"max_us\":1,\"count\":1}}]}", "unknown collective"},
        {HEAD "\"entries\":[{\"collective\":\"allreduce\",\"algorithm\":"
         "\"allreduce_ring\"," SHAPE ",\"type\":\"int128\",\"op\":\"sum\","
         "\"bytes\":8,\"metrics\":{\"median_us\":1,\"min_us\":1,"
         "\"max_us\":1,\"count\":1}}]}", "unknown type"},
        {HEAD "\"entries\":[{\"collective\":\"allreduce\",\"algorithm\":"
         "\"allreduce_ring\"," SHAPE ",\"type\":\"int32\",\"op\":\"avg\","
         "\"bytes\":8,\"metrics\":{\"median_us\":1,\"min_us\":1,"
         "\"max_us\":1,\"count\":1}}]}", "unknown op"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\"," SHAPE ",\"op\":\"sum\",\"bytes\":8,"
         "\"metrics\":{\"median_us\":1,\"min_us\":1,\"max_us\":1,"
         "\"count\":1}}]}", "op \"sum\" for broadcast"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\"," SHAPE ",\"bytes\":\"8\",\"metrics\":{"
         "\"median_us\":1,\"min_us\":1,\"max_us\":1,\"count\":1}}]}",
         "bytes"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\"," SHAPE ",\"bytes\":8,\"metrics\":{"
         "\"median_us\":\"fast\",\"min_us\":1,\"max_us\":1,\"count\":1}}]}",
         "median_us"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":3,"
         SHAPE ",\"bytes\":8}]}", "algorithm"},
        /* Negative, absurd and huge numbers. */
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\"," SHAPE ",\"bytes\":-8,\"metrics\":{"
         "\"median_us\":1,\"min_us\":1,\"max_us\":1,\"count\":1}}]}",
         "bytes"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\"," SHAPE ",\"bytes\":"
         "99999999999999999999999999,\"metrics\":{\"median_us\":1,"
         "\"min_us\":1,\"max_us\":1,\"count\":1}}]}", "bytes"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\"," SHAPE ",\"bytes\":2199023255553,"
         "\"metrics\":{\"median_us\":1,\"min_us\":1,\"max_us\":1,"
         "\"count\":1}}]}", "bytes"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\"," SHAPE ",\"bytes\":8,\"metrics\":{"
         "\"median_us\":1e300,\"min_us\":1,\"max_us\":1e301,\"count\":1}}]}",
         "median_us"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\"," SHAPE ",\"bytes\":8,\"metrics\":{"
         "\"median_us\":-1,\"min_us\":1,\"max_us\":1,\"count\":1}}]}",
         "median_us"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\"," SHAPE ",\"bytes\":8,\"metrics\":{"
         "\"median_us\":5,\"min_us\":1,\"max_us\":2,\"count\":1}}]}",
         "min <= median"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\"," SHAPE ",\"bytes\":8,\"metrics\":{"
         "\"median_us\":1,\"min_us\":1,\"max_us\":1,\"count\":1,"
         "\"cpu\":1.5}}]}", "\"cpu\" is 1.5"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\"," SHAPE ",\"bytes\":8,\"metrics\":{"
         "\"median_us\":1,\"min_us\":1,\"max_us\":1,\"count\":1,"
         "\"cpu\":\"quiet\"}}]}", "\"cpu\" is not"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\",\"shape\":{\"size\":4,\"nodes\":8,"
         "\"tasks_per_node\":1},\"bytes\":8,\"metrics\":{\"median_us\":1,"
         "\"min_us\":1,\"max_us\":1,\"count\":1}}]}", "impossible"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\",\"shape\":{\"size\":0,\"nodes\":1,"
         "\"tasks_per_node\":1},\"bytes\":8,\"metrics\":{\"median_us\":1,"
         "\"min_us\":1,\"max_us\":1,\"count\":1}}]}", "size"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\",\"shape\":{\"size\":4,\"nodes\":1,"
         "\"tasks_per_node\":4,\"layout\":\"spiral\"},\"bytes\":8,"
         "\"metrics\":{\"median_us\":1,\"min_us\":1,\"max_us\":1,"
         "\"count\":1}}]}", "layout"},
        {HEAD "\"entries\":[{\"collective\":\"broadcast\",\"algorithm\":"
         "\"broadcast_binomial\"," SHAPE ",\"bytes\":8}]}", "metrics"},
        /* Duplicates. */
        {HEAD "\"entries\":[" GOOD_ENTRY "," GOOD_ENTRY "]}", "two entries"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char why[256] = "";
        size_t sk;
        if (parse(bad[i].text, why, &sk, NULL))
            fail_msg("case %zu was accepted", i);
        if (strstr(why, bad[i].fragment) == NULL)
            fail_msg("case %zu: reason \"%s\" lacks \"%s\"", i, why,
                     bad[i].fragment);
    }
    /* Every prefix of a good file is refused, never read beyond. */
    const char *good = HEAD "\"entries\":[" GOOD_ENTRY "]}";
    for (size_t n = 0; n < strlen(good); n++) {
        char *cut = malloc(n ? n : 1);
        assert_non_null(cut);
        memcpy(cut, good, n);
        coll_profile_t p;
        char why[256];
        assert_false(coll_profile_parse(cut, n, NULL, &p, NULL, NULL, 0, why,
                                        sizeof(why)));
        coll_profile_free(&p);
        free(cut);
    }
}

static void test_paths(void **state)
{
    (void)state;
    coll_profile_t p;
    char why[256];
    assert_false(coll_profile_load("/nonexistent/profile.json", NULL, &p,
                                   NULL, NULL, 0, why, sizeof(why)));
    assert_non_null(strstr(why, "cannot be read"));
    assert_false(coll_profile_load("/tmp", NULL, &p, NULL, NULL, 0, why,
                                   sizeof(why)));
    assert_non_null(strstr(why, "directory"));
    char path[] = "/tmp/pami-profile-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_false(coll_profile_load(path, NULL, &p, NULL, NULL, 0, why,
                                   sizeof(why)));
    assert_non_null(strstr(why, "empty"));
    /* No permission (root reads anyway: then it is merely empty). */
    chmod(path, 0);
    assert_false(coll_profile_load(path, NULL, &p, NULL, NULL, 0, why,
                                   sizeof(why)));
    assert_true(strstr(why, "Permission denied") != NULL ||
                (geteuid() == 0 && strstr(why, "empty") != NULL));
    unlink(path);
}


/* ---- filtering: the decision table of six (seven) shapes ---- */

static const char *const fake_algos[] = {"", "a_rd", "a_ring", "a_rabs",
                                         "a_pow2"};

/* Ids of the fake registry; a_pow2 needs a power-of-two size. */
static unsigned fake_runnable(void *arg, const char *name, unsigned kind,
                              unsigned tclass)
{
    const coll_shape_t *want = arg;
    (void)kind;
    (void)tclass;
    for (unsigned i = 1; i < 5; i++)
        if (strcmp(name, fake_algos[i]) == 0)
            return i == 4 && (want->size & (want->size - 1)) != 0 ? 0 : i;
    return 0;
}

static void add_point(coll_profile_t *p, coll_shape_t sh, uint64_t bytes,
                      const char *algo, double us)
{
    coll_prof_entry_t e = entry(PAMI_XFER_ALLREDUCE, algo, sh.size,
                                PAMI_TYPE_INT32, PAMI_OP_SUM, bytes, us);
    e.shape = sh;
    assert_true(coll_profile_add(p, &e));
}

typedef struct {
    uint64_t lo, point;
    unsigned algo;
} row_t;

static void expect_table(const coll_profile_t *p, coll_shape_t want,
                         coll_shape_t from, bool exact, const row_t *rows,
                         size_t nrows, uint64_t hi)
{
    coll_table_t *t = coll_table_build(p, &want, fake_runnable, &want);
    assert_non_null(t);
    const coll_span_t *sp = &t->span[PAMI_XFER_ALLREDUCE][1];
    if (sp->shape.size != from.size || sp->shape.nodes != from.nodes ||
        sp->shape.ppn != from.ppn || sp->exact != exact)
        fail_msg("shape %ux%u(%u): took %ux%u(%u) exact %d", want.size,
                 want.nodes, want.ppn, sp->shape.size, sp->shape.nodes,
                 sp->shape.ppn, sp->exact);
    assert_int_equal(sp->n, nrows);
    assert_int_equal(sp->hi, hi);
    for (size_t i = 0; i < nrows; i++) {
        const coll_rule_t *r = &t->rules[sp->first + i];
        if (r->lo != rows[i].lo || r->point != rows[i].point ||
            r->algo != rows[i].algo)
            fail_msg("shape %u: row %zu is %llu/%llu/%s, want %llu/%llu/%s",
                     want.size, i, (unsigned long long)r->lo,
                     (unsigned long long)r->point, fake_algos[r->algo],
                     (unsigned long long)rows[i].lo,
                     (unsigned long long)rows[i].point,
                     fake_algos[rows[i].algo]);
        /* Every size of the row finds it. */
        assert_ptr_equal(coll_table_lookup(t, PAMI_XFER_ALLREDUCE, 1,
                                           rows[i].lo), r);
        uint64_t end = i + 1 < nrows ? rows[i + 1].lo - 1 : hi;
        assert_ptr_equal(coll_table_lookup(t, PAMI_XFER_ALLREDUCE, 1, end),
                         r);
    }
    assert_null(coll_table_lookup(t, PAMI_XFER_ALLREDUCE, 1, rows[0].lo - 1));
    assert_null(coll_table_lookup(t, PAMI_XFER_ALLREDUCE, 1, hi + 1));
    /* No entries of the user-op class, nor of broadcast. */
    assert_null(coll_table_lookup(t, PAMI_XFER_ALLREDUCE, 6, rows[0].lo));
    assert_null(coll_table_lookup(t, PAMI_XFER_BROADCAST, 0, rows[0].lo));
    free(t);
}

static void test_filter_shapes(void **state)
{
    (void)state;
    const coll_shape_t s1 = {2, 1, 2, 0}, s2 = {4, 1, 4, 0},
                       s3 = {8, 2, 4, 0}, s4 = {8, 8, 1, 0},
                       s5 = {16, 4, 4, 0};
    coll_profile_t p = {0};
    add_point(&p, s1, 8, "a_rd", 1);
    add_point(&p, s1, 8, "a_ring", 5);
    add_point(&p, s1, 1024, "a_rd", 3);
    add_point(&p, s1, 1024, "a_ring", 2);
    add_point(&p, s2, 8, "a_pow2", 1);
    add_point(&p, s2, 8, "a_rd", 2);
    add_point(&p, s2, 64, "a_rd", 1);
    add_point(&p, s2, 64, "a_pow2", 2);
    add_point(&p, s3, 8, "a_pow2", 0.5);
    add_point(&p, s3, 8, "a_ring", 1);
    add_point(&p, s3, 8, "a_rd", 2);
    add_point(&p, s4, 8, "a_rd", 1);
    add_point(&p, s4, 8, "a_ring", 3);
    add_point(&p, s5, 8, "a_rabs", 1);
    add_point(&p, s5, 4096, "a_ring", 1);
    add_point(&p, s5, 4096, "a_rd", 2);
    /* A failed point is never chosen. */
    coll_prof_entry_t f = entry(PAMI_XFER_ALLREDUCE, "a_rabs", 2,
                                PAMI_TYPE_INT32, PAMI_OP_SUM, 1024, 0);
    f.failed = true;
    assert_true(coll_profile_add(&p, &f));

    /* 1. exact; rows split at the log-scale middle, sqrt(8 * 1024). */
    expect_table(&p, s1, s1, true,
                 (row_t[]){{4, 8, 1}, {91, 1024, 2}}, 2, 2048);
    /* 2. exact */
    expect_table(&p, s2, s2, true,
                 (row_t[]){{4, 8, 4}, {23, 64, 1}}, 2, 128);
    /* 3, 4. eight tasks: 2 nodes x 4 and 8 nodes x 1 are told apart. */
    expect_table(&p, s3, s3, true, (row_t[]){{4, 8, 4}}, 1, 16);
    expect_table(&p, s4, s4, true, (row_t[]){{4, 8, 1}}, 1, 16);
    /* 5. 6 tasks on one node: nearest size 8, then tasks per node (4 is
     * nearer 6 than 1): s3, without the power-of-two algorithm. */
    expect_table(&p, (coll_shape_t){6, 1, 6, 0}, s3, false,
                 (row_t[]){{4, 8, 2}}, 1, 16);
    /* 6. 32 tasks: nearest size is 16. */
    expect_table(&p, (coll_shape_t){32, 8, 4, 1}, s5, false,
                 (row_t[]){{4, 8, 3}, {182, 4096, 2}}, 2, 8192);
    /* 7. 3 tasks: 4 is nearer than 2 (log scale); no power of two. */
    expect_table(&p, (coll_shape_t){3, 1, 3, 0}, s2, false,
                 (row_t[]){{4, 8, 1}, {23, 64, 1}}, 2, 128);
    /* The same profile and shape give the same hash; another shape not. */
    coll_shape_t w1 = s1, w2 = s2;
    coll_table_t *a = coll_table_build(&p, &w1, fake_runnable, &w1);
    coll_table_t *b = coll_table_build(&p, &w1, fake_runnable, &w1);
    coll_table_t *c = coll_table_build(&p, &w2, fake_runnable, &w2);
    assert_true(a->hash == b->hash && a->hash != c->hash && a->hash != 0);
    free(a);
    free(b);
    free(c);
    coll_profile_free(&p);
}

/* A size alone between two whose fastest is one algorithm keeps it
 * while it is within 5 % (noise must not flip it); beyond 5 %, at a
 * crossover (the next size's fastest is this one's) and at the last size
 * the fastest wins. */
static void test_filter_sticky(void **state)
{
    (void)state;
    const coll_shape_t s = {4, 1, 4, 0};
    coll_profile_t p = {0};
    add_point(&p, s, 8, "a_rd", 1.0);
    add_point(&p, s, 8, "a_ring", 2.0);
    add_point(&p, s, 64, "a_ring", 1.96); /* alone, a_rd within 5 %: stays */
    add_point(&p, s, 64, "a_rd", 2.0);
    add_point(&p, s, 512, "a_rd", 3.0);
    add_point(&p, s, 512, "a_ring", 3.5);
    add_point(&p, s, 4096, "a_ring", 3.7); /* alone, a_rd 8 % behind */
    add_point(&p, s, 4096, "a_rd", 4.0);
    add_point(&p, s, 32768, "a_rd", 5.0);
    add_point(&p, s, 32768, "a_ring", 5.5);
    add_point(&p, s, 262144, "a_ring", 5.9); /* crossover: a_ring */
    add_point(&p, s, 262144, "a_rd", 6.0);
    add_point(&p, s, 2097152, "a_ring", 7.0);
    add_point(&p, s, 2097152, "a_rd", 7.2);
    add_point(&p, s, 16777216, "a_rd", 8.0); /* last: a_rd */
    add_point(&p, s, 16777216, "a_ring", 8.2);
    expect_table(&p, s, s, true,
                 (row_t[]){{4, 8, 1}, {23, 64, 1}, {182, 512, 1},
                           {1449, 4096, 2}, {11586, 32768, 1},
                           {92682, 262144, 2}, {741456, 2097152, 2},
                           {5931642, 16777216, 1}}, 8, 33554432);
    coll_profile_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_unknown_algorithm_skipped),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_filter_shapes),
        cmocka_unit_test(test_filter_sticky),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
