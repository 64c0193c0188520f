/* graph_pass_split_gemv: a matrix-vector product [1, K] x [K, N] with a
 * big constant matrix (a classifier's 8 MB of weights) is bound by reading
 * the matrix from memory once. Threads that each take a range of its
 * columns read every row of it in pieces, which the prefetchers follow
 * badly (ResNet-50's fc at 2 threads: 1.4 ms, ONNX Runtime 0.4 ms). Split
 * K into `parts` instead, one per thread:
 *
 *   Y = Gemm(A, B, C) or MatMul(A, B)
 *     ->  P = MatMul(Reshape(A, [parts, 1, K/parts]), B')   B' = B as [parts, K/parts, N]
 *         Y = ReduceSum(P, axes [0], keepdims 0) (+ C)
 *
 * B' holds B's bytes unchanged, so each part reads K/parts whole rows, one
 * contiguous range, and the batch matmul runs the parts in parallel. The
 * partial sums add in another order than a single dot product: the result
 * differs by rounding only. */
#include "graph/pass_internal.h"
#include "graph/passes.h"

#include <string.h>

enum { SPLIT_MIN_BYTES = 1 << 20 };

/* B [K, N] of a plain product A [1, K] x B (graph_product_weight), large
 * enough to share out and with K divisible into parts of at least 16. */
static const GraphTensor *splittable(const Graph *g, const GraphNode *n, int parts) {
  const GraphTensor *b = graph_product_weight(g, n);
  if (!b) return NULL;
  const GraphValue *a = &g->values[n->inputs[0]];
  if (a->rank != 2 || a->dims[0] != 1 || a->dims[1] != b->dims[0]) return NULL;
  int64_t K = b->dims[0], N = b->dims[1];
  if (K % parts || K / parts < 16 || K * N * (int64_t)sizeof(float) < SPLIT_MIN_BYTES) return NULL;
  return b;
}

static void split(Graph *g, GraphNodeBuf *buf, const GraphNode *n, const GraphTensor *b, int parts) {
  int64_t K = b->dims[0], N = b->dims[1], kp = K / parts;
  DType dt = b->dtype;
  const char *name = n->name;
  ValueId a = n->inputs[0], y = n->outputs[0];
  bool bias = n->op == GRAPH_OP_GEMM && n->ninputs > 2 && n->inputs[2] >= 0;

  GraphTensor *bp = graph_tensor_new(g->arena, dt, 3, (int64_t[]){parts, kp, N});
  memcpy(bp->data, b->data, sizeof(float) * (size_t)(K * N));
  ValueId bv = graph_add_constant_derived(g, g->values[n->inputs[1]].name, "parts", bp);

  ValueId ashape = graph_add_i64s_derived(g, name, "a_shape", (int64_t[]){parts, 1, kp}, 3);
  ValueId ap = graph_add_value_derived(g, g->values[a].name, "parts");
  graph_set_type(g, ap, dt, 3, (int64_t[]){parts, 1, kp});
  graph_nodebuf_add(g, buf, GRAPH_OP_RESHAPE, arena_printf(g->arena, "%s_a_parts", name), (ValueId[]){a, ashape}, 2,
                    &ap, 1);

  ValueId partial = graph_add_value_derived(g, g->values[y].name, "partial");
  graph_set_type(g, partial, dt, 3, (int64_t[]){parts, 1, N});
  graph_nodebuf_add(g, buf, GRAPH_OP_MATMUL, arena_printf(g->arena, "%s_parts", name), (ValueId[]){ap, bv}, 2,
                    &partial, 1);

  ValueId axes = graph_add_i64s_derived(g, name, "axes", (int64_t[]){0}, 1);
  ValueId sum = bias ? graph_add_value_derived(g, g->values[y].name, "sum") : y;
  graph_set_type(g, sum, dt, 2, (int64_t[]){1, N});
  GraphNode *r = graph_nodebuf_add(g, buf, GRAPH_OP_REDUCE_SUM, arena_printf(g->arena, "%s_sum", name),
                                   (ValueId[]){partial, axes}, 2, &sum, 1);
  graph_node_set_attr(g, r, graph_attr_make_int(g, "keepdims", 0));
  if (bias)
    graph_nodebuf_add(g, buf, GRAPH_OP_ADD, arena_printf(g->arena, "%s_bias", name), (ValueId[]){sum, n->inputs[2]},
                      2, &y, 1);
}

loom_status graph_pass_split_gemv(Graph *g, int parts, LoomError *err) {
  if (parts < 2) return LOOM_OK;
  GraphNodeBuf buf = {0};
  bool any = false;
  for (int i = 0; i < g->nnodes; i++) {
    const GraphNode *n = &g->nodes[i];
    const GraphTensor *b = splittable(g, n, parts);
    if (!b) {
      graph_nodebuf_push(g, &buf, n);
      continue;
    }
    GraphNode copy = *n; /* split adds values: keep no pointer into the graph's arrays across it */
    split(g, &buf, &copy, b, parts);
    any = true;
  }
  graph_nodebuf_commit(g, &buf);
  if (!any) return LOOM_OK;
  loom_status st = graph_pass_infer(g, err);
  return st ? st : graph_verify(g, err);
}
