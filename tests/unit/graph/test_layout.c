/* NCHWc layout rewrite: results equal before and after on the reference
 * evaluator (double), transforms only at boundaries and never back to
 * back, blocked weights and per-channel constants, graph output ids kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"
#include "unit/graph/graph_build.h"
#include "unit/graph/graph_ref_eval.h"

static double layout_and_compare(Graph *g, const GraphLayoutOptions *opts, bool fold_bn) {
  bool verbose = getenv("LOOM_TEST_VERBOSE") != NULL;
  LoomError err = {0};
  if (graph_pass_infer(g, &err)) fail_msg("%s", err.msg);
  uint64_t seed = 99;
  double **in = gb_random_inputs(g, &seed);
  double **before = ref_eval_outputs(g, in);
  if (fold_bn && graph_pass_fold_batchnorm(g, &err)) fail_msg("%s", err.msg);
  if (graph_pass_layout_nchwc(g, opts, &err)) fail_msg("%s", err.msg);
  if (graph_pass_dce(g, &err)) fail_msg("%s", err.msg);
  double e = ref_compare_outputs(g, in, before);
  gb_free_inputs(g, in);
  if (verbose) {
    StrBuf sb;
    sb_init(&sb);
    graph_print(g, &sb);
    printf("%s", sb_cstr(&sb));
    sb_free(&sb);
  }
  return e;
}

/* No transform reads a transform's output (they would cancel). */
static void check_no_back_to_back(const Graph *g) {
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i].op != GRAPH_OP_LAYOUT_TRANSFORM) continue;
    int p = g->values[g->nodes[i].inputs[0]].producer;
    assert_true(p < 0 || g->nodes[p].op != GRAPH_OP_LAYOUT_TRANSFORM);
  }
}

static const GraphNode *first_op(const Graph *g, GraphOp op) {
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].op == op) return &g->nodes[i];
  return NULL;
}

/* conv(3->16) + relu -> conv(16->8, stride 2) + per-channel add + clip ->
 * GlobalAveragePool -> Flatten: one transform in (block 1: 3 channels), one
 * out before the pool. */
static void test_conv_chain(void **state) {
  (void)state;
  uint64_t seed = 1;
  Graph *g = graph_new("chain");
  int64_t xd[4] = {1, 3, 8, 8}, cd[3] = {8, 1, 1};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId c1 = gb_conv(g, "conv1", x, 3, 16, 3, 1, 1, true, &seed);
  ValueId r1 = gb_unary(g, GRAPH_OP_RELU, "relu1", c1);
  ValueId c2 = gb_conv(g, "conv2", r1, 16, 8, 3, 2, 1, true, &seed);
  ValueId a = gb_binary(g, GRAPH_OP_ADD, "shift", c2, gb_const(g, "shift_c", 3, cd, &seed, -1, 1));
  ValueId clip_in[3] = {a, gb_scalar(g, "lo", 0.0), gb_scalar(g, "hi", 0.5)};
  ValueId cl = gb_node(g, GRAPH_OP_CLIP, "clip", clip_in, 3);
  ValueId p = gb_unary(g, GRAPH_OP_GLOBAL_AVERAGE_POOL, "gap", cl);
  ValueId f = gb_unary(g, GRAPH_OP_FLATTEN, "flatten", p);
  gb_output(g, f);
  assert_true(layout_and_compare(g, NULL, false) < 1e-9);
  assert_int_equal(gb_count_op(g, GRAPH_OP_CONV_NCHWC), 2);
  assert_int_equal(gb_count_op(g, GRAPH_OP_CONV), 0);
  assert_int_equal(gb_count_op(g, GRAPH_OP_LAYOUT_TRANSFORM), 2);
  check_no_back_to_back(g);
  /* Blocks: 3 input channels -> c = 1, 16 -> k = 16; second conv c = 16, k = 8. */
  const GraphNode *cv = first_op(g, GRAPH_OP_CONV_NCHWC);
  const GraphValue *w = &g->values[cv->inputs[1]];
  int64_t want[6] = {1, 3, 3, 3, 1, 16};
  assert_int_equal(w->rank, 6);
  for (int k = 0; k < 6; k++) assert_int_equal(w->dims[k], want[k]);
  /* The pool became a ReduceMean over H, W of the blocked clip output; the
   * flatten reads NCHW through a transform that writes the pool's own id. */
  assert_int_equal(gb_count_op(g, GRAPH_OP_GLOBAL_AVERAGE_POOL), 0);
  const GraphNode *rm = first_op(g, GRAPH_OP_REDUCE_MEAN);
  assert_non_null(rm);
  assert_int_equal(g->values[rm->inputs[0]].rank, 5);
  const GraphNode *fl = first_op(g, GRAPH_OP_FLATTEN);
  assert_int_equal(fl->inputs[0], p);
  assert_int_equal(g->nodes[g->values[p].producer].op, GRAPH_OP_LAYOUT_TRANSFORM);
  assert_string_equal(graph_attr_string(&g->nodes[g->values[p].producer], "src_layout", ""), "NCHW8c");
  (void)cl;
  graph_free(g);
}

/* Residual block with a standalone BN (becomes per-channel Mul + Add) and a
 * MaxPool, which stays blocked (MaxPoolNCHWc); only the pooled graph output
 * goes back to NCHW. */
static void test_residual_bn_pool(void **state) {
  (void)state;
  uint64_t seed = 2;
  Graph *g = graph_new("res");
  int64_t xd[4] = {2, 8, 6, 6};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId c1 = gb_conv(g, "conv1", x, 8, 8, 3, 1, 1, true, &seed);
  ValueId r1 = gb_unary(g, GRAPH_OP_RELU, "relu1", c1);
  ValueId bn = gb_bn(g, "bn", r1, 8, &seed);
  ValueId c2 = gb_conv(g, "conv2", bn, 8, 8, 1, 1, 1, false, &seed);
  ValueId a = gb_binary(g, GRAPH_OP_ADD, "residual", c2, r1);
  ValueId r2 = gb_unary(g, GRAPH_OP_RELU, "relu2", a);
  ValueId mp = gb_unary(g, GRAPH_OP_MAX_POOL, "pool", r2);
  int64_t ks[2] = {2, 2}, st[2] = {2, 2};
  gb_ints_attr(g, mp, "kernel_shape", ks, 2);
  gb_ints_attr(g, mp, "strides", st, 2);
  gb_output(g, mp);
  assert_true(layout_and_compare(g, NULL, true) < 1e-6);
  assert_int_equal(gb_count_op(g, GRAPH_OP_CONV_NCHWC), 2);
  /* x in, the pool's output out. */
  assert_int_equal(gb_count_op(g, GRAPH_OP_LAYOUT_TRANSFORM), 2);
  assert_int_equal(gb_count_op(g, GRAPH_OP_MAX_POOL), 0);
  assert_int_equal(gb_count_op(g, GRAPH_OP_MAX_POOL_NCHWC), 1);
  assert_int_equal(g->nodes[g->values[mp].producer].op, GRAPH_OP_LAYOUT_TRANSFORM);
  assert_string_equal(graph_attr_string(&g->nodes[g->values[mp].producer], "src_layout", ""), "NCHW8c");
  check_no_back_to_back(g);
  /* The BN's Mul constant became [1, 1, 1, 1, 8]. */
  const GraphNode *m = first_op(g, GRAPH_OP_MUL);
  const GraphTensor *t = graph_value_constant(g, m->inputs[1]);
  assert_non_null(t);
  assert_int_equal(t->rank, 5);
  assert_int_equal(t->dims[4], 8);
  assert_int_equal(g->values[m->outputs[0]].rank, 5);
  graph_free(g);
}

static ValueId pool_node(Graph *g, GraphOp op, const char *name, ValueId x, const int64_t *k, const int64_t *st,
                         const int64_t *pads, bool ceil_mode, bool include_pad) {
  ValueId y = gb_unary(g, op, name, x);
  gb_ints_attr(g, y, "kernel_shape", k, 2);
  gb_ints_attr(g, y, "strides", st, 2);
  if (pads) gb_ints_attr(g, y, "pads", pads, 4);
  if (ceil_mode) gb_int_attr(g, y, "ceil_mode", 1);
  if (include_pad) gb_int_attr(g, y, "count_include_pad", 1);
  return y;
}

/* ResNet stem + Inception branch + DenseNet transition: max pool 3x3/2
 * pad 1, a 3x3/1 pad 1 average pool feeding a conv, explicit Pads (H, W
 * only; a zero one folds into its pool) before unpadded average pools, a
 * ceil_mode average
 * pool counting the padding, all on blocked tensors in different blocks,
 * with no transform between them; only x in and the output out. */
static void test_pools_stay_blocked(void **state) {
  (void)state;
  uint64_t seed = 5;
  Graph *g = graph_new("pools");
  int64_t xd[4] = {2, 3, 11, 11};
  int64_t k3[2] = {3, 3}, k2[2] = {2, 2}, s1[2] = {1, 1}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1}, pa[4] = {0, 1, 1, 0};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId r = gb_unary(g, GRAPH_OP_RELU, "stem_relu", gb_conv(g, "stem", x, 3, 16, 3, 1, 1, true, &seed));
  ValueId mp = pool_node(g, GRAPH_OP_MAX_POOL, "stem_pool", r, k3, s2, p1, false, false);
  ValueId ap = pool_node(g, GRAPH_OP_AVERAGE_POOL, "branch_pool", mp, k3, s1, p1, false, false);
  ValueId c = gb_conv(g, "branch_conv", ap, 16, 24, 1, 1, 1, true, &seed);
  /* Inception's form: an explicit Pad of H and W, then an unpadded pool. */
  int64_t four = 4 * 2;
  GraphTensor *pt = graph_tensor_new(g->arena, DT_I64, 1, &four);
  int64_t pv[8] = {0, 0, 1, 2, 0, 0, 2, 1};
  for (int k = 0; k < 8; k++) graph_tensor_set_i64(pt, k, pv[k]);
  ValueId pad_in[3] = {mp, graph_add_constant(g, "pads", pt), gb_scalar(g, "half", 0.5)};
  ValueId pad = gb_node(g, GRAPH_OP_PAD, "pad", pad_in, 3);
  int64_t k4[2] = {4, 4};
  ValueId ap2 = pool_node(g, GRAPH_OP_AVERAGE_POOL, "padded_pool", pad, k4, s1, NULL, false, false);
  /* A zero Pad read only by an unpadded AveragePool folds into the pool
   * (pads, count_include_pad). */
  GraphTensor *pt0 = graph_tensor_new(g->arena, DT_I64, 1, &four);
  int64_t pv0[8] = {0, 0, 1, 1, 0, 0, 1, 1};
  for (int k = 0; k < 8; k++) graph_tensor_set_i64(pt0, k, pv0[k]);
  ValueId pad0_in[2] = {mp, graph_add_constant(g, "pads0", pt0)};
  ValueId ap3 = pool_node(g, GRAPH_OP_AVERAGE_POOL, "zero_padded_pool", gb_node(g, GRAPH_OP_PAD, "pad0", pad0_in, 2), k3, s1,
                          NULL, false, false);
  ValueId cat_in[4] = {c, mp, ap2, ap3};
  ValueId cat = gb_node(g, GRAPH_OP_CONCAT, "concat", cat_in, 4);
  gb_int_attr(g, cat, "axis", 1);
  ValueId tp = pool_node(g, GRAPH_OP_AVERAGE_POOL, "transition", cat, k2, s2, pa, true, true);
  gb_output(g, gb_unary(g, GRAPH_OP_RELU, "out_relu", tp));
  assert_true(layout_and_compare(g, NULL, false) < 1e-9);
  assert_int_equal(gb_count_op(g, GRAPH_OP_MAX_POOL) + gb_count_op(g, GRAPH_OP_AVERAGE_POOL), 0);
  assert_int_equal(gb_count_op(g, GRAPH_OP_MAX_POOL_NCHWC), 1);
  assert_int_equal(gb_count_op(g, GRAPH_OP_AVERAGE_POOL_NCHWC), 4);
  assert_int_equal(gb_count_op(g, GRAPH_OP_PAD), 1);
  const GraphNode *pn = first_op(g, GRAPH_OP_PAD);
  assert_int_equal(g->values[pn->inputs[0]].rank, 5);
  assert_int_equal(g->values[pn->outputs[0]].dims[2], 6 + 3);
  assert_int_equal(g->values[pn->outputs[0]].dims[3], 6 + 3);
  for (int i = 0; i < g->nnodes; i++) {
    const GraphNode *q = &g->nodes[i];
    if (strcmp(q->name, "zero_padded_pool")) continue;
    assert_int_equal(q->op, GRAPH_OP_AVERAGE_POOL_NCHWC);
    assert_int_equal(graph_attr_int(q, "count_include_pad", 0), 1);
    assert_int_equal(graph_node_attr(q, "pads")->ints[0], 1);
    assert_int_equal(g->values[q->inputs[0]].dims[2], 6); /* reads the unpadded stem pool */
  }
  /* x in (block 1); the concat of 24 + 16 + 16 + 16 channels in block 8
   * takes mp, ap2 and ap3 from block 16; the output back to NCHW. */
  assert_int_equal(gb_count_op(g, GRAPH_OP_LAYOUT_TRANSFORM), 5);
  const GraphNode *t = first_op(g, GRAPH_OP_AVERAGE_POOL_NCHWC);
  assert_int_equal(g->values[t->outputs[0]].rank, 5);
  assert_int_equal(g->values[t->outputs[0]].dims[4], 16);
  check_no_back_to_back(g);
  graph_free(g);
}

/* Pools that must stay NCHW: an NCHW input (no conv before it) and a
 * MaxPool whose Indices output is used (NCHW offsets); a Pad of channels. */
static void test_pools_left_nchw(void **state) {
  (void)state;
  uint64_t seed = 6;
  Graph *g = graph_new("nchw_pools");
  int64_t xd[4] = {1, 8, 6, 6}, k2[2] = {2, 2}, s2[2] = {2, 2};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId p0 = pool_node(g, GRAPH_OP_MAX_POOL, "plain", x, k2, s2, NULL, false, false);
  ValueId c = gb_conv(g, "conv", p0, 8, 8, 1, 1, 1, true, &seed);
  ValueId y = graph_add_value(g, "pooled"), idx = graph_add_value(g, "indices");
  ValueId outs[2] = {y, idx};
  graph_add_node(g, GRAPH_OP_MAX_POOL, "with_indices", &c, 1, outs, 2);
  gb_ints_attr(g, y, "kernel_shape", k2, 2);
  gb_ints_attr(g, y, "strides", s2, 2);
  gb_output(g, y);
  /* A Pad of the channels of a blocked value needs NCHW. */
  int64_t eight = 8;
  GraphTensor *pt = graph_tensor_new(g->arena, DT_I64, 1, &eight);
  int64_t pv[8] = {0, 1, 0, 0, 0, 0, 0, 0};
  for (int k = 0; k < 8; k++) graph_tensor_set_i64(pt, k, pv[k]);
  ValueId pad_in[2] = {c, graph_add_constant(g, "pads", pt)};
  ValueId pad = gb_node(g, GRAPH_OP_PAD, "channel_pad", pad_in, 2);
  gb_output(g, pad);
  LoomError err = {0};
  if (graph_pass_infer(g, &err)) fail_msg("%s", err.msg);
  if (graph_pass_layout_nchwc(g, NULL, &err)) fail_msg("%s", err.msg);
  assert_int_equal(gb_count_op(g, GRAPH_OP_MAX_POOL), 2);
  assert_int_equal(gb_count_op(g, GRAPH_OP_MAX_POOL_NCHWC), 0);
  assert_int_equal(gb_count_op(g, GRAPH_OP_CONV_NCHWC), 1);
  assert_int_equal(g->values[first_op(g, GRAPH_OP_PAD)->inputs[0]].rank, 4);
  (void)idx;
  graph_free(g);
}

/* MaxPoolNCHWc inference: output extents like MaxPool's (ceil_mode too),
 * errors naming the node for a rank-4 input or a bad kernel_shape. */
static void test_pool_nchwc_infer(void **state) {
  (void)state;
  Graph *g = graph_new("infer");
  int64_t xd[5] = {1, 2, 7, 6, 8}, k3[2] = {3, 3}, s2[2] = {2, 2}, k1[1] = {3};
  ValueId x = gb_input(g, "x", 5, xd);
  ValueId y = pool_node(g, GRAPH_OP_MAX_POOL_NCHWC, "mp", x, k3, s2, NULL, true, false);
  gb_output(g, y);
  LoomError err = {0};
  if (graph_pass_infer(g, &err)) fail_msg("%s", err.msg);
  int64_t want[5] = {1, 2, 3, 3, 8}; /* ceil: H (7 - 3) / 2 + 1 = 3; W ceil(3 / 2) + 1 = 3 */
  assert_int_equal(g->values[y].rank, 5);
  for (int k = 0; k < 5; k++) assert_int_equal(g->values[y].dims[k], want[k]);
  gb_ints_attr(g, y, "kernel_shape", k1, 1);
  assert_int_equal(graph_pass_infer(g, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "\"mp\""));
  assert_non_null(strstr(err.msg, "kernel_shape"));
  graph_free(g);
  g = graph_new("infer4");
  int64_t xd4[4] = {1, 2, 7, 6};
  ValueId x4 = gb_input(g, "x", 4, xd4);
  gb_output(g, pool_node(g, GRAPH_OP_AVERAGE_POOL_NCHWC, "ap", x4, k3, s2, NULL, false, false));
  assert_int_equal(graph_pass_infer(g, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "rank 4, expected 5"));
  graph_free(g);
}

/* Depthwise conv, then a 1x1 conv whose output is the graph output: the
 * final transform writes the output's own id. Also with max_block 4. */
static void test_depthwise_and_output(void **state) {
  (void)state;
  for (int variant = 0; variant < 2; variant++) {
    uint64_t seed = 3;
    Graph *g = graph_new("dw");
    int64_t xd[4] = {1, 16, 5, 5};
    ValueId x = gb_input(g, "x", 4, xd);
    ValueId d = gb_conv(g, "dw", x, 16, 16, 3, 1, 16, true, &seed);
    ValueId r = gb_unary(g, GRAPH_OP_RELU, "relu", d);
    ValueId pw = gb_conv(g, "pw", r, 16, 24, 1, 1, 1, true, &seed);
    gb_output(g, pw);
    gb_output(g, r);
    GraphLayoutOptions o = {variant ? 4 : 0};
    assert_true(layout_and_compare(g, &o, false) < 1e-9);
    assert_int_equal(gb_count_op(g, GRAPH_OP_CONV_NCHWC), 2);
    assert_int_equal(g->outputs[0], pw);
    assert_int_equal(g->outputs[1], r);
    assert_int_equal(g->nodes[g->values[pw].producer].op, GRAPH_OP_LAYOUT_TRANSFORM);
    const GraphNode *cv = first_op(g, GRAPH_OP_CONV_NCHWC);
    assert_int_equal(graph_attr_int(cv, "group", 1), 16);
    const GraphValue *w = &g->values[cv->inputs[1]];
    int b = variant ? 4 : 16;
    int64_t want[6] = {16 / b, 1, 3, 3, 1, b};
    for (int k = 0; k < 6; k++) assert_int_equal(w->dims[k], want[k]);
    /* 24 output channels: block 8 (or 4). */
    const GraphValue *out = &g->values[g->nodes[g->values[pw].producer].inputs[0]];
    assert_int_equal(out->dims[4], variant ? 4 : 8);
    check_no_back_to_back(g);
    graph_free(g);
  }
}

/* ResNeXt-style grouped convs: 4 groups of 16 channels (3x3, bias) and 2
 * groups of 24 -> 16 (block 8 in, 16 out, stride 2) go blocked with the
 * weights [K/k, C/(c g), R, S, c, k]; 8 groups of 4 channels stay NCHW. */
static void test_grouped(void **state) {
  (void)state;
  uint64_t seed = 11;
  Graph *g = graph_new("grouped");
  ValueId x = gb_input(g, "x", 4, (int64_t[]){2, 64, 9, 9});
  ValueId a = gb_unary(g, GRAPH_OP_RELU, "relu", gb_conv(g, "g4", x, 64, 64, 3, 1, 4, true, &seed));
  ValueId b = gb_conv(g, "g2", gb_conv(g, "mix", a, 64, 48, 1, 1, 1, false, &seed), 48, 32, 3, 2, 2, false, &seed);
  ValueId c = gb_conv(g, "g8", b, 32, 32, 3, 1, 8, false, &seed);
  gb_output(g, c);
  assert_true(layout_and_compare(g, NULL, false) < 1e-9);
  assert_int_equal(gb_count_op(g, GRAPH_OP_CONV_NCHWC), 3);
  assert_int_equal(gb_count_op(g, GRAPH_OP_CONV), 1);
  const GraphNode *g4 = first_op(g, GRAPH_OP_CONV_NCHWC);
  assert_int_equal(graph_attr_int(g4, "group", 1), 4);
  const GraphValue *w = &g->values[g4->inputs[1]];
  int64_t want[6] = {4, 1, 3, 3, 16, 16};
  for (int k = 0; k < 6; k++) assert_int_equal(w->dims[k], want[k]);
  int seen = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const GraphNode *n = &g->nodes[i];
    if (n->op != GRAPH_OP_CONV_NCHWC || graph_attr_int(n, "group", 1) != 2) continue;
    const GraphValue *w2 = &g->values[n->inputs[1]];
    int64_t want2[6] = {2, 3, 3, 3, 8, 16}; /* 24 per group: block 8; 16 per group: block 16 */
    for (int k = 0; k < 6; k++) assert_int_equal(w2->dims[k], want2[k]);
    seen++;
  }
  assert_int_equal(seen, 1);
  check_no_back_to_back(g);
  graph_free(g);
}

/* DenseNet-style channel concat of blocked tensors stays blocked;
 * EfficientNet-style squeeze-excitation (GlobalAveragePool -> 1x1 convs ->
 * sigmoid -> Mul with the feature map) runs blocked end to end; the final
 * GlobalMaxPool becomes a ReduceMax over H, W and only its small result is
 * transformed back. */
static void test_concat_and_squeeze_excitation(void **state) {
  (void)state;
  uint64_t seed = 4;
  Graph *g = graph_new("se");
  int64_t xd[4] = {1, 8, 6, 6};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId a = gb_conv(g, "a", x, 8, 16, 3, 1, 1, true, &seed);
  ValueId b = gb_conv(g, "b", x, 8, 8, 1, 1, 1, true, &seed);
  ValueId cat_in[3] = {a, b, a};
  ValueId cat = gb_node(g, GRAPH_OP_CONCAT, "concat", cat_in, 3);
  gb_int_attr(g, cat, "axis", 1);
  ValueId sq = gb_unary(g, GRAPH_OP_GLOBAL_AVERAGE_POOL, "squeeze", cat);
  ValueId e1 = gb_unary(g, GRAPH_OP_RELU, "se_relu", gb_conv(g, "se1", sq, 40, 8, 1, 1, 1, true, &seed));
  ValueId e2 = gb_unary(g, GRAPH_OP_SIGMOID, "se_sig", gb_conv(g, "se2", e1, 8, 40, 1, 1, 1, true, &seed));
  ValueId m = gb_binary(g, GRAPH_OP_MUL, "excite", cat, e2);
  ValueId p = gb_unary(g, GRAPH_OP_GLOBAL_MAX_POOL, "gmp", m);
  gb_output(g, gb_unary(g, GRAPH_OP_FLATTEN, "flat", p));
  assert_true(layout_and_compare(g, NULL, false) < 1e-9);
  assert_int_equal(gb_count_op(g, GRAPH_OP_CONV_NCHWC), 4);
  /* x in (block 8), a from block 16 to the concat's 8 (b has 8 channels),
   * the pooled [1, 5, 1, 1, 8] out: nothing else, one transform to NCHW. */
  assert_int_equal(gb_count_op(g, GRAPH_OP_LAYOUT_TRANSFORM), 3);
  int to_nchw = 0;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].op == GRAPH_OP_LAYOUT_TRANSFORM)
      to_nchw += !strcmp(graph_attr_string(&g->nodes[i], "dst_layout", ""), "NCHW");
  assert_int_equal(to_nchw, 1);
  assert_int_equal(gb_count_op(g, GRAPH_OP_GLOBAL_AVERAGE_POOL), 0);
  assert_int_equal(gb_count_op(g, GRAPH_OP_REDUCE_MAX), 1);
  const GraphNode *c = first_op(g, GRAPH_OP_CONCAT);
  assert_int_equal(g->values[c->outputs[0]].rank, 5);
  assert_int_equal(g->values[c->outputs[0]].dims[1], 5); /* 40 channels, block 8 */
  check_no_back_to_back(g);
  graph_free(g);
}

/* Non-constant weights: the conv stays NCHW and no transform appears. */
static void test_ineligible_conv_untouched(void **state) {
  (void)state;
  Graph *g = graph_new("dyn");
  int64_t xd[4] = {1, 4, 4, 4}, wd[4] = {4, 4, 1, 1};
  ValueId x = gb_input(g, "x", 4, xd), w = gb_input(g, "w", 4, wd);
  ValueId ins[2] = {x, w};
  ValueId c = gb_node(g, GRAPH_OP_CONV, "conv", ins, 2);
  gb_output(g, gb_unary(g, GRAPH_OP_RELU, "relu", c));
  assert_true(layout_and_compare(g, NULL, false) < 1e-12);
  assert_int_equal(gb_count_op(g, GRAPH_OP_CONV_NCHWC), 0);
  assert_int_equal(gb_count_op(g, GRAPH_OP_LAYOUT_TRANSFORM), 0);
  graph_free(g);
}

/* Bad LayoutTransform attributes are errors naming the node. */
static void test_bad_layout_attr(void **state) {
  (void)state;
  Graph *g = graph_new("bad");
  int64_t xd[4] = {1, 6, 2, 2};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId y = gb_unary(g, GRAPH_OP_LAYOUT_TRANSFORM, "lt", x);
  GraphNode *n = &g->nodes[g->values[y].producer];
  GraphAttr s = {.name = "src_layout", .kind = GRAPH_ATTR_STRING, .s = "NCHW"};
  GraphAttr d = {.name = "dst_layout", .kind = GRAPH_ATTR_STRING, .s = "NCHW4c"};
  graph_node_set_attr(g, n, s);
  graph_node_set_attr(g, n, d);
  gb_output(g, y);
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "\"lt\""));
  assert_non_null(strstr(err.msg, "divisible"));
  d.s = "NHWC";
  graph_node_set_attr(g, n, d);
  assert_int_equal(graph_pass_infer(g, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "NHWC"));
  d.s = "NCHW2c";
  graph_node_set_attr(g, n, d);
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  assert_int_equal(g->values[y].rank, 5);
  assert_int_equal(g->values[y].dims[1], 3);
  graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_chain),
      cmocka_unit_test(test_residual_bn_pool),
      cmocka_unit_test(test_depthwise_and_output),
      cmocka_unit_test(test_grouped),
      cmocka_unit_test(test_concat_and_squeeze_excitation),
      cmocka_unit_test(test_pools_stay_blocked),
      cmocka_unit_test(test_pools_left_nchw),
      cmocka_unit_test(test_pool_nchwc_infer),
      cmocka_unit_test(test_ineligible_conv_untouched),
      cmocka_unit_test(test_bad_layout_attr),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
