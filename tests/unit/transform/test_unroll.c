/* The code-size budget of unrolling: the size function itself, and a nest
 * whose copies pass it (the rest of tir_unroll's tests are
 * tests/unit/transform/unroll.tir). */
#include "transform_check.h"

/* for i in 0:n (kind) { B[i] = A[i] + i } */
static PrimFunc *loop_fn(Arena *a, int64_t n, ForKind kind, const Expr **var_out) {
  Buffer *A = xc_buf1(a, "A", n), *B = xc_buf1(a, "B", n);
  const Expr *i = expr_var(a, "i", DT_I64);
  const Expr *val = expr_add(a, expr_load(a, A, &i, 1), expr_cast(a, DT_F32, i));
  const Buffer *params[2] = {A, B};
  if (var_out) *var_out = i;
  return primfunc_new(a, "u", params, 2, stmt_for(a, i, xc_i(a, 0), xc_i(a, n), kind, stmt_store(a, B, val, &i, 1)));
}

/* The unit of the code-size budget: operations and statements count one
 * each (per 512-bit vector), constants and variables nothing; an unrolled
 * loop its body once per copy, a vectorized one once per vector. */
static void test_code_size(void **state) {
  (void)state;
  Arena *a = arena_new();
  /* B[i] = A[i] + cast(i): store, add, load, cast. */
  PrimFunc *f = loop_fn(a, 4, FOR_SERIAL, NULL);
  assert_int_equal(tir_code_size(f->body->loop.body), 4);
  assert_int_equal(tir_code_size(f->body), 1 + 4);
  assert_int_equal(tir_code_size(loop_fn(a, 4, FOR_UNROLLED, NULL)->body), 1 + 4 * 4);
  /* 16 lanes of f32 are one vector, 64 lanes four; 6 lanes two chunks. */
  assert_int_equal(tir_code_size(loop_fn(a, 16, FOR_VECTORIZED, NULL)->body), 1 + 4);
  assert_int_equal(tir_code_size(loop_fn(a, 64, FOR_VECTORIZED, NULL)->body), 1 + 4 * 4);
  assert_int_equal(tir_code_size(loop_fn(a, 6, FOR_VECTORIZED, NULL)->body), 1 + 2 * 4);
  /* A select on a constant becomes its taken branch only. */
  const Expr *x = expr_var(a, "x", DT_F32);
  const Expr *sel = expr_select(a, expr_bool(a, false), expr_add(a, expr_mul(a, x, x), x), expr_mul(a, x, x));
  assert_int_equal(tir_expr_code_size(sel), 1);
  /* Copies: all that fit, a divisor of the extent when one is close. */
  assert_int_equal(tir_unroll_copies(80, 84), 80);
  assert_int_equal(tir_unroll_copies(60, 80 * 84), 4);
  assert_int_equal(tir_unroll_copies(60, TIR_CODE_BUDGET), 1);
  assert_int_equal(tir_unroll_copies(1000, 4), 250);
  assert_int_equal(tir_unroll_copies(1000, 1001), 25);
  arena_free(a);
}

/* Nested unrolled loops multiply out only while the copies fit the budget:
 * 100 x 100 copies of a 4-node body (40,000 nodes) do not, so the inner
 * loop is unrolled (400 nodes) and the outer one stays a loop. */
static void test_unroll_stops_at_budget(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf2(a, "A", 100, 100), *B = xc_buf2(a, "B", 100, 100);
  const Expr *i = expr_var(a, "i", DT_I64), *j = expr_var(a, "j", DT_I64);
  const Expr *ij[2] = {i, j};
  const Expr *twice = expr_mul(a, expr_load(a, A, ij, 2), expr_float(a, DT_F32, 2.0));
  const Stmt *st = stmt_store(a, B, expr_add(a, twice, expr_float(a, DT_F32, 1.0)), ij, 2);
  assert_int_equal(tir_code_size(st), 4);
  const Stmt *nest = stmt_for(a, i, xc_i(a, 0), xc_i(a, 100), FOR_UNROLLED,
                              stmt_for(a, j, xc_i(a, 0), xc_i(a, 100), FOR_UNROLLED, st));
  const Buffer *params[2] = {A, B};
  PrimFunc *f = primfunc_new(a, "budget", params, 2, nest);
  const PrimFunc *g = tir_unroll(a, f, 128);
  XcCount c = xc_count(g);
  assert_int_equal(c.stmt[STMT_FOR], 1);
  assert_int_equal(g->body->kind, STMT_FOR);
  assert_int_equal(g->body->loop.kind, FOR_UNROLLED); /* codegen's pragma takes what fits */
  assert_int_equal(c.stmt[STMT_STORE], 100);
  assert_true(tir_code_size(g->body->loop.body) * 100 > TIR_CODE_BUDGET);
  xc_check_same(f, g, 84);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_code_size),
      cmocka_unit_test(test_unroll_stops_at_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
