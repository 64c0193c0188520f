/* Helpers shared by the rewriting passes (passes.h): rebuilding the node
 * list with nodes inserted in the middle (graph_add_node only appends),
 * use counts, and small attribute/constant constructors. */
#ifndef LOOM_GRAPH_PASS_INTERNAL_H
#define LOOM_GRAPH_PASS_INTERNAL_H

#include "graph/graph.h"

/* A node list under construction; nodes keep arena-owned arrays. */
typedef struct GraphNodeBuf {
  GraphNode *nodes;
  int n, cap;
} GraphNodeBuf;

/* Appends a copy of *n (its arrays are shared, not copied). */
void graph_nodebuf_push(Graph *g, GraphNodeBuf *b, const GraphNode *n);
/* Appends a new node; inputs/outputs are copied into the arena. Returns it. */
GraphNode *graph_nodebuf_add(Graph *g, GraphNodeBuf *b, GraphOp op, const char *name, const ValueId *inputs, int ninputs,
                             const ValueId *outputs, int noutputs);
/* Makes b the graph's node list and recomputes every value's producer. */
void graph_nodebuf_commit(Graph *g, GraphNodeBuf *b);

/* Per value: how many node inputs read it (a node reading it twice counts
 * twice), plus one per graph-output slot. calloc'ed; NULL when out of memory. */
int *graph_use_counts(const Graph *g);
bool graph_is_output(const Graph *g, ValueId v);

GraphAttr graph_attr_make_ints(Graph *g, const char *name, const int64_t *v, int count);
GraphAttr graph_attr_make_string(Graph *g, const char *name, const char *s);
GraphAttr graph_attr_make_int(Graph *g, const char *name, int64_t v);
/* A fresh value named after `base` plus a suffix, unique in the graph. */
ValueId graph_add_value_derived(Graph *g, const char *base, const char *suffix);
/* The same for a constant owning t (in g->arena). */
ValueId graph_add_constant_derived(Graph *g, const char *base, const char *suffix, GraphTensor *t);
/* A constant 1-D int64 tensor of v[0..n) (shapes, axes, pads), named likewise. */
ValueId graph_add_i64s_derived(Graph *g, const char *base, const char *suffix, const int64_t *v, int n);

/* The constant f32 weight B [K, N] of a plain product node: MatMul(A, B),
 * or Gemm(A, B[, C]) without transposes, alpha 1 and beta 1 when C is
 * given (canonicalize has folded a constant transB), with A and C f32
 * too; NULL for anything else. What the GEMV split and the weight packing
 * rewrite. */
const GraphTensor *graph_product_weight(const Graph *g, const GraphNode *n);

/* Channel block of a layout name: 0 for "NCHW", b for "NCHW<b>c" (b >= 1),
 * -1 for anything else (infer_nchwc.c). */
int graph_layout_block(const char *layout);

#endif
