/*
 * The shared-memory transport: UCX underneath for everything, and for
 * active messages between endpoints of one node a queue per ordered pair
 * of workers (shm_queue.h) in the receiving worker's inbox, a memfd that
 * peers open through /proc/PID/fd (so no name is ever left in /dev/shm,
 * even after SIGKILL). A sleeping worker is woken through its eventfd,
 * which peers take with pidfd_getfd, and only when its sleeping flag is
 * set (docs/protocols/shm-queue.md gives the layout and the order).
 *
 * Worker addresses carry a shm_addr_t in front of UCX's own.
 */
#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "peer_fd.h"
#include "shm_queue.h"

#define SHM_ADDR_MAGIC 0x70616d73u /* "pams" */
#define SHM_SEG_MAGIC  0x70616d692d73686dull
#define SHM_VERSION    3 /* 3: entries may be references */
#define SHM_PAGE       4096
#define SHM_CLAIM_OFF  64   /* the claim counter's line */
#define SHM_SLEEP_OFF  128  /* the sleeping flag's line */
#define SHM_CTL_OFF    SHM_PAGE
#define SHM_POLL_MAX   64   /* entries taken from one queue per poll */
#define SHM_WATCH_POLLS 4096 /* polls without a sleep: a busy context */
#define SHM_UCX_EVERY  8    /* an idle UCX worker is polled every 8 turns */
#define SHM_STALL_NS   2000000 /* sends waiting this long for room sleep */
/* A message longer than this (none of the program's sends below the
 * default rendezvous threshold; pami's bulk messages of its TCP-style
 * paths) moves its endpoint to UCX for good, once the queue is empty: a
 * ring of a few KiB moves megabytes only as fast as both tasks get turns
 * on a CPU, which oversubscribed is slow. */
#define SHM_BULK       ((size_t)128 * 1024)
#define SHM_UCX_HOT    1024 /* ... but every turn for this many after UCX
                               had work or was given some */
/* The longest data a reference carries (PAMI_SHM_READ_MIN): a receiver
 * reads it into a buffer of its own, which grows to this at most. */
#define SHM_REF_MAX    SHM_BULK

typedef struct {
    uint64_t magic;
    uint64_t nonce;
    uint32_t version;
    uint32_t nlines;
    uint32_t max_lines;
    uint32_t max_queues;
    uint32_t flags;     /* SHM_SEG_MEMBARRIER */
    uint32_t start_lines;       /* a queue's lap until its sender streams */
    uint32_t start_entry_lines; /* the largest entry in that lap */
} shm_seg_hdr_t;

/* The owner calls membarrier(GLOBAL_EXPEDITED) between storing its
 * sleeping flag and looking at its queues. */
#define SHM_SEG_MEMBARRIER 1u

typedef struct {
    uint32_t magic;
    uint32_t on;
    int32_t  pid;
    int32_t  memfd;
    int32_t  efd;
    uint32_t pad;
    uint64_t nonce;
} shm_addr_t;

typedef struct shm_pending {
    struct shm_pending *next;
    tp_req_t   *req;
    const void *hdr, *data;
    size_t      hdr_len, data_len, off;
    unsigned    flags;
    bool        bulk;   /* goes by UCX once the queue is empty */
    bool        ref;    /* goes as a reference (shmq_put_ref) */
    uint64_t    end;    /* a reference in the queue: done when the
                           consumer's head reaches this */
} shm_pending_t;

typedef struct shm_ep   shm_ep_t;
typedef struct shm_worker {
    tp_worker_t *ucx;
    tp_am_fn     am_fn;
    void        *am_arg;
    tp_drop_fn   drop_fn;
    bool         on;
    int          memfd, efd, epfd, ucx_fd;
    uint8_t     *seg;
    size_t       seg_bytes, ring_off;
    uint32_t     nlines, max_lines, max_queues;
    uint32_t     start_lines, start_entry_lines;
    size_t       msg_max;
    _Atomic uint32_t *claimed, *sleeping;
    shmq_cons_t *cons;
    int         *prod_efd;  /* per queue: its producer's eventfd, -1 none
                               yet, -2 none to be had */
    int32_t     *prod_pid;  /* per queue: its producer, 0 not read yet */
    uint8_t     *ref_buf;   /* where references are read to */
    size_t       ref_cap;
    size_t       read_min;  /* PAMI_SHM_READ_MIN: 0 no references */
    uint32_t     ncons;
    uint8_t     *scratch;
    bool         armed, ucx_busy;
    bool         asym;      /* this process is registered for membarrier
                               and this worker calls it before sleeping */
    bool         asym_warned, watch_warned;
    bool         ucx_watched;  /* ucx_fd is in epfd (ucx_watch) */
    unsigned     watch_polls;  /* progress calls since the last arm */
    unsigned     ucx_hot;
    unsigned     turn;
    shm_ep_t    *pending_eps;
    uint64_t     pend_moved_ns; /* when waiting sends last moved */
    shm_pending_t *cancel_head;
    size_t       shm_eps;
    uint8_t     *addr;
    size_t       addr_len;
    tp_stats_t   stats;
} shm_worker_t;

struct shm_ep {
    tp_ep_t      *ucx;
    shm_worker_t *w;
    bool          shm, on_list;
    bool          ucx_only; /* a bulk message moved it to UCX */
    bool          grown;    /* the lap is the whole ring */
    uint32_t      grown_entry_lines;
    shmq_prod_t   prod;
    size_t        msg_max;
    uint8_t      *peer_seg;
    size_t        peer_bytes;
    _Atomic uint32_t *peer_sleeping;
    bool          light_wake; /* the peer's membarrier fences us */
    int           peer_efd;
    shm_pending_t *pend_head, **pend_tail;
    /* References in the queue whose data the consumer has not read yet
     * (their sends complete when its head passes them), in order. */
    shm_pending_t *ref_head, **ref_tail;
    shm_ep_t     *next_pending;
    tp_req_t     *close_req; /* a close waiting for pending sends */
};

#define W(x)  ((shm_worker_t *)(x))
#define E(x)  ((shm_ep_t *)(x))

static size_t round_page(size_t n)
{
    return (n + SHM_PAGE - 1) / SHM_PAGE * SHM_PAGE;
}

static size_t seg_ring_off(uint32_t max_queues)
{
    return SHM_CTL_OFF + round_page((size_t)max_queues * SHMQ_LINE);
}

static size_t seg_size(uint32_t nlines, uint32_t max_queues)
{
    return seg_ring_off(max_queues) +
           (size_t)max_queues * nlines * SHMQ_LINE;
}

static uint64_t nonce_new(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                 ((uint64_t)getpid() << 17) ^ (uint64_t)(uintptr_t)&ts;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    return x ^ (x >> 29);
}

/* ---- asymmetric fences ---- */

/* A sender must order its entry's stores before its read of the
 * receiver's sleeping flag, and the receiver its flag's store before its
 * look at the queues. The receiver sleeps rarely, the sender sends often:
 * the sleeper calls membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), which
 * runs a full fence on every CPU running a process registered for it,
 * and senders of registered processes need only the compiler's order
 * (shm-queue.md, "Sleeping and waking"). Registered once per process. */
static pthread_once_t asym_once = PTHREAD_ONCE_INIT;
static bool           asym_registered;

static void asym_register(void)
{
    long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (q < 0 || !(q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ||
        !(q & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED)) {
        pami_debug("shm", "membarrier(GLOBAL_EXPEDITED) is not offered: "
                   "full fences");
        return;
    }
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0,
                0) != 0) {
        pami_debug("shm", "membarrier registration failed (%s): full fences",
                   strerror(errno));
        return;
    }
    asym_registered = true;
}

/* ---- the inbox ---- */

/* The ring and its largest entry, and the lap and entry a queue starts
 * with: powers of two of 64 lines and more, entries of at most half of
 * theirs, nothing of the start larger than the grown. */
static bool sizes_ok(uint32_t nlines, uint32_t max_lines, uint32_t start,
                     uint32_t start_entry)
{
    return nlines >= 64 && nlines <= 65536 &&
           (nlines & (nlines - 1)) == 0 && max_lines >= 1 &&
           max_lines <= 1024 && max_lines <= nlines / 2 && start >= 64 &&
           start <= nlines && (start & (start - 1)) == 0 &&
           start_entry >= 1 && start_entry <= start / 2 &&
           start_entry <= max_lines;
}

static int inbox_create(shm_worker_t *w, const tp_worker_params_t *p)
{
    w->nlines     = p->shm_queue_lines;
    w->max_lines  = p->shm_entry_lines;
    w->max_queues = p->shm_max_queues;
    w->msg_max    = p->shm_msg_max;
    w->start_lines       = p->shm_start_lines;
    w->start_entry_lines = p->shm_start_entry_lines;
    if (!sizes_ok(w->nlines, w->max_lines, w->start_lines,
                  w->start_entry_lines) || w->max_queues == 0 ||
        w->msg_max > UINT32_MAX) {
        pami_error("shm", "queue settings out of range (%u lines, entries "
                   "of %u lines, starting with %u and %u, %u queues)",
                   w->nlines, w->max_lines, w->start_lines,
                   w->start_entry_lines, w->max_queues);
        return -EINVAL;
    }
    w->seg_bytes = seg_size(w->nlines, w->max_queues);
    w->ring_off  = seg_ring_off(w->max_queues);
    w->memfd = memfd_create("pami-shmq", MFD_CLOEXEC);
    if (w->memfd < 0 || ftruncate(w->memfd, (off_t)w->seg_bytes) != 0) {
        pami_error("shm", "cannot make a %zu-byte inbox: %s", w->seg_bytes,
                   strerror(errno));
        return -errno;
    }
    void *seg = mmap(NULL, w->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                     w->memfd, 0);
    if (seg == MAP_FAILED) {
        pami_error("shm", "cannot map the inbox: %s", strerror(errno));
        return -errno;
    }
    w->seg      = seg;
    w->claimed  = (_Atomic uint32_t *)(w->seg + SHM_CLAIM_OFF);
    w->sleeping = (_Atomic uint32_t *)(w->seg + SHM_SLEEP_OFF);
    w->cons     = calloc(w->max_queues, sizeof(*w->cons));
    w->prod_efd = malloc(w->max_queues * sizeof(*w->prod_efd));
    w->prod_pid = calloc(w->max_queues, sizeof(*w->prod_pid));
    w->read_min = p->shm_read_min;
    w->scratch  = malloc(shmq_frag_max(w->max_lines));
    w->efd      = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->cons == NULL || w->prod_efd == NULL || w->prod_pid == NULL ||
        w->scratch == NULL || w->efd < 0)
        return -ENOMEM;
    for (uint32_t i = 0; i < w->max_queues; i++)
        w->prod_efd[i] = -1;
    struct epoll_event ev = {.events = EPOLLIN};
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->efd, &ev) != 0)
        return -errno;
    shm_seg_hdr_t *h = (shm_seg_hdr_t *)w->seg;
    h->nonce      = nonce_new();
    h->version    = SHM_VERSION;
    h->nlines     = w->nlines;
    h->max_lines  = w->max_lines;
    h->max_queues = w->max_queues;
    h->flags      = w->asym ? SHM_SEG_MEMBARRIER : 0;
    h->start_lines       = w->start_lines;
    h->start_entry_lines = w->start_entry_lines;
    h->magic      = SHM_SEG_MAGIC;
    return 0;
}

static void inbox_destroy(shm_worker_t *w)
{
    if (w->cons != NULL)
        for (uint32_t i = 0; i < w->ncons; i++)
            shmq_cons_fini(&w->cons[i]);
    free(w->cons);
    if (w->prod_efd != NULL)
        for (uint32_t i = 0; i < w->ncons; i++)
            if (w->prod_efd[i] >= 0)
                close(w->prod_efd[i]);
    free(w->prod_efd);
    free(w->prod_pid);
    free(w->ref_buf);
    free(w->scratch);
    if (w->seg != NULL)
        munmap(w->seg, w->seg_bytes);
    if (w->memfd >= 0)
        close(w->memfd);
    if (w->efd >= 0)
        close(w->efd);
}

/* ---- the worker ---- */

static int shm_init(const tp_params_t *params, tp_context_t **ctx)
{
    return tp_ucx_ops.init(params, ctx);
}

static void shm_fini(tp_context_t *ctx)
{
    tp_ucx_ops.fini(ctx);
}

static int shm_query(tp_context_t *ctx, tp_info_t *info)
{
    return tp_ucx_ops.query(ctx, info);
}

static void shm_worker_destroy(tp_worker_t *tw)
{
    shm_worker_t *w = W(tw);
    if (w == NULL)
        return;
    while (w->cancel_head != NULL) {
        shm_pending_t *p = w->cancel_head;
        w->cancel_head   = p->next;
        free(p);
    }
    inbox_destroy(w);
    if (w->epfd >= 0)
        close(w->epfd);
    if (w->ucx != NULL)
        tp_ucx_ops.worker_destroy(w->ucx);
    free(w->addr);
    free(w);
}

static int shm_worker_create(tp_context_t *ctx, const tp_worker_params_t *p,
                             tp_worker_t **out)
{
    shm_worker_t *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return -ENOMEM;
    w->memfd = w->efd = w->epfd = -1;
    w->am_fn   = p->am_fn;
    w->am_arg  = p->am_arg;
    w->drop_fn = p->drop_fn;
    w->on      = p->shm_on != 0;
    if (w->on && p->shm_membarrier) {
        pthread_once(&asym_once, asym_register);
        w->asym = asym_registered;
    }
    int rc = tp_ucx_ops.worker_create(ctx, p, &w->ucx);
    if (rc == 0)
        rc = tp_ucx_ops.event_fd(w->ucx, &w->ucx_fd);
    if (rc == 0 && (w->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        rc = -errno;
    if (rc == 0 && w->on)
        rc = inbox_create(w, p);
    const void *uaddr = NULL;
    size_t      ulen  = 0;
    if (rc == 0)
        rc = tp_ucx_ops.worker_address(w->ucx, &uaddr, &ulen);
    if (rc == 0) {
        w->addr_len = sizeof(shm_addr_t) + ulen;
        w->addr     = calloc(1, w->addr_len);
        if (w->addr == NULL)
            rc = -ENOMEM;
    }
    if (rc != 0) {
        shm_worker_destroy((tp_worker_t *)w);
        return rc;
    }
    shm_addr_t a = {.magic = SHM_ADDR_MAGIC, .on = w->on, .pid = getpid(),
                    .memfd = w->memfd, .efd = w->efd,
                    .nonce = w->on ? ((shm_seg_hdr_t *)w->seg)->nonce : 0};
    memcpy(w->addr, &a, sizeof(a));
    memcpy(w->addr + sizeof(a), uaddr, ulen);
    w->stats.shm_on = w->on;
    *out = (tp_worker_t *)w;
    return 0;
}

static int shm_worker_address(tp_worker_t *tw, const void **addr, size_t *len)
{
    *addr = W(tw)->addr;
    *len  = W(tw)->addr_len;
    return 0;
}

/* ---- endpoints ---- */

/* Maps the peer's inbox, checks its header and claims a queue in it. */
static int shm_connect(shm_ep_t *e, const shm_addr_t *a)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)a->pid, (int)a->memfd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat sb;
    int rc = -EPROTO;
    if (fstat(fd, &sb) != 0 || (size_t)sb.st_size < SHM_CTL_OFF) {
        close(fd);
        return rc;
    }
    e->peer_bytes = (size_t)sb.st_size;
    void *seg = mmap(NULL, e->peer_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                     fd, 0);
    close(fd);
    if (seg == MAP_FAILED)
        return -errno;
    e->peer_seg = seg;
    shm_seg_hdr_t h;
    memcpy(&h, seg, sizeof(h));
    if (h.magic != SHM_SEG_MAGIC || h.nonce != a->nonce ||
        h.version != SHM_VERSION ||
        !sizes_ok(h.nlines, h.max_lines, h.start_lines,
                  h.start_entry_lines) ||
        h.max_queues == 0 || h.max_queues > (1u << 20) ||
        seg_size(h.nlines, h.max_queues) > e->peer_bytes)
        return -EPROTO;
    e->peer_efd = pami_peer_eventfd(a->pid, a->efd);
    if (e->peer_efd < 0)
        return -EPROTO;
    /* Memory first: a claimed queue is never given back. The producer
     * starts with the owner's start lap and entries. */
    if (!shmq_prod_init(&e->prod, NULL, NULL, h.nlines, h.start_entry_lines,
                        h.start_lines))
        return -ENOMEM;
    e->grown_entry_lines = h.max_lines;
    e->grown = h.start_lines == h.nlines &&
               h.start_entry_lines == h.max_lines;
    uint32_t q = atomic_fetch_add((_Atomic uint32_t *)(e->peer_seg +
                                                       SHM_CLAIM_OFF), 1);
    if (q >= h.max_queues)
        return -ENOSPC;
    e->prod.ctl  = (shmq_ctl_t *)(e->peer_seg + SHM_CTL_OFF +
                                  (size_t)q * SHMQ_LINE);
    e->prod.ring = e->peer_seg + seg_ring_off(h.max_queues) +
                   (size_t)q * h.nlines * SHMQ_LINE;
    /* Before the first entry: the owner reads them only when we ask for
     * room, which comes later. */
    e->prod.ctl->pid = getpid();
    e->prod.ctl->efd = e->w->efd;
    atomic_store_explicit(&e->prod.ctl->flags,
                          e->w->asym ? SHMQ_CTL_MEMBARRIER : 0,
                          memory_order_relaxed);
    /* Only a registered process is fenced by the peer's membarrier. */
    e->light_wake = asym_registered && (h.flags & SHM_SEG_MEMBARRIER);
    e->peer_sleeping  = (_Atomic uint32_t *)(e->peer_seg + SHM_SLEEP_OFF);
    return 0;
}

static void shm_disconnect(shm_ep_t *e)
{
    if (e->peer_seg != NULL)
        munmap(e->peer_seg, e->peer_bytes);
    if (e->peer_efd >= 0)
        close(e->peer_efd);
    shmq_prod_fini(&e->prod);
    e->peer_seg = NULL;
    e->peer_efd = -1;
    if (e->shm)
        e->w->shm_eps--;
    e->shm = false;
}

static int shm_ep_create(tp_worker_t *tw, const void *addr, unsigned flags,
                         tp_ep_error_fn err_fn, void *err_arg, tp_ep_t **out)
{
    shm_worker_t     *w = W(tw);
    /* Addresses sit in the exchanged blob at any alignment. */
    shm_addr_t        copy;
    const shm_addr_t *a = &copy;
    memcpy(&copy, addr, sizeof(copy));
    if (a->magic != SHM_ADDR_MAGIC) {
        pami_error("shm", "a worker address without its shm part");
        return -EINVAL;
    }
    shm_ep_t *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return -ENOMEM;
    e->w         = w;
    e->peer_efd  = -1;
    e->pend_tail = &e->pend_head;
    e->ref_tail  = &e->ref_head;
    int rc = tp_ucx_ops.ep_create(w->ucx, (const uint8_t *)addr + sizeof(*a),
                                  flags, err_fn, err_arg, &e->ucx);
    if (rc != 0) {
        free(e);
        return rc;
    }
    if (w->on && a->on && (flags & TP_EP_LOCAL) &&
        !(flags & TP_EP_PEER_ERRORS)) {
        int src = shm_connect(e, a);
        if (src == 0) {
            e->shm     = true;
            e->msg_max = w->msg_max;
            w->shm_eps++;
            w->stats.shm_peers++;
        } else {
            pami_debug("shm", "pid %d: its queues cannot be used (%s); "
                       "sending by UCX", (int)a->pid, strerror(-src));
            e->shm = false;
            shm_disconnect(e);
        }
    }
    *out = (tp_ep_t *)e;
    return 0;
}

/* Wakes the peer when it sleeps or is about to: the enqueue's stores,
 * then this fence, then the flag (the peer: flag, fence, queues). A peer
 * that calls membarrier there fences this process itself. */
static inline void wake(shm_ep_t *e)
{
    shmq_fence(e->light_wake);
    if (atomic_load_explicit(e->peer_sleeping, memory_order_relaxed)) {
        uint64_t one = 1;
        if (write(e->peer_efd, &one, sizeof(one)) == sizeof(one))
            e->w->stats.shm_wakeups++;
    }
}

/* The sender streams: its queue takes the whole ring and the largest
 * entries from now on (shm-queue.md, "Growing"). The pages past the
 * start become resident only as the producer writes them. */
static inline void grow(shm_ep_t *e)
{
    /* Without memory for the producer's record of the larger lap it
     * stays as it is (and tries again at the next such message). */
    if (!e->grown && shmq_prod_grow(&e->prod, e->grown_entry_lines))
        e->grown = true;
}

/* A message that finds no room grows the queue when the start lap holds
 * fewer than 16 of its kind (1 KiB and more by default): too few to keep
 * the two tasks from going in lock step. A flood of small messages
 * leaves it at its start size. */
static inline bool worth_growing(const shm_ep_t *e, size_t total)
{
    size_t lines = (SHMQ_ENTRY_HDR + total + SHMQ_LINE - 1) / SHMQ_LINE;
    return !e->grown && lines * 16 >= e->prod.lap;
}

/* Writes as much of the message as fits; returns the new offset. */
static size_t put_some(shm_ep_t *e, const void *hdr, size_t hdr_len,
                       const void *data, size_t data_len, size_t off)
{
    size_t total = hdr_len + data_len;
    do {
        long n = shmq_put_frag(&e->prod, (uint16_t)hdr_len, total, hdr,
                               hdr_len, data, data_len, off);
        if (n < 0)
            break;
        off += (size_t)n;
    } while (off < total);
    return off;
}

/* The whole message now or nothing of it. */
static bool put_whole(shm_ep_t *e, const void *hdr, size_t hdr_len,
                      const void *data, size_t data_len)
{
    size_t total = hdr_len + data_len;
    if (total <= shmq_frag_max(e->prod.max_lines))
        return shmq_put_frag(&e->prod, (uint16_t)hdr_len, total, hdr,
                             hdr_len, data, data_len, 0) >= 0;
    size_t need = shmq_lines_needed(&e->prod, total);
    if (shmq_room(&e->prod, need) < need)
        return false;
    put_some(e, hdr, hdr_len, data, data_len, 0);
    return true;
}

/* Everything but a message of one line with room known: out of
 * shm_am_send_imm, whose frame then stays small. */
static __attribute__((noinline)) int
send_imm_slow(shm_ep_t *e, const void *hdr, size_t hdr_len, const void *data,
              size_t data_len)
{
    if (!e->shm || (e->ucx_only && e->pend_head == NULL)) {
        e->w->ucx_hot = SHM_UCX_HOT;
        return tp_ucx_ops.am_send_imm(e->ucx, hdr, hdr_len, data, data_len);
    }
    size_t total = hdr_len + data_len;
    if (total > e->msg_max || hdr_len > UINT16_MAX)
        return tp_ucx_ops.am_send_imm(e->ucx, hdr, hdr_len, data, data_len);
    if (e->pend_head != NULL) {
        e->w->stats.shm_full++;
        return -EAGAIN;
    }
    if (total > shmq_frag_max(e->prod.max_lines))
        grow(e);
    bool sent = put_whole(e, hdr, hdr_len, data, data_len);
    if (!sent && worth_growing(e, total)) {
        grow(e);
        sent = put_whole(e, hdr, hdr_len, data, data_len);
    }
    if (!sent) {
        e->w->stats.shm_full++;
        return -EAGAIN;
    }
    e->w->stats.shm_sent++;
    wake(e);
    return 0;
}

static int shm_am_send_imm(tp_ep_t *te, const void *hdr, size_t hdr_len,
                           const void *data, size_t data_len)
{
    shm_ep_t *e = E(te);
    /* Most of what a queue carries: one line, room known, no pad. */
    if (__builtin_expect(e->shm && !e->ucx_only &&
                             e->pend_head == NULL, 1) &&
        shmq_put_line(&e->prod, (uint16_t)hdr_len, hdr, hdr_len, data,
                      data_len)) {
        e->w->stats.shm_sent++;
        wake(e);
        return 0;
    }
    return send_imm_slow(e, hdr, hdr_len, data, data_len);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pending_list_add(shm_ep_t *e)
{
    if (e->on_list)
        return;
    if (e->w->pending_eps == NULL)
        e->w->pend_moved_ns = now_ns();
    e->on_list       = true;
    e->next_pending  = e->w->pending_eps;
    e->w->pending_eps = e;
}

/* Data of PAMI_SHM_READ_MIN bytes and more stays in the sender's buffer:
 * the queue carries a reference, the receiver reads the data with
 * process_vm_readv (one copy, by the kernel, on the receiver's core,
 * instead of one into the ring and one out of it), and the send
 * completes when the consumer's head passes the reference. */
static inline bool wants_ref(const shm_ep_t *e, size_t hdr_len,
                             size_t data_len)
{
    return e->w->read_min != 0 && data_len >= e->w->read_min &&
           data_len <= SHM_REF_MAX &&
           hdr_len + sizeof(shmq_ref_t) <= shmq_frag_max(e->prod.max_lines);
}

/* Puts the reference p in the queue; it then waits in the endpoint's
 * list of references until the consumer has read it. False: no room
 * (p unchanged). */
static bool ref_put(shm_ep_t *e, shm_pending_t *p)
{
    shmq_ref_t r = {.addr = (uint64_t)(uintptr_t)p->data,
                    .len  = p->data_len};
    if (shmq_put_ref(&e->prod, (uint16_t)p->hdr_len, p->hdr, &r) != 0)
        return false;
    p->end       = e->prod.tail;
    p->next      = NULL;
    *e->ref_tail = p;
    e->ref_tail  = &p->next;
    e->w->stats.shm_sent++;
    return true;
}

/* The references the consumer has read (its head passed them) complete,
 * in order; returns how many. */
static unsigned refs_done(shm_ep_t *e)
{
    if (e->ref_head == NULL)
        return 0;
    uint64_t head = atomic_load_explicit(&e->prod.ctl->head,
                                         memory_order_acquire);
    if (head > e->prod.tail)
        return 0; /* a head that cannot be: nothing was read */
    unsigned n = 0;
    while (e->ref_head != NULL && e->ref_head->end <= head) {
        shm_pending_t *p = e->ref_head;
        e->ref_head = p->next;
        if (e->ref_head == NULL)
            e->ref_tail = &e->ref_head;
        tp_req_t *req = p->req;
        free(p);
        req->fn(req, 0);
        n++;
    }
    return n;
}

static int shm_am_send(tp_ep_t *te, const void *hdr, size_t hdr_len,
                       const void *data, size_t data_len, unsigned flags,
                       tp_req_t *req)
{
    shm_ep_t *e = E(te);
    if (!e->shm || (e->ucx_only && e->pend_head == NULL)) {
        e->w->ucx_hot = SHM_UCX_HOT;
        return tp_ucx_ops.am_send(e->ucx, hdr, hdr_len, data, data_len, flags,
                                  req);
    }
    size_t total = hdr_len + data_len;
    /* Only beyond what an entry header can say (4 GiB) does a message
     * leave the queue's order. */
    if (total > e->msg_max || hdr_len > UINT16_MAX) {
        e->w->ucx_hot = SHM_UCX_HOT;
        return tp_ucx_ops.am_send(e->ucx, hdr, hdr_len, data, data_len, flags,
                                  req);
    }
    bool bulk = total > SHM_BULK;
    if (bulk && e->pend_head == NULL && shmq_empty(&e->prod)) {
        e->ucx_only   = true;
        e->w->ucx_hot = SHM_UCX_HOT;
        return tp_ucx_ops.am_send(e->ucx, hdr, hdr_len, data, data_len, flags,
                                  req);
    }
    if (!bulk && wants_ref(e, hdr_len, data_len)) {
        shm_pending_t *p = malloc(sizeof(*p));
        if (p == NULL)
            return -ENOMEM;
        *p = (shm_pending_t){.req = req, .hdr = hdr, .data = data,
                             .hdr_len = hdr_len, .data_len = data_len,
                             .flags = flags, .ref = true};
        if (e->pend_head == NULL && ref_put(e, p))
            wake(e);
        else {
            *e->pend_tail = p;
            e->pend_tail  = &p->next;
            e->w->stats.shm_full++;
        }
        pending_list_add(e);
        return 1;
    }
    size_t off = 0;
    if (e->pend_head == NULL && !bulk) {
        if (total > shmq_frag_max(e->prod.max_lines))
            grow(e);
        off = put_some(e, hdr, hdr_len, data, data_len, 0);
        if (off < total && worth_growing(e, total)) {
            grow(e);
            off = put_some(e, hdr, hdr_len, data, data_len, off);
        }
        if (off == total) {
            e->w->stats.shm_sent++;
            wake(e);
            return 0;
        }
        if (off > 0)
            wake(e);
    }
    shm_pending_t *p = malloc(sizeof(*p));
    if (p == NULL)
        return -ENOMEM; /* nothing of it went when off is 0 */
    *p = (shm_pending_t){.req = req, .hdr = hdr, .data = data,
                         .hdr_len = hdr_len, .data_len = data_len, .off = off,
                         .flags = flags, .bulk = bulk};
    *e->pend_tail = p;
    e->pend_tail  = &p->next;
    e->w->stats.shm_full++;
    pending_list_add(e);
    return 1;
}

/* Ends a close that waited for the pending sends. */
static void close_now(shm_ep_t *e)
{
    tp_req_t *req = e->close_req;
    shm_disconnect(e);
    int rc = tp_ucx_ops.ep_close(e->ucx, 0, req);
    free(e);
    if (rc != 1)
        req->fn(req, 0);
}

/* Sends what waited for room, in order, and completes the references
 * the consumer has read; returns the messages done. */
static unsigned pending_drain(shm_worker_t *w)
{
    unsigned   n = 0;
    shm_ep_t **link = &w->pending_eps;
    while (*link != NULL) {
        shm_ep_t *e = *link;
        bool      moved = false;
        unsigned  read = refs_done(e);
        if (read > 0) {
            n += read;
            w->pend_moved_ns = now_ns();
        }
        while (e->pend_head != NULL) {
            shm_pending_t *p = e->pend_head;
            if (p->bulk && !e->ucx_only) {
                if (!shmq_empty(&e->prod))
                    break; /* the consumer has not taken all before it */
                e->ucx_only = true;
            }
            if (e->ucx_only) {
                /* In order behind the queue's last message, which the
                 * consumer has delivered. */
                e->pend_head = p->next;
                if (e->pend_head == NULL)
                    e->pend_tail = &e->pend_head;
                w->ucx_hot = SHM_UCX_HOT;
                int rc = tp_ucx_ops.am_send(e->ucx, p->hdr, p->hdr_len,
                                            p->data, p->data_len, p->flags,
                                            p->req);
                tp_req_t *req = p->req;
                free(p);
                if (rc != 1)
                    req->fn(req, rc < 0 ? rc : 0);
                n++;
                moved = true;
                continue;
            }
            if (p->ref) {
                shm_pending_t *next = p->next;
                if (!ref_put(e, p))
                    break;
                e->pend_head = next;
                if (next == NULL)
                    e->pend_tail = &e->pend_head;
                moved = true;
                continue;
            }
            size_t off = put_some(e, p->hdr, p->hdr_len, p->data, p->data_len,
                                  p->off);
            moved |= off != p->off;
            p->off = off;
            if (off < p->hdr_len + p->data_len)
                break;
            e->pend_head = p->next;
            if (e->pend_head == NULL)
                e->pend_tail = &e->pend_head;
            w->stats.shm_sent++;
            n++;
            tp_req_t *req = p->req;
            free(p);
            req->fn(req, 0);
        }
        if (moved) {
            wake(e);
            w->pend_moved_ns = now_ns();
        }
        if (e->pend_head == NULL && e->ref_head == NULL) {
            *link      = e->next_pending;
            e->on_list = false;
            if (e->close_req != NULL)
                close_now(e);
        } else
            link = &e->next_pending;
    }
    return n;
}

static int shm_ep_close(tp_ep_t *te, int force, tp_req_t *req)
{
    shm_ep_t     *e = E(te);
    shm_worker_t *w = e->w;
    if ((e->pend_head != NULL || e->ref_head != NULL) && !force) {
        e->close_req = req;
        return 1;
    }
    /* Their callbacks run from the next progress, as UCX's would. */
    if (e->pend_head != NULL) {
        *e->pend_tail  = w->cancel_head;
        w->cancel_head = e->pend_head;
        e->pend_head   = NULL;
        e->pend_tail   = &e->pend_head;
    }
    if (e->ref_head != NULL) {
        *e->ref_tail   = w->cancel_head;
        w->cancel_head = e->ref_head;
        e->ref_head    = NULL;
        e->ref_tail    = &e->ref_head;
    }
    if (e->on_list) {
        for (shm_ep_t **l = &w->pending_eps; *l != NULL;
             l = &(*l)->next_pending)
            if (*l == e) {
                *l = e->next_pending;
                break;
            }
    }
    shm_disconnect(e);
    w->ucx_hot = SHM_UCX_HOT;
    int rc = tp_ucx_ops.ep_close(e->ucx, force, req);
    free(e);
    return rc;
}

/* ---- progress and sleep ---- */

static void deliver(void *arg, const uint8_t *hdr, size_t hdr_len,
                    uint8_t *data, size_t data_len)
{
    shm_worker_t *w = arg;
    w->stats.shm_received++;
    w->am_fn(w->am_arg, hdr, hdr_len, data, data_len, NULL);
}

/* The data of n references, read from their producer's memory with one
 * process_vm_readv into this worker's buffer, one after the other (valid
 * until the next read). */
static const char *fetch(void *arg, shmq_cons_t *q, const shmq_ref_t *refs,
                         unsigned n, uint8_t **data)
{
    shm_worker_t *w = arg;
    size_t        i = (size_t)(q - w->cons), total = 0;
    struct iovec  remote[SHMQ_REF_BATCH];
    if (n == 0 || n > SHMQ_REF_BATCH)
        return "a batch of references of a size out of range";
    for (unsigned k = 0; k < n; k++) {
        if (refs[k].len == 0 || refs[k].len > SHM_REF_MAX)
            return "a reference of no data or of more than 128 KiB";
        remote[k] = (struct iovec){.iov_base = (void *)(uintptr_t)refs[k].addr,
                                   .iov_len  = refs[k].len};
        total += refs[k].len;
    }
    if (total > w->ref_cap) {
        uint8_t *b = realloc(w->ref_buf, total);
        if (b == NULL)
            return "references too long to read (no memory)";
        w->ref_buf = b;
        w->ref_cap = total;
    }
    /* Written by the producer before its first entry; read once. */
    if (w->prod_pid[i] == 0)
        w->prod_pid[i] = q->ctl->pid > 0 ? q->ctl->pid : -1;
    if (w->prod_pid[i] < 0)
        return "a reference from a producer without a process id";
    struct iovec local = {.iov_base = w->ref_buf, .iov_len = total};
    ssize_t got = process_vm_readv(w->prod_pid[i], &local, 1, remote, n, 0);
    if (got != (ssize_t)total) {
        int err = got < 0 ? errno : 0;
        pami_debug("shm", "process_vm_readv of %zu bytes from pid %d: %s",
                   total, (int)w->prod_pid[i],
                   err != 0 ? strerror(err) : "short read");
        /* A producer that died is not a malformed one: say so, the
         * liveness sweep then fails its operations. */
        return err == ESRCH ? "a reference from a producer that is gone"
                            : "a reference whose data cannot be read";
    }
    *data = w->ref_buf;
    return NULL;
}

static void drop(void *arg, const char *why)
{
    shm_worker_t *w = arg;
    w->stats.shm_dropped++;
    if (w->drop_fn != NULL)
        w->drop_fn(w->am_arg, why);
}

/* The producer of queue i sleeps until we free room in it: its eventfd,
 * taken once (from the pid and descriptor it wrote in the control line;
 * only an eventfd is ever written to). */
static void wake_producer(shm_worker_t *w, uint32_t i)
{
    w->cons[i].room_wanted = false;
    if (w->prod_efd[i] == -1) {
        const shmq_ctl_t *ctl = w->cons[i].ctl;
        int fd = pami_peer_eventfd(ctl->pid, ctl->efd);
        w->prod_efd[i] = fd >= 0 ? fd : -2;
    }
    uint64_t one = 1;
    if (w->prod_efd[i] >= 0 &&
        write(w->prod_efd[i], &one, sizeof(one)) == sizeof(one))
        w->stats.shm_wakeups++;
}

/* Queues claimed since the last look get their consumer state. */
static uint32_t queues_seen(shm_worker_t *w)
{
    uint32_t n = atomic_load_explicit(w->claimed, memory_order_acquire);
    if (n > w->max_queues)
        n = w->max_queues;
    for (uint32_t i = w->ncons; i < n; i++) {
        shmq_cons_t *q = &w->cons[i];
        q->ctl       = (shmq_ctl_t *)(w->seg + SHM_CTL_OFF +
                                      (size_t)i * SHMQ_LINE);
        q->ring      = w->seg + w->ring_off + (size_t)i * w->nlines * SHMQ_LINE;
        q->nlines    = w->nlines;
        q->max_lines = w->max_lines;
        q->msg_max   = w->msg_max;
        q->registered = asym_registered;
        q->fetch     = fetch;
    }
    if (n > w->ncons)
        w->ncons = n;
    return w->ncons;
}

/* UCX's worker fd is in our epoll set (the fd pami sleeps on) only while
 * this context sleeps now and then. An fd nested in epoll sets is a cost
 * at every packet even when nobody sleeps: the kernel runs the wakeup of
 * each set it is in, and of each set those are in, in the softirq that
 * queues the packet, under the socket's lock; UCX's TCP sockets sit in
 * its interface's set, that set in the worker's, the worker's in ours,
 * ours in libev's (docs/protocols/shm-queue.md). An arm adds it; a
 * context that then polls SHM_WATCH_POLLS times without sleeping is busy
 * and takes it out (one add and remove per sleep cost 6 us here). */
static int ucx_watch(shm_worker_t *w, bool on)
{
    if (w->ucx_watched == on)
        return 0;
    struct epoll_event ev = {.events = EPOLLIN};
    int rc = epoll_ctl(w->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, w->ucx_fd,
                       &ev) == 0 ? 0 : -errno;
    if (rc == 0 || rc == (on ? -EEXIST : -ENOENT)) {
        w->ucx_watched = on;
        return 0;
    }
    if (!w->watch_warned)
        pami_warn("shm", "cannot %s UCX's event fd %s the context's epoll "
                  "set: %s", on ? "add" : "remove", on ? "to" : "from",
                  strerror(-rc));
    w->watch_warned = true;
    if (!on)
        w->ucx_watched = false; /* a later add finds it (EEXIST) */
    /* Not added: the caller polls instead of sleeping. */
    return on ? -EAGAIN : 0;
}

static inline void ucx_unwatch_busy(shm_worker_t *w)
{
    if (w->ucx_watched && ++w->watch_polls >= SHM_WATCH_POLLS)
        ucx_watch(w, false);
}

static __attribute__((noinline)) unsigned shm_progress_on(shm_worker_t *w)
{
    unsigned n = 0;
    if (w->armed) {
        uint64_t v;
        w->armed = false;
        atomic_store_explicit(w->sleeping, 0, memory_order_relaxed);
        while (read(w->efd, &v, sizeof(v)) == sizeof(v))
            ;
    }
    while (w->cancel_head != NULL) {
        shm_pending_t *p = w->cancel_head;
        w->cancel_head   = p->next;
        tp_req_t *req    = p->req;
        free(p);
        req->fn(req, -ECANCELED);
        n++;
    }
    /* The spin of a waiting task runs this: an empty queue costs one
     * load of its head line's stamp, no call. */
    uint32_t nq = w->ncons;
    if (atomic_load_explicit(w->claimed, memory_order_acquire) != nq)
        nq = queues_seen(w);
    for (uint32_t i = 0; i < nq; i++) {
        shmq_cons_t *q = &w->cons[i];
        /* Messages of one line without a call per message; anything
         * else (and what follows it in this batch) by shmq_poll. */
        uint64_t head0 = q->head;
        unsigned got = 0;
        size_t   hl, total;
        int      one;
        while ((one = shmq_take_line(q, w->scratch, &hl, &total)) > 0) {
            deliver(w, w->scratch, hl, w->scratch + hl, total - hl);
            if (++got == SHM_POLL_MAX)
                break;
        }
        if (one < 0) {
            unsigned m = shmq_poll(q, SHM_POLL_MAX - got, w->scratch, deliver,
                                   drop, w);
            if (m > 0)
                head0 = q->head; /* shmq_poll gave the lines back */
            got += m;
        }
        if (q->head != head0)
            shmq_give_back(q);
        n += got;
        if (q->room_wanted)
            wake_producer(w, i);
    }
    if (w->pending_eps != NULL)
        n += pending_drain(w);
    /* UCX's worker costs a poll even when idle: with node peers talking
     * by queue it is polled every few turns, and every turn for a while
     * after it had work or was handed an operation (a put's completion
     * must not wait 8 turns). */
    if (w->ucx_busy || w->ucx_hot > 0 || (nq == 0 && w->shm_eps == 0) ||
        (++w->turn % SHM_UCX_EVERY) == 0) {
        unsigned m  = tp_ucx_ops.progress(w->ucx);
        w->ucx_busy = m > 0;
        if (m > 0)
            w->ucx_hot = SHM_UCX_HOT;
        else if (w->ucx_hot > 0)
            w->ucx_hot--;
        n += m;
    }
    return n;
}

/* A task with no node peer (alone on its node) has nothing of the
 * queues to do: UCX every turn, without the queue path's frame. */
static __attribute__((noinline)) unsigned shm_progress_alone(shm_worker_t *w)
{
    if (w->shm_eps != 0 || w->armed || w->cancel_head != NULL ||
        w->pending_eps != NULL ||
        atomic_load_explicit(w->claimed, memory_order_acquire) != 0)
        return shm_progress_on(w);
    unsigned m  = tp_ucx_ops.progress(w->ucx);
    w->ucx_busy = m > 0; /* shm_arm reads it */
    if (m > 0)
        w->ucx_hot = SHM_UCX_HOT;
    else if (w->ucx_hot > 0)
        w->ucx_hot--;
    return m;
}

/* Without queues (PAMI_SHM_FASTPATH=0) UCX carries everything: its poll
 * is a tail call, with no frame of ours around it (an idle poll across
 * nodes is the spin of a task waiting for a packet). No queue claimed
 * yet: the lean path above. */
static unsigned shm_progress(tp_worker_t *tw)
{
    shm_worker_t *w = W(tw);
    ucx_unwatch_busy(w);
    if (!w->on)
        return tp_ucx_ops.progress(w->ucx);
    if (w->ncons == 0)
        return shm_progress_alone(w);
    return shm_progress_on(w);
}

static int shm_event_fd(tp_worker_t *tw, int *fd)
{
    *fd = W(tw)->epfd;
    return 0;
}

/* Arms UCX's worker with its fd in our epoll set. */
static int ucx_arm_watched(shm_worker_t *w)
{
    w->watch_polls = 0;
    int rc = ucx_watch(w, true);
    return rc == 0 ? tp_ucx_ops.arm(w->ucx) : rc;
}

/* Whether an endpoint's waiting sends could move now: the consumer read
 * its oldest reference, or its next send fits (or, bound for UCX, the
 * queue is empty). */
static bool pend_moves(shm_ep_t *e)
{
    if (e->ref_head != NULL &&
        atomic_load_explicit(&e->prod.ctl->head, memory_order_acquire) >=
            e->ref_head->end)
        return true;
    const shm_pending_t *p = e->pend_head;
    if (p == NULL)
        return false;
    if (p->bulk)
        return shmq_empty(&e->prod);
    if (p->ref)
        return shmq_can_put(&e->prod, p->hdr_len + sizeof(shmq_ref_t), 0);
    return shmq_can_put(&e->prod, p->hdr_len + p->data_len, p->off);
}

static int shm_arm(tp_worker_t *tw)
{
    shm_worker_t *w = W(tw);
    if (!w->on)
        return ucx_arm_watched(w);
    if (w->cancel_head != NULL || w->ucx_busy)
        return -EAGAIN;
    /* A bulk message through a queue stalls for a moment at every turn of
     * the ring: the consumer is draining it, and a sleep and wakeup per
     * ring would cost more than the wait. Only a stall longer than that
     * sleeps. */
    if (w->pending_eps != NULL && now_ns() - w->pend_moved_ns < SHM_STALL_NS)
        return -EAGAIN;
    /* Sends waiting for room: the consumer wakes us when it frees some
     * and sees want_room (flag, fence, head; it: head, fence, flag). */
    for (shm_ep_t *e = w->pending_eps; e != NULL; e = e->next_pending)
        atomic_store_explicit(&e->prod.ctl->want_room, 1,
                              memory_order_relaxed);
    atomic_store_explicit(w->sleeping, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    int rc = 0;
    /* Our senders (and the consumers of the queues we wait for room in)
     * fence only the compiler when they see our flag: this fences them. */
    if (w->asym &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) != 0) {
        if (!w->asym_warned)
            pami_warn("shm", "membarrier failed (%s): this context polls "
                      "instead of sleeping", strerror(errno));
        w->asym_warned = true;
        rc = -EAGAIN;
    }
    for (shm_ep_t *e = w->pending_eps; e != NULL && rc == 0;
         e = e->next_pending)
        if (e->close_req != NULL || e->ucx_only || pend_moves(e))
            rc = -EAGAIN;
    uint32_t nq = queues_seen(w);
    for (uint32_t i = 0; i < nq && rc == 0; i++)
        if (shmq_ready(&w->cons[i]))
            rc = -EAGAIN;
    if (rc == 0)
        rc = ucx_arm_watched(w);
    if (rc != 0) {
        atomic_store_explicit(w->sleeping, 0, memory_order_relaxed);
        return rc;
    }
    w->armed = true;
    return 0;
}

static void shm_stats(tp_worker_t *tw, tp_stats_t *s)
{
    *s = W(tw)->stats;
}

/* ---- the rest is UCX's, on the wrapped objects ---- */

static inline void hot(shm_worker_t *w)
{
    w->ucx_hot = SHM_UCX_HOT;
}

static int shm_worker_flush(tp_worker_t *tw, tp_req_t *req)
{
    hot(W(tw));
    return tp_ucx_ops.worker_flush(W(tw)->ucx, req);
}

static int shm_ep_flush(tp_ep_t *te, tp_req_t *req)
{
    hot(E(te)->w);
    return tp_ucx_ops.ep_flush(E(te)->ucx, req);
}

static int shm_rkey_unpack(tp_ep_t *te, const void *rkey, tp_rkey_t **out)
{
    return tp_ucx_ops.rkey_unpack(E(te)->ucx, rkey, out);
}

static int shm_mem_reg(tp_context_t *ctx, void *addr, size_t len,
                       tp_mem_t **mem, void *rkey, size_t *rkey_len)
{
    return tp_ucx_ops.mem_reg(ctx, addr, len, mem, rkey, rkey_len);
}

static void shm_mem_dereg(tp_context_t *ctx, tp_mem_t *mem)
{
    tp_ucx_ops.mem_dereg(ctx, mem);
}

static void shm_rkey_destroy(tp_rkey_t *rkey)
{
    tp_ucx_ops.rkey_destroy(rkey);
}

static int shm_put(tp_ep_t *te, const void *local, size_t len, uint64_t raddr,
                   tp_rkey_t *rkey, tp_req_t *req)
{
    hot(E(te)->w);
    return tp_ucx_ops.put(E(te)->ucx, local, len, raddr, rkey, req);
}

static int shm_get(tp_ep_t *te, void *local, size_t len, uint64_t raddr,
                   tp_rkey_t *rkey, tp_req_t *req)
{
    hot(E(te)->w);
    return tp_ucx_ops.get(E(te)->ucx, local, len, raddr, rkey, req);
}

static int shm_atomic(tp_ep_t *te, int op, size_t size, const void *value,
                      void *result, uint64_t raddr, tp_rkey_t *rkey,
                      tp_req_t *req)
{
    hot(E(te)->w);
    return tp_ucx_ops.atomic(E(te)->ucx, op, size, value, result, raddr, rkey,
                             req);
}

const tp_ops_t tp_shm_ops = {
    .name           = "shm",
    .init           = shm_init,
    .fini           = shm_fini,
    .query          = shm_query,
    .worker_create  = shm_worker_create,
    .worker_destroy = shm_worker_destroy,
    .worker_address = shm_worker_address,
    .ep_create      = shm_ep_create,
    .ep_close       = shm_ep_close,
    .am_send_imm    = shm_am_send_imm,
    .am_send        = shm_am_send,
    .progress       = shm_progress,
    .event_fd       = shm_event_fd,
    .arm            = shm_arm,
    .worker_flush   = shm_worker_flush,
    .ep_flush       = shm_ep_flush,
    .mem_reg        = shm_mem_reg,
    .mem_dereg      = shm_mem_dereg,
    .rkey_unpack    = shm_rkey_unpack,
    .rkey_destroy   = shm_rkey_destroy,
    .put            = shm_put,
    .get            = shm_get,
    .atomic         = shm_atomic,
    .stats          = shm_stats,
};
