/* graph_pass_winograd: eligible 3x3 stride-1 NCHWc convs get the kernel
 * transformed (U = G g G^T) and winograd_tile 2, and compute the same
 * numbers before and after on the reference evaluator (whose Winograd
 * case multiplies the F(2x2, 3x3) matrices out, graph_ref_eval.h); the
 * others are left alone. The compiled kernels are checked against ONNX
 * Runtime by compiler_vs_ort (tests/models: winograd_convs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "graph/pass_internal.h"
#include "graph/passes.h"
#include "unit/graph/graph_build.h"
#include "unit/graph/graph_ref_eval.h"

static int winograd_convs(const Graph *g) {
  int k = 0;
  for (int i = 0; i < g->nnodes; i++)
    k += g->nodes[i].op == GRAPH_OP_CONV_NCHWC && graph_attr_int(&g->nodes[i], "winograd_tile", 0) == 2;
  return k;
}

/* Layout, then the Winograd rewrite: the error of the rewrite alone. The
 * kernels are set to multiples of 1/4 in [-1, 1], so that U, multiples of
 * 1/64, is exact in f32 and any difference is the transform's. */
static double rewrite_error(Graph *g, int *rewritten) {
  LoomError err = {0};
  for (int i = 0; i < g->nnodes; i++) {
    GraphTensor *w = g->nodes[i].op == GRAPH_OP_CONV ? g->values[g->nodes[i].inputs[1]].constant : NULL;
    float *wd = w ? w->data : NULL;
    for (int64_t k = 0; w && k < graph_tensor_numel(w); k++) wd[k] = (float)((k * 7 + i) % 9 - 4) * 0.25f;
  }
  if (graph_pass_infer(g, &err) || graph_pass_layout_nchwc(g, NULL, &err)) fail_msg("%s", err.msg);
  uint64_t seed = 17;
  double **in = gb_random_inputs(g, &seed);
  double **before = ref_eval_outputs(g, in);
  if (graph_pass_winograd(g, &err) || graph_pass_dce(g, &err) || graph_verify(g, &err)) fail_msg("%s", err.msg);
  *rewritten = winograd_convs(g);
  double e = ref_compare_outputs(g, in, before);
  gb_free_inputs(g, in);
  return e;
}

/* Batch 2, odd extents (partial 2x2 tiles), 64 -> 80 channels, then a
 * conv without padding and one with asymmetric pads. */
static void test_rewrite_keeps_results(void **state) {
  (void)state;
  uint64_t seed = 5;
  Graph *g = graph_new("wino");
  ValueId x = gb_input(g, "x", 4, (int64_t[]){2, 64, 23, 25});
  ValueId a = gb_unary(g, GRAPH_OP_RELU, "relu", gb_conv(g, "a", x, 64, 80, 3, 1, 1, false, &seed));
  ValueId b = gb_conv(g, "b", a, 80, 64, 3, 1, 1, false, &seed);
  gb_ints_attr(g, b, "pads", (int64_t[]){0, 0, 0, 0}, 4);
  ValueId c = gb_conv(g, "c", b, 64, 64, 3, 1, 1, false, &seed);
  gb_ints_attr(g, c, "pads", (int64_t[]){2, 0, 1, 2}, 4);
  gb_output(g, c);
  int rewritten = 0;
  double e = rewrite_error(g, &rewritten);
  assert_true(e < 1e-9);
  assert_int_equal(rewritten, 3);
  for (int i = 0; i < g->nnodes; i++) {
    const GraphNode *n = &g->nodes[i];
    if (n->op != GRAPH_OP_CONV_NCHWC) continue;
    const GraphTensor *u = graph_value_constant(g, n->inputs[1]);
    assert_non_null(u);
    assert_int_equal(u->rank, 6);
    assert_int_equal(u->dims[0], 4);
    assert_int_equal(u->dims[1], 4);
  }
  const GraphValue *y = &g->values[g->outputs[0]];
  assert_int_equal(y->dims[2], 22); /* 23 - 2, then + 3 - 2 */
  assert_int_equal(y->dims[3], 23); /* 25 - 2, then + 2 - 2 */
  graph_free(g);
}

/* One 64 -> 64 3x3 conv over 24x24 (eligible), inferred. */
static Graph *one_conv(const char *name, uint64_t seed) {
  LoomError err = {0};
  Graph *g = graph_new(name);
  ValueId x = gb_input(g, "x", 4, (int64_t[]){1, 64, 24, 24});
  gb_output(g, gb_conv(g, "c", x, 64, 64, 3, 1, 1, false, &seed));
  if (graph_pass_infer(g, &err)) fail_msg("%s", err.msg);
  return g;
}

/* U = G g G^T of a known 3x3 kernel (one channel pair of a 64 x 64 conv):
 * g = 1..9 row by row gives G g G^T = [1 3 1 3; 6 11.25 3.75 9;
 * 2 3.75 1.25 3; 7 12 4 9]. */
static void test_kernel_transform(void **state) {
  (void)state;
  LoomError err = {0};
  Graph *g = one_conv("wino_u", 6);
  GraphTensor *w = g->values[g->nodes[0].inputs[1]].constant;
  float *wd = w->data;
  for (int k = 0; k < 9; k++) wd[k] = (float)(k + 1); /* output 0, input 0 */
  if (graph_pass_layout_nchwc(g, NULL, &err) || graph_pass_winograd(g, &err)) fail_msg("%s", err.msg);
  const GraphTensor *u = NULL;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].op == GRAPH_OP_CONV_NCHWC) u = graph_value_constant(g, g->nodes[i].inputs[1]);
  assert_non_null(u);
  static const float want[16] = {1, 3, 1, 3, 6, 11.25f, 3.75f, 9, 2, 3.75f, 1.25f, 3, 7, 12, 4, 9};
  int64_t point = u->dims[2] * u->dims[3] * u->dims[4] * u->dims[5]; /* [i, j, 0, 0, 0, 0] */
  const float *ud = u->data;
  for (int k = 0; k < 16; k++) assert_float_equal(ud[k * point], want[k], 1e-6);
  graph_free(g);
}

/* Stride 2, dilation 2, 32 channels, few output tiles (12x12: 36): direct. */
static void test_left_alone(void **state) {
  (void)state;
  uint64_t seed = 7;
  Graph *g = graph_new("direct");
  ValueId x = gb_input(g, "x", 4, (int64_t[]){1, 64, 24, 24});
  ValueId s2 = gb_conv(g, "s2", x, 64, 64, 3, 2, 1, false, &seed);
  ValueId d2 = gb_conv(g, "d2", x, 64, 64, 3, 1, 1, false, &seed);
  gb_ints_attr(g, d2, "dilations", (int64_t[]){2, 2}, 2);
  ValueId c32 = gb_conv(g, "c32", x, 64, 32, 3, 1, 1, false, &seed);
  ValueId small = gb_conv(g, "small", s2, 64, 64, 3, 1, 1, false, &seed);
  gb_output(g, d2);
  gb_output(g, c32);
  gb_output(g, small);
  int rewritten = -1;
  assert_true(rewrite_error(g, &rewritten) < 1e-9);
  assert_int_equal(rewritten, 0);
  graph_free(g);
}

/* A winograd_tile the op does not have (the message says which), or a 3x3
 * weight with the attribute (read as [4, 4, K/k, C/c, c, k], its input
 * blocks do not match): shape inference refuses, naming the node. */
static void test_infer_rejects(void **state) {
  (void)state;
  for (int bad = 0; bad < 2; bad++) {
    LoomError err = {0};
    Graph *g = one_conv("bad", 8);
    if (graph_pass_layout_nchwc(g, NULL, &err)) fail_msg("%s", err.msg);
    for (int i = 0; i < g->nnodes; i++) {
      GraphNode *n = &g->nodes[i];
      if (n->op == GRAPH_OP_CONV_NCHWC) graph_node_set_attr(g, n, graph_attr_make_int(g, "winograd_tile", bad ? 2 : 3));
    }
    assert_int_equal(graph_pass_infer(g, &err), LOOM_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, bad ? "input blocks" : "winograd_tile"));
    assert_non_null(strstr(err.msg, "\"c\""));
    graph_free(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rewrite_keeps_results),
      cmocka_unit_test(test_kernel_transform),
      cmocka_unit_test(test_left_alone),
      cmocka_unit_test(test_infer_rejects),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
