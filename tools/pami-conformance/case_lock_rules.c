/*
 * unlock_unheld: api.md, the context lock, "It is recursive: a thread that
 * holds it may lock it again (unlock as many times)" and `PAMI_ERROR` for
 * an unlock by a thread that does not hold it; such an unlock changes
 * nothing.
 */
#include "cf.h"

#include <pthread.h>

typedef struct {
    pami_context_t ctx;
    pami_result_t  unlock_rc, trylock_rc;
} other_t;

/* Another thread: an unlock, then a trylock (released again if taken). */
static void *other_thread(void *arg)
{
    other_t *o = arg;
    o->unlock_rc = pami_context_unlock(o->ctx);
    o->trylock_rc = pami_context_trylock(o->ctx);
    if (o->trylock_rc == PAMI_SUCCESS)
        pami_context_unlock(o->ctx);
    return NULL;
}

static void from_other_thread(cf_env_t *e, other_t *o)
{
    pthread_t t;
    o->ctx = e->ctx;
    o->unlock_rc = o->trylock_rc = PAMI_SUCCESS;
    if (pthread_create(&t, NULL, other_thread, o) != 0) {
        CF_FAIL(e, "expected a thread");
        return;
    }
    pthread_join(t, NULL);
}

static void unlock_unheld(cf_env_t *e)
{
    /* Nobody holds it. */
    CF_RC(e, PAMI_ERROR, pami_context_unlock(e->ctx));
    other_t o;
    /* Held twice here: another thread's unlock fails and releases
     * nothing (its trylock still finds it held). */
    CF_OK(e, pami_context_lock(e->ctx));
    CF_OK(e, pami_context_lock(e->ctx));
    from_other_thread(e, &o);
    CF_CHECK(e, o.unlock_rc == PAMI_ERROR && o.trylock_rc == PAMI_EAGAIN,
             "expected another thread's unlock of a held context to be "
             "PAMI_ERROR and its trylock then PAMI_EAGAIN, seen %s and %s",
             cf_rc_name(o.unlock_rc), cf_rc_name(o.trylock_rc));
    CF_OK(e, pami_context_unlock(e->ctx));
    from_other_thread(e, &o);
    CF_CHECK(e, o.trylock_rc == PAMI_EAGAIN, "expected the context still "
             "held once (locked twice, unlocked once), seen %s",
             cf_rc_name(o.trylock_rc));
    CF_OK(e, pami_context_unlock(e->ctx));
    /* Free now: the other thread takes it, and this one's extra unlock
     * fails again. */
    from_other_thread(e, &o);
    CF_CHECK(e, o.unlock_rc == PAMI_ERROR && o.trylock_rc == PAMI_SUCCESS,
             "expected the free context's unlock PAMI_ERROR and trylock "
             "PAMI_SUCCESS from another thread, seen %s and %s",
             cf_rc_name(o.unlock_rc), cf_rc_name(o.trylock_rc));
    CF_RC(e, PAMI_ERROR, pami_context_unlock(e->ctx));
    /* The context goes on: the fence is its barrier. */
    CF_OK(e, pami_dispatch_fence(e->client));
}

const cf_case_t cf_lock_rules_cases[] = {
    {"core", "unlock_unheld", 1, 0, 0, unlock_unheld, NULL},
};
const size_t cf_num_lock_rules_cases =
    sizeof(cf_lock_rules_cases) / sizeof(cf_lock_rules_cases[0]);
