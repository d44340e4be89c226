/*
 * A process's identity card, to tell from another process of the same
 * machine whether it still runs: the machine (hostname and boot id), the
 * pid and the pid's start time, so a recycled pid is not taken for the
 * process that had it. Used by bootstraps whose collectives would
 * otherwise wait forever for a task that died.
 */
#ifndef PAMI_ADAPTERS_PROC_CARD_H
#define PAMI_ADAPTERS_PROC_CARD_H

#include <stdbool.h>
#include <stdint.h>

#define PROC_CARD_HOST_LEN 64

typedef struct {
    char     host[PROC_CARD_HOST_LEN]; /* NUL-padded */
    uint64_t pid;
    uint64_t start; /* clock ticks since boot, from /proc/PID/stat */
} proc_card_t;

/* Fills the card of the calling process; 0 or a negative errno. */
int proc_card_self(proc_card_t *card);

/* True when the card names a process of this machine that is gone: no
 * such pid, a zombie, or another process under the same pid. A card of
 * another machine, or one that cannot be read, is never called dead. */
bool proc_card_dead(const proc_card_t *card);

/* True when the card names a live process of this machine stopped by a
 * signal (state T; a debugger's stop, t, does not count). */
bool proc_card_stopped(const proc_card_t *card);

#endif
