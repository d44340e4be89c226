/*
 * The queue's producer and consumer (shm_queue.h). Every field the
 * consumer reads from shared memory is copied once and checked before use:
 * the producer is another process and may be broken or hostile.
 */
#include "shm_queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline uint32_t lines_of(size_t frag)
{
    return (uint32_t)((SHMQ_ENTRY_HDR + frag + SHMQ_LINE - 1) / SHMQ_LINE);
}

/* Lines a producer writes in each lap: the record of stamps covers
 * those only. */
static inline uint32_t lap_of(const shmq_prod_t *q)
{
    return q->lap_lines;
}

bool shmq_prod_init(shmq_prod_t *q, shmq_ctl_t *ctl, uint8_t *ring,
                    uint32_t nlines, uint32_t max_lines, uint32_t lap)
{
    *q = (shmq_prod_t){.ctl = ctl, .ring = ring, .nlines = nlines,
                       .max_lines = max_lines, .lap = lap,
                       .lap_lines = lap != 0 && lap < nlines ? lap : nlines};
    /* calloc: every line SHMQ_STAMP_UNKNOWN. */
    q->shadow = calloc(q->lap_lines, sizeof(*q->shadow));
    if (q->shadow == NULL) {
        shmq_prod_fini(q);
        return false;
    }
    return true;
}

bool shmq_prod_grow(shmq_prod_t *q, uint32_t max_lines)
{
    uint32_t old = lap_of(q), n = q->nlines;
    if (old < n) {
        /* The lines past the old lap were never written: unknown. */
        uint32_t *shadow = calloc(n, sizeof(*shadow));
        if (shadow == NULL)
            return false;
        memcpy(shadow, q->shadow, old * sizeof(*shadow));
        free(q->shadow);
        q->shadow = shadow;
    }
    q->lap       = n;
    q->lap_lines = n;
    q->max_lines = max_lines;
    return true;
}

void shmq_prod_fini(shmq_prod_t *q)
{
    free(q->shadow);
    q->shadow = NULL;
}

/* The producer's record of line i's stamp word. The record covers the
 * lap; a line past it (a tail moved there from outside this code, as
 * the fuzz target's raw writer does) stays unknown, which only costs
 * the guard's store. */
static inline void stamp_known(shmq_prod_t *q, uint32_t i, uint32_t v)
{
    if (__builtin_expect(i >= lap_of(q), 0))
        return;
    q->shadow[i] = v;
}

/* Lines from..from+n-1 get payload: their stamp words are unknown. */
static inline void stamps_unknown(shmq_prod_t *q, uint32_t from, uint32_t n)
{
    uint32_t lap = lap_of(q);
    if (from >= lap)
        return;
    if (n > lap - from)
        n = lap - from;
    /* SHMQ_STAMP_UNKNOWN is 0: one memset, not a store per line. */
    _Static_assert(SHMQ_STAMP_UNKNOWN == 0, "memset marks lines unknown");
    memset(&q->shadow[from], 0, (size_t)n * sizeof(*q->shadow));
}

/* The consumer will look at the line at position pos for stamp pos + 1
 * before this producer writes an entry there. What the line holds must
 * not be that: payload of a longer entry of an earlier lap could be, and
 * so could a stamp left there 2^32 lines ago. Unless the producer knows
 * it holds something else (an earlier stamp: the common case, one line
 * per message), it stores a stamp of the lap before; the consumer, which
 * sees the entry published after this, sees that too. */
static inline void guard_line(shmq_prod_t *q, uint64_t pos)
{
    uint32_t i    = (uint32_t)(pos & (q->nlines - 1));
    uint32_t want = (uint32_t)(pos + 1);
    if (i < lap_of(q) && q->shadow[i] != SHMQ_STAMP_UNKNOWN &&
        q->shadow[i] != want)
        return;
    uint32_t v = want - q->nlines;
    atomic_store_explicit(&((shmq_entry_t *)(q->ring + (size_t)i *
                                             SHMQ_LINE))->stamp,
                          v, memory_order_relaxed);
    stamp_known(q, i, v);
}

size_t shmq_lines_needed(const shmq_prod_t *q, size_t total)
{
    size_t fmax  = shmq_frag_max(q->max_lines);
    size_t whole = total / fmax;
    size_t lines = whole * q->max_lines;
    if (total % fmax != 0 || total == 0)
        lines += lines_of(total % fmax);
    /* Each wrap may waste the lines past the lap and up to max_lines in
     * front of them (an entry and the line after it stay inside the lap);
     * a lap holds at least lap - max_lines lines of entries. The line
     * after the last entry must be free too (shmq_put_frag). */
    size_t lap   = lap_of(q);
    size_t per   = lap > q->max_lines ? lap - q->max_lines : 1;
    size_t waste = q->nlines - lap + q->max_lines;
    return lines + (lines / per + 1) * waste + 1;
}

size_t shmq_room(shmq_prod_t *q, size_t want)
{
    uint64_t used = q->tail - q->head_seen;
    if (used <= q->nlines && q->nlines - used >= want)
        return q->nlines - used;
    uint64_t head = atomic_load_explicit(&q->ctl->head, memory_order_acquire);
    if (head > q->tail || q->tail - head > q->nlines)
        return 0; /* a head that cannot be: no room, ever */
    q->head_seen = head;
    return q->nlines - (q->tail - head);
}

/* Where the fragment of a message at offset off goes: its bytes, lines
 * and the pad before it; whether the ring has room for them and for the
 * line after the entry (shmq_put_frag clears that line's stamp). */
typedef struct {
    size_t   frag;
    uint32_t need, idx, pad;
} frag_place_t;

static bool frag_place(shmq_prod_t *q, size_t total, size_t off,
                       frag_place_t *f)
{
    size_t fmax = shmq_frag_max(q->max_lines);
    f->frag = total - off < fmax ? total - off : fmax;
    f->need = lines_of(f->frag);
    f->idx  = (uint32_t)(q->tail & (q->nlines - 1));
    /* An entry fits when it ends inside the lap; inside a lap shorter
     * than the ring the line after it must be inside too (it is guarded:
     * nothing past the lap is ever touched). Else a pad to the ring's
     * end, and the entry goes at line 0. */
    uint32_t lap = lap_of(q), end = f->idx + f->need;
    f->pad  = end > lap || (end == lap && lap < q->nlines)
                  ? q->nlines - f->idx : 0;
    size_t want = (size_t)f->pad + f->need + 1;
    return shmq_room(q, want) >= want;
}

bool shmq_can_put(shmq_prod_t *q, size_t total, size_t off)
{
    frag_place_t f;
    return frag_place(q, total, off, &f);
}

/* Copies n bytes at offset off of the two-part source. */
static inline void gather(uint8_t *dst, const uint8_t *a, size_t alen,
                          const uint8_t *b, size_t off, size_t n)
{
    /* The first line's part (put_frag) is at most 48 bytes: no call. */
    bool small = n <= SHMQ_LINE - SHMQ_ENTRY_HDR;
    if (off < alen) {
        size_t k = alen - off < n ? alen - off : n;
        if (small)
            shmq_copy_small(dst, a + off, k);
        else
            memcpy(dst, a + off, k);
        dst += k;
        n -= k;
        off = alen;
    }
    if (n == 0)
        return;
    if (small)
        shmq_copy_small(dst, b + (off - alen), n);
    else
        memcpy(dst, b + (off - alen), n);
}

static long put_frag(shmq_prod_t *q, uint16_t hdr_len, size_t total,
                     const void *a, size_t alen, const void *b, size_t off,
                     uint8_t flags)
{
    frag_place_t f;
    if (!frag_place(q, total, off, &f))
        return -1;
    size_t   frag = f.frag;
    uint32_t need = f.need, idx = f.idx, pad = f.pad;
    if (pad > 0) {
        shmq_entry_t *p = (shmq_entry_t *)(q->ring + (size_t)idx * SHMQ_LINE);
        p->nlines   = (uint16_t)pad;
        p->kind     = SHMQ_KIND_PAD;
        p->flags    = 0;
        p->hdr_len  = 0;
        p->frag_len = 0;
        p->total    = 0;
        /* The pad's lines after its first keep what they held. */
        guard_line(q, q->tail + pad);
        stamp_known(q, idx, (uint32_t)(q->tail + 1));
        atomic_store_explicit(&p->stamp, (uint32_t)(q->tail + 1),
                              memory_order_release);
        q->tail += pad;
        idx = 0;
    }
    uint8_t      *line = q->ring + (size_t)idx * SHMQ_LINE;
    shmq_entry_t *e    = (shmq_entry_t *)line;
    /* A consumer that caught up polls this entry's first line. The lines
     * after it are filled first and the first line's payload last, next
     * to its fields and stamp: the line then leaves the consumer's cache
     * once per entry, not once when the copy starts and again after it. */
    size_t first = frag < SHMQ_LINE - SHMQ_ENTRY_HDR
                       ? frag : SHMQ_LINE - SHMQ_ENTRY_HDR;
    if (frag > first)
        gather(line + SHMQ_LINE, a, alen, b, off + first, frag - first);
    gather(line + SHMQ_ENTRY_HDR, a, alen, b, off, first);
    e->nlines   = (uint16_t)need;
    e->kind     = SHMQ_KIND_MSG;
    e->flags    = (uint8_t)((off == 0 ? SHMQ_FIRST : 0) |
                            (off + frag == total ? SHMQ_LAST : 0) | flags);
    e->hdr_len  = hdr_len;
    e->frag_len = (uint16_t)frag;
    e->total    = (uint32_t)total;
    stamps_unknown(q, idx + 1, need - 1);
    /* The next entry starts at the line after this one: the consumer,
     * which sees this stamp, must not take that line for an entry. */
    guard_line(q, q->tail + need);
    stamp_known(q, idx, (uint32_t)(q->tail + 1));
    atomic_store_explicit(&e->stamp, (uint32_t)(q->tail + 1),
                          memory_order_release);
    q->tail += need;
    return (long)frag;
}

long shmq_put_frag(shmq_prod_t *q, uint16_t hdr_len, size_t total,
                   const void *a, size_t alen, const void *b, size_t blen,
                   size_t off)
{
    (void)blen;
    return put_frag(q, hdr_len, total, a, alen, b, off, 0);
}

int shmq_put_ref(shmq_prod_t *q, uint16_t hdr_len, const void *hdr,
                 const shmq_ref_t *ref)
{
    size_t total = (size_t)hdr_len + sizeof(*ref);
    if (total > shmq_frag_max(q->max_lines))
        return -1;
    return put_frag(q, hdr_len, total, hdr, hdr_len, ref, 0, SHMQ_REF) < 0
               ? -1 : 0;
}

/* shmq_entry_check's body, inlined into the consumer's loop. */
static inline const char *entry_check(const shmq_entry_t *e, uint32_t nlines,
                                      uint32_t max_lines, uint64_t head,
                                      size_t msg_max, bool in_message,
                                      size_t asm_len, size_t asm_total)
{
    uint32_t idx = (uint32_t)(head & (nlines - 1));
    /* A pad skips to the ring's end, past the lines of a lap shorter
     * than the ring, however many. */
    if (e->kind == SHMQ_KIND_PAD)
        return idx + e->nlines == nlines && idx > 0
                   ? NULL : "a pad that does not end at the ring's end";
    if (e->nlines == 0 || e->nlines > max_lines)
        return "an entry of a line count out of range";
    if (idx + e->nlines > nlines)
        return "an entry that crosses the ring's end";
    if (e->kind != SHMQ_KIND_MSG)
        return "an entry of unknown kind";
    if (lines_of(e->frag_len) != e->nlines)
        return "an entry whose length does not match its lines";
    bool first = e->flags & SHMQ_FIRST, last = e->flags & SHMQ_LAST;
    if (e->flags & ~(SHMQ_FIRST | SHMQ_LAST | SHMQ_REF))
        return "an entry with unknown flags";
    if ((e->flags & SHMQ_REF) &&
        (!first || !last || e->hdr_len > e->total ||
         e->total - e->hdr_len != sizeof(shmq_ref_t)))
        return "a reference that is not one entry of a header and 16 bytes";
    if (first) {
        if (in_message)
            return "a new message before the last one ended";
        if (e->total > msg_max)
            return "a message longer than the limit";
        if (e->hdr_len > e->total)
            return "a header longer than its message";
        if (last ? e->frag_len != e->total
                 : e->frag_len == 0 || e->frag_len >= e->total)
            return "a first fragment of the wrong length";
        return NULL;
    }
    if (!in_message)
        return "a continuation of no message";
    if (last ? asm_len + e->frag_len != asm_total
             : e->frag_len == 0 || asm_len + e->frag_len >= asm_total)
        return "a continuation of the wrong length";
    return NULL;
}

const char *shmq_entry_check(const shmq_entry_t *e, uint32_t nlines,
                             uint32_t max_lines, uint64_t head,
                             size_t msg_max, bool in_message, size_t asm_len,
                             size_t asm_total)
{
    return entry_check(e, nlines, max_lines, head, msg_max, in_message,
                       asm_len, asm_total);
}

/* Room for need bytes of a message of several entries, grown as its
 * entries come (a sender must send the bytes it announces before they
 * cost memory here), kept for the next one. */
static bool asm_reserve(shmq_cons_t *q, size_t need, size_t total)
{
    if (q->asm_cap >= need)
        return true;
    size_t cap = q->asm_cap * 2 > need ? q->asm_cap * 2 : need;
    if (cap > total)
        cap = total;
    uint8_t *b = realloc(q->asm_buf, cap);
    if (b == NULL)
        return false;
    q->asm_buf = b;
    q->asm_cap = cap;
    return true;
}

/* An entry header's fields, copied once out of shared memory (after its
 * stamp was read) and checked on the copy only. */
static inline shmq_entry_t entry_copy(const shmq_entry_t *se)
{
    shmq_entry_t e;
    e.nlines   = se->nlines;
    e.kind     = se->kind;
    e.flags    = se->flags;
    e.hdr_len  = se->hdr_len;
    e.frag_len = se->frag_len;
    e.total    = se->total;
    return e;
}

/* The reference e at the head, and the references of one line ready
 * right behind it (up to SHMQ_REF_BATCH of them, max in all, their data
 * up to SHMQ_REF_BATCH_BYTES after the first): their data is read in
 * one fetch, before the head passes any of them (the producer reuses a
 * buffer once it does), then each is delivered in order. NULL, or why
 * they cannot be read (nothing delivered). */
static const char *take_refs(shmq_cons_t *q, const shmq_entry_t *e,
                             const uint8_t *line, unsigned max,
                             uint8_t *scratch, shmq_deliver_fn deliver,
                             void *arg, unsigned *taken)
{
    enum { ONE = SHMQ_LINE - SHMQ_ENTRY_HDR };
    shmq_ref_t refs[SHMQ_REF_BATCH];
    uint8_t    hdrs[SHMQ_REF_BATCH - 1][ONE];
    uint16_t   hl[SHMQ_REF_BATCH];
    unsigned   n = 1;
    /* The first may be longer than a line: its header goes to scratch. */
    memcpy(scratch, line + SHMQ_ENTRY_HDR, e->frag_len);
    memcpy(&refs[0], scratch + e->hdr_len, sizeof(refs[0]));
    hl[0] = e->hdr_len;
    uint64_t pos   = q->head + e->nlines;
    size_t   bytes = 0;
    while (n < SHMQ_REF_BATCH && n < max) {
        const uint8_t *l = q->ring + (size_t)(pos & (q->nlines - 1)) *
                                         SHMQ_LINE;
        shmq_entry_t  *se = (shmq_entry_t *)l;
        if (atomic_load_explicit(&se->stamp, memory_order_acquire) !=
            (uint32_t)(pos + 1))
            break;
        shmq_entry_t f = entry_copy(se);
        /* Anything else, or a reference that fails its check, is left
         * for the loop to take (or refuse) on its own. */
        if (f.kind != SHMQ_KIND_MSG || !(f.flags & SHMQ_REF) ||
            f.nlines != 1 ||
            entry_check(&f, q->nlines, q->max_lines, pos, q->msg_max, false,
                        0, 0) != NULL)
            break;
        memcpy(hdrs[n - 1], l + SHMQ_ENTRY_HDR, f.frag_len);
        memcpy(&refs[n], hdrs[n - 1] + f.hdr_len, sizeof(refs[n]));
        if (refs[n].len > SHMQ_REF_BATCH_BYTES - bytes)
            break;
        bytes += refs[n].len;
        hl[n] = f.hdr_len;
        n++;
        pos++;
    }
    uint8_t    *data = NULL;
    const char *why  = q->fetch(arg, q, refs, n, &data);
    if (why != NULL)
        return why;
    for (unsigned i = 0; i < n; i++) {
        q->head += i == 0 ? e->nlines : 1;
        (*taken)++;
        deliver(arg, i == 0 ? scratch : hdrs[i - 1], hl[i], data,
                refs[i].len);
        data += refs[i].len;
    }
    return NULL;
}

unsigned shmq_poll(shmq_cons_t *q, unsigned max, uint8_t *scratch,
                   shmq_deliver_fn deliver, shmq_drop_fn drop, void *arg)
{
    unsigned taken = 0;
    uint64_t head0 = q->head, stored = q->head;
    /* Lines handed back within a batch: a producer streaming large
     * entries refills the ring while we deliver, instead of waiting for
     * the whole batch (lock step); small ones still pay one store per
     * batch. */
    uint64_t give_back = q->nlines / 8;
    while (taken < max && !q->broken) {
        if (q->head - stored >= give_back) {
            atomic_store_explicit(&q->ctl->head, q->head,
                                  memory_order_release);
            stored = q->head;
        }
        size_t hl, total;
        int    one = shmq_take_line(q, scratch, &hl, &total);
        if (one > 0) {
            taken++;
            deliver(arg, scratch, hl, scratch + hl, total - hl);
            continue;
        }
        if (one == 0)
            break;
        uint8_t      *line = q->ring +
                        (size_t)(q->head & (q->nlines - 1)) * SHMQ_LINE;
        shmq_entry_t *se   = (shmq_entry_t *)line;
        shmq_entry_t  e    = entry_copy(se);
        bool in_message = q->asm_total > 0;
        const char *why = entry_check(&e, q->nlines, q->max_lines, q->head,
                                      q->msg_max, in_message, q->asm_len,
                                      q->asm_total);
        if (why == NULL && e.kind == SHMQ_KIND_MSG && (e.flags & SHMQ_REF)) {
            why = q->fetch == NULL ? "a reference this consumer does not take"
                                   : take_refs(q, &e, line, max - taken,
                                               scratch, deliver, arg, &taken);
            if (why == NULL)
                continue;
        }
        if (why == NULL && e.kind == SHMQ_KIND_MSG &&
            (e.flags & (SHMQ_FIRST | SHMQ_LAST)) != (SHMQ_FIRST | SHMQ_LAST)) {
            size_t done  = (e.flags & SHMQ_FIRST) ? 0 : q->asm_len;
            size_t total = (e.flags & SHMQ_FIRST) ? e.total : q->asm_total;
            if (!asm_reserve(q, done + e.frag_len, total))
                why = "a message too long to assemble (no memory)";
        }
        if (why != NULL) {
            q->broken = true;
            drop(arg, why);
            break;
        }
        q->head += e.nlines;
        taken++;
        if (e.kind == SHMQ_KIND_PAD)
            continue;
        if ((e.flags & (SHMQ_FIRST | SHMQ_LAST)) == (SHMQ_FIRST | SHMQ_LAST)) {
            /* The header, which the receiver decodes, is copied once (the
             * producer may rewrite the ring); the data is handed in place,
             * as UCX's shared-memory transports do: nothing of it is
             * checked, and copying it would pull every line of it across
             * for a handler that may never read it. A message without a
             * header part (pami's packed form: its header is in the data)
             * is copied whole. (A message of one line went by
             * shmq_take_line, whole, above.) */
            uint8_t *payload = line + SHMQ_ENTRY_HDR;
            if (e.hdr_len > 0) {
                memcpy(scratch, payload, e.hdr_len);
                deliver(arg, scratch, e.hdr_len, payload + e.hdr_len,
                        (size_t)e.frag_len - e.hdr_len);
            } else {
                memcpy(scratch, payload, e.frag_len);
                deliver(arg, scratch, 0, scratch, e.frag_len);
            }
            continue;
        }
        if (e.flags & SHMQ_FIRST) {
            q->asm_total = e.total;
            q->asm_hdr   = e.hdr_len;
            q->asm_len   = 0;
        }
        memcpy(q->asm_buf + q->asm_len, line + SHMQ_ENTRY_HDR, e.frag_len);
        q->asm_len += e.frag_len;
        if (e.flags & SHMQ_LAST) {
            size_t total = q->asm_total;
            q->asm_total = 0;
            q->asm_len   = 0;
            deliver(arg, q->asm_buf, q->asm_hdr, q->asm_buf + q->asm_hdr,
                    total - q->asm_hdr);
        }
    }
    if (q->head != head0)
        shmq_give_back(q);
    return taken;
}

void shmq_cons_fini(shmq_cons_t *q)
{
    free(q->asm_buf);
    q->asm_buf = NULL;
    q->asm_cap = 0;
}
