/* The compute half of the op strategy: a graph node -> its te compute
 * definition from src/topi/topi_ops.h, with the node's attributes and its
 * compile-time constant operands (shapes, axes, pads, bounds) turned into
 * C arguments. */
#include "compile/compile.h"

#include "graph/pass_internal.h" /* graph_layout_block */
#include "topi/topi_ops.h"

#include <math.h>
#include <string.h>

enum { MAX_INTS = 64 };

static loom_status node_fail(const GraphNode *n, LoomError *err, const char *fmt, const char *detail) {
  return err_set(err, LOOM_ERR_UNSUPPORTED, fmt, graph_op_info(n->op)->name, n->name ? n->name : "?", detail);
}

/* The operands whose VALUE the compiler needs are the op's compile-time
 * inputs (GraphOpInfo.const_inputs): those that decide shapes, axes,
 * counts or which nodes run. Specialization (specialize.c) compiles in the
 * inputs they depend on and nothing else, so a parameter that decides no
 * shape (Clip's bounds, Pad's constant_value, Resize's roi, Dropout's
 * ratio) is data there even where the compute bakes it in when it is
 * constant (baked_when_constant). */
bool compile_input_is_data(const GraphNode *n, int input) { return !graph_op_input_is_const(n->op, input); }

/* Data operands the compute folds into the kernel when they are constants
 * (a bound known at compile time simplifies the code) and otherwise reads
 * at run time as a scalar tensor. */
static bool baked_when_constant(const GraphNode *n, int input) {
  return (n->op == GRAPH_OP_CLIP && (input == 1 || input == 2)) || (n->op == GRAPH_OP_PAD && input == 2) ||
         (n->op == GRAPH_OP_RESIZE && input == 1);
}

bool compile_operand_is_data(const Graph *g, const GraphNode *n, int input) {
  if (!compile_input_is_data(n, input)) return false;
  if (!baked_when_constant(n, input) || input >= n->ninputs || n->inputs[input] == GRAPH_NO_VALUE) return true;
  if (graph_value_constant(g, n->inputs[input])) return false;
  /* Resize reads its roi only to crop; Pad its constant_value only in constant mode. */
  if (n->op == GRAPH_OP_RESIZE)
    return !strcmp(graph_node_string(n, "coordinate_transformation_mode"), "tf_crop_and_resize");
  if (n->op == GRAPH_OP_PAD) return !strcmp(graph_node_string(n, "mode"), "constant");
  return true;
}

/* Constant int64 operand `input` of n (at most MAX_INTS values); -1 when
 * the input is omitted, -2 when it is not a compile-time constant. */
static int const_ints(const Graph *g, const GraphNode *n, int input, int64_t *out) {
  if (input >= n->ninputs || n->inputs[input] == GRAPH_NO_VALUE) return -1;
  const GraphTensor *t = graph_value_constant(g, n->inputs[input]);
  if (!t) return -2;
  int64_t count = graph_tensor_numel(t);
  if (count > MAX_INTS) return -2;
  for (int64_t k = 0; k < count; k++) out[k] = graph_tensor_get_i64(t, k);
  return (int)count;
}

static bool const_scalar(const Graph *g, const GraphNode *n, int input, double *out) {
  if (input >= n->ninputs || n->inputs[input] == GRAPH_NO_VALUE) return false;
  const GraphTensor *t = graph_value_constant(g, n->inputs[input]);
  if (!t || graph_tensor_numel(t) != 1) return false;
  *out = graph_tensor_get_f64(t, 0);
  return true;
}

static int attr_ints(const GraphNode *n, const char *name, int64_t *out) {
  const GraphAttr *at = graph_node_attr(n, name);
  if (!at || at->kind != GRAPH_ATTR_INTS || at->n > MAX_INTS) return -1;
  memcpy(out, at->ints, sizeof(int64_t) * (size_t)at->n);
  return at->n;
}

int compile_const_ints(const Graph *g, const GraphNode *n, int input, int64_t *out) { return const_ints(g, n, input, out); }
int compile_attr_ints(const GraphNode *n, const char *name, int64_t *out) { return attr_ints(n, name, out); }

static const GraphValue *in_value(const Graph *g, const GraphNode *n, int i) {
  return i < n->ninputs && n->inputs[i] != GRAPH_NO_VALUE ? &g->values[n->inputs[i]] : NULL;
}

/* The unary elementwise node's attributes as topi parameters: each one the
 * op declares (graph/ops.c), with the default from there when absent. */
static TopiUnaryParams unary_params(const GraphNode *n) {
  TopiUnaryParams p = {.lo = -INFINITY, .hi = INFINITY};
  for (const GraphAttrDef *d = graph_op_info(n->op)->attrs; d->name; d++) {
    const char *at = d->name;
    if (!strcmp(at, "alpha")) p.alpha = graph_node_float(n, at);
    else if (!strcmp(at, "beta")) p.beta = graph_node_float(n, at);
    else if (!strcmp(at, "gamma")) p.gamma = graph_node_float(n, at);
    else if (!strcmp(at, "lambd")) p.lambd = graph_node_float(n, at);
    else if (!strcmp(at, "bias")) p.bias = graph_node_float(n, at);
    else if (!strcmp(at, "approximate")) p.gelu_tanh = !strcmp(graph_node_string(n, at), "tanh");
    else if (!strcmp(at, "detect_positive")) p.detect_positive = graph_node_int(n, at) != 0;
    else if (!strcmp(at, "detect_negative")) p.detect_negative = graph_node_int(n, at) != 0;
  }
  return p;
}

static loom_status conv(Arena *a, const GraphNode *n, TeTensor *const *ins, const char *name, TeTensor **outs,
                        bool blocked, LoomError *err) {
  TopiConvParams p;
  memset(&p, 0, sizeof p);
  int64_t v[MAX_INTS];
  int c;
  if ((c = attr_ints(n, "strides", v)) == 2) memcpy(p.strides, v, sizeof p.strides);
  if ((c = attr_ints(n, "dilations", v)) == 2) memcpy(p.dilations, v, sizeof p.dilations);
  if ((c = attr_ints(n, "pads", v)) == 4) memcpy(p.pads, v, sizeof p.pads);
  else if (c >= 0) return node_fail(n, err, "%s (node \"%s\"): %s", "only 2-D convolutions are supported");
  p.group = graph_node_int(n, "group");
  TeTensor *bias = n->ninputs > 2 ? ins[2] : NULL;
  outs[0] = blocked ? topi_conv2d_nchwc_onnx(a, name, ins[0], ins[1], bias, &p, err)
                    : topi_conv2d_onnx(a, name, ins[0], ins[1], bias, &p, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status pool(Arena *a, const GraphNode *n, TeTensor *const *ins, const char *name, TeTensor **outs,
                        TopiPoolKind kind, LoomError *err) {
  TopiPoolParams p;
  memset(&p, 0, sizeof p);
  int64_t v[MAX_INTS];
  if (attr_ints(n, "kernel_shape", v) != 2)
    return node_fail(n, err, "%s (node \"%s\"): %s", "only 2-D pooling is supported");
  memcpy(p.kernel, v, sizeof p.kernel);
  if (attr_ints(n, "strides", v) == 2) memcpy(p.strides, v, sizeof p.strides);
  if (attr_ints(n, "dilations", v) == 2) memcpy(p.dilations, v, sizeof p.dilations);
  if (attr_ints(n, "pads", v) == 4) memcpy(p.pads, v, sizeof p.pads);
  p.ceil_mode = graph_node_int(n, "ceil_mode") != 0;
  p.count_include_pad = kind == TOPI_POOL_AVG && graph_node_int(n, "count_include_pad") != 0;
  bool blocked = n->op == GRAPH_OP_MAX_POOL_NCHWC || n->op == GRAPH_OP_AVERAGE_POOL_NCHWC;
  outs[0] = blocked ? topi_pool2d_nchwc_onnx(a, name, kind, ins[0], &p, err) : topi_pool2d_onnx(a, name, kind, ins[0], &p, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status reduce(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                          TeTensor **outs, TopiReduceOp op, LoomError *err) {
  int64_t axes[MAX_INTS];
  int na = const_ints(g, n, 1, axes);
  if (na == -2) return node_fail(n, err, "%s (node \"%s\"): %s", "axes must be a compile-time constant");
  if (na < 0) na = attr_ints(n, "axes", axes);
  if (na < 0) na = 0;
  outs[0] = topi_reduce(a, name, op, ins[0], axes, na, graph_node_int(n, "keepdims") != 0,
                        graph_node_int(n, "noop_with_empty_axes") != 0, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

/* Softmax, LogSoftmax, Hardmax; before opset 13 (coerce_2d) on the input
 * flattened to 2-D at axis, reshaped back. */
static loom_status softmax_family(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                  const char *name, TeTensor **outs, LoomError *err) {
  typedef TeTensor *(*Fn)(Arena *, const char *, const TeTensor *, int64_t, LoomError *);
  Fn fn = n->op == GRAPH_OP_LOG_SOFTMAX ? topi_log_softmax_axis
          : n->op == GRAPH_OP_HARDMAX   ? topi_hardmax_axis
                                        : topi_softmax_axis;
  int64_t axis = graph_node_int(n, "axis");
  if (!graph_attr_int(n, "coerce_2d", 0)) {
    outs[0] = fn(a, name, ins[0], axis, err);
    return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
  }
  const GraphValue *out = &g->values[n->outputs[0]];
  TeTensor *flat = topi_flatten(a, arena_printf(a, "%s_flat", name), ins[0], axis, err);
  TeTensor *sm = flat ? fn(a, arena_printf(a, "%s_2d", name), flat, 1, err) : NULL;
  outs[0] = sm ? topi_reshape(a, name, sm, out->dims, out->rank, err) : NULL;
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

/* LayerNormalization with its optional Mean and InvStdDev outputs (in the
 * dtype inference gave them: stash_type's). */
static loom_status layer_norm(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                              TeTensor **outs, LoomError *err) {
  TeTensor *stats[2] = {NULL, NULL};
  outs[0] = topi_layer_norm_full(a, name, ins[0], ins[1], n->ninputs > 2 ? ins[2] : NULL, graph_node_int(n, "axis"),
                                 graph_node_float(n, "epsilon"), false, &stats[0], &stats[1], err);
  if (!outs[0]) return LOOM_ERR_INVALID_ARG;
  static const char *const what[2] = {"mean_out", "inv_std_out"};
  for (int k = 1; k < n->noutputs && k < 3; k++) {
    if (n->outputs[k] == GRAPH_NO_VALUE) continue;
    DType want = g->values[n->outputs[k]].dtype;
    outs[k] = stats[k - 1];
    if (!dtype_eq(want, outs[k]->dtype) &&
        !(outs[k] = topi_cast(a, arena_printf(a, "%s_%s", name, what[k - 1]), stats[k - 1], want, err)))
      return LOOM_ERR_INVALID_ARG;
  }
  return LOOM_OK;
}

static loom_status loss(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                        TeTensor **outs, LoomError *err) {
  (void)g;
  const char *red = graph_node_string(n, "reduction");
  TopiLossReduction r = !strcmp(red, "none") ? TOPI_LOSS_NONE : !strcmp(red, "sum") ? TOPI_LOSS_SUM : TOPI_LOSS_MEAN;
  if (r == TOPI_LOSS_MEAN && strcmp(red, "mean"))
    return node_fail(n, err, "%s (node \"%s\"): reduction \"%s\" is not supported", red);
  const GraphAttr *ii = graph_node_attr(n, "ignore_index");
  if (n->ninputs < 2) return node_fail(n, err, "%s (node \"%s\"): %s", "expected inputs scores and labels");
  TeTensor *w = n->ninputs > 2 ? ins[2] : NULL;
  if (n->op == GRAPH_OP_NLL_LOSS)
    outs[0] = topi_nll_loss(a, name, ins[0], ins[1], w, r, ii != NULL, ii ? ii->i : 0, err);
  else
    outs[0] = topi_softmax_cross_entropy(a, name, ins[0], ins[1], w, r, ii != NULL, ii ? ii->i : 0,
                                         n->noutputs > 1 && n->outputs[1] != GRAPH_NO_VALUE ? &outs[1] : NULL, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

/* ---- the compute of each graph op ---- */

/* One row per graph op: the function that builds its compute and, for the
 * rows that share one, the topi op it builds (a TopiUnaryOp, TopiBinaryOp
 * or TopiReduceOp). */
typedef struct ComputeRule {
  CompileComputeFn build;
  int topi;
} ComputeRule;

/* The row's topi op (compute_rules is at the end of the file). */
static int topi_op_of(GraphOp op);

static loom_status done(TeTensor *t) { return t ? LOOM_OK : LOOM_ERR_INVALID_ARG; }

/* Clip's bounds are inputs: constant ones compile in as parameters, the
 * others are read at run time (topi_clip_tensors). */
static loom_status clip(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                        TeTensor **outs, LoomError *err) {
  TopiUnaryParams up = {.lo = -INFINITY, .hi = INFINITY};
  double b;
  TeTensor *rt[3] = {NULL, NULL, NULL}; /* bounds read at run time */
  for (int k = 1; k < 3 && k < n->ninputs; k++) {
    if (n->inputs[k] == GRAPH_NO_VALUE) continue;
    if (!const_scalar(g, n, k, &b)) rt[k] = ins[k];
    else if (k == 1) up.lo = b;
    else up.hi = b;
  }
  if (!rt[1] && !rt[2]) {
    outs[0] = topi_unary(a, name, TOPI_CLIP, ins[0], &up, err);
    return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
  }
  const TeTensor *x0 = ins[0];
  if (up.lo > -INFINITY || up.hi < INFINITY) {
    x0 = topi_unary(a, arena_printf(a, "%s_c", name), TOPI_CLIP, ins[0], &up, err);
    if (!x0) return LOOM_ERR_INVALID_ARG;
  }
  outs[0] = topi_clip_tensors(a, name, x0, rt[1], rt[2], err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

/* Every TOPI_UNARY_OPS row, the graph op of the same name. */
static loom_status compute_unary(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                                 TeTensor **outs, LoomError *err) {
  if (n->op == GRAPH_OP_CLIP) return clip(a, g, n, ins, name, outs, err);
  TopiUnaryParams p = unary_params(n);
  return done(outs[0] = topi_unary(a, name, (TopiUnaryOp)topi_op_of(n->op), ins[0], &p, err));
}

static loom_status compute_binary(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                                  TeTensor **outs, LoomError *err) {
  (void)g;
  return done(outs[0] = topi_binary(a, name, (TopiBinaryOp)topi_op_of(n->op), ins[0], ins[1], err));
}

/* Mod: fmod picks the remainder's sign rule. */
static loom_status compute_mod(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                               TeTensor **outs, LoomError *err) {
  (void)g;
  TopiBinaryOp op = graph_node_int(n, "fmod") ? TOPI_FMOD : TOPI_MOD;
  return done(outs[0] = topi_binary(a, name, op, ins[0], ins[1], err));
}

static loom_status compute_bit_shift(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                     const char *name, TeTensor **outs, LoomError *err) {
  (void)g;
  const char *dir = graph_attr_string(n, "direction", "");
  if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
    return node_fail(n, err, "%s (node \"%s\"): direction \"%s\" is not LEFT or RIGHT", dir);
  TopiBinaryOp op = !strcmp(dir, "LEFT") ? TOPI_SHIFT_LEFT : TOPI_SHIFT_RIGHT;
  return done(outs[0] = topi_binary(a, name, op, ins[0], ins[1], err));
}

/* Sum, Max, Min of any number of operands. */
static loom_status compute_variadic(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                    const char *name, TeTensor **outs, LoomError *err) {
  (void)g;
  TopiBinaryOp op = (TopiBinaryOp)topi_op_of(n->op);
  return done(outs[0] = topi_variadic(a, name, op, (const TeTensor *const *)ins, n->ninputs, err));
}

static loom_status compute_reduce(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                  const char *name, TeTensor **outs, LoomError *err) {
  return reduce(a, g, n, ins, name, outs, (TopiReduceOp)topi_op_of(n->op), err);
}

static loom_status compute_mean(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_mean(a, name, (const TeTensor *const *)ins, n->ninputs, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_cast(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                const char *name, TeTensor **outs, LoomError *err) {
  DType to;
  if (!dtype_parse(graph_attr_string(n, "to", ""), &to))
    return node_fail(n, err, "%s (node \"%s\"): %s", "attribute \"to\" is not a dtype");
  if (to.code == DT_F8E8M0 && (strcmp(graph_node_string(n, "round_mode"), "up") || !graph_node_int(n, "saturate")))
    return node_fail(n, err, "%s (node \"%s\"): %s", "a cast to f8e8m0 other than round_mode \"up\" with saturate is not supported");
  outs[0] = topi_cast_saturate(a, name, ins[0], to, graph_node_int(n, "saturate") != 0, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

/* CastLike: inference turns it into a Cast once the target's dtype is
 * known (graph/infer_math.c); a node left as CastLike casts to its
 * output's dtype (ONNX's saturate default, 1). */
static loom_status compute_cast_like(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                     const char *name, TeTensor **outs, LoomError *err) {
  DType to = g->values[n->outputs[0]].dtype;
  if (!to.bits) return node_fail(n, err, "%s (node \"%s\"): %s", "the target's dtype is not known");
  outs[0] = topi_cast_saturate(a, name, ins[0], to, true, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_where(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                 const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_where(a, name, ins[0], ins[1], ins[2], err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_batch_norm(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                      const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_batch_norm(a, name, ins[0], ins[1], ins[2], ins[3], ins[4],
                            graph_node_float(n, "epsilon"), err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_conv_nchwc(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                      const char *name, TeTensor **outs, LoomError *err) {
  int64_t v[MAX_INTS];
  /* Depthwise: one input channel per group (infer_nchwc.c); other
   * groups take the grouped blocked conv. */
  if (graph_node_int(n, "group") > 1 && ins[1]->ndim == 6 && ins[1]->shape[1] == 1 && ins[1]->shape[4] == 1 &&
      graph_node_int(n, "group") == ins[0]->shape[1] * ins[0]->shape[4]) {
    TopiConvParams p;
    memset(&p, 0, sizeof p);
    if (attr_ints(n, "strides", v) == 2) memcpy(p.strides, v, sizeof p.strides);
    if (attr_ints(n, "dilations", v) == 2) memcpy(p.dilations, v, sizeof p.dilations);
    if (attr_ints(n, "pads", v) == 4) memcpy(p.pads, v, sizeof p.pads);
    outs[0] = topi_depthwise_conv2d_nchwc_onnx(a, name, ins[0], ins[1], &p, err);
    return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
  }
  if (graph_node_int(n, "winograd_tile")) {
    int64_t pads[4] = {0, 0, 0, 0};
    if (attr_ints(n, "pads", v) == 4) memcpy(pads, v, sizeof pads);
    outs[0] = topi_conv2d_nchwc_winograd(a, name, ins[0], ins[1], pads, err);
    return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
  }
  return conv(a, n, ins, name, outs, true, err);
}

static loom_status compute_layout_transform(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                            const char *name, TeTensor **outs, LoomError *err) {
  int sb = graph_layout_block(graph_attr_string(n, "src_layout", NULL));
  int db = graph_layout_block(graph_attr_string(n, "dst_layout", NULL));
  if (sb < 0 || db < 0) return node_fail(n, err, "%s (node \"%s\"): %s", "unknown layouts");
  const TeTensor *x0 = ins[0];
  if (sb > 0) {
    x0 = topi_nchwc_to_nchw(a, db > 0 ? arena_printf(a, "%s_nchw", name) : name, ins[0], err);
    if (!x0) return LOOM_ERR_INVALID_ARG;
  }
  outs[0] = db > 0 ? topi_nchw_to_nchwc(a, name, x0, db, err) : (TeTensor *)x0;
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_gemm(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_gemm(a, name, ins[0], ins[1], n->ninputs > 2 ? ins[2] : NULL, graph_node_float(n, "alpha"),
                      graph_node_float(n, "beta"), graph_node_int(n, "transA") != 0,
                      graph_node_int(n, "transB") != 0, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_matmul(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                  const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_matmul_nd(a, name, ins[0], ins[1], err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_matmul_packed(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                         const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_matmul_packed(a, name, ins[0], ins[1], graph_attr_int(n, "n", -1), err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_max_pool_nchwc(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                          const char *name, TeTensor **outs, LoomError *err) {
  return pool(a, n, ins, name, outs, TOPI_POOL_MAX, err);
}

static loom_status compute_average_pool_nchwc(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                              const char *name, TeTensor **outs, LoomError *err) {
  return pool(a, n, ins, name, outs, TOPI_POOL_AVG, err);
}

static loom_status compute_global_pool(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                       const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_global_pool(a, name, n->op == GRAPH_OP_GLOBAL_MAX_POOL ? TOPI_POOL_MAX : TOPI_POOL_AVG, ins[0], err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_arg_reduce(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                      const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_arg_reduce(a, name, n->op == GRAPH_OP_ARG_MIN, ins[0], graph_node_int(n, "axis"),
                            graph_node_int(n, "keepdims") != 0, graph_node_int(n, "select_last_index") != 0,
                            err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_cumulative(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                      const char *name, TeTensor **outs, LoomError *err) {
  int64_t v[MAX_INTS];
  int64_t axis;
  if (const_ints(g, n, 1, v) != 1)
    return node_fail(n, err, "%s (node \"%s\"): %s", "axis must be a compile-time constant scalar");
  axis = v[0];
  outs[0] = topi_cumulative(a, name, n->op == GRAPH_OP_CUMPROD, ins[0], axis, graph_node_int(n, "exclusive") != 0,
                            graph_node_int(n, "reverse") != 0, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_rms_norm(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                    const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_layer_norm_full(a, name, ins[0], ins[1], NULL, graph_node_int(n, "axis"),
                                 graph_node_float(n, "epsilon"), true, NULL, NULL, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_group_norm(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                      const char *name, TeTensor **outs, LoomError *err) {
  const GraphValue *xv = in_value(g, n, 0);
  int64_t groups = n->op == GRAPH_OP_GROUP_NORM ? graph_attr_int(n, "num_groups", 0) : xv->rank >= 2 ? xv->dims[1] : 1;
  if (n->ninputs < 3) return node_fail(n, err, "%s (node \"%s\"): %s", "expected inputs X, scale and bias");
  outs[0] = topi_group_norm(a, name, ins[0], ins[1], ins[2], groups, graph_node_float(n, "epsilon"), err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_lp_norm(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                   const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_lp_norm(a, name, ins[0], graph_node_int(n, "axis"), graph_node_int(n, "p"), err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_mvn(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                               const char *name, TeTensor **outs, LoomError *err) {
  int64_t v[MAX_INTS];
  int cnt;
  cnt = attr_ints(n, "axes", v);
  outs[0] = topi_mvn(a, name, ins[0], cnt >= 0 ? v : NULL, cnt >= 0 ? cnt : 0, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_lrn(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                               const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_lrn(a, name, ins[0], graph_attr_int(n, "size", 0), graph_node_float(n, "alpha"),
                     graph_node_float(n, "beta"), graph_node_float(n, "bias"), err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_flatten(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                   const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_flatten(a, name, ins[0], graph_node_int(n, "axis"), err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_reshape(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                   const char *name, TeTensor **outs, LoomError *err) {
  /* Inference resolved 0 and -1: the output's extents are the shape. */
  const GraphValue *out = &g->values[n->outputs[0]];
  outs[0] = topi_reshape(a, name, ins[0], out->dims, out->rank, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_transpose(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                     const char *name, TeTensor **outs, LoomError *err) {
  int64_t v[MAX_INTS];
  int cnt;
  cnt = attr_ints(n, "perm", v);
  outs[0] = topi_transpose_perm(a, name, ins[0], cnt >= 0 ? v : NULL, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_concat(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                  const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_concat(a, name, (const TeTensor *const *)ins, n->ninputs, graph_attr_int(n, "axis", 0), err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_split(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                 const char *name, TeTensor **outs, LoomError *err) {
  int64_t v[MAX_INTS];
  int cnt;
  cnt = const_ints(g, n, 1, v);
  if (cnt == -2) return node_fail(n, err, "%s (node \"%s\"): %s", "split sizes must be compile-time constants");
  if (cnt < 0) {
    /* Inferred output extents give the sizes. */
    int64_t axis = graph_node_int(n, "axis");
    const GraphValue *xv = in_value(g, n, 0);
    if (axis < 0) axis += xv->rank;
    for (int i = 0; i < n->noutputs; i++) v[i] = g->values[n->outputs[i]].dims[axis];
  }
  return topi_split(a, name, ins[0], graph_node_int(n, "axis"), v, n->noutputs, outs, err)
             ? LOOM_OK
             : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_slice(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                 const char *name, TeTensor **outs, LoomError *err) {
  int64_t v[MAX_INTS], w[MAX_INTS], x[MAX_INTS], y[MAX_INTS];
  int ns = const_ints(g, n, 1, v), ne = const_ints(g, n, 2, w), na = const_ints(g, n, 3, x),
      nst = const_ints(g, n, 4, y);
  if (ns < 0 || ne != ns || na == -2 || nst == -2 || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
    return node_fail(n, err, "%s (node \"%s\"): %s", "starts/ends/axes/steps must be compile-time constants of one length");
  outs[0] = topi_slice(a, name, ins[0], v, w, na >= 0 ? x : NULL, nst >= 0 ? y : NULL, ns, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_gather(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                  const char *name, TeTensor **outs, LoomError *err) {
  outs[0] = topi_gather(a, name, ins[0], ins[1], graph_node_int(n, "axis"), err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_squeeze_unsqueeze(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                             const char *name, TeTensor **outs, LoomError *err) {
  int64_t v[MAX_INTS];
  int cnt;
  cnt = const_ints(g, n, 1, v);
  if (cnt == -2) return node_fail(n, err, "%s (node \"%s\"): %s", "axes must be compile-time constants");
  outs[0] = n->op == GRAPH_OP_SQUEEZE ? topi_squeeze(a, name, ins[0], cnt >= 0 ? v : NULL, cnt >= 0 ? cnt : 0, err)
                                      : topi_unsqueeze(a, name, ins[0], v, cnt >= 0 ? cnt : 0, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_expand(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                  const char *name, TeTensor **outs, LoomError *err) {
  const GraphValue *out = &g->values[n->outputs[0]];
  outs[0] = topi_expand(a, name, ins[0], out->dims, out->rank, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

static loom_status compute_tile(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                const char *name, TeTensor **outs, LoomError *err) {
  int64_t v[MAX_INTS];
  int cnt;
  cnt = const_ints(g, n, 1, v);
  if (cnt < 0) return node_fail(n, err, "%s (node \"%s\"): %s", "repeats must be compile-time constants");
  outs[0] = topi_tile(a, name, ins[0], v, err);
  return outs[0] ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}

#define UNARY(e, nm, dtypes, builder) [GRAPH_OP_##e] = {compute_unary, TOPI_##e},
#define BINARY(e) [GRAPH_OP_##e] = {compute_binary, TOPI_##e},
#define REDUCE(e) [GRAPH_OP_##e] = {compute_reduce, TOPI_##e},
/* The elementwise, reduction, normalization, convolution/matmul and shape
 * ops; the families with a file of their own keep their rows there
 * (compile_tensor_computes...). Every op has a row except If, Loop and
 * Scan, which the importer inlines or refuses (onnx_inline_control_flow),
 * and External, whose back end writes its code; ops that folding usually
 * removes (Shape, Size, ConstantOfShape, Range, CastLike) have rows too,
 * for what it leaves (tests/unit/compile/test_op_compute.c). The unary
 * rows come from topi's own table: a TOPI_UNARY_OPS row needs a graph op
 * of the same name, and nothing else here. */
static const ComputeRule compute_rules[GRAPH_OP_COUNT] = {
    TOPI_UNARY_OPS(UNARY)
    BINARY(ADD) BINARY(SUB) BINARY(MUL) BINARY(DIV) BINARY(POW) BINARY(EQUAL) BINARY(LESS) BINARY(GREATER)
    BINARY(GREATER_OR_EQUAL) BINARY(LESS_OR_EQUAL) BINARY(AND) BINARY(OR) BINARY(XOR) BINARY(PRELU)
    BINARY(BITWISE_AND) BINARY(BITWISE_OR) BINARY(BITWISE_XOR)
    [GRAPH_OP_MOD] = {compute_mod, 0},
    [GRAPH_OP_BIT_SHIFT] = {compute_bit_shift, 0},
    [GRAPH_OP_SUM] = {compute_variadic, TOPI_ADD},
    [GRAPH_OP_MAX] = {compute_variadic, TOPI_MAX},
    [GRAPH_OP_MIN] = {compute_variadic, TOPI_MIN},
    REDUCE(REDUCE_MEAN) REDUCE(REDUCE_SUM) REDUCE(REDUCE_MAX) REDUCE(REDUCE_MIN) REDUCE(REDUCE_PROD) REDUCE(REDUCE_L1)
    REDUCE(REDUCE_L2) REDUCE(REDUCE_LOG_SUM) REDUCE(REDUCE_LOG_SUM_EXP) REDUCE(REDUCE_SUM_SQUARE)
    [GRAPH_OP_MEAN] = {compute_mean, 0},
    [GRAPH_OP_CAST] = {compute_cast, 0},
    [GRAPH_OP_CAST_LIKE] = {compute_cast_like, 0},
    [GRAPH_OP_WHERE] = {compute_where, 0},
    [GRAPH_OP_BATCH_NORM] = {compute_batch_norm, 0},
    [GRAPH_OP_CONV_NCHWC] = {compute_conv_nchwc, 0},
    [GRAPH_OP_LAYOUT_TRANSFORM] = {compute_layout_transform, 0},
    [GRAPH_OP_GEMM] = {compute_gemm, 0},
    [GRAPH_OP_MATMUL] = {compute_matmul, 0},
    [GRAPH_OP_MATMUL_PACKED] = {compute_matmul_packed, 0},
    [GRAPH_OP_EXTERNAL] = {NULL, 0}, /* its BYOC back end writes its code (src/byoc) */
    [GRAPH_OP_MAX_POOL_NCHWC] = {compute_max_pool_nchwc, 0},
    [GRAPH_OP_AVERAGE_POOL_NCHWC] = {compute_average_pool_nchwc, 0},
    [GRAPH_OP_GLOBAL_AVERAGE_POOL] = {compute_global_pool, 0},
    [GRAPH_OP_GLOBAL_MAX_POOL] = {compute_global_pool, 0},
    [GRAPH_OP_ARG_MAX] = {compute_arg_reduce, 0},
    [GRAPH_OP_ARG_MIN] = {compute_arg_reduce, 0},
    [GRAPH_OP_LOG_SOFTMAX] = {softmax_family, 0},
    [GRAPH_OP_HARDMAX] = {softmax_family, 0},
    [GRAPH_OP_CUMSUM] = {compute_cumulative, 0},
    [GRAPH_OP_CUMPROD] = {compute_cumulative, 0},
    [GRAPH_OP_RMS_NORM] = {compute_rms_norm, 0},
    [GRAPH_OP_GROUP_NORM] = {compute_group_norm, 0},
    [GRAPH_OP_INSTANCE_NORM] = {compute_group_norm, 0},
    [GRAPH_OP_LP_NORM] = {compute_lp_norm, 0},
    [GRAPH_OP_MVN] = {compute_mvn, 0},
    [GRAPH_OP_LRN] = {compute_lrn, 0},
    [GRAPH_OP_NLL_LOSS] = {loss, 0},
    [GRAPH_OP_SCE_LOSS] = {loss, 0},
    [GRAPH_OP_SOFTMAX] = {softmax_family, 0},
    [GRAPH_OP_LAYER_NORM] = {layer_norm, 0},
    [GRAPH_OP_FLATTEN] = {compute_flatten, 0},
    [GRAPH_OP_RESHAPE] = {compute_reshape, 0},
    [GRAPH_OP_TRANSPOSE] = {compute_transpose, 0},
    [GRAPH_OP_CONCAT] = {compute_concat, 0},
    [GRAPH_OP_SPLIT] = {compute_split, 0},
    [GRAPH_OP_SLICE] = {compute_slice, 0},
    [GRAPH_OP_GATHER] = {compute_gather, 0},
    [GRAPH_OP_SQUEEZE] = {compute_squeeze_unsqueeze, 0},
    [GRAPH_OP_UNSQUEEZE] = {compute_squeeze_unsqueeze, 0},
    [GRAPH_OP_EXPAND] = {compute_expand, 0},
    [GRAPH_OP_TILE] = {compute_tile, 0},
};
#undef UNARY
#undef BINARY
#undef REDUCE

static int topi_op_of(GraphOp op) { return compute_rules[op].topi; }

/* The op's one compute row: op_compute.c's own or its family file's. An
 * op with no row, or with rows in two tables, has none (and the unit test
 * of compile_op_has_compute names it). */
static CompileComputeFn compute_of(GraphOp op) {
  static const CompileComputeFn *const family_rows[] = {compile_tensor_computes, compile_seq_computes,
                                                        compile_quant_computes, compile_vision_computes};
  if (op < 0 || op >= GRAPH_OP_COUNT) return NULL;
  CompileComputeFn fn = compute_rules[op].build;
  int rows = fn != NULL;
  for (size_t k = 0; k < sizeof family_rows / sizeof family_rows[0]; k++)
    if (family_rows[k][op]) fn = family_rows[k][op], rows++;
  return rows == 1 ? fn : NULL;
}

bool compile_op_has_compute(GraphOp op) { return compute_of(op) != NULL; }

loom_status compile_node_compute(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                 const char *name, TeTensor **outs, LoomError *err) {
  CompileComputeFn fn = compute_of(n->op);
  if (!fn)
    return node_fail(n, err, "%s (node \"%s\"): %s",
                     "no compute definition (the importer inlines If, Loop and Scan; a back end compiles External)");
  return fn(a, g, n, ins, name, outs, err);
}
