#ifndef PAMI_UTIL_CLOCK_H
#define PAMI_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic time in nanoseconds. */
static inline uint64_t pami_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double pami_time_sec(void)
{
    return (double)pami_time_ns() * 1e-9;
}

#endif
