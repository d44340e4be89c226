/*
 * Protocol plug-ins: shared objects named in PAMI_PROTOCOLS, loaded at
 * client creation, whose protocols are registered after the built-in
 * ones. A task that cannot load its list says so in its task card, so
 * client creation fails on every task rather than hang or differ.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pami_protocol.h"

struct pami_plugin {
    void                         *handle;
    char                         *path;
    const pami_protocol_plugin_t *desc;
};

/* The description as the first ABI version had it. */
#define PLUGIN_V1_SIZE \
    (offsetof(pami_protocol_plugin_t, num_cases) + sizeof(size_t))

static pami_result_t check_desc(const char *path,
                                const pami_protocol_plugin_t *d)
{
    PAMI_CHECK(d != NULL, PAMI_INVAL, "plugin",
               "%s: " PAMI_PROTOCOL_PLUGIN_ENTRY "() returned NULL", path);
    PAMI_CHECK(d->abi_version == PAMI_PROTOCOL_ABI_VERSION, PAMI_INVAL,
               "plugin", "%s: built for protocol ABI version %u; this pami "
               "loads version %d", path, d->abi_version,
               PAMI_PROTOCOL_ABI_VERSION);
    PAMI_CHECK(d->struct_size >= PLUGIN_V1_SIZE, PAMI_INVAL, "plugin",
               "%s: its description has %u bytes; at least %zu", path,
               d->struct_size, (size_t)PLUGIN_V1_SIZE);
    PAMI_CHECK(d->ops != NULL, PAMI_INVAL, "plugin",
               "%s: its description has no protocol (ops is NULL)", path);
    PAMI_CHECK(d->num_cases == 0 || d->cases != NULL, PAMI_INVAL, "plugin",
               "%s: %zu cases but no case array", path, d->num_cases);
    for (size_t i = 0; i < d->num_cases; i++)
        PAMI_CHECK(d->cases[i] != NULL && d->cases[i]->name != NULL &&
                       d->cases[i]->run != NULL,
                   PAMI_INVAL, "plugin", "%s: case %zu has no name or no "
                   "run function", path, i);
    return PAMI_SUCCESS;
}

static pami_result_t load_one(pami_client_impl_t *c, const char *path)
{
    /* RTLD_LOCAL: two plug-ins may use the same names for their own
     * symbols; they reach libpami through the program's global scope. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        pami_error("plugin", "cannot load %s: %s", path, dlerror());
        return PAMI_INVAL;
    }
    pami_protocol_plugin_fn entry;
    void *sym = dlsym(h, PAMI_PROTOCOL_PLUGIN_ENTRY);
    memcpy(&entry, &sym, sizeof(entry)); /* object to function pointer */
    if (entry == NULL) {
        pami_error("plugin", "%s exports no " PAMI_PROTOCOL_PLUGIN_ENTRY
                             "(): not a pami protocol plug-in", path);
        dlclose(h);
        return PAMI_INVAL;
    }
    const pami_protocol_plugin_t *d = entry();
    struct pami_plugin *p = &c->plugins[c->num_plugins];
    pami_result_t rc = check_desc(path, d);
    if (rc == PAMI_SUCCESS && (p->path = strdup(path)) == NULL)
        rc = PAMI_ENOMEM;
    if (rc == PAMI_SUCCESS) {
        rc = pami_protocols_add(c, d->ops, NULL, false);
        if (rc != PAMI_SUCCESS)
            pami_error("plugin", "%s: its protocol could not be registered "
                                 "(%s; see the line above)",
                       path, pami_error_text(rc));
    }
    if (rc != PAMI_SUCCESS) {
        free(p->path);
        p->path = NULL;
        dlclose(h);
        return rc;
    }
    p->handle = h;
    p->desc   = d;
    c->num_plugins++;
    pami_debug("plugin", "%s: protocol '%s', %zu cases", path, d->ops->name,
               d->num_cases);
    return PAMI_SUCCESS;
}

void pami_plugins_load(pami_client_impl_t *c)
{
    c->plugins_rc          = PAMI_SUCCESS;
    c->plugins_failed_task = UINT32_MAX;
    const char *list = c->config.protocols;
    if (list[0] == '\0')
        return;
    size_t n = 1;
    for (const char *s = list; *s; s++)
        n += *s == ':';
    c->plugins = calloc(n, sizeof(*c->plugins));
    if (c->plugins == NULL) {
        c->plugins_rc = PAMI_ENOMEM;
        return;
    }
    char path[sizeof(c->config.protocols)];
    for (const char *s = list; *s != '\0';) {
        size_t len = strcspn(s, ":");
        memcpy(path, s, len);
        path[len] = '\0';
        s += len + (s[len] == ':');
        if (len == 0)
            continue; /* "a.so::b.so" or a trailing ':' */
        pami_result_t rc = load_one(c, path);
        if (rc != PAMI_SUCCESS) {
            c->plugins_rc = rc;
            return;
        }
    }
}

pami_result_t pami_plugins_agree(pami_client_impl_t *c)
{
    if (c->plugins_rc != PAMI_SUCCESS) {
        pami_error("client", "PAMI_PROTOCOLS could not be loaded here: %s",
                   pami_error_text(c->plugins_rc));
        return c->plugins_rc;
    }
    if (c->plugins_failed_task != UINT32_MAX) {
        pami_error("client", "task %u could not load its PAMI_PROTOCOLS (%s; "
                             "its log says why), so no task starts",
                   c->plugins_failed_task,
                   pami_error_text(c->plugins_failed_rc));
        return c->plugins_failed_rc;
    }
    return PAMI_SUCCESS;
}

void pami_plugins_unload(pami_client_impl_t *c)
{
    for (size_t i = 0; i < c->num_plugins; i++) {
        dlclose(c->plugins[i].handle);
        free(c->plugins[i].path);
    }
    free(c->plugins);
    c->plugins     = NULL;
    c->num_plugins = 0;
}

pami_result_t pami_protocol_plugin_query(pami_client_t c, const char *name,
                                         const pami_protocol_plugin_t **plugin,
                                         const char **path)
{
    PAMI_CHECK(c != NULL && name != NULL && plugin != NULL, PAMI_INVAL,
               "plugin", "plugin query with a NULL argument");
    for (size_t i = 0; i < c->num_plugins; i++) {
        if (strcmp(c->plugins[i].desc->ops->name, name) != 0)
            continue;
        *plugin = c->plugins[i].desc;
        if (path != NULL)
            *path = c->plugins[i].path;
        return PAMI_SUCCESS;
    }
    return PAMI_NOT_FOUND;
}
