/*
 * Whole reads and writes on a descriptor (pipe or socket), retried after
 * EINTR and short transfers. Header-only and libc-only, so programs built
 * on pami's public headers alone (pami-conformance, the tests) share it
 * with the library's own code without seeing anything of pami's insides.
 */
#ifndef PAMI_FDIO_H
#define PAMI_FDIO_H

#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

/* 0 when all len bytes went; -1 on an error or a closed peer. On a
 * socket the write raises no SIGPIPE (the caller sees -1 instead). */
static inline int pami_fd_write_all(int fd, const void *buf, size_t len)
{
    const char *p    = buf;
    int         sock = 1;
    while (len > 0) {
        ssize_t n = sock ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
        if (n < 0 && sock && errno == ENOTSOCK) {
            sock = 0;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* 0 when all len bytes came; -1 on an error or end of file first. */
static inline int pami_fd_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

#endif
