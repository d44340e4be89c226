/*
 * The copy of a put or get through a mapping. It is a memcpy, except in
 * a run of puts (or of gets) that each start where the one before ended
 * (a stream: a message-rate loop, a large array moved in pieces) once the
 * run is past SHMEMI_STREAM_RUN: those go with non-temporal stores, which write
 * whole lines to memory without first reading them into this core's cache
 * (a cold destination costs a read and a write per line with memcpy).
 * Measured here with cold buffers, 50 copies of 64 KiB: memcpy 9.1 us a
 * copy, 64-byte non-temporal stores 6.7, 16-byte ones 7.5; but a
 * destination that is warm (the same buffer put again and again) copies
 * twice as fast with memcpy, so a single put, however large, never
 * streams. 500 cold copies of 1 KiB in a row: memcpy 5.2 M copies/s,
 * non-temporal stores 9.5 M, but 4.6 M with a store fence after each: so
 * below SHMEM_THREAD_SERIALIZED the fence waits for whatever orders the
 * copies (quiet, fence, barrier_all, a put-with-signal's signal:
 * shmemi_copy_drain).
 */
#include <stdint.h>
#include <string.h>

#include "shmem_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define SHMEMI_STREAM_RUN  (64 * 1024) /* bytes of the run before it */
#define SHMEMI_STREAM_MIN  512         /* a smaller put never streams */

__attribute__((target("avx512f"))) static void
stream_64(uint8_t *d, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i += 64)
        _mm512_stream_si512((void *)(d + i), _mm512_loadu_si512(s + i));
}

static void stream_16(uint8_t *d, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i += 64) {
        __m128i a = _mm_loadu_si128((const void *)(s + i));
        __m128i b = _mm_loadu_si128((const void *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const void *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const void *)(s + i + 48));
        _mm_stream_si128((void *)(d + i), a);
        _mm_stream_si128((void *)(d + i + 16), b);
        _mm_stream_si128((void *)(d + i + 32), c);
        _mm_stream_si128((void *)(d + i + 48), e);
    }
}

#define SHMEMI_TLS _Thread_local __attribute__((tls_model("initial-exec")))

/* This thread streamed lines that no store fence has ordered yet (in the
 * initial-exec model as the runs below). */
static SHMEMI_TLS int unfenced;

/* Head up to a line with memcpy, whole lines streamed, tail with memcpy.
 * The sfence that puts the streamed lines in order before any later
 * store (a signal, a flag the program sets after quiet) comes at once
 * when several threads may call (another thread's quiet, even a later
 * one under SERIALIZED, does not fence this one's stores), else at
 * shmemi_copy_drain. */
static void copy_streaming(uint8_t *d, const uint8_t *s, size_t n)
{
    static int has_avx512 = -1;
    if (has_avx512 < 0)
        has_avx512 = __builtin_cpu_supports("avx512f") ? 1 : 0;
    size_t head = (64 - ((uintptr_t)d & 63)) & 63;
    memcpy(d, s, head);
    size_t body = (n - head) & ~(size_t)63;
    if (has_avx512)
        stream_64(d + head, s + head, body);
    else
        stream_16(d + head, s + head, body);
    if (shmemi.thread_level >= SHMEM_THREAD_SERIALIZED)
        _mm_sfence();
    else
        unfenced = 1;
    memcpy(d + head + body, s + head + body, n - head - body);
}

/* Where this thread's last put (or get) ended and how long its run is.
 * The initial-exec model reads them at a fixed offset from the thread
 * pointer; the default one for a shared library calls __tls_get_addr on
 * every put (36 bytes with unfenced, of the static TLS surplus glibc
 * keeps, also when the library is loaded with dlopen). */
struct stream {
    uint8_t *next;
    size_t   run;
};
static SHMEMI_TLS struct stream put_stream, get_stream;

/* A streamed run stays on this core (its destination is cold, so both
 * cores would wait on memory); a single large copy may take the target's
 * core too (shmem_help.c). */
static void copy_in_run(struct stream *st, int put, int pe, void *dest,
                        const void *src, size_t bytes, const void *sym)
{
    uint8_t *d = dest;
    size_t run = d == st->next ? st->run : 0;
    st->next = d + bytes;
    st->run = run + bytes;
    if (bytes >= SHMEMI_STREAM_MIN && run >= SHMEMI_STREAM_RUN)
        copy_streaming(d, src, bytes);
    else if (bytes < shmemi.copy_help_min ||
             !shmemi_help_copy(put, pe, dest, src, bytes, sym))
        memcpy(d, src, bytes);
}

void shmemi_copy_drain(void)
{
    if (unfenced) {
        _mm_sfence();
        unfenced = 0;
    }
}

void shmemi_copy_put(int pe, void *dest, const void *src, size_t bytes,
                     const void *sym)
{
    copy_in_run(&put_stream, 1, pe, dest, src, bytes, sym);
}

void shmemi_copy_get(int pe, void *dest, const void *src, size_t bytes,
                     const void *sym)
{
    copy_in_run(&get_stream, 0, pe, dest, src, bytes, sym);
}

#else

void shmemi_copy_drain(void)
{
}

void shmemi_copy_put(int pe, void *dest, const void *src, size_t bytes,
                     const void *sym)
{
    if (bytes < shmemi.copy_help_min ||
        !shmemi_help_copy(1, pe, dest, src, bytes, sym))
        memcpy(dest, src, bytes);
}

void shmemi_copy_get(int pe, void *dest, const void *src, size_t bytes,
                     const void *sym)
{
    if (bytes < shmemi.copy_help_min ||
        !shmemi_help_copy(0, pe, dest, src, bytes, sym))
        memcpy(dest, src, bytes);
}

#endif
