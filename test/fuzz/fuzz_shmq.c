/*
 * libFuzzer target: the consumer of a shared-memory queue (shmq_poll,
 * shmq_entry_check in adapters/transport/shm_queue.c), which reads what
 * another process wrote, and the producer's round trip.
 *
 * Input: u8 ring size (64 << (b % 5) lines), u8 largest entry (1 + b %
 * (lines / 2) lines, at most 32), u8 message limit in KiB + 1, u8 the
 * producer's lap (lines >> (b % 4); its entries at most half of it until
 * it grows; bit 2 set: the consumer takes no references), then steps
 * until the input ends, each a u8 kind:
 *  - 2 mod 4: a raw reference (shm-queue.md, "References") as a hostile
 *    producer writes it: u8 header bytes, u8 damage (bit 0 clears
 *    FIRST, 1 clears LAST, 2 total + 1, 3 one line more, 4 the address
 *    is a raw u64 instead of the reference buffer's plus an offset), i32
 *    offset into this process's reference buffer (or u64 address), u32
 *    length; read by the consumer's fetch with process_vm_readv of this
 *    process, as pami's reads its producer's: inside the buffer, across
 *    its end, unmapped, huge;
 *  - 0 mod 4: a raw entry as a hostile producer writes it at the tail: u16
 *    lines, u8 kind, u8 flags, u16 header bytes, u16 payload bytes, u32
 *    total, u8 lines the tail moves (1 + b % 32), then payload bytes into
 *    the lines (wrapping around the ring as raw memory does); its stamp
 *    is the one the consumer expects there, so the fields are reached;
 *  - odd: a message through shmq_put_frag (u16 header bytes, u16 data
 *    bytes, contents from a counter), which must come out whole, equal
 *    and in order, as long as no raw entry broke the queue; a kind of
 *    3 mod 4 first grows the producer's lap to the whole ring; with bit
 *    2 set the message fits one line (header below 49 bytes, data up to
 *    what is left of 48) and goes by shmq_put_line where that applies;
 *    with bit 3 set (and bit 2 clear) the data goes by reference
 *    (shmq_put_ref, the data in the reference buffer) to a consumer
 *    that takes them, read in batches (bit 4: no poll after it);
 * with a poll of the consumer after each step. Whatever it delivers must
 * lie inside what the entry announced (read in full: ASan checks).
 */
#include <sys/uio.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "shm_queue.h"

/* pami's limit of one reference's data (SHM_REF_MAX in shm.c). */
#define FZ_REF_MAX ((size_t)128 * 1024)

typedef struct {
    uint64_t expect_seq, sent_seq;
    size_t   msg_max;
    bool     raw_seen;
    uint8_t *fetched;     /* where fz_fetch read the last batch */
    size_t   fetched_len;
} fz_state_t;

/* The producer's memory that references point into. */
static uint8_t fz_refmem[2 * 65536];

/* The consumer's fetch, with the checks of pami's (shm.c): one
 * process_vm_readv of this process for the batch into a buffer of its
 * own; anything but the whole batch read is refused. */
static uint8_t *fz_ref_buf;
static size_t   fz_ref_cap;

static const char *fz_fetch(void *arg, shmq_cons_t *q, const shmq_ref_t *refs,
                            unsigned n, uint8_t **data)
{
    (void)q;
    fz_state_t  *st = arg;
    struct iovec remote[SHMQ_REF_BATCH];
    size_t       total = 0;
    if (n == 0 || n > SHMQ_REF_BATCH)
        abort(); /* shmq_poll never asks for that */
    for (unsigned k = 0; k < n; k++) {
        if (refs[k].len == 0 || refs[k].len > FZ_REF_MAX)
            return "a reference of no data or of more than 128 KiB";
        remote[k] = (struct iovec){.iov_base = (void *)(uintptr_t)refs[k].addr,
                                   .iov_len  = refs[k].len};
        total += refs[k].len;
    }
    /* Behind the first, the batch holds SHMQ_REF_BATCH_BYTES at most. */
    if (total - refs[0].len > SHMQ_REF_BATCH_BYTES)
        abort();
    if (total > fz_ref_cap) {
        uint8_t *b = realloc(fz_ref_buf, total);
        if (b == NULL)
            abort();
        fz_ref_buf = b;
        fz_ref_cap = total;
    }
    struct iovec local = {.iov_base = fz_ref_buf, .iov_len = total};
    if (process_vm_readv(getpid(), &local, 1, remote, n, 0) != (ssize_t)total)
        return "a reference whose data cannot be read";
    st->fetched     = fz_ref_buf;
    st->fetched_len = total;
    *data           = fz_ref_buf;
    return NULL;
}

static void fz_deliver(void *arg, const uint8_t *hdr, size_t hdr_len,
                       uint8_t *data, size_t data_len)
{
    fz_state_t *st = arg;
    bool ref = st->fetched != NULL && data >= st->fetched &&
               data < st->fetched + st->fetched_len;
    /* A reference's data lies in what fetch read, the rest in the
     * message limit. */
    if (ref ? data_len == 0 || data_len > FZ_REF_MAX ||
                  data_len > (size_t)(st->fetched + st->fetched_len - data) ||
                  hdr_len > st->msg_max
            : hdr_len + data_len > st->msg_max)
        abort();
    fz_touch(hdr, hdr_len);
    fz_touch(data, data_len);
    if (st->raw_seen)
        return;
    /* A round-trip message: a pattern of its number over header and data
     * together. */
    uint64_t seq = st->expect_seq++;
    for (size_t i = 0; i < hdr_len + data_len; i++)
        if ((i < hdr_len ? hdr[i] : data[i - hdr_len]) !=
            (uint8_t)(seq * 31 + i))
            abort();
}

static void fz_drop(void *arg, const char *why)
{
    (void)arg;
    if (why == NULL || why[0] == '\0')
        abort();
}

FZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t     f      = {in, size};
    uint32_t nlines = 64u << (fz_u8(&f) % 5);
    uint32_t maxl   = 1 + fz_u8(&f) % (nlines / 2);
    if (maxl > 32)
        maxl = 32;
    size_t   msg_max = ((size_t)fz_u8(&f) + 1) * 1024;
    uint8_t  lapb    = fz_u8(&f);
    uint32_t lap     = nlines >> (lapb % 4);
    uint8_t *ring    = aligned_alloc(64, (size_t)nlines * SHMQ_LINE);
    uint8_t *scratch = malloc(shmq_frag_max(maxl));
    shmq_ctl_t ctl;
    if (ring == NULL || scratch == NULL)
        abort();
    memset(ring, 0, (size_t)nlines * SHMQ_LINE);
    memset(&ctl, 0, sizeof(ctl));
    shmq_prod_t p;
    if (!shmq_prod_init(&p, &ctl, ring, nlines,
                        maxl < lap / 2 ? maxl : lap / 2, lap))
        abort();
    shmq_cons_t c = {.ctl = &ctl, .ring = ring, .nlines = nlines,
                     .max_lines = maxl, .msg_max = msg_max,
                     .fetch = (lapb & 4) ? NULL : fz_fetch};
    size_t refoff = 0; /* where the next reference's data goes */
    fz_state_t  st = {.msg_max = msg_max};
    uint8_t     msg[2 * 65536];

    for (int steps = 0; f.left > 0 && steps < 4096; steps++) {
        uint8_t kind = fz_u8(&f);
        if ((kind & 3) == 2) {
            uint8_t  hl    = fz_u8(&f), dmg = fz_u8(&f);
            int32_t  off   = (int32_t)fz_u32(&f);
            uint64_t addr  = (uint64_t)(uintptr_t)fz_refmem + (int64_t)off;
            if (dmg & 16)
                addr = (uint64_t)fz_u32(&f) << 32 | fz_u32(&f);
            shmq_ref_t   r = {.addr = addr, .len = fz_u32(&f)};
            size_t       frag = (size_t)hl + sizeof(r);
            shmq_entry_t e    = {0};
            e.nlines   = (uint16_t)((SHMQ_ENTRY_HDR + frag + SHMQ_LINE - 1) /
                                    SHMQ_LINE + ((dmg & 8) ? 1 : 0));
            e.kind     = SHMQ_KIND_MSG;
            e.flags    = (uint8_t)(SHMQ_REF | ((dmg & 1) ? 0 : SHMQ_FIRST) |
                                   ((dmg & 2) ? 0 : SHMQ_LAST));
            e.hdr_len  = hl;
            e.frag_len = (uint16_t)frag;
            e.total    = (uint32_t)frag + ((dmg & 4) ? 1 : 0);
            if (p.tail - c.head + e.nlines > nlines)
                break; /* a producer only writes where it may */
            uint8_t *line = ring + (size_t)(p.tail & (nlines - 1)) * SHMQ_LINE;
            memcpy(line + 4, (uint8_t *)&e + 4, SHMQ_ENTRY_HDR - 4);
            uint8_t pay[255 + sizeof(r)];
            memset(pay, 0x5c, hl);
            memcpy(pay + hl, &r, sizeof(r));
            for (size_t i = 0; i < frag; i++)
                ring[((p.tail & (nlines - 1)) * SHMQ_LINE + SHMQ_ENTRY_HDR +
                      i) % ((size_t)nlines * SHMQ_LINE)] = pay[i];
            atomic_store(&((shmq_entry_t *)line)->stamp,
                         (uint32_t)(p.tail + 1));
            p.tail += e.nlines;
            st.raw_seen = true;
        } else if ((kind & 1) == 0) {
            shmq_entry_t e = {0};
            e.nlines   = fz_u16(&f);
            e.kind     = fz_u8(&f);
            e.flags    = fz_u8(&f);
            e.hdr_len  = fz_u16(&f);
            e.frag_len = fz_u16(&f);
            e.total    = fz_u32(&f);
            uint32_t move = 1 + fz_u8(&f) % 32;
            if (p.tail - c.head + move > nlines)
                break; /* a producer only writes where it may */
            uint8_t *line = ring + (size_t)(p.tail & (nlines - 1)) * SHMQ_LINE;
            memcpy(line + 4, (uint8_t *)&e + 4, SHMQ_ENTRY_HDR - 4);
            for (size_t i = SHMQ_ENTRY_HDR; i < (size_t)move * SHMQ_LINE &&
                                            f.left > 0; i++)
                ring[((p.tail & (nlines - 1)) * SHMQ_LINE + i) %
                     ((size_t)nlines * SHMQ_LINE)] = fz_u8(&f);
            atomic_store(&((shmq_entry_t *)line)->stamp,
                         (uint32_t)(p.tail + 1));
            p.tail += move;
            st.raw_seen = true;
        } else {
            if ((kind & 3) == 3 && !shmq_prod_grow(&p, maxl))
                abort();
            size_t hl = fz_u16(&f) % 1024, dl = fz_u16(&f);
            bool   lean = (kind & 4) != 0;
            if (lean) {
                hl %= SHMQ_LINE - SHMQ_ENTRY_HDR + 1;
                dl %= SHMQ_LINE - SHMQ_ENTRY_HDR + 1 - hl;
            }
            size_t total = hl + dl;
            if (total > msg_max)
                total = msg_max, dl = total - hl > 0 ? total - hl : 0;
            if (hl > total)
                hl = total;
            dl = total - hl;
            uint64_t seq = st.sent_seq;
            for (size_t i = 0; i < total; i++)
                msg[i] = (uint8_t)(seq * 31 + i);
            /* (the entry, header and reference, is a message too: within
             * the consumer's limit, as pami's always are) */
            if ((kind & 12) == 8 && dl > 0 && c.fetch != NULL &&
                hl + sizeof(shmq_ref_t) <= shmq_frag_max(p.max_lines) &&
                hl + sizeof(shmq_ref_t) <= msg_max) {
                /* By reference: the data in the producer's memory. */
                if (refoff + dl > sizeof(fz_refmem)) {
                    /* The consumer reads what waits before it is reused. */
                    shmq_poll(&c, 1u << 20, scratch, fz_deliver, fz_drop, &st);
                    refoff = 0;
                }
                memcpy(fz_refmem + refoff, msg + hl, dl);
                shmq_ref_t r = {.addr = (uint64_t)(uintptr_t)(fz_refmem +
                                                              refoff),
                                .len  = dl};
                if (shmq_put_ref(&p, (uint16_t)hl, msg, &r) == 0) {
                    refoff += dl;
                    st.sent_seq++;
                    /* Several in a row make a batch: a poll now and then. */
                    if ((kind & 16) == 0)
                        shmq_poll(&c, 1u << 20, scratch, fz_deliver, fz_drop,
                                  &st);
                } else {
                    shmq_poll(&c, 1u << 20, scratch, fz_deliver, fz_drop, &st);
                }
                continue;
            }
            size_t need = shmq_lines_needed(&p, total);
            if (need > nlines || shmq_room(&p, need) < need) {
                shmq_poll(&c, 1u << 20, scratch, fz_deliver, fz_drop, &st);
                continue;
            }
            if (lean && shmq_put_line(&p, (uint16_t)hl, msg, hl, msg + hl,
                                      dl)) {
                st.sent_seq++;
                shmq_poll(&c, 1u << 20, scratch, fz_deliver, fz_drop, &st);
                continue;
            }
            size_t off = 0;
            while (off < total || (total == 0 && off == 0)) {
                long n = shmq_put_frag(&p, (uint16_t)hl, total, msg, hl,
                                       msg + hl, dl, off);
                if (n < 0)
                    abort(); /* room was checked */
                off += (size_t)n;
                if (total == 0)
                    break;
            }
            st.sent_seq++;
        }
        shmq_poll(&c, 1u << 20, scratch, fz_deliver, fz_drop, &st);
    }
    shmq_poll(&c, 1u << 20, scratch, fz_deliver, fz_drop, &st);
    /* Without raw entries nothing may be refused or lost. */
    if (!st.raw_seen && (c.broken || st.expect_seq != st.sent_seq))
        abort();
    shmq_cons_fini(&c);
    shmq_prod_fini(&p);
    free(scratch);
    free(ring);
    return 0;
}
