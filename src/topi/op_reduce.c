/* Reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/
 * SumSquare; the pools' global form lives in op_nn.c) and Softmax /
 * LogSoftmax along any axis. The reduction of each is a stage whose body is
 * the reduction alone; the arithmetic after it (mean's division, exp,
 * normalization) is a separate elementwise stage, so the fuser can attach
 * elementwise consumers to it. Normalizations are in op_norm.c. */
#include "topi/op_internal.h"

#include <math.h>
#include <string.h>

typedef struct ReduceArgs {
  const TeTensor *x, *sum, *max, *exp;
  TopiReduceOp op;
  DType acc; /* the reduction's dtype (i32 for bool Max/Min) */
  bool reduced[TOPI_MAX_RANK];
  bool keepdims, log; /* log: LogSoftmax */
  IterVar k[TOPI_MAX_RANK];
  int nk;
  int axis; /* softmax */
  double count;
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

static const Expr *call1(Arena *a, CallOp op, const Expr *v) { return expr_call(a, op, v->dtype, &v, 1); }

static const Expr *reduce_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  const Expr *v = reduce_load(a, r, ax);
  if (!dtype_eq(v->dtype, r->acc)) v = expr_cast(a, r->acc, v);
  switch (r->op) {
    case TOPI_REDUCE_MAX: return te_max(a, v, r->k, r->nk, NULL);
    case TOPI_REDUCE_MIN: return te_min(a, v, r->k, r->nk, NULL);
    case TOPI_REDUCE_PROD: return te_prod(a, v, r->k, r->nk, NULL);
    case TOPI_REDUCE_L1:
      if (dtype_is_float(v->dtype)) v = call1(a, CALL_FABS, v);
      else v = expr_select(a, expr_lt(a, v, op_const(a, v->dtype, 0)), expr_sub(a, op_const(a, v->dtype, 0), v), v);
      break;
    case TOPI_REDUCE_L2:
    case TOPI_REDUCE_SUM_SQUARE: v = expr_mul(a, v, v); break;
    case TOPI_REDUCE_LOG_SUM_EXP: v = call1(a, CALL_EXP, expr_sub(a, v, te_load(a, r->max, ax))); break;
    default: break;
  }
  return te_sum(a, v, r->k, r->nk, NULL);
}

static const Expr *max_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  return te_max(a, reduce_load(a, r, ax), r->k, r->nk, NULL);
}

/* The elementwise stage after the reduction. */
static const Expr *post_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  const Expr *v = te_load(a, r->sum, ax);
  switch (r->op) {
    case TOPI_REDUCE_MEAN: return expr_binary(a, EXPR_DIV, v, op_const(a, v->dtype, r->count));
    case TOPI_REDUCE_L2: return call1(a, CALL_SQRT, v);
    case TOPI_REDUCE_LOG_SUM: return call1(a, CALL_LOG, v);
    case TOPI_REDUCE_LOG_SUM_EXP: return expr_add(a, call1(a, CALL_LOG, v), te_load(a, r->max, ax));
    default: return expr_cast(a, r->x->dtype, v); /* bool Max / Min */
  }
}

static const Expr *copy_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  return te_load(a, r->x, ax);
}

static const char *const reduce_names[] = {
    [TOPI_REDUCE_SUM] = "ReduceSum",       [TOPI_REDUCE_MEAN] = "ReduceMean",
    [TOPI_REDUCE_MAX] = "ReduceMax",       [TOPI_REDUCE_MIN] = "ReduceMin",
    [TOPI_REDUCE_PROD] = "ReduceProd",     [TOPI_REDUCE_L1] = "ReduceL1",
    [TOPI_REDUCE_L2] = "ReduceL2",         [TOPI_REDUCE_LOG_SUM] = "ReduceLogSum",
    [TOPI_REDUCE_LOG_SUM_EXP] = "ReduceLogSumExp", [TOPI_REDUCE_SUM_SQUARE] = "ReduceSumSquare",
};

TeTensor *topi_reduce(Arena *a, const char *name, TopiReduceOp op, const TeTensor *x,
                      const int64_t *axes, int n_axes, bool keepdims, bool noop_with_empty_axes,
                      LoomError *err) {
  if ((unsigned)op > TOPI_REDUCE_SUM_SQUARE) {
    err_set(err, LOOM_ERR_INVALID_ARG, "topi_reduce: unknown reduction %d", (int)op);
    return NULL;
  }
  const char *on = reduce_names[op];
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "data", x, err)) return NULL;
  char b[16];
  bool float_only = op == TOPI_REDUCE_MEAN || op == TOPI_REDUCE_L2 || op == TOPI_REDUCE_LOG_SUM ||
                    op == TOPI_REDUCE_LOG_SUM_EXP;
  bool bool_ok = op == TOPI_REDUCE_MAX || op == TOPI_REDUCE_MIN;
  if ((dtype_is_bool(x->dtype) && !bool_ok) || (float_only && !dtype_is_float(x->dtype))) {
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
  r.acc = dtype_is_bool(x->dtype) ? DT_I32 : x->dtype;
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
  /* Nothing to reduce (a 0-d input): the reduction of one element. */
  if (r.nk == 0) r.k[r.nk++] = te_reduce_axis(a, "k", 1);
  bool post = float_only || !dtype_eq(r.acc, x->dtype);
  if (!post) return te_compute(a, name, orank, oshape, reduce_body, &r, err);
  if (op == TOPI_REDUCE_LOG_SUM_EXP &&
      !(r.max = te_compute(a, op_stage(a, name, "max"), orank, oshape, max_body, &r, err)))
    return NULL;
  const char *red = op_stage(a, name, dtype_eq(r.acc, x->dtype) ? "sum" : "red");
  if (!(r.sum = te_compute(a, red, orank, oshape, reduce_body, &r, err))) return NULL;
  return te_compute(a, name, orank, oshape, post_body, &r, err);
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
  const Expr *const *rax = drop_at(a, ax, r->x->ndim, r->axis);
  if (r->log)
    return expr_sub(a, expr_sub(a, te_load(a, r->x, ax), te_load(a, r->max, rax)),
                    call1(a, CALL_LOG, te_load(a, r->sum, rax)));
  /* One reciprocal per row (hoisted out of the row's loop) and a multiply
   * per element, instead of a division per element: ~1 ulp apart. */
  const Expr *inv = expr_binary(a, EXPR_DIV, op_const(a, r->x->dtype, 1.0), te_load(a, r->sum, rax));
  return expr_mul(a, te_load(a, r->exp, ax), inv);
}

static TeTensor *softmax_impl(Arena *a, const char *name, const TeTensor *x, int64_t axis, bool log,
                              LoomError *err) {
  const char *on = log ? "LogSoftmax" : "Softmax";
  if (!op_check_name(on, name, err) || !op_check_float(on, "input", x, err)) return NULL;
  ReduceArgs r;
  memset(&r, 0, sizeof r);
  r.x = x, r.log = log;
  if (x->ndim < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: input (\"%s\") must have rank >= 1", on, x->name);
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

TeTensor *topi_softmax_axis(Arena *a, const char *name, const TeTensor *x, int64_t axis,
                            LoomError *err) {
  return softmax_impl(a, name, x, axis, false, err);
}

TeTensor *topi_log_softmax_axis(Arena *a, const char *name, const TeTensor *x, int64_t axis,
                                LoomError *err) {
  return softmax_impl(a, name, x, axis, true, err);
}
