/*
 * allreduce_shm_cma, allgather_shm_cma and reduce_scatter_shm_cma:
 * shared-memory rounds of
 * coll_alg_shm.c that move no data through the slots. Each task puts its
 * process id and its buffers' addresses in its control line (where a
 * tiny call's data goes), and after the round's barrier the tasks read
 * what they need straight from the others' buffers with process_vm_readv:
 * one copy where the slots take two (in and out).
 *
 * allreduce: rank j owns part j of the vector (1/n of the elements). After
 * the first barrier it folds part j of every task's input in rank order
 * (built-in ops from rank 0, user ops from rank n - 1 down, as cshm_fold)
 * into part j of its own output, in chunks that stay in cache, and says
 * so in its line (`folded`); after the second barrier it reads every
 * other part from its owner's output; a third barrier keeps every buffer
 * unchanged until all reads ended. In place works: during the fold a
 * task writes only its own part, which nobody else reads then.
 *
 * broadcast_shm_cma is set up here (its registry id) and runs without
 * barriers in coll_alg_shm_a2a.c.
 *
 * Only reads cross processes: a task writes only its own buffers, and
 * only while its call runs. A broadcast's root does not write into the
 * others' buffers (process_vm_writev), though its core would then copy
 * too: a task whose call ends early may hand its buffer back to the
 * program while the root still writes into it.
 *
 * allgather: after the barrier every task reads every other task's block
 * (its input) into its output; a second barrier. In place works: the
 * others read block r of this task's output, which it does not write.
 *
 * reduce_scatter: after the barrier rank j folds block j of every task's
 * input the same way into its output; a second barrier. Not in place.
 *
 * A read the kernel refuses (no ptrace permission), a member whose call
 * failed there (address 0) or whose fold failed, fails the call on this
 * task with PAMI_INVAL and a log line; the barriers stay aligned.
 */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "coll_shm.h"

/* Bytes folded at a time: a remote chunk read into the temporary and the
 * part it folds into both stay in the core's cache. */
#define CMA_CHUNK (64 * 1024)

/* What these calls put in their control line (from CSHM_TINY_OFF). */
typedef struct {
    uint64_t         pid;
    uint64_t         in;     /* input */
    uint64_t         out;    /* allreduce: output, part j final after fold */
    _Atomic uint64_t folded; /* allreduce: this task's part is there */
} cma_line_t;

_Static_assert(sizeof(cma_line_t) <= CSHM_TINY, "fits a control line");
_Static_assert(offsetof(cma_line_t, pid) == 0, "pid first (cshm_cma_result)");

static size_t         ar_id, bc_id, rs_id, ag_id;
static pthread_once_t ids_once = PTHREAD_ONCE_INIT;

static void find_ids(void)
{
    for (size_t i = 0; i < coll_num_algos; i++) {
        if (strcmp(coll_algos[i].name, "allreduce_shm_cma") == 0)
            ar_id = i + 1;
        if (strcmp(coll_algos[i].name, "broadcast_shm_cma") == 0)
            bc_id = i + 1;
        if (strcmp(coll_algos[i].name, "reduce_scatter_shm_cma") == 0)
            rs_id = i + 1;
        if (strcmp(coll_algos[i].name, "allgather_shm_cma") == 0)
            ag_id = i + 1;
    }
}

static const char *kind_name(int kind)
{
    return kind == CSHM_AR_CMA   ? "allreduce_shm_cma"
           : kind == CSHM_AG_CMA ? "allgather_shm_cma"
                                 : "reduce_scatter_shm_cma";
}

static cma_line_t *line_of(cshm_t *s, size_t local, uint32_t p)
{
    return (cma_line_t *)((unsigned char *)cshm_ctl(s, local, p) +
                          CSHM_TINY_OFF);
}

bool cshm_cma_setup(cshm_t *s, size_t algo_id)
{
    cshm_op_t *op = &s->op;
    pthread_once(&ids_once, find_ids);
    if (algo_id == 0 || (algo_id != ar_id && algo_id != bc_id &&
                         algo_id != rs_id && algo_id != ag_id))
        return false;
    op->kind   = algo_id == ar_id   ? CSHM_AR_CMA
                 : algo_id == bc_id ? CSHM_BC_CMA
                 : algo_id == rs_id ? CSHM_RS_CMA
                                    : CSHM_AG_CMA;
    op->chunk  = op->total; /* one round */
    op->cma_rc = PAMI_SUCCESS;
    if (op->kind == CSHM_BC_CMA) {
        cshm_a2a_setup(s); /* its line as alltoall_shm_cma's */
        return true;
    }
    bool ghost = op->req != NULL && op->req->status != PAMI_SUCCESS;
    cma_line_t *l = line_of(s, s->my_index, s->phase & 1);
    l->pid = s->pid;
    l->in  = ghost ? 0 : (uint64_t)(uintptr_t)op->in;
    l->out = ghost ? 0 : (uint64_t)(uintptr_t)op->out;
    atomic_store_explicit(&l->folded, 0, memory_order_relaxed);
    return true;
}

pami_result_t cshm_cma_result(const cshm_t *s, ssize_t r, int err)
{
    if (r < 0 && err == ESRCH)
        return PAMI_PEER_FAILED;
    if (r >= 0 || err != EFAULT)
        return PAMI_INVAL;
    for (size_t i = 0; i < s->nlocal; i++) {
        uint64_t pid = *(const uint64_t *)((const unsigned char *)cshm_ctl(
                                               s, i, s->phase & 1) +
                                           CSHM_TINY_OFF);
        if (i != s->my_index && pid != 0 && kill((pid_t)pid, 0) != 0 &&
            errno == ESRCH)
            return PAMI_PEER_FAILED;
    }
    return PAMI_INVAL;
}

/* len bytes at addr in rank's process into dst. */
static pami_result_t cma_get(cshm_t *s, size_t rank, const cma_line_t *l,
                             void *dst, uint64_t addr, size_t len)
{
    size_t got = 0;
    while (got < len) {
        struct iovec lo = {(unsigned char *)dst + got, len - got};
        struct iovec re = {(void *)(uintptr_t)(addr + got), len - got};
        ssize_t r = process_vm_readv((pid_t)l->pid, &lo, 1, &re, 1, 0);
        if (r <= 0) {
            int           err = errno;
            pami_result_t rc  = cshm_cma_result(s, r, err);
            cshm_log(PAMI_PROTOCOL_LOG_WARN, "%s: process_vm_readv from "
                     "rank %zu: %s: %s here", kind_name(s->op.kind), rank,
                     r < 0 ? strerror(err) : "no data",
                     rc == PAMI_INVAL ? "PAMI_INVAL" : "PAMI_PEER_FAILED");
            return rc;
        }
        got += (size_t)r;
    }
    return PAMI_SUCCESS;
}

/* The line of rank r, or NULL (and a log line) when its call failed. */
static const cma_line_t *peer_line(cshm_t *s, size_t r, uint32_t p)
{
    const cma_line_t *l = line_of(s, s->idx[r], p);
    if (l->in != 0 && l->out != 0)
        return l;
    cshm_log(PAMI_PROTOCOL_LOG_WARN, "%s: rank %zu's call failed there: "
             "PAMI_INVAL here", kind_name(s->op.kind), r);
    return NULL;
}

/* Part j of the vector: [*off, *off + *bytes). */
static void part_of(const cshm_op_t *op, size_t j, size_t *off,
                    size_t *bytes)
{
    size_t elems = op->total / op->es, base = elems / op->n,
           rem = elems % op->n;
    *bytes = (base + (j < rem)) * op->es;
    *off   = (j * base + (j < rem ? j : rem)) * op->es;
}

static void fold_into(const cshm_op_t *op, unsigned char *acc,
                      const unsigned char *src, size_t bytes)
{
    const pami_xfer_t *x = op->x;
    if (op->user)
        x->user_fn(acc, src, bytes / op->es, x->user_cookie);
    else
        coll_reduce_builtin(x->dtype, x->op, acc, src, bytes / op->es);
}

/* Does a op b equal b op a bit for bit? Built-in ops but a float's min
 * and max (which of -0 and +0, or of a NaN, is kept follows the order). */
static bool swaps(const cshm_op_t *op)
{
    pami_type_t t = op->x->dtype;
    bool fl = t == PAMI_TYPE_FLOAT || t == PAMI_TYPE_DOUBLE ||
              t == PAMI_TYPE_LONG_DOUBLE;
    return !op->user &&
           !(fl && (op->x->op == PAMI_OP_MIN || op->x->op == PAMI_OP_MAX));
}

/* One chunk [a, a + c) of every task's input, folded in rank order into
 * this task's output at `at`. In place, this task's input is the output itself: when it
 * is not the first of the fold, the ranks before it are folded in the
 * temporary's first half until its turn. Not in place, when this task
 * comes first and the op commutes exactly, the second rank's chunk is
 * read into the output and this task's input folded into it: no copy of
 * the input. */
static pami_result_t fold_chunk(cshm_t *s, uint32_t p, size_t a, size_t c,
                                size_t at)
{
    cshm_op_t *op = &s->op;
    unsigned char *dst = op->out + at, *tmp = s->cma_tmp;
    size_t n = op->n, me = op->rank, first = op->user ? n - 1 : 0;
    bool keep = op->in_place && me != first;
    unsigned char *acc = keep ? tmp : dst, *spare = keep ? tmp + CMA_CHUNK
                                                          : tmp;
    bool swap = !op->in_place && me == first && swaps(op);
    for (size_t i = swap ? 1 : 0; i < n; i++) {
        size_t r = op->user ? n - 1 - i : i;
        const unsigned char *src = op->in + a;
        if (swap && i == 1) { /* ranks first and 1 as 1 op first */
            const cma_line_t *l = peer_line(s, r, p);
            pami_result_t rc = l == NULL ? PAMI_INVAL
                                         : cma_get(s, r, l, acc, l->in + a,
                                                   c);
            if (rc != PAMI_SUCCESS)
                return rc;
            fold_into(op, acc, src, c);
            continue;
        }
        if (r != me) {
            const cma_line_t *l = peer_line(s, r, p);
            unsigned char *into = i == 0 ? acc : spare;
            pami_result_t rc = l == NULL ? PAMI_INVAL
                                         : cma_get(s, r, l, into, l->in + a,
                                                   c);
            if (rc != PAMI_SUCCESS)
                return rc;
            src = into;
        }
        if (i == 0) {
            if (src != acc)
                memcpy(acc, src, c);
        } else {
            fold_into(op, acc, src, c);
        }
        if (keep && r == me) { /* the input is folded: acc may be dst */
            memcpy(dst, acc, c);
            acc   = dst;
            spare = tmp;
        }
    }
    return PAMI_SUCCESS;
}

/* Allreduce: part `rank` of the vector, in place in the output;
 * reduce_scatter: block `rank` of the inputs into the output. */
static pami_result_t fold_mine(cshm_t *s, uint32_t p)
{
    cshm_op_t *op = &s->op;
    size_t off, bytes, out = 0;
    if (op->kind == CSHM_RS_CMA) {
        off   = op->rank * op->total;
        bytes = op->total;
    } else {
        part_of(op, op->rank, &off, &bytes);
        out = off;
    }
    if (bytes > 0 && s->cma_tmp == NULL) {
        s->cma_tmp = malloc(2 * CMA_CHUNK);
        if (s->cma_tmp == NULL) {
            cshm_log(PAMI_PROTOCOL_LOG_WARN, "%s: no memory for the fold: "
                     "PAMI_INVAL here", kind_name(op->kind));
            return PAMI_INVAL;
        }
    }
    size_t step = CMA_CHUNK / op->es * op->es;
    for (size_t a = 0; a < bytes; a += step) {
        size_t c = bytes - a < step ? bytes - a : step;
        pami_result_t rc = fold_chunk(s, p, off + a, c, out + a);
        if (rc != PAMI_SUCCESS)
            return rc;
    }
    return PAMI_SUCCESS;
}

static pami_result_t allreduce_gather(cshm_t *s, uint32_t p)
{
    cshm_op_t *op = &s->op;
    for (size_t j = 0; j < op->n; j++) {
        size_t off, bytes;
        part_of(op, j, &off, &bytes);
        if (j == op->rank || bytes == 0)
            continue;
        const cma_line_t *l = peer_line(s, j, p);
        if (l == NULL)
            return PAMI_INVAL;
        if (atomic_load_explicit(&l->folded, memory_order_acquire) == 0) {
            cshm_log(PAMI_PROTOCOL_LOG_WARN, "allreduce_shm_cma: rank %zu "
                     "could not fold its part: PAMI_INVAL here", j);
            return PAMI_INVAL;
        }
        pami_result_t rc = cma_get(s, j, l, op->out + off, l->out + off,
                                   bytes);
        if (rc != PAMI_SUCCESS)
            return rc;
    }
    return PAMI_SUCCESS;
}

/* Allgather: every other task's block read into this task's output;
 * its own copied (in place it is there already). */
static pami_result_t gather_blocks(cshm_t *s, uint32_t p)
{
    cshm_op_t *op = &s->op;
    size_t m = op->total;
    for (size_t j = 0; j < op->n; j++) {
        unsigned char *dst = op->out + j * m;
        if (j == op->rank) {
            if (!op->in_place)
                memcpy(dst, op->in, m);
            continue;
        }
        const cma_line_t *l = peer_line(s, j, p);
        if (l == NULL)
            return PAMI_INVAL;
        pami_result_t rc = cma_get(s, j, l, dst, l->in, m);
        if (rc != PAMI_SUCCESS)
            return rc;
    }
    return PAMI_SUCCESS;
}

/* After barrier `stage + 1` of the call (see the top); true when a
 * further barrier follows. */
bool cshm_cma_step(cshm_t *s, uint32_t p, bool ghost)
{
    cshm_op_t *op = &s->op;
    if (op->kind == CSHM_AG_CMA) {
        if (op->stage == 0 && !ghost)
            op->cma_rc = gather_blocks(s, p);
        return op->stage++ == 0;
    }
    if (op->kind == CSHM_RS_CMA) {
        if (op->stage == 0 && !ghost)
            op->cma_rc = fold_mine(s, p);
        return op->stage++ == 0;
    }
    if (op->stage == 0) {
        if (!ghost) {
            op->cma_rc = fold_mine(s, p);
            if (op->cma_rc == PAMI_SUCCESS)
                atomic_store_explicit(&line_of(s, s->my_index, p)->folded, 1,
                                      memory_order_release);
        }
    } else if (op->stage == 1) {
        if (!ghost && op->cma_rc == PAMI_SUCCESS)
            op->cma_rc = allreduce_gather(s, p);
    }
    return op->stage++ < 2;
}

/* The registry's check: shm's, and reads of the others allowed. */
pami_result_t coll_shm_cma_any_check(const pami_xfer_t *x)
{
    if (coll_shm_check(x) != PAMI_SUCCESS)
        return PAMI_INVAL;
    cshm_t *s = cshm_of_cc(x->geometry->cc);
    return s != NULL && s->cma_ok ? PAMI_SUCCESS : PAMI_INVAL;
}

/* reduce_scatter_shm_cma: not in place (the output is the input's first
 * block, which rank 0 reads while this task writes it). */
pami_result_t coll_shm_cma_rs_check(const pami_xfer_t *x)
{
    if (coll_shm_cma_any_check(x) != PAMI_SUCCESS ||
        (const void *)x->sbuf == (const void *)PAMI_IN_PLACE)
        return PAMI_INVAL;
    return PAMI_SUCCESS;
}
