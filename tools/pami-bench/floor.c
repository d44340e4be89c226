/*
 * The machine's floor between the two tasks of one node, measured through
 * a POSIX shared mapping of the bench's own, with no library in between:
 *
 *   floor_lat   half round trip of 8 bytes written with their flag into
 *               one cache line and answered the same way in another line
 *   floor_rate  8-byte messages per second through a single-producer,
 *               single-consumer ring of 64-byte slots
 *
 * Task 0 creates the mapping, task 1 maps it, then task 0 removes the
 * name at once (the mapping stays until both unmap), so nothing is left
 * behind even when a task dies. Both tasks spin during a measurement, as
 * the latency tests do; every wait is bounded by stall_check.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"

#define LINE       64
#define RING_SLOTS 256 /* 16 KiB of slots: fits in L1 of both cores */

/* A message line: the payload and its flag (the message's sequence
 * number, never 0) in one cache line. */
typedef struct {
    volatile uint64_t seq;
    uint64_t          payload;
    uint8_t           pad[LINE - 16];
} __attribute__((aligned(LINE))) line_t;

typedef struct {
    volatile uint64_t seq; /* i + 1 when slot holds message i */
    uint64_t          payload;
    uint8_t           pad[LINE - 16];
} __attribute__((aligned(LINE))) slot_t;

struct floor_shm {
    line_t ping;                  /* task 0 -> task 1 */
    line_t pong;                  /* task 1 -> task 0 */
    struct {
        volatile uint64_t count;  /* messages measured this round */
        volatile uint64_t lat_ops;
        uint8_t pad[LINE - 16];
    } __attribute__((aligned(LINE))) plan;
    struct {
        volatile uint64_t tail;   /* messages the consumer has taken */
        volatile uint64_t sum;    /* of their payloads, checked */
        uint8_t pad[LINE - 16];
    } __attribute__((aligned(LINE))) cons;
    slot_t ring[RING_SLOTS];
};

static char shm_name[64];
static bool shm_named; /* task 0, until both tasks mapped it */

static void unlink_name(void)
{
    if (shm_named) {
        shm_unlink(shm_name);
        shm_named = false;
    }
}

static inline void store_rel(volatile uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline uint64_t load_acq(volatile uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

void floor_setup(bench_t *b)
{
    b->floor = NULL;
    /* Only when both tasks share this node. Both decide the same way:
     * peer_pid is set on both or on neither. */
    if (!b->opt.vs_ucx)
        return;
    if (b->peer_pid == 0) {
        if (b->me == 0)
            fprintf(stderr, "pami-bench: the two tasks are on different "
                            "nodes: no floor lines\n");
        return;
    }
    long owner = b->me == 0 ? (long)getpid() : b->peer_pid;
    snprintf(shm_name, sizeof(shm_name), "/pami-bench-floor-%ld", owner);
    size_t bytes = sizeof(struct floor_shm);
    int fd = -1;
    if (b->me == 0) {
        shm_unlink(shm_name); /* a stale one of a dead run with our pid */
        fd = shm_open(shm_name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd >= 0) {
            shm_named = true;
            atexit(unlink_name);
            if (ftruncate(fd, (off_t)bytes) != 0) {
                close(fd);
                fd = -1;
            }
        }
    }
    /* Task 1 opens only after task 0 created it: the exchange orders
     * them. Each tells the other whether it has the mapping. */
    uint32_t ok = 0;
    size_t   len;
    if (b->me == 0) {
        ok = fd >= 0;
        uint32_t *peer = pami_side_exchange(b, &ok, sizeof(ok), &len, NULL,
                                            NULL);
        free(peer);
    } else {
        uint32_t *peer = pami_side_exchange(b, &ok, sizeof(ok), &len, NULL,
                                            NULL);
        if (len == sizeof(*peer) && *peer)
            fd = shm_open(shm_name, O_RDWR, 0);
        free(peer);
    }
    void *map = MAP_FAILED;
    if (fd >= 0) {
        map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
    }
    ok = map != MAP_FAILED;
    /* Set before the last exchange: task 0 may leave it first and ask for
     * a floor round, which task 1's handler can see while it is still
     * inside the exchange. Task 0 asks only when both have the mapping. */
    if (ok)
        b->floor = map;
    uint32_t *peer = pami_side_exchange(b, &ok, sizeof(ok), &len, NULL, NULL);
    bool both = ok && len == sizeof(*peer) && *peer;
    free(peer);
    unlink_name(); /* both have tried: the name is no longer needed */
    if (!both) {
        b->floor = NULL;
        if (map != MAP_FAILED)
            munmap(map, bytes);
        if (b->me == 0)
            fprintf(stderr, "pami-bench: no shared mapping for the floor "
                            "(%s); floor lines omitted\n", shm_name);
        return;
    }
    b->floor = map;
}

void floor_teardown(bench_t *b)
{
    if (b->floor != NULL)
        munmap(b->floor, sizeof(struct floor_shm));
    b->floor = NULL;
    unlink_name();
}

/* ---- task 1: answers one round ---- */

void floor_serve(bench_t *b)
{
    struct floor_shm *f = b->floor;
    stall_t s;
    uint64_t ops = f->plan.lat_ops, n = f->plan.count;
    stall_init(&s, "floor_lat ping");
    for (uint64_t i = 1; i <= ops; i++) {
        while (load_acq(&f->ping.seq) != i) {
            cpu_relax();
            stall_check(&s);
        }
        f->pong.payload = f->ping.payload;
        store_rel(&f->pong.seq, i);
    }
    stall_init(&s, "floor_rate slot");
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        slot_t *sl = &f->ring[i % RING_SLOTS];
        while (load_acq(&sl->seq) != i + 1) {
            cpu_relax();
            stall_check(&s);
        }
        sum += sl->payload;
        /* Give slots back in batches of a quarter ring: the producer
         * reads the tail only when it believes the ring full. */
        if ((i + 1) % (RING_SLOTS / 4) == 0 || i + 1 == n) {
            f->cons.sum = sum;
            store_rel(&f->cons.tail, i + 1);
        }
    }
    b->mode = MODE_PAMI;
}

/* ---- task 0: one round, both patterns ---- */

static void floor_round(bench_t *b, uint64_t lat_ops, uint64_t rate_n,
                        double *lat_us, double *rate)
{
    struct floor_shm *f = b->floor;
    memset(f, 0, sizeof(*f));
    f->plan.lat_ops = lat_ops;
    f->plan.count   = rate_n;
    /* The control message travels after the reset: task 1 sees a clean
     * mapping when it enters floor_serve. */
    pami_side_ctrl(b, CTRL_FLOOR, NULL);

    stall_t s;
    stall_init(&s, "floor_lat pong");
    uint64_t warm = lat_ops / 10;
    double   t0   = bench_now();
    for (uint64_t i = 1; i <= lat_ops; i++) {
        if (i == warm + 1)
            t0 = bench_now();
        f->ping.payload = i;
        store_rel(&f->ping.seq, i);
        while (load_acq(&f->pong.seq) != i) {
            cpu_relax();
            stall_check(&s);
        }
        if (f->pong.payload != i)
            bench_die("floor_lat: answer %llu to %llu",
                      (unsigned long long)f->pong.payload,
                      (unsigned long long)i);
    }
    *lat_us = (bench_now() - t0) * 1e6 / (double)(lat_ops - warm) / 2.0;

    stall_init(&s, "floor_rate tail");
    uint64_t tail = 0;
    t0 = bench_now();
    for (uint64_t i = 0; i < rate_n; i++) {
        while (i - tail >= RING_SLOTS) {
            tail = load_acq(&f->cons.tail);
            cpu_relax();
            stall_check(&s);
        }
        slot_t *sl = &f->ring[i % RING_SLOTS];
        sl->payload = i;
        store_rel(&sl->seq, i + 1);
    }
    while (load_acq(&f->cons.tail) != rate_n) {
        cpu_relax();
        stall_check(&s);
    }
    double secs = bench_now() - t0;
    uint64_t want = rate_n * (rate_n - 1) / 2;
    if (f->cons.sum != want)
        bench_die("floor_rate: the consumer's sum is %llu, not %llu",
                  (unsigned long long)f->cons.sum, (unsigned long long)want);
    *rate = secs > 0 ? (double)rate_n / secs : -1;
}

bool floor_measure(bench_t *b, summary_t *lat, summary_t *rate)
{
    if (b->floor == NULL)
        return false;
    const opts_t *o = &b->opt;
    uint64_t lat_ops = o->iters < 0 ? 10000 : (uint64_t)o->iters;
    uint64_t rate_n  = o->iters < 0 ? 1000000 : (uint64_t)o->iters * 16;
    if (lat_ops < 10)
        lat_ops = 10;
    if (rate_n < RING_SLOTS)
        rate_n = RING_SLOTS;
    double ls[64], rs[64];
    for (unsigned r = 0; r < o->reps; r++)
        floor_round(b, lat_ops, rate_n, &ls[r], &rs[r]);
    *lat  = summarize(ls, o->reps);
    *rate = summarize(rs, o->reps);
    return lat->valid && rate->valid;
}
