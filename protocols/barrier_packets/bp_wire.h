/*
 * Barrier control packets: the wire format (docs/protocols/
 * barrier-packets.md). One packet type, 24 bytes, host byte order, sent
 * as the header of pami_send_immediate with no data.
 */
#ifndef BP_WIRE_H
#define BP_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define BP_VERSION     1
#define BP_TYPE_ARRIVE 1

typedef struct {
    uint8_t  version;   /* BP_VERSION */
    uint8_t  type;      /* BP_TYPE_ARRIVE */
    uint16_t reserved0; /* 0 */
    uint32_t size;      /* participants, 2 .. job size */
    uint32_t epoch;     /* barrier number on the group, from 0, mod 2^32 */
    uint32_t reserved1; /* 0 */
    uint64_t group;     /* bp_group_id of the participants */
} bp_packet_t;

_Static_assert(sizeof(bp_packet_t) == 24, "bp_packet_t is 24 bytes");

/* What bp_packet_decode found: OK, or the first check that failed. */
enum {
    BP_WIRE_OK = 0,
    BP_WIRE_SHORT,   /* header shorter than a packet */
    BP_WIRE_LONG,    /* header longer, or data with it */
    BP_WIRE_VERSION,
    BP_WIRE_TYPE,
    BP_WIRE_FIELD    /* reserved not 0, or size not in 2 .. ntasks */
};

/* The checks that need only the bytes and the job size; the sender's
 * identity, the group and the epoch window are the handler's. */
static inline int bp_packet_decode(const void *hdr, size_t hlen, size_t dlen,
                                   uint32_t ntasks, bp_packet_t *out)
{
    if (hlen < sizeof(*out))
        return BP_WIRE_SHORT;
    if (hlen > sizeof(*out) || dlen > 0)
        return BP_WIRE_LONG;
    memcpy(out, hdr, sizeof(*out));
    if (out->version != BP_VERSION)
        return BP_WIRE_VERSION;
    if (out->type != BP_TYPE_ARRIVE)
        return BP_WIRE_TYPE;
    if (out->reserved0 != 0 || out->reserved1 != 0 || out->size < 2 ||
        out->size > ntasks)
        return BP_WIRE_FIELD;
    return BP_WIRE_OK;
}

/* splitmix64's finaliser: every input bit moves every output bit. */
static inline uint64_t bp_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The group id is a function of the set alone (a sum, so the order the
 * caller lists the tasks in does not matter), of its size and of the
 * context offset. Start with bp_group_seed, add bp_group_term per task. */
static inline uint64_t bp_group_seed(uint32_t offset, uint32_t size)
{
    return bp_mix64(0x6270000000000000ull ^ (uint64_t)offset << 32 ^ size);
}

static inline uint64_t bp_group_term(uint32_t task)
{
    return bp_mix64((uint64_t)task + 0x5851f42d4c957f2dull);
}

#endif /* BP_WIRE_H */
