/*
 * What a client knows of every task of the job: which share this node, and
 * for those, how to tell whether the process is still there.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"
#include "siphash.h"

#define HOST_ID_LEN 64

/* One byte every task can read in every other task of its node: reading it
 * tells a live process from a dead (or zombie) one. */
static const volatile char alive_probe = 1;

typedef struct {
    char      host[HOST_ID_LEN];
    uint64_t  pid;
    uint64_t  probe;
    cpu_set_t cpus;  /* where it may run */
    uint8_t   secret[PAMI_SIPHASH_KEY_LEN]; /* seals its memory regions */
    int32_t   plugins_rc; /* how loading PAMI_PROTOCOLS went (plugin.c) */
    int32_t   secret_rc;  /* PAMI_ERROR: no random bytes for secret */
} task_card_t;

/* A fresh secret per client: the kernel's random bytes, or none at all. */
static int make_secret(uint8_t *out, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = getrandom(out + got, len - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got == len)
        return 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    got = 0;
    while (got < len) {
        ssize_t n = read(fd, out + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    return got == len ? 0 : -1;
}

/* The boot id separates containers that share a hostname. */
static void host_id(char *out)
{
    memset(out, 0, HOST_ID_LEN);
    gethostname(out, HOST_ID_LEN / 2);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f == NULL)
        return;
    size_t used = strnlen(out, HOST_ID_LEN / 2);
    out[used++] = '/';
    if (fgets(out + used, (int)(HOST_ID_LEN - used), f) == NULL)
        out[used] = '\0';
    fclose(f);
}

/* A node's number is the order of its lowest task among the nodes' lowest
 * tasks, so every task numbers them alike from the same cards. */
static void number_nodes(pami_client_impl_t *c, const task_card_t *all)
{
    c->num_nodes = 0;
    for (size_t t = 0; t < c->size; t++) {
        size_t first = 0;
        while (memcmp(all[first].host, all[t].host, HOST_ID_LEN) != 0)
            first++;
        c->task_node[t] = first == t ? (uint32_t)c->num_nodes++
                                     : c->task_node[first];
    }
}

pami_result_t pami_tasks_exchange(pami_client_impl_t *c)
{
    task_card_t  me = {.pid = (uint64_t)getpid(),
                       .probe = (uint64_t)(uintptr_t)&alive_probe,
                       .plugins_rc = (int32_t)c->plugins_rc};
    host_id(me.host);
    if (sched_getaffinity(0, sizeof(me.cpus), &me.cpus) != 0)
        CPU_ZERO(&me.cpus);
    /* A failure here still takes part in the exchange below: the
     * others would wait for this card forever. */
    if (make_secret(me.secret, sizeof(me.secret)) != 0) {
        pami_error("client", "no random bytes for the region secret");
        me.secret_rc = PAMI_ERROR;
    }

    task_card_t *all = malloc(c->size * sizeof(*all));
    c->local_tasks   = malloc(c->size * sizeof(*c->local_tasks));
    c->task_node     = malloc(c->size * sizeof(*c->task_node));
    c->tasks         = calloc(c->size, sizeof(*c->tasks));
    c->secrets       = malloc(c->size * PAMI_SIPHASH_KEY_LEN);
    if (all == NULL || c->local_tasks == NULL || c->task_node == NULL ||
        c->tasks == NULL || c->secrets == NULL) {
        free(all);
        return PAMI_ENOMEM;
    }
    if (c->bs->allgather(c->bs_state, &me, all, sizeof(me)) != 0) {
        free(all);
        pami_error("client", "host exchange failed");
        return PAMI_BOOTSTRAP;
    }
    /* The slot of this task must hold what it sent: an OOB allgather that
     * orders its tasks otherwise than by oob_task would have every task
     * take another's host, pid and secret. */
    if (memcmp(&all[c->task], &me, sizeof(me)) != 0) {
        memset(all, 0, c->size * sizeof(*all));
        free(all);
        pami_error("client", "the bootstrap's allgather put other bytes in "
                             "this task's slot (%u): its tasks are not in "
                             "task order", (unsigned)c->task);
        return PAMI_BOOTSTRAP;
    }
    for (size_t t = 0; t < c->size; t++)
        if (all[t].secret_rc != PAMI_SUCCESS) {
            if (t != c->task)
                pami_error("client", "task %zu has no random bytes for its "
                                     "region secret, so no task starts", t);
            memset(all, 0, c->size * sizeof(*all));
            free(all);
            return PAMI_ERROR;
        }
    /* The node's tasks share the CPUs any of them may use: a launcher
     * that binds each task to its own core oversubscribes nothing. */
    cpu_set_t node_cpus;
    CPU_ZERO(&node_cpus);
    c->num_local_tasks = 0;
    for (size_t t = 0; t < c->size; t++) {
        if (memcmp(all[t].host, me.host, HOST_ID_LEN) != 0)
            continue;
        CPU_OR(&node_cpus, &node_cpus, &all[t].cpus);
        c->local_tasks[c->num_local_tasks++] = (pami_task_t)t;
        c->tasks[t].local = true;
        c->tasks[t].pid   = (pid_t)all[t].pid;
        c->tasks[t].probe = all[t].probe;
    }
    for (size_t t = c->size; t-- > 0;)
        if (all[t].plugins_rc != PAMI_SUCCESS) {
            c->plugins_failed_task = (uint32_t)t;
            c->plugins_failed_rc   = (pami_result_t)all[t].plugins_rc;
        }
    for (size_t t = 0; t < c->size; t++)
        memcpy(c->secrets + t * PAMI_SIPHASH_KEY_LEN, all[t].secret,
               PAMI_SIPHASH_KEY_LEN);
    pami_mr_job_add(c);
    number_nodes(c, all);
    memset(all, 0, c->size * sizeof(*all));
    free(all);
    long ncpu = CPU_COUNT(&node_cpus);
    if (ncpu == 0)
        ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c->num_local_cpus = ncpu > 0 ? (size_t)ncpu : 1;
    c->oversubscribed = c->num_local_tasks > c->num_local_cpus;
    return PAMI_SUCCESS;
}

void pami_tasks_release(pami_client_impl_t *c)
{
    pami_mr_job_remove(c);
    free(c->secrets);
    c->secrets = NULL;
}

bool pami_task_alive(pami_client_impl_t *c, uint32_t task)
{
    if (!c->tasks[task].local)
        return true;
    char byte;
    struct iovec local  = {.iov_base = &byte, .iov_len = 1};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)c->tasks[task].probe,
                           .iov_len = 1};
    if (process_vm_readv(c->tasks[task].pid, &local, 1, &remote, 1, 0) == 1)
        return true;
    /* Only "no such process" proves death; EPERM and friends mean the
     * probe cannot tell, and UCX's own access would fail the same way. */
    return errno != ESRCH;
}
