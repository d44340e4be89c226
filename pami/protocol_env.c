/*
 * What the SDK gives protocols besides the registry: their settings
 * from the environment, parsed by the same code as the core's
 * (config.c), the one FNV-1a (util/fnv1a.h) and the one SipHash
 * (siphash.c).
 */
#include <stdint.h>
#include <stdlib.h>

#include "config.h"
#include "fnv1a.h"
#include "log.h"
#include "pami_protocol.h"
#include "siphash.h"

_Static_assert(PAMI_PROTOCOL_HASH_INIT == PAMI_FNV1A_INIT,
               "the SDK's hash starts where util's does");

uint64_t pami_protocol_hash(uint64_t h, const void *data, size_t len)
{
    return data != NULL ? pami_fnv1a(h, data, len) : h;
}

_Static_assert(PAMI_PROTOCOL_MAC_KEY_LEN == PAMI_SIPHASH_KEY_LEN,
               "the SDK's MAC key is SipHash's");

uint64_t pami_protocol_mac(const uint8_t key[PAMI_PROTOCOL_MAC_KEY_LEN],
                           const void *data, size_t len)
{
    return pami_siphash24(key, data != NULL ? data : "", data ? len : 0);
}

uint64_t pami_protocol_env_size(const char *subsys, const char *name,
                                uint64_t dflt, uint64_t min, uint64_t max)
{
    const char *text = name != NULL ? getenv(name) : NULL;
    if (text == NULL || *text == '\0')
        return dflt;
    size_t v;
    if (pami_config_parse_size(text, &v) == 0 && v >= min && v <= max)
        return v;
    pami_warn(subsys != NULL ? subsys : "protocol",
              "%s='%s' is not a size in %llu..%llu; using %llu", name, text,
              (unsigned long long)min, (unsigned long long)max,
              (unsigned long long)dflt);
    return dflt;
}

int pami_protocol_env_bool(const char *subsys, const char *name, int dflt)
{
    const char *text = name != NULL ? getenv(name) : NULL;
    if (text == NULL || *text == '\0')
        return dflt;
    int v;
    if (pami_config_parse_bool(text, &v) == 0)
        return v;
    pami_warn(subsys != NULL ? subsys : "protocol",
              "%s='%s' is not a bool (1/0, yes/no, on/off, true/false); "
              "using %d", name, text, dflt);
    return dflt;
}
