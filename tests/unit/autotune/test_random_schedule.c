/* random_schedule_apply on its own: deterministic in the seed, recorded so
 * that both the trace and its decisions alone reproduce the program; plus
 * regressions the harness found, reduced to a few primitive calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/autotune.h"
#include "driver/driver.h"
#include "fixtures/op_funcs.h"
#include "tir/interp.h"
#include "tir/text.h"

static char *schedule_text(const PrimFunc *f, uint64_t seed, RandomScheduleStats *st) {
  Schedule *s = sch_create(f, DECIDE_RANDOM, seed);
  LoomError err = {0};
  loom_status rc = random_schedule_apply(s, st, &err);
  if (rc) fprintf(stderr, "%s\n", err.msg);
  assert_int_equal(rc, LOOM_OK);
  char *t = trace_to_text(sch_trace(s));
  sch_free(s);
  return t;
}

static void test_deterministic(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  PrimFunc *f = opfunc_softmax(a, 2, (int64_t[]){4, 12}, &err);
  RandomScheduleStats st1, st2;
  char *t1 = schedule_text(f, 42, &st1), *t2 = schedule_text(f, 42, &st2);
  assert_string_equal(t1, t2);
  assert_int_equal(st1.tried, st2.tried);
  assert_int_equal(st1.tried, st1.applied + st1.refused);
  assert_true(st1.tried > 0);
  /* Different seeds give different schedules (most of the time: 8 tries). */
  int differ = 0;
  for (uint64_t seed = 1; seed <= 8; seed++) {
    char *t3 = schedule_text(f, seed, NULL);
    differ += strcmp(t1, t3) != 0;
    free(t3);
  }
  assert_true(differ >= 7);
  free(t1);
  free(t2);
  arena_free(a);
}

/* Re-running the generator against the recorded decisions (DECIDE_TRACE)
 * rebuilds the same program: every random choice went through sampling. */
static void test_decisions_replay(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  OpfuncConv2d p = {.N = 1, .C = 3, .H = 9, .W = 9, .K = 4, .R = 3, .S = 3, .stride = 2, .pad = 1};
  PrimFunc *f = opfunc_conv2d_nchw(a, &p, &err);
  assert_non_null(f);
  for (uint64_t seed = 1; seed <= 10; seed++) {
    Schedule *s = sch_create(f, DECIDE_RANDOM, seed);
    assert_int_equal(random_schedule_apply(s, NULL, &err), LOOM_OK);
    Schedule *r = sch_create_from_decisions(f, sch_trace(s));
    loom_status rc = random_schedule_apply(r, NULL, &err);
    if (rc) fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, err.msg);
    assert_int_equal(rc, LOOM_OK);
    assert_true(tir_func_equal(sch_func(s), sch_func(r)));
    char *t1 = trace_to_text(sch_trace(s)), *t2 = trace_to_text(sch_trace(r));
    assert_string_equal(t1, t2);
    free(t1);
    free(t2);
    sch_free(r);
    sch_free(s);
  }
  arena_free(a);
}

/* Harness find (softmax seed 2): softmax_sum computed at softmax's inner loop
 * re-runs the row sum per column; decompose_reduction above that loop
 * hoisted the init out of it, so later runs accumulated onto earlier ones.
 * It must refuse (program unchanged), and the schedule must stay correct. */
static void test_decompose_under_repeat_loop(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  PrimFunc *f = opfunc_softmax(a, 2, (int64_t[]){3, 5}, &err);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  assert_int_equal(sch_compute_inline(s, sch_get_block(s, "softmax_exp")), LOOM_OK);
  SchRV loops[4];
  assert_int_equal(sch_get_loops(s, sch_get_block(s, "softmax"), loops, 4), 2);
  assert_int_equal(sch_compute_at(s, sch_get_block(s, "softmax_sum"), loops[1]), LOOM_OK);
  SchRV sum = sch_get_block(s, "softmax_sum");
  assert_int_equal(sch_get_loops(s, sum, loops, 4), 3); /* i, j (binds nothing), k */
  const PrimFunc *before = sch_func(s);
  assert_true(sch_decompose_reduction(s, sum, loops[1]) < 0);
  assert_ptr_equal(sch_func(s), before);
  assert_non_null(strstr(sch_error(s), "carries no iterator"));
  /* Above the row loop as well: i binds vi, but j below it still repeats. */
  assert_true(sch_decompose_reduction(s, sum, loops[0]) < 0);
  assert_ptr_equal(sch_func(s), before);

  /* The scheduled program still computes softmax. */
  DriverTensors x, y;
  assert_int_equal(driver_tensors_alloc(f, 3, &x, &err), LOOM_OK);
  assert_int_equal(driver_tensors_alloc(f, 3, &y, &err), LOOM_OK);
  void *dx[2], *dy[2];
  driver_tensors_data(&x, dx);
  driver_tensors_data(&y, dy);
  assert_int_equal(tir_interpret(f, dx, &err), LOOM_OK);
  assert_int_equal(tir_interpret(sch_func(s), dy, &err), LOOM_OK);
  const float *px = dx[1], *py = dy[1];
  for (int i = 0; i < 15; i++) assert_true(fabsf(px[i] - py[i]) <= 1e-5f * fmaxf(1.0f, fabsf(px[i])));
  driver_tensors_free(&x);
  driver_tensors_free(&y);
  sch_free(s);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_decisions_replay),
      cmocka_unit_test(test_decompose_under_repeat_loop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
