/* Public API: context, tensors, expression builders, compute definitions and
 * function creation — the happy paths (checked by building and running the
 * kernels against C reference loops) and every refusal. */
#include "api_test_util.h"

#include <math.h>

static void test_context(void **state) {
  (void)state;
  loom_ctx *ctx = test_ctx();
  assert_string_equal(loom_ctx_error(ctx), "");
  assert_int_equal(loom_ctx_status(ctx), LOOM_OK);
  assert_int_equal(loom_ctx_set_num_threads(ctx, -1), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_ctx_set_num_threads", "-1");
  assert_string_equal(loom_ctx_error(ctx), "");
  assert_int_equal(loom_ctx_set_num_threads(ctx, 2), LOOM_OK);
  assert_int_equal(loom_ctx_set_cache_dir(ctx, ""), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_ctx_set_cache_dir", "empty");
  assert_int_equal(loom_ctx_set_include_dir(ctx, ""), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_ctx_set_include_dir");
  assert_int_equal(loom_ctx_set_include_dir(ctx, NULL), LOOM_OK);
  /* No context: statuses and a static message, never a crash. */
  assert_non_null(strstr(loom_ctx_error(NULL), "NULL"));
  assert_int_equal(loom_ctx_status(NULL), LOOM_ERR_INVALID_ARG);
  assert_int_equal(loom_ctx_set_num_threads(NULL, 1), LOOM_ERR_INVALID_ARG);
  assert_int_equal(loom_ctx_set_cache_dir(NULL, "/tmp"), LOOM_ERR_INVALID_ARG);
  assert_int_equal(loom_ctx_set_cflags(NULL, NULL), LOOM_ERR_INVALID_ARG);
  loom_ctx_clear_error(NULL);
  assert_null(loom_placeholder(NULL, "A", LOOM_F32, 1, (int64_t[]){4}));
  assert_null(loom_int(NULL, LOOM_I32, 1));
  assert_string_equal(loom_dtype_name(LOOM_F32), "f32");
  assert_string_equal(loom_dtype_name(LOOM_BOOL), "bool");
  assert_string_equal(loom_dtype_name((loom_dtype)42), "?");
  loom_ctx_destroy(ctx);
  loom_ctx_destroy(NULL);
}

static void test_placeholder(void **state) {
  (void)state;
  loom_ctx *ctx = test_ctx();
  loom_tensor *A = loom_placeholder(ctx, "A", LOOM_I32, 3, (int64_t[]){2, 3, 4});
  must(ctx, A);
  assert_int_equal(loom_tensor_ndim(A), 3);
  assert_int_equal(loom_tensor_dim(ctx, A, 2), 4);
  assert_int_equal(loom_tensor_dtype(A), LOOM_I32);
  assert_string_equal(loom_tensor_name(A), "A");
  assert_int_equal(loom_tensor_dim(ctx, A, 3), -1);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_tensor_dim", "axis 3", "\"A\"", "rank 3");
  assert_int_equal(loom_tensor_dim(ctx, A, -1), -1);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "axis -1");
  assert_int_equal(loom_tensor_ndim(NULL), -1);
  assert_null(loom_tensor_name(NULL));

  assert_null(loom_placeholder(ctx, NULL, LOOM_F32, 1, (int64_t[]){4}));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_placeholder", "NULL");
  assert_null(loom_placeholder(ctx, "", LOOM_F32, 1, (int64_t[]){4}));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "empty");
  assert_null(loom_placeholder(ctx, "X", LOOM_F32, -1, (int64_t[]){4}));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "\"X\"", "ndim is -1");
  assert_null(loom_placeholder(ctx, "X", LOOM_F32, 9, (int64_t[]){4}));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "ndim is 9");
  assert_null(loom_placeholder(ctx, "X", LOOM_F32, 2, NULL));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "shape is NULL");
  assert_null(loom_placeholder(ctx, "X", LOOM_F32, 2, (int64_t[]){4, 0}));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "dimension 1 is 0");
  assert_null(loom_placeholder(ctx, "X", (loom_dtype)99, 1, (int64_t[]){4}));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "dtype 99");
  loom_ctx_destroy(ctx);
}

static void test_builder_errors(void **state) {
  (void)state;
  loom_ctx *ctx = test_ctx();
  loom_ctx *other = test_ctx();
  loom_tensor *A = loom_placeholder(ctx, "A", LOOM_F32, 2, (int64_t[]){4, 8});
  loom_expr *i = loom_index(ctx, 1), *f = loom_float(ctx, LOOM_F32, 1.5);
  loom_expr *b = loom_lt(ctx, i, i);
  must(ctx, A && i && f && b);
  assert_int_equal(loom_expr_dtype(b), LOOM_BOOL);
  assert_int_equal(loom_expr_dtype(f), LOOM_F32);

  assert_null(loom_int(ctx, LOOM_I8, 200));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_int", "200", "i8");
  assert_null(loom_int(ctx, LOOM_U8, -1));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "u8");
  assert_null(loom_int(ctx, LOOM_BOOL, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "bool");
  assert_null(loom_int(ctx, LOOM_F32, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "expected an integer");
  assert_null(loom_float(ctx, LOOM_I32, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_float", "expected f32 or f64");
  assert_null(loom_reduce_axis(ctx, "k", 0));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_reduce_axis", "\"k\"", "extent 0");
  assert_null(loom_reduce_axis(ctx, NULL, 4));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_reduce_axis", "NULL");

  assert_null(loom_add(ctx, i, f));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_add", "differ", "i64", "f32", "loom_cast");
  assert_null(loom_floordiv(ctx, f, f));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_floordiv", "expected integer");
  assert_null(loom_mod(ctx, f, f));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_mod");
  assert_null(loom_mul(ctx, b, b));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_mul", "expected numeric");
  assert_null(loom_and(ctx, i, i));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_and", "expected bool");
  assert_null(loom_not(ctx, f));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_not", "expected bool");
  assert_null(loom_floordiv(ctx, i, loom_index(ctx, 0)));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "division by the constant 0");
  assert_null(loom_select(ctx, i, f, f));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_select", "cond is i64");
  assert_null(loom_select(ctx, b, i, f));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_select", "t is i64 but f is f32");
  assert_null(loom_cast(ctx, (loom_dtype)-3, f));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_cast");
  assert_ptr_equal(loom_cast(ctx, LOOM_F32, f), f); /* no-op cast */

  assert_null(loom_call(ctx, "expo", &f, 1));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_call", "unknown function \"expo\"");
  assert_null(loom_call(ctx, "pow", &f, 1));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "pow takes 2 arguments, got 1");
  assert_null(loom_call(ctx, "exp", &i, 1));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "exp: argument 0 is i64");
  assert_null(loom_call(ctx, "pow", (loom_expr *[]){f, loom_float(ctx, LOOM_F64, 1)}, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "argument 1 is f64, expected f32");

  assert_null(loom_load(ctx, A, &i, 1));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_load", "\"A\" has rank 2, got 1");
  assert_null(loom_load(ctx, A, (loom_expr *[]){i, loom_int(ctx, LOOM_I32, 0)}, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "index 1 has dtype i32, expected i64");
  assert_null(loom_load(ctx, A, (loom_expr *[]){i, loom_index(ctx, 8)}, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "constant index 8 out of range [0, 8)");
  assert_null(loom_load(ctx, A, NULL, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "idx is NULL");
  assert_null(loom_load(ctx, NULL, &i, 1));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "argument t is NULL");

  loom_expr *k = loom_reduce_axis(ctx, "k", 8);
  loom_expr *ak = loom_load(ctx, A, (loom_expr *[]){i, k}, 2);
  must(ctx, k && ak);
  assert_null(loom_sum(ctx, ak, &i, 1));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_sum", "axes[0] is 1", "loom_reduce_axis");
  assert_null(loom_sum(ctx, ak, (loom_expr *[]){k, k}, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "axis \"k\" given twice");
  assert_null(loom_sum(ctx, ak, NULL, 1));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "axes is NULL");
  assert_null(loom_sum(ctx, ak, &k, 0));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "0 axes");
  assert_null(loom_max_reduce(ctx, b, &k, 1));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_max_reduce", "src is bool");
  assert_null(loom_min_reduce(ctx, loom_sum(ctx, ak, &k, 1), &k, 1));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "itself a reduction");
  assert_null(loom_reduce_where(ctx, LOOM_REDUCE_SUM, ak, &k, 1, NULL));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_reduce_where", "cond is NULL");
  assert_null(loom_reduce_where(ctx, LOOM_REDUCE_SUM, ak, &k, 1, f));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "cond is f32, expected bool");
  assert_null(loom_reduce_where(ctx, (loom_reduce_op)7, ak, &k, 1, b));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "op 7");

  /* A NULL operand from a failed builder keeps the first message. */
  assert_null(loom_add(ctx, loom_mul(ctx, loom_int(ctx, LOOM_I8, 999), i), i));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_int", "999");
  /* ... and reports itself when there was none. */
  assert_null(loom_add(ctx, NULL, i));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_add", "argument a is NULL");
  /* Wrong kind of handle, another context's handle. */
  assert_null(loom_add(ctx, (loom_expr *)A, i));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "argument a is a tensor, expected a expression");
  loom_expr *j = loom_index(other, 2);
  assert_null(loom_sub(ctx, i, j));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "argument b belongs to another context");
  assert_null(loom_load(ctx, (loom_tensor *)i, &i, 1));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "is a expression, expected a tensor");

  assert_string_equal(loom_expr_text(ctx, loom_add(ctx, loom_mul(ctx, i, i), loom_index(ctx, 3))),
                      "((1 * 1) + 3)");
  assert_null(loom_expr_text(ctx, NULL));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_expr_text");
  loom_ctx_destroy(other);
  loom_ctx_destroy(ctx);
}

/* ---- compute definitions, checked by running them ---- */

typedef struct Ew {
  loom_tensor *X, *N;
} Ew;

/* Y[i, j] = select(X > 0, exp(X) * 2, cast(f32, floormod(i * 3 + j, 5)) - X)
 *           + max(X, -0.25) / 2 + sqrt(fabs(X)) + pow(min(X, 0.5), 2) */
static loom_expr *ew_body(loom_ctx *ctx, loom_expr *const *ax, void *user) {
  Ew *e = user;
  loom_expr *x = loom_load(ctx, e->X, ax, 2);
  loom_expr *pos = loom_gt(ctx, x, loom_float(ctx, LOOM_F32, 0));
  loom_expr *ex = loom_call(ctx, "exp", &x, 1);
  loom_expr *idx = loom_floormod(ctx, loom_add(ctx, loom_mul(ctx, ax[0], loom_index(ctx, 3)), ax[1]),
                                 loom_index(ctx, 5));
  loom_expr *sel = loom_select(ctx, pos, loom_mul(ctx, ex, loom_float(ctx, LOOM_F32, 2)),
                               loom_sub(ctx, loom_cast(ctx, LOOM_F32, idx), x));
  loom_expr *mx = loom_div(ctx, loom_max(ctx, x, loom_float(ctx, LOOM_F32, -0.25)),
                           loom_float(ctx, LOOM_F32, 2));
  loom_expr *fx = loom_call(ctx, "fabs", &x, 1);
  loom_expr *sq = loom_call(ctx, "sqrt", &fx, 1);
  loom_expr *pw = loom_call(ctx, "pow", (loom_expr *[]){loom_min(ctx, x, loom_float(ctx, LOOM_F32, 0.5)),
                                                        loom_float(ctx, LOOM_F32, 2)}, 2);
  return loom_add(ctx, loom_add(ctx, loom_add(ctx, sel, mx), sq), pw);
}

/* Z[i, j] = select((N % 3 == 0 || !(N < 2)) && N != 7 && -10 <= N <= 10,
 *                  N / 2 + floordiv(N, -3), -N) as i32 */
static loom_expr *int_body(loom_ctx *ctx, loom_expr *const *ax, void *user) {
  Ew *e = user;
  loom_expr *n = loom_load(ctx, e->N, ax, 2);
  loom_expr *c0 = loom_eq(ctx, loom_mod(ctx, n, loom_int(ctx, LOOM_I32, 3)), loom_int(ctx, LOOM_I32, 0));
  loom_expr *c1 = loom_not(ctx, loom_lt(ctx, n, loom_int(ctx, LOOM_I32, 2)));
  loom_expr *c2 = loom_ne(ctx, n, loom_int(ctx, LOOM_I32, 7));
  loom_expr *c3 = loom_and(ctx, loom_ge(ctx, n, loom_int(ctx, LOOM_I32, -10)),
                           loom_le(ctx, n, loom_int(ctx, LOOM_I32, 10)));
  loom_expr *c = loom_and(ctx, loom_and(ctx, loom_or(ctx, c0, c1), c2), c3);
  loom_expr *t = loom_add(ctx, loom_div(ctx, n, loom_int(ctx, LOOM_I32, 2)),
                          loom_floordiv(ctx, n, loom_int(ctx, LOOM_I32, -3)));
  loom_expr *f = loom_sub(ctx, loom_int(ctx, LOOM_I32, 0), n);
  return loom_select(ctx, c, t, f);
}

typedef struct Red {
  loom_tensor *X;
  loom_expr *k;
  int which;
} Red;

static loom_expr *red_body(loom_ctx *ctx, loom_expr *const *ax, void *user) {
  Red *r = user;
  loom_expr *x = loom_load(ctx, r->X, (loom_expr *[]){ax[0], r->k}, 2);
  if (r->which == 0) return loom_max_reduce(ctx, x, &r->k, 1);
  if (r->which == 1) return loom_min_reduce(ctx, x, &r->k, 1);
  loom_expr *even = loom_eq(ctx, loom_floormod(ctx, r->k, loom_index(ctx, 2)), loom_index(ctx, 0));
  return loom_reduce_where(ctx, LOOM_REDUCE_SUM, x, &r->k, 1, even);
}

static void test_compute_values(void **state) {
  (void)state;
  enum { R = 5, C = 12 };
  loom_ctx *ctx = test_ctx();
  Ew e = {loom_placeholder(ctx, "X", LOOM_F32, 2, (int64_t[]){R, C}),
          loom_placeholder(ctx, "N", LOOM_I32, 2, (int64_t[]){R, C})};
  loom_tensor *Y = loom_compute(ctx, "Y", 2, (int64_t[]){R, C}, ew_body, &e);
  loom_tensor *Z = loom_compute(ctx, "Z", 2, (int64_t[]){R, C}, int_body, &e);
  must(ctx, Y && Z);
  assert_int_equal(loom_tensor_dtype(Z), LOOM_I32);
  loom_tensor *outs[3];
  for (int w = 0; w < 3; w++) {
    Red *r = malloc(sizeof *r); /* callbacks run during loom_compute only */
    *r = (Red){e.X, loom_reduce_axis(ctx, "k", C), w};
    outs[w] = loom_compute(ctx, w == 0 ? "Rmax" : w == 1 ? "Rmin" : "Reven", 1, (int64_t[]){R},
                           red_body, r);
    free(r);
    must(ctx, outs[w]);
  }
  loom_func *fs[3] = {
      loom_func_create(ctx, "ew", (loom_tensor *[]){e.X, Y}, 2),
      loom_func_create(ctx, "ints", (loom_tensor *[]){e.N, Z}, 2),
      loom_func_create(ctx, "reds", (loom_tensor *[]){e.X, outs[0], outs[1], outs[2]}, 4),
  };
  must(ctx, fs[0] && fs[1] && fs[2]);
  assert_string_equal(loom_func_name(fs[2]), "reds");
  assert_int_equal(loom_func_num_params(fs[2]), 4);
  assert_non_null(strstr(loom_func_text(ctx, fs[1]), "block Z("));
  loom_module *m = loom_build(ctx, fs, 3);
  must(ctx, m);

  TestTensor x, n, y, z, r[3];
  test_tensor_init(&x, LOOM_F32, 2, (int64_t[]){R, C}, 4);
  test_tensor_init(&n, LOOM_I32, 2, (int64_t[]){R, C}, 4);
  test_tensor_init(&y, LOOM_F32, 2, (int64_t[]){R, C}, 4);
  test_tensor_init(&z, LOOM_I32, 2, (int64_t[]){R, C}, 4);
  for (int w = 0; w < 3; w++) test_tensor_init(&r[w], LOOM_F32, 1, (int64_t[]){R}, 4);
  float *xv = x.data;
  int32_t *nv = n.data;
  uint64_t seed = 7;
  for (int q = 0; q < R * C; q++) {
    xv[q] = test_rand_f32(&seed);
    nv[q] = q % 23 - 11;
  }
  must(ctx, !loom_module_run(m, "ew", (DLTensor *[]){&x.dl, &y.dl}, 2));
  must(ctx, !loom_module_run(m, "ints", (DLTensor *[]){&n.dl, &z.dl}, 2));
  must(ctx, !loom_module_run(m, "reds", (DLTensor *[]){&x.dl, &r[0].dl, &r[1].dl, &r[2].dl}, 4));
  for (int i = 0; i < R; i++) {
    float mx = -INFINITY, mn = INFINITY, ev = 0;
    for (int j = 0; j < C; j++) {
      float v = xv[i * C + j];
      float idx = (float)((i * 3 + j) % 5);
      float want = (v > 0 ? expf(v) * 2 : idx - v) + fmaxf(v, -0.25f) / 2 + sqrtf(fabsf(v)) +
                   powf(fminf(v, 0.5f), 2);
      float got = ((float *)y.data)[i * C + j];
      if (!(fabsf(got - want) <= 1e-5f * fmaxf(1, fabsf(want))))
        fail_msg("Y[%d, %d] = %g, expected %g", i, j, got, want);
      int32_t nn = nv[i * C + j];
      int32_t fd = (int32_t)floor((double)nn / -3.0);
      bool in = nn >= -10 && nn <= 10;
      int32_t zw = ((nn % 3 == 0 || !(nn < 2)) && nn != 7 && in) ? nn / 2 + fd : -nn;
      assert_int_equal(((int32_t *)z.data)[i * C + j], zw);
      mx = fmaxf(mx, v), mn = fminf(mn, v);
      if (j % 2 == 0) ev += v;
    }
    assert_float_equal(((float *)r[0].data)[i], mx, 0);
    assert_float_equal(((float *)r[1].data)[i], mn, 0);
    assert_float_equal(((float *)r[2].data)[i], ev, 1e-5);
  }
  free(x.data), free(n.data), free(y.data), free(z.data);
  for (int w = 0; w < 3; w++) free(r[w].data);
  loom_ctx_destroy(ctx);
}

static loom_expr *fails_inside(loom_ctx *ctx, loom_expr *const *ax, void *user) {
  (void)user;
  return loom_add(ctx, ax[0], loom_float(ctx, LOOM_F32, 1));
}
static loom_expr *returns_null(loom_ctx *ctx, loom_expr *const *ax, void *user) {
  (void)ctx, (void)ax, (void)user;
  return NULL;
}
static loom_expr *returns_axis(loom_ctx *ctx, loom_expr *const *ax, void *user) {
  (void)ax, (void)user;
  return loom_reduce_axis(ctx, "r", 3);
}
static loom_expr *returns_tensor(loom_ctx *ctx, loom_expr *const *ax, void *user) {
  (void)ctx, (void)ax;
  return user;
}
static loom_expr *nested_reduce(loom_ctx *ctx, loom_expr *const *ax, void *user) {
  loom_tensor *A = user;
  loom_expr *k = loom_reduce_axis(ctx, "k", 4);
  loom_expr *s = loom_sum(ctx, loom_load(ctx, A, (loom_expr *[]){ax[0], k}, 2), &k, 1);
  return loom_add(ctx, s, loom_float(ctx, LOOM_F32, 1));
}
static loom_expr *copy_body(loom_ctx *ctx, loom_expr *const *ax, void *user) {
  return loom_load(ctx, user, ax, 2);
}

static void test_compute_and_func_errors(void **state) {
  (void)state;
  loom_ctx *ctx = test_ctx();
  loom_tensor *A = loom_placeholder(ctx, "A", LOOM_F32, 2, (int64_t[]){4, 4});
  must(ctx, A);
  assert_null(loom_compute(ctx, "T", 1, (int64_t[]){4}, fails_inside, NULL));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_compute: tensor \"T\"", "loom_add", "differ");
  assert_null(loom_compute(ctx, "T", 1, (int64_t[]){4}, returns_null, NULL));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_compute", "\"T\"", "returned NULL");
  assert_null(loom_compute(ctx, "T", 1, (int64_t[]){4}, returns_axis, NULL));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "bare reduce axis");
  assert_null(loom_compute(ctx, "T", 1, (int64_t[]){4}, returns_tensor, A));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "\"T\"", "is a tensor, expected a expression");
  assert_null(loom_compute(ctx, "T", 1, (int64_t[]){4}, NULL, NULL));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "fn is NULL");
  assert_null(loom_compute(ctx, "T", 1, (int64_t[]){0}, copy_body, A));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "dimension 0 is 0");
  loom_tensor *T = loom_compute(ctx, "T", 1, (int64_t[]){4}, nested_reduce, A);
  if (T) { /* te may accept it at compute time; creating the function must refuse */
    assert_null(loom_func_create(ctx, "f", (loom_tensor *[]){A, T}, 2));
  } else {
    assert_int_not_equal(loom_ctx_status(ctx), LOOM_OK);
  }
  assert_non_null(strstr(loom_ctx_error(ctx), "T"));
  loom_ctx_clear_error(ctx);

  loom_tensor *B = loom_compute(ctx, "B", 2, (int64_t[]){4, 4}, copy_body, A);
  must(ctx, B);
  assert_null(loom_func_create(ctx, "1f", (loom_tensor *[]){A, B}, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_func_create", "\"1f\" is not a C identifier");
  assert_null(loom_func_create(ctx, NULL, (loom_tensor *[]){A, B}, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "(NULL)");
  assert_null(loom_func_create(ctx, "f", (loom_tensor *[]){A, B}, 0));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "0 arguments");
  assert_null(loom_func_create(ctx, "f", NULL, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "args is NULL");
  assert_null(loom_func_create(ctx, "f", (loom_tensor *[]){A, A, B}, 3));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "\"A\" is argument 0 and 1");
  assert_null(loom_func_create(ctx, "f", (loom_tensor *[]){A, NULL}, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "function \"f\", argument 1", "NULL");
  assert_null(loom_func_create(ctx, "f", (loom_tensor *[]){B}, 1));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_func_create", "A");
  assert_null(loom_func_text(ctx, NULL));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_func_text");
  assert_null(loom_func_name(NULL));
  assert_int_equal(loom_func_num_params(NULL), -1);
  loom_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_context),
      cmocka_unit_test(test_placeholder),
      cmocka_unit_test(test_builder_errors),
      cmocka_unit_test(test_compute_values),
      cmocka_unit_test(test_compute_and_func_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
