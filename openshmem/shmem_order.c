/* Memory ordering (fence, quiet) and the world barrier that init, the
 * heap and shmem_barrier_all share. */
#include "shmem_internal.h"

static void fence_done(pami_context_t context, void *cookie,
                       pami_result_t result)
{
    (void)context;
    if (result != PAMI_SUCCESS)
        shmemi_op_failed(result);
    *(volatile int *)cookie = 1;
}

void shmemi_ctx_quiet(struct shmemi_ctx *ctx)
{
    volatile int done = 0;
    pami_result_t rc;

    /* Loads and stores through mappings, then the context's pami
     * operations: their local completion, then a flush to the targets. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    shmemi_wait_count(ctx->context, &ctx->pending);
    /* The fence covers the whole pami context, every shmem context's
     * operations: one since the last puts and rmws is enough. */
    if (!shmemi.pami_unfenced)
        return;
    shmemi.pami_unfenced = 0;
    rc = pami_fence_all(ctx->context, fence_done, (void *)&done);
    if (rc != PAMI_SUCCESS)
        shmemi_fatal("pami_fence_all: %s", pami_error_text(rc));
    shmemi_wait_flag(ctx->context, &done);
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
    rc = pami_geometry_barrier(shmemi.context, shmemi.world);
    if (rc != PAMI_SUCCESS)
        shmemi_fatal("shmem_sync_all: %s", pami_error_text(rc));
}
