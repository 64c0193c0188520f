/* Vector width legalization (docs/target.md "Vector width legalization"):
 * one kernel whose vectors are 64 lanes of f32 (2048 bits, wider than any
 * target's registers) and 64 lanes of i64 (4096 bits), built for every x86
 * ISA level this host can run, x86_64-sse2 (128-bit SSE2), x86_64-avx2
 * (256-bit) and x86_64-avx512 (512-bit), run, and compared with scalar C.
 *
 * The kernel, on 64 lanes at a time (i = ramp(64 v, 1, 64)):
 *   O[i] = select(i < N - 40,
 *                 select(x < y, exp(4x), tanh(3y)) + max(x, y) * 0.5,
 *                 f32(i32(10x)) * 0.1)            x = X[i], y = Y[i]
 * so it carries a vector exp and tanh (codegen_c_math.c), a select on an f32
 * comparison and one on an i64 comparison (the mask narrows from 64 to 32
 * bits a lane), lane-wise max, int/float conversions and broadcasts, all
 * 64 lanes wide. The C compiler's type legalizer splits them into the
 * target's registers (16 SSE2 registers of 4 floats per f32 vector).
 * A level this host lacks (or that LOOM_HOST_ISA hides) is skipped; the
 * SSE2 baseline runs on every x86-64 CPU. Metric: |got - ref| <= 1e-5 *
 * max(1, |ref|); an infinite reference (exp saturating) must match exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "kernel_harness.h"
#include "runtime/artifact.h"
#include "target/target.h"

enum { L = 64, ROWS = 6, N = L * ROWS };

/* The kernel in lowered form: 64-lane loads, arithmetic and stores as
 * tir_vectorize emits them for a vectorized loop of 64 iterations (written
 * by hand: the vectorizer leaves a select with loads in its branches
 * scalar, see vectorize.c). */
static PrimFunc *make_kernel(Arena *a) {
  const Buffer *X = h_buf(a, "X", DT_F32, N), *Y = h_buf(a, "Y", DT_F32, N), *O = h_buf(a, "O", DT_F32, N);
  const Buffer *ps[] = {X, Y, O};
  const Expr *v = expr_var(a, "v", DT_I64);
  const Expr *i = h_ramp(a, expr_mul(a, v, h_i(a, L)), L); /* i64x64 */
  const Expr *x = h_ld(a, X, i), *y = h_ld(a, Y, i);       /* f32x64 */
  DType f32 = dtype_with_lanes(DT_F32, L), i32 = dtype_with_lanes(DT_I32, L);
#define F(c) expr_broadcast(a, expr_float(a, DT_F32, c), L)
  const Expr *x4 = expr_mul(a, x, F(4.0)), *y3 = expr_mul(a, y, F(3.0));
  const Expr *e = expr_call(a, CALL_EXP, f32, &x4, 1);
  const Expr *t = expr_call(a, CALL_TANH, f32, &y3, 1);
  const Expr *r = expr_add(a, expr_select(a, expr_lt(a, x, y), e, t), expr_mul(a, expr_max(a, x, y), F(0.5)));
  const Expr *q = expr_mul(a, expr_cast(a, f32, expr_cast(a, i32, expr_mul(a, x, F(10.0)))), F(0.1));
  const Expr *out = expr_select(a, expr_lt(a, i, expr_broadcast(a, h_i(a, N - 40), L)), r, q);
#undef F
  assert_int_equal(out->dtype.lanes, L);
  return primfunc_new(a, "wide", ps, 3, h_for(a, v, ROWS, FOR_SERIAL, h_st(a, O, i, out)));
}

static float reference(int i, float x, float y) {
  if (i >= N - 40) return (float)(int32_t)(x * 10.0f) * 0.1f;
  float sel = x < y ? expf(x * 4.0f) : tanhf(y * 3.0f);
  return sel + (x > y ? x : y) * 0.5f;
}

/* Builds the kernel for target `name` and checks it; false when this host
 * cannot run that level (skipped). */
static bool run_for(const char *name, const float *X, const float *Y, const float *want) {
  LoomError err = {0};
  Target t;
  assert_int_equal(target_parse(name, &t, &err), LOOM_OK);
  assert_non_null(t.cflags);
  if (t.vector_bits > target_host().vector_bits || artifact_check_target(t.artifact_target, &err) != LOOM_OK) {
    fprintf(stderr, "%s: skipped (this host is %s)\n", name, target_host().name);
    return false;
  }
  Arena *a = arena_new();
  PrimFunc *f = make_kernel(a);
  char *src = NULL;
  Module *m = harness_compile_cflags(&f, 1, t.cflags, &src);
  /* Every vector is 64 lanes: wider than this target's registers. */
  const char *expect[] = {"float32x64", "int64x64", "loom_vexp_float32x64", "loom_vtanh_float32x64",
                          "loom_select_float32x64"};
  for (size_t k = 0; k < sizeof expect / sizeof expect[0]; k++)
    if (!strstr(src, expect[k])) {
      fprintf(stderr, "%s\n", src);
      fail_msg("%s: the generated C lacks %s (printed above)", name, expect[k]);
    }
  Kernel k = harness_kernel(m, "wide");
  static float out[N];
  for (int n = 0; n < N; n++) out[n] = -12345.0f;
  int64_t shape[] = {N};
  DLTensor tx = harness_tensor((void *)X, kDLFloat, 32, 1, shape), ty = harness_tensor((void *)Y, kDLFloat, 32, 1, shape),
           to = harness_tensor(out, kDLFloat, 32, 1, shape);
  DLTensor *args[] = {&tx, &ty, &to};
  if (kernel_call(&k, args, 3, NULL, NULL, &err)) fail_msg("%s: %s", name, err.msg);
  for (int n = 0; n < N; n++) {
    bool ok = isinf(want[n]) ? out[n] == want[n] : fabsf(out[n] - want[n]) <= 1e-5f * fmaxf(1.0f, fabsf(want[n]));
    if (!ok)
      fail_msg("target %s: O[%d] = %.9g, want %.9g (x = %.9g, y = %.9g)", name, n, out[n], want[n], X[n], Y[n]);
  }
  fprintf(stderr, "%s (%d-bit vectors): 64-lane kernel matches scalar C\n", name, t.vector_bits);
  free(src);
  module_unload(m);
  arena_free(a);
  return true;
}

static void test_wide_vectors_every_target(void **state) {
  (void)state;
#if defined(__x86_64__)
  static float X[N], Y[N], want[N];
  uint32_t s = 12345;
  for (int n = 0; n < N; n++) {
    s = s * 1664525u + 1013904223u;
    X[n] = (float)(s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
    s = s * 1664525u + 1013904223u;
    Y[n] = (float)(s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
  }
  /* exp's saturation in the middle of a 64-lane vector: inf and 0. */
  X[5] = 30.0f, Y[5] = 40.0f;
  X[70] = -30.0f, Y[70] = -20.0f;
  X[71] = 1e-5f, Y[71] = -1e-4f; /* tanh's small-argument branch */
  for (int n = 0; n < N; n++) want[n] = reference(n, X[n], Y[n]);
  assert_true(isinf(want[5]));
  assert_true(run_for("x86_64-sse2", X, Y, want)); /* the baseline: every x86-64 CPU */
  __builtin_cpu_init();
  bool avx2 = run_for("x86_64-avx2", X, Y, want);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && target_host().vector_bits >= 256)
    assert_true(avx2);
  (void)run_for("x86_64-avx512", X, Y, want);
#else
  skip();
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wide_vectors_every_target),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
