/* Helpers for the ONNX-semantics compute definitions: argument checks that
 * every op shares, and the numpy broadcasting load. */
#include "topi/op_internal.h"

#include <math.h>

const Expr *op_const(Arena *a, DType t, double v) {
  if (dtype_is_float(t)) return expr_float(a, t, v);
  if (dtype_is_bool(t)) return expr_int(a, t, v != 0);
  if (isnan(v)) v = 0;
  if (v >= 9.2e18) v = 9.2e18;
  if (v <= -9.2e18) v = -9.2e18;
  return expr_int(a, t, (int64_t)v);
}

bool op_axis(const char *op, const char *what, int64_t axis, int rank, bool inclusive, int *out,
             LoomError *err) {
  /* inclusive (Flatten): axis in [-rank, rank], a negative one counts from rank. */
  int64_t hi = inclusive ? rank + 1 : rank;
  int64_t v = axis < 0 ? axis + rank : axis;
  if (v < 0 || v >= hi) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s %lld is out of range for rank %d (expected %lld..%lld)",
            op, what, (long long)axis, rank, (long long)-rank, (long long)hi - 1);
    return false;
  }
  *out = (int)v;
  return true;
}

const Expr *op_load_broadcast(Arena *a, const TeTensor *x, const Expr *const *out, int rout) {
  int r = x->ndim;
  const Expr **idx = ARENA_ARRAY(a, const Expr *, r);
  for (int d = 0; d < r; d++) idx[d] = x->shape[d] == 1 ? expr_i64(a, 0) : out[d + rout - r];
  return te_load(a, x, idx);
}

const char *op_stage(Arena *a, const char *name, const char *suffix) {
  return arena_printf(a, "%s_%s", name, suffix);
}

bool op_check_name(const char *op, const char *name, LoomError *err) {
  if (!name || !*name) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: empty output name", op);
    return false;
  }
  return true;
}

bool op_check_tensor(const char *op, const char *what, const TeTensor *t, LoomError *err) {
  if (!t) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: input %s is missing", op, what);
    return false;
  }
  if (t->ndim < 0 || t->ndim > TOPI_MAX_RANK) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: input %s (\"%s\") has rank %d, at most %d supported",
            op, what, t->name, t->ndim, TOPI_MAX_RANK);
    return false;
  }
  return true;
}

bool op_check_float(const char *op, const char *what, const TeTensor *t, LoomError *err) {
  if (!op_check_tensor(op, what, t, err)) return false;
  /* f16 and bf16 compute in f32 (tir_legalize_narrow) */
  if (!(t->dtype.code == DT_FLOAT || t->dtype.code == DT_BFLOAT) || t->dtype.bits < 16) {
    char b[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: input %s (\"%s\") has dtype %s, expected f32, f64, f16 or bf16", op,
            what, t->name, dtype_str(t->dtype, b));
    return false;
  }
  return true;
}

int64_t op_numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  return n;
}

const Expr *op_index_wrap(Arena *a, const Expr *i, int64_t dim, bool clamp) {
  if (!dtype_eq(i->dtype, DT_I64)) i = expr_cast(a, DT_I64, i);
  i = expr_select(a, expr_lt(a, i, expr_i64(a, 0)), expr_add(a, i, expr_i64(a, dim)), i);
  return clamp ? expr_min(a, expr_max(a, i, expr_i64(a, 0)), expr_i64(a, dim - 1)) : i;
}
