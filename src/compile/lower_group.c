/* A fused group -> one PrimFunc: the group's external data inputs become
 * placeholders, each node's compute (op_compute.c) is applied to the
 * tensors of its inputs in topological order, and te_create_primfunc lowers
 * the composed DAG with the group's outputs as the last parameters. Values
 * used only inside the group become intermediate blocks, which the group's
 * schedule inlines. */
#include "compile/compile.h"

#include <ctype.h>
#include <string.h>

enum { MAX_OUTPUTS = 64 };

/* A C-identifier-safe tensor name for the output of the group's i-th node,
 * unique in the group: its op and position. Not the node's place in the
 * graph: two groups that compute the same thing (ResNet's repeated
 * blocks) are then the same function, one workload for the tuner (the
 * stage names are part of the workload key and of the traces) and one
 * kernel for the build (driver.c merges equal sources). */
static const char *node_tensor_name(Arena *a, const GraphNode *n, int i) {
  const char *op = graph_op_info(n->op)->name;
  char buf[48];
  size_t j = 0;
  for (const char *p = op; *p && j + 1 < sizeof buf; p++) buf[j++] = (char)tolower((unsigned char)*p);
  buf[j] = 0;
  return arena_printf(a, "%s_%d", buf, i);
}

loom_status compile_lower_group(Arena *a, const Graph *g, const GraphFusedGroup *grp, const char *name,
                                GroupFunc *out, LoomError *err) {
  memset(out, 0, sizeof *out);
  TeTensor **of = ARENA_ARRAY(a, TeTensor *, g->nvalues); /* value -> its tensor in this group */
  ValueId *inputs = ARENA_ARRAY(a, ValueId, grp->ninputs + 1);
  int ninputs = 0;
  const GraphNode *anchor = grp->anchor >= 0 ? &g->nodes[grp->anchor] : NULL;

  for (int i = 0; i < grp->nnodes; i++) {
    const GraphNode *n = &g->nodes[grp->nodes[i]];
    TeTensor **ins = ARENA_ARRAY(a, TeTensor *, n->ninputs);
    for (int k = 0; k < n->ninputs; k++) {
      ValueId v = n->inputs[k];
      if (v == GRAPH_NO_VALUE || !compile_operand_is_data(g, n, k)) continue;
      if (!of[v]) {
        /* Read from outside the group (or a constant): a parameter. */
        const GraphValue *gv = &g->values[v];
        if (!graph_value_is_static(gv))
          return err_set(err, LOOM_ERR_UNSUPPORTED, "%s (node \"%s\"): input \"%s\" has no static shape",
                         graph_op_info(n->op)->name, n->name, gv->name);
        of[v] = te_placeholder(a, arena_printf(a, "in%d", ninputs), gv->dtype, gv->rank, gv->dims, err);
        if (!of[v]) return err->status;
        inputs[ninputs++] = v;
      }
      ins[k] = of[v];
    }
    TeTensor *outs[MAX_OUTPUTS] = {0};
    if (n->noutputs > MAX_OUTPUTS)
      return err_set(err, LOOM_ERR_UNSUPPORTED, "node \"%s\" has more than %d outputs", n->name, MAX_OUTPUTS);
    loom_status st = compile_node_compute(a, g, n, ins, node_tensor_name(a, n, i), outs, err);
    if (st) {
      if (!strstr(err->msg, n->name)) err_prefix(err, "node \"%s\" (%s)", n->name, graph_op_info(n->op)->name);
      return st;
    }
    for (int k = 0; k < n->noutputs; k++)
      if (n->outputs[k] != GRAPH_NO_VALUE) of[n->outputs[k]] = outs[k];
  }

  TeTensor **args = ARENA_ARRAY(a, TeTensor *, ninputs + grp->noutputs);
  for (int i = 0; i < ninputs; i++) args[i] = of[inputs[i]];
  for (int i = 0; i < grp->noutputs; i++) {
    TeTensor *t = of[grp->outputs[i]];
    if (!t || t->kind != TE_COMPUTE)
      return err_set(err, LOOM_ERR_UNSUPPORTED, "group \"%s\": output \"%s\" is not computed in the group", name,
                     g->values[grp->outputs[i]].name);
    args[ninputs + i] = t;
  }
  out->func = te_create_primfunc(a, name, args, ninputs + grp->noutputs, err);
  if (!out->func) {
    err_prefix(err, "kernel %s (%s \"%s\")", name, anchor ? graph_op_info(anchor->op)->name : "group",
               anchor ? anchor->name : "");
    return err->status ? err->status : LOOM_ERR_INTERNAL;
  }
  out->inputs = inputs;
  out->ninputs = ninputs;
  out->outputs = grp->outputs;
  out->noutputs = grp->noutputs;
  return LOOM_OK;
}
