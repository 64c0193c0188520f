/* Indexing, rearrangement, einsum and N-D window compute definitions
 * (op_index.c, op_space.c, op_einsum.c, op_conv_nd.c, op_pool.c) against
 * plain-C references through the interpreter, and their refusals. */
#include "ops_util.h"

/* ---- gathers and scatters ---- */

static void test_gather_scatter_elements(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t ds[2] = {3, 4}, is[2] = {2, 4};
  TeTensor *D = u_ph(a, "D", DT_F32, 2, ds), *I = u_ph(a, "I", DT_I64, 2, is), *U = u_ph(a, "U", DT_F32, 2, is);
  TeTensor *G = topi_gather_elements(a, "G", D, I, 0, &err);
  TeTensor *S = G ? topi_scatter_elements(a, "S", D, I, U, 0, TOPI_SCATTER_NONE, &err) : NULL;
  TeTensor *A = S ? topi_scatter_elements(a, "A", D, I, U, -2, TOPI_SCATTER_ADD, &err) : NULL;
  if (!A) fail_msg("%s", err.msg);
  float *d = u_rand_f32(12, 1, -1, 1), *u = u_rand_f32(8, 2, -1, 1), g[8], s[12], sa[12], wg[8], ws[12], wa[12];
  int64_t idx[8] = {0, -1, 2, 1, 2, 2, -3, 1}; /* column 1: 2 then 2 again (the second wins) */
  u_run(a, (TeTensor *[]){D, I, U, G, S, A}, 6, (void *[]){d, idx, u, g, s, sa});
  memcpy(ws, d, sizeof ws);
  memcpy(wa, d, sizeof wa);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      int64_t k = idx[i * 4 + j] < 0 ? idx[i * 4 + j] + 3 : idx[i * 4 + j];
      wg[i * 4 + j] = d[k * 4 + j];
      ws[k * 4 + j] = u[i * 4 + j];
      wa[k * 4 + j] += u[i * 4 + j];
    }
  u_close("gather_elements", g, wg, 8);
  u_close("scatter_elements", s, ws, 12);
  u_close("scatter_elements add", sa, wa, 12);
  free(d), free(u);
  arena_free(a);
}

static void test_gather_scatter_nd(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t ds[3] = {2, 3, 4}, gi[3] = {2, 2, 1}, si[2] = {3, 2}, us[2] = {3, 4};
  TeTensor *D = u_ph(a, "D", DT_F32, 3, ds), *GI = u_ph(a, "GI", DT_I64, 3, gi);
  TeTensor *SI = u_ph(a, "SI", DT_I64, 2, si), *U = u_ph(a, "U", DT_F32, 2, us);
  TeTensor *G = topi_gather_nd(a, "G", D, GI, 1, &err); /* [2, 2, 4]: D[b, GI[b, j, 0], :] */
  TeTensor *M = G ? topi_scatter_nd(a, "M", D, SI, U, TOPI_SCATTER_MUL, &err) : NULL;
  TeTensor *N = M ? topi_scatter_nd(a, "N", D, SI, U, TOPI_SCATTER_NONE, &err) : NULL;
  if (!N) fail_msg("%s", err.msg);
  float *d = u_rand_f32(24, 3, -2, 2), *u = u_rand_f32(12, 4, -2, 2), g[16], m[24], n[24], wg[16], wm[24], wn[24];
  int64_t gidx[4] = {2, -3, 1, 1}, sidx[6] = {1, 2, 0, 0, 1, -1}; /* rows (1,2), (0,0), (1,2) again */
  u_run(a, (TeTensor *[]){D, GI, SI, U, G, M, N}, 7, (void *[]){d, gidx, sidx, u, g, m, n});
  for (int b = 0; b < 2; b++)
    for (int j = 0; j < 2; j++) {
      int64_t r = gidx[b * 2 + j] < 0 ? gidx[b * 2 + j] + 3 : gidx[b * 2 + j];
      for (int c = 0; c < 4; c++) wg[(b * 2 + j) * 4 + c] = d[(b * 3 + r) * 4 + c];
    }
  memcpy(wm, d, sizeof wm);
  memcpy(wn, d, sizeof wn);
  for (int row = 0; row < 3; row++) {
    int64_t i0 = sidx[row * 2], i1 = sidx[row * 2 + 1] < 0 ? sidx[row * 2 + 1] + 3 : sidx[row * 2 + 1];
    for (int c = 0; c < 4; c++) {
      wm[(i0 * 3 + i1) * 4 + c] *= u[row * 4 + c];
      wn[(i0 * 3 + i1) * 4 + c] = u[row * 4 + c];
    }
  }
  u_close("gather_nd", g, wg, 16);
  u_close("scatter_nd mul", m, wm, 24);
  u_close("scatter_nd", n, wn, 24);
  free(d), free(u);
  arena_free(a);
}

/* ---- OneHot, Trilu, EyeLike, rearrangements ---- */

static void test_one_hot_trilu_eye(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t is[1] = {4}, vs[1] = {2}, xs[2] = {3, 5};
  TeTensor *I = u_ph(a, "I", DT_I64, 1, is), *V = u_ph(a, "V", DT_F32, 1, vs), *X = u_ph(a, "X", DT_F32, 2, xs);
  TeTensor *O = topi_one_hot(a, "O", I, 5, V, 0, &err); /* [5, 4] */
  TeTensor *T = O ? topi_trilu(a, "T", X, -1, false, &err) : NULL;
  TeTensor *E = T ? topi_eye_like(a, "E", X, DT_I32, 2, &err) : NULL;
  if (!E) fail_msg("%s", err.msg);
  int64_t idx[4] = {1, -1, 7, 0};
  float v[2] = {-3, 9}, *x = u_rand_f32(15, 5, -1, 1), o[20], t[15], wo[20], wt[15];
  int32_t e[15];
  u_run(a, (TeTensor *[]){I, V, X, O, T, E}, 6, (void *[]){idx, v, x, o, t, e});
  for (int k = 0; k < 5; k++)
    for (int i = 0; i < 4; i++) wo[k * 4 + i] = (idx[i] < 0 ? idx[i] + 5 : idx[i]) == k ? 9 : -3;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++) {
      wt[i * 5 + j] = j - i <= -1 ? x[i * 5 + j] : 0;
      assert_int_equal(e[i * 5 + j], j - i == 2);
    }
  u_close("one_hot", o, wo, 20);
  u_close("trilu", t, wt, 15);
  free(x);
  arena_free(a);
}

static void test_space(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[4] = {1, 8, 2, 3}, ls[1] = {3}, rs[2] = {4, 3};
  TeTensor *X = u_ph(a, "X", DT_F32, 4, xs);
  TeTensor *D = topi_depth_to_space(a, "D", X, 2, true, &err); /* [1, 2, 4, 6] */
  TeTensor *B = D ? topi_space_to_depth(a, "B", topi_depth_to_space(a, "Dd", X, 2, false, &err), 2, &err) : NULL;
  TeTensor *R = u_ph(a, "R", DT_F32, 2, rs), *L = u_ph(a, "L", DT_I64, 1, ls);
  TeTensor *S = B ? topi_reverse_sequence(a, "S", R, L, 1, 0, &err) : NULL;
  TeTensor *C = S ? topi_center_crop_pad(a, "C", R, (int64_t[]){2, 6}, NULL, 2, &err) : NULL;
  if (!C) fail_msg("%s", err.msg);
  float *x = u_rand_f32(48, 6, -1, 1), *r = u_rand_f32(12, 7, -1, 1), d[48], b[48], wd[48], s[12], ws[12], c[12], wc[12];
  int64_t lens[3] = {4, 1, 2};
  u_run(a, (TeTensor *[]){X, R, L, D, B, S, C}, 7, (void *[]){x, r, lens, d, b, s, c});
  for (int ch = 0; ch < 2; ch++)
    for (int h = 0; h < 4; h++)
      for (int w = 0; w < 6; w++) /* CRD: channel ch * 4 + (h % 2) * 2 + w % 2 */
        wd[(ch * 4 + h) * 6 + w] = x[((ch * 4 + (h % 2) * 2 + w % 2) * 2 + h / 2) * 3 + w / 2];
  for (int t = 0; t < 4; t++)
    for (int bb = 0; bb < 3; bb++) ws[t * 3 + bb] = r[(t < lens[bb] ? lens[bb] - 1 - t : t) * 3 + bb];
  for (int i = 0; i < 2; i++) /* rows 1..2 of 4; columns: 3 -> 6 puts 1 zero before, 2 after */
    for (int j = 0; j < 6; j++) wc[i * 6 + j] = j >= 1 && j < 4 ? r[(i + 1) * 3 + j - 1] : 0;
  u_close("depth_to_space", d, wd, 48);
  u_close("space_to_depth(depth_to_space)", b, x, 48);
  u_close("reverse_sequence", s, ws, 12);
  u_close("center_crop_pad", c, wc, 12);
  free(x), free(r);
  arena_free(a);
}

static void test_einsum(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t as[3] = {2, 3, 4}, bs[3] = {2, 4, 5}, ss[2] = {3, 3};
  TeTensor *A = u_ph(a, "A", DT_F32, 3, as), *B = u_ph(a, "B", DT_F32, 3, bs), *Q = u_ph(a, "Q", DT_F32, 2, ss);
  TeTensor *M = topi_einsum(a, "M", "bij,bjk->bik", (const TeTensor *[]){A, B}, 2, &err);
  TeTensor *Dg = M ? topi_einsum(a, "Dg", "ii->i", (const TeTensor *[]){Q}, 1, &err) : NULL;
  TeTensor *T = Dg ? topi_einsum(a, "T", "ij->", (const TeTensor *[]){Q}, 1, &err) : NULL;
  if (!T) fail_msg("%s", err.msg);
  float *x = u_rand_f32(24, 8, -1, 1), *y = u_rand_f32(40, 9, -1, 1), *q = u_rand_f32(9, 10, -1, 1);
  float m[30], wm[30] = {0}, dg[3], t[1], wt[1] = {0};
  u_run(a, (TeTensor *[]){A, B, Q, M, Dg, T}, 6, (void *[]){x, y, q, m, dg, t});
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 3; i++)
      for (int k = 0; k < 5; k++)
        for (int j = 0; j < 4; j++) wm[(b * 3 + i) * 5 + k] += x[(b * 3 + i) * 4 + j] * y[(b * 4 + j) * 5 + k];
  for (int i = 0; i < 9; i++) wt[0] += q[i];
  u_close("einsum matmul", m, wm, 30);
  u_close("einsum diagonal", dg, (float[]){q[0], q[4], q[8]}, 3);
  u_close("einsum sum", t, wt, 1);
  free(x), free(y), free(q);
  arena_free(a);
}

/* ---- N-D windows ---- */

/* y[n, k, o...] = sum x[n, c, o*s + r*d - pb] w[k, c, r...] over 1-D or 3-D
 * (cubes of extent e, kernel r), no groups. */
static void ref_conv_nd(const float *x, const float *w, float *y, int nsp, int64_t C, int64_t K, int64_t e, int64_t r,
                        int64_t s, int64_t d, int64_t pb, int64_t o) {
  int64_t osz = 1, ksz = 1, isz = 1;
  for (int i = 0; i < nsp; i++) osz *= o, ksz *= r, isz *= e;
  for (int64_t k = 0; k < K; k++)
    for (int64_t p = 0; p < osz; p++) {
      double acc = 0;
      for (int64_t c = 0; c < C; c++)
        for (int64_t q = 0; q < ksz; q++) {
          int64_t off = 0, pp = p, qq = q, stride = 1;
          bool in = true;
          for (int i = 0; i < nsp; i++) {
            int64_t pos = (pp % o) * s + (qq % r) * d - pb;
            in &= pos >= 0 && pos < e;
            off += pos * stride, stride *= e, pp /= o, qq /= r;
          }
          if (in) acc += (double)x[c * isz + off] * w[(k * C + c) * ksz + q];
        }
      y[k * osz + p] = (float)acc;
    }
}

static void test_conv_nd(void **state) {
  (void)state;
  for (int nsp = 1; nsp <= 3; nsp += 2) {
    Arena *a = arena_new();
    LoomError err = {0};
    int64_t e = 5, r = 3, xs[5] = {1, 2, e, e, e}, ws[5] = {3, 2, r, r, r};
    TopiWindowParams p = {.nsp = nsp};
    for (int i = 0; i < nsp; i++) p.strides[i] = 2, p.dilations[i] = 1, p.pads[i] = 1, p.pads[nsp + i] = 1;
    TeTensor *X = u_ph(a, "X", DT_F32, 2 + nsp, xs), *W = u_ph(a, "W", DT_F32, 2 + nsp, ws);
    TeTensor *Y = topi_conv_nd_onnx(a, "Y", X, W, NULL, &p, &err);
    if (!Y) fail_msg("%s", err.msg);
    int64_t o = Y->shape[2], nx = u_numel(X), nw = u_numel(W), ny = u_numel(Y);
    assert_int_equal(o, 3);
    float *x = u_rand_f32(nx, 11, -1, 1), *w = u_rand_f32(nw, 12, -1, 1), *y = malloc(sizeof(float) * (size_t)ny),
          *want = malloc(sizeof(float) * (size_t)ny);
    u_run(a, (TeTensor *[]){X, W, Y}, 3, (void *[]){x, w, y});
    ref_conv_nd(x, w, want, nsp, 2, 3, e, r, 2, 1, 1, o);
    u_close("conv_nd", y, want, ny);
    free(x), free(w), free(y), free(want);
    arena_free(a);
  }
}

/* ConvTranspose 1-D: y[k, i*s - pb + r*d] += x[c, i] w[c, k, r]. */
static void test_conv_transpose(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[3] = {1, 2, 4}, ws[3] = {2, 3, 3};
  TopiWindowParams p = {.nsp = 1, .strides = {2}, .dilations = {2}, .pads = {1, 2}, .output_padding = {1}};
  TeTensor *X = u_ph(a, "X", DT_F32, 3, xs), *W = u_ph(a, "W", DT_F32, 3, ws);
  TeTensor *Y = topi_conv_transpose_nd(a, "Y", X, W, NULL, &p, &err);
  if (!Y) fail_msg("%s", err.msg);
  int64_t O = (4 - 1) * 2 + 1 + (3 - 1) * 2 + 1 - 3; /* s (n-1) + op + (k-1) d + 1 - pads */
  assert_int_equal(Y->shape[2], O);
  float *x = u_rand_f32(8, 13, -1, 1), *w = u_rand_f32(18, 14, -1, 1), y[32], want[32] = {0};
  u_run(a, (TeTensor *[]){X, W, Y}, 3, (void *[]){x, w, y});
  for (int c = 0; c < 2; c++)
    for (int k = 0; k < 3; k++)
      for (int i = 0; i < 4; i++)
        for (int r = 0; r < 3; r++) {
          int64_t pos = i * 2 - 1 + r * 2;
          if (pos >= 0 && pos < O) want[k * O + pos] += x[c * 4 + i] * w[(c * 3 + k) * 3 + r];
        }
  u_close("conv_transpose", y, want, 3 * O);
  free(x), free(w);
  arena_free(a);
}

/* 3-D max / average (dilated, padded, count_include_pad 0) and Lp pools,
 * MaxPool's Indices, on [1, 1, 4, 4, 4]. */
static void test_pool_nd(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[5] = {1, 1, 4, 4, 4};
  TopiWindowParams p = {.nsp = 3, .kernel = {2, 2, 2}, .strides = {2, 2, 2}, .dilations = {2, 2, 2},
                        .pads = {1, 1, 1, 1, 1, 1}, .p = 2};
  TeTensor *X = u_ph(a, "X", DT_F32, 5, xs);
  TeTensor *M = topi_pool_nd_onnx(a, "M", TOPI_POOL_MAX, X, &p, false, &err);
  TeTensor *A = M ? topi_pool_nd_onnx(a, "A", TOPI_POOL_AVG, X, &p, false, &err) : NULL;
  TeTensor *L = A ? topi_lp_pool_nd(a, "L", X, &p, &err) : NULL;
  TeTensor *I = L ? topi_max_pool_indices(a, "I", X, M, &p, 0, &err) : NULL;
  if (!I) fail_msg("%s", err.msg);
  assert_int_equal(M->shape[2], 2); /* (4 + 2 - 3) / 2 + 1 */
  float *x = u_rand_f32(64, 15, -1, 1), m[8], av[8], l[8], wm[8], wa[8], wl[8];
  int64_t idx[8], widx[8];
  u_run(a, (TeTensor *[]){X, M, A, L, I}, 5, (void *[]){x, m, av, l, idx});
  for (int o = 0; o < 8; o++) {
    int64_t oz = o / 4, oy = o / 2 % 2, ox = o % 2;
    float best = -INFINITY;
    double sum = 0, sq = 0;
    int cnt = 0;
    for (int r = 0; r < 8; r++) {
      int64_t z = oz * 2 + r / 4 * 2 - 1, yy = oy * 2 + r / 2 % 2 * 2 - 1, xx = ox * 2 + r % 2 * 2 - 1;
      if (z < 0 || z >= 4 || yy < 0 || yy >= 4 || xx < 0 || xx >= 4) continue;
      float v = x[(z * 4 + yy) * 4 + xx];
      if (v > best) best = v, widx[o] = (z * 4 + yy) * 4 + xx;
      sum += v, sq += (double)v * v, cnt++;
    }
    wm[o] = best, wa[o] = (float)(sum / cnt), wl[o] = (float)sqrt(sq);
  }
  u_close("max_pool 3-D", m, wm, 8);
  u_close("avg_pool 3-D dilated", av, wa, 8);
  u_close("lp_pool", l, wl, 8);
  for (int o = 0; o < 8; o++) assert_int_equal(idx[o], widx[o]);
  free(x);
  arena_free(a);
}

static void test_col2im_unpool(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  /* Col2Im: image 4x4, block 2x2, stride 2: blocks tile the image. */
  int64_t xs[3] = {1, 4, 4}, img[2] = {4, 4}, us[4] = {1, 1, 2, 2};
  TopiWindowParams p = {.nsp = 2, .kernel = {2, 2}, .strides = {2, 2}};
  TeTensor *X = u_ph(a, "X", DT_F32, 3, xs), *U = u_ph(a, "U", DT_F32, 4, us), *UI = u_ph(a, "UI", DT_I64, 4, us);
  TeTensor *Y = topi_col2im(a, "Y", X, img, &p, &err);
  TeTensor *Z = Y ? topi_max_unpool(a, "Z", U, UI, (int64_t[]){3, 3}, (int64_t[]){4, 3}, &err) : NULL;
  if (!Z) fail_msg("%s", err.msg);
  float *x = u_rand_f32(16, 16, -1, 1), u[4] = {1, 2, 3, 4}, y[16], want[16], z[12], wz[12] = {0};
  int64_t ui[4] = {0, 4, 5, 8};
  u_run(a, (TeTensor *[]){X, U, UI, Y, Z}, 5, (void *[]){x, u, ui, y, z});
  for (int h = 0; h < 4; h++)
    for (int w = 0; w < 4; w++) want[h * 4 + w] = x[((h % 2) * 2 + w % 2) * 4 + (h / 2) * 2 + w / 2];
  for (int j = 0; j < 4; j++) wz[ui[j] / 3 * 3 + ui[j] % 3] = u[j]; /* rows of 3 (the unpooled 3x3), a zero row 4 */
  u_close("col2im", y, want, 16);
  u_close("max_unpool", z, wz, 12);
  free(x);
  arena_free(a);
}

static void test_refusals(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t s2[2] = {2, 3}, s1[1] = {2}, s4[4] = {1, 3, 2, 2}, s3[3] = {1, 2, 4};
  TeTensor *X2 = u_ph(a, "X2", DT_F32, 2, s2), *I1 = u_ph(a, "I1", DT_I64, 1, s1), *X4 = u_ph(a, "X4", DT_F32, 4, s4);
  TeTensor *F1 = u_ph(a, "F1", DT_F32, 1, s1), *X3 = u_ph(a, "X3", DT_F32, 3, s3);
  U_EXPECT_ERR(topi_gather_elements(a, "Y", X2, I1, 0, &err), err, "GatherElements: indices have rank 1");
  U_EXPECT_ERR(topi_gather_elements(a, "Y", X2, F1, 0, &err), err, "GatherElements: indices");
  U_EXPECT_ERR(topi_scatter_nd(a, "Y", X2, u_ph(a, "I2", DT_I64, 2, (int64_t[]){1, 1}), X2, TOPI_SCATTER_NONE, &err), err,
               "ScatterND: indices");
  U_EXPECT_ERR(topi_one_hot(a, "Y", I1, 0, F1, -1, &err), err, "OneHot: depth 0");
  U_EXPECT_ERR(topi_depth_to_space(a, "Y", X4, 2, false, &err), err, "DepthToSpace: 3 channels");
  U_EXPECT_ERR(topi_einsum(a, "Y", "ij,jk->ik", (const TeTensor *[]){X2}, 1, &err), err, "Einsum: term 0");
  U_EXPECT_ERR(topi_einsum(a, "Y", "i...->i", (const TeTensor *[]){F1}, 1, &err), err, "explicit letters-only form");
  U_EXPECT_ERR(topi_trilu(a, "Y", F1, 0, true, &err), err, "Trilu: input");
  TopiWindowParams p = {.nsp = 1};
  U_EXPECT_ERR(topi_conv_transpose_nd(a, "Y", X3, X3, NULL, &p, &err), err, "ConvTranspose: W is [1");
  U_EXPECT_ERR(topi_conv_nd_onnx(a, "Y", X4, X4, NULL, &p, &err), err, "Conv: X and W must both have rank 3");
  p.kernel[0] = 9;
  U_EXPECT_ERR(topi_pool_nd_onnx(a, "Y", TOPI_POOL_MAX, X3, &p, false, &err), err, "larger than the padded input");
  U_EXPECT_ERR(topi_max_unpool(a, "Y", X3, I1, (int64_t[]){4}, (int64_t[]){3}, &err), err, "MaxUnpool");
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gather_scatter_elements), cmocka_unit_test(test_gather_scatter_nd),
      cmocka_unit_test(test_one_hot_trilu_eye),       cmocka_unit_test(test_space),
      cmocka_unit_test(test_einsum),                  cmocka_unit_test(test_conv_nd),
      cmocka_unit_test(test_conv_transpose),          cmocka_unit_test(test_pool_nd),
      cmocka_unit_test(test_col2im_unpool),           cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
