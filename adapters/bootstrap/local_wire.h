/*
 * Wire format between pamirun (server) and the local bootstrap (client),
 * spoken over the Unix stream socket named by PAMI_BOOTSTRAP_SOCKET.
 * Both ends run on the same machine from the same build, so fields are in
 * host byte order; magic and version still catch a stale or foreign peer.
 *
 * Every message is one fixed header followed by exactly hdr.len payload
 * bytes. The client is synchronous: it never has more than one request
 * outstanding, which gives the server natural flow control.
 *
 *   client -> server   HELLO    rank, size; len 0
 *   server -> client   WELCOME  status (0 or -errno), size; len 0
 *   client -> server   CONTRIB  rank, seq, len = this rank's bytes
 *   server -> client   RESULT   seq, status; len = size * contrib len
 *                               (0 when status < 0)
 *   client -> server   BYE      rank; len 0; the client then closes
 *
 * Full description in docs/pamirun.md.
 */
#ifndef PAMI_ADAPTERS_BOOTSTRAP_LOCAL_WIRE_H
#define PAMI_ADAPTERS_BOOTSTRAP_LOCAL_WIRE_H

#include <stdint.h>

#define LOCAL_WIRE_MAGIC   0x494d4150u /* "PAMI" in memory on little endian */
#define LOCAL_WIRE_VERSION 1

/* Bounds that both ends enforce, so a corrupt length can never make either
 * side allocate or read without limit. */
#define LOCAL_WIRE_MAX_CONTRIB ((uint64_t)256 << 20) /* one rank's bytes */
#define LOCAL_WIRE_MAX_RESULT  ((uint64_t)1 << 30)   /* size * len */
#define LOCAL_WIRE_MAX_SIZE    4096u                 /* ranks per job */

enum local_wire_type {
    LOCAL_MSG_HELLO   = 1,
    LOCAL_MSG_WELCOME = 2,
    LOCAL_MSG_CONTRIB = 3,
    LOCAL_MSG_RESULT  = 4,
    LOCAL_MSG_BYE     = 5
};

typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t type;     /* enum local_wire_type */
    uint32_t rank;     /* client->server: sender; server->client: addressee */
    uint32_t size;     /* the job size as the sender knows it */
    uint64_t seq;      /* collective number, from 0; 0 for HELLO/BYE */
    int32_t  status;   /* server->client: 0 or a negative errno */
    uint32_t reserved; /* 0 */
    uint64_t len;      /* payload bytes that follow */
} local_wire_hdr_t;

_Static_assert(sizeof(local_wire_hdr_t) == 40, "wire header has no padding");

static inline void local_wire_hdr_init(local_wire_hdr_t *hdr, uint16_t type)
{
    *hdr = (local_wire_hdr_t){.magic = LOCAL_WIRE_MAGIC,
                              .version = LOCAL_WIRE_VERSION,
                              .type = type};
}

/* The checks common to every received header; the caller checks the
 * fields that depend on the message type. */
static inline int local_wire_hdr_valid(const local_wire_hdr_t *hdr)
{
    return hdr->magic == LOCAL_WIRE_MAGIC &&
           hdr->version == LOCAL_WIRE_VERSION && hdr->reserved == 0;
}

#endif
