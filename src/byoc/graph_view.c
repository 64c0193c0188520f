/* The graph IR as the plugin API sees it (loom/loom_byoc.h): plain arrays
 * of tensors and nodes with DLPack dtypes and ONNX op names, so a plugin
 * needs no compiler type. Built in an arena; constants point at the
 * graph's own bytes (alive until the graph is freed). */
#include "byoc/byoc.h"

DLDataType byoc_dl_dtype(DType t) {
  DLDataType d = {(uint8_t)t.code, (uint8_t)(t.code == DT_BOOL ? 8 : t.bits), 1};
  return d;
}

static loom_byoc_attr attr_view(const GraphAttr *a) {
  loom_byoc_attr v = {.name = a->name, .kind = LOOM_BYOC_ATTR_OTHER};
  switch (a->kind) {
  case GRAPH_ATTR_INT: v.kind = LOOM_BYOC_ATTR_INT, v.i = a->i; break;
  case GRAPH_ATTR_FLOAT: v.kind = LOOM_BYOC_ATTR_FLOAT, v.f = a->f; break;
  case GRAPH_ATTR_STRING: v.kind = LOOM_BYOC_ATTR_STRING, v.s = a->s; break;
  case GRAPH_ATTR_INTS: v.kind = LOOM_BYOC_ATTR_INTS, v.ints = a->ints, v.n = a->n; break;
  case GRAPH_ATTR_FLOATS: v.kind = LOOM_BYOC_ATTR_FLOATS, v.floats = a->floats, v.n = a->n; break;
  case GRAPH_ATTR_TENSOR:
  case GRAPH_ATTR_FRONTEND: break;
  }
  return v;
}

loom_byoc_node byoc_node_view(Arena *a, const GraphNode *n, const int32_t *tensor_of) {
  int32_t *ins = ARENA_ARRAY(a, int32_t, n->ninputs + 1), *outs = ARENA_ARRAY(a, int32_t, n->noutputs + 1);
  for (int k = 0; k < n->ninputs; k++)
    ins[k] = n->inputs[k] == GRAPH_NO_VALUE ? -1 : tensor_of ? tensor_of[n->inputs[k]] : n->inputs[k];
  for (int k = 0; k < n->noutputs; k++)
    outs[k] = n->outputs[k] == GRAPH_NO_VALUE ? -1 : tensor_of ? tensor_of[n->outputs[k]] : n->outputs[k];
  loom_byoc_attr *attrs = ARENA_ARRAY(a, loom_byoc_attr, n->nattrs + 1);
  for (int k = 0; k < n->nattrs; k++) attrs[k] = attr_view(&n->attrs[k]);
  loom_byoc_node v = {graph_op_info(n->op)->name, n->name, n->ninputs, ins, n->noutputs, outs, n->nattrs, attrs, -1};
  return v;
}

static loom_byoc_tensor tensor_view(const GraphValue *v) {
  loom_byoc_tensor t = {v->name, byoc_dl_dtype(v->dtype), v->rank < 0 ? 0 : v->rank, v->dims,
                      v->constant ? v->constant->data : NULL};
  return t;
}

loom_byoc_graph byoc_graph_view(Arena *a, const Graph *g) {
  loom_byoc_tensor *ts = ARENA_ARRAY(a, loom_byoc_tensor, g->nvalues + 1);
  for (int i = 0; i < g->nvalues; i++) ts[i] = tensor_view(&g->values[i]);
  loom_byoc_node *ns = ARENA_ARRAY(a, loom_byoc_node, g->nnodes + 1);
  for (int i = 0; i < g->nnodes; i++) ns[i] = byoc_node_view(a, &g->nodes[i], NULL);
  loom_byoc_graph v = {g->nvalues, ts, g->nnodes, ns};
  return v;
}
