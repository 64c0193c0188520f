/* loom_export_c (include/loom/loom_tools.h): the public entry refuses bad
 * arguments and a missing model with a message and creates nothing. Real
 * exports through it: tests/python/test_tools.py; through the CLI:
 * tests/cli/test_export.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "loom/loom_tools.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void assert_contains(const char *msg, const char *part) {
  if (!strstr(msg, part)) fail_msg("expected \"%s\" in the message: %s", part, msg);
}

static void test_bad_arguments(void **state) {
  char err[512];
  assert_int_equal(
      loom_export_c(NULL, "/tmp/x", NULL, NULL, NULL, NULL, NULL, 0, false, false, NULL, 0, err, sizeof err),
      LOOM_ERR_INVALID_ARG);
  assert_contains(err, "onnx_path is NULL");
  assert_int_equal(
      loom_export_c("m.onnx", NULL, NULL, NULL, NULL, NULL, NULL, 0, false, false, NULL, 0, err, sizeof err),
      LOOM_ERR_INVALID_ARG);
  assert_contains(err, "out_dir is NULL");
}

static void test_missing_model_creates_nothing(void **state) {
  char dir[] = "/tmp/loom-export-entry-XXXXXX", out[sizeof dir + 16], err[512] = "";
  assert_non_null(mkdtemp(dir));
  snprintf(out, sizeof out, "%s/project", dir);
  loom_status st = loom_export_c("/nonexistent/loom-export-entry.onnx", out, NULL, NULL, "m", NULL, NULL, 0, false,
                                 false, NULL, 0, err, sizeof err);
  assert_int_not_equal(st, LOOM_OK);
  assert_contains(err, "/nonexistent/loom-export-entry.onnx");
  struct stat sb;
  assert_int_not_equal(stat(out, &sb), 0);
  assert_int_equal(rmdir(dir), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_missing_model_creates_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
