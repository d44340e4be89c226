/*
 * pami-tune: measures every algorithm of the collectives and writes a
 * profile (docs/tuning.md). main.c: options and the job; measure.c: the
 * sweep; floor.c: the machine's state per round; progress.c: the
 * progress bar; table.c: --table; merge.c: --merge.
 */
#ifndef PAMI_TUNE_H
#define PAMI_TUNE_H

#include <pami.h>
#include <pami_collectives.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coll_profile.h"

typedef struct {
    const char *out;          /* -o */
    const char *resume;       /* --resume */
    uint64_t    min_bytes, max_bytes; /* --sizes */
    bool        kinds[PAMI_XFER_COUNT]; /* --collectives */
    unsigned    shapes;       /* --shapes: TUNE_SHAPE_* bits */
    bool        all_types;    /* int32, int64, float, double, user; else
                                 int32 and double */
    unsigned    reps;         /* --reps: per point (budget: computed) */
    double      budget_s;     /* --budget, 0: none */
    double      limit_s;      /* --time-limit, 0: none */
    double      deadline_s;   /* --deadline: one call at most this */
    double      batch_us;     /* --batch-us: calls of one repetition */
    bool        quick;
    bool        progress;     /* --no-progress clears */
    unsigned    rounds;       /* --rounds: sweeps, each its own round */
    double      gap_s;        /* --round-gap: seconds between rounds */
} tune_opts_t;

enum {
    TUNE_SHAPE_WORLD   = 1u << 0, /* every task */
    TUNE_SHAPE_HALF    = 1u << 1, /* the first half, contiguous */
    TUNE_SHAPE_STRIDED = 1u << 2, /* every other task */
    TUNE_SHAPE_SPREAD  = 1u << 3, /* one task per node */
    TUNE_SHAPE_PACKED  = 1u << 4  /* the tasks of the first node */
};

extern volatile sig_atomic_t tune_stop_signal;

/* measure.c: runs the sweep as this task of the job; task 0 fills prof
 * (loaded from --resume first, by every task). 0 complete, 1 stopped
 * (signal or time limit) with a valid partial profile, -1 error. */
int tune_run(pami_client_t client, pami_context_t ctx, const tune_opts_t *o,
             coll_profile_t *prof);

/* floor.c: the half round trip of a cache line between tasks 0 and 1
 * (microseconds), agreed by every task of the world (a collective call);
 * 0 when unknown (one task, two nodes, no shared mapping, over time). */
double tune_floor(pami_client_t client, pami_context_t ctx);

/* merge.c: --merge: the files' rounds one after another into out. */
int tune_merge(const char *const *in, size_t n, const char *out);

/* progress.c */
/* Seconds on the monotonic clock. */
double tune_now(void);
void tune_progress_start(size_t total, bool enabled);
void tune_progress(size_t done, const char *what);
void tune_progress_end(size_t done, bool stopped);

/* table.c: --table */
int tune_table(const char *path);

#endif /* PAMI_TUNE_H */
