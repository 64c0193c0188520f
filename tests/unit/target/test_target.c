/* target_parse: the host by default, the named x86 ISA levels with their
 * -march flags and the features an artifact records (which the artifact
 * loader accepts exactly on a CPU that has them: the SSE2 baseline's on
 * every x86-64 CPU), and a clear refusal of anything else.
 * (compiler_vs_ort_avx2 builds and runs models for the AVX2 level end to
 * end; target_test_wide_vectors runs kernels built for every level.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "runtime/artifact.h"
#include "target/target.h"

static void test_host_by_default(void **state) {
  (void)state;
  Target host = target_host(), t;
  LoomError err = {0};
  const char *specs[] = {NULL, "", "host"};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(target_parse(specs[i], &t, &err), LOOM_OK);
    assert_string_equal(t.name, host.name);
    assert_int_equal(t.vector_bits, host.vector_bits);
    assert_null(t.cflags);
    assert_null(t.artifact_target);
  }
}

static void test_levels(void **state) {
  (void)state;
#if defined(__x86_64__)
  LoomError err = {0};
  Target t;
  assert_int_equal(target_parse("x86_64", &t, &err), LOOM_OK);
  assert_null(t.cflags);
  /* The baseline: 128-bit SSE2, no AVX or FMA; its artifact needs no
   * feature, so it loads on any x86-64 CPU. */
  assert_int_equal(target_parse("x86_64-sse2", &t, &err), LOOM_OK);
  assert_int_equal(t.vector_bits, 128);
  assert_int_equal(t.vector_registers, 16);
  assert_string_equal(t.name, "x86_64-sse2");
  assert_non_null(strstr(t.cflags, "-march=x86-64 "));
  assert_string_equal(t.artifact_target, "x86_64");
  assert_int_equal(artifact_check_target(t.artifact_target, &err), LOOM_OK);
  assert_int_equal(target_lanes(&t, DT_F32), 4);
  assert_int_equal(target_parse("x86_64-avx2", &t, &err), LOOM_OK);
  assert_int_equal(t.vector_bits, 256);
  assert_string_equal(t.name, "x86_64-avx2");
  assert_non_null(strstr(t.cflags, "-march=x86-64-v3"));
  assert_string_equal(t.artifact_target, "x86_64-avx2-fma");
  assert_int_equal(target_parse("x86_64-avx512", &t, &err), LOOM_OK);
  assert_int_equal(t.vector_bits, 512);
  assert_non_null(strstr(t.cflags, "-march=x86-64-v4"));
  assert_string_equal(t.artifact_target, "x86_64-avx2-fma-avx512");
  assert_int_equal(t.num_cores, target_host().num_cores);
  /* An AVX2 or AVX-512 artifact loads exactly where the CPU has the level
   * (what __builtin_cpu_supports says, not the LOOM_HOST_ISA view). */
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  assert_int_equal(artifact_check_target("x86_64-avx2-fma", &err) == LOOM_OK, avx2);
  assert_int_equal(artifact_check_target("x86_64-avx2-fma-avx512", &err) == LOOM_OK, avx512);
#else
  LoomError err = {0};
  Target t;
  assert_int_equal(target_parse("x86_64-avx2", &t, &err), LOOM_ERR_UNSUPPORTED); /* x86 levels on an x86 host only */
#endif
}

/* loom export-c's targets: generic (no vectors) and the cross ISAs, whose
 * constants are the target's whatever this machine is. */
static void test_export_targets(void **state) {
  (void)state;
  LoomError err = {0};
  Target t;
  assert_int_equal(target_parse("generic", &t, &err), LOOM_OK);
  assert_int_equal(t.vector_bits, 0);
  assert_null(t.cross_cc);
  assert_int_equal(target_lanes(&t, DT_F32), 1);
  assert_int_equal(target_parse("aarch64", &t, &err), LOOM_OK);
  assert_string_equal(t.name, "aarch64");
  assert_int_equal(t.vector_bits, 128);
  assert_int_equal(t.vector_registers, 32);
  assert_int_equal(t.num_cores, 1);
  assert_int_equal(t.l1d_bytes, 32 * 1024);
  assert_string_equal(t.cross_cc, "aarch64-linux-gnu-gcc");
  assert_int_equal(target_parse("riscv64", &t, &err), LOOM_OK);
  assert_int_equal(t.vector_bits, 0);
  assert_string_equal(t.cross_cc, "riscv64-linux-gnu-gcc");
  assert_non_null(strstr(t.cflags, "rv64gc"));
}

static void test_refusals(void **state) {
  (void)state;
  const char *bad[] = {"x86_64banana", "x86_64-avx", "sparc", "x86_64-avx2 "};
  for (int i = 0; i < 4; i++) {
    LoomError err = {0};
    Target t;
    assert_int_equal(target_parse(bad[i], &t, &err), LOOM_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, bad[i]));
    assert_non_null(strstr(err.msg, "x86_64-avx2"));
    assert_non_null(strstr(err.msg, "x86_64-sse2"));
  }
}

static void test_options(void **state) {
  (void)state;
  LoomError err = {0};
  Target t = target_host();
  assert_int_equal(target_apply_options(&t, "l1d=48K,l2=1MiB,l3=96M,cores=8,ghz=3.5,flops_per_cycle=64,fma_latency=5,l2_bytes_per_cycle=64", &err),
                   LOOM_OK);
  assert_int_equal(t.fma_latency, 5);
  assert_int_equal(t.l2_bytes_per_cycle, 64);
  assert_int_equal(t.l1d_bytes, 48 * 1024);
  assert_int_equal(t.l2_bytes, 1024 * 1024);
  assert_int_equal(t.l3_bytes, 96 * 1024 * 1024);
  assert_int_equal(t.num_cores, 8);
  assert_true(target_peak_gflops_per_core(&t) > 223.9 && target_peak_gflops_per_core(&t) < 224.1);
  assert_int_equal(target_apply_options(&t, NULL, &err), LOOM_OK);
  assert_int_equal(target_apply_options(&t, "", &err), LOOM_OK);
  const char *bad[][2] = {{"l2", "expected key=value"},       {"l2=", "expected a size"},
                          {"l2=2GiB", "expected a size"},     {"cores=0", "whole number"},
                          {"cores=8x", "whole number"},       {"ghz=-1", "clock in GHz"},
                          {"l1d=32K,warp=2", "unknown key \"warp\""}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    Target u = target_host();
    assert_int_equal(target_apply_options(&u, bad[i][0], &err), LOOM_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, bad[i][1]));
  }
}

static void test_host_description(void **state) {
  (void)state;
  Target t = target_host();
  assert_int_equal(t.vector_registers, t.vector_bits == 512 ? 32 : 16);
  assert_true(t.flops_per_cycle >= t.vector_bits / 32 * 2); /* at least one FMA unit */
  assert_true(t.l1d_bytes > 0 && t.l2_bytes > 0);
  char buf[1024];
  target_describe(&t, buf, sizeof buf);
  assert_non_null(strstr(buf, t.name));
  assert_non_null(strstr(buf, "FLOP/cycle"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_host_description),
      cmocka_unit_test(test_host_by_default),
      cmocka_unit_test(test_levels),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_export_targets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
