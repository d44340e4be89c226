/*
 * Progress of the sweep on task 0: a bar with percent, points done and
 * time left when stderr is a terminal, else a plain line every 5 % (or
 * 30 s), so logs stay readable.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "tune.h"

static struct {
    size_t total;
    bool   on, tty;
    double t0, last;
    int    last_pct;
} pg;

double tune_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fmt_time(char *b, size_t n, double s)
{
    if (s < 0)
        s = 0;
    if (s >= 3600)
        snprintf(b, n, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
    else
        snprintf(b, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
}

void tune_progress_start(size_t total, bool enabled)
{
    pg.total = total;
    pg.on = enabled;
    pg.tty = isatty(STDERR_FILENO);
    pg.t0 = pg.last = tune_now();
    pg.last_pct = -1;
    if (pg.on)
        fprintf(stderr, "pami-tune: %zu points\n", total);
}

void tune_progress(size_t done, const char *what)
{
    if (!pg.on || pg.total == 0)
        return;
    double t = tune_now(), el = t - pg.t0;
    int pct = (int)(100.0 * (double)done / (double)pg.total);
    char left[32];
    fmt_time(left, sizeof(left),
             done > 0 ? el / (double)done * (double)(pg.total - done) : 0);
    if (pg.tty) {
        if (t - pg.last < 0.1 && done < pg.total)
            return;
        pg.last = t;
        char bar[31];
        int fill = pct * 30 / 100;
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr, "\r[%s] %3d%% %zu/%zu points, %s left  %-40.40s",
                bar, pct, done, pg.total, left, what);
        fflush(stderr);
    } else if (pct / 5 != pg.last_pct / 5 || t - pg.last >= 30) {
        pg.last = t;
        pg.last_pct = pct;
        fprintf(stderr, "pami-tune: %3d%% %zu/%zu points, %s left (%s)\n",
                pct, done, pg.total, left, what);
    }
}

void tune_progress_end(size_t done, bool stopped)
{
    if (!pg.on)
        return;
    char el[32];
    fmt_time(el, sizeof(el), tune_now() - pg.t0);
    fprintf(stderr, "%spami-tune: %s: %zu of %zu points in %s\n",
            pg.tty ? "\n" : "", stopped ? "stopped" : "done", done, pg.total,
            el);
}
