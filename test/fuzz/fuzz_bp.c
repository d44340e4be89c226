/*
 * libFuzzer target: the barrier control packet (bp_packet_decode in
 * protocols/barrier_packets/bp_wire.h), the checks bp_on_packet makes
 * before any state is touched.
 *
 * Input: u16 job size, u8 payload bytes that came with it, then the
 * packet header.
 */
#include "fuzz_util.h"
#include "bp_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t     f      = {in, size};
    uint32_t ntasks = fz_u16(&f);
    size_t   dlen   = fz_u8(&f);
    size_t   len;
    uint8_t *hdr = fz_bytes(&f, f.left, &len);

    bp_packet_t p;
    int rc = bp_packet_decode(hdr, len, dlen, ntasks, &p);
    if (rc == BP_WIRE_OK &&
        (len != sizeof(p) || dlen != 0 || p.version != BP_VERSION ||
         p.type != BP_TYPE_ARRIVE || p.size < 2 || p.size > ntasks))
        abort(); /* accepted what the wire spec refuses */
    if (rc < BP_WIRE_OK || rc > BP_WIRE_FIELD)
        abort();
    free(hdr);
    return 0;
}
