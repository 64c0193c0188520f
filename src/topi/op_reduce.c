/* Reductions (ReduceSum/Mean/Max, pools' global form lives in op_nn.c),
 * Softmax along any axis and LayerNormalization. The reduction of each is a
 * stage whose body is the reduction alone; the arithmetic after it (mean's
 * division, exp, normalization) is a separate elementwise stage, so the
 * fuser can attach elementwise consumers to it. */
#include "topi/op_internal.h"

#include <math.h>
#include <string.h>

typedef struct ReduceArgs {
  const TeTensor *x, *sum, *max, *exp, *var, *scale, *bias;
  TopiReduceOp op;
  bool reduced[TOPI_MAX_RANK];
  bool keepdims;
  IterVar k[TOPI_MAX_RANK];
  int nk;
  int axis; /* softmax, layer norm */
  double count, eps;
} ReduceArgs;

/* The input index for output index ax: reduced dims read the reduction
 * variables, the others the output axes (skipping dropped axes). */
static const Expr *reduce_load(Arena *a, const ReduceArgs *r, const Expr *const *ax) {
  const Expr *idx[TOPI_MAX_RANK];
  int o = 0, k = 0;
  for (int d = 0; d < r->x->ndim; d++) {
    if (r->reduced[d]) {
      idx[d] = r->k[k++].var;
      if (r->keepdims) o++;
    } else {
      idx[d] = ax[o++];
    }
  }
  return te_load(a, r->x, idx);
}

static const Expr *reduce_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  const Expr *v = reduce_load(a, r, ax);
  return r->op == TOPI_REDUCE_MAX ? te_max(a, v, r->k, r->nk, NULL) : te_sum(a, v, r->k, r->nk, NULL);
}

static const Expr *mean_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  return expr_binary(a, EXPR_DIV, te_load(a, r->sum, ax), op_const(a, r->sum->dtype, r->count));
}

static const Expr *copy_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  return te_load(a, r->x, ax);
}

TeTensor *topi_reduce(Arena *a, const char *name, TopiReduceOp op, const TeTensor *x,
                      const int64_t *axes, int n_axes, bool keepdims, bool noop_with_empty_axes,
                      LoomError *err) {
  const char *on = op == TOPI_REDUCE_SUM ? "ReduceSum" : op == TOPI_REDUCE_MEAN ? "ReduceMean" : "ReduceMax";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "data", x, err)) return NULL;
  char b[16];
  if (dtype_is_bool(x->dtype) || (op == TOPI_REDUCE_MEAN && !dtype_is_float(x->dtype))) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: data (\"%s\") has unsupported dtype %s", on, x->name,
            dtype_str(x->dtype, b));
    return NULL;
  }
  if (n_axes < 0 || (n_axes > 0 && !axes)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: bad axes list (%d entries)", on, n_axes);
    return NULL;
  }
  ReduceArgs r;
  memset(&r, 0, sizeof r);
  r.x = x, r.op = op, r.keepdims = keepdims, r.count = 1;
  if (n_axes == 0 && noop_with_empty_axes)
    return te_compute(a, name, x->ndim, x->shape, copy_body, &r, err);
  for (int i = 0; i < n_axes; i++) {
    int ax;
    if (!op_axis(on, "axis", axes[i], x->ndim, false, &ax, err)) return NULL;
    if (r.reduced[ax]) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: axis %lld is listed twice", on, (long long)axes[i]);
      return NULL;
    }
    r.reduced[ax] = true;
  }
  int64_t oshape[TOPI_MAX_RANK];
  int orank = 0;
  for (int d = 0; d < x->ndim; d++) {
    if (n_axes == 0) r.reduced[d] = true;
    if (r.reduced[d]) {
      r.k[r.nk++] = te_reduce_axis(a, arena_printf(a, "k%d", d), x->shape[d]);
      r.count *= (double)x->shape[d];
      if (keepdims) oshape[orank++] = 1;
    } else {
      oshape[orank++] = x->shape[d];
    }
  }
  if (r.nk == 0) return te_compute(a, name, x->ndim, x->shape, copy_body, &r, err);
  if (op != TOPI_REDUCE_MEAN) return te_compute(a, name, orank, oshape, reduce_body, &r, err);
  TeTensor *sum = te_compute(a, op_stage(a, name, "sum"), orank, oshape, reduce_body, &r, err);
  if (!(r.sum = sum)) return NULL;
  return te_compute(a, name, orank, oshape, mean_body, &r, err);
}

/* ---- softmax: the reduced tensors drop the softmax axis ---- */

/* ax (rank - 1 entries) with v inserted at position axis. */
static const Expr *const *insert_at(Arena *a, const Expr *const *ax, int rank, int axis,
                                    const Expr *v) {
  const Expr **idx = ARENA_ARRAY(a, const Expr *, rank);
  for (int d = 0, o = 0; d < rank; d++) idx[d] = d == axis ? v : ax[o++];
  return idx;
}

/* ax (rank entries) without position axis. */
static const Expr *const *drop_at(Arena *a, const Expr *const *ax, int rank, int axis) {
  const Expr **idx = ARENA_ARRAY(a, const Expr *, rank);
  for (int d = 0, o = 0; d < rank; d++)
    if (d != axis) idx[o++] = ax[d];
  return idx;
}

static const Expr *sm_max_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  const Expr *v = te_load(a, r->x, insert_at(a, ax, r->x->ndim, r->axis, r->k[0].var));
  return te_max(a, v, r->k, 1, NULL);
}

static const Expr *sm_exp_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  const Expr *d = expr_sub(a, te_load(a, r->x, ax),
                           te_load(a, r->max, drop_at(a, ax, r->x->ndim, r->axis)));
  return expr_call(a, CALL_EXP, d->dtype, &d, 1);
}

static const Expr *sm_sum_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  const Expr *v = te_load(a, r->exp, insert_at(a, ax, r->x->ndim, r->axis, r->k[0].var));
  return te_sum(a, v, r->k, 1, NULL);
}

static const Expr *sm_out_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  return expr_binary(a, EXPR_DIV, te_load(a, r->exp, ax),
                     te_load(a, r->sum, drop_at(a, ax, r->x->ndim, r->axis)));
}

TeTensor *topi_softmax_axis(Arena *a, const char *name, const TeTensor *x, int64_t axis,
                            LoomError *err) {
  const char *on = "Softmax";
  if (!op_check_name(on, name, err) || !op_check_float(on, "input", x, err)) return NULL;
  ReduceArgs r;
  memset(&r, 0, sizeof r);
  r.x = x;
  if (x->ndim < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Softmax: input (\"%s\") must have rank >= 1", x->name);
    return NULL;
  }
  if (!op_axis(on, "axis", axis, x->ndim, false, &r.axis, err)) return NULL;
  r.k[0] = te_reduce_axis(a, "k", x->shape[r.axis]);
  int64_t rshape[TOPI_MAX_RANK];
  for (int d = 0, o = 0; d < x->ndim; d++)
    if (d != r.axis) rshape[o++] = x->shape[d];
  TeTensor *mx = te_compute(a, op_stage(a, name, "max"), x->ndim - 1, rshape, sm_max_body, &r, err);
  if (!(r.max = mx)) return NULL;
  TeTensor *ex = te_compute(a, op_stage(a, name, "exp"), x->ndim, x->shape, sm_exp_body, &r, err);
  if (!(r.exp = ex)) return NULL;
  TeTensor *sm = te_compute(a, op_stage(a, name, "sum"), x->ndim - 1, rshape, sm_sum_body, &r, err);
  if (!(r.sum = sm)) return NULL;
  return te_compute(a, name, x->ndim, x->shape, sm_out_body, &r, err);
}

/* ---- layer norm: statistics over axes [axis, rank) ---- */

static const Expr *ln_load(Arena *a, const ReduceArgs *r, const Expr *const *outer) {
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < r->x->ndim; d++) idx[d] = d < r->axis ? outer[d] : r->k[d - r->axis].var;
  return te_load(a, r->x, idx);
}

static const Expr *ln_mean(Arena *a, const ReduceArgs *r, const Expr *const *outer) {
  return expr_binary(a, EXPR_DIV, te_load(a, r->sum, outer), op_const(a, r->x->dtype, r->count));
}

static const Expr *ln_sum_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  return te_sum(a, ln_load(a, r, ax), r->k, r->nk, NULL);
}

static const Expr *ln_var_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  const Expr *d = expr_sub(a, ln_load(a, r, ax), ln_mean(a, r, ax));
  return te_sum(a, expr_mul(a, d, d), r->k, r->nk, NULL);
}

static const Expr *ln_out_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  DType t = r->x->dtype;
  int rank = r->x->ndim;
  const Expr *var = expr_binary(a, EXPR_DIV, te_load(a, r->var, ax), op_const(a, t, r->count));
  const Expr *den = expr_add(a, var, op_const(a, t, r->eps));
  den = expr_call(a, CALL_SQRT, t, &den, 1);
  const Expr *v = expr_binary(a, EXPR_DIV, expr_sub(a, te_load(a, r->x, ax), ln_mean(a, r, ax)), den);
  v = expr_mul(a, v, op_load_broadcast(a, r->scale, ax, rank));
  if (r->bias) v = expr_add(a, v, op_load_broadcast(a, r->bias, ax, rank));
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

TeTensor *topi_layer_norm_onnx(Arena *a, const char *name, const TeTensor *x,
                               const TeTensor *scale, const TeTensor *bias, int64_t axis,
                               double eps, LoomError *err) {
  const char *on = "LayerNormalization";
  if (!op_check_name(on, name, err) || !op_check_float(on, "X", x, err) ||
      !op_check_float(on, "Scale", scale, err) || (bias && !op_check_float(on, "B", bias, err)))
    return NULL;
  ReduceArgs r;
  memset(&r, 0, sizeof r);
  r.x = x, r.scale = scale, r.bias = bias, r.eps = eps, r.count = 1;
  if (x->ndim < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: X (\"%s\") must have rank >= 1", on, x->name);
    return NULL;
  }
  if (!op_axis(on, "axis", axis, x->ndim, false, &r.axis, err)) return NULL;
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
  for (int d = r.axis; d < x->ndim; d++) {
    r.k[r.nk++] = te_reduce_axis(a, arena_printf(a, "k%d", d), x->shape[d]);
    r.count *= (double)x->shape[d];
  }
  TeTensor *sum = te_compute(a, op_stage(a, name, "sum"), r.axis, x->shape, ln_sum_body, &r, err);
  if (!(r.sum = sum)) return NULL;
  TeTensor *var = te_compute(a, op_stage(a, name, "var"), r.axis, x->shape, ln_var_body, &r, err);
  if (!(r.var = var)) return NULL;
  return te_compute(a, name, x->ndim, x->shape, ln_out_body, &r, err);
}
