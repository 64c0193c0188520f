/* Blocked pooling (topi_pool2d_nchwc_onnx) against the NCHW pool
 * (topi_pool2d_onnx) on the same data: X is pooled directly and also
 * transformed to NCHWc, pooled blocked and transformed back, in one
 * PrimFunc run by the reference interpreter. Covers padding, strides,
 * dilations, ceil_mode and count_include_pad, several blocks. */
#include "unit/topi/ops_util.h"

typedef struct Case {
  bool is_max;
  int64_t C, H, W, cb;
  TopiPoolParams p;
} Case;

static void run_case(size_t ci, const Case *c) {
  Arena *a = arena_new();
  LoomError err = {0};
  TopiPoolKind kind = c->is_max ? TOPI_POOL_MAX : TOPI_POOL_AVG;
  int64_t xs[4] = {2, c->C, c->H, c->W};
  TeTensor *X = u_ph(a, "X", DT_F32, 4, xs);
  TeTensor *Ref = topi_pool2d_onnx(a, "Ref", kind, X, &c->p, &err);
  if (!Ref) fail_msg("case %zu: reference pool: %s", ci, err.msg);
  TeTensor *Xc = topi_nchw_to_nchwc(a, "Xc", X, c->cb, &err);
  if (!Xc) fail_msg("case %zu: %s", ci, err.msg);
  TeTensor *Yc = topi_pool2d_nchwc_onnx(a, "Yc", kind, Xc, &c->p, &err);
  if (!Yc) fail_msg("case %zu: %s", ci, err.msg);
  assert_int_equal(Yc->ndim, 5);
  assert_int_equal(Yc->shape[1], c->C / c->cb);
  assert_int_equal(Yc->shape[4], c->cb);
  assert_int_equal(Yc->shape[2], Ref->shape[2]);
  assert_int_equal(Yc->shape[3], Ref->shape[3]);
  TeTensor *Y = topi_nchwc_to_nchw(a, "Y", Yc, &err);
  if (!Y) fail_msg("case %zu: %s", ci, err.msg);
  int64_t ny = u_numel(Y);
  assert_int_equal(ny, u_numel(Ref));
  float *x = u_rand_f32(u_numel(X), 11 + (uint32_t)ci, -1, 1);
  /* Negative inputs only for max pools in the first case: padding must
   * never win a max (it is -inf, not 0). */
  if (ci == 0)
    for (int64_t i = 0; i < u_numel(X); i++) x[i] = -1.0f - fabsf(x[i]);
  float *y = malloc(sizeof(float) * (size_t)ny), *want = malloc(sizeof(float) * (size_t)ny);
  u_run(a, (TeTensor *[]){X, Ref, Y}, 3, (void *[]){x, want, y});
  char what[32];
  snprintf(what, sizeof what, "pool nchwc case %zu", ci);
  u_close(what, y, want, ny);
  free(x), free(y), free(want);
  arena_free(a);
}

static void test_pool2d_nchwc_matches_nchw(void **state) {
  (void)state;
  const Case cases[] = {
      /* ResNet's stem pool: 3x3 / 2, pad 1. */
      {true, 16, 8, 8, 16, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false}},
      {true, 8, 7, 7, 4, {{3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false}},
      {true, 8, 6, 6, 8, {{3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false}}, /* ceil adds a window */
      {true, 6, 9, 8, 2, {{2, 3}, {1, 2}, {1, 0, 0, 1}, {2, 1}, false, false}}, /* dilations */
      {false, 16, 7, 7, 8, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false}},
      {false, 8, 7, 7, 8, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, true}},
      {false, 4, 6, 6, 4, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, true}},
      {false, 32, 6, 5, 16, {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false}}, /* DenseNet transition */
      /* Inception's 3x3 / 1 pad 1 average (count_include_pad = 0). */
      {false, 16, 5, 5, 16, {{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, false}},
      {true, 3, 5, 5, 1, {{2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false, false}}, /* block 1 */
      /* Windows never clipped: the division is by a constant. */
      {false, 16, 6, 6, 16, {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false, false}},
      {false, 8, 7, 7, 8, {{3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false, false}},
      {false, 8, 7, 6, 4, {{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, true}},
      {false, 8, 7, 7, 4, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, true}},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) run_case(ci, &cases[ci]);
}

/* Stage names follow the convention: "<name>_pad", "<name>_sum". */
static void test_pool2d_nchwc_stages(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[5] = {1, 2, 6, 6, 8};
  TeTensor *X = u_ph(a, "X", DT_F32, 5, xs);
  TopiPoolParams p = {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false};
  TeTensor *Y = topi_pool2d_nchwc_onnx(a, "pool", TOPI_POOL_AVG, X, &p, &err);
  if (!Y) fail_msg("%s", err.msg);
  PrimFunc *f = te_create_primfunc(a, "f", (TeTensor *[]){X, Y}, 2, &err);
  if (!f) fail_msg("%s", err.msg);
  assert_non_null(stmt_find_block(f->body, "pool_pad"));
  assert_non_null(stmt_find_block(f->body, "pool_sum"));
  assert_non_null(stmt_find_block(f->body, "pool"));
  arena_free(a);
}

static void test_pool2d_nchwc_errors(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t s4[4] = {1, 8, 6, 6}, s5[5] = {1, 2, 6, 6, 4};
  TeTensor *X4 = u_ph(a, "X4", DT_F32, 4, s4), *X5 = u_ph(a, "X5", DT_F32, 5, s5);
  TopiPoolParams ok = {{3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false, false};
  U_EXPECT_ERR(topi_pool2d_nchwc_onnx(a, "Y", TOPI_POOL_MAX, X4, &ok, &err), err, "rank 4, expected 5");
  U_EXPECT_ERR(topi_pool2d_nchwc_onnx(a, "Y", TOPI_POOL_MAX, X5, NULL, &err), err, "kernel_shape is required");
  TopiPoolParams bad = ok;
  bad.pads[0] = 3;
  U_EXPECT_ERR(topi_pool2d_nchwc_onnx(a, "Y", TOPI_POOL_MAX, X5, &bad, &err), err, "smaller than the kernel");
  bad = ok;
  bad.dilations[0] = -1;
  U_EXPECT_ERR(topi_pool2d_nchwc_onnx(a, "Y", TOPI_POOL_AVG, X5, &bad, &err), err, "AveragePoolNCHWc: kernel_shape, strides and dilations");
  bad = ok;
  bad.kernel[0] = 9;
  U_EXPECT_ERR(topi_pool2d_nchwc_onnx(a, "Y", TOPI_POOL_MAX, X5, &bad, &err), err, "larger than the padded input");
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pool2d_nchwc_matches_nchw),
      cmocka_unit_test(test_pool2d_nchwc_stages),
      cmocka_unit_test(test_pool2d_nchwc_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
