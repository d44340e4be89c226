/* Memory ordering (fence, quiet) and the world barrier that init, the
 * heap and shmem_barrier_all share. */
#include "shmem_internal.h"

static void fence_done(pami_context_t context, void *cookie,
                       pami_result_t result)
{
    (void)context;
    (void)cookie;
    if (result != PAMI_SUCCESS)
        shmemi_op_failed(result);
    shmemi.fences_in_flight--;
}

void shmemi_ctx_quiet(struct shmemi_ctx *ctx)
{
    pami_result_t rc = PAMI_SUCCESS;

    /* Loads and stores through mappings, then the context's pami
     * operations: their local completion, then a flush to the targets. */
    shmemi_copy_drain();
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    shmemi_wait_count(ctx->context, &ctx->pending);
    /* The fence covers the whole pami context, every shmem context's
     * operations: one since the last puts and rmws is enough, and with
     * several threads one that another thread started after this one's
     * puts does too, so a quiet waits for every fence in flight. */
    shmemi_lock();
    if (shmemi.pami_unfenced) {
        shmemi.pami_unfenced = 0;
        shmemi.fences_in_flight++;
        rc = pami_fence_all(ctx->context, fence_done, NULL);
    }
    shmemi_unlock();
    if (rc != PAMI_SUCCESS)
        shmemi_fatal("pami_fence_all: %s", pami_error_text(rc));
    if (shmemi.fences_in_flight != 0)
        shmemi_wait_count(ctx->context, &shmemi.fences_in_flight);
}

void shmem_ctx_quiet(shmem_ctx_t ctx)
{
    shmemi_require_init("shmem_quiet");
    if (ctx == SHMEM_CTX_INVALID)
        return;
    shmemi_ctx_quiet(ctx);
}

void shmem_quiet(void)
{
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
}

/* pami orders nothing between two puts to one target (they may travel
 * different lanes), so a fence completes what was issued before it. */
void shmem_ctx_fence(shmem_ctx_t ctx)
{
    shmem_ctx_quiet(ctx);
}

void shmem_fence(void)
{
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
}

void shmem_barrier_all(void)
{
    shmemi_require_init("shmem_barrier_all");
    shmemi_barrier_world();
}

void shmem_sync_all(void)
{
    pami_result_t rc;

    shmemi_require_init("shmem_sync_all");
    pami_xfer_t x = { .kind = PAMI_XFER_BARRIER, .geometry = shmemi.world };
    rc = shmemi_collective_run(&x);
    if (rc != PAMI_SUCCESS)
        shmemi_fatal("shmem_sync_all: %s", pami_error_text(rc));
}
