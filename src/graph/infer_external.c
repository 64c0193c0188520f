/* Inference for External, the node that stands for a region an external
 * back end claimed (src/byoc/partition.c): its outputs are the region's,
 * typed before the region left the graph, so inference only checks that
 * they still are. An External node from anywhere else (a model file that
 * names the op) has untyped outputs and is refused here. */
#include "graph/infer_internal.h"

loom_status infer_external(Graph *g, GraphNode *n, LoomError *err) {
  for (int k = 0; k < n->noutputs; k++) {
    const GraphValue *v = n->outputs[k] >= 0 ? &g->values[n->outputs[k]] : NULL;
    if (!v || !graph_value_is_static(v))
      return infer_fail(g, n, err,
                        "output %d has no type: External nodes are made by BYOC partitioning (`--byoc`), not read "
                        "from models",
                        k);
  }
  return LOOM_OK;
}
