/*
 * Tree, chain and dissemination schedules: barrier, broadcast (trees,
 * scatter+allgather, pipelined chain), reduce, and the binomial gather
 * and scatter. Ranks are relative to the root
 * (vr = (r - root) mod n); subtrees are contiguous in vr.
 */
#include "coll.h"

#define N(req) ((req)->g->size)
#define R(req) ((req)->g->rank)

static size_t lowbit(size_t v)
{
    return v & (~v + 1);
}

/* Ranks in vr's binomial subtree (vr included). */
static size_t subtree(size_t vr, size_t n)
{
    size_t sz = vr == 0 ? n : lowbit(vr);
    return sz < n - vr ? sz : n - vr;
}

void bld_barrier_dissemination(coll_req_t *req)
{
    size_t n = N(req), r = R(req);
    for (size_t d = 1; d < n; d <<= 1) {
        sb_step(req);
        sb_send(req, (r + d) % n, NULL, 0);
        sb_recv(req, (r + n - d) % n, NULL, 0);
    }
}

void bld_bcast_binomial(coll_req_t *req, size_t root, void *buf, size_t bytes)
{
    bld_bcast_knomial(req, root, buf, bytes, 2);
}

/* Each node receives from the parent that differs from it in its lowest
 * non-zero base-radix digit, then sends to its children, farthest
 * subtree first. */
void bld_bcast_knomial(coll_req_t *req, size_t root, void *buf, size_t bytes,
                       size_t radix)
{
    size_t n = N(req), vr = (R(req) + n - root) % n;
    size_t m = 1;
    while (m < n && vr % (m * radix) == 0)
        m *= radix;
    if (vr != 0) {
        sb_step(req);
        sb_recv(req, (vr - vr % (m * radix) + root) % n, buf, bytes);
    }
    sb_step(req);
    for (size_t mm = m; mm > 1;) {
        mm /= radix;
        for (size_t j = radix - 1; j >= 1; j--)
            if (vr + j * mm < n)
                sb_send(req, (vr + j * mm + root) % n, buf, bytes);
    }
}

static size_t chunk_off(size_t count, size_t n, size_t i)
{
    return i * (count / n) + (i < count % n ? i : count % n);
}

/* Large broadcast: a binomial scatter of n chunks (chunk i belongs to
 * vr i), then a ring allgather of the chunks, all in buf. */
void bld_bcast_scatter_allgather(coll_req_t *req, size_t root, void *buf,
                                 size_t count)
{
    size_t n = N(req), vr = (R(req) + n - root) % n, es = req->dtsize;
    unsigned char *b = buf;
#define CH_OFF(i) (chunk_off(count, n, (i)) * es)
#define CH_LEN(i, k) ((chunk_off(count, n, (i) + (k)) - chunk_off(count, n, (i))) * es)
    size_t sz = subtree(vr, n);
    if (vr != 0) {
        sb_step(req);
        sb_recv(req, (vr - lowbit(vr) + root) % n, b + CH_OFF(vr),
                CH_LEN(vr, sz));
    }
    sb_step(req);
    size_t top = 1;
    while (top < sz)
        top <<= 1;
    for (size_t mask = top >> 1; mask >= 1; mask >>= 1) {
        size_t child = vr + mask;
        if (child < n)
            sb_send(req, (child + root) % n, b + CH_OFF(child),
                    CH_LEN(child, subtree(child, n)));
    }
    size_t right = (vr + 1) % n, left = (vr + n - 1) % n;
    for (size_t k = 0; k + 1 < n; k++) {
        size_t s = (vr + n - k) % n, rc = (vr + 2 * n - k - 1) % n;
        sb_step(req);
        sb_send(req, (right + root) % n, b + CH_OFF(s), CH_LEN(s, 1));
        sb_recv(req, (left + root) % n, b + CH_OFF(rc), CH_LEN(rc, 1));
    }
#undef CH_OFF
#undef CH_LEN
}

/* Binomial reduce. With a non-commutative user op the tree is rooted at
 * rank 0 (so each subtree is a run of consecutive ranks, combined lower
 * first) and the result then goes to root. */
void bld_reduce_binomial(coll_req_t *req, size_t root, const void *in,
                         void *out, size_t bytes)
{
    size_t n = N(req), r = R(req);
    size_t base = coll_commutative(&req->x) ? root : 0;
    size_t vr = (r + n - base) % n;
    bool has_children = vr + 1 < n && (vr == 0 || lowbit(vr) > 1);
    void *acc = NULL;
    if (r == root && r == base)
        acc = out;
    else if (has_children || r == base)
        acc = sb_tmp(req, bytes);
    sb_step(req);
    if (acc != NULL)
        sb_copy(req, acc, in, bytes);
    for (size_t mask = 1; mask < n; mask <<= 1) {
        if (vr & mask) {
            sb_step(req);
            sb_send(req, (vr - mask + base) % n, acc ? acc : in, bytes);
            break;
        }
        if (vr + mask < n) {
            sb_step(req);
            sb_recv_reduce(req, (vr + mask + base) % n, acc, bytes, false);
        }
    }
    if (base != root) {
        if (r == base) {
            sb_step(req);
            sb_send(req, root, acc, bytes);
        } else if (r == root) {
            sb_step(req);
            sb_recv(req, base, out, bytes);
        }
    }
}

/* Gather: every node collects its subtree's blocks in vr order, the root
 * then puts them in rank order. */
void bld_gather_binomial(coll_req_t *req, size_t root, const void *in,
                         void *out, size_t bytes)
{
    size_t n = N(req), r = R(req), vr = (r + n - root) % n;
    size_t sz = subtree(vr, n);
    unsigned char *buf = sz > 1 || vr == 0 ? sb_tmp(req, sz * bytes)
                                           : (unsigned char *)(uintptr_t)in;
    sb_step(req);
    if ((const void *)buf != in)
        sb_copy(req, buf, in, bytes);
    for (size_t mask = 1; mask < sz; mask <<= 1) {
        size_t child = vr + mask;
        if (child < n)
            sb_recv(req, (child + root) % n, buf + mask * bytes,
                    subtree(child, n) * bytes);
    }
    sb_step(req);
    if (vr != 0) {
        sb_send(req, (vr - lowbit(vr) + root) % n, buf, sz * bytes);
        return;
    }
    unsigned char *o = out;
    sb_copy(req, o + root * bytes, buf, (n - root) * bytes);
    sb_copy(req, o, buf + (n - root) * bytes, root * bytes);
}

void bld_scatter_binomial(coll_req_t *req, size_t root, const void *in,
                          void *out, size_t bytes)
{
    size_t n = N(req), r = R(req), vr = (r + n - root) % n;
    size_t sz = subtree(vr, n);
    unsigned char *buf;
    sb_step(req);
    if (vr == 0) {
        const unsigned char *i = in;
        buf = sb_tmp(req, n * bytes);
        sb_copy(req, buf, i + root * bytes, (n - root) * bytes);
        sb_copy(req, buf + (n - root) * bytes, i, root * bytes);
    } else {
        buf = sz > 1 ? sb_tmp(req, sz * bytes) : out;
        sb_recv(req, (vr - lowbit(vr) + root) % n, buf, sz * bytes);
    }
    sb_step(req);
    size_t top = 1;
    while (top < sz)
        top <<= 1;
    for (size_t mask = top >> 1; mask >= 1; mask >>= 1) {
        size_t child = vr + mask;
        if (mask < sz && child < n)
            sb_send(req, (child + root) % n, buf + mask * bytes,
                    subtree(child, n) * bytes);
    }
    if (out != PAMI_IN_PLACE && (void *)buf != out)
        sb_copy(req, out, buf, bytes);
}

/* Pipelined chain: ranks in root-relative order pass the message down in
 * chunks; a middle rank forwards chunk i - 1 while chunk i arrives.
 * The chunking depends on count and n only, so it is the same on all. */
void bld_bcast_chain(coll_req_t *req, size_t root, void *buf, size_t count,
                     size_t chunk_bytes)
{
    size_t n = N(req), vr = (R(req) + n - root) % n, es = req->dtsize;
    unsigned char *b = buf;
    size_t per = es ? chunk_bytes / es : 0;
    if (per == 0)
        per = 1;
    size_t k = count == 0 ? 1 : (count + per - 1) / per;
    size_t next = (vr + 1 + root) % n, prev = (vr + n - 1 + root) % n;
#define C_OFF(i) ((i) * per * es)
#define C_LEN(i) (((i) + 1 == k ? count - (i) * per : per) * es)
    if (n == 1)
        return;
    if (vr == 0) {
        sb_step(req);
        for (size_t i = 0; i < k; i++)
            sb_send(req, next, b + C_OFF(i), C_LEN(i));
        return;
    }
    for (size_t i = 0; i <= k; i++) {
        sb_step(req);
        if (i > 0 && vr + 1 < n)
            sb_send(req, next, b + C_OFF(i - 1), C_LEN(i - 1));
        if (i < k)
            sb_recv(req, prev, b + C_OFF(i), C_LEN(i));
    }
#undef C_OFF
#undef C_LEN
}
