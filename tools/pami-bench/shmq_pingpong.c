/*
 * pami-shmq-pingpong: where am_lat's time over the floor goes between two
 * cores, without pami. Two processes (this one and a fork) share a memfd
 * and measure these patterns in turns, round after round, each a ping-pong
 * of 8 bytes:
 *
 *   floor        the bench's floor_lat (floor.c): 8 bytes and a sequence
 *                word in one line, answered in the line next to it; both
 *                sides spin with pause
 *   floor_pairs  the same on 16 other pairs of lines, one after the
 *                other, each in a page of its own: the floor of a pair
 *                depends on where its lines lie
 *   ring         the lines a queue moves, without its code: message i in
 *                line i mod L of the sender's ring (L = 256, a queue's
 *                start lap, unless given), 8 bytes then a stamp stored
 *                last; the receiver spins on the stamp without pause
 *   queue        8 bytes through the queues pami uses within a node
 *                (shm_queue.h, pami's default sizes: a ring of 8192 lines
 *                written in a lap of 256, entries of up to 32 lines), one
 *                queue each way: shmq_put_line of pami's packed 10-byte
 *                header and the 8 bytes, then the sender's look at the
 *                receiver's sleeping flag (the compiler's order, as with
 *                membarrier); the receiver spins on shmq_take_line and
 *                gives the line back (the head's store, the look at
 *                want_room) where shm_progress does: the answering side
 *                after its answer, the asking side before its next ask
 *   ring_pause, queue_pause   the same with a pause in the receiver's spin
 *
 * queue - floor is the queue's share of am_lat over the floor (ring -
 * floor of it the lines, queue - ring the code); am_lat - queue is
 * pami's software on the critical path (docs/PERFORMANCE.md).
 *
 *   pami-shmq-pingpong [round trips per round [rounds [ring lines]]]
 *
 * Prints one JSON line per pattern: the half round trip in µs, median and
 * smallest of the rounds (the first tenth of each round untimed); for
 * floor_pairs also the fastest and the slowest pair (each pair's smallest
 * round; a round gives each pair a sixteenth of its round trips).
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm_queue.h"

#define LINE        64
#define NLINES      8192 /* PAMI_SHM_QUEUE_GROW */
#define LAP         256  /* PAMI_SHM_QUEUE_LINES */
#define START_ENTRY 32   /* lines of PAMI_SHM_ENTRY_MAX's 2032 bytes */
#define GROWN_ENTRY 1024
#define MAX_ROUNDS  63

enum { PAT_FLOOR, PAT_FLOOR_PAIRS, PAT_RING, PAT_RING_PAUSE, PAT_QUEUE,
       PAT_QUEUE_PAUSE, PAT_N };
static const char *const pat_name[PAT_N] = {"floor", "floor_pairs", "ring",
                                            "ring_pause", "queue",
                                            "queue_pause"};
#define NPAIRS 16

typedef struct {
    volatile uint64_t seq;
    uint64_t          payload;
    uint8_t           pad[LINE - 16];
} __attribute__((aligned(LINE))) line_t;

/* The first page: the floor's two lines, the plan, each side's sleeping
 * flag on a line of its own (as in an inbox), the two control lines. */
typedef struct {
    line_t     ping, pong;
    struct {
        volatile uint64_t round;   /* a new round when it moves */
        volatile uint64_t pattern; /* PAT_*, or PAT_N: stop */
        volatile uint64_t ops;
        volatile uint64_t done;    /* the last round side 1 finished */
        uint8_t pad[LINE - 32];
    } __attribute__((aligned(LINE))) plan;
    line_t     sleeping[2];        /* never set: nobody sleeps here */
    shmq_ctl_t ctl[2];             /* queue q carries side q's messages */
} page0_t;

static page0_t *pg;
static uint8_t *ring[2];    /* queue q's ring; the ring pattern's lines
                               lie in its second half, which a lap of 256
                               never reaches */
static uint64_t ring_pos[2];
static unsigned ring_lines = LAP;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Every spin yields after 2^16 looks in vain: a round trip takes a few
 * hundred, so no timed round is touched unless its peer has lost its
 * CPU, and then a peer on the same CPU runs instead of waiting for the
 * end of a time slice per message (the short test in suite bench runs
 * on a loaded machine). */
#define SPIN_YIELD (1u << 16)

static inline void spun(unsigned *n)
{
    if (__builtin_expect(++*n == SPIN_YIELD, 0)) {
        *n = 0;
        sched_yield();
    }
}

static void die(const char *what)
{
    fprintf(stderr, "pami-shmq-pingpong: %s\n", what);
    exit(1);
}

/* ---- the floor, as floor.c ---- */

static void floor_ping(line_t *pi, line_t *po, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i <= to; i++) {
        pi->payload = i;
        __atomic_store_n(&pi->seq, i, __ATOMIC_RELEASE);
        unsigned n = 0;
        while (__atomic_load_n(&po->seq, __ATOMIC_ACQUIRE) != i) {
            cpu_relax();
            spun(&n);
        }
        if (po->payload != i)
            die("floor: a wrong answer");
    }
}

static void floor_pong(line_t *pi, line_t *po, uint64_t ops)
{
    for (uint64_t i = 1; i <= ops; i++) {
        unsigned n = 0;
        while (__atomic_load_n(&pi->seq, __ATOMIC_ACQUIRE) != i) {
            cpu_relax();
            spun(&n);
        }
        po->payload = pi->payload;
        __atomic_store_n(&po->seq, i, __ATOMIC_RELEASE);
    }
}

/* Pair k's ping line (its pong line follows): in the last quarter of
 * ring 0, which neither the queue nor the ring pattern reaches, 66 lines
 * apart (a page and a line: each in another page, at another offset). */
static line_t *pair_ping(int k)
{
    return (line_t *)(ring[0] + (size_t)(NLINES * 3 / 4 + 66 * k) * LINE);
}

static double pair_us[NPAIRS][MAX_ROUNDS];
static int    round_no;

/* ---- the queue's lines without its code ---- */

static inline uint8_t *ring_line(int q)
{
    return ring[q] + (size_t)(NLINES / 2 + ring_pos[q] % ring_lines) * LINE;
}

static inline void ring_send(int me, uint64_t v)
{
    uint8_t *l = ring_line(me);
    memcpy(l + SHMQ_ENTRY_HDR + 10, &v, sizeof(v));
    atomic_store_explicit(&((shmq_entry_t *)l)->stamp,
                          (uint32_t)(ring_pos[me] + 1), memory_order_release);
    ring_pos[me]++;
}

static inline uint64_t ring_recv(int me, bool pause)
{
    int      from = !me;
    uint8_t *l    = ring_line(from);
    unsigned n = 0;
    while (atomic_load_explicit(&((shmq_entry_t *)l)->stamp,
                                memory_order_acquire) !=
           (uint32_t)(ring_pos[from] + 1)) {
        if (pause)
            cpu_relax();
        spun(&n);
    }
    uint64_t v;
    memcpy(&v, l + SHMQ_ENTRY_HDR + 10, sizeof(v));
    ring_pos[from]++;
    return v;
}

/* ---- the queues ---- */

typedef struct {
    shmq_prod_t prod;
    shmq_cons_t cons;
    uint8_t     scratch[GROWN_ENTRY * LINE];
    _Atomic uint32_t *peer_sleeping;
} side_t;

static void no_drop(void *arg, const char *why)
{
    (void)arg;
    fprintf(stderr, "pami-shmq-pingpong: a malformed entry: %s\n", why);
    exit(1);
}

static void no_deliver(void *arg, const uint8_t *hdr, size_t hdr_len,
                       uint8_t *data, size_t data_len)
{
    (void)arg; (void)hdr; (void)hdr_len; (void)data; (void)data_len;
    die("a message other than one line");
}

static void queue_send(side_t *s, uint64_t v)
{
    uint8_t hdr[10] = {0}; /* where pami's packed header goes */
    /* At the lap's end (a pad, then line 0) shmq_put_frag writes it. */
    if (!shmq_put_line(&s->prod, 0, hdr, sizeof(hdr), &v, sizeof(v)) &&
        shmq_put_frag(&s->prod, 0, sizeof(hdr) + sizeof(v), hdr, sizeof(hdr),
                      &v, sizeof(v), 0) < 0)
        die("queue: no room"); /* the peer gave every line back */
    shmq_fence(true);
    if (atomic_load_explicit(s->peer_sleeping, memory_order_relaxed))
        die("queue: a sleeping peer");
}

static uint64_t queue_recv(side_t *s, bool pause)
{
    size_t hl, total;
    int      one;
    unsigned n = 0;
    while ((one = shmq_take_line(&s->cons, s->scratch, &hl, &total)) <= 0) {
        if (one < 0) /* the pad at the lap's end */
            shmq_poll(&s->cons, 1, s->scratch, no_deliver, no_drop, NULL);
        else if (pause)
            cpu_relax();
        spun(&n);
    }
    if (total != 18)
        die("queue: a wrong length");
    uint64_t v;
    memcpy(&v, s->scratch + 10, sizeof(v));
    return v;
}

static void side_init(side_t *s, int me)
{
    memset(s, 0, sizeof(*s));
    if (!shmq_prod_init(&s->prod, &pg->ctl[me], ring[me], NLINES,
                        START_ENTRY, LAP))
        die("no memory");
    s->cons = (shmq_cons_t){.ctl = &pg->ctl[!me], .ring = ring[!me],
                            .nlines = NLINES, .max_lines = GROWN_ENTRY,
                            .msg_max = UINT32_MAX, .registered = true};
    s->peer_sleeping = (_Atomic uint32_t *)&pg->sleeping[!me].seq;
}

/* Side 0 pings messages from..to of a round; side 1 answers all. */
static void ping(side_t *s, int pat, uint64_t from, uint64_t to)
{
    bool pause = pat == PAT_RING_PAUSE || pat == PAT_QUEUE_PAUSE;
    if (pat == PAT_FLOOR) {
        floor_ping(&pg->ping, &pg->pong, from, to);
        return;
    }
    for (uint64_t i = from; i <= to; i++) {
        uint64_t v;
        if (pat == PAT_RING || pat == PAT_RING_PAUSE) {
            ring_send(0, i);
            v = ring_recv(0, pause);
        } else {
            queue_send(s, i);
            v = queue_recv(s, pause);
            shmq_give_back(&s->cons);
        }
        if (v != i)
            die("a wrong answer");
    }
}

static void pong(side_t *s, int pat, uint64_t ops)
{
    bool pause = pat == PAT_RING_PAUSE || pat == PAT_QUEUE_PAUSE;
    if (pat == PAT_FLOOR) {
        floor_pong(&pg->ping, &pg->pong, ops);
        return;
    }
    if (pat == PAT_FLOOR_PAIRS) {
        for (int k = 0; k < NPAIRS; k++)
            floor_pong(pair_ping(k), pair_ping(k) + 1, ops / NPAIRS);
        return;
    }
    for (uint64_t i = 1; i <= ops; i++) {
        if (pat == PAT_RING || pat == PAT_RING_PAUSE)
            ring_send(1, ring_recv(1, pause));
        else {
            /* As shm_progress: the handler's reply, then the head. */
            queue_send(s, queue_recv(s, pause));
            shmq_give_back(&s->cons);
        }
    }
}

static void side1(void)
{
    side_t s;
    side_init(&s, 1);
    uint64_t seen = 0;
    for (;;) {
        uint64_t r;
        unsigned n = 0;
        while ((r = __atomic_load_n(&pg->plan.round, __ATOMIC_ACQUIRE)) ==
               seen) {
            cpu_relax();
            spun(&n);
        }
        seen = r;
        if (pg->plan.pattern >= PAT_N)
            break;
        pong(&s, (int)pg->plan.pattern, pg->plan.ops);
        __atomic_store_n(&pg->plan.done, r, __ATOMIC_RELEASE);
    }
    shmq_prod_fini(&s.prod);
    shmq_cons_fini(&s.cons);
}

static double round_us(side_t *s, int pat, uint64_t ops)
{
    memset(&pg->ping, 0, sizeof(pg->ping));
    memset(&pg->pong, 0, sizeof(pg->pong));
    for (int k = 0; k < NPAIRS; k++)
        memset(pair_ping(k), 0, 2 * LINE);
    pg->plan.pattern = (uint64_t)pat;
    pg->plan.ops     = ops;
    uint64_t r = pg->plan.round + 1;
    __atomic_store_n(&pg->plan.round, r, __ATOMIC_RELEASE);
    if (pat == PAT_FLOOR_PAIRS) {
        uint64_t n = ops / NPAIRS, warm = n / 10;
        double   sum = 0;
        for (int k = 0; k < NPAIRS; k++) {
            floor_ping(pair_ping(k), pair_ping(k) + 1, 1, warm);
            double t0 = now_s();
            floor_ping(pair_ping(k), pair_ping(k) + 1, warm + 1, n);
            pair_us[k][round_no] =
                (now_s() - t0) * 1e6 / (double)(n - warm) / 2.0;
            sum += pair_us[k][round_no];
        }
        for (unsigned n = 0;
             __atomic_load_n(&pg->plan.done, __ATOMIC_ACQUIRE) != r;)
            spun(&n);
        return sum / NPAIRS;
    }
    uint64_t warm = ops / 10;
    ping(s, pat, 1, warm);
    double t0 = now_s();
    ping(s, pat, warm + 1, ops);
    double us = (now_s() - t0) * 1e6 / (double)(ops - warm) / 2.0;
    for (unsigned n = 0;
         __atomic_load_n(&pg->plan.done, __ATOMIC_ACQUIRE) != r;)
        spun(&n);
    return us;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    long ops    = argc > 1 ? strtol(argv[1], NULL, 0) : 10000;
    int  rounds = argc > 2 ? atoi(argv[2]) : 7;
    long lines  = argc > 3 ? strtol(argv[3], NULL, 0) : LAP;
    if (ops < 10 * NPAIRS || rounds < 1 || rounds > MAX_ROUNDS ||
        lines < 1 || lines > NLINES / 4) {
        fprintf(stderr, "usage: pami-shmq-pingpong [round trips (>= %d) "
                        "[rounds (1..%d) [ring lines (1..%d)]]]\n",
                10 * NPAIRS, MAX_ROUNDS, NLINES / 4);
        return 2;
    }
    ring_lines = (unsigned)lines;
    size_t ring_bytes = (size_t)NLINES * LINE;
    size_t bytes      = 4096 + 2 * ring_bytes;
    int    fd         = memfd_create("pami-shmq-pingpong", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0)
        die("no memfd");
    uint8_t *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        die("no mapping");
    pg      = (page0_t *)m;
    ring[0] = m + 4096;
    ring[1] = m + 4096 + ring_bytes;
    /* A side left alone (the other died) ends instead of spinning on;
     * the fork inherits the alarm's absence, so it gets its own. */
    alarm(600);
    pid_t child = fork();
    if (child < 0)
        die("no fork");
    if (child == 0) {
        alarm(600);
        side1();
        _exit(0);
    }
    side_t s;
    side_init(&s, 0);
    static double us[PAT_N][MAX_ROUNDS];
    for (round_no = 0; round_no < rounds; round_no++)
        for (int p = 0; p < PAT_N; p++)
            us[p][round_no] = round_us(&s, p, (uint64_t)ops);
    pg->plan.pattern = PAT_N;
    __atomic_store_n(&pg->plan.round, pg->plan.round + 1, __ATOMIC_RELEASE);
    int st;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0)
        die("the other side failed");
    /* floor_pairs: us is the mean over the pairs (median of the rounds);
     * each pair's smallest round (what a pair gives when nothing else
     * runs: a loaded machine inflates medians) ranks the pairs. */
    double pair_best[NPAIRS];
    for (int k = 0; k < NPAIRS; k++) {
        qsort(pair_us[k], (size_t)rounds, sizeof(double), by_value);
        pair_best[k] = pair_us[k][0];
    }
    qsort(pair_best, NPAIRS, sizeof(double), by_value);
    for (int p = 0; p < PAT_N; p++) {
        qsort(us[p], (size_t)rounds, sizeof(double), by_value);
        if (p == PAT_FLOOR_PAIRS) {
            printf("{\"test\": \"%s\", \"bytes\": 8, \"us\": %.4f, "
                   "\"us_min\": %.4f, \"pairs\": %d, \"pair_fastest_us\": "
                   "%.4f, \"pair_slowest_us\": %.4f, \"rounds\": %d, "
                   "\"round_trips\": %ld}\n",
                   pat_name[p], us[p][rounds / 2], us[p][0], NPAIRS,
                   pair_best[0], pair_best[NPAIRS - 1], rounds, ops);
            continue;
        }
        printf("{\"test\": \"%s\", \"bytes\": 8, \"us\": %.4f, "
               "\"us_min\": %.4f, \"rounds\": %d, \"round_trips\": %ld, "
               "\"ring_lines\": %u}\n",
               pat_name[p], us[p][rounds / 2], us[p][0], rounds, ops,
               p == PAT_RING || p == PAT_RING_PAUSE ? ring_lines : LAP);
    }
    shmq_prod_fini(&s.prod);
    shmq_cons_fini(&s.cons);
    munmap(m, bytes);
    return 0;
}
