/* tir_flatten_buffers keeps the N-d parameters in PrimFunc.orig_params,
 * which the printer does not show (the flattening itself is tested as text:
 * tests/unit/transform/flatten_buffers.tir). */
#include "transform_check.h"

static void test_orig_params_kept(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  PrimFunc *f = tir_parse_func(a,
                               "func three_d(A: f32[2, 3, 4], B: f32[2, 3, 4]) {\n"
                               "  for i in 0:24 {\n"
                               "    B[floordiv(i, 12), floormod(floordiv(i, 4), 3), floormod(i, 4)] = 1.0f32\n"
                               "  }\n"
                               "}\n",
                               &err);
  if (!f) fail_msg("%s", err.msg);
  assert_null(f->orig_params);
  const PrimFunc *g = tir_flatten_buffers(a, f, &err);
  assert_non_null(g);
  assert_non_null(g->orig_params);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(g->params[i]->ndim, 1);
    assert_ptr_equal(g->orig_params[i], f->params[i]);
  }
  xc_check_same(f, g, 41);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_orig_params_kept),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
