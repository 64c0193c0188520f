/* Narrow element types (f16, bf16, the 8/4-bit floats, int4/int2) through
 * the whole kernel path: te -> schedule (vectorized and not) -> tir_lower
 * (tir_legalize_narrow) -> C -> cc -> run, bit for bit against the
 * reference interpreter (which uses loom_convert.h's portable path, while
 * kernels built with -march=native use F16C for f16). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "loom/loom_convert.h"
#include "te/te.h"
#include "tir/interp.h"
#include "tir/schedule/schedule.h"
#include "tir/transform/transform.h"
#include "unit/target/kernel_harness.h"

enum { N = 2 * 65536 };

typedef struct Conv {
  TeTensor *x;
  DType to;
} Conv;

static const Expr *cast_body(Arena *a, const Expr *const *ax, void *user) {
  Conv *c = user;
  return expr_cast(a, c->to, te_load(a, c->x, ax));
}

/* B = cast(S, A); C = cast(f32, B), over N elements; the inner loop of both
 * stages split by 16 and vectorized when `vec`. */
/* A schedule owns the function it returns: kept until the test ends. */
static Schedule *g_scheds[32];
static int g_nscheds;
static void free_scheds(void) {
  while (g_nscheds) sch_free(g_scheds[--g_nscheds]);
}

static PrimFunc *round_trip(Arena *a, const char *name, DType in, DType s, bool vec) {
  LoomError err = {0};
  int64_t n = N;
  Conv c1 = {te_placeholder(a, "A", in, 1, &n, &err), s};
  TeTensor *B = te_compute(a, "B", 1, &n, cast_body, &c1, &err);
  Conv c2 = {B, DT_F32};
  TeTensor *C = B ? te_compute(a, "C", 1, &n, cast_body, &c2, &err) : NULL;
  PrimFunc *f = C ? te_create_primfunc(a, name, (TeTensor *[]){c1.x, B, C}, 3, &err) : NULL;
  if (!f) fail_msg("te: %s", err.msg);
  if (!vec) return f;
  Schedule *sch = sch_create(f, DECIDE_DEFAULT, 0);
  assert_true(g_nscheds < 32);
  g_scheds[g_nscheds++] = sch;
  for (int b = 0; b < 2; b++) {
    SchRV loops[1], parts[2];
    assert_int_equal(sch_get_loops(sch, sch_get_block(sch, b ? "C" : "B"), loops, 1), 1);
    assert_int_equal(sch_split(sch, loops[0], (int64_t[]){-1, 16}, 2, parts), 0);
    assert_int_equal(sch_vectorize(sch, parts[1]), 0);
  }
  return (PrimFunc *)sch_func(sch);
}

static const PrimFunc *lower(Arena *a, const PrimFunc *f) {
  LoomError err = {0};
  const PrimFunc *g = tir_lower(a, f, NULL, &err);
  if (!g) fail_msg("tir_lower: %s", err.msg);
  return g;
}

/* f32 inputs that cover every exponent, ties at the f16, bf16 and 8-bit
 * rounding points, NaN, inf and subnormals. */
static void fill_f32(float *x) {
  static const uint32_t low[] = {0x0000, 0x8000, 0x1000, 0x3000, 0x0800, 0x7fff, 0x0001, 0xffff};
  uint32_t h = 12345;
  for (int k = 0; k < N; k++) {
    h = h * 1103515245u + 12345u;
    uint32_t bits = (uint32_t)(k >> 1) << 16 | (k & 1 ? low[(h >> 16) % 8] : (h >> 8 & 0xffff));
    memcpy(&x[k], &bits, 4);
  }
}

static void check_type(Arena *a, DType s, DType in) {
  char sbuf[16];
  const char *ts = dtype_str(s, sbuf);
  PrimFunc *plain = round_trip(a, arena_printf(a, "rt_%s", ts), in, s, false);
  PrimFunc *fs[] = {(PrimFunc *)lower(a, plain), (PrimFunc *)lower(a, round_trip(a, arena_printf(a, "rtv_%s", ts), in, s, true))};
  char *src;
  Module *m = harness_compile(fs, 2, &src);
  /* the vector kernel really converts vectors */
  assert_non_null(strstr(src, "loom_cvt_"));
  int eb = dtype_bytes(s);
  void *x = malloc((size_t)N * 8);
  uint8_t *want_b = malloc((size_t)N * 2), *got_b = malloc((size_t)N * 2);
  float *want_c = malloc((size_t)N * 4), *got_c = malloc((size_t)N * 4);
  if (in.bits == 32) {
    fill_f32(x);
  } else { /* f64 inputs: the f32 values plus a nudge below f32 precision */
    float *f = malloc((size_t)N * 4);
    fill_f32(f);
    for (int k = 0; k < N; k++) ((double *)x)[k] = (double)f[k] * (1.0 + (k % 3 - 1) * 0x1p-40);
    free(f);
  }
  LoomError err = {0};
  void *ref[] = {x, want_b, want_c};
  TirInterpOptions o = tir_interp_default_options();
  assert_int_equal(tir_interpret_opts(plain, ref, &o, &err), LOOM_OK);
  int64_t n = N;
  DLTensor ta = harness_tensor(x, kDLFloat, (uint8_t)in.bits, 1, &n), tb = harness_tensor(got_b, s.code, s.bits, 1, &n),
           tc = harness_tensor(got_c, kDLFloat, 32, 1, &n);
  DLTensor *args[] = {&ta, &tb, &tc};
  for (int f = 0; f < 2; f++) {
    memset(got_b, 0x55, (size_t)N * 2);
    Kernel k = harness_kernel(m, fs[f]->name);
    if (kernel_call(&k, args, 3, NULL, NULL, &err)) fail_msg("%s", err.msg);
    for (int e = 0; e < N; e++) {
      if (memcmp(got_b + e * eb, want_b + e * eb, (size_t)eb)) {
        unsigned gv = 0, wv = 0;
        memcpy(&gv, got_b + e * eb, (size_t)eb);
        memcpy(&wv, want_b + e * eb, (size_t)eb);
        fail_msg("%s element %d (%.9g): stored 0x%x, interpreter 0x%x", fs[f]->name, e,
                 in.bits == 32 ? (double)((float *)x)[e] : ((double *)x)[e], gv, wv);
      }
      if (memcmp(&got_c[e], &want_c[e], 4) && !(isnan(got_c[e]) && isnan(want_c[e])))
        fail_msg("%s element %d: widened %.9g, interpreter %.9g", fs[f]->name, e, got_c[e], want_c[e]);
    }
  }
  free(x), free(want_b), free(got_b), free(want_c), free(got_c), free(src);
  module_unload(m);
}

static void test_float_round_trips(void **state) {
  (void)state;
  Arena *a = arena_new();
  static const DType types[] = {{DT_FLOAT, 16, 1},   {DT_BFLOAT, 16, 1},    {DT_F8E4M3FN, 8, 1}, {DT_F8E4M3FNUZ, 8, 1},
                                {DT_F8E5M2, 8, 1},   {DT_F8E5M2FNUZ, 8, 1}, {DT_F8E8M0, 8, 1},   {DT_F4E2M1, 4, 1}};
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) check_type(a, types[k], DT_F32);
  /* f64 -> f16 rounds once (no detour through f32) */
  check_type(a, DT_F16, DT_F64);
  arena_free(a);
  free_scheds();
}

static void test_int_round_trips(void **state) {
  (void)state;
  Arena *a = arena_new();
  static const DType types[] = {{DT_INT, 4, 1}, {DT_UINT, 4, 1}, {DT_INT, 2, 1}, {DT_UINT, 2, 1}};
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    /* f32 in [-40, 40): truncated, then the low bits kept */
    char tb[16];
    PrimFunc *f = (PrimFunc *)lower(a, round_trip(a, arena_printf(a, "irt_%s", dtype_str(types[k], tb)), DT_F32, types[k], true));
    Module *m = harness_compile(&f, 1, NULL);
    static float x[N], c[N];
    static uint8_t b[N];
    for (int e = 0; e < N; e++) x[e] = (float)(e % 800) / 10.0f - 40.0f;
    int64_t n = N;
    DLTensor ta = harness_tensor(x, kDLFloat, 32, 1, &n), tb2 = harness_tensor(b, types[k].code, types[k].bits, 1, &n),
             tc = harness_tensor(c, kDLFloat, 32, 1, &n);
    DLTensor *args[] = {&ta, &tb2, &tc};
    Kernel kern = harness_kernel(m, f->name);
    LoomError err = {0};
    if (kernel_call(&kern, args, 3, NULL, NULL, &err)) fail_msg("%s", err.msg);
    for (int e = 0; e < N; e++) {
      int64_t t = (int64_t)x[e];
      int want = types[k].bits == 4 ? (types[k].code == DT_INT ? loom_i64_to_i4(t) : loom_i64_to_u4(t))
                                    : (types[k].code == DT_INT ? loom_i64_to_i2(t) : loom_i64_to_u2(t));
      int got = types[k].code == DT_INT ? (int8_t)b[e] : b[e];
      if (got != want || c[e] != (float)want) fail_msg("%s element %d (%g): %d / %g, want %d", f->name, e, x[e], got, c[e], want);
    }
    module_unload(m);
  }
  arena_free(a);
  free_scheds();
}

typedef struct Add2 {
  TeTensor *x, *y;
} Add2;

static const Expr *add_body(Arena *a, const Expr *const *ax, void *user) {
  Add2 *d = user;
  const Expr *x = te_load(a, d->x, ax), *y = te_load(a, d->y, ax);
  /* f16 arithmetic: x + y, and a constant that is not an f16 value (rounded) */
  return expr_add(a, expr_add(a, x, y), expr_float(a, x->dtype, 0.0));
}

/* f16 + f16 -> f16 is computed in f32 and rounded once: the sum of two
 * halves is exact in f32, so the result equals numpy's f16 addition. */
static void test_f16_arithmetic(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t n = 65536;
  Add2 d = {te_placeholder(a, "X", DT_F16, 1, &n, &err), te_placeholder(a, "Y", DT_F16, 1, &n, &err)};
  TeTensor *Z = te_compute(a, "Z", 1, &n, add_body, &d, &err);
  PrimFunc *f = te_create_primfunc(a, "add_f16", (TeTensor *[]){d.x, d.y, Z}, 3, &err);
  assert_non_null(f);
  Schedule *sch = sch_create(f, DECIDE_DEFAULT, 0);
  SchRV loops[1], parts[2];
  sch_get_loops(sch, sch_get_block(sch, "Z"), loops, 1);
  assert_int_equal(sch_split(sch, loops[0], (int64_t[]){-1, 8}, 2, parts), 0);
  assert_int_equal(sch_vectorize(sch, parts[1]), 0);
  PrimFunc *g = (PrimFunc *)lower(a, sch_func(sch));
  Module *m = harness_compile(&g, 1, NULL);
  static uint16_t x[65536], y[65536], z[65536], want[65536];
  for (int e = 0; e < 65536; e++) x[e] = (uint16_t)e, y[e] = (uint16_t)(e * 40503u + 7);
  void *ref[] = {x, y, want};
  assert_int_equal(tir_interpret(f, ref, &err), LOOM_OK);
  DLTensor tx = harness_tensor(x, kDLFloat, 16, 1, &n), ty = harness_tensor(y, kDLFloat, 16, 1, &n),
           tz = harness_tensor(z, kDLFloat, 16, 1, &n);
  DLTensor *args[] = {&tx, &ty, &tz};
  Kernel kern = harness_kernel(m, "add_f16");
  if (kernel_call(&kern, args, 3, NULL, NULL, &err)) fail_msg("%s", err.msg);
  for (int e = 0; e < 65536; e++) {
    float w = loom_f16_to_f32(x[e]) + loom_f16_to_f32(y[e]);
    bool nan = isnan(w);
    if (nan ? !isnan(loom_f16_to_f32(z[e])) : z[e] != loom_f32_to_f16(w))
      fail_msg("element %d: 0x%04x + 0x%04x = 0x%04x", e, x[e], y[e], z[e]);
    if (!nan) assert_int_equal(want[e], z[e]);
  }
  sch_free(sch);
  module_unload(m);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_float_round_trips),
      cmocka_unit_test(test_int_round_trips),
      cmocka_unit_test(test_f16_arithmetic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
