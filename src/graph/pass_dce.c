/* Dead code elimination: a node lives when one of its outputs is a graph
 * output or an input of a live node. One backward sweep suffices because
 * nodes are in topological order. */
#include "graph/graph.h"
#include "support/alloc.h"

#include <stdlib.h>

loom_status graph_pass_dce(Graph *g, LoomError *err) {
  bool *live_value = loom_calloc((size_t)g->nvalues + 1, 1);
  bool *remove = loom_calloc((size_t)g->nnodes + 1, 1);
  if (!live_value || !remove) {
    loom_free(live_value);
    loom_free(remove);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (int k = 0; k < g->noutputs; k++) live_value[g->outputs[k]] = true;
  for (int i = g->nnodes - 1; i >= 0; i--) {
    const GraphNode *n = &g->nodes[i];
    bool live = false;
    for (int k = 0; k < n->noutputs; k++)
      if (n->outputs[k] >= 0 && live_value[n->outputs[k]]) live = true;
    if (!live) {
      remove[i] = true;
      continue;
    }
    for (int k = 0; k < n->ninputs; k++)
      if (n->inputs[k] >= 0) live_value[n->inputs[k]] = true;
  }
  graph_remove_nodes(g, remove);
  /* Unused constants keep their slot in the value table (ids are stable)
   * but drop their data so nothing downstream embeds them. */
  for (int v = 0; v < g->nvalues; v++)
    if (g->values[v].constant && !live_value[v]) g->values[v].constant = NULL;
  loom_free(live_value);
  loom_free(remove);
  return LOOM_OK;
}
