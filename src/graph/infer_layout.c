/* Inference for the data-movement ops (reshape, slice, gather...) and the
 * shape-producing ops (Shape, ConstantOfShape, Range). Operands that define
 * a shape must be constant for the output shape to be known. */
#include "graph/infer_internal.h"

#include <string.h>

/* When a shape operand is not constant yet: the dtype is known, and the
 * rank where given (-1 otherwise), with every extent unknown. */
static loom_status partial(Graph *g, GraphNode *n, const GraphValue *x, int rank) {
  int64_t dims[INFER_MAX_RANK];
  for (int k = 0; k < INFER_MAX_RANK; k++) dims[k] = -1;
  infer_set(g, n, 0, x->dtype, rank <= INFER_MAX_RANK ? rank : -1, dims);
  return LOOM_OK;
}

loom_status infer_flatten(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  int64_t axis = graph_node_int(n, "axis");
  if (axis < -(int64_t)x->rank || axis > x->rank)
    return infer_fail(g, n, err, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
  if (axis < 0) axis += x->rank;
  int64_t dims[2] = {graph_shape_numel((int)axis, x->dims), graph_shape_numel(x->rank - (int)axis, x->dims + axis)};
  if (dims[0] < -1 || dims[1] < -1) return infer_fail(g, n, err, "element count overflows");
  infer_set(g, n, 0, x->dtype, 2, dims);
  return LOOM_OK;
}

loom_status infer_reshape(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected inputs data and shape");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  int64_t *shape;
  int r;
  if (!infer_const_ints(g, n->inputs[1], &shape, &r)) {
    const GraphValue *s = infer_input(g, n, 1);
    return partial(g, n, x, s && s->rank == 1 && s->dims[0] >= 0 ? (int)s->dims[0] : -1);
  }
  if (r > INFER_MAX_RANK) return infer_fail(g, n, err, "target rank %d too large", r);
  bool allowzero = graph_node_int(n, "allowzero") != 0;
  int64_t dims[INFER_MAX_RANK];
  int infer_at = -1;
  int64_t known = 1;
  for (int k = 0; k < r; k++) {
    int64_t d = shape[k];
    if (d == 0 && !allowzero) {
      if (k >= x->rank) return infer_fail(g, n, err, "shape entry %d is 0 (copy) but the input has rank %d", k, x->rank);
      d = x->dims[k];
    }
    if (d == -1) {
      if (infer_at >= 0) return infer_fail(g, n, err, "shape has more than one -1");
      infer_at = k;
    } else if (d < -1) {
      return infer_fail(g, n, err, "shape entry %d is %lld", k, (long long)d);
    }
    dims[k] = d;
    if (d >= 0 && known >= 0) known = d && known > INT64_MAX / d ? -2 : known * d;
  }
  int64_t total = graph_shape_numel(x->rank, x->dims);
  if (total == -2 || known == -2) return infer_fail(g, n, err, "element count overflows");
  bool unknown_src = false;
  for (int k = 0; k < r; k++)
    if (k != infer_at && dims[k] < 0) unknown_src = true;
  if (infer_at >= 0) {
    if (total >= 0 && !unknown_src) {
      if (known == 0 || total % known)
        return infer_fail(g, n, err, "cannot reshape %lld elements with -1 and %lld other elements", (long long)total,
                          (long long)known);
      dims[infer_at] = total / known;
    } else {
      dims[infer_at] = -1;
    }
  } else if (total >= 0 && !unknown_src && total != known) {
    return infer_fail(g, n, err, "cannot reshape %lld elements into %lld", (long long)total, (long long)known);
  }
  infer_set(g, n, 0, x->dtype, r, dims);
  return LOOM_OK;
}

loom_status infer_transpose(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  int cnt;
  const int64_t *perm = infer_attr_ints(n, "perm", &cnt);
  if (perm && cnt != x->rank) return infer_fail(g, n, err, "perm has %d entries but the input has rank %d", cnt, x->rank);
  bool seen[INFER_MAX_RANK] = {0};
  int64_t dims[INFER_MAX_RANK];
  for (int k = 0; k < x->rank; k++) {
    int64_t p = perm ? perm[k] : x->rank - 1 - k;
    if (p < 0 || p >= x->rank || seen[p]) return infer_fail(g, n, err, "perm is not a permutation of 0..%d", x->rank - 1);
    seen[p] = true;
    dims[k] = x->dims[p];
  }
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  return LOOM_OK;
}

loom_status infer_concat(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 1) return infer_fail(g, n, err, "expected at least one input");
  for (int k = 0; k < n->ninputs; k++)
    if (!infer_known(g, n, k)) return LOOM_OK;
  const GraphValue *x0 = infer_input(g, n, 0);
  if (x0->rank > INFER_MAX_RANK || x0->rank < 1) return infer_fail(g, n, err, "input rank %d unsupported", x0->rank);
  int axis;
  loom_status st = infer_axis(g, n, err, graph_attr_int(n, "axis", 0), x0->rank, &axis);
  if (st) return st;
  int64_t dims[INFER_MAX_RANK];
  memcpy(dims, x0->dims, sizeof(int64_t) * (size_t)x0->rank);
  for (int k = 1; k < n->ninputs; k++) {
    const GraphValue *x = infer_input(g, n, k);
    if (x->rank != x0->rank) return infer_fail(g, n, err, "input %d \"%s\" has rank %d, expected %d", k, x->name, x->rank, x0->rank);
    if (!dtype_eq(x->dtype, x0->dtype)) return infer_fail(g, n, err, "input %d \"%s\" has a different dtype", k, x->name);
    for (int d = 0; d < x->rank; d++) {
      if (d == axis) {
        if (dims[d] < 0 || x->dims[d] < 0) dims[d] = -1;
        else if (!infer_add(dims[d], x->dims[d], &dims[d])) return infer_fail(g, n, err, "concatenated extent overflows");
      } else if (x->dims[d] >= 0 && dims[d] >= 0 && x->dims[d] != dims[d]) {
        return infer_fail(g, n, err, "input %d \"%s\" has extent %lld in dimension %d, expected %lld", k, x->name,
                          (long long)x->dims[d], d, (long long)dims[d]);
      } else if (dims[d] < 0) {
        dims[d] = x->dims[d];
      }
    }
  }
  infer_set(g, n, 0, x0->dtype, x0->rank, dims);
  return LOOM_OK;
}

loom_status infer_split(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  int axis;
  loom_status st = infer_axis(g, n, err, graph_node_int(n, "axis"), x->rank, &axis);
  if (st) return st;
  int64_t *split = NULL;
  int nsplit = 0;
  if (infer_input(g, n, 1)) {
    if (!infer_const_ints(g, n->inputs[1], &split, &nsplit)) return LOOM_OK;
    if (nsplit != n->noutputs) return infer_fail(g, n, err, "split has %d entries for %d outputs", nsplit, n->noutputs);
  }
  int64_t extent = x->dims[axis], dims[INFER_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  int64_t sum = 0;
  for (int k = 0; k < n->noutputs; k++) {
    int64_t e;
    if (split) {
      e = split[k];
      if (e < 0) return infer_fail(g, n, err, "split entry %d is negative", k);
    } else if (extent < 0) {
      e = -1;
    } else {
      /* Equal parts; with num_outputs (opset 18) the last part may be smaller. */
      int64_t part = (extent + n->noutputs - 1) / n->noutputs;
      e = k < n->noutputs - 1 ? part : extent - part * (n->noutputs - 1);
      if (e < 0) return infer_fail(g, n, err, "cannot split extent %lld into %d parts", (long long)extent, n->noutputs);
    }
    if (e >= 0 && !infer_add(sum, e, &sum)) return infer_fail(g, n, err, "split sizes overflow");
    dims[axis] = e;
    infer_set(g, n, k, x->dtype, x->rank, dims);
  }
  if (split && extent >= 0 && sum != extent)
    return infer_fail(g, n, err, "split sizes sum to %lld but axis %d has extent %lld", (long long)sum, axis, (long long)extent);
  return LOOM_OK;
}

/* Clamps Slice bounds as the ONNX spec does; shared with the folder. */
void graph_slice_bounds(int64_t extent, int64_t step, int64_t *start, int64_t *end, int64_t *count) {
  int64_t s = *start, e = *end;
  if (step < -INT64_MAX) step = -INT64_MAX; /* same slice; keeps -step defined */
  if (s < 0) s += extent;
  if (e < 0) e += extent;
  if (step > 0) {
    s = s < 0 ? 0 : s > extent ? extent : s;
    e = e < 0 ? 0 : e > extent ? extent : e;
    *count = e > s ? (e - s - 1) / step + 1 : 0;
  } else {
    s = s < 0 ? 0 : s > extent - 1 ? extent - 1 : s;
    e = e < -1 ? -1 : e > extent - 1 ? extent - 1 : e;
    *count = s > e ? (s - e - 1) / (-step) + 1 : 0;
  }
  *start = s;
  *end = e;
}

loom_status infer_slice(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 3) return infer_fail(g, n, err, "expected inputs data, starts and ends");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  int64_t *starts, *ends, *axes = NULL, *steps = NULL;
  int ns, ne, na = 0, nst = 0;
  if (!infer_const_ints(g, n->inputs[1], &starts, &ns) || !infer_const_ints(g, n->inputs[2], &ends, &ne) ||
      (infer_input(g, n, 3) && !infer_const_ints(g, n->inputs[3], &axes, &na)) ||
      (infer_input(g, n, 4) && !infer_const_ints(g, n->inputs[4], &steps, &nst)))
    return partial(g, n, x, x->rank);
  if (ne != ns || (axes && na != ns) || (steps && nst != ns))
    return infer_fail(g, n, err, "starts, ends, axes and steps must have the same length");
  int64_t dims[INFER_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  bool seen[INFER_MAX_RANK] = {0};
  for (int k = 0; k < ns; k++) {
    int ax;
    loom_status st = infer_axis(g, n, err, axes ? axes[k] : k, x->rank, &ax);
    if (st) return st;
    if (seen[ax]) return infer_fail(g, n, err, "axis %d is sliced twice", ax);
    seen[ax] = true;
    int64_t step = steps ? steps[k] : 1;
    if (step == 0) return infer_fail(g, n, err, "step is 0 on axis %d", ax);
    if (x->dims[ax] < 0) continue;
    int64_t s = starts[k], e = ends[k], count;
    graph_slice_bounds(x->dims[ax], step, &s, &e, &count);
    dims[ax] = count;
  }
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  return LOOM_OK;
}

loom_status infer_gather(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2) return infer_fail(g, n, err, "expected inputs data and indices");
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0), *idx = infer_input(g, n, 1);
  if (!dtype_is_int(idx->dtype)) return infer_fail(g, n, err, "indices \"%s\" must be integers", idx->name);
  if (x->rank < 1) return infer_fail(g, n, err, "data must have rank >= 1");
  int axis;
  loom_status st = infer_axis(g, n, err, graph_node_int(n, "axis"), x->rank, &axis);
  if (st) return st;
  int r = x->rank - 1 + idx->rank;
  if (r > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  int64_t dims[INFER_MAX_RANK];
  int o = 0;
  for (int k = 0; k < axis; k++) dims[o++] = x->dims[k];
  for (int k = 0; k < idx->rank; k++) dims[o++] = idx->dims[k];
  for (int k = axis + 1; k < x->rank; k++) dims[o++] = x->dims[k];
  infer_set(g, n, 0, x->dtype, r, dims);
  return LOOM_OK;
}

loom_status infer_squeeze(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  int64_t *axes = NULL;
  int na = 0;
  if (infer_input(g, n, 1) && !infer_const_ints(g, n->inputs[1], &axes, &na)) return partial(g, n, x, -1);
  bool drop[INFER_MAX_RANK] = {0};
  if (!axes) {
    for (int k = 0; k < x->rank; k++) {
      if (x->dims[k] < 0) return LOOM_OK;
      drop[k] = x->dims[k] == 1;
    }
  }
  for (int k = 0; k < na; k++) {
    int ax;
    loom_status st = infer_axis(g, n, err, axes[k], x->rank, &ax);
    if (st) return st;
    if (x->dims[ax] >= 0 && x->dims[ax] != 1)
      return infer_fail(g, n, err, "cannot squeeze axis %d of extent %lld", ax, (long long)x->dims[ax]);
    drop[ax] = true;
  }
  int64_t dims[INFER_MAX_RANK];
  int r = 0;
  for (int k = 0; k < x->rank; k++)
    if (!drop[k]) dims[r++] = x->dims[k];
  infer_set(g, n, 0, x->dtype, r, dims);
  return LOOM_OK;
}

loom_status infer_unsqueeze(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected inputs data and axes");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  int64_t *axes;
  int na;
  if (!infer_const_ints(g, n->inputs[1], &axes, &na)) return partial(g, n, x, -1);
  int r = x->rank + na;
  if (r > INFER_MAX_RANK) return infer_fail(g, n, err, "rank %d too large", r);
  bool ins[INFER_MAX_RANK] = {0};
  for (int k = 0; k < na; k++) {
    int ax;
    loom_status st = infer_axis(g, n, err, axes[k], r, &ax);
    if (st) return st;
    if (ins[ax]) return infer_fail(g, n, err, "axis %d repeated", ax);
    ins[ax] = true;
  }
  int64_t dims[INFER_MAX_RANK];
  for (int k = 0, src = 0; k < r; k++) dims[k] = ins[k] ? 1 : x->dims[src++];
  infer_set(g, n, 0, x->dtype, r, dims);
  return LOOM_OK;
}

loom_status infer_expand(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2) return infer_fail(g, n, err, "expected inputs input and shape");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  int64_t *shape;
  int r;
  if (!infer_const_ints(g, n->inputs[1], &shape, &r)) return partial(g, n, x, -1);
  int ro;
  int64_t dims[INFER_MAX_RANK];
  if (r > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  loom_status st = infer_broadcast_shapes(g, n, err, x->rank, x->dims, r, shape, &ro, dims);
  if (st) return st;
  infer_set(g, n, 0, x->dtype, ro, dims);
  return LOOM_OK;
}

loom_status infer_pad(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  int64_t *pads, *axes = NULL;
  int np, na = 0;
  if (!infer_input(g, n, 1)) return infer_fail(g, n, err, "missing pads input");
  if (!infer_const_ints(g, n->inputs[1], &pads, &np) || (infer_input(g, n, 3) && !infer_const_ints(g, n->inputs[3], &axes, &na)))
    return partial(g, n, x, x->rank);
  int nax = axes ? na : x->rank;
  if (np != 2 * nax) return infer_fail(g, n, err, "pads has %d entries, expected %d", np, 2 * nax);
  int64_t dims[INFER_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  for (int k = 0; k < nax; k++) {
    int ax = k;
    if (axes) {
      loom_status st = infer_axis(g, n, err, axes[k], x->rank, &ax);
      if (st) return st;
    }
    if (dims[ax] < 0) continue;
    if (!infer_add(dims[ax], pads[k], &dims[ax]) || !infer_add(dims[ax], pads[k + nax], &dims[ax]))
      return infer_fail(g, n, err, "padding overflows axis %d", ax);
    if (dims[ax] < 0) return infer_fail(g, n, err, "padding makes axis %d negative", ax);
  }
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  return LOOM_OK;
}

loom_status infer_tile(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2) return infer_fail(g, n, err, "expected inputs input and repeats");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  int64_t *rep;
  int nr;
  if (!infer_const_ints(g, n->inputs[1], &rep, &nr)) return partial(g, n, x, x->rank);
  if (nr != x->rank || x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "repeats has %d entries for rank %d", nr, x->rank);
  int64_t dims[INFER_MAX_RANK];
  for (int k = 0; k < x->rank; k++) {
    if (rep[k] < 0) return infer_fail(g, n, err, "repeats entry %d is negative", k);
    dims[k] = -1;
    if (x->dims[k] >= 0 && !infer_mul(x->dims[k], rep[k], &dims[k])) return infer_fail(g, n, err, "tiled extent overflows");
  }
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  return LOOM_OK;
}

loom_status infer_shape(Graph *g, GraphNode *n, LoomError *err) {
  const GraphValue *x = infer_input(g, n, 0);
  if (!x) return infer_fail(g, n, err, "missing input");
  if (x->rank < 0) return LOOM_OK;
  int64_t start = graph_attr_int(n, "start", 0), end = graph_attr_int(n, "end", x->rank);
  if (start < 0) start += x->rank;
  if (end < 0) end += x->rank;
  start = start < 0 ? 0 : start > x->rank ? x->rank : start;
  end = end < 0 ? 0 : end > x->rank ? x->rank : end;
  int64_t len = end > start ? end - start : 0;
  infer_set(g, n, 0, DT_I64, 1, &len);
  return LOOM_OK;
}

loom_status infer_constant_of_shape(Graph *g, GraphNode *n, LoomError *err) {
  const GraphAttr *a = graph_node_attr(n, "value");
  DType t = a && a->kind == GRAPH_ATTR_TENSOR ? a->t->dtype : DT_F32;
  if (a && (a->kind != GRAPH_ATTR_TENSOR || graph_tensor_numel(a->t) != 1))
    return infer_fail(g, n, err, "attribute \"value\" must be a one-element tensor");
  int64_t *shape;
  int r;
  if (n->ninputs < 1 || !infer_const_ints(g, n->inputs[0], &shape, &r)) {
    infer_set(g, n, 0, t, -1, NULL);
    return LOOM_OK;
  }
  if (r > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  for (int k = 0; k < r; k++)
    if (shape[k] < 0) return infer_fail(g, n, err, "shape entry %d is negative", k);
  infer_set(g, n, 0, t, r, shape);
  return LOOM_OK;
}

loom_status infer_range(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 3) return infer_fail(g, n, err, "expected inputs start, limit and delta");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  DType t = infer_input(g, n, 0)->dtype;
  const GraphTensor *s = graph_value_constant(g, n->inputs[0]), *l = graph_value_constant(g, n->inputs[1]),
                    *d = graph_value_constant(g, n->inputs[2]);
  int64_t len = -1;
  if (s && l && d && graph_tensor_numel(s) == 1 && graph_tensor_numel(l) == 1 && graph_tensor_numel(d) == 1) {
    double ds = graph_tensor_get_f64(s, 0), dl = graph_tensor_get_f64(l, 0), dd = graph_tensor_get_f64(d, 0);
    if (dd == 0) return infer_fail(g, n, err, "delta is 0");
    double c = (dl - ds) / dd;
    c = c > 0 ? c : 0;
    if (c > 1e12 || c != c) return infer_fail(g, n, err, "range too long");
    len = (int64_t)c;
    if ((double)len < c) len++;
  }
  infer_set(g, n, 0, t, 1, &len);
  return LOOM_OK;
}
