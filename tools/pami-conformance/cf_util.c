/* Helpers every case uses: failures, waits, patterns, endpoints. */
#include "cf.h"

#include <pami_test.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

const char *cf_rc_name(pami_result_t rc)
{
    switch (rc) {
#define CF_RC_NAME_(name, value, text) case name: return #name;
        PAMI_FOREACH_RESULT(CF_RC_NAME_)
#undef CF_RC_NAME_
    default: return "(not a pami_result_t)";
    }
}

double cf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cf_fail(cf_env_t *e, const char *file, int line, const char *fmt, ...)
{
    if (e->failed++)
        return;
    const char *base = strrchr(file, '/');
    int n = snprintf(e->msg, sizeof(e->msg), "task %u: ", e->task);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(e->msg))
        n += vsnprintf(e->msg + n, sizeof(e->msg) - (size_t)n, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof(e->msg))
        snprintf(e->msg + n, sizeof(e->msg) - (size_t)n, " (%s:%d)",
                 base ? base + 1 : file, line);
}

int cf_wait_flag(cf_env_t *e, volatile int *flag, const char *what)
{
    while (!*flag) {
        if (cf_now() > e->deadline) {
            CF_FAIL(e, "expected %s before the deadline, seen nothing", what);
            return -1;
        }
        pami_context_wait(e->ctx, 100);
    }
    return 0;
}

int cf_wait_count(cf_env_t *e, volatile size_t *count, size_t want,
                  const char *what)
{
    while (*count < want) {
        if (cf_now() > e->deadline) {
            CF_FAIL(e, "expected %zu %s before the deadline, seen %zu",
                    want, what, *count);
            return -1;
        }
        pami_context_wait(e->ctx, 100);
    }
    return 0;
}

static pami_result_t send_retry(cf_env_t *e, const pami_send_immediate_t *m,
                                pami_result_t (*fn)(
                                    pami_context_t,
                                    const pami_send_immediate_t *))
{
    pami_result_t rc;
    while ((rc = fn(e->ctx, m)) == PAMI_EAGAIN && cf_now() <= e->deadline)
        pami_context_advance(e->ctx, 1);
    return rc;
}

pami_result_t cf_send_immediate(cf_env_t *e, const pami_send_immediate_t *m)
{
    return send_retry(e, m, pami_send_immediate);
}

pami_result_t cf_send_raw(cf_env_t *e, const pami_send_immediate_t *m)
{
    return send_retry(e, m, pami_test_send_raw);
}

pami_endpoint_t cf_ep(cf_env_t *e, pami_task_t task)
{
    pami_endpoint_t ep = PAMI_ENDPOINT_NULL;
    pami_result_t rc = pami_endpoint_create(e->client, task, 0, &ep);
    if (rc != PAMI_SUCCESS)
        CF_FAIL(e, "expected an endpoint of task %u, seen %s", task,
                cf_rc_name(rc));
    return ep;
}

void cf_fill(uint8_t *buf, size_t n, uint64_t seed, uint64_t a, uint64_t b)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = cf_byte(seed, a, b, i);
}

void cf_count_fn(pami_context_t c, void *cookie, pami_result_t rc)
{
    (void)c;
    cf_count_t *d = cookie;
    d->n++;
    if (rc != PAMI_SUCCESS) {
        d->bad++;
        d->rc = rc;
    }
}

size_t cf_verify(const uint8_t *buf, size_t n, uint64_t seed, uint64_t a,
                 uint64_t b)
{
    for (size_t i = 0; i < n; i++)
        if (buf[i] != cf_byte(seed, a, b, i))
            return i;
    return n;
}
