#include "xform_check.h"

/* Blocks with predicates become ifs; the result computes the same. */
static void test_predicate_becomes_if(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = xc_split_elementwise(a, 62, 4, FOR_SERIAL);
  LoomError err = {0};
  const PrimFunc *g = tir_lower_blocks(a, f, &err);
  assert_non_null(g);
  xc_dump("lower_blocks(split)", g);
  XcCount c = xc_count(g);
  assert_int_equal(c.stmt[STMT_BLOCK_REALIZE], 0);
  assert_int_equal(c.stmt[STMT_IF], 1);
  assert_int_equal(c.stmt[STMT_FOR], 2);
  xc_check_same(f, g, 1);
  arena_free(a);
}

/* Reduction init -> if (k == 0) { init } before the update. */
static void test_init_becomes_guarded(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = xc_te_matmul(a, 5, 7, 3);
  LoomError err = {0};
  const PrimFunc *g = tir_lower_blocks(a, f, &err);
  assert_non_null(g);
  xc_dump("lower_blocks(matmul)", g);
  XcCount c = xc_count(g);
  assert_int_equal(c.stmt[STMT_BLOCK_REALIZE], 0);
  assert_int_equal(c.stmt[STMT_IF], 1); /* the init guard */
  assert_int_equal(c.stmt[STMT_STORE], 2);
  for (uint64_t seed = 1; seed < 4; seed++) xc_check_same(f, g, seed);
  arena_free(a);
}

/* Root alloc_buffers become Allocate at the top; block allocations stay
 * around their block's body. */
static void test_allocs_become_allocate(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf1(a, "A", 8), *T = xc_buf1(a, "T", 8), *B = xc_buf1(a, "B", 8);
  const Expr *i = expr_var(a, "i", DT_I64), *j = expr_var(a, "j", DT_I64);
  IterVar vi = xc_iter(a, "vi", 8, ITER_SPATIAL), vj = xc_iter(a, "vj", 8, ITER_SPATIAL);
  const Expr *t_val = expr_add(a, expr_load(a, A, &vi.var, 1), expr_float(a, DT_F32, 3.0));
  Block *bt = xc_block(a, "T", &vi, 1, T, stmt_store(a, T, t_val, &vi.var, 1));
  const Expr *b_val = expr_mul(a, expr_load(a, T, &vj.var, 1), expr_load(a, T, &vj.var, 1));
  Block *bb = xc_block(a, "B", &vj, 1, B, stmt_store(a, B, b_val, &vj.var, 1));
  const Stmt *s1 = stmt_for(a, i, xc_i(a, 0), xc_i(a, 8), FOR_SERIAL, stmt_realize(a, &i, 1, NULL, bt));
  const Stmt *s2 = stmt_for(a, j, xc_i(a, 0), xc_i(a, 8), FOR_SERIAL, stmt_realize(a, &j, 1, NULL, bb));
  const Buffer *allocs[1] = {T};
  const Buffer *params[2] = {A, B};
  PrimFunc *f = primfunc_new(a, "two_stage", params, 2, xc_root(a, stmt_seq2(a, s1, s2), allocs, 1));
  LoomError err = {0};
  const PrimFunc *g = tir_lower_blocks(a, f, &err);
  assert_non_null(g);
  assert_int_equal(g->body->kind, STMT_ALLOCATE);
  assert_ptr_equal(g->body->alloc.buffer, T);
  assert_int_equal(xc_count(g).stmt[STMT_BLOCK_REALIZE], 0);
  xc_check_same(f, g, 7);
  arena_free(a);
}

/* A realize binding the wrong number of values is refused with the block's name. */
static void test_bad_realize_is_an_error(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *B = xc_buf1(a, "B", 4);
  IterVar vi = xc_iter(a, "vi", 4, ITER_SPATIAL);
  Block *blk = xc_block(a, "Bad", &vi, 1, B, stmt_store(a, B, expr_float(a, DT_F32, 0), &vi.var, 1));
  const Stmt *r = stmt_realize(a, NULL, 0, NULL, blk);
  const Buffer *params[1] = {B};
  PrimFunc *f = primfunc_new(a, "bad", params, 1, xc_root(a, r, NULL, 0));
  LoomError err = {0};
  assert_null(tir_lower_blocks(a, f, &err));
  assert_int_equal(err.status, LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "\"Bad\""));
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_predicate_becomes_if),
      cmocka_unit_test(test_init_becomes_guarded),
      cmocka_unit_test(test_allocs_become_allocate),
      cmocka_unit_test(test_bad_realize_is_an_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
