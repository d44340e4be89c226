/*
 * Flag rounds of allgather_shm and alltoall_shm whose data is in lines
 * that carry their own number (docs/collectives.md, "Lines with their
 * number"). Above the 48 bytes a control line holds, a flag round's
 * reader first waited for the writer's control line, and only then took
 * the data from the writer's slot: two cache misses one after the other
 * per round. Here the data goes into an area of each task and parity
 * (CSHM_LL_BYTES, after the ring), in lines of CSHM_LL_DATA bytes, each
 * with the round's number and the call's signature; a blocking reader
 * polls the lines themselves, so the line that tells it the data is
 * there is the data.
 *
 * The control line is still numbered, after the lines, as in every flag
 * round: a member whose call differs, a poison round, a sleeper, the
 * queued call and a task that waited too long all go by the control
 * lines as before, and once every control line shows the round, every
 * member's lines are written (a line of another number then is a
 * corrupt segment). Only these rounds write the areas, so a line that
 * shows round k + 1 was written by round k of its task; its signature
 * says of which call. The parity argument of coll_alg_shm.c holds as
 * for the slots: a task writes its lines of round k only after its
 * reads of round k - 1, and a reader that saw every other task's lines
 * of round k (allgather: all of them; alltoall: its slice of each) saw
 * every task start round k.
 */
#include <string.h>

#include "coll_shm.h"

/* One line: its number, the call's signature, CSHM_LL_DATA bytes. */
typedef struct {
    _Atomic uint64_t seq; /* the round's number + 1 */
    uint32_t         sig;
    unsigned char    data[CSHM_LL_DATA];
} ll_line_t;

_Static_assert(sizeof(ll_line_t) == CSHM_LINE, "one cache line");

static ll_line_t *ll_line(const cshm_t *s, size_t i, uint32_t p, size_t l)
{
    return (ll_line_t *)cshm_ll_area(s, i, p) + l;
}

static size_t lines_for(size_t bytes)
{
    return (bytes + CSHM_LL_DATA - 1) / CSHM_LL_DATA;
}

bool cshm_ll_fits(const cshm_op_t *op)
{
    if (!op->flag || op->tiny || op->total > op->chunk || op->total == 0 ||
        (op->kind != CSHM_ALLGATHER && op->kind != CSHM_ALLTOALL))
        return false;
    size_t per = op->kind == CSHM_ALLTOALL ? op->n : 1;
    return op->total * per <= CSHM_LL_MAX &&
           lines_for(op->total) <= CSHM_LL_LINES / per;
}

/* bytes of src into lines [first, ...) of this task's area, numbered. */
static void put_lines(cshm_t *s, uint32_t p, size_t first,
                      const unsigned char *src, size_t bytes, bool ghost)
{
    uint64_t   k1 = s->phase + 1;
    ll_line_t *d  = ll_line(s, s->my_index, p, first);
    for (size_t at = 0; at < bytes; at += CSHM_LL_DATA, d++) {
        /* A whole line's copy of a constant size is inlined. */
        if (ghost) /* a ghost numbers its lines, as it takes part */
            ;
        else if (bytes - at >= CSHM_LL_DATA)
            memcpy(d->data, src + at, CSHM_LL_DATA);
        else
            memcpy(d->data, src + at, bytes - at);
        d->sig = s->op.sig;
        atomic_store_explicit(&d->seq, k1, memory_order_release);
    }
}

void cshm_ll_write(cshm_t *s, uint32_t p, bool ghost)
{
    cshm_op_t *op = &s->op;
    if (op->kind == CSHM_ALLGATHER) {
        put_lines(s, p, 0, op->in, op->total, ghost);
        return;
    }
    size_t per = lines_for(op->total);
    for (size_t j = 0; j < op->n; j++)
        if (j != op->rank) /* its own block goes from input to output */
            put_lines(s, p, j * per, op->in + j * op->total, op->total,
                      ghost);
}

/* Where read_lines stopped: rank r's line l. */
typedef struct {
    size_t r, l;
} ll_cur_t;

/* Copies the other ranks' lines of round p (alltoall: this rank's block
 * of each) from where *c stopped: 1 all copied, 0 a line not numbered
 * yet (*c is it), -1 a line of another call or round. */
static int read_lines(cshm_t *s, uint32_t p, ll_cur_t *c)
{
    const cshm_op_t *op = &s->op;
    size_t   m = op->total, per = lines_for(m),
             first = op->kind == CSHM_ALLTOALL ? op->rank * per : 0;
    uint64_t k1 = s->phase + 1;
    for (; c->r < op->n; c->r++, c->l = 0) {
        if (c->r == op->rank)
            continue;
        const ll_line_t *src = ll_line(s, s->idx[c->r], p, first);
        unsigned char   *dst = op->out + c->r * m;
        for (; c->l < per; c->l++) {
            const ll_line_t *ln = src + c->l;
            uint64_t seq = atomic_load_explicit(&ln->seq,
                                                memory_order_acquire);
            if (seq != k1)
                return cshm_line_state(seq, k1) == 0 ? 0 : -1;
            if (ln->sig != op->sig)
                return -1;
            size_t at = c->l * CSHM_LL_DATA;
            if (m - at >= CSHM_LL_DATA)
                memcpy(dst + at, ln->data, CSHM_LL_DATA);
            else
                memcpy(dst + at, ln->data, m - at);
        }
    }
    return 1;
}

/* This task's own block: from its input (in place: there already). */
static void own_block(cshm_op_t *op)
{
    size_t at = op->rank * op->total;
    if (op->in_place)
        return;
    memcpy(op->out + at, op->kind == CSHM_ALLGATHER ? op->in : op->in + at,
           op->total);
}

pami_result_t cshm_ll_read(cshm_t *s, uint32_t p)
{
    ll_cur_t cur = {0, 0};
    if (read_lines(s, p, &cur) != 1) {
        cshm_count(s, CSHM_STAT_segment_bad);
        cshm_log(PAMI_PROTOCOL_LOG_WARN, "round %llu: a data line differs "
                 "from the control lines: shared-memory collectives fail "
                 "from now on", (unsigned long long)s->phase);
        return PAMI_ERROR;
    }
    own_block(&s->op);
    return PAMI_SUCCESS;
}

/* The blocking call polls the lines instead of the control lines, for
 * as long as it would have polled those (spin_cur), and looks at the
 * control lines every 64 polls: once they all show the round (or one is
 * ahead), the lines say nothing more (a member's call differs, or it
 * ran a poison round) and the ordinary wait, which returns at once,
 * decides (-1). Each look at a control line takes it from its writer,
 * so the fast case reads none. 0: the poll is spent (the ordinary wait
 * goes on to its sleeps: polling longer than it would keeps the task
 * waited for from a CPU it may share). */
int cshm_ll_fast(cshm_t *s)
{
    uint32_t p = s->phase & 1;
    ll_cur_t cur = {0, 0};
    uint64_t start = 0;
    for (unsigned i = 1;; i++) {
        int st = read_lines(s, p, &cur);
        if (st == 1)
            break;
        if (st < 0)
            return -1;
        pami_protocol_cpu_relax();
        if ((i & 63) == 0) {
            if (cshm_flags_at(s, s->phase + 1) != 0)
                return -1;
            uint64_t now = cshm_now_ns();
            if (start == 0)
                start = now;
            else if (now - start >= s->spin_cur)
                return 0;
        }
    }
    own_block(&s->op);
    s->op.ll_read = true;
    /* As flag_wait_inline after a wait that did not sleep. */
    if (s->spin_cur < s->spin_ns)
        s->spin_cur = s->spin_cur * 2 < s->spin_ns ? s->spin_cur * 2
                                                   : s->spin_ns;
    return 1;
}
