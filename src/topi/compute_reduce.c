/* Reductions over one axis. */
#include "topi/topi.h"

typedef struct ReduceArgs {
  const TeTensor *x;
  IterVar k;
  int axis;
} ReduceArgs;

static const Expr *sum_body(Arena *a, const Expr *const *ax, void *user) {
  ReduceArgs *r = user;
  int n = r->x->ndim;
  const Expr **idx = ARENA_ARRAY(a, const Expr *, n);
  for (int d = 0, o = 0; d < n; d++) idx[d] = d == r->axis ? r->k.var : ax[o++];
  return te_sum(a, te_load(a, r->x, idx), &r->k, 1, NULL);
}

PrimFunc *topi_reduce_sum(Arena *a, int ndim, const int64_t *shape, int axis, DType dt,
                          LoomError *err) {
  if (ndim < 1 || ndim > 8 || axis < 0 || axis >= ndim) {
    err_set(err, LOOM_ERR_INVALID_ARG, "reduce_sum: axis %d of a rank-%d tensor", axis, ndim);
    return NULL;
  }
  if (!dtype_eq(dt, DT_F32) && !dtype_eq(dt, DT_I32)) {
    char buf[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "reduce_sum: dtype %s not supported (expected f32 or i32)",
            dtype_str(dt, buf));
    return NULL;
  }
  TeTensor *x = te_placeholder(a, "data", dt, ndim, shape, err);
  if (!x) return NULL;
  int64_t oshape[8];
  for (int d = 0, o = 0; d < ndim; d++)
    if (d != axis) oshape[o++] = shape[d];
  ReduceArgs r = {x, te_reduce_axis(a, "k", shape[axis]), axis};
  TeTensor *out = te_compute(a, "T_sum", ndim - 1, oshape, sum_body, &r, err);
  if (!out) return NULL;
  return te_create_primfunc(a, "reduce_sum", (TeTensor *[]){x, out}, 2, err);
}
