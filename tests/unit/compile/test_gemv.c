/* Matrix-vector products (1 x N x K), and products of 2 to 15 rows, with
 * a constant weight, the way the model compiler builds them: B packed by
 * graph_pack_panels_f32 in panels as wide as graph_pack_matmul_width gives
 * (one row: topi_gemv_panel_vectors vectors, at most N rounded up to a
 * vector; more rows: one vector), topi_matmul_packed, and the group
 * scheduler (compile_schedule_group: a GEMV's column tile of
 * topi_gemv_streams panels). Each must compute what the unscheduled,
 * unpacked MatMul computes, with and without a bias add (a Gemm), at 1 and
 * 2 threads, for the host's target and AVX2's: odd sizes (1x1x1, 1x7x13,
 * 1x4097x3), N and K that are no multiple of the vector width, N padded to
 * whole panels, a single panel, whole panels, and tiles of 2 and 4 panels
 * (1x1024x50: 16 or 32 panels) and of one (1x96x2049: 3 or 6 panels). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "compile/compile.h"
#include "graph/passes.h"
#include "te/te.h"
#include "topi/topi_ops.h"
#include "topi/topi_schedule.h"
#include "unit/topi/schedule_run.h"

typedef struct GemvCase {
  int64_t n, k;
  bool bias;
  int64_t m; /* rows of A (1: a GEMV) */
} GemvCase;

/* A [M, K] x B (+ bias [N]); B [K, N] or its panels Bp [P, K, w]. */
static PrimFunc *build(Arena *a, const GemvCase *c, int64_t w, const char *name) {
  LoomError err = {0};
  TeTensor *A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){c->m, c->k}, &err);
  TeTensor *B = w > 0 ? te_placeholder(a, "Bp", DT_F32, 3, (int64_t[]){graph_pack_matmul_panels(c->m, c->n, w), c->k, w}, &err)
                      : te_placeholder(a, "B", DT_F32, 2, (int64_t[]){c->k, c->n}, &err);
  TeTensor *bias = te_placeholder(a, "bias", DT_F32, 1, &c->n, &err);
  TeTensor *y = w > 0 ? topi_matmul_packed(a, "y", A, B, c->n, &err) : topi_matmul_nd(a, "y", A, B, &err);
  if (!y) fail_msg("%s", err.msg);
  TeTensor *out = y;
  if (c->bias && !(out = topi_binary(a, "y_bias", TOPI_ADD, y, bias, &err))) fail_msg("%s", err.msg);
  TeTensor *params[4] = {A, B, bias, out};
  PrimFunc *f = c->bias ? te_create_primfunc(a, name, params, 4, &err)
                        : te_create_primfunc(a, name, (TeTensor *[]){A, B, out}, 3, &err);
  if (!f) fail_msg("%s", err.msg);
  return f;
}

static void check_case(const GemvCase *c, const Target *t, int threads) {
  Arena *a = arena_new();
  LoomError err = {0};
  Target target = *t;
  int lanes = target_lanes(&target, DT_F32), gemv_width = lanes * topi_gemv_panel_vectors(&target);
  int64_t M = c->m, w = graph_pack_matmul_width(M, c->n, lanes, gemv_width);
  int64_t n_rounded = (c->n + lanes - 1) / lanes * lanes;
  /* The pass's width: whole vectors, no wider than N needs; a GEMV's
   * panels an even number but one, several rows' one vector each. */
  int64_t panels = graph_pack_matmul_panels(M, c->n, w);
  assert_true(w >= lanes && w % lanes == 0 && w <= gemv_width);
  if (M == 1) {
    assert_int_equal(w, gemv_width < n_rounded ? gemv_width : n_rounded);
    assert_true(panels == 1 || panels % 2 == 0);
  } else {
    assert_int_equal(w, lanes);
  }
  assert_true(panels * w >= c->n && (panels - 1) * w < c->n + w);

  PrimFunc *ref = build(a, c, 0, "reference"), *packed = build(a, c, w, "packed");
  GroupFunc gf = {.func = packed};
  Schedule *keep = NULL;
  const PrimFunc *funcs[2] = {ref, compile_schedule_group(&gf, &target, threads, &keep)};
  DriverModule *m = NULL;
  if (driver_build(a, funcs, 2, NULL, &m, &err)) fail_msg("build: %s", err.msg);
  DriverTensors tr, tp;
  assert_int_equal(driver_tensors_alloc(driver_lowered(m, 0), 31, &tr, &err), LOOM_OK);
  assert_int_equal(driver_tensors_alloc(driver_lowered(m, 1), 32, &tp, &err), LOOM_OK);
  int out = tr.n - 1;
  memcpy(tp.tensors[0].data, tr.tensors[0].data, tr.bytes[0]); /* A */
  graph_pack_panels_f32(tr.tensors[1].data, c->k, c->n, w, panels, tp.tensors[1].data);
  if (c->bias) memcpy(tp.tensors[2].data, tr.tensors[2].data, tr.bytes[2]);
  Kernel kr, kp;
  assert_int_equal(driver_get_kernel(m, "reference", &kr, &err), LOOM_OK);
  assert_int_equal(driver_get_kernel(m, "packed", &kp, &err), LOOM_OK);
  ThreadPool *pool = NULL;
  assert_int_equal(threadpool_create(threads, &pool, &err), LOOM_OK);
  if (kernel_call(&kr, tr.ptrs, tr.n, NULL, NULL, &err)) fail_msg("reference: %s", err.msg);
  for (int call = 0; call < 2; call++) /* twice: the pool's second dispatch of the same loop */
    if (kernel_call(&kp, tp.ptrs, tp.n, pool, NULL, &err)) fail_msg("packed: %s", err.msg);
  threadpool_destroy(pool);

  const float *want = tr.tensors[out].data, *got = tp.tensors[out].data;
  size_t count = tr.bytes[out] / sizeof(float);
  assert_int_equal(tp.bytes[out], tr.bytes[out]);
  assert_int_equal(count, (size_t)(M * c->n));
  double scale = 1.0;
  for (size_t i = 0; i < count; i++) scale = fmax(scale, fabs(want[i]));
  for (size_t i = 0; i < count; i++)
    if (!(fabs((double)want[i] - got[i]) <= 1e-4 * scale))
      fail_msg("%s, %lldx%lldx%lld%s, %d threads, panels of %lld: element %zu: reference %g, packed %g", target.name,
               (long long)M, (long long)c->n, (long long)c->k, c->bias ? " + bias" : "", threads, (long long)w, i, want[i], got[i]);
  driver_tensors_free(&tr);
  driver_tensors_free(&tp);
  driver_module_free(m);
  sch_free(keep);
  arena_free(a);
}

/* Each case on the host's target and, with AVX-512, on AVX2's, at 1 and 2
 * threads. */
static void check_cases(const GemvCase *cases, size_t n) {
  Target targets[2] = {target_host()};
  int n_targets = 1;
  LoomError err = {0};
  if (targets[0].vector_bits > 256 && target_parse("x86_64-avx2", &targets[1], &err) == LOOM_OK) n_targets = 2;
  for (int t = 0; t < n_targets; t++)
    for (size_t i = 0; i < n; i++)
      for (int threads = 1; threads <= 2; threads++) check_case(&cases[i], &targets[t], threads);
}

static void test_gemv_matches_matmul(void **state) {
  (void)state;
  static const GemvCase cases[] = {
      {1, 1, false, 1},      /* 1x1x1 */
      {7, 13, false, 1},     /* 1x7x13: one partial vector */
      {4097, 3, false, 1},   /* 1x4097x3: one column past whole panels, K of 3 */
      {7, 13, true, 1},      /* the same with a Gemm's bias */
      {1000, 100, true, 1},  /* a classifier: N padded to whole panels */
      {33, 17, false, 1},    /* two vectors and one column */
      {250, 513, false, 1},  /* neither N nor K a multiple of the vector width */
      {512, 64, true, 1},    /* whole panels */
      {96, 2049, false, 1},  /* a long K */
      {1024, 50, true, 1},   /* tiles of several panels */
      {1000, 40, false, 1},  /* an odd panel count made even (AVX2: 63 panels of 16 and a zero one) */
  };
  check_cases(cases, sizeof cases / sizeof cases[0]);
}

/* Products of 2 to 15 rows (a batch-4 classifier, a few decode tokens):
 * one-vector panels and the register tile's rows over them, M = 2, 3, 4,
 * 7, 8, 15 (partial row tiles: 7 and 15 rows in tiles of 4 or 6), N and K
 * off the vector width, a bias, and a column tile cut by N. */
static void test_small_m_matches_matmul(void **state) {
  (void)state;
  static const GemvCase cases[] = {
      {7, 13, false, 2},   {250, 513, true, 2},  {33, 17, false, 3},   {1000, 100, true, 4}, {96, 2049, false, 4},
      {250, 77, false, 7}, {513, 40, true, 8},   {72, 300, false, 8},  {1000, 65, true, 15}, {17, 129, false, 15},
  };
  check_cases(cases, sizeof cases / sizeof cases[0]);
}

/* Panels per GEMV column tile: a power of two up to GEMV_MAX_STREAMS whose
 * accumulators fit the registers, dividing the panels into as many tiles
 * for each thread. Two FMA pipes: 8 accumulators, panels of 2 vectors
 * (four streams' worth); 32 registers hold 8 panels, 16 hold 4. */
static void test_gemv_streams(void **state) {
  (void)state;
  Target avx512 = {.vector_bits = 512, .vector_registers = 32, .flops_per_cycle = 64, .fma_latency = 4};
  Target avx2 = {.vector_bits = 256, .vector_registers = 16, .flops_per_cycle = 32, .fma_latency = 4};
  Target one_pipe = {.vector_bits = 256, .vector_registers = 16, .flops_per_cycle = 16, .fma_latency = 4};
  assert_int_equal(topi_gemv_accumulators(&avx512), 8);
  assert_int_equal(topi_gemv_panel_vectors(&avx512), 2);
  assert_int_equal(topi_gemv_panel_vectors(&avx2), 2);
  assert_int_equal(topi_gemv_panel_vectors(&one_pipe), 2); /* two vectors at least */
  assert_int_equal(topi_gemv_streams(&avx512, 32, 2, 1), 8);
  assert_int_equal(topi_gemv_streams(&avx512, 32, 2, 2), 8);
  assert_int_equal(topi_gemv_streams(&avx512, 24, 2, 2), 4); /* 3 tiles of 8 would not split evenly */
  assert_int_equal(topi_gemv_streams(&avx512, 24, 2, 1), 8);
  assert_int_equal(topi_gemv_streams(&avx512, 3, 2, 1), 1);
  assert_int_equal(topi_gemv_streams(&avx512, 6, 2, 2), 1);
  assert_int_equal(topi_gemv_streams(&avx512, 16, 4, 2), 4); /* wider panels: fewer fit */
  assert_int_equal(topi_gemv_streams(&avx2, 48, 2, 2), 4);   /* 16 registers: 4 panels of 2 */
  assert_int_equal(topi_gemv_streams(&avx2, 64, 2, 2), 4);
  assert_int_equal(topi_gemv_streams(&avx2, 1, 2, 1), 1);
}

/* Threads only where the split repays the fork/join: a 4 x 16 x 64
 * product (4 KiB of weights, ~0.1 us at peak) runs on one thread, 4 x 768
 * x 768 (2.25 MiB) on two; one thread never splits. */
static void test_parallel_pays(void **state) {
  (void)state;
  Target t = {.vector_bits = 512, .vector_registers = 32, .flops_per_cycle = 64, .l2_bytes_per_cycle = 32, .ghz = 2};
  assert_false(topi_parallel_pays(&t, 2.0 * 4 * 16 * 64, 4.0 * 16 * 64, 2));
  assert_true(topi_parallel_pays(&t, 2.0 * 4 * 768 * 768, 4.0 * 768 * 768, 2));
  assert_false(topi_parallel_pays(&t, 2.0 * 4 * 768 * 768, 4.0 * 768 * 768, 1));
}

/* The pass's widths: 2 rows and more get one vector, a GEMV with the GEMV
 * width off is left alone (0); a GEMV's panel count is even (but one). */
static void test_pack_width(void **state) {
  (void)state;
  assert_int_equal(graph_pack_matmul_width(16, 1000, 16, 128), 16);
  assert_int_equal(graph_pack_matmul_width(1, 1000, 16, 128), 128);
  assert_int_equal(graph_pack_matmul_width(1, 1000, 8, 16), 16);
  assert_int_equal(graph_pack_matmul_panels(1, 1000, 16), 64); /* 63 and one of zeros */
  assert_int_equal(graph_pack_matmul_panels(1, 1024, 16), 64);
  assert_int_equal(graph_pack_matmul_panels(1, 7, 8), 1);
  assert_int_equal(graph_pack_matmul_panels(16, 1000, 16), 63); /* not a GEMV: ceil */
  assert_int_equal(graph_pack_matmul_width(1, 7, 16, 128), 16);
  assert_int_equal(graph_pack_matmul_width(1, 33, 8, 64), 40);
  assert_int_equal(graph_pack_matmul_width(8, 1000, 16, 128), 16);
  assert_int_equal(graph_pack_matmul_width(2, 7, 8, 64), 8);
  assert_int_equal(graph_pack_matmul_panels(2, 1000, 16), 63);
  assert_int_equal(graph_pack_matmul_width(1, 1000, 16, 0), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemv_matches_matmul),
      cmocka_unit_test(test_small_m_matches_matmul),
      cmocka_unit_test(test_pack_width),
      cmocka_unit_test(test_gemv_streams),
      cmocka_unit_test(test_parallel_pays),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
