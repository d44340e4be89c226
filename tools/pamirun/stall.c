/*
 * Stopped ranks. A rank stopped by a signal (SIGSTOP: a hung task) keeps
 * its bootstrap connection open, so a collective it has not joined would
 * wait for it until the job's --timeout. While a collective is pending,
 * the server looks at the state of each rank that has not contributed and
 * fails the collective once one has been stopped for PAMI_PEER_TIMEOUT,
 * the time pami itself gives a stopped task of its node.
 */
#include "pamirun.h"

#include "log.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STALL_DEFAULT_MS 10000ull /* pami's own default (docs/config.md) */

double stall_timeout(void)
{
    const char *v = getenv("PAMI_PEER_TIMEOUT");
    if (v == NULL || *v == '\0')
        return (double)STALL_DEFAULT_MS / 1000.0;
    /* pami's size syntax: digits, then k, m or g. */
    char              *end;
    unsigned long long ms = strtoull(v, &end, 10);
    unsigned long long mul = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k': mul = 1ull << 10; end++; break;
    case 'm': mul = 1ull << 20; end++; break;
    case 'g': mul = 1ull << 30; end++; break;
    default: break;
    }
    if (!isdigit((unsigned char)v[0]) || *end != '\0') {
        pami_warn(PAMIRUN_SUBSYS, "PAMI_PEER_TIMEOUT='%s' is not a size; a "
                  "stopped rank fails a bootstrap collective after %llu ms",
                  v, STALL_DEFAULT_MS);
        return (double)STALL_DEFAULT_MS / 1000.0;
    }
    return (double)(ms * mul) / 1000.0;
}

int stall_stopped(pid_t pid)
{
    char path[48], buf[512];
    if (pid <= 0)
        return 0;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* The command name may hold ')': the state follows the last one. A
     * debugger's stop (t) is not a hang. */
    const char *p = strrchr(buf, ')');
    return p != NULL && p[1] == ' ' && p[2] == 'T';
}
