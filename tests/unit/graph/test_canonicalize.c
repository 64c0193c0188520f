/* graph_pass_canonicalize: Gemm's constant transposed weight is folded
 * (transB becomes 0 and the new constant is exactly B^T: A B^T computed
 * both ways agrees bit for bit), Pow by 2 becomes Mul(x, x) and Pow by 0.5
 * Sqrt(x); anything else is left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "graph/passes.h"
#include "graph_build.h"

static void test_gemm_trans_b_folded(void **state) {
  (void)state;
  Graph *g = graph_new("gemm");
  LoomError err = {0};
  uint64_t seed = 3;
  ValueId a = gb_input(g, "a", 2, (int64_t[]){3, 5});
  ValueId b = gb_const(g, "b", 2, (int64_t[]){4, 5}, &seed, -1, 1); /* [N, K]: transposed */
  ValueId y = gb_binary(g, GRAPH_OP_GEMM, "gemm", a, b);
  gb_int_attr(g, y, "transB", 1);
  gb_output(g, y);
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  const GraphTensor *before = graph_value_constant(g, b);
  assert_int_equal(graph_pass_canonicalize(g, &err), LOOM_OK);
  const GraphNode *n = &g->nodes[0];
  assert_int_equal(graph_attr_int(n, "transB", -1), 0);
  const GraphTensor *after = graph_value_constant(g, n->inputs[1]);
  assert_non_null(after);
  assert_int_equal(after->dims[0], 5);
  assert_int_equal(after->dims[1], 4);
  for (int k = 0; k < 5; k++)
    for (int j = 0; j < 4; j++)
      assert_true(graph_tensor_get_f64(after, k * 4 + j) == graph_tensor_get_f64(before, j * 5 + k));
  assert_int_equal(g->values[y].dims[1], 4);
  graph_free(g);
}

static void test_pow(void **state) {
  (void)state;
  Graph *g = graph_new("pow");
  LoomError err = {0};
  ValueId x = gb_input(g, "x", 1, (int64_t[]){8});
  ValueId p2 = gb_binary(g, GRAPH_OP_POW, "sq", x, gb_scalar(g, "two", 2.0));
  ValueId ph = gb_binary(g, GRAPH_OP_POW, "rt", x, gb_scalar(g, "half", 0.5));
  ValueId p3 = gb_binary(g, GRAPH_OP_POW, "cube", x, gb_scalar(g, "three", 3.0));
  gb_output(g, p2);
  gb_output(g, ph);
  gb_output(g, p3);
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  assert_int_equal(graph_pass_canonicalize(g, &err), LOOM_OK);
  assert_int_equal(g->nodes[0].op, GRAPH_OP_MUL);
  assert_int_equal(g->nodes[0].inputs[0], x);
  assert_int_equal(g->nodes[0].inputs[1], x);
  assert_int_equal(g->nodes[1].op, GRAPH_OP_SQRT);
  assert_int_equal(g->nodes[1].ninputs, 1);
  assert_int_equal(g->nodes[2].op, GRAPH_OP_POW);
  assert_int_equal(graph_verify(g, &err), LOOM_OK);
  graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm_trans_b_folded),
      cmocka_unit_test(test_pow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
