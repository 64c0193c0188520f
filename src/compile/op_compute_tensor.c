/* The compute half of the op strategy for indexing, rearrangement and the
 * N-D sliding-window ops (topi_ops_tensor.h): GatherElements, GatherND,
 * ScatterElements, ScatterND, OneHot, Trilu, EyeLike, DepthToSpace,
 * SpaceToDepth, ReverseSequence, CenterCropPad, Einsum, Conv (NCHW, any
 * spatial rank), ConvTranspose, Col2Im, MaxPool (with Indices) /
 * AveragePool / LpPool over any spatial rank, MaxUnpool, Pad (modes and
 * axes), Resize and Dropout (with its mask), and the ops that make a
 * tensor from shapes and constants (Shape, Size, ConstantOfShape, Range):
 * one row per op in compile_tensor_computes. */
#include "compile/compile.h"

#include "graph/graph_dynamic.h"
#include "graph/graph_resize.h"
#include "topi/topi_ops.h"

#include <string.h>

enum { MAX_INTS = 64 };

static loom_status fail(const GraphNode *n, LoomError *err, const char *detail) {
  return err_set(err, LOOM_ERR_UNSUPPORTED, "%s (node \"%s\"): %s", graph_op_info(n->op)->name, n->name ? n->name : "?",
                 detail);
}

static loom_status done(TeTensor *t) { return t ? LOOM_OK : LOOM_ERR_INVALID_ARG; }

/* The window op's attribute `name` (its default when absent), or `neutral`
 * for a window op that has no such attribute: this reader serves them all. */
static int64_t window_attr(const GraphNode *n, const char *name, int64_t neutral) {
  const GraphAttrDef *d = graph_op_attr(n->op, name);
  return d && d->presence == GRAPH_ATTR_DEFAULT ? graph_node_int(n, name) : neutral;
}

/* strides, dilations, pads (and the kernel, output_padding) of an N-D
 * window op over nsp spatial axes. */
static loom_status window_params(const GraphNode *n, int nsp, TopiWindowParams *p, LoomError *err) {
  memset(p, 0, sizeof *p);
  if (nsp < 1 || nsp > TOPI_MAX_SPATIAL) return fail(n, err, "only 1 to 6 spatial axes are supported");
  p->nsp = nsp;
  struct {
    const char *name;
    int64_t *dst;
    int count;
  } lists[] = {{"kernel_shape", p->kernel, nsp},     {"strides", p->strides, nsp},
               {"dilations", p->dilations, nsp},     {"pads", p->pads, 2 * nsp},
               {"output_padding", p->output_padding, nsp}};
  for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
    int64_t v[MAX_INTS];
    int c = compile_attr_ints(n, lists[k].name, v);
    if (c < 0) continue;
    /* Old exporters spell some of these with the N and C axes too. */
    int skip = c == lists[k].count + 2 && lists[k].count == nsp ? 2 : 0;
    if (c - skip != lists[k].count)
      return err_set(err, LOOM_ERR_INVALID_ARG, "%s (node \"%s\"): %s has %d entries, expected %d",
                     graph_op_info(n->op)->name, n->name, lists[k].name, c, lists[k].count);
    memcpy(lists[k].dst, v + skip, sizeof(int64_t) * (size_t)lists[k].count);
  }
  p->group = window_attr(n, "group", 1);
  p->ceil_mode = window_attr(n, "ceil_mode", 0) != 0;
  p->count_include_pad = window_attr(n, "count_include_pad", 0) != 0;
  p->p = window_attr(n, "p", 2);
  return LOOM_OK;
}

loom_status compile_window_params(const GraphNode *n, int nsp, TopiWindowParams *p, LoomError *err) {
  return window_params(n, nsp, p, err);
}

static TopiScatterReduce scatter_reduction(const GraphNode *n) {
  const char *r = graph_node_string(n, "reduction");
  return !strcmp(r, "add") ? TOPI_SCATTER_ADD
         : !strcmp(r, "mul") ? TOPI_SCATTER_MUL
         : !strcmp(r, "max") ? TOPI_SCATTER_MAX
         : !strcmp(r, "min") ? TOPI_SCATTER_MIN
                             : TOPI_SCATTER_NONE;
}

static bool output_used(const GraphNode *n, int k) { return k < n->noutputs && n->outputs[k] != GRAPH_NO_VALUE; }

/* MaxPool (with its Indices output), AveragePool and LpPool. */
static loom_status pools(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                         TeTensor **outs, LoomError *err) {
  TopiWindowParams p;
  loom_status st = window_params(n, ins[0]->ndim - 2, &p, err);
  if (st) return st;
  if (n->op == GRAPH_OP_LP_POOL) return done(outs[0] = topi_lp_pool_nd(a, name, ins[0], &p, err));
  TopiPoolKind kind = n->op == GRAPH_OP_MAX_POOL ? TOPI_POOL_MAX : TOPI_POOL_AVG;
  if (!(outs[0] = topi_pool_nd_onnx(a, name, kind, ins[0], &p, false, err))) return LOOM_ERR_INVALID_ARG;
  if (kind == TOPI_POOL_MAX && output_used(n, 1))
    return done(outs[1] = topi_max_pool_indices(a, arena_printf(a, "%s_idx", name), ins[0], outs[0], &p,
                                                (int)graph_node_int(n, "storage_order"), err));
  return LOOM_OK;
}

static loom_status pad(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                       TeTensor **outs, LoomError *err) {
  int64_t v[MAX_INTS], axes[MAX_INTS], pads[2 * TOPI_MAX_SPATIAL + 4] = {0};
  int r = ins[0]->ndim;
  int cnt = compile_const_ints(g, n, 1, v), na = compile_const_ints(g, n, 3, axes);
  if (cnt < 0 || na == -2) return fail(n, err, "pads and axes must be compile-time constants");
  if (r > 8) return fail(n, err, "rank above 8");
  if (na < 0) {
    na = r;
    for (int k = 0; k < r; k++) axes[k] = k;
  }
  if (cnt != 2 * na)
    return err_set(err, LOOM_ERR_INVALID_ARG, "Pad (node \"%s\"): %d pads for %d axes", n->name, cnt, na);
  for (int k = 0; k < na; k++) {
    int64_t ax = axes[k] < 0 ? axes[k] + r : axes[k];
    if (ax < 0 || ax >= r)
      return err_set(err, LOOM_ERR_INVALID_ARG, "Pad (node \"%s\"): axis %lld is out of range for rank %d", n->name,
                     (long long)axes[k], r);
    pads[ax] = v[k], pads[r + ax] = v[na + k];
  }
  double value = 0;
  const TeTensor *value_t = NULL; /* constant_value read at run time */
  if (n->ninputs > 2 && n->inputs[2] != GRAPH_NO_VALUE) {
    const GraphTensor *t = graph_value_constant(g, n->inputs[2]);
    if (!t) value_t = ins[2];
    else if (graph_tensor_numel(t) != 1)
      return err_set(err, LOOM_ERR_INVALID_ARG, "Pad (node \"%s\"): constant_value has %lld elements, not 1", n->name,
                     (long long)graph_tensor_numel(t));
    else value = graph_tensor_get_f64(t, 0);
  }
  const char *mode = graph_node_string(n, "mode");
  TopiPadMode m = !strcmp(mode, "reflect") ? TOPI_PAD_REFLECT
                  : !strcmp(mode, "edge")  ? TOPI_PAD_EDGE
                  : !strcmp(mode, "wrap")  ? TOPI_PAD_WRAP
                                           : TOPI_PAD_CONSTANT;
  if (m == TOPI_PAD_CONSTANT && strcmp(mode, "constant"))
    return err_set(err, LOOM_ERR_UNSUPPORTED, "Pad (node \"%s\"): pad mode \"%s\" is not supported", n->name, mode);
  if (value_t && m == TOPI_PAD_CONSTANT) return done(outs[0] = topi_pad_onnx_tensor(a, name, ins[0], pads, m, value_t, err));
  return done(outs[0] = topi_pad_onnx(a, name, ins[0], pads, m, value, err));
}

/* index of s in names (n of them), or -1 */
static int lookup(const char *s, const char *const *names, int n) {
  for (int k = 0; k < n; k++)
    if (!strcmp(s, names[k])) return k;
  return -1;
}

static loom_status resize(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                          TeTensor **outs, LoomError *err) {
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners",
                                       "half_pixel_symmetric", "tf_crop_and_resize"};
  static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const char *mode = graph_node_string(n, "mode");
  const char *coord = graph_node_string(n, "coordinate_transformation_mode");
  const char *nearest = graph_node_string(n, "nearest_mode");
  int m = lookup(mode, modes, 3), c = lookup(coord, coords, 6), nm = lookup(nearest, nearests, 4);
  if (m < 0 || c < 0 || nm < 0)
    return err_set(err, LOOM_ERR_UNSUPPORTED, "Resize (node \"%s\"): mode \"%s\", coordinate_transformation_mode \"%s\" "
                   "or nearest_mode \"%s\" is not supported", n->name, mode, coord, nearest);
  GraphResizePlan plan;
  loom_status st = graph_resize_plan(g, n, &plan, err);
  if (st) return st;
  if (!plan.known) return fail(n, err, "scales and sizes must be compile-time constants");
  TopiResizeParams p = {.out_shape = g->values[n->outputs[0]].dims,
                        .scales = plan.have_scales ? plan.scales : NULL,
                        .roi = plan.roi,
                        .roi_tensor = plan.roi_runtime ? ins[1] : NULL, /* NULL unless cropping (op_compute.c) */
                        .roi_at = plan.roi_at,
                        .roi_count = plan.roi_count,
                        .mode = (TopiResizeMode)m,
                        .coord = (TopiResizeCoord)c,
                        .nearest = (TopiResizeNearest)nm,
                        .cubic_a = graph_node_float(n, "cubic_coeff_a"),
                        .exclude_outside = graph_node_int(n, "exclude_outside") != 0,
                        .antialias = graph_node_int(n, "antialias") != 0,
                        .extrapolation_value = graph_node_float(n, "extrapolation_value")};
  return done(outs[0] = topi_resize_ex(a, name, ins[0], &p, err));
}

/* A compile-time scalar operand (default dflt when omitted). */
static bool scalar_operand(const Graph *g, const GraphNode *n, int input, double dflt, double *out) {
  *out = dflt;
  if (input >= n->ninputs || n->inputs[input] == GRAPH_NO_VALUE) return true;
  const GraphTensor *t = graph_value_constant(g, n->inputs[input]);
  if (!t || graph_tensor_numel(t) != 1) return false;
  *out = graph_tensor_get_f64(t, 0);
  return true;
}

/* Inference: the identity, and an all-true mask. */
static loom_status dropout(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                           TeTensor **outs, LoomError *err) {
  if (!(outs[0] = topi_unary(a, name, TOPI_IDENTITY, ins[0], NULL, err))) return LOOM_ERR_INVALID_ARG;
  if (output_used(n, 1))
    return done(outs[1] = topi_full_like(a, arena_printf(a, "%s_mask", name), ins[0], g->values[n->outputs[1]].dtype,
                                         1, err));
  return LOOM_OK;
}

/* Conv, ConvInteger (input 2 is x's zero point, 3 w's) and ConvTranspose. */
static loom_status convs(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                         TeTensor **outs, LoomError *err) {
  TopiWindowParams p;
  loom_status st = window_params(n, ins[0]->ndim - 2, &p, err);
  if (st) return st;
  TeTensor *in2 = n->ninputs > 2 ? ins[2] : NULL;
  if (n->op == GRAPH_OP_CONV_INTEGER)
    return done(outs[0] = topi_conv_integer_nd(a, name, ins[0], ins[1], in2, n->ninputs > 3 ? ins[3] : NULL, &p, err));
  return done(outs[0] = n->op == GRAPH_OP_CONV ? topi_conv_nd_onnx(a, name, ins[0], ins[1], in2, &p, err)
                                               : topi_conv_transpose_nd(a, name, ins[0], ins[1], in2, &p, err));
}

static loom_status col2im(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                          TeTensor **outs, LoomError *err) {
  TopiWindowParams p;
  int64_t v[MAX_INTS], w[MAX_INTS];
  int ni = compile_const_ints(g, n, 1, v), nb = compile_const_ints(g, n, 2, w);
  if (ni < 1 || ni != nb) return fail(n, err, "image_shape and block_shape must be compile-time constants of one length");
  loom_status st = window_params(n, ni, &p, err);
  if (st) return st;
  memcpy(p.kernel, w, sizeof(int64_t) * (size_t)nb);
  return done(outs[0] = topi_col2im(a, name, ins[0], v, &p, err));
}

/* The indices address the unpooled shape; output_shape may extend it. */
static loom_status max_unpool(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                              TeTensor **outs, LoomError *err) {
  TopiWindowParams p;
  int64_t v[MAX_INTS];
  loom_status st = window_params(n, ins[0]->ndim - 2, &p, err);
  if (st) return st;
  for (int i = 0; i < p.nsp; i++)
    v[i] = (ins[0]->shape[2 + i] - 1) * (p.strides[i] ? p.strides[i] : 1) - p.pads[i] - p.pads[p.nsp + i] + p.kernel[i];
  const GraphValue *out = &g->values[n->outputs[0]];
  return done(outs[0] = topi_max_unpool(a, name, ins[0], ins[1], v, out->dims + 2, err));
}

static loom_status gather_elements(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                                   TeTensor **outs, LoomError *err) {
  return done(outs[0] = topi_gather_elements(a, name, ins[0], ins[1], graph_node_int(n, "axis"), err));
}

static loom_status gather_nd(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                             TeTensor **outs, LoomError *err) {
  return done(outs[0] = topi_gather_nd(a, name, ins[0], ins[1], graph_node_int(n, "batch_dims"), err));
}

static loom_status scatter_elements(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                    const char *name, TeTensor **outs, LoomError *err) {
  return done(outs[0] = topi_scatter_elements(a, name, ins[0], ins[1], ins[2], graph_node_int(n, "axis"),
                                              scatter_reduction(n), err));
}

static loom_status scatter_nd(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                              TeTensor **outs, LoomError *err) {
  return done(outs[0] = topi_scatter_nd(a, name, ins[0], ins[1], ins[2], scatter_reduction(n), err));
}

static loom_status one_hot(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                           TeTensor **outs, LoomError *err) {
  double s;
  if (!scalar_operand(g, n, 1, 0, &s)) return fail(n, err, "depth must be a compile-time constant");
  return done(outs[0] = topi_one_hot(a, name, ins[0], (int64_t)s, ins[2], graph_node_int(n, "axis"), err));
}

static loom_status trilu(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                         TeTensor **outs, LoomError *err) {
  double s;
  if (!scalar_operand(g, n, 1, 0, &s)) return fail(n, err, "k must be a compile-time constant");
  return done(outs[0] = topi_trilu(a, name, ins[0], (int64_t)s, graph_node_int(n, "upper") != 0, err));
}

static loom_status eye_like(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                            TeTensor **outs, LoomError *err) {
  return done(outs[0] = topi_eye_like(a, name, ins[0], g->values[n->outputs[0]].dtype, graph_node_int(n, "k"), err));
}

static loom_status depth_to_space(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                                  TeTensor **outs, LoomError *err) {
  return done(outs[0] = topi_depth_to_space(a, name, ins[0], graph_attr_int(n, "blocksize", 0),
                                            !strcmp(graph_node_string(n, "mode"), "CRD"), err));
}

static loom_status space_to_depth(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                                  TeTensor **outs, LoomError *err) {
  return done(outs[0] = topi_space_to_depth(a, name, ins[0], graph_attr_int(n, "blocksize", 0), err));
}

static loom_status reverse_sequence(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                    const char *name, TeTensor **outs, LoomError *err) {
  return done(outs[0] = topi_reverse_sequence(a, name, ins[0], ins[1], graph_node_int(n, "batch_axis"),
                                              graph_node_int(n, "time_axis"), err));
}

static loom_status center_crop_pad(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                                   TeTensor **outs, LoomError *err) {
  int64_t v[MAX_INTS], w[MAX_INTS];
  int ns = compile_const_ints(g, n, 1, v), na = compile_attr_ints(n, "axes", w);
  if (ns < 0) return fail(n, err, "shape must be a compile-time constant");
  return done(outs[0] = topi_center_crop_pad(a, name, ins[0], v, na >= 0 ? w : NULL, ns, err));
}

static loom_status einsum(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                          TeTensor **outs, LoomError *err) {
  return done(outs[0] = topi_einsum(a, name, graph_attr_string(n, "equation", ""), (const TeTensor *const *)ins,
                                    n->ninputs, err));
}

/* ---- tensors made from shapes and constants ----
 * Folding (graph/pass_fold.c) turns these into constants whenever it can;
 * these rows are for what it leaves: a result over its size limit (a large
 * fill added to activations, a long Range) becomes a fill or iota kernel. */

/* Element 0 of constant t as a scalar expression of t's dtype (integers
 * exactly, all 64 bits). */
static const Expr *scalar_of(Arena *a, const GraphTensor *t) {
  if (dtype_is_float(t->dtype)) return expr_float(a, t->dtype, graph_tensor_get_f64(t, 0));
  int64_t v = graph_tensor_get_i64(t, 0);
  return expr_int(a, t->dtype, dtype_is_bool(t->dtype) ? v != 0 : v);
}

static loom_status shape_of_input(const Graph *g, const GraphNode *n, const GraphValue **x, LoomError *err) {
  *x = n->ninputs > 0 && n->inputs[0] >= 0 ? &g->values[n->inputs[0]] : NULL;
  if (!*x || !graph_value_is_static(*x)) return fail(n, err, "the input's shape is not static");
  if (graph_value_is_data_dependent(g, n->inputs[0]))
    return fail(n, err, "the input's shape depends on data (known only at run time): not supported yet");
  return LOOM_OK;
}

/* Shape: out[i] = dims[start + i] (folding makes it a constant; this row
 * computes the same values). */
static loom_status shape(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                         TeTensor **outs, LoomError *err) {
  (void)ins;
  const GraphValue *x, *o = &g->values[n->outputs[0]];
  loom_status st = shape_of_input(g, n, &x, err);
  if (st) return st;
  int64_t count = o->rank == 1 ? o->dims[0] : -1, start = graph_attr_int(n, "start", 0);
  if (start < 0) start += x->rank;
  if (start < 0) start = 0;
  if (count < 0 || start + count > x->rank) return fail(n, err, "the output's extent does not match the input's rank");
  if (count == 0) return done(outs[0] = topi_full(a, name, 1, &count, expr_int(a, DT_I64, 0), err));
  return done(outs[0] = topi_int_values(a, name, DT_I64, x->dims + start, count, err));
}

/* Size: the element count, a scalar. */
static loom_status size(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                        TeTensor **outs, LoomError *err) {
  (void)ins;
  const GraphValue *x;
  loom_status st = shape_of_input(g, n, &x, err);
  if (st) return st;
  return done(outs[0] = topi_full(a, name, 0, NULL, expr_int(a, DT_I64, graph_shape_numel(x->rank, x->dims)), err));
}

/* ConstantOfShape: the value attribute (f32 0 when absent) over the
 * output's (static) shape. */
static loom_status constant_of_shape(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                     const char *name, TeTensor **outs, LoomError *err) {
  (void)ins;
  const GraphValue *o = &g->values[n->outputs[0]];
  const GraphAttr *v = graph_node_attr(n, "value");
  if (!graph_value_is_static(o)) return fail(n, err, "the shape must be a compile-time constant");
  if (v && (v->kind != GRAPH_ATTR_TENSOR || !v->t || graph_tensor_numel(v->t) != 1))
    return fail(n, err, "attribute \"value\" must be a one-element tensor");
  const Expr *fill = v ? scalar_of(a, v->t) : expr_float(a, DT_F32, 0.0);
  if (!dtype_eq(fill->dtype, o->dtype)) fill = expr_cast(a, o->dtype, fill);
  return done(outs[0] = topi_full(a, name, o->rank, o->dims, fill, err));
}

/* Range: start and delta are compile-time operands (the output's extent
 * depends on them), so they are constants here. */
static loom_status range(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                         TeTensor **outs, LoomError *err) {
  (void)ins;
  const GraphValue *o = &g->values[n->outputs[0]];
  const GraphTensor *start = graph_value_constant(g, n->inputs[0]), *delta = graph_value_constant(g, n->inputs[2]);
  if (!start || !delta || !graph_value_is_static(o) || o->rank != 1)
    return fail(n, err, "start, limit and delta must be compile-time constants");
  return done(outs[0] = topi_arange(a, name, o->dims[0], scalar_of(a, start), scalar_of(a, delta), err));
}

const CompileComputeFn compile_tensor_computes[GRAPH_OP_COUNT] = {
    [GRAPH_OP_DROPOUT] = dropout,
    [GRAPH_OP_CONV] = convs,
    [GRAPH_OP_CONV_INTEGER] = convs,
    [GRAPH_OP_CONV_TRANSPOSE] = convs,
    [GRAPH_OP_COL2IM] = col2im,
    [GRAPH_OP_MAX_POOL] = pools,
    [GRAPH_OP_AVERAGE_POOL] = pools,
    [GRAPH_OP_LP_POOL] = pools,
    [GRAPH_OP_MAX_UNPOOL] = max_unpool,
    [GRAPH_OP_PAD] = pad,
    [GRAPH_OP_RESIZE] = resize,
    [GRAPH_OP_GATHER_ELEMENTS] = gather_elements,
    [GRAPH_OP_GATHER_ND] = gather_nd,
    [GRAPH_OP_SCATTER_ELEMENTS] = scatter_elements,
    [GRAPH_OP_SCATTER_ND] = scatter_nd,
    [GRAPH_OP_ONE_HOT] = one_hot,
    [GRAPH_OP_TRILU] = trilu,
    [GRAPH_OP_EYE_LIKE] = eye_like,
    [GRAPH_OP_DEPTH_TO_SPACE] = depth_to_space,
    [GRAPH_OP_SPACE_TO_DEPTH] = space_to_depth,
    [GRAPH_OP_REVERSE_SEQUENCE] = reverse_sequence,
    [GRAPH_OP_CENTER_CROP_PAD] = center_crop_pad,
    [GRAPH_OP_EINSUM] = einsum,
    [GRAPH_OP_SHAPE] = shape,
    [GRAPH_OP_SIZE] = size,
    [GRAPH_OP_CONSTANT_OF_SHAPE] = constant_of_shape,
    [GRAPH_OP_RANGE] = range,
};
