/* Graph construction, attributes and constant tensors. */
#include "graph/graph.h"
#include "support/alloc.h"

#include <string.h>

Graph *graph_new(const char *name) {
  Arena *a = arena_new();
  Graph *g = ARENA_NEW(a, Graph);
  g->arena = a;
  g->name = arena_strdup(a, name ? name : "main");
  return g;
}

void graph_free(Graph *g) {
  if (g && g->frontend_free) g->frontend_free(g->frontend);
  if (g) arena_free(g->arena);
}

ValueId graph_add_value(Graph *g, const char *name) {
  if (g->nvalues == g->values_cap) {
    int cap = g->values_cap ? g->values_cap * 2 : 64;
    GraphValue *p = ARENA_ARRAY(g->arena, GraphValue, cap);
    if (g->nvalues) memcpy(p, g->values, sizeof *p * (size_t)g->nvalues);
    g->values = p;
    g->values_cap = cap;
  }
  GraphValue *v = &g->values[g->nvalues];
  memset(v, 0, sizeof *v);
  v->name = arena_strdup(g->arena, name ? name : "");
  v->dtype = DT_VOID;
  v->rank = -1;
  v->producer = -1;
  return g->nvalues++;
}

ValueId graph_add_constant(Graph *g, const char *name, GraphTensor *t) {
  ValueId id = graph_add_value(g, name);
  g->values[id].constant = t;
  graph_set_type(g, id, t->dtype, t->rank, t->dims);
  return id;
}

int graph_add_node(Graph *g, GraphOp op, const char *name, const ValueId *inputs, int ninputs,
                   const ValueId *outputs, int noutputs) {
  if (g->nnodes == g->nodes_cap) {
    int cap = g->nodes_cap ? g->nodes_cap * 2 : 64;
    GraphNode *p = ARENA_ARRAY(g->arena, GraphNode, cap);
    if (g->nnodes) memcpy(p, g->nodes, sizeof *p * (size_t)g->nnodes);
    g->nodes = p;
    g->nodes_cap = cap;
  }
  GraphNode *n = &g->nodes[g->nnodes];
  memset(n, 0, sizeof *n);
  n->op = op;
  n->name = arena_strdup(g->arena, name ? name : "");
  n->inputs = ARENA_ARRAY(g->arena, ValueId, ninputs);
  if (ninputs > 0) memcpy(n->inputs, inputs, sizeof(ValueId) * (size_t)ninputs);
  n->ninputs = ninputs;
  n->outputs = ARENA_ARRAY(g->arena, ValueId, noutputs);
  if (noutputs > 0) memcpy(n->outputs, outputs, sizeof(ValueId) * (size_t)noutputs);
  n->noutputs = noutputs;
  for (int k = 0; k < noutputs; k++)
    if (outputs[k] >= 0) g->values[outputs[k]].producer = g->nnodes;
  return g->nnodes++;
}

void graph_set_type(Graph *g, ValueId id, DType dtype, int rank, const int64_t *dims) {
  GraphValue *v = &g->values[id];
  v->dtype = dtype;
  if (rank < 0) {
    v->rank = -1;
    v->dims = NULL;
    return;
  }
  if (v->rank != rank) v->dim_params = NULL;
  v->rank = rank;
  v->dims = ARENA_ARRAY(g->arena, int64_t, rank);
  for (int k = 0; k < rank; k++) v->dims[k] = dims ? dims[k] : -1;
}

void graph_node_set_attr(Graph *g, GraphNode *n, GraphAttr attr) {
  for (int k = 0; k < n->nattrs; k++) {
    if (!strcmp(n->attrs[k].name, attr.name)) {
      n->attrs[k] = attr;
      return;
    }
  }
  GraphAttr *p = ARENA_ARRAY(g->arena, GraphAttr, n->nattrs + 1);
  if (n->nattrs) memcpy(p, n->attrs, sizeof *p * (size_t)n->nattrs);
  p[n->nattrs++] = attr;
  n->attrs = p;
}

const GraphAttr *graph_node_attr(const GraphNode *n, const char *name) {
  for (int k = 0; k < n->nattrs; k++)
    if (!strcmp(n->attrs[k].name, name)) return &n->attrs[k];
  return NULL;
}

int64_t graph_attr_int(const GraphNode *n, const char *name, int64_t dflt) {
  const GraphAttr *a = graph_node_attr(n, name);
  return a && a->kind == GRAPH_ATTR_INT ? a->i : dflt;
}

double graph_attr_float(const GraphNode *n, const char *name, double dflt) {
  const GraphAttr *a = graph_node_attr(n, name);
  return a && a->kind == GRAPH_ATTR_FLOAT ? a->f : dflt;
}

const char *graph_attr_string(const GraphNode *n, const char *name, const char *dflt) {
  const GraphAttr *a = graph_node_attr(n, name);
  return a && a->kind == GRAPH_ATTR_STRING ? a->s : dflt;
}

int64_t graph_shape_numel(int rank, const int64_t *dims) {
  if (rank < 0) return -1;
  int64_t n = 1;
  for (int k = 0; k < rank; k++) {
    if (dims[k] < 0) return -1;
    if (dims[k] && n > INT64_MAX / dims[k]) return -2;
    n *= dims[k];
  }
  return n;
}

GraphTensor *graph_tensor_new(Arena *a, DType dtype, int rank, const int64_t *dims) {
  GraphTensor *t = ARENA_NEW(a, GraphTensor);
  t->dtype = dtype;
  t->rank = rank;
  t->dims = ARENA_ARRAY(a, int64_t, rank);
  if (rank > 0) memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
  int64_t n = graph_shape_numel(rank, dims);
  LOOM_ASSERT(n >= 0);
  t->nbytes = (size_t)n * (size_t)dtype_bytes(dtype);
  t->data = arena_alloc(a, t->nbytes ? t->nbytes : 1);
  return t;
}

int64_t graph_tensor_numel(const GraphTensor *t) { return graph_shape_numel(t->rank, t->dims); }

double graph_tensor_get_f64(const GraphTensor *t, int64_t k) {
  const uint8_t *p = (const uint8_t *)t->data + (size_t)k * (size_t)dtype_bytes(t->dtype);
  DType d = t->dtype;
  if (d.code == DT_FLOAT && d.bits == 32) { float x; memcpy(&x, p, 4); return x; }
  if (d.code == DT_FLOAT && d.bits == 64) { double x; memcpy(&x, p, 8); return x; }
  if (dtype_is_narrow(d)) return dtype_narrow_load(d, p); /* f16, bf16, fp8, int4... */
  if (d.code == DT_UINT && d.bits == 64) { uint64_t x; memcpy(&x, p, 8); return (double)x; }
  return (double)graph_tensor_get_i64(t, k);
}

int64_t graph_tensor_get_i64(const GraphTensor *t, int64_t k) {
  const uint8_t *p = (const uint8_t *)t->data + (size_t)k * (size_t)dtype_bytes(t->dtype);
  DType d = t->dtype;
  if (d.code == DT_INT) {
    switch (d.bits) {
    case 8: { int8_t x; memcpy(&x, p, 1); return x; }
    case 16: { int16_t x; memcpy(&x, p, 2); return x; }
    case 32: { int32_t x; memcpy(&x, p, 4); return x; }
    case 64: { int64_t x; memcpy(&x, p, 8); return x; }
    }
  }
  if (d.code == DT_UINT) {
    switch (d.bits) {
    case 8: return p[0];
    case 16: { uint16_t x; memcpy(&x, p, 2); return x; }
    case 32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case 64: { uint64_t x; memcpy(&x, p, 8); return (int64_t)x; }
    }
  }
  if (d.code == DT_BOOL) return p[0] != 0;
  double f = graph_tensor_get_f64(t, k);
  /* C leaves out-of-range float->int conversion undefined; saturate. */
  if (!(f == f)) return 0;
  if (f >= 9.2e18) return INT64_MAX;
  if (f <= -9.2e18) return INT64_MIN;
  return (int64_t)f;
}

void graph_tensor_set_i64(GraphTensor *t, int64_t k, int64_t v) {
  uint8_t *p = (uint8_t *)t->data + (size_t)k * (size_t)dtype_bytes(t->dtype);
  DType d = t->dtype;
  if (d.code == DT_INT || d.code == DT_UINT) {
    switch (d.bits) {
    case 8: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); return; }
    case 16: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); return; }
    case 32: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); return; }
    case 64: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); return; }
    }
  }
  if (d.code == DT_BOOL) {
    p[0] = v != 0;
    return;
  }
  if (dtype_is_int(d)) { /* int4, int2: one byte each, wrapped */
    p[0] = (uint8_t)dtype_narrow_wrap(d, v);
    return;
  }
  graph_tensor_set_f64(t, k, (double)v);
}

void graph_tensor_set_f64(GraphTensor *t, int64_t k, double v) {
  uint8_t *p = (uint8_t *)t->data + (size_t)k * (size_t)dtype_bytes(t->dtype);
  DType d = t->dtype;
  if (d.code == DT_FLOAT && d.bits == 32) { float x = (float)v; memcpy(p, &x, 4); return; }
  if (d.code == DT_FLOAT && d.bits == 64) { memcpy(p, &v, 8); return; }
  if (d.code == DT_BOOL) { p[0] = v != 0; return; }
  if (d.code == DT_INT || d.code == DT_UINT) {
    int64_t i = !(v == v) ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
    graph_tensor_set_i64(t, k, i);
    return;
  }
  if (dtype_is_narrow(d)) {
    dtype_narrow_store(d, p, v); /* rounded to nearest even (ints: wrapped) */
    return;
  }
  LOOM_ASSERT(!"graph_tensor_set_f64: unsupported dtype");
}

bool graph_value_is_static(const GraphValue *v) {
  return v->rank >= 0 && v->dtype.bits != 0 && graph_shape_numel(v->rank, v->dims) >= 0;
}

const GraphTensor *graph_value_constant(const Graph *g, ValueId v) {
  if (v < 0 || v >= g->nvalues) return NULL;
  return g->values[v].constant;
}

void graph_replace_uses(Graph *g, ValueId from, ValueId to) {
  for (int i = 0; i < g->nnodes; i++) {
    GraphNode *n = &g->nodes[i];
    for (int k = 0; k < n->ninputs; k++)
      if (n->inputs[k] == from) n->inputs[k] = to;
  }
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == from) g->outputs[k] = to;
}

loom_status graph_verify(const Graph *g, LoomError *err) {
  /* A value is available once it is a graph input, a constant, or the output
   * of an earlier node. */
  char *avail = loom_calloc((size_t)g->nvalues + 1, 1);
  if (!avail) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  for (int k = 0; k < g->ninputs; k++) avail[g->inputs[k]] = 1;
  for (int v = 0; v < g->nvalues; v++)
    if (g->values[v].constant) avail[v] = 1;
  loom_status st = LOOM_OK;
  for (int i = 0; i < g->nnodes && !st; i++) {
    const GraphNode *n = &g->nodes[i];
    for (int k = 0; k < n->ninputs; k++) {
      ValueId v = n->inputs[k];
      if (v == GRAPH_NO_VALUE) continue;
      if (v < 0 || v >= g->nvalues || !avail[v]) {
        st = err_set(err, LOOM_ERR_INVALID_ARG, "node \"%s\" (%s): input %d \"%s\" is not defined before the node", n->name,
                     graph_op_info(n->op)->name, k, v >= 0 && v < g->nvalues ? g->values[v].name : "?");
        break;
      }
    }
    for (int k = 0; k < n->noutputs; k++)
      if (n->outputs[k] >= 0) avail[n->outputs[k]] = 1;
  }
  for (int k = 0; k < g->noutputs && !st; k++)
    if (!avail[g->outputs[k]]) st = err_set(err, LOOM_ERR_INVALID_ARG, "graph output \"%s\" is never produced", g->values[g->outputs[k]].name);
  loom_free(avail);
  return st;
}

void graph_remove_nodes(Graph *g, const bool *remove) {
  int o = 0;
  for (int i = 0; i < g->nnodes; i++) {
    if (remove[i]) {
      for (int k = 0; k < g->nodes[i].noutputs; k++) {
        ValueId v = g->nodes[i].outputs[k];
        if (v >= 0 && g->values[v].producer == i) g->values[v].producer = -1;
      }
      continue;
    }
    g->nodes[o] = g->nodes[i];
    for (int k = 0; k < g->nodes[o].noutputs; k++)
      if (g->nodes[o].outputs[k] >= 0) g->values[g->nodes[o].outputs[k]].producer = o;
    o++;
  }
  g->nnodes = o;
}

void graph_append_nodes(Graph *g, const GraphNode *nodes, int n) {
  if (g->nnodes + n > g->nodes_cap) {
    int cap = g->nodes_cap ? g->nodes_cap : 64;
    while (cap < g->nnodes + n) cap *= 2;
    GraphNode *p = ARENA_ARRAY(g->arena, GraphNode, cap);
    if (g->nnodes) memcpy(p, g->nodes, sizeof *p * (size_t)g->nnodes);
    g->nodes = p;
    g->nodes_cap = cap;
  }
  for (int i = 0; i < n; i++) {
    g->nodes[g->nnodes] = nodes[i];
    for (int k = 0; k < nodes[i].noutputs; k++)
      if (nodes[i].outputs[k] >= 0) g->values[nodes[i].outputs[k]].producer = g->nnodes;
    g->nnodes++;
  }
}

int graph_bind_dim_param(Graph *g, const char *param, int64_t extent) {
  int bound = 0;
  for (int k = 0; k < g->ninputs; k++) {
    GraphValue *v = &g->values[g->inputs[k]];
    if (!v->dim_params) continue;
    for (int d = 0; d < v->rank; d++) {
      if (v->dim_params[d] && !strcmp(v->dim_params[d], param) && v->dims[d] < 0) {
        v->dims[d] = extent;
        bound++;
      }
    }
  }
  return bound;
}

loom_status graph_set_input_shape(Graph *g, const char *name, int rank, const int64_t *dims, LoomError *err) {
  for (int k = 0; k < g->ninputs; k++) {
    GraphValue *v = &g->values[g->inputs[k]];
    if (strcmp(v->name, name)) continue;
    if (v->rank >= 0 && v->rank != rank)
      return err_set(err, LOOM_ERR_INVALID_ARG, "graph input \"%s\" has rank %d, got a shape of rank %d", name, v->rank, rank);
    for (int d = 0; d < rank; d++) {
      if (dims[d] < 0)
        return err_set(err, LOOM_ERR_INVALID_ARG, "graph input \"%s\": extent %d is negative", name, d);
      if (v->rank >= 0 && v->dims[d] >= 0 && v->dims[d] != dims[d])
        return err_set(err, LOOM_ERR_INVALID_ARG, "graph input \"%s\": extent %d is %lld in the model, got %lld", name, d,
                       (long long)v->dims[d], (long long)dims[d]);
    }
    const char **params = v->rank == rank ? v->dim_params : NULL;
    graph_set_type(g, g->inputs[k], v->dtype, rank, dims);
    v->dim_params = params;
    return LOOM_OK;
  }
  return err_set(err, LOOM_ERR_INVALID_ARG, "the graph has no input named \"%s\"", name);
}
