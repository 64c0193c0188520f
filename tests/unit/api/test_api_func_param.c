/* Public API: loom_func_param describes each parameter (name, dtype, shape,
 * alignment, whether it is written) of a defined, a scheduled and a parsed
 * function, and refuses what it cannot describe. */
#include "api_test_util.h"

enum { M = 12, N = 8, K = 5 };

static loom_tensor *A, *B;
static loom_expr *matmul_body(loom_ctx *ctx, loom_expr *const *ij, void *user) {
  loom_expr *k = user;
  return loom_sum(ctx, loom_mul(ctx, loom_load(ctx, A, (loom_expr *[]){ij[0], k}, 2),
                                loom_load(ctx, B, (loom_expr *[]){k, ij[1]}, 2)), &k, 1);
}

static void expect_param(loom_ctx *ctx, const loom_func *f, int i, const char *name,
                         loom_dtype dt, int ndim, const int64_t *shape, int align, int written) {
  loom_param p;
  must(ctx, !loom_func_param(ctx, f, i, &p));
  assert_string_equal(p.name, name);
  assert_int_equal(p.dtype, dt);
  assert_int_equal(p.ndim, ndim);
  for (int d = 0; d < ndim; d++) assert_int_equal(p.shape[d], shape[d]);
  assert_int_equal(p.align, align);
  assert_int_equal(p.written, written);
}

static void test_defined_and_scheduled(void **state) {
  (void)state;
  loom_ctx *ctx = test_ctx();
  A = loom_placeholder(ctx, "A", LOOM_F32, 2, (int64_t[]){M, K});
  B = loom_placeholder(ctx, "B", LOOM_F32, 2, (int64_t[]){K, N});
  loom_tensor *C = loom_compute(ctx, "C", 2, (int64_t[]){M, N}, matmul_body,
                                loom_reduce_axis(ctx, "k", K));
  loom_func *f = loom_func_create(ctx, "matmul", (loom_tensor *[]){A, B, C}, 3);
  must(ctx, f);
  expect_param(ctx, f, 0, "A", LOOM_F32, 2, (int64_t[]){M, K}, 4, 0);
  expect_param(ctx, f, 1, "B", LOOM_F32, 2, (int64_t[]){K, N}, 4, 0);
  expect_param(ctx, f, 2, "C", LOOM_F32, 2, (int64_t[]){M, N}, 4, 1);

  /* After cache_write only the copy-out block stores to C: still written. */
  loom_sched *s = loom_sched_create(ctx, f, 0);
  must(ctx, loom_sched_cache_write(s, loom_sched_get_block(s, "C"), 0, LOOM_SCOPE_LOCAL) >= 0);
  loom_func *g = loom_sched_func(s);
  must(ctx, g);
  expect_param(ctx, g, 0, "A", LOOM_F32, 2, (int64_t[]){M, K}, 4, 0);
  expect_param(ctx, g, 2, "C", LOOM_F32, 2, (int64_t[]){M, N}, 4, 1);

  loom_param p;
  assert_int_equal(loom_func_param(ctx, f, 3, &p), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_func_param", "\"matmul\" has 3 parameters",
               "index 3");
  assert_int_equal(loom_func_param(ctx, f, -1, &p), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "index -1");
  assert_int_equal(loom_func_param(ctx, f, 0, NULL), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "out is NULL");
  assert_int_equal(loom_func_param(ctx, (loom_func *)C, 0, &p), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_func_param", "tensor, expected a function");
  assert_int_equal(loom_func_param(ctx, NULL, 0, &p), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "argument f is NULL");
  assert_int_equal(loom_func_param(NULL, f, 0, &p), LOOM_ERR_INVALID_ARG);

  loom_ctx *other = test_ctx();
  assert_int_equal(loom_func_param(other, f, 0, &p), LOOM_ERR_INVALID_ARG);
  expect_error(other, LOOM_ERR_INVALID_ARG, "another context");
  loom_ctx_destroy(other);
  loom_ctx_destroy(ctx);
}

static void test_parsed(void **state) {
  (void)state;
  loom_ctx *ctx = test_ctx();
  /* Declared alignment, a bool input, an i64 output. */
  loom_func *f = loom_func_parse(ctx,
      "func pick(X: i64[6] align(64), M: bool[6], Y: i64[6]) {\n"
      "  block root() {\n"
      "    for i in 0:6 {\n"
      "      block Y(vi: spatial[0:6] = i) {\n"
      "        reads X[vi], M[vi]\n"
      "        writes Y[vi]\n"
      "        Y[vi] = select(M[vi], X[vi], (X[vi] + X[vi]))\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n");
  must(ctx, f);
  expect_param(ctx, f, 0, "X", LOOM_I64, 1, (int64_t[]){6}, 64, 0);
  expect_param(ctx, f, 1, "M", LOOM_BOOL, 1, (int64_t[]){6}, 1, 0);
  expect_param(ctx, f, 2, "Y", LOOM_I64, 1, (int64_t[]){6}, 8, 1);

  /* f16 has no loom_dtype: described as unsupported, not misreported. */
  loom_func *h = loom_func_parse(ctx,
      "func half(X: f16[2, 3], Y: f16[2, 3]) {\n"
      "  block root() {\n"
      "    for i in 0:2 {\n"
      "      for j in 0:3 {\n"
      "        block Y(vi: spatial[0:2] = i, vj: spatial[0:3] = j) {\n"
      "          reads X[vi, vj]\n"
      "          writes Y[vi, vj]\n"
      "          Y[vi, vj] = (X[vi, vj] * X[vi, vj])\n"
      "        }\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n");
  must(ctx, h);
  loom_param p;
  assert_int_equal(loom_func_param(ctx, h, 1, &p), LOOM_ERR_UNSUPPORTED);
  expect_error(ctx, LOOM_ERR_UNSUPPORTED, "loom_func_param", "\"Y\"", "f16");
  loom_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defined_and_scheduled),
      cmocka_unit_test(test_parsed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
