/*
 * The algorithm registry: one entry per algorithm (name, collective,
 * requirements, message range, check), and the wrappers that turn a call
 * into the builder's arguments. An algorithm's id is its index + 1 here,
 * the same on every task of a build.
 */
#include <stdint.h>
#include <string.h>

#include "coll.h"

#define N(req) ((req)->g->size)
#define R(req) ((req)->g->rank)
#define IN_PLACE(p) ((const void *)(p) == (const void *)PAMI_IN_PLACE)

static size_t bytes_of(const coll_req_t *req)
{
    return req->x.count * req->dtsize;
}

/* sbuf, or rbuf (+ off) when the call is in place. */
static const void *input(const coll_req_t *req, size_t off)
{
    return IN_PLACE(req->x.sbuf) ? (const unsigned char *)req->x.rbuf + off
                                 : req->x.sbuf;
}

static pami_result_t b_barrier(coll_req_t *req)
{
    bld_barrier_dissemination(req);
    return PAMI_SUCCESS;
}

static pami_result_t b_barrier_packets(coll_req_t *req)
{
    sb_step(req);
    sb_barrier(req, COLL_BARRIER_PACKETS);
    return PAMI_SUCCESS;
}

static pami_result_t b_barrier_shm(coll_req_t *req)
{
    sb_step(req);
    sb_barrier(req, COLL_BARRIER_SHM);
    return PAMI_SUCCESS;
}

static pami_result_t b_barrier_hier(coll_req_t *req)
{
    sb_step(req);
    sb_barrier(req, COLL_BARRIER_HIER);
    return PAMI_SUCCESS;
}

static pami_result_t b_bcast_binomial(coll_req_t *req)
{
    bld_bcast_binomial(req, req->x.root, req->x.rbuf, bytes_of(req));
    return PAMI_SUCCESS;
}

static pami_result_t b_bcast_knomial4(coll_req_t *req)
{
    bld_bcast_knomial(req, req->x.root, req->x.rbuf, bytes_of(req), 4);
    return PAMI_SUCCESS;
}

static pami_result_t b_bcast_sag(coll_req_t *req)
{
    bld_bcast_scatter_allgather(req, req->x.root, req->x.rbuf, req->x.count);
    return PAMI_SUCCESS;
}

/* Chunks of at least 64 KiB, at most 16 of them (fewer, larger chunks
 * cost fewer handshakes; more fill the chain sooner). */
static pami_result_t b_bcast_chain(coll_req_t *req)
{
    size_t bytes = bytes_of(req), chunk = bytes / 16;
    if (chunk < 64 * 1024)
        chunk = 64 * 1024;
    bld_bcast_chain(req, req->x.root, req->x.rbuf, req->x.count, chunk);
    return PAMI_SUCCESS;
}

static pami_result_t b_reduce_binomial(coll_req_t *req)
{
    bld_reduce_binomial(req, req->x.root, input(req, 0), req->x.rbuf,
                        bytes_of(req));
    return PAMI_SUCCESS;
}

static pami_result_t b_allreduce_rd(coll_req_t *req)
{
    bld_allreduce_rd(req, input(req, 0), req->x.rbuf, bytes_of(req));
    return PAMI_SUCCESS;
}

static pami_result_t b_allreduce_ring(coll_req_t *req)
{
    bld_allreduce_ring(req, input(req, 0), req->x.rbuf, req->x.count);
    return PAMI_SUCCESS;
}

static pami_result_t b_allreduce_rabenseifner(coll_req_t *req)
{
    bld_allreduce_rabenseifner(req, input(req, 0), req->x.rbuf,
                               req->x.count);
    return PAMI_SUCCESS;
}

static pami_result_t b_allreduce_reduce_bcast(coll_req_t *req)
{
    bld_reduce_binomial(req, 0, input(req, 0), req->x.rbuf, bytes_of(req));
    bld_bcast_binomial(req, 0, req->x.rbuf, bytes_of(req));
    return PAMI_SUCCESS;
}

/* Per-rank sizes and offsets in bytes: equal blocks, or the v arrays. */
static bool blocks(coll_req_t *req, const size_t *counts, const size_t *displs,
                   size_t **bytes, size_t **offs)
{
    size_t n = N(req), es = req->dtsize;
    *bytes = sb_tmp(req, n * sizeof(size_t));
    *offs  = sb_tmp(req, n * sizeof(size_t));
    if (*bytes == NULL || *offs == NULL)
        return false;
    for (size_t i = 0; i < n; i++) {
        (*bytes)[i] = (counts ? counts[i] : req->x.count) * es;
        (*offs)[i]  = (displs ? displs[i] : i * req->x.count) * es;
    }
    return true;
}

static pami_result_t b_allgather_ring(coll_req_t *req)
{
    size_t *bytes, *offs;
    if (!blocks(req, NULL, NULL, &bytes, &offs))
        return PAMI_ENOMEM;
    bld_allgatherv_ring(req, IN_PLACE(req->x.sbuf) ? NULL : req->x.sbuf,
                        req->x.rbuf, bytes, offs);
    return PAMI_SUCCESS;
}

static pami_result_t b_allgather_rd(coll_req_t *req)
{
    bld_allgather_rd(req, IN_PLACE(req->x.sbuf) ? NULL : req->x.sbuf,
                     req->x.rbuf, bytes_of(req));
    return PAMI_SUCCESS;
}

static pami_result_t b_allgather_bruck(coll_req_t *req)
{
    bld_allgather_bruck(req, IN_PLACE(req->x.sbuf) ? NULL : req->x.sbuf,
                        req->x.rbuf, bytes_of(req));
    return PAMI_SUCCESS;
}

static pami_result_t b_allgatherv_ring(coll_req_t *req)
{
    size_t *bytes, *offs;
    if (!blocks(req, req->x.rcounts, req->x.rdispls, &bytes, &offs))
        return PAMI_ENOMEM;
    bld_allgatherv_ring(req, IN_PLACE(req->x.sbuf) ? NULL : req->x.sbuf,
                        req->x.rbuf, bytes, offs);
    return PAMI_SUCCESS;
}

static pami_result_t b_gather_linear(coll_req_t *req)
{
    size_t *bytes = NULL, *offs = NULL;
    if (R(req) == req->x.root && !blocks(req, NULL, NULL, &bytes, &offs))
        return PAMI_ENOMEM;
    bld_gatherv_linear(req, req->x.root,
                       IN_PLACE(req->x.sbuf) ? NULL : req->x.sbuf,
                       bytes_of(req), req->x.rbuf, bytes, offs);
    return PAMI_SUCCESS;
}

static pami_result_t b_gatherv_linear(coll_req_t *req)
{
    size_t *bytes = NULL, *offs = NULL;
    if (R(req) == req->x.root &&
        !blocks(req, req->x.rcounts, req->x.rdispls, &bytes, &offs))
        return PAMI_ENOMEM;
    bld_gatherv_linear(req, req->x.root,
                       IN_PLACE(req->x.sbuf) ? NULL : req->x.sbuf,
                       bytes_of(req), req->x.rbuf, bytes, offs);
    return PAMI_SUCCESS;
}

static pami_result_t b_gather_binomial(coll_req_t *req)
{
    size_t b = bytes_of(req);
    bld_gather_binomial(req, req->x.root, input(req, R(req) * b),
                        req->x.rbuf, b);
    return PAMI_SUCCESS;
}

static pami_result_t b_scatter_linear(coll_req_t *req)
{
    size_t *bytes = NULL, *offs = NULL;
    if (R(req) == req->x.root && !blocks(req, NULL, NULL, &bytes, &offs))
        return PAMI_ENOMEM;
    bld_scatterv_linear(req, req->x.root, req->x.sbuf, bytes, offs,
                        IN_PLACE(req->x.rbuf) ? NULL : req->x.rbuf,
                        bytes_of(req));
    return PAMI_SUCCESS;
}

static pami_result_t b_scatterv_linear(coll_req_t *req)
{
    size_t *bytes = NULL, *offs = NULL;
    if (R(req) == req->x.root &&
        !blocks(req, req->x.scounts, req->x.sdispls, &bytes, &offs))
        return PAMI_ENOMEM;
    bld_scatterv_linear(req, req->x.root, req->x.sbuf, bytes, offs,
                        IN_PLACE(req->x.rbuf) ? NULL : req->x.rbuf,
                        bytes_of(req));
    return PAMI_SUCCESS;
}

static pami_result_t b_scatter_binomial(coll_req_t *req)
{
    bld_scatter_binomial(req, req->x.root, req->x.sbuf, req->x.rbuf,
                         bytes_of(req));
    return PAMI_SUCCESS;
}

static pami_result_t b_alltoall_pairwise(coll_req_t *req)
{
    size_t *bytes, *offs;
    if (!blocks(req, NULL, NULL, &bytes, &offs))
        return PAMI_ENOMEM;
    const void *in = req->x.sbuf;
    if (IN_PLACE(in)) {
        void *t = sb_tmp(req, N(req) * bytes_of(req));
        if (t == NULL)
            return PAMI_ENOMEM;
        sb_step(req);
        sb_copy(req, t, req->x.rbuf, N(req) * bytes_of(req));
        in = t;
    }
    bld_alltoallv_pairwise(req, in, bytes, offs, req->x.rbuf, bytes, offs);
    return PAMI_SUCCESS;
}

static pami_result_t b_alltoall_linear(coll_req_t *req)
{
    bld_alltoall_linear(req, IN_PLACE(req->x.sbuf) ? NULL : req->x.sbuf,
                        req->x.rbuf, bytes_of(req));
    return PAMI_SUCCESS;
}

static pami_result_t b_alltoall_bruck(coll_req_t *req)
{
    bld_alltoall_bruck(req, input(req, 0), req->x.rbuf, bytes_of(req));
    return PAMI_SUCCESS;
}

static pami_result_t b_alltoallv_pairwise(coll_req_t *req)
{
    size_t *rb, *ro, *sb, *so;
    if (!blocks(req, req->x.rcounts, req->x.rdispls, &rb, &ro))
        return PAMI_ENOMEM;
    const void *in = req->x.sbuf;
    if (IN_PLACE(in)) {
        /* Sends use the receive layout, from a copy of rbuf. */
        size_t end = 0;
        for (size_t i = 0; i < N(req); i++)
            if (ro[i] + rb[i] > end)
                end = ro[i] + rb[i];
        void *t = sb_tmp(req, end);
        if (t == NULL)
            return PAMI_ENOMEM;
        sb_step(req);
        sb_copy(req, t, req->x.rbuf, end);
        in = t;
        sb = rb;
        so = ro;
    } else if (!blocks(req, req->x.scounts, req->x.sdispls, &sb, &so)) {
        return PAMI_ENOMEM;
    }
    bld_alltoallv_pairwise(req, in, sb, so, req->x.rbuf, rb, ro);
    return PAMI_SUCCESS;
}

static pami_result_t b_reduce_scatter_ring(coll_req_t *req)
{
    bld_reduce_scatter_ring(req, input(req, 0), req->x.rbuf, bytes_of(req));
    return PAMI_SUCCESS;
}

static pami_result_t b_reduce_scatter_halving(coll_req_t *req)
{
    bld_reduce_scatter_halving(req, input(req, 0), req->x.rbuf,
                               bytes_of(req));
    return PAMI_SUCCESS;
}

/* Any op: a binomial reduce of all blocks to rank 0, then a linear
 * scatter of the result. */
static pami_result_t b_reduce_scatter_reduce_scatter(coll_req_t *req)
{
    size_t n = N(req), b = bytes_of(req);
    void *all = R(req) == 0 ? sb_tmp(req, n * b) : NULL;
    size_t *bytes = NULL, *offs = NULL;
    if ((R(req) == 0 && (all == NULL || !blocks(req, NULL, NULL, &bytes,
                                                &offs))))
        return PAMI_ENOMEM;
    bld_reduce_binomial(req, 0, input(req, 0), all, n * b);
    bld_scatterv_linear(req, 0, all, bytes, offs, req->x.rbuf, b);
    return PAMI_SUCCESS;
}

static pami_result_t b_scan(coll_req_t *req)
{
    bld_scan_rd(req, input(req, 0), req->x.rbuf, bytes_of(req), false);
    return PAMI_SUCCESS;
}

static pami_result_t b_exscan(coll_req_t *req)
{
    bld_scan_rd(req, input(req, 0), req->x.rbuf, bytes_of(req), true);
    return PAMI_SUCCESS;
}

static pami_result_t need_commutative(const pami_xfer_t *x)
{
    return coll_commutative(x) ? PAMI_SUCCESS : PAMI_INVAL;
}

/* The shared-memory register serves exactly the tasks of this node. */
static pami_result_t need_node(const pami_xfer_t *x)
{
    return x->geometry != NULL && x->geometry->on_node ? PAMI_SUCCESS
                                                       : PAMI_INVAL;
}

/* The hierarchical barrier is over every task of the job. */
static pami_result_t need_all_tasks(const pami_xfer_t *x)
{
    return x->geometry != NULL && x->geometry->size == x->geometry->cc->ntasks
               ? PAMI_SUCCESS : PAMI_INVAL;
}

#define KIB ((size_t)1024)
#define ANY 0, SIZE_MAX

const coll_algo_t coll_algos[] = {
    {"barrier_dissemination", PAMI_XFER_BARRIER, 0, ANY, NULL, b_barrier},
    {"barrier_packets", PAMI_XFER_BARRIER, 0, ANY, NULL, b_barrier_packets},
    {"barrier_shm", PAMI_XFER_BARRIER, 0, ANY, need_node, b_barrier_shm},
    {"barrier_hier", PAMI_XFER_BARRIER, 0, ANY, need_all_tasks,
     b_barrier_hier},
    {"broadcast_binomial", PAMI_XFER_BROADCAST, 0, 0, 64 * KIB, NULL,
     b_bcast_binomial},
    {"broadcast_knomial4", PAMI_XFER_BROADCAST, 0, 0, 16 * KIB, NULL,
     b_bcast_knomial4},
    {"broadcast_scatter_allgather", PAMI_XFER_BROADCAST, 0, 64 * KIB,
     SIZE_MAX, NULL, b_bcast_sag},
    {"broadcast_pipelined_chain", PAMI_XFER_BROADCAST, 0, 256 * KIB,
     SIZE_MAX, NULL, b_bcast_chain},
    {"reduce_binomial", PAMI_XFER_REDUCE, 0, ANY, NULL, b_reduce_binomial},
    {"allreduce_recursive_doubling", PAMI_XFER_ALLREDUCE, 0, 0, 64 * KIB,
     NULL, b_allreduce_rd},
    {"allreduce_ring", PAMI_XFER_ALLREDUCE, PAMI_ALGORITHM_REQ_COMMUTATIVE,
     64 * KIB, SIZE_MAX, need_commutative, b_allreduce_ring},
    {"allreduce_reduce_broadcast", PAMI_XFER_ALLREDUCE, 0, ANY, NULL,
     b_allreduce_reduce_bcast},
    {"allreduce_rabenseifner", PAMI_XFER_ALLREDUCE, 0, 16 * KIB, 1024 * KIB,
     NULL, b_allreduce_rabenseifner},
    {"allreduce_hier", PAMI_XFER_ALLREDUCE, 0, ANY, coll_hier_check,
     coll_hier_build},
    {"allgather_ring", PAMI_XFER_ALLGATHER, 0, ANY, NULL, b_allgather_ring},
    {"allgather_recursive_doubling", PAMI_XFER_ALLGATHER,
     PAMI_ALGORITHM_REQ_POW2, 0, 64 * KIB, NULL, b_allgather_rd},
    {"allgather_bruck", PAMI_XFER_ALLGATHER, 0, 0, 16 * KIB, NULL,
     b_allgather_bruck},
    {"gather_linear", PAMI_XFER_GATHER, 0, ANY, NULL, b_gather_linear},
    {"gather_binomial", PAMI_XFER_GATHER, 0, 0, 16 * KIB, NULL,
     b_gather_binomial},
    {"scatter_linear", PAMI_XFER_SCATTER, 0, ANY, NULL, b_scatter_linear},
    {"scatter_binomial", PAMI_XFER_SCATTER, 0, 0, 16 * KIB, NULL,
     b_scatter_binomial},
    {"alltoall_pairwise", PAMI_XFER_ALLTOALL, 0, ANY, NULL,
     b_alltoall_pairwise},
    {"alltoall_bruck", PAMI_XFER_ALLTOALL, 0, 0, 2 * KIB, NULL,
     b_alltoall_bruck},
    {"alltoall_linear", PAMI_XFER_ALLTOALL, 0, 0, 64 * KIB, NULL,
     b_alltoall_linear},
    {"reduce_scatter_ring", PAMI_XFER_REDUCE_SCATTER,
     PAMI_ALGORITHM_REQ_COMMUTATIVE, ANY, need_commutative,
     b_reduce_scatter_ring},
    {"reduce_scatter_reduce_scatter", PAMI_XFER_REDUCE_SCATTER, 0, ANY, NULL,
     b_reduce_scatter_reduce_scatter},
    {"reduce_scatter_recursive_halving", PAMI_XFER_REDUCE_SCATTER,
     PAMI_ALGORITHM_REQ_COMMUTATIVE, ANY, need_commutative,
     b_reduce_scatter_halving},
    {"scan_recursive_doubling", PAMI_XFER_SCAN, 0, ANY, NULL, b_scan},
    {"exscan_recursive_doubling", PAMI_XFER_EXSCAN, 0, ANY, NULL, b_exscan},
    {"allgatherv_ring", PAMI_XFER_ALLGATHERV, 0, ANY, NULL,
     b_allgatherv_ring},
    {"gatherv_linear", PAMI_XFER_GATHERV, 0, ANY, NULL, b_gatherv_linear},
    {"scatterv_linear", PAMI_XFER_SCATTERV, 0, ANY, NULL, b_scatterv_linear},
    {"alltoallv_pairwise", PAMI_XFER_ALLTOALLV, 0, ANY, NULL,
     b_alltoallv_pairwise},
    /* coll_alg_shm.c: on one node, through shared memory. */
    {"allreduce_shm", PAMI_XFER_ALLREDUCE, 0, ANY, coll_shm_check,
     coll_shm_build},
    {"broadcast_shm", PAMI_XFER_BROADCAST, 0, ANY, coll_shm_check,
     coll_shm_build},
    /* Up to CSHM_RING_MAX (coll_shm.h); larger named calls run rounds. */
    {"broadcast_shm_eager", PAMI_XFER_BROADCAST, 0, 0, 16384, coll_shm_check,
     coll_shm_build},
    {"reduce_shm", PAMI_XFER_REDUCE, 0, ANY, coll_shm_check, coll_shm_build},
    {"allgather_shm", PAMI_XFER_ALLGATHER, 0, ANY, coll_shm_check,
     coll_shm_build},
    {"alltoall_shm", PAMI_XFER_ALLTOALL, 0, ANY, coll_shm_blocks_check,
     coll_shm_build},
    {"reduce_scatter_shm", PAMI_XFER_REDUCE_SCATTER, 0, ANY,
     coll_shm_blocks_check, coll_shm_build},
    {"alltoall_shm_cma", PAMI_XFER_ALLTOALL, 0, 4 * KIB, SIZE_MAX,
     coll_shm_cma_check, coll_shm_build},
    /* coll_alg_shm_cma.c: one copy, read from the others' buffers. */
    {"allreduce_shm_cma", PAMI_XFER_ALLREDUCE, 0, 64 * KIB, SIZE_MAX,
     coll_shm_cma_any_check, coll_shm_build},
    {"broadcast_shm_cma", PAMI_XFER_BROADCAST, 0, 16 * KIB, SIZE_MAX,
     coll_shm_cma_any_check, coll_shm_build},
    {"reduce_scatter_shm_cma", PAMI_XFER_REDUCE_SCATTER, 0, 16 * KIB,
     SIZE_MAX, coll_shm_cma_rs_check, coll_shm_build},
    {"allgather_shm_cma", PAMI_XFER_ALLGATHER, 0, 16 * KIB, SIZE_MAX,
     coll_shm_cma_any_check, coll_shm_build},
};

const size_t coll_num_algos = sizeof(coll_algos) / sizeof(coll_algos[0]);
