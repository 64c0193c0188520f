#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ir/expr.h"
#include "support/strbuf.h"

static void test_print_and_equal(void **state) {
  (void)state;
  Arena *a = arena_new();
  const Expr *i = expr_var(a, "i", DT_I64);
  const Expr *e = expr_floordiv(a, expr_add(a, expr_mul(a, i, expr_i64(a, 8)), expr_i64(a, 3)), expr_i64(a, 8));
  assert_string_equal(expr_to_string(a, e), "floordiv(((i * 8) + 3), 8)");
  const Expr *e2 = expr_floordiv(a, expr_add(a, expr_mul(a, i, expr_i64(a, 8)), expr_i64(a, 3)), expr_i64(a, 8));
  assert_true(expr_equal(e, e2));
  assert_int_equal(expr_hash(e), expr_hash(e2));
  const Expr *j = expr_var(a, "i", DT_I64); /* same name, different variable */
  assert_false(expr_equal(i, j));
  assert_true(expr_uses_var(e, i));
  assert_false(expr_uses_var(e, j));
  assert_string_equal(expr_to_string(a, expr_float(a, DT_F32, 1.0)), "1.0f32");
  assert_string_equal(expr_to_string(a, expr_int(a, DT_I32, -3)), "-3i32");
  arena_free(a);
}

static void test_dtype_roundtrip(void **state) {
  (void)state;
  const char *names[] = {"i8", "i16", "i32", "i64", "u8", "f16", "f32", "f64", "bf16", "bool", "f32x16"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    DType t;
    char buf[16];
    assert_true(dtype_parse(names[k], &t));
    assert_string_equal(dtype_str(t, buf), names[k]);
  }
  DType t;
  assert_false(dtype_parse("f33", &t));
  assert_false(dtype_parse("f32x", &t));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_print_and_equal),
      cmocka_unit_test(test_dtype_roundtrip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
