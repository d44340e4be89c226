/*
 * Large puts and gets through the mappings, which the target's core may
 * share (openshmem/shmem_help.c): values at sizes around the chunks and
 * the threshold, unaligned, from and to the heap and global variables,
 * blocking and _nbi, every PE putting to the next while it is the
 * target of the one before; a fence then a flag orders a large put
 * before the flag; a private (non-symmetric) side is copied alone.
 *
 *   shmem_copy_help           the checks above, and that a put the
 *                             target helped leaves the caller no page
 *                             fault to take on the same bytes later
 *   shmem_copy_help die       PE 1 makes its own heap read-only, so it
 *                             dies (SIGSEGV) when it copies a part of
 *                             PE 0's puts, or at the latest when it
 *                             writes there itself: the job must end
 *                             with that, never hang.
 *   shmem_copy_help stop      the same, but PE 1 stops (SIGSTOP from
 *                             its SIGSEGV handler) instead of dying:
 *                             a target hung in the middle of a chunk;
 *                             PE 0 must end with an error once pami
 *                             counts PE 1 hung (PAMI_PEER_TIMEOUT),
 *                             never wait for the chunk for ever.
 */
#include <shmem.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "shmem_check.h"

#define MAX_BYTES ((size_t)4 << 20)
#define GLOBAL_BYTES ((size_t)768 << 10)

static unsigned char g_buf[GLOBAL_BYTES]; /* bss, symmetric */
static long g_flag;

static unsigned char pattern(int pe, int round, size_t i)
{
    return (unsigned char)(pe * 131 + round * 17 + i * 7 + (i >> 12));
}

static void fill(unsigned char *p, size_t n, int pe, int round)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pattern(pe, round, i);
}

static void expect(const unsigned char *p, size_t n, int pe, int round,
                   const char *what, size_t bytes)
{
    for (size_t i = 0; i < n; i++)
        CHECK(p[i] == pattern(pe, round, i),
              "%s of %zu bytes: byte %zu is %u, expected %u (from PE %d)",
              what, bytes, i, p[i], pattern(pe, round, i), pe);
}

static const size_t sizes[] = {
    65535, 65536, 65536 + 13, 131072, 200 * 1024 + 7, 1048576 + 3,
    MAX_BYTES - 64,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* op 0 put, 1 put_nbi, 2 get, 3 get_nbi. Puts: each PE writes its
 * pattern into the next PE's dst; gets: each PE reads the previous PE's
 * src. */
static void one(int op, unsigned char *dst, unsigned char *src, size_t bytes,
                int round, const char *where)
{
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;

    fill(src, bytes, me, round);
    memset(dst, 0xee, bytes);
    shmem_barrier_all();
    switch (op) {
    case 0: shmem_putmem(dst, src, bytes, next); break;
    case 1: shmem_putmem_nbi(dst, src, bytes, next); shmem_quiet(); break;
    case 2: shmem_getmem(dst, src, bytes, prev); break;
    default: shmem_getmem_nbi(dst, src, bytes, prev); shmem_quiet(); break;
    }
    shmem_barrier_all();
    expect(dst, bytes, prev, round, where, bytes);
}

static void values(unsigned char *heap_dst, unsigned char *heap_src)
{
    static const char *names[] = { "put", "put_nbi", "get", "get_nbi" };
    int round = 0;

    for (int op = 0; op < 4; op++)
        for (size_t s = 0; s < NSIZES; s++) {
            char what[64];
            snprintf(what, sizeof(what), "heap %s", names[op]);
            one(op, heap_dst, heap_src, sizes[s], ++round, what);
            /* unaligned on both sides */
            one(op, heap_dst + 5, heap_src + 3, sizes[s] - 8, ++round, what);
        }
    /* a global variable on one side, the heap on the other */
    for (int op = 0; op < 4; op++) {
        one(op, g_buf, heap_src, GLOBAL_BYTES, ++round, "global dst");
        one(op, heap_dst, g_buf, GLOBAL_BYTES, ++round, "global src");
    }
}

/* A private source (a put) and a private destination (a get). */
static void private_side(unsigned char *heap_buf)
{
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    size_t bytes = 1048576;
    unsigned char *priv = malloc(bytes);

    CHECK(priv != NULL, "malloc");
    fill(priv, bytes, me, 900);
    shmem_barrier_all();
    shmem_putmem(heap_buf, priv, bytes, next);
    shmem_barrier_all();
    expect(heap_buf, bytes, prev, 900, "put from private memory", bytes);
    fill(heap_buf, bytes, me, 901);
    shmem_barrier_all();
    shmem_getmem(priv, heap_buf, bytes, prev);
    expect(priv, bytes, prev, 901, "get into private memory", bytes);
    shmem_barrier_all();
    free(priv);
}

/* A large put, fence, a flag: the target waits on the flag (in pami's
 * progress, so it may copy part of the put) and then finds the data. */
static void fence_then_flag(unsigned char *heap_buf, unsigned char *src)
{
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    size_t bytes = 2 << 20;

    for (int r = 1; r <= 4; r++) {
        fill(src, bytes, me, 1000 + r);
        shmem_barrier_all();
        if (r % 2)
            shmem_putmem(heap_buf, src, bytes, next);
        else
            shmem_putmem_nbi(heap_buf, src, bytes, next);
        shmem_fence();
        shmem_long_p(&g_flag, r, next);
        shmem_long_wait_until(&g_flag, SHMEM_CMP_EQ, r);
        expect(heap_buf, bytes, prev, 1000 + r, "put before a fence", bytes);
    }
    shmem_barrier_all();
}

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* 1 when this kernel can fill page tables ahead (MADV_POPULATE_WRITE,
 * Linux 5.14), which the library uses to spare later faults. */
static int can_populate(void)
{
#ifdef MADV_POPULATE_WRITE
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED, "mmap");
    int ok = madvise(p, page, MADV_POPULATE_WRITE) == 0 || errno != EINVAL;
    munmap(p, page);
    return ok;
#else
    return 0;
#endif
}

/* OSU's put_mr: a warmup of large puts, then 64 KiB puts over the same
 * bytes. The target of a large put may copy chunks of it (it waits in a
 * barrier, in pami's progress), which never touches the caller's mapping
 * of those pages; the library fills them then, else each 64 KiB put
 * there took a page fault per page, and the rate depended on how many
 * chunks the target took. The block is above the size shmem_malloc
 * prefaults (64 MiB), so nothing else filled them. PE 0 puts to PE 1,
 * the others wait; PE 0 counts its thread's minor faults in the 64 KiB
 * puts (only with the default threshold: a lower one may send a HELP,
 * whose own path may fault); a few faults elsewhere are allowed, one per
 * page of the block is not. */
static void no_faults_after_help(unsigned char *src)
{
    int me = shmem_my_pe();
    size_t block = (size_t)72 << 20, bytes = MAX_BYTES, piece = 65536;
    int count_faults = getenv("SHMEM_COPY_HELP") == NULL && can_populate();

    if (shmem_n_pes() < 2)
        return;
    unsigned char *big = shmem_malloc(block);
    CHECK(big != NULL, "shmem_malloc(%zu)", block);
    for (int r = 0; r < 4; r++) {
        unsigned char *dst = big + (size_t)r * 2 * bytes;
        if (me == 0)
            fill(src, bytes, me, 2000 + r);
        shmem_barrier_all();
        if (me == 0) {
            struct rusage a, b;
            shmem_putmem(dst, src, bytes, 1);
            getrusage(RUSAGE_THREAD, &a);
            for (size_t o = 0; o < bytes; o += piece)
                shmem_putmem(dst + o, src + o, piece, 1);
            getrusage(RUSAGE_THREAD, &b);
            /* The count is the thread's, not the bytes': a sanitizer's
             * shadow pages or an allocator's fresh block fault too (2 in
             * the ASan build). A fault per page of the block would be
             * 1024; the unfilled mapping took 352. */
            long faults = b.ru_minflt - a.ru_minflt;
            if (count_faults)
                CHECK(faults <= (long)(bytes / page_size() / 64),
                      "%ld page faults in 64 KiB puts to PE 1 over the %zu "
                      "bytes a put had just written (round %d)",
                      faults, bytes, r);
        }
        shmem_barrier_all();
        if (me == 1)
            expect(dst, bytes, 0, 2000 + r, "64 KiB puts after a large put",
                   bytes);
    }
    shmem_free(big);
}

static void stop_self(int sig)
{
    (void)sig;
    raise(SIGSTOP);
}

static void die(unsigned char *heap_dst, unsigned char *heap_src, int stop)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = MAX_BYTES;

    shmem_barrier_all();
    if (shmem_my_pe() == 1) {
        if (stop)
            CHECK(signal(SIGSEGV, stop_self) != SIG_ERR, "signal");
        CHECK(mprotect(heap_dst, bytes, PROT_READ) == 0, "mprotect");
        shmem_barrier_all();
        shmem_barrier_all(); /* PE 0's puts happen in here */
        heap_dst[page] = 1;  /* dies here if no copy of PE 0 killed it */
        CHECK(0, "PE 1 wrote to memory it had made read-only");
    }
    shmem_barrier_all();
    for (int i = 0; i < 100; i++)
        shmem_putmem(heap_dst, heap_src, bytes, 1);
    shmem_barrier_all();
    /* PE 1 ends the job before this barrier can complete. */
    shmem_barrier_all();
    CHECK(0, "PE 1 lived on");
}

int main(int argc, char **argv)
{
    shmem_init();
    unsigned char *heap_dst = shmem_align(4096, MAX_BYTES);
    unsigned char *heap_src = shmem_align(4096, MAX_BYTES);
    CHECK(heap_dst != NULL && heap_src != NULL, "shmem_align");
    if (argc > 1 && (strcmp(argv[1], "die") == 0 ||
                     strcmp(argv[1], "stop") == 0)) {
        CHECK(shmem_n_pes() >= 2, "%s needs 2 PEs", argv[1]);
        die(heap_dst, heap_src, argv[1][0] == 's');
    }
    values(heap_dst, heap_src);
    private_side(heap_dst);
    fence_then_flag(heap_dst, heap_src);
    no_faults_after_help(heap_src);
    shmem_free(heap_src);
    shmem_free(heap_dst);
    shmem_finalize();
    return 0;
}
