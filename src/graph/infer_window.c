/* Inference for the sliding-window ops beyond Conv and the pools
 * (infer_nn.c): ConvTranspose (its output_shape / auto_pad resolve into
 * explicit pads written back on the node), Col2Im and MaxUnpool. Formulas
 * follow the ONNX specification and its reference implementation. */
#include "graph/infer_internal.h"
#include "graph/pass_internal.h" /* graph_attr_make_ints */

#include <string.h>

/* An INTS attribute of nsp entries (or of 2 + nsp, the leading N and C
 * skipped) within [lo, 2^31], else dflt everywhere. */
static loom_status spatial_ints(Graph *g, GraphNode *n, LoomError *err, const char *name, int nsp, int per_axis,
                                int64_t dflt, int64_t lo, int64_t *out) {
  int cnt;
  const int64_t *v = infer_attr_ints(n, name, &cnt);
  int skip = v && cnt == per_axis * nsp + 2 && per_axis == 1 ? 2 : 0;
  if (v && cnt - skip != per_axis * nsp)
    return infer_fail(g, n, err, "%s has %d entries, expected %d", name, cnt, per_axis * nsp);
  for (int k = 0; k < per_axis * nsp; k++) {
    out[k] = v ? v[skip + k] : dflt;
    if (v && (out[k] < lo || out[k] > ((int64_t)1 << 31)))
      return infer_fail(g, n, err, "%s[%d] = %lld is out of range", name, k, (long long)out[k]);
  }
  return LOOM_OK;
}

loom_status infer_conv_transpose(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected inputs X and W");
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0), *w = infer_input(g, n, 1);
  if (x->rank < 3 || x->rank > INFER_MAX_RANK || w->rank != x->rank)
    return infer_fail(g, n, err, "X and W must have one rank >= 3 (got %d and %d)", x->rank, w->rank);
  int nsp = x->rank - 2;
  int64_t group = graph_node_int(n, "group");
  if (group < 1) return infer_fail(g, n, err, "group must be positive");
  if (x->dims[1] >= 0 && w->dims[0] >= 0 && x->dims[1] != w->dims[0])
    return infer_fail(g, n, err, "X has %lld channels, W \"%s\" expects %lld", (long long)x->dims[1], w->name,
                      (long long)w->dims[0]);
  int64_t s[INFER_MAX_RANK], d[INFER_MAX_RANK], op[INFER_MAX_RANK], pads[2 * INFER_MAX_RANK], k[INFER_MAX_RANK],
      oshape[INFER_MAX_RANK];
  loom_status st;
  if ((st = spatial_ints(g, n, err, "strides", nsp, 1, 1, 1, s)) || (st = spatial_ints(g, n, err, "dilations", nsp, 1, 1, 1, d)) ||
      (st = spatial_ints(g, n, err, "output_padding", nsp, 1, 0, 0, op)) ||
      (st = spatial_ints(g, n, err, "pads", nsp, 2, 0, -((int64_t)1 << 31), pads)) || (st = spatial_ints(g, n, err, "kernel_shape", nsp, 1, -1, 1, k)))
    return st;
  int cnt;
  const int64_t *out_attr = infer_attr_ints(n, "output_shape", &cnt);
  int skip = out_attr && cnt == nsp + 2 ? 2 : 0;
  if (out_attr && cnt - skip != nsp) return infer_fail(g, n, err, "output_shape has %d entries, expected %d", cnt, nsp);
  const char *auto_pad = graph_node_string(n, "auto_pad");
  bool same = !strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER"), upper = !strcmp(auto_pad, "SAME_UPPER");
  if (!same && strcmp(auto_pad, "VALID") && strcmp(auto_pad, "NOTSET"))
    return infer_fail(g, n, err, "auto_pad \"%s\" is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", auto_pad);
  bool known = true;
  for (int i = 0; i < nsp; i++) {
    if (k[i] < 0) k[i] = w->dims[2 + i];
    int64_t in = x->dims[2 + i];
    if (k[i] < 1 || in < 0) {
      known = false;
      oshape[i] = -1;
      continue;
    }
    int64_t full = s[i] * (in - 1) + op[i] + (k[i] - 1) * d[i] + 1;
    if (out_attr || same) {
      int64_t want = out_attr ? out_attr[skip + i] : in * s[i];
      /* The reference implementation: SAME_UPPER puts the smaller half
       * first (floor division; a negative total extends the output). */
      int64_t total = full - want, half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pads[i] = upper ? half : total - half;
      pads[nsp + i] = total - pads[i];
    } else if (!strcmp(auto_pad, "VALID")) {
      pads[i] = pads[nsp + i] = 0;
    }
    oshape[i] = full - pads[i] - pads[nsp + i];
    if (oshape[i] < 1) return infer_fail(g, n, err, "pads leave no output on spatial axis %d", i);
  }
  if (known) {
    graph_node_set_attr(g, n, graph_attr_make_ints(g, "pads", pads, 2 * nsp));
    graph_node_set_attr(g, n, graph_attr_make_string(g, "auto_pad", "NOTSET"));
  }
  int64_t dims[INFER_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = w->dims[1] >= 0 ? w->dims[1] * group : -1;
  memcpy(dims + 2, oshape, sizeof(int64_t) * (size_t)nsp);
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  return LOOM_OK;
}

/* Conv's shapes (infer_nn.c), an i32 result. */
loom_status infer_conv_integer(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs > 2 && infer_input(g, n, 2) && infer_known(g, n, 2) &&
      graph_shape_numel(infer_input(g, n, 2)->rank, infer_input(g, n, 2)->dims) != 1)
    return infer_fail(g, n, err, "x_zero_point must be a scalar");
  /* Conv's inference reads input 2 as the bias: hide the zero points. */
  int saved = n->ninputs;
  n->ninputs = saved < 2 ? saved : 2;
  loom_status st = infer_conv(g, n, err);
  n->ninputs = saved;
  if (st || n->outputs[0] < 0 || g->values[n->outputs[0]].rank < 0) return st;
  const GraphValue *y = &g->values[n->outputs[0]];
  infer_set(g, n, 0, DT_I32, y->rank, y->dims);
  return LOOM_OK;
}

loom_status infer_col2im(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 3) return infer_fail(g, n, err, "expected inputs input, image_shape and block_shape");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank != 3) return infer_fail(g, n, err, "input \"%s\" has rank %d, expected 3", x->name, x->rank);
  int64_t *img, *blk;
  int ni, nb;
  if (!infer_const_ints(g, n->inputs[1], &img, &ni) || !infer_const_ints(g, n->inputs[2], &blk, &nb)) return LOOM_OK;
  if (ni != nb || ni < 1 || ni > INFER_MAX_RANK - 2)
    return infer_fail(g, n, err, "image_shape and block_shape must have one length (got %d and %d)", ni, nb);
  int64_t dims[INFER_MAX_RANK], prod = 1;
  for (int i = 0; i < ni; i++) {
    if (blk[i] < 1 || img[i] < 1 || !infer_mul(prod, blk[i], &prod))
      return infer_fail(g, n, err, "image_shape and block_shape entries must be positive");
    dims[2 + i] = img[i];
  }
  if (x->dims[1] >= 0 && x->dims[1] % prod)
    return infer_fail(g, n, err, "%lld channels do not divide by the block size %lld", (long long)x->dims[1], (long long)prod);
  dims[0] = x->dims[0];
  dims[1] = x->dims[1] >= 0 ? x->dims[1] / prod : -1;
  infer_set(g, n, 0, x->dtype, 2 + ni, dims);
  return LOOM_OK;
}

loom_status infer_max_unpool(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected inputs X and I");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank < 3 || x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "X has rank %d, expected >= 3", x->rank);
  int nsp = x->rank - 2;
  int64_t dims[INFER_MAX_RANK];
  if (infer_input(g, n, 2)) {
    int64_t *shape;
    int ns;
    if (!infer_const_ints(g, n->inputs[2], &shape, &ns)) {
      for (int k = 0; k < x->rank; k++) dims[k] = k < 2 ? x->dims[k] : -1;
      infer_set(g, n, 0, x->dtype, x->rank, dims);
      return LOOM_OK;
    }
    if (ns != x->rank) return infer_fail(g, n, err, "output_shape has %d entries, expected %d", ns, x->rank);
    for (int k = 0; k < ns; k++)
      if (shape[k] < 1) return infer_fail(g, n, err, "output_shape[%d] = %lld must be positive", k, (long long)shape[k]);
    infer_set(g, n, 0, x->dtype, x->rank, shape);
    return LOOM_OK;
  }
  int64_t ks[INFER_MAX_RANK], s[INFER_MAX_RANK], pads[2 * INFER_MAX_RANK];
  loom_status st;
  if ((st = spatial_ints(g, n, err, "kernel_shape", nsp, 1, -1, 1, ks)) || (st = spatial_ints(g, n, err, "strides", nsp, 1, 1, 1, s)) ||
      (st = spatial_ints(g, n, err, "pads", nsp, 2, 0, 0, pads)))
    return st;
  dims[0] = x->dims[0], dims[1] = x->dims[1];
  for (int i = 0; i < nsp; i++) {
    if (ks[i] < 1) return infer_fail(g, n, err, "kernel_shape is required");
    dims[2 + i] = x->dims[2 + i] < 0 ? -1 : (x->dims[2 + i] - 1) * s[i] - pads[i] - pads[nsp + i] + ks[i];
  }
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  return LOOM_OK;
}
