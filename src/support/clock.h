/* The one clock for elapsed times (deadlines, profiles, tuning budgets):
 * monotonic, so a wall-clock step never turns into a timeout or a negative
 * duration. */
#ifndef LOOM_SUPPORT_CLOCK_H
#define LOOM_SUPPORT_CLOCK_H

#include <time.h>

static inline double loom_clock_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline double loom_clock_ms(void) { return loom_clock_s() * 1e3; }

#endif
