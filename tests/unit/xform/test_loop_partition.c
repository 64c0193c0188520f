#include "xform_check.h"

static const PrimFunc *lowered(Arena *a, const PrimFunc *f) {
  LoomError err = {0};
  const PrimFunc *g = tir_lower_blocks(a, tir_simplify(a, f), &err);
  assert_non_null(g);
  return tir_simplify(a, g);
}

/* 62 split by 4: io in [0,15) runs without a guard, io = 15 is peeled and its
 * ii loop split again into [0,2) (no guard) and [2,4) (guard always false,
 * removed by simplify). */
static void test_imperfect_split_is_partitioned(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = xc_split_elementwise(a, 62, 4, FOR_SERIAL);
  const PrimFunc *g = lowered(a, f);
  assert_int_equal(xc_count(g).stmt[STMT_IF], 1);
  const PrimFunc *p = tir_loop_partition(a, g);
  xc_dump("partition(62/4)", p);
  assert_int_equal(p->body->kind, STMT_SEQ);
  const Stmt *main_loop = p->body->seq.stmts[0];
  assert_int_equal(main_loop->kind, STMT_FOR);
  assert_true(expr_is_int(main_loop->loop.extent, 15));
  assert_int_equal(main_loop->loop.body->loop.body->kind, STMT_STORE); /* no guard */
  xc_check_same(f, p, 11);
  const PrimFunc *s = tir_simplify(a, p);
  xc_dump("simplify(partition(62/4))", s);
  XcCount c = xc_count(s);
  assert_int_equal(c.stmt[STMT_IF], 0);
  assert_int_equal(c.stmt[STMT_STORE], 2);
  xc_check_same(f, s, 12);
  arena_free(a);
}

/* Several sizes, including ones where the split is perfect (guard always
 * true: removed without a tail) and tails of more than one iteration. */
static void test_partition_many_sizes(void **state) {
  (void)state;
  int64_t sizes[][2] = {{64, 8}, {65, 8}, {7, 3}, {100, 7}, {5, 16}, {33, 4}};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    Arena *a = arena_new();
    PrimFunc *f = xc_split_elementwise(a, sizes[k][0], sizes[k][1], FOR_SERIAL);
    const PrimFunc *p = tir_simplify(a, tir_loop_partition(a, lowered(a, f)));
    xc_dump("partition(sizes)", p);
    assert_int_equal(xc_count(p).stmt[STMT_IF], 0);
    xc_check_same(f, p, 20 + k);
    arena_free(a);
  }
}

/* A guard that holds on a suffix, or depends on data, is left alone. */
static void test_non_prefix_guards_untouched(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf1(a, "A", 10), *B = xc_buf1(a, "B", 10);
  const Expr *i = expr_var(a, "i", DT_I64);
  const Stmt *st = stmt_store(a, B, expr_load(a, A, &i, 1), &i, 1);
  const Expr *suffix = expr_binary(a, EXPR_GE, i, xc_i(a, 3));
  const Expr *data = expr_lt(a, expr_load(a, A, &i, 1), expr_float(a, DT_F32, 0.0));
  const Stmt *body = stmt_seq2(a, stmt_if(a, suffix, st, NULL), stmt_if(a, data, st, NULL));
  const Buffer *params[2] = {A, B};
  PrimFunc *f = primfunc_new(a, "suffix", params, 2, stmt_for(a, i, xc_i(a, 0), xc_i(a, 10), FOR_SERIAL, body));
  const PrimFunc *p = tir_loop_partition(a, f);
  assert_ptr_equal(p, f);
  arena_free(a);
}

/* A conjunction keeps the part that is not proven. */
static void test_conjunction_partially_removed(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf1(a, "A", 30), *B = xc_buf1(a, "B", 30);
  const Expr *io = expr_var(a, "io", DT_I64), *ii = expr_var(a, "ii", DT_I64);
  const Expr *x = expr_add(a, expr_mul(a, io, xc_i(a, 4)), ii);
  const Expr *cond = expr_and(a, expr_lt(a, x, xc_i(a, 30)),
                              expr_lt(a, expr_load(a, A, &x, 1), expr_float(a, DT_F32, 0.5)));
  const Stmt *st = stmt_store(a, B, expr_float(a, DT_F32, 7.0), &x, 1);
  const Stmt *loops = stmt_for(a, io, xc_i(a, 0), xc_i(a, 8), FOR_SERIAL,
                               stmt_for(a, ii, xc_i(a, 0), xc_i(a, 4), FOR_SERIAL, stmt_if(a, cond, st, NULL)));
  const Buffer *params[2] = {A, B};
  PrimFunc *f = primfunc_new(a, "conj", params, 2, loops);
  const PrimFunc *p = tir_loop_partition(a, f);
  xc_dump("partition(conj)", p);
  assert_int_equal(p->body->kind, STMT_SEQ);
  const Stmt *guard = p->body->seq.stmts[0]->loop.body->loop.body;
  assert_int_equal(guard->kind, STMT_IF);
  assert_int_equal(guard->if_.cond->kind, EXPR_LT); /* only the data test is left */
  assert_int_equal(guard->if_.cond->bin.a->kind, EXPR_LOAD);
  xc_check_same(f, p, 31);
  arena_free(a);
}

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
      cmocka_unit_test(test_imperfect_split_is_partitioned),
      cmocka_unit_test(test_partition_many_sizes),
      cmocka_unit_test(test_non_prefix_guards_untouched),
      cmocka_unit_test(test_conjunction_partially_removed),
      cmocka_unit_test(test_partition_within_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
