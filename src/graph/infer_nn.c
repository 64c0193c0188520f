/* Inference for the neural-network ops: convolution, pooling, matrix
 * products, reductions and normalization. Formulas follow the ONNX
 * operator specification. */
#include "graph/infer_internal.h"

#include <string.h>

static GraphAttr ints_attr(Graph *g, const char *name, const int64_t *v, int count) {
  GraphAttr a = {0};
  a.name = arena_strdup(g->arena, name);
  a.kind = GRAPH_ATTR_INTS;
  a.ints = ARENA_ARRAY(g->arena, int64_t, count);
  if (count) memcpy(a.ints, v, sizeof(int64_t) * (size_t)count);
  a.n = count;
  return a;
}

static GraphAttr string_attr(Graph *g, const char *name, const char *v) {
  GraphAttr a = {0};
  a.name = arena_strdup(g->arena, name);
  a.kind = GRAPH_ATTR_STRING;
  a.s = arena_strdup(g->arena, v);
  return a;
}

/* Output extents of a sliding window (Conv, MaxPool, AveragePool) over the
 * spatial dims of x. Resolves auto_pad into explicit pads on the node and
 * fills in strides/dilations/pads defaults, so later passes read one form. */
static loom_status window_out(Graph *g, GraphNode *n, LoomError *err, const GraphValue *x, const int64_t *kernel,
                              int nsp, bool ceil_mode, int64_t *out) {
  int cnt;
  int64_t strides[INFER_MAX_RANK], dil[INFER_MAX_RANK], pads[2 * INFER_MAX_RANK];
  const int64_t *p = infer_attr_ints(n, "strides", &cnt);
  if (p && cnt != nsp) return infer_fail(g, n, err, "strides has %d entries, expected %d", cnt, nsp);
  for (int k = 0; k < nsp; k++) strides[k] = p ? p[k] : 1;
  p = infer_attr_ints(n, "dilations", &cnt);
  if (p && cnt != nsp) return infer_fail(g, n, err, "dilations has %d entries, expected %d", cnt, nsp);
  for (int k = 0; k < nsp; k++) dil[k] = p ? p[k] : 1;
  p = infer_attr_ints(n, "pads", &cnt);
  if (p && cnt != 2 * nsp) return infer_fail(g, n, err, "pads has %d entries, expected %d", cnt, 2 * nsp);
  for (int k = 0; k < 2 * nsp; k++) pads[k] = p ? p[k] : 0;
  for (int k = 0; k < nsp; k++) {
    /* Bounding every operand to 2^31 keeps the formulas below in range. */
    const int64_t big = (int64_t)1 << 31;
    if (strides[k] > big || dil[k] > big || kernel[k] > big || pads[k] > big || pads[k + nsp] > big || x->dims[2 + k] > big)
      return infer_fail(g, n, err, "window parameters or extents above 2^31 are not supported (dimension %d)", k);
    if (strides[k] < 1 || dil[k] < 1 || kernel[k] < 1)
      return infer_fail(g, n, err, "strides, dilations and kernel extents must be positive (dimension %d)", k);
    if (pads[k] < 0 || pads[k + nsp] < 0) return infer_fail(g, n, err, "negative pads are not supported");
  }
  const char *auto_pad = graph_node_string(n, "auto_pad");
  bool same = !strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER");
  bool valid = !strcmp(auto_pad, "VALID");
  if (!same && !valid && strcmp(auto_pad, "NOTSET"))
    return infer_fail(g, n, err, "auto_pad \"%s\" is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", auto_pad);
  bool all_known = true;
  for (int k = 0; k < nsp; k++) {
    int64_t in = x->dims[2 + k], window = (kernel[k] - 1) * dil[k] + 1;
    if (in < 0) {
      out[k] = -1;
      all_known = false;
      continue;
    }
    if (same) {
      int64_t o = (in + strides[k] - 1) / strides[k];
      int64_t total = (o - 1) * strides[k] + window - in;
      if (total < 0) total = 0;
      int64_t small = total / 2, big = total - small;
      bool upper = !strcmp(auto_pad, "SAME_UPPER");
      pads[k] = upper ? small : big;
      pads[k + nsp] = upper ? big : small;
    } else if (valid) {
      pads[k] = pads[k + nsp] = 0;
    }
    int64_t span = in + pads[k] + pads[k + nsp] - window;
    if (span < 0) return infer_fail(g, n, err, "window of %lld exceeds padded input extent %lld in spatial dimension %d",
                                    (long long)window, (long long)(in + pads[k] + pads[k + nsp]), k);
    int64_t o = ceil_mode ? (span + strides[k] - 1) / strides[k] + 1 : span / strides[k] + 1;
    /* The last window must start inside the input or left padding. */
    if (ceil_mode && (o - 1) * strides[k] >= in + pads[k]) o--;
    out[k] = o;
  }
  if (all_known && (same || valid)) {
    graph_node_set_attr(g, n, ints_attr(g, "pads", pads, 2 * nsp));
    graph_node_set_attr(g, n, string_attr(g, "auto_pad", "NOTSET"));
  }
  return LOOM_OK;
}

loom_status infer_conv(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected inputs X and W, got %d inputs", n->ninputs);
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0), *w = infer_input(g, n, 1);
  if (x->rank < 3 || x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "input \"%s\" has rank %d, expected at least 3 (N, C, spatial...)", x->name, x->rank);
  if (w->rank != x->rank) return infer_fail(g, n, err, "weight \"%s\" has rank %d, expected %d", w->name, w->rank, x->rank);
  int nsp = x->rank - 2;
  int64_t group = graph_node_int(n, "group");
  if (group < 1) return infer_fail(g, n, err, "group must be positive, got %lld", (long long)group);
  int64_t in_ch;
  if (!infer_mul(w->dims[1], group, &in_ch)) return infer_fail(g, n, err, "group %lld is too large", (long long)group);
  if (x->dims[1] >= 0 && w->dims[1] >= 0 && x->dims[1] != in_ch)
    return infer_fail(g, n, err, "input has %lld channels but weight \"%s\" expects %lld x group %lld", (long long)x->dims[1],
                      w->name, (long long)w->dims[1], (long long)group);
  if (w->dims[0] >= 0 && w->dims[0] % group)
    return infer_fail(g, n, err, "%lld output channels are not divisible by group %lld", (long long)w->dims[0], (long long)group);
  int cnt;
  const int64_t *ks = infer_attr_ints(n, "kernel_shape", &cnt);
  if (ks && cnt != nsp) return infer_fail(g, n, err, "kernel_shape has %d entries, expected %d", cnt, nsp);
  int64_t kernel[INFER_MAX_RANK];
  for (int k = 0; k < nsp; k++) {
    kernel[k] = ks ? ks[k] : w->dims[2 + k];
    if (kernel[k] < 0) return LOOM_OK;
    if (ks && w->dims[2 + k] >= 0 && w->dims[2 + k] != ks[k])
      return infer_fail(g, n, err, "kernel_shape disagrees with weight \"%s\" in spatial dimension %d", w->name, k);
  }
  const GraphValue *b = infer_input(g, n, 2);
  if (b && b->rank >= 0 && (b->rank != 1 || (b->dims[0] >= 0 && w->dims[0] >= 0 && b->dims[0] != w->dims[0])))
    return infer_fail(g, n, err, "bias \"%s\" must be 1-D with %lld elements", b->name, (long long)w->dims[0]);
  int64_t dims[INFER_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = w->dims[0];
  loom_status st = window_out(g, n, err, x, kernel, nsp, false, dims + 2);
  if (st) return st;
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  return LOOM_OK;
}

loom_status infer_pool(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank < 3 || x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "input \"%s\" has rank %d, expected at least 3", x->name, x->rank);
  int nsp = x->rank - 2, cnt;
  const int64_t *ks = infer_attr_ints(n, "kernel_shape", &cnt);
  if (!ks || cnt != nsp) return infer_fail(g, n, err, "kernel_shape must have %d entries", nsp);
  int64_t dims[INFER_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  loom_status st = window_out(g, n, err, x, ks, nsp, graph_node_int(n, "ceil_mode") != 0, dims + 2);
  if (st) return st;
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  infer_set(g, n, 1, DT_I64, x->rank, dims); /* MaxPool's optional Indices */
  return LOOM_OK;
}

loom_status infer_global_pool(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank < 3) return infer_fail(g, n, err, "input \"%s\" has rank %d, expected at least 3", x->name, x->rank);
  int64_t dims[INFER_MAX_RANK];
  if (x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "rank %d too large", x->rank);
  for (int k = 0; k < x->rank; k++) dims[k] = k < 2 ? x->dims[k] : 1;
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  return LOOM_OK;
}

loom_status infer_gemm(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected inputs A and B");
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *a = infer_input(g, n, 0), *b = infer_input(g, n, 1);
  if (a->rank != 2 || b->rank != 2) return infer_fail(g, n, err, "A and B must be 2-D, got ranks %d and %d", a->rank, b->rank);
  bool ta = graph_node_int(n, "transA"), tb = graph_node_int(n, "transB");
  int64_t m = a->dims[ta ? 1 : 0], ka = a->dims[ta ? 0 : 1];
  int64_t kb = b->dims[tb ? 1 : 0], nn = b->dims[tb ? 0 : 1];
  if (ka >= 0 && kb >= 0 && ka != kb)
    return infer_fail(g, n, err, "inner extents differ: A gives %lld, B gives %lld", (long long)ka, (long long)kb);
  int64_t dims[2] = {m, nn};
  const GraphValue *c = infer_input(g, n, 2);
  if (c && c->rank >= 0) {
    int r;
    int64_t tmp[INFER_MAX_RANK];
    if (c->rank > 2) return infer_fail(g, n, err, "C \"%s\" has rank %d, expected at most 2", c->name, c->rank);
    loom_status st = infer_broadcast_shapes(g, n, err, 2, dims, c->rank, c->dims, &r, tmp);
    if (st) return st;
    if ((tmp[0] != dims[0] && dims[0] >= 0) || (tmp[1] != dims[1] && dims[1] >= 0))
      return infer_fail(g, n, err, "C \"%s\" does not broadcast to the output", c->name);
  }
  infer_set(g, n, 0, a->dtype, 2, dims);
  return LOOM_OK;
}

loom_status infer_matmul(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2) return infer_fail(g, n, err, "expected 2 inputs, got %d", n->ninputs);
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *a = infer_input(g, n, 0), *b = infer_input(g, n, 1);
  if (a->rank < 1 || b->rank < 1) return infer_fail(g, n, err, "inputs must have rank >= 1");
  if (a->rank > INFER_MAX_RANK || b->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  /* 1-D operands are promoted (prepend / append a 1) and the 1 removed after. */
  int64_t ad[INFER_MAX_RANK + 1], bd[INFER_MAX_RANK + 1];
  int ra = a->rank, rb = b->rank;
  if (ra == 1) { ad[0] = 1; ad[1] = a->dims[0]; ra = 2; } else memcpy(ad, a->dims, sizeof(int64_t) * (size_t)ra);
  if (rb == 1) { bd[0] = b->dims[0]; bd[1] = 1; rb = 2; } else memcpy(bd, b->dims, sizeof(int64_t) * (size_t)rb);
  int64_t ka = ad[ra - 1], kb = bd[rb - 2];
  if (ka >= 0 && kb >= 0 && ka != kb)
    return infer_fail(g, n, err, "inner extents differ: \"%s\" gives %lld, \"%s\" gives %lld", a->name, (long long)ka, b->name,
                      (long long)kb);
  int r;
  int64_t dims[INFER_MAX_RANK + 2];
  loom_status st = infer_broadcast_shapes(g, n, err, ra - 2, ad, rb - 2, bd, &r, dims);
  if (st) return st;
  if (a->rank != 1) dims[r++] = ad[ra - 2];
  if (b->rank != 1) dims[r++] = bd[rb - 1];
  infer_set(g, n, 0, a->dtype, r, dims);
  return LOOM_OK;
}

loom_status infer_reduce(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  int64_t *axes = NULL;
  int naxes = 0;
  if (infer_input(g, n, 1) && !infer_const_ints(g, n->inputs[1], &axes, &naxes)) return LOOM_OK;
  bool keep = graph_node_int(n, "keepdims") != 0;
  bool reduce[INFER_MAX_RANK] = {0};
  if (naxes == 0) {
    bool noop = graph_node_int(n, "noop_with_empty_axes") != 0;
    for (int k = 0; k < x->rank; k++) reduce[k] = !noop;
  }
  for (int k = 0; k < naxes; k++) {
    int ax;
    loom_status st = infer_axis(g, n, err, axes[k], x->rank, &ax);
    if (st) return st;
    reduce[ax] = true;
  }
  int64_t dims[INFER_MAX_RANK];
  int r = 0;
  for (int k = 0; k < x->rank; k++) {
    if (!reduce[k]) dims[r++] = x->dims[k];
    else if (keep) dims[r++] = 1;
  }
  infer_set(g, n, 0, x->dtype, r, dims);
  return LOOM_OK;
}

loom_status infer_layer_norm(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected inputs X and Scale");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  int axis;
  loom_status st = infer_axis(g, n, err, graph_node_int(n, "axis"), x->rank, &axis);
  if (st) return st;
  infer_set(g, n, 0, x->dtype, x->rank, x->dims);
  int64_t dims[INFER_MAX_RANK];
  for (int k = 0; k < x->rank; k++) dims[k] = k < axis ? x->dims[k] : 1;
  DType stash = graph_node_int(n, "stash_type") == 1 ? DT_F32 : x->dtype;
  infer_set(g, n, 1, stash, x->rank, dims);
  infer_set(g, n, 2, stash, x->rank, dims);
  return LOOM_OK;
}
