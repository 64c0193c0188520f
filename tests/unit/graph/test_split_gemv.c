/* graph_pass_split_gemv: a [1, K] x [K, N] product with a constant matrix
 * of 1 MiB or more becomes Reshape -> batch MatMul over `parts` row ranges
 * (the matrix's bytes unchanged) -> ReduceSum (-> the Gemm's bias Add);
 * small matrices, several rows, transposes, scaling and parts < 2 are left
 * alone. compiler_vs_ort (tests/models classifier.onnx) checks the numbers
 * end to end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"
#include "graph_build.h"

static Graph *gemv(int64_t m, int64_t k, int64_t n, bool bias, ValueId *b_out) {
  Graph *g = graph_new("gemv");
  uint64_t seed = 5;
  ValueId a = gb_input(g, "a", 2, (int64_t[]){m, k});
  ValueId b = gb_const(g, "b", 2, (int64_t[]){k, n}, &seed, -1, 1);
  ValueId y;
  if (bias) {
    ValueId c = gb_const(g, "c", 1, (int64_t[]){n}, &seed, -1, 1);
    y = gb_node(g, GRAPH_OP_GEMM, "fc", (ValueId[]){a, b, c}, 3);
  } else {
    y = gb_binary(g, GRAPH_OP_MATMUL, "fc", a, b);
  }
  gb_output(g, y);
  *b_out = b;
  return g;
}

static void test_split_with_bias(void **state) {
  (void)state;
  LoomError err = {0};
  ValueId b;
  Graph *g = gemv(1, 1024, 300, true, &b); /* 1.2 MB */
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  const GraphTensor *before = graph_value_constant(g, b);
  assert_int_equal(graph_pass_split_gemv(g, 2, &err), LOOM_OK);
  assert_int_equal(g->nnodes, 4);
  GraphOp ops[4] = {GRAPH_OP_RESHAPE, GRAPH_OP_MATMUL, GRAPH_OP_REDUCE_SUM, GRAPH_OP_ADD};
  for (int i = 0; i < 4; i++) assert_int_equal(g->nodes[i].op, ops[i]);
  const GraphValue *partial = &g->values[g->nodes[1].outputs[0]];
  assert_int_equal(partial->rank, 3);
  assert_int_equal(partial->dims[0], 2);
  assert_int_equal(partial->dims[2], 300);
  const GraphTensor *parts = graph_value_constant(g, g->nodes[1].inputs[1]);
  assert_non_null(parts);
  assert_int_equal(parts->rank, 3);
  assert_int_equal(parts->dims[1], 512);
  assert_memory_equal(parts->data, before->data, sizeof(float) * 1024 * 300);
  assert_int_equal(graph_attr_int(&g->nodes[2], "keepdims", 1), 0);
  const GraphValue *y = &g->values[g->outputs[0]];
  assert_int_equal(y->rank, 2);
  assert_int_equal(y->dims[1], 300);
  assert_int_equal(g->nodes[3].outputs[0], g->outputs[0]);
  assert_int_equal(graph_verify(g, &err), LOOM_OK);
  graph_free(g);
}

static void test_matmul_without_bias(void **state) {
  (void)state;
  LoomError err = {0};
  ValueId b;
  Graph *g = gemv(1, 768, 400, false, &b);
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  assert_int_equal(graph_pass_split_gemv(g, 3, &err), LOOM_OK);
  assert_int_equal(gb_count_op(g, GRAPH_OP_REDUCE_SUM), 1);
  assert_int_equal(gb_count_op(g, GRAPH_OP_ADD), 0);
  assert_int_equal(g->values[g->nodes[1].outputs[0]].dims[0], 3);
  assert_int_equal(g->nodes[2].outputs[0], g->outputs[0]);
  graph_free(g);
}

/* Left alone: a small matrix, two rows, K not divisible, one part, and a
 * transposed A. */
static void test_left_alone(void **state) {
  (void)state;
  struct {
    int64_t m, k, n;
    int parts;
  } cases[] = {{1, 64, 100, 2}, {2, 1024, 300, 2}, {1, 1023, 300, 2}, {1, 1024, 300, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    LoomError err = {0};
    ValueId b;
    Graph *g = gemv(cases[i].m, cases[i].k, cases[i].n, true, &b);
    assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
    assert_int_equal(graph_pass_split_gemv(g, cases[i].parts, &err), LOOM_OK);
    assert_int_equal(g->nnodes, 1);
    assert_int_equal(g->nodes[0].op, GRAPH_OP_GEMM);
    graph_free(g);
  }
  Graph *g = graph_new("trans_a");
  LoomError err = {0};
  uint64_t seed = 9;
  ValueId a = gb_input(g, "a", 2, (int64_t[]){1024, 1});
  ValueId bt = gb_const(g, "b", 2, (int64_t[]){1024, 300}, &seed, -1, 1);
  ValueId y = gb_binary(g, GRAPH_OP_GEMM, "fc", a, bt);
  gb_int_attr(g, y, "transA", 1);
  gb_output(g, y);
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  assert_int_equal(graph_pass_split_gemv(g, 2, &err), LOOM_OK);
  assert_int_equal(g->nnodes, 1);
  graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_with_bias),
      cmocka_unit_test(test_matmul_without_bias),
      cmocka_unit_test(test_left_alone),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
