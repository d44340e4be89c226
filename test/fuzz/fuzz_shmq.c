/*
 * libFuzzer target: the consumer of a shared-memory queue (shmq_poll,
 * shmq_entry_check in adapters/transport/shm_queue.c), which reads what
 * another process wrote, and the producer's round trip.
 *
 * Input: u8 ring size (64 << (b % 5) lines), u8 largest entry (1 + b %
 * (lines / 2) lines, at most 32), u8 message limit in KiB + 1, u8 the
 * producer's lap (lines >> (b % 4); its entries at most half of it until
 * it grows), then steps until the input ends, each a u8 kind:
 *  - even: a raw entry as a hostile producer writes it at the tail: u16
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
 * with a poll of the consumer after each step. Whatever it delivers must
 * lie inside what the entry announced (read in full: ASan checks).
 */
#include "fuzz_util.h"
#include "shm_queue.h"

typedef struct {
    uint64_t expect_seq, sent_seq;
    size_t   msg_max;
    bool     raw_seen;
} fz_state_t;

static void fz_deliver(void *arg, const uint8_t *hdr, size_t hdr_len,
                       uint8_t *data, size_t data_len)
{
    fz_state_t *st = arg;
    if (hdr_len + data_len > st->msg_max)
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
    uint32_t lap     = nlines >> (fz_u8(&f) % 4);
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
                     .max_lines = maxl, .msg_max = msg_max};
    fz_state_t  st = {.msg_max = msg_max};
    uint8_t     msg[2 * 65536];

    for (int steps = 0; f.left > 0 && steps < 4096; steps++) {
        uint8_t kind = fz_u8(&f);
        if ((kind & 1) == 0) {
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
