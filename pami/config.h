/*
 * PAMI_* environment variables: one list, from which the parser, the
 * pami_config_var() table (pami-info, docs/config.md) and the defaults are
 * all generated.
 */
#ifndef PAMI_CONFIG_H
#define PAMI_CONFIG_H

#include <stddef.h>

#include "pami.h"

/* X(field, NAME, type, default, description); type is bool, size, int,
 * string, list (a string that may be empty) or loglevel. */
#define PAMI_FOREACH_CONFIG(X)                                                 \
    X(log_level, "PAMI_LOG_LEVEL", loglevel, "warn",                         \
      "log verbosity: error, warn, info, debug or trace")                    \
    X(bootstrap, "PAMI_BOOTSTRAP", string, "auto",                           \
      "how tasks find each other: auto, local (pamirun), pmix or oob")       \
    X(async_progress, "PAMI_ASYNC_PROGRESS", bool, "0",                      \
      "1 starts a progress thread per client that advances every context")  \
    X(wait_spin, "PAMI_WAIT_SPIN", size, "200",                              \
      "polls pami_context_wait makes before it sleeps on the event fd")      \
    X(immediate_max, "PAMI_IMMEDIATE_MAX", size, "1024",                     \
      "largest header + data accepted by pami_send_immediate")               \
    X(rndv_threshold, "PAMI_RNDV_THRESHOLD", size, "65536",                  \
      "payload size from which pami_send hands the data over by rendezvous")\
    X(peer_errors, "PAMI_PEER_ERRORS", bool, "1",                            \
      "watch every other task (a byte probe on this node, a TCP endpoint " \
      "elsewhere) so a dead task fails its operations with PAMI_PEER_FAILED")                    \
    X(shutdown_timeout_ms, "PAMI_SHUTDOWN_TIMEOUT", size, "10000",           \
      "milliseconds createv waits for all tasks to connect, and destroy "   \
      "for peers and pending operations; at most 2147483647")               \
    X(peer_timeout_ms, "PAMI_PEER_TIMEOUT", size, "10000",                   \
      "milliseconds a task of this node may stay stopped (SIGSTOP, job "    \
      "control; not a debugger's stop) before it counts as failed; 0: never" \
      " (needs PAMI_PEER_ERRORS); at most 2147483647")                       \
    X(rma_owner, "PAMI_RMA_VIA_OWNER", bool, "0",                            \
      "1 sends every put, get and rmw through its owner's checked path, "   \
      "as over TCP, instead of CMA on this node or RDMA")                   \
    X(cma_batch, "PAMI_CMA_BATCH", size, "16384",                           \
      "largest put or get to a task of this node (by CMA) that waits for "  \
      "the next advance to move with others in one kernel call; 0: each "  \
      "moves during its call")                                              \
    X(rma_put_msg, "PAMI_RMA_PUT_MSG", size, "1024",                        \
      "largest put to another task of this node on a region over its "     \
      "own memory that goes as a message its owner applies in its "        \
      "progress; unanswered after 200 us, the caller takes it back and "    \
      "copies it by CMA; 0: every such put by CMA")                        \
    X(rma_get_msg, "PAMI_RMA_GET_MSG", size, "0",                           \
      "largest get from another task of this node on a region over its "   \
      "own memory that goes as a message its owner answers with the data "  \
      "in its progress; unanswered after 200 us, the caller takes it back " \
      "and reads it by CMA; 0 (the default: faster than CMA in one "       \
      "state of this VM, slower in the other): every such get by CMA")     \
    X(rma_gather, "PAMI_RMA_GATHER", bool, "1",                              \
      "1: puts of up to 4 KiB and gets through the owner wait for the "     \
      "next progress and leave to one owner in one message, and the "       \
      "owner's answers to gets of one poll in one; 0: each alone")          \
    X(send_gather, "PAMI_SEND_GATHER", size, "16384",                       \
      "largest eager send (user header + data) to a task reached by UCX "   \
      "(another node, or PAMI_SHM_FASTPATH=0) that, when it follows "       \
      "another send to that endpoint since the last progress, waits for "   \
      "the next progress and leaves with the others in one message; 0: "   \
      "each alone")                                                         \
    X(cma_split, "PAMI_CMA_SPLIT", size, "2097152",                          \
      "smallest put or get to another task of this node (by CMA) whose "    \
      "upper half the owner is offered to copy while the caller copies "    \
      "the lower; 0: never")                                                 \
    X(rma_owner_piece, "PAMI_RMA_OWNER_PIECE", size, "262144",               \
      "a put or get through the owner longer than this leaves in pieces "   \
      "of this many bytes, all sent at once, each answered alone; 0: one "  \
      "message")                                                            \
    X(rndv_via_origin, "PAMI_RNDV_VIA_ORIGIN", bool, "0",                    \
      "1 has the origin serve every large pami_send in chunk messages, "    \
      "as over TCP, instead of CMA on this node or a UCX get over RDMA")    \
    X(shm_fastpath, "PAMI_SHM_FASTPATH", bool, "1",                          \
      "1 sends active messages between endpoints of one node through "      \
      "shared-memory queues (docs/protocols/shm-queue.md); 0: by UCX alone")\
    X(shm_queue_lines, "PAMI_SHM_QUEUE_LINES", size, "256",                  \
      "64-byte lines of each shared-memory queue a context receives on "     \
      "(a power of two, 64..65536)")                                                            \
    X(shm_entry_max, "PAMI_SHM_ENTRY_MAX", size, "2032",                     \
      "bytes of a message one queue entry carries whole (16..65520, at "   \
      "most half the queue); longer ones go in several entries")           \
    X(shm_queue_grow, "PAMI_SHM_QUEUE_GROW", size, "8192",                   \
      "64-byte lines a queue grows to when its sender streams (a message " \
      "longer than an entry, or no room for 1/16 of the start lap); "      \
      "entries up to a quarter of it, "                                     \
      "at most 65520 bytes (a power of two, PAMI_SHM_QUEUE_LINES..65536)")  \
    X(shm_read_min, "PAMI_SHM_READ_MIN", size, "8192",                      \
      "data bytes from which a pami_send to a node peer's queue carries "   \
      "a reference the receiver reads with process_vm_readv instead of "   \
      "the data (up to 128 KiB); 0: never")                                 \
    X(shm_membarrier, "PAMI_SHM_MEMBARRIER", bool, "1",                      \
      "1: a task about to sleep calls membarrier(GLOBAL_EXPEDITED), so "    \
      "its queues' senders need no full fence per message; 0 or a kernel " \
      "without it: full fences on both sides")                              \
    X(protocols, "PAMI_PROTOCOLS", list, "",                                 \
      "protocol plug-ins (shared objects) pami_client_create loads and "    \
      "registers, in order, separated by ':'")

typedef struct {
    int    log_level;
    char   bootstrap[16];
    int    async_progress;
    size_t wait_spin;
    size_t immediate_max;
    size_t rndv_threshold;
    int    peer_errors;
    size_t shutdown_timeout_ms;
    size_t peer_timeout_ms;
    int    rma_owner;
    size_t cma_batch;
    size_t rma_put_msg;
    size_t rma_get_msg;
    int    rma_gather;
    size_t send_gather;
    size_t cma_split;
    size_t rma_owner_piece;
    int    rndv_via_origin;
    int    shm_fastpath;
    size_t shm_queue_lines;
    size_t shm_entry_max;
    size_t shm_read_min;
    size_t shm_queue_grow;
    int    shm_membarrier;
    char   protocols[4096];
} pami_config_t;

/* Fills cfg from defaults and the environment. Returns 0, or -1 after
 * logging which variable is malformed (its default is kept). */
int pami_config_load(pami_config_t *cfg);

/* Parses one value of the given kind into out; 0 on success. Exposed for
 * unit tests. */
int pami_config_parse_size(const char *text, size_t *out);
int pami_config_parse_bool(const char *text, int *out);

/* The variables built-in protocols declare, listed after the core's
 * (protocol.c); PAMI_NOT_FOUND past the last. */
pami_result_t pami_protocols_config_var(unsigned index,
                                        pami_config_var_t *var);

#endif
