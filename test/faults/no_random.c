/*
 * LD_PRELOAD shim: in the task whose PAMI_RANK equals NO_RANDOM_RANK,
 * getrandom fails and /dev/urandom cannot be opened, so pami has no bytes
 * for the task's region secret. Used by no_random_run (a task without
 * them must not leave the others waiting in the task exchange).
 */
/* open and open64 are both defined here: no renaming of open. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

static bool victim(void)
{
    const char *want = getenv("NO_RANDOM_RANK");
    const char *rank = getenv("PAMI_RANK");
    return want != NULL && rank != NULL && strcmp(want, rank) == 0;
}

ssize_t getrandom(void *buf, size_t len, unsigned flags)
{
    if (victim()) {
        errno = EIO;
        return -1;
    }
    ssize_t (*real)(void *, size_t, unsigned) =
        (ssize_t (*)(void *, size_t, unsigned))dlsym(RTLD_NEXT, "getrandom");
    return real(buf, len, flags);
}

static int open_as(const char *sym, const char *path, int flags, va_list ap)
{
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
    if (victim() && strcmp(path, "/dev/urandom") == 0) {
        errno = EACCES;
        return -1;
    }
    int (*real)(const char *, int, ...) =
        (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, sym);
    return real(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int fd = open_as("open", path, flags, ap);
    va_end(ap);
    return fd;
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int fd = open_as("open64", path, flags, ap);
    va_end(ap);
    return fd;
}
