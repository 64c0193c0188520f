/* Block movement and inlining: compute_at, reverse_compute_at,
 * compute_inline, reverse_compute_inline. Every schedule is checked against
 * the unscheduled program with the reference interpreter; every refusal
 * leaves the program and the trace unchanged. */
#include "blocks_fixture.h"

static void test_inline_chain(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = fx_chain(a, 16);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 1);
  SchRV b = sch_get_block(s, "B");
  assert_int_equal(sch_compute_inline(s, b), LOOM_OK);
  assert_null(stmt_find_block(sch_func(s)->body, "B"));
  assert_int_equal(primfunc_root(sch_func(s))->n_alloc, 0);
  const Block *c = stmt_find_block(sch_func(s)->body, "C")->realize.block;
  assert_int_equal(c->n_reads, 1);
  assert_string_equal(c->reads[0].buffer->name, "A");
  assert_string_equal(expr_to_string(a, c->body->store.value), "((A[vi] * 2.0f32) + 1.0f32)");
  assert_int_equal(trace_length(sch_trace(s)), 2);
  assert_int_equal(sch_trace(s)->insts[1].kind, INST_COMPUTE_INLINE);
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

static void test_inline_refusals(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_chain(a, 8), DECIDE_DEFAULT, 1);
  SchRV h1 = sch_get_block(s, "C");
  FX_REFUSED(s, sch_compute_inline(s, h1), "function output");
  sch_free(s);
  s = sch_create(fx_matmul_bias_relu(a, 4, 5, 6), DECIDE_DEFAULT, 1);
  SchRV h2 = sch_get_block(s, "C");
  FX_REFUSED(s, sch_compute_inline(s, h2), "\"C\" has an init");
  SchRV h3 = sch_get_block(s, "D");
  FX_REFUSED(s, sch_reverse_compute_inline(s, h3), "producer \"C\" of C is a reduction");
  SchRV h4 = sch_get_block(s, "C");
  FX_REFUSED(s, sch_reverse_compute_inline(s, h4), "block \"C\" is a reduction");
  sch_free(s);
  arena_free(a);
}

static void test_inline_matmul_epilogue(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_matmul_bias_relu(a, 4, 5, 6), DECIDE_DEFAULT, 1);
  /* D folds into E (compute_inline), then nothing else can fold into C. */
  assert_int_equal(sch_compute_inline(s, sch_get_block(s, "D")), LOOM_OK);
  assert_null(stmt_find_block(sch_func(s)->body, "D"));
  const Block *e = stmt_find_block(sch_func(s)->body, "E")->realize.block;
  assert_int_equal(e->n_reads, 2); /* C and bias */
  fx_check(s);
  sch_free(s);

  s = sch_create(fx_matmul_bias_relu(a, 4, 5, 6), DECIDE_DEFAULT, 1);
  /* E folds into D (reverse): D now writes E directly. */
  assert_int_equal(sch_reverse_compute_inline(s, sch_get_block(s, "E")), LOOM_OK);
  assert_null(stmt_find_block(sch_func(s)->body, "E"));
  const Block *d = stmt_find_block(sch_func(s)->body, "D")->realize.block;
  assert_string_equal(d->writes[0].buffer->name, "E");
  assert_int_equal(primfunc_root(sch_func(s))->n_alloc, 1); /* only C is left */
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

static void test_reverse_inline_chain(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_chain(a, 12), DECIDE_DEFAULT, 1);
  assert_int_equal(sch_reverse_compute_inline(s, sch_get_block(s, "C")), LOOM_OK);
  const Block *b = stmt_find_block(sch_func(s)->body, "B")->realize.block;
  assert_string_equal(b->writes[0].buffer->name, "C");
  assert_null(stmt_find_block(sch_func(s)->body, "C"));
  assert_int_equal(primfunc_root(sch_func(s))->n_alloc, 0);
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

static void test_compute_at_chain(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_chain(a, 16), DECIDE_DEFAULT, 1);
  SchRV b = sch_get_block(s, "B");
  SchRV i = fx_loop_rv(s, "C", 0);
  assert_int_equal(sch_compute_at(s, b, i), LOOM_OK);
  /* B now sits under C's loop, one element per iteration: no loop of its own. */
  assert_int_equal(fx_depth(s, "B"), 1);
  assert_ptr_equal(fx_loop(s, "B", 0)->loop.var, sch_loop_var(s, i));
  const Stmt *body = fx_loop(s, "B", 0)->loop.body;
  assert_int_equal(body->kind, STMT_SEQ);
  assert_string_equal(body->seq.stmts[0]->realize.block->name, "B");
  assert_int_equal(sch_trace(s)->insts[trace_length(sch_trace(s)) - 1].kind, INST_COMPUTE_AT);
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

/* The 1-D stencil: compute_at into a split loop needs [i0*8, i0*8 + 9]. */
static void test_compute_at_stencil(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_stencil_prog(a, 30), DECIDE_DEFAULT, 1);
  SchRV parts[2];
  assert_int_equal(sch_split(s, fx_loop_rv(s, "B", 0), (int64_t[]){4, 8}, 2, parts), 0);
  assert_int_equal(sch_compute_at(s, sch_get_block(s, "Q"), parts[0]), LOOM_OK);
  assert_int_equal(fx_depth(s, "Q"), 2);
  const Stmt *ql = fx_loop(s, "Q", 1);
  assert_true(expr_is_int(ql->loop.extent, 10));
  const Stmt *q = stmt_find_block(sch_func(s)->body, "Q");
  /* i0 = 3 reaches Q[33]: the last tile is clipped to Q's domain [0, 32). */
  assert_false(expr_is_int(q->realize.predicate, 1));
  fx_check(s);
  /* P follows Q under the same loop; it must come first. */
  assert_int_equal(sch_compute_at(s, sch_get_block(s, "P"), parts[0]), LOOM_OK);
  const Stmt *i0 = fx_loop(s, "P", 0);
  assert_ptr_equal(i0->loop.var, sch_loop_var(s, parts[0]));
  assert_string_equal(i0->loop.body->seq.stmts[0]->kind == STMT_FOR
                          ? stmt_find_block(i0->loop.body->seq.stmts[0], "P")->realize.block->name
                          : i0->loop.body->seq.stmts[0]->realize.block->name,
                      "P");
  assert_true(expr_is_int(fx_loop(s, "P", 1)->loop.extent, 10));
  fx_check(s);
  /* Q moves again, deeper: per i1 it needs Q[i, i+2] only. */
  assert_int_equal(sch_compute_at(s, sch_get_block(s, "Q"), parts[1]), LOOM_OK);
  assert_int_equal(fx_depth(s, "Q"), 3);
  assert_true(expr_is_int(fx_loop(s, "Q", 2)->loop.extent, 3));
  assert_ptr_equal(fx_loop(s, "Q", 1)->loop.var, sch_loop_var(s, parts[1]));
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

static void test_compute_at_inlined_pad(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_stencil_prog(a, 24), DECIDE_DEFAULT, 1);
  assert_int_equal(sch_compute_inline(s, sch_get_block(s, "P")), LOOM_OK);
  SchRV parts[2];
  assert_int_equal(sch_split(s, fx_loop_rv(s, "B", 0), (int64_t[]){3, 8}, 2, parts), 0);
  assert_int_equal(sch_compute_at(s, sch_get_block(s, "Q"), parts[1]), LOOM_OK);
  /* At the inner loop one B needs Q[i, i+2]: a 3-wide loop. */
  assert_true(expr_is_int(fx_loop(s, "Q", 2)->loop.extent, 3));
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

static void test_compute_at_reduction_producer(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_matmul_bias_relu(a, 4, 5, 6), DECIDE_DEFAULT, 1);
  /* The whole reduction over k runs for each (i, j) of D. */
  assert_int_equal(sch_compute_at(s, sch_get_block(s, "C"), fx_loop_rv(s, "D", 1)), LOOM_OK);
  assert_int_equal(fx_depth(s, "C"), 3);
  assert_true(expr_is_int(fx_loop(s, "C", 2)->loop.extent, 5));
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

static void test_compute_at_refusals(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_chain(a, 8), DECIDE_DEFAULT, 1);
  SchRV b = sch_get_block(s, "B"), c = sch_get_block(s, "C");
  SchRV bi = fx_loop_rv(s, "B", 0), ci = fx_loop_rv(s, "C", 0);
  FX_REFUSED(s, sch_compute_at(s, c, bi), "\"C\" is not a producer of any block under loop");
  FX_REFUSED(s, sch_compute_at(s, b, bi), "is an ancestor of block \"B\"");
  FX_REFUSED(s, sch_reverse_compute_at(s, b, ci), "does not come after loop");
  sch_free(s);

  s = sch_create(fx_softmax(a, 3, 5), DECIDE_DEFAULT, 1);
  /* E feeds S and O, which live in different nests. */
  SchRV h5 = sch_get_block(s, "E");
  SchRV h6 = fx_loop_rv(s, "O", 0);
  FX_REFUSED(s, sch_compute_at(s, h5, h6),
             "consumer \"S\" of block \"E\" is not under loop");
  SchRV h7 = sch_get_block(s, "O");
  SchRV h8 = fx_loop_rv(s, "S", 0);
  FX_REFUSED(s, sch_compute_at(s, h7, h8), "not a producer");
  sch_free(s);

  s = sch_create(fx_matmul_bias_relu(a, 4, 5, 6), DECIDE_DEFAULT, 1);
  SchRV h9 = sch_get_block(s, "D");
  SchRV h10 = fx_loop_rv(s, "C", 2);
  FX_REFUSED(s, sch_reverse_compute_at(s, h9, h10),
             "reduction not complete within loop");
  SchRV h11 = sch_get_block(s, "C");
  SchRV h12 = fx_loop_rv(s, "D", 0);
  FX_REFUSED(s, sch_reverse_compute_at(s, h11, h12),
             "block \"C\" has an init");
  SchRV h13 = sch_get_block(s, "E");
  SchRV h14 = fx_loop_rv(s, "C", 1);
  FX_REFUSED(s, sch_reverse_compute_at(s, h13, h14),
             "is not a consumer of any block under loop");
  sch_free(s);
  arena_free(a);
}

static void test_reverse_compute_at_epilogue(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_matmul_bias_relu(a, 4, 5, 6), DECIDE_DEFAULT, 1);
  SchRV cj = fx_loop_rv(s, "C", 1);
  assert_int_equal(sch_reverse_compute_at(s, sch_get_block(s, "D"), cj), LOOM_OK);
  assert_int_equal(fx_depth(s, "D"), 2);
  assert_int_equal(sch_reverse_compute_at(s, sch_get_block(s, "E"), cj), LOOM_OK);
  assert_int_equal(fx_depth(s, "E"), 2);
  const Stmt *j = fx_loop(s, "E", 1);
  assert_int_equal(j->loop.body->kind, STMT_SEQ);
  assert_int_equal(j->loop.body->seq.n, 3); /* k-loop of C, then D, then E */
  assert_int_equal(sch_trace(s)->insts[trace_length(sch_trace(s)) - 1].kind, INST_REVERSE_COMPUTE_AT);
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

static void test_reverse_compute_at_split(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_chain(a, 30), DECIDE_DEFAULT, 1);
  SchRV parts[2];
  assert_int_equal(sch_split(s, fx_loop_rv(s, "B", 0), (int64_t[]){4, 8}, 2, parts), 0);
  assert_int_equal(sch_reverse_compute_at(s, sch_get_block(s, "C"), parts[0]), LOOM_OK);
  assert_int_equal(fx_depth(s, "C"), 2);
  assert_true(expr_is_int(fx_loop(s, "C", 1)->loop.extent, 8));
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

/* Softmax fused row by row: every stage moves under O's row loop. */
static void test_softmax_row_fusion(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_softmax(a, 3, 7), DECIDE_DEFAULT, 1);
  SchRV oi = fx_loop_rv(s, "O", 0);
  assert_int_equal(sch_compute_at(s, sch_get_block(s, "S"), oi), LOOM_OK);
  assert_int_equal(sch_compute_at(s, sch_get_block(s, "E"), oi), LOOM_OK);
  assert_int_equal(sch_compute_at(s, sch_get_block(s, "M"), oi), LOOM_OK);
  const Stmt *i = fx_loop(s, "O", 0);
  assert_int_equal(i->loop.body->kind, STMT_SEQ);
  assert_int_equal(i->loop.body->seq.n, 4);
  const char *order[4] = {"M", "E", "S", "O"};
  for (int k = 0; k < 4; k++) assert_non_null(stmt_find_block(i->loop.body->seq.stmts[k], order[k]));
  assert_int_equal(fx_depth(s, "M"), 2); /* row loop + full reduction */
  assert_int_equal(fx_depth(s, "E"), 2);
  fx_check(s);
  /* Replaying the trace on the original reproduces the program. */
  Schedule *r = sch_create(sch_original(s), DECIDE_DEFAULT, 1);
  assert_int_equal(trace_apply(sch_trace(s), r), LOOM_OK);
  assert_int_equal(trace_length(sch_trace(r)), trace_length(sch_trace(s)));
  fx_check_same(sch_func(s), sch_func(r), 3);
  assert_true(tir_func_equal(sch_func(s), sch_func(r)));
  for (int k = 0; k < 4; k++) assert_int_equal(fx_depth(r, order[k]), fx_depth(s, order[k]));
  sch_free(r);
  sch_free(s);
  arena_free(a);
}

/* Programs te cannot write: two writers, an input updated in between,
 * shifted reads, a buffer with two readers. */
static void test_hand_built_refusals(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = fx_buf(a, "A", 10), *B = fx_buf(a, "B", 10), *C = fx_buf(a, "C", 8), *D = fx_buf(a, "D", 8);
  const Buffer *p2[2] = {A, C}, *p3[3] = {A, C, D};

  /* B1 and B2 both write B. */
  const Stmt *two[3] = {fx_elem(a, "B1", B, A, 0, 10, 2), fx_elem(a, "B2", B, A, 0, 10, 3),
                        fx_elem(a, "C", C, B, 0, 8, 1)};
  Schedule *s = sch_create(fx_hand_func(a, p2, 2, (const Buffer *[]){B}, 1, two, 3), DECIDE_DEFAULT, 1);
  SchRV b1 = sch_get_block(s, "B1"), c = sch_get_block(s, "C"), ci = fx_loop_rv(s, "C", 0);
  FX_REFUSED(s, sch_compute_inline(s, b1), "block \"B2\" also writes B");
  FX_REFUSED(s, sch_compute_at(s, b1, ci), "block \"B2\" also writes B");
  FX_REFUSED(s, sch_cache_write(s, b1, 0, SCOPE_LOCAL) >= 0 ? 0 : 1, "block \"B2\" also writes B");
  FX_REFUSED(s, sch_reverse_compute_inline(s, c), "B has two producers");
  sch_free(s);

  /* X rewrites the input A between B and its consumer C. */
  const Stmt *upd[3] = {fx_elem(a, "B", B, A, 0, 10, 2), fx_elem(a, "X", A, A, 0, 10, 5),
                        fx_elem(a, "C", C, B, 0, 8, 1)};
  s = sch_create(fx_hand_func(a, p2, 2, (const Buffer *[]){B}, 1, upd, 3), DECIDE_DEFAULT, 1);
  SchRV b = sch_get_block(s, "B");
  ci = fx_loop_rv(s, "C", 0);
  FX_REFUSED(s, sch_compute_inline(s, b), "block \"X\" writes A between block \"B\" and its consumers");
  FX_REFUSED(s, sch_compute_at(s, b, ci), "block \"X\" writes A, which block \"B\" reads");
  sch_free(s);

  /* C reads B shifted by one; D reads B too. */
  const Stmt *sh[3] = {fx_elem(a, "B", B, A, 0, 10, 2), fx_elem(a, "C", C, B, 1, 8, 1),
                       fx_elem(a, "D", D, B, 0, 8, 1)};
  s = sch_create(fx_hand_func(a, p3, 3, (const Buffer *[]){B}, 1, sh, 3), DECIDE_DEFAULT, 1);
  c = sch_get_block(s, "C");
  SchRV d = sch_get_block(s, "D"), bi = fx_loop_rv(s, "B", 0);
  FX_REFUSED(s, sch_reverse_compute_inline(s, c), "must read B at exactly its iterators");
  FX_REFUSED(s, sch_reverse_compute_at(s, c, bi), "must read B at its own iterators");
  FX_REFUSED(s, sch_reverse_compute_inline(s, d), "iterator \"vi\" of block \"D\" must cover dimension 0 of B");
  SchRV bb = sch_get_block(s, "B"), cl = fx_loop_rv(s, "C", 0);
  FX_REFUSED(s, sch_compute_at(s, bb, cl), "consumer \"D\" of block \"B\" is not under loop");
  /* The shifted read still inlines into both consumers. */
  assert_int_equal(sch_compute_inline(s, sch_get_block(s, "B")), LOOM_OK);
  fx_check(s);
  sch_free(s);
  arena_free(a);
}

/* Random valid schedules of the pad + scale + stencil program: random
 * sizes, split factors, and a random choice of where each stage goes. */
static void test_random_stencil_schedules(void **state) {
  (void)state;
  uint64_t rng = 2026;
  for (int round = 0; round < 40; round++) {
    Arena *a = arena_new();
    int64_t n = 9 + (int64_t)(fx_rng(&rng) % 30);
    int64_t inner = 1 + (int64_t)(fx_rng(&rng) % 9);
    int64_t outer = (n + inner - 1) / inner;
    Schedule *s = sch_create(fx_stencil_prog(a, n), DECIDE_DEFAULT, 1);
    SchRV parts[2];
    assert_int_equal(sch_split(s, fx_loop_rv(s, "B", 0), (int64_t[]){outer, inner}, 2, parts), 0);
    int q_at = (int)(fx_rng(&rng) % 3); /* 0: stay, 1: outer, 2: inner */
    if (q_at) assert_int_equal(sch_compute_at(s, sch_get_block(s, "Q"), parts[q_at - 1]), LOOM_OK);
    switch (fx_rng(&rng) % 3) {
      case 0: assert_int_equal(sch_compute_inline(s, sch_get_block(s, "P")), LOOM_OK); break;
      case 1:
        if (q_at) assert_int_equal(sch_compute_at(s, sch_get_block(s, "P"), parts[q_at - 1]), LOOM_OK);
        break;
      default: /* P under Q's own loop, when Q has one */
        if (q_at && fx_depth(s, "Q") > q_at) {
          SchRV ql = fx_loop_rv(s, "Q", q_at);
          assert_int_equal(sch_compute_at(s, sch_get_block(s, "P"), ql), LOOM_OK);
        }
        break;
    }
    fx_check(s);
    sch_free(s);
    arena_free(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_inline_chain),
      cmocka_unit_test(test_inline_refusals),
      cmocka_unit_test(test_inline_matmul_epilogue),
      cmocka_unit_test(test_reverse_inline_chain),
      cmocka_unit_test(test_compute_at_chain),
      cmocka_unit_test(test_compute_at_stencil),
      cmocka_unit_test(test_compute_at_inlined_pad),
      cmocka_unit_test(test_compute_at_reduction_producer),
      cmocka_unit_test(test_compute_at_refusals),
      cmocka_unit_test(test_reverse_compute_at_epilogue),
      cmocka_unit_test(test_reverse_compute_at_split),
      cmocka_unit_test(test_softmax_row_fusion),
      cmocka_unit_test(test_random_stencil_schedules),
      cmocka_unit_test(test_hand_built_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
