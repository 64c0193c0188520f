/* The runtime API (include/loom/loom_runtime.h) over a hand-made artifact:
 * results against a direct computation, input validation, zero-copy
 * binding, profiling, thread counts and kernel failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "loom/loom_runtime.h"
#include "unit/runtime/artifact_fixture.h"

typedef struct Env {
  char dir[256];
  char so[4096];
  char art[4096];
} Env;

static int setup(void **state) {
  Env *e = calloc(1, sizeof *e);
  snprintf(e->dir, sizeof e->dir, "/tmp/loom-test-executor-XXXXXX");
  if (!mkdtemp(e->dir) || fixture_build_so(e->dir, e->so, sizeof e->so)) return -1;
  FixtureModel m;
  fixture_model_init(&m, e->so);
  snprintf(e->art, sizeof e->art, "%s/model.loom", e->dir);
  LoomError err = {0};
  if (artifact_write(e->art, &m.spec, &err)) return -1;
  *state = e;
  return 0;
}

static int teardown(void **state) {
  Env *e = *state;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->dir);
  int rc = system(cmd);
  free(e);
  return rc == 0 ? 0 : -1;
}

static void assert_contains(const char *msg, const char *part) {
  if (!strstr(msg, part)) fail_msg("expected \"%s\" in the message: %s", part, msg);
}

static DLTensor f32_tensor(float *data, int64_t *shape, int32_t ndim) {
  DLTensor t = {0};
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype = k_f32;
  t.shape = shape;
  return t;
}

static loom_model *load(const Env *e, int threads) {
  loom_model *m = NULL;
  char err[1024];
  loom_model_options opt = {.num_threads = threads};
  if (loom_model_load(e->art, &opt, &m, err, sizeof err)) fail_msg("load: %s", err);
  return m;
}

static void test_run_matches_reference(void **state) {
  Env *e = *state;
  FixtureModel fm;
  fixture_model_init(&fm, e->so);
  for (int threads = 1; threads <= 3; threads++) {
    loom_model *m = load(e, threads);
    assert_int_equal(loom_model_num_threads(m), threads);
    assert_int_equal(loom_model_num_inputs(m), 1);
    assert_int_equal(loom_model_num_outputs(m), 1);
    loom_tensor_info info;
    assert_int_equal(loom_model_input_info(m, 0, &info), LOOM_OK);
    assert_string_equal(info.name, "x");
    assert_int_equal(info.ndim, 2);
    assert_int_equal(info.shape[0], 2);
    assert_int_equal(loom_model_output_info(m, 0, &info), LOOM_OK);
    assert_string_equal(info.name, "y:0/out");
    assert_int_equal(loom_model_input_info(m, 1, &info), LOOM_ERR_INVALID_ARG);
    assert_int_equal(loom_model_output_index(m, "y:0/out"), 0);
    assert_int_equal(loom_model_input_index(m, "nope"), -1);
    /* several runs with different inputs: nothing leaks between runs */
    for (int run = 0; run < 3; run++) {
      float x[6], want[6];
      for (int i = 0; i < 6; i++) x[i] = (float)((i * 7 + run * 3) % 11) - 5.0f;
      int64_t shape[2] = {2, 3};
      DLTensor t = f32_tensor(x, shape, 2);
      assert_int_equal(loom_model_set_input_by_name(m, "x", &t), LOOM_OK);
      assert_int_equal(loom_model_run(m), LOOM_OK);
      DLTensor y;
      assert_int_equal(loom_model_get_output(m, 0, &y), LOOM_OK);
      assert_int_equal(y.ndim, 2);
      assert_int_equal(y.shape[1], 3);
      assert_int_equal((uintptr_t)y.data % 64, 0);
      fixture_reference(&fm, x, want);
      assert_memory_equal(y.data, want, sizeof want);
    }
    loom_model_free(m);
  }
}

static void test_input_validation(void **state) {
  Env *e = *state;
  loom_model *m = load(e, 1);
  float x[8] = {0};
  int64_t good[2] = {2, 3}, bad[2] = {3, 2}, flat[1] = {6};
  DLTensor t = f32_tensor(x, bad, 2);
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "input \"x\": expected float32 [2, 3], got float32 [3, 2]");
  t = f32_tensor(x, flat, 1);
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "got float32 [6]");
  t = f32_tensor(x, good, 2);
  t.dtype = (DLDataType){kDLInt, 64, 1};
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "got int64 [2, 3]");
  t.dtype = (DLDataType){kDLFloat, 32, 4};
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "lanes");
  t = f32_tensor(x, good, 2);
  t.device.device_type = kDLCUDA;
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "CPU");
  t = f32_tensor(x, good, 2);
  int64_t transposed[2] = {1, 2};
  t.strides = transposed;
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "compact");
  t = f32_tensor(NULL, good, 2);
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_ERR_INVALID_ARG);
  assert_int_equal(loom_model_set_input(m, 0, NULL), LOOM_ERR_INVALID_ARG);
  assert_int_equal(loom_model_set_input(m, 1, &t), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "out of range");
  t = f32_tensor(x, good, 2);
  assert_int_equal(loom_model_set_input_by_name(m, "z", &t), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "no input named \"z\"");
  assert_contains(loom_model_error(m), "\"x\"");
  /* running before every input is set names the missing input */
  assert_int_equal(loom_model_run(m), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "input \"x\" was not set");
  /* compact strides and a byte offset are fine */
  int64_t compact[2] = {3, 1};
  t.strides = compact;
  t.data = x;
  t.byte_offset = 2 * sizeof(float);
  x[2] = 10;
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_OK);
  assert_int_equal(loom_model_run(m), LOOM_OK);
  DLTensor y;
  assert_int_equal(loom_model_get_output(m, 0, &y), LOOM_OK);
  assert_true(((float *)y.data)[0] == 10.5f);
  assert_int_equal(loom_model_get_output(m, 1, &y), LOOM_ERR_INVALID_ARG);
  loom_model_free(m);
}

/* loom_model_bind_input / bind_output: the kernels read the caller's input
 * and write the caller's output buffer in place (no copy), until unbound. */
static void test_bind_zero_copy(void **state) {
  Env *e = *state;
  FixtureModel fm;
  fixture_model_init(&fm, e->so);
  loom_model *m = load(e, 1);
  _Alignas(64) float x[32] = {0}, y[32] = {0}, want[6];
  for (int i = 0; i < 6; i++) x[i] = (float)i - 2.5f;
  int64_t shape[2] = {2, 3};
  DLTensor tx = f32_tensor(x, shape, 2), ty = f32_tensor(y, shape, 2);
  assert_int_equal(loom_model_bind_input(m, 0, &tx), LOOM_OK);
  assert_int_equal(loom_model_bind_output(m, 0, &ty), LOOM_OK);
  for (int run = 0; run < 2; run++) {
    x[0] = (float)run * 4; /* read from x at run time: no copy was taken at bind */
    assert_int_equal(loom_model_run(m), LOOM_OK);
    fixture_reference(&fm, x, want);
    assert_memory_equal(y, want, sizeof want);
    DLTensor out;
    assert_int_equal(loom_model_get_output(m, 0, &out), LOOM_OK);
    assert_ptr_equal(out.data, y);
  }
  /* refused: misaligned memory, an output over the bound input, a bad shape */
  DLTensor bad = f32_tensor(x + 1, shape, 2);
  assert_int_equal(loom_model_bind_input(m, 0, &bad), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "input \"x\": data at");
  assert_contains(loom_model_error(m), "not 64-byte aligned");
  assert_int_equal(loom_model_bind_output(m, 0, &bad), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "output \"y:0/out\"");
  assert_int_equal(loom_model_bind_output(m, 0, &tx), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "overlaps input \"x\"");
  int64_t wrong[2] = {3, 2};
  bad = f32_tensor(y, wrong, 2);
  assert_int_equal(loom_model_bind_output(m, 0, &bad), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "expected float32 [2, 3], got float32 [3, 2]");
  assert_int_equal(loom_model_bind_input(m, 1, &tx), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "out of range");
  /* unbound output: the model's own buffer again, y untouched */
  assert_int_equal(loom_model_bind_output(m, 0, NULL), LOOM_OK);
  memset(y, 0, sizeof y);
  assert_int_equal(loom_model_run(m), LOOM_OK);
  DLTensor out;
  assert_int_equal(loom_model_get_output(m, 0, &out), LOOM_OK);
  assert_ptr_not_equal(out.data, y);
  assert_memory_equal(out.data, want, sizeof want);
  assert_true(y[0] == 0 && y[5] == 0);
  /* unbound input: must be set again before a run */
  assert_int_equal(loom_model_bind_input(m, 0, NULL), LOOM_OK);
  assert_int_equal(loom_model_run(m), LOOM_ERR_INVALID_ARG);
  assert_contains(loom_model_error(m), "input \"x\" was not set");
  /* set_input copies and ends a binding: changing x afterwards changes nothing */
  assert_int_equal(loom_model_bind_input(m, 0, &tx), LOOM_OK);
  assert_int_equal(loom_model_set_input(m, 0, &tx), LOOM_OK);
  fixture_reference(&fm, x, want);
  x[0] = 100;
  assert_int_equal(loom_model_run(m), LOOM_OK);
  assert_int_equal(loom_model_get_output(m, 0, &out), LOOM_OK);
  assert_memory_equal(out.data, want, sizeof want);
  loom_model_free(m);
}

static void test_profiling(void **state) {
  Env *e = *state;
  loom_model *m = load(e, 2);
  float x[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  DLTensor t = f32_tensor(x, shape, 2);
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_OK);
  assert_int_equal(loom_model_run(m), LOOM_OK); /* not profiled */
  loom_model_set_profiling(m, true);
  for (int i = 0; i < 5; i++) assert_int_equal(loom_model_run(m), LOOM_OK);
  assert_int_equal(loom_model_profile_count(m), 2);
  loom_profile_entry p;
  assert_int_equal(loom_model_profile_entry(m, 0, &p), LOOM_OK);
  assert_string_equal(p.kernel, "add_w");
  assert_int_equal(p.num_nodes, 2);
  assert_string_equal(p.nodes[0], "Add_0");
  assert_string_equal(p.nodes[1], "Identity_1");
  assert_int_equal(p.calls, 5);
  assert_true(p.total_ms >= 0);
  assert_int_equal(loom_model_profile_entry(m, 1, &p), LOOM_OK);
  assert_string_equal(p.kernel, "relu_p");
  assert_string_equal(p.nodes[0], "Relu_2");
  assert_int_equal(p.calls, 5);
  assert_int_equal(loom_model_profile_entry(m, 2, &p), LOOM_ERR_INVALID_ARG);
  loom_model_set_profiling(m, false);
  assert_int_equal(loom_model_run(m), LOOM_OK);
  assert_int_equal(loom_model_profile_entry(m, 1, &p), LOOM_OK);
  assert_int_equal(p.calls, 5);
  loom_model_profile_reset(m);
  assert_int_equal(loom_model_profile_entry(m, 1, &p), LOOM_OK);
  assert_int_equal(p.calls, 0);
  assert_true(p.total_ms == 0);
  loom_model_free(m);
}

static void test_thread_count_from_env(void **state) {
  Env *e = *state;
  setenv("LOOM_NUM_THREADS", "3", 1);
  loom_model *m = load(e, 0);
  assert_int_equal(loom_model_num_threads(m), 3);
  loom_model_free(m);
  m = load(e, 2); /* the option wins */
  assert_int_equal(loom_model_num_threads(m), 2);
  loom_model_free(m);
  unsetenv("LOOM_NUM_THREADS");
  loom_model *bad = NULL;
  char err[1024];
  loom_model_options opt = {.num_threads = 5000};
  assert_int_equal(loom_model_load(e->art, &opt, &bad, err, sizeof err), LOOM_ERR_INVALID_ARG);
  assert_null(bad);
  assert_contains(err, "5000");
}

/* A plan whose call does not match the kernel: the kernel's own argument
 * check refuses, and run reports the step and kernel. */
static void test_kernel_failure(void **state) {
  Env *e = *state;
  FixtureModel fm;
  fixture_model_init(&fm, e->so);
  fm.calls[1].num_args = 1; /* relu_p with one argument */
  fm.relu_args[0] = fm.relu_args[1];
  char p[4200];
  snprintf(p, sizeof p, "%s/bad_plan.loom", e->dir);
  LoomError lerr = {0};
  assert_int_equal(artifact_write(p, &fm.spec, &lerr), LOOM_OK);
  loom_model *m = NULL;
  char err[1024];
  assert_int_equal(loom_model_load(p, NULL, &m, err, sizeof err), LOOM_OK);
  float x[6] = {0};
  int64_t shape[2] = {2, 3};
  DLTensor t = f32_tensor(x, shape, 2);
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_OK);
  assert_int_equal(loom_model_run(m), LOOM_ERR_RUNTIME);
  assert_contains(loom_model_error(m), "plan step 1: kernel \"relu_p\"");
  assert_contains(loom_model_error(m), "wrong number of arguments");
  loom_model_free(m);
}

/* A dynamic output (runtime/artifact.h): its shape is an upper bound, the
 * kernel writes the real one through an output_shape argument, and
 * get_output reports it after checking it against the bound. */
static void test_dynamic_output(void **state) {
  Env *e = *state;
  FixtureModel fm;
  fixture_model_init(&fm, e->so);
  fm.out.dynamic = true;
  fm.kernels[1].name = "rows_pos";
  static int64_t two = 2;
  ArtifactArg args[3] = {fm.add_args[2], {.kind = ARTIFACT_ARG_OUTPUT, .index = 0},
                         {.kind = ARTIFACT_ARG_OUTPUT_SHAPE, .index = 0, .view = true, .dtype = {kDLInt, 64, 1},
                          .ndim = 1, .shape = &two}};
  fm.calls[1] = (ArtifactCall){.kernel = 1, .num_args = 3, .args = args};
  char p[4200];
  snprintf(p, sizeof p, "%s/dynamic.loom", e->dir);
  LoomError lerr = {0};
  if (artifact_write(p, &fm.spec, &lerr)) fail_msg("%s", lerr.msg);
  loom_model *m = NULL;
  char err[1024];
  if (loom_model_load(p, NULL, &m, err, sizeof err)) fail_msg("%s", err);
  loom_tensor_info info;
  assert_int_equal(loom_model_output_info(m, 0, &info), LOOM_OK);
  assert_true(info.dynamic);
  assert_int_equal(info.shape[0], 2);
  assert_int_equal(loom_model_input_info(m, 0, &info), LOOM_OK);
  assert_false(info.dynamic);
  /* x + w = {-1, -1, -1, 1, 1, 1}: only the second row is kept */
  float x[6] = {-0.5f, 0, -3, 4, 0.75f, -0.5f};
  int64_t shape[2] = {2, 3};
  DLTensor t = f32_tensor(x, shape, 2);
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_OK);
  for (int round = 0; round < 2; round++) { /* the bound is restored before each run */
    assert_int_equal(loom_model_run(m), LOOM_OK);
    DLTensor y;
    assert_int_equal(loom_model_get_output(m, 0, &y), LOOM_OK);
    assert_int_equal(y.ndim, 2);
    assert_int_equal(y.shape[0], 1);
    assert_int_equal(y.shape[1], 3);
    assert_true(((float *)y.data)[0] == 1.0f && ((float *)y.data)[2] == 1.0f);
  }
  /* an extent beyond the bound is refused, naming the output and axis */
  x[0] = 1234 - 0.5f;
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_OK);
  assert_int_equal(loom_model_run(m), LOOM_ERR_RUNTIME);
  assert_contains(loom_model_error(m), "output \"y:0/out\": the kernels reported extent 4 for axis 1");
  DLTensor y;
  assert_int_equal(loom_model_get_output(m, 0, &y), LOOM_OK);
  assert_int_equal(y.shape[1], 3); /* the bound, not the bad value */
  loom_model_free(m);
}

static void test_load_errors(void **state) {
  (void)state;
  loom_model *m = (loom_model *)1;
  char err[1024];
  assert_int_equal(loom_model_load("/nonexistent.loom", NULL, &m, err, sizeof err), LOOM_ERR_IO);
  assert_null(m);
  assert_contains(err, "/nonexistent.loom");
  assert_int_equal(loom_model_load("/nonexistent.loom", NULL, &m, NULL, 0), LOOM_ERR_IO);
  assert_string_equal(loom_runtime_version(), LOOM_VERSION_STRING);
  loom_model_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run_matches_reference),
      cmocka_unit_test(test_input_validation),
      cmocka_unit_test(test_bind_zero_copy),
      cmocka_unit_test(test_profiling),
      cmocka_unit_test(test_thread_count_from_env),
      cmocka_unit_test(test_kernel_failure),
      cmocka_unit_test(test_dynamic_output),
      cmocka_unit_test(test_load_errors),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
