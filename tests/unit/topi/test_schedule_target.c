/* The default schedules take their decisions from the target (issue 13):
 * the register tiles of matmul and conv fit the target's vector registers
 * (accumulators + loaded vectors + a broadcast), so AVX2's 16 registers get
 * smaller tiles than AVX-512's 32, and a made-up target with 8 registers
 * smaller still; the decisions are read back from the schedule's trace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures/op_funcs.h"
#include "target/target.h"
#include "tir/schedule/schedule.h"
#include "topi/topi_schedule.h"

static Target make_target(const char *name, const char *options) {
  Target t;
  LoomError err = {0};
  assert_int_equal(target_parse(name, &t, &err), LOOM_OK);
  assert_int_equal(target_apply_options(&t, options, &err), LOOM_OK);
  return t;
}

/* The decision of the first sample_categorical whose candidate list starts
 * with `prefix` (after `after` such lines), or -1. */
static int64_t decision(const char *trace, const char *prefix, int after) {
  for (const char *p = trace; (p = strstr(p, prefix)) != NULL; p++) {
    if (after-- > 0) continue;
    const char *arrow = strstr(p, "-> ");
    return arrow ? strtoll(arrow + 3, NULL, 10) : -1;
  }
  return -1;
}

typedef struct {
  const char *target, *options;
  int64_t mr, nr; /* the expected default tile, 0: only check that it fits */
} MatmulCase;

static void test_matmul_tile_fits_registers(void **state) {
  (void)state;
  static const MatmulCase cases[] = {
      {"x86_64-avx512", "", 6, 4},
      {"x86_64-avx2", "", 4, 3},
      {"x86_64-avx2", "vector_registers=8", 0, 0},
      {"x86_64-avx512", "vector_registers=16", 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Target t = make_target(cases[i].target, cases[i].options);
    Arena *a = arena_new();
    LoomError err = {0};
    PrimFunc *f = opfunc_matmul(a, 128, 768, 768, DT_F32, &err);
    assert_non_null(f);
    Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
    assert_int_equal(topi_schedule_matmul_cpu(s, "C", NULL, &t, 1), LOOM_OK);
    char *trace = trace_to_text(sch_trace(s));
    int64_t mr = decision(trace, "sample_categorical([1, 2, 3, 4, 6, 8, 12]", 0);
    int64_t nr = decision(trace, "sample_categorical([1, 2, 3, 4, ", 1); /* the second list starting so */
    if (mr < 1 || nr < 1 || !topi_register_tile_fits(&t, mr, nr, 1) ||
        (cases[i].mr && (mr != cases[i].mr || nr != cases[i].nr)))
      fail_msg("%s %s: matmul tile %lld x %lld vectors (want %lld x %lld, fitting %d registers)\n%s", cases[i].target,
               cases[i].options, (long long)mr, (long long)nr, (long long)cases[i].mr, (long long)cases[i].nr,
               t.vector_registers, trace);
    free(trace);
    sch_free(s);
    arena_free(a);
  }
}

static void test_conv_tile_fits_registers(void **state) {
  (void)state;
  static const char *const targets[][2] = {
      {"x86_64-avx512", ""}, {"x86_64-avx2", ""}, {"x86_64-avx2", "vector_registers=8"}};
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
    Target t = make_target(targets[i][0], targets[i][1]);
    int64_t lanes = target_lanes(&t, DT_F32);
    for (int64_t width = 7; width <= 56; width *= 2) {
      Arena *a = arena_new();
      LoomError err = {0};
      OpfuncConv2d p = {.N = 1, .C = 64, .H = width, .W = width, .K = 128, .R = 1, .S = 1, .stride = 1, .pad = 0};
      PrimFunc *f = opfunc_conv2d_nchwc(a, &p, lanes, lanes, &err);
      assert_non_null(f);
      Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
      assert_int_equal(topi_schedule_conv2d_nchwc_cpu(s, "conv2d_NCHWc", NULL, &t, 1), LOOM_OK);
      char *trace = trace_to_text(sch_trace(s));
      int64_t owb = decision(trace, "sample_categorical([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]", 0);
      int64_t kt = decision(trace, "sample_categorical([1, 2, 3, 4], ", 0);
      if (owb < 1 || kt < 1 || !topi_register_tile_fits(&t, owb, kt, 1) || owb * kt < 4)
        fail_msg("%s %s, %lldx%lld: conv tile %lld columns x %lld vectors does not fit %d registers\n%s", targets[i][0],
                 targets[i][1], (long long)width, (long long)width, (long long)owb, (long long)kt,
                 t.vector_registers, trace);
      free(trace);
      sch_free(s);
      arena_free(a);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_tile_fits_registers),
      cmocka_unit_test(test_conv_tile_fits_registers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
