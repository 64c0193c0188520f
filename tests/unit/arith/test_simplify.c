/* The analyzer's symbolic interval evaluation (arith_eval_set) and point
 * evaluation (arith_eval_int), which take a domain or values per variable.
 * The simplifier's rules, proofs and bounds are tests/unit/arith/simplify.arith. */
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
      cmocka_unit_test(test_eval_set),
      cmocka_unit_test(test_eval_int),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
