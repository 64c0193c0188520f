/* Public API: schedules. Every primitive's happy path is checked by
 * building the scheduled function and comparing its output with a C
 * reference; every refusal is checked for its status and message. */
#include "api_test_util.h"

#include <math.h>

enum { M = 24, N = 32, K = 16 };

typedef struct Mm {
  loom_tensor *A, *B;
  loom_expr *k;
} Mm;

static loom_expr *mm_body(loom_ctx *ctx, loom_expr *const *ax, void *user) {
  Mm *m = user;
  return loom_sum(ctx, loom_mul(ctx, loom_load(ctx, m->A, (loom_expr *[]){ax[0], m->k}, 2),
                                loom_load(ctx, m->B, (loom_expr *[]){m->k, ax[1]}, 2)),
                  &m->k, 1);
}
static loom_expr *double_body(loom_ctx *ctx, loom_expr *const *ax, void *user) {
  loom_expr *x = loom_load(ctx, user, ax, 2);
  return loom_mul(ctx, x, loom_float(ctx, LOOM_F32, 2));
}
static loom_expr *plus_one_body(loom_ctx *ctx, loom_expr *const *ax, void *user) {
  loom_expr *x = loom_load(ctx, user, ax, 2);
  return loom_add(ctx, x, loom_float(ctx, LOOM_F32, 1));
}

/* C = A x B, then D = C * 2 (a consumer for reverse_compute_at/inline).
 * With `stages` the function is (A, B, D) with C internal; else (A, B, C). */
static loom_func *matmul_func(loom_ctx *ctx, const char *name, bool stages) {
  Mm m = {loom_placeholder(ctx, "A", LOOM_F32, 2, (int64_t[]){M, K}),
          loom_placeholder(ctx, "B", LOOM_F32, 2, (int64_t[]){K, N}), loom_reduce_axis(ctx, "k", K)};
  loom_tensor *C = loom_compute(ctx, "C", 2, (int64_t[]){M, N}, mm_body, &m);
  if (!stages) return loom_func_create(ctx, name, (loom_tensor *[]){m.A, m.B, C}, 3);
  loom_tensor *D = loom_compute(ctx, "D", 2, (int64_t[]){M, N}, double_body, C);
  return loom_func_create(ctx, name, (loom_tensor *[]){m.A, m.B, D}, 3);
}

/* Y = (X * 2) + 1 through an intermediate T (for compute_inline / compute_at). */
static loom_func *chain_func(loom_ctx *ctx, const char *name) {
  loom_tensor *X = loom_placeholder(ctx, "X", LOOM_F32, 2, (int64_t[]){M, N});
  loom_tensor *T = loom_compute(ctx, "T", 2, (int64_t[]){M, N}, double_body, X);
  loom_tensor *Y = loom_compute(ctx, "Y", 2, (int64_t[]){M, N}, plus_one_body, T);
  return loom_func_create(ctx, name, (loom_tensor *[]){X, Y}, 2);
}

static loom_rv loop_of(loom_ctx *ctx, loom_sched *s, const char *block, int d) {
  loom_rv l[8];
  int n = loom_sched_get_loops(s, loom_sched_get_block(s, block), l, 8);
  must(ctx, n > d);
  return l[d];
}

/* Runs every function of m: matmul ones (3 params, D = 2 * A x B when
 * `stages`) and chains (2 params), compared against C loops. */
typedef struct Case {
  loom_func *f;
  bool chain, stages;
} Case;

static void run_and_check(loom_ctx *ctx, const Case *cases, int n) {
  loom_func *fs[32];
  for (int i = 0; i < n; i++) fs[i] = cases[i].f;
  loom_module *mod = loom_build(ctx, fs, n);
  must(ctx, mod);
  TestTensor a, b, c;
  test_tensor_init(&a, LOOM_F32, 2, (int64_t[]){M, K}, 4);
  test_tensor_init(&b, LOOM_F32, 2, (int64_t[]){K, N}, 4);
  test_tensor_init(&c, LOOM_F32, 2, (int64_t[]){M, N}, 4);
  TestTensor x;
  test_tensor_init(&x, LOOM_F32, 2, (int64_t[]){M, N}, 4);
  uint64_t seed = 3;
  for (int q = 0; q < M * K; q++) ((float *)a.data)[q] = test_rand_f32(&seed);
  for (int q = 0; q < K * N; q++) ((float *)b.data)[q] = test_rand_f32(&seed);
  for (int q = 0; q < M * N; q++) ((float *)x.data)[q] = test_rand_f32(&seed);
  for (int i = 0; i < n; i++) {
    const char *name = loom_func_name(cases[i].f);
    memset(c.data, 0xff, sizeof(float) * M * N); /* NaN: every element must be written */
    if (cases[i].chain)
      must(ctx, !loom_module_run(mod, name, (DLTensor *[]){&x.dl, &c.dl}, 2));
    else
      must(ctx, !loom_module_run(mod, name, (DLTensor *[]){&a.dl, &b.dl, &c.dl}, 3));
    for (int r = 0; r < M; r++)
      for (int col = 0; col < N; col++) {
        double want;
        if (cases[i].chain) {
          want = ((float *)x.data)[r * N + col] * 2.0f + 1.0f;
        } else {
          want = 0;
          for (int z = 0; z < K; z++)
            want += (double)((float *)a.data)[r * K + z] * ((float *)b.data)[z * N + col];
          if (cases[i].stages) want *= 2;
        }
        float got = ((float *)c.data)[r * N + col];
        if (!(fabs(got - want) <= 1e-5 * fmax(1, fabs(want))))
          fail_msg("%s: [%d, %d] = %g, expected %g", name, r, col, got, want);
      }
  }
  free(a.data), free(b.data), free(c.data), free(x.data);
  loom_module_free(mod);
}

static void test_primitives_run(void **state) {
  (void)state;
  loom_ctx *ctx = test_ctx();
  Case cases[16];
  int nc = 0;
  loom_sched *s;

  /* split (perfect and not), reorder, vectorize, parallel, unroll */
  s = loom_sched_create(ctx, matmul_func(ctx, "mm_split", false), 0);
  loom_rv l[3], i2[2], j2[2];
  must(ctx, loom_sched_get_loops(s, loom_sched_get_block(s, "C"), l, 3) == 3);
  must(ctx, !loom_sched_split(s, l[0], (int64_t[]){-1, 5}, 2, i2)); /* 24 = 5 * 5 - 1: predicate */
  must(ctx, !loom_sched_split(s, l[1], (int64_t[]){-1, 8}, 2, j2));
  must(ctx, !loom_sched_reorder(s, (loom_rv[]){i2[0], j2[0], l[2], i2[1], j2[1]}, 5));
  must(ctx, !loom_sched_vectorize(s, j2[1]));
  must(ctx, !loom_sched_parallel(s, i2[0]));
  must(ctx, !loom_sched_unroll(s, i2[1]));
  cases[nc++] = (Case){loom_sched_func(s), false, false};

  /* fuse, tile */
  s = loom_sched_create(ctx, matmul_func(ctx, "mm_tile", false), 0);
  must(ctx, loom_sched_get_loops(s, loom_sched_get_block(s, "C"), l, 3) == 3);
  loom_rv t[4];
  must(ctx, !loom_sched_tile(s, l, 2, (int64_t[]){4, 6, 8, 4}, 2, t));
  loom_rv fused = loom_sched_fuse(s, t, 2);
  must(ctx, fused >= 0);
  must(ctx, !loom_sched_parallel(s, fused));
  cases[nc++] = (Case){loom_sched_func(s), false, false};

  /* cache_read + compute_at + storage_align, decompose_reduction */
  s = loom_sched_create(ctx, matmul_func(ctx, "mm_cache", false), 0);
  loom_rv cb = loom_sched_get_block(s, "C");
  must(ctx, loom_sched_get_loops(s, cb, l, 3) == 3);
  loom_rv ar = loom_sched_cache_read(s, cb, 0, LOOM_SCOPE_LOCAL);
  must(ctx, ar >= 0);
  must(ctx, !loom_sched_compute_at(s, ar, l[0]));
  must(ctx, !loom_sched_storage_align(s, ar, 0, 0, 8, 1));
  must(ctx, loom_sched_decompose_reduction(s, cb, l[1]) >= 0);
  cases[nc++] = (Case){loom_sched_func(s), false, false};

  /* rfactor of the split reduction's inner part */
  s = loom_sched_create(ctx, matmul_func(ctx, "mm_rfactor", false), 0);
  cb = loom_sched_get_block(s, "C");
  must(ctx, loom_sched_get_loops(s, cb, l, 3) == 3);
  loom_rv kp[2];
  must(ctx, !loom_sched_split(s, l[2], (int64_t[]){-1, 2}, 2, kp));
  must(ctx, loom_sched_rfactor(s, kp[1]) >= 0);
  assert_non_null(strstr(loom_func_text(ctx, loom_sched_func(s)), "block C_rf("));
  cases[nc++] = (Case){loom_sched_func(s), false, false};

  /* cache_write + reverse_compute_at */
  s = loom_sched_create(ctx, matmul_func(ctx, "mm_cw", false), 0);
  cb = loom_sched_get_block(s, "C");
  loom_rv wb = loom_sched_cache_write(s, cb, 0, LOOM_SCOPE_LOCAL);
  must(ctx, wb >= 0);
  must(ctx, loom_sched_get_loops(s, cb, l, 3) == 3);
  must(ctx, !loom_sched_reverse_compute_at(s, wb, l[0]));
  cases[nc++] = (Case){loom_sched_func(s), false, false};

  /* two stages: D computed under C's outer loop */
  s = loom_sched_create(ctx, matmul_func(ctx, "mm_rca", true), 0);
  must(ctx, !loom_sched_reverse_compute_at(s, loom_sched_get_block(s, "D"), loop_of(ctx, s, "C", 0)));
  cases[nc++] = (Case){loom_sched_func(s), false, true};

  /* chains: compute_inline; compute_at */
  s = loom_sched_create(ctx, chain_func(ctx, "chain_inline"), 0);
  must(ctx, !loom_sched_compute_inline(s, loom_sched_get_block(s, "T")));
  assert_null(strstr(loom_func_text(ctx, loom_sched_func(s)), "block T("));
  cases[nc++] = (Case){loom_sched_func(s), true, false};
  s = loom_sched_create(ctx, chain_func(ctx, "chain_rinline"), 0);
  must(ctx, !loom_sched_reverse_compute_inline(s, loom_sched_get_block(s, "Y")));
  assert_null(strstr(loom_func_text(ctx, loom_sched_func(s)), "block Y("));
  cases[nc++] = (Case){loom_sched_func(s), true, false};
  s = loom_sched_create(ctx, chain_func(ctx, "chain_at"), 0);
  must(ctx, !loom_sched_compute_at(s, loom_sched_get_block(s, "T"), loop_of(ctx, s, "Y", 1)));
  cases[nc++] = (Case){loom_sched_func(s), true, false};

  /* sampled tiles (random decisions) drive a split */
  s = loom_sched_create(ctx, matmul_func(ctx, "mm_sampled", false), 12345);
  must(ctx, loom_sched_get_loops(s, loom_sched_get_block(s, "C"), l, 3) == 3);
  int64_t tiles[3], pick;
  must(ctx, !loom_sched_sample_perfect_tile(s, l[1], 3, 8, tiles));
  assert_int_equal(tiles[0] * tiles[1] * tiles[2], N);
  assert_true(tiles[2] <= 8);
  loom_rv j3[3];
  must(ctx, !loom_sched_split(s, l[1], tiles, 3, j3));
  must(ctx, !loom_sched_sample_categorical(s, (int64_t[]){0, 1}, (double[]){0, 1}, 2, &pick));
  assert_int_equal(pick, 1); /* zero weight is never picked */
  if (pick) must(ctx, !loom_sched_vectorize(s, j3[2]));
  cases[nc++] = (Case){loom_sched_func(s), false, false};

  /* The untouched functions still compute the same thing. */
  cases[nc++] = (Case){matmul_func(ctx, "mm_plain", true), false, true};
  run_and_check(ctx, cases, nc);
  loom_ctx_destroy(ctx);
}

static void test_trace(void **state) {
  (void)state;
  loom_ctx *ctx = test_ctx();
  loom_func *f = matmul_func(ctx, "mm", false);
  loom_sched *s = loom_sched_create(ctx, f, 99);
  loom_rv l[3], parts[2];
  must(ctx, loom_sched_get_loops(s, loom_sched_get_block(s, "C"), l, 3) == 3);
  int64_t tiles[2];
  must(ctx, !loom_sched_sample_perfect_tile(s, l[1], 2, 0, tiles));
  must(ctx, !loom_sched_split(s, l[1], tiles, 2, parts));
  must(ctx, !loom_sched_parallel(s, l[0]));
  const char *trace = loom_sched_trace(s);
  assert_non_null(strstr(trace, "get_block(\"C\")"));
  assert_non_null(strstr(trace, "sample_perfect_tile"));
  assert_non_null(strstr(trace, "split"));
  /* Replaying on a fresh schedule gives the identical program. */
  loom_sched *r = loom_sched_create(ctx, f, 0);
  must(ctx, !loom_sched_apply_trace(r, trace));
  assert_string_equal(loom_func_text(ctx, loom_sched_func(r)), loom_func_text(ctx, loom_sched_func(s)));
  assert_string_equal(loom_sched_trace(r), trace);
  /* The original function is unchanged. */
  assert_null(strstr(loom_func_text(ctx, f), "parallel"));

  loom_sched *q = loom_sched_create(ctx, f, 0);
  assert_int_equal(loom_sched_apply_trace(q, "this is not a trace"), LOOM_ERR_PARSE);
  expect_error(ctx, LOOM_ERR_PARSE, "loom_sched_apply_trace");
  assert_int_equal(loom_sched_apply_trace(q, "b0 = get_block(\"nope\")\n"), LOOM_ERR_SCHEDULE);
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_apply_trace", "nope");
  assert_string_equal(loom_sched_trace(q), ""); /* all or nothing */
  assert_int_equal(loom_sched_apply_trace(q, NULL), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "trace_text is NULL");
  loom_ctx_destroy(ctx);
}

static loom_func *snapshot_probe(loom_ctx *ctx) { return matmul_func(ctx, "probe", false); }

static void test_refusals(void **state) {
  (void)state;
  loom_ctx *ctx = test_ctx();
  loom_sched *s = loom_sched_create(ctx, matmul_func(ctx, "mm", true), 0);
  must(ctx, s);
  loom_rv cb = loom_sched_get_block(s, "C"), db = loom_sched_get_block(s, "D");
  loom_rv l[3], out[4];
  must(ctx, cb >= 0 && db >= 0 && loom_sched_get_loops(s, cb, l, 3) == 3);
  assert_int_equal(loom_sched_get_loops(s, cb, l, 1), 3); /* count, only 1 written */

  assert_int_equal(loom_sched_get_block(s, "nope"), -1);
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_get_block", "nope");
  assert_int_equal(loom_sched_get_block(s, NULL), -1);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "name is NULL");
  assert_int_equal(loom_sched_get_loops(s, l[0], l, 3), -1);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_get_loops", "is the loop", "expected a block");
  assert_int_equal(loom_sched_get_loops(s, cb, NULL, 3), -1);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "out NULL");
  assert_int_equal(loom_sched_get_loops(s, cb, NULL, 0), 3);

  /* split */
  assert_int_equal(loom_sched_split(s, cb, (int64_t[]){2, -1}, 2, out), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_split", "is the block \"C\", expected a loop");
  assert_int_equal(loom_sched_split(s, -1, (int64_t[]){2, -1}, 2, out), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "-1 is not a loop handle");
  assert_int_equal(loom_sched_split(s, 1000, (int64_t[]){2, -1}, 2, out), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "1000 is not a loop handle");
  assert_int_equal(loom_sched_split(s, l[0], (int64_t[]){-1, -1}, 2, out), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "2 factors are -1");
  assert_int_equal(loom_sched_split(s, l[0], (int64_t[]){0, 4}, 2, out), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "factor 0 is 0");
  assert_int_equal(loom_sched_split(s, l[0], (int64_t[]){4}, 1, out), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "1 factors, expected 2..8");
  assert_int_equal(loom_sched_split(s, l[0], NULL, 2, out), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "factors is NULL");
  assert_int_equal(loom_sched_split(s, l[0], (int64_t[]){2, 2}, 2, NULL), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "out is NULL");
  loom_rv parts[2];
  must(ctx, !loom_sched_split(s, l[0], (int64_t[]){2, -1}, 2, parts));
  /* l[0] is gone now: stale */
  assert_int_equal(loom_sched_parallel(s, l[0]), LOOM_ERR_SCHEDULE);
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_parallel", "no longer exists");

  /* fuse / reorder / tile */
  assert_int_equal(loom_sched_fuse(s, parts, 1), -1);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_fuse", "1 loops, expected 2..");
  assert_int_equal(loom_sched_fuse(s, (loom_rv[]){parts[0], parts[0]}, 2), -1);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "the same loop");
  assert_int_equal(loom_sched_fuse(s, (loom_rv[]){parts[0], l[2]}, 2), -1);
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_fuse");
  assert_int_equal(loom_sched_reorder(s, NULL, 2), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_reorder", "loops is NULL");
  assert_int_equal(loom_sched_reorder(s, (loom_rv[]){parts[1], cb}, 2), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loops[]", "expected a loop");
  assert_int_equal(loom_sched_tile(s, (loom_rv[]){parts[1]}, 1, (int64_t[]){2, 0}, 2, out),
                   LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_tile", "factor 1 of loop 0 is 0");
  assert_int_equal(loom_sched_tile(s, (loom_rv[]){parts[1]}, 1, (int64_t[]){2}, 1, out),
                   LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "depth 1");

  /* annotations */
  assert_int_equal(loom_sched_vectorize(s, l[2]), LOOM_ERR_SCHEDULE);
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_vectorize");
  must(ctx, !loom_sched_parallel(s, parts[0]));
  assert_int_equal(loom_sched_parallel(s, parts[1]), LOOM_ERR_SCHEDULE);
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_parallel");
  assert_int_equal(loom_sched_unroll(s, db), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_unroll", "is the block \"D\"");

  /* block movement */
  assert_int_equal(loom_sched_compute_at(s, db, l[1]), LOOM_ERR_SCHEDULE);
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_compute_at");
  assert_int_equal(loom_sched_compute_at(s, l[1], l[1]), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "block: handle");
  assert_int_equal(loom_sched_reverse_compute_at(s, db, cb), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_reverse_compute_at", "loop: handle");
  assert_int_equal(loom_sched_compute_inline(s, cb), LOOM_ERR_SCHEDULE); /* a reduction */
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_compute_inline");
  assert_int_equal(loom_sched_reverse_compute_inline(s, cb), LOOM_ERR_SCHEDULE);
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_reverse_compute_inline");

  /* caches */
  assert_int_equal(loom_sched_cache_read(s, cb, 7, LOOM_SCOPE_LOCAL), -1);
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_cache_read");
  assert_int_equal(loom_sched_cache_read(s, cb, -1, LOOM_SCOPE_LOCAL), -1);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "read_index -1");
  assert_int_equal(loom_sched_cache_read(s, cb, 0, (loom_scope)9), -1);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "scope 9");
  assert_int_equal(loom_sched_cache_write(s, cb, 3, LOOM_SCOPE_LOCAL), -1);
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_cache_write");
  assert_int_equal(loom_sched_cache_write(s, cb, -2, LOOM_SCOPE_LOCAL), -1);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "write_index -2");
  assert_int_equal(loom_sched_storage_align(s, cb, 0, 0, 0, 0), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_storage_align", "factor 0");
  assert_int_equal(loom_sched_storage_align(s, cb, 0, 0, 8, 8), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "offset 8");
  assert_int_equal(loom_sched_storage_align(s, cb, 0, 5, 8, 1), LOOM_ERR_SCHEDULE);
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_storage_align");
  assert_int_equal(loom_sched_decompose_reduction(s, db, parts[0]), -1);
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_decompose_reduction");
  assert_int_equal(loom_sched_rfactor(s, l[1]), -1);
  expect_error(ctx, LOOM_ERR_SCHEDULE, "loom_sched_rfactor", "reduction iterators");
  assert_int_equal(loom_sched_rfactor(s, cb), -1);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_rfactor", "loop: handle");

  /* sampling */
  int64_t v[4];
  assert_int_equal(loom_sched_sample_perfect_tile(s, l[1], 0, 0, v), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_sample_perfect_tile", "n is 0");
  assert_int_equal(loom_sched_sample_perfect_tile(s, l[1], 2, -1, v), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "max_innermost is -1");
  assert_int_equal(loom_sched_sample_perfect_tile(s, l[1], 2, 0, NULL), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "out is NULL");
  assert_int_equal(loom_sched_sample_categorical(s, (int64_t[]){1, 2}, (double[]){0, 0}, 2, v),
                   LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_sample_categorical", "all zero");
  assert_int_equal(loom_sched_sample_categorical(s, (int64_t[]){1, 2}, (double[]){-1, 2}, 2, v),
                   LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "probs[0] is -1");
  assert_int_equal(loom_sched_sample_categorical(s, NULL, NULL, 2, v), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "candidates is NULL");
  must(ctx, !loom_sched_sample_categorical(s, (int64_t[]){5, 6, 7}, NULL, 3, v));
  assert_true(v[0] >= 5 && v[0] <= 7);

  /* A refused primitive leaves the program and trace unchanged. */
  const char *before = loom_func_text(ctx, loom_sched_func(s));
  const char *trace = loom_sched_trace(s);
  assert_int_equal(loom_sched_vectorize(s, l[2]), LOOM_ERR_SCHEDULE);
  loom_ctx_clear_error(ctx);
  assert_string_equal(loom_func_text(ctx, loom_sched_func(s)), before);
  assert_string_equal(loom_sched_trace(s), trace);

  /* Handles: NULL, wrong kind, freed. */
  assert_null(loom_sched_create(ctx, NULL, 0));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_create", "argument f is NULL");
  assert_null(loom_sched_create(ctx, (loom_func *)s, 0));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "is a schedule, expected a function");
  assert_int_equal(loom_sched_get_block(NULL, "C"), -1);
  assert_int_equal(loom_sched_split(NULL, 0, (int64_t[]){2, 2}, 2, out), LOOM_ERR_INVALID_ARG);
  assert_null(loom_sched_trace(NULL));
  assert_int_equal(loom_sched_get_block((loom_sched *)snapshot_probe(ctx), "C"), -1);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_get_block", "is a function, expected a schedule");
  assert_null(loom_sched_func(NULL));
  loom_func *snap = loom_sched_func(s);
  loom_sched_free(s);
  assert_int_equal(loom_sched_get_block(s, "C"), -1);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_get_block", "already freed");
  assert_int_equal(loom_sched_parallel(s, parts[0]), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sched_parallel", "already freed");
  assert_non_null(strstr(loom_func_text(ctx, snap), "parallel")); /* snapshots outlive it */
  loom_sched_free(s); /* twice is harmless */
  loom_sched_free(NULL);
  /* A schedule freed before any snapshot releases its memory at once. */
  loom_sched *t = loom_sched_create(ctx, snap, 0);
  must(ctx, t);
  loom_sched_free(t);
  loom_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_primitives_run),
      cmocka_unit_test(test_trace),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
