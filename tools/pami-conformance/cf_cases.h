/* The runner's list of cases: built-in suites and plug-ins' cases. */
#ifndef CF_CASES_H
#define CF_CASES_H

#include "cf.h"

#define CF_MAX_PLUGINS 8

typedef struct {
    char        id[128];    /* suite.name as listed and filtered */
    char        suite[32];
    cf_case_t   c;          /* run is NULL for a plug-in's own case */
    const char *plugin;     /* the --protocol path, or NULL */
    size_t      user_index; /* a plug-in's own case: its index */
} cf_entry_t;

int cf_suite_known(const char *suite);

/* The cases of the suites, built-in ones first, then per plug-in the
 * generic protocol suite (in "protocols") and its own cases ("user"). */
int cf_cases_select(const char *const *suites, size_t nsuites,
                    const char *const *plugins, size_t nplugins,
                    cf_entry_t **out, size_t *n);

/* The case called id (in the case process). */
int cf_cases_find(const char *id, const char *plugin, cf_entry_t *out);

#endif /* CF_CASES_H */
