/*
 * pami-bench: point-to-point patterns over pami and, in the same job, over
 * raw UCP, so that each line can be read as a ratio. Two tasks: task 0
 * drives and prints, task 1 serves from its handlers.
 *
 * main.c     options, the run plan, the driver (task 0), the server loop
 *            (task 1), setup and teardown
 * pami_side.c  the patterns written on pami, and task 1's pami handlers
 * ucx_side.c   the same patterns written directly on UCP (own context and
 *              worker), and task 1's UCP handlers
 * report.c   medians, spreads and the two output formats
 */
#ifndef PAMI_BENCH_H
#define PAMI_BENCH_H

#include <pami.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "schedstat.h" /* tool_cpu_waited */

typedef enum {
    T_AM_LAT,
    T_AM_RATE,
    T_SEND_BW,
    T_PUT_LAT,
    T_PUT_BW,
    T_GET_BW,
    T_RMW_LAT,
    T_PUT_LAT_SHM,             /* put_lat on memory pami allocated shared */
    T_RMW_LAT_SHM,             /* rmw_lat on the same */
    T_P2P_COUNT,               /* above: two tasks, task 1 serves */
    T_BARRIER = T_P2P_COUNT,   /* below: every task runs the loop */
    T_SVD_UPDATE,
    T_ALLREDUCE,               /* collectives, each registry algorithm */
    T_BCAST,
    T_ALLGATHER,
    T_ALLTOALL,
    T_REDUCE_SCATTER,
    T_REDUCE,                  /* to root 0 */
    T_AUTO_VS_BEST,            /* AUTO against the best, from a profile */
    T_BURST_OVERSUB,           /* retry loops with more tasks than cores */
    T_FOOTPRINT,               /* peak resident memory after an alltoall */
    T_COUNT
} test_id_t;

#define TESTS_P2P   ((1u << T_P2P_COUNT) - 1)
#define TESTS_GROUP (((1u << T_COUNT) - 1) & ~TESTS_P2P)

typedef enum { METRIC_LAT_US, METRIC_RATE_MPS, METRIC_BW_GBPS } metric_t;

/* What one measurement does; the same plan is run on both sides. */
typedef struct {
    test_id_t test;
    size_t    bytes;
    size_t    window;   /* messages between acks (rate, bandwidth) */
    size_t    ops;      /* timed operations, a multiple of window */
    size_t    warm_ops; /* untimed operations first, a multiple of window */
} plan_t;

typedef struct {
    unsigned tests;      /* bit per test_id_t */
    bool     vs_ucx;
    bool     vs_mpi;     /* group tests, pami-bench-mpi only */
    bool     json;
    long     iters;      /* -1: each test's default */
    long     warmup;     /* -1: each test's default */
    size_t   min_bytes;
    size_t   max_bytes;
    unsigned reps;       /* measurements per line, for median and spread */
    size_t   window;     /* 0: each test's default */
    double   min_cpu;    /* redo a repetition when a task had less */
    bool     any_range;  /* collectives: also outside an algorithm's
                            message range */
    bool     coll_stats; /* collectives: each task's counter deltas per
                            line on stderr */
    const char *profile; /* auto_vs_best: --profile (PAMI_COLL_PROFILE) */
    bool     aa;         /* auto_vs_best: the best against itself too */
} opts_t;

/* What task 1 is polling. */
typedef enum { MODE_PAMI, MODE_UCX_ENTER, MODE_UCX, MODE_QUIT,
               MODE_FLOOR } serve_mode_t;

/* Counters that handlers bump and waiting loops watch. */
typedef struct {
    volatile uint64_t replies;  /* pongs (task 0) */
    volatile uint64_t acks;     /* window acks (task 0) */
    volatile uint64_t received; /* messages landed (task 1) */
    volatile uint64_t done;     /* local completions (task 0) */
} counters_t;

typedef struct ucx_side ucx_side_t;

typedef struct {
    opts_t          opt;
    pami_client_t   client;
    pami_context_t  ctx;
    pami_task_t     me;
    pami_endpoint_t peer;          /* the other task's context 0 */
    long            peer_pid;      /* on this node, else 0 */
    size_t          immediate_max;
    size_t          rndv_threshold;
    const char     *ucx_version;
    const char     *transports;

    /* Task 0 sends from sbuf and lands replies and gets in rbuf; task 1
     * lands sends and puts in rbuf, which it exposes for put, get and
     * rmw. Both are buf_bytes long. */
    uint8_t        *sbuf;
    uint8_t        *rbuf;
    size_t          buf_bytes;
    bool            have_rma;      /* pami regions work on both tasks */
    bool            own_mr;        /* mr was created */
    pami_memregion_t mr;           /* our rbuf */
    pami_memregion_t peer_mr;      /* the peer's rbuf */
    /* The *_shm tests: a region pami_memregion_alloc made, and the
     * peer's. */
    bool            have_shm;      /* both tasks have one */
    void           *shm;
    pami_memregion_t shm_mr;
    pami_memregion_t peer_shm_mr;
    uint64_t        fetch;         /* rmw result */

    /* Task 1: the plan of the measurement it serves. */
    plan_t          serve;
    volatile int    mode;          /* serve_mode_t */
    double          last_cmd;      /* task 1: time of the last command */

    counters_t      pami_cnt;
    ucx_side_t     *ucx;
    struct floor_shm *floor;       /* floor.c's mapping, null: no floor */
} bench_t;

/* ---- main.c ---- */
double bench_now(void);
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                    noreturn));
void bench_check(pami_result_t rc, const char *what);
/* Waits are bounded: one that lasts longer than this ends the job with a
 * message instead of hanging it. The clock is read once every mask + 1
 * rounds, so a spinning wait pays nearly nothing for it. */
#define BENCH_STALL_S 60.0
typedef struct {
    uint64_t    n;
    uint64_t    mask;
    double      start;
    const char *what;
} stall_t;
void stall_slow(stall_t *s);
static inline void stall_init(stall_t *s, const char *what)
{
    s->n     = 0;
    s->mask  = 0xfff;
    s->start = 0;
    s->what  = what;
}
static inline void stall_check(stall_t *s)
{
    if ((++s->n & s->mask) == 0)
        stall_slow(s);
}

/* ---- pami_side.c ---- */
enum {
    ID_CTRL = 1, /* ctrl_msg_t in the header */
    ID_PING = 2,
    ID_RATE = 3,
    ID_ACK  = 4,
    ID_DATA = 5,
    ID_BOOT = 6  /* setup blobs, in the data */
};

enum { CTRL_SETUP = 1, CTRL_ENTER_UCX = 2, CTRL_QUIT = 3, CTRL_FLOOR = 4 };

typedef struct {
    uint32_t op;
    uint32_t test;
    uint64_t bytes;
    uint64_t window;
} ctrl_msg_t;

void pami_side_register(bench_t *b);
/* Sends a control message to the peer, advancing while pami is busy. */
void pami_side_ctrl(bench_t *b, uint32_t op, const plan_t *plan);
/* Runs one measurement as task 0; the seconds its timed part took, or a
 * negative value when pami cannot do it (the reason was printed once). */
double pami_side_run(bench_t *b, const plan_t *plan);
/* Exchanges a blob with the peer through pami: sends ours, waits for
 * theirs (malloc'ed, the caller frees it). With poll, the wait advances
 * pami without sleeping and calls poll(arg) each round too. */
void *pami_side_exchange(bench_t *b, const void *blob, size_t len,
                         size_t *peer_len, void (*poll)(void *arg),
                         void *arg);

/* ---- group.c ---- */
/* What every task of a group test holds. */
typedef struct {
    const opts_t  *opt;
    pami_client_t  client;
    pami_context_t ctx;
    pami_task_t    me;
    size_t         size;
    bool           one_node;
} group_t;

/* Advances g's context once (a poll function for
 * bench_mpi_joint_barrier; arg is the group_t). */
void group_poll_pami(void *arg);

/* Runs the group tests in o->tests over every task; returns the exit
 * code. */
int group_main(const opts_t *o, int *argc, char ***argv);

/* ---- coll_bench.c ---- */
/* One collective test (T_ALLREDUCE .. T_REDUCE): every algorithm
 * of the registry that can run each size, and AUTO. */
void coll_bench_run(group_t *g, test_id_t test);

/* ---- auto_bench.c ---- */
/* auto_vs_best: AUTO beside the best algorithm at every size of the
 * profile, measured interleaved. */
void auto_vs_best_run(group_t *g);

/* ---- burst.c ---- */
/* burst_oversub: the advance-retry loop against wait retries. */
void burst_oversub_run(group_t *g);

/* ---- footprint.c ---- */
/* footprint: the largest VmHWM among the tasks after alltoalls. */
void footprint_run(group_t *g);
/* pami-bench-mpi footprint --vs-mpi: the same on Open MPI alone, after
 * MPI_Init and without a pami client; returns the exit code. */
int footprint_mpi_main(const opts_t *o);

/* ---- mpi_side.c (pami-bench-mpi only) ---- */
int bench_mpi_init(int *argc, char ***argv);
void bench_mpi_fini(void);
/* Seconds of ops MPI_Barrier calls on MPI_COMM_WORLD, after one more. */
double bench_mpi_barrier(size_t ops);
/* Seconds of ops calls of the MPI collective of test (on doubles with
 * MPI_SUM for the reductions, bytes otherwise; count elements per rank as
 * in pami_xfer_t, root 0) and one MPI_Barrier, after one more call when
 * warm. */
double bench_mpi_coll(test_id_t test, const void *sbuf, void *rbuf,
                      size_t count, size_t ops);
const char *bench_mpi_pml(void);
/* A barrier over MPI_COMM_WORLD that calls poll(arg) while it waits, to
 * be passed between a pami loop and an MPI loop: a task that finished
 * one library's loop may still hold messages of it (pami copies an
 * immediate send UCX could not take and sends it from a later progress
 * call; UCX keeps what its queues could not take): polling both until
 * every task is through lets them leave, where a blocking barrier of
 * the other library would wait for ever for the task that needs them. */
void bench_mpi_joint_barrier(void (*poll)(void *arg), void *arg);

/* ---- ucx_side.c ---- */
/* Which UCP pattern stands against a pami line. */
/* For the *_shm tests UCX_SAME is UCP on memory ucp_mem_map allocated,
 * UCX_PRIVATE the same operation on the private rbuf. */
typedef enum { UCX_SAME, UCX_GET_FOR_SEND, UCX_PRIVATE } ucx_variant_t;

ucx_side_t *ucx_side_create(bench_t *b);
/* Connects to the peer; run by both tasks, through pami. */
void ucx_side_connect(ucx_side_t *u, bench_t *b);
void ucx_side_destroy(ucx_side_t *u, bench_t *b);
/* Task 0: task 1 follows into UCP polling, and back. */
void ucx_side_enter(ucx_side_t *u, bench_t *b, const plan_t *plan);
void ucx_side_leave(ucx_side_t *u, bench_t *b);
double ucx_side_run(ucx_side_t *u, bench_t *b, const plan_t *plan,
                    ucx_variant_t variant);
/* Task 1: answers READY, then polls UCP until task 0 says LEAVE. */
void ucx_side_serve(ucx_side_t *u, bench_t *b);
const char *ucx_side_op_name(test_id_t test, ucx_variant_t variant);

/* ---- report.c ---- */
typedef struct {
    double median, min, max;
    bool   valid;
} summary_t;

/* ---- floor.c ---- */
/* Both tasks: maps the floor's shared memory when they share a node and
 * --vs-ucx is on (b->floor stays null otherwise); removes its name. */
void floor_setup(bench_t *b);
void floor_teardown(bench_t *b);
/* Task 1, in MODE_FLOOR: answers one round, then back to MODE_PAMI. */
void floor_serve(bench_t *b);
/* Task 0: --reps rounds of floor_lat (us) and floor_rate (msgs/s);
 * false without a floor. */
bool floor_measure(bench_t *b, summary_t *lat, summary_t *rate);

summary_t summarize(const double *samples, unsigned n);
const char *test_name(test_id_t t);
metric_t test_metric(test_id_t t);
const char *metric_name(metric_t m);
/* Turns a measurement's seconds into the test's metric. */
double to_metric(const plan_t *plan, double seconds);
void report_header(const bench_t *b);
/* How undisturbed a line was: cpu_share is the smallest share of wall
 * time either task was not kept waiting for a CPU during a kept
 * repetition (both poll all the time, so it is 1 unless another program
 * took a CPU); redone counts repetitions measured again because it was
 * below --min-cpu. */
typedef struct {
    double   cpu_share;
    unsigned redone;
    double   vs_floor; /* am_lat: pami / floor_lat beside it; <= 0: none */
    /* *_shm: UCP's median on the private buffers, in the same repetitions
     * (<= 0: none). */
    double   ucx_private;
} quality_t;

/* The floor_lat and floor_rate lines (medians only). */
void report_floor(const bench_t *b, const summary_t *lat,
                  const summary_t *rate);
void report_line(const bench_t *b, const char *test, size_t bytes,
                 metric_t metric, const summary_t *pami,
                 const summary_t *ucx, const char *ucx_op,
                 const plan_t *plan, const quality_t *q);
/* A group test's line: the reference is Open MPI (null without
 * --vs-mpi), ratio = pami / mpi. */
void report_group_header(const opts_t *o, size_t tasks, bool with_mpi);
void report_group_line(const opts_t *o, size_t tasks, const char *test,
                       size_t bytes, metric_t metric, const summary_t *pami,
                       const summary_t *mpi, const char *mpi_op,
                       size_t ops);

#endif
