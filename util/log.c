#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int pami_log_level_current = PAMI_LOG_WARN;

static long log_task = -1;
static int  log_ready;

static const char *const level_names[] = {"error", "warn", "info", "debug",
                                          "trace"};

int pami_log_level_parse(const char *text)
{
    if (text == NULL || *text == '\0')
        return -1;
    if (text[0] >= '0' && text[0] <= '4' && text[1] == '\0')
        return text[0] - '0';
    for (int i = 0; i <= PAMI_LOG_TRACE; i++)
        if (strcasecmp(text, level_names[i]) == 0)
            return i;
    return -1;
}

void pami_log_init(void)
{
    if (log_ready)
        return;
    log_ready = 1;
    const char *env = getenv("PAMI_LOG_LEVEL");
    if (env == NULL)
        return;
    int level = pami_log_level_parse(env);
    if (level < 0) {
        pami_log_emit(PAMI_LOG_WARN, "config",
                      "PAMI_LOG_LEVEL='%s' is not one of error, warn, info, "
                      "debug, trace; keeping warn", env);
        return;
    }
    pami_log_level_current = level;
}

int pami_log_level_from_env(void)
{
    log_ready = 1;
    int level = pami_log_level_parse(getenv("PAMI_LOG_LEVEL"));
    return level < 0 ? PAMI_LOG_WARN : level;
}

void pami_log_set_task(long task)
{
    log_task = task;
}

void pami_log_emit(pami_log_level_t level, const char *subsys,
                   const char *fmt, ...)
{
    char line[1024];
    int  n;

    if (log_task >= 0)
        n = snprintf(line, sizeof(line), "[%ld] pami %s %s: ", log_task,
                     level_names[level], subsys);
    else
        n = snprintf(line, sizeof(line), "pami %s %s: ", level_names[level],
                     subsys);
    if (n < 0 || (size_t)n >= sizeof(line))
        n = 0;

    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);

    /* One write per line so lines of concurrent tasks do not interleave. */
    size_t len = strlen(line);
    if (len + 1 < sizeof(line)) {
        line[len++] = '\n';
        line[len]   = '\0';
    }
    fputs(line, stderr);
}
