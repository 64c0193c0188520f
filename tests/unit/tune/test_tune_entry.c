/* loom_tune_onnx (include/loom/loom_tools.h): the public entry refuses bad
 * arguments and a missing model with a message, and leaves its out
 * parameters alone on failure. A real tuning run through it is
 * tests/python/test_tools.py's (it needs an ONNX model and the measurer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "loom/loom_tools.h"

#include <string.h>

static void assert_contains(const char *msg, const char *part) {
  if (!strstr(msg, part)) fail_msg("expected \"%s\" in the message: %s", part, msg);
}

static void test_bad_arguments(void **state) {
  char err[512];
  int measured = -7;
  assert_int_equal(loom_tune_onnx(NULL, "r.db", NULL, 0, 0, 0, 0, &measured, NULL, NULL, NULL, err, sizeof err),
                   LOOM_ERR_INVALID_ARG);
  assert_contains(err, "onnx_path is NULL");
  assert_int_equal(loom_tune_onnx("m.onnx", NULL, NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL, err, sizeof err),
                   LOOM_ERR_INVALID_ARG);
  assert_contains(err, "records is NULL");
  assert_int_equal(loom_tune_onnx("m.onnx", "r.db", NULL, -1, 0, 0, 0, NULL, NULL, NULL, NULL, err, sizeof err),
                   LOOM_ERR_INVALID_ARG);
  assert_contains(err, "must be >= 0");
  assert_int_equal(loom_tune_onnx("m.onnx", "r.db", NULL, 0, -2.5, 0, 0, NULL, NULL, NULL, NULL, err, sizeof err),
                   LOOM_ERR_INVALID_ARG);
  assert_int_equal(measured, -7);
}

static void test_missing_model(void **state) {
  char err[512] = "";
  double ms = -1;
  loom_status st = loom_tune_onnx("/nonexistent/loom-tune-entry.onnx", "/tmp/loom-tune-entry-unused.db", NULL, 1, 0,
                                  1, 0, NULL, NULL, &ms, NULL, err, sizeof err);
  assert_int_not_equal(st, LOOM_OK);
  assert_contains(err, "/nonexistent/loom-tune-entry.onnx");
  assert_true(ms == -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_missing_model),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
