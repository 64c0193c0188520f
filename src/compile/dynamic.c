/* Data-dependent output extents (graph/graph_dynamic.h), the compiler's
 * side.
 *
 * An op such as NonZero is compiled with the upper bound of its output
 * shape; its kernel also writes the real shape into an i64[rank] extent
 * tensor. compile_attach_extents gives every such node its extent values
 * (extra node outputs after the ONNX ones) and, for a data output that is
 * a graph output, appends the extent to the graph's outputs after the
 * model's own: those "hidden" outputs are never artifact outputs, they
 * become the kernel's ARTIFACT_ARG_OUTPUT_SHAPE argument (the runtime's
 * shape array of that output), which plan_artifact maps with
 * compile_extent_of_output. An extent nobody reads (the data output is
 * unused) stays inside its kernel.
 *
 * A data-dependent output that feeds another node would need every
 * consumer compiled for a run-time extent: not supported yet, refused
 * here naming both nodes. */
#include "compile/compile.h"

#include "graph/graph_dynamic.h"

#include <string.h>

static int output_index(const Graph *g, ValueId v) {
  for (int i = 0; i < g->noutputs; i++)
    if (g->outputs[i] == v) return i;
  return -1;
}

loom_status compile_attach_extents(Graph *g, LoomError *err) {
  for (int ni = 0; ni < g->nnodes; ni++) {
    int nonnx, which[GRAPH_MAX_DYNAMIC_OUTPUTS];
    int count = graph_dynamic_outputs(g->nodes[ni].op, &nonnx, which);
    if (count == 0 || graph_node_has_extents(&g->nodes[ni])) continue;
    GraphNode *n = &g->nodes[ni];
    const char *op = graph_op_info(n->op)->name;
    if (n->noutputs > nonnx)
      return err_set(err, LOOM_ERR_INVALID_ARG, "node \"%s\" (%s): %d outputs, at most %d", n->name, op, n->noutputs,
                     nonnx);
    for (int j = 0; j < count; j++) {
      ValueId d = which[j] < n->noutputs ? n->outputs[which[j]] : GRAPH_NO_VALUE;
      if (d == GRAPH_NO_VALUE) continue;
      for (int ci = 0; ci < g->nnodes; ci++)
        for (int k = 0; k < g->nodes[ci].ninputs; k++)
          if (g->nodes[ci].inputs[k] == d)
            return err_set(err, LOOM_ERR_UNSUPPORTED,
                           "node \"%s\" (%s): output \"%s\" has a data-dependent shape and feeds node \"%s\" (%s): a "
                           "data-dependent shape feeding other ops is not supported yet",
                           n->name, op, g->values[d].name, g->nodes[ci].name, graph_op_info(g->nodes[ci].op)->name);
    }
    ValueId *outs = ARENA_ARRAY(g->arena, ValueId, nonnx + count);
    int nold = n->noutputs;
    for (int k = 0; k < nonnx; k++) outs[k] = k < nold ? n->outputs[k] : GRAPH_NO_VALUE;
    ValueId *extra = ARENA_ARRAY(g->arena, ValueId, count);
    int nextra = 0;
    for (int j = 0; j < count; j++) {
      ValueId d = outs[which[j]];
      ValueId e = GRAPH_NO_VALUE;
      if (d != GRAPH_NO_VALUE) {
        e = graph_add_value(g, arena_printf(g->arena, "%s.extent", g->values[d].name));
        int64_t r = g->values[d].rank;
        graph_set_type(g, e, DT_I64, 1, &r);
        g->values[e].producer = ni;
        if (output_index(g, d) >= 0) extra[nextra++] = e;
      }
      outs[nonnx + j] = e;
    }
    n = &g->nodes[ni];
    n->outputs = outs;
    n->noutputs = nonnx + count;
    if (nextra) {
      ValueId *go = ARENA_ARRAY(g->arena, ValueId, g->noutputs + nextra);
      memcpy(go, g->outputs, sizeof(ValueId) * (size_t)g->noutputs);
      memcpy(go + g->noutputs, extra, sizeof(ValueId) * (size_t)nextra);
      g->outputs = go;
      g->noutputs += nextra;
    }
  }
  return LOOM_OK;
}

ValueId compile_extent_of(const Graph *g, ValueId v) {
  if (v < 0 || v >= g->nvalues) return GRAPH_NO_VALUE;
  int p = g->values[v].producer;
  if (p < 0) return GRAPH_NO_VALUE;
  const GraphNode *n = &g->nodes[p];
  int nonnx, which[GRAPH_MAX_DYNAMIC_OUTPUTS];
  int count = graph_dynamic_outputs(n->op, &nonnx, which);
  if (!count || !graph_node_has_extents(n)) return GRAPH_NO_VALUE;
  for (int j = 0; j < count; j++)
    if (n->outputs[which[j]] == v) return n->outputs[nonnx + j];
  return GRAPH_NO_VALUE;
}

int compile_extent_of_output(const Graph *g, ValueId v) {
  if (v < 0 || v >= g->nvalues) return -1;
  int p = g->values[v].producer;
  if (p < 0) return -1;
  const GraphNode *n = &g->nodes[p];
  int nonnx, which[GRAPH_MAX_DYNAMIC_OUTPUTS];
  int count = graph_dynamic_outputs(n->op, &nonnx, which);
  if (!count || !graph_node_has_extents(n)) return -1;
  for (int j = 0; j < count; j++)
    if (n->outputs[nonnx + j] == v) return output_index(g, n->outputs[which[j]]);
  return -1;
}
