/* RMA: every form of put and get (typed, sized, mem, p/g, strided,
 * non-blocking, with contexts) into the symmetric heap and into global
 * and static variables of this PIE program, each PE to its right
 * neighbour, values checked by the target and by the origin's get; and
 * a long run of consecutive puts (the library streams those). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <shmem.h>

#include "shmem_check.h"

#define N 64

static long g_long[N];            /* bss */
static int g_int[N] = { 1 };      /* data */
static double g_double[N];
static unsigned char g_bytes[4 * N];
static long g_strided[2 * N];

static long value(int pe, int i, int round)
{
    return (long)pe * 100000 + (long)round * 1000 + i;
}

static void round_trip(long *lng, int *in, double *dbl, unsigned char *bytes,
                       long *str, int round)
{
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long src[N], back[N];
    int isrc[N];
    double dsrc[N];
    unsigned char bsrc[4 * N];

    for (int i = 0; i < N; i++) {
        src[i] = value(me, i, round);
        isrc[i] = (int)value(me, i, round);
        dsrc[i] = (double)value(me, i, round) / 4;
    }
    for (int i = 0; i < 4 * N; i++)
        bsrc[i] = (unsigned char)(me + i + round);
    shmem_barrier_all();

    /* typed, sized, mem, p, strided, nbi */
    shmem_long_put(lng, src, N / 2, right);
    shmem_put64(lng + N / 2, src + N / 2, N / 4, right);
    shmem_ctx_long_put(SHMEM_CTX_DEFAULT, lng + 3 * N / 4, src + 3 * N / 4,
                       N / 4 - 1, right);
    shmem_long_p(&lng[N - 1], src[N - 1], right);
    shmem_put32(in, isrc, N / 2, right);
    shmem_int_put_nbi(in + N / 2, isrc + N / 2, N / 2, right);
    shmem_double_put(dbl, dsrc, N, right);
    shmem_putmem(bytes, bsrc, 2 * N, right);
    shmem_put128(bytes + 2 * N, bsrc + 2 * N, N / 16, right);
    shmem_putmem_nbi(bytes + 3 * N, bsrc + 3 * N, N, right);
    shmem_long_iput(str, src, 2, 1, N, right); /* every other slot */
    shmem_quiet();
    shmem_barrier_all();

    for (int i = 0; i < N; i++) {
        CHECK(lng[i] == value(left, i, round), "long[%d] = %ld, not %ld", i,
              lng[i], value(left, i, round));
        CHECK(in[i] == (int)value(left, i, round), "int[%d] = %d", i, in[i]);
        CHECK(dbl[i] == (double)value(left, i, round) / 4, "double[%d]", i);
        CHECK(str[2 * i] == value(left, i, round), "strided[%d] = %ld",
              2 * i, str[2 * i]);
    }
    for (int i = 0; i < 4 * N; i++)
        CHECK(bytes[i] == (unsigned char)(left + i + round), "byte[%d]", i);

    /* get them back from the right neighbour: they are mine */
    memset(back, 0, sizeof(back));
    shmem_long_get(back, lng, N / 2, right);
    shmem_get64(back + N / 2, lng + N / 2, N / 4, right);
    shmem_ctx_getmem(SHMEM_CTX_DEFAULT, back + 3 * N / 4, lng + 3 * N / 4,
                     (N / 4) * sizeof(long), right);
    for (int i = 0; i < N; i++)
        CHECK(back[i] == src[i], "get long[%d] = %ld", i, back[i]);
    CHECK(shmem_long_g(&lng[5], right) == src[5], "g");
    CHECK(shmem_int_g(&in[7], right) == isrc[7], "int g");
    CHECK(shmem_double_g(&dbl[9], right) == dsrc[9], "double g");
    memset(back, 0, sizeof(back));
    shmem_long_iget(back, str, 1, 2, N, right);
    for (int i = 0; i < N; i++)
        CHECK(back[i] == src[i], "iget[%d] = %ld", i, back[i]);
    memset(back, 0, sizeof(back));
    shmem_long_get_nbi(back, lng, N, right);
    shmem_quiet();
    for (int i = 0; i < N; i++)
        CHECK(back[i] == src[i], "get_nbi[%d] = %ld", i, back[i]);
    {
        unsigned char bb[4 * N];

        shmem_getmem_nbi(bb, bytes, 4 * N, right);
        shmem_get8(bb, bytes, 1, right);
        shmem_quiet();
        CHECK(memcmp(bb, bsrc, sizeof(bb)) == 0, "getmem_nbi");
    }
    shmem_barrier_all();
}

/* A run of puts, each starting where the last ended, long enough that the
 * library streams the later ones (non-temporal stores): pieces of odd
 * sizes from an odd offset, so the line-aligned middle has a head and a
 * tail; blocking and non-blocking; the target checks every byte. Then
 * the same run of gets back, checked by the getter. */
#define STREAM_BYTES (3u << 20)
static void stream_run(int nbi)
{
    int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n;
    int left = (me + n - 1) % n;
    unsigned char *buf = shmem_malloc(STREAM_BYTES + 64);
    unsigned char *src = malloc(STREAM_BYTES + 64);
    CHECK(buf && src, "stream buffers");
    for (size_t i = 0; i < STREAM_BYTES + 64; i++)
        src[i] = (unsigned char)(i * 7 + (size_t)me * 13 + (size_t)nbi);
    memset(buf, 0, STREAM_BYTES + 64);
    shmem_barrier_all();
    size_t at = 5, piece = 65536 + 24;
    while (at < STREAM_BYTES) {
        size_t len = at + piece <= STREAM_BYTES ? piece : STREAM_BYTES - at;
        if (nbi)
            shmem_putmem_nbi(buf + at, src + at, len, right);
        else
            shmem_putmem(buf + at, src + at, len, right);
        at += len;
        piece = piece == 65536 + 24 ? 4096 + 40 : 65536 + 24;
    }
    shmem_barrier_all();
    for (size_t i = 0; i < STREAM_BYTES + 64; i++) {
        unsigned char want =
            i >= 5 && i < STREAM_BYTES
                ? (unsigned char)(i * 7 + (size_t)left * 13 + (size_t)nbi)
                : 0;
        CHECK(buf[i] == want, "stream%s: byte %zu is %u, not %u",
              nbi ? " nbi" : "", i, buf[i], want);
    }
    shmem_barrier_all();
    /* The same run as gets: the right PE's buf holds this PE's bytes,
     * read back in the same pieces into private memory (the library
     * streams the later gets too). */
    memset(src, 0, STREAM_BYTES + 64);
    at = 5;
    piece = 65536 + 24;
    while (at < STREAM_BYTES) {
        size_t len = at + piece <= STREAM_BYTES ? piece : STREAM_BYTES - at;
        if (nbi)
            shmem_getmem_nbi(src + at, buf + at, len, right);
        else
            shmem_getmem(src + at, buf + at, len, right);
        at += len;
        piece = piece == 65536 + 24 ? 4096 + 40 : 65536 + 24;
    }
    shmem_quiet();
    for (size_t i = 0; i < STREAM_BYTES + 64; i++) {
        unsigned char want =
            i >= 5 && i < STREAM_BYTES
                ? (unsigned char)(i * 7 + (size_t)me * 13 + (size_t)nbi)
                : 0;
        CHECK(src[i] == want, "stream get%s: byte %zu is %u, not %u",
              nbi ? " nbi" : "", i, src[i], want);
    }
    shmem_barrier_all();
    free(src);
    shmem_free(buf);
}

int main(void)
{
    long *h_long, *h_str;
    int *h_int;
    double *h_double;
    unsigned char *h_bytes;

    shmem_init();
    h_long = shmem_malloc(N * sizeof(long));
    h_int = shmem_malloc(N * sizeof(int));
    h_double = shmem_malloc(N * sizeof(double));
    h_bytes = shmem_malloc(4 * N);
    h_str = shmem_calloc(2 * N, sizeof(long));
    CHECK(h_long && h_int && h_double && h_bytes && h_str, "malloc");

    for (int round = 0; round < 3; round++) {
        round_trip(h_long, h_int, h_double, h_bytes, h_str, round);
        round_trip(g_long, g_int, g_double, g_bytes, g_strided, round);
        /* mixed: heap and globals in one round */
        round_trip(g_long, h_int, g_double, h_bytes, h_str, round + 10);
    }
    stream_run(0);
    stream_run(1);
    shmem_free(h_str);
    shmem_free(h_bytes);
    shmem_free(h_double);
    shmem_free(h_int);
    shmem_free(h_long);
    shmem_finalize();
    return 0;
}
