/* A reduction over an empty set of values (a reduced axis of extent 0)
 * does not read its input: every output element is the reduction's value
 * on the empty set, which ONNX defines (0 for sums, 1 for products, -inf
 * for ReduceMax / LogSum / LogSumExp, +inf for ReduceMin; the dtype's
 * lowest / highest value for integers). Constant folding turns such a node
 * into that constant, so no kernel ever sees the empty input. */
#include "graph/infer_internal.h"

#include <math.h>

GraphTensor *graph_fold_empty_reduce(Graph *g, const GraphNode *n) {
  double v;
  switch (n->op) {
  case GRAPH_OP_REDUCE_SUM: case GRAPH_OP_REDUCE_L1: case GRAPH_OP_REDUCE_L2: case GRAPH_OP_REDUCE_SUM_SQUARE:
    v = 0;
    break;
  case GRAPH_OP_REDUCE_PROD: v = 1; break;
  case GRAPH_OP_REDUCE_MEAN: v = NAN; break;
  case GRAPH_OP_REDUCE_MAX: case GRAPH_OP_REDUCE_LOG_SUM: case GRAPH_OP_REDUCE_LOG_SUM_EXP: v = -INFINITY; break;
  case GRAPH_OP_REDUCE_MIN: v = INFINITY; break;
  default: return NULL;
  }
  if (n->noutputs != 1 || n->outputs[0] < 0 || !infer_known(g, n, 0)) return NULL;
  const GraphValue *x = infer_input(g, n, 0), *y = &g->values[n->outputs[0]];
  if (!graph_value_is_static(x) || !graph_value_is_static(y) || graph_shape_numel(x->rank, x->dims) != 0) return NULL;
  int64_t count = graph_shape_numel(y->rank, y->dims);
  if (count <= 0 || count > (1 << 24)) return NULL; /* an empty result stays (and is refused later) */
  DType t = y->dtype;
  if (!dtype_is_float(t) && isinf(v)) {
    /* integers: the lowest / highest value; bool: false / true */
    bool hi = v > 0;
    if (dtype_is_bool(t)) v = hi;
    else if (t.code == DT_UINT) v = hi ? ldexp(1, t.bits) - 1 : 0;
    else v = hi ? ldexp(1, t.bits - 1) - 1 : -ldexp(1, t.bits - 1);
  }
  if (!dtype_is_float(t) && isnan(v)) return NULL;
  GraphTensor *o = graph_tensor_new(g->arena, t, y->rank, y->dims);
  for (int64_t k = 0; k < count; k++) {
    if (dtype_is_float(t)) graph_tensor_set_f64(o, k, v);
    else graph_tensor_set_i64(o, k, v >= 9.2e18 ? -1 /* u64 max */ : (int64_t)v);
  }
  return o;
}
