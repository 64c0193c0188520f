#include "xform_check.h"

/* A -> T1 -> T2 -> T3 -> B, one loop per stage: T1 dies before T3 is born,
 * so they share one allocation (of the larger size); T2 overlaps both. */
static PrimFunc *chain(Arena *a, MemScope t3_scope, bool with_unused) {
  Buffer *A = xc_buf1(a, "A", 16), *B = xc_buf1(a, "B", 16);
  Buffer *T1 = xc_buf1(a, "T1", 8), *T2 = xc_buf1(a, "T2", 8), *T3 = xc_buf1(a, "T3", 16);
  Buffer *U = xc_buf1(a, "U", 4);
  T3->scope = t3_scope;
  const Expr *i = expr_var(a, "i", DT_I64);
  const Expr *h = expr_floordiv(a, i, xc_i(a, 2));
  const Expr *one = expr_float(a, DT_F32, 1.0);
  const Stmt *s0 = stmt_store(a, T1, expr_add(a, expr_load(a, A, &i, 1), one), &i, 1);
  const Stmt *s1 = stmt_store(a, T2, expr_mul(a, expr_load(a, T1, &i, 1), expr_load(a, T1, &i, 1)), &i, 1);
  const Stmt *s2 = stmt_store(a, T3, expr_sub(a, expr_load(a, T2, &h, 1), one), &i, 1);
  const Stmt *s3 = stmt_store(a, B, expr_add(a, expr_load(a, T3, &i, 1), expr_load(a, A, &i, 1)), &i, 1);
  const Stmt *stages[4] = {
      stmt_for(a, i, xc_i(a, 0), xc_i(a, 8), FOR_SERIAL, s0),
      stmt_for(a, i, xc_i(a, 0), xc_i(a, 8), FOR_SERIAL, s1),
      stmt_for(a, i, xc_i(a, 0), xc_i(a, 16), FOR_SERIAL, s2),
      stmt_for(a, i, xc_i(a, 0), xc_i(a, 16), FOR_SERIAL, s3),
  };
  const Stmt *body = stmt_seq(a, stages, 4);
  body = stmt_allocate(a, T3, body);
  if (with_unused) body = stmt_allocate(a, U, body);
  body = stmt_allocate(a, T2, body);
  body = stmt_allocate(a, T1, body);
  const Buffer *params[2] = {A, B};
  return primfunc_new(a, "chain", params, 2, body);
}

static int count_allocs(const PrimFunc *f) { return xc_count(f).stmt[STMT_ALLOCATE]; }

static void test_disjoint_lifetimes_share(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = chain(a, SCOPE_GLOBAL, true);
  const PrimFunc *g = tir_storage_rewrite(a, f);
  xc_dump("storage_rewrite(chain)", g);
  assert_int_equal(count_allocs(f), 4);
  assert_int_equal(count_allocs(g), 2);
  /* The shared buffer is big enough for T3. */
  assert_int_equal(g->body->kind, STMT_ALLOCATE);
  int64_t size = 0;
  assert_true(expr_as_int(g->body->alloc.buffer->shape[0], &size));
  assert_int_equal(size, 16);
  xc_check_same(f, g, 91);
  xc_check_same(f, tir_simplify(a, g), 92);
  arena_free(a);
}

static void test_different_scope_not_shared(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = chain(a, SCOPE_LOCAL, false);
  const PrimFunc *g = tir_storage_rewrite(a, f);
  assert_ptr_equal(g, f);
  xc_check_same(f, g, 93);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_disjoint_lifetimes_share),
      cmocka_unit_test(test_different_scope_not_shared),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
