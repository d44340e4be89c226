/*
 * The local bootstrap client against a scripted fake launcher: every reply
 * a broken or vanished launcher could give must turn into an error code,
 * never a crash, a hang or an out-of-bounds read. Also the singleton mode
 * and the checks on the environment.
 *
 * The fake launcher runs in a forked child and checks what the client
 * sends; its exit status says whether the client spoke the protocol.
 */
#include "bootstrap.h"
#include "local_wire.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static const bootstrap_ops_t *ops = &bootstrap_local_ops;

/* What the fake launcher does after it accepted the client. */
typedef enum {
    SCRIPT_CLOSE_AT_ONCE,
    SCRIPT_BAD_MAGIC,
    SCRIPT_WRONG_SIZE,
    SCRIPT_REFUSE,
    SCRIPT_WELCOME_PAYLOAD,
    SCRIPT_BAD_STATUS,
    SCRIPT_RESULT_WRONG_SEQ,
    SCRIPT_RESULT_WRONG_LEN,
    SCRIPT_RESULT_ERROR,
    SCRIPT_RESULT_TRUNCATED,
    SCRIPT_CLOSE_IN_COLLECTIVE,
    SCRIPT_GOOD
} script_t;

#define RANK 1u
#define SIZE 2u

typedef struct {
    char  dir[64];
    char  path[128];
    pid_t pid;
} fake_t;

/* ---- fake launcher (child process) -------------------------------------- */

static void must(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fake launcher: %s\n", what);
        _exit(1);
    }
}

static void fake_read(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        must(n > 0, "short read from client");
        p += n;
        len -= (size_t)n;
    }
}

static void fake_write(int fd, const void *buf, size_t len)
{
    must(write(fd, buf, len) == (ssize_t)len, "write to client");
}

/* For bytes the client may rightly refuse to read: it can close first. */
static void fake_write_maybe(int fd, const void *buf, size_t len)
{
    if (write(fd, buf, len) < 0)
        return;
}

static local_wire_hdr_t reply(uint16_t type, uint64_t seq, int32_t status,
                              uint64_t len)
{
    local_wire_hdr_t h;
    local_wire_hdr_init(&h, type);
    h.rank   = RANK;
    h.size   = SIZE;
    h.seq    = seq;
    h.status = status;
    h.len    = len;
    return h;
}

static void expect_hdr(int fd, uint16_t type, uint64_t seq, uint64_t len)
{
    local_wire_hdr_t h;
    fake_read(fd, &h, sizeof(h));
    must(local_wire_hdr_valid(&h), "client header invalid");
    must(h.type == type, "unexpected message type");
    must(h.rank == RANK && h.size == SIZE, "wrong rank or size");
    must(h.seq == seq, "wrong sequence number");
    must(h.len == len, "wrong length");
}

static void send_hdr(int fd, local_wire_hdr_t h)
{
    fake_write(fd, &h, sizeof(h));
}

/* The client allgathers "abcd" as rank 1; rank 0's part is "wxyz". */
static void serve_collective(int fd, script_t script)
{
    char contrib[4];

    expect_hdr(fd, LOCAL_MSG_CONTRIB, 0, 4);
    fake_read(fd, contrib, 4);
    must(memcmp(contrib, "abcd", 4) == 0, "contribution bytes");
    switch (script) {
    case SCRIPT_RESULT_WRONG_SEQ:
        send_hdr(fd, reply(LOCAL_MSG_RESULT, 7, 0, 8));
        fake_write_maybe(fd, "wxyzabcd", 8);
        break;
    case SCRIPT_RESULT_WRONG_LEN:
        send_hdr(fd, reply(LOCAL_MSG_RESULT, 0, 0, (uint64_t)1 << 40));
        break;
    case SCRIPT_RESULT_ERROR:
        send_hdr(fd, reply(LOCAL_MSG_RESULT, 0, -EINVAL, 0));
        break;
    case SCRIPT_RESULT_TRUNCATED:
        send_hdr(fd, reply(LOCAL_MSG_RESULT, 0, 0, 8));
        fake_write_maybe(fd, "wxy", 3);
        break;
    case SCRIPT_CLOSE_IN_COLLECTIVE:
        break;
    default:
        send_hdr(fd, reply(LOCAL_MSG_RESULT, 0, 0, 8));
        fake_write(fd, "wxyzabcd", 8);
        /* then a barrier, then bye, then the end of the stream */
        expect_hdr(fd, LOCAL_MSG_CONTRIB, 1, 0);
        send_hdr(fd, reply(LOCAL_MSG_RESULT, 1, 0, 0));
        expect_hdr(fd, LOCAL_MSG_BYE, 0, 0);
        char c;
        must(read(fd, &c, 1) == 0, "client did not close after bye");
        break;
    }
}

static void serve(int lfd, script_t script)
{
    /* A write to a client that already gave up must fail, not kill. */
    signal(SIGPIPE, SIG_IGN);
    int fd = accept(lfd, NULL, NULL);
    must(fd >= 0, "accept");
    if (script == SCRIPT_CLOSE_AT_ONCE)
        _exit(0);
    expect_hdr(fd, LOCAL_MSG_HELLO, 0, 0);

    local_wire_hdr_t w = reply(LOCAL_MSG_WELCOME, 0, 0, 0);
    switch (script) {
    case SCRIPT_BAD_MAGIC:       w.magic = 0x12345678; break;
    case SCRIPT_WRONG_SIZE:      w.size = SIZE + 1; break;
    case SCRIPT_REFUSE:          w.status = -EINVAL; break;
    case SCRIPT_WELCOME_PAYLOAD: w.len = 5; break;
    case SCRIPT_BAD_STATUS:      w.status = 5; break;
    default: break;
    }
    send_hdr(fd, w);
    if (script > SCRIPT_BAD_STATUS)
        serve_collective(fd, script);
    _exit(0);
}

static void fake_start(fake_t *f, script_t script)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};

    strcpy(f->dir, "/tmp/pami-client-test-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/sock", f->dir);
    strcpy(addr.sun_path, f->path);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(listen(lfd, 4), 0);
    f->pid = fork();
    assert_true(f->pid >= 0);
    if (f->pid == 0)
        serve(lfd, script);
    close(lfd);
    setenv(PAMIRUN_ENV_SOCKET, f->path, 1);
    setenv(PAMIRUN_ENV_RANK, "1", 1);
    setenv(PAMIRUN_ENV_SIZE, "2", 1);
    setenv(PAMIRUN_ENV_JOBID, "test-job", 1);
}

/* Reaps the fake launcher, which exits 0 only when the client sent what
 * it expected. */
static void fake_finish(fake_t *f)
{
    int status;
    assert_int_equal(waitpid(f->pid, &status, 0), f->pid);
    unlink(f->path);
    rmdir(f->dir);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- tests -------------------------------------------------------------- */

static int init_against(script_t script, void **state, fake_t *f)
{
    uint32_t rank, size;
    fake_start(f, script);
    int rc = ops->init(NULL, state, &rank, &size);
    if (rc == 0) {
        assert_int_equal(rank, RANK);
        assert_int_equal(size, SIZE);
    }
    return rc;
}

static void expect_init_fails(script_t script, int expected)
{
    fake_t f;
    void  *st = NULL;
    assert_int_equal(init_against(script, &st, &f), expected);
    fake_finish(&f);
}

static void test_launcher_gone_at_hello(void **unused)
{
    (void)unused;
    expect_init_fails(SCRIPT_CLOSE_AT_ONCE, -ECONNRESET);
}

static void test_bad_welcomes(void **unused)
{
    (void)unused;
    expect_init_fails(SCRIPT_BAD_MAGIC, -EIO);
    expect_init_fails(SCRIPT_WRONG_SIZE, -EINVAL);
    expect_init_fails(SCRIPT_REFUSE, -EINVAL);
    expect_init_fails(SCRIPT_WELCOME_PAYLOAD, -EIO);
    expect_init_fails(SCRIPT_BAD_STATUS, -EIO);
}

static void expect_allgather_fails(script_t script, int expected)
{
    fake_t f;
    void  *st;
    char   recv[8];
    assert_int_equal(init_against(script, &st, &f), 0);
    assert_int_equal(ops->allgather(st, "abcd", recv, 4), expected);
    ops->fini(st);
    fake_finish(&f);
}

static void test_bad_results(void **unused)
{
    (void)unused;
    expect_allgather_fails(SCRIPT_RESULT_WRONG_SEQ, -EIO);
    expect_allgather_fails(SCRIPT_RESULT_WRONG_LEN, -EIO);
    expect_allgather_fails(SCRIPT_RESULT_ERROR, -EINVAL);
    expect_allgather_fails(SCRIPT_RESULT_TRUNCATED, -ECONNRESET);
    expect_allgather_fails(SCRIPT_CLOSE_IN_COLLECTIVE, -ECONNRESET);
}

/* The client's side of the protocol, checked byte by byte by the fake. */
static void test_good_exchange(void **unused)
{
    (void)unused;
    fake_t f;
    void  *st;
    char   recv[8];

    assert_int_equal(init_against(SCRIPT_GOOD, &st, &f), 0);
    assert_string_equal(ops->job_id(st), "test-job");
    /* Over the limit: refused locally, nothing reaches the launcher. */
    assert_int_equal(ops->allgather(st, NULL, NULL,
                                    (size_t)LOCAL_WIRE_MAX_CONTRIB + 1),
                     -EINVAL);
    assert_int_equal(ops->allgather(st, "abcd", recv, 4), 0);
    assert_memory_equal(recv, "wxyzabcd", 8);
    assert_int_equal(ops->barrier(st), 0);
    ops->fini(st);
    fake_finish(&f);
}

static void expect_env_refused(const char *rank, const char *size,
                               const char *job, const char *sock, int rc)
{
    void    *st;
    uint32_t r, s;

    setenv(PAMIRUN_ENV_SOCKET, sock, 1);
    setenv(PAMIRUN_ENV_RANK, rank, 1);
    setenv(PAMIRUN_ENV_SIZE, size, 1);
    setenv(PAMIRUN_ENV_JOBID, job, 1);
    assert_int_equal(ops->init(NULL, &st, &r, &s), rc);
}

static void test_bad_environment(void **unused)
{
    (void)unused;
    const char *nosock = "/nonexistent/pami/sock";

    expect_env_refused("x", "2", "j", nosock, -EINVAL);
    expect_env_refused("-1", "2", "j", nosock, -EINVAL);
    expect_env_refused("2", "2", "j", nosock, -EINVAL);
    expect_env_refused("0", "0", "j", nosock, -EINVAL);
    expect_env_refused("0", "99999999999", "j", nosock, -EINVAL);
    expect_env_refused("0", "2", "../etc", nosock, -EINVAL);
    expect_env_refused("0", "2", "", nosock, -EINVAL);
    expect_env_refused("0", "2", "j", nosock, -ECONNRESET);
    unsetenv(PAMIRUN_ENV_RANK);
    void    *st;
    uint32_t r, s;
    assert_int_equal(ops->init(NULL, &st, &r, &s), -EINVAL);
}

static void test_singleton(void **unused)
{
    (void)unused;
    void    *st;
    uint32_t rank = 9, size = 9;
    char     recv[5] = {0}, id[32];

    unsetenv(PAMIRUN_ENV_SOCKET);
    unsetenv(PAMIRUN_ENV_RANK);
    unsetenv(PAMIRUN_ENV_SIZE);
    unsetenv(PAMIRUN_ENV_JOBID);
    assert_int_equal(ops->detect(), 0);
    assert_int_equal(ops->init(NULL, &st, &rank, &size), 0);
    assert_int_equal(rank, 0);
    assert_int_equal(size, 1);
    assert_int_equal(ops->allgather(st, "data", recv, 4), 0);
    assert_string_equal(recv, "data");
    assert_int_equal(ops->allgather(st, NULL, NULL, 0), 0);
    assert_int_equal(ops->barrier(st), 0);
    snprintf(id, sizeof(id), "single-%ld", (long)getpid());
    assert_string_equal(ops->job_id(st), id);
    ops->fini(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_singleton),
        cmocka_unit_test(test_bad_environment),
        cmocka_unit_test(test_launcher_gone_at_hello),
        cmocka_unit_test(test_bad_welcomes),
        cmocka_unit_test(test_bad_results),
        cmocka_unit_test(test_good_exchange),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
