/* The whole pipeline on programs made by te and scheduled with the schedule
 * primitives: the lowered program must be plain loops over 1-d buffers and
 * compute exactly what the scheduled (block-level) program computes. */
#include "transform_check.h"

#include "tir/schedule/schedule.h"

static bool buffers_flat_cb(Visitor *v, const Stmt *s) {
  bool *ok = v->user;
  if (s->kind == STMT_STORE && s->store.n != 1) *ok = false;
  if (s->kind == STMT_ALLOCATE && s->alloc.buffer->ndim != 1) *ok = false;
  return true;
}
static bool loads_flat_cb(Visitor *v, const Expr *e) {
  bool *ok = v->user;
  if (e->kind == EXPR_LOAD && e->load.n != 1) *ok = false;
  return true;
}

/* Lowers f and checks the output contract; returns the lowered function. */
static const PrimFunc *lower_checked(Arena *a, const PrimFunc *f, const LowerOptions *opt, uint64_t seed) {
  LoomError err = {0};
  const PrimFunc *g = tir_lower(a, f, opt, &err);
  if (!g) fail_msg("tir_lower: %s", err.msg);
  XcCount c = xc_count(g);
  assert_int_equal(c.stmt[STMT_BLOCK_REALIZE], 0);
  assert_int_equal(c.for_kind[FOR_VECTORIZED], 0);
  assert_int_equal(c.non_pow2_vectors, 0);
  bool flat = true;
  Visitor v = {buffers_flat_cb, loads_flat_cb, &flat};
  visit_stmt(&v, g->body);
  assert_true(flat);
  assert_non_null(g->orig_params);
  for (int i = 0; i < g->n_params; i++) {
    assert_int_equal(g->params[i]->ndim, 1);
    assert_int_equal(g->orig_params[i]->ndim, f->params[i]->ndim);
  }
  xc_check_same(f, g, seed);
  return g;
}

static SchRV loop_of(Schedule *s, const char *block, int d) {
  SchRV b = sch_get_block(s, block);
  assert_true(b >= 0);
  SchRV loops[16];
  int n = sch_get_loops(s, b, loops, 16);
  assert_true(d < n);
  return loops[d];
}

static void must(Schedule *s, loom_status st) {
  if (st != LOOM_OK) fail_msg("schedule refused: %s", sch_error(s));
}

/* Matmul 30x20x17: i and j split by 8 (both imperfect), k between them,
 * ji vectorized, ii unrolled, io parallel. */
static void test_matmul_tiled_vectorized(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = xc_te_matmul(a, 30, 20, 17);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  SchRV i = loop_of(s, "C", 0), j = loop_of(s, "C", 1), k = loop_of(s, "C", 2);
  SchRV ip[2], jp[2];
  assert_int_equal(sch_split(s, i, (int64_t[]){-1, 8}, 2, ip), 0);
  assert_int_equal(sch_split(s, j, (int64_t[]){-1, 8}, 2, jp), 0);
  must(s, sch_reorder(s, (SchRV[]){ip[0], jp[0], k, ip[1], jp[1]}, 5));
  must(s, sch_vectorize(s, jp[1]));
  must(s, sch_unroll(s, ip[1]));
  must(s, sch_parallel(s, ip[0]));
  const PrimFunc *g = sch_func(s);
  xc_check_same(f, g, 101);
  LowerOptions opt = lower_options_default();
  const PrimFunc *l = lower_checked(a, g, &opt, 102);
  xc_dump("lower(matmul tiled)", l);
  XcCount c = xc_count(l);
  assert_true(c.vector_stores > 0);
  assert_true(c.for_kind[FOR_PARALLEL] >= 1);
  assert_int_equal(c.for_kind[FOR_UNROLLED], 0);
  sch_free(s);
  arena_free(a);
}

/* Without partitioning, the guards keep the vectorized loop serial; the
 * result is the same either way. */
static void test_options_change_shape_not_results(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = xc_split_elementwise(a, 62, 8, FOR_VECTORIZED);
  LowerOptions on = lower_options_default(), off = lower_options_default();
  off.partition_loops = false;
  off.storage_rewrite = false;
  off.max_unroll_extent = 0;
  const PrimFunc *x = lower_checked(a, f, &on, 111), *y = lower_checked(a, f, &off, 112);
  assert_true(xc_count(x).vector_stores > 0);
  assert_int_equal(xc_count(x).stmt[STMT_IF], 0);
  assert_int_equal(xc_count(y).vector_stores, 0);
  assert_int_equal(xc_count(y).stmt[STMT_IF], 1);
  assert_int_equal(on.max_unroll_extent, 64);
  assert_true(on.partition_loops && on.storage_rewrite);
  arena_free(a);
}

static const Expr *scale_body(Arena *a, const Expr *const *ax, void *user) {
  return expr_add(a, expr_mul(a, te_load(a, user, ax), expr_float(a, DT_F32, 2.0)), expr_float(a, DT_F32, 1.0));
}

/* B = A * 2 + 1 over 12x10 with A cached in a local buffer computed at the
 * outer loop of B, padded by storage_align. */
static void test_cache_read_compute_at_storage_align(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){12, 10}, &err);
  TeTensor *B = te_compute(a, "B", 2, (int64_t[]){12, 10}, scale_body, A, &err);
  PrimFunc *f = te_create_primfunc(a, "cached", (TeTensor *[]){A, B}, 2, &err);
  assert_non_null(f);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  SchRV bb = sch_get_block(s, "B");
  SchRV ip[2];
  assert_int_equal(sch_split(s, loop_of(s, "B", 0), (int64_t[]){-1, 5}, 2, ip), 0);
  SchRV cache = sch_cache_read(s, bb, 0, SCOPE_LOCAL);
  if (cache < 0) fail_msg("cache_read: %s", sch_error(s));
  must(s, sch_compute_at(s, cache, ip[0]));
  must(s, sch_storage_align(s, cache, 0, 0, 8, 1));
  const PrimFunc *g = sch_func(s);
  xc_check_same(f, g, 121);
  LowerOptions opt = lower_options_default();
  const PrimFunc *l = lower_checked(a, g, &opt, 122);
  xc_dump("lower(cache+align)", l);
  assert_true(xc_count(l).stmt[STMT_ALLOCATE] >= 1);
  sch_free(s);
  arena_free(a);
}

/* decompose_reduction gives the init its own block (no init guard left). */
static void test_decompose_reduction(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = xc_te_matmul(a, 6, 16, 5);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  SchRV jp[2];
  assert_int_equal(sch_split(s, loop_of(s, "C", 1), (int64_t[]){-1, 8}, 2, jp), 0);
  must(s, sch_reorder(s, (SchRV[]){jp[0], loop_of(s, "C", 3), jp[1]}, 3));
  SchRV init = sch_decompose_reduction(s, sch_get_block(s, "C"), jp[0]);
  if (init < 0) fail_msg("decompose_reduction: %s", sch_error(s));
  SchRV loops[8];
  int n = sch_get_loops(s, init, loops, 8);
  must(s, sch_vectorize(s, loops[n - 1]));
  must(s, sch_vectorize(s, loop_of(s, "C", 3)));
  const PrimFunc *g = sch_func(s);
  xc_check_same(f, g, 131);
  LowerOptions opt = lower_options_default();
  const PrimFunc *l = lower_checked(a, g, &opt, 132);
  xc_dump("lower(decomposed)", l);
  XcCount c = xc_count(l);
  assert_int_equal(c.stmt[STMT_IF], 0);
  assert_true(c.vector_stores >= 2);
  sch_free(s);
  arena_free(a);
}

/* Random splits (often imperfect), reorders and annotations on matmul,
 * lowered under random options: always the same results. */
static void test_random_schedules(void **state) {
  (void)state;
  uint64_t rng = 0x5eed;
  for (int trial = 0; trial < 40; trial++) {
    Arena *a = arena_new();
    int64_t M = 1 + (int64_t)(xc_rng(&rng) % 13), N = 1 + (int64_t)(xc_rng(&rng) % 19),
            K = 1 + (int64_t)(xc_rng(&rng) % 7);
    PrimFunc *f = xc_te_matmul(a, M, N, K);
    Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
    SchRV i = loop_of(s, "C", 0), j = loop_of(s, "C", 1), k = loop_of(s, "C", 2);
    SchRV ip[2], jp[2];
    int64_t fi = 1 + (int64_t)(xc_rng(&rng) % 6), fj = 1 + (int64_t)(xc_rng(&rng) % 9);
    assert_int_equal(sch_split(s, i, (int64_t[]){-1, fi}, 2, ip), 0);
    assert_int_equal(sch_split(s, j, (int64_t[]){-1, fj}, 2, jp), 0);
    if (xc_rng(&rng) % 2) must(s, sch_reorder(s, (SchRV[]){ip[0], jp[0], k, ip[1], jp[1]}, 5));
    if (xc_rng(&rng) % 3) (void)sch_vectorize(s, jp[1]); /* refusals leave the program as is */
    if (xc_rng(&rng) % 2) must(s, sch_unroll(s, ip[1]));
    if (xc_rng(&rng) % 2) (void)sch_parallel(s, ip[0]);
    LowerOptions opt = lower_options_default();
    opt.partition_loops = xc_rng(&rng) % 4 != 0;
    opt.storage_rewrite = xc_rng(&rng) % 2;
    opt.max_unroll_extent = (int)(xc_rng(&rng) % 3) * 4;
    lower_checked(a, sch_func(s), &opt, 200 + (uint64_t)trial);
    xc_check_same(f, sch_func(s), 300 + (uint64_t)trial);
    sch_free(s);
    arena_free(a);
  }
}

/* B = A * 2 + 1 over 6x10: fuse i, j, split the fused loop by 8 and
 * vectorize. The floordiv/floormod bindings flatten back to the fused index,
 * so the vector accesses are contiguous; 60 = 7*8 + 4 also needs a tail. */
static void test_fuse_split_vectorize(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){6, 10}, &err);
  TeTensor *B = te_compute(a, "B", 2, (int64_t[]){6, 10}, scale_body, A, &err);
  PrimFunc *f = te_create_primfunc(a, "fused", (TeTensor *[]){A, B}, 2, &err);
  assert_non_null(f);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  SchRV fused = sch_fuse(s, (SchRV[]){loop_of(s, "B", 0), loop_of(s, "B", 1)}, 2);
  if (fused < 0) fail_msg("fuse: %s", sch_error(s));
  SchRV parts[2];
  assert_int_equal(sch_split(s, fused, (int64_t[]){-1, 8}, 2, parts), 0);
  must(s, sch_vectorize(s, parts[1]));
  xc_check_same(f, sch_func(s), 141);
  LowerOptions opt = lower_options_default();
  const PrimFunc *l = lower_checked(a, sch_func(s), &opt, 142);
  xc_dump("lower(fuse+split+vectorize)", l);
  XcCount c = xc_count(l);
  assert_int_equal(c.vector_stores, 2);
  assert_int_equal(c.stmt[STMT_IF], 0);
  sch_free(s);
  arena_free(a);
}

/* B = A*2+1, C = B*2+1, D = C*2+1 over [n]: random split of D's loop,
 * B and/or C computed at its outer loop or cached in local memory, random
 * vectorize/unroll of the inner loops; lowered under random options. */
static void test_random_chain_schedules(void **state) {
  (void)state;
  uint64_t rng = 0xc4a1;
  for (int trial = 0; trial < 30; trial++) {
    Arena *a = arena_new();
    LoomError err = {0};
    int64_t n = 1 + (int64_t)(xc_rng(&rng) % 40);
    TeTensor *A = te_placeholder(a, "A", DT_F32, 1, (int64_t[]){n}, &err);
    TeTensor *B = te_compute(a, "B", 1, (int64_t[]){n}, scale_body, A, &err);
    TeTensor *C = te_compute(a, "C", 1, (int64_t[]){n}, scale_body, B, &err);
    TeTensor *D = te_compute(a, "D", 1, (int64_t[]){n}, scale_body, C, &err);
    PrimFunc *f = te_create_primfunc(a, "chain3", (TeTensor *[]){A, D}, 2, &err);
    assert_non_null(f);
    Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
    SchRV parts[2];
    int64_t factor = 1 + (int64_t)(xc_rng(&rng) % 9);
    assert_int_equal(sch_split(s, loop_of(s, "D", 0), (int64_t[]){-1, factor}, 2, parts), 0);
    if (xc_rng(&rng) % 2) (void)sch_cache_write(s, sch_get_block(s, "C"), 0, SCOPE_LOCAL);
    if (xc_rng(&rng) % 2) (void)sch_compute_at(s, sch_get_block(s, "C"), parts[0]);
    if (xc_rng(&rng) % 2) (void)sch_compute_at(s, sch_get_block(s, "B"), parts[0]);
    if (xc_rng(&rng) % 2) (void)sch_vectorize(s, parts[1]);
    else if (xc_rng(&rng) % 2) (void)sch_unroll(s, parts[1]);
    LowerOptions opt = lower_options_default();
    opt.partition_loops = xc_rng(&rng) % 4 != 0;
    opt.storage_rewrite = xc_rng(&rng) % 4 != 0;
    opt.max_unroll_extent = (int)(xc_rng(&rng) % 3) * 4;
    xc_check_same(f, sch_func(s), 400 + (uint64_t)trial);
    xc_dump("lower(chain3)", lower_checked(a, sch_func(s), &opt, 500 + (uint64_t)trial));
    sch_free(s);
    arena_free(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_tiled_vectorized),
      cmocka_unit_test(test_options_change_shape_not_results),
      cmocka_unit_test(test_cache_read_compute_at_storage_align),
      cmocka_unit_test(test_decompose_reduction),
      cmocka_unit_test(test_fuse_split_vectorize),
      cmocka_unit_test(test_random_schedules),
      cmocka_unit_test(test_random_chain_schedules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
