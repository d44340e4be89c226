/*
 * 64-bit FNV-1a, the one definition: job keys, the protocols' signature,
 * the PMIx namespace's short form, geometries' task lists. Protocols,
 * which cannot include util/, reach it as pami_protocol_hash().
 */
#ifndef PAMI_FNV1A_H
#define PAMI_FNV1A_H

#include <stddef.h>
#include <stdint.h>

#define PAMI_FNV1A_INIT  0xcbf29ce484222325ull /* offset basis */
#define PAMI_FNV1A_PRIME 0x100000001b3ull

/* Folds len bytes at data into h (PAMI_FNV1A_INIT to start). */
static inline uint64_t pami_fnv1a(uint64_t h, const void *data, size_t len)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * PAMI_FNV1A_PRIME;
    return h;
}

/* Folds the bytes of a NUL-terminated string, without the NUL. */
static inline uint64_t pami_fnv1a_str(uint64_t h, const char *s)
{
    for (; *s != '\0'; s++)
        h = (h ^ (uint8_t)*s) * PAMI_FNV1A_PRIME;
    return h;
}

#endif
