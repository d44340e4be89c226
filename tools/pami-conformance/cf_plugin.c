/* Loading --protocol plug-ins and running their own cases. */
#include "cf_plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int cf_plugin_stem(const char *path, char *stem, size_t len)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    if (strncmp(b, "lib", 3) == 0 && b[3] != '\0')
        b += 3;
    size_t n = strcspn(b, ".");
    if (n == 0 || n >= len) {
        fprintf(stderr, "pami-conformance: cannot name plug-in '%s'\n", path);
        return -1;
    }
    memcpy(stem, b, n);
    stem[n] = '\0';
    return 0;
}

static struct {
    const char                   *path;
    const pami_protocol_plugin_t *desc;
} loaded[CF_MAX_PLUGINS_LOADED];

const pami_protocol_plugin_t *cf_plugin_load(const char *path)
{
    size_t i;
    for (i = 0; i < CF_MAX_PLUGINS_LOADED && loaded[i].path != NULL; i++)
        if (strcmp(loaded[i].path, path) == 0)
            return loaded[i].desc;
    if (i == CF_MAX_PLUGINS_LOADED)
        return NULL;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "pami-conformance: cannot load plug-in %s: %s\n",
                path, dlerror());
        return NULL;
    }
    pami_protocol_plugin_fn entry;
    *(void **)&entry = dlsym(h, PAMI_PROTOCOL_PLUGIN_ENTRY);
    const pami_protocol_plugin_t *d = entry ? entry() : NULL;
    if (d == NULL) {
        fprintf(stderr, "pami-conformance: %s exports no %s or it returned "
                "NULL\n", path, PAMI_PROTOCOL_PLUGIN_ENTRY);
        return NULL;
    }
    if (d->abi_version != PAMI_PROTOCOL_ABI_VERSION ||
        d->struct_size < offsetof(pami_protocol_plugin_t, num_cases) +
                             sizeof(size_t) ||
        d->ops == NULL) {
        fprintf(stderr, "pami-conformance: %s is a plug-in of ABI version "
                "%u (size %u); this runner speaks %d\n", path,
                d->abi_version, d->struct_size, PAMI_PROTOCOL_ABI_VERSION);
        return NULL;
    }
    loaded[i].path = path;
    loaded[i].desc = d;
    return d;
}

int cf_plugin_user_cases(const char *path, cf_user_case_t *out, size_t max,
                    size_t *n)
{
    const pami_protocol_plugin_t *d = cf_plugin_load(path);
    if (d == NULL)
        return -1;
    *n = 0;
    for (size_t i = 0; i < d->num_cases; i++) {
        const pami_protocol_case_t *c = d->cases[i];
        if (c == NULL || c->name == NULL || c->run == NULL) {
            fprintf(stderr, "pami-conformance: %s: case %zu has no name or "
                    "run function\n", path, i);
            return -1;
        }
        if (*n == max) {
            fprintf(stderr, "pami-conformance: %s: more than %zu cases\n",
                    path, max);
            return -1;
        }
        out[(*n)++] = (cf_user_case_t){c->name, c->min_tasks ? c->min_tasks
                                                              : 1,
                                       c->max_tasks};
    }
    return 0;
}

static size_t user_index;

void cf_plugin_select_user(size_t index)
{
    user_index = index;
}

void cf_plugin_user_run(cf_env_t *e)
{
    const pami_protocol_plugin_t *d = cf_plugin_load(e->plugin);
    CF_CHECK(e, d != NULL && user_index < d->num_cases,
             "expected plug-in %s to load with case %zu", e->plugin,
             user_index);
    const pami_protocol_case_t *c = d->cases[user_index];
    /* The protocol came with the client (PAMI_PROTOCOLS): check it is the
     * plug-in's own table that got registered. */
    const pami_protocol_plugin_t *q = NULL;
    pami_result_t rc = pami_protocol_plugin_query(e->client, d->ops->name, &q,
                                                  NULL);
    CF_CHECK(e, rc == PAMI_SUCCESS,
             "expected protocol %s loaded from the plug-in, seen %s",
             d->ops->name, cf_rc_name(rc));
    pami_protocol_case_env_t env = {.client = e->client, .context = e->ctx,
                                    .task = e->task, .size = e->size,
                                    .seed = e->seed};
    char why[600] = "";
    if (c->run(&env, why, sizeof(why)) != 0 && !e->failed++) {
        /* The case's own words; no runner file and line to mislead. */
        why[sizeof(why) - 1] = '\0';
        snprintf(e->msg, sizeof(e->msg), "task %u: %s", e->task,
                 why[0] ? why : "the case failed without saying why");
    }
}
