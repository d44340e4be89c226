/*
 * pami-info: what this build of pami is and how it is configured here.
 * Joins a single-task job of its own (no launcher needed) to read the UCX
 * version and transports.
 */
#include <pami.h>
#include <pami_collectives.h>
#include <pami_protocol.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_profile_info.h"

static const char *bootstrap_name(pami_bootstrap_kind_t kind)
{
    switch (kind) {
    case PAMI_BOOTSTRAP_LOCAL: return "local";
    case PAMI_BOOTSTRAP_PMIX:  return "pmix";
    case PAMI_BOOTSTRAP_OOB:   return "oob";
    default:                   return "auto";
    }
}

static void print_config(void)
{
    printf("\nconfiguration (environment):\n");
    pami_config_var_t var;
    for (unsigned i = 0; pami_config_var(i, &var) == PAMI_SUCCESS; i++) {
        const char *now = getenv(var.name);
        printf("  %-26s default %-7s%s%s\n      %s\n", var.name,
               var.default_value, now ? " now " : "", now ? now : "",
               var.description);
    }
}

static const char *const kind_names[PAMI_XFER_COUNT] = {
    "barrier", "broadcast", "reduce", "allreduce", "allgather", "gather",
    "scatter", "alltoall", "reduce_scatter", "scan", "exscan", "allgatherv",
    "gatherv", "scatterv", "alltoallv"};

static void print_size(size_t b)
{
    if (b == SIZE_MAX)
        printf("%8s", "max");
    else if (b >= (1u << 20) && b % (1u << 20) == 0)
        printf("%7zuM", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        printf("%7zuK", b >> 10);
    else
        printf("%8zu", b);
}

static void print_algorithm_list(const pami_algorithm_metadata_t *md,
                                 size_t n, const char *how)
{
    for (size_t i = 0; i < n; i++) {
        printf("    %-36s", md[i].name);
        print_size(md[i].range_lo);
        printf(" ..");
        print_size(md[i].range_hi);
        printf("  %s%s%s\n", how,
               md[i].requirements & PAMI_ALGORITHM_REQ_COMMUTATIVE
                   ? ", commutative op" : "",
               md[i].requirements & PAMI_ALGORITHM_REQ_POW2
                   ? ", power-of-two size" : "");
    }
}

/* The registry, as the world geometry of this one-task job sees it: an
 * algorithm "checked" runs only where its check function accepts the
 * call (e.g. a geometry of this node's tasks only). */
static void print_algorithms(pami_context_t ctx)
{
    pami_geometry_t world;
    if (pami_geometry_world(ctx, &world) != PAMI_SUCCESS)
        return;
    printf("\ncollective algorithms (bytes per rank they are meant for; "
           "AUTO picks among them):\n");
    for (int k = 0; k < PAMI_XFER_COUNT; k++) {
        size_t na = 0, nc = 0;
        if (pami_geometry_algorithms_num(world, (pami_xfer_type_t)k, &na,
                                         &nc) != PAMI_SUCCESS)
            continue;
        pami_algorithm_t ids[64];
        pami_algorithm_metadata_t amd[64], cmd[64];
        na = na < 64 ? na : 64;
        nc = nc < 64 ? nc : 64;
        if (pami_geometry_algorithms_query(world, (pami_xfer_type_t)k, ids,
                                           amd, na, ids, cmd, nc) !=
            PAMI_SUCCESS)
            continue;
        printf("  %s:\n", kind_names[k]);
        print_algorithm_list(amd, na, "always");
        print_algorithm_list(cmd, nc, "checked");
    }
}

/* The counters each protocol keeps per context (ConnID utilization of the
 * collectives, packets dropped as malformed, ...), read from a context of
 * this single-task job: their names, for pami_protocol_stats. */
static void print_counters(pami_client_t client)
{
    pami_context_t ctx;
    if (pami_context_createv(client, NULL, 1, &ctx) != PAMI_SUCCESS)
        return;
    printf("\nprotocol counters (pami_protocol_stats, per context; values "
           "of this idle one):\n");
    pami_protocol_info_t p;
    for (size_t i = 0; pami_protocol_query(client, i, &p) == PAMI_SUCCESS;
         i++) {
        pami_protocol_stat_t st[64];
        size_t n = 0;
        if (pami_protocol_stats(ctx, p.name, st, 64, &n) != PAMI_SUCCESS ||
            n == 0)
            continue;
        printf("  %s:", p.name);
        for (size_t k = 0; k < n && k < 64; k++)
            printf("%s %s=%llu", k % 4 == 0 && k > 0 ? "\n   " : "",
                   st[k].name, (unsigned long long)st[k].value);
        printf("\n");
    }
    pami_context_stats_t cs;
    if (pami_context_stats(ctx, &cs) == PAMI_SUCCESS)
        printf("\nshared-memory fast path (PAMI_SHM_FASTPATH; counters of "
               "this idle context):\n  %s, peers=%llu sent=%llu "
               "received=%llu full=%llu wakeups=%llu\n",
               cs.shm_on ? "on" : "off", (unsigned long long)cs.shm_peers,
               (unsigned long long)cs.shm_sent,
               (unsigned long long)cs.shm_received,
               (unsigned long long)cs.shm_full,
               (unsigned long long)cs.shm_wakeups);
    if (pami_context_stats(ctx, &cs) == PAMI_SUCCESS)
        printf("\nsmall puts and gets to node peers by claimed message "
               "(PAMI_RMA_PUT_MSG, PAMI_RMA_GET_MSG; counters of this idle "
               "context):\n  puts=%llu applied=%llu taken_back=%llu "
               "cooldowns=%llu\n",
               (unsigned long long)cs.claim_puts,
               (unsigned long long)cs.claim_applied,
               (unsigned long long)cs.claim_taken_back,
               (unsigned long long)cs.claim_cooldowns);
    print_algorithms(ctx);
    pami_context_destroyv(&ctx, 1);
}

int main(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "-h") == 0 ||
                     strcmp(argv[1], "--help") == 0)) {
        printf("usage: pami-info\nprints the version, UCX transports, "
               "protocols, collective algorithms, every PAMI_* variable and the limits of this build\n"
               "       pami-info --coll-profile PROFILE.json [--shape N[xP]]\n"
               "prints the decision table a geometry of N tasks, P per node, "
               "gets from the profile\n");
        return 0;
    }
    /* Anything else, --coll-profile without its file too, is a mistake
     * the full listing would hide. */
    if (argc > 1 && (strcmp(argv[1], "--coll-profile") != 0 || argc < 3)) {
        fprintf(stderr, "pami-info: %s %s\nusage: pami-info | pami-info "
                "--coll-profile PROFILE.json [--shape N[xP]] | pami-info "
                "--help\n", strcmp(argv[1], "--coll-profile") == 0
                ? "no profile after" : "unknown argument", argv[1]);
        return 2;
    }
    if (argc > 2) {
        const char *shape = NULL;
        if (argc == 5 && strcmp(argv[3], "--shape") == 0)
            shape = argv[4];
        else if (argc != 3) {
            fprintf(stderr, "usage: pami-info --coll-profile PROFILE.json "
                    "[--shape N[xP]]\n");
            return 2;
        }
        pami_client_t client;
        pami_context_t ctx;
        pami_result_t rc = pami_client_create("pami-info", NULL, &client);
        if (rc == PAMI_SUCCESS)
            rc = pami_context_createv(client, NULL, 1, &ctx);
        if (rc != PAMI_SUCCESS) {
            fprintf(stderr, "pami-info: cannot create a client: %s\n",
                    pami_error_text(rc));
            return 1;
        }
        int r = coll_profile_info(ctx, argv[2], shape);
        pami_context_destroyv(&ctx, 1);
        pami_client_destroy(&client);
        return r;
    }
    printf("pami %d.%d.%d\n", PAMI_VERSION_MAJOR, PAMI_VERSION_MINOR,
           PAMI_VERSION_PATCH);

    pami_client_t client;
    pami_result_t rc = pami_client_create("pami-info", NULL, &client);
    if (rc != PAMI_SUCCESS) {
        fprintf(stderr, "pami-info: cannot create a client: %s\n",
                pami_error_text(rc));
        print_config();
        return 1;
    }
    /* Only the fields printed: a bit pami does not know is refused. */
    pami_client_attr_t a = {
        .field_mask = PAMI_CLIENT_ATTR_TASK | PAMI_CLIENT_ATTR_SIZE |
                      PAMI_CLIENT_ATTR_DISPATCH_MAX |
                      PAMI_CLIENT_ATTR_HEADER_MAX |
                      PAMI_CLIENT_ATTR_IMMEDIATE_MAX |
                      PAMI_CLIENT_ATTR_RNDV_THRESHOLD |
                      PAMI_CLIENT_ATTR_BOOTSTRAP | PAMI_CLIENT_ATTR_TRANSPORT};
    rc = pami_client_query(client, &a);
    if (rc != PAMI_SUCCESS) {
        fprintf(stderr, "pami-info: client query: %s\n", pami_error_text(rc));
        pami_client_destroy(&client);
        return 1;
    }
    printf("ucx %s\n", a.ucx_version);
    printf("transports: %s\n", a.transports[0] ? a.transports : "(none)");
    printf("bootstrap: %s (task %u of %zu)\n", bootstrap_name(a.bootstrap),
           a.task, a.size);
    printf("\nlimits:\n");
    printf("  user dispatch ids      0..%zu\n", a.dispatch_max - 1);
    printf("  header_max             %zu bytes\n", a.header_max);
    printf("  immediate_max          %zu bytes (header + data)\n",
           a.immediate_max);
    printf("  rndv_threshold         %zu bytes\n", a.rndv_threshold);
    printf("  contexts per client    %d\n", PAMI_CONTEXT_MAX);
    printf("\nprotocols (dispatch ids from the reserved range):\n");
    pami_protocol_info_t p;
    for (size_t i = 0; pami_protocol_query(client, i, &p) == PAMI_SUCCESS;
         i++) {
        if (p.num_dispatch > 0)
            printf("  %-22s v%-3u ids %zu..%zu%s\n", p.name, p.version,
                   p.dispatch_base, p.dispatch_base + p.num_dispatch - 1,
                   p.builtin ? "" : " (registered by the program)");
        else
            printf("  %-22s v%-3u no ids\n", p.name, p.version);
    }
    print_counters(client);
    print_config();
    pami_client_destroy(&client);
    return 0;
}
