/*
 * What pami tells the shared-memory transport (adapters/transport/shm.c)
 * about a context: whether its queues are on, their sizes from the
 * PAMI_SHM_* settings, and where a malformed queue entry is counted.
 */
#include "internal.h"

/* A queue entry that does not decode, counted as any refused packet. */
static void shm_drop(void *arg, const char *why)
{
    struct pami_context *ctx = arg;
    pami_drop_malformed(ctx, "shm", "dropped %s from a node peer's queue; "
                        "that queue is read no more", why);
}

void pami_shm_params(const pami_client_impl_t *c, size_t num_contexts,
                     tp_worker_params_t *wp)
{
    const pami_config_t *cfg = &c->config;
    size_t lines = cfg->shm_queue_lines;
    size_t entry = (cfg->shm_entry_max + SHM_ENTRY_HDR_BYTES + 63) / 64;
    if (lines < 64 || lines > 65536 || (lines & (lines - 1)) != 0) {
        pami_warn("shm", "PAMI_SHM_QUEUE_LINES=%zu is not a power of two "
                  "in 64..65536: 256 taken", lines);
        lines = 256;
    }
    if (cfg->shm_entry_max < 16 || entry > 1024 || entry > lines / 2) {
        size_t fallback = lines / 2 < 32 ? lines / 2 : 32;
        pami_warn("shm", "PAMI_SHM_ENTRY_MAX=%zu is outside 16..65520 or "
                  "more than half the queue: %zu taken", cfg->shm_entry_max,
                  fallback * 64 - 16);
        entry = fallback;
    }
    size_t grow = cfg->shm_queue_grow;
    if (grow < lines || grow > 65536 || (grow & (grow - 1)) != 0) {
        size_t fallback = lines > 8192 ? lines : 8192;
        pami_warn("shm", "PAMI_SHM_QUEUE_GROW=%zu is not a power of two "
                  "in %zu..65536: %zu taken", grow, lines, fallback);
        grow = fallback;
    }
    /* A grown queue's entries: a quarter of it (a 16 KiB message is one
     * entry, handed to the handler in place; a ring of 8192 lines holds
     * 31 of them; 4096 held 15, too few for a window of 32: send_bw
     * 16 KiB 0.87-0.89 x UCP AM against 1.41-1.51, docs/PERFORMANCE.md),
     * never less than the start's. */
    size_t grown_entry = grow / 4 < 1024 ? grow / 4 : 1024;
    if (grown_entry < entry || grow == lines)
        grown_entry = entry;
    /* One per context of this node that sends here, own ones included;
     * a little slack (a sender whose inbox check failed half-way claimed
     * one). */
    size_t queues = (c->num_local_tasks + 1) * num_contexts + 8;
    wp->shm_on          = cfg->shm_fastpath && c->num_local_tasks > 0;
    wp->shm_membarrier  = cfg->shm_membarrier;
    wp->shm_queue_lines = (uint32_t)grow;
    wp->shm_entry_lines = (uint32_t)grown_entry;
    wp->shm_start_lines = (uint32_t)lines;
    wp->shm_start_entry_lines = (uint32_t)entry;
    wp->shm_max_queues  = (uint32_t)queues;
    wp->shm_read_min    = cfg->shm_read_min;
    /* Every message pami sends, its own bulk ones too (chunks of a
     * rendezvous through the origin, puts through the owner), goes by
     * queue: the owner's fence relies on their order. The receiver's
     * memory grows only with bytes actually sent. */
    wp->shm_msg_max = UINT32_MAX;
    wp->drop_fn = shm_drop;
}
