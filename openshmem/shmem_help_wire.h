/* The HELP message of a large copy shared by two PEs (shmem_help.c,
 * docs/openshmem.md "Two cores on a large copy"): its layout, the checks
 * its target makes before it touches memory, and the chunk arithmetic.
 * Pure functions, so that the fuzz target (test/fuzz/fuzz_shmem_help.c)
 * runs the checks that run. */
#ifndef SHMEM_HELP_WIRE_H
#define SHMEM_HELP_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The HELP message's header (host byte order, one node). */
typedef struct {
    uint32_t seq;
    uint32_t chunk;   /* bytes of each chunk but the last */
    uint8_t  put;     /* 1: the target's dst from the caller's src */
    uint8_t  dst_seg;
    uint8_t  src_seg;
    uint8_t  reserved[5];
    uint64_t dst_off;
    uint64_t src_off;
    uint64_t bytes;
} shmemi_help_msg_t;

static inline uint64_t shmemi_help_chunks(uint64_t bytes, uint64_t chunk)
{
    return bytes / chunk + (bytes % chunk != 0);
}

/* Where chunk i of a copy of bytes lies: [*at, *at + *len). i must be
 * below shmemi_help_chunks(bytes, chunk). */
static inline void shmemi_help_chunk_span(uint64_t bytes, uint64_t chunk,
                                          uint32_t i, uint64_t *at,
                                          uint64_t *len)
{
    *at = (uint64_t)i * chunk;
    *len = bytes - *at < chunk ? bytes - *at : chunk;
}

static inline int shmemi_help_range_ok(int s, uint64_t off, uint64_t bytes,
                                       const size_t *seg_size, int nseg)
{
    return s >= 0 && s < nseg && off <= seg_size[s] &&
           bytes <= seg_size[s] - off;
}

/* Decodes a HELP from PE pe of n_pes (this PE is my_pe) whose segments
 * have the sizes seg_size[0..nseg) on every PE (shmem_init checks that):
 * NULL and *m filled when every range it names lies in its segment, or
 * the reason it is refused. */
static inline const char *shmemi_help_decode(const void *header,
                                             size_t header_len,
                                             size_t data_len, int pe,
                                             int n_pes, int my_pe,
                                             const size_t *seg_size, int nseg,
                                             shmemi_help_msg_t *m)
{
    static const uint8_t zero[sizeof(m->reserved)];

    if (header_len != sizeof(*m) || data_len != 0)
        return "size";
    memcpy(m, header, sizeof(*m));
    if (pe < 0 || pe >= n_pes || pe == my_pe)
        return "sender";
    if (m->put > 1 || m->chunk < 64 ||
        memcmp(m->reserved, zero, sizeof(zero)) != 0)
        return "fields";
    if (!shmemi_help_range_ok(m->dst_seg, m->dst_off, m->bytes, seg_size,
                              nseg) ||
        !shmemi_help_range_ok(m->src_seg, m->src_off, m->bytes, seg_size,
                              nseg))
        return "range";
    if (shmemi_help_chunks(m->bytes, m->chunk) > UINT32_MAX)
        return "chunks";
    return NULL;
}

#endif
