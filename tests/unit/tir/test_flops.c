/* tir_func_flops (src/tir/flops.h): a matmul is exactly 2 * M * N * K; an
 * elementwise block counts its float operations per output element; copies,
 * pads, casts and integer index arithmetic count nothing; a symbolic extent
 * makes the count unknown (-1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tir/flops.h"
#include "tir/text.h"
#include "unit/tir/tir_fixtures.h"

static PrimFunc *parse_ok(Arena *a, const char *text) {
  LoomError err = {0};
  PrimFunc *f = tir_parse_func(a, text, &err);
  if (!f) fail_msg("parse: %s", err.msg);
  return f;
}

static void test_matmul(void **state) {
  (void)state;
  Arena *a = arena_new();
  assert_int_equal(tir_func_flops(fixture_matmul(a)), 2 * 128 * 32 * 64);
  assert_int_equal(tir_func_flops(parse_ok(a, fixture_matmul_text)), 2 * 128 * 32 * 64);
  arena_free(a);
}

/* A zero pad (select: 0 FLOPs), a 3-tap sum over it (a reduction update
 * with one add: 1 per point), then y = max(s * 0.5 + 1, 0) with an integer
 * index computation (3 per element), then a copy with a cast (0). */
static void test_mixed_blocks(void **state) {
  (void)state;
  Arena *a = arena_new();
  const char *text =
      "func f(X: f32[10], Y: f32[8], Z: f64[8]) {\n"
      "  block root() {\n"
      "    alloc P: f32[12]\n"
      "    alloc S: f32[8]\n"
      "    for i in 0:12 {\n"
      "      block pad(vi: spatial[0:12] = i) {\n"
      "        reads X[0:10]\n"
      "        writes P[vi]\n"
      "        P[vi] = select(((vi >= 1) && (vi < 11)), X[max((vi - 1), 0)], 0.0f32)\n"
      "      }\n"
      "    }\n"
      "    for i in 0:8 {\n"
      "      for k in 0:3 {\n"
      "        block s(vi: spatial[0:8] = i, vk: reduce[0:3] = k) {\n"
      "          reads P[(vi + vk)]\n"
      "          writes S[vi]\n"
      "          init {\n"
      "            S[vi] = 0.0f32\n"
      "          }\n"
      "          S[vi] = (S[vi] + P[(vi + vk)])\n"
      "        }\n"
      "      }\n"
      "    }\n"
      "    for i in 0:8 {\n"
      "      block y(vi: spatial[0:8] = i) {\n"
      "        reads S[vi]\n"
      "        writes Y[vi]\n"
      "        Y[vi] = max(((S[((vi * 2) / 2)] * 0.5f32) + 1.0f32), 0.0f32)\n"
      "      }\n"
      "    }\n"
      "    for i in 0:8 {\n"
      "      block z(vi: spatial[0:8] = i) {\n"
      "        reads Y[vi]\n"
      "        writes Z[vi]\n"
      "        Z[vi] = cast(f64, Y[vi])\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  assert_int_equal(tir_func_flops(parse_ok(a, text)), 8 * 3 * 1 + 8 * 3);
  arena_free(a);
}

/* Math calls count one each; a row max counts 1 per point. */
static void test_calls_and_max(void **state) {
  (void)state;
  Arena *a = arena_new();
  const char *text =
      "func f(X: f32[4, 6], M: f32[4], E: f32[4, 6]) {\n"
      "  block root() {\n"
      "    for i in 0:4 {\n"
      "      for k in 0:6 {\n"
      "        block m(vi: spatial[0:4] = i, vk: reduce[0:6] = k) {\n"
      "          reads X[vi, vk]\n"
      "          writes M[vi]\n"
      "          init {\n"
      "            M[vi] = f32(-inf)\n"
      "          }\n"
      "          M[vi] = max(M[vi], X[vi, vk])\n"
      "        }\n"
      "      }\n"
      "    }\n"
      "    for i in 0:4 {\n"
      "      for j in 0:6 {\n"
      "        block e(vi: spatial[0:4] = i, vj: spatial[0:6] = j) {\n"
      "          reads X[vi, vj], M[vi]\n"
      "          writes E[vi, vj]\n"
      "          E[vi, vj] = exp((X[vi, vj] - M[vi]))\n"
      "        }\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  assert_int_equal(tir_func_flops(parse_ok(a, text)), 4 * 6 + 4 * 6 * 2);
  arena_free(a);
}

static void test_symbolic_is_unknown(void **state) {
  (void)state;
  Arena *a = arena_new();
  const char *text =
      "func f[n](A: f32[n], B: f32[n]) {\n"
      "  block root() {\n"
      "    for i in 0:n {\n"
      "      block b(vi: spatial[0:n] = i) {\n"
      "        reads A[vi]\n"
      "        writes B[vi]\n"
      "        B[vi] = (A[vi] + 1.0f32)\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  assert_int_equal(tir_func_flops(parse_ok(a, text)), -1);
  assert_int_equal(tir_func_flops(NULL), -1);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_mixed_blocks),
      cmocka_unit_test(test_calls_and_max),
      cmocka_unit_test(test_symbolic_is_unknown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
