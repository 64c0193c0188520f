/* Public API: functions from IR text, C source, building modules and
 * running kernels on DLPack tensors (threads included), and every way a
 * call can be wrong. */
#include "api_test_util.h"

#include <math.h>

static const char *scale_text =
    "func scale(X: f32[4, 8], Y: f32[4, 8]) {\n"
    "  block root() {\n"
    "    for i in 0:4 {\n"
    "      for j in 0:8 {\n"
    "        block Y(vi: spatial[0:4] = i, vj: spatial[0:8] = j) {\n"
    "          reads X[vi, vj]\n"
    "          writes Y[vi, vj]\n"
    "          Y[vi, vj] = (X[vi, vj] * 3.0f32)\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

static void test_parse_source_build_run(void **state) {
  (void)state;
  loom_ctx *ctx = test_ctx();
  loom_func *f = loom_func_parse(ctx, scale_text);
  must(ctx, f);
  assert_string_equal(loom_func_name(f), "scale");
  assert_int_equal(loom_func_num_params(f), 2);
  assert_string_equal(loom_func_text(ctx, f), scale_text); /* print(parse(t)) == t */
  const char *src = loom_func_c_source(ctx, f);
  must(ctx, src);
  assert_non_null(strstr(src, "int32_t scale("));
  assert_non_null(strstr(src, "restrict"));

  /* A schedule on a parsed function, parallel over 2 threads. */
  loom_sched *s = loom_sched_create(ctx, f, 0);
  loom_rv l[2];
  must(ctx, loom_sched_get_loops(s, loom_sched_get_block(s, "Y"), l, 2) == 2);
  must(ctx, !loom_sched_parallel(s, l[0]) && !loom_sched_vectorize(s, l[1]));
  must(ctx, !loom_ctx_set_num_threads(ctx, 2));
  loom_module *m = loom_build(ctx, (loom_func *[]){loom_sched_func(s)}, 1);
  must(ctx, m);
  assert_non_null(strstr(loom_module_source(m), "int32_t scale("));
  TestTensor x, y;
  test_tensor_init(&x, LOOM_F32, 2, (int64_t[]){4, 8}, 4);
  test_tensor_init(&y, LOOM_F32, 2, (int64_t[]){4, 8}, 4);
  for (int q = 0; q < 32; q++) ((float *)x.data)[q] = (float)q - 7.5f;
  DLTensor *args[] = {&x.dl, &y.dl};
  must(ctx, !loom_module_run(m, "scale", args, 2));
  for (int q = 0; q < 32; q++) assert_float_equal(((float *)y.data)[q], ((float)q - 7.5f) * 3, 0);
  must(ctx, !loom_ctx_set_num_threads(ctx, 1)); /* a new pool, same answer */
  memset(y.data, 0, 128);
  must(ctx, !loom_module_run(m, "scale", args, 2));
  for (int q = 0; q < 32; q++) assert_float_equal(((float *)y.data)[q], ((float)q - 7.5f) * 3, 0);

  /* run: every argument checked */
  assert_int_equal(loom_module_run(m, "nope", args, 2), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_module_run", "no kernel named \"nope\"");
  assert_int_equal(loom_module_run(m, NULL, args, 2), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "name is NULL");
  assert_int_equal(loom_module_run(m, "scale", args, 1), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "\"scale\" takes 2 tensors, got 1");
  assert_int_equal(loom_module_run(m, "scale", NULL, 2), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "args is NULL");
  assert_int_equal(loom_module_run(m, "scale", (DLTensor *[]){&x.dl, NULL}, 2), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "args[1] is NULL");
  DLTensor nodata = y.dl;
  nodata.data = NULL;
  assert_int_equal(loom_module_run(m, "scale", (DLTensor *[]){&x.dl, &nodata}, 2), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "args[1]->data is NULL");
  DLTensor wrong_type = loom_dltensor(y.data, LOOM_I32, 2, y.shape);
  assert_int_equal(loom_module_run(m, "scale", (DLTensor *[]){&x.dl, &wrong_type}, 2), LOOM_ERR_RUNTIME);
  expect_error(ctx, LOOM_ERR_RUNTIME, "loom_module_run", "scale", "dtype");
  int64_t other_shape[2] = {8, 4};
  DLTensor wrong_shape = loom_dltensor(y.data, LOOM_F32, 2, other_shape);
  assert_int_equal(loom_module_run(m, "scale", (DLTensor *[]){&wrong_shape, &y.dl}, 2), LOOM_ERR_RUNTIME);
  expect_error(ctx, LOOM_ERR_RUNTIME, "shape");
  assert_int_equal(loom_module_run(NULL, "scale", args, 2), LOOM_ERR_INVALID_ARG);
  assert_int_equal(loom_module_run((loom_module *)f, "scale", args, 2), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "is a function, expected a module");
  loom_module_free(m);
  assert_int_equal(loom_module_run(m, "scale", args, 2), LOOM_ERR_INVALID_ARG);
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "already freed");
  assert_null(loom_module_source(m));
  loom_module_free(m);
  loom_module_free(NULL);
  free(x.data), free(y.data);
  loom_ctx_destroy(ctx);
}

static void test_parse_and_build_errors(void **state) {
  (void)state;
  loom_ctx *ctx = test_ctx();
  assert_null(loom_func_parse(ctx, "func f(A: f32[4]) {\n  block root( {\n"));
  expect_error(ctx, LOOM_ERR_PARSE, "loom_func_parse", "line 2");
  assert_null(loom_func_parse(ctx, NULL));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "text is NULL");
  /* Parses, but does not verify: a variable used out of scope. */
  assert_null(loom_func_parse(ctx, "func f(A: f32[4]) {\n  block root() {\n    A[i] = 1.0f32\n  }\n}\n"));
  assert_int_not_equal(loom_ctx_status(ctx), LOOM_OK);
  assert_non_null(strstr(loom_ctx_error(ctx), "loom_func_parse"));
  loom_ctx_clear_error(ctx);

  loom_func *f = loom_func_parse(ctx, scale_text);
  must(ctx, f);
  assert_null(loom_build(ctx, (loom_func *[]){f}, 0));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_build", "0 functions");
  assert_null(loom_build(ctx, NULL, 1));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "funcs is NULL");
  assert_null(loom_build(ctx, (loom_func *[]){f, NULL}, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "function 1", "NULL");
  assert_null(loom_build(ctx, (loom_func *[]){f, f}, 2));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_build", "scale");
  assert_null(loom_func_c_source(ctx, NULL));
  expect_error(ctx, LOOM_ERR_INVALID_ARG, "loom_func_c_source");
  /* A function the C back end cannot express: a GPU thread-bound loop. */
  loom_func *h = loom_func_parse(ctx,
      "func half(X: f32[4], Y: f32[4]) {\n"
      "  block root() {\n"
      "    for i in 0:4 thread(\"threadIdx.x\") {\n"
      "      block Y(vi: spatial[0:4] = i) {\n"
      "        reads X[vi]\n"
      "        writes Y[vi]\n"
      "        Y[vi] = X[vi]\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n");
  must(ctx, h);
  assert_null(loom_func_c_source(ctx, h));
  expect_error(ctx, LOOM_ERR_UNSUPPORTED, "loom_func_c_source", "half");
  assert_null(loom_build(ctx, (loom_func *[]){h}, 1));
  expect_error(ctx, LOOM_ERR_UNSUPPORTED, "loom_build", "half");
  /* A missing kernel ABI header is an I/O error naming the directory. */
  must(ctx, !loom_ctx_set_include_dir(ctx, "/nonexistent/loom-include"));
  must(ctx, !loom_ctx_set_cache_dir(ctx, "/tmp/loom-api-test-noinclude"));
  assert_null(loom_build(ctx, (loom_func *[]){f}, 1));
  assert_int_not_equal(loom_ctx_status(ctx), LOOM_OK);
  assert_non_null(strstr(loom_ctx_error(ctx), "loom_build"));
  loom_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_source_build_run),
      cmocka_unit_test(test_parse_and_build_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
