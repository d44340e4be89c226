/*
 * libFuzzer target: the local bootstrap's client (adapters/bootstrap/
 * local.c), which every rank started by pamirun runs: init (HELLO,
 * WELCOME), allgathers (CONTRIB, RESULT) and fini, against a launcher
 * whose byte stream is the input. A broken or hostile launcher must give
 * an error, never a crash or an unbounded allocation.
 *
 * Input: u8 job size, u8 rank, u16 allgather length, u8 allgathers, then
 * what the launcher sends, all at once, before it closes its side.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "bootstrap.h"

static char dir[64];
static char path[128];
static int  lfd = -1;

static void cleanup(void)
{
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_quiet_logs();
    snprintf(dir, sizeof(dir), "/tmp/pami-fuzz-XXXXXX");
    if (mkdtemp(dir) == NULL)
        abort();
    snprintf(path, sizeof(path), "%s/s", dir);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, path);
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        listen(lfd, 4) != 0)
        abort();
    atexit(cleanup);
    setenv(PAMIRUN_ENV_SOCKET, path, 1);
    setenv(PAMIRUN_ENV_JOBID, "fuzz", 1);
    return 0;
}

typedef struct {
    const uint8_t *bytes;
    size_t         len;
} launcher_t;

/* Accepts the client, sends the stream, closes its sending side and
 * reads whatever the client says until it closes. */
static void *launcher(void *arg)
{
    launcher_t *l  = arg;
    int         fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    size_t off = 0;
    while (off < l->len) {
        ssize_t n = send(fd, l->bytes + off, l->len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    char buf[4096];
    while (recv(fd, buf, sizeof(buf), 0) > 0)
        ;
    close(fd);
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t     f     = {in, size};
    unsigned nsize = fz_u8(&f) % 8 + 1u;
    unsigned rank  = fz_u8(&f) % nsize;
    size_t   len   = fz_u16(&f) % 512;
    unsigned calls = fz_u8(&f) % 4;
    char     num[16];
    snprintf(num, sizeof(num), "%u", nsize);
    setenv(PAMIRUN_ENV_SIZE, num, 1);
    snprintf(num, sizeof(num), "%u", rank);
    setenv(PAMIRUN_ENV_RANK, num, 1);

    launcher_t l = {f.p, f.left};
    pthread_t  t;
    if (pthread_create(&t, NULL, launcher, &l) != 0)
        abort();
    void    *st = NULL;
    uint32_t r, n;
    if (bootstrap_local_ops.init(NULL, &st, &r, &n) == 0) {
        if (r != rank || n != nsize)
            abort();
        uint8_t *send = calloc(1, len + 1);
        uint8_t *recv = malloc(len * nsize + 1);
        for (unsigned i = 0; i < calls; i++)
            if (bootstrap_local_ops.allgather(st, send, recv, len) != 0)
                break;
        free(send);
        free(recv);
        bootstrap_local_ops.fini(st);
    }
    pthread_join(t, NULL);
    return 0;
}
