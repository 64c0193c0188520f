/* Timing helpers shared by the side-by-side benchmarks (bench_ops.c,
 * bench_matmul.c): a monotonic clock and the statistics they report. */
#ifndef LOOM_BENCH_TIMING_H
#define LOOM_BENCH_TIMING_H

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

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

#endif
