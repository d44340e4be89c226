/* Library setup, exit and query: shmem_init joins pami (client, one
 * context, the world geometry), then builds the symmetric segments. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_internal.h"

shmemi_state_t shmemi;

/* The predefined handles (shmem.h): their contents are filled at init. */
struct shmemi_team shmem_team_world_object = { .my_pe = -1 };
struct shmemi_team shmem_team_shared_object = { .my_pe = -1 };
struct shmemi_ctx shmem_ctx_default_object;

static int env_flag(const char *name)
{
    const char *v = getenv(name);

    return v != NULL && *v != '\0' && strcmp(v, "0") != 0 &&
           strcmp(v, "no") != 0 && strcmp(v, "off") != 0 &&
           strcmp(v, "false") != 0;
}

static void print_info(void)
{
    printf("OpenSHMEM %d.%d, %s\n", SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION,
           SHMEM_VENDOR_STRING);
    printf("SHMEM_SYMMETRIC_SIZE  %zu bytes: the symmetric heap of each PE "
           "(K, M, G, T suffixes)\n", shmemi.seg[SHMEMI_SEG_HEAP].size);
    printf("SHMEM_VERSION         print the library's version at start\n");
    printf("SHMEM_INFO            print this help at start\n");
    printf("SHMEM_DEBUG           debugging messages on stderr\n");
    printf("SHMEM_BIND            0: leave each PE on the CPUs it started "
           "with\n");
    printf("SHMEM_COPY_HELP       %zu: smallest put or get through a mapping "
           "whose copy the target's core may share (0: never)\n",
           shmemi.copy_help_min == SIZE_MAX ? 0 : shmemi.copy_help_min);
    fflush(stdout);
}

static void at_exit(void)
{
    /* A program that returns from main without shmem_finalize: finalize
     * here, as every PE does the same. */
    if (shmemi.initialized && !shmemi.finalized)
        shmem_finalize();
}

/* pami's progress thread runs (PAMI_ASYNC_PROGRESS). */
static int pami_async;

static void join_pami(int thread_level)
{
    pami_client_attr_t attr;
    pami_result_t rc;

    /* A PE about to sleep (a barrier, a wait) would otherwise call
     * membarrier, which interrupts every other PE of the node that is
     * computing or copying (11-12 us each on the development VM, twice
     * per sleep); the fences it saves are on pami's message queues,
     * which RMA and atomics through the mappings do not use. The
     * environment's PAMI_SHM_MEMBARRIER, when set, is kept. */
    pami_client_params_t params = {0};
    const char *membarrier = getenv("PAMI_SHM_MEMBARRIER");
    if (membarrier == NULL || *membarrier == '\0') {
        params.field_mask = PAMI_CLIENT_PARAM_SHM_MEMBARRIER;
        params.shm_membarrier = 0;
    }
    /* The library must know whether pami's progress thread runs (then
     * every pami call takes the context's lock), so it decides and tells
     * pami instead of leaving pami to read the variable. */
    pami_async = env_flag("PAMI_ASYNC_PROGRESS");
    params.field_mask |= PAMI_CLIENT_PARAM_ASYNC_PROGRESS;
    params.async_progress = pami_async;
    shmemi.pami_locked = pami_async || thread_level == SHMEM_THREAD_MULTIPLE;
    rc = pami_client_create("openshmem", &params, &shmemi.client);
    if (rc != PAMI_SUCCESS)
        shmemi_fatal("cannot join the job (pami_client_create): %s",
                     pami_error_text(rc));
    rc = pami_context_createv(shmemi.client, NULL, 1, &shmemi.context);
    if (rc != PAMI_SUCCESS)
        shmemi_fatal("pami_context_createv: %s", pami_error_text(rc));
    /* The progress thread runs from here: the rest of shmem_init (whose
     * pami calls are not each locked) holds the lock. */
    if (pami_async)
        pami_context_lock(shmemi.context);
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = PAMI_CLIENT_ATTR_TASK | PAMI_CLIENT_ATTR_SIZE |
                      PAMI_CLIENT_ATTR_LOCAL_TASKS |
                      PAMI_CLIENT_ATTR_LOCAL_CPUS;
    rc = pami_client_query(shmemi.client, &attr);
    if (rc != PAMI_SUCCESS)
        shmemi_fatal("pami_client_query: %s", pami_error_text(rc));
    shmemi.my_pe = (int)attr.task;
    shmemi.n_pes = (int)attr.size;
    shmemi.endpoints = calloc((size_t)shmemi.n_pes, sizeof(pami_endpoint_t));
    shmemi.same_node = calloc((size_t)shmemi.n_pes, 1);
    if (shmemi.endpoints == NULL || shmemi.same_node == NULL)
        shmemi_fatal("out of memory at init");
    for (int pe = 0; pe < shmemi.n_pes; pe++) {
        rc = pami_endpoint_create(shmemi.client, (pami_task_t)pe, 0,
                                  &shmemi.endpoints[pe]);
        if (rc != PAMI_SUCCESS)
            shmemi_fatal("pami_endpoint_create(%d): %s", pe,
                         pami_error_text(rc));
    }
    for (size_t i = 0; i < attr.num_local_tasks; i++)
        shmemi.same_node[attr.local_tasks[i]] = 1;
    shmemi_bind(attr.task, attr.local_tasks, attr.num_local_tasks,
                attr.num_local_cpus, thread_level);
    rc = pami_geometry_world(shmemi.context, &shmemi.world);
    if (rc != PAMI_SUCCESS)
        shmemi_fatal("pami_geometry_world: %s", pami_error_text(rc));
}

static void init_handles(void)
{
    struct shmemi_team *w = &shmem_team_world_object;
    struct shmemi_ctx *c = &shmem_ctx_default_object;

    w->geometry = shmemi.world;
    w->my_pe = shmemi.my_pe;
    w->n_pes = shmemi.n_pes;
    w->start = 0;
    w->stride = 1;
    c->context = shmemi.context;
    c->team = SHMEM_TEAM_WORLD;
    c->pending = 0;
}

int shmem_init_thread(int requested, int *provided)
{
    if (shmemi.initialized) {
        /* The specification allows more than one call; later ones do
         * nothing. */
        if (provided != NULL)
            *provided = shmemi.thread_level;
        return 0;
    }
    if (shmemi.finalized)
        shmemi_fatal("shmem_init after shmem_finalize");
    shmemi.debug = env_flag("SHMEM_DEBUG");
    /* Every level up to MULTIPLE (docs/openshmem.md, "Threads"). */
    if (requested < SHMEM_THREAD_SINGLE)
        requested = SHMEM_THREAD_SINGLE;
    shmemi.thread_level = requested < SHMEM_THREAD_MULTIPLE
                              ? requested : SHMEM_THREAD_MULTIPLE;
    join_pami(shmemi.thread_level);
    init_handles();
    if (shmemi_exit_init() != 0)
        shmemi_fatal("cannot register the library's message handlers");
    shmemi.initialized = 1;
    if (shmemi_heap_init() != 0 || shmemi_help_init() != 0 ||
        shmemi_data_init() != 0 || shmemi_segments_agree() != 0)
        shmemi_fatal("cannot set up the symmetric memory");
    atexit(at_exit);
    if (shmemi.my_pe == 0 && env_flag("SHMEM_VERSION"))
        printf("OpenSHMEM %d.%d, %s\n", SHMEM_MAJOR_VERSION,
               SHMEM_MINOR_VERSION, SHMEM_VENDOR_STRING);
    if (shmemi.my_pe == 0 && env_flag("SHMEM_INFO"))
        print_info();
    shmemi_barrier_world();
    if (pami_async)
        pami_context_unlock(shmemi.context);
    shmemi_debug("initialized: PE %d of %d, heap %zu bytes at %p",
                 shmemi.my_pe, shmemi.n_pes,
                 shmemi.seg[SHMEMI_SEG_HEAP].size,
                 (void *)shmemi.seg[SHMEMI_SEG_HEAP].base);
    if (provided != NULL)
        *provided = shmemi.thread_level;
    return 0;
}

void shmem_init(void)
{
    shmem_init_thread(SHMEM_THREAD_SINGLE, NULL);
}

void shmem_query_thread(int *provided)
{
    shmemi_require_init("shmem_query_thread");
    if (provided != NULL)
        *provided = shmemi.thread_level;
}

void shmem_finalize(void)
{
    pami_result_t rc;

    if (!shmemi.initialized || shmemi.finalized)
        return;
    shmemi_barrier_world();
    /* The regions' ends are pami calls too (see shmem_init). */
    if (pami_async)
        pami_context_lock(shmemi.context);
    shmemi_help_fini();
    shmemi_data_fini();
    shmemi_heap_fini();
    if (pami_async)
        pami_context_unlock(shmemi.context);
    rc = pami_context_destroyv(&shmemi.context, 1);
    if (rc != PAMI_SUCCESS)
        shmemi_warn("pami_context_destroyv: %s", pami_error_text(rc));
    rc = pami_client_destroy(&shmemi.client);
    if (rc != PAMI_SUCCESS)
        shmemi_warn("pami_client_destroy: %s", pami_error_text(rc));
    free(shmemi.endpoints);
    free(shmemi.same_node);
    shmemi.endpoints = NULL;
    shmemi.same_node = NULL;
    shmemi.finalized = 1;
}

int shmem_my_pe(void)
{
    return shmemi.initialized ? shmemi.my_pe : -1;
}

int shmem_n_pes(void)
{
    return shmemi.initialized ? shmemi.n_pes : -1;
}

int shmem_pe_accessible(int pe)
{
    return shmemi.initialized && !shmemi.finalized && pe >= 0 &&
           pe < shmemi.n_pes;
}

int shmem_addr_accessible(const void *addr, int pe)
{
    size_t offset;

    return shmem_pe_accessible(pe) && shmemi_segment_of(addr, 1, &offset) >= 0;
}

void shmem_info_get_version(int *major, int *minor)
{
    if (major != NULL)
        *major = SHMEM_MAJOR_VERSION;
    if (minor != NULL)
        *minor = SHMEM_MINOR_VERSION;
}

void shmem_info_get_name(char *name)
{
    if (name == NULL)
        return;
    strncpy(name, SHMEM_VENDOR_STRING, SHMEM_MAX_NAME_LEN - 1);
    name[SHMEM_MAX_NAME_LEN - 1] = '\0';
}

void shmem_pcontrol(const int level, ...)
{
    /* No profiling library sits under this one; a tool that wraps the
     * routines through their pshmem_ names is not supported either. */
    (void)level;
}

void start_pes(int npes)
{
    (void)npes; /* the launcher decides the number of PEs */
    shmem_init();
}

int _my_pe(void)
{
    return shmem_my_pe();
}

int _num_pes(void)
{
    return shmem_n_pes();
}
