/* Failure injection over the compiler's passes (support/alloc.h,
 * support/oom.h): loom_inspect_onnx --dump tir runs import, graph passes,
 * fusion, scheduling and lowering, but not the C compiler; --dump graph and
 * fused add their printers. For every allocation n of a clean run (the
 * first few hundred, then a stride), fail the n-th: no crash,
 * LOOM_ERR_OUT_OF_MEMORY with a message, and (ASan's leak checker in the
 * sanitizer build) no leak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "loom/loom_compile.h"
#include "loom/loom_status.h"
#include "support/alloc.h"

enum { EXHAUSTIVE = 400, SAMPLES_AFTER = 200 };

static const char *corpus(const char *name) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/tests/fuzz/corpus/onnx/%s", LOOM_SOURCE_DIR, name);
  return path;
}

/* Fails allocation n (0: none) of one inspect; returns how many it made. */
static size_t inspect_failing(const char *path, const char *dump, size_t n) {
  FILE *sink = tmpfile();
  assert_non_null(sink);
  char msg[1024] = "";
  loom_alloc_test_arm(n);
  loom_status st = loom_inspect_onnx(path, dump, NULL, sink, msg, sizeof msg);
  size_t count = 0;
  loom_alloc_test_stats(NULL, &count);
  int failed = loom_alloc_test_failed();
  loom_alloc_test_disarm();
  fclose(sink);
  if (!failed) {
    if (st) fail_msg("allocation %zu: no injected failure, yet: %s", n, msg);
  } else if (st != LOOM_ERR_OUT_OF_MEMORY || !strstr(msg, "out of memory")) {
    fail_msg("allocation %zu: expected an out-of-memory error, got status %d: %s", n, st, msg);
  }
  return count;
}

static void sweep(const char *name, const char *dump) {
  const char *path = corpus(name);
  size_t total = inspect_failing(path, dump, 0), tried = 0;
  assert_true(total > 0);
  size_t stride = total > EXHAUSTIVE ? (total - EXHAUSTIVE) / SAMPLES_AFTER + 1 : 1;
  for (size_t n = 1; n <= total; n += n < EXHAUSTIVE ? 1 : stride, tried++) inspect_failing(path, dump, n);
  printf("%s --dump %s: %zu allocations, %zu of them failed in turn\n", name, dump, total, tried);
}

static void test_inspect_every_allocation_fails_cleanly(void **state) {
  (void)state;
  sweep("old_opset5.onnx", "tir"); /* 3 nodes, 2 kernels */
  sweep("old_opset6.onnx", "tir"); /* 9 nodes, 8 kernels */
  sweep("old_opset1.onnx", "tir"); /* 60 nodes, 49 kernels */
  /* The graph and fusion printers. */
  sweep("old_opset6.onnx", "graph");
  sweep("old_opset6.onnx", "fused");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_inspect_every_allocation_fails_cleanly),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
