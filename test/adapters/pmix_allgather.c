/*
 * Runs under a PMIx launcher (mpirun -np N): init, several allgathers of
 * rank-specific data with different lengths, a barrier, and a check that
 * every rank sees the same job id. Exit status 0 only if every check passed
 * on this rank; the launcher fails the job if any rank fails.
 */
#include "bootstrap.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID_MAX 256

static const bootstrap_ops_t *ops = &bootstrap_pmix_ops;

static int failures;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "pmix_allgather: check failed: " __VA_ARGS__);  \
            fputc('\n', stderr);                                            \
            failures++;                                                     \
        }                                                                   \
    } while (0)

static uint8_t pattern(uint32_t rank, size_t i, size_t len, uint8_t salt)
{
    return (uint8_t)(rank * 53u + i * 3u + len + salt);
}

static void check_allgather_salted(void *st, uint32_t rank, uint32_t size,
                                   size_t len, uint8_t salt)
{
    uint8_t *send = malloc(len);
    uint8_t *recv = malloc(len * size);

    if (send == NULL || recv == NULL) {
        CHECK(0, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < len; i++)
        send[i] = pattern(rank, i, len, salt);
    memset(recv, 0xee, len * size);

    int rc = ops->allgather(st, send, recv, len);
    CHECK(rc == 0, "allgather of %zu bytes returned %d", len, rc);
    for (uint32_t r = 0; rc == 0 && r < size; r++) {
        size_t i = 0;
        while (i < len && recv[r * len + i] == pattern(r, i, len, salt))
            i++;
        CHECK(i == len, "allgather of %zu bytes (salt %u): rank %u's data "
              "wrong at byte %zu", len, salt, r, i);
    }
out:
    free(send);
    free(recv);
}

static void check_allgather(void *st, uint32_t rank, uint32_t size,
                            size_t len)
{
    check_allgather_salted(st, rank, size, len, 0);
}

/* A second client in the same process (two runtimes) must not see the
 * first one's data, though both count their allgathers from zero. */
static void check_second_instance(void *first, uint32_t rank, uint32_t size)
{
    void    *second = NULL;
    uint32_t rank2 = UINT32_MAX, size2 = 0;

    int rc = ops->init(NULL, &second, &rank2, &size2);
    CHECK(rc == 0, "second init failed (%d)", rc);
    if (rc != 0)
        return;
    CHECK(rank2 == rank && size2 == size, "second init: rank %u size %u",
          rank2, size2);
    CHECK(strcmp(ops->job_id(second), ops->job_id(first)) == 0,
          "two clients of one job disagree on the job id");
    check_allgather_salted(second, rank, size, 8, 101);
    check_allgather_salted(first, rank, size, 8, 102);
    check_allgather_salted(second, rank, size, 8, 103);
    ops->fini(second);
    /* The first client outlives the second's PMIx_Finalize. */
    check_allgather_salted(first, rank, size, 8, 104);
}

/* Rank 0 breaks the same-length contract; every rank must notice. */
static void check_length_mismatch(void *st, uint32_t rank, uint32_t size)
{
    uint8_t send[8] = {0};
    uint8_t recv[8 * 64];
    size_t  len = rank == 0 ? 4 : 8;

    if (size < 2 || size > 64)
        return;
    int rc = ops->allgather(st, send, recv, len);
    CHECK(rc == -EIO, "allgather with a length mismatch returned %d", rc);
}

static void check_job_id(void *st, uint32_t rank, uint32_t size)
{
    const char *id = ops->job_id(st);
    char        mine[ID_MAX] = {0};
    char       *all = calloc(size, ID_MAX);

    CHECK(id != NULL && id[0] != '\0', "job id is empty");
    if (id == NULL || all == NULL)
        goto out;
    CHECK(strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_-") == strlen(id),
          "job id '%s' has characters unfit for a file name", id);
    strncpy(mine, id, ID_MAX - 1);
    CHECK(ops->allgather(st, mine, all, ID_MAX) == 0, "job id allgather");
    for (uint32_t r = 0; r < size; r++)
        CHECK(strcmp(all + (size_t)r * ID_MAX, mine) == 0,
              "rank %u has job id '%s', rank %u has '%s'", r,
              all + (size_t)r * ID_MAX, rank, mine);
out:
    free(all);
}

int main(void)
{
    void    *st = NULL;
    uint32_t rank = UINT32_MAX, size = 0;

    if (!ops->detect()) {
        fprintf(stderr, "pmix_allgather: no PMIx launcher in the environment\n");
        return 1;
    }
    /* The datastore choice: the user's when set, else "hash". */
    const char *gds_before = getenv("PMIX_MCA_gds");
    char        gds_want[64];
    snprintf(gds_want, sizeof(gds_want), "%s",
             gds_before != NULL ? gds_before : "hash");
    int rc = ops->init(NULL, &st, &rank, &size);
    const char *gds_after = getenv("PMIX_MCA_gds");
    CHECK(gds_after != NULL && strcmp(gds_after, gds_want) == 0,
          "PMIX_MCA_gds is '%s' after init, expected '%s'",
          gds_after != NULL ? gds_after : "(unset)", gds_want);
    if (rc != 0) {
        fprintf(stderr, "pmix_allgather: init failed (%d)\n", rc);
        return 1;
    }
    CHECK(size >= 1 && rank < size, "rank %u size %u", rank, size);
    const char *env_rank = getenv("PMIX_RANK");
    CHECK(env_rank != NULL && strtoul(env_rank, NULL, 10) == rank,
          "rank %u but PMIX_RANK=%s", rank, env_rank ? env_rank : "(unset)");

    /* Different lengths in a row: each call must use fresh keys. */
    check_allgather(st, rank, size, 8);
    check_allgather(st, rank, size, 1);
    check_allgather(st, rank, size, 3000);
    check_allgather(st, rank, size, 8);
    CHECK(ops->allgather(st, NULL, NULL, 0) == 0, "empty allgather");
    check_length_mismatch(st, rank, size);
    check_allgather(st, rank, size, 16); /* still usable afterwards */
    check_second_instance(st, rank, size);
    CHECK(ops->barrier(st) == 0, "barrier");
    check_job_id(st, rank, size);
    CHECK(ops->barrier(st) == 0, "second barrier");
    ops->fini(st);

    if (failures == 0 && rank == 0)
        printf("pmix_allgather: %u ranks ok\n", size);
    return failures == 0 ? 0 : 1;
}
