/*
 * Single-producer/single-consumer queue of 64-byte lines in shared memory
 * (docs/protocols/shm-queue.md). An entry is one or more consecutive lines;
 * its first line starts with a 16-byte entry header whose stamp, stored
 * last with release order, says the entry is complete. The consumer hands
 * lines back by storing its head in the queue's control line. No atomic
 * read-modify-write anywhere.
 *
 * This file knows nothing of processes, files or pami: the producer and
 * consumer views point at memory someone else mapped.
 */
#ifndef PAMI_ADAPTERS_SHM_QUEUE_H
#define PAMI_ADAPTERS_SHM_QUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SHMQ_LINE      64
#define SHMQ_ENTRY_HDR 16

enum { SHMQ_KIND_MSG = 1, SHMQ_KIND_PAD = 2 };
/* SHMQ_REF: a whole message (FIRST and LAST) whose payload is its header
 * followed by a shmq_ref_t: the data stays in the producer's memory and
 * the consumer reads it from there (shm-queue.md, "References"). */
enum { SHMQ_FIRST = 1u << 0, SHMQ_LAST = 1u << 1, SHMQ_REF = 1u << 2 };

/* Where a reference's data lies in the producer's address space. */
typedef struct {
    uint64_t addr;
    uint64_t len;
} shmq_ref_t;
/* Control line flag: the producer calls membarrier(GLOBAL_EXPEDITED)
 * between storing want_room and looking for room. */
enum { SHMQ_CTL_MEMBARRIER = 1u << 0 };

/* First 16 bytes of an entry's first line. */
typedef struct {
    _Atomic uint32_t stamp;    /* (uint32_t)(line position + 1) */
    uint16_t         nlines;   /* lines of this entry, >= 1 */
    uint8_t          kind;     /* SHMQ_KIND_* */
    uint8_t          flags;    /* SHMQ_FIRST, SHMQ_LAST (messages) */
    uint16_t         hdr_len;  /* message's header bytes (FIRST only) */
    uint16_t         frag_len; /* payload bytes in this entry */
    uint32_t         total;    /* message's header + data bytes (FIRST) */
} shmq_entry_t;

/* The queue's control line: head by the consumer, the rest by the
 * producer. */
typedef struct {
    _Atomic uint64_t head;      /* lines the consumer is done with */
    _Atomic uint32_t want_room; /* 1: the producer sleeps until room */
    int32_t          pid, efd;  /* where the producer is woken */
    _Atomic uint32_t flags;     /* SHMQ_CTL_MEMBARRIER */
    uint8_t          pad[SHMQ_LINE - 24];
} shmq_ctl_t;

typedef struct {
    shmq_ctl_t *ctl;
    uint8_t    *ring;       /* nlines * SHMQ_LINE bytes */
    uint64_t    tail;       /* next line to write */
    uint64_t    head_seen;  /* last head read from ctl */
    uint32_t    nlines;     /* power of two */
    uint32_t    max_lines;  /* lines of the largest entry this producer
                               writes (the consumer may accept more) */
    /* Lines of each lap this producer writes, from the ring's start. A
     * lap ends with a pad that skips to the ring's end, so the lines past
     * it are never touched: a queue costs resident memory only for the
     * lap its producer uses, and the producer may grow the lap (never
     * shrink it) without telling the consumer. */
    uint32_t    lap;
    /* Lines of the lap as written (lap, or the whole ring when lap is 0
     * or larger): what the hot path compares against. */
    uint32_t    lap_lines;
    /* What the producer last stored in each line's stamp word, where it
     * knows; SHMQ_STAMP_UNKNOWN where it does not (payload was written
     * there, or nothing yet). Private memory: it lets a message skip
     * clearing the line after it when that line cannot pass for an entry
     * anyway. A line known to hold that value counts as unknown too,
     * which costs only a guard's store. */
    uint32_t   *shadow;
} shmq_prod_t;

/* The shadow's mark of a line whose stamp word is not known (0: what
 * a fresh record holds). */
#define SHMQ_STAMP_UNKNOWN 0u

/* Sets up a producer on a queue's control line and ring (the stamps of
 * the ring are taken as unknown) that writes laps of lap lines (0: the
 * whole ring; else a power of two, at least 2 x max_lines);
 * shmq_prod_fini frees what it holds. Returns false without memory. */
bool shmq_prod_init(shmq_prod_t *q, shmq_ctl_t *ctl, uint8_t *ring,
                    uint32_t nlines, uint32_t max_lines, uint32_t lap);
/* From the next entry on: laps of the whole ring and entries of up to
 * max_lines. Returns false without memory (nothing changed). */
bool shmq_prod_grow(shmq_prod_t *q, uint32_t max_lines);
void shmq_prod_fini(shmq_prod_t *q);

/* Bytes of a message one entry of max_lines carries. */
static inline size_t shmq_frag_max(uint32_t max_lines)
{
    return (size_t)max_lines * SHMQ_LINE - SHMQ_ENTRY_HDR;
}

/* Free lines the whole message of total bytes needs, pads for wrapping
 * included at worst, and the line after its last entry. */
size_t shmq_lines_needed(const shmq_prod_t *q, size_t total);

/* Free lines now (reads the consumer's head when the cached one says
 * less than want). A head that cannot be (ahead of the tail or further
 * back than the ring) reads as no room. */
size_t shmq_room(shmq_prod_t *q, size_t want);

/* Whether the consumer has taken (and delivered) every entry. */
static inline bool shmq_empty(shmq_prod_t *q)
{
    return atomic_load_explicit(&q->ctl->head, memory_order_acquire) ==
           q->tail;
}

/* Whether shmq_put_frag of the fragment at off would find room now. */
bool shmq_can_put(shmq_prod_t *q, size_t total, size_t off);

/* Copies n <= 48 bytes (a one-line entry's payload, or part of it)
 * with fixed-size moves, overlapping at the end, instead of a call: a
 * small message is most of what a queue carries. */
static inline void shmq_copy_small(uint8_t *dst, const void *src, size_t n)
{
    const uint8_t *s = src;
    if (n >= 16) {
        memcpy(dst, s, 16);
        if (n > 32)
            memcpy(dst + 16, s + 16, 16);
        memcpy(dst + n - 16, s + n - 16, 16);
    } else if (n >= 8) {
        memcpy(dst, s, 8);
        memcpy(dst + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        memcpy(dst, s, 4);
        memcpy(dst + n - 4, s + n - 4, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] = s[i];
    }
}

/* The lean form of shmq_put_frag for a message of one line (header and
 * data up to SHMQ_LINE - SHMQ_ENTRY_HDR bytes) that needs neither a pad
 * nor a read of the consumer's head: the entry and the line after it lie
 * inside the lap and the cached head shows room for both. It writes the
 * same entry, guard and record of stamps as shmq_put_frag; false (and
 * nothing written) when it does not apply, and shmq_put_frag decides. */
static inline bool shmq_put_line(shmq_prod_t *q, uint16_t hdr_len,
                                 const void *a, size_t alen, const void *b,
                                 size_t blen)
{
    size_t   total = alen + blen;
    uint64_t tail  = q->tail;
    uint32_t idx   = (uint32_t)(tail & (q->nlines - 1));
    if (total > SHMQ_LINE - SHMQ_ENTRY_HDR || idx + 2 > q->lap_lines ||
        tail - q->head_seen > (uint64_t)q->nlines - 2)
        return false;
    uint8_t      *line = q->ring + (size_t)idx * SHMQ_LINE;
    shmq_entry_t *e    = (shmq_entry_t *)line;
    /* The line after: left alone when it is known to hold a stamp other
     * than the one the consumer will wait for there (shm-queue.md). */
    uint32_t g = idx + 1, want = (uint32_t)(tail + 2), seen = q->shadow[g];
    if (seen == SHMQ_STAMP_UNKNOWN || seen == want) {
        uint32_t v = want - q->nlines;
        atomic_store_explicit(&((shmq_entry_t *)(line + SHMQ_LINE))->stamp,
                              v, memory_order_relaxed);
        q->shadow[g] = v;
    }
    if (alen > 0)
        shmq_copy_small(line + SHMQ_ENTRY_HDR, a, alen);
    if (blen > 0)
        shmq_copy_small(line + SHMQ_ENTRY_HDR + alen, b, blen);
    e->nlines   = 1;
    e->kind     = SHMQ_KIND_MSG;
    e->flags    = SHMQ_FIRST | SHMQ_LAST;
    e->hdr_len  = hdr_len;
    e->frag_len = (uint16_t)total;
    e->total    = (uint32_t)total;
    q->shadow[idx] = (uint32_t)(tail + 1);
    atomic_store_explicit(&e->stamp, (uint32_t)(tail + 1),
                          memory_order_release);
    q->tail = tail + 1;
    return true;
}

/* Writes the fragment of the message (a[0..alen) followed by b[0..blen))
 * that starts at offset off; returns the bytes written, -1 when no room.
 * hdr_len and total describe the whole message. */
long shmq_put_frag(shmq_prod_t *q, uint16_t hdr_len, size_t total,
                     const void *a, size_t alen, const void *b, size_t blen,
                     size_t off);

/* Writes a reference: one entry of the header and *ref (hdr_len + 16
 * bytes, at most one entry of the producer). Returns 0, -1 when no room.
 * The data must stay as it is until the consumer's head passes the
 * entry (q->tail after this call): it reads the data before it stores
 * such a head. */
int shmq_put_ref(shmq_prod_t *q, uint16_t hdr_len, const void *hdr,
                 const shmq_ref_t *ref);

/* The consumer's private state for one queue: nothing in it is read from
 * shared memory except through shmq_poll's checks. */
typedef struct shmq_cons shmq_cons_t;
/* Reads the data of n references (consecutive entries of q), one after
 * the other, into private memory; NULL and *data set to the first, or
 * why it cannot (the queue is then read no more). */
typedef const char *(*shmq_fetch_fn)(void *arg, shmq_cons_t *q,
                                     const shmq_ref_t *refs, unsigned n,
                                     uint8_t **data);
/* References read in one fetch: at most this many, and their data after
 * the first's at most this many bytes (one system call for a window of
 * sends, not one per send). */
#define SHMQ_REF_BATCH       16
#define SHMQ_REF_BATCH_BYTES ((size_t)256 * 1024)

struct shmq_cons {
    shmq_ctl_t *ctl;
    uint8_t    *ring;
    uint64_t    head;
    uint32_t    nlines;
    uint32_t    max_lines;
    size_t      msg_max;
    bool        broken;     /* a malformed entry: the stream is lost */
    bool        room_wanted; /* the last poll freed room for a sleeper */
    bool        registered; /* this process takes membarrier's fences */
    uint8_t    *asm_buf;    /* a message of several entries, being built */
    size_t      asm_cap, asm_len, asm_total;
    uint16_t    asm_hdr;
    shmq_fetch_fn fetch;    /* NULL: references are refused */
};

/* A message: its header part (hdr_len bytes, private memory: scratch or
 * the assembly buffer) and its data part, which for a message of one
 * entry is in the ring itself, valid until the callback returns. */
typedef void (*shmq_deliver_fn)(void *arg, const uint8_t *hdr,
                                size_t hdr_len, uint8_t *data,
                                size_t data_len);
typedef void (*shmq_drop_fn)(void *arg, const char *why);

/* Why an entry header (copied out of shared memory) is refused; NULL
 * when it is acceptable at this point of the stream. */
const char *shmq_entry_check(const shmq_entry_t *e, uint32_t nlines,
                             uint32_t max_lines, uint64_t head,
                             size_t msg_max, bool in_message, size_t asm_len,
                             size_t asm_total);

/* Takes up to max entries; delivers each whole message: one of a single
 * entry with its header copied to scratch (of shmq_frag_max(max_lines)
 * bytes) and its data in place, the whole copied to scratch when it has
 * no header part (everything in its data), one of several entries from
 * the assembly buffer, a reference with its data where q->fetch read
 * it (before the head passes the entry). A malformed
 * entry is reported through drop and the queue is read no more. Returns
 * the entries taken. */
unsigned shmq_poll(shmq_cons_t *q, unsigned max, uint8_t *scratch,
                   shmq_deliver_fn deliver, shmq_drop_fn drop, void *arg);

/* The consumer's lean path: the entry at the head when it is a whole
 * message of one line outside a message of several (entry_check's tests
 * for that case, on a private copy of its fields). Its payload area is
 * copied to scratch (at least SHMQ_LINE - SHMQ_ENTRY_HDR bytes): the
 * message's header is scratch[0..*hdr_len), its data follows it, total
 * bytes in all. The head moves in private memory only: shmq_give_back
 * hands the lines to the producer. Returns 1 taken, 0 nothing ready (or
 * the queue is broken), -1 another kind of entry is ready (shmq_poll
 * takes it). */
static inline int shmq_take_line(shmq_cons_t *q, uint8_t *scratch,
                                 size_t *hdr_len, size_t *total)
{
    uint8_t *line = q->ring + (size_t)(q->head & (q->nlines - 1)) * SHMQ_LINE;
    shmq_entry_t *se = (shmq_entry_t *)line;
    if (q->broken || atomic_load_explicit(&se->stamp, memory_order_acquire) !=
                         (uint32_t)(q->head + 1))
        return 0;
    uint16_t nlines = se->nlines, hl = se->hdr_len, fl = se->frag_len;
    uint8_t  kind = se->kind, flags = se->flags;
    uint32_t tot = se->total;
    if (nlines != 1 || kind != SHMQ_KIND_MSG ||
        flags != (SHMQ_FIRST | SHMQ_LAST) || q->asm_total != 0 ||
        fl != tot || hl > tot || tot > SHMQ_LINE - SHMQ_ENTRY_HDR ||
        tot > q->msg_max)
        return -1;
    memcpy(scratch, line + SHMQ_ENTRY_HDR, SHMQ_LINE - SHMQ_ENTRY_HDR);
    q->head++;
    *hdr_len = hl;
    *total   = tot;
    return 1;
}

/* Whether an entry is ready (the sleep check). */
/* The fence between a side's stores (an entry, a head) and its read of
 * the other side's flag (sleeping, want_room): a full one, or only the
 * compiler's order when the other side's membarrier fences this process
 * (light: shm-queue.md, "Sleeping and waking"). */
static inline void shmq_fence(bool light)
{
    if (light)
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

/* Hands the lines taken back to the producer (one store of the head),
 * then looks whether the producer sleeps for room (room_wanted). Called
 * after entries were taken; inline, as the lean path runs it per batch. */
static inline void shmq_give_back(shmq_cons_t *q)
{
    atomic_store_explicit(&q->ctl->head, q->head, memory_order_release);
    /* The producer's order is the mirror: flag, fence, head. A producer
     * that calls membarrier there (its control line says so; a false word
     * harms only its own wakeups) fences this process for us when it is
     * registered: the compiler's order is enough. */
    shmq_fence(q->registered &&
               (atomic_load_explicit(&q->ctl->flags, memory_order_relaxed) &
                SHMQ_CTL_MEMBARRIER));
    if (atomic_load_explicit(&q->ctl->want_room, memory_order_relaxed)) {
        atomic_store_explicit(&q->ctl->want_room, 0, memory_order_relaxed);
        q->room_wanted = true;
    }
}

static inline bool shmq_ready(const shmq_cons_t *q)
{
    const shmq_entry_t *e = (const shmq_entry_t *)(
        q->ring + (size_t)(q->head & (q->nlines - 1)) * SHMQ_LINE);
    return !q->broken &&
           atomic_load_explicit(&((shmq_entry_t *)e)->stamp,
                                memory_order_acquire) ==
               (uint32_t)(q->head + 1);
}

void shmq_cons_fini(shmq_cons_t *q);

#endif
