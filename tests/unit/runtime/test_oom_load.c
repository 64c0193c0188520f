/* Failure injection over loom_model_load (support/alloc.h, support/oom.h):
 * for every allocation n of a clean load at 1 and 3 threads, fail the n-th:
 * no crash, LOOM_ERR_OUT_OF_MEMORY with a message, no model handed back,
 * and (ASan's leak checker in the sanitizer build) no leak. A load that
 * succeeds while failures are armed must still run correctly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "loom/loom_runtime.h"
#include "support/alloc.h"
#include "unit/runtime/artifact_fixture.h"

static char dir[256], so[4096], art[4096];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/loom-test-oom-load-XXXXXX");
  if (!mkdtemp(dir) || fixture_build_so(dir, so, sizeof so)) return -1;
  FixtureModel m;
  fixture_model_init(&m, so);
  snprintf(art, sizeof art, "%s/model.loom", dir);
  LoomError err = {0};
  return artifact_write(art, &m.spec, &err) ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void run_checked(loom_model *m) {
  FixtureModel fm;
  fixture_model_init(&fm, so);
  float x[6] = {-3, 1.5f, 0, 2, -0.5f, 4}, want[6];
  int64_t shape[2] = {2, 3};
  DLTensor t = {.data = x, .device = {kDLCPU, 0}, .ndim = 2, .dtype = k_f32, .shape = shape};
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_OK);
  assert_int_equal(loom_model_run(m), LOOM_OK);
  DLTensor y;
  assert_int_equal(loom_model_get_output(m, 0, &y), LOOM_OK);
  fixture_reference(&fm, x, want);
  assert_memory_equal(y.data, want, sizeof want);
}

/* Fails allocation n (0: none) of one load; returns how many it made. */
static size_t load_failing(int threads, size_t n) {
  loom_model *m = NULL;
  char msg[1024] = "";
  loom_model_options opt = {.num_threads = threads};
  loom_alloc_test_arm(n);
  loom_status st = loom_model_load(art, &opt, &m, msg, sizeof msg);
  size_t count = 0;
  loom_alloc_test_stats(NULL, &count);
  int failed = loom_alloc_test_failed();
  loom_alloc_test_disarm();
  if (!failed) {
    if (st) fail_msg("allocation %zu: no injected failure, yet: %s", n, msg);
  } else if (st != LOOM_ERR_OUT_OF_MEMORY || !strstr(msg, "out of memory")) {
    fail_msg("allocation %zu: expected an out-of-memory error, got status %d: %s", n, st, msg);
  }
  if (st) {
    assert_null(m);
  } else {
    run_checked(m);
    loom_model_free(m);
  }
  return count;
}

static void test_every_allocation_of_a_load_fails_cleanly(void **state) {
  (void)state;
  for (int threads = 1; threads <= 3; threads += 2) {
    size_t total = load_failing(threads, 0);
    assert_true(total > 10);
    for (size_t n = 1; n <= total; n++) load_failing(threads, n);
    printf("load at %d thread(s): %zu allocations, each failed in turn\n", threads, total);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_allocation_of_a_load_fails_cleanly),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
