/* Failure injection over the ONNX importer (support/alloc.h, support/oom.h):
 * for every allocation n of a clean import of a small model, fail the n-th
 * and check the import returns LOOM_ERR_OUT_OF_MEMORY with a message, does
 * not crash, and (ASan's leak checker in the sanitizer build) leaks nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "frontend/onnx/onnx.h"
#include "support/alloc.h"

static const char *corpus(const char *name) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/tests/fuzz/corpus/onnx/%s", LOOM_SOURCE_DIR, name);
  return path;
}

/* Fails allocation n (0: none) of one prepared import; returns how many
 * allocations it made. */
static size_t import_failing(const char *path, size_t n) {
  LoomError err = {0};
  loom_alloc_test_arm(n);
  Graph *g = onnx_import_file_prepared(path, &err);
  size_t count = 0;
  loom_alloc_test_stats(NULL, &count);
  bool failed = loom_alloc_test_failed();
  loom_alloc_test_disarm();
  if (!failed) {
    if (!g) fail_msg("allocation %zu: no injected failure, yet: %s", n, err.msg);
  } else {
    if (g) fail_msg("allocation %zu failed, yet the import succeeded", n);
    if (err.status != LOOM_ERR_OUT_OF_MEMORY || !strstr(err.msg, "out of memory"))
      fail_msg("allocation %zu: expected an out-of-memory error, got status %d: %s", n, err.status, err.msg);
  }
  graph_free(g);
  return count;
}

static void sweep(const char *name) {
  const char *path = corpus(name);
  size_t total = import_failing(path, 0);
  assert_true(total > 0);
  for (size_t n = 1; n <= total; n++) import_failing(path, n);
  printf("%s: %zu allocations, each failed once\n", name, total);
}

static void test_import_every_allocation_fails_cleanly(void **state) {
  (void)state;
  sweep("old_opset6.onnx"); /* 9 nodes, initializers */
  sweep("old_opset1.onnx"); /* 60 nodes */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_import_every_allocation_fails_cleanly),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
