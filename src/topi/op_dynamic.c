/* Ops whose output extents depend on the data: NonZero, Compress, Unique,
 * NonMaxSuppression (topi_ops_vision.h has the output contract: an
 * upper-bound-shaped tensor holding the real one compactly, plus an i64
 * extent tensor).
 *
 * Everything is a te stage: a selection mask, its count (a reduction), the
 * position of every selected element (a reduction over the elements before
 * it: a prefix sum as a compute), the element selected for output position
 * k (a conditional reduction: the one whose position is k; no scatter),
 * then the gather, and the compaction that lays the real shape out
 * row-major (index arithmetic on the run-time extents). Quadratic in the
 * number of candidates, which is what these computes cost without a
 * sequential scan. */
#include "topi/op_internal.h"

#include <string.h>

static const Expr *ic(Arena *a, int64_t v) { return expr_i64(a, v); }
static const Expr *eq(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_EQ, x, y); }
static const Expr *ne(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_NE, x, y); }
static const Expr *lt(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_LT, x, y); }
static const Expr *gt(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_GT, x, y); }
static const Expr *ge(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_GE, x, y); }
static const Expr *or_(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_OR, x, y); }
static const Expr *and_(Arena *a, const Expr *x, const Expr *y) { return expr_and(a, x, y); }
static const Expr *i64_of(Arena *a, const Expr *b) { return expr_cast(a, DT_I64, b); }
static const Expr *clampi(Arena *a, const Expr *i, int64_t n) {
  return expr_min(a, expr_max(a, i, ic(a, 0)), ic(a, n - 1));
}
static const Expr *const *idx1(Arena *a, const Expr *i) {
  const Expr **p = ARENA_ARRAY(a, const Expr *, 1);
  p[0] = i;
  return p;
}
static const Expr *const *idx2(Arena *a, const Expr *i, const Expr *j) {
  const Expr **p = ARENA_ARRAY(a, const Expr *, 2);
  p[0] = i;
  p[1] = j;
  return p;
}
static const Expr *const *idx3(Arena *a, const Expr *i, const Expr *j, const Expr *k) {
  const Expr **p = ARENA_ARRAY(a, const Expr *, 3);
  p[0] = i;
  p[1] = j;
  p[2] = k;
  return p;
}
static const Expr *load0(Arena *a, const TeTensor *t) { return te_load(a, t, NULL); }
/* The first element of a one-element tensor of any rank. */
static const Expr *load_first(Arena *a, const TeTensor *t) {
  const Expr **p = ARENA_ARRAY(a, const Expr *, t->ndim > 0 ? t->ndim : 1);
  for (int d = 0; d < t->ndim; d++) p[d] = ic(a, 0);
  return te_load(a, t, p);
}

/* ---------------- the shared stages ---------------- */

/* The "view" every op selects from: A candidates (an axis), each a slice
 * of Q elements of x: element q of candidate i is x at the index with
 * axis = i and the other axes unraveled from q (axis -1: x flattened,
 * Q = 1). */
typedef struct View {
  const TeTensor *x;
  int axis; /* -1: flattened */
  int64_t A, Q;
} View;

static View view_of(const TeTensor *x, int axis) {
  View v = {x, axis, 1, 1};
  int64_t numel = op_numel(x->ndim, x->shape);
  if (axis < 0) v.A = numel;
  else {
    v.A = x->shape[axis];
    v.Q = numel / v.A;
  }
  return v;
}

/* x's full index for candidate i, slice element q (both i64 expressions). */
static const Expr *const *view_index(Arena *a, const View *v, const Expr *i, const Expr *q) {
  int nd = v->x->ndim;
  const Expr **p = ARENA_ARRAY(a, const Expr *, nd > 0 ? nd : 1);
  const Expr *rest = v->axis < 0 ? i : q;
  for (int d = nd - 1; d >= 0; d--) {
    if (d == v->axis) {
      p[d] = i;
      continue;
    }
    int64_t e = v->x->shape[d];
    p[d] = e == 1 ? ic(a, 0) : expr_floormod(a, rest, ic(a, e));
    rest = expr_floordiv(a, rest, ic(a, e));
  }
  return p;
}

static const Expr *view_load(Arena *a, const View *v, const Expr *i, const Expr *q) {
  return te_load(a, v->x, view_index(a, v, i, q));
}

/* Stages over a 0/1 mask m[A] (i64): count (0-d), pos[i] = #selected
 * before i, pick[k] = the i selected at position k (for k < count). */
typedef struct Select {
  const TeTensor *mask, *count, *pos, *pick;
  IterVar j;
  int64_t A;
} Select;

static const Expr *count_body(Arena *a, const Expr *const *ax, void *user) {
  (void)ax;
  const Select *s = user;
  return te_sum(a, te_load(a, s->mask, idx1(a, s->j.var)), &s->j, 1, NULL);
}

static const Expr *pos_body(Arena *a, const Expr *const *ax, void *user) {
  const Select *s = user;
  return te_sum(a, te_load(a, s->mask, idx1(a, s->j.var)), &s->j, 1, lt(a, s->j.var, ax[0]));
}

static const Expr *pick_body(Arena *a, const Expr *const *ax, void *user) {
  const Select *s = user;
  const Expr *j = s->j.var;
  const Expr *c = and_(a, eq(a, te_load(a, s->mask, idx1(a, j)), ic(a, 1)), eq(a, te_load(a, s->pos, idx1(a, j)), ax[0]));
  return te_max(a, j, &s->j, 1, c);
}

static bool select_stages(Arena *a, const char *name, const TeTensor *mask, Select *s, LoomError *err) {
  s->mask = mask;
  s->A = mask->shape[0];
  s->j = te_reduce_axis(a, "j", s->A);
  s->count = te_compute(a, op_stage(a, name, "count"), 0, NULL, count_body, s, err);
  s->pos = s->count ? te_compute(a, op_stage(a, name, "pos"), 1, &s->A, pos_body, s, err) : NULL;
  s->pick = s->pos ? te_compute(a, op_stage(a, name, "pick"), 1, &s->A, pick_body, s, err) : NULL;
  return s->pick != NULL;
}

/* The extent tensor: extent[d] = the real extent of axis d: a 0-d count
 * stage (never more than the upper bound `fixed`) or the constant fixed. */
typedef struct Extent {
  int r;
  const TeTensor *count[TOPI_MAX_RANK]; /* NULL: static */
  int64_t fixed[TOPI_MAX_RANK];         /* the upper bound (the extent, when static) */
} Extent;

static const Expr *extent_dim(Arena *a, const Extent *e, int d) {
  return e->count[d] ? expr_min(a, load0(a, e->count[d]), ic(a, e->fixed[d])) : ic(a, e->fixed[d]);
}

static const Expr *extent_body(Arena *a, const Expr *const *ax, void *user) {
  const Extent *e = user;
  const Expr *v = extent_dim(a, e, e->r - 1);
  for (int d = e->r - 2; d >= 0; d--) v = expr_select(a, eq(a, ax[0], ic(a, d)), extent_dim(a, e, d), v);
  return v;
}

static TeTensor *extent_tensor(Arena *a, const char *name, const Extent *e, LoomError *err) {
  int64_t r = e->r;
  return te_compute(a, op_stage(a, name, "extent"), 1, &r, extent_body, (void *)e, err);
}

/* The compaction: out (shape U = full's) holds full's [0, extent) block
 * row-major for the real extents, then zeros. When only the first axis
 * is dynamic the layouts already agree (the block is a prefix). */
typedef struct Compact {
  const TeTensor *full;
  const Extent *e;
} Compact;

static const Expr *compact_body(Arena *a, const Expr *const *ax, void *user) {
  const Compact *c = user;
  const TeTensor *f = c->full;
  int r = f->ndim;
  bool prefix = true;
  for (int d = 1; d < r; d++) prefix &= c->e->count[d] == NULL;
  const Expr *zero = op_const(a, f->dtype, 0);
  if (prefix) return expr_select(a, lt(a, ax[0], extent_dim(a, c->e, 0)), te_load(a, f, ax), zero);
  const Expr *flat = NULL, *total = NULL;
  for (int d = 0; d < r; d++) {
    flat = flat ? expr_add(a, expr_mul(a, flat, ic(a, f->shape[d])), ax[d]) : ax[d];
    total = total ? expr_mul(a, total, extent_dim(a, c->e, d)) : extent_dim(a, c->e, d);
  }
  const Expr **src = ARENA_ARRAY(a, const Expr *, r);
  const Expr *rest = flat;
  for (int d = r - 1; d >= 0; d--) {
    const Expr *e = expr_max(a, extent_dim(a, c->e, d), ic(a, 1));
    src[d] = clampi(a, expr_floormod(a, rest, e), f->shape[d]);
    rest = expr_floordiv(a, rest, e);
  }
  return expr_select(a, lt(a, flat, total), te_load(a, f, src), zero);
}

static TeTensor *compact(Arena *a, const char *name, const TeTensor *full, const Extent *e, LoomError *err) {
  Compact c = {full, e};
  return te_compute(a, name, full->ndim, full->shape, compact_body, &c, err);
}

/* ---------------- NonZero ---------------- */

typedef struct NzArgs {
  View v;
  const Select *s;
  int64_t strides[TOPI_MAX_RANK];
} NzArgs;

static const Expr *nz_mask_body(Arena *a, const Expr *const *ax, void *user) {
  const NzArgs *z = user;
  const Expr *x = view_load(a, &z->v, ax[0], ic(a, 0));
  return i64_of(a, ne(a, x, op_const(a, x->dtype, 0)));
}

static const Expr *nz_full_body(Arena *a, const Expr *const *ax, void *user) {
  const NzArgs *z = user;
  int r = z->v.x->ndim;
  const Expr *e = clampi(a, te_load(a, z->s->pick, idx1(a, ax[1])), z->v.A);
  /* coordinate ax[0] of flat element e */
  const Expr *v = ic(a, 0);
  for (int d = r - 1; d >= 0; d--) {
    const Expr *cd = expr_floormod(a, expr_floordiv(a, e, ic(a, z->strides[d])), ic(a, z->v.x->shape[d]));
    v = d == r - 1 ? cd : expr_select(a, eq(a, ax[0], ic(a, d)), cd, v);
  }
  return v;
}

bool topi_non_zero(Arena *a, const char *name, const TeTensor *x, TeTensor **y, TeTensor **extent, LoomError *err) {
  const char *op = "NonZero";
  if (!op_check_name(op, name, err) || !op_check_tensor(op, "X", x, err)) return false;
  if (x->ndim < 1) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "NonZero: a 0-d input (an empty [0, n] result) is not supported");
    return false;
  }
  NzArgs z = {.v = view_of(x, -1)};
  int64_t st = 1;
  for (int d = x->ndim - 1; d >= 0; d--) {
    z.strides[d] = st;
    st *= x->shape[d];
  }
  TeTensor *mask = te_compute(a, op_stage(a, name, "mask"), 1, &z.v.A, nz_mask_body, &z, err);
  Select *s = ARENA_NEW(a, Select);
  if (!mask || !select_stages(a, name, mask, s, err)) return false;
  z.s = s;
  int64_t shape[2] = {x->ndim, z.v.A};
  TeTensor *full = te_compute(a, op_stage(a, name, "full"), 2, shape, nz_full_body, &z, err);
  Extent *e = ARENA_NEW(a, Extent);
  e->r = 2;
  e->fixed[0] = x->ndim;
  e->fixed[1] = z.v.A;
  e->count[1] = s->count;
  *y = full ? compact(a, name, full, e, err) : NULL;
  *extent = *y ? extent_tensor(a, name, e, err) : NULL;
  return *extent != NULL;
}

/* ---------------- Compress ---------------- */

typedef struct CpArgs {
  View v;
  const TeTensor *cond;
  const Select *s;
  int64_t M;
} CpArgs;

static const Expr *cp_mask_body(Arena *a, const Expr *const *ax, void *user) {
  const CpArgs *c = user;
  return i64_of(a, ne(a, te_load(a, c->cond, ax), op_const(a, c->cond->dtype, 0)));
}

static const Expr *cp_full_body(Arena *a, const Expr *const *ax, void *user) {
  const CpArgs *c = user;
  int r = c->v.axis < 0 ? 1 : c->v.x->ndim;
  int axis = c->v.axis < 0 ? 0 : c->v.axis;
  const Expr *i = clampi(a, te_load(a, c->s->pick, idx1(a, ax[axis])), c->M);
  if (c->v.axis < 0) return view_load(a, &c->v, i, ic(a, 0));
  const Expr **p = ARENA_ARRAY(a, const Expr *, r);
  memcpy(p, ax, sizeof(*p) * (size_t)r);
  p[axis] = i;
  return te_load(a, c->v.x, p);
}

bool topi_compress(Arena *a, const char *name, const TeTensor *x, const TeTensor *cond, bool has_axis, int64_t axis,
                   TeTensor **y, TeTensor **extent, LoomError *err) {
  const char *op = "Compress";
  if (!op_check_name(op, name, err) || !op_check_tensor(op, "input", x, err) ||
      !op_check_tensor(op, "condition", cond, err))
    return false;
  if (cond->ndim != 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Compress: condition (\"%s\") must be 1-D", cond->name);
    return false;
  }
  int ax = -1;
  if (has_axis && !op_axis(op, "axis", axis, x->ndim, false, &ax, err)) return false;
  CpArgs c = {.v = view_of(x, ax), .cond = cond};
  c.M = c.v.A < cond->shape[0] ? c.v.A : cond->shape[0];
  TeTensor *mask = te_compute(a, op_stage(a, name, "mask"), 1, &c.M, cp_mask_body, &c, err);
  Select *s = ARENA_NEW(a, Select);
  if (!mask || !select_stages(a, name, mask, s, err)) return false;
  c.s = s;
  Extent *e = ARENA_NEW(a, Extent);
  int64_t shape[TOPI_MAX_RANK];
  if (ax < 0) {
    e->r = 1;
    shape[0] = c.M;
    e->fixed[0] = c.M;
    e->count[0] = s->count;
  } else {
    e->r = x->ndim;
    for (int d = 0; d < x->ndim; d++) {
      shape[d] = d == ax ? c.M : x->shape[d];
      e->fixed[d] = shape[d];
    }
    e->count[ax] = s->count;
  }
  TeTensor *full = te_compute(a, op_stage(a, name, "full"), e->r, shape, cp_full_body, &c, err);
  *y = full ? compact(a, name, full, e, err) : NULL;
  *extent = *y ? extent_tensor(a, name, e, err) : NULL;
  return *extent != NULL;
}

/* ---------------- Unique ---------------- */

typedef struct UqArgs {
  View v;
  bool sorted;
  IterVar q, j;
  const TeTensor *diff, *first_idx, *mask, *id, *pick;
  const Select *s;
} UqArgs;

/* diff[i, j] = first slice position where candidates i and j differ
 * (Q when they are equal). */
static const Expr *uq_diff_body(Arena *a, const Expr *const *ax, void *user) {
  const UqArgs *u = user;
  const Expr *xi = view_load(a, &u->v, ax[0], u->q.var), *xj = view_load(a, &u->v, ax[1], u->q.var);
  return te_min(a, u->q.var, &u->q, 1, ne(a, xi, xj)); /* INT64_MAX (the identity) when equal */
}

static const Expr *uq_equal(Arena *a, const UqArgs *u, const Expr *i, const Expr *j) {
  return ge(a, te_load(a, u->diff, idx2(a, i, j)), ic(a, u->v.Q));
}

/* candidate j < candidate i in the sort order: lexicographic over the slice */
static const Expr *uq_less(Arena *a, const UqArgs *u, const Expr *j, const Expr *i) {
  const Expr *p = te_load(a, u->diff, idx2(a, j, i));
  const Expr *pc = expr_min(a, p, ic(a, u->v.Q - 1));
  return and_(a, lt(a, p, ic(a, u->v.Q)), lt(a, view_load(a, &u->v, j, pc), view_load(a, &u->v, i, pc)));
}

static const Expr *uq_first_body(Arena *a, const Expr *const *ax, void *user) {
  const UqArgs *u = user;
  return te_min(a, u->j.var, &u->j, 1, uq_equal(a, u, ax[0], u->j.var));
}

static const Expr *uq_mask_body(Arena *a, const Expr *const *ax, void *user) {
  const UqArgs *u = user;
  return i64_of(a, eq(a, te_load(a, u->first_idx, ax), ax[0]));
}

/* id[i]: the output position of candidate i's value. */
static const Expr *uq_id_body(Arena *a, const Expr *const *ax, void *user) {
  const UqArgs *u = user;
  const Expr *j = u->j.var;
  const Expr *first = eq(a, te_load(a, u->mask, idx1(a, j)), ic(a, 1));
  const Expr *before = u->sorted ? uq_less(a, u, j, ax[0]) : lt(a, j, te_load(a, u->first_idx, ax));
  return te_sum(a, ic(a, 1), &u->j, 1, and_(a, first, before));
}

static const Expr *uq_pick_body(Arena *a, const Expr *const *ax, void *user) {
  const UqArgs *u = user;
  const Expr *j = u->j.var;
  const Expr *c = and_(a, eq(a, te_load(a, u->mask, idx1(a, j)), ic(a, 1)), eq(a, te_load(a, u->id, idx1(a, j)), ax[0]));
  return te_max(a, j, &u->j, 1, c);
}

static const Expr *uq_counts_body(Arena *a, const Expr *const *ax, void *user) {
  const UqArgs *u = user;
  return te_sum(a, ic(a, 1), &u->j, 1, eq(a, te_load(a, u->id, idx1(a, u->j.var)), ax[0]));
}

static const Expr *uq_y_full_body(Arena *a, const Expr *const *ax, void *user) {
  const UqArgs *u = user;
  int axis = u->v.axis < 0 ? 0 : u->v.axis;
  const Expr *i = clampi(a, te_load(a, u->pick, idx1(a, ax[axis])), u->v.A);
  if (u->v.axis < 0) return view_load(a, &u->v, i, ic(a, 0));
  const Expr **p = ARENA_ARRAY(a, const Expr *, u->v.x->ndim);
  memcpy(p, ax, sizeof(*p) * (size_t)u->v.x->ndim);
  p[axis] = i;
  return te_load(a, u->v.x, p);
}

static const Expr *uq_inverse_body(Arena *a, const Expr *const *ax, void *user) {
  const UqArgs *u = user;
  return te_load(a, u->id, ax);
}

bool topi_unique(Arena *a, const char *name, const TeTensor *x, bool has_axis, int64_t axis, bool sorted,
                 TeTensor **outs, TeTensor **extents, LoomError *err) {
  const char *op = "Unique";
  if (!op_check_name(op, name, err) || !op_check_tensor(op, "X", x, err)) return false;
  if (dtype_is_bool(x->dtype) && sorted) {
    /* bool compares as 0 < 1 like the integers: fine */
  }
  int ax = -1;
  if (has_axis && !op_axis(op, "axis", axis, x->ndim, false, &ax, err)) return false;
  UqArgs *u = ARENA_NEW(a, UqArgs);
  u->v = view_of(x, ax);
  u->sorted = sorted;
  u->q = te_reduce_axis(a, "q", u->v.Q);
  u->j = te_reduce_axis(a, "j", u->v.A);
  int64_t A = u->v.A, AA[2] = {A, A};
  u->diff = te_compute(a, op_stage(a, name, "diff"), 2, AA, uq_diff_body, u, err);
  u->first_idx = u->diff ? te_compute(a, op_stage(a, name, "first"), 1, &A, uq_first_body, u, err) : NULL;
  u->mask = u->first_idx ? te_compute(a, op_stage(a, name, "mask"), 1, &A, uq_mask_body, u, err) : NULL;
  u->id = u->mask ? te_compute(a, op_stage(a, name, "id"), 1, &A, uq_id_body, u, err) : NULL;
  Select *s = ARENA_NEW(a, Select);
  if (!u->id || !select_stages(a, name, u->mask, s, err)) return false;
  u->s = s;
  u->pick = te_compute(a, op_stage(a, name, "pick_id"), 1, &A, uq_pick_body, u, err);
  TeTensor *counts = u->pick ? te_compute(a, op_stage(a, name, "counts_full"), 1, &A, uq_counts_body, u, err) : NULL;
  /* Y */
  Extent *ey = ARENA_NEW(a, Extent), *e1 = ARENA_NEW(a, Extent);
  int64_t shape[TOPI_MAX_RANK];
  if (ax < 0) {
    ey->r = 1;
    shape[0] = A;
    ey->fixed[0] = A;
    ey->count[0] = s->count;
  } else {
    ey->r = x->ndim;
    for (int d = 0; d < x->ndim; d++) {
      shape[d] = x->shape[d];
      ey->fixed[d] = x->shape[d];
    }
    ey->count[ax] = s->count;
  }
  e1->r = 1;
  e1->fixed[0] = A;
  e1->count[0] = s->count;
  TeTensor *yfull = counts ? te_compute(a, op_stage(a, name, "y_full"), ey->r, shape, uq_y_full_body, u, err) : NULL;
  if (!yfull) return false;
  outs[0] = compact(a, name, yfull, ey, err);
  outs[1] = outs[0] ? compact(a, op_stage(a, name, "indices"), u->pick, e1, err) : NULL;
  outs[2] = outs[1] ? te_compute(a, op_stage(a, name, "inverse"), 1, &A, uq_inverse_body, u, err) : NULL;
  outs[3] = outs[2] ? compact(a, op_stage(a, name, "counts"), counts, e1, err) : NULL;
  if (!outs[3]) return false;
  extents[0] = extent_tensor(a, name, ey, err);
  extents[1] = extents[0] ? extent_tensor(a, op_stage(a, name, "indices"), e1, err) : NULL;
  extents[2] = extents[1] ? extent_tensor(a, op_stage(a, name, "counts"), e1, err) : NULL;
  return extents[2] != NULL;
}

/* ---------------- NonMaxSuppression ---------------- */

enum { NMS_MAX_ROUNDS = 512 };

typedef struct NmsArgs {
  const TeTensor *boxes, *scores, *max_out, *iou, *score_thr;
  bool center;
  int64_t B, C, N, rows;
  IterVar j, rb, rc, ri;
  const TeTensor *sup, *cand, *rank, *sel, *pos, *final, *cnt, *offset, *total, *rows_full;
} NmsArgs;

static const Expr *box(Arena *a, const NmsArgs *m, const Expr *b, const Expr *i, int k) {
  return te_load(a, m->boxes, idx3(a, b, i, ic(a, k)));
}

/* The reference's suppress_by_iou(i, j) for boxes of batch b. */
static const Expr *nms_sup_body(Arena *a, const Expr *const *ax, void *user) {
  const NmsArgs *m = user;
  DType t = m->boxes->dtype;
  const Expr *bx[2][4];
  for (int s = 0; s < 2; s++)
    for (int k = 0; k < 4; k++) bx[s][k] = box(a, m, ax[0], ax[1 + s], k);
  const Expr *xmin[2], *xmax[2], *ymin[2], *ymax[2];
  for (int s = 0; s < 2; s++) {
    if (!m->center) { /* [y1, x1, y2, x2], corners in any order */
      xmin[s] = expr_min(a, bx[s][1], bx[s][3]);
      xmax[s] = expr_max(a, bx[s][1], bx[s][3]);
      ymin[s] = expr_min(a, bx[s][0], bx[s][2]);
      ymax[s] = expr_max(a, bx[s][0], bx[s][2]);
    } else { /* [x_center, y_center, width, height] */
      const Expr *hw = expr_binary(a, EXPR_DIV, bx[s][2], op_const(a, t, 2));
      const Expr *hh = expr_binary(a, EXPR_DIV, bx[s][3], op_const(a, t, 2));
      xmin[s] = expr_sub(a, bx[s][0], hw);
      xmax[s] = expr_add(a, bx[s][0], hw);
      ymin[s] = expr_sub(a, bx[s][1], hh);
      ymax[s] = expr_add(a, bx[s][1], hh);
    }
  }
  const Expr *ixmin = expr_max(a, xmin[0], xmin[1]), *ixmax = expr_min(a, xmax[0], xmax[1]);
  const Expr *iymin = expr_max(a, ymin[0], ymin[1]), *iymax = expr_min(a, ymax[0], ymax[1]);
  const Expr *inter = expr_mul(a, expr_sub(a, ixmax, ixmin), expr_sub(a, iymax, iymin));
  const Expr *area0 = expr_mul(a, expr_sub(a, xmax[0], xmin[0]), expr_sub(a, ymax[0], ymin[0]));
  const Expr *area1 = expr_mul(a, expr_sub(a, xmax[1], xmin[1]), expr_sub(a, ymax[1], ymin[1]));
  const Expr *uni = expr_sub(a, expr_add(a, area0, area1), inter);
  const Expr *zero = op_const(a, t, 0);
  const Expr *thr = m->iou ? expr_cast(a, t, load_first(a, m->iou)) : zero;
  const Expr *ok = and_(a, gt(a, ixmax, ixmin), gt(a, iymax, iymin));
  ok = and_(a, ok, and_(a, gt(a, inter, zero), and_(a, gt(a, area0, zero), and_(a, gt(a, area1, zero), gt(a, uni, zero)))));
  ok = and_(a, ok, gt(a, expr_binary(a, EXPR_DIV, inter, uni), thr));
  return i64_of(a, ok);
}

static const Expr *score(Arena *a, const NmsArgs *m, const Expr *b, const Expr *c, const Expr *i) {
  return te_load(a, m->scores, idx3(a, b, c, i));
}

static const Expr *nms_cand_body(Arena *a, const Expr *const *ax, void *user) {
  const NmsArgs *m = user;
  if (!m->score_thr) return ic(a, 1);
  const Expr *s = score(a, m, ax[0], ax[1], ax[2]);
  return i64_of(a, gt(a, s, expr_cast(a, s->dtype, load_first(a, m->score_thr))));
}

/* rank[b, c, i] = boxes before i: higher score, ties to the lower index */
static const Expr *nms_rank_body(Arena *a, const Expr *const *ax, void *user) {
  const NmsArgs *m = user;
  const Expr *si = score(a, m, ax[0], ax[1], ax[2]), *sj = score(a, m, ax[0], ax[1], m->j.var);
  const Expr *before = or_(a, gt(a, sj, si), and_(a, eq(a, sj, si), lt(a, m->j.var, ax[2])));
  return te_sum(a, i64_of(a, before), &m->j, 1, NULL);
}

static const Expr *before_j(Arena *a, const NmsArgs *m, const Expr *const *ax) {
  const Expr *rj = te_load(a, m->rank, idx3(a, ax[0], ax[1], m->j.var)), *ri = te_load(a, m->rank, ax);
  return lt(a, rj, ri);
}

/* One round of the greedy fixed point: is i suppressed by a box selected
 * (in the previous round's estimate) that comes before it? */
static const Expr *nms_round_body(Arena *a, const Expr *const *ax, void *user) {
  const NmsArgs *m = user;
  const Expr *selj = eq(a, te_load(a, m->sel, idx3(a, ax[0], ax[1], m->j.var)), ic(a, 1));
  const Expr *supj = eq(a, te_load(a, m->sup, idx3(a, ax[0], ax[2], m->j.var)), ic(a, 1));
  return te_max(a, ic(a, 1), &m->j, 1, and_(a, and_(a, selj, supj), before_j(a, m, ax)));
}

typedef struct NmsSel {
  const NmsArgs *m;
  const TeTensor *supp;
} NmsSel;

static const Expr *nms_sel_body(Arena *a, const Expr *const *ax, void *user) {
  const NmsSel *s = user;
  const Expr *cand = eq(a, te_load(a, s->m->cand, ax), ic(a, 1));
  return i64_of(a, and_(a, cand, ne(a, te_load(a, s->supp, ax), ic(a, 1))));
}

/* pos[b, c, i] = selected boxes before i */
static const Expr *nms_pos_body(Arena *a, const Expr *const *ax, void *user) {
  const NmsArgs *m = user;
  const Expr *selj = eq(a, te_load(a, m->sel, idx3(a, ax[0], ax[1], m->j.var)), ic(a, 1));
  return te_sum(a, ic(a, 1), &m->j, 1, and_(a, selj, before_j(a, m, ax)));
}

static const Expr *nms_final_body(Arena *a, const Expr *const *ax, void *user) {
  const NmsArgs *m = user;
  const Expr *mo = m->max_out ? expr_max(a, i64_of(a, load_first(a, m->max_out)), ic(a, 0)) : ic(a, 0);
  const Expr *s = eq(a, te_load(a, m->sel, ax), ic(a, 1));
  return i64_of(a, and_(a, s, lt(a, te_load(a, m->pos, ax), mo)));
}

static const Expr *nms_cnt_body(Arena *a, const Expr *const *ax, void *user) {
  const NmsArgs *m = user;
  return te_sum(a, te_load(a, m->final, idx3(a, ax[0], ax[1], m->j.var)), &m->j, 1, NULL);
}

/* offset[b, c] = selected rows of the (batch, class) pairs before it */
static const Expr *nms_offset_body(Arena *a, const Expr *const *ax, void *user) {
  const NmsArgs *m = user;
  IterVar axes[2] = {m->rb, m->rc};
  const Expr *flat_r = expr_add(a, expr_mul(a, m->rb.var, ic(a, m->C)), m->rc.var);
  const Expr *flat = expr_add(a, expr_mul(a, ax[0], ic(a, m->C)), ax[1]);
  return te_sum(a, te_load(a, m->cnt, idx2(a, m->rb.var, m->rc.var)), axes, 2, lt(a, flat_r, flat));
}

static const Expr *nms_total_body(Arena *a, const Expr *const *ax, void *user) {
  (void)ax;
  const NmsArgs *m = user;
  IterVar axes[2] = {m->rb, m->rc};
  return te_sum(a, te_load(a, m->cnt, idx2(a, m->rb.var, m->rc.var)), axes, 2, NULL);
}

/* out[r, col]: the selected (b, c, i) whose output row is r */
static const Expr *nms_out_body(Arena *a, const Expr *const *ax, void *user) {
  const NmsArgs *m = user;
  IterVar axes[3] = {m->rb, m->rc, m->ri};
  const Expr *const *bci = idx3(a, m->rb.var, m->rc.var, m->ri.var);
  const Expr *row = expr_add(a, te_load(a, m->offset, idx2(a, m->rb.var, m->rc.var)), te_load(a, m->pos, bci));
  const Expr *c = and_(a, eq(a, te_load(a, m->final, bci), ic(a, 1)), eq(a, row, ax[0]));
  const Expr *v = expr_select(a, eq(a, ax[1], ic(a, 0)), m->rb.var,
                              expr_select(a, eq(a, ax[1], ic(a, 1)), m->rc.var, m->ri.var));
  return te_max(a, v, axes, 3, c);
}

static const Expr *nms_y_body(Arena *a, const Expr *const *ax, void *user) {
  const NmsArgs *m = user;
  /* rows past the count hold zeros (te_max's identity is INT64_MIN) */
  return expr_select(a, lt(a, ax[0], load0(a, m->total)), te_load(a, m->rows_full, ax), ic(a, 0));
}

bool topi_non_max_suppression(Arena *a, const char *name, const TeTensor *boxes, const TeTensor *scores,
                              const TeTensor *max_output, const TeTensor *iou_threshold,
                              const TeTensor *score_threshold, bool center_point_box, int64_t rows, TeTensor **y,
                              TeTensor **extent, LoomError *err) {
  const char *op = "NonMaxSuppression";
  if (!op_check_name(op, name, err) || !op_check_float(op, "boxes", boxes, err) ||
      !op_check_float(op, "scores", scores, err))
    return false;
  if (boxes->ndim != 3 || boxes->shape[2] != 4 || scores->ndim != 3 || scores->shape[0] != boxes->shape[0] ||
      scores->shape[2] != boxes->shape[1] || !dtype_eq(boxes->dtype, scores->dtype)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "NonMaxSuppression: boxes must be [B, N, 4] and scores [B, C, N] of one dtype");
    return false;
  }
  const TeTensor *scal[3] = {max_output, iou_threshold, score_threshold};
  const char *what[3] = {"max_output_boxes_per_class", "iou_threshold", "score_threshold"};
  for (int k = 0; k < 3; k++)
    if (scal[k] && op_numel(scal[k]->ndim, scal[k]->shape) != 1) {
      err_set(err, LOOM_ERR_INVALID_ARG, "NonMaxSuppression: %s must have one element", what[k]);
      return false;
    }
  NmsArgs *m = ARENA_NEW(a, NmsArgs);
  *m = (NmsArgs){.boxes = boxes, .scores = scores, .max_out = max_output, .iou = iou_threshold,
                 .score_thr = score_threshold, .center = center_point_box};
  m->B = boxes->shape[0];
  m->C = scores->shape[1];
  m->N = boxes->shape[1];
  m->rows = rows;
  if (m->N > NMS_MAX_ROUNDS) {
    err_set(err, LOOM_ERR_UNSUPPORTED,
            "NonMaxSuppression: %lld boxes per batch; the greedy selection is unrolled into one stage per box and "
            "at most %d are supported",
            (long long)m->N, NMS_MAX_ROUNDS);
    return false;
  }
  if (rows < 1 || rows > m->B * m->C * m->N) {
    err_set(err, LOOM_ERR_INVALID_ARG, "NonMaxSuppression: output upper bound %lld is out of range", (long long)rows);
    return false;
  }
  m->j = te_reduce_axis(a, "j", m->N);
  m->rb = te_reduce_axis(a, "rb", m->B);
  m->rc = te_reduce_axis(a, "rc", m->C);
  m->ri = te_reduce_axis(a, "ri", m->N);
  int64_t bnn[3] = {m->B, m->N, m->N}, bcn[3] = {m->B, m->C, m->N}, bc[2] = {m->B, m->C};
  m->sup = te_compute(a, op_stage(a, name, "iou"), 3, bnn, nms_sup_body, m, err);
  m->cand = m->sup ? te_compute(a, op_stage(a, name, "cand"), 3, bcn, nms_cand_body, m, err) : NULL;
  m->rank = m->cand ? te_compute(a, op_stage(a, name, "rank"), 3, bcn, nms_rank_body, m, err) : NULL;
  if (!m->rank) return false;
  m->sel = m->cand;
  /* After round t the first t+1 boxes in score order are decided. */
  for (int64_t t = 1; t < m->N; t++) {
    TeTensor *supp = te_compute(a, arena_printf(a, "%s_round%lld", name, (long long)t), 3, bcn, nms_round_body, m, err);
    NmsSel *s = ARENA_NEW(a, NmsSel);
    s->m = m;
    s->supp = supp;
    m->sel = supp ? te_compute(a, arena_printf(a, "%s_sel%lld", name, (long long)t), 3, bcn, nms_sel_body, s, err) : NULL;
    if (!m->sel) return false;
  }
  m->pos = te_compute(a, op_stage(a, name, "pos"), 3, bcn, nms_pos_body, m, err);
  m->final = m->pos ? te_compute(a, op_stage(a, name, "final"), 3, bcn, nms_final_body, m, err) : NULL;
  m->cnt = m->final ? te_compute(a, op_stage(a, name, "cnt"), 2, bc, nms_cnt_body, m, err) : NULL;
  m->offset = m->cnt ? te_compute(a, op_stage(a, name, "offset"), 2, bc, nms_offset_body, m, err) : NULL;
  m->total = m->offset ? te_compute(a, op_stage(a, name, "total"), 0, NULL, nms_total_body, m, err) : NULL;
  int64_t oshape[2] = {rows, 3};
  TeTensor *full = m->total ? te_compute(a, op_stage(a, name, "rows"), 2, oshape, nms_out_body, m, err) : NULL;
  if (!full) return false;
  m->rows_full = full;
  *y = te_compute(a, name, 2, oshape, nms_y_body, m, err);
  Extent *e = ARENA_NEW(a, Extent);
  e->r = 2;
  e->count[0] = m->total;
  e->fixed[0] = rows;
  e->fixed[1] = 3;
  *extent = *y ? extent_tensor(a, name, e, err) : NULL;
  return *extent != NULL;
}
