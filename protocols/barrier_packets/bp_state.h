/*
 * Barrier control packets: per-context state shared by the files of the
 * protocol (groups, requests, the queue of packets waiting for room).
 */
#ifndef BP_STATE_H
#define BP_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pami.h"
#include "pami_protocol.h"

#include "bp_wire.h"

#define BP_NAME "barrier_packets"

/* Groups made from packets of groups this task has not entered yet; more
 * than this many at once is taken as garbage on the wire. */
#define BP_FOREIGN_MAX 1024

/* The counters ops->stats reports, in this order. */
#define BP_FOREACH_STAT(X)                                                   \
    X(packets_in)      /* accepted and counted */                          \
    X(packets_out)     /* handed to pami_protocol_send_immediate */                 \
    X(barriers)        /* completed with PAMI_SUCCESS */                   \
    X(failed)          /* completed with another result */                 \
    X(send_retries)    /* packets queued after PAMI_EAGAIN */              \
    X(groups)          /* group states made (entered or from packets) */  \
    X(dropped_short)                                                       \
    X(dropped_long)                                                        \
    X(dropped_version)                                                     \
    X(dropped_type)                                                        \
    X(dropped_field)   /* reserved bits, size, origin out of range */      \
    X(dropped_size)    /* a known group id with another size */            \
    X(dropped_epoch)   /* outside the window of two epochs */              \
    X(dropped_excess)  /* more packets than participants for an epoch */   \
    X(dropped_groups)  /* BP_FOREIGN_MAX groups from packets reached */

enum {
#define BP_STAT_ENUM_(name) BP_STAT_##name,
    BP_FOREACH_STAT(BP_STAT_ENUM_)
#undef BP_STAT_ENUM_
    BP_STAT_COUNT
};

/* One barrier the program started and whose done_fn has not run. */
typedef struct bp_req {
    struct bp_req *next;
    pami_event_fn  fn;
    void          *cookie;
    pami_result_t  result;
} bp_req_t;

typedef struct bp_state bp_state_t;

/* A set of participants on this context. Made when this task enters it,
 * or earlier, by the first packet that names it (then only id and size
 * are known until the task enters). */
typedef struct bp_group {
    struct bp_group *next;    /* hash chain */
    bp_state_t      *st;
    uint64_t         id;
    uint32_t         size;
    bool             known;   /* entered: members and peers are set */
    bool             world;   /* every task: members is NULL */
    uint32_t        *members; /* sorted */
    pami_endpoint_t *peers;   /* size - 1, in sending order */
    /* Epoch of the oldest barrier not finished here; active once its
     * packets went out. counter[e & 1] is the barrier counter of epoch e:
     * + (size - 1) on entry, - 1 per packet, done at BP_EXIT_VALUE. */
    uint32_t         cur;
    bool             active;
    int32_t          counter[2];
    pami_result_t    failed;  /* PAMI_SUCCESS while usable */
    bp_req_t        *wait_head, **wait_tail; /* head is epoch cur */
    bp_req_t        *done_head, **done_tail; /* done_fn still to run */
    bool             delivering;
    bool             posted;
    pami_work_t      work;
} bp_group_t;

#define BP_EXIT_VALUE 0

/* A packet pami_send_immediate had no room for, kept in order. */
typedef struct {
    pami_endpoint_t dest;
    bp_group_t     *group;
    bp_packet_t     pkt;
} bp_out_t;

struct bp_state {
    pami_context_t ctx;
    pami_client_t  client;
    pami_protocol_env_t env; /* from init: sends on its id 0 */
    uint32_t       me, ntasks, offset;
    bp_group_t    *world;
    bp_group_t   **buckets; /* chained hash table by group id */
    size_t         nbuckets, ngroups, nforeign;
    bp_req_t      *free_reqs;
    uint8_t       *mark;    /* ntasks bits of scratch, kept clear */
    uint8_t       *dead;    /* ntasks bits: tasks reported failed */
    uint32_t       ndead;
    bp_out_t      *outq;    /* ring */
    size_t         out_head, out_len, out_cap;
    bool           out_posted;
    pami_work_t    out_work;
    bool           closing;
    uint64_t       stats[BP_STAT_COUNT];
};

static inline bool bp_bit(const uint8_t *bits, uint32_t i)
{
    return (bits[i >> 3] >> (i & 7)) & 1;
}

static inline void bp_bit_set(uint8_t *bits, uint32_t i)
{
    bits[i >> 3] |= (uint8_t)(1u << (i & 7));
}

static inline void bp_bit_clear(uint8_t *bits, uint32_t i)
{
    bits[i >> 3] &= (uint8_t)~(1u << (i & 7));
}

#define bp_log(level, ...)                                                   \
    pami_protocol_log(PAMI_PROTOCOL_LOG_##level, BP_NAME, __VA_ARGS__)

/* bp_groups.c: the table of groups. */
bp_group_t   *bp_group_find(bp_state_t *st, uint64_t id);
bp_group_t   *bp_group_new(bp_state_t *st, uint64_t id, uint32_t size);
pami_result_t bp_group_enter(bp_group_t *g, const pami_task_t *tasks);
bool          bp_group_has(const bp_group_t *g, uint32_t task);
void          bp_groups_free(bp_state_t *st);

/* bp_barrier.c: the counter, requests and their completion. */
void bp_advance(bp_group_t *g);
void bp_fail(bp_group_t *g, pami_result_t result);
void bp_deliver(bp_group_t *g);
void bp_post_delivery(bp_group_t *g);
/* Counts a packet of epoch for g; 0, or the BP_STAT_dropped_* it was
 * refused as. */
int  bp_count(bp_group_t *g, uint32_t epoch);

/* bp_send.c: sends that never lose a packet. */
void bp_send(bp_state_t *st, bp_group_t *g, pami_endpoint_t dest,
             const bp_packet_t *pkt);

/* bp_recv.c: the handler. */
void bp_on_packet(pami_context_t ctx, void *cookie, const void *header,
                  size_t header_size, const void *data, size_t data_size,
                  pami_endpoint_t origin, pami_recv_t *recv);

#endif /* BP_STATE_H */
