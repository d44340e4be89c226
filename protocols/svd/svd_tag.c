/*
 * NOTIFY tags: why a subscriber can tell its owner's NOTIFY from one
 * forged by any code that can send on the protocol's ids (even in the
 * owner's own process). Each user derives a secret per (owner, key)
 * from a random secret of its own and sends it in its FETCH; the owner
 * tags each update's NOTIFY per user with a MAC under that secret over
 * the version it announces. A forger never sees the secret, so it can
 * neither take a version nor block the real one.
 */
#include <string.h>
#include <sys/random.h>

#include "svd_internal.h"

bool svd_tag_init(svd_state_t *st)
{
    size_t got = 0;
    while (got < sizeof(st->master)) {
        ssize_t n = getrandom(st->master + got, sizeof(st->master) - got, 0);
        if (n <= 0)
            return false;
        got += (size_t)n;
    }
    /* Request numbers start anywhere: an ENTRY must answer our FETCH. */
    memcpy(&st->next_req, st->master, sizeof(st->next_req));
    st->next_req ^= (uint32_t)pami_protocol_mac(st->master, "req", 3);
    return true;
}

/* The same secret for the same (owner, key) for the state's lifetime,
 * so a NOTIFY sent before a release and a new lookup still checks. */
void svd_user_secret(const svd_state_t *st, pami_task_t owner,
                     pami_svd_key_t key, uint8_t out[SVD_SECRET_LEN])
{
    uint8_t in[13];
    uint32_t o = owner;
    memcpy(in, &o, sizeof(o));
    memcpy(in + 4, &key, sizeof(key));
    for (uint8_t half = 0; half < 2; half++) {
        in[12]     = half;
        uint64_t t = pami_protocol_mac(st->master, in, sizeof(in));
        memcpy(out + 8 * half, &t, sizeof(t));
    }
}

uint64_t svd_notify_tag(const uint8_t secret[SVD_SECRET_LEN],
                        pami_task_t user, const svd_notify_hdr_t *h)
{
    struct {
        uint32_t owner, user;
        uint64_t key, version, rec_len;
        uint8_t  htype, sched;
    } __attribute__((packed)) in = {h->owner, user, h->key,
                                     h->entry_version, h->rec_len, h->htype,
                                     h->sched};
    return pami_protocol_mac(secret, &in, sizeof(in));
}
