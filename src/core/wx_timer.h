/* Monotonic wall-clock seconds, for rates, ETAs and benchmarks (never affected by clock changes). */
#ifndef WX_TIMER_H
#define WX_TIMER_H

#include <time.h>

static inline double wx_time_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds since `start` (a wx_time_now() value). */
static inline double wx_time_since(double start) { return wx_time_now() - start; }

#endif
