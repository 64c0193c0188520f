/* Predicates the built-in back ends share (loom/loom_byoc.h `where`). */
#include "byoc/byoc.h"

bool byoc_all_f32(const loom_byoc_graph *g, const loom_byoc_node *n) {
  for (int32_t k = 0; k < n->ninputs; k++)
    if (n->inputs[k] >= 0 && !loom_byoc_is_f32(&g->tensors[n->inputs[k]])) return false;
  return n->noutputs == 1 && loom_byoc_is_f32(&g->tensors[n->outputs[0]]);
}

int byoc_bias_add_ok(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  const loom_byoc_node *n = &g->nodes[node];
  if (!byoc_all_f32(g, n) || n->ninputs != 2) return 0;
  const loom_byoc_tensor *x = &g->tensors[n->inputs[0]], *c = &g->tensors[n->inputs[1]];
  if (x->data) {
    const loom_byoc_tensor *t = x;
    x = c, c = t;
  }
  const loom_byoc_tensor *y = &g->tensors[n->outputs[0]];
  if (!c->data || x->data || y->ndim != x->ndim || y->ndim < 1) return 0;
  for (int32_t d = 0; d < y->ndim; d++)
    if (y->shape[d] != x->shape[d]) return 0;
  int64_t nn = y->shape[y->ndim - 1];
  for (int32_t d = 0; d + 1 < c->ndim; d++)
    if (c->shape[d] != 1) return 0;
  return c->ndim >= 1 && c->shape[c->ndim - 1] == nn;
}
