/* Contiguous and strided put and get, blocking and non-blocking. A target
 * the library can load and store (the own PE, a peer of the node whose
 * heap pami mapped) is copied with memcpy (shmemi_copy_put and _get); any
 * other goes through pami_put / pami_get on the target's region. */
#include <string.h>

#include "shmem_internal.h"

void shmemi_bad_target(const char *fn, const void *addr, size_t bytes, int pe)
{
    shmemi_require_init(fn);
    if (pe < 0 || pe >= shmemi.n_pes)
        shmemi_fatal("%s: PE %d is out of range (0..%d)", fn, pe,
                     shmemi.n_pes - 1);
    shmemi_fatal("%s: [%p, +%zu) is not symmetric (neither in the symmetric "
                 "heap nor in the program's global variables)", fn, addr,
                 bytes);
}

void shmemi_count_done(pami_context_t context, void *cookie,
                       pami_result_t result)
{
    (void)context;
    if (result != PAMI_SUCCESS)
        shmemi_op_failed(result);
    (*(volatile uint64_t *)cookie)--;
}

void shmemi_wait_count(pami_context_t context, volatile uint64_t *count)
{
    while (*count != 0) {
        if (shmemi_advance(context))
            continue;
        if (*count != 0)
            shmemi_sleep(context, 100);
    }
    if (shmemi.op_error != PAMI_SUCCESS)
        shmemi_fatal("a put, get or atomic failed: %s",
                     pami_error_text(shmemi.op_error));
}

/* Issues one pami put or get; retries while pami says EAGAIN. */
static void issue(shmem_ctx_t ctx, int is_put, void *local, size_t bytes,
                  const shmemi_remote_t *r, volatile uint64_t *count)
{
    pami_rma_t p;
    pami_result_t rc;

    memset(&p, 0, sizeof(p));
    p.dest = r->endpoint;
    p.local = local;
    p.bytes = bytes;
    p.remote_mr = r->mr;
    p.remote_offset = r->offset;
    p.local_fn = shmemi_count_done;
    p.cookie = (void *)count;
    /* The count goes up before the call (its completion may run inside
     * it), and the put is marked unfenced after it, under the lock: a
     * quiet of another thread that finds the mark fences this put. */
    for (;;) {
        shmemi_lock();
        (*count)++;
        rc = is_put ? pami_put(ctx->context, &p) : pami_get(ctx->context, &p);
        if (rc != PAMI_SUCCESS)
            (*count)--;
        else if (is_put)
            shmemi.pami_unfenced = 1;
        shmemi_unlock();
        if (rc != PAMI_EAGAIN)
            break;
        shmemi_progress(ctx->context);
    }
    if (rc != PAMI_SUCCESS)
        shmemi_fatal("%s of %zu bytes: %s", is_put ? "put" : "get", bytes,
                     pami_error_text(rc));
}

void shmemi_put(shmem_ctx_t ctx, void *dest, const void *src, size_t bytes,
                int pe, volatile uint64_t *count)
{
    shmemi_remote_t r;
    volatile uint64_t mine = 0;

    if (bytes == 0)
        return;
    pe = shmemi_ctx_pe(ctx, pe, "shmem_put");
    shmemi_resolve("shmem_put", dest, bytes, pe, &r);
    if (r.local != NULL) {
        shmemi_copy_put(pe, r.local, src, bytes, dest);
        return;
    }
    issue(ctx, 1, (void *)src, bytes, &r, count != NULL ? count : &mine);
    if (count == NULL)
        shmemi_wait_count(ctx->context, &mine);
}

void shmemi_get(shmem_ctx_t ctx, void *dest, const void *src, size_t bytes,
                int pe, volatile uint64_t *count)
{
    shmemi_remote_t r;
    volatile uint64_t mine = 0;

    if (bytes == 0)
        return;
    pe = shmemi_ctx_pe(ctx, pe, "shmem_get");
    shmemi_resolve("shmem_get", src, bytes, pe, &r);
    if (r.local != NULL) {
        shmemi_copy_get(pe, dest, r.local, bytes, src);
        return;
    }
    issue(ctx, 0, dest, bytes, &r, count != NULL ? count : &mine);
    if (count == NULL)
        shmemi_wait_count(ctx->context, &mine);
}

/* Strided: element i goes from source[i * sst] to dest[i * dst] (strides
 * in elements). Through pami, every element is a put of its own, all in
 * flight together. */
static void strided(shmem_ctx_t ctx, int is_put, char *dest, const char *src,
                    ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t size,
                    int pe)
{
    volatile uint64_t mine = 0;

    for (size_t i = 0; i < nelems; i++) {
        char *d = dest + (ptrdiff_t)i * dst * (ptrdiff_t)size;
        const char *s = src + (ptrdiff_t)i * sst * (ptrdiff_t)size;

        if (is_put)
            shmemi_put(ctx, d, s, size, pe, &mine);
        else
            shmemi_get(ctx, d, s, size, pe, &mine);
    }
    shmemi_wait_count(ctx->context, &mine);
}

static shmem_ctx_t checked(shmem_ctx_t ctx)
{
    if (ctx == SHMEM_CTX_INVALID)
        shmemi_fatal("an RMA call on SHMEM_CTX_INVALID");
    return ctx;
}

#define DEF_RMA(T, N)                                                          \
    void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source,      \
                             size_t nelems, int pe)                          \
    {                                                                        \
        shmemi_put(checked(ctx), dest, source, nelems * sizeof(T), pe,      \
                   NULL);                                                    \
    }                                                                        \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe)    \
    {                                                                        \
        shmemi_put(SHMEM_CTX_DEFAULT, dest, source, nelems * sizeof(T), pe, \
                   NULL);                                                    \
    }                                                                        \
    void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source,      \
                             size_t nelems, int pe)                          \
    {                                                                        \
        shmemi_get(checked(ctx), dest, source, nelems * sizeof(T), pe,      \
                   NULL);                                                    \
    }                                                                        \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe)    \
    {                                                                        \
        shmemi_get(SHMEM_CTX_DEFAULT, dest, source, nelems * sizeof(T), pe, \
                   NULL);                                                    \
    }                                                                        \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe)        \
    {                                                                        \
        shmemi_put(checked(ctx), dest, &value, sizeof(T), pe, NULL);        \
    }                                                                        \
    void shmem_##N##_p(T *dest, T value, int pe)                             \
    {                                                                        \
        shmemi_put(SHMEM_CTX_DEFAULT, dest, &value, sizeof(T), pe, NULL);   \
    }                                                                        \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe)            \
    {                                                                        \
        T value;                                                             \
        shmemi_get(checked(ctx), &value, source, sizeof(T), pe, NULL);      \
        return value;                                                        \
    }                                                                        \
    T shmem_##N##_g(const T *source, int pe)                                 \
    {                                                                        \
        return shmem_ctx_##N##_g(SHMEM_CTX_DEFAULT, source, pe);             \
    }                                                                        \
    void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source,     \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems,   \
                              int pe)                                        \
    {                                                                        \
        strided(checked(ctx), 1, (char *)dest, (const char *)source, dst,   \
                sst, nelems, sizeof(T), pe);                                 \
    }                                                                        \
    void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst,           \
                          ptrdiff_t sst, size_t nelems, int pe)              \
    {                                                                        \
        strided(SHMEM_CTX_DEFAULT, 1, (char *)dest, (const char *)source,   \
                dst, sst, nelems, sizeof(T), pe);                            \
    }                                                                        \
    void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source,     \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems,   \
                              int pe)                                        \
    {                                                                        \
        strided(checked(ctx), 0, (char *)dest, (const char *)source, dst,   \
                sst, nelems, sizeof(T), pe);                                 \
    }                                                                        \
    void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst,           \
                          ptrdiff_t sst, size_t nelems, int pe)              \
    {                                                                        \
        strided(SHMEM_CTX_DEFAULT, 0, (char *)dest, (const char *)source,   \
                dst, sst, nelems, sizeof(T), pe);                            \
    }                                                                        \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source,  \
                                 size_t nelems, int pe)                      \
    {                                                                        \
        shmem_ctx_putmem_nbi(ctx, dest, source, nelems * sizeof(T), pe);     \
    }                                                                        \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems,        \
                             int pe)                                         \
    {                                                                        \
        shmem_ctx_putmem_nbi(SHMEM_CTX_DEFAULT, dest, source,                \
                             nelems * sizeof(T), pe);                        \
    }                                                                        \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source,  \
                                 size_t nelems, int pe)                      \
    {                                                                        \
        shmem_ctx_getmem_nbi(ctx, dest, source, nelems * sizeof(T), pe);     \
    }                                                                        \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems,        \
                             int pe)                                         \
    {                                                                        \
        shmem_ctx_getmem_nbi(SHMEM_CTX_DEFAULT, dest, source,                \
                             nelems * sizeof(T), pe);                        \
    }
SHMEMI_RMA_TYPES(DEF_RMA)

#define DEF_SIZED(S)                                                           \
    void shmem_ctx_put##S(shmem_ctx_t ctx, void *dest, const void *source,   \
                          size_t nelems, int pe)                             \
    {                                                                        \
        shmemi_put(checked(ctx), dest, source, nelems * (S / 8), pe, NULL); \
    }                                                                        \
    void shmem_put##S(void *dest, const void *source, size_t nelems, int pe) \
    {                                                                        \
        shmemi_put(SHMEM_CTX_DEFAULT, dest, source, nelems * (S / 8), pe,   \
                   NULL);                                                    \
    }                                                                        \
    void shmem_ctx_get##S(shmem_ctx_t ctx, void *dest, const void *source,   \
                          size_t nelems, int pe)                             \
    {                                                                        \
        shmemi_get(checked(ctx), dest, source, nelems * (S / 8), pe, NULL); \
    }                                                                        \
    void shmem_get##S(void *dest, const void *source, size_t nelems, int pe) \
    {                                                                        \
        shmemi_get(SHMEM_CTX_DEFAULT, dest, source, nelems * (S / 8), pe,   \
                   NULL);                                                    \
    }                                                                        \
    void shmem_ctx_iput##S(shmem_ctx_t ctx, void *dest, const void *source,  \
                           ptrdiff_t dst, ptrdiff_t sst, size_t nelems,      \
                           int pe)                                           \
    {                                                                        \
        strided(checked(ctx), 1, dest, source, dst, sst, nelems, S / 8, pe); \
    }                                                                        \
    void shmem_iput##S(void *dest, const void *source, ptrdiff_t dst,        \
                       ptrdiff_t sst, size_t nelems, int pe)                 \
    {                                                                        \
        strided(SHMEM_CTX_DEFAULT, 1, dest, source, dst, sst, nelems, S / 8, \
                pe);                                                         \
    }                                                                        \
    void shmem_ctx_iget##S(shmem_ctx_t ctx, void *dest, const void *source,  \
                           ptrdiff_t dst, ptrdiff_t sst, size_t nelems,      \
                           int pe)                                           \
    {                                                                        \
        strided(checked(ctx), 0, dest, source, dst, sst, nelems, S / 8, pe); \
    }                                                                        \
    void shmem_iget##S(void *dest, const void *source, ptrdiff_t dst,        \
                       ptrdiff_t sst, size_t nelems, int pe)                 \
    {                                                                        \
        strided(SHMEM_CTX_DEFAULT, 0, dest, source, dst, sst, nelems, S / 8, \
                pe);                                                         \
    }                                                                        \
    void shmem_ctx_put##S##_nbi(shmem_ctx_t ctx, void *dest,                 \
                                const void *source, size_t nelems, int pe)   \
    {                                                                        \
        shmem_ctx_putmem_nbi(ctx, dest, source, nelems * (S / 8), pe);       \
    }                                                                        \
    void shmem_put##S##_nbi(void *dest, const void *source, size_t nelems,   \
                            int pe)                                          \
    {                                                                        \
        shmem_ctx_putmem_nbi(SHMEM_CTX_DEFAULT, dest, source,                \
                             nelems * (S / 8), pe);                          \
    }                                                                        \
    void shmem_ctx_get##S##_nbi(shmem_ctx_t ctx, void *dest,                 \
                                const void *source, size_t nelems, int pe)   \
    {                                                                        \
        shmem_ctx_getmem_nbi(ctx, dest, source, nelems * (S / 8), pe);       \
    }                                                                        \
    void shmem_get##S##_nbi(void *dest, const void *source, size_t nelems,   \
                            int pe)                                          \
    {                                                                        \
        shmem_ctx_getmem_nbi(SHMEM_CTX_DEFAULT, dest, source,                \
                             nelems * (S / 8), pe);                          \
    }
SHMEMI_SIZES(DEF_SIZED)

void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source,
                      size_t nelems, int pe)
{
    shmemi_put(checked(ctx), dest, source, nelems, pe, NULL);
}

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    shmemi_put(SHMEM_CTX_DEFAULT, dest, source, nelems, pe, NULL);
}

void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source,
                      size_t nelems, int pe)
{
    shmemi_get(checked(ctx), dest, source, nelems, pe, NULL);
}

void shmem_getmem(void *dest, const void *source, size_t nelems, int pe)
{
    shmemi_get(SHMEM_CTX_DEFAULT, dest, source, nelems, pe, NULL);
}

/* Non-blocking: the operation counts in the context's pending until it
 * completes; quiet waits for it. */
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source,
                          size_t nelems, int pe)
{
    ctx = checked(ctx);
    shmemi_put(ctx, dest, source, nelems, pe, &ctx->pending);
}

void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe)
{
    shmem_ctx_putmem_nbi(SHMEM_CTX_DEFAULT, dest, source, nelems, pe);
}

void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source,
                          size_t nelems, int pe)
{
    ctx = checked(ctx);
    shmemi_get(ctx, dest, source, nelems, pe, &ctx->pending);
}

void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe)
{
    shmem_ctx_getmem_nbi(SHMEM_CTX_DEFAULT, dest, source, nelems, pe);
}
