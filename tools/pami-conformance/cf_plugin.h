/* A --protocol plug-in as the runner sees it: its table and its cases. */
#ifndef CF_PLUGIN_H
#define CF_PLUGIN_H

#include "cf.h"

#include <pami_protocol.h>

#define CF_MAX_USER_CASES 256
#define CF_MAX_PLUGINS_LOADED 8

typedef struct {
    const char *name;
    size_t      min_tasks, max_tasks;
} cf_user_case_t;

/* "libexample_protocol.so" -> "example_protocol" (for case names). */
int cf_plugin_stem(const char *path, char *stem, size_t len);

/* The plug-in's description (loaded once, kept loaded); NULL with a line
 * on stderr when it cannot be loaded or is not a plug-in of this ABI. */
const pami_protocol_plugin_t *cf_plugin_load(const char *path);

/* Its own cases, as the runner lists them. */
int cf_plugin_user_cases(const char *path, cf_user_case_t *out, size_t max,
                    size_t *n);

/* The case process of a plug-in's own case: which one it runs. */
void cf_plugin_select_user(size_t index);
void cf_plugin_user_run(cf_env_t *e);

#endif /* CF_PLUGIN_H */
