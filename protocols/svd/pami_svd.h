/*
 * pami shared variable directory (SVD): a built-in protocol.
 *
 * Each context holds a directory of entries. An entry is named by
 * (owner task, 64-bit key): the owner registers it, and it describes a
 * variable of the owner (address and size in the owner's address space,
 * optionally a memregion covering it) plus up to PAMI_SVD_MAX_RECORD
 * bytes of data the runtime attaches to it. Other tasks look it up: the
 * first lookup fetches it from the owner and makes the task a *user* of
 * the key; later lookups hit the local cache. When the owner updates the
 * entry, exactly the users of that key receive a notification carrying
 * the entry's broadcast header and get the new entry (inline in the
 * notification, or by an active GET from the owner or from another user),
 * then their cache holds the new version and a change callback runs.
 *
 * The directory of context k talks only to the directories of the other
 * tasks' contexts k. Wire format: docs/protocols/svd.md.
 *
 * Callbacks run from pami_context_advance/wait of the context, never from
 * inside the call that started the operation. With PAMI_ASYNC_PROGRESS=1
 * hold the context lock around these calls. The _wait forms may not be
 * called from a handler, callback or posted work of the same context
 * when they would have to wait: PAMI_IN_HANDLER, and nothing is done (a
 * lookup_wait of an own or cached entry still answers); the non-blocking
 * ones may. pami_svd_update_wait calls its params' done_fn itself, just
 * before it returns. Results: docs/api.md.
 */
#ifndef PAMI_SVD_H
#define PAMI_SVD_H

#include "pami.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t pami_svd_key_t;

/* How an update's record reaches the users. */
typedef enum {
    PAMI_SVD_HEADER_AUTO   = 0, /* by the rule in docs/protocols/svd.md */
    PAMI_SVD_HEADER_INLINE = 1, /* inside the notification */
    PAMI_SVD_HEADER_GET    = 2  /* users get it (active GET) */
} pami_svd_header_t;

/* Which way it travels among the users. */
typedef enum {
    PAMI_SVD_SCHEDULE_AUTO     = 0,
    PAMI_SVD_SCHEDULE_DIRECT   = 1, /* owner to each user */
    PAMI_SVD_SCHEDULE_TREE     = 2, /* a tree through the users */
    PAMI_SVD_SCHEDULE_PIPELINE = 3  /* chunks along a chain of users */
} pami_svd_schedule_t;

/* One entry as a lookup sees it: always one complete version. */
typedef struct {
    pami_task_t      owner;
    pami_svd_key_t   key;
    uint64_t         version;   /* 1 at register, +1 per update */
    uint64_t         addr;      /* in the owner's address space */
    uint64_t         size;
    int              has_mr;
    pami_memregion_t mr;        /* the owner's region, when has_mr */
    /* The runtime's data of this version. Owned by the directory: valid
     * during a callback, and after a blocking call until the context
     * next progresses. */
    const void      *data;
    size_t           data_size;
} pami_svd_entry_t;

/* Lookup completion: result PAMI_SUCCESS with entry (valid during the
 * call), or PAMI_NOT_FOUND (the owner has no such key), PAMI_PEER_FAILED
 * (the owner died), PAMI_SHUTDOWN (the context is being destroyed); entry
 * is NULL then. */
typedef void (*pami_svd_lookup_fn)(pami_context_t context, void *cookie,
                                   pami_result_t result,
                                   const pami_svd_entry_t *entry);

/* An update of a key this task uses arrived: entry is the new version
 * (valid during the call); a later lookup returns it too. */
typedef void (*pami_svd_change_fn)(pami_context_t context, void *cookie,
                                   const pami_svd_entry_t *entry);

/* ---- owner side ---- */

enum {
    PAMI_SVD_REGISTER_MR       = 1u << 0, /* mr */
    PAMI_SVD_REGISTER_DATA     = 1u << 1, /* data, data_size */
    PAMI_SVD_REGISTER_HEADER   = 1u << 2, /* header: forced for the entry */
    PAMI_SVD_REGISTER_SCHEDULE = 1u << 3  /* schedule: forced for the entry */
};

typedef struct {
    uint64_t                field_mask;
    pami_svd_key_t          key;       /* required, new on this context */
    void                   *addr;      /* required */
    size_t                  size;      /* required */
    const pami_memregion_t *mr;        /* copied */
    const void             *data;      /* copied */
    size_t                  data_size;
    pami_svd_header_t       header;
    pami_svd_schedule_t     schedule;
} pami_svd_register_t;

/* Adds an entry owned by this task (version 1). PAMI_INVAL for a key
 * registered already or bad arguments. Entries live until the context is
 * destroyed. */
PAMI_EXPORT
pami_result_t pami_svd_register(pami_context_t context,
                                const pami_svd_register_t *params);

enum {
    PAMI_SVD_UPDATE_ADDR     = 1u << 0, /* addr and size */
    PAMI_SVD_UPDATE_MR       = 1u << 1, /* mr (NULL: the entry has none) */
    PAMI_SVD_UPDATE_DATA     = 1u << 2, /* data, data_size */
    PAMI_SVD_UPDATE_HEADER   = 1u << 3, /* header for this update only */
    PAMI_SVD_UPDATE_SCHEDULE = 1u << 4, /* schedule for this update only */
    PAMI_SVD_UPDATE_TIMEOUT  = 1u << 5  /* timeout_ms, _wait form only */
};

typedef struct {
    uint64_t                field_mask;
    pami_svd_key_t          key;       /* required, owned by this task */
    void                   *addr;
    size_t                  size;
    const pami_memregion_t *mr;
    const void             *data;      /* copied before return */
    size_t                  data_size;
    pami_svd_header_t       header;
    pami_svd_schedule_t     schedule;
    /* Runs once every user of the key has the new version
     * (PAMI_SUCCESS), or with PAMI_PEER_FAILED when a user died or could
     * not get it, PAMI_SHUTDOWN at destroy. May be NULL. */
    pami_event_fn           done_fn;
    void                   *cookie;
    int                     timeout_ms; /* < 0: forever (the default) */
} pami_svd_update_t;

/* Makes the next version of the entry (fields not in field_mask keep
 * their value) and sends it to the tasks using the key at this moment.
 * Updates of one key may overlap; users end with the newest.
 * PAMI_NOT_FOUND for a key this task does not own. */
PAMI_EXPORT
pami_result_t pami_svd_update(pami_context_t context,
                              const pami_svd_update_t *params);

/* Blocking form: returns the update's result, or PAMI_TIMEOUT (the
 * update goes on; its result is then not reported). */
PAMI_EXPORT
pami_result_t pami_svd_update_wait(pami_context_t context,
                                   const pami_svd_update_t *params);

/* What the owner knows of one of its entries. */
typedef struct {
    uint64_t            version;
    size_t              num_users;
    size_t              record_size; /* bytes an update carries */
    /* The stored broadcast header: what the next update will use. */
    pami_svd_header_t   header;
    pami_svd_schedule_t schedule;
    size_t              updates_in_flight;
} pami_svd_info_t;

/* users (may be NULL) receives up to max_users of the tasks using the
 * key, ascending. PAMI_NOT_FOUND for a key this task does not own. */
PAMI_EXPORT
pami_result_t pami_svd_query_sized(pami_context_t context, pami_svd_key_t key,
                                   pami_svd_info_t *info, pami_task_t *users,
                                   size_t max_users, size_t info_size);
/* The program's sizeof goes along, so the struct can grow (docs/abi.md,
 * "Structs that grow"); the same for pami_svd_lookup_wait's entry. */
static inline pami_result_t pami_svd_query(pami_context_t context,
                                           pami_svd_key_t key,
                                           pami_svd_info_t *info,
                                           pami_task_t *users,
                                           size_t max_users)
{
    return pami_svd_query_sized(context, key, info, users, max_users,
                                sizeof(*info));
}

/* ---- user side ---- */

enum {
    PAMI_SVD_LOOKUP_CHANGE  = 1u << 0, /* change_fn, change_cookie */
    PAMI_SVD_LOOKUP_TIMEOUT = 1u << 1  /* timeout_ms, _wait form only */
};

typedef struct {
    uint64_t           field_mask;
    pami_task_t        owner;       /* required */
    pami_svd_key_t     key;         /* required */
    pami_svd_lookup_fn done_fn;     /* required by pami_svd_lookup */
    void              *cookie;
    /* For updates of this key (instead of the directory's change_fn). */
    pami_svd_change_fn change_fn;
    void              *change_cookie;
    int                timeout_ms;  /* < 0: forever (the default) */
} pami_svd_lookup_t;

/* Looks the entry up: from the cache when this task uses the key
 * already, else fetched from the owner, which records this task as a
 * user. An entry of this task's own is answered from the directory (no
 * user is recorded). done_fn runs from advance/wait in every case. */
PAMI_EXPORT
pami_result_t pami_svd_lookup(pami_context_t context,
                              const pami_svd_lookup_t *params);

/* Blocking form: fills *entry (its data as pami_svd_entry_t says).
 * PAMI_TIMEOUT when timeout_ms passed first; the fetch goes on and the
 * task stays a user. */
PAMI_EXPORT
pami_result_t pami_svd_lookup_wait_sized(pami_context_t context,
                                         const pami_svd_lookup_t *params,
                                         pami_svd_entry_t *entry,
                                         size_t entry_size);
static inline pami_result_t pami_svd_lookup_wait(pami_context_t context,
                                                 const pami_svd_lookup_t *params,
                                                 pami_svd_entry_t *entry)
{
    return pami_svd_lookup_wait_sized(context, params, entry, sizeof(*entry));
}

/* Stops using (owner, key): the cached entry is dropped and the owner
 * told, so updates it starts after the message arrived skip this task
 * (messages from one task to another arrive in order). Notifications
 * already under way are still forwarded and acknowledged, without
 * callbacks. PAMI_NOT_FOUND when the task does not use the key,
 * PAMI_EAGAIN while its first lookup is still in flight. */
PAMI_EXPORT
pami_result_t pami_svd_release(pami_context_t context, pami_task_t owner,
                               pami_svd_key_t key);

/* The change callback for keys whose lookup gave none (fn NULL: none). */
PAMI_EXPORT
pami_result_t pami_svd_set_change_fn(pami_context_t context,
                                     pami_svd_change_fn fn, void *cookie);

#ifdef __cplusplus
}
#endif

#endif /* PAMI_SVD_H */
