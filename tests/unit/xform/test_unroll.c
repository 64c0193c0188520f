#include "xform_check.h"

/* for i in 0:n (kind) { B[i] = A[i] + i } */
static PrimFunc *loop_fn(Arena *a, int64_t n, ForKind kind, const Expr **var_out) {
  Buffer *A = xc_buf1(a, "A", n), *B = xc_buf1(a, "B", n);
  const Expr *i = expr_var(a, "i", DT_I64);
  const Expr *val = expr_add(a, expr_load(a, A, &i, 1), expr_cast(a, DT_F32, i));
  const Buffer *params[2] = {A, B};
  if (var_out) *var_out = i;
  return primfunc_new(a, "u", params, 2, stmt_for(a, i, xc_i(a, 0), xc_i(a, n), kind, stmt_store(a, B, val, &i, 1)));
}

static void test_short_loop_unrolled(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = loop_fn(a, 4, FOR_UNROLLED, NULL);
  const PrimFunc *g = tir_unroll(a, f, 64);
  xc_dump("unroll(4)", g);
  XcCount c = xc_count(g);
  assert_int_equal(c.stmt[STMT_FOR], 0);
  assert_int_equal(c.stmt[STMT_STORE], 4);
  assert_int_equal(g->body->kind, STMT_SEQ);
  assert_true(expr_is_int(g->body->seq.stmts[3]->store.indices[0], 3));
  xc_check_same(f, g, 81);
  arena_free(a);
}

static void test_long_or_serial_loops_kept(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = loop_fn(a, 100, FOR_UNROLLED, NULL);
  assert_ptr_equal(tir_unroll(a, f, 64), f);
  PrimFunc *s = loop_fn(a, 4, FOR_SERIAL, NULL);
  assert_ptr_equal(tir_unroll(a, s, 64), s);
  const PrimFunc *g = tir_unroll(a, f, 128);
  assert_int_equal(xc_count(g).stmt[STMT_STORE], 100);
  xc_check_same(f, g, 82);
  arena_free(a);
}

/* Nested unrolled loops 2 x 3 with a non-zero inner min multiply out. */
static void test_nested_unroll(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf2(a, "A", 2, 5), *B = xc_buf2(a, "B", 2, 5);
  const Expr *i = expr_var(a, "i", DT_I64), *j = expr_var(a, "j", DT_I64);
  const Expr *ij[2] = {i, j};
  const Stmt *st = stmt_store(a, B, expr_mul(a, expr_load(a, A, ij, 2), expr_float(a, DT_F32, 0.5)), ij, 2);
  const Stmt *nest = stmt_for(a, i, xc_i(a, 0), xc_i(a, 2), FOR_UNROLLED,
                              stmt_for(a, j, xc_i(a, 2), xc_i(a, 3), FOR_UNROLLED, st));
  const Buffer *params[2] = {A, B};
  PrimFunc *f = primfunc_new(a, "nested", params, 2, nest);
  const PrimFunc *g = tir_unroll(a, f, 8);
  xc_dump("unroll(nested)", g);
  XcCount c = xc_count(g);
  assert_int_equal(c.stmt[STMT_FOR], 0);
  assert_int_equal(c.stmt[STMT_STORE], 6);
  xc_check_same(f, g, 83);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_short_loop_unrolled),
      cmocka_unit_test(test_long_or_serial_loops_kept),
      cmocka_unit_test(test_nested_unroll),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
