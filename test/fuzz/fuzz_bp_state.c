/*
 * libFuzzer target: the barrier packets' handler with its state
 * (bp_on_packet in protocols/barrier_packets/bp_recv.c): a stream of
 * packets from any sender, counted toward the world group or toward
 * groups the packets name (foreign groups, at most BP_FOREIGN_MAX), with
 * the epoch window and the participant count. No barrier is entered, so
 * nothing is sent: this task has only heard of the groups.
 *
 * Input: u8 job size, then records of u16 sender task, u8 sender context
 * offset, u8 header length, and that many header bytes (a packet is 24).
 */
#include "fuzz_util.h"
#include "bp_state.h"

FZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t        f  = {in, size};
    bp_state_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        abort();
    st->ntasks   = fz_u8(&f) % 64 + 2u;
    st->me       = 0;
    st->nbuckets = 8;
    st->buckets  = calloc(st->nbuckets, sizeof(*st->buckets));
    if (st->buckets == NULL)
        abort();
    uint64_t world = bp_group_seed(0, st->ntasks);
    for (uint32_t t = 0; t < st->ntasks; t++)
        world += bp_group_term(t);
    st->world = bp_group_new(st, world, st->ntasks);
    if (st->world == NULL)
        abort();
    st->world->known = true;
    st->world->world = true;

    while (f.left > 0) {
        uint32_t from   = fz_u16(&f);
        uint32_t offset = fz_u8(&f);
        size_t   len;
        uint8_t *hdr = fz_bytes(&f, fz_u8(&f), &len);
        bp_on_packet(NULL, st, hdr, len, NULL, 0,
                     (pami_endpoint_t)(from << 8 | offset), NULL);
        free(hdr);
    }
    /* What a group counted stays within its participants. */
    for (size_t b = 0; b < st->nbuckets; b++)
        for (bp_group_t *g = st->buckets[b]; g != NULL; g = g->next)
            for (int e = 0; e < 2; e++)
                if (g->counter[e] < 1 - (int32_t)g->size || g->counter[e] > 0)
                    abort();
    if (st->nforeign > BP_FOREIGN_MAX)
        abort();
    bp_groups_free(st);
    free(st);
    return 0;
}
