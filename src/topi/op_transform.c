/* Data movement with ONNX semantics: every op here is one injective stage
 * whose body is a single load of its input at a remapped index (a select
 * between loads for Concat and constant Pad). */
#include "topi/op_internal.h"

#include <string.h>

typedef struct MoveArgs {
  const TeTensor *x, *idx;
  const TeTensor *const *xs;
  int n;
  int axis;
  int64_t v[TOPI_MAX_RANK];     /* per-op: perm, starts, offsets, pads... */
  int64_t step[TOPI_MAX_RANK];
  int map[TOPI_MAX_RANK];       /* squeeze/unsqueeze: input dim -> output axis */
  TopiPadMode mode;
  const Expr *value;
} MoveArgs;

/* Row-major flat offset of ax in shape, then unraveled into x's shape. */
static const Expr *load_reshaped(Arena *a, const TeTensor *x, const Expr *const *ax, int rank,
                                 const int64_t *shape) {
  const Expr *flat = expr_i64(a, 0);
  for (int d = 0; d < rank; d++)
    flat = expr_add(a, expr_mul(a, flat, expr_i64(a, shape[d])), ax[d]);
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = x->ndim - 1; d >= 0; d--) {
    if (d == 0) {
      idx[d] = flat;
    } else {
      idx[d] = expr_floormod(a, flat, expr_i64(a, x->shape[d]));
      flat = expr_floordiv(a, flat, expr_i64(a, x->shape[d]));
    }
  }
  return te_load(a, x, idx);
}

typedef struct ReshapeArgs {
  const TeTensor *x;
  int rank;
  int64_t shape[TOPI_MAX_RANK];
} ReshapeArgs;

static const Expr *reshape_body(Arena *a, const Expr *const *ax, void *user) {
  ReshapeArgs *r = user;
  return load_reshaped(a, r->x, ax, r->rank, r->shape);
}

static TeTensor *reshape_to(Arena *a, const char *name, const TeTensor *x, int rank,
                            const int64_t *shape, LoomError *err) {
  ReshapeArgs r = {x, rank, {0}};
  memcpy(r.shape, shape, sizeof(int64_t) * (size_t)rank);
  return te_compute(a, name, rank, shape, reshape_body, &r, err);
}

TeTensor *topi_flatten(Arena *a, const char *name, const TeTensor *x, int64_t axis,
                       LoomError *err) {
  if (!op_check_name("Flatten", name, err) || !op_check_tensor("Flatten", "input", x, err))
    return NULL;
  int ax;
  if (!op_axis("Flatten", "axis", axis, x->ndim, true, &ax, err)) return NULL;
  int64_t s[2] = {op_numel(ax, x->shape), op_numel(x->ndim - ax, x->shape + ax)};
  return reshape_to(a, name, x, 2, s, err);
}

TeTensor *topi_reshape(Arena *a, const char *name, const TeTensor *x, const int64_t *shape,
                       int n, LoomError *err) {
  if (!op_check_name("Reshape", name, err) || !op_check_tensor("Reshape", "data", x, err))
    return NULL;
  if (n < 0 || n > TOPI_MAX_RANK || (n > 0 && !shape)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Reshape: target rank %d (expected 0..%d)", n, TOPI_MAX_RANK);
    return NULL;
  }
  int64_t s[TOPI_MAX_RANK], known = 1;
  int infer = -1;
  for (int d = 0; d < n; d++) {
    s[d] = shape[d];
    if (s[d] == 0) {
      if (d >= x->ndim) {
        err_set(err, LOOM_ERR_INVALID_ARG, "Reshape: shape[%d] = 0 copies a dimension the input (rank %d) lacks",
                d, x->ndim);
        return NULL;
      }
      s[d] = x->shape[d];
    }
    if (s[d] == -1) {
      if (infer >= 0) {
        err_set(err, LOOM_ERR_INVALID_ARG, "Reshape: shape has more than one -1");
        return NULL;
      }
      infer = d;
      continue;
    }
    if (s[d] < 1) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Reshape: shape[%d] = %lld is invalid", d, (long long)shape[d]);
      return NULL;
    }
    known *= s[d];
  }
  int64_t total = op_numel(x->ndim, x->shape);
  if (infer >= 0) {
    if (total % known != 0) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Reshape: %lld elements cannot fill a -1 next to %lld",
              (long long)total, (long long)known);
      return NULL;
    }
    s[infer] = total / known;
    known = total;
  }
  if (known != total) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Reshape: input \"%s\" has %lld elements, target shape %lld",
            x->name, (long long)total, (long long)known);
    return NULL;
  }
  return reshape_to(a, name, x, n, s, err);
}

static const Expr *transpose_body(Arena *a, const Expr *const *ax, void *user) {
  MoveArgs *m = user;
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < m->x->ndim; d++) idx[m->v[d]] = ax[d];
  return te_load(a, m->x, idx);
}

TeTensor *topi_transpose_perm(Arena *a, const char *name, const TeTensor *x, const int64_t *perm,
                              LoomError *err) {
  if (!op_check_name("Transpose", name, err) || !op_check_tensor("Transpose", "data", x, err))
    return NULL;
  MoveArgs m = {.x = x};
  bool seen[TOPI_MAX_RANK] = {false};
  int64_t s[TOPI_MAX_RANK];
  for (int d = 0; d < x->ndim; d++) {
    int64_t p = perm ? perm[d] : x->ndim - 1 - d;
    if (p < 0 || p >= x->ndim || seen[p]) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Transpose: perm is not a permutation of 0..%d (entry %d is %lld)",
              x->ndim - 1, d, (long long)p);
      return NULL;
    }
    seen[p] = true;
    m.v[d] = p;
    s[d] = x->shape[p];
  }
  return te_compute(a, name, x->ndim, s, transpose_body, &m, err);
}

static const Expr *concat_body(Arena *a, const Expr *const *ax, void *user) {
  MoveArgs *m = user;
  int r = m->xs[0]->ndim;
  const Expr *result = NULL;
  /* Built from the last input backwards: select(ax < off_i+1, load_i, rest). */
  for (int i = m->n - 1; i >= 0; i--) {
    const Expr *idx[TOPI_MAX_RANK];
    for (int d = 0; d < r; d++)
      idx[d] = d == m->axis && m->v[i] ? expr_sub(a, ax[d], expr_i64(a, m->v[i])) : ax[d];
    const Expr *ld = te_load(a, m->xs[i], idx);
    if (!result) {
      result = ld;
    } else {
      int64_t end = m->v[i] + m->xs[i]->shape[m->axis];
      result = expr_select(a, expr_lt(a, ax[m->axis], expr_i64(a, end)), ld, result);
    }
  }
  return result;
}

TeTensor *topi_concat(Arena *a, const char *name, const TeTensor *const *xs, int n, int64_t axis,
                      LoomError *err) {
  const char *on = "Concat";
  if (!op_check_name(on, name, err)) return NULL;
  if (n < 1 || n > TOPI_MAX_RANK * 32 || !xs) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Concat: needs 1..256 inputs, got %d", n);
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (!op_check_tensor(on, "inputs", xs[i], err)) return NULL;
  int r = xs[0]->ndim, ax;
  if (r < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Concat: inputs must have rank >= 1");
    return NULL;
  }
  if (!op_axis(on, "axis", axis, r, false, &ax, err)) return NULL;
  int64_t *offs = ARENA_ARRAY(a, int64_t, n);
  int64_t s[TOPI_MAX_RANK], total = 0;
  memcpy(s, xs[0]->shape, sizeof(int64_t) * (size_t)r);
  for (int i = 0; i < n; i++) {
    bool ok = xs[i]->ndim == r && dtype_eq(xs[i]->dtype, xs[0]->dtype);
    for (int d = 0; ok && d < r; d++) ok = d == ax || xs[i]->shape[d] == s[d];
    if (!ok) {
      err_set(err, LOOM_ERR_INVALID_ARG,
              "Concat: input %d (\"%s\") differs from input 0 in rank, dtype or a non-axis extent",
              i, xs[i]->name);
      return NULL;
    }
    offs[i] = total;
    total += xs[i]->shape[ax];
  }
  s[ax] = total;
  /* MoveArgs.v holds up to TOPI_MAX_RANK offsets; longer lists chain. */
  if (n > TOPI_MAX_RANK) {
    int half = n / 2;
    TeTensor *l = topi_concat(a, op_stage(a, name, "l"), xs, half, ax, err);
    TeTensor *rr = l ? topi_concat(a, op_stage(a, name, "r"), xs + half, n - half, ax, err) : NULL;
    if (!rr) return NULL;
    const TeTensor *two[2] = {l, rr};
    return topi_concat(a, name, two, 2, ax, err);
  }
  MoveArgs m = {.xs = arena_memdup(a, xs, sizeof(*xs) * (size_t)n), .n = n, .axis = ax};
  memcpy(m.v, offs, sizeof(int64_t) * (size_t)n);
  return te_compute(a, name, r, s, concat_body, &m, err);
}

/* out[i] = x[start + i * step] along each axis (step 1, start 0 elsewhere). */
static const Expr *strided_body(Arena *a, const Expr *const *ax, void *user) {
  MoveArgs *m = user;
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < m->x->ndim; d++) {
    const Expr *i = ax[d];
    if (m->step[d] != 1) i = expr_mul(a, i, expr_i64(a, m->step[d]));
    if (m->v[d] != 0) i = expr_add(a, i, expr_i64(a, m->v[d]));
    idx[d] = i;
  }
  return te_load(a, m->x, idx);
}

bool topi_split(Arena *a, const char *name, const TeTensor *x, int64_t axis, const int64_t *sizes,
                int n, TeTensor **outs, LoomError *err) {
  const char *on = "Split";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "input", x, err)) return false;
  int ax;
  if (x->ndim < 1 || !op_axis(on, "axis", axis, x->ndim, false, &ax, err)) {
    if (x->ndim < 1) err_set(err, LOOM_ERR_INVALID_ARG, "Split: input must have rank >= 1");
    return false;
  }
  if (n < 1 || !outs) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Split: needs at least one output, got %d", n);
    return false;
  }
  int64_t ext = x->shape[ax], off = 0;
  if (!sizes && ext % n != 0) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Split: axis extent %lld does not divide into %d equal parts",
            (long long)ext, n);
    return false;
  }
  for (int i = 0; i < n; i++) {
    int64_t sz = sizes ? sizes[i] : ext / n;
    if (sz < 0 || off + sz > ext) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Split: size %d (%lld) is negative or runs past the axis extent %lld",
              i, (long long)sz, (long long)ext);
      return false;
    }
    off += sz;
  }
  if (off != ext) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Split: sizes add up to %lld, the axis has %lld",
            (long long)off, (long long)ext);
    return false;
  }
  off = 0;
  for (int i = 0; i < n; i++) {
    int64_t sz = sizes ? sizes[i] : ext / n;
    MoveArgs m = {.x = x};
    int64_t s[TOPI_MAX_RANK];
    for (int d = 0; d < x->ndim; d++) m.step[d] = 1, s[d] = x->shape[d];
    m.v[ax] = off;
    s[ax] = sz;
    /* An empty piece has no tensor (the graph's empty-tensor pass removed its readers). */
    outs[i] = sz ? te_compute(a, arena_printf(a, "%s_%d", name, i), x->ndim, s, strided_body, &m, err) : NULL;
    if (sz && !outs[i]) return false;
    off += sz;
  }
  return true;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

TeTensor *topi_slice(Arena *a, const char *name, const TeTensor *x, const int64_t *starts,
                     const int64_t *ends, const int64_t *axes, const int64_t *steps, int n,
                     LoomError *err) {
  const char *on = "Slice";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "data", x, err)) return NULL;
  if (n < 0 || n > x->ndim || (n > 0 && (!starts || !ends))) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Slice: %d starts/ends for rank %d", n, x->ndim);
    return NULL;
  }
  MoveArgs m = {.x = x};
  int64_t s[TOPI_MAX_RANK];
  bool seen[TOPI_MAX_RANK] = {false};
  for (int d = 0; d < x->ndim; d++) m.step[d] = 1, s[d] = x->shape[d];
  for (int i = 0; i < n; i++) {
    int ax;
    if (!op_axis(on, "axes entry", axes ? axes[i] : i, x->ndim, false, &ax, err)) return NULL;
    if (seen[ax]) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Slice: axis %d is listed twice", ax);
      return NULL;
    }
    seen[ax] = true;
    int64_t dim = x->shape[ax], step = steps ? steps[i] : 1;
    if (step == 0) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Slice: steps[%d] is 0", i);
      return NULL;
    }
    int64_t st = starts[i], en = ends[i];
    /* Very large magnitudes (INT64_MAX for "to the end") stay clamped. */
    if (st < 0) st = st < -dim ? -1 : st + dim;
    if (en < 0) en = en < -dim ? -1 : en + dim;
    int64_t len;
    if (step > 0) {
      st = clamp64(st, 0, dim), en = clamp64(en, 0, dim);
      len = en > st ? (en - st + step - 1) / step : 0;
    } else {
      st = clamp64(st, 0, dim - 1), en = clamp64(en, -1, dim - 1);
      len = st > en ? (st - en + (-step) - 1) / (-step) : 0;
    }
    if (len < 1) {
      err_set(err, LOOM_ERR_UNSUPPORTED, "Slice: the result is empty along axis %d (start %lld, end %lld, step %lld)",
              ax, (long long)starts[i], (long long)ends[i], (long long)step);
      return NULL;
    }
    m.v[ax] = st, m.step[ax] = step, s[ax] = len;
  }
  return te_compute(a, name, x->ndim, s, strided_body, &m, err);
}

static const Expr *gather_body(Arena *a, const Expr *const *ax, void *user) {
  MoveArgs *m = user;
  int q = m->idx->ndim;
  const Expr *ii[TOPI_MAX_RANK];
  for (int d = 0; d < q; d++) ii[d] = ax[m->axis + d];
  const Expr *i = op_index_wrap(a, te_load(a, m->idx, ii), m->x->shape[m->axis], true);
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < m->x->ndim; d++) {
    if (d < m->axis) idx[d] = ax[d];
    else if (d == m->axis) idx[d] = i;
    else idx[d] = ax[d - 1 + q];
  }
  return te_load(a, m->x, idx);
}

TeTensor *topi_gather(Arena *a, const char *name, const TeTensor *data, const TeTensor *indices,
                      int64_t axis, LoomError *err) {
  const char *on = "Gather";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "data", data, err) ||
      !op_check_tensor(on, "indices", indices, err))
    return NULL;
  if (!dtype_eq(indices->dtype, DT_I64) && !dtype_eq(indices->dtype, DT_I32)) {
    char b[16];
    err_set(err, LOOM_ERR_INVALID_ARG, "Gather: indices (\"%s\") have dtype %s, expected i32 or i64",
            indices->name, dtype_str(indices->dtype, b));
    return NULL;
  }
  MoveArgs m = {.x = data, .idx = indices};
  if (data->ndim < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Gather: data must have rank >= 1");
    return NULL;
  }
  if (!op_axis(on, "axis", axis, data->ndim, false, &m.axis, err)) return NULL;
  int r = data->ndim - 1 + indices->ndim;
  if (r > TOPI_MAX_RANK) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "Gather: result rank %d is above %d", r, TOPI_MAX_RANK);
    return NULL;
  }
  int64_t s[TOPI_MAX_RANK];
  int o = 0;
  for (int d = 0; d < m.axis; d++) s[o++] = data->shape[d];
  for (int d = 0; d < indices->ndim; d++) s[o++] = indices->shape[d];
  for (int d = m.axis + 1; d < data->ndim; d++) s[o++] = data->shape[d];
  return te_compute(a, name, r, s, gather_body, &m, err);
}

/* Squeeze / Unsqueeze: input dim d reads output axis map[d] (-1: index 0). */
static const Expr *remap_body(Arena *a, const Expr *const *ax, void *user) {
  MoveArgs *m = user;
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < m->x->ndim; d++) idx[d] = m->map[d] < 0 ? expr_i64(a, 0) : ax[m->map[d]];
  return te_load(a, m->x, idx);
}

TeTensor *topi_squeeze(Arena *a, const char *name, const TeTensor *x, const int64_t *axes,
                       int n_axes, LoomError *err) {
  const char *on = "Squeeze";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "data", x, err)) return NULL;
  bool drop[TOPI_MAX_RANK] = {false};
  if (!axes) {
    for (int d = 0; d < x->ndim; d++) drop[d] = x->shape[d] == 1;
  } else {
    for (int i = 0; i < n_axes; i++) {
      int ax;
      if (!op_axis(on, "axis", axes[i], x->ndim, false, &ax, err)) return NULL;
      if (x->shape[ax] != 1) {
        err_set(err, LOOM_ERR_INVALID_ARG, "Squeeze: axis %d has extent %lld, expected 1", ax,
                (long long)x->shape[ax]);
        return NULL;
      }
      drop[ax] = true;
    }
  }
  MoveArgs m = {.x = x};
  int64_t s[TOPI_MAX_RANK];
  int o = 0;
  for (int d = 0; d < x->ndim; d++) {
    if (drop[d]) {
      m.map[d] = -1;
    } else {
      m.map[d] = o;
      s[o++] = x->shape[d];
    }
  }
  return te_compute(a, name, o, s, remap_body, &m, err);
}

TeTensor *topi_unsqueeze(Arena *a, const char *name, const TeTensor *x, const int64_t *axes,
                         int n_axes, LoomError *err) {
  const char *on = "Unsqueeze";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "data", x, err)) return NULL;
  int r = x->ndim + n_axes;
  if (n_axes < 0 || (n_axes > 0 && !axes) || r > TOPI_MAX_RANK) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Unsqueeze: %d axes on rank %d (result rank at most %d)",
            n_axes, x->ndim, TOPI_MAX_RANK);
    return NULL;
  }
  bool added[TOPI_MAX_RANK] = {false};
  for (int i = 0; i < n_axes; i++) {
    int ax;
    if (!op_axis(on, "axis", axes[i], r, false, &ax, err)) return NULL;
    if (added[ax]) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Unsqueeze: axis %lld is listed twice", (long long)axes[i]);
      return NULL;
    }
    added[ax] = true;
  }
  MoveArgs m = {.x = x};
  int64_t s[TOPI_MAX_RANK];
  for (int o = 0, d = 0; o < r; o++) {
    if (added[o]) {
      s[o] = 1;
    } else {
      m.map[d] = o;
      s[o] = x->shape[d++];
    }
  }
  return te_compute(a, name, r, s, remap_body, &m, err);
}

static const Expr *expand_body(Arena *a, const Expr *const *ax, void *user) {
  MoveArgs *m = user;
  return op_load_broadcast(a, m->x, ax, m->n);
}

TeTensor *topi_expand(Arena *a, const char *name, const TeTensor *x, const int64_t *shape, int n,
                      LoomError *err) {
  if (!op_check_name("Expand", name, err) || !op_check_tensor("Expand", "input", x, err)) return NULL;
  if (n < 0 || n > TOPI_MAX_RANK || (n > 0 && !shape)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Expand: shape of rank %d (expected 0..%d)", n, TOPI_MAX_RANK);
    return NULL;
  }
  int64_t s[TOPI_MAX_RANK];
  int r;
  if (!topi_broadcast_shape("Expand", x->ndim, x->shape, n, shape, &r, s, err)) return NULL;
  MoveArgs m = {.x = x, .n = r};
  return te_compute(a, name, r, s, expand_body, &m, err);
}

static const Expr *pad_body(Arena *a, const Expr *const *ax, void *user) {
  MoveArgs *m = user;
  const Expr *idx[TOPI_MAX_RANK] = {0}, *inside = NULL;
  for (int d = 0; d < m->x->ndim; d++) {
    int64_t dim = m->x->shape[d];
    const Expr *i = m->v[d] ? expr_sub(a, ax[d], expr_i64(a, m->v[d])) : ax[d];
    if (m->mode == TOPI_PAD_CONSTANT) {
      if (m->v[d] > 0 || m->step[d] > 0) {
        const Expr *c = expr_and(a, expr_binary(a, EXPR_GE, i, expr_i64(a, 0)),
                                 expr_lt(a, i, expr_i64(a, dim)));
        inside = inside ? expr_and(a, inside, c) : c;
        /* Clamp so the load stays in bounds even where the select discards it. */
        i = expr_min(a, expr_max(a, i, expr_i64(a, 0)), expr_i64(a, dim - 1));
      }
    } else if (m->mode == TOPI_PAD_EDGE) {
      i = expr_min(a, expr_max(a, i, expr_i64(a, 0)), expr_i64(a, dim - 1));
    } else if (m->mode == TOPI_PAD_WRAP) {
      if (m->v[d] > 0 || m->step[d] > 0) i = expr_floormod(a, i, expr_i64(a, dim));
    } else if (dim > 1) {
      /* reflect: -i below 0, 2(dim-1) - i above dim-1 (pads < dim) */
      i = expr_select(a, expr_lt(a, i, expr_i64(a, 0)), expr_sub(a, expr_i64(a, 0), i), i);
      i = expr_select(a, expr_binary(a, EXPR_GT, i, expr_i64(a, dim - 1)),
                      expr_sub(a, expr_i64(a, 2 * (dim - 1)), i), i);
    } else {
      i = expr_i64(a, 0);
    }
    idx[d] = i;
  }
  const Expr *ld = te_load(a, m->x, idx);
  return inside ? expr_select(a, inside, ld, m->value) : ld;
}

/* value: the fill, an expression of x's dtype. */
static TeTensor *pad_onnx(Arena *a, const char *name, const TeTensor *x, const int64_t *pads, TopiPadMode mode,
                          const Expr *value, LoomError *err) {
  MoveArgs m = {.x = x, .mode = mode, .value = value};
  int64_t s[TOPI_MAX_RANK];
  for (int d = 0; d < x->ndim; d++) {
    int64_t b = pads[d], e = pads[x->ndim + d];
    s[d] = x->shape[d] + b + e;
    if (s[d] < 1) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Pad: axis %d would have extent %lld", d, (long long)s[d]);
      return NULL;
    }
    if (mode == TOPI_PAD_REFLECT && (b >= x->shape[d] || e >= x->shape[d]) && x->shape[d] > 1) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Pad: reflect pads on axis %d must be smaller than its extent %lld",
              d, (long long)x->shape[d]);
      return NULL;
    }
    m.v[d] = b;     /* may be negative: a crop */
    m.step[d] = e;  /* only its sign matters to the body */
  }
  if ((unsigned)mode > TOPI_PAD_WRAP) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Pad: unknown mode %d", (int)mode);
    return NULL;
  }
  return te_compute(a, name, x->ndim, s, pad_body, &m, err);
}

static bool pad_checks(const char *name, const TeTensor *x, const int64_t *pads, LoomError *err) {
  if (!op_check_name("Pad", name, err) || !op_check_tensor("Pad", "data", x, err)) return false;
  if (x->ndim > 0 && !pads) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Pad: pads are required");
    return false;
  }
  return true;
}

TeTensor *topi_pad_onnx(Arena *a, const char *name, const TeTensor *x, const int64_t *pads,
                        TopiPadMode mode, double value, LoomError *err) {
  if (!pad_checks(name, x, pads, err)) return NULL;
  return pad_onnx(a, name, x, pads, mode, op_const(a, x->dtype, value), err);
}

TeTensor *topi_pad_onnx_tensor(Arena *a, const char *name, const TeTensor *x, const int64_t *pads,
                               TopiPadMode mode, const TeTensor *value, LoomError *err) {
  if (!pad_checks(name, x, pads, err) || !op_check_tensor("Pad", "constant_value", value, err)) return NULL;
  int64_t count = 1;
  for (int d = 0; d < value->ndim; d++) count *= value->shape[d];
  if (count != 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Pad: constant_value must have one element, not %lld", (long long)count);
    return NULL;
  }
  const Expr *zero[TOPI_MAX_RANK];
  for (int d = 0; d < value->ndim; d++) zero[d] = expr_i64(a, 0);
  const Expr *v = te_load(a, value, zero);
  if (!dtype_eq(v->dtype, x->dtype)) v = expr_cast(a, x->dtype, v);
  return pad_onnx(a, name, x, pads, mode, v, err);
}

static const Expr *tile_body(Arena *a, const Expr *const *ax, void *user) {
  MoveArgs *m = user;
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < m->x->ndim; d++)
    idx[d] = m->v[d] == 1 ? ax[d] : expr_floormod(a, ax[d], expr_i64(a, m->x->shape[d]));
  return te_load(a, m->x, idx);
}

TeTensor *topi_tile(Arena *a, const char *name, const TeTensor *x, const int64_t *repeats,
                    LoomError *err) {
  if (!op_check_name("Tile", name, err) || !op_check_tensor("Tile", "input", x, err)) return NULL;
  MoveArgs m = {.x = x};
  int64_t s[TOPI_MAX_RANK];
  for (int d = 0; d < x->ndim; d++) {
    if (!repeats || repeats[d] < 1) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Tile: repeats[%d] must be >= 1", d);
      return NULL;
    }
    m.v[d] = repeats[d];
    s[d] = x->shape[d] * repeats[d];
  }
  return te_compute(a, name, x->ndim, s, tile_body, &m, err);
}
