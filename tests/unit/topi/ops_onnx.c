/* The topi ONNX-semantics ops against ONNX Runtime: for each case that
 * tests/models/make_op_cases.py wrote (inputs and ORT's outputs as .npy in
 * $LOOM_OP_CASES/<case>/), build the same op here, run it with the
 * reference interpreter and compare. f32: |got - want| <= 1e-5 |want| +
 * 1e-6 (the absolute term covers values near zero after cancellation, e.g.
 * LayerNormalization, where ORT accumulates differently); integers and bool
 * exactly; shapes and dtypes exactly. Not named test_* so only the fixture-wired ctest
 * in tests/CMakeLists.txt runs it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/dl_dtype.h"
#include "tensor_data/npy.h"
#include "tir/interp.h"
#include "topi/topi_ops.h"

#define MAX_IO 8

typedef struct Case {
  Arena *a;
  TeTensor *in[MAX_IO];
  int nin;
  TeTensor *out[MAX_IO];
  int nout;
  LoomError err;
} Case;

typedef bool (*BuildFn)(Case *c);

static TopiConvParams conv_p(int64_t s, int64_t p0, int64_t p1, int64_t d, int64_t g) {
  TopiConvParams p = {{s, s}, {p0, p1, p0, p1}, {d, d}, g};
  return p;
}

#define OUT1(expr) (c->nout = 1, (c->out[0] = (expr)) != NULL)
#define IN(i) c->in[i]

static bool b_conv_pad_stride_bias(Case *c) {
  TopiConvParams p = conv_p(2, 1, 1, 1, 1);
  return OUT1(topi_conv2d_onnx(c->a, "y", IN(0), IN(1), IN(2), &p, &c->err));
}
static bool b_conv_group_dilated(Case *c) {
  TopiConvParams p = conv_p(1, 2, 1, 2, 2);
  return OUT1(topi_conv2d_onnx(c->a, "y", IN(0), IN(1), NULL, &p, &c->err));
}
static bool b_conv_depthwise(Case *c) {
  TopiConvParams p = conv_p(1, 1, 1, 1, 4);
  return OUT1(topi_conv2d_onnx(c->a, "y", IN(0), IN(1), IN(2), &p, &c->err));
}
static bool pool(Case *c, TopiPoolKind k, int64_t pad, bool ceil_mode, bool incl) {
  TopiPoolParams p = {{3, 3}, {2, 2}, {pad, pad, pad, pad}, {1, 1}, ceil_mode, incl};
  return OUT1(topi_pool2d_onnx(c->a, "y", k, IN(0), &p, &c->err));
}
static bool b_maxpool_ceil(Case *c) { return pool(c, TOPI_POOL_MAX, 0, true, false); }
static bool b_maxpool_pad(Case *c) { return pool(c, TOPI_POOL_MAX, 1, false, false); }
static bool b_avgpool_exclude_pad(Case *c) { return pool(c, TOPI_POOL_AVG, 1, false, false); }
static bool b_avgpool_include_pad(Case *c) { return pool(c, TOPI_POOL_AVG, 1, false, true); }
static bool b_global_avgpool(Case *c) { return OUT1(topi_global_pool(c->a, "y", TOPI_POOL_AVG, IN(0), &c->err)); }
static bool b_gemm_transb_bias(Case *c) {
  return OUT1(topi_gemm(c->a, "y", IN(0), IN(1), IN(2), 0.5, 2.0, false, true, &c->err));
}
static bool b_matmul(Case *c) { return OUT1(topi_matmul_nd(c->a, "y", IN(0), IN(1), &c->err)); }
static bool b_softmax_axis1(Case *c) { return OUT1(topi_softmax_axis(c->a, "y", IN(0), 1, &c->err)); }
static bool b_layernorm_last(Case *c) {
  return OUT1(topi_layer_norm_onnx(c->a, "y", IN(0), IN(1), IN(2), -1, 1e-5, &c->err));
}
static bool b_reduce_mean_keep(Case *c) {
  int64_t axes[1] = {1};
  return OUT1(topi_reduce(c->a, "y", TOPI_REDUCE_MEAN, IN(0), axes, 1, true, false, &c->err));
}
static bool b_reduce_max_drop(Case *c) {
  int64_t axes[2] = {0, 2};
  return OUT1(topi_reduce(c->a, "y", TOPI_REDUCE_MAX, IN(0), axes, 2, false, false, &c->err));
}
static bool b_batchnorm(Case *c) {
  return OUT1(topi_batch_norm(c->a, "y", IN(0), IN(1), IN(2), IN(3), IN(4), 1e-5, &c->err));
}
static bool resize(Case *c, const int64_t *out, const double *scales, TopiResizeMode m,
                   TopiResizeCoord co, TopiResizeNearest n) {
  return OUT1(topi_resize(c->a, "y", IN(0), out, scales, m, co, n, &c->err));
}
static const double scale2[4] = {1, 1, 2, 2};
static bool b_resize_nearest_asym_floor(Case *c) {
  return resize(c, (int64_t[]){1, 2, 6, 8}, scale2, TOPI_RESIZE_NEAREST, TOPI_COORD_ASYMMETRIC, TOPI_NEAREST_FLOOR);
}
static bool b_resize_nearest_half_pixel(Case *c) {
  return resize(c, (int64_t[]){1, 2, 5, 7}, NULL, TOPI_RESIZE_NEAREST, TOPI_COORD_HALF_PIXEL,
                TOPI_NEAREST_ROUND_PREFER_FLOOR);
}
static bool b_resize_linear_half_pixel(Case *c) {
  return resize(c, (int64_t[]){1, 2, 5, 7}, NULL, TOPI_RESIZE_LINEAR, TOPI_COORD_HALF_PIXEL, 0);
}
static bool b_resize_linear_align(Case *c) {
  return resize(c, (int64_t[]){1, 2, 6, 8}, scale2, TOPI_RESIZE_LINEAR, TOPI_COORD_ALIGN_CORNERS, 0);
}
static bool b_resize_linear_pytorch(Case *c) {
  return resize(c, (int64_t[]){1, 2, 8, 8}, scale2, TOPI_RESIZE_LINEAR, TOPI_COORD_PYTORCH_HALF_PIXEL, 0);
}
static bool b_slice_neg_step(Case *c) {
  int64_t st[2] = {-1, 1}, en[2] = {-1000, 3}, ax[2] = {1, 0}, sp[2] = {-2, 1};
  return OUT1(topi_slice(c->a, "y", IN(0), st, en, ax, sp, 2, &c->err));
}
static bool b_gather_neg(Case *c) { return OUT1(topi_gather(c->a, "y", IN(0), IN(1), 0, &c->err)); }
static bool b_gather_axis1_scalar(Case *c) { return OUT1(topi_gather(c->a, "y", IN(0), IN(1), 1, &c->err)); }
static bool b_pad_reflect(Case *c) {
  int64_t p[6] = {0, 1, 2, 0, 1, 1};
  return OUT1(topi_pad_onnx(c->a, "y", IN(0), p, TOPI_PAD_REFLECT, 0, &c->err));
}
static bool b_pad_constant(Case *c) {
  int64_t p[4] = {1, 0, 0, 2};
  return OUT1(topi_pad_onnx(c->a, "y", IN(0), p, TOPI_PAD_CONSTANT, 0.5, &c->err));
}
static bool b_pad_edge(Case *c) {
  int64_t p[4] = {1, 2, 2, 1};
  return OUT1(topi_pad_onnx(c->a, "y", IN(0), p, TOPI_PAD_EDGE, 0, &c->err));
}
static bool b_where_bcast(Case *c) { return OUT1(topi_where(c->a, "y", IN(0), IN(1), IN(2), &c->err)); }
static bool b_div_int(Case *c) { return OUT1(topi_binary(c->a, "y", TOPI_DIV, IN(0), IN(1), &c->err)); }
static bool b_pow_bcast(Case *c) { return OUT1(topi_binary(c->a, "y", TOPI_POW, IN(0), IN(1), &c->err)); }
static bool b_cast_f32_i64(Case *c) { return OUT1(topi_cast(c->a, "y", IN(0), DT_I64, &c->err)); }
static bool b_equal_i64(Case *c) { return OUT1(topi_binary(c->a, "y", TOPI_EQUAL, IN(0), IN(1), &c->err)); }
static bool unary(Case *c, TopiUnaryOp op, double alpha, double beta) {
  TopiUnaryParams p = {.alpha = alpha, .beta = beta};
  if (op == TOPI_CLIP) p.lo = -1, p.hi = 2;
  return OUT1(topi_unary(c->a, "y", op, IN(0), &p, &c->err));
}
static bool b_hardswish(Case *c) { return unary(c, TOPI_HARD_SWISH, 0, 0); }
static bool b_hardsigmoid(Case *c) { return unary(c, TOPI_HARD_SIGMOID, 0.3, 0.4); }
static bool b_leakyrelu(Case *c) { return unary(c, TOPI_LEAKY_RELU, 0.2, 0); }
static bool b_erf(Case *c) { return unary(c, TOPI_ERF, 0, 0); }
static bool b_clip(Case *c) { return unary(c, TOPI_CLIP, 0, 0); }
static bool b_sigmoid(Case *c) { return unary(c, TOPI_SIGMOID, 0, 0); }
static bool b_sum3(Case *c) {
  const TeTensor *xs[3] = {IN(0), IN(1), IN(2)};
  return OUT1(topi_variadic(c->a, "y", TOPI_ADD, xs, 3, &c->err));
}
static bool b_prelu(Case *c) { return OUT1(topi_binary(c->a, "y", TOPI_PRELU, IN(0), IN(1), &c->err)); }
static bool b_transpose(Case *c) {
  int64_t perm[3] = {1, 2, 0};
  return OUT1(topi_transpose_perm(c->a, "y", IN(0), perm, &c->err));
}
static bool b_concat_axis1(Case *c) {
  const TeTensor *xs[2] = {IN(0), IN(1)};
  return OUT1(topi_concat(c->a, "y", xs, 2, 1, &c->err));
}
static bool b_split_sizes(Case *c) {
  int64_t sizes[3] = {1, 2, 3};
  c->nout = 3;
  return topi_split(c->a, "y", IN(0), 1, sizes, 3, c->out, &c->err);
}
static bool b_expand(Case *c) { return OUT1(topi_expand(c->a, "y", IN(0), (int64_t[]){2, 1, 4}, 3, &c->err)); }
static bool b_tile(Case *c) { return OUT1(topi_tile(c->a, "y", IN(0), (int64_t[]){2, 2}, &c->err)); }
static bool b_flatten_axis2(Case *c) { return OUT1(topi_flatten(c->a, "y", IN(0), 2, &c->err)); }
static bool b_reshape_zero_neg(Case *c) {
  return OUT1(topi_reshape(c->a, "y", IN(0), (int64_t[]){0, -1, 2}, 3, &c->err));
}
static bool b_squeeze(Case *c) { return OUT1(topi_squeeze(c->a, "y", IN(0), (int64_t[]){0, 2}, 2, &c->err)); }
static bool b_unsqueeze(Case *c) { return OUT1(topi_unsqueeze(c->a, "y", IN(0), (int64_t[]){0, -1}, 2, &c->err)); }

static const struct { const char *name; BuildFn build; } cases[] = {
#define C(n) {#n, b_##n}
    C(conv_pad_stride_bias), C(conv_group_dilated), C(conv_depthwise), C(maxpool_ceil),
    C(maxpool_pad), C(avgpool_exclude_pad), C(avgpool_include_pad), C(global_avgpool),
    C(gemm_transb_bias), {"matmul_batch_bcast", b_matmul}, {"matmul_1d", b_matmul},
    C(softmax_axis1), C(layernorm_last), C(reduce_mean_keep), C(reduce_max_drop), C(batchnorm),
    C(resize_nearest_asym_floor), C(resize_nearest_half_pixel), C(resize_linear_half_pixel),
    C(resize_linear_align), C(resize_linear_pytorch), C(slice_neg_step), C(gather_neg),
    C(gather_axis1_scalar), C(pad_reflect), C(pad_constant), C(pad_edge), C(where_bcast),
    C(div_int), C(pow_bcast), C(cast_f32_i64), C(equal_i64), C(hardswish), C(hardsigmoid),
    C(leakyrelu), C(erf), C(clip), C(sigmoid), C(sum3), C(prelu), C(transpose),
    C(concat_axis1), C(split_sizes), C(expand), C(tile), C(flatten_axis2),
    C(reshape_zero_neg), C(squeeze), C(unsqueeze),
#undef C
};

static DType dtype_from_dl(DLDataType t) {
  if (t.code == DL_DTYPE_BOOL_CODE) return DT_BOOL1;
  return dtype_make((DTypeCode)t.code, t.bits, 1);
}

static const char *case_dir(void) {
  const char *d = getenv("LOOM_OP_CASES");
  if (!d) fail_msg("LOOM_OP_CASES is not set (the op_cases fixture writes the cases)");
  return d;
}

static bool file_exists(const char *p) { return access(p, R_OK) == 0; }

static void compare(const char *cname, int k, const TeTensor *t, const void *got, const NpyArray *want) {
  if (want->ndim != t->ndim) fail_msg("%s out%d: rank %d, ORT has %d", cname, k, t->ndim, want->ndim);
  for (int d = 0; d < t->ndim; d++)
    if (want->shape[d] != t->shape[d])
      fail_msg("%s out%d: axis %d has %lld, ORT has %lld", cname, k, d, (long long)t->shape[d],
               (long long)want->shape[d]);
  if (!dtype_eq(dtype_from_dl(want->dtype), t->dtype)) fail_msg("%s out%d: dtype differs from ORT's", cname, k);
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
  if (dtype_eq(t->dtype, DT_F32)) {
    const float *g = got, *w = want->data;
    for (int64_t i = 0; i < n; i++) {
      double tol = 1e-5 * fabs((double)w[i]) + 1e-6;
      if (!(fabs((double)g[i] - (double)w[i]) <= tol))
        fail_msg("%s out%d element %lld: got %.9g, ORT %.9g", cname, k, (long long)i, (double)g[i], (double)w[i]);
    }
  } else if (memcmp(got, want->data, (size_t)n * (size_t)dtype_bytes(t->dtype)) != 0) {
    fail_msg("%s out%d: values differ from ORT's", cname, k);
  }
}

static void run_case(const char *dir, const char *cname, BuildFn build) {
  Case c;
  memset(&c, 0, sizeof c);
  c.a = arena_new();
  NpyArray ins[MAX_IO];
  void *data[2 * MAX_IO];
  char path[1024];
  for (c.nin = 0; c.nin < MAX_IO; c.nin++) {
    snprintf(path, sizeof path, "%s/%s/in%d.npy", dir, cname, c.nin);
    if (!file_exists(path)) break;
    LoomError err = {0};
    if (npy_read(path, &ins[c.nin], &err) != LOOM_OK) fail_msg("%s: %s", path, err.msg);
    char nm[8];
    snprintf(nm, sizeof nm, "x%d", c.nin);
    c.in[c.nin] = te_placeholder(c.a, nm, dtype_from_dl(ins[c.nin].dtype), ins[c.nin].ndim,
                                 ins[c.nin].shape, &err);
    if (!c.in[c.nin]) fail_msg("%s: %s", cname, err.msg);
    data[c.nin] = ins[c.nin].data;
  }
  if (c.nin == 0) fail_msg("%s: no inputs found under %s", cname, dir);
  if (!build(&c)) fail_msg("%s: %s", cname, c.err.msg);
  TeTensor *params[2 * MAX_IO];
  for (int i = 0; i < c.nin; i++) params[i] = c.in[i];
  for (int k = 0; k < c.nout; k++) {
    params[c.nin + k] = c.out[k];
    int64_t n = 1;
    for (int d = 0; d < c.out[k]->ndim; d++) n *= c.out[k]->shape[d];
    data[c.nin + k] = calloc((size_t)n, (size_t)dtype_bytes(c.out[k]->dtype));
  }
  PrimFunc *f = te_create_primfunc(c.a, cname, params, c.nin + c.nout, &c.err);
  if (!f) fail_msg("%s: %s", cname, c.err.msg);
  if (tir_interpret(f, data, &c.err) != LOOM_OK) fail_msg("%s: interpreter: %s", cname, c.err.msg);
  for (int k = 0; k < c.nout; k++) {
    NpyArray want;
    LoomError err = {0};
    snprintf(path, sizeof path, "%s/%s/out%d.npy", dir, cname, k);
    if (npy_read(path, &want, &err) != LOOM_OK) fail_msg("%s: %s", path, err.msg);
    compare(cname, k, c.out[k], data[c.nin + k], &want);
    npy_free(&want);
    free(data[c.nin + k]);
  }
  snprintf(path, sizeof path, "%s/%s/out%d.npy", dir, cname, c.nout);
  if (file_exists(path)) fail_msg("%s: ORT produced more outputs than the %d built here", cname, c.nout);
  for (int i = 0; i < c.nin; i++) npy_free(&ins[i]);
  arena_free(c.a);
}

static void test_ops_vs_onnxruntime(void **state) {
  (void)state;
  const char *dir = case_dir();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(dir, cases[i].name, cases[i].build);
  printf("%zu op cases agree with ONNX Runtime\n", sizeof cases / sizeof cases[0]);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_ops_vs_onnxruntime)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
