/* Shape and dtype inference: runs each node's registry function in
 * topological order, so every input's type is final when a node is seen. */
#include "graph/graph.h"

loom_status graph_pass_infer(Graph *g, LoomError *err) {
  for (int i = 0; i < g->nnodes; i++) {
    GraphNode *n = &g->nodes[i];
    loom_status st = graph_op_info(n->op)->infer(g, n, err);
    if (st) return st;
  }
  return LOOM_OK;
}
