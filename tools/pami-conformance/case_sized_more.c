/*
 * sized_more: api.md, "Structs that grow", for the calls sized_params
 * leaves out: "A size that ends the struct at any field from the last
 * required one on is accepted: fields past it are read as zero (no
 * callback, NULL cookie), or, for a struct pami fills, left unwritten.
 * Any other size is PAMI_INVAL" (0, inside a field, shorter than the
 * required fields, longer than today's struct).
 */
#include "cf.h"

#include <pami_collectives.h>
#include <pami_protocol.h>
#include <pami_svd.h>

#include <stddef.h>
#include <string.h>

/* Where a struct ending at field ends: the field's end rounded up to the
 * struct's alignment (api.md, "Structs that grow"). */
#define END(type, field)                                                     \
    ((offsetof(type, field) + sizeof(((type *)0)->field) + _Alignof(type) -  \
      1) / _Alignof(type) * _Alignof(type))
#define RAW_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* The sizes every sized call refuses, given the required end. */
static size_t bad_sizes(size_t required_end, size_t full, size_t out[4])
{
    size_t n = 0;
    out[n++] = 0;
    out[n++] = required_end - 1;
    out[n++] = full + 1;
    if (required_end + 1 < full)
        out[n++] = required_end + 1; /* inside the next field */
    return n;
}

static void sized_more(cf_env_t *e)
{
    size_t bad[4], nb;
    /* pami_protocol_query: required name; the rest left unwritten. */
    pami_protocol_info_t pi;
    nb = bad_sizes(END(pami_protocol_info_t, name), sizeof(pi), bad);
    for (size_t i = 0; i < nb; i++)
        CF_RC(e, PAMI_INVAL, pami_protocol_query_sized(e->client, 0, &pi,
                                                       bad[i]));
    memset(&pi, 0xa5, sizeof(pi));
    CF_OK(e, pami_protocol_query_sized(e->client, 0, &pi,
                                       END(pami_protocol_info_t, name)));
    unsigned char mark[sizeof(pi)];
    memset(mark, 0xa5, sizeof(mark));
    CF_CHECK(e, pi.name != NULL && memcmp((char *)&pi + END(pami_protocol_info_t, name),
                                          mark, sizeof(pi) -
                                          END(pami_protocol_info_t, name)) == 0,
             "expected pami_protocol_query to write the name and leave the "
             "fields past the size alone");
    /* pami_protocol_job_key: required name; hash left unwritten. */
    pami_protocol_job_key_t jk;
    nb = bad_sizes(END(pami_protocol_job_key_t, name), sizeof(jk), bad);
    for (size_t i = 0; i < nb; i++)
        CF_RC(e, PAMI_INVAL, pami_protocol_job_key_sized(e->client, &jk,
                                                         bad[i]));
    /* The field's own end, not rounded up: no layout. */
    CF_RC(e, PAMI_INVAL, pami_protocol_job_key_sized(
                             e->client, &jk,
                             RAW_END(pami_protocol_job_key_t, name)));
    memset(&jk, 0xa5, sizeof(jk));
    CF_OK(e, pami_protocol_job_key_sized(e->client, &jk,
                                         END(pami_protocol_job_key_t, name)));
    uint64_t hmark;
    memset(&hmark, 0xa5, sizeof(hmark));
    CF_CHECK(e, jk.name[0] != '\0' && jk.hash == hmark, "expected the job "
             "key's name written and its hash left alone");
    /* pami_geometry_algorithm_selected: required algorithm .. why. */
    pami_geometry_t world;
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    int64_t v = 1, r = 0;
    pami_xfer_t x = {.kind = PAMI_XFER_ALLREDUCE, .geometry = world,
                     .sbuf = &v, .rbuf = &r, .count = 1,
                     .dtype = PAMI_TYPE_INT64, .op = PAMI_OP_SUM};
    pami_algorithm_selection_t sel;
    size_t sel_end = END(pami_algorithm_selection_t, why);
    nb = bad_sizes(sel_end, sizeof(sel), bad);
    for (size_t i = 0; i < nb; i++)
        CF_RC(e, PAMI_INVAL, pami_geometry_algorithm_selected_sized(&x, &sel,
                                                                    bad[i]));
    memset(&sel, 0xa5, sizeof(sel));
    CF_OK(e, pami_geometry_algorithm_selected_sized(&x, &sel, sel_end));
    unsigned char smark[sizeof(sel)];
    memset(smark, 0xa5, sizeof(smark));
    CF_CHECK(e, sel.algorithm != PAMI_ALGORITHM_AUTO && sel.why != NULL &&
                    memcmp((char *)&sel + sel_end, smark,
                           sizeof(sel) - sel_end) == 0,
             "expected the selection up to why written and the rest left "
             "alone");
    /* pami_svd_query: required version. */
    static uint8_t data[8];
    pami_svd_register_t reg = {.key = 0xcf77, .addr = data, .size = 8};
    CF_OK(e, pami_svd_register(e->ctx, &reg));
    pami_svd_info_t info;
    nb = bad_sizes(END(pami_svd_info_t, version), sizeof(info), bad);
    for (size_t i = 0; i < nb; i++)
        CF_RC(e, PAMI_INVAL, pami_svd_query_sized(e->ctx, 0xcf77, &info, NULL,
                                                  0, bad[i]));
    memset(&info, 0xa5, sizeof(info));
    CF_OK(e, pami_svd_query_sized(e->ctx, 0xcf77, &info, NULL, 0,
                                  END(pami_svd_info_t, version)));
    size_t umark;
    memset(&umark, 0xa5, sizeof(umark));
    CF_CHECK(e, info.version == 1 && info.num_users == umark, "expected "
             "version 1 written and num_users left alone, seen %llu",
             (unsigned long long)info.version);
    /* pami_rput: required dest .. bytes; no callback past it. */
    static uint8_t src[32], dst[32];
    memset(src, 0x3c, sizeof(src));
    memset(dst, 0, sizeof(dst));
    pami_memregion_t ms, md;
    CF_OK(e, pami_memregion_create(e->ctx, src, sizeof(src), &ms));
    CF_OK(e, pami_memregion_create(e->ctx, dst, sizeof(dst), &md));
    pami_rrma_t rr = {.dest = cf_ep(e, e->task), .local_mr = &ms,
                      .remote_mr = &md, .bytes = 32};
    nb = bad_sizes(END(pami_rrma_t, bytes), sizeof(rr), bad);
    for (size_t i = 0; i < nb; i++)
        CF_RC(e, PAMI_INVAL, pami_rput_sized(e->ctx, &rr, bad[i]));
    CF_OK(e, pami_rput_sized(e->ctx, &rr, END(pami_rrma_t, bytes)));
    cf_count_t f = {0};
    CF_OK(e, pami_fence_all(e->ctx, cf_count_fn, &f));
    if (cf_wait_count(e, &f.n, 1, "the fence after the rput") != 0)
        return;
    CF_CHECK(e, dst[0] == 0x3c && dst[31] == 0x3c, "expected the rput of "
             "the shortest size to land (seen after the fence)");
    CF_OK(e, pami_memregion_destroy(e->ctx, &ms));
    CF_OK(e, pami_memregion_destroy(e->ctx, &md));
}

const cf_case_t cf_sized_more_cases[] = {
    {"core", "sized_more", 1, 0, 0, sized_more, NULL},
};
const size_t cf_num_sized_more_cases =
    sizeof(cf_sized_more_cases) / sizeof(cf_sized_more_cases[0]);
