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
#include <string.h>

#include "pami.h"
#include "pami_svd.h"

#define SVD_WIRE_VERSION 2

/* A user's secret for one (owner, key), sent once in its FETCH; the
 * owner tags each NOTIFY for that user with it (svd_notify_tag). */
#define SVD_SECRET_LEN 16
/* NOTIFY payload bytes per user: its task id and its tag. */
#define SVD_USER_BYTES (sizeof(uint32_t) + sizeof(uint64_t))

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
    uint8_t  secret[SVD_SECRET_LEN]; /* tags this user's NOTIFYs */
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

_Static_assert(sizeof(svd_fetch_hdr_t) == 32, "FETCH header layout");
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

/* What the decoders below found: OK, or the first check that failed (the
 * handlers count each under its drop_* statistic). */
enum {
    SVD_DEC_OK = 0,
    SVD_DEC_SHORT,   /* header too short */
    SVD_DEC_LONG,    /* header too long */
    SVD_DEC_VERSION, /* wrong wire version */
    SVD_DEC_TYPE,    /* not the type of the id it came on */
    SVD_DEC_BAD,     /* unknown header type, schedule or owner */
    SVD_DEC_SIZE     /* a size out of range */
};

/* The checks every packet gets: exact header size, version, type. */
static inline int svd_hdr_decode(unsigned type, const void *hdr, size_t len,
                                 size_t want)
{
    if (len < want || hdr == NULL)
        return SVD_DEC_SHORT;
    if (len > want)
        return SVD_DEC_LONG;
    const uint8_t *p = (const uint8_t *)hdr;
    if (p[0] != SVD_WIRE_VERSION)
        return SVD_DEC_VERSION;
    if (p[1] != type)
        return SVD_DEC_TYPE;
    return SVD_DEC_OK;
}

/* A NOTIFY's fields against the job (size tasks, this one me) and the
 * largest record accepted; dlen is the payload that came with it. */
static inline int svd_notify_decode(const void *hdr, size_t hlen,
                                    size_t dlen, uint32_t size, uint32_t me,
                                    uint64_t max_record,
                                    svd_notify_hdr_t *h)
{
    int rc = svd_hdr_decode(SVD_PKT_NOTIFY, hdr, hlen, sizeof(*h));
    if (rc != SVD_DEC_OK)
        return rc;
    memcpy(h, hdr, sizeof(*h));
    int inl = h->htype == PAMI_SVD_HEADER_INLINE;
    if ((!inl && h->htype != PAMI_SVD_HEADER_GET) ||
        h->sched < PAMI_SVD_SCHEDULE_DIRECT ||
        h->sched > PAMI_SVD_SCHEDULE_PIPELINE || h->fanout == 0 ||
        h->owner >= size || h->owner == me)
        return SVD_DEC_BAD;
    if (h->ntasks == 0 || h->ntasks >= size || h->rec_len < SVD_REC_HDR ||
        h->rec_len > max_record || h->ready > h->rec_len ||
        (h->sched == PAMI_SVD_SCHEDULE_PIPELINE && h->chunk < 1024) ||
        dlen != h->ntasks * SVD_USER_BYTES + (inl ? h->rec_len : 0))
        return SVD_DEC_SIZE;
    return SVD_DEC_OK;
}

#endif /* SVD_WIRE_H */
