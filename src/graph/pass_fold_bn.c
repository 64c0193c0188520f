/* BatchNormalization folding. At inference BN is y = (x - mean) * s + beta
 * with s = gamma / sqrt(var + eps), a per-channel affine map. After a Conv
 * it folds into the weights: w'[k] = w[k] * s[k], b'[k] = (b[k] - mean[k]) *
 * s[k] + beta[k], and the BN disappears. Elsewhere it becomes Mul and Add by
 * per-channel constants, which fusion treats as broadcast arithmetic
 * instead of an opaque op. Numerics in double, stored in the weight dtype.
 * graph_pass_fold_conv_affine does the same for Mul/Add/Sub/Div by
 * per-channel constants right after a conv. */
#include "graph/pass_internal.h"
#include "graph/passes.h"
#include "support/alloc.h"

#include <math.h>
#include <stdlib.h>

#define INFER_MAX_RANK_BN 16

typedef struct BnParams {
  int64_t channels;
  double *scale, *shift; /* s and beta - mean * s */
} BnParams;

static bool is_f32_or_f64(DType t) { return t.code == DT_FLOAT && (t.bits == 32 || t.bits == 64); }

/* A constant 1-D float parameter with `channels` elements. */
static const GraphTensor *channel_param(const Graph *g, const GraphNode *n, int k, int64_t channels) {
  const GraphTensor *t = graph_value_constant(g, k < n->ninputs ? n->inputs[k] : -1);
  if (!t || !is_f32_or_f64(t->dtype) || graph_tensor_numel(t) != channels) return NULL;
  for (int d = 0; d < t->rank; d++)
    if (t->dims[d] != channels && t->dims[d] != 1) return NULL;
  return t;
}

/* Reads the BN's parameters; false (not an error) when they are not
 * constants or the input's channel extent is unknown. */
static bool bn_params(Graph *g, const GraphNode *n, BnParams *p) {
  if (n->ninputs != 5 || n->inputs[0] < 0) return false;
  /* Training-mode outputs (running mean/var) must not be needed. */
  for (int k = 1; k < n->noutputs; k++)
    if (n->outputs[k] >= 0) {
      for (int i = 0; i < g->nnodes; i++)
        for (int j = 0; j < g->nodes[i].ninputs; j++)
          if (g->nodes[i].inputs[j] == n->outputs[k]) return false;
      if (graph_is_output(g, n->outputs[k])) return false;
    }
  const GraphValue *x = &g->values[n->inputs[0]];
  if (x->rank < 2 || x->dims[1] < 1 || !is_f32_or_f64(x->dtype)) return false;
  int64_t c = x->dims[1];
  const GraphTensor *gamma = channel_param(g, n, 1, c), *beta = channel_param(g, n, 2, c);
  const GraphTensor *mean = channel_param(g, n, 3, c), *var = channel_param(g, n, 4, c);
  if (!gamma || !beta || !mean || !var) return false;
  double eps = graph_node_float(n, "epsilon");
  p->channels = c;
  p->scale = ARENA_ARRAY(g->arena, double, c);
  p->shift = ARENA_ARRAY(g->arena, double, c);
  for (int64_t k = 0; k < c; k++) {
    double s = graph_tensor_get_f64(gamma, k) / sqrt(graph_tensor_get_f64(var, k) + eps);
    p->scale[k] = s;
    p->shift[k] = graph_tensor_get_f64(beta, k) - graph_tensor_get_f64(mean, k) * s;
  }
  return true;
}

/* The Conv producing x when the BN can fold into it: constant float
 * weights and bias, x read only by this BN. -1 otherwise. */
static int foldable_conv(const Graph *g, const int *uses, ValueId x, int64_t channels) {
  int pi = g->values[x].producer;
  if (pi < 0 || uses[x] != 1) return -1;
  const GraphNode *c = &g->nodes[pi];
  if (c->op != GRAPH_OP_CONV || c->noutputs != 1 || c->ninputs < 2) return -1;
  const GraphTensor *w = graph_value_constant(g, c->inputs[1]);
  if (!w || !is_f32_or_f64(w->dtype) || w->rank < 3 || w->dims[0] != channels) return -1;
  if (c->ninputs > 2 && c->inputs[2] >= 0) {
    const GraphTensor *b = graph_value_constant(g, c->inputs[2]);
    if (!b || !is_f32_or_f64(b->dtype) || graph_tensor_numel(b) != channels) return -1;
  }
  return pi;
}

static void fold_into_conv(Graph *g, int conv_index, const GraphNode *bn, const BnParams *p) {
  GraphNode *conv = &g->nodes[conv_index];
  const GraphTensor *w = graph_value_constant(g, conv->inputs[1]);
  const GraphTensor *b = conv->ninputs > 2 && conv->inputs[2] >= 0 ? graph_value_constant(g, conv->inputs[2]) : NULL;
  GraphTensor *nw = graph_tensor_new(g->arena, w->dtype, w->rank, w->dims);
  int64_t per = graph_tensor_numel(w) / p->channels;
  for (int64_t k = 0; k < p->channels; k++)
    for (int64_t j = 0; j < per; j++)
      graph_tensor_set_f64(nw, k * per + j, graph_tensor_get_f64(w, k * per + j) * p->scale[k]);
  int64_t bd = p->channels;
  GraphTensor *nb = graph_tensor_new(g->arena, w->dtype, 1, &bd);
  for (int64_t k = 0; k < p->channels; k++) {
    double b0 = b ? graph_tensor_get_f64(b, k) : 0.0;
    /* (b - mean) * s + beta == b * s + (beta - mean * s) */
    graph_tensor_set_f64(nb, k, b0 * p->scale[k] + p->shift[k]);
  }
  const char *base = g->values[conv->inputs[1]].name;
  ValueId wv = graph_add_constant_derived(g, base, "bn", nw);
  ValueId bv = graph_add_constant_derived(g, base, "bn_bias", nb);
  ValueId *ins = ARENA_ARRAY(g->arena, ValueId, 3);
  ins[0] = conv->inputs[0];
  ins[1] = wv;
  ins[2] = bv;
  conv->inputs = ins;
  conv->ninputs = 3;
  /* The conv now writes the BN's output, so graph outputs keep their ids;
   * the producer link lets a following Mul/Add find the conv. */
  conv->outputs[0] = bn->outputs[0];
  g->values[bn->outputs[0]].producer = conv_index;
}

/* A per-channel constant shaped to broadcast against [N, C, d...]: [C, 1...]. */
static ValueId channel_const(Graph *g, const char *base, const char *suffix, const double *v, int64_t c, int xrank, DType dt) {
  int64_t dims[INFER_MAX_RANK_BN];
  int rank = xrank - 1;
  dims[0] = c;
  for (int k = 1; k < rank; k++) dims[k] = 1;
  GraphTensor *t = graph_tensor_new(g->arena, dt, rank, dims);
  for (int64_t k = 0; k < c; k++) graph_tensor_set_f64(t, k, v[k]);
  return graph_add_constant_derived(g, base, suffix, t);
}

loom_status graph_pass_fold_batchnorm(Graph *g, LoomError *err) {
  int *uses = graph_use_counts(g);
  if (!uses) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  GraphNodeBuf buf = {0};
  bool *drop = loom_calloc((size_t)g->nnodes + 1, 1);
  if (!drop) {
    loom_free(uses);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  }
  /* First fold into convs (edits the conv in place, drops the BN). */
  for (int i = 0; i < g->nnodes; i++) {
    GraphNode *n = &g->nodes[i];
    BnParams p;
    if (n->op != GRAPH_OP_BATCH_NORM || !bn_params(g, n, &p)) continue;
    int ci = foldable_conv(g, uses, n->inputs[0], p.channels);
    if (ci < 0) continue;
    fold_into_conv(g, ci, n, &p);
    drop[i] = true;
  }
  for (int i = 0; i < g->nnodes; i++) {
    GraphNode *n = &g->nodes[i];
    BnParams p;
    if (drop[i]) continue;
    if (n->op != GRAPH_OP_BATCH_NORM || n->ninputs < 1 || n->inputs[0] < 0 || g->values[n->inputs[0]].rank > INFER_MAX_RANK_BN ||
        !bn_params(g, n, &p)) {
      graph_nodebuf_push(g, &buf, n);
      continue;
    }
    const GraphValue *x = &g->values[n->inputs[0]];
    DType dt = x->dtype;
    int rank = x->rank;
    ValueId xv = n->inputs[0], y = n->outputs[0];
    ValueId sv = channel_const(g, n->name, "scale", p.scale, p.channels, rank, dt);
    ValueId hv = channel_const(g, n->name, "shift", p.shift, p.channels, rank, dt);
    ValueId mid = graph_add_value_derived(g, g->values[y].name, "scaled");
    graph_set_type(g, mid, dt, rank, g->values[xv].dims);
    const char *name = n->name;
    ValueId in_mul[2] = {xv, sv}, in_add[2] = {mid, hv};
    graph_nodebuf_add(g, &buf, GRAPH_OP_MUL, arena_printf(g->arena, "%s_mul", name), in_mul, 2, &mid, 1);
    graph_nodebuf_add(g, &buf, GRAPH_OP_ADD, arena_printf(g->arena, "%s_add", name), in_add, 2, &y, 1);
  }
  graph_nodebuf_commit(g, &buf);
  loom_free(uses);
  loom_free(drop);
  loom_status st = graph_pass_infer(g, err);
  return st ? st : graph_verify(g, err);
}

/* ---- per-channel Mul/Add/Sub/Div by constants after a conv ---- */

/* The per-channel values of constant v broadcast against a conv output
 * [N, K, H, W]: right-aligned shape [1, K or 1, 1, 1] (or any rank-<=1
 * single element). Returns false when v is not such a constant. */
static bool conv_channel_values(const Graph *g, ValueId v, int64_t K, int out_rank, double *vals) {
  const GraphTensor *t = graph_value_constant(g, v);
  if (!t || !is_f32_or_f64(t->dtype) || t->rank > out_rank) return false;
  int64_t n = graph_tensor_numel(t);
  for (int d = 0; d < t->rank; d++) {
    int axis = d + out_rank - t->rank;
    if (t->dims[d] != 1 && !(axis == 1 && t->dims[d] == K)) return false;
  }
  for (int64_t k = 0; k < K; k++) vals[k] = graph_tensor_get_f64(t, n == 1 ? 0 : k);
  return true;
}

loom_status graph_pass_fold_conv_affine(Graph *g, LoomError *err) {
  int *uses = graph_use_counts(g);
  bool *drop = loom_calloc((size_t)g->nnodes + 1, 1);
  if (!uses || !drop) {
    loom_free(uses);
    loom_free(drop);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (int i = 0; i < g->nnodes; i++) {
    GraphNode *n = &g->nodes[i];
    bool commutes = n->op == GRAPH_OP_MUL || n->op == GRAPH_OP_ADD;
    if (!commutes && n->op != GRAPH_OP_SUB && n->op != GRAPH_OP_DIV) continue;
    if (n->ninputs != 2 || n->noutputs != 1 || n->inputs[0] < 0 || n->inputs[1] < 0) continue;
    int xi = 0;
    if (commutes && graph_value_constant(g, n->inputs[0])) xi = 1;
    ValueId x = n->inputs[xi], cv = n->inputs[1 - xi], y = n->outputs[0];
    const GraphValue *xv = &g->values[x], *yv = &g->values[y];
    if (xv->rank < 3 || xv->rank > INFER_MAX_RANK_BN || xv->dims[1] < 1 || yv->rank != xv->rank) continue;
    bool same = true;
    for (int d = 0; d < xv->rank; d++) same &= xv->dims[d] == yv->dims[d];
    if (!same) continue; /* the constant must not broadcast the output larger */
    int64_t K = xv->dims[1];
    int ci = foldable_conv(g, uses, x, K);
    if (ci < 0) continue;
    double *vals = loom_malloc(sizeof(double) * (size_t)K);
    if (!vals) break;
    if (!conv_channel_values(g, cv, K, xv->rank, vals)) {
      loom_free(vals);
      continue;
    }
    BnParams p = {K, ARENA_ARRAY(g->arena, double, K), ARENA_ARRAY(g->arena, double, K)};
    for (int64_t k = 0; k < K; k++) {
      switch (n->op) {
      case GRAPH_OP_MUL: p.scale[k] = vals[k]; p.shift[k] = 0; break;
      case GRAPH_OP_DIV: p.scale[k] = 1.0 / vals[k]; p.shift[k] = 0; break;
      case GRAPH_OP_ADD: p.scale[k] = 1; p.shift[k] = vals[k]; break;
      default: p.scale[k] = 1; p.shift[k] = -vals[k]; break;
      }
    }
    loom_free(vals);
    fold_into_conv(g, ci, n, &p); /* the conv now writes y */
    drop[i] = true;
  }
  graph_remove_nodes(g, drop);
  loom_free(uses);
  loom_free(drop);
  loom_status st = graph_pass_infer(g, err);
  return st ? st : graph_verify(g, err);
}
