/* loom_peak_gflops_per_core (include/loom/loom_tools.h) is the peak the
 * target layer computes for the host and for an artifact's ISA level, as
 * `loom run --profile` uses it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "loom/loom_tools.h"
#include "target/target.h"

static void test_matches_target_layer(void **state) {
  Target host = target_host();
  assert_true(loom_peak_gflops_per_core(NULL) == target_peak_gflops_per_core(&host));
  const char *isas[] = {"x86_64", "x86_64-avx2-fma", "not-an-isa"};
  for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
    Target t = target_for_artifact(isas[i]);
    assert_true(loom_peak_gflops_per_core(isas[i]) == target_peak_gflops_per_core(&t));
    assert_true(loom_peak_gflops_per_core(isas[i]) >= 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_matches_target_layer)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
