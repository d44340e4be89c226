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
    assert_int_equal(q.format_version, COLL_PROFILE_FORMAT);
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
        {"{\"format_version\":2,\"producer\":\"p\"}", "format_version 2"},
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_unknown_algorithm_skipped),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
