/* rfactor, checked against the reference interpreter: row max and row sum
 * of a softmax with the inner part of the split reduction made a vector of
 * partial results, the matmul's outer reduction part, the trace replay, and
 * the refusals. */
#include "blocks_fixture.h"

/* Splits block `name`'s loop at depth d by `inner`; returns the two parts. */
static void split_at(Schedule *s, const char *name, int d, int64_t inner, SchRV *parts) {
  assert_int_equal(sch_split(s, fx_loop_rv(s, name, d), (int64_t[]){-1, inner}, 2, parts), 0);
}

/* The vector shape the CPU schedule uses: rows, then k split by 8, rfactor
 * of the inner 8, init decomposed and the 8 lanes vectorized. */
static void test_rfactor_softmax_rows(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_softmax(a, 3, 32), DECIDE_DEFAULT, 1);
  const char *blocks[2] = {"M", "S"};
  for (int b = 0; b < 2; b++) {
    SchRV k[2];
    split_at(s, blocks[b], 1, 8, k);
    SchRV rf = sch_rfactor(s, k[1]);
    assert_true(rf >= 0);
    const char *rfn = sch_block_name(s, rf);
    assert_string_equal(rfn, b ? "S_rf" : "M_rf");
    const Block *rb = fx_block(s, rfn);
    /* i (spatial), ko (reduce), ki (spatial, the partial-result axis) */
    assert_int_equal(rb->n_iters, 3);
    assert_int_equal(rb->iters[1].type, ITER_REDUCE);
    assert_int_equal(rb->iters[2].type, ITER_SPATIAL);
    assert_int_equal(rb->writes[0].buffer->ndim, 2);
    /* The write-back keeps the block's name: the row loop and its own loop. */
    assert_int_equal(fx_depth(s, blocks[b]), 2);
    assert_ptr_equal(fx_loop(s, blocks[b], 0), fx_loop(s, rfn, 0));
    fx_check(s);
    SchRV init = sch_decompose_reduction(s, rf, k[0]);
    assert_true(init >= 0);
    assert_int_equal(sch_vectorize(s, k[1]), LOOM_OK);
    SchRV il[4];
    int ni = sch_get_loops(s, init, il, 4);
    assert_int_equal(sch_vectorize(s, il[ni - 1]), LOOM_OK);
    fx_check(s);
  }
  /* The trace replays to the same program. */
  Schedule *r = sch_create(sch_original(s), DECIDE_DEFAULT, 1);
  if (trace_apply(sch_trace(s), r) != LOOM_OK) fail_msg("replay: %s", sch_error(r));
  assert_true(tir_func_equal(sch_func(s), sch_func(r)));
  char *txt = trace_to_text(sch_trace(s));
  assert_non_null(strstr(txt, "= rfactor(l"));
  free(txt);
  sch_free(r);
  sch_free(s);
  arena_free(a);
}

/* The outer part of a split matmul reduction, and a reduction loop that is
 * not split at all. */
static void test_rfactor_matmul(void **state) {
  (void)state;
  for (int outer = 0; outer < 2; outer++) {
    Arena *a = arena_new();
    Schedule *s = sch_create(fx_matmul_bias_relu(a, 4, 6, 5), DECIDE_DEFAULT, 1);
    SchRV k[2] = {fx_loop_rv(s, "C", 2), -1};
    if (outer) split_at(s, "C", 2, 3, k);
    SchRV rf = sch_rfactor(s, k[0]);
    assert_true(rf >= 0);
    assert_int_equal(fx_block(s, "C_rf")->writes[0].buffer->ndim, 3);
    fx_check(s);
    sch_free(s);
    arena_free(a);
  }
}

static void test_rfactor_refusals(void **state) {
  (void)state;
  Arena *a = arena_new();
  Schedule *s = sch_create(fx_matmul_bias_relu(a, 4, 6, 5), DECIDE_DEFAULT, 1);
  SchRV ci = fx_loop_rv(s, "C", 0), dj = fx_loop_rv(s, "D", 1);
  FX_REFUSED(s, sch_rfactor(s, ci) >= 0 ? 0 : 1, "must carry reduction iterators");
  FX_REFUSED(s, sch_rfactor(s, dj) >= 0 ? 0 : 1, "is not a reduction");
  /* An inexact split guards the body with a predicate on the reduction loops. */
  SchRV k[2];
  split_at(s, "C", 2, 4, k);
  FX_REFUSED(s, sch_rfactor(s, k[1]) >= 0 ? 0 : 1, "exact split");
  sch_free(s);

  s = sch_create(fx_matmul_bias_relu(a, 4, 6, 5), DECIDE_DEFAULT, 1);
  SchRV c = sch_get_block(s, "C");
  SchRV kl = fx_loop_rv(s, "C", 2);
  assert_true(sch_decompose_reduction(s, c, fx_loop_rv(s, "C", 0)) >= 0);
  FX_REFUSED(s, sch_rfactor(s, kl) >= 0 ? 0 : 1, "with an init");
  sch_free(s);

  /* A spatial loop inside the reduction loops. */
  s = sch_create(fx_matmul_bias_relu(a, 4, 6, 5), DECIDE_DEFAULT, 1);
  SchRV l[3];
  assert_int_equal(sch_get_loops(s, sch_get_block(s, "C"), l, 3), 3);
  assert_int_equal(sch_reorder(s, (SchRV[]){l[0], l[2], l[1]}, 3), LOOM_OK);
  FX_REFUSED(s, sch_rfactor(s, l[2]) >= 0 ? 0 : 1, "carries a spatial iterator");
  sch_free(s);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rfactor_softmax_rows),
      cmocka_unit_test(test_rfactor_matmul),
      cmocka_unit_test(test_rfactor_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
