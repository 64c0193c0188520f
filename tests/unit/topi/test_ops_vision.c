/* TopK, BitCast and the data-dependent-extent ops (topi_ops_vision.h) run by
 * the reference interpreter against plain-C references written here, and
 * the refusals of the vision ops. Sorting and selection move values
 * unchanged, so results must match exactly. (GridSample, AffineGrid,
 * RoiAlign and DeformConv are checked against ONNX's reference outputs by
 * the conformance runner and against ORT by compiler_vs_ort.) */
#include "unit/topi/ops_util.h"

/* TopK of rows [rows, n] along axis 1: a stable selection by value. */
static void ref_topk(const int64_t *x, int64_t rows, int64_t n, int64_t k, bool largest, int64_t *v, int64_t *idx) {
  for (int64_t r = 0; r < rows; r++) {
    bool *used = calloc((size_t)n, 1);
    for (int64_t p = 0; p < k; p++) {
      int64_t best = -1;
      for (int64_t j = 0; j < n; j++) {
        if (used[j]) continue;
        int64_t xj = x[r * n + j];
        if (best < 0 || (largest ? xj > x[r * n + best] : xj < x[r * n + best])) best = j;
      }
      used[best] = true;
      v[r * k + p] = x[r * n + best];
      idx[r * k + p] = best;
    }
    free(used);
  }
}

static void test_top_k(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[2] = {4, 9};
  TeTensor *X = u_ph(a, "X", DT_I64, 2, xs);
  int64_t *x = u_rand_i64(36, 3, 0, 4); /* many ties: the lower index must win */
  for (int largest = 0; largest < 2; largest++) {
    TeTensor *V, *I;
    assert_true(topi_top_k(a, largest ? "L" : "S", X, 5, -1, largest, &V, &I, &err));
    int64_t v[20], idx[20], wv[20], wi[20];
    u_run(a, (TeTensor *[]){X, V, I}, 3, (void *[]){x, v, idx});
    ref_topk(x, 4, 9, 5, largest, wv, wi);
    assert_memory_equal(v, wv, sizeof v);
    assert_memory_equal(idx, wi, sizeof idx);
  }
  /* axis 0 of f32 */
  int64_t fs[2] = {6, 2};
  TeTensor *Xf = u_ph(a, "Xf", DT_F32, 2, fs), *V, *I;
  assert_true(topi_top_k(a, "A0", Xf, 2, 0, true, &V, &I, &err));
  float xf[12] = {1, 5, 3, 5, -2, 0, 3, 7, 9, -1, 3, 2}, vf[4];
  int64_t ix[4];
  u_run(a, (TeTensor *[]){Xf, V, I}, 3, (void *[]){xf, vf, ix});
  float want_v[4] = {9, 7, 3, 5};
  int64_t want_i[4] = {4, 3, 1, 0};
  assert_memory_equal(vf, want_v, sizeof vf);
  assert_memory_equal(ix, want_i, sizeof ix);
  U_EXPECT_ERR(topi_top_k(a, "B", X, 10, 1, true, &V, &I, &err) ? V : NULL, err, "K = 10 is out of range");
  U_EXPECT_ERR(topi_top_k(a, "B", X, 2, 2, true, &V, &I, &err) ? V : NULL, err, "TopK: axis 2");
  free(x);
  arena_free(a);
}

static void test_bit_cast(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t s[1] = {5};
  TeTensor *F = u_ph(a, "F", DT_F32, 1, s), *D = u_ph(a, "D", DT_F64, 1, s), *U = u_ph(a, "U", dtype_make(DT_UINT, 16, 1), 1, s);
  TeTensor *FI = topi_bit_cast(a, "FI", F, DT_I32, &err), *DI = topi_bit_cast(a, "DI", D, DT_I64, &err);
  TeTensor *UI = topi_bit_cast(a, "UI", U, dtype_make(DT_INT, 16, 1), &err);
  assert_non_null(FI), assert_non_null(DI), assert_non_null(UI);
  TeTensor *FIF = topi_bit_cast(a, "FIF", FI, DT_F32, &err);
  assert_non_null(FIF);
  float f[5] = {1.0f, -2.5f, 0.0f, -0.0f, INFINITY}, back[5];
  double d[5] = {1.0, -2.5, 1e300, -0.0, NAN};
  uint16_t u[5] = {0, 1, 32768, 65535, 12345};
  int32_t fi[5];
  int64_t di[5];
  int16_t ui[5];
  u_run(a, (TeTensor *[]){F, D, U, FI, DI, UI, FIF}, 7, (void *[]){f, d, u, fi, di, ui, back});
  assert_memory_equal(fi, f, sizeof f);
  assert_memory_equal(di, d, sizeof d);
  assert_memory_equal(ui, u, sizeof u);
  assert_memory_equal(back, f, sizeof f);
  U_EXPECT_ERR(topi_bit_cast(a, "B", F, DT_I64, &err), err, "not a same-width cast");
  U_EXPECT_ERR(topi_bit_cast(a, "B", U, DT_F16, &err), err, "not supported");
  arena_free(a);
}

/* Runs one data-dependent op's (y, extent) and checks the extent, the
 * compact data and the zeros after it. */
static void check_dynamic(const char *what, const int64_t *ext, int r, const int64_t *want_ext, const void *y,
                          const void *want, int64_t upper_numel, size_t elem) {
  int64_t n = 1;
  for (int d = 0; d < r; d++) {
    if (ext[d] != want_ext[d]) fail_msg("%s: extent %d is %lld, want %lld", what, d, (long long)ext[d], (long long)want_ext[d]);
    n *= ext[d];
  }
  assert_memory_equal(y, want, (size_t)n * elem);
  for (int64_t i = n * (int64_t)elem; i < upper_numel * (int64_t)elem; i++)
    if (((const uint8_t *)y)[i]) fail_msg("%s: byte %lld past the real tensor is not zero", what, (long long)i);
}

static void test_non_zero_compress(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[2] = {3, 4};
  TeTensor *X = u_ph(a, "X", DT_F32, 2, xs), *Y, *E;
  assert_true(topi_non_zero(a, "NZ", X, &Y, &E, &err));
  float x[12] = {0, 1, 0, 2, 0, 0, 0, 0, 3, 0, -1, 0};
  int64_t y[24], e[2];
  u_run(a, (TeTensor *[]){X, Y, E}, 3, (void *[]){x, y, e});
  int64_t want[8] = {0, 0, 2, 2, 1, 3, 0, 2};
  check_dynamic("NonZero", e, 2, (int64_t[]){2, 4}, y, want, 24, 8);
  /* Compress along axis 1 with a shorter condition, and flattened */
  int64_t cs[1] = {3}, cf[1] = {7};
  TeTensor *C = u_ph(a, "C", DT_BOOL1, 1, cs), *CF = u_ph(a, "CF", DT_BOOL1, 1, cf), *Y2, *E2;
  assert_true(topi_compress(a, "CP", X, C, true, -1, &Y, &E, &err));
  assert_true(topi_compress(a, "CPF", X, CF, false, 0, &Y2, &E2, &err));
  assert_int_equal(Y->shape[1], 3);
  assert_int_equal(Y2->shape[0], 7);
  uint8_t c[3] = {0, 1, 1}, c7[7] = {1, 1, 0, 1, 0, 0, 1};
  float yc[9], yf[7];
  int64_t ec[2], ef[1];
  u_run(a, (TeTensor *[]){X, C, CF, Y, E, Y2, E2}, 7, (void *[]){x, c, c7, yc, ec, yf, ef});
  float wc[6] = {1, 0, 0, 0, 0, -1}, wf[4] = {0, 1, 2, 0};
  check_dynamic("Compress axis", ec, 2, (int64_t[]){3, 2}, yc, wc, 9, 4);
  check_dynamic("Compress flat", ef, 1, (int64_t[]){4}, yf, wf, 7, 4);
  arena_free(a);
}

static void test_unique(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t s[1] = {7};
  TeTensor *X = u_ph(a, "X", DT_I64, 1, s);
  int64_t x[7] = {5, 2, 5, 7, 2, 2, 1};
  for (int sorted = 0; sorted < 2; sorted++) {
    TeTensor *o[4], *e[3];
    assert_true(topi_unique(a, sorted ? "US" : "UU", X, false, 0, sorted, o, e, &err));
    int64_t y[7], idx[7], inv[7], cnt[7], ey[1], ei[1], ec[1];
    u_run(a, (TeTensor *[]){X, o[0], o[1], o[2], o[3], e[0], e[1], e[2]}, 8,
          (void *[]){x, y, idx, inv, cnt, ey, ei, ec});
    int64_t four[1] = {4};
    if (sorted) {
      check_dynamic("Unique y", ey, 1, four, y, (int64_t[]){1, 2, 5, 7}, 7, 8);
      check_dynamic("Unique indices", ei, 1, four, idx, (int64_t[]){6, 1, 0, 3}, 7, 8);
      assert_memory_equal(inv, ((int64_t[]){2, 1, 2, 3, 1, 1, 0}), sizeof inv);
      check_dynamic("Unique counts", ec, 1, four, cnt, (int64_t[]){1, 3, 2, 1}, 7, 8);
    } else {
      check_dynamic("Unique y", ey, 1, four, y, (int64_t[]){5, 2, 7, 1}, 7, 8);
      check_dynamic("Unique indices", ei, 1, four, idx, (int64_t[]){0, 1, 3, 6}, 7, 8);
      assert_memory_equal(inv, ((int64_t[]){0, 1, 0, 2, 1, 1, 3}), sizeof inv);
      check_dynamic("Unique counts", ec, 1, four, cnt, (int64_t[]){2, 3, 1, 1}, 7, 8);
    }
  }
  /* along axis 1: columns compared lexicographically */
  int64_t ms[2] = {2, 4};
  TeTensor *M = u_ph(a, "M", DT_F32, 2, ms), *o[4], *e[3];
  assert_true(topi_unique(a, "UA", M, true, 1, true, o, e, &err));
  float m[8] = {1, 0, 1, 0, 2, 3, 2, -1};
  float y[8];
  int64_t idx[4], inv[4], cnt[4], ey[2], ei[1], ec[1];
  u_run(a, (TeTensor *[]){M, o[0], o[1], o[2], o[3], e[0], e[1], e[2]}, 8, (void *[]){m, y, idx, inv, cnt, ey, ei, ec});
  check_dynamic("Unique axis y", ey, 2, (int64_t[]){2, 3}, y, (float[]){0, 0, 1, -1, 3, 2}, 8, 4);
  check_dynamic("Unique axis indices", ei, 1, (int64_t[]){3}, idx, (int64_t[]){3, 1, 0}, 4, 8);
  assert_memory_equal(inv, ((int64_t[]){2, 1, 2, 0}), sizeof inv);
  check_dynamic("Unique axis counts", ec, 1, (int64_t[]){3}, cnt, (int64_t[]){1, 1, 2}, 4, 8);
  arena_free(a);
}

static void test_refusals(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[4] = {1, 1, 4, 4}, gs[4] = {1, 2, 2, 2}, rs[2] = {2, 4}, bs[1] = {2};
  TeTensor *X = u_ph(a, "X", DT_F32, 4, xs), *G = u_ph(a, "G", DT_F32, 4, gs);
  TeTensor *R = u_ph(a, "R", DT_F32, 2, rs), *B = u_ph(a, "Bi", DT_I64, 1, bs), *XI = u_ph(a, "XI", DT_I32, 4, xs);
  U_EXPECT_ERR(topi_grid_sample(a, "Y", XI, G, TOPI_GRID_LINEAR, TOPI_GRID_ZEROS, false, &err), err,
               "GridSample: X (\"XI\") has dtype i32");
  U_EXPECT_ERR(topi_grid_sample(a, "Y", X, R, TOPI_GRID_LINEAR, TOPI_GRID_ZEROS, false, &err), err,
               "GridSample: grid (\"R\") must be");
  TopiRoiAlignParams p = {.out_h = 2, .out_w = 2, .sampling_ratio = 0, .spatial_scale = 1};
  U_EXPECT_ERR(topi_roi_align(a, "Y", X, R, B, &p, &err), err, "sampling_ratio 0 is not supported");
  int64_t sz[3] = {1, 2, 3};
  U_EXPECT_ERR(topi_affine_grid(a, "Y", R, sz, 3, false, &err), err, "size must have 4 or 5 elements");
  U_EXPECT_ERR(topi_deform_conv(a, "Y", X, X, X, NULL, NULL, NULL, &err), err, "DeformConv: offset");
  int64_t big[3] = {1, 600, 4}, bigs[3] = {1, 1, 600};
  TeTensor *BB = u_ph(a, "BB", DT_F32, 3, big), *BS = u_ph(a, "BS", DT_F32, 3, bigs), *Y, *E;
  err.msg[0] = 0;
  assert_false(topi_non_max_suppression(a, "N", BB, BS, NULL, NULL, NULL, false, 600, &Y, &E, &err));
  assert_non_null(strstr(err.msg, "at most 512 are supported"));
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_top_k),
      cmocka_unit_test(test_bit_cast),
      cmocka_unit_test(test_non_zero_compress),
      cmocka_unit_test(test_unique),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
