/*
 * pami protocol SDK: how a protocol plugs into pami's dispatch table.
 *
 * A protocol is a named, const ops table. Registered on a client (the
 * built-in ones register themselves), it gets a private block of dispatch
 * ids from the reserved range and is initialised on every context of the
 * client. It sends on its own ids with pami_protocol_send_immediate and
 * pami_protocol_send (the program's pami_send* refuse ids >=
 * dispatch_max), and uses the ordinary public calls for the rest
 * (pami_rget, pami_context_post, ...); its handlers are called through
 * the same dispatch path as the program's.
 *
 * Ids are handed out in registration order, built-in protocols first
 * (sorted by name), so every task must register the same protocols in the
 * same order; pami_context_createv checks this across the job.
 */
#ifndef PAMI_PROTOCOL_H
#define PAMI_PROTOCOL_H

#include "pami.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Protocols per client, and dispatch ids per protocol. */
#define PAMI_PROTOCOL_MAX          32
#define PAMI_PROTOCOL_DISPATCH_MAX 64

/* What init receives: where it runs and which ids are its own. */
typedef struct {
    pami_client_t  client;
    pami_context_t context;
    size_t         context_offset; /* context's offset in the client */
    size_t         dispatch_base;  /* first of num_dispatch ids */
    size_t         num_dispatch;
    void          *cookie;        /* given at registration */
} pami_protocol_env_t;

/* One named counter of a protocol (packets dropped as malformed, ...). */
typedef struct {
    const char *name;
    uint64_t    value;
} pami_protocol_stat_t;

/* The version of this SDK's binary interface: the layout of
 * pami_protocol_ops_t, pami_protocol_plugin_t and pami_protocol_case_t
 * and the meaning of their fields. Growing a struct at its end keeps the
 * version (struct_size tells what a table has); anything else bumps it,
 * and pami refuses tables of another version. */
#define PAMI_PROTOCOL_ABI_VERSION 1

/* The first two fields of every ops table, written
 *   static const pami_protocol_ops_t ops = {PAMI_PROTOCOL_OPS_HEADER,
 *                                           .name = ..., ...};
 * A table that does not set them is refused (PAMI_INVAL). */
#define PAMI_PROTOCOL_OPS_HEADER                                             \
    .struct_size = sizeof(pami_protocol_ops_t),                              \
    .abi_version = PAMI_PROTOCOL_ABI_VERSION

typedef struct pami_protocol_ops {
    /* sizeof(pami_protocol_ops_t) where the table was compiled. Fields
     * past it (added by a later pami) are taken as NULL / 0, so a
     * protocol built against an older, shorter struct keeps loading. */
    uint32_t    struct_size;
    uint32_t    abi_version;  /* PAMI_PROTOCOL_ABI_VERSION */
    const char *name;         /* unique among a client's protocols */
    unsigned    version;      /* wire version, shown by pami-info */
    size_t      num_dispatch; /* 0 .. PAMI_PROTOCOL_DISPATCH_MAX */
    /* Per context, before the context first progresses: set handlers with
     * pami_protocol_dispatch_set and make state; no sends here. */
    pami_result_t (*init)(const pami_protocol_env_t *env, void **state);
    /* Per context at pami_context_destroyv, after its operations drained:
     * complete what is left (PAMI_SHUTDOWN) and free state. */
    void (*fini)(pami_context_t context, void *state);
    /* Optional: writes up to max counters, returns how many it has. */
    size_t (*stats)(void *state, pami_protocol_stat_t *out, size_t max);
    /* Optional: task was found dead; end what waits for it
     * (PAMI_PEER_FAILED). Runs from progress of context. */
    void (*peer_failed)(pami_context_t context, void *state,
                        pami_task_t task);
    /* Optional: the PAMI_* variables the protocol reads (with getenv), so
     * pami_config_var() and pami-info list them; built-in protocols only. */
    const pami_config_var_t *config;
    size_t                   num_config;
} pami_protocol_ops_t;

/* Registers ops on client; cookie reaches init. Before
 * pami_context_createv, the protocol is initialised on each context as it
 * is created; after it, on every context at once, and the program must
 * call pami_dispatch_fence before any task uses it. PAMI_INVAL for a
 * duplicate name or a bad table, PAMI_ENOMEM when ids or slots run out. */
PAMI_EXPORT
pami_result_t pami_protocol_register(pami_client_t client,
                                     const pami_protocol_ops_t *ops,
                                     void *cookie);

/* Sets (fn == NULL: clears) the handler of one of the protocol's own
 * ids, env->dispatch_base + index. Handlers of protocol ids follow the
 * same rules as pami_dispatch_fn. */
PAMI_EXPORT
pami_result_t pami_protocol_dispatch_set(const pami_protocol_env_t *env,
                                         size_t index, pami_dispatch_fn fn,
                                         void *cookie);

/* pami_send_immediate and pami_send on the protocol's own ids: the
 * same parameters, results and rules, except that params->dispatch (
 * params->send.dispatch) is an index 0 .. env->num_dispatch-1 into the
 * protocol's block, as in pami_protocol_dispatch_set, and the message
 * goes from env->context. env is the one init received, or a copy of it
 * kept in the protocol's state. PAMI_INVAL (and a log line) for an env
 * that is no protocol's block or an index outside it: a protocol cannot
 * send on the program's ids nor on another protocol's. */
PAMI_EXPORT
pami_result_t pami_protocol_send_immediate_sized(
    const pami_protocol_env_t *env, const pami_send_immediate_t *params,
    size_t params_size);
PAMI_EXPORT
pami_result_t pami_protocol_send_sized(const pami_protocol_env_t *env,
                                       const pami_send_t *params,
                                       size_t params_size);
static inline pami_result_t
pami_protocol_send_immediate(const pami_protocol_env_t *env,
                             const pami_send_immediate_t *params)
{
    return pami_protocol_send_immediate_sized(env, params, sizeof(*params));
}
static inline pami_result_t pami_protocol_send(const pami_protocol_env_t *env,
                                               const pami_send_t *params)
{
    return pami_protocol_send_sized(env, params, sizeof(*params));
}

/* True while a handler, callback or posted work of context runs (where
 * advance and wait refuse): blocking forms check it before they start. */
PAMI_EXPORT
int pami_protocol_in_handler(pami_context_t context);

/* The state init made for ops on context, or NULL. */
PAMI_EXPORT
void *pami_protocol_state(pami_context_t context,
                          const pami_protocol_ops_t *ops);

/* Registered protocols, by index from 0 until PAMI_NOT_FOUND. */
typedef struct {
    const char *name;
    unsigned    version;
    size_t      dispatch_base;
    size_t      num_dispatch;
    int         builtin;
} pami_protocol_info_t;

PAMI_EXPORT
pami_result_t pami_protocol_query_sized(pami_client_t client, size_t index,
                                        pami_protocol_info_t *info,
                                        size_t info_size);
static inline pami_result_t pami_protocol_query(pami_client_t client,
                                                size_t index,
                                                pami_protocol_info_t *info)
{
    return pami_protocol_query_sized(client, index, info, sizeof(*info));
}

/* Counters of the protocol called name on context. *n is set to how many
 * it has (at most max are written). PAMI_NOT_FOUND for an unknown name. */
PAMI_EXPORT
pami_result_t pami_protocol_stats(pami_context_t context, const char *name,
                                  pami_protocol_stat_t *out, size_t max,
                                  size_t *n);

/* One line on stderr in pami's log format, when PAMI_LOG_LEVEL lets
 * level through; subsys names the protocol (NULL: "protocol"). A level
 * outside the enum logs as PAMI_PROTOCOL_LOG_ERROR; a NULL fmt writes a
 * warn line saying so instead. */
typedef enum {
    PAMI_PROTOCOL_LOG_ERROR = 0,
    PAMI_PROTOCOL_LOG_WARN  = 1,
    PAMI_PROTOCOL_LOG_INFO  = 2,
    PAMI_PROTOCOL_LOG_DEBUG = 3
} pami_protocol_log_level_t;

PAMI_EXPORT
void pami_protocol_log(pami_protocol_log_level_t level, const char *subsys,
                       const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The job as the objects its tasks share on a node are named: name is
 * the job id (PAMI_CLIENT_ATTR_JOB_ID, "nojob" without one) with every
 * byte outside [A-Za-z0-9._-] turned into '_' (cut to 64 bytes), so it
 * can be part of a file name; hash (64-bit FNV-1a of the whole, unaltered
 * id) tells apart two jobs whose names collide: write it into the object
 * and check it when attaching. */
typedef struct {
    char     name[65];
    uint64_t hash;
} pami_protocol_job_key_t;

PAMI_EXPORT
pami_result_t pami_protocol_job_key_sized(pami_client_t client,
                                          pami_protocol_job_key_t *key,
                                          size_t key_size);
static inline pami_result_t pami_protocol_job_key(pami_client_t client,
                                                  pami_protocol_job_key_t *key)
{
    return pami_protocol_job_key_sized(client, key, sizeof(*key));
}

/* 64-bit FNV-1a of len bytes at data, continuing from h
 * (PAMI_PROTOCOL_HASH_INIT to start): the hash pami uses for job keys,
 * its protocol signature and geometries' task lists. Not for secrets. */
#define PAMI_PROTOCOL_HASH_INIT 0xcbf29ce484222325ull
PAMI_EXPORT
uint64_t pami_protocol_hash(uint64_t h, const void *data, size_t len);

/* SipHash-2-4 of len bytes at data under a 16-byte key: a keyed MAC for
 * what a protocol must tell apart from forgeries (pami's own seal of
 * regions uses it). Keep the key secret; NULL data hashes nothing. */
#define PAMI_PROTOCOL_MAC_KEY_LEN 16
PAMI_EXPORT
uint64_t pami_protocol_mac(const uint8_t key[PAMI_PROTOCOL_MAC_KEY_LEN],
                           const void *data, size_t len);

/* A protocol's setting from the environment variable name, parsed as
 * pami parses its own (docs/config.md, "Value syntax"): a size is
 * decimal digits with an optional k, m or g (x1024...), a bool is
 * 1/y/yes/on/true or 0/n/no/off/false. Unset or empty: dflt. Set but
 * malformed, or a size outside min..max: dflt, and a warning naming the
 * variable under subsys. Read them in init (once per context). */
PAMI_EXPORT
uint64_t pami_protocol_env_size(const char *subsys, const char *name,
                                uint64_t dflt, uint64_t min, uint64_t max);
PAMI_EXPORT
int pami_protocol_env_bool(const char *subsys, const char *name, int dflt);

/* One pause in a loop that polls shared memory: the CPU's spin-wait hint
 * (x86 pause, arm yield), so the loop neither floods the memory system
 * nor starves a sibling hardware thread. */
static inline void pami_protocol_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Conformance cases a protocol's author ships with it (run by
 * pami-conformance beside its generic suite). A case runs on every task
 * of a job of min_tasks .. max_tasks tasks (max_tasks 0: no upper bound),
 * all tasks at once, each with a client that has the protocol loaded and
 * one context created. What the case gets: */
typedef struct {
    pami_client_t  client;
    pami_context_t context;
    pami_task_t    task;  /* this task, of */
    size_t         size;  /* the job's tasks */
    uint64_t       seed;  /* the runner's --seed: vary traffic by it */
} pami_protocol_case_env_t;

/* A case. run returns 0 when the case passed on this task; otherwise it
 * writes what was expected and what was seen into why (why_len bytes,
 * NUL-terminated) and returns non-zero. A case fails when it fails on any
 * task. run may send, advance and wait on env->context; it must leave no
 * operation in flight when it returns. */
typedef struct pami_protocol_case {
    const char *name;         /* unique within the plug-in: [A-Za-z0-9._-] */
    const char *description;  /* one line: the behaviour it checks */
    size_t      min_tasks;
    size_t      max_tasks;
    int (*run)(const pami_protocol_case_env_t *env, char *why,
               size_t why_len);
} pami_protocol_case_t;

/* What a plug-in (a shared object) exports: one function named
 * PAMI_PROTOCOL_PLUGIN_ENTRY, of type pami_protocol_plugin_fn, returning
 * a description that lives as long as the object is loaded:
 *
 *   static const pami_protocol_plugin_t plugin = {
 *       PAMI_PROTOCOL_PLUGIN_HEADER, .ops = &my_ops,
 *       .cases = my_cases, .num_cases = 3};
 *   PAMI_PROTOCOL_PLUGIN(plugin)
 *
 * PAMI_PROTOCOLS=a.so:b.so loads plug-ins at pami_client_create and
 * registers their protocols, in that order, after the built-in ones. */
#define PAMI_PROTOCOL_PLUGIN_ENTRY "pami_protocol_plugin"

typedef struct pami_protocol_plugin {
    uint32_t                          struct_size; /* sizeof(..._plugin_t) */
    uint32_t                          abi_version; /* PAMI_PROTOCOL_ABI_VERSION */
    const pami_protocol_ops_t        *ops;        /* the protocol */
    /* Optional: its own cases; pointers, so the case struct can grow. */
    const pami_protocol_case_t *const *cases;
    size_t                            num_cases;
} pami_protocol_plugin_t;

typedef const pami_protocol_plugin_t *(*pami_protocol_plugin_fn)(void);

#define PAMI_PROTOCOL_PLUGIN_HEADER                                          \
    .struct_size = sizeof(pami_protocol_plugin_t),                           \
    .abi_version = PAMI_PROTOCOL_ABI_VERSION

/* Defines the entry point, with default visibility so the object exports
 * it even when built with -fvisibility=hidden. */
#define PAMI_PROTOCOL_PLUGIN(desc)                                           \
    __attribute__((visibility("default")))                                   \
    const pami_protocol_plugin_t *pami_protocol_plugin(void);                \
    __attribute__((visibility("default")))                                   \
    const pami_protocol_plugin_t *pami_protocol_plugin(void)                 \
    {                                                                        \
        return &(desc);                                                      \
    }

/* The plug-in a registered protocol came from (PAMI_PROTOCOLS), by the
 * protocol's name: its description (cases and all) and the path it was
 * loaded from. PAMI_NOT_FOUND when no loaded plug-in has that name. */
PAMI_EXPORT
pami_result_t pami_protocol_plugin_query(pami_client_t client,
                                         const char *name,
                                         const pami_protocol_plugin_t **plugin,
                                         const char **path);

/* Built-in protocols (those linked into libpami) register themselves on
 * every client with this one line at file scope. */
PAMI_EXPORT
void pami_protocol_builtin(const pami_protocol_ops_t *ops);
#define PAMI_PROTOCOL_BUILTIN(ops)                                           \
    __attribute__((constructor)) static void pami_builtin_##ops(void)        \
    {                                                                        \
        pami_protocol_builtin(&(ops));                                       \
    }

#ifdef __cplusplus
}
#endif

#endif /* PAMI_PROTOCOL_H */
