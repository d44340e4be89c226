/* One case on every rank: its process, its exchanges, its deadline. */
#ifndef CF_RUN_H
#define CF_RUN_H

#include "cf_channel.h"
#include "cf_child.h"

typedef struct {
    const char *self;     /* this program, run again as the case process */
    const char *case_id;  /* suite.name */
    uint32_t    run;      /* unique per case run, the same on every rank */
    uint64_t    seed;
    double      timeout;  /* seconds */
    const char *plugin;   /* may be NULL */
} cf_run_args_t;

/* Runs the case here and gathers every rank's result into all (size
 * entries, rank order). 0 when the gathering worked. */
int cf_run_case(cf_channel_t *ch, const cf_run_args_t *a,
                cf_result_msg_t *all);

#endif /* CF_RUN_H */
