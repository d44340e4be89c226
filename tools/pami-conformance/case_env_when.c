/*
 * env_read_when: config.md, "When each is read and used": the core's
 * variables are read at pami_client_create ("changing the environment
 * later has no effect on an existing client"), the built-in protocols'
 * when the protocol starts on a context (pami_context_createv).
 */
#include "cf.h"

#include <pami_collectives.h>

#include <stdlib.h>

static void env_read_when(cf_env_t *e)
{
    /* Set after the case's client exists, before its context. */
    setenv("PAMI_RNDV_THRESHOLD", "100", 1);
    setenv("PAMI_CONNID_THRESHOLD", "7", 1);
    pami_result_t rc = pami_context_createv(e->client, NULL, 1, e->contexts);
    unsetenv("PAMI_RNDV_THRESHOLD");
    unsetenv("PAMI_CONNID_THRESHOLD");
    CF_CHECK(e, rc == PAMI_SUCCESS, "expected createv, seen %s",
             cf_rc_name(rc));
    e->ncontexts = 1;
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    CF_OK(e, pami_client_query(e->client, &a));
    CF_CHECK(e, a.rndv_threshold == 65536, "expected PAMI_RNDV_THRESHOLD set "
             "after pami_client_create to change nothing, seen %zu",
             a.rndv_threshold);
    pami_geometry_t world;
    CF_OK(e, pami_geometry_world(e->contexts[0], &world));
    pami_geometry_attr_t ga = {.field_mask = PAMI_GEOMETRY_ATTR_CONNID};
    CF_OK(e, pami_geometry_query(world, &ga));
    CF_CHECK(e, ga.connid_threshold == 7, "expected PAMI_CONNID_THRESHOLD "
             "read when the protocol starts on the context (createv): 7, "
             "seen %u", ga.connid_threshold);
    CF_OK(e, pami_dispatch_fence(e->client));
}

const cf_case_t cf_env_when_cases[] = {
    {"core", "env_read_when", 1, 0, CF_OWN_CONTEXTS, env_read_when, NULL},
};
const size_t cf_num_env_when_cases =
    sizeof(cf_env_when_cases) / sizeof(cf_env_when_cases[0]);
