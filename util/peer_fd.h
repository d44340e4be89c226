/*
 * A descriptor of another process of this node, taken with pidfd_getfd
 * (same user, ptrace access), kept only when it is an eventfd: the only
 * kind of a peer's descriptor pami reads or writes. Header-only, libc
 * only, for the transport and the core alike.
 */
#ifndef PAMI_PEER_FD_H
#define PAMI_PEER_FD_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* Whether our descriptor fd is an anonymous inode of that kind
 * ("eventfd", "eventpoll", ...), from its /proc link. */
static inline bool pami_fd_is_anon(int fd, const char *kind)
{
    char    path[64], link[64], want[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    snprintf(want, sizeof(want), "anon_inode:[%s]", kind);
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    if (n <= 0)
        return false;
    link[n] = '\0';
    return strcmp(link, want) == 0;
}

static inline bool pami_fd_is_eventfd(int fd)
{
    return pami_fd_is_anon(fd, "eventfd");
}

/* Our copy of descriptor fd of process pid, when it is an eventfd; -1
 * otherwise (errno from the failing call, or EBADF for another kind).
 * Our own process's descriptor (two contexts of one task) is a plain
 * dup: the same result without the pidfd calls, which tools such as
 * valgrind do not know. */
static inline int pami_peer_eventfd(pid_t pid, int fd)
{
    int mine;
    if (pid == getpid()) {
        mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    } else {
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0)
            return -1;
        mine = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
        close(pidfd);
    }
    if (mine >= 0 && !pami_fd_is_eventfd(mine)) {
        close(mine);
        errno = EBADF;
        mine  = -1;
    }
    return mine;
}

#endif
