/* The reductions, arg-reductions, scans, softmax family, normalizations and
 * losses added for ONNX conformance (op_reduce.c, op_reduce2.c, op_norm.c)
 * run by the reference interpreter against direct loops written here
 * (tolerance in ops_util.h). Shapes are [3, 4, 5] unless said otherwise:
 * the references walk a 3-D tensor as [outer, axis, inner]. */
#include "unit/topi/ops_util.h"

enum { N3 = 60 };
static const int64_t XS[3] = {3, 4, 5};

/* outer/inner extents around axis of XS. */
static void split3(int axis, int64_t *outer, int64_t *ext, int64_t *inner) {
  *outer = 1, *inner = 1;
  for (int d = 0; d < axis; d++) *outer *= XS[d];
  for (int d = axis + 1; d < 3; d++) *inner *= XS[d];
  *ext = XS[axis];
}

static void test_reductions(void **state) {
  (void)state;
  const TopiReduceOp ops[] = {TOPI_REDUCE_MIN, TOPI_REDUCE_PROD,    TOPI_REDUCE_L1,        TOPI_REDUCE_L2,
                              TOPI_REDUCE_LOG_SUM, TOPI_REDUCE_LOG_SUM_EXP, TOPI_REDUCE_SUM_SQUARE};
  for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
    for (int axis = 0; axis < 3; axis++) {
      Arena *a = arena_new();
      LoomError err = {0};
      TeTensor *X = u_ph(a, "X", DT_F32, 3, XS);
      int64_t ax = axis - 3; /* negative axes */
      TeTensor *Y = topi_reduce(a, "Y", ops[oi], X, &ax, 1, axis != 1, false, &err);
      if (!Y) fail_msg("%s", err.msg);
      assert_int_equal(Y->ndim, axis != 1 ? 3 : 2);
      float *x = u_rand_f32(N3, 7 + (uint32_t)oi, ops[oi] == TOPI_REDUCE_LOG_SUM ? 0.1f : -1.5f, 1.5f);
      float y[N3], want[N3];
      u_run(a, (TeTensor *[]){X, Y}, 2, (void *[]){x, y});
      int64_t outer, ext, inner;
      split3(axis, &outer, &ext, &inner);
      for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
          double acc = ops[oi] == TOPI_REDUCE_MIN ? INFINITY : ops[oi] == TOPI_REDUCE_PROD ? 1 : 0, mx = -INFINITY;
          for (int64_t k = 0; k < ext; k++) mx = fmax(mx, x[(o * ext + k) * inner + i]);
          for (int64_t k = 0; k < ext; k++) {
            double v = x[(o * ext + k) * inner + i];
            switch (ops[oi]) {
              case TOPI_REDUCE_MIN: acc = fmin(acc, v); break;
              case TOPI_REDUCE_PROD: acc *= v; break;
              case TOPI_REDUCE_L1: acc += fabs(v); break;
              case TOPI_REDUCE_LOG_SUM_EXP: acc += exp(v - mx); break;
              case TOPI_REDUCE_L2:
              case TOPI_REDUCE_SUM_SQUARE: acc += v * v; break;
              default: acc += v; break;
            }
          }
          if (ops[oi] == TOPI_REDUCE_L2) acc = sqrt(acc);
          if (ops[oi] == TOPI_REDUCE_LOG_SUM) acc = log(acc);
          if (ops[oi] == TOPI_REDUCE_LOG_SUM_EXP) acc = log(acc) + mx;
          want[o * inner + i] = (float)acc;
        }
      u_close("reduce", y, want, outer * inner);
      free(x);
      arena_free(a);
    }
  /* bool Max / Min (any / all) and integer L1 / Prod */
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t bs[2] = {6, 3}, ax1 = 1;
  TeTensor *B = u_ph(a, "B", DT_BOOL1, 2, bs), *I = u_ph(a, "I", DT_I32, 2, bs);
  TeTensor *Ymax = topi_reduce(a, "Ymax", TOPI_REDUCE_MAX, B, &ax1, 1, false, false, &err);
  TeTensor *Ymin = topi_reduce(a, "Ymin", TOPI_REDUCE_MIN, B, &ax1, 1, false, false, &err);
  TeTensor *Yl1 = topi_reduce(a, "Yl1", TOPI_REDUCE_L1, I, &ax1, 1, false, false, &err);
  TeTensor *Yp = topi_reduce(a, "Yp", TOPI_REDUCE_PROD, I, &ax1, 1, false, false, &err);
  assert_non_null(Ymax), assert_non_null(Ymin), assert_non_null(Yl1), assert_non_null(Yp);
  assert_true(dtype_is_bool(Ymax->dtype));
  uint8_t b[18] = {0, 0, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 0, 0, 1}, mx[6], mn[6];
  int32_t iv[18], l1[6], pr[6];
  for (int k = 0; k < 18; k++) iv[k] = k % 5 - 2;
  u_run(a, (TeTensor *[]){B, I, Ymax, Ymin, Yl1, Yp}, 6, (void *[]){b, iv, mx, mn, l1, pr});
  for (int r = 0; r < 6; r++) {
    int any = 0, all = 1, s = 0, p = 1;
    for (int c = 0; c < 3; c++) any |= b[r * 3 + c], all &= b[r * 3 + c], s += abs(iv[r * 3 + c]), p *= iv[r * 3 + c];
    assert_int_equal(mx[r], any);
    assert_int_equal(mn[r], all);
    assert_int_equal(l1[r], s);
    assert_int_equal(pr[r], p);
  }
  U_EXPECT_ERR(topi_reduce(a, "Z", TOPI_REDUCE_L2, I, &ax1, 1, true, false, &err), err,
               "ReduceL2: data (\"I\") has unsupported dtype i32");
  U_EXPECT_ERR(topi_reduce(a, "Z", TOPI_REDUCE_PROD, B, &ax1, 1, true, false, &err), err,
               "ReduceProd: data (\"B\") has unsupported dtype");
  arena_free(a);
}

/* Values from a small set so that ties decide first / last. */
static void test_arg_reduce(void **state) {
  (void)state;
  for (int axis = 0; axis < 3; axis++)
    for (int mode = 0; mode < 4; mode++) {
      bool is_min = mode & 1, last = mode & 2;
      Arena *a = arena_new();
      LoomError err = {0};
      TeTensor *X = u_ph(a, "X", DT_F32, 3, XS);
      TeTensor *Y = topi_arg_reduce(a, "Y", is_min, X, axis, axis == 2, last, &err);
      if (!Y) fail_msg("%s", err.msg);
      assert_true(dtype_eq(Y->dtype, DT_I64));
      assert_int_equal(Y->ndim, axis == 2 ? 3 : 2);
      float x[N3];
      int64_t *r = u_rand_i64(N3, 11 + (uint32_t)mode, 0, 3), y[N3];
      for (int i = 0; i < N3; i++) x[i] = (float)r[i];
      u_run(a, (TeTensor *[]){X, Y}, 2, (void *[]){x, y});
      int64_t outer, ext, inner;
      split3(axis, &outer, &ext, &inner);
      for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
          int64_t best = 0;
          for (int64_t k = 1; k < ext; k++) {
            float v = x[(o * ext + k) * inner + i], b = x[(o * ext + best) * inner + i];
            bool better = is_min ? v < b : v > b;
            if (better || (last && v == b)) best = k;
          }
          if (y[o * inner + i] != best)
            fail_msg("axis %d mode %d at %lld: got %lld, want %lld", axis, mode, (long long)(o * inner + i),
                     (long long)y[o * inner + i], (long long)best);
        }
      free(r);
      arena_free(a);
    }
  Arena *a = arena_new();
  LoomError err = {0};
  U_EXPECT_ERR(topi_arg_reduce(a, "Y", false, u_ph(a, "X", DT_F32, 3, XS), 3, true, false, &err), err,
               "ArgMax: axis 3 is out of range");
  arena_free(a);
}

static void test_softmax_family(void **state) {
  (void)state;
  for (int axis = 0; axis < 3; axis++) {
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *X = u_ph(a, "X", DT_F32, 3, XS);
    TeTensor *L = topi_log_softmax_axis(a, "L", X, axis, &err);
    TeTensor *H = topi_hardmax_axis(a, "H", X, axis - 3, &err);
    if (!L || !H) fail_msg("%s", err.msg);
    float x[N3], l[N3], hm[N3], wl[N3], wh[N3];
    int64_t *r = u_rand_i64(N3, 5 + (uint32_t)axis, -2, 2);
    for (int i = 0; i < N3; i++) x[i] = (float)r[i] * 0.5f;
    u_run(a, (TeTensor *[]){X, L, H}, 3, (void *[]){x, l, hm});
    int64_t outer, ext, inner;
    split3(axis, &outer, &ext, &inner);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++) {
        double mx = -INFINITY, s = 0;
        int64_t first = -1;
        for (int64_t k = 0; k < ext; k++) {
          double v = x[(o * ext + k) * inner + i];
          if (v > mx) mx = v, first = k;
        }
        for (int64_t k = 0; k < ext; k++) s += exp(x[(o * ext + k) * inner + i] - mx);
        for (int64_t k = 0; k < ext; k++) {
          int64_t at = (o * ext + k) * inner + i;
          wl[at] = (float)(x[at] - mx - log(s));
          wh[at] = k == first ? 1.0f : 0.0f;
        }
      }
    u_close("log_softmax", l, wl, N3);
    u_close("hardmax", hm, wh, N3);
    free(r);
    arena_free(a);
  }
}

static void test_cumulative(void **state) {
  (void)state;
  for (int c = 0; c < 16; c++) {
    int axis = c & 1 ? 2 : 1;
    bool excl = c & 2, rev = c & 4, prod = c & 8;
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *X = u_ph(a, "X", DT_F32, 3, XS), *I = u_ph(a, "I", DT_I32, 3, XS);
    TeTensor *Y = topi_cumulative(a, "Y", prod, X, axis, excl, rev, &err);
    TeTensor *YI = topi_cumulative(a, "YI", prod, I, axis - 3, excl, rev, &err);
    if (!Y || !YI) fail_msg("%s", err.msg);
    float *x = u_rand_f32(N3, 3 + (uint32_t)c, 0.5f, 1.5f), y[N3], want[N3];
    int32_t xi[N3], yi[N3];
    for (int i = 0; i < N3; i++) xi[i] = i % 7 - 3;
    u_run(a, (TeTensor *[]){X, I, Y, YI}, 4, (void *[]){x, xi, y, yi});
    int64_t outer, ext, inner;
    split3(axis, &outer, &ext, &inner);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++) {
        double acc = prod ? 1 : 0;
        int64_t acci = prod ? 1 : 0;
        for (int64_t s = 0; s < ext; s++) {
          int64_t k = rev ? ext - 1 - s : s, at = (o * ext + k) * inner + i;
          if (!excl) acc = prod ? acc * x[at] : acc + x[at], acci = prod ? acci * xi[at] : acci + xi[at];
          want[at] = (float)acc;
          if (yi[at] != (int32_t)acci) fail_msg("case %d: int element %lld", c, (long long)at);
          if (excl) acc = prod ? acc * x[at] : acc + x[at], acci = prod ? acci * xi[at] : acci + xi[at];
        }
      }
    u_close("cumulative", y, want, N3);
    free(x);
    arena_free(a);
  }
}

/* Mean and 1/std over axes [axis, 3) of x, per outer index. */
static void ref_stats(const float *x, int axis, bool rms, double *mean, double *inv_std, double eps) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < 3; d++) *(d < axis ? &outer : &inner) *= XS[d];
  for (int64_t o = 0; o < outer; o++) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < inner; i++) m += x[o * inner + i];
    m /= (double)inner;
    for (int64_t i = 0; i < inner; i++) {
      double d = x[o * inner + i] - (rms ? 0 : m);
      v += d * d;
    }
    mean[o] = m;
    inv_std[o] = 1 / sqrt(v / (double)inner + eps);
  }
}

static void test_layer_rms_norm(void **state) {
  (void)state;
  for (int c = 0; c < 4; c++) {
    int axis = 1 + (c & 1);
    bool rms = c & 2;
    Arena *a = arena_new();
    LoomError err = {0};
    int64_t ss[2] = {XS[1], XS[2]};
    TeTensor *X = u_ph(a, "X", DT_F32, 3, XS), *S = u_ph(a, "S", DT_F32, 3 - axis, ss + axis - 1);
    TeTensor *B = rms ? NULL : u_ph(a, "B", DT_F32, 3 - axis, ss + axis - 1), *M = NULL, *IS = NULL;
    TeTensor *Y = topi_layer_norm_full(a, "Y", X, S, B, axis, 1e-3, rms, &M, &IS, &err);
    if (!Y) fail_msg("%s", err.msg);
    assert_non_null(IS);
    if (rms) assert_null(M);
    else assert_int_equal(M->ndim, 3), assert_int_equal(M->shape[axis], 1);
    float *x = u_rand_f32(N3, 21 + (uint32_t)c, -2, 2), *s = u_rand_f32(20, 2, -1, 1), *b = u_rand_f32(20, 3, -1, 1);
    float y[N3], m[N3], is[N3], want[N3], wm[N3], wis[N3];
    if (rms) u_run(a, (TeTensor *[]){X, S, Y, IS}, 4, (void *[]){x, s, y, is});
    else u_run(a, (TeTensor *[]){X, S, B, Y, M, IS}, 6, (void *[]){x, s, b, y, m, is});
    double mean[N3], inv[N3];
    ref_stats(x, axis, rms, mean, inv, 1e-3);
    int64_t inner = axis == 1 ? 20 : 5, outer = N3 / inner;
    for (int64_t o = 0; o < outer; o++) {
      wm[o] = (float)mean[o], wis[o] = (float)inv[o];
      for (int64_t i = 0; i < inner; i++) {
        double v = (x[o * inner + i] - (rms ? 0 : mean[o])) * inv[o] * s[i] + (rms ? 0 : b[i]);
        want[o * inner + i] = (float)v;
      }
    }
    u_close("layer_norm", y, want, N3);
    u_close("inv_std", is, wis, outer);
    if (!rms) u_close("mean", m, wm, outer);
    free(x), free(s), free(b);
    arena_free(a);
  }
}

/* GroupNormalization on [2, 6, 5] in 3 groups, per-channel and per-group
 * affine; InstanceNormalization is 6 groups. */
static void test_group_norm(void **state) {
  (void)state;
  const int64_t xs[3] = {2, 6, 5};
  const int64_t cases[3][2] = {{3, 6}, {3, 3}, {6, 6}}; /* groups, scale extent */
  for (int c = 0; c < 3; c++) {
    int64_t G = cases[c][0], ns = cases[c][1], cpg = 6 / G;
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *X = u_ph(a, "X", DT_F32, 3, xs), *S = u_ph(a, "S", DT_F32, 1, &ns), *B = u_ph(a, "B", DT_F32, 1, &ns);
    TeTensor *Y = topi_group_norm(a, "Y", X, S, B, G, 1e-5, &err);
    if (!Y) fail_msg("%s", err.msg);
    float *x = u_rand_f32(N3, 31 + (uint32_t)c, -2, 2), *s = u_rand_f32(ns, 4, -1, 1), *b = u_rand_f32(ns, 5, -1, 1);
    float y[N3], want[N3];
    u_run(a, (TeTensor *[]){X, S, B, Y}, 4, (void *[]){x, s, b, y});
    int64_t per = cpg * 5;
    for (int64_t n = 0; n < 2; n++)
      for (int64_t g = 0; g < G; g++) {
        const float *p = x + (n * G + g) * per;
        double m = 0, v = 0;
        for (int64_t i = 0; i < per; i++) m += p[i];
        m /= (double)per;
        for (int64_t i = 0; i < per; i++) v += (p[i] - m) * (p[i] - m);
        double inv = 1 / sqrt(v / (double)per + 1e-5);
        for (int64_t i = 0; i < per; i++) {
          int64_t ch = g * cpg + i / 5, k = ns == 6 ? ch : g;
          want[(n * G + g) * per + i] = (float)((p[i] - m) * inv * s[k] + b[k]);
        }
      }
    u_close("group_norm", y, want, N3);
    free(x), free(s), free(b);
    arena_free(a);
  }
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t four = 4;
  TeTensor *X = u_ph(a, "X", DT_F32, 3, xs), *S = u_ph(a, "S", DT_F32, 1, &four);
  U_EXPECT_ERR(topi_group_norm(a, "Y", X, S, S, 4, 1e-5, &err), err, "num_groups 4 must divide the 6 channels");
  U_EXPECT_ERR(topi_group_norm(a, "Y", X, S, S, 3, 1e-5, &err), err, "scale and bias must be [C] (6)");
  arena_free(a);
}

/* LpNormalization (p 1, 2, an all-zero slice), MeanVarianceNormalization
 * over axes {0, 2}, LRN of size 3 and 4 over axis 1. */
static void test_lp_mvn_lrn(void **state) {
  (void)state;
  for (int p = 1; p <= 2; p++) {
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *X = u_ph(a, "X", DT_F32, 3, XS);
    TeTensor *Y = topi_lp_norm(a, "Y", X, 1, p, &err);
    if (!Y) fail_msg("%s", err.msg);
    float *x = u_rand_f32(N3, 41 + (uint32_t)p, -2, 2), y[N3], want[N3];
    for (int k = 0; k < 4; k++) x[k * 5 + 2] = 0; /* x[0, :, 2] = 0 */
    u_run(a, (TeTensor *[]){X, Y}, 2, (void *[]){x, y});
    for (int64_t o = 0; o < 3; o++)
      for (int64_t i = 0; i < 5; i++) {
        double n = 0;
        for (int64_t k = 0; k < 4; k++) {
          double v = x[(o * 4 + k) * 5 + i];
          n += p == 1 ? fabs(v) : v * v;
        }
        if (p == 2) n = sqrt(n);
        for (int64_t k = 0; k < 4; k++) want[(o * 4 + k) * 5 + i] = n == 0 ? 0 : (float)(x[(o * 4 + k) * 5 + i] / n);
      }
    u_close("lp_norm", y, want, N3);
    U_EXPECT_ERR(topi_lp_norm(a, "Z", X, 1, 3, &err), err, "LpNormalization: p 3 must be 1 or 2");
    free(x);
    arena_free(a);
  }
  {
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *X = u_ph(a, "X", DT_F32, 3, XS);
    int64_t axes[2] = {0, 2};
    TeTensor *Y = topi_mvn(a, "Y", X, axes, 2, &err);
    if (!Y) fail_msg("%s", err.msg);
    float *x = u_rand_f32(N3, 51, -2, 2), y[N3], want[N3];
    u_run(a, (TeTensor *[]){X, Y}, 2, (void *[]){x, y});
    for (int64_t k = 0; k < 4; k++) {
      double m = 0, v = 0;
      for (int64_t o = 0; o < 3; o++)
        for (int64_t i = 0; i < 5; i++) m += x[(o * 4 + k) * 5 + i];
      m /= 15;
      for (int64_t o = 0; o < 3; o++)
        for (int64_t i = 0; i < 5; i++) v += (x[(o * 4 + k) * 5 + i] - m) * (x[(o * 4 + k) * 5 + i] - m);
      double sd = sqrt(v / 15) + 1e-9;
      for (int64_t o = 0; o < 3; o++)
        for (int64_t i = 0; i < 5; i++) want[(o * 4 + k) * 5 + i] = (float)((x[(o * 4 + k) * 5 + i] - m) / sd);
    }
    u_close("mvn", y, want, N3);
    free(x);
    arena_free(a);
  }
  for (int64_t size = 3; size <= 4; size++) {
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *X = u_ph(a, "X", DT_F32, 3, XS);
    TeTensor *Y = topi_lrn(a, "Y", X, size, 1e-2, 0.75, 2.0, &err);
    if (!Y) fail_msg("%s", err.msg);
    float *x = u_rand_f32(N3, 61, -2, 2), y[N3], want[N3];
    u_run(a, (TeTensor *[]){X, Y}, 2, (void *[]){x, y});
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    for (int64_t o = 0; o < 3; o++)
      for (int64_t c = 0; c < 4; c++)
        for (int64_t i = 0; i < 5; i++) {
          double sq = 0;
          for (int64_t k = c - lo; k <= c + hi; k++)
            if (k >= 0 && k < 4) sq += (double)x[(o * 4 + k) * 5 + i] * x[(o * 4 + k) * 5 + i];
          want[(o * 4 + c) * 5 + i] = (float)(x[(o * 4 + c) * 5 + i] / pow(2.0 + 1e-2 / (double)size * sq, 0.75));
        }
    u_close("lrn", y, want, N3);
    free(x);
    arena_free(a);
  }
}

/* NegativeLogLikelihoodLoss on input [3, 4, 5] (C = 4), target [3, 5]
 * with an ignored class and weights; SoftmaxCrossEntropyLoss with its
 * log_prob output. */
static void test_losses(void **state) {
  (void)state;
  const int64_t ts[2] = {3, 5}, c4 = 4;
  for (int c = 0; c < 8; c++) {
    TopiLossReduction red = (TopiLossReduction)(c % 3);
    bool weighted = c & 1, sce = c >= 4;
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *X = u_ph(a, "X", DT_F32, 3, XS), *T = u_ph(a, "T", DT_I64, 2, ts), *W = u_ph(a, "W", DT_F32, 1, &c4);
    TeTensor *LP = NULL;
    TeTensor *Y = sce ? topi_softmax_cross_entropy(a, "Y", X, T, weighted ? W : NULL, red, true, 2, &LP, &err)
                      : topi_nll_loss(a, "Y", X, T, weighted ? W : NULL, red, true, 2, &err);
    if (!Y) fail_msg("%s", err.msg);
    assert_int_equal(Y->ndim, red == TOPI_LOSS_NONE ? 2 : 0);
    float *x = u_rand_f32(N3, 71 + (uint32_t)c, -2, 2), *w = u_rand_f32(4, 72, 0.5f, 1.5f), y[15], lp[N3];
    int64_t *t = u_rand_i64(15, 73 + (uint32_t)c, 0, 3);
    if (sce) u_run(a, (TeTensor *[]){X, T, W, Y, LP}, 5, (void *[]){x, t, w, y, lp});
    else u_run(a, (TeTensor *[]){X, T, W, Y}, 4, (void *[]){x, t, w, y});
    float in[N3], want[15], wlp[N3];
    memcpy(in, x, sizeof in);
    if (sce)
      for (int64_t n = 0; n < 3; n++)
        for (int64_t i = 0; i < 5; i++) {
          double mx = -INFINITY, s = 0;
          for (int64_t k = 0; k < 4; k++) mx = fmax(mx, x[(n * 4 + k) * 5 + i]);
          for (int64_t k = 0; k < 4; k++) s += exp(x[(n * 4 + k) * 5 + i] - mx);
          for (int64_t k = 0; k < 4; k++) in[(n * 4 + k) * 5 + i] = wlp[(n * 4 + k) * 5 + i] = (float)(x[(n * 4 + k) * 5 + i] - mx - log(s));
        }
    double sum = 0, wsum = 0;
    for (int64_t n = 0; n < 3; n++)
      for (int64_t i = 0; i < 5; i++) {
        int64_t k = t[n * 5 + i];
        double wt = k == 2 ? 0 : weighted ? w[k] : 1, l = k == 2 ? 0 : -in[(n * 4 + k) * 5 + i] * wt;
        want[n * 5 + i] = (float)l;
        sum += l, wsum += wt;
      }
    if (red == TOPI_LOSS_SUM) want[0] = (float)sum;
    if (red == TOPI_LOSS_MEAN) want[0] = (float)(sum / wsum);
    u_close(sce ? "sce" : "nll", y, want, red == TOPI_LOSS_NONE ? 15 : 1);
    if (sce) u_close("log_prob", lp, wlp, N3);
    free(x), free(w), free(t);
    arena_free(a);
  }
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *X = u_ph(a, "X", DT_F32, 3, XS), *T = u_ph(a, "T", DT_I64, 2, (int64_t[]){3, 4});
  U_EXPECT_ERR(topi_nll_loss(a, "Y", X, T, NULL, TOPI_LOSS_MEAN, false, 0, &err), err,
               "NegativeLogLikelihoodLoss: expected input [N, C, d...]");
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reductions),     cmocka_unit_test(test_arg_reduce),
      cmocka_unit_test(test_softmax_family), cmocka_unit_test(test_cumulative),
      cmocka_unit_test(test_layer_rms_norm), cmocka_unit_test(test_group_norm),
      cmocka_unit_test(test_lp_mvn_lrn),     cmocka_unit_test(test_losses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
