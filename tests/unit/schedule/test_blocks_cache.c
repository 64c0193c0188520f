/* Caching, storage alignment and decompose_reduction, each checked against
 * the unscheduled program with the reference interpreter; refusals leave
 * the program and trace unchanged. */
#include "blocks_fixture.h"

static void test_cache_read_matmul(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_matmul_bias_relu(a, 4, 5, 6), DECIDE_DEFAULT, 1);
  SchRV c = sch_get_block(s, "C");
  /* reads of C: C (accumulator), A, W */
  const Block *cb = fx_block(s, "C");
  int ia = -1;
  for (int k = 0; k < cb->n_reads; k++)
    if (strcmp(cb->reads[k].buffer->name, "A") == 0) ia = k;
  assert_true(ia >= 0);
  SchRV al = sch_cache_read(s, c, ia, SCOPE_LOCAL);
  assert_true(al >= 0);
  assert_string_equal(sch_block_name(s, al), "A_local");
  const Block *copy = fx_block(s, "A_local");
  assert_int_equal(copy->writes[0].buffer->scope, SCOPE_LOCAL);
  assert_ptr_equal(fx_block(s, "C")->reads[ia].buffer, copy->writes[0].buffer);
  /* The copy comes first at root level. */
  const Stmt *root_body = primfunc_root(sch_func(s))->body;
  assert_non_null(stmt_find_block(root_body->seq.stmts[0], "A_local"));
  const Inst *in = &sch_trace(s)->insts[trace_length(sch_trace(s)) - 1];
  assert_int_equal(in->kind, INST_CACHE_READ);
  assert_int_equal(in->n_ints, 2);
  assert_int_equal(in->ints[0], ia);
  assert_int_equal(in->outputs[0], al);
  fx_check(s);
  /* The copy then moves under C's row loop: one row of A per i. */
  assert_int_equal(sch_compute_at(s, al, fx_loop_rv(s, "C", 0)), LOOM_OK);
  assert_int_equal(fx_depth(s, "A_local"), 2);
  assert_true(expr_is_int(fx_loop(s, "A_local", 1)->loop.extent, 5));
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

static void test_cache_write_matmul(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_matmul_bias_relu(a, 4, 5, 6), DECIDE_DEFAULT, 1);
  SchRV e = sch_get_block(s, "E");
  SchRV el = sch_cache_write(s, e, 0, SCOPE_LOCAL);
  assert_true(el >= 0);
  assert_string_equal(sch_block_name(s, el), "E_local");
  assert_string_equal(fx_block(s, "E")->writes[0].buffer->name, "E_local");
  assert_string_equal(fx_block(s, "E_local")->writes[0].buffer->name, "E");
  fx_check(s);
  /* A reduction: the accumulator is redirected too (init and update). */
  SchRV c = sch_get_block(s, "C");
  SchRV cl = sch_cache_write(s, c, 0, SCOPE_LOCAL);
  assert_true(cl >= 0);
  const Block *cb = fx_block(s, "C");
  assert_string_equal(cb->writes[0].buffer->name, "C_local");
  assert_ptr_equal(cb->init->store.buffer, cb->writes[0].buffer);
  fx_check(s);
  /* The copy-out then folds into the row loop of C. */
  assert_int_equal(sch_reverse_compute_at(s, cl, fx_loop_rv(s, "C", 0)), LOOM_OK);
  assert_int_equal(fx_depth(s, "C_local"), 2);
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

static void test_cache_refusals(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_matmul_bias_relu(a, 4, 5, 6), DECIDE_DEFAULT, 1);
  SchRV c = sch_get_block(s, "C"), d = sch_get_block(s, "D");
  FX_REFUSED(s, sch_cache_read(s, c, 7, SCOPE_LOCAL) >= 0 ? 0 : 1, "read_index 7 is out of range");
  FX_REFUSED(s, sch_cache_write(s, d, 1, SCOPE_LOCAL) >= 0 ? 0 : 1, "write_index 1 is out of range");
  FX_REFUSED(s, sch_cache_read(s, d, 0, (MemScope)9) >= 0 ? 0 : 1, "invalid memory scope");
  /* C's consumer D is moved under C's loop: caching C's write would make D read it too early. */
  assert_int_equal(sch_reverse_compute_at(s, d, fx_loop_rv(s, "C", 1)), LOOM_OK);
  FX_REFUSED(s, sch_cache_write(s, c, 0, SCOPE_LOCAL) >= 0 ? 0 : 1, "reads C in the same loop nest");
  FX_REFUSED(s, sch_cache_read(s, d, 0, SCOPE_LOCAL) >= 0 ? 0 : 1, "C is written by block \"C\" in the same loop nest");
  sch_free(s);
  arena_free(a);
}

static void test_storage_align(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_matmul_bias_relu(a, 4, 5, 6), DECIDE_DEFAULT, 1);
  SchRV c = sch_get_block(s, "C"), e = sch_get_block(s, "E");
  FX_REFUSED(s, sch_storage_align(s, e, 0, 0, 8, 1), "function parameter");
  FX_REFUSED(s, sch_storage_align(s, c, 0, 2, 8, 1), "axis 2 is out of range");
  FX_REFUSED(s, sch_storage_align(s, c, 0, 0, 0, 0), "factor 0 must be positive");
  FX_REFUSED(s, sch_storage_align(s, c, 1, 0, 8, 0), "write_index 1");
  assert_int_equal(sch_storage_align(s, c, 0, 0, 8, 1), LOOM_OK);
  const Buffer *cbuf = fx_block(s, "C")->writes[0].buffer;
  assert_int_equal(cbuf->align_axis, 0);
  assert_int_equal(cbuf->align_factor, 8);
  assert_int_equal(cbuf->align_offset, 1);
  /* Every use agrees: the consumer reads the same buffer node, the root allocates it. */
  assert_ptr_equal(fx_block(s, "D")->reads[0].buffer, cbuf);
  assert_ptr_equal(primfunc_root(sch_func(s))->alloc_buffers[0], cbuf);
  const Inst *in = &sch_trace(s)->insts[trace_length(sch_trace(s)) - 1];
  assert_int_equal(in->kind, INST_STORAGE_ALIGN);
  assert_int_equal(in->n_ints, 4);
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

static void test_decompose_reduction(void **state) {
  (void)state;
  for (int at = 0; at < 3; at++) {
    Arena *a = arena_new();
    Schedule *s = sch_create(fx_matmul_bias_relu(a, 4, 5, 6), DECIDE_DEFAULT, 1);
    SchRV c = sch_get_block(s, "C");
    SchRV init = sch_decompose_reduction(s, c, fx_loop_rv(s, "C", at));
    assert_true(init >= 0);
    assert_string_equal(sch_block_name(s, init), "C_init");
    assert_null(fx_block(s, "C")->init);
    const Block *ib = fx_block(s, "C_init");
    assert_int_equal(ib->n_iters, 2);
    /* The init runs under i and j (loops above `at` shared, the spatial
     * ones at or below copied), never under k. */
    assert_int_equal(fx_depth(s, "C_init"), 2);
    /* ... and sits right before loop `at`. */
    const Stmt *l = fx_loop(s, "C", at), *parent = sch_parent(sch_func(s)->body, l);
    assert_int_equal(parent->kind, STMT_SEQ);
    for (int k = 0; k < parent->seq.n; k++)
      if (parent->seq.stmts[k] == l) assert_non_null(stmt_find_block(parent->seq.stmts[k - 1], "C_init"));
    for (int k = 0; k < at; k++) assert_ptr_equal(fx_loop(s, "C_init", k), fx_loop(s, "C", k));
    fx_check(s);
    sch_free(s);
    arena_free(a);
  }
}

static void test_decompose_reduction_softmax(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_softmax(a, 3, 6), DECIDE_DEFAULT, 1);
  SchRV oi = fx_loop_rv(s, "O", 0);
  assert_int_equal(sch_compute_at(s, sch_get_block(s, "S"), oi), LOOM_OK);
  SchRV init = sch_decompose_reduction(s, sch_get_block(s, "S"), fx_loop_rv(s, "S", 1));
  assert_true(init >= 0);
  assert_int_equal(fx_depth(s, "S_init"), 1); /* just the row loop */
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

/* S[j1, j2] = sum over k of A[j1, j2, k]. */
static const Expr *sum_k3(Arena *a, const Expr *const *ax, void *u) {
  Args *g = u;
  const Expr *idx[3] = {ax[0], ax[1], g->k.var};
  return te_sum(a, te_load(a, g->t[0], idx), &g->k, 1, NULL);
}
/* O[i] = S[i % 2, i / 2] + S[i % 2 + 1, i / 2]: neighbours share S's points. */
static const Expr *overlapping_pair(Arena *a, const Expr *const *ax, void *u) {
  Args *g = u;
  const Expr *lo = expr_floormod(a, ax[0], fx_i(a, 2)), *q = expr_floordiv(a, ax[0], fx_i(a, 2));
  const Expr *i0[2] = {lo, q}, *i1[2] = {expr_add(a, lo, fx_i(a, 1)), q};
  return expr_add(a, te_load(a, g->t[0], i0), te_load(a, g->t[0], i1));
}

static void test_decompose_reduction_refusals(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_matmul_bias_relu(a, 4, 5, 6), DECIDE_DEFAULT, 1);
  SchRV c = sch_get_block(s, "C"), d = sch_get_block(s, "D");
  SchRV dl = fx_loop_rv(s, "D", 0), ck = fx_loop_rv(s, "C", 2), ci = fx_loop_rv(s, "C", 0);
  FX_REFUSED(s, sch_decompose_reduction(s, d, dl) >= 0 ? 0 : 1, "block \"D\" has no init");
  FX_REFUSED(s, sch_decompose_reduction(s, c, dl) >= 0 ? 0 : 1, "is not an ancestor of block \"C\"");
  /* k outermost: decomposing below it would reset the sum for every k. */
  SchRV order[3] = {ck, ci, fx_loop_rv(s, "C", 1)};
  assert_int_equal(sch_reorder(s, order, 3), LOOM_OK);
  FX_REFUSED(s, sch_decompose_reduction(s, c, ci) >= 0 ? 0 : 1, "carries a reduction iterator");
  assert_true(sch_decompose_reduction(s, c, ck) >= 0);
  fx_check(s);
  sch_free(s);

  /* The row sum computed at the output's column loop re-runs per column;
   * fused with the row loop, that loop binds the row but runs rows x
   * columns times: hoisting the init above it would sum each row 6 times.
   * (Found by the long random-schedule suite, softmax and layer norm.) */
  s = sch_create(fx_softmax(a, 3, 6), DECIDE_DEFAULT, 1);
  SchRV ol[2] = {fx_loop_rv(s, "O", 0), fx_loop_rv(s, "O", 1)};
  assert_int_equal(sch_compute_at(s, sch_get_block(s, "S"), ol[1]), LOOM_OK);
  SchRV fused = sch_fuse(s, ol, 2);
  assert_true(fused >= 0);
  fx_check(s);
  SchRV sb = sch_get_block(s, "S");
  FX_REFUSED(s, sch_decompose_reduction(s, sb, fused) >= 0 ? 0 : 1, "may visit a point of block \"S\" more than once");
  sch_free(s);

  /* S computed at O's loop i: per i, S[i % 2 .. i % 2 + 1, i / 2]; i = 0
   * and i = 1 both reach S[1, 0]. The loop binds both of S's iterators (8
   * iterations over 3 x 4 points, so counting iterations against points
   * does not see it), but the bindings are no bijection, and with the init
   * above i, S[1, 0] would be summed twice. (Found by the random-schedule
   * suite on the Winograd conv, whose output transform reads M so.) */
  IterVar k = te_reduce_axis(a, "k", 5);
  TeTensor *in = fx_input(a, "A", 3, (int64_t[]){3, 4, 5});
  TeTensor *sum = fx_compute(a, "S", 2, (int64_t[]){3, 4}, sum_k3, in, NULL, 0, &k);
  TeTensor *out = fx_compute(a, "O", 1, (int64_t[]){8}, overlapping_pair, sum, NULL, 0, NULL);
  s = sch_create(fx_func(a, "overlap", (TeTensor *[]){in, out}, 2), DECIDE_DEFAULT, 1);
  SchRV oi = fx_loop_rv(s, "O", 0);
  SchRV sblk = sch_get_block(s, "S");
  assert_int_equal(sch_compute_at(s, sblk, oi), LOOM_OK);
  fx_check(s);
  FX_REFUSED(s, sch_decompose_reduction(s, sblk, oi) >= 0 ? 0 : 1,
             "may visit a point of block \"S\" more than once");
  sch_free(s);
  arena_free(a);
}

/* k outermost, init decomposed before it: C's update reads and writes C
 * for every k. cache_inplace under the row loop i stages one row of C per
 * (k, i): copy in, update, copy out (a register tile accumulating across
 * an outer reduction loop). Also replays from the trace. */
static void test_cache_inplace(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_matmul_bias_relu(a, 8, 5, 6), DECIDE_DEFAULT, 1);
  SchRV c = sch_get_block(s, "C");
  SchRV ci = fx_loop_rv(s, "C", 0), cj = fx_loop_rv(s, "C", 1), ck = fx_loop_rv(s, "C", 2);
  assert_int_equal(sch_reorder(s, (SchRV[]){ck, ci, cj}, 3), LOOM_OK);
  assert_true(sch_decompose_reduction(s, c, ck) >= 0);
  SchRV io[2];
  assert_int_equal(sch_cache_inplace(s, c, ci, SCOPE_LOCAL, io), LOOM_OK);
  assert_string_equal(sch_block_name(s, io[0]), "C_local_in");
  assert_string_equal(sch_block_name(s, io[1]), "C_local_out");
  assert_string_equal(fx_block(s, "C")->writes[0].buffer->name, "C_local");
  /* Under k and i, one row: a loop of 6 over j. */
  assert_int_equal(fx_depth(s, "C_local_in"), 3);
  assert_true(expr_is_int(fx_loop(s, "C_local_out", 2)->loop.extent, 6));
  const Inst *in = &sch_trace(s)->insts[trace_length(sch_trace(s)) - 1];
  assert_int_equal(in->kind, INST_CACHE_INPLACE);
  assert_int_equal(in->n_outputs, 2);
  fx_check(s);
  Schedule *r = sch_create(sch_original(s), DECIDE_DEFAULT, 1);
  if (trace_apply(sch_trace(s), r) != LOOM_OK) fail_msg("replay: %s", sch_error(r));
  assert_true(tir_func_equal(sch_func(s), sch_func(r)));
  char *text = trace_to_text(sch_trace(s));
  Trace *parsed = trace_parse(a, text, &(LoomError){0});
  free(text);
  assert_non_null(parsed);
  Schedule *p = sch_create(sch_original(s), DECIDE_DEFAULT, 1);
  assert_int_equal(trace_apply(parsed, p), LOOM_OK);
  assert_true(tir_func_equal(sch_func(s), sch_func(p)));
  sch_free(p);
  sch_free(r);
  sch_free(s);
  arena_free(a);
}

static void test_cache_inplace_refusals(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_matmul_bias_relu(a, 8, 5, 6), DECIDE_DEFAULT, 1);
  SchRV c = sch_get_block(s, "C"), d = sch_get_block(s, "D"), out[2];
  SchRV ci = fx_loop_rv(s, "C", 0), dl = fx_loop_rv(s, "D", 0);
  FX_REFUSED(s, sch_cache_inplace(s, c, dl, SCOPE_LOCAL, out), "is not an ancestor");
  FX_REFUSED(s, sch_cache_inplace(s, d, dl, SCOPE_LOCAL, out), "does not read D");
  /* The init decomposed under i: it writes C under i too. */
  assert_true(sch_decompose_reduction(s, c, fx_loop_rv(s, "C", 2)) >= 0);
  FX_REFUSED(s, sch_cache_inplace(s, c, ci, SCOPE_LOCAL, out), "\"C_init\" also accesses C");
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

/* A schedule using every block primitive replays from its trace. */
static void test_trace_replay(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_matmul_bias_relu(a, 8, 5, 6), DECIDE_DEFAULT, 1);
  SchRV c = sch_get_block(s, "C");
  SchRV cl = sch_cache_write(s, c, 0, SCOPE_LOCAL);
  assert_true(cl >= 0);
  assert_int_equal(sch_compute_inline(s, sch_get_block(s, "D")), LOOM_OK);
  assert_int_equal(sch_reverse_compute_at(s, cl, fx_loop_rv(s, "C", 0)), LOOM_OK);
  assert_true(sch_decompose_reduction(s, c, fx_loop_rv(s, "C", 1)) >= 0);
  assert_int_equal(sch_storage_align(s, cl, 0, 0, 4, 2), LOOM_OK);
  fx_check(s);
  Schedule *r = sch_create(sch_original(s), DECIDE_DEFAULT, 1);
  if (trace_apply(sch_trace(s), r) != LOOM_OK) fail_msg("replay: %s", sch_error(r));
  assert_int_equal(trace_length(sch_trace(r)), trace_length(sch_trace(s)));
  fx_check_same(sch_func(s), sch_func(r), 5);
  assert_true(tir_func_equal(sch_func(s), sch_func(r)));
  const char *names[4] = {"C", "C_init", "C_local", "E"};
  for (int k = 0; k < 4; k++) assert_int_equal(fx_depth(r, names[k]), fx_depth(s, names[k]));
  sch_free(r);
  sch_free(s);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cache_read_matmul),
      cmocka_unit_test(test_cache_write_matmul),
      cmocka_unit_test(test_cache_refusals),
      cmocka_unit_test(test_storage_align),
      cmocka_unit_test(test_decompose_reduction),
      cmocka_unit_test(test_decompose_reduction_softmax),
      cmocka_unit_test(test_decompose_reduction_refusals),
      cmocka_unit_test(test_cache_inplace),
      cmocka_unit_test(test_cache_inplace_refusals),
      cmocka_unit_test(test_trace_replay),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
