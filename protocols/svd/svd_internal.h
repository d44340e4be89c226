/*
 * SVD internals shared by its files: the per-context state, the owner's
 * entries, the user's cache, and the broadcast of one update version
 * (svd_bcast_t), which is the same object at the owner (the root) and at
 * each user it passes through.
 */
#ifndef SVD_INTERNAL_H
#define SVD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pami.h"
#include "pami_protocol.h"
#include "pami_svd.h"
#include "svd_wire.h"

/* Nothing below leaves libpami. */
#pragma GCC visibility push(hidden)

#define SVD_LOG "svd"

/* sizeof a struct T that ended at field f: the size a program built
 * before the fields after f existed passes to a *_sized call. */
#define SVD_PREFIX(T, f)                                                     \
    ((offsetof(T, f) + sizeof(((T *)0)->f) + _Alignof(T) - 1) /              \
     _Alignof(T) * _Alignof(T))
#define SVD_HASH_BUCKETS 256
/* Gets in flight per broadcast at a user (pipeline chunks). */
#define SVD_GET_DEPTH 4

/* Counters shown by pami_protocol_stats("svd"). */
#define SVD_FOREACH_STAT(X)                                                  \
    X(updates)           /* pami_svd_update calls */                        \
    X(updates_no_users)  /* of which had nobody to tell */                  \
    X(hdr_inline)        /* updates sent with header type INLINE */         \
    X(hdr_get)           /* ... GET */                                      \
    X(sched_direct)      /* updates sent with schedule DIRECT */            \
    X(sched_tree)                                                           \
    X(sched_pipeline)                                                       \
    X(notify_sent)       /* NOTIFY packets sent (owner and forwarders) */   \
    X(notify_received)                                                      \
    X(notify_unwanted)   /* received for a key this task does not use */    \
    X(commits)           /* update versions entered in the cache */         \
    X(fetch_sent)                                                           \
    X(fetch_served)                                                         \
    X(fetch_not_found)                                                      \
    X(cache_hits)                                                           \
    X(releases)                                                             \
    X(acks_received)                                                        \
    X(chunks_sent)                                                          \
    X(gets)              /* active GETs issued */                           \
    X(drop_short)        /* malformed packets dropped: header too short */  \
    X(drop_long)         /* header too long */                              \
    X(drop_version)      /* wrong wire version */                           \
    X(drop_type)         /* unknown type, or not the id's type */           \
    X(drop_size)         /* payload or size field out of range */           \
    X(drop_bad)          /* inconsistent content (tasks, region, record) */ \
    X(drop_stale)        /* for nothing pending here (late or duplicate) */ \
    X(drop_forged)       /* NOTIFY whose tag is not ours: not the owner's */ \
    X(peer_failed_ops)   /* operations ended by a dead task */

enum {
#define SVD_STAT_ENUM_(n) SVD_STAT_##n,
    SVD_FOREACH_STAT(SVD_STAT_ENUM_)
#undef SVD_STAT_ENUM_
    SVD_STAT_COUNT
};

typedef struct {
    size_t inline_max;   /* records up to this travel inline */
    size_t direct_users; /* up to this many users: DIRECT */
    size_t tree_users;   /* more than this many users: at least TREE */
    size_t tree_min;     /* records from this size: TREE */
    size_t pipeline_min; /* records from this size: PIPELINE */
    size_t fanout;       /* tree fanout */
    size_t chunk;        /* pipeline chunk */
    size_t max_record;   /* larger records are refused / dropped */
} svd_config_t;

typedef struct svd_state svd_state_t;

/* One version's record, shared by the cache, updates and sends. */
typedef struct svd_blob {
    svd_state_t *st;
    unsigned     refs;
    size_t       len;
    uint8_t      bytes[];
} svd_blob_t;

/* An entry this task owns. */
typedef struct svd_owned {
    struct svd_owned *next;
    pami_svd_key_t    key;
    uint64_t          version;
    svd_blob_t       *rec;
    pami_task_t      *users;   /* ascending */
    uint8_t         (*secrets)[SVD_SECRET_LEN]; /* per user, from FETCH */
    size_t            nusers, cap;
    uint8_t           force_htype, force_sched; /* 0: by the rule */
    uint8_t           htype, sched;             /* stored broadcast header */
    size_t            in_flight;
} svd_owned_t;

/* A lookup waiting for its answer. */
typedef struct svd_waiter {
    struct svd_waiter *next;
    pami_task_t        owner;
    pami_svd_key_t     key;
    pami_svd_lookup_fn fn;
    void              *cookie;
    pami_result_t      result;
    svd_blob_t        *rec;    /* the answer, when queued with one */
    bool               hold;   /* keep rec in st->held (blocking lookup) */
} svd_waiter_t;

/* An entry of another task this task uses. */
typedef struct svd_cached {
    struct svd_cached *next;
    pami_task_t        owner;
    pami_svd_key_t     key;
    svd_blob_t        *rec;     /* committed version, NULL before */
    uint64_t           version;
    bool               fetching;
    uint32_t           req;
    svd_waiter_t      *waiters;
    pami_svd_change_fn change_fn;
    void              *change_cookie;
} svd_cached_t;

/* Owner: a large record a user gets after ENTRY, until its FETCHED. */
typedef struct svd_serve {
    struct svd_serve *next;
    pami_task_t       task;
    uint32_t          req;
    pami_svd_key_t    key;
    svd_blob_t       *rec;
    pami_memregion_t  mr;
} svd_serve_t;

/* User: the get of such a record. */
typedef struct svd_fetchget {
    struct svd_fetchget *next;
    svd_state_t         *st;
    pami_task_t          owner;
    pami_svd_key_t       key;
    uint32_t             req;
    uint64_t             version;
    svd_blob_t          *rec;
    pami_memregion_t     src;
    pami_endpoint_t      origin;
    bool                 retry;
} svd_fetchget_t;

typedef enum { SVD_DATA_PENDING, SVD_DATA_DONE, SVD_DATA_FAILED } svd_data_t;

typedef struct svd_bcast svd_bcast_t;

/* One get of a chunk; the cookie of pami_get. */
typedef struct {
    svd_bcast_t *b;
    size_t       off, len;
    bool         busy;
} svd_get_t;

/* One update version on its way: at the owner (node 0) or a user. Nodes
 * are 0 = owner, i = tasks[i - 1]; children form one contiguous range. */
struct svd_bcast {
    svd_bcast_t    *next;
    svd_state_t    *st;
    bool            is_owner;
    pami_task_t     owner;
    pami_svd_key_t  key;
    uint64_t        version;
    uint8_t         htype, sched;
    size_t          fanout, chunk, rec_len;
    pami_task_t    *tasks;
    size_t          ntasks;
    size_t          node, parent;
    size_t          child0, nchildren;
    uint8_t        *acked;         /* per child */
    size_t          pending_acks;
    bool            children_told;
    bool            failed;
    bool            reported;      /* done_fn ran or ACK went up */
    svd_data_t      data;
    /* What NOTIFY carries after the header: tasks, then (INLINE) the
     * record. */
    uint8_t        *payload;
    size_t          payload_len;
    svd_blob_t     *rec;
    pami_memregion_t mr;           /* over rec, for children to get */
    bool            has_mr;
    /* user: where the record comes from, and how far it came */
    pami_memregion_t src;
    size_t          src_ready, issued, got;
    uint8_t        *chunk_done;
    svd_get_t       gets[SVD_GET_DEPTH];
    bool            retry;         /* a get answered EAGAIN */
    /* owner */
    pami_event_fn   done_fn;
    void           *cookie;
    unsigned        refs;          /* pami callbacks still to come */
};

struct svd_state {
    pami_client_t       client;
    pami_context_t      ctx;
    size_t              offset;
    pami_task_t         me;
    size_t              size;
    pami_protocol_env_t env;       /* from init: sends on its ids */
    size_t              eager_max; /* pami_send payloads below this are
                                    * whole at the handler */
    svd_config_t        cfg;
    uint64_t            stats[SVD_STAT_COUNT];
    svd_owned_t        *owned[SVD_HASH_BUCKETS];
    svd_cached_t       *cached[SVD_HASH_BUCKETS];
    svd_bcast_t        *bcasts;
    svd_serve_t        *serves;
    svd_fetchget_t     *fetchgets;
    uint32_t            next_req;
    uint8_t             master[PAMI_PROTOCOL_MAC_KEY_LEN]; /* svd_tag.c */
    pami_svd_change_fn  change_fn;
    void               *change_cookie;
    /* Completions to report from progress, and the work that does it. */
    svd_waiter_t       *done_head, **done_tail;
    svd_bcast_t        *done_bcasts; /* owner broadcasts with no users */
    pami_work_t         work;
    bool                work_posted;
    svd_blob_t         *held;      /* data of the last blocking lookup */
    size_t              inflight;  /* pami callbacks still to come */
    bool                closed;    /* fini ran; free when inflight is 0 */
};

/* Counts and logs a packet a wire.h decoder refused (rc: SVD_DEC_*). */
void svd_drop_wire(svd_state_t *st, int rc, pami_endpoint_t origin);
/* svd_proto.c */
extern const pami_protocol_ops_t svd_ops;
svd_state_t *svd_state(pami_context_t context);
pami_endpoint_t svd_ep(svd_state_t *st, pami_task_t task);
pami_result_t svd_send_ctl(svd_state_t *st, pami_task_t task, unsigned type,
                           const void *hdr, size_t len);
void svd_schedule_work(svd_state_t *st);
void svd_op_start(svd_state_t *st);
bool svd_op_end(svd_state_t *st); /* false: the state is gone or closed */
bool svd_check_hdr(svd_state_t *st, unsigned type, const void *hdr,
                   size_t len, size_t want, pami_endpoint_t origin);
/* svd_check_hdr for a packet that carries no data, then copies the
 * header into out (want bytes). */
bool svd_decode_bare(svd_state_t *st, unsigned type, const void *hdr,
                     size_t hlen, size_t dlen, void *out, size_t want,
                     pami_endpoint_t origin);
void svd_drop(svd_state_t *st, int stat, pami_endpoint_t origin,
              const char *what);
pami_task_t svd_origin_task(pami_endpoint_t origin);

/* svd_blob.c: records and hash tables */
svd_blob_t *svd_blob_new(svd_state_t *st, size_t len);
void svd_blob_put(svd_blob_t *b);
bool svd_record_check(const svd_blob_t *rec, uint64_t version);
void svd_record_entry(const svd_blob_t *rec, pami_task_t owner,
                      pami_svd_key_t key, pami_svd_entry_t *entry);
size_t svd_hash(pami_task_t owner, pami_svd_key_t key);
svd_owned_t *svd_owned_find(svd_state_t *st, pami_svd_key_t key);
svd_cached_t *svd_cached_find(svd_state_t *st, pami_task_t owner,
                              pami_svd_key_t key);
void svd_cached_remove(svd_state_t *st, svd_cached_t *c);

/* svd_owner.c */
void svd_choose(const svd_config_t *cfg, size_t rec_len, size_t nusers,
                uint8_t *htype, uint8_t *sched);
void svd_owned_rechoose(svd_state_t *st, svd_owned_t *o);
void svd_on_fetch(pami_context_t, void *, const void *, size_t, const void *,
                  size_t, pami_endpoint_t, pami_recv_t *);
void svd_on_release(pami_context_t, void *, const void *, size_t,
                    const void *, size_t, pami_endpoint_t, pami_recv_t *);
void svd_on_fetched(pami_context_t, void *, const void *, size_t,
                    const void *, size_t, pami_endpoint_t, pami_recv_t *);
void svd_owner_peer_failed(svd_state_t *st, pami_task_t task);
void svd_serves_fini(svd_state_t *st);
pami_result_t svd_wait(svd_state_t *st, const bool *done, int timeout_ms);
void svd_owned_free_all(svd_state_t *st);

/* svd_user.c */
void svd_on_entry(pami_context_t, void *, const void *, size_t, const void *,
                  size_t, pami_endpoint_t, pami_recv_t *);
void svd_queue_done(svd_state_t *st, svd_waiter_t *w);
void svd_waiter_deliver(svd_state_t *st, svd_waiter_t *w);
void svd_user_peer_failed(svd_state_t *st, pami_task_t task);
void svd_cached_fini(svd_state_t *st);
void svd_fetchget_retry(svd_state_t *st);
void svd_fetchgets_free(svd_state_t *st);
void svd_commit(svd_state_t *st, pami_task_t owner, pami_svd_key_t key,
                svd_blob_t *rec, uint64_t version);

/* svd_tag.c: NOTIFY tags against forged versions */
bool svd_tag_init(svd_state_t *st);
void svd_user_secret(const svd_state_t *st, pami_task_t owner,
                     pami_svd_key_t key, uint8_t out[SVD_SECRET_LEN]);
uint64_t svd_notify_tag(const uint8_t secret[SVD_SECRET_LEN],
                        pami_task_t user, const svd_notify_hdr_t *h);

/* svd_bcast.c */
void svd_on_notify(pami_context_t, void *, const void *, size_t, const void *,
                   size_t, pami_endpoint_t, pami_recv_t *);
void svd_on_ack(pami_context_t, void *, const void *, size_t, const void *,
                size_t, pami_endpoint_t, pami_recv_t *);
void svd_on_chunk(pami_context_t, void *, const void *, size_t, const void *,
                  size_t, pami_endpoint_t, pami_recv_t *);
svd_bcast_t *svd_bcast_new(svd_state_t *st, size_t ntasks);
void svd_bcast_layout(svd_bcast_t *b);
void svd_bcast_tell_children(svd_bcast_t *b);
void svd_bcast_check(svd_bcast_t *b);
void svd_bcast_retry(svd_state_t *st);
void svd_bcast_done_empty(svd_state_t *st);
void svd_bcast_peer_failed(svd_state_t *st, pami_task_t task);
void svd_bcast_fini(svd_state_t *st);
void svd_bcast_free_all(svd_state_t *st);
pami_task_t svd_node_task(const svd_bcast_t *b, size_t node);

#pragma GCC visibility pop

#endif /* SVD_INTERNAL_H */
