/* Layout and element-wise operators: transpose and broadcast add. */
#include "topi/topi.h"

typedef struct ElemArgs {
  const TeTensor *x, *y;
  const int *perm;
} ElemArgs;

static const Expr *transpose_body(Arena *a, const Expr *const *ax, void *user) {
  ElemArgs *e = user;
  int n = e->x->ndim;
  const Expr **idx = ARENA_ARRAY(a, const Expr *, n);
  for (int d = 0; d < n; d++) idx[e->perm[d]] = ax[d];
  return te_load(a, e->x, idx);
}

PrimFunc *topi_transpose(Arena *a, int ndim, const int64_t *shape, const int *perm,
                         LoomError *err) {
  if (ndim < 1 || ndim > 8 || !perm) {
    err_set(err, LOOM_ERR_INVALID_ARG, "transpose: rank %d, expected 1..8 and a permutation", ndim);
    return NULL;
  }
  bool seen[8] = {false};
  int64_t oshape[8];
  for (int d = 0; d < ndim; d++) {
    if (perm[d] < 0 || perm[d] >= ndim || seen[perm[d]]) {
      err_set(err, LOOM_ERR_INVALID_ARG,
              "transpose: perm[%d] = %d; perm must be a permutation of 0..%d", d, perm[d], ndim - 1);
      return NULL;
    }
    seen[perm[d]] = true;
    oshape[d] = shape[perm[d]];
  }
  TeTensor *x = te_placeholder(a, "data", DT_F32, ndim, shape, err);
  if (!x) return NULL;
  ElemArgs e = {x, NULL, arena_memdup(a, perm, sizeof(int) * (size_t)ndim)};
  TeTensor *out = te_compute(a, "T_transpose", ndim, oshape, transpose_body, &e, err);
  if (!out) return NULL;
  return te_create_primfunc(a, "transpose", (TeTensor *[]){x, out}, 2, err);
}

/* Index of an operand under broadcasting: 0 along its extent-1 dims. */
static const Expr *const *bcast_index(Arena *a, const TeTensor *t, const Expr *const *ax,
                                      const int64_t *oshape) {
  const Expr **idx = ARENA_ARRAY(a, const Expr *, t->ndim);
  for (int d = 0; d < t->ndim; d++)
    idx[d] = t->shape[d] == 1 && oshape[d] != 1 ? expr_i64(a, 0) : ax[d];
  return idx;
}

typedef struct AddArgs {
  const TeTensor *x, *y;
  const int64_t *oshape;
} AddArgs;

static const Expr *add_body(Arena *a, const Expr *const *ax, void *user) {
  AddArgs *e = user;
  return expr_add(a, te_load(a, e->x, bcast_index(a, e->x, ax, e->oshape)),
                  te_load(a, e->y, bcast_index(a, e->y, ax, e->oshape)));
}

PrimFunc *topi_broadcast_add(Arena *a, int ndim, const int64_t *a_shape, const int64_t *b_shape,
                             LoomError *err) {
  if (ndim < 1 || ndim > 8) {
    err_set(err, LOOM_ERR_INVALID_ARG, "broadcast_add: rank %d, expected 1..8", ndim);
    return NULL;
  }
  int64_t *oshape = ARENA_ARRAY(a, int64_t, ndim);
  for (int d = 0; d < ndim; d++) {
    if (a_shape[d] != b_shape[d] && a_shape[d] != 1 && b_shape[d] != 1) {
      err_set(err, LOOM_ERR_INVALID_ARG,
              "broadcast_add: dimension %d has extents %lld and %lld; expected equal or 1", d,
              (long long)a_shape[d], (long long)b_shape[d]);
      return NULL;
    }
    oshape[d] = a_shape[d] > b_shape[d] ? a_shape[d] : b_shape[d];
  }
  TeTensor *x = te_placeholder(a, "A", DT_F32, ndim, a_shape, err);
  TeTensor *y = x ? te_placeholder(a, "B", DT_F32, ndim, b_shape, err) : NULL;
  if (!y) return NULL;
  AddArgs e = {x, y, oshape};
  TeTensor *out = te_compute(a, "T_add", ndim, oshape, add_body, &e, err);
  if (!out) return NULL;
  return te_create_primfunc(a, "broadcast_add", (TeTensor *[]){x, y, out}, 3, err);
}
