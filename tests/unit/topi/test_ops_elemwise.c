/* Elementwise ONNX ops (topi_ops.h) run by the reference interpreter on
 * random inputs against plain-C references computed here in double
 * precision (tolerance in ops_util.h). */
#include "unit/topi/ops_util.h"

static double ref_unary(TopiUnaryOp op, double x, const TopiUnaryParams *p) {
  switch (op) {
    case TOPI_RELU: return x > 0 ? x : 0;
    case TOPI_LEAKY_RELU: return x >= 0 ? x : p->alpha * x;
    case TOPI_CLIP: return x < p->lo ? p->lo : x > p->hi ? p->hi : x;
    case TOPI_SQRT: return sqrt(x);
    case TOPI_RECIPROCAL: return 1.0 / x;
    case TOPI_EXP: return exp(x);
    case TOPI_LOG: return log(x);
    case TOPI_NEG: return -x;
    case TOPI_ABS: return fabs(x);
    case TOPI_FLOOR: return floor(x);
    case TOPI_CEIL: return ceil(x);
    case TOPI_ERF: return erf(x);
    case TOPI_TANH: return tanh(x);
    case TOPI_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case TOPI_HARD_SIGMOID: return fmax(0, fmin(1, p->alpha * x + p->beta));
    case TOPI_HARD_SWISH: return x * fmax(0, fmin(1, x / 6.0 + 0.5));
    case TOPI_GELU:
      if (p->gelu_tanh) return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
      return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case TOPI_IDENTITY: return x;
    default: break;
  }
  return NAN;
}

static void test_unary_f32(void **state) {
  (void)state;
  const TopiUnaryOp ops[] = {TOPI_RELU, TOPI_LEAKY_RELU, TOPI_CLIP, TOPI_SQRT, TOPI_RECIPROCAL,
                             TOPI_EXP, TOPI_LOG, TOPI_NEG, TOPI_ABS, TOPI_FLOOR, TOPI_CEIL,
                             TOPI_ERF, TOPI_TANH, TOPI_SIGMOID, TOPI_HARD_SIGMOID,
                             TOPI_HARD_SWISH, TOPI_GELU, TOPI_GELU, TOPI_IDENTITY};
  int64_t shape[3] = {2, 3, 5};
  enum { N = 30 };
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    Arena *a = arena_new();
    LoomError err = {0};
    TopiUnaryOp op = ops[k];
    bool positive = op == TOPI_SQRT || op == TOPI_LOG;
    float *x = u_rand_f32(N, 10 + (uint32_t)k, positive ? 0.05f : -4.0f, 4.0f);
    TopiUnaryParams p = {.lo = -INFINITY, .hi = INFINITY};
    if (op == TOPI_CLIP) p.lo = -1.5, p.hi = 0.75;
    if (op == TOPI_LEAKY_RELU) p.alpha = 0.3;
    if (op == TOPI_HARD_SIGMOID) p.alpha = 0.2, p.beta = 0.5;
    if (op == TOPI_GELU && k == 17) p.gelu_tanh = true;
    TeTensor *X = u_ph(a, "X", DT_F32, 3, shape);
    TeTensor *Y = topi_unary(a, "Y", op, X, &p, &err);
    if (!Y) fail_msg("op %d: %s", (int)op, err.msg);
    float y[N], want[N];
    u_run(a, (TeTensor *[]){X, Y}, 2, (void *[]){x, y});
    for (int i = 0; i < N; i++) want[i] = (float)ref_unary(op, x[i], &p);
    u_close("unary", y, want, N);
    free(x);
    arena_free(a);
  }
}

static void test_unary_int_and_not(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t shape[1] = {16};
  int64_t *x = u_rand_i64(16, 3, -9, 9);
  TeTensor *X = u_ph(a, "X", DT_I64, 1, shape);
  TopiUnaryParams p = {.lo = -3, .hi = 4};
  TeTensor *R = topi_unary(a, "R", TOPI_RELU, X, NULL, &err);
  TeTensor *A = topi_unary(a, "A", TOPI_ABS, X, NULL, &err);
  TeTensor *C = topi_unary(a, "C", TOPI_CLIP, X, &p, &err);
  TeTensor *Ng = topi_unary(a, "Ng", TOPI_NEG, X, NULL, &err);
  assert_non_null(R), assert_non_null(A), assert_non_null(C), assert_non_null(Ng);
  int64_t r[16], ab[16], c[16], ng[16];
  u_run(a, (TeTensor *[]){X, R, A, C, Ng}, 5, (void *[]){x, r, ab, c, ng});
  for (int i = 0; i < 16; i++) {
    assert_int_equal(r[i], x[i] > 0 ? x[i] : 0);
    assert_int_equal(ab[i], x[i] < 0 ? -x[i] : x[i]);
    assert_int_equal(c[i], x[i] < -3 ? -3 : x[i] > 4 ? 4 : x[i]);
    assert_int_equal(ng[i], -x[i]);
  }
  uint8_t *b = u_rand_bool(16, 4), nb[16];
  TeTensor *B = u_ph(a, "B", DT_BOOL1, 1, shape);
  TeTensor *NB = topi_unary(a, "NB", TOPI_NOT, B, NULL, &err);
  assert_non_null(NB);
  u_run(a, (TeTensor *[]){B, NB}, 2, (void *[]){b, nb});
  for (int i = 0; i < 16; i++) assert_int_equal(nb[i], !b[i]);
  /* refusals name the op and the input */
  U_EXPECT_ERR(topi_unary(a, "E", TOPI_EXP, X, NULL, &err), err, "Exp: input X");
  U_EXPECT_ERR(topi_unary(a, "E", TOPI_NOT, X, NULL, &err), err, "Not");
  free(x);
  free(b);
  arena_free(a);
}

static void test_cast(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t shape[2] = {3, 4};
  float *x = u_rand_f32(12, 5, -5, 5);
  x[0] = 0.0f, x[1] = -2.7f, x[2] = 2.7f;
  TeTensor *X = u_ph(a, "X", DT_F32, 2, shape);
  TeTensor *I = topi_cast(a, "I", X, DT_I64, &err);
  TeTensor *B = topi_cast(a, "B", X, DT_BOOL1, &err);
  assert_non_null(I), assert_non_null(B);
  TeTensor *F = topi_cast(a, "F", B, DT_F32, &err);
  TeTensor *I32 = topi_cast(a, "I32", I, DT_I32, &err);
  assert_non_null(F), assert_non_null(I32);
  int64_t i[12];
  uint8_t b[12];
  float f[12];
  int32_t i32[12];
  u_run(a, (TeTensor *[]){X, I, B, F, I32}, 5, (void *[]){x, i, b, f, i32});
  for (int k = 0; k < 12; k++) {
    assert_int_equal(i[k], (int64_t)truncf(x[k]));
    assert_int_equal(b[k], x[k] != 0.0f);
    assert_true(f[k] == (x[k] != 0.0f ? 1.0f : 0.0f));
    assert_int_equal(i32[k], (int32_t)truncf(x[k]));
  }
  U_EXPECT_ERR(topi_cast(a, "H", X, dtype_make(DT_HANDLE, 64, 1), &err), err, "Cast");
  free(x);
  arena_free(a);
}

/* Binary ops over shapes of different ranks: [2, 1, 4] op [3, 1] -> [2, 3, 4]. */
static double ref_binary(TopiBinaryOp op, double x, double y) {
  switch (op) {
    case TOPI_ADD: return x + y;
    case TOPI_SUB: return x - y;
    case TOPI_MUL: return x * y;
    case TOPI_DIV: return x / y;
    case TOPI_POW: return pow(x, y);
    case TOPI_MAX: return x > y ? x : y;
    case TOPI_MIN: return x < y ? x : y;
    case TOPI_PRELU: return x < 0 ? x * y : x;
    default: return NAN;
  }
}

static void test_binary_broadcast_f32(void **state) {
  (void)state;
  const TopiBinaryOp ops[] = {TOPI_ADD, TOPI_SUB, TOPI_MUL, TOPI_DIV, TOPI_POW, TOPI_MAX, TOPI_MIN};
  int64_t xs[3] = {2, 1, 4}, ys[2] = {3, 1}, os[3] = {2, 3, 4};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    Arena *a = arena_new();
    LoomError err = {0};
    TopiBinaryOp op = ops[k];
    float *x = u_rand_f32(8, 20 + (uint32_t)k, op == TOPI_POW ? 0.1f : -3, 3);
    float *y = u_rand_f32(3, 40 + (uint32_t)k, op == TOPI_DIV ? 0.5f : -2, 2);
    TeTensor *X = u_ph(a, "X", DT_F32, 3, xs), *Y = u_ph(a, "Y", DT_F32, 2, ys);
    TeTensor *Z = topi_binary(a, "Z", op, X, Y, &err);
    if (!Z) fail_msg("%s", err.msg);
    assert_int_equal(Z->ndim, 3);
    for (int d = 0; d < 3; d++) assert_int_equal(Z->shape[d], os[d]);
    float z[24], want[24];
    u_run(a, (TeTensor *[]){X, Y, Z}, 3, (void *[]){x, y, z});
    for (int i = 0; i < 24; i++) {
      int64_t idx[3];
      u_unravel(i, 3, os, idx);
      want[i] = (float)ref_binary(op, x[u_bcast_offset(3, xs, 3, idx)], y[u_bcast_offset(2, ys, 3, idx)]);
    }
    u_close("binary", z, want, 24);
    free(x), free(y);
    arena_free(a);
  }
}

static void test_binary_int_bool_scalar(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[2] = {3, 4}, ss[1] = {4};
  int64_t *x = u_rand_i64(12, 7, -20, 20), *y = u_rand_i64(4, 8, -6, 6);
  for (int i = 0; i < 4; i++)
    if (y[i] == 0) y[i] = 3;
  int64_t s = 3; /* a 0-d operand */
  TeTensor *X = u_ph(a, "X", DT_I64, 2, xs), *Y = u_ph(a, "Y", DT_I64, 1, ss);
  TeTensor *S = u_ph(a, "S", DT_I64, 0, NULL);
  TeTensor *D = topi_binary(a, "D", TOPI_DIV, X, Y, &err);
  TeTensor *M = topi_binary(a, "M", TOPI_MUL, X, S, &err);
  TeTensor *Ad = topi_binary(a, "Ad", TOPI_ADD, S, X, &err);
  TeTensor *E = topi_binary(a, "E", TOPI_EQUAL, X, Y, &err);
  TeTensor *L = topi_binary(a, "L", TOPI_LESS, X, Y, &err);
  TeTensor *G = topi_binary(a, "G", TOPI_GREATER, X, S, &err);
  assert_non_null(D), assert_non_null(M), assert_non_null(Ad);
  assert_non_null(E), assert_non_null(L), assert_non_null(G);
  TeTensor *An = topi_binary(a, "An", TOPI_AND, E, L, &err);
  TeTensor *Or = topi_binary(a, "Or", TOPI_OR, L, G, &err);
  assert_non_null(An), assert_non_null(Or);
  int64_t d[12], m[12], ad[12];
  uint8_t e[12], l[12], g[12], an[12], orr[12];
  u_run(a, (TeTensor *[]){X, Y, S, D, M, Ad, E, L, G, An, Or}, 11,
        (void *[]){x, y, &s, d, m, ad, e, l, g, an, orr});
  for (int i = 0; i < 12; i++) {
    int64_t xv = x[i], yv = y[i % 4];
    assert_int_equal(d[i], xv / yv); /* C division truncates, as ONNX's */
    assert_int_equal(m[i], xv * 3);
    assert_int_equal(ad[i], xv + 3);
    assert_int_equal(e[i], xv == yv);
    assert_int_equal(l[i], xv < yv);
    assert_int_equal(g[i], xv > 3);
    assert_int_equal(an[i], xv == yv && xv < yv);
    assert_int_equal(orr[i], xv < yv || xv > 3);
  }
  /* refusals */
  int64_t bad[1] = {5};
  TeTensor *Bad = u_ph(a, "Bad", DT_I64, 1, bad);
  U_EXPECT_ERR(topi_binary(a, "Z", TOPI_ADD, X, Bad, &err), err, "Add: shapes do not broadcast");
  TeTensor *F = u_ph(a, "F", DT_F32, 1, ss);
  U_EXPECT_ERR(topi_binary(a, "Z", TOPI_ADD, X, F, &err), err, "Add: input 1");
  U_EXPECT_ERR(topi_binary(a, "Z", TOPI_AND, X, Y, &err), err, "And");
  free(x), free(y);
  arena_free(a);
}

static void test_variadic_where_prelu(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t s1[2] = {2, 5}, s2[1] = {5}, s3[2] = {2, 1};
  float *x1 = u_rand_f32(10, 1, -2, 2), *x2 = u_rand_f32(5, 2, -2, 2), *x3 = u_rand_f32(2, 3, -2, 2);
  TeTensor *X1 = u_ph(a, "X1", DT_F32, 2, s1), *X2 = u_ph(a, "X2", DT_F32, 1, s2),
           *X3 = u_ph(a, "X3", DT_F32, 2, s3);
  const TeTensor *xs[3] = {X1, X2, X3};
  TeTensor *Sm = topi_variadic(a, "Sm", TOPI_ADD, xs, 3, &err);
  TeTensor *Mx = topi_variadic(a, "Mx", TOPI_MAX, xs, 3, &err);
  TeTensor *Mn = topi_variadic(a, "Mn", TOPI_MIN, xs, 3, &err);
  TeTensor *P = topi_binary(a, "P", TOPI_PRELU, X1, X2, &err);
  assert_non_null(Sm), assert_non_null(Mx), assert_non_null(Mn), assert_non_null(P);
  TeTensor *Cnd = topi_binary(a, "Cnd", TOPI_LESS, X2, X3, &err); /* [2, 5] bool */
  assert_non_null(Cnd);
  TeTensor *W = topi_where(a, "W", Cnd, X1, X3, &err);
  assert_non_null(W);
  float sm[10], mx[10], mn[10], p[10], w[10];
  u_run(a, (TeTensor *[]){X1, X2, X3, Sm, Mx, Mn, P, W}, 8, (void *[]){x1, x2, x3, sm, mx, mn, p, w});
  float wsm[10], wmx[10], wmn[10], wp[10], ww[10];
  for (int i = 0; i < 10; i++) {
    float a1 = x1[i], a2 = x2[i % 5], a3 = x3[i / 5];
    wsm[i] = a1 + a2 + a3;
    wmx[i] = fmaxf(a1, fmaxf(a2, a3));
    wmn[i] = fminf(a1, fminf(a2, a3));
    wp[i] = a1 < 0 ? a1 * a2 : a1;
    ww[i] = a2 < a3 ? a1 : a3;
  }
  u_close("sum", sm, wsm, 10);
  u_close("max", mx, wmx, 10);
  u_close("min", mn, wmn, 10);
  u_close("prelu", p, wp, 10);
  u_close("where", w, ww, 10);
  U_EXPECT_ERR(topi_where(a, "W2", X1, X1, X3, &err), err, "Where: condition");
  U_EXPECT_ERR(topi_binary(a, "P2", TOPI_PRELU, X3, X1, &err), err, "PRelu: slope");
  U_EXPECT_ERR(topi_variadic(a, "V", TOPI_SUB, xs, 3, &err), err, "Sum, Max or Min");
  free(x1), free(x2), free(x3);
  arena_free(a);
}

static void test_batch_norm(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[4] = {2, 3, 2, 2}, cs[1] = {3};
  float *x = u_rand_f32(24, 1, -2, 2), *sc = u_rand_f32(3, 2, 0.5f, 2), *bi = u_rand_f32(3, 3, -1, 1),
        *mu = u_rand_f32(3, 4, -1, 1), *va = u_rand_f32(3, 5, 0.1f, 2);
  TeTensor *X = u_ph(a, "X", DT_F32, 4, xs), *S = u_ph(a, "S", DT_F32, 1, cs),
           *B = u_ph(a, "B", DT_F32, 1, cs), *M = u_ph(a, "M", DT_F32, 1, cs),
           *V = u_ph(a, "V", DT_F32, 1, cs);
  TeTensor *Y = topi_batch_norm(a, "Y", X, S, B, M, V, 1e-5, &err);
  assert_non_null(Y);
  float y[24], want[24];
  u_run(a, (TeTensor *[]){X, S, B, M, V, Y}, 6, (void *[]){x, sc, bi, mu, va, y});
  for (int i = 0; i < 24; i++) {
    int c = (i / 4) % 3;
    want[i] = (float)((x[i] - mu[c]) / sqrt(va[c] + 1e-5) * sc[c] + bi[c]);
  }
  u_close("batch_norm", y, want, 24);
  U_EXPECT_ERR(topi_batch_norm(a, "Y2", X, X, B, M, V, 1e-5, &err), err, "scale");
  free(x), free(sc), free(bi), free(mu), free(va);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unary_f32),
      cmocka_unit_test(test_unary_int_and_not),
      cmocka_unit_test(test_cast),
      cmocka_unit_test(test_binary_broadcast_f32),
      cmocka_unit_test(test_binary_int_bool_scalar),
      cmocka_unit_test(test_variadic_where_prelu),
      cmocka_unit_test(test_batch_norm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
