/* TopK as compute stages. A sort is a permutation; its inverse is the rank
 * of every element (how many elements come before it), which is a
 * reduction, and the sorted sequence selects, at each position k, the one
 * element whose rank is k, which is a second (conditional) reduction. No
 * scatter, no data-dependent loop: O(n^2) along the axis, which is what a
 * compute definition of a sort costs without a sorting network. */
#include "topi/op_internal.h"

#include <string.h>

typedef struct TopKArgs {
  const TeTensor *x, *rank;
  int axis;
  int64_t n;
  bool largest;
  IterVar j;
} TopKArgs;

/* idx with axis replaced by v (a fresh array). */
static const Expr *const *with_axis(Arena *a, const Expr *const *idx, int nd, int axis, const Expr *v) {
  const Expr **out = ARENA_ARRAY(a, const Expr *, nd);
  memcpy(out, idx, sizeof(*out) * (size_t)nd);
  out[axis] = v;
  return out;
}

/* rank[i] = #{ j : x[j] comes before x[i] }: larger (smaller) first, ties
 * to the lower index. */
static const Expr *rank_body(Arena *a, const Expr *const *ax, void *user) {
  const TopKArgs *t = user;
  int nd = t->x->ndim;
  const Expr *xi = te_load(a, t->x, ax), *xj = te_load(a, t->x, with_axis(a, ax, nd, t->axis, t->j.var));
  const Expr *better = expr_binary(a, t->largest ? EXPR_GT : EXPR_LT, xj, xi);
  const Expr *tie = expr_and(a, expr_binary(a, EXPR_EQ, xj, xi), expr_lt(a, t->j.var, ax[t->axis]));
  const Expr *before = expr_binary(a, EXPR_OR, better, tie);
  return te_sum(a, expr_cast(a, DT_I64, before), &t->j, 1, NULL);
}

static const Expr *select_cond(Arena *a, const TopKArgs *t, const Expr *const *ax) {
  const Expr *rj = te_load(a, t->rank, with_axis(a, ax, t->x->ndim, t->axis, t->j.var));
  return expr_binary(a, EXPR_EQ, rj, ax[t->axis]);
}

static const Expr *values_body(Arena *a, const Expr *const *ax, void *user) {
  const TopKArgs *t = user;
  const Expr *xj = te_load(a, t->x, with_axis(a, ax, t->x->ndim, t->axis, t->j.var));
  return te_max(a, xj, &t->j, 1, select_cond(a, t, ax));
}

static const Expr *indices_body(Arena *a, const Expr *const *ax, void *user) {
  const TopKArgs *t = user;
  return te_max(a, t->j.var, &t->j, 1, select_cond(a, t, ax));
}

bool topi_top_k(Arena *a, const char *name, const TeTensor *x, int64_t k, int64_t axis, bool largest,
                TeTensor **values, TeTensor **indices, LoomError *err) {
  const char *op = "TopK";
  if (!op_check_name(op, name, err) || !op_check_tensor(op, "X", x, err)) return false;
  if (x->ndim < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "TopK: X must have rank >= 1");
    return false;
  }
  int ax;
  if (!op_axis(op, "axis", axis, x->ndim, false, &ax, err)) return false;
  if (dtype_is_bool(x->dtype) || x->dtype.lanes != 1) {
    char b[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "TopK: X has dtype %s, expected a number type", dtype_str(x->dtype, b));
    return false;
  }
  int64_t n = x->shape[ax];
  if (k < 1 || k > n) {
    err_set(err, k == 0 ? LOOM_ERR_UNSUPPORTED : LOOM_ERR_INVALID_ARG,
            "TopK: K = %lld is out of range for axis %d of extent %lld%s", (long long)k, ax, (long long)n,
            k == 0 ? " (empty outputs are not supported)" : "");
    return false;
  }
  TopKArgs t = {.x = x, .axis = ax, .n = n, .largest = largest};
  t.j = te_reduce_axis(a, "j", n);
  t.rank = te_compute(a, op_stage(a, name, "rank"), x->ndim, x->shape, rank_body, &t, err);
  if (!t.rank) return false;
  int64_t shape[TOPI_MAX_RANK];
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
  shape[ax] = k;
  *values = te_compute(a, name, x->ndim, shape, values_body, &t, err);
  *indices = *values ? te_compute(a, op_stage(a, name, "indices"), x->ndim, shape, indices_body, &t, err) : NULL;
  return *indices != NULL;
}
