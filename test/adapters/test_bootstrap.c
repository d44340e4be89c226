/*
 * Unit tests of the oob bootstrap (a group of threads stands in for the
 * program's launcher) and of pmix detection. The pmix data path needs a
 * PMIx server and is tested under mpirun by pmix_allgather.c.
 */
#include "bootstrap.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define GROUP_SIZE 4
#define SLOT_MAX   4096
#define ID_MAX     256

typedef struct {
    pthread_barrier_t bar;
    uint32_t          size;
    uint8_t           slots[GROUP_SIZE][SLOT_MAX];
    int               arrived; /* counts ranks that entered barrier() */
    pthread_mutex_t   lock;
} group_t;

typedef struct {
    group_t *group;
    uint32_t rank;
    /* Results, checked by the main thread (cmocka asserts are not for
     * other threads). */
    int      init_rc;
    uint32_t got_rank;
    uint32_t got_size;
    int      gather_ok;
    int      barrier_ok;
    char     job_id[ID_MAX];
} member_t;

/* A shared-memory allgather: write my slot, wait, read all, wait. */
static int group_allgather(void *cookie, const void *send, void *recv,
                           size_t len)
{
    member_t *m = cookie;
    group_t  *g = m->group;

    if (len > SLOT_MAX)
        return -1;
    memcpy(g->slots[m->rank], send, len);
    pthread_barrier_wait(&g->bar);
    for (uint32_t r = 0; r < g->size; r++)
        memcpy((uint8_t *)recv + r * len, g->slots[r], len);
    pthread_barrier_wait(&g->bar);
    return 0;
}

static uint8_t pattern(uint32_t rank, size_t i, size_t len)
{
    return (uint8_t)(rank * 31u + i * 7u + len);
}

static int check_allgather(void *st, uint32_t size, uint32_t rank, size_t len)
{
    uint8_t *send = malloc(len);
    uint8_t *recv = malloc(len * size);
    int      ok   = send != NULL && recv != NULL;

    for (size_t i = 0; ok && i < len; i++)
        send[i] = pattern(rank, i, len);
    if (ok)
        memset(recv, 0xee, len * size);
    ok = ok && bootstrap_oob_ops.allgather(st, send, recv, len) == 0;
    for (uint32_t r = 0; ok && r < size; r++)
        for (size_t i = 0; ok && i < len; i++)
            ok = recv[r * len + i] == pattern(r, i, len);
    free(send);
    free(recv);
    return ok;
}

static int check_barrier(void *st, group_t *g)
{
    pthread_mutex_lock(&g->lock);
    g->arrived++;
    pthread_mutex_unlock(&g->lock);
    if (bootstrap_oob_ops.barrier(st) != 0)
        return 0;
    /* Nobody leaves before everybody arrived. */
    pthread_mutex_lock(&g->lock);
    int all = g->arrived == (int)g->size;
    pthread_mutex_unlock(&g->lock);
    return all;
}

static void *member_main(void *arg)
{
    member_t        *m    = arg;
    bootstrap_args_t args = {
        .oob_allgather = group_allgather,
        .oob_cookie    = m,
        .oob_rank      = m->rank,
        .oob_size      = m->group->size,
    };
    void *st = NULL;

    m->init_rc = bootstrap_oob_ops.init(&args, &st, &m->got_rank,
                                        &m->got_size);
    if (m->init_rc != 0)
        return NULL;
    m->gather_ok = check_allgather(st, m->got_size, m->got_rank, 37) &&
                   check_allgather(st, m->got_size, m->got_rank, 1) &&
                   check_allgather(st, m->got_size, m->got_rank, SLOT_MAX);
    m->barrier_ok = check_barrier(st, m->group);
    const char *id = bootstrap_oob_ops.job_id(st);
    if (id != NULL)
        strncpy(m->job_id, id, ID_MAX - 1);
    bootstrap_oob_ops.fini(st);
    return NULL;
}

static int id_chars_ok(const char *id)
{
    if (*id == '\0')
        return 0;
    for (; *id != '\0'; id++)
        if (!((*id >= 'a' && *id <= 'z') || (*id >= 'A' && *id <= 'Z') ||
              (*id >= '0' && *id <= '9') || *id == '_' || *id == '-'))
            return 0;
    return 1;
}

/* Runs one job of GROUP_SIZE threads; returns its job id. */
static void run_group(char job_id[ID_MAX])
{
    group_t  *g = calloc(1, sizeof(*g));
    member_t  m[GROUP_SIZE];
    pthread_t tid[GROUP_SIZE];

    assert_non_null(g);
    g->size = GROUP_SIZE;
    assert_int_equal(pthread_barrier_init(&g->bar, NULL, GROUP_SIZE), 0);
    assert_int_equal(pthread_mutex_init(&g->lock, NULL), 0);
    memset(m, 0, sizeof(m));
    for (uint32_t r = 0; r < GROUP_SIZE; r++) {
        m[r].group = g;
        m[r].rank  = r;
        assert_int_equal(pthread_create(&tid[r], NULL, member_main, &m[r]),
                         0);
    }
    for (uint32_t r = 0; r < GROUP_SIZE; r++)
        assert_int_equal(pthread_join(tid[r], NULL), 0);

    for (uint32_t r = 0; r < GROUP_SIZE; r++) {
        assert_int_equal(m[r].init_rc, 0);
        assert_int_equal(m[r].got_rank, r);
        assert_int_equal(m[r].got_size, GROUP_SIZE);
        assert_true(m[r].gather_ok);
        assert_true(m[r].barrier_ok);
        assert_true(id_chars_ok(m[r].job_id));
        assert_string_equal(m[r].job_id, m[0].job_id);
    }
    memcpy(job_id, m[0].job_id, ID_MAX);
    pthread_barrier_destroy(&g->bar);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

static void test_oob_group(void **state)
{
    (void)state;
    char first[ID_MAX];
    char second[ID_MAX];

    run_group(first);
    run_group(second);
    /* Two jobs must not share names of shared objects. */
    assert_string_not_equal(first, second);
}

typedef struct {
    int fail;
    int calls;
} solo_t;

/* A group of one whose collective can be told to fail. */
static int solo_allgather(void *cookie, const void *send, void *recv,
                          size_t len)
{
    solo_t *s = cookie;

    s->calls++;
    if (s->fail)
        return -42;
    memcpy(recv, send, len);
    return 0;
}

static void test_oob_callback_error(void **state)
{
    (void)state;
    solo_t           solo = {0};
    bootstrap_args_t args = {
        .oob_allgather = solo_allgather,
        .oob_cookie    = &solo,
        .oob_rank      = 0,
        .oob_size      = 1,
    };
    void    *st = NULL;
    uint32_t rank = 99, size = 99;
    uint8_t  in   = 5, out = 0;

    assert_int_equal(bootstrap_oob_ops.init(&args, &st, &rank, &size), 0);
    assert_int_equal(rank, 0);
    assert_int_equal(size, 1);
    assert_int_equal(bootstrap_oob_ops.allgather(st, &in, &out, 1), 0);
    assert_int_equal(out, 5);

    solo.fail = 1;
    int calls = solo.calls;
    assert_int_equal(bootstrap_oob_ops.allgather(st, &in, &out, 1), -EIO);
    assert_int_equal(bootstrap_oob_ops.barrier(st), -EIO);
    assert_int_equal(solo.calls, calls + 2);
    bootstrap_oob_ops.fini(st);

    /* The job id exchange at init goes through the callback too. */
    st = NULL;
    assert_true(bootstrap_oob_ops.init(&args, &st, &rank, &size) < 0);
    assert_null(st);
}

static void test_oob_bad_args(void **state)
{
    (void)state;
    solo_t           solo = {0};
    bootstrap_args_t args = {
        .oob_allgather = solo_allgather,
        .oob_cookie    = &solo,
    };
    void    *st = NULL;
    uint32_t rank, size;

    assert_int_equal(bootstrap_oob_ops.init(NULL, &st, &rank, &size),
                     -EINVAL);
    args.oob_size = 0;
    assert_int_equal(bootstrap_oob_ops.init(&args, &st, &rank, &size),
                     -EINVAL);
    args.oob_size = 2;
    args.oob_rank = 2;
    assert_int_equal(bootstrap_oob_ops.init(&args, &st, &rank, &size),
                     -EINVAL);
    args.oob_rank      = 0;
    args.oob_allgather = NULL;
    assert_int_equal(bootstrap_oob_ops.init(&args, &st, &rank, &size),
                     -EINVAL);
    assert_null(st);
    assert_int_equal(solo.calls, 0);
}

static void test_oob_is_never_detected(void **state)
{
    (void)state;
    assert_string_equal(bootstrap_oob_ops.name, "oob");
    assert_null(bootstrap_oob_ops.detect);
}

static void test_pmix_detect(void **state)
{
    (void)state;
    assert_string_equal(bootstrap_pmix_ops.name, "pmix");
    assert_non_null(bootstrap_pmix_ops.detect);

    unsetenv("PMIX_RANK");
    unsetenv("PMIX_NAMESPACE");
    assert_int_equal(bootstrap_pmix_ops.detect(), 0);
    setenv("PMIX_NAMESPACE", "job-1", 1);
    assert_int_equal(bootstrap_pmix_ops.detect(), 0);
    setenv("PMIX_RANK", "0", 1);
    assert_int_not_equal(bootstrap_pmix_ops.detect(), 0);
    unsetenv("PMIX_RANK");
    unsetenv("PMIX_NAMESPACE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oob_group),
        cmocka_unit_test(test_oob_callback_error),
        cmocka_unit_test(test_oob_bad_args),
        cmocka_unit_test(test_oob_is_never_detected),
        cmocka_unit_test(test_pmix_detect),
    };
    return cmocka_run_group_tests_name("bootstrap", tests, NULL, NULL);
}
