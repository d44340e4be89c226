/*
 * libFuzzer target: gathered eager sends (pami_sends_msg_decode,
 * pami_sends_check, pami_sends_next; docs/protocols/am.md "SENDS"), as a
 * target gets them after the AM header from any peer over TCP.
 *
 * Input: u8 flags (bit 0: the bytes after the 8-byte core payload are
 * AM data), then the payload (and the records).
 */
#include "fuzz_util.h"
#include "internal.h"

FZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t     f = {in, size};
    size_t   mlen, dlen;
    uint8_t *buf = fz_message(&f, sizeof(pami_sends_msg_t), &mlen, &dlen);
    const uint8_t *all = buf + mlen;

    /* The walk alone, as the receiver's first pass makes it on any
     * bytes: it must stay inside them whatever the count. */
    (void)pami_sends_check(all, dlen, 1u + (dlen & 63));

    pami_sends_msg_t m;
    if (pami_sends_msg_decode(buf, mlen, dlen, &m) == PAMI_WIRE_OK &&
        pami_sends_check(all, dlen, m.count) == PAMI_WIRE_OK) {
        /* What the receiver relies on once both passed: the count of
         * records, each of a user's or protocol's id, its parts inside
         * the data, the offset moving forward to exactly the end. */
        if (mlen != sizeof(m) || m.count == 0 || m.reserved != 0 ||
            dlen > PAMI_SENDS_BYTES || dlen % 8 != 0)
            abort();
        size_t   off = 0;
        uint32_t n   = 0;
        while (off < dlen) {
            size_t           was = off;
            pami_sends_rec_t rec;
            const uint8_t   *uhdr, *data;
            if (pami_sends_next(all, dlen, &off, &rec, &uhdr, &data) !=
                PAMI_WIRE_OK)
                abort();
            if (off <= was || off > dlen ||
                rec.dispatch >= PAMI_DISPATCH_CORE_BASE ||
                rec.uhdr_len > PAMI_HEADER_MAX ||
                uhdr != all + was + sizeof(rec) ||
                data != uhdr + rec.uhdr_len ||
                data + rec.data_len > all + off)
                abort();
            fz_touch(uhdr, rec.uhdr_len);
            fz_touch(data, rec.data_len);
            n++;
        }
        if (n != m.count)
            abort();
    }
    free(buf);
    return 0;
}
