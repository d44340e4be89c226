/* The runner's list of cases (see cf_cases.h). */
#include "cf_cases.h"
#include "cf_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char      *suite;
    const cf_case_t *cases;
    const size_t    *n;
} builtin[] = {
    {"core", cf_core_cases, &cf_num_core_cases},
    {"core", cf_calls_cases, &cf_num_calls_cases},
    {"core", cf_contexts_cases, &cf_num_contexts_cases},
    {"core", cf_config_cases, &cf_num_config_cases},
    {"core", cf_config_bad_cases, &cf_num_config_bad_cases},
    {"core", cf_dispatch_cases, &cf_num_dispatch_cases},
    {"core", cf_lock_rules_cases, &cf_num_lock_rules_cases},
    {"core", cf_backpressure_cases, &cf_num_backpressure_cases},
    {"core", cf_sized_more_cases, &cf_num_sized_more_cases},
    {"core", cf_env_when_cases, &cf_num_env_when_cases},
    {"core", cf_threads_cases, &cf_num_threads_cases},
    {"core", cf_sdk_core_cases, &cf_num_sdk_core_cases},
    {"rma", cf_rma_cases, &cf_num_rma_cases},
    {"rma", cf_regions_cases, &cf_num_regions_cases},
    {"rma", cf_config_rma_cases, &cf_num_config_rma_cases},
    {"rma", cf_handler_rma_cases, &cf_num_handler_rma_cases},
    {"rma", cf_map_checks_cases, &cf_num_map_checks_cases},
    {"coll", cf_coll_cases, &cf_num_coll_cases},
    {"coll", cf_coll_v_cases, &cf_num_coll_v_cases},
    {"coll", cf_coll_mismatch_cases, &cf_num_coll_mismatch_cases},
    {"coll", cf_coll_local_cases, &cf_num_coll_local_cases},
    {"coll", cf_geometry_cases, &cf_num_geometry_cases},
    {"coll", cf_geometry_lists_cases, &cf_num_geometry_lists_cases},
    {"coll", cf_threads_coll_cases, &cf_num_threads_coll_cases},
    {"protocols", cf_protocols_cases, &cf_num_protocols_cases},
    {"protocols", cf_sdk_cases, &cf_num_sdk_cases},
    {"protocols", cf_wire_cases, &cf_num_wire_cases},
    {"protocols", cf_register_rules_cases, &cf_num_register_rules_cases},
    /* The runner's own cases that die on purpose: only when named. */
    {"selftest", cf_selftest_cases, &cf_num_selftest_cases},
};
#define NBUILTIN (sizeof(builtin) / sizeof(builtin[0]))

int cf_suite_known(const char *suite)
{
    if (strcmp(suite, "all") == 0 || strcmp(suite, "user") == 0)
        return 1;
    for (size_t i = 0; i < NBUILTIN; i++)
        if (strcmp(suite, builtin[i].suite) == 0)
            return 1;
    return 0;
}

static int wanted(const char *const *suites, size_t n, const char *suite)
{
    for (size_t i = 0; i < n; i++)
        if ((strcmp(suites[i], "all") == 0 &&
             strcmp(suite, "selftest") != 0) ||
            strcmp(suites[i], suite) == 0)
            return 1;
    return 0;
}

static int push(cf_entry_t **v, size_t *n, size_t *cap, const cf_entry_t *e)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        cf_entry_t *nv = realloc(*v, c * sizeof(*nv));
        if (nv == NULL)
            return -1;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = *e;
    return 0;
}

int cf_cases_select(const char *const *suites, size_t nsuites,
                    const char *const *plugins, size_t nplugins,
                    cf_entry_t **out, size_t *n)
{
    cf_entry_t *v = NULL;
    size_t cnt = 0, cap = 0;
    for (size_t s = 0; s < NBUILTIN; s++) {
        if (!wanted(suites, nsuites, builtin[s].suite))
            continue;
        for (size_t i = 0; i < *builtin[s].n; i++) {
            cf_entry_t e = {.c = builtin[s].cases[i]};
            snprintf(e.id, sizeof(e.id), "%s.%s", builtin[s].suite,
                     e.c.name);
            snprintf(e.suite, sizeof(e.suite), "%s", builtin[s].suite);
            if (push(&v, &cnt, &cap, &e) != 0)
                goto fail;
        }
    }
    for (size_t p = 0; p < nplugins; p++) {
        char stem[64];
        if (cf_plugin_stem(plugins[p], stem, sizeof(stem)) != 0)
            goto fail;
        if (wanted(suites, nsuites, "protocols"))
            for (size_t i = 0; i < cf_num_plugin_cases; i++) {
                cf_entry_t e = {.c = cf_plugin_cases[i],
                                .plugin = plugins[p]};
                snprintf(e.id, sizeof(e.id), "protocols.%s.%s", stem,
                         e.c.name);
                snprintf(e.suite, sizeof(e.suite), "protocols");
                if (push(&v, &cnt, &cap, &e) != 0)
                    goto fail;
            }
        if (wanted(suites, nsuites, "user")) {
            cf_user_case_t uc[CF_MAX_USER_CASES];
            size_t nu = 0;
            if (cf_plugin_user_cases(plugins[p], uc, CF_MAX_USER_CASES, &nu) != 0)
                goto fail;
            for (size_t i = 0; i < nu; i++) {
                cf_entry_t e = {.plugin = plugins[p], .user_index = i,
                                .c = {.suite = "user", .name = uc[i].name,
                                      .min_ranks = uc[i].min_tasks,
                                      .max_ranks = uc[i].max_tasks}};
                snprintf(e.id, sizeof(e.id), "user.%s.%s", stem, uc[i].name);
                snprintf(e.suite, sizeof(e.suite), "user");
                if (push(&v, &cnt, &cap, &e) != 0)
                    goto fail;
            }
        }
    }
    *out = v;
    *n = cnt;
    return 0;
fail:
    free(v);
    return -1;
}

int cf_cases_find(const char *id, const char *plugin, cf_entry_t *out)
{
    const char *all[2] = {"all", "selftest"};
    cf_entry_t *v = NULL;
    size_t n = 0;
    const char *plugins[1] = {plugin};
    if (cf_cases_select(all, 2, plugins, plugin ? 1 : 0, &v, &n) != 0)
        return -1;
    int rc = -1;
    for (size_t i = 0; i < n && rc != 0; i++)
        if (strcmp(v[i].id, id) == 0) {
            *out = v[i];
            rc = 0;
        }
    free(v);
    return rc;
}
