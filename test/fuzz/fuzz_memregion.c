/*
 * libFuzzer target: a pami_memregion_t that came from anywhere (a peer's
 * header, a program's forged handle): pami_mr_decode and
 * pami_memregion_query, which every RMA call and every packet carrying a
 * region goes through before anything is used.
 *
 * Input: the handle's bytes (shorter inputs are zero-padded).
 */
#include "fuzz_util.h"
#include "internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_quiet_logs();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    pami_memregion_t *mr = calloc(1, sizeof(*mr));
    if (mr == NULL)
        abort();
    memcpy(mr, in, size < sizeof(*mr) ? size : sizeof(*mr));
    pami_mr_view_t v;
    if (pami_mr_decode(mr, &v) == PAMI_SUCCESS) {
        /* The key the view points at lies inside the handle. */
        const uint8_t *lo = (const uint8_t *)mr;
        if (v.rkey < lo || v.rkey >= lo + sizeof(*mr))
            abort();
        fz_touch(v.rkey, (size_t)(lo + sizeof(*mr) - v.rkey));
    }
    void           *base;
    size_t          bytes;
    pami_endpoint_t owner;
    (void)pami_memregion_query(mr, &base, &bytes, &owner);
    free(mr);
    return 0;
}
