/*
 * Decoders of the core's wire formats (docs/protocols/am.md and
 * rendezvous.md): pure functions of the received bytes and the job's
 * shape, with no context state, so that the receive path and the fuzz
 * targets (test/fuzz) run the same checks. Each returns PAMI_WIRE_OK or
 * the first check that failed; the caller counts, logs and drops.
 */
#ifndef PAMI_WIRE_H
#define PAMI_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pami.h"

typedef enum {
    PAMI_WIRE_OK = 0,
    PAMI_WIRE_UCX_RNDV,   /* came by UCX's rendezvous: pami never sends one */
    PAMI_WIRE_BAD_PACKED, /* packed form: flags or user header length */
    PAMI_WIRE_SHORT,      /* shorter than its fixed part */
    PAMI_WIRE_BAD_LENGTH, /* not exactly the size of its type */
    PAMI_WIRE_BAD_FIELD,  /* a field out of range */
    PAMI_WIRE_BAD_VERSION,
    PAMI_WIRE_BAD_REGION  /* a memregion that does not verify (its seal) */
} pami_wire_check_t;

/* Wire header in front of every pami active message. */
typedef struct {
    uint32_t origin_task;
    uint16_t dispatch;
    uint8_t  origin_ctx;
    uint8_t  flags;
} pami_am_hdr_t;

#define PAMI_AM_FLAG_ACK 0x1u /* a uint64 ack cookie follows the header */
/* The whole message travels as UCX payload: this header, a uint16 user
 * header length, the user header, the data (small immediate sends: one
 * contiguous part is cheaper in UCX than header plus payload). */
#define PAMI_AM_FLAG_PACKED 0x2u
#define PAMI_AM_FLAGS_KNOWN (PAMI_AM_FLAG_ACK | PAMI_AM_FLAG_PACKED)

/* One received active message, split into its parts. */
typedef struct {
    pami_am_hdr_t  h;          /* flags without PACKED */
    bool           ack;        /* the sender waits for an ack */
    uint64_t       ack_cookie;
    const uint8_t *uhdr;       /* the user's header (or a core payload) */
    size_t         uhdr_len;
    void          *data;
    size_t         data_len;
} pami_am_msg_t;

/* Splits what UCX delivered (its header, payload, rendezvous descriptor)
 * and checks the AM header against a job of ntasks tasks with ncontexts
 * contexts each. */
pami_wire_check_t pami_am_decode(const void *hdr, size_t hdr_len, void *data,
                                 size_t data_len, const void *rndv_desc,
                                 uint32_t ntasks, uint32_t ncontexts,
                                 pami_am_msg_t *out);

/* pami_am_decode's body, for the receive path (one call less per
 * message); the fuzz target runs the same code through pami_am_decode. */
static inline pami_wire_check_t
pami_am_decode_inline(const void *hdr, size_t hdr_len, void *data,
                      size_t data_len, const void *rndv_desc, uint32_t ntasks,
                      uint32_t ncontexts, pami_am_msg_t *out)
{
    pami_am_hdr_t h;
    if (rndv_desc != NULL)
        return PAMI_WIRE_UCX_RNDV;
    const uint8_t *rest;
    size_t         rest_len;
    if (hdr_len == 0 && data_len >= sizeof(h) + sizeof(uint16_t)) {
        uint16_t uhlen;
        memcpy(&h, data, sizeof(h));
        memcpy(&uhlen, (const uint8_t *)data + sizeof(h), sizeof(uhlen));
        size_t head = sizeof(h) + sizeof(uhlen) + uhlen;
        if (h.flags != PAMI_AM_FLAG_PACKED || head > data_len) {
            out->h = h;
            return PAMI_WIRE_BAD_PACKED;
        }
        rest     = (const uint8_t *)data + sizeof(h) + sizeof(uhlen);
        rest_len = uhlen;
        data     = (uint8_t *)data + head;
        data_len -= head;
        h.flags  = 0;
    } else if (hdr_len < sizeof(h)) {
        return PAMI_WIRE_SHORT;
    } else {
        memcpy(&h, hdr, sizeof(h));
        rest     = (const uint8_t *)hdr + sizeof(h);
        rest_len = hdr_len - sizeof(h);
    }
    out->h   = h;
    out->ack = (h.flags & PAMI_AM_FLAG_ACK) != 0;
    if (h.origin_task >= ntasks || h.origin_ctx >= ncontexts ||
        (h.flags & ~PAMI_AM_FLAGS_KNOWN) != 0 ||
        (out->ack && rest_len < sizeof(uint64_t)))
        return PAMI_WIRE_BAD_FIELD;
    out->ack_cookie = 0;
    if (out->ack) {
        memcpy(&out->ack_cookie, rest, sizeof(out->ack_cookie));
        rest += sizeof(out->ack_cookie);
        rest_len -= sizeof(out->ack_cookie);
    }
    out->uhdr     = rest;
    out->uhdr_len = rest_len;
    out->data     = data;
    out->data_len = data_len;
    return PAMI_WIRE_OK;
}

/* Payload of a PAMI_DISPATCH_ACK message. */
typedef struct {
    uint64_t cookie;
    int32_t  result;
    uint32_t reserved;
} pami_ack_t;

/* An ack's payload; an unknown result code reads as PAMI_ERROR. */
pami_wire_check_t pami_ack_decode(const void *buf, size_t len,
                                  pami_ack_t *out, pami_result_t *result);

/* Payload of a PAMI_DISPATCH_BARRIER message. */
typedef struct {
    uint32_t epoch;
    uint32_t round;
} pami_barrier_msg_t;

/* A core barrier message; the epoch window is the caller's (state). */
pami_wire_check_t pami_barrier_msg_decode(const void *buf, size_t len,
                                          pami_barrier_msg_t *out);

/* Payload of a PAMI_DISPATCH_PROBE message (docs/protocols/am.md):
 * a probe asks a task on another node whether it still runs progress,
 * its answer echoes seq. */
#define PAMI_PROBE_ASK    1u
#define PAMI_PROBE_ANSWER 2u
typedef struct {
    uint8_t  kind;
    uint8_t  reserved[3];
    uint32_t seq;
} pami_probe_msg_t;

/* A probe message: exactly its size, a known kind, reserved bytes 0. */
pami_wire_check_t pami_probe_decode(const void *buf, size_t len,
                                    pami_probe_msg_t *out);

/* Eager sends to one endpoint gathered into one message (core id
 * PAMI_DISPATCH_SENDS, docs/protocols/am.md "SENDS"): this as the core
 * payload, and as AM data `count` records, each a pami_sends_rec_t, the
 * user header, the data, and 0-7 bytes of padding up to a multiple of 8. */
typedef struct {
    uint32_t count;     /* records, at least 1 */
    uint32_t reserved;  /* 0 */
} pami_sends_msg_t;

typedef struct {
    uint16_t dispatch;  /* a user's or a protocol's id */
    uint16_t uhdr_len;  /* at most PAMI_SENDS_UHDR_MAX */
    uint32_t data_len;
} pami_sends_rec_t;

/* The AM data of one SENDS at most (inside pami's 68 KiB TCP segment),
 * the first id a record may not carry (the core's), the longest user
 * header (PAMI_HEADER_MAX). */
#define PAMI_SENDS_BYTES        (60u * 1024)
#define PAMI_SENDS_DISPATCH_END 512u
#define PAMI_SENDS_UHDR_MAX     1024u

/* A record's bytes with its padding. */
static inline size_t pami_sends_rec_size(size_t uhdr_len, size_t data_len)
{
    return (sizeof(pami_sends_rec_t) + uhdr_len + data_len + 7) & ~(size_t)7;
}

/* A SENDS message's core payload and the length of its AM data: exactly
 * 8 bytes, reserved 0, count 1 or more, data 8 to PAMI_SENDS_BYTES
 * bytes, a multiple of 8. */
pami_wire_check_t pami_sends_msg_decode(const void *buf, size_t len,
                                        size_t data_len,
                                        pami_sends_msg_t *out);

/* The record at *off of the AM data buf (len bytes): its header whole,
 * an id below PAMI_SENDS_DISPATCH_END, a user header of at most
 * PAMI_SENDS_UHDR_MAX, header, data and padding inside buf. Then *uhdr
 * and *data point at its parts and *off past its padding. */
pami_wire_check_t pami_sends_next(const uint8_t *buf, size_t len, size_t *off,
                                  pami_sends_rec_t *rec,
                                  const uint8_t **uhdr, const uint8_t **data);

/* Walks all of buf: exactly count records that pass pami_sends_next
 * and end at len. The receiver runs no handler of a message that fails. */
pami_wire_check_t pami_sends_check(const uint8_t *buf, size_t len,
                                   uint32_t count);

#define RNDV_VERSION 1
/* Origin and target share a node: the target reads the origin's memory
 * itself (process_vm_readv, one copy); mr is unused and not registered. */
#define RNDV_FLAG_CMA 0x1u
/* The origin serves the payload itself in chunk messages the target asks
 * for (PAMI_DISPATCH_RNDV_CHUNK, rndv_msg.c): no registration, no UCX
 * RMA toward a peer that may die; mr and base are zero. */
#define RNDV_FLAG_MSG 0x2u
/* With MSG only: the RTS's AM data holds the payload's first chunk
 * (min(bytes, RNDV_MSG_CHUNK) bytes), so a payload of one chunk costs no
 * round trip of its own; the target asks for the chunks after it. */
#define RNDV_FLAG_DATA 0x4u
/* With MSG and DATA only, when the RTS holds the whole payload (bytes <=
 * RNDV_MSG_CHUNK): the origin asked for no remote completion and does
 * not wait for the ACK (its buffer is free once the RTS left), so the
 * target sends none: one message per send, as an eager one. */
#define RNDV_FLAG_NOACK 0x8u
/* The chunks of the origin-served transfer (rndv_msg.c): the first one
 * comes with the RTS, a FETCH asks for one, and the origin answers a
 * FETCH in DATA messages of one piece each (the last one shorter). */
#define RNDV_MSG_CHUNK (256u * 1024)
#define RNDV_MSG_PIECE (64u * 1024)

/* The rendezvous request (RTS), after the AM header and ack cookie. */
typedef struct {
    uint32_t         version;
    uint32_t         dispatch;  /* the user's id */
    uint64_t         bytes;
    uint32_t         flags;
    uint32_t         reserved;
    uint64_t         base;      /* the origin's buffer */
    pami_memregion_t mr;        /* its registration, unless RNDV_FLAG_CMA */
} pami_rndv_rts_t;

/* The fixed part of an RTS (the user's header follows it) and its form:
 * version, flags (DATA only with MSG, NOACK only with MSG, DATA and a
 * payload of one chunk), and without CMA a memregion that verifies under the
 * job's secrets (16 bytes per task of ntasks: memregion.c), owned by
 * origin_task and describing exactly base and bytes. Whether CMA is
 * allowed (same node) is the caller's check. */
pami_wire_check_t pami_rndv_rts_decode(const void *buf, size_t len,
                                       uint32_t origin_task,
                                       const uint8_t *secrets, size_t ntasks,
                                       pami_rndv_rts_t *out);

/* A message of the origin-served rendezvous (RNDV_FLAG_MSG), core id
 * PAMI_DISPATCH_RNDV_CHUNK; the whole of the AM header part after the
 * AM header. FETCH (target to origin) asks for [offset, offset + bytes)
 * of the send named by send_cookie; DATA (origin to target) answers it
 * for the transfer named by recv_cookie, with the bytes as AM data, or
 * with result != PAMI_SUCCESS and no data when the origin refuses. */
typedef struct {
    uint32_t version;     /* RNDV_VERSION */
    uint32_t type;        /* RNDV_CHUNK_FETCH or RNDV_CHUNK_DATA */
    int32_t  result;      /* DATA: PAMI_SUCCESS or why refused; FETCH: 0 */
    uint32_t reserved;    /* 0 */
    uint64_t send_cookie; /* the origin's send request (the RTS's cookie) */
    uint64_t recv_cookie; /* the target's transfer request */
    uint64_t offset;
    uint64_t bytes;
} pami_rndv_chunk_t;

#define RNDV_CHUNK_FETCH 1u
#define RNDV_CHUNK_DATA  2u
/* Largest chunk a FETCH may ask for. */
#define RNDV_CHUNK_MAX   (4u << 20)

/* A chunk message and its AM data: exact size, version, type, reserved,
 * 1..RNDV_CHUNK_MAX bytes whose range does not overflow, the result a
 * known code, data only on a successful DATA and then exactly bytes. */
pami_wire_check_t pami_rndv_chunk_decode(const void *buf, size_t len,
                                         size_t data_len,
                                         pami_rndv_chunk_t *out);

/* Whether a DATA of bytes at offset is a chunk the target asked for and
 * has not had yet: a payload of total bytes in chunks of chunk bytes,
 * chunks [lo, next) asked for (next - lo <= 64), bit i of got set when
 * chunk lo + i is here. Then *index is its chunk, and [offset, offset +
 * bytes) lies within total. */
bool pami_rndv_chunk_wanted(uint64_t total, uint64_t chunk, uint64_t lo,
                            uint64_t next, uint64_t got, uint64_t offset,
                            uint64_t bytes, uint64_t *index);

/* A message of the split read on one node (RNDV_FLAG_CMA, payloads of
 * PAMI_RNDV_SPLIT_MIN bytes or more), core id PAMI_DISPATCH_RNDV_WRITE; the
 * whole of the AM header part after the AM header, no AM data. ASK
 * (target to origin) asks the origin to write [offset, offset + bytes) of
 * the send named by send_cookie to dest in the target's memory
 * (process_vm_writev) while the target reads the rest; DONE (origin to
 * target) echoes it with the outcome. */
typedef struct {
    uint32_t version;     /* RNDV_VERSION */
    uint32_t type;        /* RNDV_WRITE_ASK or RNDV_WRITE_DONE */
    int32_t  result;      /* DONE: PAMI_SUCCESS, PAMI_EAGAIN (not written:
                             the target reads it) or an error; ASK: 0 */
    uint32_t reserved;    /* 0 */
    uint64_t send_cookie; /* the origin's send request (the RTS's cookie) */
    uint64_t recv_cookie; /* the target's transfer request */
    uint64_t offset;      /* in the payload */
    uint64_t bytes;
    uint64_t dest;        /* the target's address for byte offset */
} pami_rndv_write_t;

#define RNDV_WRITE_ASK  1u
#define RNDV_WRITE_DONE 2u

/* A split-read message: exactly its size, no AM data, version, type,
 * reserved 0, bytes > 0, neither offset + bytes nor dest + bytes
 * overflows, dest not 0, the result 0 in an ASK and a known code in a
 * DONE. */
pami_wire_check_t pami_rndv_write_decode(const void *buf, size_t len,
                                         size_t data_len,
                                         pami_rndv_write_t *out);

#endif
