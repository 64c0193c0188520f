/* Inference for Loom's blocked-layout ops, produced by pass_layout.c:
 *
 *   LayoutTransform {src_layout, dst_layout}: "NCHW" <-> "NCHW<b>c" (or one
 *     block to another). Blocked [N, C/b, H, W, b] holds NCHW element
 *     (n, cb * b + ci, h, w) at (n, cb, h, w, ci).
 *   ConvNCHWc(data, weight) {strides, pads, dilations, group}: data
 *     [N, C/c, H, W, c]; weight [K/k, C/(c g), R, S, c, k] for group g
 *     (1 included; c divides C/g and k divides K/g) or [K/k, 1, R, S, 1, k]
 *     for depthwise (group == C == K, c == k); output [N, K/k, OH, OW, k] with
 *       out[n, ko, oh, ow, ki] = sum_{co, r, s, ci} data[n, G(ko) + co, oh*sh - pt + r*dh,
 *                                   ow*sw - pl + s*dw, ci] * w[ko, co, r, s, ci, ki]
 *     where G(ko) = (ko / (K/(k g))) * C/(c g) is the first input block of
 *     ko's group (depthwise: co = ko, ci = ki, a sum over r, s only); zero
 *     padding.
 *   MaxPoolNCHWc / AveragePoolNCHWc(data) {kernel_shape, strides, pads,
 *     dilations, ceil_mode, count_include_pad}: data [N, C/c, H, W, c] ->
 *     [N, C/c, OH, OW, c]; each channel pooled exactly as MaxPool /
 *     AveragePool (2-D, explicit pads) pools the NCHW tensor. */
#include "graph/infer_internal.h"
#include "graph/pass_internal.h"

#include <stdlib.h>
#include <string.h>

int graph_layout_block(const char *layout) {
  if (!layout || strncmp(layout, "NCHW", 4)) return -1;
  if (!layout[4]) return 0;
  char *end;
  long b = strtol(layout + 4, &end, 10);
  if (end == layout + 4 || b < 1 || b > 1024 || strcmp(end, "c")) return -1;
  return (int)b;
}

loom_status infer_layout_transform(Graph *g, GraphNode *n, LoomError *err) {
  const char *src = graph_attr_string(n, "src_layout", NULL), *dst = graph_attr_string(n, "dst_layout", NULL);
  int sb = graph_layout_block(src), db = graph_layout_block(dst);
  if (sb < 0 || db < 0)
    return infer_fail(g, n, err, "src_layout \"%s\" / dst_layout \"%s\" must be NCHW or NCHW<b>c", src ? src : "(none)",
                      dst ? dst : "(none)");
  if (n->ninputs != 1 || n->inputs[0] < 0) return infer_fail(g, n, err, "expected 1 input, got %d", n->ninputs);
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  int want = sb ? 5 : 4;
  if (x->rank != want) return infer_fail(g, n, err, "input \"%s\" has rank %d, layout %s needs %d", x->name, x->rank, src, want);
  if (sb && x->dims[4] >= 0 && x->dims[4] != sb)
    return infer_fail(g, n, err, "input \"%s\" has inner block %lld, layout %s needs %d", x->name, (long long)x->dims[4], src, sb);
  int64_t ch = -1;
  if (sb == 0) ch = x->dims[1];
  else if (x->dims[1] >= 0) ch = x->dims[1] * sb;
  if (db && ch >= 0 && ch % db)
    return infer_fail(g, n, err, "%lld channels are not divisible by the block %d of %s", (long long)ch, db, dst);
  int64_t dims[5] = {x->dims[0], -1, x->dims[2], x->dims[3], db};
  if (db) dims[1] = ch >= 0 ? ch / db : -1;
  else dims[1] = ch;
  infer_set(g, n, 0, x->dtype, db ? 5 : 4, dims);
  return LOOM_OK;
}

static loom_status pair_attr(Graph *g, GraphNode *n, LoomError *err, const char *name, int want, int64_t dflt, int64_t *out) {
  int cnt;
  const int64_t *p = infer_attr_ints(n, name, &cnt);
  if (p && cnt != want) return infer_fail(g, n, err, "%s has %d entries, expected %d", name, cnt, want);
  for (int k = 0; k < want; k++) {
    out[k] = p ? p[k] : dflt;
    if (out[k] < 0 || out[k] > ((int64_t)1 << 31)) return infer_fail(g, n, err, "%s entry %d is out of range", name, k);
  }
  return LOOM_OK;
}

loom_status infer_conv_nchwc(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0)
    return infer_fail(g, n, err, "expected inputs data and weight, got %d inputs", n->ninputs);
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0), *w = infer_input(g, n, 1);
  if (x->rank != 5) return infer_fail(g, n, err, "data \"%s\" has rank %d, expected 5 (N, C/c, H, W, c)", x->name, x->rank);
  if (w->rank != 6) return infer_fail(g, n, err, "weight \"%s\" has rank %d, expected 6 (K/k, C/c, R, S, c, k)", w->name, w->rank);
  int64_t strides[2], dil[2], pads[4];
  loom_status st = pair_attr(g, n, err, "strides", 2, 1, strides);
  if (!st) st = pair_attr(g, n, err, "dilations", 2, 1, dil);
  if (!st) st = pair_attr(g, n, err, "pads", 4, 0, pads);
  if (st) return st;
  if (strides[0] < 1 || strides[1] < 1 || dil[0] < 1 || dil[1] < 1)
    return infer_fail(g, n, err, "strides and dilations must be positive");
  int64_t group = graph_node_int(n, "group");
  bool depthwise = group != 1 && w->dims[1] == 1 && w->dims[4] == 1 && group == x->dims[1] * x->dims[4];
  if (group < 1 || (group > 1 && !depthwise && (x->dims[1] % group != 0 || w->dims[0] % group != 0)))
    return infer_fail(g, n, err, "group %lld must divide the input and output channel blocks (%lld and %lld)", (long long)group,
                      (long long)x->dims[1], (long long)w->dims[0]);
  /* A Winograd F(m x m, r x r) conv's weight holds the transformed kernel
   * per transform point, [m + r - 1, m + r - 1, K/k, C/c, c, k]
   * (graph_pass_winograd). */
  int64_t wino = graph_node_int(n, "winograd_tile");
  if (wino && (wino != 2 || group != 1 || w->dims[0] != 4 || w->dims[1] != 4 || strides[0] != 1 || strides[1] != 1 ||
               dil[0] != 1 || dil[1] != 1))
    return infer_fail(g, n, err, "winograd_tile %lld needs winograd_tile 2, a [4, 4, K/k, C/c, c, k] weight and unit strides and dilations",
                      (long long)wino);
  int64_t kblocks = w->dims[wino ? 2 : 0], cblocks = w->dims[wino ? 3 : 1];
  int64_t kernel[2] = {wino ? w->dims[0] - wino + 1 : w->dims[2], wino ? w->dims[1] - wino + 1 : w->dims[3]};
  if (depthwise) {
    if (w->dims[1] != 1 || w->dims[4] != 1 || w->dims[5] != x->dims[4] || w->dims[0] != x->dims[1] ||
        group != x->dims[1] * x->dims[4])
      return infer_fail(g, n, err, "depthwise weight \"%s\" must be [C/c, 1, R, S, 1, c] with group C = %lld", w->name,
                        (long long)(x->dims[1] * x->dims[4]));
  } else if (cblocks * group != x->dims[1] || w->dims[4] != x->dims[4]) {
    return infer_fail(g, n, err, "weight \"%s\" input blocks [%lld, %lld] (per group, %lld groups) differ from data \"%s\" [%lld, %lld]",
                      w->name, (long long)cblocks, (long long)w->dims[4], (long long)group, x->name, (long long)x->dims[1],
                      (long long)x->dims[4]);
  }
  int64_t dims[5] = {x->dims[0], kblocks, -1, -1, w->dims[5]};
  for (int k = 0; k < 2; k++) {
    int64_t in = x->dims[2 + k];
    if (in < 0 || kernel[k] < 1) continue;
    int64_t window = (kernel[k] - 1) * dil[k] + 1, span = in + pads[k] + pads[k + 2] - window;
    if (span < 0) return infer_fail(g, n, err, "window of %lld exceeds the padded extent in spatial dimension %d", (long long)window, k);
    dims[2 + k] = span / strides[k] + 1;
  }
  infer_set(g, n, 0, x->dtype, 5, dims);
  return LOOM_OK;
}

loom_status infer_pool_nchwc(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 1 || n->inputs[0] < 0) return infer_fail(g, n, err, "expected 1 input (data), got %d", n->ninputs);
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank != 5) return infer_fail(g, n, err, "data \"%s\" has rank %d, expected 5 (N, C/c, H, W, c)", x->name, x->rank);
  int cnt;
  const int64_t *ks = infer_attr_ints(n, "kernel_shape", &cnt);
  if (!ks || cnt != 2) return infer_fail(g, n, err, "kernel_shape must have 2 entries");
  int64_t strides[2], dil[2], pads[4];
  loom_status st = pair_attr(g, n, err, "strides", 2, 1, strides);
  if (!st) st = pair_attr(g, n, err, "dilations", 2, 1, dil);
  if (!st) st = pair_attr(g, n, err, "pads", 4, 0, pads);
  if (st) return st;
  if (strides[0] < 1 || strides[1] < 1 || dil[0] < 1 || dil[1] < 1 || ks[0] < 1 || ks[1] < 1 || ks[0] > ((int64_t)1 << 31) ||
      ks[1] > ((int64_t)1 << 31))
    return infer_fail(g, n, err, "kernel_shape, strides and dilations must be positive (and below 2^31)");
  bool ceil_mode = graph_node_int(n, "ceil_mode") != 0;
  int64_t dims[5] = {x->dims[0], x->dims[1], -1, -1, x->dims[4]};
  for (int k = 0; k < 2; k++) {
    int64_t in = x->dims[2 + k];
    if (in < 0) continue;
    int64_t window = (ks[k] - 1) * dil[k] + 1, span = in + pads[k] + pads[k + 2] - window;
    if (span < 0) return infer_fail(g, n, err, "window of %lld exceeds the padded extent in spatial dimension %d", (long long)window, k);
    int64_t o = ceil_mode ? (span + strides[k] - 1) / strides[k] + 1 : span / strides[k] + 1;
    if (ceil_mode && (o - 1) * strides[k] >= in + pads[k]) o--; /* the last window must start inside input or left pad */
    dims[2 + k] = o;
  }
  infer_set(g, n, 0, x->dtype, 5, dims);
  return LOOM_OK;
}
