/*
 * Decoders of the core's wire formats (wire.h): bytes in, a checked view
 * out, nothing else touched.
 */
#include <string.h>

#include "internal.h"
#include "wire.h"

pami_wire_check_t pami_am_decode(const void *hdr, size_t hdr_len, void *data,
                                 size_t data_len, const void *rndv_desc,
                                 uint32_t ntasks, uint32_t ncontexts,
                                 pami_am_msg_t *out)
{
    return pami_am_decode_inline(hdr, hdr_len, data, data_len, rndv_desc,
                                 ntasks, ncontexts, out);
}

pami_wire_check_t pami_ack_decode(const void *buf, size_t len,
                                  pami_ack_t *out, pami_result_t *result)
{
    if (len != sizeof(*out))
        return PAMI_WIRE_BAD_LENGTH;
    memcpy(out, buf, sizeof(*out));
    *result = (unsigned)out->result < PAMI_RESULT_LAST
                  ? (pami_result_t)out->result : PAMI_ERROR;
    return PAMI_WIRE_OK;
}

pami_wire_check_t pami_barrier_msg_decode(const void *buf, size_t len,
                                          pami_barrier_msg_t *out)
{
    if (len != sizeof(*out))
        return PAMI_WIRE_BAD_LENGTH;
    memcpy(out, buf, sizeof(*out));
    if (out->round >= 64)
        return PAMI_WIRE_BAD_FIELD;
    return PAMI_WIRE_OK;
}

pami_wire_check_t pami_probe_decode(const void *buf, size_t len,
                                    pami_probe_msg_t *out)
{
    if (len != sizeof(*out))
        return PAMI_WIRE_BAD_LENGTH;
    memcpy(out, buf, sizeof(*out));
    if (out->kind != PAMI_PROBE_ASK && out->kind != PAMI_PROBE_ANSWER)
        return PAMI_WIRE_BAD_FIELD;
    if (out->reserved[0] != 0 || out->reserved[1] != 0 ||
        out->reserved[2] != 0)
        return PAMI_WIRE_BAD_FIELD;
    return PAMI_WIRE_OK;
}

pami_wire_check_t pami_sends_msg_decode(const void *buf, size_t len,
                                        size_t data_len,
                                        pami_sends_msg_t *out)
{
    if (len != sizeof(*out))
        return PAMI_WIRE_BAD_LENGTH;
    memcpy(out, buf, sizeof(*out));
    if (out->count == 0 || out->reserved != 0)
        return PAMI_WIRE_BAD_FIELD;
    if (data_len < sizeof(pami_sends_rec_t) || data_len > PAMI_SENDS_BYTES ||
        data_len % 8 != 0)
        return PAMI_WIRE_BAD_LENGTH;
    return PAMI_WIRE_OK;
}

pami_wire_check_t pami_sends_next(const uint8_t *buf, size_t len, size_t *off,
                                  pami_sends_rec_t *rec,
                                  const uint8_t **uhdr, const uint8_t **data)
{
    if (*off > len || len - *off < sizeof(*rec))
        return PAMI_WIRE_SHORT;
    memcpy(rec, buf + *off, sizeof(*rec));
    if (rec->dispatch >= PAMI_SENDS_DISPATCH_END ||
        rec->uhdr_len > PAMI_SENDS_UHDR_MAX)
        return PAMI_WIRE_BAD_FIELD;
    /* Both lengths are checked against what is left before the padded
     * size is formed, so nothing here can wrap. */
    size_t left = len - *off - sizeof(*rec);
    if (rec->data_len > left || rec->uhdr_len > left - rec->data_len)
        return PAMI_WIRE_BAD_LENGTH;
    size_t size = pami_sends_rec_size(rec->uhdr_len, rec->data_len);
    if (size > len - *off)
        return PAMI_WIRE_BAD_LENGTH;
    *uhdr = buf + *off + sizeof(*rec);
    *data = *uhdr + rec->uhdr_len;
    *off += size;
    return PAMI_WIRE_OK;
}

pami_wire_check_t pami_sends_check(const uint8_t *buf, size_t len,
                                   uint32_t count)
{
    size_t   off = 0;
    uint32_t n   = 0;
    while (off < len) {
        pami_sends_rec_t  rec;
        const uint8_t    *uhdr, *data;
        pami_wire_check_t why = pami_sends_next(buf, len, &off, &rec, &uhdr,
                                                &data);
        if (why != PAMI_WIRE_OK)
            return why;
        if (++n > count)
            return PAMI_WIRE_BAD_LENGTH;
    }
    return n == count ? PAMI_WIRE_OK : PAMI_WIRE_SHORT;
}

pami_wire_check_t pami_rndv_rts_decode(const void *buf, size_t len,
                                       uint32_t origin_task,
                                       const uint8_t *secrets, size_t ntasks,
                                       pami_rndv_rts_t *out)
{
    if (len < sizeof(*out))
        return PAMI_WIRE_SHORT;
    memcpy(out, buf, sizeof(*out));
    if (out->version != RNDV_VERSION)
        return PAMI_WIRE_BAD_VERSION;
    uint32_t kind = out->flags & (RNDV_FLAG_CMA | RNDV_FLAG_MSG);
    if ((out->flags & ~(RNDV_FLAG_CMA | RNDV_FLAG_MSG | RNDV_FLAG_DATA |
                        RNDV_FLAG_NOACK)) != 0 ||
        kind == (RNDV_FLAG_CMA | RNDV_FLAG_MSG) ||
        ((out->flags & RNDV_FLAG_DATA) && kind != RNDV_FLAG_MSG) ||
        ((out->flags & RNDV_FLAG_NOACK) &&
         (!(out->flags & RNDV_FLAG_DATA) || out->bytes > RNDV_MSG_CHUNK)))
        return PAMI_WIRE_BAD_FIELD;
    if (out->flags & RNDV_FLAG_CMA)
        return PAMI_WIRE_OK;
    if (out->flags & RNDV_FLAG_MSG) {
        /* Nothing of the origin's memory is described: all zero. */
        static const pami_memregion_t zero;
        return out->base == 0 && out->bytes > 0 &&
                       memcmp(&out->mr, &zero, sizeof(zero)) == 0
                   ? PAMI_WIRE_OK : PAMI_WIRE_BAD_FIELD;
    }
    pami_mr_view_t v;
    if (pami_mr_wire_decode(&out->mr, sizeof(out->mr), secrets, ntasks, &v) !=
        PAMI_MR_OK)
        return PAMI_WIRE_BAD_REGION;
    if (v.bytes != out->bytes || v.owner_task != origin_task ||
        v.base != out->base)
        return PAMI_WIRE_BAD_FIELD;
    return PAMI_WIRE_OK;
}

pami_wire_check_t pami_rndv_chunk_decode(const void *buf, size_t len,
                                         size_t data_len,
                                         pami_rndv_chunk_t *out)
{
    if (len < sizeof(*out))
        return PAMI_WIRE_SHORT;
    if (len != sizeof(*out))
        return PAMI_WIRE_BAD_LENGTH;
    memcpy(out, buf, sizeof(*out));
    if (out->version != RNDV_VERSION)
        return PAMI_WIRE_BAD_VERSION;
    if (out->reserved != 0 || out->bytes == 0 ||
        out->bytes > RNDV_CHUNK_MAX || out->offset > UINT64_MAX - out->bytes)
        return PAMI_WIRE_BAD_FIELD;
    switch (out->type) {
    case RNDV_CHUNK_FETCH:
        if (out->result != PAMI_SUCCESS)
            return PAMI_WIRE_BAD_FIELD;
        return data_len == 0 ? PAMI_WIRE_OK : PAMI_WIRE_BAD_LENGTH;
    case RNDV_CHUNK_DATA:
        if (out->result < 0 || out->result >= PAMI_RESULT_LAST)
            return PAMI_WIRE_BAD_FIELD;
        if (out->result != PAMI_SUCCESS)
            return data_len == 0 ? PAMI_WIRE_OK : PAMI_WIRE_BAD_LENGTH;
        return data_len == out->bytes ? PAMI_WIRE_OK : PAMI_WIRE_BAD_LENGTH;
    default:
        return PAMI_WIRE_BAD_FIELD;
    }
}

bool pami_rndv_chunk_wanted(uint64_t total, uint64_t chunk, uint64_t lo,
                            uint64_t next, uint64_t got, uint64_t offset,
                            uint64_t bytes, uint64_t *index)
{
    if (chunk == 0 || offset % chunk != 0 || offset >= total)
        return false;
    uint64_t k = offset / chunk, left = total - offset;
    if (k < lo || k >= next || k - lo >= 64 || ((got >> (k - lo)) & 1u) ||
        bytes != (left < chunk ? left : chunk))
        return false;
    *index = k;
    return true;
}

pami_wire_check_t pami_rndv_write_decode(const void *buf, size_t len,
                                         size_t data_len,
                                         pami_rndv_write_t *out)
{
    if (len < sizeof(*out))
        return PAMI_WIRE_SHORT;
    if (len != sizeof(*out) || data_len != 0)
        return PAMI_WIRE_BAD_LENGTH;
    memcpy(out, buf, sizeof(*out));
    if (out->version != RNDV_VERSION)
        return PAMI_WIRE_BAD_VERSION;
    if (out->reserved != 0 || out->bytes == 0 ||
        out->offset > UINT64_MAX - out->bytes || out->dest == 0 ||
        out->dest > UINT64_MAX - out->bytes)
        return PAMI_WIRE_BAD_FIELD;
    switch (out->type) {
    case RNDV_WRITE_ASK:
        return out->result == PAMI_SUCCESS ? PAMI_WIRE_OK
                                           : PAMI_WIRE_BAD_FIELD;
    case RNDV_WRITE_DONE:
        return out->result >= 0 && out->result < PAMI_RESULT_LAST
                   ? PAMI_WIRE_OK : PAMI_WIRE_BAD_FIELD;
    default:
        return PAMI_WIRE_BAD_FIELD;
    }
}
