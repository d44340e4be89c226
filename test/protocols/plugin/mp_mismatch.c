/*
 * Tasks that register different protocols (or the same in another order)
 * would give the same dispatch id different meanings: createv must refuse
 * on every task, and the job must end rather than hang.
 *
 * A protocol whose init fails on one task must fail createv on every
 * task with that result (mode init), for the same reason.
 *
 *   pamirun -n N mp_mismatch extra|order|init
 */
#include <pami.h>
#include <pami_protocol.h>

#include <stdio.h>
#include <string.h>

static pami_result_t no_init(const pami_protocol_env_t *env, void **state)
{
    (void)env;
    *state = NULL;
    return PAMI_SUCCESS;
}

/* Fails on task 1 only (mode init). */
static pami_result_t init_fails_on_1(const pami_protocol_env_t *env,
                                     void **state)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_TASK};
    pami_client_query(env->client, &a);
    *state = NULL;
    return a.task == 1 ? PAMI_ENOMEM : PAMI_SUCCESS;
}

static const pami_protocol_ops_t fails = {PAMI_PROTOCOL_OPS_HEADER,
                                          .name = "test.fails",
                                          .num_dispatch = 1,
                                          .init = init_fails_on_1};

static const pami_protocol_ops_t one = {PAMI_PROTOCOL_OPS_HEADER,
                                        .name = "test.one", .num_dispatch = 1,
                                        .init = no_init};
static const pami_protocol_ops_t two = {PAMI_PROTOCOL_OPS_HEADER,
                                        .name = "test.two", .num_dispatch = 1,
                                        .init = no_init};

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "extra";
    pami_client_t client;
    if (pami_client_create("mismatch", NULL, &client) != PAMI_SUCCESS)
        return 1;
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_TASK};
    pami_client_query(client, &a);
    int odd = a.task == 1;
    if (strcmp(mode, "extra") == 0) {
        pami_protocol_register(client, &one, NULL);
        if (odd)
            pami_protocol_register(client, &two, NULL);
    } else if (strcmp(mode, "init") == 0) {
        pami_protocol_register(client, &fails, NULL);
    } else {
        pami_protocol_register(client, odd ? &two : &one, NULL);
        pami_protocol_register(client, odd ? &one : &two, NULL);
    }
    pami_context_t ctx;
    pami_result_t rc = pami_context_createv(client, NULL, 1, &ctx);
    int ok = rc == (strcmp(mode, "init") == 0 ? PAMI_ENOMEM : PAMI_INVAL);
    printf("task %u: createv %s (%s)\n", a.task, pami_error_text(rc),
           ok ? "refused as it must be" : "WRONG: should be refused");
    if (rc == PAMI_SUCCESS)
        pami_context_destroyv(&ctx, 1);
    pami_client_destroy(&client);
    return ok ? 0 : 1;
}
