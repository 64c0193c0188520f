/* Ops whose output extents depend on input values: NonZero, Compress,
 * Unique, NonMaxSuppression.
 *
 * Loom compiles them with static shapes by giving each such output an
 * upper bound (inference sets it: NonZero's [rank, numel(X)], ...). At run
 * time the kernel writes the real tensor compactly (row-major for its real
 * shape) at the start of the upper-bound-sized buffer, and the real shape
 * into an "extent" tensor: i64[rank], one per data-dependent output. The
 * extents are extra node outputs, appended after the op's ONNX outputs by
 * compile/dynamic.c (compile_attach_extents) before fusion; the runtime
 * reports them as the outputs' shapes (docs/runtime.md, "dynamic extent"
 * outputs). */
#ifndef LOOM_GRAPH_GRAPH_DYNAMIC_H
#define LOOM_GRAPH_GRAPH_DYNAMIC_H

#include "graph/graph.h"

enum { GRAPH_MAX_DYNAMIC_OUTPUTS = 4 };

/* For an op with data-dependent output extents: the number of its ONNX
 * outputs (*nonnx) and which of them are data-dependent (which[0..count),
 * ascending); returns count (0 for every other op). */
int graph_dynamic_outputs(GraphOp op, int *nonnx, int *which);

/* True when node n carries its extent outputs (n->noutputs == nonnx +
 * count). Extent j (of data output which[j]) is then n->outputs[nonnx + j]. */
bool graph_node_has_extents(const GraphNode *n);

/* True when value v is a data-dependent output of its producer: its static
 * shape is only the upper bound, so Shape or Size of it is not a compile-time
 * constant. */
bool graph_value_is_data_dependent(const Graph *g, ValueId v);

#endif
