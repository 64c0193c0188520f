/* The expression parser on its own: names from a scope, C precedence,
 * variable declarations with ranges, and its errors. (Every printed form
 * is checked by the round trips of tests/unit/tir/test_text.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ir/expr_parser.h"

static void test_parse_with_scope(void **state) {
  (void)state;
  Arena *a = arena_new();
  const Expr *i = expr_var(a, "i", DT_I64), *n = expr_var(a, "n", DT_I32);
  const Expr *c4 = expr_i64(a, 4);
  Buffer *A = buffer_new(a, "A", DT_F32, 1, &c4);
  const Expr *vars[2] = {i, n};
  ExprScope scope = {vars, 2, (const Buffer *const[]){A}, 1};
  LoomError err = {0};
  const Expr *e = expr_parse(a, "floordiv(i * 4 + 3, 8) - -2", &scope, &err);
  assert_non_null(e);
  const Expr *want = expr_sub(a, expr_floordiv(a, expr_add(a, expr_mul(a, i, c4), expr_i64(a, 3)), expr_i64(a, 8)),
                              expr_i64(a, -2));
  assert_true(expr_equal(e, want));
  e = expr_parse(a, "cast(i64, n) < i", &scope, &err);
  assert_non_null(e);
  assert_true(expr_equal(e, expr_lt(a, expr_cast(a, DT_I64, n), i)));
  e = expr_parse(a, "A[i] + 1.5f32", &scope, &err);
  assert_non_null(e);
  assert_true(expr_equal(e, expr_add(a, expr_load(a, A, &i, 1), expr_float(a, DT_F32, 1.5))));
  assert_null(expr_parse(a, "j + 1", &scope, &err));
  assert_int_equal(err.status, LOOM_ERR_PARSE);
  assert_string_equal(err.msg, "line 1, column 1: expected a variable in scope, got 'j'");
  assert_null(expr_parse(a, "i + 1", NULL, &err));
  assert_null(expr_parse(a, "i + 1 )", &scope, &err));
  assert_string_equal(err.msg, "line 1, column 7: expected end of the expression, got ')'");
  assert_null(expr_parse(a, NULL, &scope, &err));
  assert_int_equal(err.status, LOOM_ERR_INVALID_ARG);
  arena_free(a);
}

/* A later variable of the same name hides an earlier one. */
static void test_inner_name_hides_outer(void **state) {
  (void)state;
  Arena *a = arena_new();
  const Expr *outer = expr_var(a, "x", DT_I64), *inner = expr_var(a, "x", DT_I64);
  ExprScope scope = {(const Expr *const[]){outer, inner}, 2, NULL, 0};
  LoomError err = {0};
  assert_ptr_equal(expr_parse(a, "x", &scope, &err), inner);
  arena_free(a);
}

static void test_var_decl(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  const Expr *n, *p, *min, *ext;
  assert_true(expr_parse_var_decl(a, "n", NULL, &n, &min, &ext, &err));
  assert_int_equal(n->kind, EXPR_VAR);
  assert_string_equal(n->var.name, "n");
  assert_true(dtype_eq(n->dtype, DT_I64));
  assert_null(min);
  assert_null(ext);
  /* a range over variables declared before */
  ExprScope scope = {&n, 1, NULL, 0};
  assert_true(expr_parse_var_decl(a, "p in 1:n - 1", &scope, &p, &min, &ext, &err));
  assert_true(expr_is_int(min, 1));
  assert_true(expr_equal(ext, expr_sub(a, n, expr_i64(a, 1))));
  const Expr *v;
  assert_true(expr_parse_var_decl(a, "v<f32>", NULL, &v, &min, &ext, &err));
  assert_true(dtype_eq(v->dtype, DT_F32));
  assert_false(expr_parse_var_decl(a, "q in 0:m", &scope, &v, &min, &ext, &err));
  assert_string_equal(err.msg, "line 1, column 8: expected a variable in scope, got 'm'");
  assert_false(expr_parse_var_decl(a, "q 4", &scope, &v, &min, &ext, &err));
  assert_string_equal(err.msg, "line 1, column 3: expected 'in' or end of the declaration, got '4'");
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_with_scope),
      cmocka_unit_test(test_inner_name_hides_outer),
      cmocka_unit_test(test_var_decl),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
