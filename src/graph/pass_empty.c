/* Empty tensors (an extent of 0) need no kernel: an op whose outputs are
 * all empty is replaced by empty constants (its empty outputs become
 * constants when only some are), and Concat drops empty operands. A
 * reduction over an empty set is folded earlier (graph/fold_reduce.c). An
 * empty graph output is handed back by the runtime without a kernel. */
#include "graph/passes.h"
#include "support/alloc.h"

#include <stdlib.h>
#include <string.h>

static bool is_empty(const Graph *g, ValueId v) {
  const GraphValue *x = &g->values[v];
  return x->rank >= 0 && graph_shape_numel(x->rank, x->dims) == 0;
}

static GraphTensor *value_tensor(Graph *g, ValueId v) {
  const GraphValue *x = &g->values[v];
  return graph_tensor_new(g->arena, x->dtype, x->rank, x->dims);
}

loom_status graph_pass_fold_empty(Graph *g, LoomError *err) {
  bool *remove = loom_calloc((size_t)g->nnodes + 1, sizeof *remove);
  if (!remove) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < g->nnodes; i++) {
    GraphNode *n = &g->nodes[i];
    bool all_empty = n->noutputs > 0, known = true;
    for (int k = 0; k < n->noutputs; k++) {
      if (n->outputs[k] < 0) continue;
      const GraphValue *o = &g->values[n->outputs[k]];
      if (!graph_value_is_static(o)) known = false;
      else if (!is_empty(g, n->outputs[k])) all_empty = false;
    }
    if (!known) continue;
    if (all_empty) {
      for (int k = 0; k < n->noutputs; k++)
        if (n->outputs[k] >= 0) g->values[n->outputs[k]].constant = value_tensor(g, n->outputs[k]);
      remove[i] = true;
    } else if (n->noutputs > 1) {
      /* Some outputs empty (a Split piece of size 0, a kernel-size-1
       * CausalConvWithState's state): they leave the node as empty constants. */
      for (int k = 0; k < n->noutputs; k++) {
        ValueId v = n->outputs[k];
        if (v < 0 || !is_empty(g, v)) continue;
        g->values[v].constant = value_tensor(g, v);
        g->values[v].producer = -1;
        n->outputs[k] = GRAPH_NO_VALUE;
      }
    } else if (n->op == GRAPH_OP_CONCAT) {
      int w = 0;
      for (int k = 0; k < n->ninputs; k++)
        if (n->inputs[k] < 0 || !is_empty(g, n->inputs[k])) n->inputs[w++] = n->inputs[k];
      n->ninputs = w;
    }
  }
  graph_remove_nodes(g, remove);
  loom_free(remove);
  return LOOM_OK;
}
