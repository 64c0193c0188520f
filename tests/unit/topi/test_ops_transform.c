/* Data-movement ONNX ops (topi_ops.h) run by the reference interpreter
 * against plain-C index arithmetic written here. Values move unchanged, so
 * results must match exactly (Resize linear: ops_util.h tolerance). */
#include "unit/topi/ops_util.h"

static void check_shape(const TeTensor *t, int r, const int64_t *s) {
  assert_int_equal(t->ndim, r);
  for (int d = 0; d < r; d++)
    if (t->shape[d] != s[d]) fail_msg("%s: axis %d has %lld, want %lld", t->name, d, (long long)t->shape[d], (long long)s[d]);
}

static void test_flatten_reshape_transpose(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[4] = {2, 3, 4, 5};
  TeTensor *X = u_ph(a, "X", DT_F32, 4, xs);
  TeTensor *F = topi_flatten(a, "F", X, 2, &err);
  TeTensor *F0 = topi_flatten(a, "F0", X, 0, &err);
  int64_t tgt[3] = {0, -1, 10};
  TeTensor *R = topi_reshape(a, "R", X, tgt, 3, &err);
  int64_t perm[4] = {2, 0, 3, 1};
  TeTensor *T = topi_transpose_perm(a, "T", X, perm, &err);
  TeTensor *Tr = topi_transpose_perm(a, "Tr", X, NULL, &err);
  assert_non_null(F), assert_non_null(F0), assert_non_null(R), assert_non_null(T), assert_non_null(Tr);
  check_shape(F, 2, (int64_t[]){6, 20});
  check_shape(F0, 2, (int64_t[]){1, 120});
  check_shape(R, 3, (int64_t[]){2, 6, 10});
  check_shape(T, 4, (int64_t[]){4, 2, 5, 3});
  check_shape(Tr, 4, (int64_t[]){5, 4, 3, 2});
  float *x = u_rand_f32(120, 1, -1, 1), f[120], f0[120], r[120], t[120], tr[120];
  u_run(a, (TeTensor *[]){X, F, F0, R, T, Tr}, 6, (void *[]){x, f, f0, r, t, tr});
  assert_memory_equal(f, x, sizeof f);
  assert_memory_equal(f0, x, sizeof f0);
  assert_memory_equal(r, x, sizeof r);
  for (int i = 0; i < 120; i++) {
    int64_t o[4], in[4];
    u_unravel(i, 4, T->shape, o);
    for (int d = 0; d < 4; d++) in[perm[d]] = o[d];
    assert_true(t[i] == x[u_offset(4, xs, in)]);
    u_unravel(i, 4, Tr->shape, o);
    for (int d = 0; d < 4; d++) in[3 - d] = o[d];
    assert_true(tr[i] == x[u_offset(4, xs, in)]);
  }
  int64_t bad[2] = {7, -1}, two[2] = {-1, -1};
  U_EXPECT_ERR(topi_reshape(a, "B", X, bad, 2, &err), err, "Reshape: 120 elements cannot fill");
  U_EXPECT_ERR(topi_reshape(a, "B", X, two, 2, &err), err, "more than one -1");
  int64_t badp[4] = {0, 0, 1, 2};
  U_EXPECT_ERR(topi_transpose_perm(a, "B", X, badp, &err), err, "Transpose: perm");
  free(x);
  arena_free(a);
}

static void test_concat_split(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t s1[3] = {2, 1, 3}, s2[3] = {2, 3, 3}, s3[3] = {2, 2, 3};
  TeTensor *A = u_ph(a, "A", DT_F32, 3, s1), *B = u_ph(a, "B", DT_F32, 3, s2), *C = u_ph(a, "C", DT_F32, 3, s3);
  const TeTensor *xs[3] = {A, B, C};
  TeTensor *Y = topi_concat(a, "Y", xs, 3, -2, &err);
  if (!Y) fail_msg("%s", err.msg);
  check_shape(Y, 3, (int64_t[]){2, 6, 3});
  TeTensor *parts[3];
  int64_t sizes[3] = {1, 2, 3};
  assert_true(topi_split(a, "S", Y, 1, sizes, 3, parts, &err));
  TeTensor *eq[2];
  int64_t ys[3] = {2, 6, 3};
  assert_true(topi_split(a, "E", Y, 2, NULL, 1, eq, &err));
  assert_true(topi_split(a, "H", Y, 1, NULL, 2, eq, &err));
  float *a1 = u_rand_f32(6, 1, -1, 1), *b1 = u_rand_f32(18, 2, -1, 1), *c1 = u_rand_f32(12, 3, -1, 1);
  float y[36], p0[6], p1[12], p2[18], h0[18], h1[18];
  u_run(a, (TeTensor *[]){A, B, C, Y, parts[0], parts[1], parts[2], eq[0], eq[1]}, 9,
        (void *[]){a1, b1, c1, y, p0, p1, p2, h0, h1});
  for (int i = 0; i < 36; i++) {
    int64_t idx[3];
    u_unravel(i, 3, ys, idx);
    int64_t j = idx[1];
    float want = j < 1 ? a1[(idx[0] * 1 + j) * 3 + idx[2]]
               : j < 4 ? b1[(idx[0] * 3 + j - 1) * 3 + idx[2]]
                       : c1[(idx[0] * 2 + j - 4) * 3 + idx[2]];
    assert_true(y[i] == want);
  }
  /* split undoes concat */
  assert_memory_equal(p0, a1, sizeof p0);
  for (int i = 0; i < 12; i++) {
    int64_t idx[3];
    u_unravel(i, 3, (int64_t[]){2, 2, 3}, idx);
    assert_true(p1[i] == y[(idx[0] * 6 + idx[1] + 1) * 3 + idx[2]]);
  }
  for (int i = 0; i < 18; i++) {
    int64_t idx[3];
    u_unravel(i, 3, (int64_t[]){2, 3, 3}, idx);
    assert_true(p2[i] == y[(idx[0] * 6 + idx[1] + 3) * 3 + idx[2]]);
    assert_true(h0[i] == y[(idx[0] * 6 + idx[1]) * 3 + idx[2]]);
    assert_true(h1[i] == y[(idx[0] * 6 + idx[1] + 3) * 3 + idx[2]]);
  }
  int64_t bad[2] = {2, 5};
  U_EXPECT_ERR(topi_split(a, "Z", Y, 1, bad, 2, parts, &err) ? (void *)1 : NULL, err, "Split");
  U_EXPECT_ERR(topi_split(a, "Z", Y, 2, NULL, 2, parts, &err) ? (void *)1 : NULL, err, "equal parts");
  const TeTensor *mis[2] = {A, u_ph(a, "D", DT_F32, 2, s1)};
  U_EXPECT_ERR(topi_concat(a, "Z", mis, 2, 1, &err), err, "Concat: input 1");
  free(a1), free(b1), free(c1);
  arena_free(a);
}

/* Slice against a reference that walks the ONNX clamping rules itself. */
static void test_slice(void **state) {
  (void)state;
  int64_t xs[3] = {4, 6, 5};
  struct { int n; int64_t starts[3], ends[3], axes[3], steps[3]; int64_t os[3]; } cases[] = {
      {2, {1, 0}, {3, 100}, {0, 2}, {1, 2}, {2, 6, 3}},
      {1, {-1}, {-1000}, {1}, {-2}, {4, 3, 5}},
      {3, {-3, 5, 0}, {INT64_MAX, 1, -1}, {0, 1, 2}, {1, -1, 3}, {3, 4, 2}},
      {1, {10}, {-10}, {-1}, {-1}, {4, 6, 5}},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *X = u_ph(a, "X", DT_F32, 3, xs);
    TeTensor *Y = topi_slice(a, "Y", X, cases[ci].starts, cases[ci].ends, cases[ci].axes,
                             cases[ci].steps, cases[ci].n, &err);
    if (!Y) fail_msg("case %zu: %s", ci, err.msg);
    check_shape(Y, 3, cases[ci].os);
    int64_t start[3] = {0, 0, 0}, step[3] = {1, 1, 1};
    for (int i = 0; i < cases[ci].n; i++) {
      int ax = (int)((cases[ci].axes[i] + 3) % 3);
      int64_t st = cases[ci].starts[i], dim = xs[ax];
      if (st < 0) st += dim;
      step[ax] = cases[ci].steps[i];
      if (step[ax] > 0) st = st < 0 ? 0 : st > dim ? dim : st;
      else st = st < 0 ? 0 : st > dim - 1 ? dim - 1 : st;
      start[ax] = st;
    }
    float *x = u_rand_f32(120, 5, -1, 1), y[120];
    u_run(a, (TeTensor *[]){X, Y}, 2, (void *[]){x, y});
    for (int64_t i = 0; i < u_numel(Y); i++) {
      int64_t o[3], in[3];
      u_unravel(i, 3, Y->shape, o);
      for (int d = 0; d < 3; d++) in[d] = start[d] + o[d] * step[d];
      if (y[i] != x[u_offset(3, xs, in)]) fail_msg("case %zu: element %lld differs", ci, (long long)i);
    }
    free(x);
    arena_free(a);
  }
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *X = u_ph(a, "X", DT_F32, 3, xs);
  U_EXPECT_ERR(topi_slice(a, "Y", X, (int64_t[]){3}, (int64_t[]){1}, NULL, NULL, 1, &err), err,
               "Slice: the result is empty along axis 0");
  U_EXPECT_ERR(topi_slice(a, "Y", X, (int64_t[]){0}, (int64_t[]){1}, NULL, (int64_t[]){0}, 1, &err), err,
               "steps[0] is 0");
  arena_free(a);
}

static void test_gather(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t ds[3] = {5, 4, 3}, is[2] = {2, 3};
  TeTensor *D = u_ph(a, "D", DT_F32, 3, ds);
  TeTensor *I = u_ph(a, "I", DT_I64, 2, is);
  TeTensor *I32 = u_ph(a, "I32", DT_I32, 1, (int64_t[]){3});
  TeTensor *S = u_ph(a, "S", DT_I64, 0, NULL);
  TeTensor *G0 = topi_gather(a, "G0", D, I, 0, &err);
  TeTensor *G1 = topi_gather(a, "G1", D, I32, -2, &err);
  TeTensor *Gs = topi_gather(a, "Gs", D, S, 2, &err); /* scalar index drops the axis */
  assert_non_null(G0), assert_non_null(G1), assert_non_null(Gs);
  check_shape(G0, 4, (int64_t[]){2, 3, 4, 3});
  check_shape(G1, 3, (int64_t[]){5, 3, 3});
  check_shape(Gs, 2, (int64_t[]){5, 4});
  float *d = u_rand_f32(60, 3, -1, 1), g0[72], g1[45], gs[20];
  int64_t idx[6] = {0, 4, -1, -5, 2, 3}, sidx = -1;
  int32_t idx32[3] = {-4, 3, 1};
  u_run(a, (TeTensor *[]){D, I, I32, S, G0, G1, Gs}, 7, (void *[]){d, idx, idx32, &sidx, g0, g1, gs});
  for (int i = 0; i < 72; i++) {
    int64_t r = idx[i / 12];
    if (r < 0) r += 5;
    assert_true(g0[i] == d[r * 12 + i % 12]);
  }
  for (int i = 0; i < 45; i++) {
    int64_t n = i / 9, j = (i / 3) % 3, c = i % 3, r = idx32[j] < 0 ? idx32[j] + 4 : idx32[j];
    assert_true(g1[i] == d[(n * 4 + r) * 3 + c]);
  }
  for (int i = 0; i < 20; i++) assert_true(gs[i] == d[i * 3 + 2]);
  TeTensor *F = u_ph(a, "F", DT_F32, 1, (int64_t[]){2});
  U_EXPECT_ERR(topi_gather(a, "B", D, F, 0, &err), err, "Gather: indices");
  U_EXPECT_ERR(topi_gather(a, "B", D, I, 3, &err), err, "Gather: axis 3");
  free(d);
  arena_free(a);
}

static void test_squeeze_unsqueeze_expand_tile(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t xs[4] = {1, 3, 1, 2};
  TeTensor *X = u_ph(a, "X", DT_F32, 4, xs);
  TeTensor *Sq = topi_squeeze(a, "Sq", X, NULL, 0, &err);
  TeTensor *Sq1 = topi_squeeze(a, "Sq1", X, (int64_t[]){-2}, 1, &err);
  TeTensor *Un = topi_unsqueeze(a, "Un", Sq, (int64_t[]){0, -1, 2}, 3, &err);
  int64_t es[5] = {2, 1, 3, 4, 2};
  TeTensor *Ex = topi_expand(a, "Ex", X, es, 5, &err);
  TeTensor *Ti = topi_tile(a, "Ti", X, (int64_t[]){2, 1, 3, 2}, &err);
  assert_non_null(Sq), assert_non_null(Sq1), assert_non_null(Un), assert_non_null(Ex), assert_non_null(Ti);
  check_shape(Sq, 2, (int64_t[]){3, 2});
  check_shape(Sq1, 3, (int64_t[]){1, 3, 2});
  check_shape(Un, 5, (int64_t[]){1, 3, 1, 2, 1});
  check_shape(Ex, 5, es);
  check_shape(Ti, 4, (int64_t[]){2, 3, 3, 4});
  float *x = u_rand_f32(6, 9, -1, 1), sq[6], sq1[6], un[6], ex[48], ti[72];
  u_run(a, (TeTensor *[]){X, Sq, Sq1, Un, Ex, Ti}, 6, (void *[]){x, sq, sq1, un, ex, ti});
  assert_memory_equal(sq, x, sizeof sq);
  assert_memory_equal(sq1, x, sizeof sq1);
  assert_memory_equal(un, x, sizeof un);
  for (int i = 0; i < 48; i++) {
    int64_t o[5];
    u_unravel(i, 5, es, o);
    assert_true(ex[i] == x[u_bcast_offset(4, xs, 5, o)]);
  }
  for (int i = 0; i < 72; i++) {
    int64_t o[4];
    u_unravel(i, 4, Ti->shape, o);
    for (int d = 0; d < 4; d++) o[d] %= xs[d];
    assert_true(ti[i] == x[u_offset(4, xs, o)]);
  }
  U_EXPECT_ERR(topi_squeeze(a, "B", X, (int64_t[]){1}, 1, &err), err, "Squeeze: axis 1 has extent 3");
  U_EXPECT_ERR(topi_unsqueeze(a, "B", X, (int64_t[]){1, 1}, 2, &err), err, "listed twice");
  U_EXPECT_ERR(topi_expand(a, "B", X, (int64_t[]){4, 3}, 2, &err), err, "Expand: shapes do not broadcast");
  free(x);
  arena_free(a);
}

static void test_pad(void **state) {
  (void)state;
  int64_t xs[2] = {4, 5};
  const TopiPadMode modes[3] = {TOPI_PAD_CONSTANT, TOPI_PAD_REFLECT, TOPI_PAD_EDGE};
  for (int mi = 0; mi < 3; mi++) {
    Arena *a = arena_new();
    LoomError err = {0};
    int64_t pads[4] = {2, 3, 1, mi == 0 ? -2 : 2}; /* begins then ends; a crop for constant */
    TeTensor *X = u_ph(a, "X", DT_F32, 2, xs);
    TeTensor *Y = topi_pad_onnx(a, "Y", X, pads, modes[mi], 1.5, &err);
    if (!Y) fail_msg("%s", err.msg);
    check_shape(Y, 2, (int64_t[]){7, mi == 0 ? 6 : 10});
    float *x = u_rand_f32(20, 4, -1, 1), y[70];
    u_run(a, (TeTensor *[]){X, Y}, 2, (void *[]){x, y});
    for (int64_t i = 0; i < u_numel(Y); i++) {
      int64_t o[2], in[2];
      u_unravel(i, 2, Y->shape, o);
      bool out = false;
      for (int d = 0; d < 2; d++) {
        int64_t v = o[d] - pads[d], n = xs[d];
        if (v < 0 || v >= n) {
          if (modes[mi] == TOPI_PAD_CONSTANT) out = true;
          else if (modes[mi] == TOPI_PAD_EDGE) v = v < 0 ? 0 : n - 1;
          else v = v < 0 ? -v : 2 * (n - 1) - v;
        }
        in[d] = v;
      }
      float want = out ? 1.5f : x[in[0] * 5 + in[1]];
      if (y[i] != want) fail_msg("mode %d element %lld: got %g want %g", mi, (long long)i, y[i], want);
    }
    U_EXPECT_ERR(topi_pad_onnx(a, "Z", X, (int64_t[]){4, 0, 0, 0}, TOPI_PAD_REFLECT, 0, &err), err,
                 "Pad: reflect");
    free(x);
    arena_free(a);
  }
}

/* Resize reference following ONNX Runtime's upsample code paths. */
static float src_coord(TopiResizeCoord c, int64_t o, float scale, int64_t in, int64_t out) {
  switch (c) {
    case TOPI_COORD_ASYMMETRIC: return (float)o / scale;
    case TOPI_COORD_ALIGN_CORNERS: return out == 1 ? 0.0f : (float)o * (float)(in - 1) / (float)(out - 1);
    case TOPI_COORD_PYTORCH_HALF_PIXEL: return out > 1 ? ((float)o + 0.5f) / scale - 0.5f : 0.0f;
    default: return ((float)o + 0.5f) / scale - 0.5f;
  }
}

static int64_t near_idx(TopiResizeNearest m, float c, int64_t in) {
  int64_t r;
  switch (m) {
    case TOPI_NEAREST_FLOOR: r = (int64_t)floorf(c); break;
    case TOPI_NEAREST_CEIL: r = (int64_t)ceilf(c); break;
    case TOPI_NEAREST_ROUND_PREFER_CEIL: r = (int64_t)roundf(c); break;
    default: r = c == floorf(c) + 0.5f ? (int64_t)floorf(c) : (int64_t)roundf(c); break;
  }
  return r < 0 ? 0 : r >= in ? in - 1 : r;
}

static void test_resize(void **state) {
  (void)state;
  int64_t xs[4] = {1, 2, 3, 4};
  struct { TopiResizeMode m; TopiResizeCoord c; TopiResizeNearest n; int64_t oh, ow; } cases[] = {
      {TOPI_RESIZE_NEAREST, TOPI_COORD_ASYMMETRIC, TOPI_NEAREST_FLOOR, 6, 8},
      {TOPI_RESIZE_NEAREST, TOPI_COORD_HALF_PIXEL, TOPI_NEAREST_ROUND_PREFER_FLOOR, 5, 7},
      {TOPI_RESIZE_NEAREST, TOPI_COORD_ALIGN_CORNERS, TOPI_NEAREST_ROUND_PREFER_CEIL, 7, 3},
      {TOPI_RESIZE_LINEAR, TOPI_COORD_HALF_PIXEL, 0, 6, 8},
      {TOPI_RESIZE_LINEAR, TOPI_COORD_PYTORCH_HALF_PIXEL, 0, 5, 1},
      {TOPI_RESIZE_LINEAR, TOPI_COORD_ALIGN_CORNERS, 0, 7, 9},
      {TOPI_RESIZE_LINEAR, TOPI_COORD_ASYMMETRIC, 0, 2, 2},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    Arena *a = arena_new();
    LoomError err = {0};
    int64_t os[4] = {1, 2, cases[ci].oh, cases[ci].ow};
    TeTensor *X = u_ph(a, "X", DT_F32, 4, xs);
    TeTensor *Y = topi_resize(a, "Y", X, os, NULL, cases[ci].m, cases[ci].c, cases[ci].n, &err);
    if (!Y) fail_msg("case %zu: %s", ci, err.msg);
    int64_t ny = u_numel(Y);
    float *x = u_rand_f32(24, 6, -1, 1), y[128], want[128];
    u_run(a, (TeTensor *[]){X, Y}, 2, (void *[]){x, y});
    float sh = (float)os[2] / 3.0f, sw = (float)os[3] / 4.0f;
    for (int64_t i = 0; i < ny; i++) {
      int64_t o[4];
      u_unravel(i, 4, os, o);
      const float *plane = x + o[1] * 12;
      float ch = src_coord(cases[ci].c, o[2], sh, 3, os[2]), cw = src_coord(cases[ci].c, o[3], sw, 4, os[3]);
      if (cases[ci].m == TOPI_RESIZE_NEAREST) {
        want[i] = plane[near_idx(cases[ci].n, ch, 3) * 4 + near_idx(cases[ci].n, cw, 4)];
        continue;
      }
      ch = fmaxf(0, fminf(ch, 2)), cw = fmaxf(0, fminf(cw, 3));
      int64_t y1 = (int64_t)ch, y2 = y1 + 1 < 3 ? y1 + 1 : 2, x1 = (int64_t)cw, x2 = x1 + 1 < 4 ? x1 + 1 : 3;
      float dy1 = fabsf(ch - (float)y1), dy2 = fabsf(ch - (float)y2), dx1 = fabsf(cw - (float)x1), dx2 = fabsf(cw - (float)x2);
      if (y1 == y2) dy1 = dy2 = 0.5f;
      if (x1 == x2) dx1 = dx2 = 0.5f;
      want[i] = dx2 * dy2 * plane[y1 * 4 + x1] + dx1 * dy2 * plane[y1 * 4 + x2] +
                dx2 * dy1 * plane[y2 * 4 + x1] + dx1 * dy1 * plane[y2 * 4 + x2];
    }
    u_close("resize", y, want, ny);
    free(x);
    arena_free(a);
  }
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *X = u_ph(a, "X", DT_I32, 4, xs);
  U_EXPECT_ERR(topi_resize(a, "Y", X, (int64_t[]){1, 4, 3, 4}, NULL, TOPI_RESIZE_LINEAR,
                           TOPI_COORD_HALF_PIXEL, 0, &err),
               err, "Resize: input X");
  U_EXPECT_ERR(topi_resize(a, "Y2", X, (int64_t[]){1, 0, 3, 4}, NULL, TOPI_RESIZE_NEAREST,
                           TOPI_COORD_HALF_PIXEL, 0, &err),
               err, "Resize: axis 1 has output extent 0");
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flatten_reshape_transpose),
      cmocka_unit_test(test_concat_split),
      cmocka_unit_test(test_slice),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_squeeze_unsqueeze_expand_tile),
      cmocka_unit_test(test_pad),
      cmocka_unit_test(test_resize),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
