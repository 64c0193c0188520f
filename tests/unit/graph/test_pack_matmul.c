/* graph_pass_pack_matmul: a MatMul or Gemm with a constant f32 B [K, N]
 * and at least 2 rows of A becomes MatMulPacked over B packed into
 * zero-padded column panels [ceil(N / w), K, w] (then the Gemm's bias
 * Add); one-row products without the GEMV width, a non-constant or batched B, transposes,
 * scaling or integer types are left alone. Numbers before and after on the
 * double reference evaluator; test_matmul_packed.c (topi) checks the
 * compiled kernel, compiler_vs_ort (transformer_block) the whole path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"
#include "graph_build.h"
#include "graph_ref_eval.h"

enum { W = 16 };

static void assert_packed(const Graph *g, const GraphTensor *b, ValueId bp_id) {
  const GraphTensor *bp = graph_value_constant(g, bp_id);
  assert_non_null(bp);
  int64_t K = b->dims[0], N = b->dims[1], P = (N + W - 1) / W;
  assert_int_equal(bp->rank, 3);
  assert_int_equal(bp->dims[0], P);
  assert_int_equal(bp->dims[1], K);
  assert_int_equal(bp->dims[2], W);
  const float *src = b->data, *dst = bp->data;
  for (int64_t p = 0; p < P; p++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t c = 0; c < W; c++) {
        int64_t j = p * W + c;
        float want = j < N ? src[k * N + j] : 0.0f;
        assert_true(dst[(p * K + k) * W + c] == want);
      }
}

static double rewrite_error(Graph *g, uint64_t seed) {
  LoomError err = {0};
  double **in = gb_random_inputs(g, &seed);
  double **before = ref_eval_outputs(g, in);
  assert_int_equal(graph_pass_pack_matmul(g, W, 0, &err), LOOM_OK);
  assert_int_equal(graph_verify(g, &err), LOOM_OK);
  double e = ref_compare_outputs(g, in, before);
  gb_free_inputs(g, in);
  return e;
}

/* BERT's layout: [S, 1, K] x [K, N], bias Add and Relu after it. */
static void test_matmul_rows_in_batch(void **state) {
  (void)state;
  LoomError err = {0};
  uint64_t seed = 3;
  Graph *g = graph_new("mm");
  ValueId a = gb_input(g, "a", 3, (int64_t[]){32, 1, 24});
  ValueId b = gb_const(g, "b", 2, (int64_t[]){24, 48}, &seed, -1, 1);
  ValueId c = gb_const(g, "c", 1, (int64_t[]){48}, &seed, -1, 1);
  ValueId y = gb_binary(g, GRAPH_OP_MATMUL, "mm", a, b);
  ValueId r = gb_unary(g, GRAPH_OP_RELU, "relu", gb_binary(g, GRAPH_OP_ADD, "bias", y, c));
  gb_output(g, r);
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  const GraphTensor *bt = graph_value_constant(g, b);
  assert_true(rewrite_error(g, 7) < 1e-12);
  assert_int_equal(g->nnodes, 3);
  const GraphNode *m = &g->nodes[0];
  assert_int_equal(m->op, GRAPH_OP_MATMUL_PACKED);
  assert_int_equal(graph_attr_int(m, "n", 0), 48);
  assert_int_equal(m->outputs[0], y); /* the epilogue reads the same value */
  assert_packed(g, bt, m->inputs[1]);
  const GraphValue *yv = &g->values[y];
  assert_int_equal(yv->rank, 3);
  assert_int_equal(yv->dims[0], 32);
  assert_int_equal(yv->dims[2], 48);
  assert_int_equal(g->outputs[0], r);
  graph_free(g);
}

/* Gemm + bias with N = 40: the last panel is half padding; exactly 16
 * rows is enough. */
static void test_gemm_bias_padded(void **state) {
  (void)state;
  LoomError err = {0};
  uint64_t seed = 4;
  Graph *g = graph_new("gemm");
  ValueId a = gb_input(g, "a", 2, (int64_t[]){16, 24});
  ValueId b = gb_const(g, "b", 2, (int64_t[]){24, 40}, &seed, -1, 1);
  ValueId c = gb_const(g, "c", 1, (int64_t[]){40}, &seed, -1, 1);
  ValueId y = gb_node(g, GRAPH_OP_GEMM, "fc", (ValueId[]){a, b, c}, 3);
  gb_output(g, y);
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  const GraphTensor *bt = graph_value_constant(g, b);
  assert_true(rewrite_error(g, 8) < 1e-12);
  assert_int_equal(g->nnodes, 2);
  assert_int_equal(g->nodes[0].op, GRAPH_OP_MATMUL_PACKED);
  assert_int_equal(g->nodes[1].op, GRAPH_OP_ADD);
  assert_int_equal(g->nodes[1].inputs[0], g->nodes[0].outputs[0]);
  assert_int_equal(g->nodes[1].inputs[1], c);
  assert_int_equal(g->nodes[1].outputs[0], y);
  assert_packed(g, bt, g->nodes[0].inputs[1]);
  const GraphValue *p = &g->values[g->nodes[0].outputs[0]];
  assert_int_equal(p->dims[0], 16);
  assert_int_equal(p->dims[1], 40);
  graph_free(g);
}

/* Two products of one weight share one packed copy. */
static void test_shared_weight(void **state) {
  (void)state;
  LoomError err = {0};
  uint64_t seed = 5;
  Graph *g = graph_new("shared");
  ValueId a = gb_input(g, "a", 2, (int64_t[]){20, 32});
  ValueId x = gb_input(g, "x", 2, (int64_t[]){24, 32});
  ValueId b = gb_const(g, "b", 2, (int64_t[]){32, 64}, &seed, -1, 1);
  gb_output(g, gb_binary(g, GRAPH_OP_MATMUL, "m1", a, b));
  gb_output(g, gb_binary(g, GRAPH_OP_MATMUL, "m2", x, b));
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  assert_true(rewrite_error(g, 9) < 1e-12);
  assert_int_equal(gb_count_op(g, GRAPH_OP_MATMUL_PACKED), 2);
  assert_int_equal(g->nodes[0].inputs[1], g->nodes[1].inputs[1]);
  graph_free(g);
}

/* A matrix-vector product (one row) with the GEMV width on: a Gemm with a
 * bias gets panels of min(gemv width, N rounded up to W) columns, an even
 * number of them (100 columns in panels of 3 W: 4, the last one zeros),
 * the same bytes as graph_pack_panels_f32 makes, and computes what it did;
 * the same weight under 4 rows gets its one-vector panels besides. */
static void test_gemv_panels(void **state) {
  (void)state;
  LoomError err = {0};
  uint64_t seed = 8;
  Graph *g = graph_new("gemv");
  ValueId a = gb_input(g, "a", 2, (int64_t[]){1, 24});
  ValueId x = gb_input(g, "x", 2, (int64_t[]){4, 24});
  ValueId b = gb_const(g, "b", 2, (int64_t[]){24, 100}, &seed, -1, 1);
  ValueId c = gb_const(g, "c", 1, (int64_t[]){100}, &seed, -1, 1);
  gb_output(g, gb_node(g, GRAPH_OP_GEMM, "fc", (ValueId[]){a, b, c}, 3));
  gb_output(g, gb_binary(g, GRAPH_OP_MATMUL, "mm", x, b));
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  const GraphTensor *bt = graph_value_constant(g, b);
  uint64_t in_seed = 4;
  double **in = gb_random_inputs(g, &in_seed);
  double **before = ref_eval_outputs(g, in);
  assert_int_equal(graph_pass_pack_matmul(g, W, 3 * W, &err), LOOM_OK);
  assert_true(ref_compare_outputs(g, in, before) < 1e-12);
  gb_free_inputs(g, in);
  assert_int_equal(gb_count_op(g, GRAPH_OP_MATMUL_PACKED), 2);
  const GraphTensor *wide = graph_value_constant(g, g->nodes[0].inputs[1]);
  assert_non_null(wide);
  assert_int_equal(wide->rank, 3);
  assert_int_equal(wide->dims[0], 4);
  assert_int_equal(wide->dims[1], 24);
  assert_int_equal(wide->dims[2], 3 * W);
  float want[4 * 24 * 3 * W];
  graph_pack_panels_f32(bt->data, 24, 100, 3 * W, 4, want);
  for (int i = 3 * 24 * 3 * W; i < 4 * 24 * 3 * W; i++) assert_true(want[i] == 0.0f);
  assert_memory_equal(wide->data, want, sizeof want);
  assert_packed(g, bt, g->nodes[2].inputs[1]);
  graph_free(g);
}

static Graph *product(GraphOp op, int rank, const int64_t *adims, DType dt, bool const_b, int64_t N) {
  Graph *g = graph_new("left_alone");
  uint64_t seed = 6;
  ValueId a = gb_input(g, "a", rank, adims);
  graph_set_type(g, a, dt, rank, adims);
  int64_t bd[2] = {adims[rank - 1], N};
  ValueId b;
  if (!const_b) {
    b = gb_input(g, "b", 2, bd);
  } else if (dtype_eq(dt, DT_F32)) {
    b = gb_const(g, "b", 2, bd, &seed, -1, 1);
  } else {
    GraphTensor *t = graph_tensor_new(g->arena, dt, 2, bd);
    for (int64_t k = 0; k < graph_tensor_numel(t); k++) graph_tensor_set_f64(t, k, (double)(k % 7) - 3);
    b = graph_add_constant(g, "b", t);
  }
  gb_output(g, gb_binary(g, op, "p", a, b));
  return g;
}

static void expect_unchanged(Graph *g, int width) {
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  GraphOp op = g->nodes[0].op;
  assert_int_equal(graph_pass_pack_matmul(g, width, 0, &err), LOOM_OK);
  assert_int_equal(g->nnodes, 1);
  assert_int_equal(g->nodes[0].op, op);
  assert_int_equal(gb_count_op(g, GRAPH_OP_MATMUL_PACKED), 0);
  graph_free(g);
}

/* Left alone: matrix-vector (M = 1, split_gemv's, with the GEMV width
 * off), B an input, i32, a transposed A, scaled Gemms, a batched constant
 * B, and width 0 (the pass off). */
static void test_left_alone(void **state) {
  (void)state;
  expect_unchanged(product(GRAPH_OP_MATMUL, 2, (int64_t[]){1, 64}, DT_F32, true, 64), W);
  expect_unchanged(product(GRAPH_OP_GEMM, 2, (int64_t[]){1, 64}, DT_F32, true, 64), W);
  expect_unchanged(product(GRAPH_OP_MATMUL, 2, (int64_t[]){32, 64}, DT_F32, false, 64), W);
  expect_unchanged(product(GRAPH_OP_MATMUL, 2, (int64_t[]){32, 64}, DT_I32, true, 64), W);
  expect_unchanged(product(GRAPH_OP_MATMUL, 2, (int64_t[]){32, 64}, DT_F32, true, 64), 0);

  Graph *g = product(GRAPH_OP_GEMM, 2, (int64_t[]){64, 64}, DT_F32, true, 48); /* square A: only transA differs */
  gb_int_attr(g, g->outputs[0], "transA", 1);
  expect_unchanged(g, W);

  g = product(GRAPH_OP_GEMM, 2, (int64_t[]){32, 64}, DT_F32, true, 48);
  gb_float_attr(g, g->outputs[0], "alpha", 0.5);
  expect_unchanged(g, W);

  g = graph_new("beta");
  uint64_t seed = 7;
  ValueId a = gb_input(g, "a", 2, (int64_t[]){32, 64});
  ValueId b = gb_const(g, "b", 2, (int64_t[]){64, 48}, &seed, -1, 1);
  ValueId c = gb_const(g, "c", 1, (int64_t[]){48}, &seed, -1, 1);
  ValueId y = gb_node(g, GRAPH_OP_GEMM, "fc", (ValueId[]){a, b, c}, 3);
  gb_float_attr(g, y, "beta", 2.0);
  gb_output(g, y);
  expect_unchanged(g, W);

  g = graph_new("batched_b");
  a = gb_input(g, "a", 3, (int64_t[]){2, 32, 64});
  b = gb_const(g, "b", 3, (int64_t[]){2, 64, 48}, &seed, -1, 1);
  gb_output(g, gb_binary(g, GRAPH_OP_MATMUL, "bmm", a, b));
  expect_unchanged(g, W);
}

/* MatMulPacked's inference names what is wrong: no n, panels that do not
 * cover n columns, a K that differs from A's. */
static void test_infer_errors(void **state) {
  (void)state;
  struct {
    int64_t n, panels, k;
    const char *msg;
  } cases[] = {{0, 2, 8, "attribute n"}, {40, 2, 8, "panels"}, {32, 2, 9, "inner extents"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    LoomError err = {0};
    uint64_t seed = 8;
    Graph *g = graph_new("bad");
    ValueId a = gb_input(g, "a", 2, (int64_t[]){16, 8});
    ValueId bp = gb_const(g, "bp", 3, (int64_t[]){cases[i].panels, cases[i].k, W}, &seed, -1, 1);
    ValueId y = gb_binary(g, GRAPH_OP_MATMUL_PACKED, "p", a, bp);
    if (cases[i].n) gb_int_attr(g, y, "n", cases[i].n);
    gb_output(g, y);
    assert_int_not_equal(graph_pass_infer(g, &err), LOOM_OK);
    if (!strstr(err.msg, cases[i].msg)) fail_msg("case %zu: \"%s\" does not mention \"%s\"", i, err.msg, cases[i].msg);
    graph_free(g);
  }
}

/* Few rows (a batch-4 classifier, decode tokens, 8 rows in a batch, 15
 * rows with N off the vector width) get one-vector panels too and compute
 * what they did. */
static void test_few_rows(void **state) {
  (void)state;
  LoomError err = {0};
  Graph *graphs[3] = {product(GRAPH_OP_MATMUL, 2, (int64_t[]){4, 64}, DT_F32, true, 64),
                      product(GRAPH_OP_MATMUL, 3, (int64_t[]){2, 4, 64}, DT_F32, true, 64),
                      product(GRAPH_OP_GEMM, 2, (int64_t[]){15, 40}, DT_F32, true, 23)};
  for (int i = 0; i < 3; i++) {
    Graph *g = graphs[i];
    assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
    const GraphTensor *bt = graph_value_constant(g, g->nodes[0].inputs[1]);
    assert_true(rewrite_error(g, 11) < 1e-12);
    assert_int_equal(gb_count_op(g, GRAPH_OP_MATMUL_PACKED), 1);
    assert_packed(g, bt, g->nodes[0].inputs[1]);
    graph_free(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_rows_in_batch),
      cmocka_unit_test(test_few_rows),
      cmocka_unit_test(test_gemm_bias_padded),
      cmocka_unit_test(test_shared_weight),
      cmocka_unit_test(test_gemv_panels),
      cmocka_unit_test(test_left_alone),
      cmocka_unit_test(test_infer_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
