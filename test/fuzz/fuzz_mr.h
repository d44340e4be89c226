/*
 * Memory regions in the fuzz targets: the job's secrets (fixed, so that a
 * crash reproduces) and fz_reseal, which puts the right seal on a region
 * the fuzzer mutated. Without it nearly every mutation fails the seal and
 * the checks behind it are never reached. The layout is the one of
 * docs/protocols/rma.md (version 2): the seal at byte 40 covers the 40
 * bytes before it and rkey_len bytes of key from byte 48.
 */
#ifndef FUZZ_MR_H
#define FUZZ_MR_H

#include "internal.h"
#include "siphash.h"

#define FZ_TASKS_MAX 256

static inline const uint8_t *fz_secrets(void)
{
    static uint8_t s[FZ_TASKS_MAX * PAMI_SIPHASH_KEY_LEN];
    if (s[0] == 0)
        for (size_t i = 0; i < sizeof(s); i++)
            s[i] = (uint8_t)(i * 131 + 17);
    return s;
}

static inline void fz_reseal(uint8_t *mr, size_t len)
{
    if (len != PAMI_MEMREGION_SIZE)
        return;
    uint32_t owner;
    uint16_t klen;
    memcpy(&owner, mr + 8, sizeof(owner));
    memcpy(&klen, mr + 6, sizeof(klen));
    if (owner >= FZ_TASKS_MAX || klen > PAMI_MEMREGION_SIZE - 48)
        return;
    uint8_t msg[PAMI_MEMREGION_SIZE];
    memcpy(msg, mr, 40);
    memcpy(msg + 40, mr + 48, klen);
    uint64_t seal = pami_siphash24(fz_secrets() + owner * PAMI_SIPHASH_KEY_LEN,
                                   msg, 40 + (size_t)klen);
    memcpy(mr + 40, &seal, sizeof(seal));
}

#endif
