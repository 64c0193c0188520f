/* Conv, pooling, Gemm/MatMul, reductions, Softmax and LayerNormalization
 * (topi_ops.h) run by the reference interpreter against direct loops written
 * here (tolerance in ops_util.h). */
#include "unit/topi/ops_util.h"

/* Direct convolution with explicit bounds checks instead of padding. */
static void ref_conv(const float *x, const float *w, const float *b, float *y, int64_t N, int64_t C,
                     int64_t H, int64_t W, int64_t K, int64_t R, int64_t S, const TopiConvParams *p,
                     int64_t OH, int64_t OW) {
  int64_t g = p->group ? p->group : 1, cg = C / g, kg = K / g;
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double s = b ? b[k] : 0;
          for (int64_t c = 0; c < cg; c++)
            for (int64_t r = 0; r < R; r++)
              for (int64_t q = 0; q < S; q++) {
                int64_t ih = oh * p->strides[0] - p->pads[0] + r * p->dilations[0];
                int64_t iw = ow * p->strides[1] - p->pads[1] + q * p->dilations[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                int64_t ci = (k / kg) * cg + c;
                s += (double)x[((n * C + ci) * H + ih) * W + iw] * w[((k * cg + c) * R + r) * S + q];
              }
          y[((n * K + k) * OH + oh) * OW + ow] = (float)s;
        }
}

typedef struct ConvCase {
  int64_t N, C, H, W, K, R, S;
  TopiConvParams p;
  bool bias;
  int64_t OH, OW;
} ConvCase;

static void test_conv2d(void **state) {
  (void)state;
  const ConvCase cases[] = {
      {1, 3, 7, 6, 4, 3, 3, {{1, 1}, {1, 1, 1, 1}, {1, 1}, 1}, true, 7, 6},
      {2, 4, 9, 8, 6, 3, 2, {{2, 3}, {0, 1, 2, 0}, {1, 1}, 2}, false, 5, 3},
      {1, 4, 8, 8, 4, 3, 3, {{1, 1}, {2, 2, 2, 2}, {2, 2}, 4}, true, 8, 8}, /* depthwise, dilated */
      {1, 2, 5, 5, 3, 1, 1, {{1, 1}, {0, 0, 0, 0}, {1, 1}, 1}, true, 5, 5},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const ConvCase *c = &cases[ci];
    Arena *a = arena_new();
    LoomError err = {0};
    int64_t g = c->p.group, xs[4] = {c->N, c->C, c->H, c->W}, ws[4] = {c->K, c->C / g, c->R, c->S},
            bs[1] = {c->K};
    TeTensor *X = u_ph(a, "X", DT_F32, 4, xs), *Wt = u_ph(a, "W", DT_F32, 4, ws),
             *B = c->bias ? u_ph(a, "B", DT_F32, 1, bs) : NULL;
    TeTensor *Y = topi_conv2d_onnx(a, "Y", X, Wt, B, &c->p, &err);
    if (!Y) fail_msg("case %zu: %s", ci, err.msg);
    assert_int_equal(Y->shape[2], c->OH);
    assert_int_equal(Y->shape[3], c->OW);
    int64_t nx = u_numel(X), nw = u_numel(Wt), ny = u_numel(Y);
    float *x = u_rand_f32(nx, 1 + (uint32_t)ci, -1, 1), *w = u_rand_f32(nw, 9, -1, 1),
          *b = u_rand_f32(c->K, 5, -1, 1);
    float *y = malloc(sizeof(float) * (size_t)ny), *want = malloc(sizeof(float) * (size_t)ny);
    if (B) u_run(a, (TeTensor *[]){X, Wt, B, Y}, 4, (void *[]){x, w, b, y});
    else u_run(a, (TeTensor *[]){X, Wt, Y}, 3, (void *[]){x, w, y});
    ref_conv(x, w, B ? b : NULL, want, c->N, c->C, c->H, c->W, c->K, c->R, c->S, &c->p, c->OH, c->OW);
    u_close("conv2d", y, want, ny);
    free(x), free(w), free(b), free(y), free(want);
    arena_free(a);
  }
  /* refusals */
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[4] = {1, 3, 4, 4}, ws[4] = {2, 2, 3, 3}, big[4] = {2, 3, 7, 7};
  TeTensor *X = u_ph(a, "X", DT_F32, 4, xs);
  TopiConvParams p = {{1, 1}, {0, 0, 0, 0}, {1, 1}, 1};
  U_EXPECT_ERR(topi_conv2d_onnx(a, "Y", X, u_ph(a, "W", DT_F32, 4, ws), NULL, &p, &err), err,
               "Conv: X has 3 channels");
  U_EXPECT_ERR(topi_conv2d_onnx(a, "Y", X, u_ph(a, "W2", DT_F32, 4, big), NULL, &p, &err), err,
               "larger than the padded input");
  arena_free(a);
}

/* NCHWc convolution = layout transform of the NCHW one. */
static void test_conv2d_nchwc(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  enum { N = 1, C = 8, H = 6, W = 5, K = 8, R = 3, S = 3, CB = 4, KB = 2 };
  int64_t xs[4] = {N, C, H, W}, ws[4] = {K, C, R, S}, bs[1] = {K};
  TopiConvParams p = {{2, 1}, {1, 0, 1, 2}, {1, 1}, 1};
  TeTensor *X = u_ph(a, "X", DT_F32, 4, xs), *Wt = u_ph(a, "W", DT_F32, 4, ws),
           *B = u_ph(a, "B", DT_F32, 1, bs);
  TeTensor *Xc = topi_nchw_to_nchwc(a, "Xc", X, CB, &err);
  TeTensor *Wc = topi_weight_to_kcrsck(a, "Wc", Wt, CB, KB, &err);
  assert_non_null(Xc), assert_non_null(Wc);
  TeTensor *Yc = topi_conv2d_nchwc_onnx(a, "Yc", Xc, Wc, B, &p, &err);
  if (!Yc) fail_msg("%s", err.msg);
  TeTensor *Y = topi_nchwc_to_nchw(a, "Y", Yc, &err);
  assert_non_null(Y);
  int64_t OH = Y->shape[2], OW = Y->shape[3], ny = u_numel(Y);
  assert_int_equal(OH, 3), assert_int_equal(OW, 5);
  float *x = u_rand_f32(N * C * H * W, 3, -1, 1), *w = u_rand_f32(K * C * R * S, 4, -1, 1),
        *b = u_rand_f32(K, 5, -1, 1);
  float *y = malloc(sizeof(float) * (size_t)ny), *want = malloc(sizeof(float) * (size_t)ny);
  u_run(a, (TeTensor *[]){X, Wt, B, Y}, 4, (void *[]){x, w, b, y});
  ref_conv(x, w, b, want, N, C, H, W, K, R, S, &p, OH, OW);
  u_close("conv2d_nchwc", y, want, ny);
  U_EXPECT_ERR(topi_nchw_to_nchwc(a, "Xd", X, 3, &err), err, "divisible");
  free(x), free(w), free(b), free(y), free(want);
  arena_free(a);
}

/* Pooling reference, straight from the ONNX / ORT definition. */
static void ref_pool(bool is_max, const float *x, float *y, int64_t NC, int64_t H, int64_t W,
                     const TopiPoolParams *p, int64_t OH, int64_t OW) {
  int64_t sh = p->strides[0] ? p->strides[0] : 1, sw = p->strides[1] ? p->strides[1] : 1;
  int64_t dh = p->dilations[0] ? p->dilations[0] : 1, dw = p->dilations[1] ? p->dilations[1] : 1;
  for (int64_t nc = 0; nc < NC; nc++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t hs = oh * sh - p->pads[0], ws = ow * sw - p->pads[1];
        double acc = is_max ? -INFINITY : 0;
        int64_t cnt = 0;
        for (int64_t r = 0; r < p->kernel[0]; r++)
          for (int64_t q = 0; q < p->kernel[1]; q++) {
            int64_t ih = hs + r * dh, iw = ws + q * dw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            double v = x[(nc * H + ih) * W + iw];
            acc = is_max ? fmax(acc, v) : acc + v;
            cnt++;
          }
        if (!is_max) {
          if (p->count_include_pad) {
            int64_t he = hs + p->kernel[0], we = ws + p->kernel[1];
            if (he > H + p->pads[2]) he = H + p->pads[2];
            if (we > W + p->pads[3]) we = W + p->pads[3];
            cnt = (he - hs) * (we - ws);
          }
          acc /= (double)cnt;
        }
        y[(nc * OH + oh) * OW + ow] = (float)acc;
      }
}

typedef struct PoolCase {
  bool is_max;
  int64_t H, W;
  TopiPoolParams p;
  int64_t OH, OW;
} PoolCase;

static void test_pool2d(void **state) {
  (void)state;
  const PoolCase cases[] = {
      {true, 8, 8, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false}, 4, 4},
      {true, 7, 7, {{3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false}, 3, 3},
      {true, 6, 6, {{3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false}, 3, 3}, /* ceil adds a window */
      {true, 9, 8, {{2, 3}, {1, 2}, {1, 0, 0, 1}, {2, 1}, false, false}, 8, 4},
      {false, 7, 7, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false}, 4, 4},
      {false, 7, 7, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, true}, 4, 4},
      {false, 6, 6, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, true}, 4, 4},
      {false, 6, 5, {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false}, 3, 3},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const PoolCase *c = &cases[ci];
    Arena *a = arena_new();
    LoomError err = {0};
    int64_t xs[4] = {2, 3, c->H, c->W};
    TeTensor *X = u_ph(a, "X", DT_F32, 4, xs);
    TeTensor *Y = topi_pool2d_onnx(a, "Y", c->is_max ? TOPI_POOL_MAX : TOPI_POOL_AVG, X, &c->p, &err);
    if (!Y) fail_msg("case %zu: %s", ci, err.msg);
    if (Y->shape[2] != c->OH || Y->shape[3] != c->OW)
      fail_msg("case %zu: output %lldx%lld, want %lldx%lld", ci, (long long)Y->shape[2],
               (long long)Y->shape[3], (long long)c->OH, (long long)c->OW);
    int64_t ny = u_numel(Y);
    float *x = u_rand_f32(u_numel(X), 7 + (uint32_t)ci, -1, 1);
    float *y = malloc(sizeof(float) * (size_t)ny), *want = malloc(sizeof(float) * (size_t)ny);
    u_run(a, (TeTensor *[]){X, Y}, 2, (void *[]){x, y});
    ref_pool(c->is_max, x, want, 6, c->H, c->W, &c->p, c->OH, c->OW);
    u_close("pool", y, want, ny);
    free(x), free(y), free(want);
    arena_free(a);
  }
}

static void test_global_pool(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[4] = {2, 3, 4, 5};
  TeTensor *X = u_ph(a, "X", DT_F32, 4, xs);
  TeTensor *Mx = topi_global_pool(a, "Mx", TOPI_POOL_MAX, X, &err);
  TeTensor *Av = topi_global_pool(a, "Av", TOPI_POOL_AVG, X, &err);
  assert_non_null(Mx), assert_non_null(Av);
  assert_int_equal(Av->ndim, 4), assert_int_equal(Av->shape[2], 1), assert_int_equal(Av->shape[3], 1);
  float *x = u_rand_f32(120, 3, -2, 2), mx[6], av[6], wmx[6], wav[6];
  u_run(a, (TeTensor *[]){X, Mx, Av}, 3, (void *[]){x, mx, av});
  for (int nc = 0; nc < 6; nc++) {
    double m = -INFINITY, s = 0;
    for (int i = 0; i < 20; i++) m = fmax(m, x[nc * 20 + i]), s += x[nc * 20 + i];
    wmx[nc] = (float)m, wav[nc] = (float)(s / 20);
  }
  u_close("global max", mx, wmx, 6);
  u_close("global avg", av, wav, 6);
  int64_t s2[2] = {2, 3};
  U_EXPECT_ERR(topi_global_pool(a, "G", TOPI_POOL_MAX, u_ph(a, "X2", DT_F32, 2, s2), &err), err,
               "GlobalMaxPool: X");
  free(x);
  arena_free(a);
}

static void test_gemm(void **state) {
  (void)state;
  enum { M = 3, N = 4, K = 5 };
  for (int v = 0; v < 4; v++) {
    Arena *a = arena_new();
    LoomError err = {0};
    bool ta = v & 1, tb = v & 2;
    int64_t as[2] = {ta ? K : M, ta ? M : K}, bs[2] = {tb ? N : K, tb ? K : N}, cs[1] = {N};
    TeTensor *A = u_ph(a, "A", DT_F32, 2, as), *B = u_ph(a, "B", DT_F32, 2, bs);
    TeTensor *C = v == 0 ? NULL : u_ph(a, "C", DT_F32, 1, cs);
    double alpha = v == 0 ? 1.0 : 0.5, beta = 2.0;
    TeTensor *Y = topi_gemm(a, "Y", A, B, C, alpha, beta, ta, tb, &err);
    if (!Y) fail_msg("%s", err.msg);
    float *x = u_rand_f32(M * K, 1, -1, 1), *w = u_rand_f32(K * N, 2, -1, 1), *c = u_rand_f32(N, 3, -1, 1);
    float y[M * N], want[M * N];
    if (C) u_run(a, (TeTensor *[]){A, B, C, Y}, 4, (void *[]){x, w, c, y});
    else u_run(a, (TeTensor *[]){A, B, Y}, 3, (void *[]){x, w, y});
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        double s = 0;
        for (int k = 0; k < K; k++) s += (double)x[ta ? k * M + i : i * K + k] * w[tb ? j * K + k : k * N + j];
        want[i * N + j] = (float)(alpha * s + (C ? beta * c[j] : 0));
      }
    u_close("gemm", y, want, M * N);
    U_EXPECT_ERR(topi_gemm(a, "Z", A, A, NULL, 1, 1, ta, ta, &err), err, "Gemm: inner extents");
    free(x), free(w), free(c);
    arena_free(a);
  }
}

/* numpy.matmul for the shapes listed, against a loop over broadcast batches. */
static void test_matmul_nd(void **state) {
  (void)state;
  struct { int ra, rb; int64_t as[4], bs[4]; int ro; int64_t os[4]; } cases[] = {
      {2, 2, {3, 4}, {4, 5}, 2, {3, 5}},
      {3, 2, {2, 3, 4}, {4, 5}, 3, {2, 3, 5}},
      {4, 3, {2, 1, 3, 4}, {3, 4, 2}, 4, {2, 3, 3, 2}},
      {1, 3, {4}, {2, 4, 5}, 2, {2, 5}},
      {3, 1, {2, 3, 4}, {4}, 2, {2, 3}},
      {1, 1, {4}, {4}, 0, {0}},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *A = u_ph(a, "A", DT_F32, cases[ci].ra, cases[ci].as);
    TeTensor *B = u_ph(a, "B", DT_F32, cases[ci].rb, cases[ci].bs);
    TeTensor *Y = topi_matmul_nd(a, "Y", A, B, &err);
    if (!Y) fail_msg("case %zu: %s", ci, err.msg);
    assert_int_equal(Y->ndim, cases[ci].ro);
    for (int d = 0; d < Y->ndim; d++) assert_int_equal(Y->shape[d], cases[ci].os[d]);
    int64_t na = u_numel(A), nb = u_numel(B), ny = u_numel(Y);
    float *x = u_rand_f32(na, 1, -1, 1), *w = u_rand_f32(nb, 2, -1, 1);
    float *y = malloc(sizeof(float) * (size_t)ny), *want = malloc(sizeof(float) * (size_t)ny);
    u_run(a, (TeTensor *[]){A, B, Y}, 3, (void *[]){x, w, y});
    /* Promote to >= 2-D, broadcast the batch, multiply. */
    int ra = A->ndim, rb = B->ndim;
    int64_t K = A->shape[ra - 1], M = ra >= 2 ? A->shape[ra - 2] : 1, N = rb >= 2 ? B->shape[rb - 1] : 1;
    int64_t nbatch = ny / (M * N);
    int nbr = ra - 2 > rb - 2 ? ra - 2 : rb - 2;
    if (nbr < 0) nbr = 0;
    int64_t bshape[4];
    for (int d = 0; d < nbr; d++) bshape[d] = Y->shape[d];
    for (int64_t bt = 0; bt < nbatch; bt++) {
      int64_t bi[4];
      u_unravel(bt, nbr, bshape, bi);
      int64_t aoff = ra > 2 ? u_bcast_offset(ra - 2, A->shape, nbr, bi) : 0;
      int64_t boff = rb > 2 ? u_bcast_offset(rb - 2, B->shape, nbr, bi) : 0;
      for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
          double s = 0;
          for (int64_t k = 0; k < K; k++)
            s += (double)x[aoff * M * K + m * K + k] * w[boff * K * N + k * N + n];
          want[bt * M * N + m * N + n] = (float)s;
        }
    }
    u_close("matmul", y, want, ny);
    free(x), free(w), free(y), free(want);
    arena_free(a);
  }
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t s1[2] = {2, 3}, s2[2] = {4, 2};
  U_EXPECT_ERR(topi_matmul_nd(a, "Y", u_ph(a, "A", DT_F32, 2, s1), u_ph(a, "B", DT_F32, 2, s2), &err),
               err, "MatMul: inner extents differ");
  arena_free(a);
}

static void test_reduce(void **state) {
  (void)state;
  int64_t xs[3] = {3, 4, 5};
  struct { TopiReduceOp op; int n; int64_t axes[3]; bool keep; } cases[] = {
      {TOPI_REDUCE_SUM, 1, {1}, true},  {TOPI_REDUCE_MEAN, 2, {0, -1}, false},
      {TOPI_REDUCE_MAX, 1, {-1}, false}, {TOPI_REDUCE_MEAN, 0, {0}, true},
      {TOPI_REDUCE_SUM, 0, {0}, false},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *X = u_ph(a, "X", DT_F32, 3, xs);
    TeTensor *Y = topi_reduce(a, "Y", cases[ci].op, X, cases[ci].axes, cases[ci].n, cases[ci].keep,
                              false, &err);
    if (!Y) fail_msg("%s", err.msg);
    float *x = u_rand_f32(60, 3 + (uint32_t)ci, -2, 2);
    int64_t ny = u_numel(Y);
    float y[60], want[60];
    u_run(a, (TeTensor *[]){X, Y}, 2, (void *[]){x, y});
    bool red[3] = {cases[ci].n == 0, cases[ci].n == 0, cases[ci].n == 0};
    for (int i = 0; i < cases[ci].n; i++) red[(cases[ci].axes[i] + 3) % 3] = true;
    double acc[60];
    int cnt[60] = {0};
    for (int i = 0; i < 60; i++) acc[i] = cases[ci].op == TOPI_REDUCE_MAX ? -INFINITY : 0;
    int64_t rshape[3];
    for (int d = 0; d < 3; d++) rshape[d] = red[d] ? 1 : xs[d];
    for (int i = 0; i < 60; i++) {
      int64_t idx[3];
      u_unravel(i, 3, xs, idx);
      for (int d = 0; d < 3; d++)
        if (red[d]) idx[d] = 0;
      int64_t o = u_offset(3, rshape, idx); /* same order with or without kept 1s */
      acc[o] = cases[ci].op == TOPI_REDUCE_MAX ? fmax(acc[o], x[i]) : acc[o] + x[i];
      cnt[o]++;
    }
    int64_t expect_rank = 0;
    for (int d = 0; d < 3; d++) expect_rank += cases[ci].keep || !red[d];
    assert_int_equal(Y->ndim, expect_rank);
    for (int64_t o = 0; o < ny; o++) want[o] = (float)(cases[ci].op == TOPI_REDUCE_MEAN ? acc[o] / cnt[o] : acc[o]);
    u_close("reduce", y, want, ny);
    free(x);
    arena_free(a);
  }
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *X = u_ph(a, "X", DT_F32, 3, xs);
  int64_t bad[1] = {3};
  U_EXPECT_ERR(topi_reduce(a, "Y", TOPI_REDUCE_SUM, X, bad, 1, true, false, &err), err,
               "ReduceSum: axis 3 is out of range");
  /* noop_with_empty_axes copies */
  TeTensor *C = topi_reduce(a, "C", TOPI_REDUCE_SUM, X, NULL, 0, true, true, &err);
  assert_non_null(C);
  assert_int_equal(C->ndim, 3);
  arena_free(a);
}

static void test_softmax_layernorm(void **state) {
  (void)state;
  int64_t xs[3] = {2, 5, 3};
  for (int axis = -3; axis < 3; axis++) {
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *X = u_ph(a, "X", DT_F32, 3, xs);
    TeTensor *Y = topi_softmax_axis(a, "Y", X, axis, &err);
    if (!Y) fail_msg("%s", err.msg);
    float *x = u_rand_f32(30, 11 + (uint32_t)(axis + 3), -3, 3), y[30], want[30];
    u_run(a, (TeTensor *[]){X, Y}, 2, (void *[]){x, y});
    int ax = (axis + 3) % 3;
    for (int i = 0; i < 30; i++) {
      int64_t idx[3];
      u_unravel(i, 3, xs, idx);
      double m = -INFINITY, s = 0;
      for (int64_t k = 0; k < xs[ax]; k++) {
        idx[ax] = k;
        m = fmax(m, x[u_offset(3, xs, idx)]);
      }
      for (int64_t k = 0; k < xs[ax]; k++) {
        idx[ax] = k;
        s += exp(x[u_offset(3, xs, idx)] - m);
      }
      want[i] = (float)(exp(x[i] - m) / s);
    }
    u_close("softmax", y, want, 30);
    free(x);
    arena_free(a);
  }
  for (int axis = 1; axis <= 2; axis++) {
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *X = u_ph(a, "X", DT_F32, 3, xs);
    int64_t inner = axis == 1 ? 15 : 3;
    TeTensor *S = u_ph(a, "S", DT_F32, 3 - axis, xs + axis), *B = u_ph(a, "B", DT_F32, 3 - axis, xs + axis);
    TeTensor *Y = topi_layer_norm_onnx(a, "Y", X, S, axis == 1 ? B : NULL, axis, 1e-5, &err);
    if (!Y) fail_msg("%s", err.msg);
    float *x = u_rand_f32(30, 21, -3, 3), *s = u_rand_f32(inner, 22, 0.5f, 1.5f),
          *b = u_rand_f32(inner, 23, -1, 1), y[30], want[30];
    if (axis == 1) u_run(a, (TeTensor *[]){X, S, B, Y}, 4, (void *[]){x, s, b, y});
    else u_run(a, (TeTensor *[]){X, S, Y}, 3, (void *[]){x, s, y});
    for (int64_t o = 0; o < 30 / inner; o++) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < inner; i++) mean += x[o * inner + i];
      mean /= (double)inner;
      for (int64_t i = 0; i < inner; i++) var += (x[o * inner + i] - mean) * (x[o * inner + i] - mean);
      var /= (double)inner;
      for (int64_t i = 0; i < inner; i++)
        want[o * inner + i] = (float)((x[o * inner + i] - mean) / sqrt(var + 1e-5) * s[i] + (axis == 1 ? b[i] : 0));
    }
    u_close("layer_norm", y, want, 30);
    U_EXPECT_ERR(topi_layer_norm_onnx(a, "Z", X, X, NULL, 5, 1e-5, &err), err,
                 "LayerNormalization: axis 5");
    free(x), free(s), free(b);
    arena_free(a);
  }
}

/* Fusion composes at the te level: ops chained into one PrimFunc. Conv +
 * bias + Relu + residual Add, and BERT's decomposed layer norm
 * (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div) with broadcasting. */
static void test_composition(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[4] = {1, 2, 5, 5}, ws[4] = {2, 2, 3, 3}, bs[1] = {2};
  TopiConvParams p = {{1, 1}, {1, 1, 1, 1}, {1, 1}, 1};
  TeTensor *X = u_ph(a, "X", DT_F32, 4, xs), *Wt = u_ph(a, "W", DT_F32, 4, ws), *B = u_ph(a, "B", DT_F32, 1, bs);
  TeTensor *C = topi_conv2d_onnx(a, "conv", X, Wt, B, &p, &err);
  TeTensor *R = C ? topi_unary(a, "relu", TOPI_RELU, C, NULL, &err) : NULL;
  TeTensor *Y = R ? topi_binary(a, "add", TOPI_ADD, R, X, &err) : NULL;
  if (!Y) fail_msg("%s", err.msg);
  float *x = u_rand_f32(50, 1, -1, 1), *w = u_rand_f32(36, 2, -1, 1), *b = u_rand_f32(2, 3, -1, 1);
  float y[50], want[50];
  u_run(a, (TeTensor *[]){X, Wt, B, Y}, 4, (void *[]){x, w, b, y});
  ref_conv(x, w, b, want, 1, 2, 5, 5, 2, 3, 3, &p, 5, 5);
  for (int i = 0; i < 50; i++) want[i] = fmaxf(want[i], 0) + x[i];
  u_close("conv+relu+add", y, want, 50);

  int64_t hs[3] = {2, 3, 8}, one[1] = {-1};
  TeTensor *H = u_ph(a, "H", DT_F32, 3, hs);
  TeTensor *Two = u_ph(a, "Two", DT_F32, 0, NULL), *Eps = u_ph(a, "Eps", DT_F32, 0, NULL);
  TeTensor *M = topi_reduce(a, "mean", TOPI_REDUCE_MEAN, H, one, 1, true, false, &err);
  TeTensor *D = topi_binary(a, "sub", TOPI_SUB, H, M, &err);
  TeTensor *Sq = topi_binary(a, "pow", TOPI_POW, D, Two, &err);
  TeTensor *V = topi_reduce(a, "var", TOPI_REDUCE_MEAN, Sq, one, 1, true, false, &err);
  TeTensor *Ve = topi_binary(a, "add_eps", TOPI_ADD, V, Eps, &err);
  TeTensor *Sd = topi_unary(a, "sqrt", TOPI_SQRT, Ve, NULL, &err);
  TeTensor *N = topi_binary(a, "div", TOPI_DIV, D, Sd, &err);
  if (!N) fail_msg("%s", err.msg);
  float *h = u_rand_f32(48, 4, -2, 2), two = 2.0f, eps = 1e-5f, n[48], wn[48];
  u_run(a, (TeTensor *[]){H, Two, Eps, N}, 4, (void *[]){h, &two, &eps, n});
  for (int r = 0; r < 6; r++) {
    double mean = 0, var = 0;
    for (int i = 0; i < 8; i++) mean += h[r * 8 + i];
    mean /= 8;
    for (int i = 0; i < 8; i++) var += (h[r * 8 + i] - mean) * (h[r * 8 + i] - mean);
    var /= 8;
    for (int i = 0; i < 8; i++) wn[r * 8 + i] = (float)((h[r * 8 + i] - mean) / sqrt(var + 1e-5));
  }
  u_close("decomposed layer norm", n, wn, 48);
  free(x), free(w), free(b), free(h);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv2d),        cmocka_unit_test(test_conv2d_nchwc),
      cmocka_unit_test(test_pool2d),        cmocka_unit_test(test_global_pool),
      cmocka_unit_test(test_gemm),          cmocka_unit_test(test_matmul_nd),
      cmocka_unit_test(test_reduce),        cmocka_unit_test(test_softmax_layernorm),
      cmocka_unit_test(test_composition),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
