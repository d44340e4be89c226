/*
 * Each PE on a CPU of its own, as mpiexec places the reference's PEs by
 * default: left unbound, the scheduler of a loaded node tends to put two
 * PEs that wake each other on one CPU, where every barrier, broadcast or
 * reduction between them waits for a context switch (OSU's barrier at 2
 * PEs, load 17-20: 68 us unbound, 0.32 us bound; docs/PERFORMANCE.md).
 *
 * Done only when it cannot take a CPU from anyone who chose: the program
 * is single-threaded (SHMEM_THREAD_SINGLE: threads of its own would all
 * share the one CPU), there are at least two PEs on the node and no more
 * than CPUs, and every PE of the node may run on the same CPUs (no
 * launcher or user bound them already). SHMEM_BIND=0 turns it off.
 */
#include <dirent.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "shmem_internal.h"

static int bind_off(void)
{
    const char *v = getenv("SHMEM_BIND");

    return v != NULL && (strcmp(v, "0") == 0 || strcmp(v, "no") == 0 ||
                         strcmp(v, "off") == 0 || strcmp(v, "false") == 0);
}

/* The index-th CPU of the set (index from 0), -1 past its end. */
static int nth_cpu(const cpu_set_t *set, size_t index)
{
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, set) && index-- == 0)
            return cpu;
    return -1;
}

/* Every thread of the process, not only the caller: pami's and UCX's
 * threads exist already, and the affinity of a thread is its own. */
static int bind_all_threads(const cpu_set_t *one)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int failed = 0;

    if (d == NULL)
        return sched_setaffinity(0, sizeof(*one), one);
    while ((e = readdir(d)) != NULL) {
        pid_t tid = (pid_t)atoi(e->d_name);
        /* a thread that ended meanwhile is no failure */
        if (tid > 0 && sched_setaffinity(tid, sizeof(*one), one) != 0 &&
            sched_getaffinity(tid, sizeof(cpu_set_t), &(cpu_set_t){0}) == 0)
            failed = 1;
    }
    closedir(d);
    return failed ? -1 : 0;
}

void shmemi_bind(pami_task_t me, const pami_task_t *local_tasks,
                 size_t num_local, size_t num_local_cpus, int thread_level)
{
    cpu_set_t mask, one;
    size_t index = 0;

    if (bind_off() || num_local < 2)
        return;
    if (thread_level != SHMEM_THREAD_SINGLE) {
        shmemi_debug("not bound to a CPU: the program asked for threads");
        return;
    }
    if (sched_getaffinity(0, sizeof(mask), &mask) != 0)
        return;
    size_t mine = (size_t)CPU_COUNT(&mask);
    if (mine != num_local_cpus || num_local > mine) {
        shmemi_debug("not bound to a CPU: %zu PEs on this node, %zu CPUs "
                     "here, %zu among them", num_local, mine,
                     num_local_cpus);
        return;
    }
    while (index < num_local && local_tasks[index] != me)
        index++;
    int cpu = nth_cpu(&mask, index);
    if (index == num_local || cpu < 0)
        return;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (bind_all_threads(&one) != 0)
        shmemi_debug("binding to CPU %d failed for a thread", cpu);
    else
        shmemi_debug("bound to CPU %d (PE %zu of %zu on this node)", cpu,
                     index, num_local);
}
