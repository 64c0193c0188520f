/* Normalizations (LayerNormalization, RMSNormalization, GroupNormalization,
 * InstanceNormalization, MeanVarianceNormalization, LpNormalization, LRN)
 * and the losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss).
 *
 * The statistics of every normalization come from one helper, normalize():
 * reductions over a set of axes whose results keep those axes as extent 1
 * (so they load back with numpy broadcasting), then (x - mean) * inv_std.
 * GroupNormalization is that helper on x reshaped to [N, groups, rest].
 * Each reduction is a stage of its own; the elementwise stages after it are
 * inlined by the group schedule unless they are outputs (LayerNormalization
 * exposes Mean and InvStdDev). */
#include "topi/op_internal.h"

#include <math.h>
#include <string.h>

typedef enum { SRC_X, SRC_ABS, SRC_SQ, SRC_CENTERED_SQ } NormSrc;

typedef struct NormArgs {
  const TeTensor *x, *sum, *var, *mean, *inv_std, *norm, *scale, *bias;
  bool reduced[TOPI_MAX_RANK];
  IterVar k[TOPI_MAX_RANK];
  int nk;
  NormSrc src;
  double count, eps;
  bool rms, eps_on_std;
  int scale_axis;        /* GroupNormalization: the channel axis of the affine; -1 = trailing broadcast */
  int64_t channels_per;  /* GroupNormalization with per-group scale: channels per group, else 1 */
  int64_t p;             /* LpNormalization */
  int64_t size, lo;      /* LRN window */
  double alpha, beta;
} NormArgs;

/* x at the statistic's index ax (x's rank) with the reduced axes reading
 * the reduction variables. */
static const Expr *stat_src(Arena *a, const NormArgs *r, const Expr *const *ax) {
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0, j = 0; d < r->x->ndim; d++) idx[d] = r->reduced[d] ? r->k[j++].var : ax[d];
  const Expr *v = te_load(a, r->x, idx);
  switch (r->src) {
    case SRC_ABS: return expr_call(a, CALL_FABS, v->dtype, &v, 1);
    case SRC_SQ: return expr_mul(a, v, v);
    case SRC_CENTERED_SQ: {
      const Expr *d = expr_sub(a, v, te_load(a, r->mean, ax));
      return expr_mul(a, d, d);
    }
    default: return v;
  }
}

static const Expr *stat_sum_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *r = user;
  return te_sum(a, stat_src(a, r, ax), r->k, r->nk, NULL);
}

/* A keepdims sum of f(x) over the reduced axes. */
static TeTensor *stat_sum(Arena *a, const char *name, NormArgs *r, NormSrc src, LoomError *err) {
  int64_t shape[TOPI_MAX_RANK];
  for (int d = 0; d < r->x->ndim; d++) shape[d] = r->reduced[d] ? 1 : r->x->shape[d];
  r->src = src;
  return te_compute(a, name, r->x->ndim, shape, stat_sum_body, r, err);
}

static void set_reduced(Arena *a, NormArgs *r) {
  r->nk = 0;
  r->count = 1;
  for (int d = 0; d < r->x->ndim; d++)
    if (r->reduced[d]) {
      r->k[r->nk++] = te_reduce_axis(a, arena_printf(a, "k%d", d), r->x->shape[d]);
      r->count *= (double)r->x->shape[d];
    }
}

static const Expr *mean_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *r = user;
  return expr_binary(a, EXPR_DIV, te_load(a, r->sum, ax), op_const(a, r->x->dtype, r->count));
}

static const Expr *inv_std_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *r = user;
  DType t = r->x->dtype;
  const Expr *v = expr_binary(a, EXPR_DIV, te_load(a, r->var, ax), op_const(a, t, r->count));
  if (!r->eps_on_std) v = expr_add(a, v, op_const(a, t, r->eps));
  v = expr_call(a, CALL_SQRT, t, &v, 1);
  if (r->eps_on_std) v = expr_add(a, v, op_const(a, t, r->eps));
  return expr_binary(a, EXPR_DIV, op_const(a, t, 1), v);
}

static const Expr *norm_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *r = user;
  int rank = r->x->ndim;
  const Expr *v = te_load(a, r->x, ax);
  if (!r->rms) v = expr_sub(a, v, op_load_broadcast(a, r->mean, ax, rank));
  return expr_mul(a, v, op_load_broadcast(a, r->inv_std, ax, rank));
}

/* x normalized over the axes marked in r->reduced (set before the call):
 * stages "<prefix>_sum" + "<prefix>_mean" (not for rms), "<prefix>_var",
 * "<prefix>_inv_std", and `out`. r->mean / r->inv_std hold the statistics
 * afterwards. */
static TeTensor *normalize(Arena *a, const char *prefix, const char *out, NormArgs *r, LoomError *err) {
  set_reduced(a, r);
  if (!r->rms) {
    if (!(r->sum = stat_sum(a, op_stage(a, prefix, "sum"), r, SRC_X, err))) return NULL;
    r->mean = te_compute(a, op_stage(a, prefix, "mean"), r->x->ndim, r->sum->shape, mean_body, r, err);
    if (!r->mean) return NULL;
  }
  if (!(r->var = stat_sum(a, op_stage(a, prefix, "var"), r, r->rms ? SRC_SQ : SRC_CENTERED_SQ, err))) return NULL;
  r->inv_std = te_compute(a, op_stage(a, prefix, "inv_std"), r->x->ndim, r->var->shape, inv_std_body, r, err);
  if (!r->inv_std) return NULL;
  return te_compute(a, out, r->x->ndim, r->x->shape, norm_body, r, err);
}

/* ---- LayerNormalization / RMSNormalization ---- */

static const Expr *affine_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *r = user;
  int rank = r->norm->ndim;
  const Expr *v = te_load(a, r->norm, ax);
  if (r->scale_axis < 0) {
    v = expr_mul(a, v, op_load_broadcast(a, r->scale, ax, rank));
    if (r->bias) v = expr_add(a, v, op_load_broadcast(a, r->bias, ax, rank));
    return v;
  }
  /* per channel (or per group of channels_per channels) along scale_axis */
  const Expr *c = ax[r->scale_axis];
  if (r->channels_per > 1) c = expr_floordiv(a, c, expr_i64(a, r->channels_per));
  v = expr_mul(a, v, te_load(a, r->scale, &c));
  if (r->bias) v = expr_add(a, v, te_load(a, r->bias, &c));
  return v;
}

static bool broadcasts_to(const TeTensor *p, const TeTensor *x) {
  if (p->ndim > x->ndim) return false;
  for (int d = 0; d < p->ndim; d++) {
    int64_t want = x->shape[d + x->ndim - p->ndim];
    if (p->shape[d] != 1 && p->shape[d] != want) return false;
  }
  return true;
}

TeTensor *topi_layer_norm_full(Arena *a, const char *name, const TeTensor *x, const TeTensor *scale,
                               const TeTensor *bias, int64_t axis, double eps, bool rms,
                               TeTensor **mean, TeTensor **inv_std, LoomError *err) {
  const char *on = rms ? "RMSNormalization" : "LayerNormalization";
  if (!op_check_name(on, name, err) || !op_check_float(on, "X", x, err) ||
      !op_check_float(on, "Scale", scale, err) || (bias && !op_check_float(on, "B", bias, err)))
    return NULL;
  NormArgs r;
  memset(&r, 0, sizeof r);
  r.x = x, r.scale = scale, r.bias = bias, r.eps = eps, r.rms = rms, r.scale_axis = -1;
  if (x->ndim < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: X (\"%s\") must have rank >= 1", on, x->name);
    return NULL;
  }
  int ax;
  if (!op_axis(on, "axis", axis, x->ndim, false, &ax, err)) return NULL;
  if (!broadcasts_to(scale, x) || (bias && !broadcasts_to(bias, x)) ||
      !dtype_eq(scale->dtype, x->dtype) || (bias && !dtype_eq(bias->dtype, x->dtype))) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "%s: Scale%s must have X's dtype and broadcast to X's shape", on, bias ? " and B" : "");
    return NULL;
  }
  if (!(eps >= 0)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: epsilon %g must be >= 0", on, eps);
    return NULL;
  }
  for (int d = ax; d < x->ndim; d++) r.reduced[d] = true;
  if (!(r.norm = normalize(a, name, op_stage(a, name, "norm"), &r, err))) return NULL;
  if (mean) *mean = (TeTensor *)r.mean;
  if (inv_std) *inv_std = (TeTensor *)r.inv_std;
  return te_compute(a, name, x->ndim, x->shape, affine_body, &r, err);
}

TeTensor *topi_layer_norm_onnx(Arena *a, const char *name, const TeTensor *x,
                               const TeTensor *scale, const TeTensor *bias, int64_t axis,
                               double eps, LoomError *err) {
  return topi_layer_norm_full(a, name, x, scale, bias, axis, eps, false, NULL, NULL, err);
}

/* ---- GroupNormalization (and InstanceNormalization) ---- */

TeTensor *topi_group_norm(Arena *a, const char *name, const TeTensor *x, const TeTensor *scale,
                          const TeTensor *bias, int64_t num_groups, double eps, LoomError *err) {
  const char *on = "GroupNormalization";
  if (!op_check_name(on, name, err) || !op_check_float(on, "X", x, err) ||
      !op_check_float(on, "scale", scale, err) || !op_check_float(on, "bias", bias, err))
    return NULL;
  if (x->ndim < 2) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: X (\"%s\") must be [N, C, ...]", on, x->name);
    return NULL;
  }
  int64_t C = x->shape[1];
  if (num_groups < 1 || C % num_groups) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: num_groups %lld must divide the %lld channels", on,
            (long long)num_groups, (long long)C);
    return NULL;
  }
  NormArgs r;
  memset(&r, 0, sizeof r);
  r.scale = scale, r.bias = bias, r.eps = eps, r.scale_axis = 1, r.channels_per = 1;
  for (int i = 0; i < 2; i++) {
    const TeTensor *p = i ? bias : scale;
    bool per_channel = p->ndim == 1 && p->shape[0] == C;
    bool per_group = p->ndim == 1 && p->shape[0] == num_groups;
    if ((!per_channel && !per_group) || !dtype_eq(p->dtype, x->dtype) || p->shape[0] != scale->shape[0]) {
      err_set(err, LOOM_ERR_INVALID_ARG,
              "%s: scale and bias must be [C] (%lld) or [num_groups] (%lld) of X's dtype", on,
              (long long)C, (long long)num_groups);
      return NULL;
    }
    if (!per_channel) r.channels_per = C / num_groups;
  }
  /* [N, C, d...] -> [N, groups, C / groups * d...], normalized over axis 2. */
  int64_t gshape[3] = {x->shape[0], num_groups, op_numel(x->ndim, x->shape) / x->shape[0] / num_groups};
  TeTensor *gx = topi_reshape(a, op_stage(a, name, "grouped"), x, gshape, 3, err);
  if (!gx) return NULL;
  r.x = gx;
  r.reduced[2] = true;
  TeTensor *gn = normalize(a, name, op_stage(a, name, "gnorm"), &r, err);
  if (!gn) return NULL;
  if (!(r.norm = topi_reshape(a, op_stage(a, name, "norm"), gn, x->shape, x->ndim, err))) return NULL;
  return te_compute(a, name, x->ndim, x->shape, affine_body, &r, err);
}

/* ---- MeanVarianceNormalization ---- */

TeTensor *topi_mvn(Arena *a, const char *name, const TeTensor *x, const int64_t *axes, int n_axes,
                   LoomError *err) {
  const char *on = "MeanVarianceNormalization";
  static const int64_t def_axes[3] = {0, 2, 3};
  if (!op_check_name(on, name, err) || !op_check_float(on, "X", x, err)) return NULL;
  if (!axes) axes = def_axes, n_axes = 3;
  NormArgs r;
  memset(&r, 0, sizeof r);
  r.x = x, r.eps = 1e-9, r.eps_on_std = true;
  for (int i = 0; i < n_axes; i++) {
    int ax;
    if (!op_axis(on, "axis", axes[i], x->ndim, false, &ax, err)) return NULL;
    r.reduced[ax] = true;
  }
  return normalize(a, name, name, &r, err);
}

/* ---- LpNormalization ---- */

static const Expr *lp_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *r = user;
  const Expr *n = op_load_broadcast(a, r->var, ax, r->x->ndim);
  if (r->p == 2) n = expr_call(a, CALL_SQRT, n->dtype, &n, 1);
  /* A zero norm (an all-zero slice) gives 0, as ONNX's reference does. */
  const Expr *zero = op_const(a, n->dtype, 0);
  return expr_select(a, expr_binary(a, EXPR_EQ, n, zero), zero, expr_binary(a, EXPR_DIV, te_load(a, r->x, ax), n));
}

TeTensor *topi_lp_norm(Arena *a, const char *name, const TeTensor *x, int64_t axis, int64_t p,
                       LoomError *err) {
  const char *on = "LpNormalization";
  if (!op_check_name(on, name, err) || !op_check_float(on, "input", x, err)) return NULL;
  if (p != 1 && p != 2) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: p %lld must be 1 or 2", on, (long long)p);
    return NULL;
  }
  NormArgs r;
  memset(&r, 0, sizeof r);
  r.x = x, r.p = p;
  int ax;
  if (x->ndim < 1 || !op_axis(on, "axis", axis, x->ndim, false, &ax, err)) {
    if (x->ndim < 1) err_set(err, LOOM_ERR_INVALID_ARG, "%s: input must have rank >= 1", on);
    return NULL;
  }
  r.reduced[ax] = true;
  set_reduced(a, &r);
  if (!(r.var = stat_sum(a, op_stage(a, name, "norm"), &r, p == 1 ? SRC_ABS : SRC_SQ, err))) return NULL;
  return te_compute(a, name, x->ndim, x->shape, lp_body, &r, err);
}

/* ---- LRN: a window of `size` channels around each channel ---- */

static const Expr *lrn_sq_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *r = user;
  int64_t C = r->x->shape[1];
  const Expr *c = expr_add(a, ax[1], expr_sub(a, r->k[0].var, expr_i64(a, r->lo)));
  const Expr *in = expr_and(a, expr_binary(a, EXPR_GE, c, expr_i64(a, 0)), expr_lt(a, c, expr_i64(a, C)));
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < r->x->ndim; d++) idx[d] = ax[d];
  idx[1] = expr_min(a, expr_max(a, c, expr_i64(a, 0)), expr_i64(a, C - 1));
  const Expr *v = te_load(a, r->x, idx);
  v = expr_select(a, in, expr_mul(a, v, v), op_const(a, v->dtype, 0));
  return te_sum(a, v, r->k, 1, NULL);
}

static const Expr *lrn_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *r = user;
  DType t = r->x->dtype;
  const Expr *base = expr_add(a, op_const(a, t, r->eps),
                              expr_mul(a, op_const(a, t, r->alpha / (double)r->size), te_load(a, r->var, ax)));
  const Expr *args[2] = {base, op_const(a, t, r->beta)};
  return expr_binary(a, EXPR_DIV, te_load(a, r->x, ax), expr_call(a, CALL_POW, t, args, 2));
}

TeTensor *topi_lrn(Arena *a, const char *name, const TeTensor *x, int64_t size, double alpha,
                   double beta, double bias, LoomError *err) {
  const char *on = "LRN";
  if (!op_check_name(on, name, err) || !op_check_float(on, "X", x, err)) return NULL;
  if (x->ndim < 2) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: X (\"%s\") must be [N, C, ...]", on, x->name);
    return NULL;
  }
  if (size < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: size %lld must be >= 1", on, (long long)size);
    return NULL;
  }
  NormArgs r;
  memset(&r, 0, sizeof r);
  r.x = x, r.size = size, r.lo = (size - 1) / 2, r.alpha = alpha, r.beta = beta, r.eps = bias;
  r.k[0] = te_reduce_axis(a, "k", size);
  if (!(r.var = te_compute(a, op_stage(a, name, "sq"), x->ndim, x->shape, lrn_sq_body, &r, err))) return NULL;
  return te_compute(a, name, x->ndim, x->shape, lrn_body, &r, err);
}

/* ---- NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss ---- */

typedef struct LossArgs {
  const TeTensor *in, *target, *weight, *elem, *w, *sum, *wsum, *summed;
  bool has_ignore, weighted;
  int64_t ignore;
  IterVar k[TOPI_MAX_RANK];
  int nk;
} LossArgs;

/* Is the element at target index ax counted, its class (clamped into
 * range) and its weight. */
static const Expr *loss_valid(Arena *a, const LossArgs *r, const Expr *const *ax, const Expr **cls,
                              const Expr **w) {
  const Expr *t = te_load(a, r->target, ax);
  if (!dtype_eq(t->dtype, DT_I64)) t = expr_cast(a, DT_I64, t);
  *cls = expr_min(a, expr_max(a, t, expr_i64(a, 0)), expr_i64(a, r->in->shape[1] - 1));
  *w = r->weight ? te_load(a, r->weight, cls) : op_const(a, r->in->dtype, 1);
  return r->has_ignore ? expr_binary(a, EXPR_NE, t, expr_i64(a, r->ignore)) : NULL;
}

static const Expr *loss_elem_body(Arena *a, const Expr *const *ax, void *user) {
  LossArgs *r = user;
  const Expr *cls, *w;
  const Expr *valid = loss_valid(a, r, ax, &cls, &w);
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0, o = 0; d < r->in->ndim; d++) idx[d] = d == 1 ? cls : ax[o++];
  const Expr *v = expr_sub(a, op_const(a, r->in->dtype, 0), te_load(a, r->in, idx));
  if (r->weight) v = expr_mul(a, v, w);
  return valid ? expr_select(a, valid, v, op_const(a, v->dtype, 0)) : v;
}

static const Expr *loss_w_body(Arena *a, const Expr *const *ax, void *user) {
  LossArgs *r = user;
  const Expr *cls, *w;
  const Expr *valid = loss_valid(a, r, ax, &cls, &w);
  return valid ? expr_select(a, valid, w, op_const(a, w->dtype, 0)) : w;
}

/* The sum of every element of r->summed (the loss or the weights). */
static const Expr *loss_sum_body(Arena *a, const Expr *const *ax, void *user) {
  (void)ax;
  LossArgs *r = user;
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < r->nk; d++) idx[d] = r->k[d].var;
  return te_sum(a, te_load(a, r->summed, idx), r->k, r->nk, NULL);
}

static const Expr *loss_mean_body(Arena *a, const Expr *const *ax, void *user) {
  (void)ax;
  LossArgs *r = user;
  return expr_binary(a, EXPR_DIV, te_load(a, r->sum, NULL), te_load(a, r->wsum, NULL));
}

static TeTensor *nll_impl(Arena *a, const char *on, const char *name, const TeTensor *in, const TeTensor *target,
                          const TeTensor *weight, TopiLossReduction reduction, bool has_ignore,
                          int64_t ignore_index, LoomError *err) {
  if (!op_check_tensor(on, "labels", target, err) || (weight && !op_check_float(on, "weights", weight, err)))
    return NULL;
  bool ok = in->ndim >= 2 && target->ndim == in->ndim - 1 && target->dtype.code == DT_INT &&
            (!weight || (weight->ndim == 1 && weight->shape[0] == in->shape[1] && dtype_eq(weight->dtype, in->dtype)));
  for (int d = 0, o = 0; ok && d < in->ndim; d++)
    if (d != 1) ok = target->shape[o++] == in->shape[d];
  if (!ok) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "%s: expected input [N, C, d...], integer labels [N, d...] and weights [C] of the input's dtype", on);
    return NULL;
  }
  LossArgs r;
  memset(&r, 0, sizeof r);
  r.in = in, r.target = target, r.weight = weight, r.has_ignore = has_ignore, r.ignore = ignore_index;
  if (reduction == TOPI_LOSS_NONE)
    return te_compute(a, name, target->ndim, target->shape, loss_elem_body, &r, err);
  if (!(r.elem = te_compute(a, op_stage(a, name, "elem"), target->ndim, target->shape, loss_elem_body, &r, err)))
    return NULL;
  for (int d = 0; d < target->ndim; d++) r.k[r.nk++] = te_reduce_axis(a, arena_printf(a, "k%d", d), target->shape[d]);
  r.summed = r.elem;
  if (reduction == TOPI_LOSS_SUM) return te_compute(a, name, 0, NULL, loss_sum_body, &r, err);
  if (!(r.sum = te_compute(a, op_stage(a, name, "sum"), 0, NULL, loss_sum_body, &r, err)) ||
      !(r.summed = r.w = te_compute(a, op_stage(a, name, "w"), target->ndim, target->shape, loss_w_body, &r, err)) ||
      !(r.wsum = te_compute(a, op_stage(a, name, "wsum"), 0, NULL, loss_sum_body, &r, err)))
    return NULL;
  return te_compute(a, name, 0, NULL, loss_mean_body, &r, err);
}

TeTensor *topi_nll_loss(Arena *a, const char *name, const TeTensor *input, const TeTensor *target,
                        const TeTensor *weight, TopiLossReduction reduction, bool has_ignore,
                        int64_t ignore_index, LoomError *err) {
  const char *on = "NegativeLogLikelihoodLoss";
  if (!op_check_name(on, name, err) || !op_check_float(on, "input", input, err)) return NULL;
  return nll_impl(a, on, name, input, target, weight, reduction, has_ignore, ignore_index, err);
}

TeTensor *topi_softmax_cross_entropy(Arena *a, const char *name, const TeTensor *scores,
                                     const TeTensor *labels, const TeTensor *weights,
                                     TopiLossReduction reduction, bool has_ignore,
                                     int64_t ignore_index, TeTensor **log_prob, LoomError *err) {
  const char *on = "SoftmaxCrossEntropyLoss";
  if (!op_check_name(on, name, err) || !op_check_float(on, "scores", scores, err)) return NULL;
  if (scores->ndim < 2) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: scores (\"%s\") must be [N, C, ...]", on, scores->name);
    return NULL;
  }
  TeTensor *lp = topi_log_softmax_axis(a, op_stage(a, name, "log_prob"), scores, 1, err);
  if (!lp) return NULL;
  if (log_prob) *log_prob = lp;
  return nll_impl(a, on, name, lp, labels, weights, reduction, has_ignore, ignore_index, err);
}
