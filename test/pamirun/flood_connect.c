/*
 * A local process of the same user that floods pamirun's bootstrap
 * socket: for S seconds it opens connections as fast as it can and holds
 * them until its own descriptors run out (then drops the older half).
 * Most stay silent; some send half a header, some garbage, some a HELLO
 * for a rank the job does not have. Touches READY_FILE once it holds
 * 200 connections, and prints how many it made.
 *
 *   flood_connect SOCKET SECONDS READY_FILE
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "local_wire.h"

#define HOLD_MAX 4096

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What connection k says, if anything. */
static void say(int fd, unsigned long k)
{
    local_wire_hdr_t h;
    ssize_t          rc = 0;

    switch (k % 8) {
    case 1: /* half a header, then silence */
        local_wire_hdr_init(&h, LOCAL_MSG_HELLO);
        rc = write(fd, &h, sizeof(h) / 2);
        break;
    case 3: /* a HELLO for a rank the job does not have */
        local_wire_hdr_init(&h, LOCAL_MSG_HELLO);
        h.rank = 1000000;
        h.size = 1000001;
        rc = write(fd, &h, sizeof(h));
        break;
    case 5: /* garbage */
        memset(&h, 0xa5, sizeof(h));
        rc = write(fd, &h, sizeof(h));
        break;
    default: /* silence */
        break;
    }
    (void)rc; /* pamirun may have closed it already */
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: flood_connect SOCKET SECONDS READY_FILE\n");
        return 2;
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(argv[1]) >= sizeof(addr.sun_path))
        return 2;
    strcpy(addr.sun_path, argv[1]);
    double end = now_s() + atof(argv[2]);
    signal(SIGPIPE, SIG_IGN); /* pamirun closes what it sheds */

    /* As many descriptors as allowed: more than pamirun has. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max < HOLD_MAX + 16 ? rl.rlim_max
                                                  : HOLD_MAX + 16;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    static int    held[HOLD_MAX];
    size_t        nheld = 0;
    unsigned long made = 0, busy = 0;
    int           ready = 0;
    while (now_s() < end) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        0);
        if (fd < 0 || nheld == HOLD_MAX) {
            if (fd >= 0)
                close(fd);
            /* Out of descriptors: let the older half go. */
            size_t half = nheld / 2;
            for (size_t i = 0; i < half; i++)
                close(held[i]);
            memmove(held, held + half, (nheld - half) * sizeof(int));
            nheld -= half;
            continue;
        }
        if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
            close(fd);
            if (errno == ENOENT || errno == ECONNREFUSED)
                break; /* pamirun is gone */
            busy++; /* the backlog is full: give pamirun the CPU */
            sched_yield();
            continue;
        }
        say(fd, made);
        held[nheld++] = fd;
        if (++made == 200 && !ready) {
            int r = open(argv[3], O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
            if (r >= 0)
                close(r);
            ready = 1;
        }
    }
    printf("flood: %lu connections made, %lu refused for a full backlog\n",
           made, busy);
    return ready ? 0 : 1;
}
