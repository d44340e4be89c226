/* Put with signal: the data, then the signal word (set or add) once the
 * data is in the target's memory, so a PE that sees the signal sees the
 * data. Through a mapping the order of the CPU's stores does it (the
 * signal is a sequentially consistent atomic after the copy); through
 * pami a fence to the target comes between the two. The _nbi forms do
 * the same and return complete. */
#include <string.h>

#include "shmem_internal.h"

static void fence_done(pami_context_t context, void *cookie,
                       pami_result_t result)
{
    (void)context;
    if (result != PAMI_SUCCESS)
        shmemi_op_failed(result);
    *(volatile int *)cookie = 1;
}

static void put_signal(shmem_ctx_t ctx, void *dest, const void *source,
                       size_t bytes, uint64_t *sig_addr, uint64_t signal,
                       int sig_op, int pe)
{
    shmemi_remote_t r;
    volatile uint64_t mine = 0;

    if (ctx == SHMEM_CTX_INVALID)
        shmemi_fatal("shmem_put_signal on SHMEM_CTX_INVALID");
    if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
        shmemi_fatal("shmem_put_signal: sig_op %d is neither "
                     "SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD", sig_op);
    /* shmemi_put takes the context's own PE number, the rest the world's. */
    int wpe = shmemi_ctx_pe(ctx, pe, "shmem_put_signal");
    shmemi_resolve("shmem_put_signal", sig_addr, sizeof(*sig_addr), wpe, &r);
    if (bytes > 0) {
        shmemi_resolve("shmem_put_signal", dest, bytes, wpe, &r);
        shmemi_put(ctx, dest, source, bytes, pe, &mine);
        shmemi_wait_count(ctx->context, &mine);
        /* a streamed copy's lines before the signal's store */
        shmemi_copy_drain();
        if (r.local == NULL) {
            volatile int done = 0;
            shmemi_lock();
            pami_result_t rc = pami_fence_endpoint(ctx->context, r.endpoint,
                                                   fence_done, (void *)&done);
            shmemi_unlock();

            if (rc != PAMI_SUCCESS)
                shmemi_fatal("put with signal: pami_fence_endpoint: %s",
                             pami_error_text(rc));
            shmemi_wait_flag(ctx->context, &done);
        }
    }
    if (sig_op == SHMEM_SIGNAL_SET)
        shmem_ctx_uint64_atomic_set(ctx, sig_addr, signal, pe);
    else
        shmem_ctx_uint64_atomic_add(ctx, sig_addr, signal, pe);
}

#define DEF_PUT_SIGNAL(T, N)                                                   \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest,                \
                                    const T *source, size_t nelems,          \
                                    uint64_t *sig_addr, uint64_t signal,     \
                                    int sig_op, int pe)                      \
    {                                                                        \
        put_signal(ctx, dest, source, nelems * sizeof(T), sig_addr, signal,  \
                   sig_op, pe);                                              \
    }                                                                        \
    void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems,     \
                                uint64_t *sig_addr, uint64_t signal,         \
                                int sig_op, int pe)                          \
    {                                                                        \
        put_signal(SHMEM_CTX_DEFAULT, dest, source, nelems * sizeof(T),      \
                   sig_addr, signal, sig_op, pe);                            \
    }                                                                        \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest,            \
                                        const T *source, size_t nelems,      \
                                        uint64_t *sig_addr, uint64_t signal, \
                                        int sig_op, int pe)                  \
    {                                                                        \
        put_signal(ctx, dest, source, nelems * sizeof(T), sig_addr, signal,  \
                   sig_op, pe);                                              \
    }                                                                        \
    void shmem_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems, \
                                    uint64_t *sig_addr, uint64_t signal,     \
                                    int sig_op, int pe)                      \
    {                                                                        \
        put_signal(SHMEM_CTX_DEFAULT, dest, source, nelems * sizeof(T),      \
                   sig_addr, signal, sig_op, pe);                            \
    }
SHMEMI_RMA_TYPES(DEF_PUT_SIGNAL)

#define DEF_PUT_SIGNAL_SIZED(S)                                                \
    void shmem_ctx_put_signal##S(shmem_ctx_t ctx, void *dest,                \
                                 const void *source, size_t nelems,          \
                                 uint64_t *sig_addr, uint64_t signal,        \
                                 int sig_op, int pe)                         \
    {                                                                        \
        put_signal(ctx, dest, source, nelems * (S / 8), sig_addr, signal,    \
                   sig_op, pe);                                              \
    }                                                                        \
    void shmem_put_signal##S(void *dest, const void *source, size_t nelems,  \
                             uint64_t *sig_addr, uint64_t signal,            \
                             int sig_op, int pe)                             \
    {                                                                        \
        put_signal(SHMEM_CTX_DEFAULT, dest, source, nelems * (S / 8),        \
                   sig_addr, signal, sig_op, pe);                            \
    }                                                                        \
    void shmem_ctx_put_signal##S##_nbi(shmem_ctx_t ctx, void *dest,          \
                                       const void *source, size_t nelems,    \
                                       uint64_t *sig_addr, uint64_t signal,  \
                                       int sig_op, int pe)                   \
    {                                                                        \
        put_signal(ctx, dest, source, nelems * (S / 8), sig_addr, signal,    \
                   sig_op, pe);                                              \
    }                                                                        \
    void shmem_put_signal##S##_nbi(void *dest, const void *source,           \
                                   size_t nelems, uint64_t *sig_addr,        \
                                   uint64_t signal, int sig_op, int pe)      \
    {                                                                        \
        put_signal(SHMEM_CTX_DEFAULT, dest, source, nelems * (S / 8),        \
                   sig_addr, signal, sig_op, pe);                            \
    }
SHMEMI_SIZES(DEF_PUT_SIGNAL_SIZED)

void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source,
                             size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe)
{
    put_signal(ctx, dest, source, nelems, sig_addr, signal, sig_op, pe);
}

void shmem_putmem_signal(void *dest, const void *source, size_t nelems,
                         uint64_t *sig_addr, uint64_t signal, int sig_op,
                         int pe)
{
    put_signal(SHMEM_CTX_DEFAULT, dest, source, nelems, sig_addr, signal,
               sig_op, pe);
}

void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest,
                                 const void *source, size_t nelems,
                                 uint64_t *sig_addr, uint64_t signal,
                                 int sig_op, int pe)
{
    put_signal(ctx, dest, source, nelems, sig_addr, signal, sig_op, pe);
}

void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems,
                             uint64_t *sig_addr, uint64_t signal, int sig_op,
                             int pe)
{
    put_signal(SHMEM_CTX_DEFAULT, dest, source, nelems, sig_addr, signal,
               sig_op, pe);
}
