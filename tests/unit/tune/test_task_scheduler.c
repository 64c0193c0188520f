/* The task scheduler (tune_pick_task, tune_task_gradient): the warm-up
 * order, the gradient's preferences, exhausted tasks, the epsilon pick. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tune/tune.h"

/* calls, flops, best_us, best_us_back, rounds, group, exhausted */
static TuneTaskState task(int calls, double best_us, double back, int rounds, int group) {
  return (TuneTaskState){calls, 1e9, best_us, back, rounds, group, false};
}

static void test_warmup_fewest_rounds_first(void **state) {
  (void)state;
  /* Every default first (rounds 0), then every first search batch. */
  TuneTaskState t[3] = {task(1, 100, -1, 1, -1), task(1, -1, -1, 0, -1), task(1, 50, -1, 1, -1)};
  assert_int_equal(tune_pick_task(t, 3, 0.5, 0), 1);
  t[1] = task(1, 80, -1, 1, -1);
  assert_int_equal(tune_pick_task(t, 3, 0.5, 0), 0);
  t[0].exhausted = true;
  assert_int_equal(tune_pick_task(t, 3, 0.5, 0), 1);
}

static void test_gradient_prefers_time_and_progress(void **state) {
  (void)state;
  /* Same progress so far: the task with more of the model's time (calls x
   * time) wins. */
  TuneTaskState t[2] = {task(1, 100, 100, 4, -1), task(3, 100, 100, 4, -1)};
  assert_int_equal(tune_pick_task(t, 2, 0.5, 0), 1);
  assert_true(tune_task_gradient(t, 2, 1) < tune_task_gradient(t, 2, 0));
  /* Equal time, but task 0 has been improving over the last rounds. */
  t[1] = task(1, 100, 100, 4, -1);
  t[0] = task(1, 100, 160, 4, -1);
  assert_int_equal(tune_pick_task(t, 2, 0.5, 0), 0);
  /* A gradient is never positive. */
  for (int i = 0; i < 2; i++) assert_true(tune_task_gradient(t, 2, i) <= 0);
}

static void test_group_bound(void **state) {
  (void)state;
  /* Tasks 0 and 1 are of a kind; 1 already runs at 10 GFLOP/s. Task 0 at
   * 5 GFLOP/s is within half of that: its forward guess is only the
   * average round's gain. Task 2 (its own kind, same time and rounds) gets
   * the same guess: equal gradients. A task far below its group's best
   * (task 3 at 1 GFLOP/s in group 1 with 4's 10) expects more. */
  TuneTaskState t[5] = {task(1, 200, 200, 10, 0), task(1, 100, 100, 10, 0), task(1, 200, 200, 10, -1),
                        task(1, 1000, 1000, 10, 1), task(1, 100, 100, 10, 1)};
  assert_true(tune_task_gradient(t, 5, 0) == tune_task_gradient(t, 5, 2));
  double g3 = tune_task_gradient(t, 5, 3), optimistic = -(1000.0 / 10) * 0.8;
  assert_true(g3 < optimistic); /* bounded by reaching 5 GFLOP/s (200 us): more than an average round */
}

static void test_exhausted_and_epsilon(void **state) {
  (void)state;
  TuneTaskState t[3] = {task(9, 100, 100, 4, -1), task(1, 100, 100, 4, -1), task(1, 100, 100, 4, -1)};
  t[0].exhausted = true;
  int p = tune_pick_task(t, 3, 0.5, 0);
  assert_true(p == 1 || p == 2);
  /* u below the epsilon: the r-th open task */
  assert_int_equal(tune_pick_task(t, 3, 0.0, 1), 2);
  t[1].exhausted = t[2].exhausted = true;
  assert_int_equal(tune_pick_task(t, 3, 0.5, 0), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_warmup_fewest_rounds_first),
      cmocka_unit_test(test_gradient_prefers_time_and_progress),
      cmocka_unit_test(test_group_bound),
      cmocka_unit_test(test_exhausted_and_epsilon),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
