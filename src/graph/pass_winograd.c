/* graph_pass_winograd: a 3x3 stride-1 ConvNCHWc with a constant kernel
 * computes by Winograd's F(2x2, 3x3) (topi_conv2d_nchwc_winograd): 16
 * multiplications per 2x2 output tile and channel pair instead of 36, for
 * the price of an input and an output transform (adds only) and of the
 * transformed input and products, 16/4 = 4x the input's and the output's
 * size, passing through memory. The kernel transform U = G g G^T is done
 * here, once, like BatchNorm folding:
 *
 *   ConvNCHWc(x, g [K/k, C/c, 3, 3, c, k])
 *     -> ConvNCHWc(x, U [4, 4, K/k, C/c, c, k]) {winograd_tile = 2}
 *
 * (infer_nchwc.c: the window is then 4 - 2 + 1 = 3). Which convs pay is
 * measured (bench_ab on ResNet-50, docs/graph.md): the product
 * reuses each element of U once per 2x2 output tile, a direct conv each
 * kernel element once per output pixel, so with few tiles U streams from
 * memory for too little work. ResNet-50: its 56x56, 28x28 and 14x14
 * outputs (784, 196 and 49 tiles) are 15-27% faster, its 7x7 ones (16
 * tiles) 10-15% slower at 1 thread: at least MIN_TILES tiles, and
 * MIN_CHANNELS input and output channels. */
#include "graph/pass_internal.h"
#include "graph/passes.h"

#include <stdlib.h>
#include <string.h>

enum { MIN_CHANNELS = 64, MIN_TILES = 40, TILE = 2 };

static bool all_ones(const GraphNode *n, const char *attr) {
  const GraphAttr *at = graph_node_attr(n, attr);
  for (int k = 0; at && k < at->n; k++)
    if (at->ints[k] != 1) return false;
  return true;
}

/* The kernel of a conv this pass rewrites, else NULL. */
static const GraphTensor *winograd_kernel(const Graph *g, const GraphNode *n) {
  if (n->op != GRAPH_OP_CONV_NCHWC || n->ninputs != 2 || graph_node_int(n, "group") != 1 ||
      graph_node_int(n, "winograd_tile") != 0 || !all_ones(n, "strides") || !all_ones(n, "dilations"))
    return NULL;
  const GraphAttr *pads = graph_node_attr(n, "pads");
  for (int k = 0; pads && k < pads->n; k++)
    if (pads->ints[k] < 0 || pads->ints[k] > 2) return NULL;
  const GraphTensor *w = graph_value_constant(g, n->inputs[1]);
  const GraphValue *x = &g->values[n->inputs[0]], *y = &g->values[n->outputs[0]];
  if (!w || !dtype_eq(w->dtype, DT_F32) || w->rank != 6 || w->dims[2] != 3 || w->dims[3] != 3) return NULL;
  if (!graph_value_is_static(x) || !graph_value_is_static(y) || x->rank != 5) return NULL;
  if (w->dims[1] * w->dims[4] < MIN_CHANNELS || w->dims[0] * w->dims[5] < MIN_CHANNELS) return NULL;
  if (y->rank != 5 || ((y->dims[2] + 1) / TILE) * ((y->dims[3] + 1) / TILE) < MIN_TILES) return NULL;
  return w;
}

/* U[:, :, ko, co, ci, ki] = G g[ko, co, :, :, ci, ki] G^T, with
 * G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]. The transform point
 * outermost: the product of one point reads its [K/k, C/c, c, k] slice as
 * one contiguous block (with the point inside, the slices' 1 KiB pieces
 * sat 16 KiB apart, on the same L1 sets, and streamed from L2: ResNet-50's
 * Winograd convs were 12-17% slower). */
static GraphTensor *transform_kernel(Graph *g, const GraphTensor *w) {
  static const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  int64_t KO = w->dims[0], CO = w->dims[1], cb = w->dims[4], kb = w->dims[5], inner = cb * kb;
  int64_t point = KO * CO * inner; /* elements per transform point */
  GraphTensor *u = graph_tensor_new(g->arena, w->dtype, 6, (int64_t[]){4, 4, KO, CO, cb, kb});
  const float *src = w->data;
  float *dst = u->data;
  for (int64_t blk = 0; blk < KO * CO; blk++) {
    const float *gk = src + blk * 9 * inner;
    float *uk = dst + blk * inner;
    for (int64_t q = 0; q < inner; q++) {
      double t[4][3]; /* G g */
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
          double acc = 0;
          for (int r = 0; r < 3; r++) acc += G[i][r] * gk[(r * 3 + j) * inner + q];
          t[i][j] = acc;
        }
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
          double acc = 0;
          for (int s = 0; s < 3; s++) acc += t[i][s] * G[j][s];
          uk[(i * 4 + j) * point + q] = (float)acc;
        }
    }
  }
  return u;
}

loom_status graph_pass_winograd(Graph *g, LoomError *err) {
  bool any = false;
  for (int i = 0; i < g->nnodes; i++) {
    GraphNode *n = &g->nodes[i];
    const GraphTensor *w = winograd_kernel(g, n);
    if (!w) continue;
    ValueId wv = n->inputs[1];
    ValueId u = graph_add_constant_derived(g, g->values[wv].name, "winograd", transform_kernel(g, w));
    n->inputs[1] = u;
    graph_node_set_attr(g, n, graph_attr_make_int(g, "winograd_tile", TILE));
    any = true;
  }
  if (!any) return LOOM_OK;
  loom_status st = graph_pass_infer(g, err);
  return st ? st : graph_verify(g, err);
}
