/* The C back end's vector exp / erf / tanh (codegen_c_math.c) against libm
 * on a dense sweep of inputs, the tails included. Metric: |got - libm| <=
 * 2e-6 * max(|libm|, 1e-3) (a few float ulp, well under the 1e-5 the
 * schedule tests allow); exp's saturation: 0 below -87.3, inf above 88.7;
 * infinite inputs give the limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "kernel_harness.h"

enum { N = 8192, L = 16 };

/* out[i] = f(x[i]) with the loop vectorized by L lanes. */
static void run_vector(CallOp op, const float *x, float *out) {
  Arena *a = arena_new();
  const Buffer *X = h_buf(a, "X", DT_F32, N), *O = h_buf(a, "O", DT_F32, N);
  const Buffer *ps[] = {X, O};
  const Expr *v = expr_var(a, "v", DT_I64);
  const Expr *idx = h_ramp(a, expr_mul(a, v, h_i(a, L)), L);
  const Expr *xv = h_ld(a, X, idx);
  const Expr *call = expr_call(a, op, dtype_with_lanes(DT_F32, L), &xv, 1);
  PrimFunc *f = primfunc_new(a, "vmath", ps, 2, h_for(a, v, N / L, FOR_SERIAL, h_st(a, O, idx, call)));
  Module *m = harness_compile(&f, 1, NULL);
  Kernel k = harness_kernel(m, "vmath");
  int64_t shape[] = {N};
  DLTensor tx = harness_tensor((void *)x, kDLFloat, 32, 1, shape), to = harness_tensor(out, kDLFloat, 32, 1, shape);
  DLTensor *args[] = {&tx, &to};
  LoomError err = {0};
  assert_int_equal(kernel_call(&k, args, 2, NULL, NULL, &err), LOOM_OK);
  module_unload(m);
  arena_free(a);
}

static void check(CallOp op, float lo, float hi, float (*ref)(float)) {
  static float x[N], out[N];
  for (int i = 0; i < N; i++) x[i] = lo + (hi - lo) * (float)i / (float)(N - 1);
  x[0] = 0.0f;
  x[1] = -0.0f;
  x[2] = 1e-6f;
  x[3] = -3e-5f;
  x[4] = -INFINITY; /* the limits: exp 0 / inf, erf and tanh -1 / 1 (a masked softmax's exp(-inf)) */
  x[5] = INFINITY;
  run_vector(op, x, out);
  for (int i = 0; i < N; i++) {
    float want = ref(x[i]);
    if (isinf(want) || want == 0.0f) {
      if (!(out[i] == want || fabsf(out[i]) < 1e-37f))
        fail_msg("%s(%g) = %g, want %g", call_op_name(op), x[i], out[i], want);
      continue;
    }
    float tol = 2e-6f * fmaxf(fabsf(want), 1e-3f);
    if (!(fabsf(out[i] - want) <= tol)) fail_msg("%s(%.9g) = %.9g, want %.9g", call_op_name(op), x[i], out[i], want);
  }
}

static void test_exp(void **state) {
  (void)state;
  check(CALL_EXP, -100.0f, 100.0f, expf);
  check(CALL_EXP, -5.0f, 5.0f, expf);
}

static void test_erf(void **state) {
  (void)state;
  check(CALL_ERF, -6.0f, 6.0f, erff);
}

static void test_tanh(void **state) {
  (void)state;
  check(CALL_TANH, -12.0f, 12.0f, tanhf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exp),
      cmocka_unit_test(test_erf),
      cmocka_unit_test(test_tanh),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
