/* The BYOC pattern language (src/byoc/pattern.c): `Conv -> Add(const)? ->
 * Relu|Clip?` and friends matched at a node of small graphs, each case
 * the exact nodes expected; and the checks a plugin's description passes
 * before use (plugin.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "byoc/byoc.h"
#include "graph/pass_internal.h"
#include "support/alloc.h"
#include "unit/graph/graph_build.h"

static int no_codegen(const loom_byoc_region *r, loom_byoc_code *out, char *errbuf, size_t errlen, void *user) {
  (void)r, (void)out, (void)user;
  snprintf(errbuf, errlen, "not in this test");
  return 1;
}

static const loom_byoc_step k_conv_chain[] = {
    {.ops = "Conv", .operands = {LOOM_BYOC_RUNTIME, LOOM_BYOC_CONST, LOOM_BYOC_CONST_OR_ABSENT}},
    {.ops = "Add", .optional = 1, .commutative = 1, .operands = {LOOM_BYOC_PREV, LOOM_BYOC_CONST}},
    {.ops = "Relu|Clip", .optional = 1},
    {0},
};
static const loom_byoc_pattern k_conv_patterns[] = {{"test.conv_bias_act", k_conv_chain}, {NULL, NULL}};

/* Vetoes every node named "veto". */
static int veto_named(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  return strcmp(g->nodes[node].name, "veto") != 0;
}

static loom_byoc_plugin plugin_of(const loom_byoc_pattern *patterns) {
  loom_byoc_plugin p = {LOOM_BYOC_ABI_VERSION, "test", patterns, veto_named, 0, NULL, no_codegen, NULL};
  return p;
}

/* The nodes the pattern matches with its chain starting at head; their
 * count returned, *vetoed the nodes supports() refused. */
static int match(Graph *g, const loom_byoc_pattern *pat, int head, int *nodes, int *vetoed) {
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  loom_byoc_plugin p = plugin_of(pat);
  Arena *a = arena_new();
  loom_byoc_graph view = byoc_graph_view(a, g);
  int *uses = graph_use_counts(g);
  signed char *sup = ARENA_ARRAY(a, signed char, g->nnodes);
  memset(sup, -1, (size_t)g->nnodes);
  int v = 0;
  ByocMatchEnv env = {g, &view, uses, NULL, sup, &p, &v};
  int n = byoc_match_at(&env, pat, head, nodes);
  loom_free(uses);
  arena_free(a);
  if (vetoed) *vetoed = v;
  return n;
}

static Graph *conv_graph(ValueId *y) {
  Graph *g = graph_new("t");
  uint64_t seed = 7;
  int64_t d[4] = {1, 3, 8, 8};
  ValueId x = gb_input(g, "x", 4, d);
  *y = gb_conv(g, "conv", x, 3, 4, 3, 1, 1, false, &seed);
  return g;
}

static ValueId bias(Graph *g) {
  uint64_t seed = 3;
  int64_t bd[4] = {1, 4, 1, 1};
  return gb_const(g, "b", 4, bd, &seed, -1, 1);
}

static void expect_nodes(int n, const int *nodes, int want, const int *expect) {
  assert_int_equal(n, want);
  for (int i = 0; i < want; i++) assert_int_equal(nodes[i], expect[i]);
}

static void test_full_chain(void **state) {
  (void)state;
  ValueId y;
  Graph *g = conv_graph(&y);
  ValueId z = gb_binary(g, GRAPH_OP_ADD, "add", y, bias(g));
  gb_output(g, gb_unary(g, GRAPH_OP_RELU, "relu", z));
  int nodes[3];
  expect_nodes(match(g, k_conv_patterns, 0, nodes, NULL), nodes, 3, (int[]){0, 1, 2});
  assert_int_equal(match(g, k_conv_patterns, 1, nodes, NULL), 0); /* the chain starts at a Conv */
  graph_free(g);
}

static void test_optional_step_skipped(void **state) {
  (void)state;
  ValueId y;
  Graph *g = conv_graph(&y);
  gb_output(g, gb_unary(g, GRAPH_OP_RELU, "relu", y));
  int nodes[3];
  expect_nodes(match(g, k_conv_patterns, 0, nodes, NULL), nodes, 2, (int[]){0, 1});
  graph_free(g);
}

/* Add of a runtime tensor is not Add(const): the chain ends at the conv
 * (the Relu does not read the conv). */
static void test_operand_constraint(void **state) {
  (void)state;
  ValueId y;
  Graph *g = conv_graph(&y);
  int64_t d[4] = {1, 4, 8, 8};
  ValueId r = gb_input(g, "r", 4, d);
  ValueId z = gb_binary(g, GRAPH_OP_ADD, "add", y, r);
  gb_output(g, gb_unary(g, GRAPH_OP_RELU, "relu", z));
  int nodes[3];
  expect_nodes(match(g, k_conv_patterns, 0, nodes, NULL), nodes, 1, (int[]){0});
  graph_free(g);
}

static void test_commutative(void **state) {
  (void)state;
  ValueId y;
  Graph *g = conv_graph(&y);
  ValueId z = gb_binary(g, GRAPH_OP_ADD, "add", bias(g), y);
  gb_output(g, gb_unary(g, GRAPH_OP_CLIP, "clip", z));
  int nodes[3];
  expect_nodes(match(g, k_conv_patterns, 0, nodes, NULL), nodes, 3, (int[]){0, 1, 2});
  graph_free(g);
}

/* A link read twice (or a graph output) cannot be internal to a match. */
static void test_shared_link_ends_chain(void **state) {
  (void)state;
  ValueId y;
  Graph *g = conv_graph(&y);
  ValueId z = gb_binary(g, GRAPH_OP_ADD, "add", y, bias(g));
  gb_output(g, gb_unary(g, GRAPH_OP_RELU, "relu", z));
  gb_output(g, z);
  int nodes[3];
  expect_nodes(match(g, k_conv_patterns, 0, nodes, NULL), nodes, 2, (int[]){0, 1});
  graph_free(g);
}

static void test_alternatives_and_mismatch(void **state) {
  (void)state;
  ValueId y;
  Graph *g = conv_graph(&y);
  gb_output(g, gb_unary(g, GRAPH_OP_SIGMOID, "sig", y));
  int nodes[3];
  expect_nodes(match(g, k_conv_patterns, 0, nodes, NULL), nodes, 1, (int[]){0});
  graph_free(g);
}

static void test_supports_veto(void **state) {
  (void)state;
  ValueId y;
  Graph *g = conv_graph(&y);
  ValueId z = gb_binary(g, GRAPH_OP_ADD, "add", y, bias(g));
  gb_output(g, gb_unary(g, GRAPH_OP_RELU, "veto", z));
  int nodes[3], vetoed;
  expect_nodes(match(g, k_conv_patterns, 0, nodes, &vetoed), nodes, 2, (int[]){0, 1});
  assert_int_equal(vetoed, 1);
  graph_free(g);
}

/* where: an attribute predicate (stride 1 only). */
static int stride_one(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  const loom_byoc_attr *s = loom_byoc_find_attr(&g->nodes[node], "strides");
  return !s || (s->kind == LOOM_BYOC_ATTR_INTS && s->n == 2 && s->ints[0] == 1 && s->ints[1] == 1);
}

static void test_where_predicate(void **state) {
  (void)state;
  static const loom_byoc_step steps[] = {{.ops = "Conv", .where = stride_one}, {.ops = "*"}, {0}};
  static const loom_byoc_pattern pats[] = {{"test.stride1_any", steps}, {NULL, NULL}};
  Graph *g = graph_new("t");
  uint64_t seed = 1;
  int64_t d[4] = {1, 3, 8, 8};
  ValueId x = gb_input(g, "x", 4, d);
  ValueId a = gb_conv(g, "c1", x, 3, 4, 3, 1, 1, true, &seed);
  ValueId b = gb_unary(g, GRAPH_OP_SIGMOID, "s1", a); /* "*" takes any op */
  ValueId c = gb_conv(g, "c2", b, 4, 4, 3, 2, 1, true, &seed);
  gb_output(g, gb_unary(g, GRAPH_OP_RELU, "r2", c));
  int nodes[2];
  expect_nodes(match(g, pats, 0, nodes, NULL), nodes, 2, (int[]){0, 1});
  assert_int_equal(match(g, pats, 2, nodes, NULL), 0); /* stride 2 */
  graph_free(g);
}

static void test_plugin_checks(void **state) {
  (void)state;
  LoomError err = {0};
  loom_byoc_plugin p = plugin_of(k_conv_patterns);
  assert_int_equal(byoc_plugin_check(&p, "plugin \"t\"", &err), LOOM_OK);
  p.abi_version = 99;
  assert_int_equal(byoc_plugin_check(&p, "plugin \"t\"", &err), LOOM_ERR_UNSUPPORTED);
  assert_non_null(strstr(err.msg, "ABI version 99, expected 2"));
  p = plugin_of(k_conv_patterns);
  p.name = "Bad Name";
  assert_int_equal(byoc_plugin_check(&p, "plugin \"t\"", &err), LOOM_ERR_INVALID_ARG);
  static const loom_byoc_step unknown[] = {{.ops = "Conv2D"}, {0}};
  static const loom_byoc_step all_optional[] = {{.ops = "Relu", .optional = 1}, {0}};
  static const loom_byoc_pattern bad1[] = {{"bad.unknown", unknown}, {NULL, NULL}};
  static const loom_byoc_pattern bad2[] = {{"bad.optional", all_optional}, {NULL, NULL}};
  p = plugin_of(bad1);
  assert_int_equal(byoc_plugin_check(&p, "plugin \"t\"", &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "\"Conv2D\" is not an ONNX op"));
  p = plugin_of(bad2);
  assert_int_equal(byoc_plugin_check(&p, "plugin \"t\"", &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "every step is optional"));
  assert_non_null(byoc_builtin("cblas"));
  assert_null(byoc_builtin("nope"));
  ByocSession *s = NULL;
  assert_int_equal(byoc_session_open("nope", &s, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "built in: cblas"));
  assert_int_equal(byoc_session_open("/no/such/plugin.so", &s, &err), LOOM_ERR_IO);
  assert_non_null(strstr(err.msg, "/no/such/plugin.so"));
  assert_int_equal(byoc_session_open("cblas,cblas", &s, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "named twice"));
  assert_int_equal(byoc_session_open("cblas", &s, &err), LOOM_OK);
  byoc_session_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_full_chain),
      cmocka_unit_test(test_optional_step_skipped),
      cmocka_unit_test(test_operand_constraint),
      cmocka_unit_test(test_commutative),
      cmocka_unit_test(test_shared_link_ends_chain),
      cmocka_unit_test(test_alternatives_and_mismatch),
      cmocka_unit_test(test_supports_veto),
      cmocka_unit_test(test_where_predicate),
      cmocka_unit_test(test_plugin_checks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
