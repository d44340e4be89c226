/*
 * SVD wire format (docs/protocols/svd.md): one dispatch id per packet
 * type, a fixed-size header per type in host byte order, beginning with
 * the wire version and the type. The structs are laid out without
 * padding; the static asserts keep them at the documented sizes.
 */
#ifndef SVD_WIRE_H
#define SVD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "pami.h"

#define SVD_WIRE_VERSION 1

/* Packet types; the dispatch id of a type is the protocol's base + type. */
enum {
    SVD_PKT_FETCH   = 0, /* user -> owner: send me the entry */
    SVD_PKT_ENTRY   = 1, /* owner -> user: the entry (or not found) */
    SVD_PKT_RELEASE = 2, /* user -> owner: I stop using the key */
    SVD_PKT_NOTIFY  = 3, /* parent -> user: a new version */
    SVD_PKT_ACK     = 4, /* user -> parent: my subtree has it */
    SVD_PKT_CHUNK   = 5, /* chain predecessor -> successor: bytes ready */
    SVD_PKT_FETCHED = 6, /* user -> owner: got the ENTRY's record */
    SVD_PKT_COUNT   = 7
};

/* ENTRY status, ACK status */
enum { SVD_ST_OK = 0, SVD_ST_NOT_FOUND = 1, SVD_ST_FAILED = 2 };
/* ENTRY flags */
enum { SVD_ENTRY_BY_GET = 1 };
/* CHUNK flags */
enum { SVD_CHUNK_ABORT = 1 };
/* record flags */
enum { SVD_REC_HAS_MR = 1 };

typedef struct {
    uint8_t  version, type;
    uint16_t reserved;
    uint32_t req;          /* echoed in ENTRY */
    uint64_t key;
} svd_fetch_hdr_t;

typedef struct {
    uint8_t          version, type, status;
    uint8_t          flags;         /* SVD_ENTRY_BY_GET */
    uint32_t         req;
    uint64_t         key;
    uint64_t         entry_version;
    uint64_t         rec_len;       /* 0 unless status OK */
    pami_memregion_t src;           /* BY_GET: the owner's region of it */
} svd_entry_hdr_t;

typedef struct {
    uint8_t  version, type;
    uint16_t reserved;
    uint32_t req;                   /* the FETCH's */
    uint64_t key;
    uint64_t entry_version;
} svd_fetched_hdr_t;

typedef struct {
    uint8_t  version, type;
    uint16_t reserved;
    uint32_t reserved2;
    uint64_t key;
} svd_release_hdr_t;

typedef struct {
    uint8_t          version, type;
    uint8_t          htype;    /* pami_svd_header_t, INLINE or GET */
    uint8_t          sched;    /* pami_svd_schedule_t, not AUTO */
    uint16_t         fanout;   /* tree only, >= 1 */
    uint16_t         reserved;
    uint64_t         key;
    uint32_t         owner;
    uint32_t         ntasks;   /* users of this update */
    uint64_t         entry_version;
    uint64_t         rec_len;  /* record bytes */
    uint64_t         chunk;    /* pipeline chunk bytes */
    uint64_t         ready;    /* GET: record bytes the source has */
    uint64_t         reserved2;
    pami_memregion_t src;      /* GET: the sender's region of the record */
} svd_notify_hdr_t;

typedef struct {
    uint8_t  version, type, status, reserved;
    uint32_t owner;
    uint64_t key;
    uint64_t entry_version;
} svd_ack_hdr_t;

typedef struct {
    uint8_t  version, type, flags, reserved;
    uint32_t owner;
    uint64_t key;
    uint64_t entry_version;
    uint64_t ready;        /* record bytes the sender has, from 0 */
} svd_chunk_hdr_t;

/* The record: what an update (or a fetch) carries, then data_size bytes
 * of the runtime's data. */
typedef struct {
    uint8_t          version, flags;
    uint16_t         reserved;
    uint32_t         reserved2;
    uint64_t         addr;
    uint64_t         size;
    uint64_t         entry_version;
    uint64_t         data_size;
    pami_memregion_t mr;
} svd_record_hdr_t;

_Static_assert(sizeof(svd_fetch_hdr_t) == 16, "FETCH header layout");
_Static_assert(offsetof(svd_entry_hdr_t, src) == 32, "ENTRY header layout");
_Static_assert(sizeof(svd_entry_hdr_t) == 32 + PAMI_MEMREGION_SIZE,
               "ENTRY header layout");
_Static_assert(sizeof(svd_fetched_hdr_t) == 24, "FETCHED header layout");
_Static_assert(sizeof(svd_release_hdr_t) == 16, "RELEASE header layout");
_Static_assert(offsetof(svd_notify_hdr_t, src) == 64, "NOTIFY header layout");
_Static_assert(sizeof(svd_notify_hdr_t) == 64 + PAMI_MEMREGION_SIZE,
               "NOTIFY header layout");
_Static_assert(sizeof(svd_ack_hdr_t) == 24, "ACK header layout");
_Static_assert(sizeof(svd_chunk_hdr_t) == 32, "CHUNK header layout");
_Static_assert(offsetof(svd_record_hdr_t, mr) == 40, "record layout");
_Static_assert(sizeof(svd_record_hdr_t) == 40 + PAMI_MEMREGION_SIZE,
               "record layout");

#define SVD_REC_HDR ((size_t)sizeof(svd_record_hdr_t))

#endif /* SVD_WIRE_H */
