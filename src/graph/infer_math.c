/* Inference of the elementwise ops whose output type is not the input's
 * (IsNaN, IsInf, CastLike) and of Size, a shape op folded at compile time. */
#include "graph/infer_internal.h"

#include <string.h>

/* IsNaN, IsInf: a bool per element. */
loom_status infer_is_class(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 1 || n->inputs[0] < 0) return infer_fail(g, n, err, "expected 1 input, got %d", n->ninputs);
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (!dtype_is_float(x->dtype)) {
    char b[16];
    return infer_fail(g, n, err, "input \"%s\" has dtype %s, expected a float type", x->name, dtype_str(x->dtype, b));
  }
  infer_set(g, n, 0, DT_BOOL1, x->rank, x->dims);
  return LOOM_OK;
}

/* CastLike(x, like) is Cast(x, to = like's dtype): once that dtype is known
 * the node becomes a Cast, so folding, fusion and compute see one op. */
loom_status infer_cast_like(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0)
    return infer_fail(g, n, err, "expected 2 inputs (input, target_type), got %d", n->ninputs);
  const GraphValue *like = infer_input(g, n, 1);
  if (!like->dtype.bits) return LOOM_OK;
  char b[16];
  GraphAttr to;
  memset(&to, 0, sizeof to);
  to.name = "to";
  to.kind = GRAPH_ATTR_STRING;
  to.s = arena_strdup(g->arena, dtype_str(like->dtype, b));
  graph_node_set_attr(g, n, to);
  n->op = GRAPH_OP_CAST;
  n->ninputs = 1;
  return infer_cast(g, n, err);
}

/* Size: the element count as an int64 scalar (folded like Shape). */
loom_status infer_size(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 1 || n->inputs[0] < 0) return infer_fail(g, n, err, "expected 1 input, got %d", n->ninputs);
  infer_set(g, n, 0, DT_I64, 0, NULL);
  return LOOM_OK;
}
