/* Arg-reductions (ArgMax, ArgMin), Hardmax and the scans (CumSum,
 * CumProd). An arg-reduction is two reductions: the extreme value, then
 * the first (or last) position holding it, as a min (max) over positions
 * masked by equality. No tuple-valued reduction is needed, and each stage
 * is an ordinary reduction the schedules already handle. */
#include "topi/op_internal.h"

#include <string.h>

typedef struct ArgArgs {
  const TeTensor *x, *ext, *idx;
  int axis;
  bool keepdims, is_min, last, prod, exclusive, reverse;
  IterVar k;
} ArgArgs;

/* x's index for output index ax (x's rank, or one less without keepdims),
 * with position v on the axis. */
static const Expr *load_along(Arena *a, const ArgArgs *r, const Expr *const *ax, const Expr *v) {
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0, o = 0; d < r->x->ndim; d++) {
    if (d == r->axis) {
      idx[d] = v;
      if (r->keepdims) o++;
    } else {
      idx[d] = ax[o++];
    }
  }
  return te_load(a, r->x, idx);
}

static const Expr *ext_body(Arena *a, const Expr *const *ax, void *user) {
  ArgArgs *r = user;
  const Expr *v = load_along(a, r, ax, r->k.var);
  return r->is_min ? te_min(a, v, &r->k, 1, NULL) : te_max(a, v, &r->k, 1, NULL);
}

static const Expr *idx_body(Arena *a, const Expr *const *ax, void *user) {
  ArgArgs *r = user;
  const Expr *hit = expr_binary(a, EXPR_EQ, load_along(a, r, ax, r->k.var), te_load(a, r->ext, ax));
  const Expr *k = r->k.var; /* index variables are i64 */
  if (r->last) return te_max(a, expr_select(a, hit, k, expr_i64(a, -1)), &r->k, 1, NULL);
  return te_min(a, expr_select(a, hit, k, expr_i64(a, r->x->shape[r->axis])), &r->k, 1, NULL);
}

/* name, x (rank >= 1; bool refused unless bool_ok) and axis. */
static bool check_axis_input(const char *on, const char *name, const TeTensor *x, int64_t axis, bool bool_ok,
                             int *out, LoomError *err) {
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "input", x, err)) return false;
  if (x->ndim < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: input (\"%s\") must have rank >= 1", on, x->name);
    return false;
  }
  if (!bool_ok && dtype_is_bool(x->dtype)) {
    char b[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: input (\"%s\") has unsupported dtype %s", on, x->name,
            dtype_str(x->dtype, b));
    return false;
  }
  return op_axis(on, "axis", axis, x->ndim, false, out, err);
}

TeTensor *topi_arg_reduce(Arena *a, const char *name, bool is_min, const TeTensor *x, int64_t axis,
                          bool keepdims, bool select_last, LoomError *err) {
  const char *on = is_min ? "ArgMin" : "ArgMax";
  ArgArgs r;
  memset(&r, 0, sizeof r);
  if (!check_axis_input(on, name, x, axis, false, &r.axis, err)) return NULL;
  r.x = x, r.keepdims = keepdims, r.is_min = is_min, r.last = select_last;
  r.k = te_reduce_axis(a, "k", x->shape[r.axis]);
  int64_t oshape[TOPI_MAX_RANK];
  int orank = 0;
  for (int d = 0; d < x->ndim; d++) {
    if (d != r.axis) oshape[orank++] = x->shape[d];
    else if (keepdims) oshape[orank++] = 1;
  }
  if (!(r.ext = te_compute(a, op_stage(a, name, "ext"), orank, oshape, ext_body, &r, err))) return NULL;
  return te_compute(a, name, orank, oshape, idx_body, &r, err);
}

/* ---- Hardmax: one-hot of the first maximum ---- */

static const Expr *onehot_body(Arena *a, const Expr *const *ax, void *user) {
  ArgArgs *r = user;
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < r->x->ndim; d++) idx[d] = d == r->axis ? expr_i64(a, 0) : ax[d];
  const Expr *hit = expr_binary(a, EXPR_EQ, ax[r->axis], te_load(a, r->idx, idx));
  return expr_select(a, hit, op_const(a, r->x->dtype, 1), op_const(a, r->x->dtype, 0));
}

TeTensor *topi_hardmax_axis(Arena *a, const char *name, const TeTensor *x, int64_t axis,
                            LoomError *err) {
  ArgArgs r;
  memset(&r, 0, sizeof r);
  if (!check_axis_input("Hardmax", name, x, axis, true, &r.axis, err) || !op_check_float("Hardmax", "input", x, err))
    return NULL;
  r.x = x;
  if (!(r.idx = topi_arg_reduce(a, op_stage(a, name, "idx"), false, x, axis, true, false, err))) return NULL;
  return te_compute(a, name, x->ndim, x->shape, onehot_body, &r, err);
}

/* ---- CumSum / CumProd: out[i] = reduction over the positions k of the
 * prefix (k <= i; k < i exclusive; k >= i / k > i reversed) ---- */

static const Expr *cum_body(Arena *a, const Expr *const *ax, void *user) {
  ArgArgs *r = user;
  const Expr *k = r->k.var, *i = ax[r->axis];
  const Expr *in;
  if (!r->reverse) in = r->exclusive ? expr_lt(a, k, i) : expr_binary(a, EXPR_LE, k, i);
  else in = r->exclusive ? expr_lt(a, i, k) : expr_binary(a, EXPR_LE, i, k);
  const Expr *v = expr_select(a, in, load_along(a, r, ax, k), op_const(a, r->x->dtype, r->prod ? 1 : 0));
  return r->prod ? te_prod(a, v, &r->k, 1, NULL) : te_sum(a, v, &r->k, 1, NULL);
}

TeTensor *topi_cumulative(Arena *a, const char *name, bool prod, const TeTensor *x, int64_t axis,
                          bool exclusive, bool reverse, LoomError *err) {
  const char *on = prod ? "CumProd" : "CumSum";
  ArgArgs r;
  memset(&r, 0, sizeof r);
  if (!check_axis_input(on, name, x, axis, false, &r.axis, err)) return NULL;
  r.x = x, r.keepdims = true, r.prod = prod, r.exclusive = exclusive, r.reverse = reverse;
  r.k = te_reduce_axis(a, "k", x->shape[r.axis]);
  return te_compute(a, name, x->ndim, x->shape, cum_body, &r, err);
}
