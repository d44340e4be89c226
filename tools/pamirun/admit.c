/*
 * Who may hold a bootstrap connection, and shedding the rest. The socket
 * sits in a 0700 directory, but any process of the same user can still
 * connect to it, as often as it likes. A connection from a process in one
 * of the ranks' process groups is the job's own; any other is a stranger:
 * at most PAMIRUN_STRANGERS_MAX of those stay open (each must say HELLO
 * within PAMIRUN_HELLO_TIMEOUT), the rest are accepted and closed at
 * once, so no flood can take the descriptors the ranks need. When the
 * descriptors run out anyway, a spare one is given up to accept and close
 * the next connection instead of leaving it in the backlog, which would
 * make the listening socket readable forever and the loop spin.
 */
#include "pamirun.h"

#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/socket.h>
#include <unistd.h>

int admit_classify(const pamirun_job_t *job, int fd)
{
    struct ucred cred;
    socklen_t    len = sizeof(cred);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return ADMIT_STRANGER;
    /* The 0700 directory already keeps other users out; this makes it
     * explicit should the directory ever be opened up. */
    if (cred.uid != geteuid())
        return ADMIT_OTHER_USER;
    /* Each rank leads its own process group (spawn.c), so its children
     * (a shell's, say) count as the rank too. */
    pid_t pgid = getpgid(cred.pid);
    if (pgid <= 0)
        return ADMIT_STRANGER;
    for (uint32_t r = 0; r < job->size; r++)
        if (job->ranks[r].pid == pgid)
            return ADMIT_RANK;
    return ADMIT_STRANGER;
}

int admit_spare_open(void)
{
    return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

int admit_shed_with_spare(int listen_fd, int *spare)
{
    if (*spare < 0)
        return -1;
    close(*spare);
    *spare = -1;
    int fd;
    do {
        fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd >= 0)
        close(fd);
    *spare = admit_spare_open();
    return fd >= 0 ? 0 : -1;
}

void admit_note(admit_log_t *log, double now, const char *why)
{
    log->total++;
    if (log->lines > 0 && now - log->last < PAMIRUN_SHED_LOG_INTERVAL) {
        log->quiet++;
        return;
    }
    if (log->quiet > 0)
        pami_warn(PAMIRUN_SUBSYS, "bootstrap socket: %s; %" PRIu64 " more "
                  "connections refused in the last %.0f s", why, log->quiet,
                  now - log->last);
    else
        pami_warn(PAMIRUN_SUBSYS, "bootstrap socket: %s (further refusals "
                  "are logged at most every %.0f s)", why,
                  PAMIRUN_SHED_LOG_INTERVAL);
    log->quiet = 0;
    log->last  = now;
    log->lines++;
}

void admit_log_end(const admit_log_t *log)
{
    if (log->quiet > 0)
        pami_warn(PAMIRUN_SUBSYS, "bootstrap socket: %" PRIu64 " connections "
                  "refused in all", log->total);
}
