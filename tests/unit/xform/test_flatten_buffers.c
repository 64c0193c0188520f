#include "xform_check.h"

/* B[i, j, k] = A[i, j, k] * 2 over a 2x3x4 block. */
static PrimFunc *make_3d(Arena *a) {
  const Expr *shape[3] = {xc_i(a, 2), xc_i(a, 3), xc_i(a, 4)};
  Buffer *A = buffer_new(a, "A", DT_F32, 3, shape), *B = buffer_new(a, "B", DT_F32, 3, shape);
  IterVar it[3] = {xc_iter(a, "vi", 2, ITER_SPATIAL), xc_iter(a, "vj", 3, ITER_SPATIAL),
                   xc_iter(a, "vk", 4, ITER_SPATIAL)};
  const Expr *idx[3] = {it[0].var, it[1].var, it[2].var};
  const Expr *val = expr_mul(a, expr_load(a, A, idx, 3), expr_float(a, DT_F32, 2.0));
  Block *blk = xc_block(a, "B", it, 3, B, stmt_store(a, B, val, idx, 3));
  const Expr *l[3] = {expr_var(a, "i", DT_I64), expr_var(a, "j", DT_I64), expr_var(a, "k", DT_I64)};
  const Stmt *s = stmt_realize(a, l, 3, NULL, blk);
  for (int d = 2; d >= 0; d--) s = stmt_for(a, l[d], xc_i(a, 0), shape[d], FOR_SERIAL, s);
  const Buffer *params[2] = {A, B};
  return primfunc_new(a, "three_d", params, 2, xc_root(a, s, NULL, 0));
}

static void test_params_flattened_row_major(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_3d(a);
  LoomError err = {0};
  const PrimFunc *g = tir_flatten_buffers(a, tir_lower_blocks(a, f, &err), &err);
  assert_non_null(g);
  g = tir_simplify(a, g);
  xc_dump("flatten(3d)", g);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(g->params[i]->ndim, 1);
    assert_true(expr_is_int(g->params[i]->shape[0], 24));
    assert_non_null(g->orig_params);
    assert_ptr_equal(g->orig_params[i], f->params[i]);
  }
  const Stmt *st = g->body->loop.body->loop.body->loop.body;
  assert_int_equal(st->kind, STMT_STORE);
  assert_int_equal(st->store.n, 1);
  xc_check_same(f, g, 41);
  arena_free(a);
}

/* T[4, 6] with storage_align(axis 0, factor 8, offset 1): row stride 6 is
 * padded to 9 (9 % 8 == 1), so T takes 4 * 9 = 36 elements. */
static void test_storage_align_padding(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf2(a, "A", 4, 6), *T = xc_buf2(a, "T", 4, 6), *B = xc_buf2(a, "B", 4, 6);
  T->align_axis = 0;
  T->align_factor = 8;
  T->align_offset = 1;
  T->scope = SCOPE_LOCAL;
  const Expr *i = expr_var(a, "i", DT_I64), *j = expr_var(a, "j", DT_I64);
  const Expr *ij[2] = {i, j};
  const Stmt *s1 = stmt_store(a, T, expr_add(a, expr_load(a, A, ij, 2), expr_float(a, DT_F32, 1.0)), ij, 2);
  const Stmt *s2 = stmt_store(a, B, expr_mul(a, expr_load(a, T, ij, 2), expr_float(a, DT_F32, 3.0)), ij, 2);
  const Stmt *nest = stmt_for(a, i, xc_i(a, 0), xc_i(a, 4), FOR_SERIAL,
                              stmt_for(a, j, xc_i(a, 0), xc_i(a, 6), FOR_SERIAL, stmt_seq2(a, s1, s2)));
  const Buffer *params[2] = {A, B};
  PrimFunc *f = primfunc_new(a, "aligned", params, 2, stmt_allocate(a, T, nest));
  LoomError err = {0};
  const PrimFunc *g = tir_simplify(a, tir_flatten_buffers(a, f, &err));
  xc_dump("flatten(align)", g);
  assert_int_equal(g->body->kind, STMT_ALLOCATE);
  const Buffer *t = g->body->alloc.buffer;
  assert_int_equal(t->ndim, 1);
  assert_true(expr_is_int(t->shape[0], 36));
  assert_int_equal(t->scope, SCOPE_LOCAL);
  /* The store into T uses the padded stride. */
  const Stmt *st = g->body->alloc.body->loop.body->loop.body->seq.stmts[0];
  assert_ptr_equal(st->store.buffer, t);
  Arena *chk = arena_new();
  PtrMap vm;
  ptrmap_init(&vm, chk);
  ptrmap_put(&vm, i, (void *)xc_i(chk, 2));
  ptrmap_put(&vm, j, (void *)xc_i(chk, 5));
  int64_t off = -1;
  const Expr *ix = expr_substitute(chk, st->store.indices[0], &vm);
  /* Evaluate with the interpreter-independent folding of simplify. */
  PrimFunc *tmp = primfunc_new(chk, "t", NULL, 0, stmt_store(chk, t, expr_float(chk, DT_F32, 0), &ix, 1));
  const PrimFunc *folded = tir_simplify(chk, tmp);
  assert_true(expr_as_int(folded->body->store.indices[0], &off));
  assert_int_equal(off, 2 * 9 + 5);
  arena_free(chk);
  xc_check_same(f, g, 42);
  arena_free(a);
}

static void test_blocks_refused(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_3d(a);
  LoomError err = {0};
  assert_null(tir_flatten_buffers(a, f, &err));
  assert_int_equal(err.status, LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "root"));
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_params_flattened_row_major),
      cmocka_unit_test(test_storage_align_padding),
      cmocka_unit_test(test_blocks_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
