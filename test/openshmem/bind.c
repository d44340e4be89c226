/* Where shmem_init puts the PEs (docs/openshmem.md, "Design"): with at
 * least two PEs on the node and no more than the CPUs they may all run
 * on, every thread of each PE is on one CPU of that set and no two PEs
 * share one; with more PEs than CPUs, one PE, SHMEM_BIND=0 or a program
 * that asked for threads ("threads": SHMEM_THREAD_MULTIPLE) the CPUs
 * the PE was started with are left as they were. The job runs on one
 * node (pamirun), so the node's PEs are all the PEs. */
#include <dirent.h>
#include <sched.h>
#include <shmem.h>
#include <string.h>
#include <sys/types.h>

#include "shmem_check.h"

#define MAX_PES 64

static int cpu_of_pe[MAX_PES]; /* symmetric: each PE writes its CPU at PE 0 */

static int bind_off(void)
{
    const char *v = getenv("SHMEM_BIND");

    return v != NULL && (strcmp(v, "0") == 0 || strcmp(v, "no") == 0 ||
                         strcmp(v, "off") == 0 || strcmp(v, "false") == 0);
}

/* Checks every thread of this process has exactly the set want. */
static int threads_on(const cpu_set_t *want)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int threads = 0;

    CHECK(d != NULL, "cannot list /proc/self/task");
    while ((e = readdir(d)) != NULL) {
        pid_t tid = (pid_t)atoi(e->d_name);
        cpu_set_t got;

        if (tid <= 0 || sched_getaffinity(tid, sizeof(got), &got) != 0)
            continue;
        CHECK(CPU_EQUAL(&got, want), "thread %d runs on %d CPUs, not the "
              "%d expected", (int)tid, CPU_COUNT(&got), CPU_COUNT(want));
        threads++;
    }
    closedir(d);
    return threads;
}

int main(int argc, char **argv)
{
    int threaded = argc > 1 && strcmp(argv[1], "threads") == 0;
    cpu_set_t before, after;

    CHECK(sched_getaffinity(0, sizeof(before), &before) == 0, "getaffinity");
    if (threaded) {
        int provided;
        shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    } else {
        shmem_init();
    }
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n <= MAX_PES, "%d PEs, at most %d here", n, MAX_PES);
    CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) == n, "not all PEs on one node");
    CHECK(sched_getaffinity(0, sizeof(after), &after) == 0, "getaffinity");

    int expect = !bind_off() && !threaded && n >= 2 && n <= CPU_COUNT(&before);
    if (!expect) {
        CHECK(CPU_EQUAL(&after, &before), "the CPUs were changed (%d -> %d)",
              CPU_COUNT(&before), CPU_COUNT(&after));
        threads_on(&before);
    } else {
        CHECK(CPU_COUNT(&after) == 1, "on %d CPUs, not one",
              CPU_COUNT(&after));
        int cpu = -1;
        for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
            if (CPU_ISSET(c, &after))
                cpu = c;
        CHECK(CPU_ISSET(cpu, &before), "CPU %d was not among this PE's", cpu);
        CHECK(threads_on(&after) >= 1, "no thread listed");
        shmem_int_p(&cpu_of_pe[me], cpu, 0);
    }
    shmem_barrier_all();
    if (expect && me == 0)
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                CHECK(cpu_of_pe[i] != cpu_of_pe[j], "PEs %d and %d share "
                      "CPU %d", i, j, cpu_of_pe[i]);
    if (me == 0)
        printf("bind: %d PEs, %d CPUs: %s\n", n, CPU_COUNT(&before),
               expect ? "each PE on a CPU of its own" : "left as started");
    shmem_finalize();
    return 0;
}
