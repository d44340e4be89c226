/*
 * PAMI_PROTOCOLS under pamirun.
 *   mp_plugin_load good          the plug-in in PAMI_PROTOCOLS is registered
 *                                after the built-ins, its protocol carries
 *                                traffic and its own case passes;
 *   mp_plugin_load fail          client creation returns PAMI_INVAL on
 *                                every task;
 *   mp_plugin_load one-bad PATH  task 1 loads PATH instead, so creation
 *                                fails on every task, not just task 1.
 * Exits 0 when what was expected happened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pami.h"
#include "pami_protocol.h"

#define FAIL(...)                                                            \
    do {                                                                     \
        fprintf(stderr, "mp_plugin_load: " __VA_ARGS__);                     \
        fputc('\n', stderr);                                                 \
        exit(1);                                                             \
    } while (0)

static int run_good(void)
{
    pami_client_t c;
    pami_result_t rc = pami_client_create("plugin_load", NULL, &c);
    if (rc != PAMI_SUCCESS)
        FAIL("client create: expected success, saw %s", pami_error_text(rc));
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                          PAMI_CLIENT_ATTR_SIZE};
    pami_client_query(c, &a);

    /* Registered after every built-in one, not as a built-in. */
    pami_protocol_info_t info;
    size_t idx = 0, found = SIZE_MAX;
    for (; pami_protocol_query(c, idx, &info) == PAMI_SUCCESS; idx++) {
        if (strcmp(info.name, "test.plugin") == 0)
            found = idx;
        else if (found != SIZE_MAX)
            FAIL("'%s' registered after the plug-in", info.name);
    }
    if (found == SIZE_MAX || found + 1 != idx)
        FAIL("expected test.plugin last of %zu protocols", idx);
    pami_protocol_query(c, found, &info);
    if (info.builtin || info.num_dispatch != 2)
        FAIL("expected a non-built-in with 2 ids, saw builtin=%d ids=%zu",
             info.builtin, info.num_dispatch);

    const pami_protocol_plugin_t *pl;
    const char *path;
    rc = pami_protocol_plugin_query(c, "test.plugin", &pl, &path);
    if (rc != PAMI_SUCCESS || pl->num_cases != 1 ||
        strcmp(pl->cases[0]->name, "echo") != 0)
        FAIL("plugin query: expected its one case 'echo', saw %s",
             pami_error_text(rc));
    if (strstr(getenv("PAMI_PROTOCOLS"), path) == NULL)
        FAIL("plugin path '%s' is not from PAMI_PROTOCOLS", path);
    if (pami_protocol_plugin_query(c, "svd", &pl, NULL) != PAMI_NOT_FOUND)
        FAIL("a built-in protocol is no plug-in");

    pami_context_t ctx;
    rc = pami_context_createv(c, NULL, 1, &ctx);
    if (rc != PAMI_SUCCESS)
        FAIL("createv: %s", pami_error_text(rc));
    pami_protocol_case_env_t env = {.client = c, .context = ctx,
                                    .task = a.task, .size = a.size,
                                    .seed = 7};
    char why[256] = "";
    for (int round = 0; round < 3; round++)
        if (pl->cases[0]->run(&env, why, sizeof(why)) != 0)
            FAIL("case echo failed: %s", why);
    /* The neighbours' pings are echoed while we meet. */
    rc = pami_dispatch_fence(c);
    if (rc != PAMI_SUCCESS)
        FAIL("fence: %s", pami_error_text(rc));
    pami_protocol_stat_t st[2];
    size_t n;
    rc = pami_protocol_stats(ctx, "test.plugin", st, 2, &n);
    if (rc != PAMI_SUCCESS || n != 2 || st[0].value != 3 || st[1].value != 3)
        FAIL("expected 3 pings and 3 pongs, saw %s %llu %llu",
             pami_error_text(rc), (unsigned long long)st[0].value,
             (unsigned long long)st[1].value);
    rc = pami_client_destroy(&c);
    if (rc != PAMI_SUCCESS)
        FAIL("destroy: %s", pami_error_text(rc));
    return 0;
}

static int run_fail(pami_result_t want)
{
    pami_client_t c = NULL;
    pami_result_t rc = pami_client_create("plugin_load", NULL, &c);
    if (rc != want)
        FAIL("client create: expected %s, saw %s", pami_error_text(want),
             pami_error_text(rc));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "good") == 0)
        return run_good();
    if (argc >= 2 && strcmp(argv[1], "fail") == 0)
        return run_fail(PAMI_INVAL);
    if (argc >= 3 && strcmp(argv[1], "one-bad") == 0) {
        const char *rank = getenv("PAMI_RANK") /* pamirun sets it */;
        if (rank == NULL)
            FAIL("one-bad runs under pamirun");
        if (atoi(rank) == 1)
            setenv("PAMI_PROTOCOLS", argv[2], 1);
        return run_fail(PAMI_INVAL);
    }
    fprintf(stderr, "usage: mp_plugin_load good | fail | "
                    "one-bad PATH\n");
    return 2;
}
