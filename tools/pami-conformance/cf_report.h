/* The runner's outputs: the summary, TAP 13 and JUnit XML. */
#ifndef CF_REPORT_H
#define CF_REPORT_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    char   id[160];      /* suite.name, with "@k" for repeats after the first */
    char   suite[64];
    int    status;       /* CF_PASSED, CF_FAILED, CF_TIMEOUT, CF_CRASHED, CF_SKIPPED */
    double seconds;
    char   ranks[256];   /* the ranks that failed or timed out: "1,3" */
    char  *detail;       /* first line: expected vs seen; then per rank */
} cf_outcome_t;

const char *cf_status_word(int status);
/* One line as the case ends (summary mode). */
void cf_report_line(FILE *f, const cf_outcome_t *o);
void cf_report_summary(FILE *f, const cf_outcome_t *o, size_t n);
void cf_report_tap_plan(FILE *f, size_t n);
void cf_report_tap(FILE *f, size_t index, const cf_outcome_t *o);
int  cf_report_junit(const char *path, const cf_outcome_t *o, size_t n);

#endif /* CF_REPORT_H */
