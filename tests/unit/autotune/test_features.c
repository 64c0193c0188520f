/* features_extract (src/autotune/features.h): the vector's length and
 * names (each documented in docs/autotune.md), values checked by hand on
 * small lowered programs written as text, differences between default
 * schedules, determinism, and the extraction time on a realistic conv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autotune/features.h"
#include "fixtures/op_funcs.h"
#include "target/target.h"
#include "tir/text.h"
#include "tir/transform/transform.h"
#include "topi/topi_schedule.h"

static int feature_index(const char *name) {
  char buf[64];
  for (int i = 0; i < FEATURES_DIM; i++)
    if (strcmp(features_name(i, buf, sizeof buf), name) == 0) return i;
  fail_msg("no feature named %s", name);
  return -1;
}

static float feature(const float *v, const char *name) { return v[feature_index(name)]; }

/* Most features are log2(1 + x). */
static void assert_log_feature(const float *v, const char *name, double x) {
  double want = log2(1 + x), got = feature(v, name);
  if (fabs(got - want) > 1e-4) fail_msg("%s = %g (2^%g - 1 = %g), want %g", name, got, got, exp2(got) - 1, x);
}

static void extract(const PrimFunc *f, float *v) {
  LoomError err = {0};
  loom_status st = features_extract(f, v, FEATURES_DIM, &err);
  if (st) fail_msg("features_extract: %s", err.msg);
}

static PrimFunc *parse(Arena *a, const char *text) {
  LoomError err = {0};
  PrimFunc *f = tir_parse_func(a, text, &err);
  if (!f) fail_msg("parse: %s", err.msg);
  return f;
}

static const PrimFunc *lower(Arena *a, const PrimFunc *f) {
  LoomError err = {0};
  LowerOptions lo = lower_options_default();
  const PrimFunc *g = tir_lower(a, f, &lo, &err);
  if (!g) fail_msg("tir_lower: %s", err.msg);
  return g;
}

static Target make_target(const char *name) {
  Target t;
  LoomError err = {0};
  assert_int_equal(target_parse(name, &t, &err), LOOM_OK);
  return t;
}

/* The schedules made by a test: the lowered functions share nodes with
 * them, so they are freed at the end. */
typedef struct Keep {
  Schedule *s[8];
  int n;
} Keep;

static void keep_free(Keep *k) {
  for (int i = 0; i < k->n; i++) sch_free(k->s[i]);
  k->n = 0;
}

/* The default matmul schedule for a target, lowered. */
static const PrimFunc *default_matmul(Arena *a, Keep *keep, int64_t M, int64_t N, int64_t K, const char *target,
                                      int threads) {
  LoomError err = {0};
  PrimFunc *f = opfunc_matmul(a, M, N, K, DT_F32, &err);
  assert_non_null(f);
  Target t = make_target(target);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  assert_int_equal(topi_schedule_matmul_cpu(s, "C", NULL, &t, threads), LOOM_OK);
  assert_true(keep->n < 8);
  keep->s[keep->n++] = s;
  return lower(a, sch_func(s));
}

/* ---- the vector ---- */

static void test_names(void **state) {
  (void)state;
  char buf[64], other[64];
  for (int i = 0; i < FEATURES_DIM; i++) {
    assert_non_null(features_name(i, buf, sizeof buf));
    for (int j = 0; j < i; j++) assert_string_not_equal(buf, features_name(j, other, sizeof other));
  }
  assert_null(features_name(FEATURES_DIM, buf, sizeof buf));
  assert_null(features_name(-1, buf, sizeof buf));
  assert_string_equal(features_name(0, buf, sizeof buf), "g.n_stores");
}

/* Every feature's name (the part after the group prefix) is documented in
 * the "## Features" section of docs/autotune.md, in backquotes. */
static void test_documented(void **state) {
  (void)state;
  const char *dir = getenv("LOOM_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/docs/autotune.md", dir && *dir ? dir : LOOM_SOURCE_DIR);
  FILE *fp = fopen(path, "rb");
  if (!fp) fail_msg("cannot open %s", path);
  static char doc[1 << 17];
  size_t n = fread(doc, 1, sizeof doc - 1, fp);
  fclose(fp);
  doc[n] = '\0';
  char *section = strstr(doc, "\n## Features");
  assert_non_null(section);
  char *end = strstr(section + 1, "\n## ");
  if (end) *end = '\0';
  char buf[64], quoted[80];
  for (int i = 0; i < FEATURES_DIM; i++) {
    const char *name = features_name(i, buf, sizeof buf);
    const char *base = strrchr(name, '.') + 1;
    snprintf(quoted, sizeof quoted, "`%s`", base);
    if (!strstr(section, quoted)) fail_msg("feature %d (%s) is not documented in %s", i, name, path);
  }
  /* and the length the header promises */
  snprintf(quoted, sizeof quoted, "%d", FEATURES_DIM);
  assert_non_null(strstr(section, quoted));
}

static void test_refusals(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  PrimFunc *f = opfunc_matmul(a, 8, 8, 8, DT_F32, &err);
  float v[FEATURES_DIM];
  assert_int_equal(features_extract(f, v, FEATURES_DIM, &err), LOOM_ERR_UNSUPPORTED);
  assert_non_null(strstr(err.msg, "not lowered"));
  const PrimFunc *g = lower(a, f);
  assert_int_equal(features_extract(g, v, FEATURES_DIM - 1, &err), LOOM_ERR_INVALID_ARG);
  assert_int_equal(features_extract(NULL, v, FEATURES_DIM, &err), LOOM_ERR_INVALID_ARG);
  arena_free(a);
}

/* ---- values, by hand ---- */

/* 16 parallel rows x 8 vectors of 8 lanes: B = A * 2. */
static const char *const vector_text =
    "func scale(A: f32[1024], B: f32[1024]) {\n"
    "  for i in 0:16 parallel {\n"
    "    for j in 0:8 {\n"
    "      B[ramp(((i * 64) + (j * 8)), 1, 8)] = (A[ramp(((i * 64) + (j * 8)), 1, 8)] * broadcast(2.0f32, 8))\n"
    "    }\n"
    "  }\n"
    "}\n";

/* The same work, scalar and serial, with the rows walked by columns: a
 * stride of 64 elements in the inner loop. */
static const char *const scalar_text =
    "func scale(A: f32[1024], B: f32[1024]) {\n"
    "  for j in 0:64 {\n"
    "    for i in 0:16 {\n"
    "      B[((i * 64) + j)] = (A[((i * 64) + j)] * 2.0f32)\n"
    "    }\n"
    "  }\n"
    "}\n";

static void test_vector_and_parallel(void **state) {
  (void)state;
  Arena *a = arena_new();
  float v[FEATURES_DIM], s[FEATURES_DIM];
  extract(parse(a, vector_text), v);
  extract(parse(a, scalar_text), s);

  /* the vectorized store reports its lanes; the parallel loop its extent */
  assert_log_feature(v, "top.lanes", 8);
  assert_log_feature(v, "top.vector_bytes", 32);
  assert_log_feature(v, "top.parallel_loops", 1);
  assert_log_feature(v, "top.parallel_extent", 16);
  assert_log_feature(v, "g.max_parallel_extent", 16);
  assert_log_feature(v, "top.parallel_launches", 1);
  assert_true(feature(v, "g.parallel_fraction") == 1.0f);
  assert_log_feature(v, "top.exec", 128);
  assert_log_feature(v, "sum.flops", 1024);
  assert_log_feature(v, "sum.float_mul", 128); /* vector instructions */
  assert_log_feature(v, "top.inner_extent", 8);
  /* the two accesses: 4 KiB each over the nest, 256 bytes per inner loop */
  assert_log_feature(v, "top.bytes_nest", 8192);
  assert_log_feature(v, "top.bytes_inner", 512);
  assert_log_feature(v, "top.acc0.bytes_nest", 4096);
  assert_log_feature(v, "top.acc0.lines_nest", 64);
  assert_log_feature(v, "top.acc0.vec_stride", 1);
  assert_log_feature(v, "top.acc0.stride", 8);
  assert_log_feature(v, "top.acc0.reuse_ratio", 1);
  assert_log_feature(v, "top.noncontig", 0);
  assert_true(feature(v, "top.acc0.is_write") == 1.0f && feature(v, "top.acc1.is_read") == 1.0f);

  assert_log_feature(s, "top.lanes", 1);
  assert_log_feature(s, "top.parallel_extent", 0);
  assert_log_feature(s, "g.max_parallel_extent", 0);
  assert_true(feature(s, "g.parallel_fraction") == 0.0f);
  assert_log_feature(s, "top.exec", 1024);
  assert_log_feature(s, "sum.flops", 1024); /* same work */
  assert_log_feature(s, "top.acc0.stride", 64);
  assert_log_feature(s, "top.noncontig", 2);
  /* each inner loop touches 16 lines per buffer: one element of each */
  assert_log_feature(s, "top.acc0.bytes_inner", 64);
  assert_log_feature(s, "top.acc0.bytes_nest", 4096);
  assert_log_feature(s, "top.acc0.lines_nest", 64);
  arena_free(a);
}

/* A reduction with its init under a guard: the init runs once per output;
 * C[i] is reused across k (carried by k: 1 reuse per 64 iterations... and
 * the sliding window of A overlaps: A[i + k] touches 16 + 3 elements). */
static void test_guard_reuse_window(void **state) {
  (void)state;
  Arena *a = arena_new();
  float v[FEATURES_DIM];
  extract(parse(a,
                "func conv1d(A: f32[19], W: f32[4], C: f32[16]) {\n"
                "  for i in 0:16 {\n"
                "    for k in 0:4 {\n"
                "      if (k == 0) {\n"
                "        C[i] = 0.0f32\n"
                "      }\n"
                "      C[i] = (C[i] + (A[(i + k)] * W[k]))\n"
                "    }\n"
                "  }\n"
                "}\n"),
          v);
  assert_log_feature(v, "g.n_stores", 2);
  assert_log_feature(v, "sum.exec", 16 + 64); /* the init once per i */
  assert_log_feature(v, "sum.flops", 128);
  assert_log_feature(v, "sum.float_fma", 64);
  /* the update is the heaviest store; its accesses by footprint: A's
   * window (19 elements), C (16, read-write), W (4) */
  assert_log_feature(v, "top.exec", 64);
  assert_log_feature(v, "top.acc0.bytes_nest", 19 * 4);
  assert_log_feature(v, "top.acc1.bytes_nest", 16 * 4);
  assert_true(feature(v, "top.acc1.is_read") == 1.0f && feature(v, "top.acc1.is_write") == 1.0f);
  assert_log_feature(v, "top.acc1.reuse_count", 4); /* C[i] is reused across k */
  assert_log_feature(v, "top.acc1.reuse_iters", 1);
  assert_log_feature(v, "top.acc2.bytes_nest", 16);
  assert_log_feature(v, "top.acc2.reuse_count", 16); /* W[k] is reused across i */
  assert_log_feature(v, "top.acc2.reuse_iters", 4);
  assert_log_feature(v, "top.acc2.reuse_bytes", 16);
  assert_log_feature(v, "top.body_accumulators", 1);
  assert_true(feature(v, "top.guarded") == 0.0f);
  arena_free(a);
}

/* The loop the C compiler may vectorize: the innermost one of more than 16
 * iterations (shorter ones it unrolls completely). */
static void test_compiler_loop(void **state) {
  (void)state;
  Arena *a = arena_new();
  float s[FEATURES_DIM], r[FEATURES_DIM], v[FEATURES_DIM];
  /* scalar_text: j (64) outside i (16): j is that loop, and in j both
   * accesses move by one element */
  extract(parse(a, scalar_text), s);
  assert_log_feature(s, "top.cloop_extent", 64);
  assert_log_feature(s, "top.cloop_inner", 16);
  assert_log_feature(s, "top.cloop_strided", 0);
  assert_true(feature(s, "top.cloop_carried") == 0.0f);
  assert_log_feature(s, "top.acc0.cstride", 1);
  /* a row sum: the stored location stays put in k (a carried reduction),
   * and the rows of A are walked with stride 64 when k is outside */
  extract(parse(a,
                "func rowsum(A: f32[1024], S: f32[16]) {\n"
                "  for i in 0:16 {\n"
                "    for k in 0:64 {\n"
                "      S[i] = (S[i] + A[((i * 64) + k)])\n"
                "    }\n"
                "  }\n"
                "}\n"),
          r);
  assert_log_feature(r, "top.cloop_extent", 64);
  assert_log_feature(r, "top.cloop_inner", 1);
  assert_true(feature(r, "top.cloop_carried") == 1.0f);
  assert_log_feature(r, "top.cloop_strided", 0);
  extract(parse(a,
                "func colsum(A: f32[1024], S: f32[16]) {\n"
                "  for k in 0:64 {\n"
                "    for i in 0:16 {\n"
                "      S[i] = (S[i] + A[((i * 64) + k)])\n"
                "    }\n"
                "  }\n"
                "}\n"),
          r);
  assert_log_feature(r, "top.cloop_extent", 64);
  assert_log_feature(r, "top.cloop_strided", 0); /* in k: A moves by 1, S stays */
  assert_log_feature(r, "top.acc0.stride", 64);  /* but the innermost loop i jumps rows */
  /* no loop of more than 16 iterations */
  extract(parse(a, vector_text), v);
  assert_log_feature(v, "top.cloop_extent", 0);
  arena_free(a);
}

/* ---- schedules ---- */

/* AVX-512 and AVX2 default tiles differ (6 x 4 vectors of 16 lanes, 4 x 3
 * of 8): the vectors differ where the tile shows. */
static void test_default_schedules_differ(void **state) {
  (void)state;
  Arena *a = arena_new();
  Keep keep = {0};
  float v512[FEATURES_DIM], v256[FEATURES_DIM], v1[FEATURES_DIM];
  extract(default_matmul(a, &keep, 96, 192, 256, "x86_64-avx512", 1), v512);
  extract(default_matmul(a, &keep, 96, 192, 256, "x86_64-avx2", 1), v256);
  extract(default_matmul(a, &keep, 96, 192, 256, "x86_64-avx2", 4), v1);
  assert_true(memcmp(v512, v256, sizeof v512) != 0);
  assert_log_feature(v512, "top.lanes", 16);
  assert_log_feature(v256, "top.lanes", 8);
  /* the register tile: per k step, 6 x 4 FMAs over 6 + 4 loads vs 4 x 3 over 4 + 3 */
  assert_true(fabsf(feature(v512, "top.body_ops_per_load") - 2.0f * 24 / 10) < 1e-4);
  assert_true(fabsf(feature(v256, "top.body_ops_per_load") - 2.0f * 12 / 7) < 1e-4);
  assert_log_feature(v512, "top.body_accumulators", 24);
  assert_log_feature(v256, "top.body_accumulators", 12);
  /* the same work whatever the schedule */
  assert_log_feature(v512, "sum.flops", 2.0 * 96 * 192 * 256);
  assert_log_feature(v256, "sum.flops", 2.0 * 96 * 192 * 256);
  /* threads: parallel over the column tiles */
  assert_log_feature(v256, "g.max_parallel_extent", 0);
  assert_true(feature(v1, "g.max_parallel_extent") > 0);
  assert_true(feature(v1, "g.parallel_fraction") > 0.9f);
  keep_free(&keep);
  arena_free(a);
}

static void test_deterministic(void **state) {
  (void)state;
  Arena *a = arena_new();
  Keep keep = {0};
  float x[FEATURES_DIM], y[FEATURES_DIM], z[FEATURES_DIM];
  const PrimFunc *f = default_matmul(a, &keep, 64, 128, 96, "x86_64-avx2", 2);
  extract(f, x);
  extract(f, y);
  assert_memory_equal(x, y, sizeof x);
  /* lowered again from scratch: a new tree, the same vector */
  extract(default_matmul(a, &keep, 64, 128, 96, "x86_64-avx2", 2), z);
  assert_memory_equal(x, z, sizeof x);
  for (int i = 0; i < FEATURES_DIM; i++) assert_true(isfinite(x[i]));
  keep_free(&keep);
  arena_free(a);
}

/* ---- cost ---- */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* The default schedule of a ResNet-50 3x3 conv (56 x 56 x 64 -> 64) and of
 * a 256^3 matmul, lowered; the median of 21 extractions. The target is
 * "well under a millisecond"; only a hang guard (50 ms) is asserted, the
 * time is printed. */
static void test_extraction_time(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  Target t = make_target("x86_64-avx2");
  int64_t lanes = target_lanes(&t, DT_F32);
  OpfuncConv2d p = {.N = 1, .C = 64, .H = 56, .W = 56, .K = 64, .R = 3, .S = 3, .stride = 1, .pad = 1};
  PrimFunc *conv = opfunc_conv2d_nchwc(a, &p, lanes, lanes, &err);
  assert_non_null(conv);
  Keep keep = {0};
  Schedule *s = sch_create(conv, DECIDE_DEFAULT, 0);
  keep.s[keep.n++] = s;
  assert_int_equal(topi_schedule_conv2d_nchwc_cpu(s, "conv2d_NCHWc", NULL, &t, 2), LOOM_OK);
  const PrimFunc *funcs[2] = {lower(a, sch_func(s)), default_matmul(a, &keep, 256, 256, 256, "x86_64-avx2", 2)};
  const char *names[2] = {"conv2d 3x3 64->64 56x56 (default schedule)", "matmul 256^3 (default schedule)"};
  for (int k = 0; k < 2; k++) {
    enum { RUNS = 21 };
    double times[RUNS];
    float v[FEATURES_DIM];
    for (int r = 0; r < RUNS; r++) {
      double t0 = now_s();
      extract(funcs[k], v);
      times[r] = now_s() - t0;
    }
    qsort(times, RUNS, sizeof times[0], cmp_double);
    print_message("features_extract, %s: median %.1f us (min %.1f, max %.1f) over %d runs\n", names[k],
                  times[RUNS / 2] * 1e6, times[0] * 1e6, times[RUNS - 1] * 1e6, RUNS);
    assert_true(times[RUNS / 2] < 0.050);
  }
  keep_free(&keep);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_documented),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_vector_and_parallel),
      cmocka_unit_test(test_guard_reuse_window),
      cmocka_unit_test(test_compiler_loop),
      cmocka_unit_test(test_default_schedules_differ),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_extraction_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
