/*
 * How long a process waited for a CPU it could run on: the run-queue
 * wait of /proc/PID/schedstat. pami-bench and pami-tune turn it into the
 * `cpu` share of a measurement (docs/PERFORMANCE.md, docs/tuning.md).
 */
#ifndef PAMI_TOOLS_SCHEDSTAT_H
#define PAMI_TOOLS_SCHEDSTAT_H

#include <stdio.h>

/* Seconds process pid (0: this one) has waited; -1 when unreadable. */
static inline double tool_cpu_waited(long pid)
{
    char path[64];
    if (pid == 0)
        snprintf(path, sizeof(path), "/proc/self/schedstat");
    else
        snprintf(path, sizeof(path), "/proc/%ld/schedstat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    unsigned long long run, wait;
    int n = fscanf(f, "%llu %llu", &run, &wait);
    fclose(f);
    return n == 2 ? (double)wait * 1e-9 : -1;
}

#endif
