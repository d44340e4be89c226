/*
 * rma_help: large puts and gets to a task of this node, whose upper part
 * the owner is offered to copy (docs/protocols/rma.md, "Two cores on a
 * large put or get"). White-box only to read the two counters of the
 * offer (parts an owner copied, parts an origin took back).
 *
 * Task 0 owns a region with a slice per other task; each other task, with
 * S = PAMI_CMA_SPLIT (2 MiB when unset):
 *  - puts S, S + 5 at offset 3, 2S - 1 at offset S + 4097 and the whole
 *    slice (6 S), one at a time, each followed by a get of the whole
 *    slice that must equal what was put so far, byte for byte;
 *  - then five puts of S + 1 in flight at once (more than the offers a
 *    context keeps open: a fifth that finds them all taken copies
 *    alone), then five gets of the same ranges in flight, checked.
 * Every callback runs exactly once, never inside its call, with
 * PAMI_SUCCESS.
 *
 *  poll  task 0 waits in pami_context_wait meanwhile (it may copy parts).
 *  busy  task 0 makes no pami call until every other task is through (a
 *        file per task in /tmp says so): every part must have been taken
 *        back by its origin, and afterwards, when task 0 finally reads
 *        the offers, it must claim none of them.
 *
 *   pamirun -n N rma_help poll|busy     (N >= 2)
 */
#include "rma_util.h"

#include "internal.h"

#define NA 4 /* one at a time */
#define NB 5 /* in flight together */

static mp_job_t job;
static size_t   split;

static void issue(bool put, const pami_memregion_t *mr, void *local,
                  size_t bytes, size_t off, cb_count_t *op)
{
    pami_rma_t p = {.dest = mp_ep(&job, 0, 0), .local = local,
                    .bytes = bytes, .remote_mr = mr, .remote_offset = off,
                    .local_fn = cb_count_local,
                    .remote_fn = put ? cb_count_remote : NULL, .cookie = op};
    op->in_call = true;
    pami_result_t rc = put ? pami_put(job.ctx[0], &p)
                           : pami_get(job.ctx[0], &p);
    op->in_call = false;
    MP_EXPECT(rc == PAMI_SUCCESS, "%s: %s", op->what, pami_error_text(rc));
}

static void compare(const uint8_t *got, const uint8_t *want, size_t off,
                    size_t len, const char *what)
{
    for (size_t i = off; i < off + len; i++)
        MP_EXPECT(got[i] == want[i], "%s: byte %zu of the slice is 0x%02x, "
                  "expected 0x%02x", what, i, got[i], want[i]);
}

static void origin(const pami_memregion_t *mr, size_t slice, bool busy)
{
    size_t   base   = slice * (job.me - 1);
    uint8_t *src    = rma_alloc(slice);
    uint8_t *back   = rma_alloc(slice);
    uint8_t *shadow = rma_alloc(slice);
    memset(shadow, 0, slice);
    char what[96];

    const size_t a_off[NA] = {0, 3, split + 4097, 0};
    const size_t a_len[NA] = {split, split + 5, 2 * split - 1, slice};
    for (int i = 0; i < NA; i++) {
        uint64_t seed = rma_seed(job.me, (uint32_t)i);
        rma_fill(src, base + a_off[i], a_len[i], seed);
        snprintf(what, sizeof(what), "put %d of %zu bytes at %zu", i,
                 a_len[i], a_off[i]);
        RMA_PUT_OK(&job, 0, src, a_len[i], mr, base + a_off[i], "%s", what);
        memcpy(shadow + a_off[i], src, a_len[i]);
        memset(back, 0xee, slice);
        RMA_GET_OK(&job, 0, back, slice, mr, base, "get after put %d", i);
        snprintf(what, sizeof(what), "slice after put %d", i);
        compare(back, shadow, 0, slice, what);
    }

    cb_count_t puts[NB] = {{0}}, gets[NB] = {{0}};
    size_t   len      = split + 1;
    for (int k = 0; k < NB; k++) {
        rma_fill(src + k * len, base + k * len, len,
                 rma_seed(job.me, 100 + (uint32_t)k));
        puts[k].what = "put in flight";
        issue(true, mr, src + k * len, len, base + k * len, &puts[k]);
    }
    for (int k = 0; k < NB; k++)
        rma_op_wait(&job, &puts[k], true, true);
    memcpy(shadow, src, NB * len);
    memset(back, 0xee, slice);
    for (int k = 0; k < NB; k++) {
        gets[k].what = "get in flight";
        issue(false, mr, back + k * len, len, base + k * len, &gets[k]);
    }
    for (int k = 0; k < NB; k++)
        rma_op_wait(&job, &gets[k], true, false);
    compare(back, shadow, 0, NB * len, "ranges got in flight");

    struct pami_context *c = job.ctx[0];
    /* Under busy each offer comes back within its call, so every one of
     * the 2 NA + 2 NB operations finds a free slot and is offered, but
     * the client's first CMA call, which moves alone (rma.md). */
    size_t offered = 2 * NA + 2 * NB - 1;
    printf("rma_help: task %u: %llu parts taken back\n", job.me,
           (unsigned long long)c->help_taken_back);
    MP_EXPECT(c->help_served == 0, "task %u copied %llu parts for others",
              job.me, (unsigned long long)c->help_served);
    if (busy)
        MP_EXPECT(c->help_taken_back == offered, "the owner made no call, "
                  "yet only %llu of %zu parts came back",
                  (unsigned long long)c->help_taken_back, offered);
    MP_EXPECT(c->help_posted == 0, "%u offers still open", c->help_posted);
    free(src);
    free(back);
    free(shadow);
}

int main(int argc, char **argv)
{
    MP_EXPECT(argc == 2 && (strcmp(argv[1], "poll") == 0 ||
                            strcmp(argv[1], "busy") == 0),
              "usage: rma_help poll|busy");
    bool busy = strcmp(argv[1], "busy") == 0;
    mp_init(&job, "rma_help", &argc, argv, NULL, 1, false);
    MP_EXPECT(job.size >= 2, "needs 2 tasks or more");
    const char *s = getenv("PAMI_CMA_SPLIT");
    split = s != NULL ? strtoul(s, NULL, 10) : (size_t)2 << 20;
    MP_EXPECT(split >= 8192, "PAMI_CMA_SPLIT=%zu: the test needs 8192 or "
              "more", split);
    rma_xchg_init(&job);
    MP_CHECK(pami_dispatch_fence(job.client));

    size_t slice = 6 * split;
    size_t total = slice * (job.size - 1);
    rma_to0_t r;
    rma_to0_init(&job, total, &r);

    if (job.me != 0) {
        origin(&r.owner[0], slice, busy);
        if (busy)
            rma_busy_done(&job, "rma_help");
    } else if (busy) {
        rma_busy_wait(&job, "rma_help");
    }
    mp_sync(&job);
    if (job.me == 0) {
        /* The late offers all find their token gone. */
        MP_EXPECT(!busy || job.ctx[0]->help_served == 0,
                  "task 0 claimed %llu parts its origins had taken back",
                  (unsigned long long)job.ctx[0]->help_served);
        printf("rma_help: task 0 copied %llu parts\n",
               (unsigned long long)job.ctx[0]->help_served);
    }
    mp_sync(&job);
    rma_to0_fini(&job, &r);
    mp_finish(&job);
    return 0;
}
