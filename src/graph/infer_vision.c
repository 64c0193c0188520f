/* Shape and dtype inference for the vision ops (GridSample, AffineGrid,
 * RoiAlign, DeformConv), BitCast, TopK, and the ops whose output extents
 * depend on the data (NonZero, Compress, Unique, NonMaxSuppression): those
 * get an upper bound (graph/graph_dynamic.h). */
#include "graph/graph_dynamic.h"
#include "graph/infer_internal.h"

#include <string.h>

int graph_dynamic_outputs(GraphOp op, int *nonnx, int *which) {
  switch (op) {
    case GRAPH_OP_NON_ZERO:
    case GRAPH_OP_COMPRESS:
    case GRAPH_OP_NON_MAX_SUPPRESSION:
      *nonnx = 1;
      which[0] = 0;
      return 1;
    case GRAPH_OP_UNIQUE: /* Y, indices, inverse_indices (static), counts */
      *nonnx = 4;
      which[0] = 0;
      which[1] = 1;
      which[2] = 3;
      return 3;
    default:
      *nonnx = 0;
      return 0;
  }
}

bool graph_node_has_extents(const GraphNode *n) {
  int nonnx, which[GRAPH_MAX_DYNAMIC_OUTPUTS];
  int c = graph_dynamic_outputs(n->op, &nonnx, which);
  return c > 0 && n->noutputs == nonnx + c;
}

bool graph_value_is_data_dependent(const Graph *g, ValueId v) {
  int p = v >= 0 && v < g->nvalues ? g->values[v].producer : -1;
  if (p < 0) return false;
  int nonnx, which[GRAPH_MAX_DYNAMIC_OUTPUTS];
  int count = graph_dynamic_outputs(g->nodes[p].op, &nonnx, which);
  for (int j = 0; j < count; j++)
    if (which[j] < g->nodes[p].noutputs && g->nodes[p].outputs[which[j]] == v) return true;
  return false;
}

/* The extent outputs (when attached): i64[rank of their data output]. */
static void set_extents(Graph *g, GraphNode *n) {
  int nonnx, which[GRAPH_MAX_DYNAMIC_OUTPUTS];
  int c = graph_dynamic_outputs(n->op, &nonnx, which);
  if (!graph_node_has_extents(n)) return;
  for (int j = 0; j < c; j++) {
    ValueId d = n->outputs[which[j]];
    int64_t r = d >= 0 ? g->values[d].rank : -1;
    if (r >= 0) infer_set(g, n, nonnx + j, DT_I64, 1, &r);
  }
}

static bool known_dims(const GraphValue *v) {
  for (int k = 0; k < v->rank; k++)
    if (v->dims[k] < 0) return false;
  return true;
}

static bool is_float(DType t) { return dtype_is_float(t); }

loom_status infer_grid_sample(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2) return infer_fail(g, n, err, "expected inputs X and grid");
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0), *grid = infer_input(g, n, 1);
  int r = x->rank - 2;
  if (r < 1 || r > 3) return infer_fail(g, n, err, "X must have rank 3, 4 or 5, got %d", x->rank);
  if (grid->rank != r + 2) return infer_fail(g, n, err, "grid must have rank %d (X has rank %d), got %d", r + 2, x->rank, grid->rank);
  if (!is_float(grid->dtype)) return infer_fail(g, n, err, "grid \"%s\" must be a float tensor", grid->name);
  if (grid->dims[r + 1] >= 0 && grid->dims[r + 1] != r)
    return infer_fail(g, n, err, "grid's last extent is %lld, expected %d (one coordinate per spatial axis)",
                      (long long)grid->dims[r + 1], r);
  if (x->dims[0] >= 0 && grid->dims[0] >= 0 && x->dims[0] != grid->dims[0])
    return infer_fail(g, n, err, "X has batch %lld but grid has %lld", (long long)x->dims[0], (long long)grid->dims[0]);
  int64_t dims[INFER_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  for (int k = 0; k < r; k++) dims[2 + k] = grid->dims[1 + k];
  infer_set(g, n, 0, x->dtype, r + 2, dims);
  return LOOM_OK;
}

loom_status infer_affine_grid(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2) return infer_fail(g, n, err, "expected inputs theta and size");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *theta = infer_input(g, n, 0);
  if (theta->rank != 3) return infer_fail(g, n, err, "theta must have rank 3, got %d", theta->rank);
  int64_t *size;
  int ns;
  if (!infer_const_ints(g, n->inputs[1], &size, &ns)) return LOOM_OK;
  if (ns != 4 && ns != 5) return infer_fail(g, n, err, "size must have 4 or 5 elements (N, C, [D,] H, W), got %d", ns);
  int r = ns - 2;
  for (int k = 0; k < ns; k++)
    if (size[k] < 1) return infer_fail(g, n, err, "size[%d] is %lld, expected >= 1", k, (long long)size[k]);
  if ((theta->dims[1] >= 0 && theta->dims[1] != r) || (theta->dims[2] >= 0 && theta->dims[2] != r + 1) ||
      (theta->dims[0] >= 0 && theta->dims[0] != size[0]))
    return infer_fail(g, n, err, "theta must be [%lld, %d, %d] for a %d-D size", (long long)size[0], r, r + 1, r);
  int64_t dims[6];
  dims[0] = size[0];
  for (int k = 0; k < r; k++) dims[1 + k] = size[2 + k];
  dims[1 + r] = r;
  infer_set(g, n, 0, theta->dtype, r + 2, dims);
  return LOOM_OK;
}

loom_status infer_roi_align(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 3) return infer_fail(g, n, err, "expected inputs X, rois and batch_indices");
  for (int k = 0; k < 3; k++)
    if (!infer_known(g, n, k)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0), *rois = infer_input(g, n, 1), *bi = infer_input(g, n, 2);
  if (x->rank != 4) return infer_fail(g, n, err, "X must have rank 4, got %d", x->rank);
  if (rois->rank != 2 || (rois->dims[1] >= 0 && rois->dims[1] != 4))
    return infer_fail(g, n, err, "rois must be [num_rois, 4]");
  if (bi->rank != 1 || !dtype_is_int(bi->dtype)) return infer_fail(g, n, err, "batch_indices must be a 1-D integer tensor");
  if (rois->dims[0] >= 0 && bi->dims[0] >= 0 && rois->dims[0] != bi->dims[0])
    return infer_fail(g, n, err, "rois has %lld rows but batch_indices %lld", (long long)rois->dims[0],
                      (long long)bi->dims[0]);
  int64_t oh = graph_node_int(n, "output_height"), ow = graph_node_int(n, "output_width");
  if (oh < 1 || ow < 1) return infer_fail(g, n, err, "output_height and output_width must be >= 1");
  int64_t dims[4] = {rois->dims[0], x->dims[1], oh, ow};
  infer_set(g, n, 0, x->dtype, 4, dims);
  return LOOM_OK;
}

loom_status infer_deform_conv(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 3) return infer_fail(g, n, err, "expected inputs X, W, offset[, B[, mask]]");
  for (int k = 0; k < 3; k++)
    if (!infer_known(g, n, k)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0), *w = infer_input(g, n, 1), *off = infer_input(g, n, 2);
  if (x->rank != 4 || w->rank != 4 || off->rank != 4)
    return infer_fail(g, n, err, "only 2-D deformable convolution is supported (X, W and offset of rank 4)");
  int64_t dims[4] = {x->dims[0], w->dims[0], off->dims[2], off->dims[3]};
  infer_set(g, n, 0, x->dtype, 4, dims);
  return LOOM_OK;
}

loom_status infer_bit_cast(Graph *g, GraphNode *n, LoomError *err) {
  DType to;
  const char *s = graph_attr_string(n, "to", NULL);
  if (!s || !dtype_parse(s, &to)) return infer_fail(g, n, err, "attribute \"to\" is missing or not a dtype");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  int bx = dtype_is_bool(x->dtype) ? 8 : x->dtype.bits, bt = dtype_is_bool(to) ? 8 : to.bits;
  if (bx != bt) {
    char b1[16], b2[16];
    return infer_fail(g, n, err, "cannot reinterpret %s (%d bits) as %s (%d bits)", dtype_str(x->dtype, b1), bx,
                      dtype_str(to, b2), bt);
  }
  infer_set(g, n, 0, to, x->rank, x->dims);
  return LOOM_OK;
}

loom_status infer_top_k(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2) return infer_fail(g, n, err, "expected inputs X and K");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank < 1) return infer_fail(g, n, err, "X must have rank >= 1");
  int axis;
  loom_status st = infer_axis(g, n, err, graph_node_int(n, "axis"), x->rank, &axis);
  if (st) return st;
  int64_t *k;
  int nk;
  if (!infer_const_ints(g, n->inputs[1], &k, &nk)) return LOOM_OK;
  if (nk != 1) return infer_fail(g, n, err, "K must have exactly one element, got %d", nk);
  if (k[0] < 0 || (x->dims[axis] >= 0 && k[0] > x->dims[axis]))
    return infer_fail(g, n, err, "K = %lld is out of range for axis %d of extent %lld", (long long)k[0], axis,
                      (long long)x->dims[axis]);
  int64_t dims[INFER_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  dims[axis] = k[0];
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  infer_set(g, n, 1, DT_I64, x->rank, dims);
  return LOOM_OK;
}

loom_status infer_non_zero(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 1) return infer_fail(g, n, err, "expected one input");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank < 1) return infer_fail(g, n, err, "X must have rank >= 1");
  if (!known_dims(x)) return LOOM_OK;
  int64_t dims[2] = {x->rank, graph_shape_numel(x->rank, x->dims)};
  if (dims[1] < 0) return infer_fail(g, n, err, "X is too large");
  infer_set(g, n, 0, DT_I64, 2, dims);
  set_extents(g, n);
  return LOOM_OK;
}

loom_status infer_compress(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2) return infer_fail(g, n, err, "expected inputs input and condition");
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0), *c = infer_input(g, n, 1);
  if (c->rank != 1 || !dtype_is_bool(c->dtype)) return infer_fail(g, n, err, "condition must be a 1-D bool tensor");
  if (!known_dims(x) || c->dims[0] < 0) return LOOM_OK;
  int64_t dims[INFER_MAX_RANK];
  const GraphAttr *ax = graph_node_attr(n, "axis");
  if (!ax) {
    int64_t numel = graph_shape_numel(x->rank, x->dims);
    dims[0] = numel < c->dims[0] ? numel : c->dims[0];
    infer_set(g, n, 0, x->dtype, 1, dims);
  } else {
    int axis;
    loom_status st = infer_axis(g, n, err, ax->i, x->rank, &axis);
    if (st) return st;
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    if (c->dims[0] < dims[axis]) dims[axis] = c->dims[0];
    infer_set(g, n, 0, x->dtype, x->rank, dims);
  }
  set_extents(g, n);
  return LOOM_OK;
}

loom_status infer_unique(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 1) return infer_fail(g, n, err, "expected one input");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (!known_dims(x)) return LOOM_OK;
  const GraphAttr *ax = graph_node_attr(n, "axis");
  int64_t a;
  if (!ax) {
    a = graph_shape_numel(x->rank, x->dims);
    infer_set(g, n, 0, x->dtype, 1, &a);
    infer_set(g, n, 2, DT_I64, 1, &a);
  } else {
    if (x->rank < 1) return infer_fail(g, n, err, "X must have rank >= 1 with an axis");
    int axis;
    loom_status st = infer_axis(g, n, err, ax->i, x->rank, &axis);
    if (st) return st;
    a = x->dims[axis];
    infer_set(g, n, 0, x->dtype, x->rank, x->dims);
    infer_set(g, n, 2, DT_I64, 1, &a);
  }
  infer_set(g, n, 1, DT_I64, 1, &a);
  infer_set(g, n, 3, DT_I64, 1, &a);
  set_extents(g, n);
  return LOOM_OK;
}

loom_status infer_non_max_suppression(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected inputs boxes and scores");
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *b = infer_input(g, n, 0), *s = infer_input(g, n, 1);
  if (b->rank != 3 || (b->dims[2] >= 0 && b->dims[2] != 4))
    return infer_fail(g, n, err, "boxes must be [num_batches, spatial_dimension, 4]");
  if (s->rank != 3) return infer_fail(g, n, err, "scores must be [num_batches, num_classes, spatial_dimension]");
  if (!known_dims(b) || !known_dims(s)) return LOOM_OK;
  if (b->dims[0] != s->dims[0] || b->dims[1] != s->dims[2])
    return infer_fail(g, n, err, "boxes [%lld, %lld, 4] and scores [%lld, %lld, %lld] disagree", (long long)b->dims[0],
                      (long long)b->dims[1], (long long)s->dims[0], (long long)s->dims[1], (long long)s->dims[2]);
  int64_t per_class = b->dims[1];
  int64_t *mo;
  int nm;
  if (n->ninputs > 2 && n->inputs[2] >= 0 && infer_const_ints(g, n->inputs[2], &mo, &nm) && nm == 1 && mo[0] >= 0 &&
      mo[0] < per_class)
    per_class = mo[0];
  if (per_class < 1) per_class = 1; /* te needs extents >= 1; the real count may be 0 */
  int64_t dims[2] = {b->dims[0] * s->dims[1] * per_class, 3};
  infer_set(g, n, 0, DT_I64, 2, dims);
  set_extents(g, n);
  return LOOM_OK;
}
