/*
 * Leveled logging shared by every layer. One subsystem name per line,
 * lowercase messages, level from PAMI_LOG_LEVEL (error, warn, info, debug,
 * trace; default warn). Lines go to stderr prefixed with the task id once
 * it is known.
 */
#ifndef PAMI_UTIL_LOG_H
#define PAMI_UTIL_LOG_H

#include <stdarg.h>

typedef enum {
    PAMI_LOG_ERROR = 0,
    PAMI_LOG_WARN  = 1,
    PAMI_LOG_INFO  = 2,
    PAMI_LOG_DEBUG = 3,
    PAMI_LOG_TRACE = 4
} pami_log_level_t;

extern int pami_log_level_current;

/* Reads PAMI_LOG_LEVEL once; safe to call again. */
void pami_log_init(void);

/* PAMI_LOG_LEVEL's level now, warn when it is unset or malformed, without
 * a warning of its own (pami_config_load names a malformed one). Counts
 * as pami_log_init. */
int pami_log_level_from_env(void);

/* Names the task in every later line ("[3] pami ..."); -1 for none. */
void pami_log_set_task(long task);

/* Parses "error".."trace" or a digit; -1 when unknown. */
int pami_log_level_parse(const char *text);

void pami_log_emit(pami_log_level_t level, const char *subsys,
                   const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define pami_log(level, subsys, ...)                                        \
    do {                                                                    \
        if ((int)(level) <= pami_log_level_current)                         \
            pami_log_emit((level), (subsys), __VA_ARGS__);                  \
    } while (0)

#define pami_error(subsys, ...) pami_log(PAMI_LOG_ERROR, subsys, __VA_ARGS__)
#define pami_warn(subsys, ...)  pami_log(PAMI_LOG_WARN, subsys, __VA_ARGS__)
#define pami_info(subsys, ...)  pami_log(PAMI_LOG_INFO, subsys, __VA_ARGS__)
#define pami_debug(subsys, ...) pami_log(PAMI_LOG_DEBUG, subsys, __VA_ARGS__)
#define pami_trace(subsys, ...) pami_log(PAMI_LOG_TRACE, subsys, __VA_ARGS__)

#endif
