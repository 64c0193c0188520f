/* Timing helpers shared by the side-by-side benchmarks (bench_ops.c,
 * bench_matmul.c): a monotonic clock, the statistics they report, and
 * waiting for the other side's spinning worker threads to sleep. */
#ifndef LOOM_BENCH_TIMING_H
#define LOOM_BENCH_TIMING_H

#include "support/clock.h"

#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline double now_s(void) { return loom_clock_s(); }

static inline int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static inline double minimum(const double *v, int n) {
  double m = v[0];
  for (int i = 1; i < n; i++) m = fmin(m, v[i]);
  return m;
}

/* The median of v[0..n) (v itself is left as it is). */
static inline double median(const double *v, int n) {
  double *s = malloc(sizeof(double) * (size_t)n);
  memcpy(s, v, sizeof(double) * (size_t)n);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  free(s);
  return m;
}

/* Is any thread of this process other than the caller running (spinning)? */
static inline bool others_running(void) {
  long self = (long)syscall(SYS_gettid);
  DIR *d = opendir("/proc/self/task");
  if (!d) return false;
  bool running = false;
  struct dirent *e;
  while (!running && (e = readdir(d))) {
    long tid = atol(e->d_name);
    if (tid <= 0 || tid == self) continue;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    if (p && p[1] == ' ' && p[2] == 'R') running = true;
  }
  closedir(d);
  return running;
}

/* Waits (at most 300 ms) until every other thread sleeps: the previous
 * side's spinning workers must not compete with the next side. */
static inline void quiesce(void) {
  double t0 = now_s();
  while (others_running() && now_s() - t0 < 0.3) usleep(200);
}

#endif
