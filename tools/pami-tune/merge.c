/*
 * --merge: sweeps made at other times (in other states of the machine,
 * docs/tuning.md "Rounds and the machine's state") into one profile,
 * each file's rounds after the previous files' rounds, every entry kept.
 * The table then takes, per size, the algorithm whose worst ratio to a
 * round's fastest is smallest.
 */
#include <stdio.h>
#include <string.h>

#include "tune.h"

int tune_merge(const char *const *in, size_t n, const char *out)
{
    coll_profile_t acc = {0};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        coll_profile_t p;
        char why[256];
        if (!coll_profile_load(in[i], NULL, &p, NULL, NULL, 0, why,
                               sizeof(why))) {
            fprintf(stderr, "pami-tune: --merge %s: %s\n", in[i], why);
            rc = 1;
            break;
        }
        if (i == 0) {
            snprintf(acc.producer, sizeof(acc.producer), "%s", p.producer);
            acc.machine = p.machine;
        } else if (strcmp(p.machine.cpu, acc.machine.cpu) != 0 ||
                   p.machine.cores != acc.machine.cores) {
            fprintf(stderr, "pami-tune: --merge %s: measured on another "
                    "machine (%s, %u cores; the first: %s, %u); merged "
                    "anyway\n", in[i], p.machine.cpu, p.machine.cores,
                    acc.machine.cpu, acc.machine.cores);
        }
        uint32_t before = coll_profile_rounds(&acc);
        if (!coll_profile_add_rounds(&acc, &p)) {
            fprintf(stderr, "pami-tune: --merge %s: out of memory or more "
                    "than %d rounds\n", in[i], COLL_PROFILE_MAX_ROUNDS);
            rc = 1;
        } else {
            printf("%s: rounds %u-%u, %zu entries\n", in[i],
                   i == 0 ? 1 : before + 1, acc.nrounds, p.n);
        }
        coll_profile_free(&p);
    }
    if (rc == 0 && coll_profile_save(&acc, out) != 0) {
        fprintf(stderr, "pami-tune: cannot write %s\n", out);
        rc = 1;
    }
    if (rc == 0)
        printf("wrote %s: %u rounds, %zu entries\n", out, acc.nrounds,
               acc.n);
    coll_profile_free(&acc);
    return rc;
}
