/*
 * A packet straight to the transport, for the tests that play a peer
 * forging the core's own packets (their ids are the core's; no pami send
 * reaches them): the AM header is whatever the bytes say. White-box: it
 * uses the core's internals (pami_internal_dep).
 */
#ifndef RAW_SEND_H
#define RAW_SEND_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../mp/mp_util.h"
#include "internal.h"

#define RAW_MAX 2048

/* A packet in flight: the transport reads it until it calls back. */
typedef struct {
    tp_req_t tp;
    size_t   hlen, dlen;
    uint8_t  hdr[RAW_MAX];
    uint8_t  data[RAW_MAX];
} raw_req_t;

static unsigned long raw_inflight;

static void raw_done(tp_req_t *tp, int status)
{
    (void)status; /* a forged packet the transport refused is fine too */
    free(container_of(tp, raw_req_t, tp));
    raw_inflight--;
}

static void raw_send(mp_job_t *job, pami_context_t ctx, pami_task_t to,
                     const void *hdr, size_t hlen, const void *data,
                     size_t dlen)
{
    struct pami_context *c = ctx;
    uint32_t     index;
    pami_peer_t *peer;
    MP_EXPECT(hlen <= RAW_MAX && dlen <= RAW_MAX, "raw packet too large");
    MP_CHECK(pami_peer_index(c, mp_ep(job, to, 0), &index));
    double deadline = mp_now() + MP_EAGAIN_S;
    pami_result_t rc;
    while ((rc = pami_peer_by_index(c, index, &peer)) == PAMI_EAGAIN) {
        MP_EXPECT(mp_now() < deadline, "no endpoint to task %u", to);
        pami_context_advance(ctx, 16);
    }
    MP_CHECK(rc);
    raw_req_t *r = malloc(sizeof(*r));
    MP_EXPECT(r != NULL, "out of memory");
    r->hlen = hlen;
    r->dlen = dlen;
    memcpy(r->hdr, hdr, hlen);
    if (dlen > 0)
        memcpy(r->data, data, dlen);
    r->tp.fn = raw_done;
    raw_inflight++;
    int trc = c->tp->am_send(peer->ep, r->hdr, hlen, dlen ? r->data : NULL,
                             dlen, TP_SEND_EAGER, &r->tp);
    if (trc != 1)
        raw_done(&r->tp, trc);
    MP_EXPECT(trc >= 0, "raw send of a %zu + %zu byte packet: %d", hlen, dlen,
              trc);
}

#endif
