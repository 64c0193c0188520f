/* tir_loop_partition stops at its code-size budget: inputs too large to
 * write as text (the rest of its tests are tests/unit/transform/loop_partition.tir). */
#include "transform_check.h"

/* A balanced sum of n loads A[x] (2n - 1 operations). */
static const Expr *sum_of_loads(Arena *a, const Buffer *A, const Expr *x, int n) {
  if (n == 1) return expr_load(a, A, &x, 1);
  return expr_add(a, sum_of_loads(a, A, x, n / 2), sum_of_loads(a, A, x, n - n / 2));
}

/* for io in 0:3 { for ii in 0:8 { if (io*8 + ii < 20) B[x] = <n loads summed> } }:
 * a tail copies the guarded body, so partitioning stops at the code-size
 * budget it may add to a function: a 10-load body is partitioned (no guard
 * left), a 40,000-load one (80,000 operations) keeps its guard. */
static void test_partition_within_budget(void **state) {
  (void)state;
  const struct {
    int loads, ifs;
  } cases[] = {{10, 0}, {40000, 1}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    Arena *a = arena_new();
    Buffer *A = xc_buf1(a, "A", 24), *B = xc_buf1(a, "B", 24);
    const Expr *io = expr_var(a, "io", DT_I64), *ii = expr_var(a, "ii", DT_I64);
    const Expr *x = expr_add(a, expr_mul(a, io, xc_i(a, 8)), ii);
    const Stmt *st = stmt_store(a, B, sum_of_loads(a, A, x, cases[k].loads), &x, 1);
    const Stmt *guarded = stmt_if(a, expr_lt(a, x, xc_i(a, 20)), st, NULL);
    const Stmt *loops = stmt_for(a, io, xc_i(a, 0), xc_i(a, 3), FOR_SERIAL,
                                 stmt_for(a, ii, xc_i(a, 0), xc_i(a, 8), FOR_SERIAL, guarded));
    const Buffer *params[2] = {A, B};
    PrimFunc *f = primfunc_new(a, "guarded", params, 2, loops);
    const PrimFunc *p = tir_simplify(a, tir_loop_partition(a, f));
    assert_int_equal(xc_count(p).stmt[STMT_IF], cases[k].ifs);
    xc_check_same(f, p, 20 + (uint64_t)k);
    arena_free(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_partition_within_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
