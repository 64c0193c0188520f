/* Unit tests of individual simplifier rules: each expected text is what the
 * rule must produce (and the randomized tests check none changes a value). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arith/arith.h"

typedef struct Fix {
  Arena *a;
  Analyzer *az;
  const Expr *i, *j, *k, *x, *y;
} Fix;

static Fix fix_new(void) {
  Fix f;
  f.a = arena_new();
  f.az = arith_analyzer_new(f.a);
  f.i = expr_var(f.a, "i", DT_I64);
  f.j = expr_var(f.a, "j", DT_I64);
  f.k = expr_var(f.a, "k", DT_I64);
  f.x = expr_var(f.a, "x", DT_I64);
  f.y = expr_var(f.a, "y", DT_I64);
  arith_bind_const_range(f.az, f.i, 0, 16);
  arith_bind_const_range(f.az, f.j, 0, 8);
  arith_bind_const_range(f.az, f.k, 0, 4);
  return f;
}

#define C(v) expr_i64(f.a, (v))
#define ADD(p, q) expr_add(f.a, (p), (q))
#define SUB(p, q) expr_sub(f.a, (p), (q))
#define MUL(p, q) expr_mul(f.a, (p), (q))
#define FDIV(p, q) expr_floordiv(f.a, (p), (q))
#define FMOD(p, q) expr_floormod(f.a, (p), (q))

static void expect(Fix *fp, const Expr *e, const char *want) {
  const Expr *s = arith_simplify(fp->az, e);
  assert_string_equal(expr_to_string(fp->a, s), want);
}

static void test_constant_folding(void **state) {
  (void)state;
  Fix f = fix_new();
  expect(&f, ADD(C(2), MUL(C(3), C(4))), "14");
  expect(&f, FDIV(C(-7), C(2)), "-4");
  expect(&f, FMOD(C(-7), C(2)), "1");
  expect(&f, expr_binary(f.a, EXPR_DIV, C(-7), C(2)), "-3");
  expect(&f, expr_binary(f.a, EXPR_MOD, C(-7), C(2)), "-1");
  /* i8 wraps */
  expect(&f, expr_add(f.a, expr_int(f.a, DT_I8, 100), expr_int(f.a, DT_I8, 100)), "-56i8");
  expect(&f, expr_mul(f.a, expr_int(f.a, DT_U8, 16), expr_int(f.a, DT_U8, 17)), "16u8");
  /* f32 folding rounds to single precision */
  const Expr *tenth = expr_float(f.a, DT_F32, 0.1f);
  const Expr *s = arith_simplify(f.az, expr_add(f.a, tenth, tenth));
  assert_int_equal(s->kind, EXPR_FLOAT);
  assert_true(s->float_value == (double)(0.1f + 0.1f));
  expect(&f, expr_cast(f.a, DT_I32, expr_float(f.a, DT_F32, -2.75)), "-2i32");
  expect(&f, expr_cast(f.a, DT_I8, C(300)), "44i8");
  arena_free(f.a);
}

static void test_affine_canonical(void **state) {
  (void)state;
  Fix f = fix_new();
  expect(&f, SUB(ADD(MUL(f.i, C(8)), f.j), ADD(f.j, MUL(f.i, C(8)))), "0");
  const Expr *e1 = arith_simplify(f.az, ADD(ADD(f.j, C(3)), MUL(C(8), f.i)));
  const Expr *e2 = arith_simplify(f.az, ADD(MUL(f.i, C(8)), ADD(C(1), ADD(f.j, C(2)))));
  assert_string_equal(expr_to_string(f.a, e1), expr_to_string(f.a, e2));
  assert_string_equal(expr_to_string(f.a, e1), "(((i * 8) + j) + 3)");
  expect(&f, SUB(f.x, MUL(f.y, C(2))), "(x - (y * 2))");
  expect(&f, MUL(ADD(f.x, C(1)), C(4)), "((x * 4) + 4)");
  expect(&f, SUB(MUL(f.x, f.y), MUL(f.y, f.x)), "0");
  expect(&f, SUB(C(0), f.x), "(x * -1)");
  arena_free(f.a);
}

static void test_div_mod_rules(void **state) {
  (void)state;
  Fix f = fix_new();
  expect(&f, FDIV(ADD(MUL(f.i, C(8)), f.j), C(8)), "i");
  expect(&f, FMOD(ADD(MUL(f.i, C(8)), f.j), C(8)), "j");
  expect(&f, FDIV(ADD(MUL(f.x, C(8)), f.y), C(8)), "(x + floordiv(y, 8))");
  expect(&f, FMOD(ADD(MUL(f.x, C(8)), f.y), C(8)), "floormod(y, 8)");
  expect(&f, FDIV(FDIV(f.x, C(4)), C(8)), "floordiv(x, 32)");
  expect(&f, FMOD(FMOD(f.x, C(32)), C(8)), "floormod(x, 8)");
  expect(&f, FDIV(ADD(ADD(MUL(f.x, C(8)), MUL(f.y, C(4))), C(3)), C(16)), "floordiv(((x * 2) + y), 4)");
  expect(&f, FMOD(MUL(f.x, C(6)), C(4)), "(floormod((x * 3), 2) * 2)");
  expect(&f, FDIV(f.x, C(1)), "x");
  expect(&f, FMOD(f.x, C(1)), "0");
  expect(&f, FDIV(ADD(MUL(f.i, C(8)), ADD(f.k, C(2))), C(8)), "i");
  expect(&f, ADD(MUL(FDIV(f.x, C(32)), C(32)), FMOD(f.x, C(32))), "x");
  /* trunc division only becomes floor division for non-negative operands */
  expect(&f, expr_binary(f.a, EXPR_DIV, ADD(MUL(f.i, C(8)), f.j), C(8)), "i");
  expect(&f, expr_binary(f.a, EXPR_DIV, f.x, C(8)), "(x / 8)");
  arena_free(f.a);
}

static void test_minmax_compare_bool(void **state) {
  (void)state;
  Fix f = fix_new();
  expect(&f, expr_min(f.a, f.x, ADD(f.x, C(1))), "x");
  expect(&f, expr_max(f.a, f.x, ADD(f.x, C(1))), "(x + 1)");
  expect(&f, expr_min(f.a, f.i, C(100)), "i");
  expect(&f, expr_lt(f.a, f.i, C(16)), "true");
  expect(&f, expr_lt(f.a, f.i, C(15)), "(i < 15)");
  expect(&f, expr_binary(f.a, EXPR_GE, ADD(MUL(f.i, C(8)), f.j), C(0)), "true");
  expect(&f, expr_and(f.a, expr_bool(f.a, true), expr_lt(f.a, f.x, f.y)), "(x < y)");
  expect(&f, expr_not(f.a, expr_lt(f.a, f.x, f.y)), "(y <= x)");
  expect(&f, expr_select(f.a, expr_lt(f.a, f.j, C(8)), f.x, f.y), "x");
  expect(&f, expr_select(f.a, expr_lt(f.a, f.x, f.y), f.i, f.i), "i");
  assert_true(arith_can_prove(f.az, expr_lt(f.a, ADD(MUL(f.i, C(8)), f.j), C(128))));
  assert_false(arith_can_prove(f.az, expr_lt(f.a, ADD(MUL(f.i, C(8)), f.j), C(127))));
  assert_true(arith_can_prove_equal(f.az, ADD(f.x, f.y), ADD(f.y, f.x)));
  /* symbolic ranges: p in [0, n), q in [p, p + 4) */
  const Expr *n = expr_var(f.a, "n", DT_I64), *p = expr_var(f.a, "p", DT_I64), *q = expr_var(f.a, "q", DT_I64);
  arith_bind_range(f.az, p, C(0), n);
  arith_bind_range(f.az, q, p, C(4));
  assert_true(arith_can_prove(f.az, expr_lt(f.a, p, n)));
  assert_false(arith_can_prove(f.az, expr_lt(f.a, p, SUB(n, C(1)))));
  assert_true(arith_can_prove(f.az, expr_lt(f.a, q, ADD(n, C(3)))));
  assert_false(arith_can_prove(f.az, expr_lt(f.a, q, ADD(n, C(2)))));
  assert_true(arith_can_prove(f.az, expr_binary(f.a, EXPR_GE, q, C(0))));
  arena_free(f.a);
}

static void test_float_exactness(void **state) {
  (void)state;
  Fix f = fix_new();
  const Expr *v = expr_var(f.a, "v", DT_F32);
  expect(&f, expr_mul(f.a, v, expr_float(f.a, DT_F32, 1.0)), "v");
  /* v + 0.0 is not v when v is -0.0: must stay */
  const Expr *e = expr_add(f.a, v, expr_float(f.a, DT_F32, 0.0));
  assert_true(expr_equal(arith_simplify(f.az, e), e));
  /* no reassociation: (v + 1) + 2 stays */
  const Expr *r = expr_add(f.a, expr_add(f.a, v, expr_float(f.a, DT_F32, 1.0)), expr_float(f.a, DT_F32, 2.0));
  assert_true(expr_equal(arith_simplify(f.az, r), r));
  /* !(a < b) is not b <= a for floats (NaN) */
  const Expr *w = expr_var(f.a, "w", DT_F32);
  const Expr *n = expr_not(f.a, expr_lt(f.a, v, w));
  assert_int_equal(arith_simplify(f.az, n)->kind, EXPR_NOT);
  arena_free(f.a);
}

static void test_const_bound(void **state) {
  (void)state;
  Fix f = fix_new();
  IntBound b = arith_const_bound(f.az, ADD(MUL(f.i, C(8)), f.j));
  assert_int_equal(b.min, 0);
  assert_int_equal(b.max, 127);
  b = arith_const_bound(f.az, FMOD(f.x, C(8)));
  assert_int_equal(b.min, 0);
  assert_int_equal(b.max, 7);
  b = arith_const_bound(f.az, ADD(f.x, C(1)));
  assert_true(b.min == INT64_MIN && b.max == INT64_MAX);
  b = arith_const_bound(f.az, MUL(f.x, C(INT64_MAX)));
  assert_true(b.min == INT64_MIN && b.max == INT64_MAX);
  arena_free(f.a);
}


static void test_eval_set(void **state) {
  (void)state;
  Fix f = fix_new();
  const Expr *i0 = expr_var(f.a, "i0", DT_I64), *i1 = expr_var(f.a, "i1", DT_I64);
  PtrMap dom;
  ptrmap_init(&dom, f.a);
  IntSet s1 = intset_range(f.az, C(0), C(8));
  ptrmap_put(&dom, i1, &s1);
  /* compute_at: i0 stays symbolic, i1 covers its loop */
  IntSet r = arith_eval_set(f.az, ADD(MUL(i0, C(8)), i1), &dom);
  assert_string_equal(expr_to_string(f.a, r.min), "(i0 * 8)");
  assert_string_equal(expr_to_string(f.a, r.max), "((i0 * 8) + 7)");
  /* negative coefficient picks the other end */
  r = arith_eval_set(f.az, SUB(MUL(i0, C(8)), MUL(i1, C(2))), &dom);
  assert_string_equal(expr_to_string(f.a, r.min), "((i0 * 8) - 14)");
  assert_string_equal(expr_to_string(f.a, r.max), "(i0 * 8)");
  /* floordiv / floormod of an affine expression stay tight */
  r = arith_eval_set(f.az, FDIV(ADD(MUL(i0, C(8)), i1), C(4)), &dom);
  assert_string_equal(expr_to_string(f.a, r.min), "(i0 * 2)");
  assert_string_equal(expr_to_string(f.a, r.max), "((i0 * 2) + 1)");
  r = arith_eval_set(f.az, FMOD(ADD(MUL(i0, C(8)), i1), C(16)), &dom);
  assert_string_equal(expr_to_string(f.a, r.min), "(floormod(i0, 2) * 8)");
  assert_string_equal(expr_to_string(f.a, r.max), "((floormod(i0, 2) * 8) + 7)");
  r = arith_eval_set(f.az, FMOD(ADD(i0, i1), C(4)), &dom);
  assert_true(expr_is_int(r.min, 0) && expr_is_int(r.max, 3));
  /* symbolic set bounds: i1 in [i0, i0 + 4) */
  IntSet s2 = intset_range(f.az, i0, C(4));
  ptrmap_put(&dom, i1, &s2);
  r = arith_eval_set(f.az, MUL(i1, C(3)), &dom);
  assert_string_equal(expr_to_string(f.a, r.min), "(i0 * 3)");
  assert_string_equal(expr_to_string(f.a, r.max), "((i0 * 3) + 9)");
  /* nested domains: i1 in [i0, i0 + 4) with i0 itself in [0, 8) */
  IntSet s0 = intset_range(f.az, C(0), C(8));
  ptrmap_put(&dom, i0, &s0);
  r = arith_eval_set(f.az, ADD(i1, C(1)), &dom);
  assert_true(expr_is_int(r.min, 1) && expr_is_int(r.max, 11));
  /* a product too large to distribute is bounded, not recursed into forever */
  const Expr *big = ADD(ADD(ADD(f.i, f.j), ADD(f.k, f.x)), C(1));
  ptrmap_put(&dom, f.i, &s0);
  ptrmap_put(&dom, f.j, &s0);
  ptrmap_put(&dom, f.k, &s0);
  ptrmap_put(&dom, f.x, &s0);
  r = arith_eval_set(f.az, MUL(big, ADD(big, C(1))), &dom);
  assert_true(expr_is_int(r.min, 2) && expr_is_int(r.max, 29 * 30));
  PtrMap dom2;
  ptrmap_init(&dom2, f.a);
  /* unions simplify */
  IntSet u = intset_union(f.az, intset_point(MUL(i0, C(8))), intset_point(ADD(MUL(i0, C(8)), C(4))));
  assert_string_equal(expr_to_string(f.a, u.min), "(i0 * 8)");
  assert_string_equal(expr_to_string(f.a, u.max), "((i0 * 8) + 4)");
  /* an unbounded variable in dom gives an unbounded side */
  IntSet half = {C(0), NULL};
  ptrmap_put(&dom2, i1, &half);
  r = arith_eval_set(f.az, ADD(i1, C(1)), &dom2);
  assert_true(expr_is_int(r.min, 1) && r.max == NULL);
  arena_free(f.a);
}

static void test_eval_int(void **state) {
  (void)state;
  Fix f = fix_new();
  int64_t xv = -7, yv = 2, out;
  PtrMap vals;
  ptrmap_init(&vals, f.a);
  ptrmap_put(&vals, f.x, &xv);
  ptrmap_put(&vals, f.y, &yv);
  assert_true(arith_eval_int(FDIV(f.x, f.y), &vals, &out));
  assert_int_equal(out, -4);
  assert_true(arith_eval_int(expr_binary(f.a, EXPR_MOD, f.x, f.y), &vals, &out));
  assert_int_equal(out, -1);
  assert_false(arith_eval_int(FDIV(f.x, C(0)), &vals, &out));
  assert_false(arith_eval_int(f.i, &vals, &out)); /* unbound */
  arena_free(f.a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_constant_folding), cmocka_unit_test(test_affine_canonical),
      cmocka_unit_test(test_div_mod_rules),    cmocka_unit_test(test_minmax_compare_bool),
      cmocka_unit_test(test_float_exactness),  cmocka_unit_test(test_const_bound),
      cmocka_unit_test(test_eval_set),         cmocka_unit_test(test_eval_int),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
