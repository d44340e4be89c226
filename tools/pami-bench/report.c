/*
 * Medians and spreads of repeated measurements, and the two outputs: a
 * table for people and one JSON object per line for scripts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static const struct {
    const char *name;
    metric_t    metric;
} tests[T_COUNT] = {
    [T_AM_LAT]  = {"am_lat", METRIC_LAT_US},
    [T_AM_RATE] = {"am_rate", METRIC_RATE_MPS},
    [T_SEND_BW] = {"send_bw", METRIC_BW_GBPS},
    [T_PUT_LAT] = {"put_lat", METRIC_LAT_US},
    [T_PUT_BW]  = {"put_bw", METRIC_BW_GBPS},
    [T_GET_BW]  = {"get_bw", METRIC_BW_GBPS},
    [T_RMW_LAT] = {"rmw_lat", METRIC_LAT_US},
    [T_PUT_LAT_SHM] = {"put_lat_shm", METRIC_LAT_US},
    [T_RMW_LAT_SHM] = {"rmw_lat_shm", METRIC_LAT_US},
    [T_BARRIER] = {"barrier", METRIC_LAT_US},
    [T_SVD_UPDATE] = {"svd_update", METRIC_LAT_US},
    [T_ALLREDUCE] = {"allreduce", METRIC_LAT_US},
    [T_BCAST] = {"bcast", METRIC_LAT_US},
    [T_ALLGATHER] = {"allgather", METRIC_LAT_US},
    [T_ALLTOALL] = {"alltoall", METRIC_LAT_US},
    [T_REDUCE_SCATTER] = {"reduce_scatter", METRIC_LAT_US},
    [T_REDUCE] = {"reduce", METRIC_LAT_US},
    [T_AUTO_VS_BEST] = {"auto_vs_best", METRIC_LAT_US},
    [T_BURST_OVERSUB] = {"burst_oversub", METRIC_RATE_MPS},
    [T_FOOTPRINT] = {"footprint", METRIC_LAT_US}, /* prints its own line */
};

const char *test_name(test_id_t t) { return tests[t].name; }
metric_t test_metric(test_id_t t) { return tests[t].metric; }

const char *metric_name(metric_t m)
{
    switch (m) {
    case METRIC_LAT_US:   return "lat_us";
    case METRIC_RATE_MPS: return "rate_mps";
    case METRIC_BW_GBPS:  return "bw_gbps";
    }
    return "?";
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

summary_t summarize(const double *samples, unsigned n)
{
    summary_t s = {0};
    double sorted[64];
    unsigned k = 0;
    for (unsigned i = 0; i < n && k < 64; i++)
        if (samples[i] >= 0)
            sorted[k++] = samples[i];
    /* One failed measurement makes the line unreliable: report none. */
    if (k == 0 || k != n)
        return s;
    qsort(sorted, k, sizeof(sorted[0]), cmp_double);
    s.median = k % 2 ? sorted[k / 2]
                     : (sorted[k / 2 - 1] + sorted[k / 2]) / 2.0;
    s.min   = sorted[0];
    s.max   = sorted[k - 1];
    s.valid = true;
    return s;
}

double to_metric(const plan_t *plan, double seconds)
{
    if (seconds <= 0)
        return -1;
    double ops = (double)plan->ops;
    switch (plan->test) {
    case T_AM_LAT:  /* a ping-pong: half of a round trip */
        return seconds * 1e6 / ops / 2.0;
    case T_PUT_LAT: /* one operation and its remote completion */
    case T_RMW_LAT:
    case T_PUT_LAT_SHM:
    case T_RMW_LAT_SHM:
        return seconds * 1e6 / ops;
    case T_AM_RATE:
        return ops / seconds;
    default:
        return ops * (double)plan->bytes / seconds / 1e9;
    }
}

void report_header(const bench_t *b)
{
    if (b->opt.json)
        return;
    printf("# pami-bench: 2 tasks, UCX %s (%s), immediate_max %zu B, "
           "rndv_threshold %zu B\n", b->ucx_version, b->transports,
           b->immediate_max, b->rndv_threshold);
    printf("# each value: median [min .. max] of %u measurements; "
           "ratio = pami / ucx median\n", b->opt.reps);
    printf("# lat_us: am_lat half round trip, put_lat put + remote "
           "completion, rmw_lat fetch-add round trip (*_shm: on memory "
           "pami_memregion_alloc / ucp_mem_map allocated; private: UCP on "
           "the private buffers); rate_mps: messages/s; bw_gbps: 1e9 "
           "B/s\n");
    printf("# cpu: least share of a kept repetition in which no task "
           "waited for a CPU; redo: repetitions measured again because it "
           "was below %.2f\n", b->opt.min_cpu);
    printf("# vs_fl: am_lat / floor_lat (mean of the floor before and "
           "after the line; same node and --vs-ucx only)\n");
    printf("%-12s %9s %-9s %-30s %-30s %7s %5s %4s %6s  %s\n", "test",
           "bytes", "metric", "pami", "ucx", "ratio", "cpu", "redo",
           "vs_fl", "ucx pattern");
}

static const char *fmt_of(metric_t m)
{
    switch (m) {
    case METRIC_LAT_US:   return "%.3f";
    case METRIC_RATE_MPS: return "%.0f";
    default:              return "%.3f";
    }
}

static void cell(char *out, size_t size, metric_t m, const summary_t *s,
                 bool wanted)
{
    if (!wanted) {
        snprintf(out, size, "-");
        return;
    }
    if (!s->valid) {
        snprintf(out, size, "n/a");
        return;
    }
    const char *f = fmt_of(m);
    char med[24], lo[24], hi[24];
    snprintf(med, sizeof(med), f, s->median);
    snprintf(lo, sizeof(lo), f, s->min);
    snprintf(hi, sizeof(hi), f, s->max);
    snprintf(out, size, "%s [%s .. %s]", med, lo, hi);
}

static void json_num(const char *key, bool ok, double v)
{
    if (ok)
        printf(", \"%s\": %.6g", key, v);
    else
        printf(", \"%s\": null", key);
}

void report_floor(const bench_t *b, const summary_t *lat,
                  const summary_t *rate)
{
    if (b->opt.json) {
        printf("{\"test\": \"floor_lat\", \"bytes\": 8, \"us\": %.6g}\n",
               lat->median);
        printf("{\"test\": \"floor_rate\", \"bytes\": 8, "
               "\"msgs_per_s\": %.6g}\n", rate->median);
    } else {
        char l[128], r[128];
        cell(l, sizeof(l), METRIC_LAT_US, lat, true);
        cell(r, sizeof(r), METRIC_RATE_MPS, rate, true);
        printf("%-12s %9d %-9s %-30s\n", "floor_lat", 8, "lat_us", l);
        printf("%-12s %9d %-9s %-30s\n", "floor_rate", 8, "rate_mps", r);
    }
    fflush(stdout);
}

void report_line(const bench_t *b, const char *test, size_t bytes,
                 metric_t metric, const summary_t *pami,
                 const summary_t *ucx, const char *ucx_op,
                 const plan_t *plan, const quality_t *q)
{
    bool   vs    = b->opt.vs_ucx;
    bool   ratio_ok = vs && pami->valid && ucx->valid && ucx->median > 0;
    double ratio = ratio_ok ? pami->median / ucx->median : 0;

    if (b->opt.json) {
        printf("{\"test\": \"%s\", \"bytes\": %zu, \"metric\": \"%s\"", test,
               bytes, metric_name(metric));
        json_num("pami", pami->valid, pami->median);
        json_num("pami_min", pami->valid, pami->min);
        json_num("pami_max", pami->valid, pami->max);
        json_num("ucx", vs && ucx->valid, ucx->median);
        json_num("ucx_min", vs && ucx->valid, ucx->min);
        json_num("ucx_max", vs && ucx->valid, ucx->max);
        json_num("ratio", ratio_ok, ratio);
        if (vs)
            printf(", \"ucx_op\": \"%s\"", ucx_op);
        else
            printf(", \"ucx_op\": null");
        if (q->vs_floor > 0)
            printf(", \"vs_floor\": %.6g", q->vs_floor);
        if (q->ucx_private > 0)
            printf(", \"ucx_private_us\": %.6g", q->ucx_private);
        printf(", \"reps\": %u, \"ops\": %zu, \"window\": %zu, "
               "\"cpu_share\": %.3f, \"redone\": %u}\n", b->opt.reps,
               plan->ops, plan->window, q->cpu_share, q->redone);
    } else {
        char p[128], u[128], r[16];
        cell(p, sizeof(p), metric, pami, true);
        cell(u, sizeof(u), metric, ucx, vs);
        if (ratio_ok)
            snprintf(r, sizeof(r), "%.3f", ratio);
        else
            snprintf(r, sizeof(r), "-");
        char f[16];
        if (q->vs_floor > 0)
            snprintf(f, sizeof(f), "%.2f", q->vs_floor);
        else
            snprintf(f, sizeof(f), "-");
        char priv[48] = "";
        if (q->ucx_private > 0)
            snprintf(priv, sizeof(priv), "; private %.3f", q->ucx_private);
        printf("%-12s %9zu %-9s %-30s %-30s %7s %5.2f %4u %6s  %s%s\n", test,
               bytes, metric_name(metric), p, u, r, q->cpu_share, q->redone,
               f, vs ? ucx_op : "-", priv);
    }
    fflush(stdout);
}

void report_group_header(const opts_t *o, size_t tasks, bool with_mpi)
{
    if (o->json)
        return;
    printf("# pami-bench: %zu tasks, every task runs the loop; value: "
           "median [min .. max] of %u measurements on task 0%s\n", tasks,
           o->reps, with_mpi ? "; ratio = pami / mpi median" : "");
    printf("%-30s %9s %-9s %-30s %-30s %7s  %s\n", "test", "bytes", "metric",
           "pami", "mpi", "ratio", "mpi pattern");
}

void report_group_line(const opts_t *o, size_t tasks, const char *test,
                       size_t bytes, metric_t metric, const summary_t *pami,
                       const summary_t *mpi, const char *mpi_op, size_t ops)
{
    bool   vs       = o->vs_mpi;
    bool   ratio_ok = vs && pami->valid && mpi->valid && mpi->median > 0;
    double ratio    = ratio_ok ? pami->median / mpi->median : 0;
    if (o->json) {
        printf("{\"test\": \"%s\", \"bytes\": %zu, \"metric\": \"%s\", "
               "\"tasks\": %zu", test, bytes, metric_name(metric), tasks);
        json_num("pami", pami->valid, pami->median);
        json_num("pami_min", pami->valid, pami->min);
        json_num("pami_max", pami->valid, pami->max);
        printf(", \"ucx\": null");
        json_num("mpi", vs && mpi->valid, mpi->median);
        json_num("mpi_min", vs && mpi->valid, mpi->min);
        json_num("mpi_max", vs && mpi->valid, mpi->max);
        json_num("ratio", ratio_ok, ratio);
        if (vs)
            printf(", \"mpi_op\": \"%s\"", mpi_op);
        else
            printf(", \"mpi_op\": null");
        printf(", \"reps\": %u, \"ops\": %zu}\n", o->reps, ops);
    } else {
        char p[128], m[128], r[16];
        cell(p, sizeof(p), metric, pami, true);
        cell(m, sizeof(m), metric, mpi, vs);
        if (ratio_ok)
            snprintf(r, sizeof(r), "%.3f", ratio);
        else
            snprintf(r, sizeof(r), "-");
        printf("%-30s %9zu %-9s %-30s %-30s %7s  %s\n", test, bytes,
               metric_name(metric), p, m, r, vs ? mpi_op : "-");
    }
    fflush(stdout);
}
