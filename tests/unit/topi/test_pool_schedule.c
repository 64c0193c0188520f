/* The default 2-D pooling schedule (src/topi/schedule_pool.c) computes
 * exactly what the unscheduled pool computes: both are compiled into one
 * module and run on the same random inputs (negative values included, so a
 * padding that won a max would show), for the blocked and the plain layout,
 * max and average, padded and not, shapes that divide the tiles and shapes
 * that don't, single- and multi-threaded; the default decisions and random
 * ones (the padding at the row block or at the root, other tile widths). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "driver/driver.h"
#include "runtime/threadpool.h"
#include "schedule_run.h"
#include "tir/text.h"
#include "topi/topi_ops.h"
#include "topi/topi_schedule.h"

/* seed 0: the default decisions; otherwise random ones. */
static void check_pool_schedule(const PrimFunc *f, const char *block, const char *epilogue, int threads,
                                uint64_t seed) {
  Arena *a = arena_new();
  Target target = target_host();
  Schedule *s = sch_create(f, seed ? DECIDE_RANDOM : DECIDE_DEFAULT, seed);
  if (topi_schedule_pool2d_cpu(s, block, epilogue, &target, threads)) {
    char *text = tir_print_func(sch_func(s));
    fail_msg("schedule refused: %s\n%s", sch_error(s), text);
  }
  ScheduleRun r = {0};
  schedule_run(a, f, sch_func(s), threads, 5, &r);
  for (size_t i = 0; i < r.count; i++)
    if (fabs((double)r.want[i] - r.got[i]) > 1e-5 * fmax(1.0, fabs(r.want[i])))
      fail_msg("%s, %d threads, seed %llu: element %zu: reference %g, scheduled %g", f->name, threads,
               (unsigned long long)seed, i, r.want[i], r.got[i]);
  schedule_run_free(&r);
  sch_free(s);
  arena_free(a);
}

typedef struct PoolCase {
  bool is_max, blocked;
  int64_t C, H, W, cb;
  TopiPoolParams p;
} PoolCase;

static void run_case(const PoolCase *c) {
  Arena *a = arena_new();
  LoomError err = {0};
  TopiPoolKind kind = c->is_max ? TOPI_POOL_MAX : TOPI_POOL_AVG;
  TeTensor *x = c->blocked ? te_placeholder(a, "x", DT_F32, 5, (int64_t[]){1, c->C / c->cb, c->H, c->W, c->cb}, &err)
                           : te_placeholder(a, "x", DT_F32, 4, (int64_t[]){1, c->C, c->H, c->W}, &err);
  assert_non_null(x);
  TeTensor *y = c->blocked ? topi_pool2d_nchwc_onnx(a, "pool", kind, x, &c->p, &err)
                           : topi_pool2d_onnx(a, "pool", kind, x, &c->p, &err);
  if (!y) fail_msg("%s", err.msg);
  PrimFunc *f = te_create_primfunc(a, c->is_max ? "max_pool" : "avg_pool", (TeTensor *[]){x, y}, 2, &err);
  if (!f) fail_msg("%s", err.msg);
  const char *block = c->is_max ? "pool" : "pool_sum", *epilogue = c->is_max ? NULL : "pool";
  /* Seed 0: the defaults; the random decisions of seed 6 compute the
   * padding at the root, those of seed 7 per block of rows, those of seed
   * 26 inline it (the third draw decides, the same in every case). */
  static const uint64_t seeds[] = {0, 6, 7, 26};
  for (int threads = 1; threads <= 2; threads++)
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) check_pool_schedule(f, block, epilogue, threads, seeds[i]);
  arena_free(a);
}

static void test_pool_nchwc(void **state) {
  (void)state;
  static const PoolCase cases[] = {
      /* ResNet's stem pool (3x3 / 2, pad 1) on an odd size: a partial last tile. */
      {true, true, 32, 15, 15, 16, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false}},
      /* Inception's 3x3 / 1 average, count_include_pad = 0: clipped counts. */
      {false, true, 32, 9, 11, 16, {{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, false}},
      /* DenseNet's transition: 2x2 / 2, no padding stage, constant count. */
      {false, true, 16, 12, 12, 16, {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false, false}},
      /* SqueezeNet's ceil_mode max: the padding is at the end only. */
      {true, true, 16, 13, 13, 8, {{3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false}},
      /* Dilation, asymmetric pads, count_include_pad, blocks of 4. */
      {true, true, 8, 9, 10, 4, {{2, 3}, {1, 2}, {1, 0, 0, 1}, {2, 1}, false, false}},
      {false, true, 8, 7, 7, 4, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, true}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

static void test_pool_nchw(void **state) {
  (void)state;
  static const PoolCase cases[] = {
      /* Stride 2: a scalar register tile. */
      {true, false, 3, 15, 15, 1, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false}},
      /* Stride 1 and 37 columns: vectors of columns, a partial last vector. */
      {false, false, 2, 9, 37, 1, {{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, false}},
      {true, false, 2, 6, 40, 1, {{2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false, false}},
      /* Narrower than a vector. */
      {false, false, 4, 7, 7, 1, {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

/* The kind of the loop named `name` in f (-1 when there is none). */
typedef struct LoopKindOf {
  const char *name;
  int kind;
} LoopKindOf;

static bool loop_kind_cb(Visitor *v, const Stmt *st) {
  LoopKindOf *k = v->user;
  if (st->kind == STMT_FOR && !strcmp(st->loop.var->var.name, k->name)) k->kind = (int)st->loop.kind;
  return true;
}

static int loop_kind(const PrimFunc *f, const char *name) {
  LoopKindOf k = {name, -1};
  Visitor v = {loop_kind_cb, NULL, &k};
  visit_stmt(&v, f->body);
  return k.kind;
}

/* The window is unrolled with the tile only while the copies fit the
 * code-size budget: a 3x3 window whole; a 60x80 dilated one (whose 33,600
 * unrolled statements over a 7-column tile took clang minutes) only along
 * its rows of taps (80 x 7 copies), the rows a loop. Both compute what the
 * unscheduled pool computes. */
static void test_pool_window_unroll_budget(void **state) {
  (void)state;
  static const struct {
    int64_t H, W, R, S, dil, stride;
    int ry_kind;
  } cases[] = {
      {15, 15, 3, 3, 1, 2, FOR_UNROLLED},
      {1000, 1000, 60, 80, 10, 10, FOR_SERIAL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *x = te_placeholder(a, "x", DT_F32, 4, (int64_t[]){1, 1, cases[i].H, cases[i].W}, &err);
    TopiPoolParams p = {{cases[i].R, cases[i].S}, {cases[i].stride, cases[i].stride}, {0, 0, 0, 0},
                        {cases[i].dil, cases[i].dil}, false, false};
    TeTensor *y = x ? topi_pool2d_onnx(a, "pool", TOPI_POOL_MAX, x, &p, &err) : NULL;
    PrimFunc *f = y ? te_create_primfunc(a, "max_pool", (TeTensor *[]){x, y}, 2, &err) : NULL;
    if (!f) fail_msg("%s", err.msg);
    Target target = target_host();
    Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
    assert_int_equal(topi_schedule_pool2d_cpu(s, "pool", NULL, &target, 2), LOOM_OK);
    assert_int_equal(loop_kind(sch_func(s), "rx"), FOR_UNROLLED);
    assert_int_equal(loop_kind(sch_func(s), "ry"), cases[i].ry_kind);
    sch_free(s);
    check_pool_schedule(f, "pool", NULL, 2, 0);
    arena_free(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pool_nchwc),
      cmocka_unit_test(test_pool_nchw),
      cmocka_unit_test(test_pool_window_unroll_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
