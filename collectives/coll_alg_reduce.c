/*
 * Reduction schedules: allreduce by recursive doubling, ring and
 * Rabenseifner, reduce_scatter by ring and recursive halving, scan and
 * exscan by recursive doubling.
 */
#include "coll.h"

#define N(req) ((req)->g->size)
#define R(req) ((req)->g->rank)

/* Recursive doubling. With n not a power of two, the first 2 * rem ranks
 * pair up (even into odd) so p = 2^k ranks remain; each pair, like every
 * block of the exchange, is a run of consecutive ranks, so combining
 * lower first keeps rank order for a non-commutative op. */
void bld_allreduce_rd(coll_req_t *req, const void *in, void *out,
                      size_t bytes)
{
    size_t n = N(req), r = R(req);
    size_t p = 1;
    while (p * 2 <= n)
        p *= 2;
    size_t rem = n - p;
    long   newrank;
    sb_step(req);
    sb_copy(req, out, in, bytes);
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            sb_send(req, r + 1, out, bytes);
            newrank = -1;
        } else {
            sb_recv_reduce(req, r - 1, out, bytes, true);
            newrank = (long)(r / 2);
        }
    } else {
        newrank = (long)(r - rem);
    }
    if (newrank >= 0) {
        for (size_t mask = 1; mask < p; mask <<= 1) {
            size_t nd = (size_t)newrank ^ mask;
            size_t d  = nd < rem ? nd * 2 + 1 : nd + rem;
            sb_step(req);
            sb_send(req, d, out, bytes);
            sb_recv_reduce(req, d, out, bytes, d < r);
        }
    }
    if (r < 2 * rem) {
        sb_step(req);
        if (r % 2 == 0)
            sb_recv(req, r + 1, out, bytes);
        else
            sb_send(req, r - 1, out, bytes);
    }
}

static size_t chunk_off(size_t count, size_t n, size_t i)
{
    return i * (count / n) + (i < count % n ? i : count % n);
}

/* Ring: reduce-scatter of n chunks around the ring, each rank ending with
 * the full chunk r + 1, then a ring allgather of the chunks. Every chunk
 * is reduced once, in ring order: commutative ops only. */
void bld_allreduce_ring(coll_req_t *req, const void *in, void *out,
                        size_t count)
{
    size_t n = N(req), r = R(req), es = req->dtsize;
    unsigned char *o = out;
    size_t right = (r + 1) % n, left = (r + n - 1) % n;
#define OFF(i) (chunk_off(count, n, (i)) * es)
#define LEN(i) ((chunk_off(count, n, (i) + 1) - chunk_off(count, n, (i))) * es)
    sb_step(req);
    sb_copy(req, out, in, count * es);
    for (size_t k = 0; k + 1 < n; k++) {
        size_t s = (r + n - k) % n, rc = (r + 2 * n - k - 1) % n;
        if (k > 0)
            sb_step(req);
        sb_send(req, right, o + OFF(s), LEN(s));
        sb_recv_reduce(req, left, o + OFF(rc), LEN(rc), false);
    }
    for (size_t k = 0; k + 1 < n; k++) {
        size_t s = (r + n - k + 1) % n, rc = (r + n - k) % n;
        sb_step(req);
        sb_send(req, right, o + OFF(s), LEN(s));
        sb_recv(req, left, o + OFF(rc), LEN(rc));
    }
#undef OFF
#undef LEN
}

/* Block r of the reduction of everybody's n blocks ends on rank r. */
void bld_reduce_scatter_ring(coll_req_t *req, const void *in, void *out,
                             size_t bytes)
{
    size_t n = N(req), r = R(req);
    unsigned char *acc = sb_tmp(req, n * bytes);
    size_t right = (r + 1) % n, left = (r + n - 1) % n;
    sb_step(req);
    sb_copy(req, acc, in, n * bytes);
    for (size_t k = 0; k + 1 < n; k++) {
        size_t s = (r + 2 * n - k - 1) % n, rc = (r + 2 * n - k - 2) % n;
        sb_step(req);
        sb_send(req, right, acc + s * bytes, bytes);
        sb_recv_reduce(req, left, acc + rc * bytes, bytes, false);
    }
    sb_step(req);
    sb_copy(req, out, acc + r * bytes, bytes);
}

/* Hypercube scan: partial holds the reduction over the block of ranks
 * exchanged so far; blocks from lower ranks go first. */
void bld_scan_rd(coll_req_t *req, const void *in, void *out, size_t bytes,
                 bool exclusive)
{
    size_t n = N(req), r = R(req);
    void *partial = sb_tmp(req, bytes);
    bool  have = !exclusive;
    sb_step(req);
    sb_copy(req, partial, in, bytes);
    if (!exclusive)
        sb_copy(req, out, in, bytes);
    for (size_t mask = 1; mask < n; mask <<= 1) {
        size_t d = r ^ mask;
        if (d >= n)
            continue;
        void *t = sb_tmp(req, bytes);
        sb_step(req);
        sb_send(req, d, partial, bytes);
        sb_recv(req, d, t, bytes);
        sb_step(req);
        if (d < r) {
            if (have)
                sb_reduce(req, out, t, bytes, true);
            else
                sb_copy(req, out, t, bytes);
            have = true;
            sb_reduce(req, partial, t, bytes, true);
        } else {
            sb_reduce(req, partial, t, bytes, false);
        }
    }
}

/* The ranks that take part in a power-of-two exchange: with n not a power
 * of two the first 2 * rem ranks pair up (even into odd, as in
 * bld_allreduce_rd). newrank -1: an even rank of a pair, idle meanwhile. */
typedef struct {
    size_t p, rem;
    long   newrank;
} fold_t;

static fold_t fold_of(size_t n, size_t r)
{
    fold_t f = {.p = 1};
    while (f.p * 2 <= n)
        f.p *= 2;
    f.rem = n - f.p;
    if (r < 2 * f.rem)
        f.newrank = r % 2 == 0 ? -1 : (long)(r / 2);
    else
        f.newrank = (long)(r - f.rem);
    return f;
}

static size_t fold_rank(const fold_t *f, size_t nr)
{
    return nr < f->rem ? nr * 2 + 1 : nr + f->rem;
}

/* Rabenseifner: a reduce-scatter by recursive halving over p chunks,
 * then an allgather by recursive doubling. Partners at distance 1 first,
 * so each partial is over a run of consecutive ranks and combining the
 * lower run first keeps rank order (any associative op). */
void bld_allreduce_rabenseifner(coll_req_t *req, const void *in, void *out,
                                size_t count)
{
    size_t n = N(req), r = R(req), es = req->dtsize, bytes = count * es;
    unsigned char *o = out;
    fold_t f = fold_of(n, r);
#define OFF(c) (chunk_off(count, f.p, (c)) * es)
#define LEN(a, b) (OFF(b) - OFF(a))
    sb_step(req);
    sb_copy(req, out, in, bytes);
    if (r < 2 * f.rem) {
        if (f.newrank < 0)
            sb_send(req, r + 1, out, bytes);
        else
            sb_recv_reduce(req, r - 1, out, bytes, true);
    }
    if (f.newrank >= 0) {
        size_t nr = (size_t)f.newrank, lo = 0, hi = f.p;
        size_t los[64], his[64], k = 0;
        for (size_t d = 1; d < f.p; d <<= 1, k++) {
            size_t peer = fold_rank(&f, nr ^ d), mid = lo + (hi - lo) / 2;
            size_t klo = nr & d ? mid : lo, khi = nr & d ? hi : mid;
            size_t slo = nr & d ? lo : mid, shi = nr & d ? mid : hi;
            los[k] = lo;
            his[k] = hi;
            sb_step(req);
            sb_send(req, peer, o + OFF(slo), LEN(slo, shi));
            sb_recv_reduce(req, peer, o + OFF(klo), LEN(klo, khi), peer < r);
            lo = klo;
            hi = khi;
        }
        for (size_t d = f.p >> 1; d >= 1; d >>= 1) {
            size_t peer = fold_rank(&f, nr ^ d);
            k--;
            /* The partner holds the other half of the range before the
             * halving step k. */
            size_t plo = lo == los[k] ? hi : los[k];
            size_t phi = lo == los[k] ? his[k] : lo;
            sb_step(req);
            sb_send(req, peer, o + OFF(lo), LEN(lo, hi));
            sb_recv(req, peer, o + OFF(plo), LEN(plo, phi));
            lo = los[k];
            hi = his[k];
        }
    }
    if (r < 2 * f.rem) {
        sb_step(req);
        if (f.newrank < 0)
            sb_recv(req, r + 1, out, bytes);
        else
            sb_send(req, r - 1, out, bytes);
    }
#undef OFF
#undef LEN
}

/* Recursive halving, farthest partner first (commutative ops): block j
 * of the n blocks ends on rank j. With the ranks folded, newrank j holds
 * blocks 2j and 2j + 1 for j < rem (the odd rank passes block 2j to its
 * even partner at the end), block j + rem otherwise. */
void bld_reduce_scatter_halving(coll_req_t *req, const void *in, void *out,
                                size_t bytes)
{
    size_t n = N(req), r = R(req), all = n * bytes;
    fold_t f = fold_of(n, r);
    unsigned char *acc = sb_tmp(req, all);
    if (acc == NULL)
        return;
#define BOFF(j) (((j) < f.rem ? 2 * (j) : (j) + f.rem) * bytes)
#define BLEN(a, b) (BOFF(b) - BOFF(a))
    sb_step(req);
    sb_copy(req, acc, in, all);
    if (r < 2 * f.rem) {
        if (f.newrank < 0)
            sb_send(req, r + 1, acc, all);
        else
            sb_recv_reduce(req, r - 1, acc, all, true);
    }
    if (f.newrank >= 0) {
        size_t nr = (size_t)f.newrank, lo = 0, hi = f.p;
        for (size_t d = f.p >> 1; d >= 1; d >>= 1) {
            size_t peer = fold_rank(&f, nr ^ d), mid = lo + d;
            size_t klo = nr & d ? mid : lo, khi = nr & d ? hi : mid;
            size_t slo = nr & d ? lo : mid, shi = nr & d ? mid : hi;
            sb_step(req);
            sb_send(req, peer, acc + BOFF(slo), BLEN(slo, shi));
            sb_recv_reduce(req, peer, acc + BOFF(klo), BLEN(klo, khi),
                           peer < r);
            lo = klo;
            hi = khi;
        }
        sb_step(req);
        if (nr < f.rem)
            sb_send(req, r - 1, acc + (r - 1) * bytes, bytes);
    } else {
        sb_step(req);
        sb_recv(req, r + 1, out, bytes);
        return;
    }
    sb_copy(req, out, acc + r * bytes, bytes);
#undef BOFF
#undef BLEN
}
