/* Small graph-building helpers shared by the graph pass tests. */
#ifndef LOOM_TESTS_GRAPH_BUILD_H
#define LOOM_TESTS_GRAPH_BUILD_H

#include "graph/graph.h"

#include <string.h>

static inline ValueId gb_input(Graph *g, const char *name, int rank, const int64_t *dims) {
  ValueId v = graph_add_value(g, name);
  graph_set_type(g, v, DT_F32, rank, dims);
  ValueId *ins = ARENA_ARRAY(g->arena, ValueId, g->ninputs + 1);
  if (g->ninputs) memcpy(ins, g->inputs, sizeof(ValueId) * (size_t)g->ninputs);
  ins[g->ninputs++] = v;
  g->inputs = ins;
  return v;
}

static inline void gb_output(Graph *g, ValueId v) {
  ValueId *outs = ARENA_ARRAY(g->arena, ValueId, g->noutputs + 1);
  if (g->noutputs) memcpy(outs, g->outputs, sizeof(ValueId) * (size_t)g->noutputs);
  outs[g->noutputs++] = v;
  g->outputs = outs;
}

/* Deterministic pseudo-random numbers in [-1, 1). */
static inline double gb_rand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*s >> 11) / (double)(1ull << 52) - 1.0;
}

/* An f32 constant filled with values lo + (hi - lo) * u, u in [0, 1). */
static inline ValueId gb_const(Graph *g, const char *name, int rank, const int64_t *dims, uint64_t *seed, double lo, double hi) {
  GraphTensor *t = graph_tensor_new(g->arena, DT_F32, rank, dims);
  for (int64_t k = 0; k < graph_tensor_numel(t); k++) graph_tensor_set_f64(t, k, lo + (hi - lo) * (gb_rand(seed) + 1) / 2);
  return graph_add_constant(g, name, t);
}

static inline ValueId gb_scalar(Graph *g, const char *name, double v) {
  GraphTensor *t = graph_tensor_new(g->arena, DT_F32, 0, NULL);
  graph_tensor_set_f64(t, 0, v);
  return graph_add_constant(g, name, t);
}

static inline ValueId gb_node(Graph *g, GraphOp op, const char *name, const ValueId *ins, int nins) {
  ValueId out = graph_add_value(g, name);
  graph_add_node(g, op, name, ins, nins, &out, 1);
  return out;
}

static inline ValueId gb_unary(Graph *g, GraphOp op, const char *name, ValueId x) { return gb_node(g, op, name, &x, 1); }

static inline ValueId gb_binary(Graph *g, GraphOp op, const char *name, ValueId a, ValueId b) {
  ValueId ins[2] = {a, b};
  return gb_node(g, op, name, ins, 2);
}

static inline void gb_ints_attr(Graph *g, ValueId out, const char *name, const int64_t *v, int n) {
  GraphAttr a = {0};
  a.name = name;
  a.kind = GRAPH_ATTR_INTS;
  a.ints = arena_memdup(g->arena, v, sizeof(int64_t) * (size_t)n);
  a.n = n;
  graph_node_set_attr(g, &g->nodes[g->values[out].producer], a);
}

static inline void gb_int_attr(Graph *g, ValueId out, const char *name, int64_t v) {
  GraphAttr a = {0};
  a.name = name;
  a.kind = GRAPH_ATTR_INT;
  a.i = v;
  graph_node_set_attr(g, &g->nodes[g->values[out].producer], a);
}

static inline void gb_float_attr(Graph *g, ValueId out, const char *name, double v) {
  GraphAttr a = {0};
  a.name = name;
  a.kind = GRAPH_ATTR_FLOAT;
  a.f = v;
  graph_node_set_attr(g, &g->nodes[g->values[out].producer], a);
}

/* Conv with a random constant weight [k, c/group, r, r] and optional bias;
 * pads r/2 on every side, stride `stride`. */
static inline ValueId gb_conv(Graph *g, const char *name, ValueId x, int64_t c, int64_t k, int64_t r, int64_t stride, int64_t group,
                       bool bias, uint64_t *seed) {
  int64_t wd[4] = {k, c / group, r, r};
  ValueId ins[3];
  ins[0] = x;
  ins[1] = gb_const(g, arena_printf(g->arena, "%s_w", name), 4, wd, seed, -0.5, 0.5);
  int n = 2;
  if (bias) ins[n++] = gb_const(g, arena_printf(g->arena, "%s_b", name), 1, &k, seed, -0.5, 0.5);
  ValueId y = gb_node(g, GRAPH_OP_CONV, name, ins, n);
  int64_t pads[4] = {r / 2, r / 2, r / 2, r / 2}, strides[2] = {stride, stride};
  gb_ints_attr(g, y, "pads", pads, 4);
  gb_ints_attr(g, y, "strides", strides, 2);
  if (group != 1) gb_int_attr(g, y, "group", group);
  return y;
}

/* BatchNormalization with random constant parameters (var > 0). */
static inline ValueId gb_bn(Graph *g, const char *name, ValueId x, int64_t c, uint64_t *seed) {
  ValueId ins[5] = {x};
  ins[1] = gb_const(g, arena_printf(g->arena, "%s_gamma", name), 1, &c, seed, 0.5, 1.5);
  ins[2] = gb_const(g, arena_printf(g->arena, "%s_beta", name), 1, &c, seed, -0.5, 0.5);
  ins[3] = gb_const(g, arena_printf(g->arena, "%s_mean", name), 1, &c, seed, -0.5, 0.5);
  ins[4] = gb_const(g, arena_printf(g->arena, "%s_var", name), 1, &c, seed, 0.2, 2.0);
  ValueId y = gb_node(g, GRAPH_OP_BATCH_NORM, name, ins, 5);
  gb_float_attr(g, y, "epsilon", 1e-3);
  return y;
}

static inline int gb_count_op(const Graph *g, GraphOp op) {
  int c = 0;
  for (int i = 0; i < g->nnodes; i++) c += g->nodes[i].op == op;
  return c;
}

/* Random graph-input data for every input, freed by gb_free_inputs. */
static inline double **gb_random_inputs(const Graph *g, uint64_t *seed) {
  double **in = calloc((size_t)g->ninputs + 1, sizeof(double *));
  for (int k = 0; k < g->ninputs; k++) {
    int64_t n = graph_shape_numel(g->values[g->inputs[k]].rank, g->values[g->inputs[k]].dims);
    in[k] = malloc(sizeof(double) * (size_t)n);
    for (int64_t j = 0; j < n; j++) in[k][j] = gb_rand(seed);
  }
  return in;
}

static inline void gb_free_inputs(const Graph *g, double **in) {
  for (int k = 0; k < g->ninputs; k++) free(in[k]);
  free(in);
}

#endif
