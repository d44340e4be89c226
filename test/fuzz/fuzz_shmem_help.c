/*
 * libFuzzer target: the HELP message of the OpenSHMEM library's large
 * copies (openshmem/shmem_help_wire.h), which any PE of the job may send
 * to this PE's dispatch id 1: the checks its handler makes before it
 * copies between its segments and the sender's, and the chunks it then
 * copies.
 *
 * Input: u8 PEs (1-255), u8 this PE, u8 the sender, u32 and u32 the sizes
 * of the two segments (heap, globals), u8 AM data bytes that came with
 * it, then the header.
 */
#include "fuzz_util.h"
#include "../../openshmem/shmem_help_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t f = {in, size};
    int n_pes = fz_u8(&f);
    int my_pe = fz_u8(&f);
    int pe = fz_u8(&f);
    size_t seg_size[2];
    seg_size[0] = fz_u32(&f);
    seg_size[1] = fz_u32(&f);
    size_t dlen = fz_u8(&f);
    size_t len;
    uint8_t *hdr = fz_bytes(&f, f.left, &len);

    shmemi_help_msg_t m;
    if (shmemi_help_decode(hdr, len, dlen, pe, n_pes, my_pe, seg_size, 2,
                           &m) == NULL) {
        /* What the handler relies on before it touches memory. */
        if (pe == my_pe || pe >= n_pes || m.put > 1 || m.chunk < 64 ||
            m.dst_seg > 1 || m.src_seg > 1 || dlen != 0 ||
            m.dst_off + m.bytes > seg_size[m.dst_seg] ||
            m.dst_off + m.bytes < m.dst_off ||
            m.src_off + m.bytes > seg_size[m.src_seg] ||
            m.src_off + m.bytes < m.src_off)
            abort();
        /* Every chunk it may take lies inside the copy: the first, the
         * last and one between, by the handler's own arithmetic. */
        uint64_t n = shmemi_help_chunks(m.bytes, m.chunk);
        if (n > UINT32_MAX || (m.bytes > 0) != (n > 0))
            abort();
        uint32_t probe[3] = {0, (uint32_t)(n / 2), (uint32_t)(n - 1)};
        for (int k = 0; n > 0 && k < 3; k++) {
            uint64_t at, clen;
            shmemi_help_chunk_span(m.bytes, m.chunk, probe[k], &at, &clen);
            if (at >= m.bytes || clen == 0 || clen > m.chunk ||
                clen > m.bytes - at)
                abort();
            if (probe[k] == n - 1 && at + clen != m.bytes)
                abort();
        }
    }
    free(hdr);
    return 0;
}
