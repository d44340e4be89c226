/*
 * Records (reference-counted, immutable once complete) and the two hash
 * tables of the directory: entries owned here, entries used here.
 */
#include <stdlib.h>
#include <string.h>

#include "svd_internal.h"

svd_blob_t *svd_blob_new(svd_state_t *st, size_t len)
{
    svd_blob_t *b = malloc(sizeof(*b) + len);
    if (b == NULL)
        return NULL;
    b->st   = st;
    b->refs = 1;
    b->len  = len;
    return b;
}

void svd_blob_put(svd_blob_t *b)
{
    if (b != NULL && --b->refs == 0)
        free(b);
}

/* A record is whole and is the version we expect. */
bool svd_record_check(const svd_blob_t *rec, uint64_t version)
{
    if (rec->len < SVD_REC_HDR)
        return false;
    svd_record_hdr_t h;
    memcpy(&h, rec->bytes, sizeof(h));
    return h.version == SVD_WIRE_VERSION &&
           h.entry_version == version &&
           h.data_size == rec->len - SVD_REC_HDR &&
           (h.flags & ~SVD_REC_HAS_MR) == 0;
}

void svd_record_entry(const svd_blob_t *rec, pami_task_t owner,
                      pami_svd_key_t key, pami_svd_entry_t *e)
{
    svd_record_hdr_t h;
    memcpy(&h, rec->bytes, sizeof(h));
    *e = (pami_svd_entry_t){
        .owner     = owner,
        .key       = key,
        .version   = h.entry_version,
        .addr      = h.addr,
        .size      = h.size,
        .has_mr    = (h.flags & SVD_REC_HAS_MR) != 0,
        .data      = rec->len > SVD_REC_HDR ? rec->bytes + SVD_REC_HDR : NULL,
        .data_size = rec->len - SVD_REC_HDR,
    };
    if (e->has_mr)
        e->mr = h.mr;
}

size_t svd_hash(pami_task_t owner, pami_svd_key_t key)
{
    uint64_t k = key ^ ((uint64_t)owner * 0x9e3779b97f4a7c15ull);
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)(k % SVD_HASH_BUCKETS);
}

svd_owned_t *svd_owned_find(svd_state_t *st, pami_svd_key_t key)
{
    for (svd_owned_t *o = st->owned[svd_hash(st->me, key)]; o; o = o->next)
        if (o->key == key)
            return o;
    return NULL;
}

svd_cached_t *svd_cached_find(svd_state_t *st, pami_task_t owner,
                              pami_svd_key_t key)
{
    for (svd_cached_t *c = st->cached[svd_hash(owner, key)]; c; c = c->next)
        if (c->owner == owner && c->key == key)
            return c;
    return NULL;
}

void svd_cached_remove(svd_state_t *st, svd_cached_t *c)
{
    svd_cached_t **pp = &st->cached[svd_hash(c->owner, c->key)];
    while (*pp != c)
        pp = &(*pp)->next;
    *pp = c->next;
    svd_blob_put(c->rec);
    free(c);
}
