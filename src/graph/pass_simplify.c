/* Inference-time simplification: Identity and Dropout (test mode) forward
 * their input unchanged, so their uses are redirected to the input. */
#include "graph/graph.h"
#include "support/alloc.h"

#include <stdlib.h>

static bool is_graph_output(const Graph *g, ValueId v) {
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == v) return true;
  return false;
}

static bool is_graph_input(const Graph *g, ValueId v) {
  for (int k = 0; k < g->ninputs; k++)
    if (g->inputs[k] == v) return true;
  return false;
}

loom_status graph_pass_remove_identity(Graph *g, LoomError *err) {
  (void)err;
  bool *remove = loom_calloc((size_t)g->nnodes + 1, 1);
  if (!remove) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < g->nnodes; i++) {
    GraphNode *n = &g->nodes[i];
    if (n->op != GRAPH_OP_IDENTITY && n->op != GRAPH_OP_DROPOUT) continue;
    if (n->ninputs < 1 || n->inputs[0] < 0 || n->noutputs < 1) continue;
    /* Dropout's mask output has no source to forward to; keep the node. */
    bool mask_used = false;
    if (n->op == GRAPH_OP_DROPOUT && n->noutputs > 1 && n->outputs[1] >= 0) {
      ValueId m = n->outputs[1];
      if (is_graph_output(g, m)) mask_used = true;
      for (int j = 0; j < g->nnodes && !mask_used; j++)
        for (int k = 0; k < g->nodes[j].ninputs; k++)
          if (g->nodes[j].inputs[k] == m) mask_used = true;
    }
    if (mask_used) continue;
    ValueId x = n->inputs[0], y = n->outputs[0];
    if (!is_graph_output(g, y)) {
      graph_replace_uses(g, y, x);
      remove[i] = true;
    } else if (!is_graph_output(g, x) && !is_graph_input(g, x) && !g->values[x].constant && g->values[x].producer >= 0) {
      /* y names a graph output: the producer of x writes y directly. */
      GraphNode *p = &g->nodes[g->values[x].producer];
      for (int k = 0; k < p->noutputs; k++)
        if (p->outputs[k] == x) p->outputs[k] = y;
      g->values[y].producer = g->values[x].producer;
      g->values[x].producer = -1;
      n->inputs[0] = y; /* keeps the node self-consistent until removal */
      graph_replace_uses(g, x, y);
      remove[i] = true;
    }
  }
  graph_remove_nodes(g, remove);
  loom_free(remove);
  return LOOM_OK;
}
