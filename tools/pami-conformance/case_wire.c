/*
 * Suite protocols, wire cases: each built-in protocol's wire spec against
 * forged packets on its ids (pami_test_send_raw, the installed test
 * header). Every task sends the same set to the next task: packets at and
 * just past each boundary of the spec (one byte short, one byte long,
 * data where none belongs, a wrong version, type or field) and seeded
 * ones that are malformed in the same ways. The receiver must drop each
 * and count it in the counter the spec names; afterwards the same
 * protocol still serves correct traffic between the same tasks. A crash
 * or a hang fails the case like any other.
 */
#include "cf.h"

#include <pami_barrier.h>
#include <pami_collectives.h>
#include <pami_protocol.h>
#include <pami_svd.h>
#include <pami_test.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define WIRE_MAX_COUNTERS 8
#define WIRE_SEEDED       16  /* seeded packets per rule */
#define WIRE_HDR_MAX      400 /* above every built-in header */

/* What this task expects its own counters to show after the next task
 * sent it the same packets it sent. */
typedef struct {
    cf_env_t       *e;
    const char     *proto;  /* its name; "core": the core's ids */
    size_t          base;   /* the protocol's first id */
    pami_endpoint_t dest;   /* the next task */
    size_t          n;
    const char     *name[WIRE_MAX_COUNTERS];
    uint64_t        before[WIRE_MAX_COUNTERS];
    uint64_t        want[WIRE_MAX_COUNTERS];
    uint64_t        sent;
} wire_t;

/* A protocol's counter by name, or with "core." the context's. */
static uint64_t counter(wire_t *w, const char *name)
{
    if (strncmp(name, "core.", 5) == 0) {
        pami_context_stats_t s;
        if (pami_context_stats(w->e->ctx, &s) != PAMI_SUCCESS)
            return 0;
        return strcmp(name, "core.dropped_unknown") == 0
                   ? s.dropped_unknown : s.dropped_malformed;
    }
    pami_protocol_stat_t st[64];
    size_t n = 0;
    if (pami_protocol_stats(w->e->ctx, w->proto, st, 64, &n) != PAMI_SUCCESS)
        return 0;
    for (size_t i = 0; i < n && i < 64; i++)
        if (strcmp(st[i].name, name) == 0)
            return st[i].value;
    return 0;
}

/* Finds the protocol's block and reads the counters the rules name. */
static int wire_open(wire_t *w, cf_env_t *e, const char *proto,
                     const char *const *names, size_t n)
{
    memset(w, 0, sizeof(*w));
    w->e = e, w->proto = proto, w->n = n;
    if (strcmp(proto, "core") != 0) {
        pami_protocol_info_t info;
        size_t i = 0;
        for (; pami_protocol_query(e->client, i, &info) == PAMI_SUCCESS; i++)
            if (strcmp(info.name, proto) == 0)
                break;
        if (pami_protocol_query(e->client, i, &info) != PAMI_SUCCESS) {
            CF_FAIL(e, "expected the built-in protocol %s, seen none", proto);
            return -1;
        }
        w->base = info.dispatch_base;
    }
    w->dest = cf_ep(e, (pami_task_t)((e->task + 1) % e->size));
    for (size_t i = 0; i < n; i++) {
        w->name[i]   = names[i];
        w->before[i] = counter(w, names[i]);
    }
    /* Nobody sends before every task read its counters. */
    pami_result_t rc = pami_dispatch_fence(e->client);
    if (rc != PAMI_SUCCESS) {
        CF_FAIL(e, "expected the fence before the packets to succeed, seen %s",
                cf_rc_name(rc));
        return -1;
    }
    return 0;
}

/* One forged packet on id base + off, to be counted in `expect`. */
static void forge(wire_t *w, size_t off, const void *hdr, size_t hlen,
                  const void *data, size_t dlen, const char *expect)
{
    pami_send_immediate_t s = {.dest = w->dest, .dispatch = w->base + off,
                               .header = hdr, .header_len = hlen,
                               .data = data, .data_len = dlen};
    pami_result_t rc = cf_send_raw(w->e, &s);
    if (rc != PAMI_SUCCESS) {
        CF_FAIL(w->e, "expected a forged packet on id %zu (%zu + %zu bytes) "
                "to be sent, seen %s", w->base + off, hlen, dlen,
                cf_rc_name(rc));
        return;
    }
    w->sent++;
    for (size_t i = 0; i < w->n; i++)
        if (expect != NULL && strcmp(w->name[i], expect) == 0)
            w->want[i]++;
}

/* The same packet with bytes from the seed, then fix(...) bytes kept. */
static void seeded(wire_t *w, uint8_t *buf, size_t len, uint64_t rule)
{
    cf_fill(buf, len, w->e->seed, rule, w->e->task);
}

/* Waits until every counter rose by what was sent, and says which did
 * not; then the caller checks the protocol still works. */
static int wire_check(wire_t *w)
{
    cf_env_t *e = w->e;
    pami_result_t rc = pami_dispatch_fence(e->client);
    if (rc != PAMI_SUCCESS) {
        CF_FAIL(e, "expected the fence after the packets to succeed, seen %s",
                cf_rc_name(rc));
        return -1;
    }
    for (;;) {
        size_t short_of = w->n;
        for (size_t i = 0; i < w->n && short_of == w->n; i++)
            if (counter(w, w->name[i]) - w->before[i] < w->want[i])
                short_of = i;
        if (short_of == w->n)
            return 0;
        if (cf_now() > e->deadline) {
            CF_FAIL(e, "expected %s counter %s to rise by %llu after %llu "
                    "forged packets, seen %llu", w->proto, w->name[short_of],
                    (unsigned long long)w->want[short_of],
                    (unsigned long long)w->sent,
                    (unsigned long long)(counter(w, w->name[short_of]) -
                                         w->before[short_of]));
            return -1;
        }
        pami_context_wait(e->ctx, 10);
    }
}

/* ------------------------------------------------------------------------ */
/* barrier_packets: one id, a 24-byte header (barrier-packets.md)            */
/* ------------------------------------------------------------------------ */

static void arrive(uint8_t p[24], uint8_t version, uint8_t type,
                   uint16_t reserved0, uint32_t size)
{
    memset(p, 0, 24);
    p[0] = version, p[1] = type;
    memcpy(p + 2, &reserved0, 2);
    memcpy(p + 4, &size, 4);
}

static void wire_barrier_packets(cf_env_t *e)
{
    static const char *const names[] = {
        "dropped_short", "dropped_long", "dropped_version", "dropped_type",
        "dropped_field"};
    wire_t w;
    if (wire_open(&w, e, "barrier_packets", names, 5) != 0)
        return;
    uint8_t p[WIRE_HDR_MAX], one = 1;
    arrive(p, 1, 1, 0, (uint32_t)e->size);
    forge(&w, 0, NULL, 0, NULL, 0, "dropped_short");
    forge(&w, 0, p, 23, NULL, 0, "dropped_short");
    forge(&w, 0, p, 25, NULL, 0, "dropped_long");
    forge(&w, 0, p, 24, &one, 1, "dropped_long");
    arrive(p, 2, 1, 0, (uint32_t)e->size);
    forge(&w, 0, p, 24, NULL, 0, "dropped_version");
    arrive(p, 1, 2, 0, (uint32_t)e->size);
    forge(&w, 0, p, 24, NULL, 0, "dropped_type");
    arrive(p, 1, 1, 1, (uint32_t)e->size);
    forge(&w, 0, p, 24, NULL, 0, "dropped_field");
    arrive(p, 1, 1, 0, 1); /* size below 2 */
    forge(&w, 0, p, 24, NULL, 0, "dropped_field");
    arrive(p, 1, 1, 0, (uint32_t)e->size + 1); /* above the job */
    forge(&w, 0, p, 24, NULL, 0, "dropped_field");
    for (uint64_t i = 0; i < WIRE_SEEDED; i++) {
        seeded(&w, p, sizeof(p), i);
        forge(&w, 0, p, p[0] % 24, NULL, 0, "dropped_short");
        seeded(&w, p, sizeof(p), 100 + i);
        p[0] = (uint8_t)(2 + p[0] % 250); /* any version but 1 */
        forge(&w, 0, p, 24, NULL, 0, "dropped_version");
    }
    if (wire_check(&w) != 0)
        return;
    for (int i = 0; i < 3; i++)
        CF_OK(e, pami_barrier_wait(e->ctx, PAMI_BARRIER_PACKETS, NULL, 0));
}

/* ------------------------------------------------------------------------ */
/* shm_barrier: the hierarchical barrier's announcement, 16 bytes            */
/* ------------------------------------------------------------------------ */

static void announce(uint8_t p[16], uint8_t version, uint8_t type,
                     uint16_t reserved, uint32_t leader, uint32_t ntasks)
{
    memset(p, 0, 16);
    p[0] = version, p[1] = type;
    memcpy(p + 2, &reserved, 2);
    memcpy(p + 4, &leader, 4);
    memcpy(p + 8, &ntasks, 4);
}

static void wire_shm_barrier(cf_env_t *e)
{
    /* On one node the announcement's id has no handler (there is nothing
     * between nodes): the core drops its packets as unknown. */
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_LOCAL_TASKS |
                                          PAMI_CLIENT_ATTR_SIZE};
    CF_OK(e, pami_client_query(e->client, &a));
    const char *drop = a.num_local_tasks == a.size ? "core.dropped_unknown"
                                                   : "bad_packets";
    const char *const names[] = {drop};
    wire_t w;
    if (wire_open(&w, e, "shm_barrier", names, 1) != 0)
        return;
    uint8_t p[WIRE_HDR_MAX], one = 1;
    uint32_t me = e->task;
    announce(p, 1, 1, 0, me, 1);
    forge(&w, 0, NULL, 0, NULL, 0, drop);
    forge(&w, 0, p, 15, NULL, 0, drop);
    forge(&w, 0, p, 17, NULL, 0, drop);
    forge(&w, 0, p, 16, &one, 1, drop);
    announce(p, 2, 1, 0, me, 1);
    forge(&w, 0, p, 16, NULL, 0, drop);
    announce(p, 1, 2, 0, me, 1);
    forge(&w, 0, p, 16, NULL, 0, drop);
    announce(p, 1, 1, 7, me, 1);
    forge(&w, 0, p, 16, NULL, 0, drop);
    /* leader not the origin's task */
    announce(p, 1, 1, 0, (uint32_t)((e->task + 1) % e->size), 1);
    forge(&w, 0, p, 16, NULL, 0, drop);
    for (uint64_t i = 0; i < WIRE_SEEDED; i++) {
        seeded(&w, p, sizeof(p), i);
        forge(&w, 0, p, p[0] % 16, NULL, 0, drop);
    }
    if (wire_check(&w) != 0)
        return;
    for (int i = 0; i < 3; i++)
        CF_OK(e, pami_barrier_wait(e->ctx, PAMI_BARRIER_HIER, NULL, 0));
}

/* ------------------------------------------------------------------------ */
/* shm_barrier: a forged region where the leader will create its own         */
/* ------------------------------------------------------------------------ */

static void wire_shm_register(cf_env_t *e)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_LOCAL_TASKS};
    CF_OK(e, pami_client_query(e->client, &a));
    if (a.num_local_tasks < 2)
        return; /* "With one task on the node nothing is created." */
    pami_protocol_job_key_t key;
    CF_OK(e, pami_protocol_job_key(e->client, &key));
    char name[128];
    snprintf(name, sizeof(name), "/pami-%s-shmbar-%u-0", key.name,
             a.local_tasks[0]);
    wire_t w;
    static const char *const names[] = {"bad_region"};
    if (wire_open(&w, e, "shm_barrier", names, 1) != 0)
        return;
    int leader = e->task == a.local_tasks[0];
    int made   = 0;
    if (leader) {
        /* Ten bytes of garbage: under the region's 192-byte header. */
        int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd >= 0) {
            uint8_t junk[10];
            cf_fill(junk, sizeof(junk), e->seed, 1, 2);
            made = write(fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk);
            close(fd);
        }
    }
    /* Nobody starts the barrier before the forged object is there. */
    int  flag = made;
    int *all  = calloc(e->size, sizeof(int));
    CF_CHECK(e, all != NULL && cf_allgather(&flag, all, sizeof(flag)) == 0,
             "expected the runner's exchange to work");
    free(all);
    CF_CHECK(e, !leader || made, "expected to create %s, seen it fail", name);
    pami_result_t rc = pami_barrier_wait(e->ctx, PAMI_BARRIER_SHM, NULL, 0);
    /* The object stays until every task looked at it (a follower that
     * finds no region waits for one until its deadline). */
    all = calloc(e->size, sizeof(int));
    int got = cf_allgather(&flag, all, sizeof(flag));
    free(all);
    if (leader)
        shm_unlink(name);
    CF_CHECK(e, got == 0, "expected the runner's exchange to work");
    /* Leader: the name is taken by no region of this job; followers: the
     * object is too short. Both refuse it the same way. */
    CF_CHECK(e, rc == PAMI_ERROR, "expected the shm barrier to fail with "
             "PAMI_ERROR on a forged region (shm-barrier.md: \"A refused "
             "object is counted (bad_region ...) and the barrier completes "
             "with PAMI_ERROR\"), seen %s", cf_rc_name(rc));
    CF_CHECK(e, counter(&w, "bad_region") > w.before[0],
             "expected bad_region to rise, seen it stay at %llu",
             (unsigned long long)w.before[0]);
    /* The packet barrier still works; the failed set-up stays failed. */
    CF_OK(e, pami_barrier_wait(e->ctx, PAMI_BARRIER_PACKETS, NULL, 0));
    CF_RC(e, PAMI_ERROR, pami_barrier_wait(e->ctx, PAMI_BARRIER_SHM, NULL, 0));
    CF_OK(e, pami_barrier_wait(e->ctx, PAMI_BARRIER_PACKETS, NULL, 0));
}

/* ------------------------------------------------------------------------ */
/* svd: seven ids, base + type, each with its header size (svd.md)           */
/* ------------------------------------------------------------------------ */

#define SVD_WIRE 2 /* svd.md: "Byte 0 is the wire version (2)" */

static void wire_svd(cf_env_t *e)
{
    static const char *const names[] = {"drop_short", "drop_long",
                                        "drop_version", "drop_type"};
    static const size_t hsize[7] = {32, 288, 16, 320, 24, 32, 24};
    wire_t w;
    if (wire_open(&w, e, "svd", names, 4) != 0)
        return;
    uint8_t p[WIRE_HDR_MAX];
    for (size_t t = 0; t < 7; t++) {
        size_t n = hsize[t];
        memset(p, 0, sizeof(p));
        p[0] = SVD_WIRE, p[1] = (uint8_t)t;
        forge(&w, t, NULL, 0, NULL, 0, "drop_short");
        forge(&w, t, p, n - 1, NULL, 0, "drop_short");
        forge(&w, t, p, n + 1, NULL, 0, "drop_long");
        p[0] = 0xee;
        forge(&w, t, p, n, NULL, 0, "drop_version");
        p[0] = SVD_WIRE, p[1] = (uint8_t)((t + 1) % 7);
        forge(&w, t, p, n, NULL, 0, "drop_type");
        for (uint64_t i = 0; i < WIRE_SEEDED / 4; i++) {
            seeded(&w, p, sizeof(p), t * 100 + i);
            forge(&w, t, p, p[0] % n, NULL, 0, "drop_short");
        }
    }
    if (wire_check(&w) != 0)
        return;
    /* Still serving: register, look up from the next task. */
    static uint64_t var[4];
    char rec[32];
    snprintf(rec, sizeof(rec), "wire %u", e->task);
    pami_svd_register_t reg = {.field_mask = PAMI_SVD_REGISTER_DATA,
                               .key = 4242, .addr = var, .size = sizeof(var),
                               .data = rec, .data_size = strlen(rec) + 1};
    CF_OK(e, pami_svd_register(e->ctx, &reg));
    CF_OK(e, pami_dispatch_fence(e->client));
    pami_task_t owner = (pami_task_t)((e->task + 1) % e->size);
    pami_svd_lookup_t lk = {.owner = owner, .key = 4242};
    pami_svd_entry_t en;
    CF_OK(e, pami_svd_lookup_wait(e->ctx, &lk, &en));
    char want[32];
    snprintf(want, sizeof(want), "wire %u", owner);
    CF_CHECK(e, en.version == 1 && en.data_size == strlen(want) + 1 &&
             memcmp(en.data, want, en.data_size) == 0,
             "expected version 1 of task %u's entry after the forged "
             "packets, seen version %llu", owner,
             (unsigned long long)en.version);
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ------------------------------------------------------------------------ */
/* collectives: one id, a 44-byte header (collectives.md, wire format)       */
/* ------------------------------------------------------------------------ */

static void wire_collectives(cf_env_t *e)
{
    static const char *const names[] = {"malformed_dropped"};
    wire_t w;
    if (wire_open(&w, e, "collectives", names, 1) != 0)
        return;
    uint8_t p[WIRE_HDR_MAX];
    memset(p, 0, sizeof(p));
    p[0] = 2, p[1] = 1; /* version 2, data */
    forge(&w, 0, NULL, 0, NULL, 0, "malformed_dropped");
    forge(&w, 0, p, 43, NULL, 0, "malformed_dropped");
    p[0] = 9;
    forge(&w, 0, p, 44, NULL, 0, "malformed_dropped");
    p[0] = 2, p[1] = 7; /* no such type */
    forge(&w, 0, p, 44, NULL, 0, "malformed_dropped");
    p[1] = 1, p[2] = 0x80; /* unknown flag */
    forge(&w, 0, p, 44, NULL, 0, "malformed_dropped");
    for (uint64_t i = 0; i < WIRE_SEEDED; i++) {
        seeded(&w, p, sizeof(p), i);
        forge(&w, 0, p, p[0] % 44, NULL, 0, "malformed_dropped");
    }
    if (wire_check(&w) != 0)
        return;
    pami_geometry_t world;
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    uint64_t in = e->task + 1, out = 0;
    CF_OK(e, pami_geometry_allreduce(e->ctx, world, &in, &out, 1,
                                     PAMI_TYPE_UINT64, PAMI_OP_SUM));
    uint64_t sum = (uint64_t)e->size * (e->size + 1) / 2;
    CF_CHECK(e, out == sum, "expected the allreduce after the forged packets "
             "to give %llu, seen %llu", (unsigned long long)sum,
             (unsigned long long)out);
}

/* ------------------------------------------------------------------------ */
/* core: ACK, BARRIER, MONITOR, RNDV, RMA, RNDV_CHUNK, PROBE (512..518)     */
/* ------------------------------------------------------------------------ */

enum { CORE_ACK = 512, CORE_BARRIER, CORE_MONITOR, CORE_RNDV, CORE_RMA,
       CORE_RNDV_CHUNK, CORE_PROBE };

typedef struct {
    size_t got, checked_bad, remote;
    size_t len;
    uint8_t *buf;
    uint64_t seed;
} core_rx_t;

static void core_done(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    core_rx_t *r = k;
    r->remote++;
    if (rc != PAMI_SUCCESS)
        r->checked_bad++;
}

static void core_landed(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    core_rx_t *r = k;
    if (rc != PAMI_SUCCESS || cf_verify(r->buf, r->len, r->seed, 7, 0) !=
                                  r->len)
        r->checked_bad++;
    r->got++;
}

static void core_handler(pami_context_t c, void *k, const void *h, size_t hl,
                         const void *data, size_t len, pami_endpoint_t o,
                         pami_recv_t *recv)
{
    (void)c, (void)h, (void)hl, (void)o;
    core_rx_t *r = k;
    if (recv == NULL) {
        if (len > 0 && (data == NULL ||
                        cf_verify(data, len, r->seed, 7, 0) != len))
            r->checked_bad++;
        r->got++;
        return;
    }
    recv->addr     = r->buf;
    recv->local_fn = core_landed;
    recv->cookie   = r;
}

/* The target's answers to forged rendezvous requests. */
typedef struct {
    size_t        n;
    pami_result_t rc[4];
} answers_t;

static void answered(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    answers_t *a = k;
    if (a->n < 4)
        a->rc[a->n] = rc;
    a->n++;
}

/* A forged RTS (id 515 with the ACK flag): counted, answered PAMI_INVAL. */
static void forge_rts(wire_t *w, const void *hdr, size_t hlen, answers_t *a)
{
    pami_send_t s = {.send = {.dest = w->dest, .dispatch = CORE_RNDV,
                              .header = hdr, .header_len = hlen},
                     .remote_fn = answered, .cookie = a};
    pami_result_t rc = pami_test_send_raw_msg(w->e->ctx, &s);
    if (rc != PAMI_SUCCESS) {
        CF_FAIL(w->e, "expected a forged rendezvous request of %zu bytes to "
                "be sent, seen %s", hlen, cf_rc_name(rc));
        return;
    }
    w->sent++;
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->name[i], "core.dropped_malformed") == 0)
            w->want[i]++;
}

static void wire_core(cf_env_t *e)
{
    static const char *const names[] = {"core.dropped_malformed",
                                        "core.dropped_unknown"};
    wire_t w;
    if (wire_open(&w, e, "core", names, 2) != 0)
        return;
    w.base = 0; /* core ids are absolute */
    uint8_t p[WIRE_HDR_MAX];
    memset(p, 0, sizeof(p));
    forge(&w, CORE_ACK, NULL, 0, NULL, 0, "core.dropped_malformed");
    forge(&w, CORE_ACK, p, 15, NULL, 0, "core.dropped_malformed");
    forge(&w, CORE_ACK, p, 17, NULL, 0, "core.dropped_malformed");
    for (uint64_t i = 0; i < WIRE_SEEDED; i++) {
        seeded(&w, p, 16, i); /* a cookie no send of it waits for */
        forge(&w, CORE_ACK, p, 16, NULL, 0, "core.dropped_malformed");
    }
    memset(p, 0, sizeof(p));
    forge(&w, CORE_BARRIER, NULL, 0, NULL, 0, "core.dropped_malformed");
    forge(&w, CORE_BARRIER, p, 7, NULL, 0, "core.dropped_malformed");
    forge(&w, CORE_BARRIER, p, 9, NULL, 0, "core.dropped_malformed");
    for (uint64_t i = 0; i < WIRE_SEEDED; i++) {
        seeded(&w, p, 8, 100 + i);
        uint32_t round = 64 + (uint32_t)p[4]; /* rounds are 0..63 */
        memcpy(p + 4, &round, 4);
        forge(&w, CORE_BARRIER, p, 8, NULL, 0, "core.dropped_malformed");
    }
    forge(&w, CORE_MONITOR, NULL, 0, NULL, 0, NULL); /* accepted, ignored */
    memset(p, 0, sizeof(p));
    forge(&w, CORE_RNDV, p, 64, NULL, 0, "core.dropped_unknown"); /* no ACK */
    forge(&w, CORE_RMA, NULL, 0, NULL, 0, "core.dropped_malformed");
    forge(&w, CORE_RMA, p, 3, NULL, 0, "core.dropped_malformed");
    /* RNDV_CHUNK (rendezvous.md, chunk messages): short, long, and the
     * right 48 bytes with version 0, each a counted refusal; nothing of
     * them is answered. */
    forge(&w, CORE_RNDV_CHUNK, NULL, 0, NULL, 0, "core.dropped_malformed");
    forge(&w, CORE_RNDV_CHUNK, p, 47, NULL, 0, "core.dropped_malformed");
    forge(&w, CORE_RNDV_CHUNK, p, 49, NULL, 0, "core.dropped_malformed");
    forge(&w, CORE_RNDV_CHUNK, p, 48, NULL, 0, "core.dropped_malformed");
    /* PROBE (am.md): 7 and 9 bytes, kind 0 and 3, a reserved byte set,
     * and answers to probes this task never sent (a forged "alive"). */
    forge(&w, CORE_PROBE, p, 7, NULL, 0, "core.dropped_malformed");
    forge(&w, CORE_PROBE, p, 9, NULL, 0, "core.dropped_malformed");
    forge(&w, CORE_PROBE, p, 8, NULL, 0, "core.dropped_malformed");
    p[0] = 3;
    forge(&w, CORE_PROBE, p, 8, NULL, 0, "core.dropped_malformed");
    p[0] = 1, p[2] = 1;
    forge(&w, CORE_PROBE, p, 8, NULL, 0, "core.dropped_malformed");
    for (uint64_t i = 0; i < WIRE_SEEDED; i++) {
        seeded(&w, p, 8, 200 + i);
        p[0] = 2, p[1] = p[2] = p[3] = 0; /* an answer, well formed */
        forge(&w, CORE_PROBE, p, 8, NULL, 0, "core.dropped_malformed");
    }
    memset(p, 0, sizeof(p));
    /* RTS with the ACK flag: 10 bytes (rendezvous.md check 1, "at least
     * 288 bytes follow the cookie") and 288 zero bytes (check 2,
     * "version == 1"). */
    answers_t ans = {0};
    memset(p, 0, sizeof(p));
    forge_rts(&w, p, 10, &ans);
    forge_rts(&w, p, 288, &ans);
    if (wire_check(&w) != 0)
        return;
    cf_wait_count(e, &ans.n, 2, "answers to the forged rendezvous requests");
    CF_CHECK(e, ans.rc[0] == PAMI_INVAL && ans.rc[1] == PAMI_INVAL,
             "expected the forged rendezvous requests answered PAMI_INVAL "
             "(rendezvous.md: \"dropped_malformed, warn, ACK PAMI_INVAL\"), "
             "seen %s and %s", cf_rc_name(ans.rc[0]), cf_rc_name(ans.rc[1]));

    /* Still serving: one small send and one above the rendezvous
     * threshold to the next task, each with remote completion. */
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    CF_OK(e, pami_client_query(e->client, &a));
    size_t big = a.rndv_threshold + 4096;
    core_rx_t rx = {.len = big, .seed = e->seed};
    rx.buf = malloc(big);
    uint8_t *src = malloc(big);
    CF_CHECK(e, rx.buf != NULL && src != NULL, "expected memory");
    cf_fill(src, big, e->seed, 7, 0);
    CF_OK(e, pami_dispatch_set(e->ctx, 9, core_handler, &rx, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    size_t lens[2] = {64, big};
    for (int i = 0; i < 2; i++) {
        pami_send_t s = {.send = {.dest = w.dest, .dispatch = 9,
                                  .data = src, .data_len = lens[i]},
                         .remote_fn = core_done, .cookie = &rx};
        CF_OK(e, pami_send(e->ctx, &s));
    }
    cf_wait_count(e, &rx.remote, 2, "remote completions after the forged "
                                    "packets");
    cf_wait_count(e, &rx.got, 2, "messages after the forged packets");
    CF_OK(e, pami_dispatch_fence(e->client));
    free(src);
    free(rx.buf);
    CF_CHECK(e, rx.checked_bad == 0, "expected the sends after the forged "
             "packets to arrive intact and complete with PAMI_SUCCESS, seen "
             "%zu failures", rx.checked_bad);
}

const cf_case_t cf_wire_cases[] = {
    {"protocols", "wire_barrier_packets", 2, 0, 0, wire_barrier_packets, NULL},
    {"protocols", "wire_shm_barrier", 2, 0, 0, wire_shm_barrier, NULL},
    {"protocols", "wire_shm_register", 2, 0, 0, wire_shm_register, NULL},
    {"protocols", "wire_svd", 2, 0, 0, wire_svd, NULL},
    {"protocols", "wire_collectives", 2, 0, 0, wire_collectives, NULL},
    {"protocols", "wire_core", 2, 0, 0, wire_core, NULL},
};
const size_t cf_num_wire_cases =
    sizeof(cf_wire_cases) / sizeof(cf_wire_cases[0]);
