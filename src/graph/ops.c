/* The operator registry: one static table, built from GRAPH_OPS, pairing
 * each op with its shape/type inference function (infer_*.c). */
#include "graph/graph.h"
#include "graph/infer_internal.h"

#include <string.h>

static const GraphOpInfo op_table[GRAPH_OP_COUNT] = {
#define X(e, nm, pat, infer) [GRAPH_OP_##e] = {nm, GRAPH_PATTERN_##pat, infer_##infer},
    GRAPH_OPS(X)
#undef X
};

const GraphOpInfo *graph_op_info(GraphOp op) {
  LOOM_ASSERT(op >= 0 && op < GRAPH_OP_COUNT);
  return &op_table[op];
}

bool graph_op_lookup(const char *name, GraphOp *out) {
  for (int k = 0; k < GRAPH_OP_COUNT; k++) {
    if (!strcmp(op_table[k].name, name)) {
      *out = (GraphOp)k;
      return true;
    }
  }
  return false;
}

const char *graph_pattern_name(GraphOpPattern p) {
  switch (p) {
  case GRAPH_PATTERN_ELEMWISE: return "elemwise";
  case GRAPH_PATTERN_BROADCAST: return "broadcast";
  case GRAPH_PATTERN_INJECTIVE: return "injective";
  case GRAPH_PATTERN_REDUCTION: return "reduction";
  case GRAPH_PATTERN_OUT_ELEMWISE_FUSABLE: return "out_elemwise_fusable";
  case GRAPH_PATTERN_OPAQUE: return "opaque";
  }
  return "?";
}
