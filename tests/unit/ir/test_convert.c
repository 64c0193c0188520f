/* The narrow-type conversions of include/loom/loom_convert.h (the portable
 * path: this file is built without F16C; tests/unit/target/test_narrow.c
 * compares generated kernels, which use F16C, with it): round to nearest
 * even, NaN, inf, subnormals, overflow, for f16, bf16, the 8-bit floats,
 * e2m1, e8m0 and the 4/2-bit integers. Reference values are numpy's and
 * ml_dtypes' (what ONNX's reference implementation uses). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "ir/dtype.h"
#include "loom/loom_convert.h"

static uint32_t bits(float f) { return loom_f32_to_bits(f); }

static void test_f16_round_to_nearest_even(void **state) {
  (void)state;
  assert_int_equal(loom_f32_to_f16(1.0f), 0x3c00);
  assert_int_equal(loom_f32_to_f16(-2.0f), 0xc000);
  /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1) */
  assert_int_equal(loom_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
  /* 1 + 3 * 2^-11 is halfway between 0x3c01 and 0x3c02: to even 0x3c02 */
  assert_int_equal(loom_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
  /* just above the halfway point rounds up */
  assert_int_equal(loom_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  /* largest finite 65504; 65519.99 rounds to it, 65520 (a tie, 0x7bff odd) to inf */
  assert_int_equal(loom_f32_to_f16(65504.0f), 0x7bff);
  assert_int_equal(loom_f32_to_f16(65519.0f), 0x7bff);
  assert_int_equal(loom_f32_to_f16(65520.0f), 0x7c00);
  assert_int_equal(loom_f32_to_f16(-1e10f), 0xfc00);
  assert_int_equal(loom_f32_to_f16(INFINITY), 0x7c00);
  assert_int_equal(loom_f32_to_f16(-INFINITY), 0xfc00);
  /* NaN stays NaN (quiet), with the sign */
  assert_int_equal(loom_f32_to_f16(NAN) & 0x7e00, 0x7e00);
  assert_int_equal(loom_f32_to_f16(-NAN) & 0xfe00, 0xfe00);
  /* subnormals: 2^-24 is the smallest; 2^-25 ties to 0, 3 * 2^-26 rounds up */
  assert_int_equal(loom_f32_to_f16(0x1p-24f), 0x0001);
  assert_int_equal(loom_f32_to_f16(0x1p-25f), 0x0000);
  assert_int_equal(loom_f32_to_f16(3 * 0x1p-26f), 0x0001);
  assert_int_equal(loom_f32_to_f16(3 * 0x1p-25f), 0x0002); /* 1.5 units: to even 2 */
  assert_int_equal(loom_f32_to_f16(-0x1p-14f), 0x8400);   /* smallest normal */
  assert_int_equal(loom_f32_to_f16(0x1p-14f - 0x1p-25f), 0x0400); /* 1023.5 units: to even 1024 = normal */
  assert_int_equal(loom_f32_to_f16(-0.0f), 0x8000);
  assert_int_equal(loom_f32_to_f16(1e-30f), 0x0000);
}

static void test_f16_decode_every_code(void **state) {
  (void)state;
  assert_true(loom_f16_to_f32(0x3c00) == 1.0f);
  assert_true(loom_f16_to_f32(0x0001) == 0x1p-24f);
  assert_true(loom_f16_to_f32(0x03ff) == 1023 * 0x1p-24f);
  assert_true(loom_f16_to_f32(0x7bff) == 65504.0f);
  assert_true(loom_f16_to_f32(0xfc00) == -INFINITY);
  assert_int_equal(bits(loom_f16_to_f32(0x8000)), 0x80000000u);
  for (uint32_t c = 0; c < 65536; c++) {
    float f = loom_f16_to_f32((uint16_t)c);
    bool nan_code = (c & 0x7c00) == 0x7c00 && (c & 0x3ff);
    assert_int_equal(isnan(f) != 0, nan_code);
    /* every value converts back to its code (NaN: quiet, same sign) */
    uint16_t back = loom_f32_to_f16(f), back64 = loom_f64_to_f16((double)f);
    if (nan_code) {
      assert_int_equal(back, c | 0x200);
      assert_int_equal(back64, c | 0x200);
    } else {
      assert_int_equal(back, c);
      assert_int_equal(back64, c);
    }
  }
}

/* The n-at-a-time forms kernels use for vectors agree with the scalar ones
 * (here the portable path; the F16C path runs in target_test_narrow). */
static void test_f16_bulk(void **state) {
  (void)state;
  enum { N = 37 };
  uint16_t h[N], back[N];
  float f[N];
  for (int i = 0; i < N; i++) h[i] = (uint16_t)(i * 1777 + 3);
  loom_f16_to_f32_n(h, f, N);
  loom_f32_to_f16_n(f, back, N);
  for (int i = 0; i < N; i++) {
    assert_int_equal(bits(f[i]), bits(loom_f16_to_f32(h[i])));
    assert_int_equal(back[i], loom_f32_to_f16(f[i]));
  }
}

static void test_f64_to_f16_rounds_once(void **state) {
  (void)state;
  /* 1 + 2^-11 + 2^-40: rounds up (above the tie). Through f32 it would first
   * become 1 + 2^-11 (a tie), then round down to 1: double rounding. */
  double d = 1.0 + 0x1p-11 + 0x1p-40;
  assert_int_equal(loom_f64_to_f16(d), 0x3c01);
  assert_int_equal(loom_f32_to_f16((float)d), 0x3c00);
  assert_int_equal(loom_f64_to_f16(65519.999), 0x7bff);
  assert_int_equal(loom_f64_to_f16(65520.0), 0x7c00);
  assert_int_equal(loom_f64_to_f16(0x1p-25 + 0x1p-60), 0x0001); /* above the subnormal tie */
  assert_int_equal(loom_f64_to_f16(-0x1p-25), 0x8000);
  assert_int_equal(loom_f64_to_f16(-INFINITY), 0xfc00);
  assert_int_equal(loom_f64_to_f16(NAN) & 0x7e00, 0x7e00);
}

static void test_bf16(void **state) {
  (void)state;
  assert_int_equal(loom_f32_to_bf16(1.0f), 0x3f80);
  assert_int_equal(loom_f32_to_bf16(loom_bits_to_f32(0x3f808000)), 0x3f80); /* tie: even */
  assert_int_equal(loom_f32_to_bf16(loom_bits_to_f32(0x3f818000)), 0x3f82);                                 /* tie: even */
  assert_int_equal(loom_f32_to_bf16(loom_bits_to_f32(0x3f808001)), 0x3f81);
  assert_int_equal(loom_f32_to_bf16(loom_bits_to_f32(0x7f7fffff)), 0x7f80); /* FLT_MAX rounds to inf */
  assert_int_equal(loom_f32_to_bf16(-INFINITY), 0xff80);
  assert_int_equal(loom_f32_to_bf16(NAN), 0x7fc0);
  assert_int_equal(loom_f32_to_bf16(loom_bits_to_f32(0x7f800001)), 0x7fc0); /* signalling NaN made quiet, not inf */
  assert_int_equal(loom_f32_to_bf16(loom_bits_to_f32(0x00000001)), 0x0000); /* f32 subnormals keep their top bits */
  assert_int_equal(loom_f32_to_bf16(loom_bits_to_f32(0x00018000)), 0x0002);
  for (uint32_t c = 0; c < 65536; c++) {
    float f = loom_bf16_to_f32((uint16_t)c);
    assert_int_equal(bits(f), c << 16);
    if (!isnan(f)) assert_int_equal(loom_f32_to_bf16(f), c);
  }
}

/* All 256 codes of an 8-bit format decode and encode back (NaN codes to the
 * format's NaN). */
static void roundtrip8(float (*dec)(uint8_t), uint8_t (*enc)(float), int ncodes) {
  for (int c = 0; c < ncodes; c++) {
    float f = dec((uint8_t)c);
    uint8_t back = enc(f);
    if (isnan(f)) assert_true(isnan(dec(back)));
    else assert_int_equal(back, c);
  }
}

static void test_float8(void **state) {
  (void)state;
  /* e4m3fn: bias 7, max 448, S.1111.111 is NaN, no inf */
  assert_true(loom_f8e4m3fn_to_f32(0x7e) == 448.0f);
  assert_true(loom_f8e4m3fn_to_f32(0x01) == 0x1p-9f);
  assert_true(isnan(loom_f8e4m3fn_to_f32(0x7f)) && isnan(loom_f8e4m3fn_to_f32(0xff)));
  assert_int_equal(loom_f32_to_f8e4m3fn(460.0f), 0x7e); /* rounds to 448 */
  assert_int_equal(loom_f32_to_f8e4m3fn(470.0f), 0x7f); /* overflow: NaN */
  assert_int_equal(loom_f32_to_f8e4m3fn(-INFINITY), 0xff);
  assert_int_equal(loom_f32_to_f8e4m3fn(0.46875f + 0.015625f), 0x30); /* tie between 0x2f, 0x30: even */
  assert_int_equal(loom_f32_to_f8e4m3fn(0x1p-10f), 0x00);           /* subnormal tie: to 0 */
  assert_int_equal(loom_f32_to_f8e4m3fn(-0x1p-10f * 3), 0x82);       /* 1.5 units: to 2 */
  assert_int_equal(loom_f32_to_f8e4m3fn(1e-7f), 0x00);
  assert_int_equal(loom_f32_to_f8e4m3fn(-1e-7f), 0x80);
  roundtrip8(loom_f8e4m3fn_to_f32, loom_f32_to_f8e4m3fn, 256);
  /* e4m3fnuz: bias 8, max 240, 0x80 is the only NaN, no -0 */
  assert_true(loom_f8e4m3fnuz_to_f32(0x7f) == 240.0f);
  assert_true(isnan(loom_f8e4m3fnuz_to_f32(0x80)));
  assert_int_equal(loom_f32_to_f8e4m3fnuz(250.0f), 0x80);
  assert_int_equal(loom_f32_to_f8e4m3fnuz(NAN), 0x80);
  assert_int_equal(loom_f32_to_f8e4m3fnuz(-0.0f), 0x00);
  assert_int_equal(loom_f32_to_f8e4m3fnuz(-1e-7f), 0x00);
  roundtrip8(loom_f8e4m3fnuz_to_f32, loom_f32_to_f8e4m3fnuz, 256);
  /* e5m2: IEEE-like */
  assert_true(loom_f8e5m2_to_f32(0x7b) == 57344.0f);
  assert_true(loom_f8e5m2_to_f32(0x7c) == INFINITY);
  assert_true(isnan(loom_f8e5m2_to_f32(0x7e)));
  assert_int_equal(loom_f32_to_f8e5m2(61439.0f), 0x7b);
  assert_int_equal(loom_f32_to_f8e5m2(61440.0f), 0x7c); /* tie, 0x7b odd: up, to inf */
  assert_int_equal(loom_f32_to_f8e5m2(-1e6f), 0xfc);
  assert_int_equal(loom_f32_to_f8e5m2(NAN), 0x7e);
  roundtrip8(loom_f8e5m2_to_f32, loom_f32_to_f8e5m2, 256);
  /* e5m2fnuz */
  assert_true(loom_f8e5m2fnuz_to_f32(0x7f) == 57344.0f);
  assert_int_equal(loom_f32_to_f8e5m2fnuz(INFINITY), 0x80);
  assert_int_equal(loom_f32_to_f8e5m2fnuz(0x1p-17f), 0x01);
  roundtrip8(loom_f8e5m2fnuz_to_f32, loom_f32_to_f8e5m2fnuz, 256);
}

static void test_float4_e8m0_int4(void **state) {
  (void)state;
  static const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int c = 0; c < 16; c++) assert_true(loom_f4e2m1_to_f32((uint8_t)c) == (c & 8 ? -e2m1[c & 7] : e2m1[c & 7]));
  roundtrip8(loom_f4e2m1_to_f32, loom_f32_to_f4e2m1, 16);
  assert_int_equal(loom_f32_to_f4e2m1(0.25f), 0x0);  /* tie: even (0) */
  assert_int_equal(loom_f32_to_f4e2m1(0.75f), 0x2);  /* tie between 0.5 and 1: even (1.0) */
  assert_int_equal(loom_f32_to_f4e2m1(-3.5f), 0xe);  /* tie between 3 and 4: even (4) */
  assert_int_equal(loom_f32_to_f4e2m1(1e6f), 0x7);   /* saturates */
  assert_int_equal(loom_f32_to_f4e2m1(-INFINITY), 0xf);
  assert_int_equal(loom_f32_to_f4e2m1(NAN), 0x8);    /* as ml_dtypes */
  /* e8m0, ONNX's default round_mode "up" */
  assert_int_equal(loom_f32_to_f8e8m0(1.0f), 127);
  assert_int_equal(loom_f32_to_f8e8m0(1.1f), 128);
  assert_int_equal(loom_f32_to_f8e8m0(-0.124f), 124);
  assert_int_equal(loom_f32_to_f8e8m0(0.0f), 0);
  assert_int_equal(loom_f32_to_f8e8m0(3e38f), 254); /* saturates at the largest exponent */
  assert_int_equal(loom_f32_to_f8e8m0(INFINITY), 255);
  assert_true(loom_f8e8m0_to_f32(127) == 1.0f);
  assert_true(loom_f8e8m0_to_f32(0) == 0x1p-127f);
  assert_true(isnan(loom_f8e8m0_to_f32(255)));
  /* integers keep their low bits */
  assert_int_equal(loom_i64_to_i4(7), 7);
  assert_int_equal(loom_i64_to_i4(8), -8);
  assert_int_equal(loom_i64_to_i4(-9), 7);
  assert_int_equal(loom_i64_to_i4(100), 4);
  assert_int_equal(loom_i64_to_u4(-3), 13);
  assert_int_equal(loom_i64_to_i2(3), -1);
  assert_int_equal(loom_i64_to_u2(-1), 3);
}

static void test_dtype_names_and_rounding(void **state) {
  (void)state;
  static const DType narrow[] = {{DT_F8E4M3FN, 8, 1}, {DT_F8E4M3FNUZ, 8, 1}, {DT_F8E5M2, 8, 1}, {DT_F8E5M2FNUZ, 8, 1},
                                 {DT_F8E8M0, 8, 1},   {DT_F4E2M1, 4, 1},     {DT_INT, 4, 1},    {DT_UINT, 2, 1},
                                 {DT_FLOAT, 16, 1},   {DT_BFLOAT, 16, 1}};
  for (size_t k = 0; k < sizeof narrow / sizeof narrow[0]; k++) {
    char buf[16];
    DType back;
    assert_true(dtype_is_narrow(narrow[k]));
    assert_true(dtype_parse(dtype_str(narrow[k], buf), &back) && dtype_eq(back, narrow[k]));
    assert_int_equal(dtype_bytes(narrow[k]), narrow[k].bits == 16 ? 2 : 1);
    assert_non_null(dtype_c_type(narrow[k]));
  }
  char buf[16];
  assert_string_equal(dtype_str(dtype_make(DT_F8E5M2FNUZ, 8, 1024), buf), "f8e5m2fnuzx1024");
  assert_false(dtype_is_narrow(DT_F32));
  assert_true(dtype_eq(dtype_compute_type(dtype_make(DT_FLOAT, 16, 8)), dtype_make(DT_FLOAT, 32, 8)));
  assert_true(dtype_eq(dtype_compute_type(dtype_make(DT_INT, 4, 1)), DT_I32));
  assert_true(dtype_narrow_round(DT_F16, 1.0 + 0x1p-11 + 0x1p-40) == 1.0 + 0x1p-10);
  assert_true(dtype_narrow_round(dtype_make(DT_F8E4M3FN, 8, 1), 1e6) != dtype_narrow_round(dtype_make(DT_F8E4M3FN, 8, 1), 1e6));
  assert_true(dtype_narrow_round(DT_F32, 0.1) == 0.1);
  assert_int_equal(dtype_narrow_wrap(dtype_make(DT_INT, 4, 1), 9), -7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f16_round_to_nearest_even), cmocka_unit_test(test_f16_decode_every_code),
      cmocka_unit_test(test_f64_to_f16_rounds_once),    cmocka_unit_test(test_bf16),
      cmocka_unit_test(test_f16_bulk),
      cmocka_unit_test(test_float8),                    cmocka_unit_test(test_float4_e8m0_int4),
      cmocka_unit_test(test_dtype_names_and_rounding),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
