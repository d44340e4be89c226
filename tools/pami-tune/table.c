/*
 * --table: the profile as a person reads it. Per collective, shape, type
 * and op: ranges of measured sizes with the same best algorithm, the
 * runner-up and by how much it trails (its median over the best's),
 * the smallest margin of the range first. A profile of several rounds
 * (docs/tuning.md): per range the choice (the smallest worst ratio to a
 * round's fastest) and, per round with its floor, that round's fastest
 * and how far the choice trails it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

static void size_text(char *b, size_t n, uint64_t x)
{
    if (x >= (1u << 20) && x % (1u << 20) == 0)
        snprintf(b, n, "%llu MiB", (unsigned long long)(x >> 20));
    else if (x >= 1024 && x % 1024 == 0)
        snprintf(b, n, "%llu KiB", (unsigned long long)(x >> 10));
    else
        snprintf(b, n, "%llu B", (unsigned long long)x);
}

static bool same_group(const coll_prof_entry_t *a, const coll_prof_entry_t *b)
{
    return a->kind == b->kind && a->type == b->type && a->op == b->op &&
           memcmp(&a->shape, &b->shape, sizeof(a->shape)) == 0;
}

static int by_group(const void *x, const void *y)
{
    const coll_prof_entry_t *a = x, *b = y;
#define C_(f) if (a->f != b->f) return a->f < b->f ? -1 : 1
    C_(kind);
    C_(shape.size);
    C_(shape.nodes);
    C_(shape.ppn);
    C_(shape.layout);
    C_(type);
    C_(op);
    C_(bytes);
    int c = strcmp(a->algo, b->algo);
    if (c != 0)
        return c;
    C_(round);
#undef C_
    return 0;
}

typedef struct {
    uint64_t    bytes;
    const char *best, *second;
    double      margin; /* second / best - 1; < 0: no runner-up */
} pt_t;

static void print_head(const coll_prof_entry_t *e)
{
    printf("%s  %u tasks (%u node%s x %u, %s)", coll_kind_name(e->kind),
           e->shape.size, e->shape.nodes, e->shape.nodes > 1 ? "s" : "",
           e->shape.ppn,
           e->shape.layout == COLL_LAYOUT_STRIDED ? "strided" : "contiguous");
    if (e->op != COLL_PROFILE_OP_NONE)
        printf("  %s %s", coll_type_name(e->type), coll_op_name(e->op));
    printf("\n");
}

static void print_group(const coll_prof_entry_t *e, size_t n)
{
    print_head(e);
    pt_t *pts = calloc(n, sizeof(*pts));
    size_t np = 0, failed = 0;
    if (pts == NULL)
        return;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        const coll_prof_entry_t *b1 = NULL, *b2 = NULL;
        for (; j < n && e[j].bytes == e[i].bytes; j++) {
            if (e[j].failed) {
                failed++;
                continue;
            }
            if (b1 == NULL || e[j].median_us < b1->median_us) {
                b2 = b1;
                b1 = &e[j];
            } else if (b2 == NULL || e[j].median_us < b2->median_us) {
                b2 = &e[j];
            }
        }
        if (b1 != NULL)
            pts[np++] = (pt_t){e[i].bytes, b1->algo, b2 ? b2->algo : NULL,
                               b2 && b1->median_us > 0
                                   ? b2->median_us / b1->median_us - 1
                                   : b2 ? 0 : -1};
        i = j;
    }
    for (size_t i = 0; i < np;) {
        size_t j = i, low = i;
        double hi = pts[i].margin;
        while (j < np && strcmp(pts[j].best, pts[i].best) == 0) {
            if (pts[j].margin >= 0 &&
                (pts[low].margin < 0 || pts[j].margin < pts[low].margin))
                low = j;
            if (pts[j].margin > hi)
                hi = pts[j].margin;
            j++;
        }
        char a[24], b[24], r[56];
        size_text(a, sizeof(a), pts[i].bytes);
        size_text(b, sizeof(b), pts[j - 1].bytes);
        snprintf(r, sizeof(r), j - 1 > i ? "%s - %s" : "%s", a, b);
        printf("  %-20s %-34s", r, pts[i].best);
        if (pts[low].second != NULL)
            printf(" runner-up %-34s +%.0f%%", pts[low].second,
                   100 * pts[low].margin);
        if (j - 1 > i && hi > pts[low].margin)
            printf(" (to +%.0f%%)", 100 * hi);
        printf("\n");
        i = j;
    }
    if (failed > 0)
        printf("  (%zu failed points)\n", failed);
    free(pts);
}

/* One size of a profile of several rounds. */
typedef struct {
    uint64_t    bytes;
    const char *choice;
    double      worst;                            /* the choice's */
    const char *best[COLL_PROFILE_MAX_ROUNDS];    /* NULL: not measured */
    double      trail[COLL_PROFILE_MAX_ROUNDS];   /* choice / best */
} rpt_t;

/* e[i..j) are one size's entries, by algorithm then round: the choice as
 * coll_table.c makes it (ties here by name, there by registry id). */
static void round_point(const coll_prof_entry_t *e, size_t i, size_t j,
                        rpt_t *pt)
{
    double best[COLL_PROFILE_MAX_ROUNDS];
    memset(pt, 0, sizeof(*pt));
    pt->bytes = e[i].bytes;
    for (size_t r = 0; r < COLL_PROFILE_MAX_ROUNDS; r++)
        best[r] = -1;
    for (size_t k = i; k < j; k++)
        if (!e[k].failed && (best[e[k].round] < 0 ||
                             e[k].median_us < best[e[k].round])) {
            best[e[k].round] = e[k].median_us;
            pt->best[e[k].round] = e[k].algo;
        }
    unsigned win_cover = 0;
    for (size_t k = i; k < j;) {
        const char *algo = e[k].algo;
        unsigned cover = 0;
        double worst = 0;
        size_t first = k;
        for (; k < j && strcmp(e[k].algo, algo) == 0; k++) {
            if (e[k].failed)
                continue;
            double b = best[e[k].round];
            double ratio = b > 0 ? e[k].median_us / b : 1;
            cover++;
            if (ratio > worst)
                worst = ratio;
        }
        if (cover == 0 || cover < win_cover ||
            (cover == win_cover && worst >= pt->worst))
            continue;
        win_cover = cover;
        pt->choice = algo;
        pt->worst = worst;
        memset(pt->trail, 0, sizeof(pt->trail));
        for (size_t m = first; m < k; m++)
            if (!e[m].failed && best[e[m].round] > 0)
                pt->trail[e[m].round] = e[m].median_us / best[e[m].round];
    }
}

static bool same_row(const rpt_t *a, const rpt_t *b, uint32_t nr)
{
    if (a->choice == NULL || b->choice == NULL ||
        strcmp(a->choice, b->choice) != 0)
        return false;
    for (uint32_t r = 0; r < nr; r++)
        if ((a->best[r] == NULL) != (b->best[r] == NULL) ||
            (a->best[r] != NULL && strcmp(a->best[r], b->best[r]) != 0))
            return false;
    return true;
}

static void print_rounds_group(const coll_profile_t *p,
                               const coll_prof_entry_t *e, size_t n)
{
    print_head(e);
    uint32_t nr = coll_profile_rounds(p);
    rpt_t *pts = calloc(n, sizeof(*pts));
    size_t np = 0;
    if (pts == NULL)
        return;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && e[j].bytes == e[i].bytes)
            j++;
        round_point(e, i, j, &pts[np]);
        if (pts[np].choice != NULL)
            np++;
        i = j;
    }
    for (size_t i = 0; i < np;) {
        size_t j = i + 1;
        while (j < np && same_row(&pts[i], &pts[j], nr))
            j++;
        double worst = 0, trail[COLL_PROFILE_MAX_ROUNDS] = {0};
        for (size_t k = i; k < j; k++) {
            if (pts[k].worst > worst)
                worst = pts[k].worst;
            for (uint32_t r = 0; r < nr; r++)
                if (pts[k].trail[r] > trail[r])
                    trail[r] = pts[k].trail[r];
        }
        char a[24], b[24], rng[56];
        size_text(a, sizeof(a), pts[i].bytes);
        size_text(b, sizeof(b), pts[j - 1].bytes);
        snprintf(rng, sizeof(rng), j - 1 > i ? "%s - %s" : "%s", a, b);
        printf("  %-20s %-34s worst +%.0f%%\n", rng, pts[i].choice,
               100 * (worst - 1));
        for (uint32_t r = 0; r < nr; r++) {
            if (pts[i].best[r] == NULL)
                continue;
            printf("  %20s round %u (floor %.3f us): fastest %s", "", r,
                   p->rounds[r].floor_us, pts[i].best[r]);
            if (trail[r] > 1)
                printf(", the choice +%.0f%%", 100 * (trail[r] - 1));
            printf("\n");
        }
        i = j;
    }
    free(pts);
}

int tune_table(const char *path)
{
    coll_profile_t p;
    char why[256];
    size_t skipped = 0;
    if (!coll_profile_load(path, NULL, &p, &skipped, NULL, 0, why,
                           sizeof(why))) {
        fprintf(stderr, "pami-tune: %s: %s\n", path, why);
        return 1;
    }
    printf("profile %s: %zu points by %s on %s (%u cores, %u nodes x %u "
           "tasks)\n", path, p.n, p.producer, p.machine.cpu,
           p.machine.cores, p.machine.nodes, p.machine.ppn);
    /* How undisturbed the sweep was (points that record it). */
    size_t nc = 0, low = 0;
    double cmin = 1, csum = 0;
    for (size_t i = 0; i < p.n; i++)
        if (!p.e[i].failed && p.e[i].cpu > 0) {
            nc++;
            csum += p.e[i].cpu;
            low += p.e[i].cpu < 0.9;
            if (p.e[i].cpu < cmin)
                cmin = p.e[i].cpu;
        }
    if (nc > 0)
        printf("cpu: mean %.2f, smallest %.2f, %zu of %zu points below "
               "0.90\n", csum / nc, cmin, low, nc);
    /* The machine's state per round (floor: pami-tune's floor.c). */
    for (uint32_t r = 0; r < p.nrounds; r++)
        printf("round %u: started %s, floor %.3f us at the start, %.3f at "
               "the end (0: unknown)\n", r,
               p.rounds[r].started[0] ? p.rounds[r].started : "(unknown)",
               p.rounds[r].floor_us, p.rounds[r].floor_end_us);
    printf("\n");
    qsort(p.e, p.n, sizeof(*p.e), by_group);
    for (size_t i = 0; i < p.n;) {
        size_t j = i + 1;
        while (j < p.n && same_group(&p.e[i], &p.e[j]))
            j++;
        if (coll_profile_rounds(&p) > 1)
            print_rounds_group(&p, &p.e[i], j - i);
        else
            print_group(&p.e[i], j - i);
        i = j;
    }
    coll_profile_free(&p);
    return 0;
}
