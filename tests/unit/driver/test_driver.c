/* The build driver: several topi operators lowered, generated into one
 * source, built and loaded; each kernel's output equals the reference
 * interpreter's on the same random inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"
#include "fixtures/op_funcs.h"
#include "tir/interp.h"

static BuildOptions test_build_options(void) {
  BuildOptions o = {0};
  const char *dir = getenv("LOOM_TEST_CACHE_DIR");
  o.cache_dir = dir && *dir ? dir : "/tmp/loom-test-cache";
  o.include_dir = LOOM_SOURCE_DIR "/include";
  o.extra_flags = "-Wall -Wextra -Werror";
  return o;
}

static PrimFunc *renamed(Arena *a, const PrimFunc *f, const char *name) {
  PrimFunc *g = ARENA_NEW(a, PrimFunc);
  *g = *f;
  g->name = name;
  return g;
}

/* Compiled vs interpreted, every parameter: exact for ints, relative 1e-5
 * (|x - y| <= 1e-5 * max(1, |y|)) for f32. */
static void check_against_interp(DriverModule *m, const PrimFunc *f, uint64_t seed) {
  LoomError err = {0};
  DriverTensors run, ref;
  assert_int_equal(driver_tensors_alloc(f, seed, &run, &err), LOOM_OK);
  assert_int_equal(driver_tensors_alloc(f, seed, &ref, &err), LOOM_OK);
  Kernel k;
  assert_int_equal(driver_get_kernel(m, f->name, &k, &err), LOOM_OK);
  loom_status st = kernel_call(&k, run.ptrs, run.n, NULL, NULL, &err);
  if (st) fprintf(stderr, "%s\n", err.msg);
  assert_int_equal(st, LOOM_OK);
  void *data[16];
  assert_true(ref.n <= 16);
  driver_tensors_data(&ref, data);
  st = tir_interpret(f, data, &err);
  if (st) fprintf(stderr, "%s\n", err.msg);
  assert_int_equal(st, LOOM_OK);
  for (int i = 0; i < run.n; i++) {
    size_t n = run.bytes[i] / 4;
    for (size_t e = 0; e < n; e++) {
      if (run.tensors[i].dtype.code == kDLFloat) {
        float x = ((float *)run.tensors[i].data)[e], y = ((float *)ref.tensors[i].data)[e];
        if (!(fabsf(x - y) <= 1e-5f * fmaxf(1.0f, fabsf(y))))
          fail_msg("%s param %d elem %zu: compiled %g, interpreted %g", f->name, i, e, x, y);
      } else {
        assert_int_equal(((int32_t *)run.tensors[i].data)[e], ((int32_t *)ref.tensors[i].data)[e]);
      }
    }
  }
  driver_tensors_free(&run);
  driver_tensors_free(&ref);
}

static void test_build_many(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  const PrimFunc *fs[3];
  fs[0] = renamed(a, opfunc_matmul(a, 7, 5, 9, DT_F32, &err), "mm_f32");
  fs[1] = renamed(a, opfunc_matmul(a, 4, 6, 3, DT_I32, &err), "mm_i32");
  fs[2] = renamed(a, opfunc_softmax(a, 2, (int64_t[]){3, 10}, &err), "softmax");
  BuildOptions bo = test_build_options();
  DriverOptions opt = {.build = &bo};
  DriverModule *m = NULL;
  loom_status st = driver_build(a, fs, 3, &opt, &m, &err);
  if (st) fprintf(stderr, "%s\n", err.msg);
  assert_int_equal(st, LOOM_OK);
  assert_int_equal(driver_num_funcs(m), 3);
  assert_non_null(strstr(driver_source(m), "mm_i32"));
  assert_non_null(driver_lowered(m, 2));
  assert_null(driver_lowered(m, 3));
  for (int i = 0; i < 3; i++) check_against_interp(m, fs[i], 11 + (uint64_t)i);
  Kernel k;
  assert_int_equal(driver_get_kernel(m, "nope", &k, &err), LOOM_ERR_INVALID_ARG);
  driver_module_free(m);
  arena_free(a);
}

static int count(const char *s, const char *sub) {
  int n = 0;
  for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub)) n++;
  return n;
}

/* Kernels whose code is the same but for names are compiled once (the
 * copy is an alias); a different shape before flattening is a different
 * kernel, even where the flattened bodies agree. Enough kernels for
 * several translation units, compiled in parallel and linked. */
static void test_identical_kernels(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  enum { N = 44 };
  const PrimFunc *fs[N];
  fs[0] = renamed(a, opfunc_matmul(a, 7, 5, 9, DT_F32, &err), "mm_a");
  fs[1] = renamed(a, opfunc_matmul(a, 7, 5, 9, DT_F32, &err), "mm_b"); /* built anew: other buffers, same code */
  fs[2] = renamed(a, opfunc_matmul(a, 7, 5, 8, DT_F32, &err), "mm_c");
  fs[3] = renamed(a, opfunc_broadcast_add(a, 2, (int64_t[]){4, 6}, (int64_t[]){4, 6}, &err), "add_4x6");
  fs[4] = renamed(a, opfunc_broadcast_add(a, 2, (int64_t[]){6, 4}, (int64_t[]){6, 4}, &err), "add_6x4");
  fs[5] = renamed(a, opfunc_broadcast_add(a, 2, (int64_t[]){4, 6}, (int64_t[]){4, 6}, &err), "add_4x6_again");
  for (int i = 6; i < N; i++)
    fs[i] = renamed(a, opfunc_softmax(a, 2, (int64_t[]){3, 40 + i}, &err), arena_printf(a, "softmax_%d", i));
  BuildOptions bo = test_build_options();
  DriverOptions opt = {.build = &bo};
  DriverModule *m = NULL;
  loom_status st = driver_build(a, fs, N, &opt, &m, &err);
  if (st) fprintf(stderr, "%s\n", err.msg);
  assert_int_equal(st, LOOM_OK);
  const char *src = driver_source(m);
  assert_int_equal(count(src, "__attribute__((alias("), 4); /* mm_b, add_4x6_again: function and workspace */
  assert_int_equal(count(src, "mm_b(DLTensor *const *args, int32_t num_args, const loom_kernel_env *env) "
                              "__attribute__((alias(\"mm_a\")))"), 1);
  assert_int_equal(count(src, "add_4x6_again(DLTensor *const *args, int32_t num_args, const loom_kernel_env *env) "
                              "__attribute__((alias(\"add_4x6\")))"), 1);
  assert_true(count(src, "#define LOOM_PRELUDE") >= 2); /* several units */
  for (int i = 0; i < N; i++) check_against_interp(m, fs[i], 31 + (uint64_t)i);
  /* A kernel's argument checks are its own: the 6x4 kernel refuses 4x6 tensors. */
  DriverTensors t;
  assert_int_equal(driver_tensors_alloc(fs[3], 1, &t, &err), LOOM_OK);
  Kernel k;
  assert_int_equal(driver_get_kernel(m, "add_6x4", &k, &err), LOOM_OK);
  assert_int_not_equal(kernel_call(&k, t.ptrs, t.n, NULL, NULL, &err), LOOM_OK);
  driver_tensors_free(&t);
  driver_module_free(m);
  arena_free(a);
}

static void test_refusals(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  const PrimFunc *fs[2];
  fs[0] = opfunc_matmul(a, 2, 2, 2, DT_F32, &err);
  fs[1] = opfunc_matmul(a, 3, 3, 3, DT_F32, &err);
  DriverModule *m = NULL;
  assert_int_equal(driver_build(a, fs, 2, NULL, &m, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "both named"));
  assert_null(m);
  assert_int_equal(driver_build(a, fs, 0, NULL, &m, &err), LOOM_ERR_INVALID_ARG);
  fs[1] = NULL;
  assert_int_equal(driver_build(a, fs, 2, NULL, &m, &err), LOOM_ERR_INVALID_ARG);
  assert_null(m);
  arena_free(a);
}

static void test_tensors(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  PrimFunc *f = opfunc_matmul(a, 5, 3, 4, DT_F32, &err);
  PrimFunc *g = opfunc_matmul(a, 5, 3, 4, DT_I32, &err);
  DriverTensors x, y, z, w;
  assert_int_equal(driver_tensors_alloc(f, 7, &x, &err), LOOM_OK);
  assert_int_equal(driver_tensors_alloc(f, 7, &y, &err), LOOM_OK);
  assert_int_equal(driver_tensors_alloc(f, 8, &z, &err), LOOM_OK);
  assert_int_equal(driver_tensors_alloc(g, 7, &w, &err), LOOM_OK);
  assert_int_equal(x.n, 3);
  assert_int_equal(x.tensors[0].ndim, 2);
  assert_int_equal(x.tensors[0].shape[0], 5);
  assert_int_equal(x.tensors[0].shape[1], 4);
  assert_int_equal(x.bytes[2], 5 * 3 * 4);
  for (int i = 0; i < 3; i++) {
    assert_int_equal((uintptr_t)x.tensors[i].data % 64, 0);
    assert_ptr_equal(x.ptrs[i], &x.tensors[i]);
    assert_memory_equal(x.tensors[i].data, y.tensors[i].data, x.bytes[i]);
  }
  assert_memory_not_equal(x.tensors[0].data, z.tensors[0].data, x.bytes[0]);
  bool seen_neg = false, seen_big = false;
  const float *p = x.tensors[0].data;
  for (int e = 0; e < 20; e++) {
    assert_true(p[e] >= -1.0f && p[e] <= 1.0f);
    seen_neg |= p[e] < 0;
    seen_big |= fabsf(p[e]) > 0.5f;
  }
  assert_true(seen_neg && seen_big);
  const int32_t *q = w.tensors[1].data;
  for (int e = 0; e < 12; e++) assert_true(q[e] >= -4 && q[e] <= 4);
  driver_tensors_copy(&z, &x);
  for (int i = 0; i < 3; i++) assert_memory_equal(x.tensors[i].data, z.tensors[i].data, x.bytes[i]);
  driver_tensors_free(&x);
  driver_tensors_free(&y);
  driver_tensors_free(&z);
  driver_tensors_free(&w);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_build_many),
      cmocka_unit_test(test_identical_kernels),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_tensors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
