/* Common subexpression elimination: merges, non-merges, graph outputs, and
 * equal results before and after on the reference evaluator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "graph/passes.h"
#include "unit/graph/graph_build.h"
#include "unit/graph/graph_ref_eval.h"

static bool graph_is_output_for_test(const Graph *g, ValueId v) {
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == v) return true;
  return false;
}

static double cse_and_compare(Graph *g, uint64_t seed) {
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  double **in = gb_random_inputs(g, &seed);
  double **before = ref_eval_outputs(g, in);
  if (graph_pass_cse(g, &err)) fail_msg("%s", err.msg);
  if (graph_pass_dce(g, &err)) fail_msg("%s", err.msg);
  double e = ref_compare_outputs(g, in, before);
  gb_free_inputs(g, in);
  return e;
}

/* relu(x) twice, then sigmoid of each, then added: collapses to one chain. */
static void test_chain_collapses(void **state) {
  (void)state;
  Graph *g = graph_new("cse");
  int64_t d[2] = {3, 4};
  ValueId x = gb_input(g, "x", 2, d);
  ValueId a1 = gb_unary(g, GRAPH_OP_SIGMOID, "s1", gb_unary(g, GRAPH_OP_RELU, "r1", x));
  ValueId a2 = gb_unary(g, GRAPH_OP_SIGMOID, "s2", gb_unary(g, GRAPH_OP_RELU, "r2", x));
  gb_output(g, gb_binary(g, GRAPH_OP_ADD, "sum", a1, a2));
  assert_true(cse_and_compare(g, 1) == 0.0);
  assert_int_equal(g->nnodes, 3);
  assert_int_equal(g->nodes[2].inputs[0], g->nodes[2].inputs[1]);
  graph_free(g);
}

/* Different attributes, different inputs, or operand order: no merge. */
static void test_differences_kept(void **state) {
  (void)state;
  Graph *g = graph_new("keep");
  int64_t d[2] = {2, 5};
  ValueId x = gb_input(g, "x", 2, d), y = gb_input(g, "y", 2, d);
  ValueId s1 = gb_binary(g, GRAPH_OP_SUB, "s1", x, y), s2 = gb_binary(g, GRAPH_OP_SUB, "s2", y, x);
  ValueId l1 = gb_unary(g, GRAPH_OP_LEAKY_RELU, "l1", s1), l2 = gb_unary(g, GRAPH_OP_LEAKY_RELU, "l2", s1);
  gb_float_attr(g, l1, "alpha", 0.1);
  gb_float_attr(g, l2, "alpha", 0.2);
  ValueId m = gb_binary(g, GRAPH_OP_MUL, "m", l1, l2);
  gb_output(g, gb_binary(g, GRAPH_OP_ADD, "out", m, s2));
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  int before = g->nnodes;
  assert_int_equal(graph_pass_cse(g, &err), LOOM_OK);
  assert_int_equal(g->nnodes, before);
  graph_free(g);
}

/* Constants with equal bytes merge, which lets their users merge too. */
static void test_equal_constants_merge(void **state) {
  (void)state;
  uint64_t s1 = 5, s2 = 5, s3 = 6;
  Graph *g = graph_new("consts");
  int64_t d[2] = {2, 3};
  ValueId x = gb_input(g, "x", 2, d);
  ValueId c1 = gb_const(g, "c1", 2, d, &s1, -1, 1), c2 = gb_const(g, "c2", 2, d, &s2, -1, 1);
  ValueId c3 = gb_const(g, "c3", 2, d, &s3, -1, 1);
  ValueId m1 = gb_binary(g, GRAPH_OP_MUL, "m1", x, c1), m2 = gb_binary(g, GRAPH_OP_MUL, "m2", x, c2);
  ValueId m3 = gb_binary(g, GRAPH_OP_MUL, "m3", x, c3);
  gb_output(g, gb_binary(g, GRAPH_OP_ADD, "a", gb_binary(g, GRAPH_OP_ADD, "a0", m1, m2), m3));
  assert_true(cse_and_compare(g, 2) == 0.0);
  assert_int_equal(gb_count_op(g, GRAPH_OP_MUL), 2); /* m1 == m2, m3 differs */
  graph_free(g);
}

/* Two equal nodes that are both graph outputs keep their own ids. */
static void test_graph_outputs_keep_ids(void **state) {
  (void)state;
  Graph *g = graph_new("outs");
  int64_t d[1] = {4};
  ValueId x = gb_input(g, "x", 1, d);
  ValueId r1 = gb_unary(g, GRAPH_OP_RELU, "r1", x), r2 = gb_unary(g, GRAPH_OP_RELU, "r2", x);
  gb_output(g, r1);
  gb_output(g, r2);
  assert_true(cse_and_compare(g, 3) == 0.0);
  assert_int_equal(g->outputs[0], r1);
  assert_int_equal(g->outputs[1], r2);
  assert_true(g->values[r1].producer >= 0 && g->values[r2].producer >= 0);
  graph_free(g);
}

/* Random DAGs of a few ops over two inputs: many duplicates, same results,
 * and afterwards no two nodes are equal. */
static void test_random_dags(void **state) {
  (void)state;
  const GraphOp ops[4] = {GRAPH_OP_ADD, GRAPH_OP_MUL, GRAPH_OP_RELU, GRAPH_OP_SIGMOID};
  for (uint64_t trial = 0; trial < 30; trial++) {
    uint64_t seed = trial * 977 + 1;
    Graph *g = graph_new("rand");
    int64_t d[2] = {2, 2};
    ValueId vals[64];
    int nv = 0;
    vals[nv++] = gb_input(g, "a", 2, d);
    vals[nv++] = gb_input(g, "b", 2, d);
    for (int i = 0; i < 30; i++) {
      GraphOp op = ops[(int)((gb_rand(&seed) + 1) * 2) % 4];
      ValueId p = vals[(int)((gb_rand(&seed) + 1) / 2 * (nv < 4 ? nv : 4)) % nv];
      ValueId q = vals[(int)((gb_rand(&seed) + 1) / 2 * (nv < 4 ? nv : 4)) % nv];
      char name[16];
      snprintf(name, sizeof name, "n%d", i);
      vals[nv++] = op == GRAPH_OP_ADD || op == GRAPH_OP_MUL ? gb_binary(g, op, name, p, q) : gb_unary(g, op, name, p);
    }
    gb_output(g, vals[nv - 1]);
    gb_output(g, vals[nv - 2]);
    assert_true(cse_and_compare(g, trial) == 0.0);
    for (int i = 0; i < g->nnodes; i++)
      for (int j = 0; j < i; j++) {
        const GraphNode *a = &g->nodes[i], *b = &g->nodes[j];
        bool same = a->op == b->op && a->ninputs == b->ninputs;
        for (int k = 0; same && k < a->ninputs; k++) same = a->inputs[k] == b->inputs[k];
        bool outs = graph_is_output_for_test(g, a->outputs[0]) && graph_is_output_for_test(g, b->outputs[0]);
        assert_false(same && !outs);
      }
    graph_free(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chain_collapses),
      cmocka_unit_test(test_differences_kept),
      cmocka_unit_test(test_equal_constants_merge),
      cmocka_unit_test(test_graph_outputs_keep_ids),
      cmocka_unit_test(test_random_dags),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
