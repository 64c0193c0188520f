/* Shared by the tests of the ONNX-semantics compute definitions
 * (test_ops_*.c): random inputs, running a te DAG through the reference
 * interpreter, n-d index helpers for the plain-C references, and the
 * comparison rule (f32: |got - want| <= 1e-5 |want| + 1e-6; integers and
 * bool exactly). */
#ifndef LOOM_TESTS_TOPI_OPS_UTIL_H
#define LOOM_TESTS_TOPI_OPS_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tir/interp.h"
#include "topi/topi_ops.h"

static inline uint32_t u_lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

/* Uniform in [lo, hi). */
static inline float *u_rand_f32(int64_t n, uint32_t seed, float lo, float hi) {
  float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) x[i] = lo + (float)(u_lcg(&seed) >> 8) / (float)(1 << 24) * (hi - lo);
  return x;
}

/* Integers in [lo, hi]. */
static inline int64_t *u_rand_i64(int64_t n, uint32_t seed, int64_t lo, int64_t hi) {
  int64_t *x = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) x[i] = lo + (int64_t)((u_lcg(&seed) >> 8) % (uint32_t)(hi - lo + 1));
  return x;
}

static inline uint8_t *u_rand_bool(int64_t n, uint32_t seed) {
  uint8_t *x = malloc((size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) x[i] = (u_lcg(&seed) >> 12) & 1;
  return x;
}

static inline int64_t u_numel(const TeTensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

static inline void *u_alloc_for(const TeTensor *t) {
  return calloc((size_t)u_numel(t), (size_t)dtype_bytes(t->dtype));
}

static inline TeTensor *u_ph(Arena *a, const char *name, DType dt, int ndim, const int64_t *shape) {
  LoomError err = {0};
  TeTensor *t = te_placeholder(a, name, dt, ndim, shape, &err);
  if (!t) fail_msg("placeholder %s: %s", name, err.msg);
  return t;
}

/* Lowers (params...) with te_create_primfunc and runs it on data. */
static inline void u_run(Arena *a, TeTensor *const *params, int n, void **data) {
  LoomError err = {0};
  PrimFunc *f = te_create_primfunc(a, "f", params, n, &err);
  if (!f) fail_msg("te_create_primfunc: %s", err.msg);
  if (tir_interpret(f, data, &err) != LOOM_OK) fail_msg("interpreter: %s", err.msg);
}

static inline void u_close(const char *what, const float *got, const float *want, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if (isnan(want[i]) && isnan(got[i])) continue;
    if (isinf(want[i]) && got[i] == want[i]) continue;
    double tol = 1e-5 * fabs((double)want[i]) + 1e-6;
    if (!(fabs((double)got[i] - (double)want[i]) <= tol))
      fail_msg("%s: element %lld: got %.9g, want %.9g", what, (long long)i, (double)got[i],
               (double)want[i]);
  }
}

static inline void u_unravel(int64_t flat, int r, const int64_t *shape, int64_t *idx) {
  for (int d = r - 1; d >= 0; d--) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
}

static inline int64_t u_offset(int r, const int64_t *shape, const int64_t *idx) {
  int64_t o = 0;
  for (int d = 0; d < r; d++) o = o * shape[d] + idx[d];
  return o;
}

/* Offset in x (rank rx) of broadcast output index idx (rank ro). */
static inline int64_t u_bcast_offset(int rx, const int64_t *xs, int ro, const int64_t *idx) {
  int64_t o = 0;
  for (int d = 0; d < rx; d++) o = o * xs[d] + (xs[d] == 1 ? 0 : idx[d + ro - rx]);
  return o;
}

/* Expects op to fail with a message containing `needle`. */
#define U_EXPECT_ERR(call, err, needle)                                                   \
  do {                                                                                    \
    (err).msg[0] = 0;                                                                     \
    if ((call) != NULL) fail_msg("expected failure: %s", #call);                          \
    if (!strstr((err).msg, (needle))) fail_msg("message \"%s\" lacks \"%s\"", (err).msg, (needle)); \
  } while (0)

#endif
