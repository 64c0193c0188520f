/* Normalizations over the last axis: softmax and layer norm. Both are
 * several stages (reductions cannot nest inside an expression), so the
 * graph-level fuser and the schedules see TVM's usual block structure. */
#include "topi/topi.h"

#include <string.h>

typedef struct NormArgs {
  const TeTensor *x, *max, *exp, *sum, *var_sum, *gamma, *beta;
  IterVar k;
  int64_t D; /* extent of the last axis */
  double eps;
} NormArgs;

/* The outer axes followed by `last`. */
static const Expr *const *with_last(Arena *a, const Expr *const *outer, int n_outer,
                                    const Expr *last) {
  const Expr **idx = ARENA_ARRAY(a, const Expr *, n_outer + 1);
  if (n_outer) memcpy(idx, outer, sizeof(*idx) * (size_t)n_outer);
  idx[n_outer] = last;
  return idx;
}

static const Expr *row_max_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *n = user;
  const Expr *v = te_load(a, n->x, with_last(a, ax, n->x->ndim - 1, n->k.var));
  return te_max(a, v, &n->k, 1, NULL);
}

static const Expr *exp_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *n = user;
  const Expr *d = expr_sub(a, te_load(a, n->x, ax), te_load(a, n->max, ax));
  return expr_call(a, CALL_EXP, DT_F32, &d, 1);
}

static const Expr *exp_sum_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *n = user;
  return te_sum(a, te_load(a, n->exp, with_last(a, ax, n->x->ndim - 1, n->k.var)), &n->k, 1, NULL);
}

static const Expr *softmax_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *n = user;
  return expr_binary(a, EXPR_DIV, te_load(a, n->exp, ax), te_load(a, n->sum, ax));
}

static bool norm_check(const char *op, int ndim, const int64_t *shape, LoomError *err) {
  if (ndim < 1 || ndim > 8 || !shape) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: rank %d, expected 1..8", op, ndim);
    return false;
  }
  return true;
}

PrimFunc *topi_softmax(Arena *a, int ndim, const int64_t *shape, LoomError *err) {
  if (!norm_check("softmax", ndim, shape, err)) return NULL;
  TeTensor *x = te_placeholder(a, "data", DT_F32, ndim, shape, err);
  if (!x) return NULL;
  NormArgs n = {.x = x, .k = te_reduce_axis(a, "k", shape[ndim - 1]), .D = shape[ndim - 1]};
  TeTensor *mx = te_compute(a, "T_max", ndim - 1, shape, row_max_body, &n, err);
  if (!(n.max = mx)) return NULL;
  TeTensor *ex = te_compute(a, "T_exp", ndim, shape, exp_body, &n, err);
  if (!(n.exp = ex)) return NULL;
  TeTensor *sm = te_compute(a, "T_sum", ndim - 1, shape, exp_sum_body, &n, err);
  if (!(n.sum = sm)) return NULL;
  TeTensor *out = te_compute(a, "T_softmax", ndim, shape, softmax_body, &n, err);
  if (!out) return NULL;
  return te_create_primfunc(a, "softmax", (TeTensor *[]){x, out}, 2, err);
}

static const Expr *row_sum_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *n = user;
  return te_sum(a, te_load(a, n->x, with_last(a, ax, n->x->ndim - 1, n->k.var)), &n->k, 1, NULL);
}

/* mean = T_sum / D, computed where it is used (cheap, keeps one stage less). */
static const Expr *mean_at(Arena *a, const NormArgs *n, const Expr *const *outer) {
  return expr_binary(a, EXPR_DIV, te_load(a, n->sum, outer), expr_float(a, DT_F32, (double)n->D));
}

static const Expr *var_sum_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *n = user;
  const Expr *d = expr_sub(a, te_load(a, n->x, with_last(a, ax, n->x->ndim - 1, n->k.var)),
                           mean_at(a, n, ax));
  return te_sum(a, expr_mul(a, d, d), &n->k, 1, NULL);
}

static const Expr *layer_norm_body(Arena *a, const Expr *const *ax, void *user) {
  NormArgs *n = user;
  int outer = n->x->ndim - 1;
  const Expr *var = expr_binary(a, EXPR_DIV, te_load(a, n->var_sum, ax),
                                expr_float(a, DT_F32, (double)n->D));
  const Expr *den = expr_add(a, var, expr_float(a, DT_F32, n->eps));
  den = expr_call(a, CALL_SQRT, DT_F32, &den, 1);
  const Expr *norm = expr_binary(a, EXPR_DIV, expr_sub(a, te_load(a, n->x, ax), mean_at(a, n, ax)), den);
  const Expr *j[1] = {ax[outer]};
  return expr_add(a, expr_mul(a, norm, te_load(a, n->gamma, j)), te_load(a, n->beta, j));
}

PrimFunc *topi_layer_norm(Arena *a, int ndim, const int64_t *shape, double eps, LoomError *err) {
  if (!norm_check("layer_norm", ndim, shape, err)) return NULL;
  if (!(eps >= 0)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "layer_norm: eps %g must be >= 0", eps);
    return NULL;
  }
  TeTensor *x = te_placeholder(a, "data", DT_F32, ndim, shape, err);
  TeTensor *gamma = x ? te_placeholder(a, "gamma", DT_F32, 1, &shape[ndim - 1], err) : NULL;
  TeTensor *beta = gamma ? te_placeholder(a, "beta", DT_F32, 1, &shape[ndim - 1], err) : NULL;
  if (!beta) return NULL;
  NormArgs n = {.x = x, .gamma = gamma, .beta = beta, .k = te_reduce_axis(a, "k", shape[ndim - 1]),
                .D = shape[ndim - 1], .eps = eps};
  TeTensor *sum = te_compute(a, "T_sum", ndim - 1, shape, row_sum_body, &n, err);
  if (!(n.sum = sum)) return NULL;
  TeTensor *vs = te_compute(a, "T_var_sum", ndim - 1, shape, var_sum_body, &n, err);
  if (!(n.var_sum = vs)) return NULL;
  TeTensor *out = te_compute(a, "T_layer_norm", ndim, shape, layer_norm_body, &n, err);
  if (!out) return NULL;
  return te_create_primfunc(a, "layer_norm", (TeTensor *[]){x, gamma, beta, out}, 4, err);
}
