/* Text form of the graph IR (see graph.h for the grammar by example). */
#include "graph/graph.h"

#include <inttypes.h>

#define PRINT_MAX_CONST_ELEMS 16

void graph_print_value_type(const Graph *g, ValueId id, StrBuf *sb) {
  const GraphValue *v = &g->values[id];
  char buf[16];
  sb_puts(sb, v->dtype.bits ? dtype_str(v->dtype, buf) : "?");
  if (v->rank < 0) {
    sb_puts(sb, "[?]");
    return;
  }
  sb_putc(sb, '[');
  for (int k = 0; k < v->rank; k++) {
    if (k) sb_puts(sb, ", ");
    if (v->dims[k] >= 0) sb_printf(sb, "%" PRId64, v->dims[k]);
    else if (v->dim_params && v->dim_params[k]) sb_puts(sb, v->dim_params[k]);
    else sb_putc(sb, '?');
  }
  sb_putc(sb, ']');
}

static void print_ref(const Graph *g, ValueId id, StrBuf *sb) {
  if (id < 0) sb_puts(sb, "_");
  else sb_printf(sb, "%%%s", g->values[id].name);
}

static void print_tensor_values(const GraphTensor *t, StrBuf *sb) {
  int64_t n = graph_tensor_numel(t);
  sb_putc(sb, '[');
  for (int64_t k = 0; k < n; k++) {
    if (k) sb_puts(sb, ", ");
    if (dtype_is_float(t->dtype)) sb_printf(sb, "%g", graph_tensor_get_f64(t, k));
    else sb_printf(sb, "%" PRId64, graph_tensor_get_i64(t, k));
  }
  sb_putc(sb, ']');
}

static void print_attr(const GraphAttr *a, StrBuf *sb) {
  sb_printf(sb, "%s=", a->name);
  switch (a->kind) {
  case GRAPH_ATTR_INT: sb_printf(sb, "%" PRId64, a->i); break;
  case GRAPH_ATTR_FLOAT: sb_printf(sb, "%g", a->f); break;
  case GRAPH_ATTR_STRING: sb_printf(sb, "\"%s\"", a->s); break;
  case GRAPH_ATTR_INTS:
  case GRAPH_ATTR_FLOATS:
    sb_putc(sb, '[');
    for (int k = 0; k < a->n; k++) {
      if (k) sb_puts(sb, ", ");
      if (a->kind == GRAPH_ATTR_INTS) sb_printf(sb, "%" PRId64, a->ints[k]);
      else sb_printf(sb, "%g", a->floats[k]);
    }
    sb_putc(sb, ']');
    break;
  case GRAPH_ATTR_TENSOR: {
    char buf[16];
    sb_printf(sb, "tensor %s", dtype_str(a->t->dtype, buf));
    if (graph_tensor_numel(a->t) <= PRINT_MAX_CONST_ELEMS) print_tensor_values(a->t, sb);
    break;
  }
  case GRAPH_ATTR_FRONTEND: sb_puts(sb, "<subgraph>"); break;
  }
}

void graph_print(const Graph *g, StrBuf *sb) {
  /* An arena, not the heap: writing to sb may run out of memory and unwind
   * to a recovery point, which frees arenas (support/oom.h). */
  Arena *scratch = arena_new();
  bool *used = ARENA_ARRAY(scratch, bool, g->nvalues + 1);
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].ninputs; k++)
      if (g->nodes[i].inputs[k] >= 0) used[g->nodes[i].inputs[k]] = true;
  for (int k = 0; k < g->noutputs; k++) used[g->outputs[k]] = true;

  sb_printf(sb, "graph %s(", g->name);
  for (int k = 0; k < g->ninputs; k++) {
    if (k) sb_puts(sb, ", ");
    print_ref(g, g->inputs[k], sb);
    sb_puts(sb, ": ");
    graph_print_value_type(g, g->inputs[k], sb);
  }
  sb_puts(sb, ") {\n");
  for (int v = 0; v < g->nvalues; v++) {
    const GraphTensor *t = g->values[v].constant;
    if (!t || !used[v]) continue;
    sb_puts(sb, "  ");
    print_ref(g, v, sb);
    sb_puts(sb, " = const ");
    graph_print_value_type(g, v, sb);
    if (graph_tensor_numel(t) <= PRINT_MAX_CONST_ELEMS) {
      sb_putc(sb, ' ');
      print_tensor_values(t, sb);
    }
    sb_putc(sb, '\n');
  }
  for (int i = 0; i < g->nnodes; i++) {
    const GraphNode *n = &g->nodes[i];
    sb_puts(sb, "  ");
    for (int k = 0; k < n->noutputs; k++) {
      if (k) sb_puts(sb, ", ");
      print_ref(g, n->outputs[k], sb);
      if (n->outputs[k] >= 0) {
        sb_puts(sb, ": ");
        graph_print_value_type(g, n->outputs[k], sb);
      }
    }
    sb_printf(sb, " = %s(", graph_op_info(n->op)->name);
    for (int k = 0; k < n->ninputs; k++) {
      if (k) sb_puts(sb, ", ");
      print_ref(g, n->inputs[k], sb);
    }
    sb_putc(sb, ')');
    if (n->nattrs) {
      sb_puts(sb, " {");
      for (int k = 0; k < n->nattrs; k++) {
        if (k) sb_puts(sb, ", ");
        print_attr(&n->attrs[k], sb);
      }
      sb_putc(sb, '}');
    }
    if (n->name[0]) sb_printf(sb, "  # \"%s\"", n->name);
    sb_putc(sb, '\n');
  }
  sb_puts(sb, "  return ");
  for (int k = 0; k < g->noutputs; k++) {
    if (k) sb_puts(sb, ", ");
    print_ref(g, g->outputs[k], sb);
  }
  sb_puts(sb, "\n}\n");
  arena_free(scratch);
}
