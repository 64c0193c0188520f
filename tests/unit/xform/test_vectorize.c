#include "xform_check.h"

/* Lower up to (not including) vectorize, as the pipeline does. */
static const PrimFunc *pre_vectorize(Arena *a, const PrimFunc *f, bool partition) {
  LoomError err = {0};
  const PrimFunc *g = tir_simplify(a, tir_lower_blocks(a, tir_simplify(a, f), &err));
  if (partition) g = tir_loop_partition(a, g);
  g = tir_flatten_buffers(a, g, &err);
  assert_non_null(g);
  return tir_simplify(a, g);
}

/* A perfect split with a vectorized inner loop becomes ramp loads/stores. */
static void test_contiguous_loop_vectorized(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = xc_split_elementwise(a, 64, 8, FOR_VECTORIZED);
  const PrimFunc *g = pre_vectorize(a, f, true);
  const PrimFunc *v = tir_vectorize(a, g);
  xc_dump("vectorize(64/8)", v);
  XcCount c = xc_count(v);
  assert_int_equal(c.for_kind[FOR_VECTORIZED], 0);
  assert_int_equal(c.stmt[STMT_FOR], 1);
  assert_int_equal(c.vector_stores, 1);
  assert_true(c.ramps >= 2);
  xc_check_same(f, v, 51);
  xc_check_same(f, tir_simplify(a, v), 52);
  arena_free(a);
}

/* With partitioning, the imperfect split vectorizes its main part; the
 * peeled tail (2 iterations) is vectorized too (no guard left). Without
 * partitioning the guard (an if) forces the serial fallback. */
static void test_guarded_loop_falls_back(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = xc_split_elementwise(a, 62, 8, FOR_VECTORIZED);
  const PrimFunc *p = tir_vectorize(a, pre_vectorize(a, f, true));
  xc_dump("vectorize(62/8 partitioned)", p);
  XcCount cp = xc_count(p);
  assert_int_equal(cp.for_kind[FOR_VECTORIZED], 0);
  assert_true(cp.vector_stores >= 1);
  xc_check_same(f, p, 53);
  const PrimFunc *u = tir_vectorize(a, pre_vectorize(a, f, false));
  xc_dump("vectorize(62/8 not partitioned)", u);
  XcCount cu = xc_count(u);
  assert_int_equal(cu.for_kind[FOR_VECTORIZED], 0);
  assert_int_equal(cu.vector_stores, 0);
  assert_int_equal(cu.for_kind[FOR_SERIAL], 2);
  xc_check_same(f, u, 54);
  arena_free(a);
}

/* for i vectorized in 0:8 { body(i) } over 1-d buffers A (in), B (out, 32). */
static PrimFunc *vec_loop(Arena *a, const Expr *i, const Stmt *body, Buffer *A, Buffer *B, Buffer *S) {
  const Buffer *params[3] = {A, B, S};
  return primfunc_new(a, "v", params, 3, stmt_for(a, i, xc_i(a, 0), xc_i(a, 8), FOR_VECTORIZED, body));
}

/* Each body must fall back to a serial loop and still compute the same. */
static void test_fallback_cases(void **state) {
  (void)state;
  for (int which = 0; which < 8; which++) {
    Arena *a = arena_new();
    Buffer *A = xc_buf1(a, "A", 32), *B = xc_buf1(a, "B", 32), *S = xc_buf1(a, "S", 4);
    const Expr *n32 = xc_i(a, 32);
    Buffer *M = buffer_new(a, "M", DT_BOOL1, 1, &n32);
    const Expr *i = expr_var(a, "i", DT_I64);
    const Expr *zero = xc_i(a, 0), *one = xc_i(a, 1);
    const Expr *ai = expr_load(a, A, &i, 1);
    const Expr *i2 = expr_mul(a, i, xc_i(a, 2)), *ip1 = expr_add(a, i, one);
    const Stmt *body = NULL;
    switch (which) {
      case 0: /* reduction into one element: S[0] = S[0] + A[i] */
        body = stmt_store(a, S, expr_add(a, expr_load(a, S, &zero, 1), ai), &zero, 1);
        break;
      case 1: /* strided store B[2i] = A[i] */
        body = stmt_store(a, B, ai, &i2, 1);
        break;
      case 2: /* gather load B[i] = A[2i] */
        body = stmt_store(a, B, expr_load(a, A, &i2, 1), &i, 1);
        break;
      case 3: /* if in the body */
        body = stmt_if(a, expr_lt(a, ai, expr_float(a, DT_F32, 0.0)), stmt_store(a, B, ai, &i, 1), NULL);
        break;
      case 4: /* select over a load (both branches would be evaluated in every lane) */
        body = stmt_store(a, B, expr_select(a, expr_lt(a, i, xc_i(a, 30)), expr_load(a, A, &ip1, 1), ai), &i, 1);
        break;
      case 5: { /* nested loop */
        const Expr *j = expr_var(a, "j", DT_I64);
        const Expr *ij = expr_add(a, expr_mul(a, i, xc_i(a, 4)), j);
        body = stmt_for(a, j, zero, xc_i(a, 4), FOR_SERIAL, stmt_store(a, B, expr_load(a, A, &ij, 1), &ij, 1));
        break;
      }
      case 6: /* dependence between iterations: B[i+1] = B[i] + 1 */
        body = stmt_store(a, B, expr_add(a, expr_load(a, B, &i, 1), expr_float(a, DT_F32, 1.0)), &ip1, 1);
        break;
      case 7: /* a bool mask load (bytes; no vector type in C): B[i] = M[i] ? 1 : 2 */
        body = stmt_store(a, B, expr_select(a, expr_load(a, M, &i, 1), expr_float(a, DT_F32, 1.0), expr_float(a, DT_F32, 2.0)),
                          &i, 1);
        break;
    }
    PrimFunc *f = vec_loop(a, i, body, A, B, which == 7 ? M : S);
    const PrimFunc *v = tir_vectorize(a, f);
    xc_dump("vectorize(fallback)", v);
    XcCount c = xc_count(v);
    assert_int_equal(c.for_kind[FOR_VECTORIZED], 0);
    assert_int_equal(c.vector_stores, 0);
    assert_true(c.for_kind[FOR_SERIAL] >= 1);
    xc_check_same(f, v, 60 + (uint64_t)which);
    arena_free(a);
  }
}

/* Float math calls vectorize (the code generator has vector versions or
 * applies the scalar function lane by lane). */
static void test_call_vectorized(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf1(a, "A", 32), *B = xc_buf1(a, "B", 32), *S = xc_buf1(a, "S", 4);
  const Expr *i = expr_var(a, "i", DT_I64);
  const Expr *ai = expr_load(a, A, &i, 1);
  const Expr *fa = expr_call(a, CALL_FABS, DT_F32, &ai, 1);
  const Stmt *body = stmt_store(a, B, expr_call(a, CALL_EXP, DT_F32, &fa, 1), &i, 1);
  PrimFunc *f = vec_loop(a, i, body, A, B, S);
  const PrimFunc *v = tir_vectorize(a, f);
  XcCount c = xc_count(v);
  assert_true(c.vector_stores >= 1);
  xc_check_same(f, v, 77);
  arena_free(a);
}

/* Loop-invariant operands are broadcast; casts, selects and the loop
 * variable itself vectorize; an update of the element being stored
 * (B[i] = B[i] + ...) is lane-local and allowed. */
static void test_broadcast_cast_select(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf1(a, "A", 32), *B = xc_buf1(a, "B", 32), *S = xc_buf1(a, "S", 4);
  const Expr *i = expr_var(a, "i", DT_I64), *two = xc_i(a, 2);
  const Expr *i8 = expr_add(a, i, xc_i(a, 8));
  const Expr *ai = expr_load(a, A, &i8, 1), *s2 = expr_load(a, S, &two, 1);
  const Expr *fi = expr_cast(a, DT_F32, i);
  /* Loads only in the condition: a select evaluates both branches in every
   * lane, so loads in branches may legitimately keep the loop serial. */
  const Expr *sel = expr_select(a, expr_lt(a, ai, s2), fi, expr_mul(a, fi, expr_float(a, DT_F32, 2.0)));
  const Expr *upd = expr_add(a, expr_load(a, B, &i8, 1), expr_mul(a, sel, s2));
  PrimFunc *f = vec_loop(a, i, stmt_store(a, B, upd, &i8, 1), A, B, S);
  const PrimFunc *v = tir_vectorize(a, f);
  xc_dump("vectorize(broadcast)", v);
  XcCount c = xc_count(v);
  assert_int_equal(c.stmt[STMT_FOR], 0);
  assert_int_equal(c.vector_stores, 1);
  assert_true(c.broadcasts >= 1);
  xc_check_same(f, v, 70);
  xc_check_same(f, tir_simplify(a, v), 71);
  arena_free(a);
}

/* for k { for i vectorized { if (k == 0) B[i] = 0; B[i] += A[k*8 + i] } }:
 * the init guard does not depend on i, so it stays an if around vectors. */
static void test_invariant_if_kept(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf1(a, "A", 32), *B = xc_buf1(a, "B", 32), *S = xc_buf1(a, "S", 4);
  const Expr *i = expr_var(a, "i", DT_I64), *k = expr_var(a, "k", DT_I64);
  const Expr *ki = expr_add(a, expr_mul(a, k, xc_i(a, 8)), i);
  const Stmt *init = stmt_if(a, expr_binary(a, EXPR_EQ, k, xc_i(a, 0)),
                             stmt_store(a, B, expr_float(a, DT_F32, 0.0), &i, 1), NULL);
  const Stmt *upd = stmt_store(a, B, expr_add(a, expr_load(a, B, &i, 1), expr_load(a, A, &ki, 1)), &i, 1);
  const Stmt *inner = stmt_for(a, i, xc_i(a, 0), xc_i(a, 8), FOR_VECTORIZED, stmt_seq2(a, init, upd));
  const Buffer *params[3] = {A, B, S};
  PrimFunc *f = primfunc_new(a, "red", params, 3, stmt_for(a, k, xc_i(a, 0), xc_i(a, 4), FOR_SERIAL, inner));
  const PrimFunc *v = tir_vectorize(a, f);
  xc_dump("vectorize(invariant if)", v);
  XcCount c = xc_count(v);
  assert_int_equal(c.stmt[STMT_FOR], 1);
  assert_int_equal(c.stmt[STMT_IF], 1);
  assert_int_equal(c.vector_stores, 2);
  xc_check_same(f, v, 72);
  arena_free(a);
}

/* Padding, one 8-lane row at a time: for r { for i vectorized {
 * B[r*8 + i] = select(1 <= r < 4, A[(r-1)*8 + i], 0) } }. The condition is
 * the same in every lane, so the select keeps a scalar condition around
 * vector branches and its load is only evaluated for rows 1..3 (rows 0 and
 * 4 would read A out of bounds; the interpreter checks bounds). */
static void test_invariant_select_over_load(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf1(a, "A", 24), *B = xc_buf1(a, "B", 40), *S = xc_buf1(a, "S", 4);
  const Expr *i = expr_var(a, "i", DT_I64), *r = expr_var(a, "r", DT_I64);
  const Expr *src = expr_add(a, expr_mul(a, expr_sub(a, r, xc_i(a, 1)), xc_i(a, 8)), i);
  const Expr *dst = expr_add(a, expr_mul(a, r, xc_i(a, 8)), i);
  const Expr *inside = expr_binary(a, EXPR_AND, expr_binary(a, EXPR_GE, r, xc_i(a, 1)), expr_lt(a, r, xc_i(a, 4)));
  const Stmt *st = stmt_store(a, B, expr_select(a, inside, expr_load(a, A, &src, 1), expr_float(a, DT_F32, 0.0)), &dst, 1);
  const Stmt *inner = stmt_for(a, i, xc_i(a, 0), xc_i(a, 8), FOR_VECTORIZED, st);
  const Buffer *params[3] = {A, B, S};
  PrimFunc *f = primfunc_new(a, "pad", params, 3, stmt_for(a, r, xc_i(a, 0), xc_i(a, 5), FOR_SERIAL, inner));
  const PrimFunc *v = tir_vectorize(a, f);
  xc_dump("vectorize(invariant select)", v);
  XcCount c = xc_count(v);
  assert_int_equal(c.stmt[STMT_FOR], 1);
  assert_int_equal(c.vector_stores, 1);
  xc_check_same(f, v, 73);
  xc_check_same(f, tir_simplify(a, v), 74);
  arena_free(a);
}

/* Extents 2..9 and 64: powers of two become one vector statement, others
 * power-of-two chunks (7 = 4 + 2 + 1 scalar), never an odd vector. */
static void test_power_of_two_chunks(void **state) {
  (void)state;
  int64_t extents[] = {2, 3, 5, 6, 7, 8, 9, 64};
  int expect_vec[] = {1, 1, 1, 2, 2, 1, 1, 1};
  for (size_t k = 0; k < sizeof extents / sizeof extents[0]; k++) {
    Arena *a = arena_new();
    Buffer *A = xc_buf1(a, "A", 70), *B = xc_buf1(a, "B", 70), *S = xc_buf1(a, "S", 4);
    const Expr *i = expr_var(a, "i", DT_I64);
    const Expr *i3 = expr_add(a, i, xc_i(a, 3));
    const Stmt *st = stmt_store(a, B, expr_mul(a, expr_load(a, A, &i3, 1), expr_float(a, DT_F32, 1.5)), &i, 1);
    const Buffer *params[3] = {A, B, S};
    PrimFunc *f = primfunc_new(a, "chunks", params, 3,
                               stmt_for(a, i, xc_i(a, 1), xc_i(a, extents[k]), FOR_VECTORIZED, st));
    const PrimFunc *v = tir_simplify(a, tir_vectorize(a, f));
    xc_dump("vectorize(chunks)", v);
    XcCount c = xc_count(v);
    assert_int_equal(c.stmt[STMT_FOR], 0);
    assert_int_equal(c.non_pow2_vectors, 0);
    assert_int_equal(c.vector_stores, expect_vec[k]);
    assert_int_equal(c.stmt[STMT_STORE], expect_vec[k] + (extents[k] == 7 || extents[k] == 5 || extents[k] == 3 || extents[k] == 9 ? 1 : 0));
    xc_check_same(f, v, 80 + (uint64_t)k);
    arena_free(a);
  }
}

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
      cmocka_unit_test(test_contiguous_loop_vectorized),
      cmocka_unit_test(test_guarded_loop_falls_back),
      cmocka_unit_test(test_fallback_cases),
      cmocka_unit_test(test_call_vectorized),
      cmocka_unit_test(test_broadcast_cast_select),
      cmocka_unit_test(test_invariant_if_kept),
      cmocka_unit_test(test_invariant_select_over_load),
      cmocka_unit_test(test_power_of_two_chunks),
      cmocka_unit_test(test_wide_vectors_within_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
