/*
 * SipHash-2-4 (Aumasson and Bernstein): a keyed 64-bit MAC for short
 * messages. pami seals the wire form of memory regions with it
 * (memregion.c, docs/protocols/rma.md).
 */
#ifndef PAMI_SIPHASH_H
#define PAMI_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define PAMI_SIPHASH_KEY_LEN 16

/* The tag of msg[0 .. len) under key; pure, any alignment. */
uint64_t pami_siphash24(const uint8_t key[PAMI_SIPHASH_KEY_LEN],
                        const void *msg, size_t len);
/* The tag of a[0 .. alen) followed by b[0 .. blen), without copying them
 * together; alen must be a multiple of 8. */
uint64_t pami_siphash24_2(const uint8_t key[PAMI_SIPHASH_KEY_LEN],
                          const void *a, size_t alen, const void *b,
                          size_t blen);

#endif
