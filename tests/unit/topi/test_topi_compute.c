/* The operators the other tests schedule and build (tests/fixtures/op_funcs.h:
 * the compiler's own topi ops on placeholders), run by the reference
 * interpreter on random inputs, against loops written out here in plain C.
 * f32 results must agree to 1e-5 relative; i32 results exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures/op_funcs.h"
#include "tir/interp.h"

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

static float *rand_f32(int64_t n, uint32_t seed) {
  float *x = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++) x[i] = (float)(lcg(&seed) >> 8) / (float)(1 << 24) * 2.0f - 1.0f;
  return x;
}

static int32_t *rand_i32(int64_t n, uint32_t seed) {
  int32_t *x = malloc(sizeof(int32_t) * (size_t)n);
  for (int64_t i = 0; i < n; i++) x[i] = (int32_t)(lcg(&seed) % 41) - 20;
  return x;
}

static void assert_close(const float *got, const float *want, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float tol = 1e-5f * fabsf(want[i]) + 1e-6f;
    if (!(fabsf(got[i] - want[i]) <= tol)) {
      fail_msg("element %lld: got %.9g, want %.9g", (long long)i, (double)got[i], (double)want[i]);
    }
  }
}

/* Runs f on data (params in order) and checks the interpreter said OK. */
static void run(const PrimFunc *f, void **data) {
  LoomError err = {0};
  loom_status st = tir_interpret(f, data, &err);
  if (st != LOOM_OK) fail_msg("interpreter: %s", err.msg);
}

static bool has_block(const PrimFunc *f, const char *name) { return stmt_find_block(f->body, name) != NULL; }

static void test_matmul(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  enum { M = 5, N = 7, K = 9 };
  PrimFunc *f = opfunc_matmul(a, M, N, K, DT_F32, &err);
  assert_non_null(f);
  assert_true(has_block(f, "C"));
  float *A = rand_f32(M * K, 1), *B = rand_f32(K * N, 2), C[M * N], R[M * N];
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float s = 0;
      for (int k = 0; k < K; k++) s += A[i * K + k] * B[k * N + j];
      R[i * N + j] = s;
    }
  run(f, (void *[]){A, B, C});
  assert_close(C, R, M * N);
  free(A);
  free(B);

  PrimFunc *fi = opfunc_matmul(a, M, N, K, DT_I32, &err);
  assert_non_null(fi);
  int32_t *Ai = rand_i32(M * K, 3), *Bi = rand_i32(K * N, 4), Ci[M * N], Ri[M * N];
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      int32_t s = 0;
      for (int k = 0; k < K; k++) s += Ai[i * K + k] * Bi[k * N + j];
      Ri[i * N + j] = s;
    }
  run(fi, (void *[]){Ai, Bi, Ci});
  assert_memory_equal(Ci, Ri, sizeof Ri);
  free(Ai);
  free(Bi);
  assert_null(opfunc_matmul(a, 2, 2, 2, DT_BOOL1, &err));
  assert_int_equal(err.status, LOOM_ERR_UNSUPPORTED);
  assert_null(opfunc_matmul(a, 2, 0, 2, DT_F32, &err));
  arena_free(a);
}

static void test_batch_matmul(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  enum { Bt = 2, M = 3, N = 4, K = 5 };
  PrimFunc *f = opfunc_batch_matmul(a, Bt, M, N, K, &err);
  assert_non_null(f);
  float *A = rand_f32(Bt * M * K, 5), *B = rand_f32(Bt * K * N, 6), C[Bt * M * N], R[Bt * M * N];
  for (int b = 0; b < Bt; b++)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        float s = 0;
        for (int k = 0; k < K; k++) s += A[(b * M + i) * K + k] * B[(b * K + k) * N + j];
        R[(b * M + i) * N + j] = s;
      }
  run(f, (void *[]){A, B, C});
  assert_close(C, R, Bt * M * N);
  free(A);
  free(B);
  arena_free(a);
}

/* Reference NCHW convolution, zero padding, accumulating c, r, s in order. */
static void ref_conv(const OpfuncConv2d *p, const float *x, const float *w, float *out, bool depthwise) {
  int64_t OH = opfunc_conv_out_extent(p->H, p->R, p->stride, p->pad);
  int64_t OW = opfunc_conv_out_extent(p->W, p->S, p->stride, p->pad);
  int64_t K = depthwise ? p->C : p->K;
  for (int64_t n = 0; n < p->N; n++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          float s = 0;
          for (int64_t c = 0; c < (depthwise ? 1 : p->C); c++)
            for (int64_t r = 0; r < p->R; r++)
              for (int64_t q = 0; q < p->S; q++) {
                int64_t ih = oh * p->stride + r - p->pad, iw = ow * p->stride + q - p->pad;
                int64_t ic = depthwise ? k : c;
                float v = ih >= 0 && ih < p->H && iw >= 0 && iw < p->W
                              ? x[((n * p->C + ic) * p->H + ih) * p->W + iw]
                              : 0.0f;
                float wv = depthwise ? w[(k * p->R + r) * p->S + q] : w[((k * p->C + c) * p->R + r) * p->S + q];
                s += v * wv;
              }
          out[((n * K + k) * OH + oh) * OW + ow] = s;
        }
}

static void check_conv_nchw(const OpfuncConv2d *p) {
  Arena *a = arena_new();
  LoomError err = {0};
  PrimFunc *f = opfunc_conv2d_nchw(a, p, &err);
  if (!f) fail_msg("%s", err.msg);
  assert_true(has_block(f, "conv2d"));
  assert_int_equal(has_block(f, "conv2d_pad"), p->pad > 0);
  int64_t OH = opfunc_conv_out_extent(p->H, p->R, p->stride, p->pad);
  int64_t OW = opfunc_conv_out_extent(p->W, p->S, p->stride, p->pad);
  int64_t n_out = p->N * p->K * OH * OW;
  float *x = rand_f32(p->N * p->C * p->H * p->W, 11), *w = rand_f32(p->K * p->C * p->R * p->S, 12);
  float *out = malloc(sizeof(float) * (size_t)n_out), *ref = malloc(sizeof(float) * (size_t)n_out);
  ref_conv(p, x, w, ref, false);
  run(f, (void *[]){x, w, out});
  assert_close(out, ref, n_out);
  free(x);
  free(w);
  free(out);
  free(ref);
  arena_free(a);
}

static void test_conv2d_nchw(void **state) {
  (void)state;
  check_conv_nchw(&(OpfuncConv2d){.N = 1, .C = 3, .H = 6, .W = 5, .K = 4, .R = 3, .S = 3, .stride = 1, .pad = 1});
  check_conv_nchw(&(OpfuncConv2d){.N = 2, .C = 2, .H = 7, .W = 7, .K = 3, .R = 3, .S = 2, .stride = 2, .pad = 0});
  Arena *a = arena_new();
  LoomError err = {0};
  assert_null(opfunc_conv2d_nchw(a, &(OpfuncConv2d){1, 1, 2, 2, 1, 5, 5, 1, 0}, &err));
  assert_non_null(strstr(err.msg, "larger than the padded input"));
  arena_free(a);
}

static void test_conv2d_nchwc(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  OpfuncConv2d p = {.N = 1, .C = 4, .H = 5, .W = 6, .K = 6, .R = 3, .S = 3, .stride = 1, .pad = 1};
  const int64_t cb = 2, kb = 3, CO = p.C / cb, KO = p.K / kb;
  PrimFunc *f = opfunc_conv2d_nchwc(a, &p, cb, kb, &err);
  if (!f) fail_msg("%s", err.msg);
  assert_true(has_block(f, "conv2d_NCHWc"));
  int64_t OH = 5, OW = 6;
  float *x = rand_f32(p.N * p.C * p.H * p.W, 21), *w = rand_f32(p.K * p.C * p.R * p.S, 22);
  float ref[1 * 6 * 5 * 6], out[1 * 6 * 5 * 6], refb[1 * 6 * 5 * 6];
  ref_conv(&p, x, w, ref, false);
  /* Pack data NCHW -> NCHWc and weight KCRS -> KCRSck. */
  float xb[1 * 4 * 5 * 6], wb[6 * 4 * 3 * 3];
  for (int64_t c = 0; c < p.C; c++)
    for (int64_t h = 0; h < p.H; h++)
      for (int64_t ww = 0; ww < p.W; ww++)
        xb[(((c / cb) * p.H + h) * p.W + ww) * cb + c % cb] = x[(c * p.H + h) * p.W + ww];
  for (int64_t k = 0; k < p.K; k++)
    for (int64_t c = 0; c < p.C; c++)
      for (int64_t r = 0; r < p.R; r++)
        for (int64_t s = 0; s < p.S; s++)
          wb[((((k / kb) * CO + c / cb) * p.R + r) * p.S + s) * cb * kb + (c % cb) * kb + k % kb] =
              w[((k * p.C + c) * p.R + r) * p.S + s];
  run(f, (void *[]){xb, wb, out});
  /* Unpack NKHWk -> NKHW. The blocked sum visits channels in the same order
   * (ico, ici) as the reference's c, so results agree to rounding. */
  for (int64_t k = 0; k < p.K; k++)
    for (int64_t h = 0; h < OH; h++)
      for (int64_t ww = 0; ww < OW; ww++)
        refb[(k * OH + h) * OW + ww] = out[(((k / kb) * OH + h) * OW + ww) * kb + k % kb];
  (void)KO;
  assert_close(refb, ref, p.K * OH * OW);
  free(x);
  free(w);
  assert_null(opfunc_conv2d_nchwc(a, &p, 3, kb, &err));
  assert_non_null(strstr(err.msg, "cb = 3"));
  arena_free(a);
}

static void test_depthwise(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  OpfuncConv2d p = {.N = 1, .C = 3, .H = 7, .W = 6, .R = 3, .S = 3, .stride = 2, .pad = 1};
  PrimFunc *f = opfunc_depthwise_conv2d_nchw(a, &p, &err);
  if (!f) fail_msg("%s", err.msg);
  assert_true(has_block(f, "depthwise_conv2d"));
  int64_t OH = opfunc_conv_out_extent(p.H, p.R, p.stride, p.pad), OW = opfunc_conv_out_extent(p.W, p.S, p.stride, p.pad);
  float *x = rand_f32(p.C * p.H * p.W, 31), *w = rand_f32(p.C * p.R * p.S, 32);
  float *out = malloc(sizeof(float) * (size_t)(p.C * OH * OW)), *ref = malloc(sizeof(float) * (size_t)(p.C * OH * OW));
  ref_conv(&p, x, w, ref, true);
  run(f, (void *[]){x, w, out});
  assert_close(out, ref, p.C * OH * OW);
  free(x);
  free(w);
  free(out);
  free(ref);
  arena_free(a);
}

static void check_pool(TopiPoolKind kind, bool include_pad) {
  Arena *a = arena_new();
  LoomError err = {0};
  enum { N = 1, C = 2, H = 7, W = 6, KS = 3, ST = 2, PD = 1 };
  PrimFunc *f = opfunc_pool2d(a, kind, N, C, H, W, KS, ST, PD, include_pad, &err);
  if (!f) fail_msg("%s", err.msg);
  assert_true(has_block(f, "pool"));
  assert_int_equal(has_block(f, "pool_sum"), kind == TOPI_POOL_AVG);
  int64_t OH = opfunc_conv_out_extent(H, KS, ST, PD), OW = opfunc_conv_out_extent(W, KS, ST, PD);
  float *x = rand_f32(N * C * H * W, 41);
  float out[N * C * 4 * 3], ref[N * C * 4 * 3];
  assert_int_equal(OH * OW, 12);
  for (int c = 0; c < C; c++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        float m = -INFINITY, s = 0;
        int cnt = 0;
        for (int r = 0; r < KS; r++)
          for (int q = 0; q < KS; q++) {
            int ih = oh * ST + r - PD, iw = ow * ST + q - PD;
            bool in = ih >= 0 && ih < H && iw >= 0 && iw < W;
            float v = in ? x[(c * H + ih) * W + iw] : (kind == TOPI_POOL_MAX ? -INFINITY : 0.0f);
            m = v > m ? v : m;
            s += v;
            cnt += in;
          }
        ref[(c * OH + oh) * OW + ow] =
            kind == TOPI_POOL_MAX ? m : s / (float)(include_pad ? KS * KS : cnt);
      }
  run(f, (void *[]){x, out});
  assert_close(out, ref, C * OH * OW);
  free(x);
  arena_free(a);
}

static void test_pool(void **state) {
  (void)state;
  check_pool(TOPI_POOL_MAX, false);
  check_pool(TOPI_POOL_AVG, false);
  check_pool(TOPI_POOL_AVG, true);
  Arena *a = arena_new();
  LoomError err = {0};
  assert_null(opfunc_pool2d(a, TOPI_POOL_MAX, 1, 1, 4, 4, 7, 1, 1, false, &err));
  assert_non_null(strstr(err.msg, "larger than the padded input"));
  arena_free(a);
}

static void test_softmax(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  const int64_t shape[3] = {2, 3, 5};
  PrimFunc *f = opfunc_softmax(a, 3, shape, &err);
  if (!f) fail_msg("%s", err.msg);
  const char *stages[4] = {"softmax_max", "softmax_exp", "softmax_sum", "softmax"};
  for (int i = 0; i < 4; i++) assert_true(has_block(f, stages[i]));
  assert_int_equal(primfunc_root(f)->n_alloc, 3);
  float *x = rand_f32(30, 51), out[30], ref[30];
  for (int i = 0; i < 30; i++) x[i] *= 4;
  for (int r = 0; r < 6; r++) {
    float m = -INFINITY, s = 0, e[5];
    for (int k = 0; k < 5; k++) m = x[r * 5 + k] > m ? x[r * 5 + k] : m;
    for (int k = 0; k < 5; k++) s += (e[k] = expf(x[r * 5 + k] - m));
    for (int k = 0; k < 5; k++) ref[r * 5 + k] = e[k] / s;
  }
  run(f, (void *[]){x, out});
  assert_close(out, ref, 30);
  /* Rank 1: the max and sum are 0-d tensors. */
  PrimFunc *f1 = opfunc_softmax(a, 1, (int64_t[]){5}, &err);
  if (!f1) fail_msg("%s", err.msg);
  run(f1, (void *[]){x, out});
  assert_close(out, ref, 5);
  free(x);
  arena_free(a);
}

static void test_layer_norm(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  enum { R = 4, D = 6 };
  const float eps = 1e-5f;
  PrimFunc *f = opfunc_layer_norm(a, 2, (int64_t[]){R, D}, eps, &err);
  if (!f) fail_msg("%s", err.msg);
  assert_true(has_block(f, "layer_norm"));
  float *x = rand_f32(R * D, 61), *g = rand_f32(D, 62), *b = rand_f32(D, 63), out[R * D], ref[R * D];
  for (int r = 0; r < R; r++) {
    float s = 0, vs = 0;
    for (int k = 0; k < D; k++) s += x[r * D + k];
    float mean = s / (float)D;
    for (int k = 0; k < D; k++) vs += (x[r * D + k] - mean) * (x[r * D + k] - mean);
    float den = sqrtf(vs / (float)D + eps);
    for (int k = 0; k < D; k++) ref[r * D + k] = (x[r * D + k] - mean) / den * g[k] + b[k];
  }
  run(f, (void *[]){x, g, b, out});
  assert_close(out, ref, R * D);
  free(x);
  free(g);
  free(b);
  arena_free(a);
}

static void test_transpose(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  const int64_t shape[3] = {2, 3, 4};
  const int perm[3] = {2, 0, 1}; /* out [4, 2, 3] */
  PrimFunc *f = opfunc_transpose(a, 3, shape, perm, &err);
  if (!f) fail_msg("%s", err.msg);
  float *x = rand_f32(24, 71), out[24], ref[24];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 3; k++) ref[(i * 2 + j) * 3 + k] = x[(j * 3 + k) * 4 + i];
  run(f, (void *[]){x, out});
  assert_memory_equal(out, ref, sizeof ref);
  free(x);
  assert_null(opfunc_transpose(a, 3, shape, (int[]){0, 0, 1}, &err));
  assert_non_null(strstr(err.msg, "perm"));
  arena_free(a);
}

static void test_broadcast_add(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  const int64_t sa[4] = {2, 3, 4, 5}, sb[4] = {1, 3, 1, 1};
  PrimFunc *f = opfunc_broadcast_add(a, 4, sa, sb, &err);
  if (!f) fail_msg("%s", err.msg);
  float *x = rand_f32(120, 81), *y = rand_f32(3, 82), out[120], ref[120];
  for (int i = 0; i < 120; i++) ref[i] = x[i] + y[(i / 20) % 3];
  run(f, (void *[]){x, y, out});
  assert_memory_equal(out, ref, sizeof ref);
  free(x);
  free(y);
  assert_null(opfunc_broadcast_add(a, 2, (int64_t[]){2, 3}, (int64_t[]){2, 4}, &err));
  assert_non_null(strstr(err.msg, "do not broadcast"));
  arena_free(a);
}

static void test_reduce_sum(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  enum { M = 6, N = 9 };
  const int64_t shape[2] = {M, N};
  float *x = rand_f32(M * N, 91);
  int32_t *xi = rand_i32(M * N, 92);
  for (int axis = 0; axis < 2; axis++) {
    PrimFunc *f = opfunc_reduce_sum(a, 2, shape, axis, DT_F32, &err);
    PrimFunc *fi = opfunc_reduce_sum(a, 2, shape, axis, DT_I32, &err);
    assert_non_null(f);
    assert_non_null(fi);
    int n_out = axis == 1 ? M : N, n_red = axis == 1 ? N : M;
    float out[N], ref[N];
    int32_t outi[N], refi[N];
    for (int o = 0; o < n_out; o++) {
      ref[o] = 0;
      refi[o] = 0;
      for (int k = 0; k < n_red; k++) {
        int idx = axis == 1 ? o * N + k : k * N + o;
        ref[o] += x[idx];
        refi[o] += xi[idx];
      }
    }
    run(f, (void *[]){x, out});
    assert_close(out, ref, n_out);
    run(fi, (void *[]){xi, outi});
    assert_memory_equal(outi, refi, sizeof(int32_t) * (size_t)n_out);
  }
  assert_null(opfunc_reduce_sum(a, 2, shape, 2, DT_F32, &err));
  free(x);
  free(xi);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul),       cmocka_unit_test(test_batch_matmul),
      cmocka_unit_test(test_conv2d_nchw),  cmocka_unit_test(test_conv2d_nchwc),
      cmocka_unit_test(test_depthwise),    cmocka_unit_test(test_pool),
      cmocka_unit_test(test_softmax),      cmocka_unit_test(test_layer_norm),
      cmocka_unit_test(test_transpose),    cmocka_unit_test(test_broadcast_add),
      cmocka_unit_test(test_reduce_sum),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
