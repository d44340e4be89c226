/*
 * Helpers of the SVD tests: counters, the expected contents of a version,
 * and the update-latency loop pami-bench can reuse (svd_bench_update).
 */
#ifndef SVD_UTIL_H
#define SVD_UTIL_H

#include <pami.h>
#include <pami_protocol.h>
#include <pami_svd.h>

#include "mp_util.h"

/* The value of one "svd" counter on ctx. */
static inline uint64_t svd_stat(pami_context_t ctx, const char *name)
{
    pami_protocol_stat_t st[64];
    size_t n = 0;
    MP_CHECK(pami_protocol_stats(ctx, "svd", st, 64, &n));
    for (size_t i = 0; i < n && i < 64; i++)
        if (strcmp(st[i].name, name) == 0)
            return st[i].value;
    mp_fail("no svd counter named %s", name);
}

/* The first dispatch id of the svd protocol. */
static inline size_t svd_dispatch_base(mp_job_t *job, size_t *num)
{
    pami_protocol_info_t info;
    for (size_t i = 0; pami_protocol_query(job->client, i, &info) ==
                       PAMI_SUCCESS;
         i++)
        if (strcmp(info.name, "svd") == 0) {
            *num = info.num_dispatch;
            return info.dispatch_base;
        }
    mp_fail("protocol svd is not registered");
}

/* What version v of (owner, key) holds: the address and size the owner
 * gives it, and data filled with mp_fill(owner, v, key). */
static inline uint64_t svd_addr_of(uint64_t v)
{
    return 0x10000000ull + v * 4096;
}

static inline void svd_expect_entry(const pami_svd_entry_t *e,
                                    pami_task_t owner, pami_svd_key_t key,
                                    uint64_t v, size_t bytes)
{
    MP_EXPECT(e->owner == owner && e->key == key, "entry names (%u, %llu), "
              "expected (%u, %llu)", e->owner, (unsigned long long)e->key,
              owner, (unsigned long long)key);
    MP_EXPECT(e->version == v, "key %llu: version %llu, expected %llu",
              (unsigned long long)key, (unsigned long long)e->version,
              (unsigned long long)v);
    MP_EXPECT(e->addr == svd_addr_of(v) && e->size == v,
              "key %llu version %llu: addr %#llx size %llu (torn entry?)",
              (unsigned long long)key, (unsigned long long)v,
              (unsigned long long)e->addr, (unsigned long long)e->size);
    MP_EXPECT(e->data_size == bytes, "key %llu version %llu: %zu data "
              "bytes, expected %zu", (unsigned long long)key,
              (unsigned long long)v, e->data_size, bytes);
    long bad = mp_verify(e->data, bytes, owner, v, (uint32_t)key);
    MP_EXPECT(bad < 0, "key %llu version %llu: data byte %ld of %zu wrong",
              (unsigned long long)key, (unsigned long long)v, bad, bytes);
}

/* One update of key to version v with contents svd_expect_entry knows;
 * buf holds at least bytes. */
static inline pami_svd_update_t svd_update_params(pami_task_t owner,
                                                  pami_svd_key_t key,
                                                  uint64_t v, void *buf,
                                                  size_t bytes)
{
    mp_fill(buf, bytes, owner, v, (uint32_t)key);
    return (pami_svd_update_t){
        .field_mask = PAMI_SVD_UPDATE_ADDR | PAMI_SVD_UPDATE_DATA,
        .key = key, .addr = (void *)(uintptr_t)svd_addr_of(v), .size = v,
        .data = buf, .data_size = bytes};
}

/* The update-latency loop (owner side): iters blocking updates of key
 * with bytes of data each, after warmup ones; returns the mean
 * microseconds from pami_svd_update to the owner's completion, and the
 * smallest in *min_us. The users must keep progressing meanwhile. */
static inline double svd_bench_update(pami_context_t ctx, pami_svd_key_t key,
                                      void *buf, size_t bytes, int warmup,
                                      int iters, double *min_us)
{
    pami_svd_update_t u = {.field_mask = PAMI_SVD_UPDATE_DATA, .key = key,
                           .data = buf, .data_size = bytes};
    double total = 0, best = 1e30;
    for (int i = -warmup; i < iters; i++) {
        ((uint8_t *)buf)[0] = (uint8_t)i;
        double t0 = mp_now();
        pami_result_t rc = pami_svd_update_wait(ctx, &u);
        double us = (mp_now() - t0) * 1e6;
        if (rc != PAMI_SUCCESS)
            mp_fail("svd update of %zu bytes: %s", bytes, pami_error_text(rc));
        if (i < 0)
            continue;
        total += us;
        if (us < best)
            best = us;
    }
    if (min_us != NULL)
        *min_us = best;
    return total / iters;
}

#endif
