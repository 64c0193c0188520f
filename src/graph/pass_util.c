/* Helpers shared by the rewriting passes (pass_internal.h). */
#include "graph/pass_internal.h"
#include "support/alloc.h"

#include <stdlib.h>
#include <string.h>

static void nodebuf_grow(Graph *g, GraphNodeBuf *b) {
  if (b->n < b->cap) return;
  int cap = b->cap ? b->cap * 2 : 64;
  GraphNode *p = ARENA_ARRAY(g->arena, GraphNode, cap);
  if (b->n) memcpy(p, b->nodes, sizeof *p * (size_t)b->n);
  b->nodes = p;
  b->cap = cap;
}

void graph_nodebuf_push(Graph *g, GraphNodeBuf *b, const GraphNode *n) {
  nodebuf_grow(g, b);
  b->nodes[b->n++] = *n;
}

GraphNode *graph_nodebuf_add(Graph *g, GraphNodeBuf *b, GraphOp op, const char *name, const ValueId *inputs, int ninputs,
                             const ValueId *outputs, int noutputs) {
  nodebuf_grow(g, b);
  GraphNode *n = &b->nodes[b->n++];
  memset(n, 0, sizeof *n);
  n->op = op;
  n->name = arena_strdup(g->arena, name ? name : "");
  n->inputs = ARENA_ARRAY(g->arena, ValueId, ninputs);
  if (ninputs > 0) memcpy(n->inputs, inputs, sizeof(ValueId) * (size_t)ninputs);
  n->ninputs = ninputs;
  n->outputs = ARENA_ARRAY(g->arena, ValueId, noutputs);
  if (noutputs > 0) memcpy(n->outputs, outputs, sizeof(ValueId) * (size_t)noutputs);
  n->noutputs = noutputs;
  return n;
}

void graph_nodebuf_commit(Graph *g, GraphNodeBuf *b) {
  g->nodes = b->nodes;
  g->nnodes = b->n;
  g->nodes_cap = b->cap;
  for (int v = 0; v < g->nvalues; v++) g->values[v].producer = -1;
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].noutputs; k++)
      if (g->nodes[i].outputs[k] >= 0) g->values[g->nodes[i].outputs[k]].producer = i;
}

int *graph_use_counts(const Graph *g) {
  int *uses = loom_calloc((size_t)g->nvalues + 1, sizeof(int));
  if (!uses) return NULL;
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].ninputs; k++)
      if (g->nodes[i].inputs[k] >= 0) uses[g->nodes[i].inputs[k]]++;
  for (int k = 0; k < g->noutputs; k++) uses[g->outputs[k]]++;
  return uses;
}

bool graph_is_output(const Graph *g, ValueId v) {
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == v) return true;
  return false;
}

const GraphTensor *graph_product_weight(const Graph *g, const GraphNode *n) {
  if (n->op != GRAPH_OP_GEMM && n->op != GRAPH_OP_MATMUL) return NULL;
  if (n->ninputs < 2 || n->noutputs != 1 || n->inputs[0] < 0 || n->inputs[1] < 0 || n->outputs[0] < 0) return NULL;
  if (n->op == GRAPH_OP_MATMUL && n->ninputs != 2) return NULL;
  bool bias = n->op == GRAPH_OP_GEMM && n->ninputs > 2 && n->inputs[2] >= 0;
  if (n->op == GRAPH_OP_GEMM &&
      (graph_node_int(n, "transA") || graph_node_int(n, "transB") || graph_node_float(n, "alpha") != 1.0 ||
       (bias && graph_node_float(n, "beta") != 1.0)))
    return NULL;
  const GraphTensor *b = graph_value_constant(g, n->inputs[1]);
  if (!b || b->rank != 2 || !dtype_eq(b->dtype, DT_F32) || !dtype_eq(g->values[n->inputs[0]].dtype, DT_F32)) return NULL;
  if (bias && !dtype_eq(g->values[n->inputs[2]].dtype, DT_F32)) return NULL;
  return b;
}

GraphAttr graph_attr_make_ints(Graph *g, const char *name, const int64_t *v, int count) {
  GraphAttr a = {0};
  a.name = arena_strdup(g->arena, name);
  a.kind = GRAPH_ATTR_INTS;
  a.ints = ARENA_ARRAY(g->arena, int64_t, count);
  if (count > 0) memcpy(a.ints, v, sizeof(int64_t) * (size_t)count);
  a.n = count;
  return a;
}

GraphAttr graph_attr_make_string(Graph *g, const char *name, const char *s) {
  GraphAttr a = {0};
  a.name = arena_strdup(g->arena, name);
  a.kind = GRAPH_ATTR_STRING;
  a.s = arena_strdup(g->arena, s);
  return a;
}

GraphAttr graph_attr_make_int(Graph *g, const char *name, int64_t v) {
  GraphAttr a = {0};
  a.name = arena_strdup(g->arena, name);
  a.kind = GRAPH_ATTR_INT;
  a.i = v;
  return a;
}

ValueId graph_add_value_derived(Graph *g, const char *base, const char *suffix) {
  /* Value names become kernel argument and file names downstream; keep
   * them unique so dumps stay unambiguous. */
  char *name = arena_printf(g->arena, "%s_%s", base, suffix);
  for (int k = 1;; k++) {
    bool clash = false;
    for (int v = 0; v < g->nvalues && !clash; v++) clash = !strcmp(g->values[v].name, name);
    if (!clash) break;
    name = arena_printf(g->arena, "%s_%s%d", base, suffix, k);
  }
  return graph_add_value(g, name);
}

ValueId graph_add_constant_derived(Graph *g, const char *base, const char *suffix, GraphTensor *t) {
  ValueId v = graph_add_value_derived(g, base, suffix);
  g->values[v].constant = t;
  graph_set_type(g, v, t->dtype, t->rank, t->dims);
  return v;
}

ValueId graph_add_i64s_derived(Graph *g, const char *base, const char *suffix, const int64_t *v, int n) {
  int64_t len = n;
  GraphTensor *t = graph_tensor_new(g->arena, DT_I64, 1, &len);
  for (int k = 0; k < n; k++) graph_tensor_set_i64(t, k, v[k]);
  return graph_add_constant_derived(g, base, suffix, t);
}
