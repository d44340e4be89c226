/*
 * The runners' own channel: one pami client and context per rank, joined
 * by the job's launcher (pamirun or mpirun), carrying the exchanges of the
 * case processes and the per-rank results. Exchanges are keyed by
 * (run, step) so what a killed case left behind is told apart and dropped.
 */
#ifndef CF_CHANNEL_H
#define CF_CHANNEL_H

#include <pami.h>

#include <stddef.h>
#include <stdint.h>

typedef struct cf_channel cf_channel_t;

cf_channel_t *cf_channel_open(void);
void          cf_channel_close(cf_channel_t *ch);
pami_task_t   cf_channel_rank(const cf_channel_t *ch);
size_t        cf_channel_size(const cf_channel_t *ch);

/* Drops what is kept of runs before run. */
void cf_channel_new_run(cf_channel_t *ch, uint32_t run);

/* Sends this rank's len bytes of (run, step) to every other rank. */
int cf_channel_put(cf_channel_t *ch, uint32_t run, uint32_t step,
                   const void *data, size_t len);
/* When every rank's part of (run, step) is here: copies them in rank
 * order into out (size * len bytes, this rank's own too) and returns 1;
 * 0 while some are missing; -1 when a part has another length. */
int cf_channel_take(cf_channel_t *ch, uint32_t run, uint32_t step,
                    void *out, size_t len);
/* Whether origin's part of (run, step) is here. */
int cf_channel_has(const cf_channel_t *ch, uint32_t run, uint32_t step,
                   pami_task_t origin);
/* Waits up to ms for traffic. */
void cf_channel_wait(cf_channel_t *ch, int ms);

#endif /* CF_CHANNEL_H */
