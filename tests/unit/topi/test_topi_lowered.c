/* The topi operators of tests/fixtures/op_funcs.h, lowered with the default
 * pipeline (tir_lower: blocks removed, buffers flattened, intermediates as
 * Allocate), must compute what the block-level PrimFunc computes. Both run on the reference interpreter,
 * so this checks the lowering passes and the interpreter's lowered-IR path
 * against its block-level path. */
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
#include "tir/transform/transform.h"

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

static void check_lowered(const char *name, const PrimFunc *f) {
  if (!f) fail_msg("%s: building the operator failed", name);
  Arena *a = arena_new();
  LoomError err = {0};
  LowerOptions opt = lower_options_default();
  const PrimFunc *g = tir_lower(a, f, &opt, &err);
  if (!g) fail_msg("%s: tir_lower: %s", name, err.msg);
  assert_int_equal(g->n_params, f->n_params);
  void *d1[8] = {0}, *d2[8] = {0};
  uint32_t seed = 99;
  for (int i = 0; i < f->n_params; i++) {
    int64_t n = tir_buffer_elem_count(f->params[i]);
    assert_int_equal(tir_buffer_elem_count(g->params[i]), n);
    assert_int_equal(dtype_bytes(f->params[i]->dtype), 4);
    d1[i] = calloc((size_t)n, 4);
    d2[i] = calloc((size_t)n, 4);
    for (int64_t k = 0; k < n; k++) {
      float v = (float)(lcg(&seed) >> 8) / (float)(1 << 24) * 2.0f - 1.0f;
      if (f->params[i]->dtype.code == DT_FLOAT) ((float *)d1[i])[k] = v;
      else ((int32_t *)d1[i])[k] = (int32_t)(v * 50);
    }
    memcpy(d2[i], d1[i], (size_t)n * 4);
  }
  if (tir_interpret(f, d1, &err) != LOOM_OK) fail_msg("%s (blocks): %s", name, err.msg);
  if (tir_interpret(g, d2, &err) != LOOM_OK) fail_msg("%s (lowered): %s", name, err.msg);
  int out = f->n_params - 1;
  int64_t n = tir_buffer_elem_count(f->params[out]);
  for (int64_t k = 0; k < n; k++) {
    if (f->params[out]->dtype.code == DT_FLOAT) {
      float x = ((float *)d1[out])[k], y = ((float *)d2[out])[k];
      if (!(fabsf(x - y) <= 1e-5f * fabsf(x) + 1e-6f))
        fail_msg("%s: element %lld: blocks %.9g, lowered %.9g", name, (long long)k, (double)x, (double)y);
    } else {
      assert_int_equal(((int32_t *)d1[out])[k], ((int32_t *)d2[out])[k]);
    }
  }
  for (int i = 0; i < f->n_params; i++) {
    free(d1[i]);
    free(d2[i]);
  }
  arena_free(a);
}

static void test_all_ops_lowered(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  check_lowered("matmul", opfunc_matmul(a, 5, 7, 9, DT_F32, &err));
  check_lowered("matmul_i32", opfunc_matmul(a, 4, 3, 6, DT_I32, &err));
  check_lowered("batch_matmul", opfunc_batch_matmul(a, 2, 3, 4, 5, &err));
  check_lowered("conv2d_nchw", opfunc_conv2d_nchw(a, &(OpfuncConv2d){1, 3, 6, 5, 4, 3, 3, 1, 1}, &err));
  check_lowered("conv2d_nchwc", opfunc_conv2d_nchwc(a, &(OpfuncConv2d){1, 4, 5, 6, 6, 3, 3, 1, 1}, 2, 3, &err));
  check_lowered("depthwise", opfunc_depthwise_conv2d_nchw(a, &(OpfuncConv2d){1, 3, 7, 6, 0, 3, 3, 2, 1}, &err));
  check_lowered("max_pool", opfunc_pool2d(a, TOPI_POOL_MAX, 1, 2, 7, 6, 3, 2, 1, false, &err));
  check_lowered("avg_pool", opfunc_pool2d(a, TOPI_POOL_AVG, 1, 2, 7, 6, 3, 2, 1, false, &err));
  check_lowered("softmax", opfunc_softmax(a, 2, (int64_t[]){3, 5}, &err));
  check_lowered("layer_norm", opfunc_layer_norm(a, 2, (int64_t[]){3, 5}, 1e-5, &err));
  check_lowered("transpose", opfunc_transpose(a, 3, (int64_t[]){2, 3, 4}, (int[]){2, 0, 1}, &err));
  check_lowered("broadcast_add", opfunc_broadcast_add(a, 4, (int64_t[]){2, 3, 4, 5}, (int64_t[]){1, 3, 1, 1}, &err));
  check_lowered("reduce_sum_outer", opfunc_reduce_sum(a, 2, (int64_t[]){6, 9}, 0, DT_F32, &err));
  check_lowered("reduce_sum_inner_i32", opfunc_reduce_sum(a, 2, (int64_t[]){6, 9}, 1, DT_I32, &err));
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_ops_lowered),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
