/* Resize's operands resolved to per-axis form (graph_resize.h): the
 * output extents, the scales the coordinate transform uses and the region
 * of interest, from scales or sizes over all axes or over `axes`, with
 * keep_aspect_ratio_policy. Shared by inference and the compute. */
#include "graph/graph_resize.h"

#include "graph/infer_internal.h"

#include <string.h>

static loom_status fail(const GraphNode *n, LoomError *err, const char *msg, int a, int b) {
  return err_set(err, LOOM_ERR_INVALID_ARG, "node \"%s\" (Resize): %s (%d, %d)", n->name, msg, a, b);
}

loom_status graph_resize_plan(const Graph *g, const GraphNode *n, GraphResizePlan *p, LoomError *err) {
  memset(p, 0, sizeof *p);
  const GraphValue *x = infer_input(g, n, 0);
  if (!x || x->rank < 0 || x->rank > INFER_MAX_RANK) return LOOM_OK;
  int r = x->rank, axes[INFER_MAX_RANK], na = r, cnt;
  const int64_t *av = infer_attr_ints(n, "axes", &cnt);
  if (av) {
    bool seen[INFER_MAX_RANK] = {false};
    na = cnt;
    for (int i = 0; i < na; i++) {
      int64_t d = av[i] < 0 ? av[i] + r : av[i];
      if (d < 0 || d >= r || seen[d]) return fail(n, err, "axes entry out of range or repeated (entry, rank)", i, r);
      seen[d] = true;
      axes[i] = (int)d;
    }
  } else {
    for (int i = 0; i < r; i++) axes[i] = i;
  }
  for (int d = 0; d < r; d++) p->out[d] = x->dims[d], p->scales[d] = 1, p->roi[d] = 0, p->roi[r + d] = 1;
  const GraphValue *roi = infer_input(g, n, 1), *sc = infer_input(g, n, 2), *sz = infer_input(g, n, 3);
  for (int d = 0; d < r; d++) p->roi_at[d] = -1;
  const GraphTensor *t = roi ? graph_value_constant(g, n->inputs[1]) : NULL;
  if (roi && !t) {
    /* Read at run time: the region moves the sampling points, never the
     * output extents. Its length is checked where its shape is known. */
    int64_t nr = graph_shape_numel(roi->rank, roi->dims);
    if (roi->rank >= 0 && roi->rank != 1) return fail(n, err, "roi is not 1-D (rank, axes)", roi->rank, na);
    if (nr > 0 && nr != 2 * na) return fail(n, err, "roi needs 2 entries per axis (entries, axes)", (int)nr, na);
    if (nr != 0) {
      p->roi_runtime = true;
      p->roi_count = na;
      for (int i = 0; i < na; i++) p->roi_at[axes[i]] = i;
    }
  } else if (roi) {
    int64_t nr = graph_tensor_numel(t);
    if (nr != 0 && nr != 2 * na) return fail(n, err, "roi needs 2 entries per axis (entries, axes)", (int)nr, na);
    for (int i = 0; nr && i < na; i++) p->roi[axes[i]] = graph_tensor_get_f64(t, i), p->roi[r + axes[i]] = graph_tensor_get_f64(t, na + i);
    p->have_roi = nr != 0;
  }
  const GraphTensor *st = sc ? graph_value_constant(g, n->inputs[2]) : NULL;
  if (sc && !st) return LOOM_OK;
  if (st && graph_tensor_numel(st) == 0) st = NULL; /* an empty scales next to sizes */
  if (st) {
    if (graph_tensor_numel(st) != na) return fail(n, err, "scales has the wrong length (entries, axes)", (int)graph_tensor_numel(st), na);
    for (int i = 0; i < na; i++) {
      double s = graph_tensor_get_f64(st, i);
      if (!(s > 0) || s > 1e6) return fail(n, err, "a scale is not positive (axis, rank)", axes[i], r);
      p->scales[axes[i]] = s;
      double d = (double)x->dims[axes[i]] * s;
      p->out[axes[i]] = x->dims[axes[i]] < 0 ? -1 : (int64_t)d;
    }
    p->have_scales = true;
  } else if (sz) {
    int64_t *sizes;
    int ns;
    if (!infer_const_ints(g, n->inputs[3], &sizes, &ns)) return LOOM_OK;
    if (ns != na) return fail(n, err, "sizes has the wrong length (entries, axes)", ns, na);
    const char *policy = graph_node_string(n, "keep_aspect_ratio_policy");
    bool stretch = !strcmp(policy, "stretch"), larger = !strcmp(policy, "not_larger");
    if (!stretch && !larger && strcmp(policy, "not_smaller"))
      return err_set(err, LOOM_ERR_INVALID_ARG, "node \"%s\" (Resize): keep_aspect_ratio_policy \"%s\" is unknown", n->name, policy);
    double common = larger ? 1e300 : 0;
    for (int i = 0; i < na; i++) {
      if (sizes[i] < 0) return fail(n, err, "sizes entry is negative (entry, axes)", i, na);
      if (x->dims[axes[i]] < 0) return LOOM_OK;
      double s = (double)sizes[i] / (double)x->dims[axes[i]];
      if (stretch) p->out[axes[i]] = sizes[i];
      else common = larger ? (s < common ? s : common) : (s > common ? s : common);
    }
    if (!stretch) {
      for (int i = 0; i < na; i++) {
        p->scales[axes[i]] = common;
        p->out[axes[i]] = (int64_t)(common * (double)x->dims[axes[i]] + 0.5);
      }
      p->have_scales = true;
    }
  } else {
    return err_set(err, LOOM_ERR_INVALID_ARG, "node \"%s\" (Resize): needs scales or sizes", n->name);
  }
  for (int d = 0; d < r; d++)
    if (p->out[d] >= (int64_t)9.0e18) return fail(n, err, "resized extent overflows (axis, rank)", d, r);
  p->known = true;
  return LOOM_OK;
}

loom_status infer_resize(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  GraphResizePlan p;
  loom_status st = graph_resize_plan(g, n, &p, err);
  if (st) return st;
  int64_t dims[INFER_MAX_RANK];
  for (int d = 0; d < x->rank; d++) dims[d] = p.known ? p.out[d] : -1;
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  return LOOM_OK;
}
