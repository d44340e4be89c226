/*
 * libFuzzer target: SVD messages (protocols/svd/svd_wire.h): the header
 * checks every packet type gets (svd_hdr_decode), a NOTIFY's fields
 * against the job (svd_notify_decode), and the record an update or a
 * fetch carries (svd_record_check, svd_record_entry in svd_blob.c).
 *
 * Input: u8 packet type, u16 job size, u16 this task, u32 largest
 * record, u16 header length; the header, then the payload (for a NOTIFY:
 * the users' task ids, their tags and the inline record; for the others,
 * a record).
 */
#include "fuzz_util.h"
#include "svd_internal.h"

FZ_QUIET_INIT

static const size_t hdr_size[SVD_PKT_COUNT] = {
    [SVD_PKT_FETCH]   = sizeof(svd_fetch_hdr_t),
    [SVD_PKT_ENTRY]   = sizeof(svd_entry_hdr_t),
    [SVD_PKT_RELEASE] = sizeof(svd_release_hdr_t),
    [SVD_PKT_NOTIFY]  = sizeof(svd_notify_hdr_t),
    [SVD_PKT_ACK]     = sizeof(svd_ack_hdr_t),
    [SVD_PKT_CHUNK]   = sizeof(svd_chunk_hdr_t),
    [SVD_PKT_FETCHED] = sizeof(svd_fetched_hdr_t),
};

static void record(const uint8_t *p, size_t len, uint64_t version)
{
    svd_blob_t *rec = svd_blob_new(NULL, len);
    if (rec == NULL)
        abort();
    if (len > 0)
        memcpy(rec->bytes, p, len);
    if (svd_record_check(rec, version)) {
        pami_svd_entry_t e;
        svd_record_entry(rec, 1, 42, &e);
        if (e.data_size != len - SVD_REC_HDR)
            abort();
        fz_touch(e.data, e.data_size);
    }
    svd_blob_put(rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t     f      = {in, size};
    unsigned type   = fz_u8(&f) % SVD_PKT_COUNT;
    uint32_t ntasks = fz_u16(&f) + 1u;
    uint32_t me     = fz_u16(&f) % ntasks;
    uint64_t maxrec = fz_u32(&f);
    size_t   want   = fz_u16(&f);
    size_t   hlen, dlen;
    uint8_t *hdr  = fz_bytes(&f, want, &hlen);
    uint8_t *data = fz_bytes(&f, f.left, &dlen);

    int rc = svd_hdr_decode(type, hdr, hlen, hdr_size[type]);
    if (rc == SVD_DEC_OK && (hlen != hdr_size[type] || hdr[1] != type))
        abort();
    if (type == SVD_PKT_NOTIFY) {
        svd_notify_hdr_t h;
        if (svd_notify_decode(hdr, hlen, dlen, ntasks, me, maxrec, &h) ==
            SVD_DEC_OK) {
            /* Task ids, tags and the inline record fill the payload. */
            size_t tasks = (size_t)h.ntasks * SVD_USER_BYTES;
            if (h.owner >= ntasks || h.owner == me || h.ntasks >= ntasks ||
                tasks > dlen || h.rec_len > maxrec)
                abort();
            fz_touch(data, tasks);
            if (h.htype == PAMI_SVD_HEADER_INLINE)
                record(data + tasks, dlen - tasks, h.entry_version);
        }
    } else if (rc == SVD_DEC_OK && dlen > 0) {
        uint64_t version;
        memcpy(&version, hdr + 8, sizeof(version));
        record(data, dlen, version);
    }
    free(hdr);
    free(data);
    return 0;
}
