/*
 * rma_fence: what a fence promises, seen by a third task.
 *
 * Task 0 writes, task 1 holds a region of 4 MiB + 8, task 2 checks (other
 * tasks only take part in the barriers). For each round task 0 fills its
 * source with the round's pattern and, without waiting for anything, puts
 * it into task 1's region in chunks of very different sizes (1 byte to
 * 1.5 MiB) and adds 1 to the counter behind it with PAMI_RMW_ADD; then it
 * calls pami_fence_endpoint(task 1) (mode "endpoint") or pami_fence_all
 * (mode "all", where it also puts a pattern into task 2's region and adds
 * to a counter there). From the fence callback it sends a message to task
 * 2. On that message task 2 gets task 1's whole region and must see every
 * byte of this round and the counter at round + 1 (mode "all": its own
 * region must hold the round's pattern too), then answers task 0, which
 * starts the next round.
 *
 * Also: the fence callback runs exactly once, never inside the call, with
 * PAMI_SUCCESS; a fence with nothing outstanding still calls back; a fence
 * to PAMI_ENDPOINT_NULL is PAMI_INVAL and never calls back.
 *
 *   pamirun -n N rma_fence [endpoint|all] [rounds]     (N >= 3)
 */
#include "rma_util.h"

enum { ID_GO = 30, ID_ACK = 31, ID_DONE = 32 };

#define HOLD  (4u << 20)       /* task 1's pattern area; counter behind it */
#define CHECK (1u << 20)       /* task 2's pattern area; counter behind it */

static mp_job_t          job;
static bool              fence_all;
static unsigned          rounds = 30;
static uint8_t          *region;
static size_t            R;
static pami_memregion_t  my_mr;
static pami_memregion_t *mrs;

static unsigned go_round = ~0u;   /* task 2: last go message */
static unsigned acked    = ~0u;   /* task 0: last answer */
static bool     done_msg;         /* everyone else: task 2 is through */
static unsigned puts_done, rmws_done, fences_done, fences_issued;
static bool     in_call;

static void on_go(pami_context_t ctx, void *cookie, const void *hdr,
                  size_t hlen, const void *data, size_t dlen,
                  pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)data; (void)dlen; (void)origin; (void)recv;
    unsigned r;
    MP_EXPECT(hlen == sizeof(r), "message with a %zu-byte header", hlen);
    memcpy(&r, hdr, sizeof(r));
    switch ((int)(intptr_t)cookie) {
    case ID_GO:   go_round = r; break;
    case ID_ACK:  acked = r; break;
    default:      done_msg = true; break;
    }
}

static void send_small(pami_context_t ctx, pami_task_t to, size_t id,
                       unsigned r, bool in_callback)
{
    pami_send_immediate_t s = {.dest = mp_ep(&job, to, 0), .dispatch = id,
                               .header = &r, .header_len = sizeof(r)};
    if (in_callback)
        mp_send_imm_in_handler(ctx, &s);
    else
        mp_send_imm(&job, ctx, &s);
}

static void on_put(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    MP_EXPECT(!in_call, "put local_fn ran inside the call");
    MP_EXPECT(rc == PAMI_SUCCESS, "put: %s", pami_error_text(rc));
    puts_done++;
}

static void on_rmw(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    MP_EXPECT(!in_call, "rmw done_fn ran inside the call");
    MP_EXPECT(rc == PAMI_SUCCESS, "rmw: %s", pami_error_text(rc));
    rmws_done++;
}

static void on_fence(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    unsigned r = (unsigned)(uintptr_t)cookie;
    MP_EXPECT(!in_call, "fence callback ran inside the call");
    MP_EXPECT(rc == PAMI_SUCCESS, "fence of round %u: %s", r,
              pami_error_text(rc));
    MP_EXPECT(fences_done + 1 == fences_issued,
              "fence callback of round %u: %u callbacks for %u fences", r,
              fences_done + 1, fences_issued);
    fences_done++;
    if (r != ~0u)
        send_small(ctx, 2, ID_GO, r, true);
}

static const size_t chunks[] = {1, 7, 8, 4096, 65536 + 3, 300000, 1572864,
                                13, 65536, 1000000, 64};

/* Puts [0, len) of src to (dest, mr) in chunks, without waiting. */
static unsigned put_chunks(pami_task_t dest, const uint8_t *src, size_t len,
                           size_t salt)
{
    pami_context_t ctx = job.ctx[0];
    unsigned       n   = 0;
    for (size_t off = 0, i = salt; off < len; i++) {
        size_t c = chunks[i % (sizeof(chunks) / sizeof(chunks[0]))];
        if (c > len - off)
            c = len - off;
        pami_rma_t p = {.dest = mp_ep(&job, dest, 0),
                        .local = (void *)(src + off),
                        .bytes = c, .remote_mr = &mrs[dest],
                        .remote_offset = off, .local_fn = on_put};
        in_call = true;
        MP_CHECK(pami_put(ctx, &p));
        in_call = false;
        off += c;
        n++;
    }
    return n;
}

static void add_counter(pami_task_t dest, size_t off)
{
    pami_rmw_t r = {.dest = mp_ep(&job, dest, 0), .remote_mr = &mrs[dest],
                    .remote_offset = off, .op = PAMI_RMW_ADD, .size = 8,
                    .value = 1, .done_fn = on_rmw};
    in_call = true;
    MP_CHECK(pami_rmw(job.ctx[0], &r));
    in_call = false;
}

static void fence(pami_task_t dest, unsigned r)
{
    pami_context_t ctx = job.ctx[0];
    fences_issued++;
    in_call = true;
    pami_result_t rc = dest == ~0u
        ? pami_fence_all(ctx, on_fence, (void *)(uintptr_t)r)
        : pami_fence_endpoint(ctx, mp_ep(&job, dest, 0), on_fence,
                              (void *)(uintptr_t)r);
    in_call = false;
    MP_EXPECT(rc == PAMI_SUCCESS, "fence: %s", pami_error_text(rc));
}

static void writer(void)
{
    pami_context_t ctx = job.ctx[0];
    uint8_t       *src  = rma_alloc(HOLD);
    uint8_t       *src2 = rma_alloc(CHECK);
    unsigned       puts = 0, rmws = 0;
    for (unsigned r = 0; r < rounds; r++) {
        rma_fill(src, 0, HOLD, rma_seed(0, r));
        puts += put_chunks(1, src, HOLD, r);
        add_counter(1, HOLD);
        rmws++;
        if (fence_all) {
            rma_fill(src2, 0, CHECK, rma_seed(0, 1000 + r));
            puts += put_chunks(2, src2, CHECK, r + 3);
            add_counter(2, CHECK);
            rmws++;
        }
        fence(fence_all ? ~0u : 1, r);
        MP_WAIT(&job, ctx, acked == r && puts_done == puts &&
                               rmws_done == rmws && fences_done == r + 1,
                MP_WAIT_S, "round %u: answer %d, %u of %u puts, %u of %u "
                "rmws, %u fences", r, (int)acked, puts_done, puts, rmws_done,
                rmws, fences_done);
    }
    /* Nothing outstanding: the callback still comes, once. */
    fence(1, ~0u);
    MP_WAIT(&job, ctx, fences_done == rounds + 1, MP_WAIT_S, "idle fence");
    fence(~0u, ~0u);
    MP_WAIT(&job, ctx, fences_done == rounds + 2, MP_WAIT_S,
            "idle fence_all");
    cb_count_t op = {.what = "fence to PAMI_ENDPOINT_NULL"};
    MP_CHECK_RC(pami_fence_endpoint(ctx, PAMI_ENDPOINT_NULL, cb_count_local,
                                    &op), PAMI_INVAL);
    rma_op_none(&job, &op);
    for (int i = 0; i < 4; i++)
        pami_context_advance(ctx, 8);
    MP_EXPECT(fences_done == rounds + 2, "%u fence callbacks for %u fences",
              fences_done, rounds + 2);
    printf("%s: %u rounds, %u puts and %u rmws fenced\n",
           fence_all ? "fence_all" : "fence_endpoint", rounds, puts, rmws);
    free(src);
    free(src2);
}

static void checker(void)
{
    pami_context_t ctx = job.ctx[0];
    uint8_t       *buf = rma_alloc(HOLD + 8);
    for (unsigned r = 0; r < rounds; r++) {
        MP_WAIT(&job, ctx, go_round == r, MP_WAIT_S, "go for round %u", r);
        memset(buf, 0, HOLD + 8);
        RMA_GET_OK(&job, 1, buf, HOLD + 8, &mrs[1], 0,
                   "get of task 1's region in round %u", r);
        long bad = rma_check(buf, 0, HOLD, rma_seed(0, r));
        if (bad >= 0) {
            uint8_t prev = r ? rma_byte(rma_seed(0, r - 1), (size_t)bad) : 0;
            mp_fail("round %u: after the fence, task 1's region is wrong at "
                    "byte %ld (0x%02x; this round's pattern 0x%02x, the "
                    "last round's 0x%02x)", r, bad, buf[bad],
                    rma_byte(rma_seed(0, r), (size_t)bad), prev);
        }
        uint64_t c;
        memcpy(&c, buf + HOLD, 8);
        MP_EXPECT(c == r + 1u, "round %u: after the fence, task 1's counter "
                  "is %llu", r, (unsigned long long)c);
        if (fence_all) {
            bad = rma_check(region, 0, CHECK, rma_seed(0, 1000 + r));
            MP_EXPECT(bad < 0, "round %u: after fence_all, my region is "
                      "wrong at byte %ld", r, bad);
            uint64_t c2;
            __atomic_load((uint64_t *)(region + CHECK), &c2, __ATOMIC_SEQ_CST);
            MP_EXPECT(c2 == r + 1u, "round %u: after fence_all, my counter "
                      "is %llu", r, (unsigned long long)c2);
        }
        send_small(ctx, 0, ID_ACK, r, false);
    }
    for (size_t t = 0; t < job.size; t++)
        if (t != 2)
            send_small(ctx, (pami_task_t)t, ID_DONE, 0, false);
    free(buf);
}

int main(int argc, char **argv)
{
    mp_init(&job, "rma_fence", &argc, argv, NULL, 1, false);
    const char *mode = argc > 1 ? argv[1] : "endpoint";
    fence_all = strcmp(mode, "all") == 0;
    MP_EXPECT(fence_all || strcmp(mode, "endpoint") == 0, "unknown mode "
              "'%s'", mode);
    if (argc > 2)
        rounds = (unsigned)strtoul(argv[2], NULL, 10);
    MP_EXPECT(job.size >= 3, "needs at least 3 tasks");
    rma_xchg_init(&job);
    for (size_t id = ID_GO; id <= ID_DONE; id++)
        MP_CHECK(pami_dispatch_set(job.ctx[0], id, on_go,
                                   (void *)(intptr_t)id, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));

    R      = job.me == 1 ? HOLD + 8 : job.me == 2 ? CHECK + 8 : 4096;
    region = rma_alloc(R);
    mrs    = rma_alloc(job.size * sizeof(*mrs));
    memset(region, 0, R);
    MP_CHECK(pami_memregion_create(job.ctx[0], region, R, &my_mr));
    rma_exchange(&job, &my_mr, region, R, mrs);

    if (job.me == 0)
        writer();
    else if (job.me == 2)
        checker();
    if (job.me != 2)
        MP_WAIT(&job, job.ctx[0], done_msg, 4 * MP_WAIT_S,
                "task 2 to finish");
    mp_sync(&job);
    MP_CHECK(pami_memregion_destroy(job.ctx[0], &my_mr));
    mp_finish(&job);
    free(region);
    free(mrs);
    return 0;
}
