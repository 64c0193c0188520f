/* A tiny reference evaluator for graph tests, in double precision, for the
 * ops the optimization passes rewrite: Conv (NCHW, any group), ConvNCHWc,
 * LayoutTransform, broadcast Add/Sub/Mul/Div/Max/Min, Relu, Clip, Sigmoid,
 * BatchNormalization, MaxPool/AveragePool (and their NCHWc forms), Pad,
 * GlobalAverage/MaxPool, Flatten, Concat,
 * ReduceMean/ReduceMax (constant axes, keepdims), MatMul / Gemm with a 2-D
 * B and MatMulPacked. Written from the
 * ONNX specification (and infer_nchwc.c for Loom's own ops), independent of
 * the passes under test. Types come from inference. */
#ifndef LOOM_TESTS_GRAPH_REF_EVAL_H
#define LOOM_TESTS_GRAPH_REF_EVAL_H

#include "graph/graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline int64_t ref_numel(const Graph *g, ValueId v) { return graph_shape_numel(g->values[v].rank, g->values[v].dims); }

static inline int ref_layout_block(const char *s) { return s[4] ? atoi(s + 4) : 0; }

/* NCHW offset of (n, c, h, w) in a tensor of NCHW dims d or, when block b >
 * 0, in its blocked form with dims [N, C/b, H, W, b]. */
static inline int64_t ref_off(const int64_t *d, int b, int64_t n, int64_t c, int64_t h, int64_t w) {
  if (!b) return ((n * d[1] + c) * d[2] + h) * d[3] + w;
  return (((n * d[1] + c / b) * d[2] + h) * d[3] + w) * b + c % b;
}

static inline void ref_binary(const Graph *g, const GraphNode *n, double **val) {
  const GraphValue *o = &g->values[n->outputs[0]];
  int64_t count = ref_numel(g, n->outputs[0]);
  int64_t idx[16] = {0};
  for (int64_t k = 0; k < count; k++) {
    double acc = 0;
    for (int q = 0; q < n->ninputs; q++) {
      const GraphValue *in = &g->values[n->inputs[q]];
      int64_t off = 0;
      for (int d = 0; d < in->rank; d++) {
        int od = d + o->rank - in->rank;
        off = off * in->dims[d] + (in->dims[d] == 1 ? 0 : idx[od]);
      }
      double x = val[n->inputs[q]][off];
      if (q == 0) { acc = x; continue; }
      switch (n->op) {
      case GRAPH_OP_ADD: case GRAPH_OP_SUM: acc += x; break;
      case GRAPH_OP_SUB: acc -= x; break;
      case GRAPH_OP_MUL: acc *= x; break;
      case GRAPH_OP_DIV: acc /= x; break;
      case GRAPH_OP_MAX: acc = acc > x ? acc : x; break;
      case GRAPH_OP_MIN: acc = acc < x ? acc : x; break;
      case GRAPH_OP_PRELU: acc = acc < 0 ? acc * x : acc; break;
      default: fail_msg("ref_binary: op %s", graph_op_info(n->op)->name);
      }
    }
    val[n->outputs[0]][k] = acc;
    for (int d = o->rank - 1; d >= 0; d--) {
      if (++idx[d] < o->dims[d]) break;
      idx[d] = 0;
    }
  }
}

/* A ConvNCHWc with winograd_tile 2 (graph_pass_winograd): its weight U
 * [4, 4, K/k, C/c, c, k] is the transformed kernel; per 2x2 output tile,
 * Y = A^T (sum over channels of U .* B^T d B) A with the matrices of
 * F(2x2, 3x3) written out. */
static inline void ref_conv_winograd(const Graph *g, const GraphNode *n, double **val) {
  static const double BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  static const double AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
  const GraphValue *xv = &g->values[n->inputs[0]], *yv = &g->values[n->outputs[0]], *wv = &g->values[n->inputs[1]];
  int xb = (int)xv->dims[4], yb = (int)yv->dims[4];
  int64_t xd[4] = {xv->dims[0], xv->dims[1], xv->dims[2], xv->dims[3]};
  int64_t yd[4] = {yv->dims[0], yv->dims[1], yv->dims[2], yv->dims[3]};
  int64_t C = xd[1] * xb, K = yd[1] * yb, wc = wv->dims[4], wk = wv->dims[5];
  const GraphAttr *pd = graph_node_attr(n, "pads");
  int64_t pt = pd ? pd->ints[0] : 0, pl = pd ? pd->ints[1] : 0;
  const double *x = val[n->inputs[0]], *u = val[n->inputs[1]];
  for (int64_t b = 0; b < yd[0]; b++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t th = 0; 2 * th < yd[2]; th++)
        for (int64_t tw = 0; 2 * tw < yd[3]; tw++) {
          double m[4][4] = {{0}};
          for (int64_t c = 0; c < C; c++) {
            double d[4][4], t[4][4];
            for (int i = 0; i < 4; i++)
              for (int j = 0; j < 4; j++) {
                int64_t ih = 2 * th - pt + i, iw = 2 * tw - pl + j;
                d[i][j] = ih < 0 || iw < 0 || ih >= xd[2] || iw >= xd[3] ? 0 : x[ref_off(xd, xb, b, c, ih, iw)];
              }
            for (int i = 0; i < 4; i++)
              for (int j = 0; j < 4; j++) {
                t[i][j] = 0;
                for (int q = 0; q < 4; q++) t[i][j] += BT[i][q] * d[q][j];
              }
            for (int i = 0; i < 4; i++)
              for (int j = 0; j < 4; j++) {
                double v = 0;
                for (int q = 0; q < 4; q++) v += t[i][q] * BT[j][q];
                m[i][j] += v * u[((((i * 4 + j) * wv->dims[2] + k / wk) * wv->dims[3] + c / wc) * wc + c % wc) * wk + k % wk];
              }
          }
          for (int a = 0; a < 2; a++)
            for (int e = 0; e < 2; e++) {
              if (2 * th + a >= yd[2] || 2 * tw + e >= yd[3]) continue;
              double y = 0;
              for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) y += AT[a][i] * m[i][j] * AT[e][j];
              val[n->outputs[0]][ref_off(yd, yb, b, k, 2 * th + a, 2 * tw + e)] = y;
            }
        }
}

static inline void ref_conv(const Graph *g, const GraphNode *n, double **val, bool blocked) {
  if (blocked && graph_attr_int(n, "winograd_tile", 0) == 2) {
    ref_conv_winograd(g, n, val);
    return;
  }
  const GraphValue *xv = &g->values[n->inputs[0]], *yv = &g->values[n->outputs[0]], *wv = &g->values[n->inputs[1]];
  int xb = blocked ? (int)xv->dims[4] : 0, yb = blocked ? (int)yv->dims[4] : 0;
  int64_t xd[4] = {xv->dims[0], xv->dims[1], xv->dims[2], xv->dims[3]};
  int64_t yd[4] = {yv->dims[0], yv->dims[1], yv->dims[2], yv->dims[3]};
  int64_t C = blocked ? xd[1] * xb : xd[1], K = blocked ? yd[1] * yb : yd[1];
  int64_t R = wv->dims[2], S = wv->dims[3];
  int64_t group = graph_attr_int(n, "group", 1);
  int64_t cpg = C / group, kpg = K / group;
  const GraphAttr *st = graph_node_attr(n, "strides"), *pd = graph_node_attr(n, "pads"), *dl = graph_node_attr(n, "dilations");
  int64_t sh = st ? st->ints[0] : 1, sw = st ? st->ints[1] : 1, pt = pd ? pd->ints[0] : 0, pl = pd ? pd->ints[1] : 0;
  int64_t dh = dl ? dl->ints[0] : 1, dw = dl ? dl->ints[1] : 1;
  const double *x = val[n->inputs[0]], *w = val[n->inputs[1]];
  const double *bias = !blocked && n->ninputs > 2 && n->inputs[2] >= 0 ? val[n->inputs[2]] : NULL;
  int64_t wc = blocked ? wv->dims[4] : 0, wk = blocked ? wv->dims[5] : 0;
  for (int64_t b = 0; b < yd[0]; b++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t oh = 0; oh < (blocked ? yd[2] : yd[2]); oh++)
        for (int64_t ow = 0; ow < yd[3]; ow++) {
          double acc = bias ? bias[k] : 0;
          int64_t gi = k / kpg;
          for (int64_t cl = 0; cl < cpg; cl++) {
            int64_t ch = gi * cpg + cl;
            for (int64_t r = 0; r < R; r++)
              for (int64_t s = 0; s < S; s++) {
                int64_t ih = oh * sh - pt + r * dh, iw = ow * sw - pl + s * dw;
                if (ih < 0 || iw < 0 || ih >= xd[2] || iw >= xd[3]) continue;
                double wvv;
                if (!blocked) {
                  wvv = w[((k * cpg + cl) * R + r) * S + s];
                } else if (group == 1 || wv->dims[1] != 1 || wv->dims[4] != 1) { /* not depthwise: cl within the group */
                  wvv = w[(((((k / wk) * wv->dims[1] + cl / wc) * R + r) * S + s) * wc + cl % wc) * wk + k % wk];
                } else {
                  wvv = w[((((k / wk) * R + r) * S + s)) * wk + k % wk];
                }
                acc += x[ref_off(xd, xb, b, ch, ih, iw)] * wvv;
              }
          }
          val[n->outputs[0]][ref_off(yd, yb, b, k, oh, ow)] = acc;
        }
}

static inline void ref_layout(const Graph *g, const GraphNode *n, double **val) {
  int sb = ref_layout_block(graph_attr_string(n, "src_layout", "NCHW"));
  int db = ref_layout_block(graph_attr_string(n, "dst_layout", "NCHW"));
  const GraphValue *xv = &g->values[n->inputs[0]], *yv = &g->values[n->outputs[0]];
  int64_t xd[4] = {xv->dims[0], xv->dims[1], xv->dims[2], xv->dims[3]};
  int64_t yd[4] = {yv->dims[0], yv->dims[1], yv->dims[2], yv->dims[3]};
  int64_t C = sb ? xd[1] * sb : xd[1];
  for (int64_t b = 0; b < xd[0]; b++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t h = 0; h < xd[2]; h++)
        for (int64_t w = 0; w < xd[3]; w++)
          val[n->outputs[0]][ref_off(yd, db, b, c, h, w)] = val[n->inputs[0]][ref_off(xd, sb, b, c, h, w)];
}

/* Concat along `axis` and ReduceMean/ReduceMax over constant axes (keepdims). */
static inline void ref_concat(const Graph *g, const GraphNode *n, double **val) {
  const GraphValue *o = &g->values[n->outputs[0]];
  int axis = (int)graph_attr_int(n, "axis", 0);
  if (axis < 0) axis += o->rank;
  int64_t outer = graph_shape_numel(axis, o->dims), inner = graph_shape_numel(o->rank - axis - 1, o->dims + axis + 1);
  int64_t at = 0;
  for (int q = 0; q < n->ninputs; q++) {
    int64_t ext = g->values[n->inputs[q]].dims[axis];
    for (int64_t i = 0; i < outer; i++)
      for (int64_t j = 0; j < ext * inner; j++)
        val[n->outputs[0]][(i * o->dims[axis] + at) * inner + j] = val[n->inputs[q]][i * ext * inner + j];
    at += ext;
  }
}

static inline void ref_reduce(const Graph *g, const GraphNode *n, double **val) {
  const GraphValue *x = &g->values[n->inputs[0]];
  const GraphTensor *axes = graph_value_constant(g, n->inputs[1]);
  bool red[16] = {0};
  for (int64_t k = 0; k < graph_tensor_numel(axes); k++) red[graph_tensor_get_i64(axes, k)] = true;
  int64_t count = ref_numel(g, n->inputs[0]), idx[16] = {0};
  int64_t ocount = ref_numel(g, n->outputs[0]);
  double *o = val[n->outputs[0]];
  int64_t *hits = calloc((size_t)ocount, sizeof(int64_t));
  for (int64_t k = 0; k < count; k++) {
    int64_t off = 0;
    for (int d = 0; d < x->rank; d++) off = off * (red[d] ? 1 : x->dims[d]) + (red[d] ? 0 : idx[d]);
    double v = val[n->inputs[0]][k];
    if (n->op == GRAPH_OP_REDUCE_MAX) o[off] = hits[off] ? fmax(o[off], v) : v;
    else o[off] += v;
    hits[off]++;
    for (int d = x->rank - 1; d >= 0; d--) {
      if (++idx[d] < x->dims[d]) break;
      idx[d] = 0;
    }
  }
  if (n->op == GRAPH_OP_REDUCE_MEAN)
    for (int64_t k = 0; k < ocount; k++) o[k] /= (double)hits[k];
  free(hits);
}

/* MaxPool / AveragePool (2-D, explicit pads, dilations, count_include_pad;
 * ceil_mode through the inferred output extents) and their blocked forms. */
static inline void ref_pool(const Graph *g, const GraphNode *n, double **val, bool blocked) {
  const GraphValue *xv = &g->values[n->inputs[0]], *yv = &g->values[n->outputs[0]];
  bool is_max = n->op == GRAPH_OP_MAX_POOL || n->op == GRAPH_OP_MAX_POOL_NCHWC;
  int b = blocked ? (int)xv->dims[4] : 0;
  int64_t xd[4] = {xv->dims[0], xv->dims[1], xv->dims[2], xv->dims[3]};
  int64_t yd[4] = {yv->dims[0], yv->dims[1], yv->dims[2], yv->dims[3]};
  int64_t C = blocked ? xd[1] * b : xd[1];
  const GraphAttr *ks = graph_node_attr(n, "kernel_shape"), *st = graph_node_attr(n, "strides"),
                  *pd = graph_node_attr(n, "pads"), *dl = graph_node_attr(n, "dilations");
  int64_t sh = st ? st->ints[0] : 1, sw = st ? st->ints[1] : 1, pt = pd ? pd->ints[0] : 0, pl = pd ? pd->ints[1] : 0;
  int64_t pb = pd ? pd->ints[2] : 0, pr = pd ? pd->ints[3] : 0, dh = dl ? dl->ints[0] : 1, dw = dl ? dl->ints[1] : 1;
  bool include_pad = graph_attr_int(n, "count_include_pad", 0) != 0;
  const double *x = val[n->inputs[0]];
  for (int64_t bn = 0; bn < xd[0]; bn++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t oh = 0; oh < yd[2]; oh++)
        for (int64_t ow = 0; ow < yd[3]; ow++) {
          double acc = is_max ? -INFINITY : 0;
          int64_t cnt = 0;
          for (int64_t r = 0; r < ks->ints[0]; r++)
            for (int64_t s = 0; s < ks->ints[1]; s++) {
              int64_t ih = oh * sh - pt + r * dh, iw = ow * sw - pl + s * dw;
              if (ih < 0 || iw < 0 || ih >= xd[2] || iw >= xd[3]) continue;
              double v = x[ref_off(xd, b, bn, c, ih, iw)];
              acc = is_max ? fmax(acc, v) : acc + v;
              cnt++;
            }
          if (!is_max) {
            if (include_pad) {
              int64_t hs = oh * sh - pt, ws = ow * sw - pl, he = hs + ks->ints[0], we = ws + ks->ints[1];
              if (he > xd[2] + pb) he = xd[2] + pb;
              if (we > xd[3] + pr) we = xd[3] + pr;
              cnt = (he - hs) * (we - ws);
            }
            acc /= (double)cnt;
          }
          val[n->outputs[0]][ref_off(yd, b, bn, c, oh, ow)] = acc;
        }
}

/* Pad, constant mode, any rank: pads input 1 (begins then ends), value
 * input 2 (default 0). */
static inline void ref_pad(const Graph *g, const GraphNode *n, double **val) {
  const GraphValue *xv = &g->values[n->inputs[0]], *yv = &g->values[n->outputs[0]];
  const GraphTensor *pads = graph_value_constant(g, n->inputs[1]);
  double fill = n->ninputs > 2 && n->inputs[2] >= 0 ? val[n->inputs[2]][0] : 0;
  int r = yv->rank;
  int64_t count = ref_numel(g, n->outputs[0]), idx[16] = {0};
  for (int64_t k = 0; k < count; k++) {
    int64_t off = 0;
    bool inside = true;
    for (int d = 0; d < r; d++) {
      int64_t i = idx[d] - graph_tensor_get_i64(pads, d);
      if (i < 0 || i >= xv->dims[d]) inside = false;
      off = off * xv->dims[d] + i;
    }
    val[n->outputs[0]][k] = inside ? val[n->inputs[0]][off] : fill;
    for (int d = r - 1; d >= 0; d--) {
      if (++idx[d] < yv->dims[d]) break;
      idx[d] = 0;
    }
  }
}

/* MatMul with a 2-D B [K, N] (A's leading dims are rows sharing it), Gemm
 * without transposes or scaling (bias C broadcast), and MatMulPacked
 * (Bp[j / w, k, j % w], infer_matmul_packed.c). */
static inline void ref_matmul(const Graph *g, const GraphNode *n, double **val) {
  const GraphValue *av = &g->values[n->inputs[0]], *bv = &g->values[n->inputs[1]];
  int64_t K = av->dims[av->rank - 1], rows = ref_numel(g, n->inputs[0]) / K;
  bool packed = n->op == GRAPH_OP_MATMUL_PACKED;
  int64_t N = packed ? graph_attr_int(n, "n", 0) : bv->dims[1], w = packed ? bv->dims[2] : 0;
  const double *a = val[n->inputs[0]], *b = val[n->inputs[1]];
  bool bias = n->op == GRAPH_OP_GEMM && n->ninputs > 2 && n->inputs[2] >= 0;
  int64_t nc = bias ? ref_numel(g, n->inputs[2]) : 0;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < N; j++) {
      double acc = 0;
      for (int64_t k = 0; k < K; k++)
        acc += a[i * K + k] * (packed ? b[((j / w) * K + k) * w + j % w] : b[k * N + j]);
      if (bias) acc += val[n->inputs[2]][nc == rows * N ? i * N + j : nc == N ? j : nc == rows ? i : 0];
      val[n->outputs[0]][i * N + j] = acc;
    }
}

static inline void ref_node(const Graph *g, const GraphNode *n, double **val) {
  ValueId y = n->outputs[0];
  int64_t count = ref_numel(g, y);
  const double *x = val[n->inputs[0]];
  double *o = val[y];
  const GraphValue *xv = &g->values[n->inputs[0]];
  switch (n->op) {
  case GRAPH_OP_CONV: ref_conv(g, n, val, false); return;
  case GRAPH_OP_CONV_NCHWC: ref_conv(g, n, val, true); return;
  case GRAPH_OP_LAYOUT_TRANSFORM: ref_layout(g, n, val); return;
  case GRAPH_OP_CONCAT: ref_concat(g, n, val); return;
  case GRAPH_OP_MATMUL: case GRAPH_OP_GEMM: case GRAPH_OP_MATMUL_PACKED: ref_matmul(g, n, val); return;
  case GRAPH_OP_REDUCE_MEAN: case GRAPH_OP_REDUCE_MAX: ref_reduce(g, n, val); return;
  case GRAPH_OP_GLOBAL_MAX_POOL: {
    int64_t inner = ref_numel(g, n->inputs[0]) / count;
    for (int64_t k = 0; k < count; k++) {
      double m = x[k * inner];
      for (int64_t j = 1; j < inner; j++) m = fmax(m, x[k * inner + j]);
      o[k] = m;
    }
    return;
  }
  case GRAPH_OP_RELU: for (int64_t k = 0; k < count; k++) o[k] = x[k] > 0 ? x[k] : 0; return;
  case GRAPH_OP_SIGMOID: for (int64_t k = 0; k < count; k++) o[k] = 1 / (1 + exp(-x[k])); return;
  case GRAPH_OP_IDENTITY: case GRAPH_OP_FLATTEN: case GRAPH_OP_RESHAPE: memcpy(o, x, sizeof(double) * (size_t)count); return;
  case GRAPH_OP_CLIP: {
    double lo = n->ninputs > 1 && n->inputs[1] >= 0 ? val[n->inputs[1]][0] : -INFINITY;
    double hi = n->ninputs > 2 && n->inputs[2] >= 0 ? val[n->inputs[2]][0] : INFINITY;
    for (int64_t k = 0; k < count; k++) o[k] = x[k] < lo ? lo : x[k] > hi ? hi : x[k];
    return;
  }
  case GRAPH_OP_BATCH_NORM: {
    int64_t C = xv->dims[1], inner = count / xv->dims[0] / C;
    double eps = graph_attr_float(n, "epsilon", 1e-5);
    for (int64_t k = 0; k < count; k++) {
      int64_t c = k / inner % C;
      double s = val[n->inputs[1]][c], b = val[n->inputs[2]][c], m = val[n->inputs[3]][c], v = val[n->inputs[4]][c];
      o[k] = (x[k] - m) / sqrt(v + eps) * s + b;
    }
    return;
  }
  case GRAPH_OP_GLOBAL_AVERAGE_POOL: {
    int64_t inner = ref_numel(g, n->inputs[0]) / count;
    for (int64_t k = 0; k < count; k++) {
      double acc = 0;
      for (int64_t j = 0; j < inner; j++) acc += x[k * inner + j];
      o[k] = acc / (double)inner;
    }
    return;
  }
  case GRAPH_OP_PAD: ref_pad(g, n, val); return;
  case GRAPH_OP_MAX_POOL: case GRAPH_OP_AVERAGE_POOL: ref_pool(g, n, val, false); return;
  case GRAPH_OP_MAX_POOL_NCHWC: case GRAPH_OP_AVERAGE_POOL_NCHWC: ref_pool(g, n, val, true); return;
  default: ref_binary(g, n, val); return;
  }
}

/* Evaluates a node the evaluator does not know (an External node in the
 * BYOC tests): true when it did. */
typedef bool (*RefNodeHook)(const Graph *g, const GraphNode *n, double **val, void *user);

/* Evaluates g; inputs[k] holds graph input k; hook (may be NULL) is asked
 * first for every node. Returns one malloc'ed array per value (NULL where
 * never computed); free with ref_free. */
static inline double **ref_eval_ex(const Graph *g, double *const *inputs, RefNodeHook hook, void *user) {
  double **val = calloc((size_t)g->nvalues, sizeof(double *));
  for (int v = 0; v < g->nvalues; v++) {
    const GraphTensor *t = g->values[v].constant;
    if (!t) continue;
    int64_t n = graph_tensor_numel(t);
    val[v] = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t k = 0; k < n; k++) val[v][k] = graph_tensor_get_f64(t, k);
  }
  for (int k = 0; k < g->ninputs; k++) {
    int64_t n = ref_numel(g, g->inputs[k]);
    val[g->inputs[k]] = malloc(sizeof(double) * (size_t)n);
    memcpy(val[g->inputs[k]], inputs[k], sizeof(double) * (size_t)n);
  }
  for (int i = 0; i < g->nnodes; i++) {
    const GraphNode *n = &g->nodes[i];
    for (int k = 0; k < n->noutputs; k++) {
      if (n->outputs[k] < 0) continue;
      int64_t count = ref_numel(g, n->outputs[k]);
      assert_true(count >= 0);
      free(val[n->outputs[k]]);
      val[n->outputs[k]] = calloc((size_t)(count ? count : 1), sizeof(double));
    }
    if (!hook || !hook(g, n, val, user)) ref_node(g, n, val);
  }
  return val;
}

static inline double **ref_eval(const Graph *g, double *const *inputs) { return ref_eval_ex(g, inputs, NULL, NULL); }

static inline void ref_free(const Graph *g, double **val) {
  for (int v = 0; v < g->nvalues; v++) free(val[v]);
  free(val);
}

/* Max relative error |a - b| / max(1, |b|) over n elements. */
static inline double ref_max_rel_err(const double *a, const double *b, int64_t n) {
  double m = 0;
  for (int64_t k = 0; k < n; k++) {
    double d = fabs(a[k] - b[k]) / fmax(1.0, fabs(b[k]));
    if (d > m) m = d;
  }
  return m;
}

/* Copies of the graph outputs' values (outs[k] for output k). */
static inline double **ref_eval_outputs_ex(const Graph *g, double *const *inputs, RefNodeHook hook, void *user) {
  double **val = ref_eval_ex(g, inputs, hook, user);
  double **outs = calloc((size_t)g->noutputs + 1, sizeof(double *));
  for (int k = 0; k < g->noutputs; k++) {
    int64_t n = ref_numel(g, g->outputs[k]);
    outs[k] = malloc(sizeof(double) * (size_t)(n ? n : 1));
    memcpy(outs[k], val[g->outputs[k]], sizeof(double) * (size_t)n);
  }
  ref_free(g, val);
  return outs;
}

static inline double **ref_eval_outputs(const Graph *g, double *const *inputs) {
  return ref_eval_outputs_ex(g, inputs, NULL, NULL);
}

/* Max relative error between the outputs of g now and `before`; frees before. */
static inline double ref_compare_outputs(const Graph *g, double *const *inputs, double **before) {
  double **after = ref_eval_outputs(g, inputs);
  double m = 0;
  for (int k = 0; k < g->noutputs; k++) {
    double e = ref_max_rel_err(after[k], before[k], ref_numel(g, g->outputs[k]));
    if (e > m) m = e;
    free(after[k]);
    free(before[k]);
  }
  free(after);
  free(before);
  return m;
}

#endif
