/*
 * Data movement schedules: allgather(v) by ring, recursive doubling and
 * Bruck; linear gather(v) and scatter(v); pairwise alltoall(v), linear
 * and Bruck alltoall.
 */
#include "coll.h"

#define N(req) ((req)->g->size)
#define R(req) ((req)->g->rank)

/* Block i (bytes[i] at offs[i] of out) travels around the ring. in is
 * this rank's block (NULL: already in out). */
void bld_allgatherv_ring(coll_req_t *req, const void *in, void *out,
                         const size_t *bytes, const size_t *offs)
{
    size_t n = N(req), r = R(req);
    unsigned char *o = out;
    size_t right = (r + 1) % n, left = (r + n - 1) % n;
    sb_step(req);
    if (in != NULL)
        sb_copy(req, o + offs[r], in, bytes[r]);
    for (size_t k = 0; k + 1 < n; k++) {
        size_t s = (r + n - k) % n, rc = (r + 2 * n - k - 1) % n;
        if (k > 0)
            sb_step(req);
        sb_send(req, right, o + offs[s], bytes[s]);
        sb_recv(req, left, o + offs[rc], bytes[rc]);
    }
}

/* Power-of-two sizes: in round k the partners swap the 2^k blocks each
 * holds, which are contiguous. */
void bld_allgather_rd(coll_req_t *req, const void *in, void *out,
                      size_t bytes)
{
    size_t n = N(req), r = R(req);
    unsigned char *o = out;
    sb_step(req);
    if (in != NULL)
        sb_copy(req, o + r * bytes, in, bytes);
    for (size_t mask = 1; mask < n; mask <<= 1) {
        size_t d = r ^ mask;
        if (mask > 1)
            sb_step(req);
        sb_send(req, d, o + (r & ~(mask - 1)) * bytes, mask * bytes);
        sb_recv(req, d, o + (d & ~(mask - 1)) * bytes, mask * bytes);
    }
}

/* Bruck: blocks kept rotated so this rank's is first; in round k send
 * the first min(2^k, n - 2^k) blocks to r - 2^k and append those of
 * r + 2^k; finally rotate into rank order. */
void bld_allgather_bruck(coll_req_t *req, const void *in, void *out,
                         size_t bytes)
{
    size_t n = N(req), r = R(req);
    unsigned char *o = out, *t = sb_tmp(req, n * bytes);
    sb_step(req);
    sb_copy(req, t, in != NULL ? in : o + r * bytes, bytes);
    for (size_t d = 1; d < n; d <<= 1) {
        size_t cnt = d < n - d ? d : n - d;
        if (d > 1)
            sb_step(req);
        sb_send(req, (r + n - d) % n, t, cnt * bytes);
        sb_recv(req, (r + d) % n, t + d * bytes, cnt * bytes);
    }
    sb_step(req);
    sb_copy(req, o + r * bytes, t, (n - r) * bytes);
    sb_copy(req, o, t + (n - r) * bytes, r * bytes);
}

void bld_gatherv_linear(coll_req_t *req, size_t root, const void *in,
                        size_t inbytes, void *out, const size_t *bytes,
                        const size_t *offs)
{
    size_t n = N(req), r = R(req);
    sb_step(req);
    if (r != root) {
        sb_send(req, root, in, inbytes);
        return;
    }
    unsigned char *o = out;
    if (in != NULL)
        sb_copy(req, o + offs[r], in, bytes[r]);
    for (size_t i = 0; i < n; i++)
        if (i != r)
            sb_recv(req, i, o + offs[i], bytes[i]);
}

void bld_scatterv_linear(coll_req_t *req, size_t root, const void *in,
                         const size_t *bytes, const size_t *offs, void *out,
                         size_t outbytes)
{
    size_t n = N(req), r = R(req);
    sb_step(req);
    if (r != root) {
        sb_recv(req, root, out, outbytes);
        return;
    }
    const unsigned char *i0 = in;
    if (out != NULL)
        sb_copy(req, out, i0 + offs[r], bytes[r]);
    for (size_t k = 1; k < n; k++) {
        size_t i = (r + k) % n;
        sb_send(req, i, i0 + offs[i], bytes[i]);
    }
}

/* Step k: send to r + k, receive from r - k. */
void bld_alltoallv_pairwise(coll_req_t *req, const void *in,
                            const size_t *sbytes, const size_t *soffs,
                            void *out, const size_t *rbytes,
                            const size_t *roffs)
{
    size_t n = N(req), r = R(req);
    const unsigned char *i0 = in;
    unsigned char *o = out;
    sb_step(req);
    sb_copy(req, o + roffs[r], i0 + soffs[r], rbytes[r]);
    for (size_t k = 1; k < n; k++) {
        size_t to = (r + k) % n, from = (r + n - k) % n;
        if (k > 1)
            sb_step(req);
        sb_send(req, to, i0 + soffs[to], sbytes[to]);
        sb_recv(req, from, o + roffs[from], rbytes[from]);
    }
}

/* Linear: one step with every send and receive at once (sends to
 * r + 1, r + 2, ... so the ranks do not all start at the same peer). in
 * NULL: in place, the blocks are sent from a copy of out taken at the
 * step's entry, before any receive lands. */
void bld_alltoall_linear(coll_req_t *req, const void *in, void *out,
                         size_t bytes)
{
    size_t n = N(req), r = R(req);
    unsigned char *o = out;
    const unsigned char *i0 = in;
    sb_step(req);
    if (i0 == NULL) {
        unsigned char *t = sb_tmp(req, n * bytes);
        if (t == NULL)
            return;
        sb_copy(req, t, o, n * bytes);
        i0 = t;
    } else {
        sb_copy(req, o + r * bytes, i0 + r * bytes, bytes);
    }
    for (size_t k = 1; k < n; k++)
        sb_send(req, (r + k) % n, i0 + (r + k) % n * bytes, bytes);
    for (size_t k = 1; k < n; k++)
        sb_recv(req, (r + n - k) % n, o + (r + n - k) % n * bytes, bytes);
}

/* Bruck: rotate so block i is for rank r + i; in round k send the blocks
 * whose index has bit k set to r + k (packed) and take the same indices
 * from r - k; then block i came from r - i. Pack and receive buffers
 * alternate between rounds so a round's payload can land while the
 * previous one is unpacked. */
void bld_alltoall_bruck(coll_req_t *req, const void *in, void *out,
                        size_t bytes)
{
    size_t n = N(req), r = R(req);
    const unsigned char *i0 = in;
    unsigned char *o = out;
    unsigned char *t = sb_tmp(req, n * bytes);
    unsigned char *pack[2] = {sb_tmp(req, (n / 2 + 1) * bytes),
                              sb_tmp(req, (n / 2 + 1) * bytes)};
    unsigned char *got[2] = {sb_tmp(req, (n / 2 + 1) * bytes),
                             sb_tmp(req, (n / 2 + 1) * bytes)};
    if (t == NULL || pack[1] == NULL || got[1] == NULL)
        return;
    sb_step(req);
    sb_copy(req, t, i0 + r * bytes, (n - r) * bytes);
    sb_copy(req, t + (n - r) * bytes, i0, r * bytes);
    size_t round = 0, prev = 0;
    for (size_t k = 1; k < n; k <<= 1, round++) {
        unsigned char *pk = pack[round % 2], *gt = got[round % 2];
        if (k > 1) {
            sb_step(req);
            /* Unpack the previous round's blocks. */
            unsigned char *pg = got[(round - 1) % 2];
            size_t m = 0;
            for (size_t i = 1; i < n; i++)
                if (i & prev)
                    sb_copy(req, t + i * bytes, pg + m++ * bytes, bytes);
        }
        size_t m = 0;
        for (size_t i = 1; i < n; i++)
            if (i & k)
                sb_copy(req, pk + m++ * bytes, t + i * bytes, bytes);
        sb_send(req, (r + k) % n, pk, m * bytes);
        sb_recv(req, (r + n - k) % n, gt, m * bytes);
        prev = k;
    }
    sb_step(req);
    if (prev != 0) {
        unsigned char *pg = got[(round - 1) % 2];
        size_t m = 0;
        for (size_t i = 1; i < n; i++)
            if (i & prev)
                sb_copy(req, t + i * bytes, pg + m++ * bytes, bytes);
    }
    for (size_t i = 0; i < n; i++)
        sb_copy(req, o + ((r + n - i) % n) * bytes, t + i * bytes, bytes);
}
