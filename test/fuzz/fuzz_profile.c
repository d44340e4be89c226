/*
 * libFuzzer target: the collectives' performance profile reader
 * (coll_profile_parse in collectives/coll_profile.c), which reads a file
 * named by the environment. What it accepts must also survive the round
 * trip: written out by coll_profile_write and read back, the same number
 * of entries.
 *
 * Input: the file's bytes.
 */
#include <stdio.h>

#include "fuzz_util.h"
#include "coll_profile.h"

FZ_QUIET_INIT

/* Every third name is "unknown", so skipping is covered too. */
static bool known(const char *name, unsigned kind)
{
    return (strlen(name) + kind) % 3 != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    coll_profile_t p;
    size_t         skipped = 0;
    char           skip_why[128], why[256];
    if (coll_profile_parse((const char *)in, size, known, &p, &skipped,
                           skip_why, sizeof(skip_why), why, sizeof(why))) {
        char  *out = NULL;
        size_t out_len = 0;
        FILE  *f = open_memstream(&out, &out_len);
        if (f == NULL)
            abort();
        if (coll_profile_write(&p, f) != 0)
            abort();
        fclose(f);
        coll_profile_t back;
        size_t         skipped2 = 0;
        if (!coll_profile_parse(out, out_len, NULL, &back, &skipped2,
                                skip_why, sizeof(skip_why), why,
                                sizeof(why)) ||
            back.n != p.n)
            abort(); /* what it wrote it cannot read back */
        coll_profile_free(&back);
        free(out);
    }
    coll_profile_free(&p);
    return 0;
}
