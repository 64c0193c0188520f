/* Rewrites that put ops into the form the kernels handle best; each is an
 * exact identity:
 *   Gemm(A, B, transB=1) with constant B  ->  Gemm(A, B^T) with B^T folded
 *       (the matmul schedule packs B's rows; a transposed B would be read
 *        with a stride of K floats per vector lane)
 *   Pow(x, 2)   -> Mul(x, x)       (no powf per element in LayerNorm)
 *   Pow(x, 0.5) -> Sqrt(x)
 */
#include "graph/passes.h"

#include <string.h>

static GraphAttr *find_attr(GraphNode *n, const char *name) {
  for (int i = 0; i < n->nattrs; i++)
    if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
  return NULL;
}

static void transpose_gemm_weight(Graph *g, int node) {
  GraphNode *n = &g->nodes[node];
  GraphAttr *tb = find_attr(n, "transB");
  if (!tb || tb->kind != GRAPH_ATTR_INT || tb->i == 0 || n->ninputs < 2) return;
  const GraphTensor *b = graph_value_constant(g, n->inputs[1]);
  if (!b || b->rank != 2 || b->dtype.code != DT_FLOAT || b->dtype.bits != 32) return;
  int64_t rows = b->dims[0], cols = b->dims[1];
  int64_t dims[2] = {cols, rows};
  GraphTensor *t = graph_tensor_new(g->arena, b->dtype, 2, dims);
  const float *src = b->data;
  float *dst = t->data;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) dst[c * rows + r] = src[r * cols + c];
  const char *name = arena_printf(g->arena, "%s_transposed", g->values[n->inputs[1]].name);
  ValueId v = graph_add_constant(g, name, t);
  n = &g->nodes[node]; /* adding a value may move nothing in nodes, but be safe */
  n->inputs[1] = v;
  tb->i = 0;
}

static void simplify_pow(Graph *g, GraphNode *n) {
  if (n->ninputs != 2) return;
  const GraphTensor *e = graph_value_constant(g, n->inputs[1]);
  if (!e || graph_tensor_numel(e) != 1 || !dtype_is_float(g->values[n->inputs[0]].dtype)) return;
  /* The exponent must not broadcast the result to a larger rank. */
  if (e->rank > g->values[n->inputs[0]].rank) return;
  double p = graph_tensor_get_f64(e, 0);
  if (p == 2.0) {
    n->op = GRAPH_OP_MUL;
    n->inputs[1] = n->inputs[0];
  } else if (p == 0.5) {
    n->op = GRAPH_OP_SQRT;
    n->ninputs = 1;
  }
}

loom_status graph_pass_canonicalize(Graph *g, LoomError *err) {
  int nnodes = g->nnodes;
  for (int i = 0; i < nnodes; i++) {
    if (g->nodes[i].op == GRAPH_OP_GEMM) transpose_gemm_weight(g, i);
    else if (g->nodes[i].op == GRAPH_OP_POW) simplify_pow(g, &g->nodes[i]);
  }
  return graph_pass_infer(g, err);
}
