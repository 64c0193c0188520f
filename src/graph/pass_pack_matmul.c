/* graph_pass_pack_matmul: a product with a constant weight matrix B [K, N]
 * reads, for each column tile of the register-blocked schedule, a K x NR
 * strip of B whose rows are N floats apart. The matmul schedule used to
 * copy that strip into a contiguous panel on every call (a cache_read under
 * the column-tile loop), about 10% of each of BERT-base's big products.
 * ONNX Runtime (MLAS) and oneDNN pack constant B once when the session is
 * created; this pass does the same at compile time:
 *
 *   Y = MatMul(A, B)      ->  Y = MatMulPacked(A, Bp) {n = N}
 *   Y = Gemm(A, B, C)     ->  T = MatMulPacked(A, Bp) {n = N};  Y = Add(T, C)
 *
 *   Bp [P, K, b],  Bp[p, k, c] = B[k, p * b + c]  (0 past column N)
 *
 * P = ceil(N / b) (a GEMV's rounded up to an even count), so the column
 * tile's NR/b vectors each stream one panel with unit stride in k
 * (infer_matmul_packed.c has the op's semantics). b is the vector width
 * the schedule uses (16 floats with AVX-512). Any N is accepted: the
 * columns past N are zeros (a GEMV computes them and drops them).
 *
 * Products with two or more rows of A sharing B (batch dims of A
 * flattened: BERT's [128, 1, 768] is 128 rows) get panels one vector wide.
 * A matrix-vector product (one row: a classifier, a decode step) reads B
 * once, so it is bound by streaming B from memory: its panels are
 * `gemv_width` columns wide (topi_gemv_panel_vectors), an even number of
 * them (graph_pack_matmul_panels): the schedule's column tile streams as
 * many panels side by side as its registers hold, each sequentially from
 * its first byte to its last, and threads that take ranges of tiles each
 * stream one contiguous range of B. Unpacked,
 * a column tile reads a piece of each row of B, one row (N floats) apart
 * per k: 0.24-0.6 of OpenBLAS's sgemv on Zen 3 (issue 32). A GEMV panel
 * is no wider than N rounded up to `width`. Products with 2 to 15 rows
 * (a batch-4 classifier, a few decode tokens) used to be left alone: the
 * register tile read a piece of each row of B, N floats apart per k, and
 * 8 x 768 x 3072 ran at 0.67 of OpenBLAS with AVX2; with one-vector
 * panels the tile's rows share each contiguous panel. A's other conditions
 * are what the packed compute supports: f32, static shape, rank >= 2, no
 * transposes or scaling (canonicalize has already folded a constant
 * transB). */
#include "graph/pass_internal.h"
#include "graph/passes.h"
#include "support/alloc.h"

#include <stdlib.h>
#include <string.h>

/* B [K, N] of a product this pass may rewrite (graph_product_weight; A
 * static, Gemm's A 2-D), else NULL; *rows is A's row count (batch dims
 * flattened), which graph_pack_matmul_width judges. */
static const GraphTensor *packable(const Graph *g, const GraphNode *n, int64_t *rows_out) {
  const GraphTensor *b = graph_product_weight(g, n);
  if (!b || b->dims[0] < 1 || b->dims[1] < 1) return NULL;
  const GraphValue *a = &g->values[n->inputs[0]], *y = &g->values[n->outputs[0]];
  if (a->rank < 2 || !graph_value_is_static(a) || a->dims[a->rank - 1] != b->dims[0]) return NULL;
  if (n->op == GRAPH_OP_GEMM && a->rank != 2) return NULL;
  if (!graph_value_is_static(y) || !dtype_eq(y->dtype, DT_F32)) return NULL;
  int64_t rows = graph_shape_numel(a->rank, a->dims) / b->dims[0];
  *rows_out = rows;
  return b;
}

int64_t graph_pack_matmul_width(int64_t rows, int64_t n, int width, int gemv_width) {
  if (width < 1 || n < 1) return 0;
  if (rows > 1) return width;
  if (rows != 1 || gemv_width < 1) return 0;
  int64_t n_rounded = (n + width - 1) / width * width;
  return gemv_width < n_rounded ? gemv_width : n_rounded;
}

int64_t graph_pack_matmul_panels(int64_t rows, int64_t n, int64_t w) {
  int64_t panels = w > 0 ? (n + w - 1) / w : 0;
  return rows == 1 && panels > 1 && panels % 2 ? panels + 1 : panels;
}

void graph_pack_panels_f32(const float *src, int64_t K, int64_t N, int64_t width, int64_t panels, float *dst) {
  for (int64_t p = 0; p < panels; p++) {
    int64_t c0 = p * width, cols = N - c0 <= 0 ? 0 : N - c0 < width ? N - c0 : width;
    for (int64_t k = 0; k < K; k++, dst += width) {
      memcpy(dst, src + k * N + c0, sizeof(float) * (size_t)cols);
      if (cols < width) memset(dst + cols, 0, sizeof(float) * (size_t)(width - cols));
    }
  }
}

/* B [K, N] in `panels` panels of `width` columns, zero past column N. */
static GraphTensor *pack_panels(Graph *g, const GraphTensor *b, int64_t width, int64_t panels) {
  int64_t K = b->dims[0], N = b->dims[1];
  GraphTensor *t = graph_tensor_new(g->arena, b->dtype, 3, (int64_t[]){panels, K, width});
  graph_pack_panels_f32(b->data, K, N, width, panels, t->data);
  return t;
}

static void rewrite(Graph *g, GraphNodeBuf *buf, const GraphNode *n, ValueId bp, int64_t N) {
  const char *name = n->name;
  ValueId y = n->outputs[0];
  bool bias = n->op == GRAPH_OP_GEMM && n->ninputs > 2 && n->inputs[2] >= 0;
  ValueId prod = y;
  if (bias) {
    const GraphValue *yv = &g->values[y];
    int rank = yv->rank;
    int64_t dims[2] = {yv->dims[0], yv->dims[1]};
    prod = graph_add_value_derived(g, yv->name, "product");
    graph_set_type(g, prod, DT_F32, rank, dims);
  }
  GraphNode *m = graph_nodebuf_add(g, buf, GRAPH_OP_MATMUL_PACKED, name, (ValueId[]){n->inputs[0], bp}, 2, &prod, 1);
  graph_node_set_attr(g, m, graph_attr_make_int(g, "n", N));
  if (bias)
    graph_nodebuf_add(g, buf, GRAPH_OP_ADD, arena_printf(g->arena, "%s_bias", name), (ValueId[]){prod, n->inputs[2]}, 2,
                      &y, 1);
}

loom_status graph_pass_pack_matmul(Graph *g, int width, int gemv_width, LoomError *err) {
  if (width < 1) return LOOM_OK;
  /* One packed copy per weight and panel width, however many products read it. */
  int nvalues0 = g->nvalues;
  ValueId *packed = loom_malloc(sizeof(ValueId) * 2 * (size_t)(nvalues0 > 0 ? nvalues0 : 1));
  if (!packed) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "pack_matmul: out of memory");
  for (int v = 0; v < 2 * nvalues0; v++) packed[v] = GRAPH_NO_VALUE;
  GraphNodeBuf buf = {0};
  bool any = false;
  for (int i = 0; i < g->nnodes; i++) {
    const GraphNode *n = &g->nodes[i];
    int64_t rows = 0;
    const GraphTensor *b = packable(g, n, &rows);
    int64_t w = b ? graph_pack_matmul_width(rows, b->dims[1], width, gemv_width) : 0;
    if (w < 1) {
      graph_nodebuf_push(g, &buf, n);
      continue;
    }
    bool gemv = rows == 1;
    GraphNode copy = *n; /* rewrite adds values: keep no pointer into the graph's arrays across it */
    ValueId bv = copy.inputs[1], *slot = &packed[2 * bv + gemv];
    if (*slot == GRAPH_NO_VALUE)
      *slot = graph_add_constant_derived(g, g->values[bv].name, arena_printf(g->arena, "panels%lld", (long long)w),
                                         pack_panels(g, b, w, graph_pack_matmul_panels(rows, b->dims[1], w)));
    rewrite(g, &buf, &copy, *slot, b->dims[1]);
    any = true;
  }
  loom_free(packed);
  graph_nodebuf_commit(g, &buf);
  if (!any) return LOOM_OK;
  loom_status st = graph_pass_infer(g, err);
  return st ? st : graph_verify(g, err);
}
