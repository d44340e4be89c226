/*
 * libFuzzer target: pamirun's bootstrap server (tools/pamirun/server.c),
 * the whole of it, fed through its real socket and event loop. Any local
 * process of the user can connect and send anything; a malformed stream
 * must close that connection, never crash the launcher or answer with
 * more than it was given.
 *
 * Input: u8 job size, u8 connections (1..4) and in bit 7 "connect as a
 * stranger" (a process outside the ranks' process groups), u8 rank that
 * exits midway, then per connection u16 length and that many bytes it
 * sends.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "pamirun.h"

static char dir[64];

static void cleanup(void)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/s", dir);
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
    atexit(cleanup);
    return 0;
}

static void drain(int fd)
{
    char buf[4096];
    while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
        ;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t f = {in, size};
    pamirun_job_t job = {0};
    job.size       = fz_u8(&f) % 8 + 1u;
    unsigned how   = fz_u8(&f);
    unsigned nconn = how % 4 + 1u;
    uint32_t gone  = fz_u8(&f);
    /* Our connections come from our process group: rank 0's, unless the
     * input asks to be a stranger. */
    job.ranks = calloc(job.size, sizeof(*job.ranks));
    if (job.ranks == NULL)
        abort();
    if (!(how & 0x80))
        job.ranks[0].pid = getpgrp();
    job.loop       = ev_loop_new(EVFLAG_AUTO);
    snprintf(job.sock_path, sizeof(job.sock_path), "%s/s", dir);
    unlink(job.sock_path);
    if (job.loop == NULL || server_start(&job) != 0)
        abort();

    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, job.sock_path);
    int fds[4];
    for (unsigned i = 0; i < nconn; i++) {
        fds[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[i] < 0 ||
            connect(fds[i], (struct sockaddr *)&addr, sizeof(addr)) != 0)
            abort();
        size_t   len;
        uint8_t *b = fz_bytes(&f, fz_u16(&f), &len);
        /* Small inputs fit the socket buffer: one write, no blocking. */
        if (len > 0 && send(fds[i], b, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
            errno != EAGAIN && errno != EPIPE && errno != ECONNRESET)
            abort();
        free(b);
    }
    for (int round = 0; round < 32; round++) {
        ev_run(job.loop, EVRUN_NOWAIT);
        for (unsigned i = 0; i < nconn; i++)
            drain(fds[i]);
        if (round == 8 && gone < job.size)
            server_rank_gone(job.server, gone);
    }
    /* The ranks go away, as at the end of a job or when one dies. */
    for (unsigned i = 0; i < nconn; i++)
        close(fds[i]);
    for (int round = 0; round < 4; round++)
        ev_run(job.loop, EVRUN_NOWAIT);
    server_stop(&job);
    ev_loop_destroy(job.loop);
    free(job.ranks);
    free(job.pids); /* the pids that joined (sysv.c) */
    return 0;
}
