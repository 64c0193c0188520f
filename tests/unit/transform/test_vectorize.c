/* tir_vectorize within the code-size budget: inputs too large to write as
 * text (the rest of its tests are tests/unit/transform/vectorize.tir). */
#include "transform_check.h"

/* A balanced sum of the loads A[i + k % 8], k in [lo, hi). */
static const Expr *sum_of_loads(Arena *a, const Buffer *A, const Expr *i, int lo, int hi) {
  if (hi - lo == 1) {
    const Expr *idx = expr_add(a, i, xc_i(a, lo % 8));
    return expr_load(a, A, &idx, 1);
  }
  int mid = lo + (hi - lo) / 2;
  return expr_add(a, sum_of_loads(a, A, i, lo, mid), sum_of_loads(a, A, i, mid, hi));
}

/* A loop body of 2,000 loads summed (about 6,000 operations): 16 lanes of
 * f32 are one vector per operation and vectorize; 64 lanes of f64 take 8
 * vectors each, 48,000 nodes past the code-size budget, and the loop stays
 * serial. */
static void test_wide_vectors_within_budget(void **state) {
  (void)state;
  const struct {
    DType t;
    int64_t lanes;
    bool vectorized;
  } cases[] = {{DT_F32, 16, true}, {DT_F64, 64, false}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    Arena *a = arena_new();
    const Expr *n = xc_i(a, cases[k].lanes + 8);
    Buffer *A = buffer_new(a, "A", cases[k].t, 1, &n), *B = buffer_new(a, "B", cases[k].t, 1, &n);
    const Expr *i = expr_var(a, "i", DT_I64);
    const Stmt *st = stmt_store(a, B, sum_of_loads(a, A, i, 0, 2000), &i, 1);
    const Buffer *params[2] = {A, B};
    PrimFunc *f = primfunc_new(a, "wide", params, 2, stmt_for(a, i, xc_i(a, 0), xc_i(a, cases[k].lanes), FOR_VECTORIZED, st));
    const PrimFunc *v = tir_vectorize(a, f);
    XcCount c = xc_count(v);
    assert_int_equal(c.stmt[STMT_FOR], cases[k].vectorized ? 0 : 1);
    assert_int_equal(c.vector_stores, cases[k].vectorized ? 1 : 0);
    xc_check_same(f, v, 90 + (uint64_t)k);
    arena_free(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wide_vectors_within_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
