/* Indexing with ONNX semantics: GatherElements, GatherND, ScatterElements,
 * ScatterND, OneHot, Trilu, EyeLike (and a constant fill for Dropout's
 * mask).
 *
 * te computes every output element as a function of its index, so a
 * scatter is written as a gather: output element i reduces over the
 * updates whose index lands on i (a condition on the reduction). With no
 * reduction the last such update wins (a max over the update positions
 * that match, then a load of that update). That costs one pass over the
 * scattered axis (or the index rows) per output element, which is what
 * keeps the kernel a pure function of its index: parallel and memory safe
 * whatever the indices say. */
#include "topi/op_internal.h"

#include <string.h>

typedef struct IndexArgs {
  const TeTensor *data, *idx, *upd, *hit;
  int axis;
  int64_t batch;   /* GatherND batch_dims; OneHot depth; Trilu/EyeLike k */
  bool flag;       /* Trilu upper */
  TopiScatterReduce red;
  DType dtype;
  double value;
  IterVar r[TOPI_MAX_RANK];
  int nr;
} IndexArgs;

static bool check_indices(const char *on, const TeTensor *t, LoomError *err) {
  if (!op_check_tensor(on, "indices", t, err)) return false;
  if (!dtype_is_int(t->dtype)) {
    char b[16];
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: indices (\"%s\") have dtype %s, expected i32 or i64", on, t->name,
            dtype_str(t->dtype, b));
    return false;
  }
  return true;
}

/* ---------------- GatherElements ---------------- */

static const Expr *gather_elements_body(Arena *a, const Expr *const *ax, void *user) {
  IndexArgs *m = user;
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < m->data->ndim; d++) idx[d] = ax[d];
  idx[m->axis] = op_index_wrap(a, te_load(a, m->idx, ax), m->data->shape[m->axis], true);
  return te_load(a, m->data, idx);
}

TeTensor *topi_gather_elements(Arena *a, const char *name, const TeTensor *data, const TeTensor *indices,
                               int64_t axis, LoomError *err) {
  const char *on = "GatherElements";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "data", data, err) ||
      !check_indices(on, indices, err))
    return NULL;
  IndexArgs m = {.data = data, .idx = indices};
  if (data->ndim < 1 || !op_axis(on, "axis", axis, data->ndim, false, &m.axis, err)) {
    if (data->ndim < 1) err_set(err, LOOM_ERR_INVALID_ARG, "%s: data must have rank >= 1", on);
    return NULL;
  }
  if (indices->ndim != data->ndim) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: indices have rank %d, data %d (expected equal)", on, indices->ndim,
            data->ndim);
    return NULL;
  }
  for (int d = 0; d < data->ndim; d++)
    if (d != m.axis && indices->shape[d] > data->shape[d]) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: indices extent %lld exceeds data extent %lld on axis %d", on,
              (long long)indices->shape[d], (long long)data->shape[d], d);
      return NULL;
    }
  return te_compute(a, name, indices->ndim, indices->shape, gather_elements_body, &m, err);
}

/* ---------------- GatherND ---------------- */

static const Expr *gather_nd_body(Arena *a, const Expr *const *ax, void *user) {
  IndexArgs *m = user;
  int m1 = m->idx->ndim - 1, q = (int)m->idx->shape[m1], b = (int)m->batch;
  const Expr *ii[TOPI_MAX_RANK], *di[TOPI_MAX_RANK];
  for (int d = 0; d < m1; d++) ii[d] = ax[d];
  for (int d = 0; d < b; d++) di[d] = ax[d];
  for (int t = 0; t < q; t++) {
    ii[m1] = expr_i64(a, t);
    di[b + t] = op_index_wrap(a, te_load(a, m->idx, ii), m->data->shape[b + t], true);
  }
  for (int d = b + q; d < m->data->ndim; d++) di[d] = ax[m1 + d - b - q];
  return te_load(a, m->data, di);
}

TeTensor *topi_gather_nd(Arena *a, const char *name, const TeTensor *data, const TeTensor *indices,
                         int64_t batch_dims, LoomError *err) {
  const char *on = "GatherND";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "data", data, err) ||
      !check_indices(on, indices, err))
    return NULL;
  int r = data->ndim, m1 = indices->ndim - 1;
  if (r < 1 || m1 < 0 || batch_dims < 0 || batch_dims >= r || batch_dims > m1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: data rank %d, indices rank %d and batch_dims %lld do not fit", on, r,
            indices->ndim, (long long)batch_dims);
    return NULL;
  }
  int b = (int)batch_dims;
  int64_t q = indices->shape[m1];
  if (q < 1 || q > r - b) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: indices' last extent %lld must be in 1..%d", on, (long long)q, r - b);
    return NULL;
  }
  for (int d = 0; d < b; d++)
    if (indices->shape[d] != data->shape[d]) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: batch axis %d has extent %lld in indices, %lld in data", on, d,
              (long long)indices->shape[d], (long long)data->shape[d]);
      return NULL;
    }
  int64_t s[TOPI_MAX_RANK];
  int o = 0;
  for (int d = 0; d < m1; d++) s[o++] = indices->shape[d];
  for (int d = b + (int)q; d < r; d++) {
    if (o >= TOPI_MAX_RANK) {
      err_set(err, LOOM_ERR_UNSUPPORTED, "%s: result rank above %d", on, TOPI_MAX_RANK);
      return NULL;
    }
    s[o++] = data->shape[d];
  }
  IndexArgs m = {.data = data, .idx = indices, .batch = b};
  return te_compute(a, name, o, s, gather_nd_body, &m, err);
}

/* ---------------- scatters ---------------- */

static ReduceOp scatter_reduce_op(TopiScatterReduce red) {
  switch (red) {
    case TOPI_SCATTER_ADD: return REDUCE_SUM;
    case TOPI_SCATTER_MUL: return REDUCE_PROD;
    case TOPI_SCATTER_MIN: return REDUCE_MIN;
    default: return REDUCE_MAX; /* NONE reduces positions with max: the last match */
  }
}

static const Expr *reduce_of(Arena *a, TopiScatterReduce red, const Expr *src, const IterVar *axes, int n,
                             const Expr *cond) {
  switch (scatter_reduce_op(red)) {
    case REDUCE_SUM: return te_sum(a, src, axes, n, cond);
    case REDUCE_PROD: return te_prod(a, src, axes, n, cond);
    case REDUCE_MIN: return te_min(a, src, axes, n, cond);
    default: return te_max(a, src, axes, n, cond);
  }
}

/* data combined with the reduction r of the matching updates. */
static const Expr *combine(Arena *a, TopiScatterReduce red, const Expr *data, const Expr *r) {
  switch (red) {
    case TOPI_SCATTER_ADD: return expr_add(a, data, r);
    case TOPI_SCATTER_MUL: return expr_mul(a, data, r);
    case TOPI_SCATTER_MIN: return expr_min(a, data, r);
    case TOPI_SCATTER_MAX: return expr_max(a, data, r);
    default: return r;
  }
}

/* ScatterElements: the updates position with i's coordinates off the axis
 * (clamped into updates' shape; the condition rejects the clamped ones) and
 * k on it. */
static void elements_pos(Arena *a, const IndexArgs *m, const Expr *const *ax, const Expr *k, const Expr **pos,
                         const Expr **inside) {
  *inside = NULL;
  for (int d = 0; d < m->data->ndim; d++) {
    int64_t u = m->idx->shape[d];
    if (d == m->axis) {
      pos[d] = k;
    } else if (u < m->data->shape[d]) {
      const Expr *c = expr_lt(a, ax[d], expr_i64(a, u));
      *inside = *inside ? expr_and(a, *inside, c) : c;
      pos[d] = expr_min(a, ax[d], expr_i64(a, u - 1));
    } else {
      pos[d] = ax[d];
    }
  }
}

static const Expr *elements_match(Arena *a, const IndexArgs *m, const Expr *const *ax, const Expr *const *pos,
                                  const Expr *inside) {
  const Expr *i = op_index_wrap(a, te_load(a, m->idx, pos), m->data->shape[m->axis], false);
  const Expr *c = expr_binary(a, EXPR_EQ, i, ax[m->axis]);
  return inside ? expr_and(a, inside, c) : c;
}

static const Expr *scatter_elements_red_body(Arena *a, const Expr *const *ax, void *user) {
  IndexArgs *m = user;
  const Expr *pos[TOPI_MAX_RANK], *inside;
  elements_pos(a, m, ax, m->r[0].var, pos, &inside);
  const Expr *cond = elements_match(a, m, ax, pos, inside);
  const Expr *src = m->red == TOPI_SCATTER_NONE ? m->r[0].var : te_load(a, m->upd, pos);
  return reduce_of(a, m->red, src, m->r, 1, cond);
}

/* NONE: hit >= 0 ? the update at position hit (upd_hit) : data; else data
 * (+) the reduction. */
static const Expr *scatter_final(Arena *a, const IndexArgs *m, const Expr *const *ax, const Expr *upd_hit) {
  const Expr *d = te_load(a, m->data, ax), *h = te_load(a, m->hit, ax);
  if (m->red != TOPI_SCATTER_NONE) return combine(a, m->red, d, h);
  return expr_select(a, expr_binary(a, EXPR_GE, h, expr_i64(a, 0)), upd_hit, d);
}

static const Expr *scatter_elements_body(Arena *a, const Expr *const *ax, void *user) {
  IndexArgs *m = user;
  const Expr *pos[TOPI_MAX_RANK], *inside;
  elements_pos(a, m, ax, expr_max(a, te_load(a, m->hit, ax), expr_i64(a, 0)), pos, &inside);
  return scatter_final(a, m, ax, m->red == TOPI_SCATTER_NONE ? te_load(a, m->upd, pos) : NULL);
}

static bool check_scatter(const char *on, const char *name, const TeTensor *data, const TeTensor *indices,
                          const TeTensor *updates, TopiScatterReduce red, LoomError *err) {
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "data", data, err) ||
      !check_indices(on, indices, err) || !op_check_tensor(on, "updates", updates, err))
    return false;
  if (!dtype_eq(data->dtype, updates->dtype)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: updates (\"%s\") and data differ in dtype", on, updates->name);
    return false;
  }
  if ((unsigned)red > TOPI_SCATTER_MIN || (red != TOPI_SCATTER_NONE && dtype_is_bool(data->dtype))) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: reduction %d is not supported for this dtype", on, (int)red);
    return false;
  }
  if (data->ndim < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: data must have rank >= 1", on);
    return false;
  }
  return true;
}

TeTensor *topi_scatter_elements(Arena *a, const char *name, const TeTensor *data, const TeTensor *indices,
                                const TeTensor *updates, int64_t axis, TopiScatterReduce red, LoomError *err) {
  const char *on = "ScatterElements";
  if (!check_scatter(on, name, data, indices, updates, red, err)) return NULL;
  IndexArgs m = {.data = data, .idx = indices, .upd = updates, .red = red, .nr = 1};
  if (!op_axis(on, "axis", axis, data->ndim, false, &m.axis, err)) return NULL;
  bool ok = indices->ndim == data->ndim && updates->ndim == data->ndim;
  for (int d = 0; ok && d < data->ndim; d++)
    ok = updates->shape[d] == indices->shape[d] && (d == m.axis || indices->shape[d] <= data->shape[d]);
  if (!ok) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "%s: indices and updates must have data's rank, one shape, and extents within data's", on);
    return NULL;
  }
  m.r[0] = te_reduce_axis(a, "k", indices->shape[m.axis]);
  TeTensor *hit = te_compute(a, op_stage(a, name, red == TOPI_SCATTER_NONE ? "hit" : "red"), data->ndim, data->shape,
                             scatter_elements_red_body, &m, err);
  if (!(m.hit = hit)) return NULL;
  return te_compute(a, name, data->ndim, data->shape, scatter_elements_body, &m, err);
}

/* ScatterND: the update row b (indices.shape[:-1]) matches output i when
 * its q indices equal i's first q coordinates. */
static const Expr *nd_match(Arena *a, const IndexArgs *m, const Expr *const *ax, const Expr *const *row) {
  int m1 = m->idx->ndim - 1, q = (int)m->idx->shape[m1];
  const Expr *ii[TOPI_MAX_RANK], *cond = NULL;
  for (int d = 0; d < m1; d++) ii[d] = row[d];
  for (int t = 0; t < q; t++) {
    ii[m1] = expr_i64(a, t);
    const Expr *c = expr_binary(a, EXPR_EQ, op_index_wrap(a, te_load(a, m->idx, ii), m->data->shape[t], false), ax[t]);
    cond = cond ? expr_and(a, cond, c) : c;
  }
  return cond;
}

/* updates[row..., i[q:]...] */
static const Expr *nd_update(Arena *a, const IndexArgs *m, const Expr *const *ax, const Expr *const *row) {
  int m1 = m->idx->ndim - 1, q = (int)m->idx->shape[m1];
  const Expr *ui[TOPI_MAX_RANK];
  for (int d = 0; d < m1; d++) ui[d] = row[d];
  for (int d = q; d < m->data->ndim; d++) ui[m1 + d - q] = ax[d];
  return te_load(a, m->upd, ui);
}

static const Expr *scatter_nd_red_body(Arena *a, const Expr *const *ax, void *user) {
  IndexArgs *m = user;
  const Expr *row[TOPI_MAX_RANK], *flat = expr_i64(a, 0);
  for (int d = 0; d < m->nr; d++) {
    row[d] = m->r[d].var;
    flat = expr_add(a, expr_mul(a, flat, m->r[d].extent), row[d]);
  }
  const Expr *src = m->red == TOPI_SCATTER_NONE ? flat : nd_update(a, m, ax, row);
  return reduce_of(a, m->red, src, m->r, m->nr, nd_match(a, m, ax, row));
}

static const Expr *scatter_nd_body(Arena *a, const Expr *const *ax, void *user) {
  IndexArgs *m = user;
  const Expr *row[TOPI_MAX_RANK] = {0};
  if (m->nr == 0) { /* a single update row: no reduction stage */
    const Expr *d = te_load(a, m->data, ax), *u = nd_update(a, m, ax, row);
    return expr_select(a, nd_match(a, m, ax, row), m->red == TOPI_SCATTER_NONE ? u : combine(a, m->red, d, u), d);
  }
  const Expr *flat = expr_max(a, te_load(a, m->hit, ax), expr_i64(a, 0));
  for (int d = m->nr - 1; d >= 0; d--) {
    row[d] = d == 0 ? flat : expr_floormod(a, flat, m->r[d].extent);
    flat = expr_floordiv(a, flat, m->r[d].extent);
  }
  return scatter_final(a, m, ax, m->red == TOPI_SCATTER_NONE ? nd_update(a, m, ax, row) : NULL);
}

TeTensor *topi_scatter_nd(Arena *a, const char *name, const TeTensor *data, const TeTensor *indices,
                          const TeTensor *updates, TopiScatterReduce red, LoomError *err) {
  const char *on = "ScatterND";
  if (!check_scatter(on, name, data, indices, updates, red, err)) return NULL;
  int m1 = indices->ndim - 1;
  int64_t q = m1 >= 0 ? indices->shape[m1] : 0;
  bool ok = m1 >= 0 && q >= 1 && q <= data->ndim && updates->ndim == m1 + data->ndim - q;
  for (int d = 0; ok && d < m1; d++) ok = updates->shape[d] == indices->shape[d];
  for (int d = (int)q; ok && d < data->ndim; d++) ok = updates->shape[m1 + d - q] == data->shape[d];
  if (!ok) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "%s: indices [..., q] (q <= data rank) and updates of shape indices.shape[:-1] + data.shape[q:] expected",
            on);
    return NULL;
  }
  IndexArgs m = {.data = data, .idx = indices, .upd = updates, .red = red, .nr = m1};
  for (int d = 0; d < m1; d++) m.r[d] = te_reduce_axis(a, arena_printf(a, "k%d", d), indices->shape[d]);
  if (m1 > 0) {
    TeTensor *hit = te_compute(a, op_stage(a, name, red == TOPI_SCATTER_NONE ? "hit" : "red"), data->ndim,
                               data->shape, scatter_nd_red_body, &m, err);
    if (!(m.hit = hit)) return NULL;
  }
  return te_compute(a, name, data->ndim, data->shape, scatter_nd_body, &m, err);
}

/* ---------------- OneHot, Trilu, EyeLike, fill ---------------- */

static const Expr *one_hot_body(Arena *a, const Expr *const *ax, void *user) {
  IndexArgs *m = user;
  const Expr *ii[TOPI_MAX_RANK];
  for (int d = 0, o = 0; d <= m->idx->ndim; d++)
    if (d != m->axis) ii[o++] = ax[d];
  const Expr *i = te_load(a, m->idx, ii);
  if (!dtype_is_int(i->dtype)) i = expr_cast(a, DT_I64, i); /* floats truncate */
  i = op_index_wrap(a, i, m->batch, false);
  const Expr *on = te_load(a, m->upd, (const Expr *[]){expr_i64(a, 1)});
  const Expr *off = te_load(a, m->upd, (const Expr *[]){expr_i64(a, 0)});
  return expr_select(a, expr_binary(a, EXPR_EQ, i, ax[m->axis]), on, off);
}

TeTensor *topi_one_hot(Arena *a, const char *name, const TeTensor *indices, int64_t depth,
                       const TeTensor *values, int64_t axis, LoomError *err) {
  const char *on = "OneHot";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "indices", indices, err) ||
      !op_check_tensor(on, "values", values, err))
    return NULL;
  if (dtype_is_bool(indices->dtype) || values->ndim != 1 || values->shape[0] != 2) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: expected numeric indices and values [off, on] of shape [2]", on);
    return NULL;
  }
  if (depth < 1) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: depth %lld (expected >= 1)", on, (long long)depth);
    return NULL;
  }
  int r = indices->ndim + 1;
  if (r > TOPI_MAX_RANK) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: result rank %d is above %d", on, r, TOPI_MAX_RANK);
    return NULL;
  }
  IndexArgs m = {.idx = indices, .upd = values, .batch = depth};
  if (!op_axis(on, "axis", axis, r, false, &m.axis, err)) return NULL;
  int64_t s[TOPI_MAX_RANK];
  for (int d = 0, o = 0; d < r; d++) s[d] = d == m.axis ? depth : indices->shape[o++];
  return te_compute(a, name, r, s, one_hot_body, &m, err);
}

/* j - i for the last two axes of a rank-r index. */
static const Expr *diag_offset(Arena *a, const Expr *const *ax, int r) {
  return expr_sub(a, ax[r - 1], ax[r - 2]);
}

static const Expr *trilu_body(Arena *a, const Expr *const *ax, void *user) {
  IndexArgs *m = user;
  int r = m->data->ndim;
  const Expr *off = diag_offset(a, ax, r), *k = expr_i64(a, m->batch);
  const Expr *keep = m->flag ? expr_binary(a, EXPR_GE, off, k) : expr_binary(a, EXPR_LE, off, k);
  return expr_select(a, keep, te_load(a, m->data, ax), op_const(a, m->data->dtype, 0));
}

TeTensor *topi_trilu(Arena *a, const char *name, const TeTensor *x, int64_t k, bool upper, LoomError *err) {
  const char *on = "Trilu";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "input", x, err)) return NULL;
  if (x->ndim < 2) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: input (\"%s\") has rank %d, expected >= 2", on, x->name, x->ndim);
    return NULL;
  }
  IndexArgs m = {.data = x, .batch = k, .flag = upper};
  return te_compute(a, name, x->ndim, x->shape, trilu_body, &m, err);
}

static const Expr *eye_body(Arena *a, const Expr *const *ax, void *user) {
  IndexArgs *m = user;
  const Expr *on = expr_binary(a, EXPR_EQ, diag_offset(a, ax, 2), expr_i64(a, m->batch));
  return expr_select(a, on, op_const(a, m->dtype, 1), op_const(a, m->dtype, 0));
}

TeTensor *topi_eye_like(Arena *a, const char *name, const TeTensor *x, DType dtype, int64_t k, LoomError *err) {
  const char *on = "EyeLike";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "input", x, err)) return NULL;
  if (x->ndim != 2) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: input (\"%s\") has rank %d, expected 2", on, x->name, x->ndim);
    return NULL;
  }
  IndexArgs m = {.batch = k, .dtype = dtype};
  return te_compute(a, name, 2, x->shape, eye_body, &m, err);
}

static const Expr *fill_body(Arena *a, const Expr *const *ax, void *user) {
  (void)ax;
  IndexArgs *m = user;
  return op_const(a, m->dtype, m->value);
}

TeTensor *topi_full_like(Arena *a, const char *name, const TeTensor *x, DType dtype, double value, LoomError *err) {
  if (!op_check_name("fill", name, err) || !op_check_tensor("fill", "input", x, err)) return NULL;
  IndexArgs m = {.dtype = dtype, .value = value};
  return te_compute(a, name, x->ndim, x->shape, fill_body, &m, err);
}

static const Expr *full_body(Arena *a, const Expr *const *ax, void *user) {
  (void)a, (void)ax;
  return user;
}

TeTensor *topi_full(Arena *a, const char *name, int ndim, const int64_t *shape, const Expr *value, LoomError *err) {
  const char *on = "ConstantOfShape";
  if (!op_check_name(on, name, err)) return NULL;
  if (!value || ndim < 0 || ndim > TOPI_MAX_RANK) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s", on, !value ? "no value" : "rank out of range");
    return NULL;
  }
  for (int d = 0; d < ndim; d++)
    if (shape[d] < 0) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: extent %d is %lld, expected >= 0", on, d, (long long)shape[d]);
      return NULL;
    }
  return te_compute(a, name, ndim, shape, full_body, (void *)value, err);
}

typedef struct IntValues {
  DType dtype;
  const int64_t *values;
  int64_t count;
} IntValues;

static const Expr *int_values_body(Arena *a, const Expr *const *ax, void *user) {
  const IntValues *m = user;
  const Expr *v = expr_int(a, m->dtype, m->values[m->count - 1]);
  for (int64_t k = m->count - 2; k >= 0; k--)
    v = expr_select(a, expr_binary(a, EXPR_EQ, ax[0], expr_i64(a, k)), expr_int(a, m->dtype, m->values[k]), v);
  return v;
}

TeTensor *topi_int_values(Arena *a, const char *name, DType dtype, const int64_t *values, int64_t count,
                          LoomError *err) {
  const char *on = "Shape";
  if (!op_check_name(on, name, err)) return NULL;
  if (count < 1 || count > TOPI_MAX_RANK * 4 || !dtype_is_int(dtype)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: %lld values, expected 1 to %d integers", on, (long long)count,
            TOPI_MAX_RANK * 4);
    return NULL;
  }
  IntValues *m = ARENA_NEW(a, IntValues);
  m->dtype = dtype;
  m->values = arena_memdup(a, values, sizeof(int64_t) * (size_t)count);
  m->count = count;
  return te_compute(a, name, 1, &count, int_values_body, m, err);
}

typedef struct ArangeArgs {
  const Expr *start, *delta;
} ArangeArgs;

static const Expr *arange_body(Arena *a, const Expr *const *ax, void *user) {
  const ArangeArgs *m = user;
  DType t = m->start->dtype;
  return expr_add(a, m->start, expr_mul(a, expr_cast(a, t, ax[0]), m->delta));
}

TeTensor *topi_arange(Arena *a, const char *name, int64_t count, const Expr *start, const Expr *delta,
                      LoomError *err) {
  const char *on = "Range";
  if (!op_check_name(on, name, err)) return NULL;
  if (!start || !delta || !dtype_eq(start->dtype, delta->dtype) || count < 0) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s", on,
            count < 0 ? "negative count" : "start and delta must be scalars of one dtype");
    return NULL;
  }
  ArangeArgs *m = ARENA_NEW(a, ArangeArgs);
  m->start = start;
  m->delta = delta;
  return te_compute(a, name, 1, &count, arange_body, m, err);
}
