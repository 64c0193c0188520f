/* BatchNormalization folding: numerics against the reference evaluator
 * (double) before and after the pass, and the shape of the rewrite. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/passes.h"
#include "unit/graph/graph_build.h"
#include "unit/graph/graph_ref_eval.h"

/* Runs the pass on g and returns the max relative output error. */
static double fold_and_compare(Graph *g, uint64_t seed) {
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  double **in = gb_random_inputs(g, &seed);
  double **before = ref_eval_outputs(g, in);
  loom_status st = graph_pass_fold_batchnorm(g, &err);
  if (st) fail_msg("%s", err.msg);
  double e = ref_compare_outputs(g, in, before);
  gb_free_inputs(g, in);
  return e;
}

static void check_conv_bn(bool bias, int64_t group) {
  uint64_t seed = 7 + (uint64_t)bias + (uint64_t)group;
  Graph *g = graph_new("conv_bn");
  int64_t xd[4] = {2, 4, 6, 5};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId c = gb_conv(g, "conv", x, 4, group == 1 ? 6 : 4, 3, 1, group, bias, &seed);
  ValueId y = gb_bn(g, "bn", c, group == 1 ? 6 : 4, &seed);
  ValueId r = gb_unary(g, GRAPH_OP_RELU, "relu", y);
  gb_output(g, r);
  double e = fold_and_compare(g, 3);
  assert_true(e < 1e-5);
  assert_int_equal(gb_count_op(g, GRAPH_OP_BATCH_NORM), 0);
  assert_int_equal(g->nnodes, 2);
  assert_int_equal(g->nodes[0].op, GRAPH_OP_CONV);
  assert_int_equal(g->nodes[0].ninputs, 3);
  assert_non_null(graph_value_constant(g, g->nodes[0].inputs[2]));
  /* The conv writes the BN's old output, which relu still reads. */
  assert_int_equal(g->nodes[0].outputs[0], y);
  assert_int_equal(g->nodes[1].inputs[0], y);
  graph_free(g);
}

static void test_conv_bn_folds(void **state) {
  (void)state;
  check_conv_bn(true, 1);
  check_conv_bn(false, 1);
  check_conv_bn(true, 4); /* depthwise */
  check_conv_bn(false, 2); /* grouped */
}

/* The BN output is the graph output: the id survives. */
static void test_conv_bn_graph_output(void **state) {
  (void)state;
  uint64_t seed = 11;
  Graph *g = graph_new("conv_bn_out");
  int64_t xd[4] = {1, 3, 5, 5};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId c = gb_conv(g, "conv", x, 3, 5, 1, 1, 1, true, &seed);
  ValueId y = gb_bn(g, "bn", c, 5, &seed);
  gb_output(g, y);
  assert_true(fold_and_compare(g, 5) < 1e-5);
  assert_int_equal(g->nnodes, 1);
  assert_int_equal(g->outputs[0], y);
  assert_int_equal(g->values[y].producer, 0);
  graph_free(g);
}

/* The conv output has a second user: the BN cannot fold into the weights
 * and becomes Mul + Add by per-channel constants. */
static void test_shared_conv_output_becomes_mul_add(void **state) {
  (void)state;
  uint64_t seed = 13;
  Graph *g = graph_new("shared");
  int64_t xd[4] = {1, 2, 4, 4};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId c = gb_conv(g, "conv", x, 2, 3, 3, 1, 1, true, &seed);
  ValueId y = gb_bn(g, "bn", c, 3, &seed);
  ValueId s = gb_binary(g, GRAPH_OP_ADD, "sum", y, c);
  gb_output(g, s);
  assert_true(fold_and_compare(g, 9) < 1e-5);
  assert_int_equal(gb_count_op(g, GRAPH_OP_BATCH_NORM), 0);
  assert_int_equal(gb_count_op(g, GRAPH_OP_MUL), 1);
  assert_int_equal(gb_count_op(g, GRAPH_OP_ADD), 2);
  /* Mul's constant is per channel, shaped [C, 1, 1] to broadcast over NCHW. */
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i].op != GRAPH_OP_MUL) continue;
    const GraphTensor *t = graph_value_constant(g, g->nodes[i].inputs[1]);
    assert_non_null(t);
    assert_int_equal(t->rank, 3);
    assert_int_equal(t->dims[0], 3);
    assert_int_equal(t->dims[1], 1);
  }
  graph_free(g);
}

/* A BN on a graph input (no conv) and on a 2-D tensor. */
static void test_standalone_bn(void **state) {
  (void)state;
  uint64_t seed = 17;
  Graph *g = graph_new("bn_only");
  int64_t xd[4] = {2, 3, 2, 3}, zd[2] = {4, 5};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId z = gb_input(g, "z", 2, zd);
  gb_output(g, gb_bn(g, "bn", x, 3, &seed));
  gb_output(g, gb_bn(g, "bn2d", z, 5, &seed));
  assert_true(fold_and_compare(g, 21) < 1e-5);
  assert_int_equal(gb_count_op(g, GRAPH_OP_BATCH_NORM), 0);
  assert_int_equal(gb_count_op(g, GRAPH_OP_MUL), 2);
  LoomError err = {0};
  assert_int_equal(graph_verify(g, &err), LOOM_OK);
  graph_free(g);
}

/* Parameters that are not constants: nothing to fold, nothing changes. */
static void test_non_constant_params_untouched(void **state) {
  (void)state;
  uint64_t seed = 19;
  Graph *g = graph_new("dyn");
  int64_t xd[4] = {1, 2, 3, 3}, cd = 2;
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId gamma = gb_input(g, "gamma", 1, &cd);
  ValueId ins[5] = {x, gamma, gb_const(g, "b", 1, &cd, &seed, 0, 1), gb_const(g, "m", 1, &cd, &seed, 0, 1),
                    gb_const(g, "v", 1, &cd, &seed, 1, 2)};
  gb_output(g, gb_node(g, GRAPH_OP_BATCH_NORM, "bn", ins, 5));
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  assert_int_equal(graph_pass_fold_batchnorm(g, &err), LOOM_OK);
  assert_int_equal(gb_count_op(g, GRAPH_OP_BATCH_NORM), 1);
  graph_free(g);
}

/* Per-channel Mul, Add, Sub, Div chains after a conv fold into it; a
 * spatially varying constant or a second user stops the folding. */
static void test_conv_affine_chain(void **state) {
  (void)state;
  uint64_t seed = 23;
  Graph *g = graph_new("affine");
  int64_t xd[4] = {1, 3, 5, 5}, kd[3] = {4, 1, 1}, kd4[4] = {1, 4, 1, 1}, sp[3] = {4, 5, 5};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId c = gb_conv(g, "conv", x, 3, 4, 3, 1, 1, true, &seed);
  ValueId m = gb_binary(g, GRAPH_OP_MUL, "mul", gb_const(g, "s", 3, kd, &seed, 0.5, 2), c);
  ValueId a = gb_binary(g, GRAPH_OP_ADD, "add", m, gb_const(g, "t", 4, kd4, &seed, -1, 1));
  ValueId sb = gb_binary(g, GRAPH_OP_SUB, "sub", a, gb_scalar(g, "u", 0.25));
  ValueId dv = gb_binary(g, GRAPH_OP_DIV, "div", sb, gb_const(g, "d", 3, kd, &seed, 0.5, 2));
  ValueId r = gb_unary(g, GRAPH_OP_RELU, "relu", dv);
  /* Second conv: a spatial constant, then a shared output. */
  ValueId c2 = gb_conv(g, "conv2", r, 4, 4, 1, 1, 1, false, &seed);
  ValueId m2 = gb_binary(g, GRAPH_OP_MUL, "mul2", c2, gb_const(g, "sp", 3, sp, &seed, -1, 1));
  ValueId c3 = gb_conv(g, "conv3", m2, 4, 4, 1, 1, 1, false, &seed);
  ValueId a3 = gb_binary(g, GRAPH_OP_ADD, "add3", c3, gb_const(g, "t3", 3, kd, &seed, -1, 1));
  gb_output(g, gb_binary(g, GRAPH_OP_MUL, "out", a3, c3));
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  double **in = gb_random_inputs(g, &seed);
  double **before = ref_eval_outputs(g, in);
  if (graph_pass_fold_conv_affine(g, &err)) fail_msg("%s", err.msg);
  assert_true(ref_compare_outputs(g, in, before) < 1e-5);
  gb_free_inputs(g, in);
  /* conv(+4 folded ops), relu, conv2, mul2, conv3, add3, out. */
  assert_int_equal(g->nnodes, 7);
  assert_int_equal(gb_count_op(g, GRAPH_OP_SUB), 0);
  assert_int_equal(gb_count_op(g, GRAPH_OP_DIV), 0);
  assert_int_equal(g->nodes[0].op, GRAPH_OP_CONV);
  assert_int_equal(g->nodes[0].outputs[0], dv);
  graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_bn_folds),
      cmocka_unit_test(test_conv_bn_graph_output),
      cmocka_unit_test(test_shared_conv_output_becomes_mul_add),
      cmocka_unit_test(test_standalone_bn),
      cmocka_unit_test(test_non_constant_params_untouched),
      cmocka_unit_test(test_conv_affine_chain),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
