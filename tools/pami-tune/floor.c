/*
 * The machine's floor at the start and end of a round (docs/tuning.md,
 * "Rounds and the machine's state"): the half round trip of 8 bytes
 * written with their flag into one cache line between tasks 0 and 1 and
 * answered the same way, through a POSIX shared mapping of the tool's
 * own (the pattern of pami-bench's floor_lat, written again here so the
 * tool needs no bench). On a VM this moves several-fold within minutes
 * with where the host puts the CPUs, and with it the order of close
 * algorithms; the profile records it per round. Cheap: a few thousand
 * round trips. Every wait is bounded (FLOOR_LIMIT_S); the other tasks
 * wait in the closing allreduce, which blocks rather than spins.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tune.h"

#define LINE          64
#define FLOOR_TRIPS   400  /* round trips per sample: short, so that the
                              median is of samples no other program
                              interrupted (a loaded machine) */
#define FLOOR_SAMPLES 21   /* the median is kept; the first warms up */
#define FLOOR_LIMIT_S 2.0  /* the whole measurement; beyond: unknown */

typedef struct {
    volatile uint64_t seq;
    uint8_t           pad[LINE - 8];
} __attribute__((aligned(LINE))) fline_t;

typedef struct {
    fline_t ping, pong, abort;
} fshm_t;

static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Spins until *w == v; false when the other side gave up or the time
 * is over (then it tells the other side). */
static bool wait_for(fshm_t *m, volatile uint64_t *w, uint64_t v, double end)
{
    for (unsigned n = 1; __atomic_load_n(w, __ATOMIC_ACQUIRE) != v; n++) {
        relax();
        if ((n & 4095) == 0 &&
            (__atomic_load_n(&m->abort.seq, __ATOMIC_ACQUIRE) != 0 ||
             tune_now() > end)) {
            __atomic_store_n(&m->abort.seq, 1, __ATOMIC_RELEASE);
            return false;
        }
    }
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Task 0 pings, task 1 answers; task 0's median half round trip in
 * microseconds, 0 when it gave up. */
static double pingpong(fshm_t *m, bool first)
{
    double end = tune_now() + FLOOR_LIMIT_S, s[FLOOR_SAMPLES];
    uint64_t seq = 0;
    for (int k = 0; k < FLOOR_SAMPLES; k++) {
        double a = tune_now();
        for (int i = 0; i < FLOOR_TRIPS; i++) {
            seq++;
            if (first) {
                __atomic_store_n(&m->ping.seq, seq, __ATOMIC_RELEASE);
                if (!wait_for(m, &m->pong.seq, seq, end))
                    return 0;
            } else {
                if (!wait_for(m, &m->ping.seq, seq, end))
                    return 0;
                __atomic_store_n(&m->pong.seq, seq, __ATOMIC_RELEASE);
            }
        }
        s[k] = (tune_now() - a) * 1e6 / (2.0 * FLOOR_TRIPS);
    }
    qsort(s + 1, FLOOR_SAMPLES - 1, sizeof(double), cmp_double);
    return s[1 + (FLOOR_SAMPLES - 1) / 2];
}

static bool agree(pami_context_t ctx, pami_geometry_t world, double *v,
                  size_t n)
{
    double in[4];
    memcpy(in, v, n * sizeof(double));
    return pami_geometry_allreduce(ctx, world, in, v, n, PAMI_TYPE_DOUBLE,
                                   PAMI_OP_MAX) == PAMI_SUCCESS;
}

double tune_floor(pami_client_t client, pami_context_t ctx)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                          PAMI_CLIENT_ATTR_SIZE |
                                          PAMI_CLIENT_ATTR_NODES};
    if (pami_client_query(client, &a) != PAMI_SUCCESS || a.size < 2)
        return 0;
    /* Every task decides alike: the same node table. */
    if (a.task_node != NULL && a.task_node[0] != a.task_node[1])
        return 0;
    pami_geometry_t world;
    pami_geometry_world(ctx, &world);
    char name[64] = "";
    fshm_t *m = MAP_FAILED;
    double v[2] = {0, 0}; /* task 0's pid; a task that failed */
    if (a.task == 0) {
        v[0] = (double)getpid();
        snprintf(name, sizeof(name), "/pami-tune-floor-%ld", (long)getpid());
        shm_unlink(name); /* a stale one of a dead run with our pid */
        int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd >= 0 && ftruncate(fd, sizeof(fshm_t)) == 0)
            m = mmap(NULL, sizeof(fshm_t), PROT_READ | PROT_WRITE,
                     MAP_SHARED, fd, 0);
        if (fd >= 0)
            close(fd);
        v[1] = m == MAP_FAILED;
    }
    if (!agree(ctx, world, v, 2))
        return 0;
    double bad = v[1];
    if (a.task == 1 && bad == 0) {
        snprintf(name, sizeof(name), "/pami-tune-floor-%ld", (long)v[0]);
        int fd = shm_open(name, O_RDWR, 0);
        if (fd >= 0) {
            m = mmap(NULL, sizeof(fshm_t), PROT_READ | PROT_WRITE,
                     MAP_SHARED, fd, 0);
            close(fd);
        }
        bad = m == MAP_FAILED;
    }
    agree(ctx, world, &bad, 1);
    if (a.task == 0)
        shm_unlink(name); /* both have tried: the mapping outlives it */
    double us = 0;
    if (bad == 0 && a.task <= 1)
        us = pingpong(m, a.task == 0);
    if (m != MAP_FAILED)
        munmap(m, sizeof(fshm_t));
    double res[2] = {a.task == 0 ? us : 0, a.task <= 1 && bad == 0 && us <= 0};
    if (!agree(ctx, world, res, 2) || res[1] != 0)
        return 0;
    return res[0];
}
