/* tir_lower_blocks refuses a malformed realize, which the text parser
 * cannot make (the rest of its tests are tests/unit/transform/lower_blocks.tir). */
#include "transform_check.h"

/* A realize binding the wrong number of values is refused with the block's name. */
static void test_bad_realize_is_an_error(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *B = xc_buf1(a, "B", 4);
  IterVar vi = xc_iter(a, "vi", 4, ITER_SPATIAL);
  Block *blk = xc_block(a, "Bad", &vi, 1, B, stmt_store(a, B, expr_float(a, DT_F32, 0), &vi.var, 1));
  const Stmt *r = stmt_realize(a, NULL, 0, NULL, blk);
  const Buffer *params[1] = {B};
  PrimFunc *f = primfunc_new(a, "bad", params, 1, xc_root(a, r, NULL, 0));
  LoomError err = {0};
  assert_null(tir_lower_blocks(a, f, &err));
  assert_int_equal(err.status, LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "\"Bad\""));
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_realize_is_an_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
