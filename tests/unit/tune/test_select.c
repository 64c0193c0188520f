/* The batch's diversity rule (tune_select_diverse): best score first, a
 * candidate with the same features as one already picked only after every
 * distinct one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tune/tune.h"

static void test_select_diverse(void **state) {
  (void)state;
  /* 6 candidates of 3 features: 0, 1 and 4 are one program (same
   * features), 2 and 5 another, 3 a third; scores put the copies first. */
  const float X[6][3] = {{1, 2, 3}, {1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {1, 2, 3.0000001f}, {4, 5, 6}};
  const float scores[6] = {0.9f, 0.95f, 0.5f, 0.1f, 0.8f, 0.4f};
  int out[6];
  int n = tune_select_diverse(&X[0][0], scores, 6, 3, 3, out);
  assert_int_equal(n, 3);
  /* the best of each program, by score: 1 (0.95), 2 (0.5), 3 (0.1) */
  assert_int_equal(out[0], 1);
  assert_int_equal(out[1], 2);
  assert_int_equal(out[2], 3);
  /* asking for all: the copies come last, by score */
  n = tune_select_diverse(&X[0][0], scores, 6, 3, 6, out);
  assert_int_equal(n, 6);
  const int want[6] = {1, 2, 3, 0, 4, 5};
  for (int i = 0; i < 6; i++) assert_int_equal(out[i], want[i]);
  /* nothing to pick */
  assert_int_equal(tune_select_diverse(&X[0][0], scores, 0, 3, 4, out), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_select_diverse)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
