/*
 * The case process: joins a job of its own through the runner's
 * out-of-band exchange (the pipes to its rank's runner), runs one case and
 * reports pass/fail with the first failure's message.
 */
#include "cf_child.h"

#include <pami_protocol.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"

static size_t job_size;

int cf_allgather(const void *send, void *recv, size_t len)
{
    cf_msg_hdr_t h = {.type = CF_MSG_ALLGATHER, .len = (uint32_t)len};
    cf_reply_hdr_t r;
    if (len > CF_MSG_MAX ||
        pami_fd_write_all(CF_FD_TO_RUNNER, &h, sizeof(h)) ||
        pami_fd_write_all(CF_FD_TO_RUNNER, send, len) ||
        pami_fd_read_all(CF_FD_FROM_RUNNER, &r, sizeof(r)) || r.status != 0 ||
        pami_fd_read_all(CF_FD_FROM_RUNNER, recv, len * job_size))
        return -1;
    return 0;
}

static int oob_allgather(void *cookie, const void *send, void *recv,
                         size_t len)
{
    (void)cookie;
    return cf_allgather(send, recv, len);
}

static void report(const cf_env_t *e)
{
    cf_result_msg_t r = {.status = e->failed ? CF_FAILED : CF_PASSED};
    snprintf(r.msg, sizeof(r.msg), "%s", e->failed ? e->msg : "");
    cf_msg_hdr_t h = {.type = CF_MSG_RESULT, .len = sizeof(r)};
    pami_fd_write_all(CF_FD_TO_RUNNER, &h, sizeof(h));
    pami_fd_write_all(CF_FD_TO_RUNNER, &r, sizeof(r));
}

/* Best effort: without it a crash leaves the job's segments behind. */
static void report_job(pami_client_t client)
{
    pami_protocol_job_key_t jk;
    if (pami_protocol_job_key(client, &jk) != PAMI_SUCCESS)
        return;
    _Static_assert(sizeof(jk.name) == CF_JOB_KEY_LEN, "job key length");
    cf_msg_hdr_t h = {.type = CF_MSG_JOB, .len = sizeof(jk.name)};
    pami_fd_write_all(CF_FD_TO_RUNNER, &h, sizeof(h));
    pami_fd_write_all(CF_FD_TO_RUNNER, jk.name, sizeof(jk.name));
}

void cf_report_now(cf_env_t *e)
{
    report(e);
}

/* "A=1 B=2k C=": each word set as it says (an empty value included). */
static void set_case_env(const char *list)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", list);
    char *save = NULL;
    for (char *w = strtok_r(buf, " ", &save); w != NULL;
         w = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(w, '=');
        if (eq == NULL)
            continue;
        *eq = '\0';
        setenv(w, eq + 1, 1);
    }
}

int cf_child_main(const cf_case_t *c, const cf_child_args_t *a)
{
    cf_env_t e = {.task = a->rank, .size = a->size, .seed = a->seed,
                  .deadline = cf_now() + a->timeout * 0.85,
                  .plugin = a->plugin};
    job_size = a->size;
    /* The runner decides which plug-ins the case's client loads. */
    if ((c->flags & CF_LOAD_PLUGIN) && a->plugin != NULL)
        setenv("PAMI_PROTOCOLS", a->plugin, 1);
    else
        unsetenv("PAMI_PROTOCOLS");
    if (c->env != NULL)
        set_case_env(c->env);
    pami_client_params_t p = {
        .field_mask = PAMI_CLIENT_PARAM_BOOTSTRAP | PAMI_CLIENT_PARAM_OOB,
        .bootstrap = PAMI_BOOTSTRAP_OOB, .oob_allgather = oob_allgather,
        .oob_task = a->rank, .oob_size = a->size};
    pami_result_t rc = pami_client_create("pami-conformance", &p, &e.client);
    if (rc != PAMI_SUCCESS) {
        CF_FAIL(&e, "expected pami_client_create to succeed, seen %s",
                cf_rc_name(rc));
        report(&e);
        return 1;
    }
    report_job(e.client);
    if (!(c->flags & CF_OWN_CONTEXTS)) {
        rc = pami_context_createv(e.client, NULL, 1, &e.ctx);
        if (rc != PAMI_SUCCESS) {
            CF_FAIL(&e, "expected pami_context_createv to succeed, seen %s",
                    cf_rc_name(rc));
            report(&e);
            return 1;
        }
    }
    c->run(&e);
    if (e.no_destroy) {
        /* The job cannot end collectively (a task died): what pami keeps
         * for a dead peer on purpose is no leak to report. */
        report(&e);
        _exit(0);
    }
    /* Ending the job is part of every case: its result counts. */
    if (e.ctx != NULL) {
        rc = pami_context_destroyv(&e.ctx, 1);
        if (rc != PAMI_SUCCESS)
            CF_FAIL(&e, "expected pami_context_destroyv to succeed, seen %s",
                    cf_rc_name(rc));
    }
    if (e.ncontexts > 0) {
        rc = pami_context_destroyv(e.contexts, e.ncontexts);
        if (rc != PAMI_SUCCESS)
            CF_FAIL(&e, "expected pami_context_destroyv to succeed, seen %s",
                    cf_rc_name(rc));
    }
    rc = e.client ? pami_client_destroy(&e.client) : PAMI_SUCCESS;
    if (rc != PAMI_SUCCESS)
        CF_FAIL(&e, "expected pami_client_destroy to succeed, seen %s",
                cf_rc_name(rc));
    report(&e);
    return 0;
}
