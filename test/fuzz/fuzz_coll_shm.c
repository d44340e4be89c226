/*
 * libFuzzer target: the shared-memory collectives' segment as the other
 * processes of the node may have written it (collectives/coll_shm_check.h
 * and its readers): the header check at attach (cshm_hdr_check, with the
 * layout from cshm_layout), every control line's round number
 * (cshm_flags_at over cshm_line_state), the eager ring's readiness for a
 * reader and a root (cshm_ring_ready, coll_alg_shm.c) and its entries
 * (cshm_ring_entry_check), whose accepted length is copied out as the
 * reader does.
 *
 * Input: u8 tasks - 1 (mod 16), u8 this task's index, u8 the ring
 * call's root, u8 slot / 64 - 1,
 * u32 signature and u16 bytes of this task's call, u64 job hash, u64 the
 * round's target, u64 a ring call number; u16 header bytes and the
 * header (written at offset 0); the rest is written where the ring
 * starts.
 */
#include "fuzz_util.h"
#include "coll_shm.h"

FZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t     f      = {in, size};
    size_t   nlocal = fz_u8(&f) % 16 + 1;
    size_t   me     = fz_u8(&f) % nlocal;
    size_t   root   = fz_u8(&f) % nlocal;
    uint64_t slot   = (uint64_t)(fz_u8(&f) % 64 + 1) * 64;
    uint32_t sig    = fz_u32(&f);
    size_t   total  = fz_u16(&f) % (CSHM_RING_MAX + 1);
    uint64_t hash   = fz_take(&f, 8);
    uint64_t target = fz_take(&f, 8);
    uint64_t k      = fz_take(&f, 8);
    size_t   hlen   = fz_u16(&f);

    cshm_t s;
    memset(&s, 0, sizeof(s));
    s.nlocal   = nlocal;
    s.my_index = me;
    s.slot     = slot;
    s.job_hash = hash;
    uint32_t idx[16]; /* geometry rank -> local index: rank 0 the root */
    for (size_t i = 0; i < nlocal; i++)
        idx[i] = (uint32_t)((i + root) % nlocal);
    s.idx     = idx;
    s.op.root = 0;
    if (!cshm_layout(nlocal, slot, &s.hdr_bytes, &s.ring_off, &s.seg_bytes))
        abort(); /* every layout of a real node fits */
    s.seg = calloc(1, s.seg_bytes);
    if (s.seg == NULL)
        abort();
    size_t   n;
    uint8_t *hdr = fz_bytes(&f, hlen < s.hdr_bytes ? hlen : s.hdr_bytes, &n);
    memcpy(s.seg, hdr, n);
    free(hdr);
    uint8_t *ring = fz_bytes(&f, s.seg_bytes - s.ring_off, &n);
    memcpy(s.seg + s.ring_off, ring, n);
    free(ring);

    /* The header as a follower checks it. */
    cshm_hdr_t h;
    memcpy(&h, s.seg, offsetof(cshm_hdr_t, attached));
    uint32_t      attached = atomic_load(&cshm_hdr(&s)->attached);
    cshm_expect_t want = {.nlocal = (uint32_t)nlocal, .slot = slot,
                          .hdr_bytes = s.hdr_bytes, .job_hash = hash,
                          .bytes = s.seg_bytes};
    if (cshm_hdr_check(&h, attached, &want) == NULL &&
        (h.magic != CSHM_MAGIC || h.nlocal != nlocal || h.slot != slot ||
         h.hdr_bytes != s.hdr_bytes || attached > nlocal))
        abort();

    /* Every line of a round, and the ring, as the readers see them. */
    int st = cshm_flags_at(&s, target);
    if (st < -1 || st > 1)
        abort();
    for (uint64_t what = 2 * k; what < 2 * k + 2; what++) {
        st = cshm_ring_ready(&s, what);
        if (st < -1 || st > 1)
            abort();
    }
    cshm_ring_entry_t *e = cshm_ring_entry(&s, k);
    if (cshm_ring_entry_check(atomic_load(&e->seq), e->sig, e->len, k, sig,
                              total) == CSHM_ENTRY_OK) {
        if (e->len != total || total > CSHM_RING_MAX)
            abort();
        uint8_t out[CSHM_RING_MAX];
        memcpy(out, cshm_ring_data(&s, k, total), total);
        fz_touch(out, total);
    }
    free(s.seg);
    return 0;
}
