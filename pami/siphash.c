/*
 * SipHash-2-4, written from the algorithm's description: a 256-bit state
 * of four 64-bit words keyed from 128 bits, two ARX rounds per 8-byte
 * block, the length in the last block's top byte, four rounds to end.
 */
#include "siphash.h"

#include <string.h>

static inline uint64_t rotl(uint64_t x, unsigned b)
{
    return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

typedef struct {
    uint64_t v0, v1, v2, v3;
} sip_state_t;

static inline void sip_round(sip_state_t *s)
{
    s->v0 += s->v1;
    s->v1 = rotl(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = rotl(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = rotl(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = rotl(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = rotl(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = rotl(s->v2, 32);
}

static inline void sip_block(sip_state_t *s, uint64_t m)
{
    s->v3 ^= m;
    sip_round(s);
    sip_round(s);
    s->v0 ^= m;
}

uint64_t pami_siphash24_2(const uint8_t key[PAMI_SIPHASH_KEY_LEN],
                          const void *a, size_t alen, const void *b,
                          size_t blen)
{
    const uint8_t *pa = a, *pb = b;
    uint64_t       k0 = load_le64(key), k1 = load_le64(key + 8);
    /* The constants spell "somepseudorandomlygeneratedbytes". */
    sip_state_t s = {.v0 = k0 ^ 0x736f6d6570736575ull,
                     .v1 = k1 ^ 0x646f72616e646f6dull,
                     .v2 = k0 ^ 0x6c7967656e657261ull,
                     .v3 = k1 ^ 0x7465646279746573ull};
    for (size_t i = 0; i + 8 <= alen; i += 8)
        sip_block(&s, load_le64(pa + i));
    size_t full = blen & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8)
        sip_block(&s, load_le64(pb + i));
    uint8_t last[8] = {0};
    memcpy(last, pb + full, blen - full);
    last[7] = (uint8_t)(alen + blen);
    sip_block(&s, load_le64(last));
    s.v2 ^= 0xff;
    for (int r = 0; r < 4; r++)
        sip_round(&s);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint64_t pami_siphash24(const uint8_t key[PAMI_SIPHASH_KEY_LEN],
                        const void *msg, size_t len)
{
    return pami_siphash24_2(key, NULL, 0, msg, len);
}
