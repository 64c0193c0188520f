/* The elementwise math ops of op_elemwise.c (and integer Pow) run by the
 * reference interpreter against plain-C references (tolerance in
 * ops_util.h; integers and bool exactly). */
#include "unit/topi/ops_util.h"

static double softplus_ref(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

static double ref_math(TopiUnaryOp op, double x, const TopiUnaryParams *p) {
  switch (op) {
    case TOPI_SIN: return sin(x);
    case TOPI_COS: return cos(x);
    case TOPI_TAN: return tan(x);
    case TOPI_ASIN: return asin(x);
    case TOPI_ACOS: return acos(x);
    case TOPI_ATAN: return atan(x);
    case TOPI_SINH: return sinh(x);
    case TOPI_COSH: return cosh(x);
    case TOPI_ASINH: return asinh(x);
    case TOPI_ACOSH: return acosh(x);
    case TOPI_ATANH: return atanh(x);
    case TOPI_ROUND: return nearbyint(x);
    case TOPI_SIGN: return x > 0 ? 1 : x < 0 ? -1 : x;
    case TOPI_ELU: return x < 0 ? p->alpha * (exp(x) - 1) : x;
    case TOPI_SELU: return x > 0 ? p->gamma * x : p->gamma * (p->alpha * exp(x) - p->alpha);
    case TOPI_CELU: return fmax(0, x) + fmin(0, p->alpha * (exp(x / p->alpha) - 1));
    case TOPI_SOFTPLUS: return softplus_ref(x);
    case TOPI_SOFTSIGN: return x / (1 + fabs(x));
    case TOPI_SWISH: return x / (1 + exp(-p->alpha * x));
    case TOPI_MISH: return x * tanh(softplus_ref(x));
    case TOPI_SHRINK: return x < -p->lambd ? x + p->bias : x > p->lambd ? x - p->bias : 0;
    case TOPI_THRESHOLDED_RELU: return x > p->alpha ? x : 0;
    default: return NAN;
  }
}

static void test_math_unary_f32(void **state) {
  (void)state;
  int64_t shape[2] = {4, 8};
  enum { N = 32 };
  for (int op = TOPI_SIN; op <= TOPI_THRESHOLDED_RELU; op++) {
    if (op == TOPI_IS_NAN || op == TOPI_IS_INF) continue;
    Arena *a = arena_new();
    LoomError err = {0};
    /* inside every domain: asin/acos/atanh need |x| < 1, acosh x >= 1 */
    float lo = -3.0f, hi = 3.0f;
    if (op == TOPI_ASIN || op == TOPI_ACOS || op == TOPI_ATANH) lo = -0.95f, hi = 0.95f;
    if (op == TOPI_ACOSH) lo = 1.0f, hi = 6.0f;
    float *x = u_rand_f32(N, 50 + (uint32_t)op, lo, hi);
    x[0] = 2.5f, x[1] = -0.5f; /* Round: ties go to even */
    if (op == TOPI_ACOSH) x[1] = 1.5f;
    TopiUnaryParams p = {.alpha = 1.0, .gamma = 1.0, .lambd = 0.5};
    if (op == TOPI_SELU) p.alpha = 1.67326319217681884765625, p.gamma = 1.05070102214813232421875;
    if (op == TOPI_ELU || op == TOPI_CELU || op == TOPI_THRESHOLDED_RELU) p.alpha = 2.0;
    if (op == TOPI_SHRINK) p.lambd = 1.5, p.bias = 0.5;
    TeTensor *X = u_ph(a, "X", DT_F32, 2, shape);
    TeTensor *Y = topi_unary(a, "Y", (TopiUnaryOp)op, X, &p, &err);
    if (!Y) fail_msg("op %d: %s", op, err.msg);
    float y[N], want[N];
    u_run(a, (TeTensor *[]){X, Y}, 2, (void *[]){x, y});
    for (int i = 0; i < N; i++) want[i] = (float)ref_math((TopiUnaryOp)op, x[i], &p);
    u_close("math unary", y, want, N);
    free(x);
    arena_free(a);
  }
}

static void test_softplus_extremes_and_classes(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t shape[1] = {6};
  float x[6] = {-100.0f, -20.0f, 0.0f, 20.0f, 100.0f, -INFINITY};
  TeTensor *X = u_ph(a, "X", DT_F32, 1, shape);
  TeTensor *S = topi_unary(a, "S", TOPI_SOFTPLUS, X, NULL, &err);
  assert_non_null(S);
  float s[6], want[6];
  u_run(a, (TeTensor *[]){X, S}, 2, (void *[]){x, s});
  for (int i = 0; i < 6; i++) want[i] = (float)softplus_ref(x[i]);
  u_close("softplus", s, want, 6); /* no overflow at 100, no loss at -20 */

  float c[6] = {1.0f, NAN, INFINITY, -INFINITY, 0.0f, -2.0f};
  TopiUnaryParams both = {.detect_positive = true, .detect_negative = true}, pos = both, neg = both;
  pos.detect_negative = false, neg.detect_positive = false;
  TeTensor *Nn = topi_unary(a, "Nn", TOPI_IS_NAN, X, NULL, &err);
  TeTensor *I = topi_unary(a, "I", TOPI_IS_INF, X, &both, &err);
  TeTensor *Ip = topi_unary(a, "Ip", TOPI_IS_INF, X, &pos, &err);
  TeTensor *In = topi_unary(a, "In", TOPI_IS_INF, X, &neg, &err);
  assert_non_null(Nn), assert_non_null(I), assert_non_null(Ip), assert_non_null(In);
  assert_true(dtype_is_bool(Nn->dtype) && dtype_is_bool(I->dtype));
  uint8_t nn[6], ii[6], ip[6], in[6];
  u_run(a, (TeTensor *[]){X, Nn, I, Ip, In}, 5, (void *[]){c, nn, ii, ip, in});
  for (int i = 0; i < 6; i++) {
    assert_int_equal(nn[i], isnan(c[i]) ? 1 : 0);
    assert_int_equal(ii[i], isinf(c[i]) ? 1 : 0);
    assert_int_equal(ip[i], c[i] == INFINITY);
    assert_int_equal(in[i], c[i] == -INFINITY);
  }
  arena_free(a);
}

static void test_math_unary_int(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t shape[1] = {16};
  int64_t *x = u_rand_i64(16, 7, -9, 9);
  TeTensor *X = u_ph(a, "X", DT_I64, 1, shape);
  TopiUnaryParams p = {.lambd = 2, .bias = 1};
  TeTensor *S = topi_unary(a, "S", TOPI_SIGN, X, NULL, &err);
  TeTensor *Sh = topi_unary(a, "Sh", TOPI_SHRINK, X, &p, &err);
  TeTensor *Bn = topi_unary(a, "Bn", TOPI_BITWISE_NOT, X, NULL, &err);
  assert_non_null(S), assert_non_null(Sh), assert_non_null(Bn);
  int64_t s[16], sh[16], bn[16];
  u_run(a, (TeTensor *[]){X, S, Sh, Bn}, 4, (void *[]){x, s, sh, bn});
  for (int i = 0; i < 16; i++) {
    assert_int_equal(s[i], x[i] > 0 ? 1 : x[i] < 0 ? -1 : 0);
    assert_int_equal(sh[i], x[i] < -2 ? x[i] + 1 : x[i] > 2 ? x[i] - 1 : 0);
    assert_int_equal(bn[i], ~x[i]);
  }
  free(x);
  /* u8: Sign has no -1, bitwise not stays in 8 bits */
  uint8_t u[4] = {0, 1, 200, 255}, us[4], un[4];
  int64_t s4[1] = {4};
  TeTensor *U = u_ph(a, "U", DT_U8, 1, s4);
  TeTensor *Us = topi_unary(a, "Us", TOPI_SIGN, U, NULL, &err);
  TeTensor *Un = topi_unary(a, "Un", TOPI_BITWISE_NOT, U, NULL, &err);
  assert_non_null(Us), assert_non_null(Un);
  u_run(a, (TeTensor *[]){U, Us, Un}, 3, (void *[]){u, us, un});
  for (int i = 0; i < 4; i++) {
    assert_int_equal(us[i], u[i] > 0);
    assert_int_equal(un[i], (uint8_t)~u[i]);
  }
  /* refusals name the op and the input */
  TeTensor *B = u_ph(a, "B", DT_BOOL1, 1, s4);
  U_EXPECT_ERR(topi_unary(a, "y", TOPI_SIN, U, NULL, &err), err, "Sin: input X");
  TeTensor *F = u_ph(a, "F", DT_F32, 1, s4);
  U_EXPECT_ERR(topi_unary(a, "y", TOPI_BITWISE_NOT, F, NULL, &err), err, "BitwiseNot: input X");
  U_EXPECT_ERR(topi_unary(a, "y", TOPI_SIGN, B, NULL, &err), err, "Sign: input X");
  arena_free(a);
}

static int64_t floor_mod(int64_t x, int64_t y) {
  if (y == 0) return 0;
  int64_t r = x % y;
  return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}

static void test_math_binary_int(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t sx[2] = {3, 5}, sy[1] = {5};
  int32_t x[15], y[5];
  for (int i = 0; i < 15; i++) x[i] = i * 7 - 50;
  int32_t yv[5] = {3, -4, 0, -1, 7};
  memcpy(y, yv, sizeof y);
  TeTensor *X = u_ph(a, "X", DT_I32, 2, sx), *Y = u_ph(a, "Y", DT_I32, 1, sy);
  TeTensor *M = topi_binary(a, "M", TOPI_MOD, X, Y, &err);
  TeTensor *F = topi_binary(a, "F", TOPI_FMOD, X, Y, &err);
  TeTensor *A = topi_binary(a, "A", TOPI_BITWISE_AND, X, Y, &err);
  TeTensor *O = topi_binary(a, "O", TOPI_BITWISE_OR, X, Y, &err);
  TeTensor *Xr = topi_binary(a, "Xr", TOPI_BITWISE_XOR, X, Y, &err);
  TeTensor *Ge = topi_binary(a, "Ge", TOPI_GREATER_OR_EQUAL, X, Y, &err);
  TeTensor *Le = topi_binary(a, "Le", TOPI_LESS_OR_EQUAL, X, Y, &err);
  TeTensor *P = topi_binary(a, "P", TOPI_POW, Y, Y, &err);
  assert_non_null(M), assert_non_null(F), assert_non_null(A), assert_non_null(O), assert_non_null(Xr);
  assert_non_null(Ge), assert_non_null(Le), assert_non_null(P);
  int32_t m[15], f[15], an[15], o[15], xr[15], p[5];
  uint8_t ge[15], le[15];
  u_run(a, (TeTensor *[]){X, Y, M, F, A, O, Xr, Ge, Le, P}, 10, (void *[]){x, y, m, f, an, o, xr, ge, le, p});
  for (int i = 0; i < 15; i++) {
    int32_t xi = x[i], yi = y[i % 5];
    assert_int_equal(m[i], floor_mod(xi, yi));
    assert_int_equal(f[i], yi == 0 ? 0 : xi % yi); /* by 0: 0, as numpy */
    assert_int_equal(an[i], xi & yi);
    assert_int_equal(o[i], xi | yi);
    assert_int_equal(xr[i], xi ^ yi);
    assert_int_equal(ge[i], xi >= yi);
    assert_int_equal(le[i], xi <= yi);
  }
  const int32_t pow_want[5] = {27, 0, 1, -1, 823543}; /* 3^3, (-4)^-4 truncates to 0, 0^0, (-1)^-1 */
  for (int i = 0; i < 5; i++) assert_int_equal(p[i], pow_want[i]);

  /* shifts: u8, counts up to and past the width */
  int64_t s6[1] = {6};
  uint8_t ux[6] = {1, 3, 255, 128, 7, 9}, uy[6] = {0, 3, 1, 7, 8, 200}, l[6], r[6];
  TeTensor *Ux = u_ph(a, "Ux", DT_U8, 1, s6), *Uy = u_ph(a, "Uy", DT_U8, 1, s6);
  TeTensor *L = topi_binary(a, "L", TOPI_SHIFT_LEFT, Ux, Uy, &err);
  TeTensor *R = topi_binary(a, "R", TOPI_SHIFT_RIGHT, Ux, Uy, &err);
  assert_non_null(L), assert_non_null(R);
  u_run(a, (TeTensor *[]){Ux, Uy, L, R}, 4, (void *[]){ux, uy, l, r});
  for (int i = 0; i < 6; i++) {
    assert_int_equal(l[i], uy[i] >= 8 ? 0 : (uint8_t)(ux[i] << uy[i]));
    assert_int_equal(r[i], uy[i] >= 8 ? 0 : ux[i] >> uy[i]);
  }
  /* refusals */
  U_EXPECT_ERR(topi_binary(a, "y", TOPI_SHIFT_LEFT, X, X, &err), err, "BitShift: input A");
  U_EXPECT_ERR(topi_binary(a, "y", TOPI_XOR, X, X, &err), err, "Xor: input A");
  U_EXPECT_ERR(topi_binary(a, "y", TOPI_MOD, X, Ux, &err), err, "Mod: input 1");
  arena_free(a);
}

static void test_math_binary_f32_mean_clip(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t sx[2] = {2, 6}, s1[1] = {6}, s0[1] = {1};
  float *x = u_rand_f32(12, 3, -5.0f, 5.0f), *y = u_rand_f32(6, 4, -3.0f, 3.0f);
  float lo[1] = {-1.0f}, hi[1] = {2.0f};
  TeTensor *X = u_ph(a, "X", DT_F32, 2, sx), *Y = u_ph(a, "Y", DT_F32, 1, s1);
  TeTensor *Lo = u_ph(a, "Lo", DT_F32, 1, s0), *Hi = u_ph(a, "Hi", DT_F32, 1, s0);
  TeTensor *M = topi_binary(a, "M", TOPI_MOD, X, Y, &err);
  TeTensor *F = topi_binary(a, "F", TOPI_FMOD, X, Y, &err);
  TeTensor *Mn = topi_mean(a, "Mn", (const TeTensor *[]){X, Y, Y}, 3, &err);
  TeTensor *C = topi_clip_tensors(a, "C", X, Lo, Hi, &err);
  TeTensor *Cl = topi_clip_tensors(a, "Cl", X, NULL, Lo, &err);
  TeTensor *Cx = topi_clip_tensors(a, "Cx", X, Hi, Lo, &err); /* min > max: max everywhere */
  assert_non_null(M), assert_non_null(F), assert_non_null(Mn), assert_non_null(C), assert_non_null(Cl);
  assert_non_null(Cx);
  float m[12], f[12], mn[12], c[12], cl[12], cx[12], wm[12], wf[12], wmn[12], wc[12], wcl[12], wcx[12];
  u_run(a, (TeTensor *[]){X, Y, Lo, Hi, M, F, Mn, C, Cl, Cx}, 10,
        (void *[]){x, y, lo, hi, m, f, mn, c, cl, cx});
  for (int i = 0; i < 12; i++) {
    double xi = x[i], yi = y[i % 6];
    wm[i] = (float)(xi - floor(xi / yi) * yi);
    wf[i] = (float)fmod(xi, yi);
    wmn[i] = (float)((xi + 2 * yi) / 3);
    wc[i] = (float)fmin(fmax(xi, -1), 2);
    wcl[i] = (float)fmin(xi, -1);
    wcx[i] = -1.0f;
  }
  u_close("mod", m, wm, 12), u_close("fmod", f, wf, 12), u_close("mean", mn, wmn, 12);
  u_close("clip", c, wc, 12), u_close("clip max only", cl, wcl, 12), u_close("clip min > max", cx, wcx, 12);
  /* bounds must not enlarge the input's shape */
  U_EXPECT_ERR(topi_clip_tensors(a, "y", Y, X, NULL, &err), err, "Clip: min and max must broadcast");
  int64_t s2[1] = {2};
  U_EXPECT_ERR(topi_mean(a, "y", (const TeTensor *[]){X, u_ph(a, "Z", DT_F32, 1, s2)}, 2, &err), err,
               "Mean: shapes do not broadcast");
  free(x), free(y);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_math_unary_f32),
      cmocka_unit_test(test_softplus_extremes_and_classes),
      cmocka_unit_test(test_math_unary_int),
      cmocka_unit_test(test_math_binary_int),
      cmocka_unit_test(test_math_binary_f32_mean_clip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
