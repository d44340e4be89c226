/*
 * Client: joins the job through a bootstrap, owns the UCX context, knows
 * the task id, the job size and which tasks share this node.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "params.h"

static const bootstrap_ops_t *bootstrap_by_kind(pami_bootstrap_kind_t kind)
{
    switch (kind) {
    case PAMI_BOOTSTRAP_LOCAL: return &bootstrap_local_ops;
    case PAMI_BOOTSTRAP_PMIX:  return &bootstrap_pmix_ops;
    case PAMI_BOOTSTRAP_OOB:   return &bootstrap_oob_ops;
    default:                   return NULL;
    }
}

static pami_result_t parse_bootstrap_name(const char *name,
                                          pami_bootstrap_kind_t *kind)
{
    static const struct {
        const char           *name;
        pami_bootstrap_kind_t kind;
    } names[] = {{"auto", PAMI_BOOTSTRAP_AUTO},
                 {"local", PAMI_BOOTSTRAP_LOCAL},
                 {"pmix", PAMI_BOOTSTRAP_PMIX},
                 {"oob", PAMI_BOOTSTRAP_OOB}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(name, names[i].name) == 0) {
            *kind = names[i].kind;
            return PAMI_SUCCESS;
        }
    }
    pami_error("client", "PAMI_BOOTSTRAP='%s' is not auto, local, pmix or oob",
               name);
    return PAMI_INVAL;
}

/* AUTO: pamirun's socket wins, then a PMIx launcher, else a single task
 * (the local bootstrap without a socket). */
static pami_bootstrap_kind_t detect_bootstrap(void)
{
    if (bootstrap_local_ops.detect())
        return PAMI_BOOTSTRAP_LOCAL;
    if (bootstrap_pmix_ops.detect())
        return PAMI_BOOTSTRAP_PMIX;
    return PAMI_BOOTSTRAP_LOCAL;
}

static pami_result_t apply_params(pami_client_impl_t *c,
                                  const pami_client_params_t *params,
                                  bootstrap_args_t *args)
{
    pami_result_t rc = parse_bootstrap_name(c->config.bootstrap, &c->bs_kind);
    if (rc != PAMI_SUCCESS)
        return rc;
    if (params == NULL) {
        if (c->bs_kind == PAMI_BOOTSTRAP_OOB) {
            pami_error("client", "the oob bootstrap needs PAMI_CLIENT_PARAM_OOB");
            return PAMI_INVAL;
        }
        return PAMI_SUCCESS;
    }

    rc = pami_params_mask("pami_client_params_t", params->field_mask,
                          PAMI_CLIENT_PARAM_KNOWN);
    if (rc != PAMI_SUCCESS)
        return rc;
    if (params->field_mask & PAMI_CLIENT_PARAM_BOOTSTRAP) {
        if ((unsigned)params->bootstrap > PAMI_BOOTSTRAP_OOB) {
            pami_error("client", "unknown bootstrap kind %d",
                       (int)params->bootstrap);
            return PAMI_INVAL;
        }
        c->bs_kind = params->bootstrap;
    }
    if (params->field_mask & PAMI_CLIENT_PARAM_OOB) {
        if (params->oob_allgather == NULL || params->oob_size == 0 ||
            params->oob_task >= params->oob_size) {
            pami_error("client", "oob params need an allgather function and "
                                 "task < size (task %u, size %zu)",
                       params->oob_task, params->oob_size);
            return PAMI_INVAL;
        }
        args->oob_allgather = params->oob_allgather;
        args->oob_cookie    = params->oob_cookie;
        args->oob_rank      = params->oob_task;
        args->oob_size      = (uint32_t)params->oob_size;
        if (!(params->field_mask & PAMI_CLIENT_PARAM_BOOTSTRAP))
            c->bs_kind = PAMI_BOOTSTRAP_OOB;
    }
    if (c->bs_kind == PAMI_BOOTSTRAP_OOB && args->oob_allgather == NULL) {
        pami_error("client", "the oob bootstrap needs PAMI_CLIENT_PARAM_OOB");
        return PAMI_INVAL;
    }
    if (params->field_mask & PAMI_CLIENT_PARAM_ASYNC_PROGRESS)
        c->config.async_progress = params->async_progress != 0;
    if (params->field_mask & PAMI_CLIENT_PARAM_WAIT_SPIN)
        c->config.wait_spin = params->wait_spin;
    if (params->field_mask & PAMI_CLIENT_PARAM_SHM_MEMBARRIER)
        c->config.shm_membarrier = params->shm_membarrier != 0;
    return PAMI_SUCCESS;
}

static void client_free(pami_client_impl_t *c)
{
    if (c->tp_ctx != NULL && !c->tp_leaked)
        c->tp->fini(c->tp_ctx);
    if (c->bs_state != NULL)
        c->bs->fini(c->bs_state);
    pami_tasks_release(c);
    pami_plugins_unload(c);
    free(c->local_tasks);
    free(c->task_node);
    free(c->tasks);
    free(c);
}

pami_result_t pami_client_create(const char *name,
                                 const pami_client_params_t *params,
                                 pami_client_t *client)
{
    /* This client's level before anything logs, so that the warnings of
     * its own malformed variables are seen at its level, not at the one
     * a previous client left (which may be error). */
    pami_log_level_current = pami_log_level_from_env();
    PAMI_CHECK(client != NULL, PAMI_INVAL, "client", "client output is NULL");

    pami_client_impl_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return PAMI_ENOMEM;
    snprintf(c->name, sizeof(c->name), "%s", name ? name : "pami");
    pami_config_load(&c->config);
    pami_log_level_current = c->config.log_level;
    /* One fragment is all an immediate send may take. */
    if (c->config.immediate_max > PAMI_IMMEDIATE_LIMIT) {
        pami_warn("client", "PAMI_IMMEDIATE_MAX=%zu is above the transport's "
                            "single-fragment limit; using %d",
                  c->config.immediate_max, PAMI_IMMEDIATE_LIMIT);
        c->config.immediate_max = PAMI_IMMEDIATE_LIMIT;
    }
    if (c->config.shutdown_timeout_ms > PAMI_TIMEOUT_MS_MAX) {
        pami_warn("client", "PAMI_SHUTDOWN_TIMEOUT=%zu is above %u ms; "
                  "using %u", c->config.shutdown_timeout_ms,
                  PAMI_TIMEOUT_MS_MAX, PAMI_TIMEOUT_MS_MAX);
        c->config.shutdown_timeout_ms = PAMI_TIMEOUT_MS_MAX;
    }
    if (c->config.peer_timeout_ms > PAMI_TIMEOUT_MS_MAX) {
        pami_warn("client", "PAMI_PEER_TIMEOUT=%zu is above %u ms; using %u",
                  c->config.peer_timeout_ms, PAMI_TIMEOUT_MS_MAX,
                  PAMI_TIMEOUT_MS_MAX);
        c->config.peer_timeout_ms = PAMI_TIMEOUT_MS_MAX;
    }
    /* Each piece of a put or get through the owner is a request and a
     * message of its own, and pieces up to 4 KiB are gathered back into
     * one message anyway: 1-byte pieces made a 16 MiB get take 16M
     * requests (gigabytes), then fail for want of more. */
    if (c->config.rma_owner_piece != 0 &&
        c->config.rma_owner_piece < PAMI_RMA_GATHER_DATA_MAX) {
        pami_warn("client", "PAMI_RMA_OWNER_PIECE=%zu is below %d bytes; "
                            "using %d",
                  c->config.rma_owner_piece, PAMI_RMA_GATHER_DATA_MAX,
                  PAMI_RMA_GATHER_DATA_MAX);
        c->config.rma_owner_piece = PAMI_RMA_GATHER_DATA_MAX;
    }

    bootstrap_args_t args = {0};
    /* A task stopped in a bootstrap collective fails it like one stopped
     * in pami's own waits (pmix; pamirun reads the same variable). */
    args.stall_ms = c->config.peer_errors ? c->config.peer_timeout_ms : 0;
    pami_result_t rc = apply_params(c, params, &args);
    if (rc != PAMI_SUCCESS)
        goto fail;
    if (c->bs_kind == PAMI_BOOTSTRAP_AUTO)
        c->bs_kind = detect_bootstrap();
    c->bs = bootstrap_by_kind(c->bs_kind);

    uint32_t task, size;
    int brc = c->bs->init(&args, &c->bs_state, &task, &size);
    if (brc != 0) {
        pami_error("client", "bootstrap '%s' failed to start: %s", c->bs->name,
                   strerror(-brc));
        c->bs_state = NULL;
        rc = PAMI_BOOTSTRAP;
        goto fail;
    }
    c->task = task;
    c->size = size;
    /* Log lines name the task, unless pamirun prefixes every line with
     * the rank already (--tag-output). */
    const char *tagged = getenv(PAMIRUN_ENV_TAGGED);
    if (c->bs_kind != PAMI_BOOTSTRAP_LOCAL || tagged == NULL ||
        strcmp(tagged, "1") != 0)
        pami_log_set_task(task);
    if (size >= (1u << 24)) {
        pami_error("client", "%u tasks exceed the endpoint encoding", size);
        rc = PAMI_UNIMPL;
        goto fail;
    }

    /* Protocols before the task cards: they carry how loading the
     * plug-ins went, so a failure fails creation on every task. */
    rc = pami_protocols_builtin(c);
    if (rc != PAMI_SUCCESS)
        goto fail;
    pami_plugins_load(c);
    rc = pami_tasks_exchange(c);
    if (rc != PAMI_SUCCESS)
        goto fail;
    rc = pami_plugins_agree(c);
    if (rc != PAMI_SUCCESS)
        goto fail;

    c->tp = &tp_shm_ops; /* UCX alone when PAMI_SHM_FASTPATH is 0 */
    const char *shm_dir = pami_job_shm_dir(c, c->job_dir,
                                           sizeof(c->job_dir));
    if (shm_dir == NULL)
        c->job_dir[0] = '\0';
    tp_params_t tpp = {
        .thread_shared = 1, /* contexts may live on different threads */
        .estimated_eps = size,
        .keepalive_ms  = c->config.peer_errors ? PAMI_KEEPALIVE_MS : 0,
        .shm_dir       = shm_dir,
    };
    int trc = c->tp->init(&tpp, &c->tp_ctx);
    if (trc != 0) {
        c->tp_ctx = NULL;
        rc = pami_result_from_errno(trc);
        goto fail;
    }
    c->tp->query(c->tp_ctx, &c->tp_info);

    pami_debug("client", "'%s' task %u of %zu (%zu on this node) via %s",
               c->name, c->task, c->size, c->num_local_tasks, c->bs->name);
    *client = c;
    return PAMI_SUCCESS;

fail:
    client_free(c);
    return rc;
}

pami_result_t pami_client_destroy(pami_client_t *client)
{
    PAMI_CHECK(client != NULL && *client != NULL, PAMI_INVAL, "client",
               "destroy of a NULL client");
    pami_client_impl_t *c = *client;
    pami_result_t rc = PAMI_SUCCESS;
    if (c->num_contexts > 0) {
        rc = pami_context_destroyv(c->contexts, c->num_contexts);
        /* Refused (e.g. from a handler): the client must stay. */
        if (c->num_contexts > 0)
            return rc;
    }
    free(c->contexts);
    free(c->addr_blob);
    client_free(c);
    pami_cma_helper_stop();
    *client = NULL;
    return rc;
}

pami_result_t pami_client_query(pami_client_t c, pami_client_attr_t *attr)
{
    PAMI_CHECK(c != NULL && attr != NULL, PAMI_INVAL, "client",
               "query with a NULL client or attr");
    uint64_t m = attr->field_mask;
    pami_result_t rc = pami_params_mask("pami_client_attr_t", m,
                                        PAMI_CLIENT_ATTR_KNOWN);
    if (rc != PAMI_SUCCESS)
        return rc;
    if (m & PAMI_CLIENT_ATTR_TASK)
        attr->task = c->task;
    if (m & PAMI_CLIENT_ATTR_SIZE)
        attr->size = c->size;
    if (m & PAMI_CLIENT_ATTR_LOCAL_TASKS) {
        attr->local_tasks     = c->local_tasks;
        attr->num_local_tasks = c->num_local_tasks;
    }
    if (m & PAMI_CLIENT_ATTR_DISPATCH_MAX)
        attr->dispatch_max = PAMI_DISPATCH_USER_MAX;
    if (m & PAMI_CLIENT_ATTR_HEADER_MAX)
        attr->header_max = PAMI_HEADER_MAX;
    if (m & PAMI_CLIENT_ATTR_IMMEDIATE_MAX)
        attr->immediate_max = c->config.immediate_max;
    if (m & PAMI_CLIENT_ATTR_RNDV_THRESHOLD)
        attr->rndv_threshold = c->config.rndv_threshold;
    if (m & PAMI_CLIENT_ATTR_NUM_CONTEXTS)
        attr->num_contexts = c->num_contexts;
    if (m & PAMI_CLIENT_ATTR_NAME)
        attr->name = c->name;
    if (m & PAMI_CLIENT_ATTR_BOOTSTRAP)
        attr->bootstrap = c->bs_kind;
    if (m & PAMI_CLIENT_ATTR_TRANSPORT) {
        attr->ucx_version = c->tp_info.version;
        attr->transports  = c->tp_info.transports;
    }
    if (m & PAMI_CLIENT_ATTR_JOB_ID)
        attr->job_id = c->bs->job_id(c->bs_state);
    if (m & PAMI_CLIENT_ATTR_LOCAL_CPUS)
        attr->num_local_cpus = c->num_local_cpus;
    if (m & PAMI_CLIENT_ATTR_NODES) {
        attr->task_node = c->task_node;
        attr->num_nodes = c->num_nodes;
    }
    return PAMI_SUCCESS;
}

pami_result_t pami_dispatch_fence(pami_client_t c)
{
    PAMI_CHECK(c != NULL, PAMI_INVAL, "dispatch", "fence on a NULL client");
    PAMI_CHECK(pami_tls_progressing == NULL, PAMI_IN_HANDLER, "dispatch",
               "pami_dispatch_fence called from a handler");
    /* With contexts, meet over them so queued sends keep moving while we
     * wait; before createv only the bootstrap can do it. */
    if (c->num_contexts > 0) {
        uint64_t deadline = UINT64_MAX;
        /* A task that finishes the fence and dies right away has sent us
         * all we need: its death fails the next fence, not this one
         * (pami_task_failed). The grace needs pami_idle's watch, which a
         * progress thread's contexts do not run. */
        bool grace = !c->progress_running;
        for (size_t i = 0; i < c->num_contexts && grace; i++)
            c->contexts[i]->in_fence = true;
        pami_result_t rc = pami_barrier(c->contexts, c->num_contexts, deadline);
        for (size_t i = 0; i < c->num_contexts && grace; i++) {
            c->contexts[i]->in_fence = false;
            if (c->contexts[i]->depart_deadline_ns != 0) {
                c->contexts[i]->depart_deadline_ns = 0;
                c->tasks_failed = true;
            }
        }
        if (rc != PAMI_SUCCESS)
            pami_error("dispatch", "fence barrier failed: %s",
                       pami_error_text(rc));
        return rc;
    }
    int rc = c->bs->barrier(c->bs_state);
    if (rc != 0) {
        pami_error("dispatch", "fence barrier failed: %s", strerror(-rc));
        return PAMI_BOOTSTRAP;
    }
    return PAMI_SUCCESS;
}
