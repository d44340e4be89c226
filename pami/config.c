#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "pami.h"
#include "params.h"

int pami_config_parse_size(const char *text, size_t *out)
{
    if (text == NULL || !isdigit((unsigned char)text[0]))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0)
        return -1;
    unsigned long long mult = 1;
    if (*end == 'k' || *end == 'K')
        mult = 1ull << 10;
    else if (*end == 'm' || *end == 'M')
        mult = 1ull << 20;
    else if (*end == 'g' || *end == 'G')
        mult = 1ull << 30;
    if (mult != 1)
        end++;
    if (*end != '\0' || v > SIZE_MAX / mult)
        return -1;
    *out = (size_t)(v * mult);
    return 0;
}

int pami_config_parse_bool(const char *text, int *out)
{
    static const char *const yes[] = {"1", "y", "yes", "on", "true"};
    static const char *const no[]  = {"0", "n", "no", "off", "false"};
    if (text == NULL)
        return -1;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

static int parse_string(const char *text, char *out, size_t size)
{
    size_t len = strlen(text);
    if (len == 0 || len >= size)
        return -1;
    memcpy(out, text, len + 1);
    return 0;
}

static int parse_list(const char *text, char *out, size_t size)
{
    size_t len = strlen(text);
    if (len >= size)
        return -1;
    memcpy(out, text, len + 1);
    return 0;
}

/* One parse routine per kind, so the X-macro can pick by name. */
#define PARSE_loglevel(text, field) \
    ((cfg->field = pami_log_level_parse(text)) >= 0 ? 0 : -1)
#define PARSE_bool(text, field)   pami_config_parse_bool(text, &cfg->field)
#define PARSE_size(text, field)   pami_config_parse_size(text, &cfg->field)
#define PARSE_string(text, field) \
    parse_string(text, cfg->field, sizeof(cfg->field))
#define PARSE_list(text, field) \
    parse_list(text, cfg->field, sizeof(cfg->field))

static int load_one(const char *name, const char *text, int (*apply)(pami_config_t *, const char *),
                    pami_config_t *cfg)
{
    if (apply(cfg, text) == 0)
        return 0;
    pami_warn("config", "%s='%s' is not valid; using the default", name, text);
    return -1;
}

#define APPLY_FN(field, name, kind, def, desc)                               \
    static int apply_##field(pami_config_t *cfg, const char *text)          \
    {                                                                        \
        return PARSE_##kind(text, field);                                    \
    }
PAMI_FOREACH_CONFIG(APPLY_FN)
#undef APPLY_FN

int pami_config_load(pami_config_t *cfg)
{
    int rc = 0;
    memset(cfg, 0, sizeof(*cfg));
#define LOAD(field, name, kind, def, desc)                                   \
    apply_##field(cfg, def);                                                 \
    {                                                                        \
        const char *env = getenv(name);                                      \
        if (env != NULL && load_one(name, env, apply_##field, cfg) != 0) {  \
            apply_##field(cfg, def);                                         \
            rc = -1;                                                         \
        }                                                                    \
    }
    PAMI_FOREACH_CONFIG(LOAD)
#undef LOAD
    return rc;
}

static const pami_config_var_t config_vars[] = {
#define DESCRIBE(field, name, kind, def, desc) {name, def, desc},
    PAMI_FOREACH_CONFIG(DESCRIBE)
#undef DESCRIBE
};

PAMI_PARAMS_LAYOUTS(var_layouts, pami_config_var_t,
                    PAMI_PARAMS_PREFIX(pami_config_var_t, name),
                    PAMI_PARAMS_PREFIX(pami_config_var_t, default_value));

pami_result_t pami_config_var_sized(unsigned index, pami_config_var_t *out,
                                    size_t size)
{
    if (out == NULL) {
        pami_warn("config", "config_var with a NULL output");
        return PAMI_INVAL;
    }
    pami_result_t rc = pami_params_out(&var_layouts, size);
    if (rc != PAMI_SUCCESS)
        return rc;
    pami_config_var_t var;
    size_t core = sizeof(config_vars) / sizeof(config_vars[0]);
    if (index >= core)
        rc = pami_protocols_config_var(index - core, &var);
    else
        var = config_vars[index];
    if (rc == PAMI_SUCCESS)
        memcpy(out, &var, size);
    return rc;
}
