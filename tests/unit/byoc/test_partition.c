/* BYOC partitioning (src/byoc/partition.c): regions become External nodes
 * with the right interface, the longest pattern wins, adjacent regions
 * merge unless that would make a cycle, and, fuzzed over random graphs,
 * partitioning never changes results: every graph is evaluated before
 * (tests/unit/graph/graph_ref_eval.h) and after, each External node by
 * rebuilding its region from the plugin API view and evaluating that. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "byoc/byoc.h"
#include "unit/graph/graph_build.h"
#include "unit/graph/graph_ref_eval.h"

static int no_codegen(const loom_byoc_region *r, loom_byoc_code *out, char *errbuf, size_t errlen, void *user) {
  (void)r, (void)out, (void)user;
  snprintf(errbuf, errlen, "not in this test");
  return 1;
}

static ByocSession *session_with(const loom_byoc_plugin *p) {
  LoomError err = {0};
  ByocSession *s = byoc_session_new(1);
  assert_non_null(s);
  assert_int_equal(byoc_session_add(s, p, "test", NULL, &err), LOOM_OK);
  return s;
}

/* ---- evaluating a partitioned graph (External nodes through their regions) ---- */

static void append_input(Graph *g, ValueId v) {
  ValueId *ins = ARENA_ARRAY(g->arena, ValueId, g->ninputs + 1);
  if (g->ninputs) memcpy(ins, g->inputs, sizeof(ValueId) * (size_t)g->ninputs);
  ins[g->ninputs++] = v;
  g->inputs = ins;
}

/* The region as a graph of its own, from the view alone (what a plugin
 * sees must be enough to compute the region). */
static Graph *region_graph(const loom_byoc_region *r) {
  Graph *g = graph_new("region");
  for (int32_t t = 0; t < r->graph.ntensors; t++) {
    const loom_byoc_tensor *vt = &r->graph.tensors[t];
    assert_true(loom_byoc_is_f32(vt));
    ValueId v;
    if (vt->data) {
      GraphTensor *gt = graph_tensor_new(g->arena, DT_F32, vt->ndim, vt->shape);
      memcpy(gt->data, vt->data, gt->nbytes);
      v = graph_add_constant(g, vt->name, gt);
    } else {
      v = graph_add_value(g, vt->name);
      graph_set_type(g, v, DT_F32, vt->ndim, vt->shape);
    }
    assert_int_equal(v, t);
  }
  for (int32_t k = 0; k < r->ninputs; k++)
    if (!r->graph.tensors[r->inputs[k]].data) append_input(g, r->inputs[k]);
  for (int32_t i = 0; i < r->graph.nnodes; i++) {
    const loom_byoc_node *n = &r->graph.nodes[i];
    GraphOp op;
    assert_true(graph_op_lookup(n->op, &op));
    int idx = graph_add_node(g, op, n->name, n->inputs, n->ninputs, n->outputs, n->noutputs);
    for (int32_t a = 0; a < n->nattrs; a++) {
      const loom_byoc_attr *at = &n->attrs[a];
      GraphAttr ga = {.name = at->name};
      if (at->kind == LOOM_BYOC_ATTR_INT) ga.kind = GRAPH_ATTR_INT, ga.i = at->i;
      else if (at->kind == LOOM_BYOC_ATTR_FLOAT) ga.kind = GRAPH_ATTR_FLOAT, ga.f = at->f;
      else if (at->kind == LOOM_BYOC_ATTR_INTS) ga.kind = GRAPH_ATTR_INTS, ga.ints = (int64_t *)at->ints, ga.n = at->n;
      else continue;
      graph_node_set_attr(g, &g->nodes[idx], ga);
    }
  }
  for (int32_t k = 0; k < r->noutputs; k++) gb_output(g, r->outputs[k]);
  return g;
}

static bool eval_external(const Graph *g, const GraphNode *n, double **val, void *user) {
  if (n->op != GRAPH_OP_EXTERNAL) return false;
  const ByocSession *s = user;
  int region = (int)graph_attr_int(n, "region", -1);
  assert_true(region >= 0 && region < s->nregions);
  const loom_byoc_region *r = &s->regions[region].view;
  assert_int_equal(n->ninputs, r->ninputs);
  assert_int_equal(n->noutputs, r->noutputs);
  Graph *rg = region_graph(r);
  double **in = calloc((size_t)r->ninputs + 1, sizeof(double *));
  int nin = 0;
  for (int32_t k = 0; k < r->ninputs; k++)
    if (!r->graph.tensors[r->inputs[k]].data) in[nin++] = val[n->inputs[k]];
  double **rv = ref_eval(rg, in);
  for (int32_t k = 0; k < r->noutputs; k++)
    memcpy(val[n->outputs[k]], rv[r->outputs[k]], sizeof(double) * (size_t)ref_numel(g, n->outputs[k]));
  ref_free(rg, rv);
  free(in);
  graph_free(rg);
  return true;
}

/* Partitions g with s and checks that its outputs did not change. */
static void partition_and_compare(Graph *g, ByocSession *s, uint64_t seed) {
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  double **in = gb_random_inputs(g, &seed);
  double **before = ref_eval_outputs(g, in);
  if (byoc_partition(s, g, &err) != LOOM_OK) fail_msg("partition: %s", err.msg);
  if (graph_pass_infer(g, &err) != LOOM_OK) fail_msg("infer after partition: %s", err.msg);
  double **after = ref_eval_outputs_ex(g, in, eval_external, s);
  for (int k = 0; k < g->noutputs; k++) {
    double e = ref_max_rel_err(after[k], before[k], ref_numel(g, g->outputs[k]));
    if (e > 1e-12) fail_msg("output %d differs after partitioning by %g", k, e);
    free(after[k]);
    free(before[k]);
  }
  free(after);
  free(before);
  gb_free_inputs(g, in);
}

/* ---- a back end for elementwise and matmul chains ---- */

static const loom_byoc_step k_matmul_chain[] = {
    {.ops = "MatMul", .operands = {LOOM_BYOC_RUNTIME, LOOM_BYOC_CONST}},
    {.ops = "Add", .optional = 1, .commutative = 1, .operands = {LOOM_BYOC_PREV, LOOM_BYOC_CONST}},
    {.ops = "Relu|Sigmoid", .optional = 1},
    {0},
};
static const loom_byoc_step k_binary_act[] = {{.ops = "Add|Mul"}, {.ops = "Relu", .optional = 1}, {0}};
static const loom_byoc_step k_add_only[] = {{.ops = "Add"}, {0}};
static const loom_byoc_step k_mul_only[] = {{.ops = "Mul"}, {0}};
static const loom_byoc_pattern k_chain_patterns[] = {
    {"t.binary_act", k_binary_act}, {"t.matmul_bias_act", k_matmul_chain}, {NULL, NULL}};
static const loom_byoc_pattern k_single_patterns[] = {{"t.add", k_add_only}, {"t.mul", k_mul_only}, {NULL, NULL}};

/* The fuzz veto: nodes named n<k> with k % 7 == 3. */
static int veto_some(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  const char *name = g->nodes[node].name;
  return !(name[0] == 'n' && atoi(name + 1) % 7 == 3);
}

static loom_byoc_plugin make_plugin(const loom_byoc_pattern *patterns, int merge) {
  loom_byoc_plugin p = {LOOM_BYOC_ABI_VERSION, "t", patterns, veto_some, merge, NULL, no_codegen, NULL};
  return p;
}

static const int64_t k_dims[2] = {4, 8};

static void test_chain_region(void **state) {
  (void)state;
  Graph *g = graph_new("t");
  uint64_t seed = 5;
  int64_t wd[2] = {8, 8}, bd[1] = {8};
  ValueId x = gb_input(g, "x", 2, k_dims);
  ValueId w = gb_const(g, "w", 2, wd, &seed, -0.5, 0.5), b = gb_const(g, "b", 1, bd, &seed, -0.5, 0.5);
  ValueId m = gb_binary(g, GRAPH_OP_MATMUL, "mm", x, w);
  ValueId a = gb_binary(g, GRAPH_OP_ADD, "bias", b, m);
  ValueId r = gb_unary(g, GRAPH_OP_SIGMOID, "act", a);
  gb_output(g, gb_unary(g, GRAPH_OP_RELU, "tail", r)); /* no pattern starts at a Relu */
  loom_byoc_plugin p = make_plugin(k_chain_patterns, 0);
  ByocSession *s = session_with(&p);
  partition_and_compare(g, s, 11);
  assert_int_equal(g->nnodes, 2);
  assert_int_equal(g->nodes[0].op, GRAPH_OP_EXTERNAL);
  assert_int_equal(g->nodes[1].op, GRAPH_OP_RELU);
  assert_int_equal(s->nregions, 1);
  const loom_byoc_region *v = &s->regions[0].view;
  assert_int_equal(v->graph.nnodes, 3);
  assert_int_equal(v->ncomposites, 1);
  assert_string_equal(v->composites[0].pattern, "t.matmul_bias_act");
  assert_int_equal(v->ninputs, 3); /* x, w, b in first-use order */
  assert_string_equal(v->graph.tensors[v->inputs[0]].name, "x");
  assert_null(v->graph.tensors[v->inputs[0]].data);
  assert_non_null(v->graph.tensors[v->inputs[1]].data);
  assert_int_equal(v->noutputs, 1);
  assert_int_equal(g->nodes[0].outputs[0], r);
  assert_int_equal(s->regions[0].flops, 2 * 4 * 8 * 8 + 32 + 32);
  assert_int_equal(s->backends[0].claimed, 3);
  StrBuf sb;
  sb_init(&sb);
  byoc_print_regions(s, &sb);
  assert_non_null(strstr(sb_cstr(&sb), "region 0 backend t (t.matmul_bias_act) 3 nodes"));
  sb_free(&sb);
  byoc_session_free(s);
  graph_free(g);
}

/* Two patterns match at the MatMul: the longer one is taken. */
static void test_longest_first(void **state) {
  (void)state;
  static const loom_byoc_step mm[] = {{.ops = "MatMul"}, {0}};
  static const loom_byoc_pattern pats[] = {{"t.mm", mm}, {"t.matmul_bias_act", k_matmul_chain}, {NULL, NULL}};
  Graph *g = graph_new("t");
  uint64_t seed = 9;
  int64_t wd[2] = {8, 8};
  ValueId x = gb_input(g, "x", 2, k_dims);
  ValueId m = gb_binary(g, GRAPH_OP_MATMUL, "mm", x, gb_const(g, "w", 2, wd, &seed, -1, 1));
  gb_output(g, gb_unary(g, GRAPH_OP_RELU, "act", m));
  loom_byoc_plugin p = make_plugin(pats, 0);
  ByocSession *s = session_with(&p);
  partition_and_compare(g, s, 2);
  assert_int_equal(s->nregions, 1);
  assert_string_equal(s->regions[0].view.composites[0].pattern, "t.matmul_bias_act");
  assert_int_equal(s->regions[0].view.graph.nnodes, 2);
  byoc_session_free(s);
  graph_free(g);
}

/* a = x + c; m = a * x: the Add and Mul regions merge into one. With a
 * Sigmoid (not claimed) between them as well, m = a * sigmoid(a), merging
 * would put the Sigmoid both after and before the region: they stay apart. */
static void test_merge_unless_cycle(void **state) {
  (void)state;
  for (int cyc = 0; cyc < 2; cyc++) {
    Graph *g = graph_new("t");
    uint64_t seed = 4;
    ValueId x = gb_input(g, "x", 2, k_dims);
    ValueId a = gb_binary(g, GRAPH_OP_ADD, "a", x, gb_const(g, "c", 2, k_dims, &seed, -1, 1));
    ValueId other = cyc ? gb_unary(g, GRAPH_OP_SIGMOID, "s", a) : x;
    gb_output(g, gb_binary(g, GRAPH_OP_MUL, "m", a, other));
    loom_byoc_plugin p = make_plugin(k_single_patterns, 1);
    ByocSession *s = session_with(&p);
    partition_and_compare(g, s, 3);
    assert_int_equal(gb_count_op(g, GRAPH_OP_EXTERNAL), cyc ? 2 : 1);
    assert_int_equal(s->nregions, cyc ? 2 : 1);
    if (!cyc) assert_int_equal(s->regions[0].view.ncomposites, 2);
    byoc_session_free(s);
    graph_free(g);
  }
}

/* ---- fuzz ---- */

static Graph *random_graph(uint64_t *seed, int nnodes) {
  Graph *g = graph_new("fuzz");
  int64_t wd[2] = {8, 8}, bd[1] = {8};
  ValueId pool[64];
  int np = 0;
  pool[np++] = gb_input(g, "x0", 2, k_dims);
  if (gb_rand(seed) > 0) pool[np++] = gb_input(g, "x1", 2, k_dims);
  int first_node_value = np;
  for (int i = 0; i < nnodes; i++) {
    const char *name = arena_printf(g->arena, "n%d", i);
    int recent = np < 4 ? np : 4;
    ValueId a = pool[np - 1 - (int)((gb_rand(seed) + 1) / 2 * recent) % recent];
    ValueId b = pool[(int)((gb_rand(seed) + 1) / 2 * np) % np];
    ValueId y;
    switch ((int)((gb_rand(seed) + 1) / 2 * 6) % 6) {
    case 0: y = gb_binary(g, GRAPH_OP_ADD, name, a, b); break;
    case 1: y = gb_binary(g, GRAPH_OP_ADD, name, a, gb_const(g, arena_printf(g->arena, "b%d", i), 1, bd, seed, -1, 1)); break;
    case 2: y = gb_binary(g, GRAPH_OP_MUL, name, a, b); break;
    case 3: y = gb_unary(g, GRAPH_OP_RELU, name, a); break;
    case 4: y = gb_unary(g, GRAPH_OP_SIGMOID, name, a); break;
    default: y = gb_binary(g, GRAPH_OP_MATMUL, name, a, gb_const(g, arena_printf(g->arena, "w%d", i), 2, wd, seed, -0.3, 0.3)); break;
    }
    pool[np++] = y;
  }
  gb_output(g, pool[np - 1]);
  for (int k = first_node_value; k < np - 1; k++)
    if (gb_rand(seed) > 0.6) gb_output(g, pool[k]);
  return g;
}

static void test_fuzz_partition_keeps_results(void **state) {
  (void)state;
  int externals = 0, merged = 0;
  for (int iter = 0; iter < 300; iter++) {
    uint64_t seed = 1000 + (uint64_t)iter;
    for (int merge = 0; merge < 2; merge++) {
      uint64_t gs = seed;
      Graph *g = random_graph(&gs, 3 + iter % 14);
      loom_byoc_plugin p = make_plugin(iter % 3 ? k_chain_patterns : k_single_patterns, merge);
      ByocSession *s = session_with(&p);
      partition_and_compare(g, s, seed * 7);
      externals += gb_count_op(g, GRAPH_OP_EXTERNAL);
      for (int r = 0; r < s->nregions; r++) merged += s->regions[r].view.ncomposites > 1;
      byoc_session_free(s);
      graph_free(g);
    }
  }
  /* The fuzzer must exercise what it claims to. */
  assert_true(externals > 300);
  assert_true(merged > 30);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chain_region),
      cmocka_unit_test(test_longest_first),
      cmocka_unit_test(test_merge_unless_cycle),
      cmocka_unit_test(test_fuzz_partition_keeps_results),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
