/* The default CPU schedules (src/topi/schedule_*.c) compute exactly what
 * the unscheduled compute definitions compute: both are compiled into one
 * module and run on the same random inputs, for shapes that divide the
 * tiles and shapes that don't, single- and multi-threaded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "driver/driver.h"
#include "fixtures/op_funcs.h"
#include "runtime/threadpool.h"
#include "schedule_run.h"
#include "tir/text.h"
#include "topi/topi_ops.h"
#include "topi/topi_schedule.h"

typedef loom_status (*ScheduleFn)(Schedule *s, const char *block, const char *epilogue, const Target *t,
                                  int threads);

/* Relative error metric: |x - y| <= 1e-4 * max(1, max |reference|); the
 * schedules reorder float sums (k-blocking, vector lanes). With
 * max_tile_bytes > 0, the output's caches must be register tiles
 * (schedule_check_register_tiles). */
static void check_schedule_tiles(PrimFunc *f, const char *block, const char *epilogue, ScheduleFn fn, int threads,
                                 int64_t max_tile_bytes) {
  Arena *a = arena_new();
  Target target = target_host();
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  if (fn(s, block, epilogue, &target, threads)) {
    char *text = tir_print_func(sch_func(s));
    fail_msg("schedule refused: %s\n%s", sch_error(s), text);
  }
  ScheduleRun r = {0};
  schedule_run(a, f, sch_func(s), threads, 11, &r);
  if (max_tile_bytes > 0) schedule_check_register_tiles(a, f, NULL, driver_lowered(r.module, 1), max_tile_bytes);
  double scale = 1.0;
  for (size_t i = 0; i < r.count; i++) scale = fmax(scale, fabs(r.want[i]));
  for (size_t i = 0; i < r.count; i++)
    if (fabs((double)r.want[i] - r.got[i]) > 1e-4 * scale)
      fail_msg("element %zu: reference %g, scheduled %g", i, r.want[i], r.got[i]);
  schedule_run_free(&r);
  sch_free(s);
  arena_free(a);
}

static void check_schedule(PrimFunc *f, const char *block, const char *epilogue, ScheduleFn fn, int threads) {
  check_schedule_tiles(f, block, epilogue, fn, threads, 0);
}

static void test_matmul(void **state) {
  (void)state;
  /* The last two have a K x 64 panel of B over 512 KiB: K is blocked in the
   * first; 2200 has no block size dividing it (not blocked). */
  static const int64_t shapes[][3] = {{64, 64, 64}, {30, 50, 17}, {1, 100, 64}, {7, 8, 9}, {128, 96, 40},
                                      {32, 80, 2304}, {16, 64, 2200}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int threads = 1; threads <= 2; threads++) {
      Arena *a = arena_new();
      LoomError err = {0};
      PrimFunc *f = opfunc_matmul(a, shapes[i][0], shapes[i][1], shapes[i][2], DT_F32, &err);
      assert_non_null(f);
      check_schedule_tiles(f, "C", NULL, topi_schedule_matmul_cpu, threads, 64 * 64);
      arena_free(a);
    }
}

/* Batch matmul (attention): parallel over batch x column tiles. */
static void test_batch_matmul(void **state) {
  (void)state;
  for (int threads = 1; threads <= 2; threads++) {
    Arena *a = arena_new();
    LoomError err = {0};
    PrimFunc *f = opfunc_batch_matmul(a, 3, 24, 20, 16, &err);
    assert_non_null(f);
    check_schedule_tiles(f, "C", NULL, topi_schedule_matmul_cpu, threads, 64 * 64);
    arena_free(a);
  }
}

static void test_conv2d_nchwc(void **state) {
  (void)state;
  static const OpfuncConv2d convs[] = {
      {1, 32, 14, 14, 32, 3, 3, 1, 1}, /* 3x3 same padding */
      {1, 16, 15, 15, 32, 3, 3, 2, 1}, /* stride 2, odd size */
      {1, 32, 7, 7, 16, 1, 1, 1, 0},   /* 1x1, no pad stage */
      {1, 64, 7, 7, 32, 3, 3, 1, 1},   /* 3x3, 7 columns */
      /* Input channels blocked (512): 3x3 in chunks of one block; 1x1 with
       * partial tiles in both the columns (13 = 7 + 6) and the output blocks
       * (11 = 3 + 3 + 3 + 2),
       * each partial tile a register tile of its own. */
      {1, 512, 7, 7, 48, 3, 3, 1, 1},
      {1, 512, 13, 13, 176, 1, 1, 1, 0},
      {1, 256, 28, 28, 128, 1, 1, 1, 0}, /* input over 512 KiB, 4 channel tiles: rows outermost */
      {1, 128, 40, 40, 128, 3, 3, 2, 1}, /* the same for a 3x3 whose weights fit L2 */
  };
  for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++)
    for (int threads = 1; threads <= 2; threads++) {
      Arena *a = arena_new();
      LoomError err = {0};
      PrimFunc *f = opfunc_conv2d_nchwc(a, &convs[i], 16, 16, &err);
      if (!f) fail_msg("%s", err.msg);
      check_schedule_tiles(f, "conv2d_NCHWc", NULL, topi_schedule_conv2d_nchwc_cpu, threads, 32 * 64);
      arena_free(a);
    }
}

/* Gemm with a bias (stages "y_matmul" then "y"), then Relu: the bias add
 * and the relu are folded into the register tile's copy-out. */
static void test_matmul_epilogue(void **state) {
  (void)state;
  for (int threads = 1; threads <= 2; threads++) {
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){20, 24}, &err);
    TeTensor *B = te_placeholder(a, "B", DT_F32, 2, (int64_t[]){24, 40}, &err);
    TeTensor *bias = te_placeholder(a, "bias", DT_F32, 1, (int64_t[]){40}, &err);
    TeTensor *y = topi_gemm(a, "y", A, B, bias, 1.0, 1.0, false, false, &err);
    assert_non_null(y);
    TeTensor *r = topi_unary(a, "r", TOPI_RELU, y, NULL, &err);
    assert_non_null(r);
    PrimFunc *f = te_create_primfunc(a, "gemm_relu", (TeTensor *[]){A, B, bias, r}, 4, &err);
    assert_non_null(f);
    /* Inline the bias add into the relu first, as the graph compiler does. */
    Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
    assert_int_equal(sch_compute_inline(s, sch_get_block(s, "y")), LOOM_OK);
    PrimFunc *g = arena_memdup(a, sch_func(s), sizeof *g);
    check_schedule(g, "y_matmul", "r", topi_schedule_matmul_cpu, threads);
    sch_free(s);
    arena_free(a);
  }
}

/* Depthwise conv in NCHWc (what the graph compiler makes of MobileNetV2's
 * depthwise convs): conv, bias add, Clip(0, 6); the add is inlined into the
 * clip, which the schedule folds into the tile's copy-out. Shapes: full
 * 16-lane blocks with tiles that divide the width, stride 2 with an odd
 * input and a partial last tile, 8-lane blocks with a 5x5 window, and a
 * width wider than one tile with rows that do not divide the row block. */
static void test_depthwise_nchwc(void **state) {
  (void)state;
  static const struct {
    int64_t cblocks, cb, h, w, r, stride, pad;
  } convs[] = {{2, 16, 14, 14, 3, 1, 1}, {3, 16, 15, 15, 3, 2, 1}, {2, 8, 9, 9, 5, 1, 2}, {1, 16, 23, 37, 3, 1, 1}};
  for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++)
    for (int threads = 1; threads <= 2; threads++) {
      Arena *a = arena_new();
      LoomError err = {0};
      int64_t nb = convs[i].cblocks, cb = convs[i].cb;
      TeTensor *x = te_placeholder(a, "x", DT_F32, 5, (int64_t[]){1, nb, convs[i].h, convs[i].w, cb}, &err);
      TeTensor *w = te_placeholder(a, "w", DT_F32, 6, (int64_t[]){nb, 1, convs[i].r, convs[i].r, 1, cb}, &err);
      TeTensor *bias = te_placeholder(a, "bias", DT_F32, 5, (int64_t[]){1, nb, 1, 1, cb}, &err);
      TopiConvParams p;
      memset(&p, 0, sizeof p);
      p.strides[0] = p.strides[1] = convs[i].stride;
      for (int k = 0; k < 4; k++) p.pads[k] = convs[i].pad;
      p.group = nb * cb;
      TeTensor *y = topi_depthwise_conv2d_nchwc_onnx(a, "dw", x, w, &p, &err);
      assert_non_null(y);
      TeTensor *yb = topi_binary(a, "dw_bias", TOPI_ADD, y, bias, &err);
      assert_non_null(yb);
      TopiUnaryParams clip = {.lo = 0, .hi = 6};
      TeTensor *r = topi_unary(a, "relu6", TOPI_CLIP, yb, &clip, &err);
      assert_non_null(r);
      PrimFunc *f = te_create_primfunc(a, "dw_relu6", (TeTensor *[]){x, w, bias, r}, 4, &err);
      if (!f) fail_msg("%s", err.msg);
      Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
      assert_int_equal(sch_compute_inline(s, sch_get_block(s, "dw_bias")), LOOM_OK);
      PrimFunc *g = arena_memdup(a, sch_func(s), sizeof *g);
      check_schedule(g, "dw", "relu6", topi_schedule_depthwise_conv2d_nchwc_cpu, threads);
      sch_free(s);
      arena_free(a);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_batch_matmul),
      cmocka_unit_test(test_conv2d_nchwc),
      cmocka_unit_test(test_matmul_epilogue),
      cmocka_unit_test(test_depthwise_nchwc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
