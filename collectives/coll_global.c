/*
 * The client-wide ConnID utilization count (seed 002's global buffer):
 * ConnIDs locked by collectives of every geometry and every context of
 * one client, kept in one atomic counter with its own threshold
 * (PAMI_CONNID_GLOBAL_THRESHOLD). A call reserves its unit with a
 * compare-and-swap below the threshold, so threads starting collectives
 * on different contexts at once cannot pass it together; the unit goes
 * with the ConnID element the call then locks and comes back when the
 * element is released. The per-geometry count stays (coll_connid.c).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "coll.h"

#define COLL_GLOBAL_CTX 64 /* contexts per client tracked for progress */

struct coll_global {
    pami_client_t    client;
    unsigned         refs;
    unsigned         threshold;
    atomic_uint      in_use;
    atomic_uint      high_water;
    atomic_ullong    waits;
    atomic_ullong    overruns;
    coll_ctx_t      *ctxs[COLL_GLOBAL_CTX]; /* under lock */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static coll_global_t  *all[16];

coll_global_t *coll_global_join(coll_ctx_t *cc, unsigned threshold)
{
    pthread_mutex_lock(&lock);
    coll_global_t *gl = NULL;
    for (size_t i = 0; i < 16 && gl == NULL; i++)
        if (all[i] != NULL && all[i]->client == cc->client)
            gl = all[i];
    for (size_t i = 0; i < 16 && gl == NULL; i++)
        if (all[i] == NULL && (all[i] = calloc(1, sizeof(**all))) != NULL) {
            gl = all[i];
            gl->client    = cc->client;
            gl->threshold = threshold;
        }
    if (gl != NULL) {
        gl->refs++;
        for (size_t i = 0; i < COLL_GLOBAL_CTX; i++)
            if (gl->ctxs[i] == NULL) {
                gl->ctxs[i] = cc;
                break;
            }
    }
    pthread_mutex_unlock(&lock);
    return gl;
}

void coll_global_leave(coll_ctx_t *cc)
{
    coll_global_t *gl = cc->gl;
    if (gl == NULL)
        return;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < COLL_GLOBAL_CTX; i++)
        if (gl->ctxs[i] == cc)
            gl->ctxs[i] = NULL;
    if (--gl->refs == 0)
        for (size_t i = 0; i < 16; i++)
            if (all[i] == gl) {
                all[i] = NULL;
                free(gl);
            }
    pthread_mutex_unlock(&lock);
    cc->gl = NULL;
}

static void note_high(coll_global_t *gl, unsigned v)
{
    unsigned hw = atomic_load_explicit(&gl->high_water, memory_order_relaxed);
    while (v > hw && !atomic_compare_exchange_weak(&gl->high_water, &hw, v))
        ;
}

bool coll_global_try(coll_global_t *gl)
{
    if (gl == NULL)
        return true;
    unsigned cur = atomic_load_explicit(&gl->in_use, memory_order_relaxed);
    while (cur < gl->threshold)
        if (atomic_compare_exchange_weak(&gl->in_use, &cur, cur + 1)) {
            note_high(gl, cur + 1);
            return true;
        }
    return false;
}

/* Whether a unit could be had now, without taking it. */
bool coll_global_below(const coll_global_t *gl)
{
    return gl == NULL ||
           atomic_load_explicit(&gl->in_use, memory_order_relaxed) <
               gl->threshold;
}

void coll_global_take(coll_global_t *gl)
{
    if (gl != NULL)
        note_high(gl, atomic_fetch_add(&gl->in_use, 1) + 1);
}

void coll_global_put(coll_global_t *gl)
{
    if (gl != NULL)
        atomic_fetch_sub(&gl->in_use, 1);
}

void coll_global_overrun(coll_ctx_t *cc)
{
    coll_global_t *gl = cc->gl;
    if (gl == NULL)
        return;
    coll_global_take(gl);
    if (atomic_fetch_add(&gl->overruns, 1) == 0)
        coll_warn("PAMI_CONNID_GLOBAL_THRESHOLD=%u: a call waited %g s for "
                  "one of the client's ConnIDs (they may all be held by "
                  "collectives that wait for peers waiting for ours); it "
                  "goes over the threshold", gl->threshold,
                  (double)COLL_GLOBAL_WAIT_S);
}

void coll_global_waited(coll_global_t *gl)
{
    if (gl != NULL)
        atomic_fetch_add(&gl->waits, 1);
}

/* The ConnIDs a waiter needs may be held by another context's
 * collectives, which only that context's progress releases: advance
 * each other context that no thread holds right now. */
void coll_global_progress_others(coll_ctx_t *cc)
{
    coll_global_t *gl = cc->gl;
    if (gl == NULL)
        return;
    pami_context_t others[COLL_GLOBAL_CTX];
    size_t n = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < COLL_GLOBAL_CTX; i++)
        if (gl->ctxs[i] != NULL && gl->ctxs[i] != cc)
            others[n++] = gl->ctxs[i]->ctx;
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < n; i++)
        if (pami_context_trylock(others[i]) == PAMI_SUCCESS) {
            pami_context_advance(others[i], 16);
            pami_context_unlock(others[i]);
        }
}

void coll_global_stats(const coll_global_t *gl, uint64_t *in_use,
                       uint64_t *high_water, uint64_t *waits,
                       uint64_t *threshold, uint64_t *overruns)
{
    *overruns   = gl ? atomic_load(&gl->overruns) : 0;
    *in_use     = gl ? atomic_load(&gl->in_use) : 0;
    *high_water = gl ? atomic_load(&gl->high_water) : 0;
    *waits      = gl ? atomic_load(&gl->waits) : 0;
    *threshold  = gl ? gl->threshold : 0;
}
