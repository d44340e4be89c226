/*
 * Barrier control packets: the handler. Every packet is checked before
 * use (length, version, type, every field's range, the group's size and
 * membership, the epoch window); a bad one is counted, logged once and
 * dropped.
 */
#include <string.h>

#include "bp_state.h"

static const char *const drop_text[BP_STAT_COUNT] = {
    [BP_STAT_dropped_short]   = "too short",
    [BP_STAT_dropped_long]    = "too long",
    [BP_STAT_dropped_version] = "of an unknown version",
    [BP_STAT_dropped_type]    = "of an unknown type",
    [BP_STAT_dropped_field]   = "with a field out of range",
    [BP_STAT_dropped_size]    = "with the wrong group size",
    [BP_STAT_dropped_epoch]   = "outside the epoch window",
    [BP_STAT_dropped_excess]  = "beyond the participant count",
    [BP_STAT_dropped_groups]  = "for one group too many",
};

static void drop(bp_state_t *st, int why, pami_task_t from, size_t len,
                 const bp_packet_t *p)
{
    st->stats[why]++;
    if (p == NULL)
        bp_log(WARN, "dropped a packet of %zu bytes from task %u: %s", len,
               from, drop_text[why]);
    else
        bp_log(WARN, "dropped a packet from task %u (v%u type %u size %u "
                     "epoch %u group %016llx): %s", from, p->version,
               p->type, p->size, p->epoch, (unsigned long long)p->group,
               drop_text[why]);
}

/* The group a checked packet counts toward, or NULL (*why set). */
static bp_group_t *group_of(bp_state_t *st, const bp_packet_t *p,
                            pami_task_t from, int *why)
{
    bp_group_t *g = st->world;
    if (g == NULL || p->group != g->id)
        g = bp_group_find(st, p->group);
    if (g == NULL) {
        /* Our first barrier on it is epoch 0, and the sender cannot be
         * past it before we entered it. */
        if (p->epoch != 0) {
            *why = BP_STAT_dropped_epoch;
            return NULL;
        }
        if (st->nforeign >= BP_FOREIGN_MAX) {
            *why = BP_STAT_dropped_groups;
            return NULL;
        }
        g = bp_group_new(st, p->group, p->size);
        if (g == NULL) {
            *why = BP_STAT_dropped_groups;
            return NULL;
        }
        st->nforeign++;
        return g;
    }
    if (p->size != g->size) {
        *why = BP_STAT_dropped_size;
        return NULL;
    }
    if (g->known && !bp_group_has(g, from)) {
        *why = BP_STAT_dropped_field;
        return NULL;
    }
    return g;
}

void bp_on_packet(pami_context_t ctx, void *cookie, const void *header,
                  size_t header_size, const void *data, size_t data_size,
                  pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)data; (void)recv; /* recv left empty: discarded */
    bp_state_t *st = cookie;
    pami_task_t from = 0;
    size_t      from_offset = 0;
    pami_endpoint_query(origin, &from, &from_offset);
    static const int stat_of[] = {
        [BP_WIRE_SHORT]   = BP_STAT_dropped_short,
        [BP_WIRE_LONG]    = BP_STAT_dropped_long,
        [BP_WIRE_VERSION] = BP_STAT_dropped_version,
        [BP_WIRE_TYPE]    = BP_STAT_dropped_type,
        [BP_WIRE_FIELD]   = BP_STAT_dropped_field,
    };
    bp_packet_t p;
    int wire = bp_packet_decode(header, header_size, data_size,
                                (uint32_t)st->ntasks, &p);
    if (wire == BP_WIRE_SHORT || wire == BP_WIRE_LONG) {
        drop(st, stat_of[wire], from, header_size + data_size, NULL);
        return;
    }
    int why = stat_of[wire];
    if (wire == BP_WIRE_OK && (from == st->me || from >= st->ntasks ||
                               from_offset != st->offset))
        why = BP_STAT_dropped_field;
    bp_group_t *g = why ? NULL : group_of(st, &p, from, &why);
    if (g != NULL && g->failed != PAMI_SUCCESS)
        return; /* its barriers ended already; nothing counts any more */
    if (g != NULL)
        why = bp_count(g, p.epoch);
    if (why != 0) {
        drop(st, why, from, sizeof(p), &p);
        return;
    }
    if (g->done_head != NULL)
        bp_deliver(g);
}
