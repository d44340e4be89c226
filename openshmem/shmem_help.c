/*
 * A large put or get through a mapping copied by two cores: the calling
 * PE and the target PE, when the target is inside pami's progress (a
 * barrier, a quiet, a wait). docs/openshmem.md, "Two cores on a large
 * copy", is the protocol.
 *
 * The copy is cut in chunks. The caller announces it in its help block
 * (a word of its symmetric heap that the node's PEs map) and sends the
 * target a HELP message naming the two buffers by segment and offset;
 * then both take chunks from the block's counter, one at a time, until
 * none is left. A target that is busy or asleep takes none or joins
 * late: the caller never waits for chunks nobody took, only for those the
 * target took, each a short copy already under way. The counter carries
 * the copy's sequence number, so a HELP that arrives after its copy
 * ended takes nothing from a later one.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shmem_help_wire.h"
#include "shmem_internal.h"

/* Chunks of a sixteenth of the copy, 32-128 KiB: smaller ones let the
 * target join a copy of a few, larger ones take fewer turns of the
 * counter's cache line between the two cores on a large one. */
#define SHMEMI_HELP_CHUNK_MIN (32 * 1024)
#define SHMEMI_HELP_CHUNK_MAX (128 * 1024)
#define SHMEMI_HELP_DEFAULT  (256 * 1024)

/* The last 64 bytes of each PE's heap. */
struct help_block {
    /* sequence number << 32 | next chunk to take */
    _Atomic uint64_t take;
    /* chunks of the current copy the target has finished */
    _Atomic uint32_t helped;
    int32_t          pid; /* of the PE that owns the block */
};

static struct help_block *own_block;
static size_t block_off;     /* in the heap */
static uint32_t help_seq;
static atomic_flag help_busy = ATOMIC_FLAG_INIT;
static int *peer_pidfd;      /* n_pes, -1 until needed */
/* Finalize began: a HELP handled now (a late one, in the context's last
 * progress) finds nothing to do, and the segments may be gone. */
static int help_closed;
static uint64_t copies_helped; /* chunks targets took (SHMEM_DEBUG) */

/* Which granules of each peer's segments have their pages in this PE's
 * page tables because a helped copy filled them: one bit per granule,
 * a bitmap per segment and peer, each made on first need. A chunk the target
 * copied never touched this PE's mapping, so without the fill the next
 * put or get there pays a page fault per page (about 1 us here; 16 for a
 * 64 KiB put that copies in 6.5); which chunks the target takes depends
 * on when it wakes, so a program's later speed would vary by run
 * (docs/performance-log.md, "OSU put_mr 64 KiB (s11)"). Only touched under
 * help_busy. */
#define SHMEMI_FILL_GRANULE ((size_t)64 * 1024)
static uint8_t **filled[SHMEMI_SEG_COUNT]; /* n_pes bitmaps or NULL */
static int fill_unsupported;

static size_t chunk_for(size_t bytes)
{
    size_t c = bytes / 16;
    return c < SHMEMI_HELP_CHUNK_MIN   ? SHMEMI_HELP_CHUNK_MIN
           : c > SHMEMI_HELP_CHUNK_MAX ? SHMEMI_HELP_CHUNK_MAX
                                       : c & ~(size_t)63;
}

static size_t chunks_of(size_t bytes, size_t chunk)
{
    return (size_t)shmemi_help_chunks(bytes, chunk);
}

static void copy_chunk(char *dst, const char *src, size_t bytes,
                       size_t chunk, uint32_t i)
{
    uint64_t at, n;
    shmemi_help_chunk_span(bytes, chunk, i, &at, &n);
    memcpy(dst + at, src + at, n);
}

/* The next chunk of copy seq, or -1 when none is left (or the copy is
 * over and another may have begun). */
static int64_t take_chunk(struct help_block *b, uint32_t seq, size_t n)
{
    uint64_t v = atomic_load_explicit(&b->take, memory_order_acquire);
    for (;;) {
        if ((uint32_t)(v >> 32) != seq || (uint32_t)v >= n)
            return -1;
        if (atomic_compare_exchange_weak_explicit(&b->take, &v, v + 1,
                                                  memory_order_acq_rel,
                                                  memory_order_acquire))
            return (int64_t)(uint32_t)v;
    }
}

/* The target's side, in its progress. */
static void on_help(pami_context_t context, void *cookie, const void *header,
                    size_t header_len, const void *data, size_t data_len,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    shmemi_help_msg_t m;
    pami_task_t task;
    (void)context;
    (void)cookie;
    (void)data;
    (void)recv;

    if (help_closed)
        return;
    pami_endpoint_query(origin, &task, NULL);
    int pe = (int)task;
    size_t sizes[SHMEMI_SEG_COUNT];
    for (int s = 0; s < SHMEMI_SEG_COUNT; s++)
        sizes[s] = shmemi.seg[s].size;
    const char *why = shmemi_help_decode(header, header_len, data_len, pe,
                                         shmemi.n_pes, shmemi.my_pe, sizes,
                                         SHMEMI_SEG_COUNT, &m);
    if (why != NULL) {
        shmemi_warn("HELP of %zu + %zu bytes from PE %d refused (bad %s)",
                    header_len, data_len, pe, why);
        return;
    }
    /* The caller's side of the copy is in its segment, seen through this
     * PE's mapping; this PE's side is its own. */
    char *heap = shmemi.seg[SHMEMI_SEG_HEAP].mapped[pe];
    char *theirs = shmemi.seg[m.put ? m.src_seg : m.dst_seg].mapped[pe];
    if (heap == NULL || theirs == NULL) {
        shmemi_warn("HELP from PE %d refused (its segment is not mapped)",
                    pe);
        return;
    }
    struct help_block *b = (struct help_block *)(heap + block_off);
    char *dst = m.put ? shmemi.seg[m.dst_seg].base + m.dst_off
                      : theirs + m.dst_off;
    const char *src = m.put ? theirs + m.src_off
                            : shmemi.seg[m.src_seg].base + m.src_off;
    size_t n = chunks_of(m.bytes, m.chunk);
    int64_t i;
    while ((i = take_chunk(b, m.seq, n)) >= 0) {
        copy_chunk(dst, src, m.bytes, m.chunk, (uint32_t)i);
        atomic_fetch_add_explicit(&b->helped, 1, memory_order_release);
    }
}

int shmemi_help_init(void)
{
    const char *v = getenv("SHMEM_COPY_HELP");
    size_t bytes;
    shmemi.copy_help_min = SHMEMI_HELP_DEFAULT;
    if (v != NULL && *v != '\0') {
        if (strcmp(v, "0") == 0 || strcmp(v, "off") == 0 ||
            strcmp(v, "no") == 0 || strcmp(v, "false") == 0)
            shmemi.copy_help_min = SIZE_MAX;
        else if (shmemi_parse_size(v, &bytes) == 0 && bytes > 0)
            shmemi.copy_help_min = bytes;
        else
            shmemi_warn("SHMEM_COPY_HELP=%s is not a size or 0: %zu bytes",
                        v, shmemi.copy_help_min);
    }
    /* The heap's last line on every PE (the same offset on all); the
     * program's blocks start at offset 0 as they would without it. */
    own_block = shmemi_heap_alloc_tail(sizeof(*own_block));
    if (own_block == NULL)
        return -1;
    block_off = (size_t)((char *)own_block - shmemi.seg[SHMEMI_SEG_HEAP].base);
    atomic_store(&own_block->take, 0);
    atomic_store(&own_block->helped, 0);
    own_block->pid = (int32_t)getpid();
    peer_pidfd = malloc((size_t)shmemi.n_pes * sizeof(*peer_pidfd));
    if (peer_pidfd == NULL)
        return -1;
    for (int i = 0; i < shmemi.n_pes; i++)
        peer_pidfd[i] = -1;
    pami_result_t rc = pami_dispatch_set(shmemi.context, SHMEMI_DISPATCH_HELP,
                                         on_help, NULL, NULL);
    if (rc != PAMI_SUCCESS) {
        shmemi_warn("pami_dispatch_set (HELP): %s", pami_error_text(rc));
        return -1;
    }
    return 0;
}

void shmemi_help_fini(void)
{
    help_closed = 1;
    if (peer_pidfd == NULL)
        return;
    shmemi_debug("%llu chunks of this PE's large copies taken by their "
                 "targets", (unsigned long long)copies_helped);
    for (int i = 0; i < shmemi.n_pes; i++)
        if (peer_pidfd[i] >= 0)
            close(peer_pidfd[i]);
    free(peer_pidfd);
    peer_pidfd = NULL;
    for (int s = 0; s < SHMEMI_SEG_COUNT; s++) {
        for (int i = 0; filled[s] != NULL && i < shmemi.n_pes; i++)
            free(filled[s][i]);
        free(filled[s]);
        filled[s] = NULL;
    }
}

/* 1 when PE pe's process has ended (its pidfd is readable). */
static int peer_dead(int pe)
{
    if (peer_pidfd[pe] < 0) {
        struct help_block *b = (struct help_block *)(
            shmemi.seg[SHMEMI_SEG_HEAP].mapped[pe] + block_off);
        peer_pidfd[pe] = (int)syscall(SYS_pidfd_open, (pid_t)b->pid, 0);
        if (peer_pidfd[pe] < 0)
            return errno == ESRCH;
    }
    struct pollfd p = { .fd = peer_pidfd[pe], .events = POLLIN };
    return poll(&p, 1, 0) == 1;
}

static int send_help(int pe, const shmemi_help_msg_t *m)
{
    pami_send_immediate_t s;
    memset(&s, 0, sizeof(s));
    s.dest = shmemi.endpoints[pe];
    s.dispatch = SHMEMI_DISPATCH_HELP;
    s.header = m;
    s.header_len = sizeof(*m);
    shmemi_lock();
    pami_result_t rc = pami_send_immediate(shmemi.context, &s);
    shmemi_unlock();
    return rc == PAMI_SUCCESS;
}

static int granule_filled(const uint8_t *bits, size_t g)
{
    return bits[g / 8] >> (g % 8) & 1;
}

/* Fills this PE's page tables for [off, off + bytes) of PE pe's segment
 * seg, by whole granules, each at most once (MADV_POPULATE_WRITE: the
 * pages exist already, pami allocates a region's pages when it makes
 * it). The cost is that of the faults it saves, paid once, here. */
static void fill_mapping(int seg, int pe, size_t off, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    shmemi_segment_t *sg = &shmemi.seg[seg];
    if (fill_unsupported || sg->mapped == NULL || sg->mapped[pe] == NULL)
        return;
    if (filled[seg] == NULL) {
        filled[seg] = calloc((size_t)shmemi.n_pes, sizeof(*filled[seg]));
        if (filled[seg] == NULL)
            return;
    }
    if (filled[seg][pe] == NULL) {
        size_t granules = (sg->size + SHMEMI_FILL_GRANULE - 1) /
                          SHMEMI_FILL_GRANULE;
        filled[seg][pe] = calloc((granules + 7) / 8, 1);
        if (filled[seg][pe] == NULL)
            return;
    }
    uint8_t *bits = filled[seg][pe];
    size_t g = off / SHMEMI_FILL_GRANULE;
    size_t end = (off + bytes - 1) / SHMEMI_FILL_GRANULE + 1;
    while (g < end) {
        if (granule_filled(bits, g)) {
            g++;
            continue;
        }
        size_t first = g;
        while (g < end && !granule_filled(bits, g))
            g++;
        size_t lo = first * SHMEMI_FILL_GRANULE;
        size_t hi = g * SHMEMI_FILL_GRANULE;
        if (hi > sg->size)
            hi = sg->size;
        if (madvise(sg->mapped[pe] + lo, hi - lo, MADV_POPULATE_WRITE) != 0) {
            /* Before Linux 5.14 (EINVAL): pages fault as they are touched. */
            shmemi_debug("madvise(MADV_POPULATE_WRITE) of PE %d's segment: "
                         "%s", pe, strerror(errno));
            if (errno == EINVAL)
                fill_unsupported = 1;
            return;
        }
        for (size_t i = first; i < g; i++)
            bits[i / 8] |= (uint8_t)(1u << (i % 8));
    }
#else
    (void)seg;
    (void)pe;
    (void)off;
    (void)bytes;
#endif
}

int shmemi_help_copy(int put, int pe, void *dst, const void *src,
                     size_t bytes, const void *sym)
{
    const void *mine = put ? src : dst;
    size_t my_off, remote_off;
    int my_seg, remote_seg;

    if (bytes < shmemi.copy_help_min || pe == shmemi.my_pe ||
        own_block == NULL ||
        (my_seg = shmemi_segment_of(mine, bytes, &my_off)) < 0 ||
        (remote_seg = shmemi_segment_of(sym, bytes, &remote_off)) < 0 ||
        !shmemi.node_mapped[remote_seg] ||
        !shmemi.node_mapped[my_seg] ||
        !shmemi.node_mapped[SHMEMI_SEG_HEAP] ||
        chunks_of(bytes, chunk_for(bytes)) > UINT32_MAX ||
        atomic_flag_test_and_set_explicit(&help_busy, memory_order_acquire))
        return 0;
    uint32_t seq = ++help_seq;
    size_t chunk = chunk_for(bytes);
    size_t n = chunks_of(bytes, chunk);
    shmemi_help_msg_t m = {
        .seq = seq, .chunk = (uint32_t)chunk, .put = (uint8_t)put,
        .dst_seg = (uint8_t)(put ? remote_seg : my_seg),
        .src_seg = (uint8_t)(put ? my_seg : remote_seg),
        .dst_off = put ? remote_off : my_off,
        .src_off = put ? my_off : remote_off,
        .bytes = bytes,
    };
    atomic_store_explicit(&own_block->helped, 0, memory_order_relaxed);
    atomic_store_explicit(&own_block->take, (uint64_t)seq << 32,
                          memory_order_release);
    /* Not sent (EAGAIN): the caller copies every chunk, as with a target
     * that is busy. */
    send_help(pe, &m);
    uint32_t taken = 0;
    for (;;) {
        uint64_t v = atomic_fetch_add_explicit(&own_block->take, 1,
                                               memory_order_acq_rel);
        if ((uint32_t)v >= n)
            break;
        copy_chunk(dst, src, bytes, chunk, (uint32_t)v);
        taken++;
    }
    /* Only the chunks the target took are left, each being copied. */
    uint32_t theirs = (uint32_t)n - taken;
    for (unsigned spins = 0;
         atomic_load_explicit(&own_block->helped, memory_order_acquire) !=
         theirs;
         spins++) {
        if (spins < 4096) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        /* A target that died in the middle leaves its chunks to us: the
         * source is unchanged, so copying all again is safe. */
        if (peer_dead(pe)) {
            shmemi_warn("PE %d died while it copied part of a %s of %zu "
                        "bytes; this PE copied it again", pe,
                        put ? "put" : "get", bytes);
            memcpy(dst, src, bytes);
            theirs = 0;
            break;
        }
        /* A target that hangs (stopped) in the middle of a chunk would
         * keep us here for ever, and copying its chunks ourselves is not
         * safe (it may write them later, over a reused source's new
         * data): pami's probe finds it after PAMI_PEER_TIMEOUT, which
         * ends this PE as any wait would. */
        if (spins % 1024 == 0) {
            shmemi_advance(shmemi.context);
            shmemi_check_peers(shmemi.context);
        }
        sched_yield();
    }
    if (theirs != 0)
        fill_mapping(remote_seg, pe, remote_off, bytes);
    copies_helped += theirs;
    atomic_flag_clear_explicit(&help_busy, memory_order_release);
    return 1;
}
