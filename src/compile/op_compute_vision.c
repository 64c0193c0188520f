/* The compute half of the op strategy for the vision ops, BitCast, TopK
 * and the data-dependent-extent ops (compile/dynamic.c attaches their
 * extent outputs): node attributes and compile-time operands -> the topi
 * calls of topi/topi_ops_vision.h, one row per op in
 * compile_vision_computes. */
#include "compile/compile.h"

#include "graph/graph_dynamic.h"
#include "topi/topi_ops.h"

#include <string.h>

static loom_status fail(const GraphNode *n, LoomError *err, loom_status st, const char *msg, const char *detail) {
  return err_set(err, st, "%s (node \"%s\"): %s%s", graph_op_info(n->op)->name, n->name ? n->name : "?", msg,
                 detail ? detail : "");
}

static loom_status done(TeTensor *t, LoomError *err) {
  return t ? LOOM_OK : (err->status ? err->status : LOOM_ERR_INVALID_ARG);
}

static int attr_ints(const GraphNode *n, const char *name, int64_t *out, int max) {
  const GraphAttr *at = graph_node_attr(n, name);
  if (!at || at->kind != GRAPH_ATTR_INTS || at->n > max) return -1;
  memcpy(out, at->ints, sizeof(int64_t) * (size_t)at->n);
  return at->n;
}

/* A compile-time constant operand's integers (at most max); -1 when absent
 * or not constant. */
static int const_ints(const Graph *g, const GraphNode *n, int input, int64_t *out, int max) {
  if (input >= n->ninputs || n->inputs[input] == GRAPH_NO_VALUE) return -1;
  const GraphTensor *t = graph_value_constant(g, n->inputs[input]);
  if (!t || graph_tensor_numel(t) > max) return -1;
  int64_t c = graph_tensor_numel(t);
  for (int64_t k = 0; k < c; k++) out[k] = graph_tensor_get_i64(t, k);
  return (int)c;
}

static TeTensor *in_or_null(const GraphNode *n, TeTensor *const *ins, int k) {
  return k < n->ninputs && n->inputs[k] != GRAPH_NO_VALUE ? ins[k] : NULL;
}

static loom_status grid_sample(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                               TeTensor **outs, LoomError *err) {
  const char *mode = graph_node_string(n, "mode"), *pad = graph_node_string(n, "padding_mode");
  TopiGridSampleMode m;
  if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear")) m = TOPI_GRID_LINEAR;
  else if (!strcmp(mode, "nearest")) m = TOPI_GRID_NEAREST;
  else if (!strcmp(mode, "cubic") || !strcmp(mode, "bicubic")) m = TOPI_GRID_CUBIC;
  else return fail(n, err, LOOM_ERR_INVALID_ARG, "unknown mode ", mode);
  TopiGridSamplePad p;
  if (!strcmp(pad, "zeros")) p = TOPI_GRID_ZEROS;
  else if (!strcmp(pad, "border")) p = TOPI_GRID_BORDER;
  else if (!strcmp(pad, "reflection")) p = TOPI_GRID_REFLECTION;
  else return fail(n, err, LOOM_ERR_INVALID_ARG, "unknown padding_mode ", pad);
  outs[0] = topi_grid_sample(a, name, ins[0], ins[1], m, p, graph_node_int(n, "align_corners") != 0, err);
  return done(outs[0], err);
}

static loom_status roi_align(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                             TeTensor **outs, LoomError *err) {
  TopiRoiAlignParams p;
  memset(&p, 0, sizeof p);
  p.out_h = graph_node_int(n, "output_height");
  p.out_w = graph_node_int(n, "output_width");
  p.sampling_ratio = graph_node_int(n, "sampling_ratio");
  p.spatial_scale = graph_node_float(n, "spatial_scale");
  const char *ctm = graph_node_string(n, "coordinate_transformation_mode");
  const char *mode = graph_node_string(n, "mode");
  if (!strcmp(ctm, "half_pixel")) p.half_pixel = true;
  else if (strcmp(ctm, "output_half_pixel")) return fail(n, err, LOOM_ERR_INVALID_ARG, "unknown coordinate_transformation_mode ", ctm);
  if (!strcmp(mode, "max")) p.max_mode = true;
  else if (strcmp(mode, "avg")) return fail(n, err, LOOM_ERR_INVALID_ARG, "unknown mode ", mode);
  outs[0] = topi_roi_align(a, name, ins[0], ins[1], ins[2], &p, err);
  return done(outs[0], err);
}

static loom_status deform_conv(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                               TeTensor **outs, LoomError *err) {
  TopiDeformConvParams p;
  memset(&p, 0, sizeof p);
  int64_t v[8];
  int c;
  if ((c = attr_ints(n, "strides", v, 8)) == 2) memcpy(p.strides, v, sizeof p.strides);
  else if (c >= 0) return fail(n, err, LOOM_ERR_UNSUPPORTED, "only 2-D deformable convolution is supported", NULL);
  if ((c = attr_ints(n, "dilations", v, 8)) == 2) memcpy(p.dilations, v, sizeof p.dilations);
  else if (c >= 0) return fail(n, err, LOOM_ERR_UNSUPPORTED, "only 2-D deformable convolution is supported", NULL);
  if ((c = attr_ints(n, "pads", v, 8)) == 4) memcpy(p.pads, v, sizeof p.pads);
  else if (c >= 0) return fail(n, err, LOOM_ERR_UNSUPPORTED, "only 2-D deformable convolution is supported", NULL);
  if ((c = attr_ints(n, "kernel_shape", v, 8)) >= 0 && ins[1] && ins[1]->ndim == 4 &&
      (c != 2 || v[0] != ins[1]->shape[2] || v[1] != ins[1]->shape[3]))
    return fail(n, err, LOOM_ERR_INVALID_ARG, "kernel_shape disagrees with W's shape", NULL);
  p.group = graph_node_int(n, "group");
  p.offset_group = graph_node_int(n, "offset_group");
  outs[0] = topi_deform_conv(a, name, ins[0], ins[1], ins[2], in_or_null(n, ins, 3), in_or_null(n, ins, 4), &p, err);
  return done(outs[0], err);
}

/* Extent tensors follow the ONNX outputs (graph/graph_dynamic.h). */
static void put_extents(const GraphNode *n, TeTensor **outs, TeTensor *const *ext) {
  int nonnx, which[GRAPH_MAX_DYNAMIC_OUTPUTS];
  int c = graph_dynamic_outputs(n->op, &nonnx, which);
  for (int j = 0; j < c; j++) outs[nonnx + j] = ext[j];
}

static loom_status affine_grid(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                               TeTensor **outs, LoomError *err) {
  int64_t v[8];
  int c = const_ints(g, n, 1, v, 8);
  if (c < 0) return fail(n, err, LOOM_ERR_UNSUPPORTED, "size must be a compile-time constant", NULL);
  outs[0] = topi_affine_grid(a, name, ins[0], v, c, graph_node_int(n, "align_corners") != 0, err);
  return done(outs[0], err);
}

static loom_status bit_cast(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                            TeTensor **outs, LoomError *err) {
  DType to;
  if (!dtype_parse(graph_attr_string(n, "to", ""), &to))
    return fail(n, err, LOOM_ERR_INVALID_ARG, "attribute \"to\" is not a dtype", NULL);
  outs[0] = topi_bit_cast(a, name, ins[0], to, err);
  return done(outs[0], err);
}

static loom_status top_k(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                         TeTensor **outs, LoomError *err) {
  int64_t v[8];
  if (const_ints(g, n, 1, v, 1) != 1) return fail(n, err, LOOM_ERR_UNSUPPORTED, "K must be a compile-time constant", NULL);
  if (!topi_top_k(a, name, ins[0], v[0], graph_node_int(n, "axis"), graph_node_int(n, "largest") != 0, &outs[0],
                  &outs[1], err))
    return err->status ? err->status : LOOM_ERR_INVALID_ARG;
  return LOOM_OK;
}

/* The data-dependent-extent ops: ok is the topi call's result, ext its
 * extent tensors, which follow the ONNX outputs. */
static loom_status with_extents(bool ok, const GraphNode *n, TeTensor **outs, TeTensor *const *ext, LoomError *err) {
  if (!ok) return err->status ? err->status : LOOM_ERR_INVALID_ARG;
  put_extents(n, outs, ext);
  return LOOM_OK;
}

static loom_status non_zero(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                            TeTensor **outs, LoomError *err) {
  TeTensor *ext[GRAPH_MAX_DYNAMIC_OUTPUTS] = {0};
  return with_extents(topi_non_zero(a, name, ins[0], &outs[0], &ext[0], err), n, outs, ext, err);
}

static loom_status compress(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                            TeTensor **outs, LoomError *err) {
  TeTensor *ext[GRAPH_MAX_DYNAMIC_OUTPUTS] = {0};
  const GraphAttr *ax = graph_node_attr(n, "axis");
  return with_extents(topi_compress(a, name, ins[0], ins[1], ax != NULL, ax ? ax->i : 0, &outs[0], &ext[0], err), n,
                      outs, ext, err);
}

static loom_status unique(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                          TeTensor **outs, LoomError *err) {
  TeTensor *ext[GRAPH_MAX_DYNAMIC_OUTPUTS] = {0};
  const GraphAttr *ax = graph_node_attr(n, "axis");
  return with_extents(
      topi_unique(a, name, ins[0], ax != NULL, ax ? ax->i : 0, graph_node_int(n, "sorted") != 0, outs, ext, err), n,
      outs, ext, err);
}

static loom_status non_max_suppression(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                       const char *name, TeTensor **outs, LoomError *err) {
  TeTensor *ext[GRAPH_MAX_DYNAMIC_OUTPUTS] = {0};
  const GraphValue *y = &g->values[n->outputs[0]];
  return with_extents(topi_non_max_suppression(a, name, ins[0], ins[1], in_or_null(n, ins, 2), in_or_null(n, ins, 3),
                                               in_or_null(n, ins, 4), graph_node_int(n, "center_point_box") != 0,
                                               y->dims[0], &outs[0], &ext[0], err),
                      n, outs, ext, err);
}

const CompileComputeFn compile_vision_computes[GRAPH_OP_COUNT] = {
    [GRAPH_OP_GRID_SAMPLE] = grid_sample,
    [GRAPH_OP_AFFINE_GRID] = affine_grid,
    [GRAPH_OP_ROI_ALIGN] = roi_align,
    [GRAPH_OP_DEFORM_CONV] = deform_conv,
    [GRAPH_OP_BIT_CAST] = bit_cast,
    [GRAPH_OP_TOP_K] = top_k,
    [GRAPH_OP_NON_ZERO] = non_zero,
    [GRAPH_OP_COMPRESS] = compress,
    [GRAPH_OP_UNIQUE] = unique,
    [GRAPH_OP_NON_MAX_SUPPRESSION] = non_max_suppression,
};
