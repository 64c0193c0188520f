/* NCHW -> NCHWc for x86 convolutions (TVM's AlterOpLayout for conv2d_NCHWc).
 *
 * A blocked tensor [N, C/b, H, W, b] keeps b consecutive channels of one
 * pixel together, so the innermost loop of a convolution is a vector of b
 * output channels and the data read is contiguous. Each eligible Conv
 * becomes ConvNCHWc (infer_nchwc.c has its semantics) with its weights
 * transformed here, at compile time, to [K/k, C/c, R, S, c, k]; its bias
 * becomes a broadcast Add of a [1, K/k, 1, 1, k] constant, which fusion puts
 * back into the conv's kernel.
 *
 * Values are tracked, not rewritten: rep_id[v] is a blocked copy of v with
 * block rep_block[v] (0: none), and nchw_ok[v] says whether v itself holds
 * its NCHW data. Elementwise ops and per-channel broadcast arithmetic on
 * blocked inputs produce blocked outputs; any other consumer asks for NCHW,
 * which inserts one LayoutTransform writing the original value id (so graph
 * outputs and later users keep their ids). Since a transform is only made
 * on demand and a value's blocked and NCHW forms are both remembered, no
 * transform is ever followed by its inverse. Channel Concat of blocked
 * inputs stays blocked, and GlobalAverage/MaxPool become ReduceMean/Max over
 * H, W of the blocked tensor (only the pooled [N, C/b, 1, 1, b] goes back
 * to NCHW). 2-D MaxPool/AveragePool of a blocked tensor become
 * MaxPoolNCHWc/AveragePoolNCHWc in the same block, and a Pad of H and W
 * only pads the blocked tensor, so the pools between ResNet/Inception/
 * DenseNet stages need no transforms. Blocks: the largest
 * of 16, 8, 4, 2, 1 (capped by max_block: the compiler passes the target's
 * f32 lanes, so a block is one vector register) dividing the channel
 * count, per conv. */
#include "graph/pass_internal.h"
#include "graph/passes.h"
#include "support/alloc.h"

#include <stdlib.h>
#include <string.h>

typedef struct LayoutCtx {
  Graph *g;
  GraphNodeBuf buf;
  int nvalues0; /* values that existed before the pass */
  ValueId *rep_id;
  int *rep_block;
  ValueId *alt_id; /* a second blocked form (another block), made for a consumer that needed it */
  int *alt_block;
  bool *nchw_ok;
  int max_block;
  ValueId *fold_src; /* a zero Pad folded into its AveragePool consumers: the unpadded value (-1: none) */
  int64_t (*fold_pads)[4];
} LayoutCtx;

int graph_layout_channel_block(int64_t channels, int max_block) {
  for (int b = 16; b > 1; b /= 2)
    if (b <= max_block && channels % b == 0) return b;
  return 1;
}

static const char *layout_name(Graph *g, int block) {
  return block ? arena_printf(g->arena, "NCHW%dc", block) : "NCHW";
}

static bool is_static_f32_rank(const GraphValue *v, int rank) {
  return v->rank == rank && dtype_eq(v->dtype, DT_F32) && graph_value_is_static(v);
}

static ValueId emit_transform(LayoutCtx *c, ValueId src, int from, int to, ValueId dst, const char *base) {
  Graph *g = c->g;
  if (dst < 0) dst = graph_add_value_derived(g, base, to ? arena_printf(g->arena, "nchw%dc", to) : "nchw");
  GraphNode *n = graph_nodebuf_add(g, &c->buf, GRAPH_OP_LAYOUT_TRANSFORM, arena_printf(g->arena, "%s_layout", base), &src, 1,
                                   &dst, 1);
  graph_node_set_attr(g, n, graph_attr_make_string(g, "src_layout", layout_name(g, from)));
  graph_node_set_attr(g, n, graph_attr_make_string(g, "dst_layout", layout_name(g, to)));
  return dst;
}

/* Element copies move bytes: weight transforms run over every weight of a
 * model at compile time (25M for ResNet-50), so no conversion per element. */
static inline void copy_elem(GraphTensor *o, int64_t ko, const GraphTensor *t, int64_t kt) {
  if (o->dtype.bits == 32 && o->dtype.lanes <= 1) { /* f32: the common case, a fixed-size copy */
    memcpy((uint8_t *)o->data + (size_t)ko * 4, (const uint8_t *)t->data + (size_t)kt * 4, 4);
    return;
  }
  size_t eb = (size_t)dtype_bytes(o->dtype);
  memcpy((uint8_t *)o->data + (size_t)ko * eb, (const uint8_t *)t->data + (size_t)kt * eb, eb);
}

/* A constant NCHW tensor blocked at compile time. */
static ValueId block_constant(Graph *g, ValueId v, int b) {
  const GraphTensor *t = g->values[v].constant;
  int64_t n = t->dims[0], ch = t->dims[1], h = t->dims[2], w = t->dims[3];
  int64_t dims[5] = {n, ch / b, h, w, b};
  GraphTensor *o = graph_tensor_new(g->arena, t->dtype, 5, dims);
  for (int64_t i = 0; i < n; i++)
    for (int64_t cc = 0; cc < ch; cc++)
      for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
          int64_t src = ((i * ch + cc) * h + y) * w + x;
          int64_t dst = (((i * (ch / b) + cc / b) * h + y) * w + x) * b + cc % b;
          copy_elem(o, dst, t, src);
        }
  return graph_add_constant_derived(g, g->values[v].name, arena_printf(g->arena, "nchw%dc", b), o);
}

/* v in blocked layout b. v must be a rank-4 static value of the original
 * graph (or already blocked). */
static ValueId get_blocked(LayoutCtx *c, ValueId v, int b) {
  Graph *g = c->g;
  if (c->rep_block[v] == b) return c->rep_id[v];
  if (c->alt_block[v] == b) return c->alt_id[v];
  if (c->rep_block[v] > 0) {
    c->alt_id[v] = emit_transform(c, c->rep_id[v], c->rep_block[v], b, -1, g->values[v].name);
    c->alt_block[v] = b;
    return c->alt_id[v];
  }
  ValueId out = g->values[v].constant && dtype_is_float(g->values[v].dtype) ? block_constant(g, v, b)
                                                                            : emit_transform(c, v, 0, b, -1, g->values[v].name);
  c->rep_id[v] = out;
  c->rep_block[v] = b;
  return out;
}

static void need_nchw(LayoutCtx *c, ValueId v) {
  if (v < 0 || v >= c->nvalues0 || c->nchw_ok[v]) return;
  emit_transform(c, c->rep_id[v], c->rep_block[v], 0, v, c->g->values[v].name);
  c->nchw_ok[v] = true;
}

/* ---- convolutions ---- */

/* Group 1, depthwise (group == C == K) or grouped with a multiple of 8
 * input and output channels per group (the blocks are picked per group;
 * smaller groups would get blocks too narrow for a vector, and layout
 * transforms around them, so they stay NCHW). */
static bool conv_eligible(const Graph *g, const GraphNode *n, bool *depthwise) {
  if (n->op != GRAPH_OP_CONV || n->ninputs < 2 || n->noutputs != 1 || n->outputs[0] < 0) return false;
  const GraphValue *x = &g->values[n->inputs[0]], *y = &g->values[n->outputs[0]];
  const GraphTensor *w = graph_value_constant(g, n->inputs[1]);
  if (!is_static_f32_rank(x, 4) || !is_static_f32_rank(y, 4) || !w || w->rank != 4 || !dtype_eq(w->dtype, DT_F32)) return false;
  if (strcmp(graph_node_string(n, "auto_pad"), "NOTSET")) return false;
  if (n->ninputs > 2 && n->inputs[2] >= 0) {
    const GraphTensor *b = graph_value_constant(g, n->inputs[2]);
    if (!b || !dtype_eq(b->dtype, DT_F32) || graph_tensor_numel(b) != w->dims[0]) return false;
  }
  int64_t group = graph_node_int(n, "group");
  *depthwise = group != 1 && group == x->dims[1] && w->dims[0] == x->dims[1] && w->dims[1] == 1;
  if (group < 1 || x->dims[1] % group != 0 || w->dims[0] % group != 0) return false;
  if (*depthwise) return true;
  if (group == 1) return w->dims[1] == x->dims[1];
  return w->dims[1] * group == x->dims[1] && w->dims[1] % 8 == 0 && (w->dims[0] / group) % 8 == 0;
}

static ValueId blocked_weights(Graph *g, const GraphNode *n, int cb, int kb, bool depthwise) {
  const GraphTensor *w = graph_value_constant(g, n->inputs[1]);
  int64_t K = w->dims[0], C = w->dims[1], R = w->dims[2], S = w->dims[3];
  int64_t dims[6] = {K / kb, C / cb, R, S, cb, kb};
  if (depthwise) dims[1] = 1, dims[4] = 1;
  GraphTensor *o = graph_tensor_new(g->arena, w->dtype, 6, dims);
  /* Destination order, no divisions: this loop sees every weight. */
  int64_t dst = 0, ci_n = dims[4];
  for (int64_t ko = 0; ko < dims[0]; ko++)
    for (int64_t co = 0; co < dims[1]; co++)
      for (int64_t r = 0; r < R; r++)
        for (int64_t s = 0; s < S; s++)
          for (int64_t ci = 0; ci < ci_n; ci++)
            for (int64_t ki = 0; ki < kb; ki++, dst++)
              copy_elem(o, dst, w, (((ko * kb + ki) * C + co * ci_n + ci) * R + r) * S + s);
  return graph_add_constant_derived(g, g->values[n->inputs[1]].name, arena_printf(g->arena, "oihw%di%do", cb, kb), o);
}

static void copy_int_attr_list(Graph *g, GraphNode *dst, const GraphNode *src, const char *name, int count, int64_t dflt) {
  int cnt = 0;
  const int64_t *p = NULL;
  const GraphAttr *a = graph_node_attr(src, name);
  if (a && a->kind == GRAPH_ATTR_INTS) {
    p = a->ints;
    cnt = a->n;
  }
  int64_t v[4];
  for (int k = 0; k < count; k++) v[k] = p && k < cnt ? p[k] : dflt;
  graph_node_set_attr(g, dst, graph_attr_make_ints(g, name, v, count));
}

static void rewrite_conv(LayoutCtx *c, const GraphNode *n, bool depthwise) {
  Graph *g = c->g;
  ValueId x = n->inputs[0], y = n->outputs[0];
  int64_t group = graph_node_int(n, "group"), groups = depthwise ? 1 : group;
  int64_t C = g->values[x].dims[1], K = g->values[y].dims[1];
  int cb = graph_layout_channel_block(C / groups, c->max_block), kb = depthwise ? cb : graph_layout_channel_block(K / groups, c->max_block);
  ValueId xb = get_blocked(c, x, cb);
  ValueId wb = blocked_weights(g, n, cb, kb, depthwise);
  ValueId yb = graph_add_value_derived(g, g->values[y].name, arena_printf(g->arena, "nchw%dc", kb));
  ValueId ins[2] = {xb, wb};
  GraphNode *cn = graph_nodebuf_add(g, &c->buf, GRAPH_OP_CONV_NCHWC, n->name, ins, 2, &yb, 1);
  copy_int_attr_list(g, cn, n, "strides", 2, 1);
  copy_int_attr_list(g, cn, n, "dilations", 2, 1);
  copy_int_attr_list(g, cn, n, "pads", 4, 0);
  graph_node_set_attr(g, cn, graph_attr_make_int(g, "group", group));
  if (n->ninputs > 2 && n->inputs[2] >= 0) {
    const GraphTensor *b = graph_value_constant(g, n->inputs[2]);
    int64_t dims[5] = {1, K / kb, 1, 1, kb};
    GraphTensor *bt = graph_tensor_new(g->arena, b->dtype, 5, dims);
    memcpy(bt->data, b->data, bt->nbytes); /* [K] and [1, K/k, 1, 1, k] share the element order */
    ValueId bv = graph_add_constant_derived(g, g->values[n->inputs[2]].name, arena_printf(g->arena, "nchw%dc", kb), bt);
    ValueId ya = graph_add_value_derived(g, g->values[y].name, arena_printf(g->arena, "bias_nchw%dc", kb));
    ValueId ain[2] = {yb, bv};
    graph_nodebuf_add(g, &c->buf, GRAPH_OP_ADD, arena_printf(g->arena, "%s_bias", n->name), ain, 2, &ya, 1);
    yb = ya;
  }
  c->rep_id[y] = yb;
  c->rep_block[y] = kb;
  c->nchw_ok[y] = false;
}

/* ---- elementwise and per-channel broadcast ops ---- */

static bool same_dims(const GraphValue *a, const GraphValue *b) {
  if (a->rank != b->rank) return false;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k]) return false;
  return true;
}

/* A rank-4 value with all C channels whose other extents equal y's or are
 * 1 ([N, C, 1, 1] squeeze-excitation scales, same-shape operands): its
 * blocked form broadcasts against y's blocked form the same way. */
static bool channel_full(const Graph *g, ValueId v, const GraphValue *y) {
  const GraphValue *x = &g->values[v];
  if (v >= g->nvalues || !is_static_f32_rank(x, 4) || x->dims[1] != y->dims[1]) return false;
  for (int k = 0; k < 4; k++)
    if (k != 1 && x->dims[k] != y->dims[k] && x->dims[k] != 1) return false;
  return true;
}

/* A constant that broadcasts against NCHW [N, C, H, W] per channel or as a
 * whole: right-aligned shape [1, C or 1, 1, 1]. */
static bool per_channel_const(const Graph *g, ValueId v, int64_t channels) {
  const GraphTensor *t = graph_value_constant(g, v);
  if (!t || t->rank > 4 || !dtype_is_float(t->dtype)) return false;
  for (int k = 0; k < t->rank; k++) {
    int axis = k + 4 - t->rank;
    if (t->dims[k] != 1 && !(axis == 1 && t->dims[k] == channels)) return false;
  }
  return true;
}

static ValueId block_channel_const(Graph *g, ValueId v, int64_t channels, int b) {
  const GraphTensor *t = graph_value_constant(g, v);
  if (graph_tensor_numel(t) == 1 && t->rank <= 1) return v; /* a scalar broadcasts against rank 5 as is */
  bool per = graph_tensor_numel(t) == channels && channels > 1;
  int64_t dims[5] = {1, per ? channels / b : 1, 1, 1, per ? b : 1};
  GraphTensor *o = graph_tensor_new(g->arena, t->dtype, 5, dims);
  memcpy(o->data, t->data, o->nbytes); /* per-channel [C] order is the blocked order */
  return graph_add_constant_derived(g, g->values[v].name, arena_printf(g->arena, "nchw%dc", b), o);
}

static bool is_blockable_binary(GraphOp op) {
  return op == GRAPH_OP_ADD || op == GRAPH_OP_SUB || op == GRAPH_OP_MUL || op == GRAPH_OP_DIV || op == GRAPH_OP_MAX ||
         op == GRAPH_OP_MIN || op == GRAPH_OP_SUM || op == GRAPH_OP_PRELU;
}

/* Rewrites n over blocked inputs when it is an elementwise op or a binary
 * per-channel broadcast with at least one blocked input; false otherwise. */
static bool try_rewrite_elementwise(LayoutCtx *c, const GraphNode *n) {
  Graph *g = c->g;
  if (n->noutputs != 1 || n->outputs[0] < 0 || n->ninputs < 1 || n->inputs[0] < 0) return false;
  ValueId y = n->outputs[0];
  const GraphValue *yv = &g->values[y];
  if (yv->rank != 4 || !graph_value_is_static(yv)) return false;
  GraphOpPattern pat = graph_op_info(n->op)->pattern;
  int b = 0;
  for (int k = 0; k < n->ninputs && !b; k++)
    if (n->inputs[k] >= 0 && n->inputs[k] < c->nvalues0 && c->rep_block[n->inputs[k]] > 0) b = c->rep_block[n->inputs[k]];
  if (!b) return false;
  int64_t channels = yv->dims[1];
  if (channels % b) return false;
  ValueId ins[8];
  if (n->ninputs > 8) return false;
  if (pat == GRAPH_PATTERN_ELEMWISE && n->op != GRAPH_OP_DROPOUT) {
    /* Only input 0 is a tensor; others (Clip bounds) must be scalars. */
    if (c->rep_block[n->inputs[0]] <= 0 || !same_dims(&g->values[n->inputs[0]], yv)) return false;
    for (int k = 1; k < n->ninputs; k++) {
      const GraphTensor *t = graph_value_constant(g, n->inputs[k]);
      if (n->inputs[k] >= 0 && (!t || graph_tensor_numel(t) != 1)) return false;
    }
    for (int k = 0; k < n->ninputs; k++) ins[k] = n->inputs[k];
    ins[0] = get_blocked(c, n->inputs[0], b);
  } else if (is_blockable_binary(n->op)) {
    /* Decide first, emit after: a refusal must not leave transforms behind. */
    for (int k = 0; k < n->ninputs; k++) {
      ValueId v = n->inputs[k];
      if (v < 0) return false;
      if (channel_full(g, v, yv)) continue;
      bool param_ok = n->op != GRAPH_OP_PRELU || k == 1; /* PRelu's data must be full */
      if (!param_ok || !per_channel_const(g, v, channels)) return false;
    }
    for (int k = 0; k < n->ninputs; k++) {
      ValueId v = n->inputs[k];
      ins[k] = channel_full(g, v, &g->values[y]) ? get_blocked(c, v, b) : block_channel_const(g, v, channels, b);
    }
  } else {
    return false;
  }
  /* get_blocked may have grown g->values: yv is stale from here on. */
  ValueId yb = graph_add_value_derived(g, g->values[y].name, arena_printf(g->arena, "nchw%dc", b));
  GraphNode *o = graph_nodebuf_add(g, &c->buf, n->op, n->name, ins, n->ninputs, &yb, 1);
  o->attrs = n->attrs;
  o->nattrs = n->nattrs;
  c->rep_id[y] = yb;
  c->rep_block[y] = b;
  c->nchw_ok[y] = false;
  return true;
}

/* Concat along channels of blocked inputs is a Concat along dim 1 (C/b)
 * of the blocked tensors, when every input's channels divide by b. */
static bool try_rewrite_concat(LayoutCtx *c, const GraphNode *n) {
  Graph *g = c->g;
  if (n->op != GRAPH_OP_CONCAT || n->noutputs != 1 || n->outputs[0] < 0 || n->ninputs < 1) return false;
  ValueId y = n->outputs[0];
  if (!is_static_f32_rank(&g->values[y], 4)) return false;
  int64_t axis = graph_attr_int(n, "axis", 0);
  if (axis != 1 && axis != -3) return false;
  int b = 0;
  for (int k = 0; k < n->ninputs && !b; k++)
    if (n->inputs[k] >= 0 && n->inputs[k] < c->nvalues0 && c->rep_block[n->inputs[k]] > 0) b = c->rep_block[n->inputs[k]];
  if (!b) return false;
  for (int k = 0; k < n->ninputs; k++) {
    ValueId v = n->inputs[k];
    if (v < 0 || v >= c->nvalues0 || !is_static_f32_rank(&g->values[v], 4)) return false;
    /* Blocks are powers of two: halve until every input's channels divide
     * (inputs in another block get a block-to-block transform). */
    while (g->values[v].dims[1] % b) b /= 2;
  }
  ValueId *ins = ARENA_ARRAY(g->arena, ValueId, n->ninputs);
  for (int k = 0; k < n->ninputs; k++) ins[k] = get_blocked(c, n->inputs[k], b);
  ValueId yb = graph_add_value_derived(g, g->values[y].name, arena_printf(g->arena, "nchw%dc", b));
  GraphNode *o = graph_nodebuf_add(g, &c->buf, GRAPH_OP_CONCAT, n->name, ins, n->ninputs, &yb, 1);
  graph_node_set_attr(g, o, graph_attr_make_int(g, "axis", 1));
  c->rep_id[y] = yb;
  c->rep_block[y] = b;
  c->nchw_ok[y] = false;
  return true;
}

/* GlobalAverage/MaxPool of a blocked tensor: ReduceMean/ReduceMax over H
 * and W (axes 2, 3) of the blocked tensor, so only the small [N, C/b, 1, 1,
 * b] result needs a transform back instead of the whole feature map. */
static bool try_rewrite_global_pool(LayoutCtx *c, const GraphNode *n) {
  Graph *g = c->g;
  if ((n->op != GRAPH_OP_GLOBAL_AVERAGE_POOL && n->op != GRAPH_OP_GLOBAL_MAX_POOL) || n->ninputs != 1 || n->noutputs != 1 ||
      n->inputs[0] < 0 || n->outputs[0] < 0)
    return false;
  ValueId x = n->inputs[0], y = n->outputs[0];
  int b = c->rep_block[x];
  if (b <= 0 || !is_static_f32_rank(&g->values[x], 4)) return false;
  ValueId ins[2] = {c->rep_id[x], graph_add_i64s_derived(g, n->name, "axes", (int64_t[]){2, 3}, 2)};
  ValueId yb = graph_add_value_derived(g, g->values[y].name, arena_printf(g->arena, "nchw%dc", b));
  GraphOp op = n->op == GRAPH_OP_GLOBAL_AVERAGE_POOL ? GRAPH_OP_REDUCE_MEAN : GRAPH_OP_REDUCE_MAX;
  GraphNode *o = graph_nodebuf_add(g, &c->buf, op, n->name, ins, 2, &yb, 1);
  graph_node_set_attr(g, o, graph_attr_make_int(g, "keepdims", 1));
  c->rep_id[y] = yb;
  c->rep_block[y] = b;
  c->nchw_ok[y] = false;
  return true;
}

/* MaxPool/AveragePool (2-D, explicit pads, no Indices output) of a blocked
 * tensor pools each channel independently, so it runs on the blocked
 * tensor in the same block with the same attributes. */
static bool try_rewrite_pool(LayoutCtx *c, const GraphNode *n) {
  Graph *g = c->g;
  if ((n->op != GRAPH_OP_MAX_POOL && n->op != GRAPH_OP_AVERAGE_POOL) || n->ninputs != 1 || n->inputs[0] < 0 ||
      n->noutputs < 1 || n->outputs[0] < 0)
    return false;
  for (int k = 1; k < n->noutputs; k++)
    if (n->outputs[k] >= 0) return false; /* MaxPool's Indices are NCHW offsets */
  ValueId x = n->inputs[0], y = n->outputs[0];
  if (x >= c->nvalues0) return false;
  ValueId folded = c->fold_src[x];
  if (folded >= 0) x = folded;
  int b = c->rep_block[x];
  if (b <= 0 || !is_static_f32_rank(&g->values[x], 4) || !is_static_f32_rank(&g->values[y], 4)) return false;
  if (strcmp(graph_node_string(n, "auto_pad"), "NOTSET")) return false;
  const GraphAttr *ks = graph_node_attr(n, "kernel_shape");
  if (!ks || ks->kind != GRAPH_ATTR_INTS || ks->n != 2) return false;
  const GraphAttr *pads = graph_node_attr(n, "pads");
  if (pads && (pads->kind != GRAPH_ATTR_INTS || pads->n != 4)) return false;
  ValueId yb = graph_add_value_derived(g, g->values[y].name, arena_printf(g->arena, "nchw%dc", b));
  GraphOp op = n->op == GRAPH_OP_MAX_POOL ? GRAPH_OP_MAX_POOL_NCHWC : GRAPH_OP_AVERAGE_POOL_NCHWC;
  ValueId xb = c->rep_id[x];
  GraphNode *o = graph_nodebuf_add(g, &c->buf, op, n->name, &xb, 1, &yb, 1);
  if (folded >= 0) {
    copy_int_attr_list(g, o, n, "kernel_shape", 2, 1);
    copy_int_attr_list(g, o, n, "strides", 2, 1);
    graph_node_set_attr(g, o, graph_attr_make_ints(g, "pads", c->fold_pads[n->inputs[0]], 4));
    graph_node_set_attr(g, o, graph_attr_make_int(g, "count_include_pad", 1));
  } else {
    o->attrs = n->attrs;
    o->nattrs = n->nattrs;
  }
  c->rep_id[y] = yb;
  c->rep_block[y] = b;
  c->nchw_ok[y] = false;
  return true;
}

/* A zero Pad of H and W whose only consumers are unpadded, floor-mode
 * AveragePools (how PyTorch exports Inception's count_include_pad pools)
 * folds into them: AveragePool(Pad(x, p, 0), pads 0) == AveragePool(x, pads
 * p, count_include_pad 1), the window never leaving the padded extent. One
 * kernel and one padded copy fewer per pool. Needs each pad below the
 * kernel (the pool compute's limit). */
static bool pad_folds_into_pools(const Graph *g, const GraphNode *n, const int64_t *p) {
  ValueId y = n->outputs[0];
  if (strcmp(graph_attr_string(n, "mode", "constant"), "constant")) return false;
  if (n->ninputs > 2 && n->inputs[2] >= 0) {
    const GraphTensor *v = graph_value_constant(g, n->inputs[2]);
    if (!v || graph_tensor_numel(v) != 1 || graph_tensor_get_f64(v, 0) != 0) return false;
  }
  for (int k = 0; k < 8; k++)
    if (p[k] < 0) return false;
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == y) return false;
  int users = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const GraphNode *u = &g->nodes[i];
    bool reads = false;
    for (int k = 0; k < u->ninputs; k++) reads |= u->inputs[k] == y;
    if (!reads) continue;
    users++;
    /* Everything try_rewrite_pool checks, so that each consumer is
     * rewritten: nothing may read the Pad's (never emitted) output. */
    if (u->op != GRAPH_OP_AVERAGE_POOL || u->ninputs != 1 || u->noutputs != 1 || u->outputs[0] < 0 ||
        !is_static_f32_rank(&g->values[u->outputs[0]], 4) || graph_node_int(u, "ceil_mode") != 0)
      return false;
    if (strcmp(graph_attr_string(u, "auto_pad", "NOTSET"), "NOTSET")) return false;
    const GraphAttr *ks = graph_node_attr(u, "kernel_shape"), *up = graph_node_attr(u, "pads"), *dl = graph_node_attr(u, "dilations");
    if (!ks || ks->kind != GRAPH_ATTR_INTS || ks->n != 2) return false;
    if (up && (up->kind != GRAPH_ATTR_INTS || up->n != 4 || up->ints[0] || up->ints[1] || up->ints[2] || up->ints[3])) return false;
    if (dl && (dl->kind != GRAPH_ATTR_INTS || dl->n != 2 || dl->ints[0] != 1 || dl->ints[1] != 1)) return false;
    if (p[2] >= ks->ints[0] || p[6] >= ks->ints[0] || p[3] >= ks->ints[1] || p[7] >= ks->ints[1]) return false;
  }
  return users > 0;
}

/* A Pad of a blocked tensor that pads only H and W (Inception pads
 * explicitly before its 3x3 average pools) pads the blocked tensor the same
 * way: pads [0, 0, t, l, 0, 0, 0, b, r, 0]; any mode, since channels and
 * batch are untouched. */
static bool try_rewrite_pad(LayoutCtx *c, const GraphNode *n) {
  Graph *g = c->g;
  if (n->op != GRAPH_OP_PAD || n->ninputs < 2 || n->inputs[0] < 0 || n->noutputs != 1 || n->outputs[0] < 0) return false;
  if (n->ninputs > 3 && n->inputs[3] >= 0) return false; /* axes */
  ValueId x = n->inputs[0], y = n->outputs[0];
  if (x >= c->nvalues0) return false;
  int b = c->rep_block[x];
  if (b <= 0 || !is_static_f32_rank(&g->values[x], 4) || !is_static_f32_rank(&g->values[y], 4)) return false;
  const GraphTensor *pt = graph_value_constant(g, n->inputs[1]);
  if (!pt || graph_tensor_numel(pt) != 8) return false;
  int64_t p[8];
  for (int k = 0; k < 8; k++) p[k] = graph_tensor_get_i64(pt, k);
  if (p[0] || p[1] || p[4] || p[5]) return false;
  if (pad_folds_into_pools(g, n, p)) {
    c->fold_src[y] = x;
    int64_t hw[4] = {p[2], p[3], p[6], p[7]};
    memcpy(c->fold_pads[y], hw, sizeof hw);
    return true; /* nothing emitted: every consumer reads x instead */
  }
  int64_t v[10] = {0, 0, p[2], p[3], 0, 0, 0, p[6], p[7], 0};
  ValueId ins[3] = {c->rep_id[x], graph_add_i64s_derived(g, g->values[n->inputs[1]].name, "nchwc", v, 10),
                    n->ninputs > 2 ? n->inputs[2] : GRAPH_NO_VALUE};
  ValueId yb = graph_add_value_derived(g, g->values[y].name, arena_printf(g->arena, "nchw%dc", b));
  GraphNode *o = graph_nodebuf_add(g, &c->buf, GRAPH_OP_PAD, n->name, ins, n->ninputs > 2 ? 3 : 2, &yb, 1);
  o->attrs = n->attrs;
  o->nattrs = n->nattrs;
  c->rep_id[y] = yb;
  c->rep_block[y] = b;
  c->nchw_ok[y] = false;
  return true;
}

/* The per-value tables; any may be NULL (a failed allocation). */
static void layout_ctx_free(LayoutCtx *c) {
  loom_free(c->rep_id);
  loom_free(c->rep_block);
  loom_free(c->nchw_ok);
  loom_free(c->alt_id);
  loom_free(c->alt_block);
  loom_free(c->fold_src);
  loom_free(c->fold_pads);
}

loom_status graph_pass_layout_nchwc(Graph *g, const GraphLayoutOptions *opts, LoomError *err) {
  LayoutCtx c = {0};
  c.g = g;
  c.max_block = opts && opts->max_block > 0 ? opts->max_block : 16;
  c.nvalues0 = g->nvalues;
  c.rep_id = loom_malloc(sizeof(ValueId) * ((size_t)g->nvalues + 1));
  c.rep_block = loom_calloc((size_t)g->nvalues + 1, sizeof(int));
  c.nchw_ok = loom_malloc((size_t)g->nvalues + 1);
  c.alt_id = loom_malloc(sizeof(ValueId) * ((size_t)g->nvalues + 1));
  c.alt_block = loom_calloc((size_t)g->nvalues + 1, sizeof(int));
  c.fold_src = loom_malloc(sizeof(ValueId) * ((size_t)g->nvalues + 1));
  c.fold_pads = loom_malloc(sizeof(*c.fold_pads) * ((size_t)g->nvalues + 1));
  if (!c.rep_id || !c.rep_block || !c.nchw_ok || !c.alt_id || !c.alt_block || !c.fold_src || !c.fold_pads) {
    layout_ctx_free(&c);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (int v = 0; v < g->nvalues; v++) {
    c.rep_id[v] = v;
    c.nchw_ok[v] = true;
    c.fold_src[v] = -1;
  }
  int n0 = g->nnodes;
  for (int i = 0; i < n0; i++) {
    const GraphNode *n = &g->nodes[i];
    bool depthwise;
    if (conv_eligible(g, n, &depthwise)) {
      rewrite_conv(&c, n, depthwise);
      continue;
    }
    if (try_rewrite_elementwise(&c, n) || try_rewrite_concat(&c, n) || try_rewrite_global_pool(&c, n) ||
        try_rewrite_pool(&c, n) || try_rewrite_pad(&c, n))
      continue;
    for (int k = 0; k < n->ninputs; k++) need_nchw(&c, n->inputs[k]);
    graph_nodebuf_push(g, &c.buf, n);
  }
  for (int k = 0; k < g->noutputs; k++) need_nchw(&c, g->outputs[k]);
  graph_nodebuf_commit(g, &c.buf);
  layout_ctx_free(&c);
  loom_status st = graph_pass_infer(g, err);
  return st ? st : graph_verify(g, err);
}
