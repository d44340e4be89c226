/*
 * An LD_PRELOAD module that times the socket calls of a ping-pong, per
 * descriptor, so pami's socket and the bench's own UCP socket in one
 * process can be compared under load: medians of a call's own time do
 * not move much when other processes take the cores, where the bench's
 * mean round trip does (docs/performance-log.md, "Across nodes (s10)").
 *
 * Per descriptor with at least 1000 sends it prints, at exit, to stderr:
 *   send   the median time of one send call (sendmsg, sendto, send);
 *   gap    the median time from one send's start to the next one's on
 *          the same descriptor: a round trip in a ping-pong;
 *   turn   the median time from a receive that returned data (recv,
 *          recvfrom) to the next send on the same descriptor: the
 *          program's own part of a turn.
 * Not thread-safe; meant for pami-bench's one-thread loops.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

enum { MAX_FD = 256, BUCKETS = 4000, BUCKET_NS = 10 };

typedef struct {
    uint64_t n;
    uint32_t at[BUCKETS];
} hist_t;

typedef struct {
    hist_t   send, gap, turn;
    uint64_t last_send, last_recv;
} fd_times_t;

static fd_times_t times[MAX_FD];

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void add(hist_t *h, uint64_t ns)
{
    uint64_t b = ns / BUCKET_NS;
    h->at[b < BUCKETS ? b : BUCKETS - 1]++;
    h->n++;
}

static void send_begins(int fd, uint64_t t)
{
    if (fd < 0 || fd >= MAX_FD)
        return;
    fd_times_t *f = &times[fd];
    if (f->last_send != 0)
        add(&f->gap, t - f->last_send);
    if (f->last_recv != 0)
        add(&f->turn, t - f->last_recv);
    f->last_send = t;
    f->last_recv = 0;
}

static void send_ends(int fd, uint64_t t0)
{
    if (fd >= 0 && fd < MAX_FD)
        add(&times[fd].send, now_ns() - t0);
}

static void received(int fd, ssize_t r)
{
    if (r > 0 && fd >= 0 && fd < MAX_FD)
        times[fd].last_recv = now_ns();
}

typedef ssize_t (*sendmsg_fn)(int, const struct msghdr *, int);
typedef ssize_t (*sendto_fn)(int, const void *, size_t, int,
                             const struct sockaddr *, socklen_t);
typedef ssize_t (*send_fn)(int, const void *, size_t, int);
typedef ssize_t (*recv_fn)(int, void *, size_t, int);
typedef ssize_t (*recvfrom_fn)(int, void *, size_t, int, struct sockaddr *,
                               socklen_t *);

#define REAL(name)                                                        \
    static name##_fn real_##name;                                         \
    if (real_##name == NULL)                                              \
        real_##name = (name##_fn)dlsym(RTLD_NEXT, #name)

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    REAL(sendmsg);
    uint64_t t0 = now_ns();
    send_begins(fd, t0);
    ssize_t r = real_sendmsg(fd, msg, flags);
    send_ends(fd, t0);
    return r;
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags,
               const struct sockaddr *to, socklen_t tolen)
{
    REAL(sendto);
    uint64_t t0 = now_ns();
    send_begins(fd, t0);
    ssize_t r = real_sendto(fd, buf, len, flags, to, tolen);
    send_ends(fd, t0);
    return r;
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    REAL(send);
    uint64_t t0 = now_ns();
    send_begins(fd, t0);
    ssize_t r = real_send(fd, buf, len, flags);
    send_ends(fd, t0);
    return r;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    REAL(recv);
    ssize_t r = real_recv(fd, buf, len, flags);
    received(fd, r);
    return r;
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
                 struct sockaddr *from, socklen_t *fromlen)
{
    REAL(recvfrom);
    ssize_t r = real_recvfrom(fd, buf, len, flags, from, fromlen);
    received(fd, r);
    return r;
}

static double quantile_us(const hist_t *h, double q)
{
    uint64_t want = (uint64_t)((double)h->n * q), seen = 0;
    for (int b = 0; b < BUCKETS; b++) {
        seen += h->at[b];
        if (seen > want)
            return b * BUCKET_NS / 1000.0;
    }
    return -1;
}

__attribute__((destructor)) static void report(void)
{
    for (int fd = 0; fd < MAX_FD; fd++) {
        const fd_times_t *f = &times[fd];
        if (f->send.n < 1000)
            continue;
        fprintf(stderr,
                "send_timer pid %d fd %d: %llu sends, send %.2f us, gap %.2f "
                "us, turn %.2f us (medians; gap p25 %.2f, p75 %.2f)\n",
                (int)getpid(), fd, (unsigned long long)f->send.n,
                quantile_us(&f->send, 0.5), quantile_us(&f->gap, 0.5),
                quantile_us(&f->turn, 0.5), quantile_us(&f->gap, 0.25),
                quantile_us(&f->gap, 0.75));
    }
}
