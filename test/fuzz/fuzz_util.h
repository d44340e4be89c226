/*
 * Helpers shared by the libFuzzer targets: a cursor that takes the
 * target's parameters off the front of the input, and fz_touch, which
 * reads every byte a decoder handed back so that AddressSanitizer checks
 * the whole range, not just the bytes the decoder looked at.
 */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* libFuzzer's entry points, defined by each target. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size);

typedef struct {
    const uint8_t *p;
    size_t         left;
} fz_t;

static inline uint64_t fz_take(fz_t *f, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n && f->left > 0; i++, f->p++, f->left--)
        v |= (uint64_t)*f->p << (8 * i);
    return v;
}

static inline uint8_t  fz_u8(fz_t *f)  { return (uint8_t)fz_take(f, 1); }
static inline uint16_t fz_u16(fz_t *f) { return (uint16_t)fz_take(f, 2); }
static inline uint32_t fz_u32(fz_t *f) { return (uint32_t)fz_take(f, 4); }

/* The next n bytes (or what is left) as a heap copy of exactly that size,
 * so a read past it is caught; *len gets the size. Free with free(). */
static inline uint8_t *fz_bytes(fz_t *f, size_t n, size_t *len)
{
    if (n > f->left)
        n = f->left;
    uint8_t *b = malloc(n > 0 ? n : 1);
    if (b == NULL)
        abort();
    if (n > 0)
        memcpy(b, f->p, n);
    f->p += n;
    f->left -= n;
    *len = n;
    return b;
}

/* A core message as its decoder gets it: u8 flags, then the rest of the
 * input; with bit 0 of flags, the bytes past the first msg_size are the
 * AM data that came with it. *mlen and *dlen get the two lengths. Free
 * the result with free(). */
static inline uint8_t *fz_message(fz_t *f, size_t msg_size, size_t *mlen,
                                  size_t *dlen)
{
    unsigned flags = fz_u8(f);
    size_t   len;
    uint8_t *buf = fz_bytes(f, f->left, &len);
    *mlen = len;
    *dlen = 0;
    if ((flags & 1) && len >= msg_size) {
        *mlen = msg_size;
        *dlen = len - msg_size;
    }
    return buf;
}

static inline void fz_touch(const void *p, size_t n)
{
    const volatile uint8_t *b = p;
    uint8_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum ^= b[i];
    (void)sum;
}

/* Logging of drops is part of the path under test, but writing every
 * line costs most of the time: errors only, unless FUZZ_LOG_LEVEL says. */
static inline void fz_quiet_logs(void)
{
    const char *lvl = getenv("FUZZ_LOG_LEVEL");
    setenv("PAMI_LOG_LEVEL", lvl != NULL ? lvl : "error", 1);
    pami_log_init();
}

/* libFuzzer's initializer of a target that only quiets the logs. */
#define FZ_QUIET_INIT                                                       \
    int LLVMFuzzerInitialize(int *argc, char ***argv)                       \
    {                                                                       \
        (void)argc;                                                         \
        (void)argv;                                                         \
        fz_quiet_logs();                                                    \
        return 0;                                                           \
    }

#endif
