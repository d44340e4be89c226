/*
 * One rank of a pamirun test job; the first argument picks its behaviour.
 * pamirun_test.sh starts it under pamirun and checks what pamirun makes of
 * it. Every mode checks its own results and exits non-zero on a mismatch,
 * with a line on stderr saying what was wrong.
 *
 *   allgather        allgathers of many lengths with verified contents
 *   sessions         two bootstraps at once, then a third after a fini:
 *                    each must see only its own collectives
 *   flood            prints lines until stdout breaks
 *   print            lines on stdout and stderr, and a final partial line
 *   longline N       one line of N bytes, then a short one
 *   env              prints the environment pamirun set; checks stdin
 *   exit R CODE      rank R exits with CODE after a barrier; others wait
 *   kill R           rank R kills itself with SIGKILL after a barrier
 *   leave R          rank R leaves politely; the others' allgather must
 *                    fail with -ECONNRESET (then they exit 4)
 *   sleep            prints "ready" and waits forever
 *   ignore-term      like sleep, but ignores SIGTERM
 *   churn S          once $PIDDIR/go exists, new bootstrap sessions with
 *                    a verified allgather each, for S seconds (rank 0's
 *                    clock); prints how many
 *
 * Modes that wait write their pid to $PIDDIR/<rank>.pid first, so the
 * driver can check that pamirun left no rank behind. exit and kill also
 * create a shared-memory object under the job's prefix and a private
 * SysV segment for pamirun to remove, and a keyed SysV segment it must
 * leave ($PIDDIR/<rank>.shm: "private keyed" ids).
 */
#include "bootstrap.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const bootstrap_ops_t *ops = &bootstrap_local_ops;

static void *bs;
static uint32_t my_rank, my_size;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "rank_helper: check failed (%s): ", #cond);     \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

static void start(void)
{
    CHECK(ops->detect() != 0, "detect() says no under pamirun");
    int rc = ops->init(NULL, &bs, &my_rank, &my_size);
    CHECK(rc == 0, "init returned %d", rc);
    CHECK(my_rank == (uint32_t)atoi(getenv(PAMIRUN_ENV_RANK)),
          "rank %u differs from env", my_rank);
    CHECK(my_size == (uint32_t)atoi(getenv(PAMIRUN_ENV_SIZE)),
          "size %u differs from env", my_size);
}

static void write_file(const char *name, const char *text)
{
    const char *dir = getenv("PIDDIR");
    char        path[4096];

    if (dir == NULL)
        return;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    fprintf(f, "%s\n", text);
    fclose(f);
}

/* Also the job id, so the driver can look for leftovers under it. */
static void write_pid(void)
{
    char name[64], pid[32];

    snprintf(name, sizeof(name), "%s.pid", getenv(PAMIRUN_ENV_RANK));
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    write_file(name, pid);
    write_file("jobid", getenv(PAMIRUN_ENV_JOBID));
}

static void wait_forever(void)
{
    for (;;)
        pause();
}

/* A byte that depends on who wrote it, where, and in which round, so a
 * block landing at the wrong offset or from the wrong round shows. */
static unsigned char pattern(uint32_t rank, size_t i, unsigned round)
{
    return (unsigned char)(rank * 131u + i * 7u + round * 29u + (i >> 8));
}

static void allgather_round_on(void *st, size_t len, unsigned round)
{
    unsigned char *send = malloc(len + 1);
    unsigned char *recv = malloc(len * my_size + 1);

    CHECK(send != NULL && recv != NULL, "out of memory");
    for (size_t i = 0; i < len; i++)
        send[i] = pattern(my_rank, i, round);
    memset(recv, 0xee, len * my_size + 1);
    int rc = ops->allgather(st, send, recv, len);
    CHECK(rc == 0, "allgather of %zu bytes returned %d", len, rc);
    for (uint32_t r = 0; r < my_size; r++)
        for (size_t i = 0; i < len; i++)
            CHECK(recv[r * len + i] == pattern(r, i, round),
                  "len %zu: byte %zu of rank %u is wrong", len, i, r);
    CHECK(recv[len * my_size] == 0xee, "len %zu: wrote past the end", len);
    free(send);
    free(recv);
}

static void allgather_round(size_t len, unsigned round)
{
    allgather_round_on(bs, len, round);
}

static int mode_allgather(void)
{
    static const size_t lens[] = {0, 1, 7, 8, 4096, 65537, 4u << 20, 3, 0};
    unsigned            round  = 0;

    start();
    const char *id = ops->job_id(bs);
    CHECK(id != NULL && strcmp(id, getenv(PAMIRUN_ENV_JOBID)) == 0,
          "job id '%s' is not PAMI_JOB_ID", id ? id : "(null)");
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
        allgather_round(lens[k], round++);
    for (int i = 0; i < 3; i++)
        CHECK(ops->barrier(bs) == 0, "barrier %d failed", i);

    /* Different lengths on different ranks: all must get -EINVAL, and the
     * next collective must work again. */
    if (my_size > 1) {
        char   buf[2] = {1, 2};
        size_t len    = my_rank == 0 ? 2 : 1;
        char  *out    = malloc(2 * my_size);
        CHECK(out != NULL, "out of memory");
        int rc = ops->allgather(bs, buf, out, len);
        CHECK(rc == -EINVAL, "mismatched allgather returned %d", rc);
        free(out);
        allgather_round(100, round++);
    }
    ops->fini(bs);
    printf("rank %u/%u allgather ok\n", my_rank, my_size);
    return 0;
}

static void *start_another(void)
{
    void    *st;
    uint32_t rank, size;

    CHECK(ops->init(NULL, &st, &rank, &size) == 0, "second init failed");
    CHECK(rank == my_rank && size == my_size, "second init: wrong rank");
    return st;
}

/* The rounds differ per session, so data from the wrong session or
 * collective shows as a wrong byte. Interleaved on purpose. */
static int mode_sessions(void)
{
    start();
    void *a = bs, *b = start_another();

    allgather_round_on(a, 64, 100);
    allgather_round_on(b, 64, 200);
    allgather_round_on(b, 1000, 201);
    CHECK(ops->barrier(a) == 0, "barrier on a");
    allgather_round_on(a, 1000, 101);
    ops->fini(a);
    void *c = start_another();
    allgather_round_on(c, 77, 300);
    allgather_round_on(b, 5, 202);
    allgather_round_on(c, 0, 301);
    ops->fini(c);
    ops->fini(b);
    printf("rank %u sessions ok\n", my_rank);
    return 0;
}

static int mode_flood(void)
{
    for (unsigned long i = 0;; i++)
        if (printf("line %lu from %s\n", i, getenv(PAMIRUN_ENV_RANK)) < 0)
            return 1;
}

static int mode_print(void)
{
    const char *rank = getenv(PAMIRUN_ENV_RANK);

    printf("out line 1 from %s\n", rank);
    fflush(stdout);
    fprintf(stderr, "err line from %s\n", rank);
    printf("out line 2 from %s\n", rank);
    printf("partial from %s", rank);
    return 0;
}

static int mode_longline(size_t n)
{
    char *line = malloc(n);

    CHECK(line != NULL, "out of memory");
    for (size_t i = 0; i < n; i++)
        line[i] = (char)('a' + i % 26);
    fwrite(line, 1, n, stdout);
    printf("\nafter\n");
    free(line);
    return 0;
}

static int mode_env(void)
{
    char c;

    printf("socket=%s\n", getenv(PAMIRUN_ENV_SOCKET));
    printf("rank=%s\n", getenv(PAMIRUN_ENV_RANK));
    printf("size=%s\n", getenv(PAMIRUN_ENV_SIZE));
    printf("jobid=%s\n", getenv(PAMIRUN_ENV_JOBID));
    const char *tagged = getenv(PAMIRUN_ENV_TAGGED);
    printf("tagged=%s\n", tagged != NULL ? tagged : "unset");
    printf("stdin=%s\n", read(STDIN_FILENO, &c, 1) == 0 ? "eof" : "data");
    return 0;
}

/* An object like the ones shared-memory protocols will create. */
static void make_shm(void)
{
    char name[128];

    snprintf(name, sizeof(name), "/pami-%s-test-%u", ops->job_id(bs),
             my_rank);
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    CHECK(fd >= 0, "shm_open %s: %s", name, strerror(errno));
    close(fd);

    /* And one like the partly written file UCX leaves when a rank dies
     * while UCX sets up: in the job's own UCX_POSIX_DIR, private. */
    const char *ucx_dir = getenv("UCX_POSIX_DIR");
    char        want[128];
    struct stat st;
    snprintf(want, sizeof(want), "/dev/shm/pami-%s-ucx", ops->job_id(bs));
    CHECK(ucx_dir != NULL && strcmp(ucx_dir, want) == 0,
          "UCX_POSIX_DIR is %s, expected %s", ucx_dir ? ucx_dir : "unset",
          want);
    CHECK(lstat(ucx_dir, &st) == 0 && S_ISDIR(st.st_mode) &&
              (st.st_mode & 0777) == 0700 && st.st_uid == getuid(),
          "%s is not a private directory of this user", ucx_dir);
    snprintf(name, sizeof(name), "%s/ucx_shm_posix_test%u", ucx_dir, my_rank);
    fd = open(name, O_CREAT | O_RDWR, 0600);
    CHECK(fd >= 0 && ftruncate(fd, 1 << 20) == 0, "cannot make %s: %s", name,
          strerror(errno));
    close(fd);

    /* A private SysV page, made and never attached, as UCX's memory-hook
     * check leaves it when killed halfway: pamirun removes it once this
     * process is gone. A segment with a key is the user's: it stays. */
    int priv = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    int keyed = shmget((key_t)(0x7a000000 | getpid()), 4096,
                       IPC_CREAT | IPC_EXCL | 0600);
    CHECK(priv >= 0 && keyed >= 0, "shmget: %s", strerror(errno));
    char ids[64];
    snprintf(name, sizeof(name), "%u.shm", my_rank);
    snprintf(ids, sizeof(ids), "%d %d", priv, keyed);
    write_file(name, ids);
}

static int mode_fail(uint32_t who, int code, int by_signal)
{
    start();
    make_shm();
    if (my_rank != who)
        write_pid();
    /* Everyone is up and has written its pid before anyone fails. */
    CHECK(ops->barrier(bs) == 0, "barrier failed");
    if (my_rank != who)
        wait_forever();
    if (by_signal)
        raise(SIGKILL);
    exit(code);
}

static int mode_leave(uint32_t who)
{
    char  buf[4] = "abc";
    char *out    = malloc(4 * (size_t)atoi(getenv(PAMIRUN_ENV_SIZE)));

    CHECK(out != NULL, "out of memory");
    start();
    CHECK(ops->barrier(bs) == 0, "barrier failed");
    if (my_rank == who) {
        ops->fini(bs);
        free(out);
        return 0;
    }
    int rc = ops->allgather(bs, buf, out, 4);
    CHECK(rc == -ECONNRESET, "allgather after a rank left returned %d", rc);
    ops->fini(bs);
    free(out);
    return 4;
}

static int mode_sleep(int ignore_term)
{
    if (ignore_term)
        signal(SIGTERM, SIG_IGN);
    write_pid();
    printf("ready\n");
    fflush(stdout);
    wait_forever();
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sessions come and go (each a new connection and HELLO) while something
 * else floods the socket: pamirun must keep serving the ranks. */
static int mode_churn(double seconds)
{
    char go[4096];

    start();
    snprintf(go, sizeof(go), "%s/go", getenv("PIDDIR"));
    for (int i = 0; access(go, F_OK) != 0; i++) {
        CHECK(i < 2000, "no %s after 20 s", go);
        usleep(10000);
    }
    double   end = now_s() + seconds;
    unsigned n   = 0;
    for (;;) {
        /* Rank 0's clock decides for everyone. */
        char more = now_s() < end, all[4096];
        CHECK(my_size <= sizeof(all), "too many ranks");
        CHECK(ops->allgather(bs, &more, all, 1) == 0, "allgather of more");
        if (!all[0])
            break;
        void *s = start_another();
        allgather_round_on(s, 64, n);
        ops->fini(s);
        n++;
    }
    ops->fini(bs);
    printf("rank %u churn ok: %u sessions\n", my_rank, n);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(mode, "allgather") == 0)
        return mode_allgather();
    if (strcmp(mode, "sessions") == 0)
        return mode_sessions();
    if (strcmp(mode, "flood") == 0)
        return mode_flood();
    if (strcmp(mode, "print") == 0)
        return mode_print();
    if (strcmp(mode, "longline") == 0 && argc > 2)
        return mode_longline(strtoul(argv[2], NULL, 10));
    if (strcmp(mode, "env") == 0)
        return mode_env();
    if (strcmp(mode, "exit") == 0 && argc > 3)
        return mode_fail((uint32_t)atoi(argv[2]), atoi(argv[3]), 0);
    if (strcmp(mode, "kill") == 0 && argc > 2)
        return mode_fail((uint32_t)atoi(argv[2]), 0, 1);
    if (strcmp(mode, "leave") == 0 && argc > 2)
        return mode_leave((uint32_t)atoi(argv[2]));
    if (strcmp(mode, "sleep") == 0)
        return mode_sleep(0);
    if (strcmp(mode, "ignore-term") == 0)
        return mode_sleep(1);
    if (strcmp(mode, "churn") == 0 && argc > 2)
        return mode_churn(atof(argv[2]));
    fprintf(stderr, "rank_helper: unknown mode '%s'\n", mode);
    return 2;
}
