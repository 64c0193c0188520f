/* Quantization ops (topi_ops_quant.h) run by the reference interpreter
 * against plain-C references written here from the ONNX reference
 * implementation: per-tensor, per-axis and blocked QuantizeLinear /
 * DequantizeLinear (u8, i8, int4, e4m3fn, f16 scales), DynamicQuantizeLinear,
 * MatMulInteger with per-row/column zero points, QLinearMatMul (f32 and f16
 * scales), QLinearConv with a bias and per-channel scales; and refusals. */
#include "loom/loom_convert.h"
#include "unit/topi/ops_util.h"

static void test_quantize_per_axis_and_blocked(void **state) {
  (void)state;
  enum { R = 3, C = 8, N = R * C, BLOCK = 3 };
  int64_t xs[2] = {R, C}, axs[1] = {C}, bls[2] = {R, (C + BLOCK - 1) / BLOCK};
  float *x = u_rand_f32(N, 1, -300.0f, 300.0f);
  x[0] = 2.5f, x[1] = -2.5f, x[2] = NAN, x[3] = 1e30f; /* ties to even, NaN and overflow: INT32_MIN */
  for (int blocked = 0; blocked < 2; blocked++) {
    Arena *a = arena_new();
    LoomError err = {0};
    const int64_t *ss = blocked ? bls : axs;
    int sr = blocked ? 2 : 1, sn = blocked ? R * bls[1] : C;
    float scale[R * 3] = {0};
    uint8_t zp[R * 3];
    for (int i = 0; i < sn; i++) scale[i] = 0.5f + 0.75f * (float)i, zp[i] = (uint8_t)(10 * i + 3);
    TeTensor *X = u_ph(a, "X", DT_F32, 2, xs), *S = u_ph(a, "S", DT_F32, sr, ss), *Z = u_ph(a, "Z", DT_U8, sr, ss);
    TeTensor *Y = topi_quantize_linear(a, "Y", X, S, Z, blocked ? 1 : -1, blocked ? BLOCK : 0, DT_U8, true, DT_VOID, &err);
    if (!Y) fail_msg("%s", err.msg);
    uint8_t y[N];
    u_run(a, (TeTensor *[]){X, S, Z, Y}, 4, (void *[]){x, scale, zp, y});
    for (int i = 0; i < N; i++) {
      int r = i / C, c = i % C, p = blocked ? r * (int)bls[1] + c / BLOCK : c;
      float q = rintf(x[i] / scale[p]);
      int64_t v = q >= -2147483648.0f && q < 2147483648.0f ? (int64_t)q : INT32_MIN;
      v += zp[p];
      v = v < 0 ? 0 : v > 255 ? 255 : v;
      if (y[i] != v) fail_msg("blocked %d element %d (%g): %d, want %lld", blocked, i, x[i], y[i], (long long)v);
    }
    arena_free(a);
  }
  free(x);
}

static void test_quantize_narrow_outputs(void **state) {
  (void)state;
  enum { N = 12 };
  int64_t s1[1] = {N}, s0[1] = {1};
  float x[N] = {0.4f, -0.6f, 3.0f, 7.6f, -8.4f, 100.0f, -100.0f, 500.0f, -1e9f, 0.0f, 12.5f, 13.5f};
  float scale = 0.5f;
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *X = u_ph(a, "X", DT_F32, 1, s1), *S = u_ph(a, "S", DT_F32, 0, s0);
  /* int4 with a zero point, and e4m3fn saturating / not */
  TeTensor *Z4 = u_ph(a, "Z4", dtype_make(DT_INT, 4, 1), 1, s0);
  TeTensor *Y4 = topi_quantize_linear(a, "Y4", X, S, Z4, 1, 0, dtype_make(DT_INT, 4, 1), true, DT_VOID, &err);
  DType f8 = dtype_make(DT_F8E4M3FN, 8, 1);
  TeTensor *Y8 = topi_quantize_linear(a, "Y8", X, S, NULL, 1, 0, f8, true, DT_VOID, &err);
  TeTensor *Y8n = topi_quantize_linear(a, "Y8n", X, S, NULL, 1, 0, f8, false, DT_VOID, &err);
  if (!Y4 || !Y8 || !Y8n) fail_msg("%s", err.msg);
  int8_t z4 = -2, y4[N];
  uint8_t y8[N], y8n[N];
  u_run(a, (TeTensor *[]){X, S, Z4, Y4, Y8, Y8n}, 6, (void *[]){x, &scale, &z4, y4, y8, y8n});
  for (int i = 0; i < N; i++) {
    double q = rint((double)(x[i] / scale)) + z4;
    int want4 = q < -8 ? -8 : q > 7 ? 7 : (int)q;
    float v = x[i] / scale, sat = v > 448 ? 448 : v < -448 ? -448 : v;
    if (y4[i] != want4) fail_msg("int4 element %d: %d, want %d", i, y4[i], want4);
    if (y8[i] != loom_f32_to_f8e4m3fn(sat)) fail_msg("e4m3fn element %d: 0x%x", i, y8[i]);
    if (y8n[i] != loom_f32_to_f8e4m3fn(v)) fail_msg("e4m3fn (no saturate) element %d: 0x%x", i, y8n[i]);
  }
  assert_int_equal(y8n[7], 0x7f); /* 1000 overflows to NaN without saturation */
  assert_int_equal(y8[7], 0x7e);  /* 448 with it */
  arena_free(a);
}

static void test_dequantize(void **state) {
  (void)state;
  enum { R = 2, C = 6, N = R * C };
  int64_t xs[2] = {R, C}, ss[1] = {R};
  int8_t x[N];
  for (int i = 0; i < N; i++) x[i] = (int8_t)(i * 23 - 128);
  float scale[R] = {0.25f, 3.0f};
  int8_t zp[R] = {-3, 7};
  uint16_t scale16[R] = {loom_f32_to_f16(0.1f), loom_f32_to_f16(7.0f)};
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *X = u_ph(a, "X", DT_I8, 2, xs), *S = u_ph(a, "S", DT_F32, 1, ss), *Z = u_ph(a, "Z", DT_I8, 1, ss);
  TeTensor *S16 = u_ph(a, "S16", DT_F16, 1, ss);
  TeTensor *Y = topi_dequantize_linear(a, "Y", X, S, Z, 0, 0, DT_F32, &err);
  TeTensor *Y16 = topi_dequantize_linear(a, "Y16", X, S16, Z, 0, 0, DT_F16, &err);
  if (!Y || !Y16) fail_msg("%s", err.msg);
  float y[N];
  uint16_t y16[N];
  u_run(a, (TeTensor *[]){X, S, Z, S16, Y, Y16}, 6, (void *[]){x, scale, zp, scale16, y, y16});
  for (int i = 0; i < N; i++) {
    int r = i / C;
    float want = ((float)x[i] - (float)zp[r]) * scale[r];
    float want16 = loom_f16_to_f32(loom_f32_to_f16(((float)x[i] - (float)zp[r]) * loom_f16_to_f32(scale16[r])));
    if (y[i] != want) fail_msg("element %d: %g, want %g", i, y[i], want);
    if (loom_f16_to_f32(y16[i]) != want16) fail_msg("f16 element %d: %g, want %g", i, loom_f16_to_f32(y16[i]), want16);
  }
  arena_free(a);
}

static void test_dynamic_quantize(void **state) {
  (void)state;
  enum { N = 10 };
  int64_t s[2] = {2, 5};
  float *x = u_rand_f32(N, 7, -3.0f, 5.0f);
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *X = u_ph(a, "X", DT_F32, 2, s), *outs[3];
  if (!topi_dynamic_quantize_linear(a, "Y", X, outs, &err)) fail_msg("%s", err.msg);
  assert_int_equal(outs[1]->ndim, 0);
  uint8_t y[N], zp;
  float scale;
  u_run(a, (TeTensor *[]){X, outs[0], outs[1], outs[2]}, 4, (void *[]){x, y, &scale, &zp});
  float mx = 0, mn = 0;
  for (int i = 0; i < N; i++) mx = fmaxf(mx, x[i]), mn = fminf(mn, x[i]);
  float want_scale = (mx - mn) / 255.0f, z = fmaxf(0, fminf(255, 0 - mn / want_scale));
  assert_true(scale == want_scale);
  assert_int_equal(zp, (int)rintf(z));
  for (int i = 0; i < N; i++) {
    float v = rintf(x[i] / want_scale) + rintf(z);
    assert_int_equal(y[i], (int)fminf(255, fmaxf(0, v)));
  }
  free(x);
  arena_free(a);
}

static void test_integer_products(void **state) {
  (void)state;
  enum { M = 3, K = 4, Nn = 5 };
  int64_t as[2] = {M, K}, bs[2] = {K, Nn}, zs[1] = {1}, zm[1] = {M}, zn[1] = {Nn};
  uint8_t A[M * K], B[K * Nn], azp[M], bzp[Nn], yzp = 128;
  for (int i = 0; i < M * K; i++) A[i] = (uint8_t)(i * 37 + 11);
  for (int i = 0; i < K * Nn; i++) B[i] = (uint8_t)(i * 53 + 5);
  for (int i = 0; i < M; i++) azp[i] = (uint8_t)(100 + i);
  for (int i = 0; i < Nn; i++) bzp[i] = (uint8_t)(120 - i);
  float sa = 0.02f, sb = 0.03f, sy = 0.5f;
  uint16_t ha = loom_f32_to_f16(sa), hb = loom_f32_to_f16(sb), hy = loom_f32_to_f16(sy);
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *TA = u_ph(a, "A", DT_U8, 2, as), *TB = u_ph(a, "B", DT_U8, 2, bs), *AZ = u_ph(a, "AZ", DT_U8, 1, zm),
           *BZ = u_ph(a, "BZ", DT_U8, 1, zn), *YZ = u_ph(a, "YZ", DT_U8, 1, zs);
  TeTensor *SA = u_ph(a, "SA", DT_F32, 1, zs), *SB = u_ph(a, "SB", DT_F32, 1, zs), *SY = u_ph(a, "SY", DT_F32, 1, zs);
  TeTensor *HA = u_ph(a, "HA", DT_F16, 1, zs), *HB = u_ph(a, "HB", DT_F16, 1, zs), *HY = u_ph(a, "HY", DT_F16, 1, zs);
  TeTensor *I = topi_matmul_integer(a, "I", TA, TB, AZ, BZ, &err);
  TeTensor *Q = topi_qlinear_matmul(a, "Q", TA, SA, AZ, TB, SB, BZ, SY, YZ, &err);
  TeTensor *Q16 = topi_qlinear_matmul(a, "Q16", TA, HA, AZ, TB, HB, BZ, HY, YZ, &err);
  if (!I || !Q || !Q16) fail_msg("%s", err.msg);
  int32_t acc[M * Nn];
  uint8_t q[M * Nn], q16[M * Nn];
  u_run(a, (TeTensor *[]){TA, TB, AZ, BZ, YZ, SA, SB, SY, HA, HB, HY, I, Q, Q16}, 14,
        (void *[]){A, B, azp, bzp, &yzp, &sa, &sb, &sy, &ha, &hb, &hy, acc, q, q16});
  /* the scale product in the scales' dtype: f16 rounds after each step */
  float m16 = loom_f16_to_f32(loom_f32_to_f16(loom_f16_to_f32(loom_f32_to_f16(loom_f16_to_f32(ha) * loom_f16_to_f32(hb))) /
                                              loom_f16_to_f32(hy)));
  for (int i = 0; i < M; i++)
    for (int j = 0; j < Nn; j++) {
      int32_t s = 0;
      for (int k = 0; k < K; k++) s += ((int32_t)A[i * K + k] - azp[i]) * ((int32_t)B[k * Nn + j] - bzp[j]);
      assert_int_equal(acc[i * Nn + j], s);
      double d = rint((double)s * (double)(sa * sb / sy) + yzp), d16 = rint((double)s * (double)m16 + yzp);
      assert_int_equal(q[i * Nn + j], (int)fmin(255, fmax(0, d)));
      assert_int_equal(q16[i * Nn + j], (int)fmin(255, fmax(0, d16)));
    }
  arena_free(a);
}

static void test_qlinear_conv(void **state) {
  (void)state;
  enum { C = 2, H = 4, K = 3, KH = 2 };
  int64_t xs[4] = {1, C, H, H}, ws[4] = {K, C, KH, KH}, one[1] = {1}, ks[1] = {K};
  int8_t x[C * H * H], w[K * C * KH * KH], xzp = -5, wzp[K] = {1, -2, 3}, yzp = 10;
  for (int i = 0; i < C * H * H; i++) x[i] = (int8_t)(i * 29 - 100);
  for (int i = 0; i < K * C * KH * KH; i++) w[i] = (int8_t)(i * 17 - 60);
  int32_t bias[K] = {100, -2000, 5};
  float xsc = 0.05f, wsc[K] = {0.01f, 0.02f, 0.5f}, ysc = 0.7f;
  Arena *a = arena_new();
  LoomError err = {0};
  TopiWindowParams p;
  memset(&p, 0, sizeof p);
  p.nsp = 2;
  TeTensor *X = u_ph(a, "X", DT_I8, 4, xs), *XS = u_ph(a, "XS", DT_F32, 0, one), *XZ = u_ph(a, "XZ", DT_I8, 0, one);
  TeTensor *W = u_ph(a, "W", DT_I8, 4, ws), *WS = u_ph(a, "WS", DT_F32, 1, ks), *WZ = u_ph(a, "WZ", DT_I8, 1, ks);
  TeTensor *YS = u_ph(a, "YS", DT_F32, 0, one), *YZ = u_ph(a, "YZ", DT_I8, 0, one), *Bt = u_ph(a, "B", DT_I32, 1, ks);
  TeTensor *Y = topi_qlinear_conv(a, "Y", X, XS, XZ, W, WS, WZ, YS, YZ, Bt, &p, &err);
  if (!Y) fail_msg("%s", err.msg);
  enum { OH = H - KH + 1 };
  int8_t y[K * OH * OH];
  u_run(a, (TeTensor *[]){X, XS, XZ, W, WS, WZ, YS, YZ, Bt, Y}, 10,
        (void *[]){x, &xsc, &xzp, w, wsc, wzp, &ysc, &yzp, bias, y});
  for (int k = 0; k < K; k++)
    for (int i = 0; i < OH; i++)
      for (int j = 0; j < OH; j++) {
        int32_t s = bias[k];
        for (int c = 0; c < C; c++)
          for (int r = 0; r < KH; r++)
            for (int t = 0; t < KH; t++)
              s += (x[(c * H + i + r) * H + j + t] - xzp) * (w[((k * C + c) * KH + r) * KH + t] - wzp[k]);
        double v = fmin(127, fmax(-128, (double)s * (double)(xsc * wsc[k] / ysc) + yzp));
        assert_int_equal(y[(k * OH + i) * OH + j], (int)rint(v));
      }
  arena_free(a);
}

static void test_refusals(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[2] = {3, 4}, bad[1] = {5}, one[1] = {1};
  TeTensor *X = u_ph(a, "X", DT_F32, 2, xs), *S5 = u_ph(a, "S5", DT_F32, 1, bad), *S = u_ph(a, "S", DT_F32, 1, one);
  TeTensor *XI = u_ph(a, "XI", DT_I32, 2, xs), *Z8 = u_ph(a, "Z8", DT_I8, 1, one);
  U_EXPECT_ERR(topi_quantize_linear(a, "Y", X, S5, NULL, 1, 0, DT_U8, true, DT_VOID, &err), err, "QuantizeLinear");
  U_EXPECT_ERR(topi_quantize_linear(a, "Y", X, S5, NULL, 7, 0, DT_U8, true, DT_VOID, &err), err, "axis");
  U_EXPECT_ERR(topi_quantize_linear(a, "Y", X, S5, NULL, 1, 2, DT_U8, true, DT_VOID, &err), err, "blocked");
  U_EXPECT_ERR(topi_quantize_linear(a, "Y", X, S, NULL, 1, 0, DT_F32, true, DT_VOID, &err), err, "quantized type");
  U_EXPECT_ERR(topi_quantize_linear(a, "Y", X, S, Z8, 1, 0, DT_U8, true, DT_VOID, &err), err, "zero_point");
  U_EXPECT_ERR(topi_quantize_linear(a, "Y", XI, S, NULL, 1, 0, DT_U8, true, DT_VOID, &err), err, "x");
  U_EXPECT_ERR(topi_dequantize_linear(a, "Y", X, S, NULL, 1, 0, DT_F32, &err), err, "DequantizeLinear");
  U_EXPECT_ERR(topi_matmul_integer(a, "Y", X, X, NULL, NULL, &err), err, "MatMulInteger");
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quantize_per_axis_and_blocked), cmocka_unit_test(test_quantize_narrow_outputs),
      cmocka_unit_test(test_dequantize),                    cmocka_unit_test(test_dynamic_quantize),
      cmocka_unit_test(test_integer_products),              cmocka_unit_test(test_qlinear_conv),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
