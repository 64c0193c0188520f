#include "xform_check.h"

/* A split by 1 leaves a loop of extent 1 and an always-true predicate:
 * both disappear. */
static void test_extent_one_loop_and_true_predicate(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = xc_split_elementwise(a, 8, 1, FOR_SERIAL);
  const PrimFunc *g = tir_simplify(a, f);
  LoomError err = {0};
  const PrimFunc *h = tir_lower_blocks(a, g, &err);
  assert_non_null(h);
  xc_dump("simplify(split by 1)", h);
  XcCount c = xc_count(h);
  assert_int_equal(c.stmt[STMT_FOR], 1);
  assert_int_equal(c.stmt[STMT_IF], 0);
  xc_check_same(f, g, 3);
  xc_check_same(f, h, 4);
  arena_free(a);
}

/* floordiv/floormod of a fused index fold back to the loop variables with
 * the loop ranges known; ifs on decided conditions fold away. */
static void test_index_folding_and_constant_if(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf2(a, "A", 4, 8), *B = xc_buf2(a, "B", 4, 8);
  const Expr *i = expr_var(a, "i", DT_I64), *j = expr_var(a, "j", DT_I64);
  const Expr *fused = expr_add(a, expr_mul(a, i, xc_i(a, 8)), j);
  const Expr *idx[2] = {expr_floordiv(a, fused, xc_i(a, 8)), expr_floormod(a, fused, xc_i(a, 8))};
  const Expr *val = expr_add(a, expr_load(a, A, idx, 2), expr_float(a, DT_F32, 1.0));
  const Stmt *st = stmt_store(a, B, val, idx, 2);
  /* if (i < 10) { store } ; if (i >= 4) { B[0,0] = 0 } */
  const Stmt *dead = stmt_store(a, B, expr_float(a, DT_F32, 0.0), (const Expr *[]){xc_i(a, 0), xc_i(a, 0)}, 2);
  const Stmt *body = stmt_seq2(a, stmt_if(a, expr_lt(a, i, xc_i(a, 10)), st, NULL),
                               stmt_if(a, expr_binary(a, EXPR_GE, i, xc_i(a, 4)), dead, NULL));
  const Stmt *loops = stmt_for(a, i, xc_i(a, 0), xc_i(a, 4), FOR_SERIAL,
                               stmt_for(a, j, xc_i(a, 0), xc_i(a, 8), FOR_SERIAL, body));
  const Buffer *params[2] = {A, B};
  PrimFunc *f = primfunc_new(a, "fold", params, 2, loops);
  const PrimFunc *g = tir_simplify(a, f);
  xc_dump("simplify(fold)", g);
  XcCount c = xc_count(g);
  assert_int_equal(c.stmt[STMT_IF], 0);
  assert_int_equal(c.stmt[STMT_STORE], 1);
  const Stmt *inner = g->body->loop.body->loop.body;
  assert_int_equal(inner->kind, STMT_STORE);
  assert_ptr_equal(inner->store.indices[0], i);
  assert_ptr_equal(inner->store.indices[1], j);
  xc_check_same(f, g, 5);
  arena_free(a);
}

/* Loops that become empty are removed; unchanged input comes back as is. */
static void test_empty_loop_removed_and_identity(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *B = xc_buf1(a, "B", 4);
  const Expr *i = expr_var(a, "i", DT_I64);
  const Stmt *st = stmt_store(a, B, expr_float(a, DT_F32, 1.0), &i, 1);
  const Stmt *never = stmt_if(a, expr_lt(a, i, xc_i(a, 0)), st, NULL);
  const Stmt *loops = stmt_seq2(a, stmt_for(a, i, xc_i(a, 0), xc_i(a, 4), FOR_SERIAL, never),
                                stmt_for(a, i, xc_i(a, 0), xc_i(a, 4), FOR_SERIAL, st));
  const Buffer *params[1] = {B};
  PrimFunc *f = primfunc_new(a, "empty", params, 1, loops);
  const PrimFunc *g = tir_simplify(a, f);
  assert_int_equal(g->body->kind, STMT_FOR);
  xc_check_same(f, g, 9);
  assert_ptr_equal(tir_simplify(a, g), g);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_extent_one_loop_and_true_predicate),
      cmocka_unit_test(test_index_folding_and_constant_if),
      cmocka_unit_test(test_empty_loop_removed_and_identity),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
