/* Vision ops: GridSample, AffineGrid, RoiAlign, DeformConv, and BitCast.
 * Each is a gather with computed (data-dependent) coordinates: the
 * coordinate arithmetic follows the ONNX reference implementation step by
 * step (same formulas, same order, same dtype), so results agree to the
 * last bits where the reference is exact. Every computed index is clamped
 * into its axis before it is used, so generated code stays memory safe
 * whatever the data says. */
#include "topi/op_internal.h"

#include <string.h>

/* ---- small expression helpers ---- */

static const Expr *fc(Arena *a, DType t, double v) { return expr_float(a, t, v); }
static const Expr *ic(Arena *a, int64_t v) { return expr_i64(a, v); }
static const Expr *add(Arena *a, const Expr *x, const Expr *y) { return expr_add(a, x, y); }
static const Expr *sub(Arena *a, const Expr *x, const Expr *y) { return expr_sub(a, x, y); }
static const Expr *mul(Arena *a, const Expr *x, const Expr *y) { return expr_mul(a, x, y); }
static const Expr *fdiv_(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_DIV, x, y); }
static const Expr *lt(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_LT, x, y); }
static const Expr *gt(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_GT, x, y); }
static const Expr *ge(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_GE, x, y); }
static const Expr *or_(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_OR, x, y); }
static const Expr *call1(Arena *a, CallOp op, const Expr *x) { return expr_call(a, op, x->dtype, &x, 1); }
static const Expr *clampi(Arena *a, const Expr *i, int64_t n) {
  return expr_min(a, expr_max(a, i, ic(a, 0)), ic(a, n - 1));
}
static const Expr *to_i64(Arena *a, const Expr *x) { return dtype_eq(x->dtype, DT_I64) ? x : expr_cast(a, DT_I64, x); }
static const Expr *to_t(Arena *a, DType t, const Expr *x) { return dtype_eq(x->dtype, t) ? x : expr_cast(a, t, x); }

static const Expr *const *dup_idx(Arena *a, const Expr *const *idx, int n) {
  return arena_memdup(a, idx, sizeof(*idx) * (size_t)n);
}

static bool check_float_op(const char *op, const char *what, const TeTensor *t, LoomError *err) {
  if (!op_check_tensor(op, what, t, err)) return false;
  if (!dtype_eq(t->dtype, DT_F32) && !dtype_eq(t->dtype, DT_F64)) {
    char b[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: %s (\"%s\") has dtype %s, expected f32 or f64", op, what, t->name,
            dtype_str(t->dtype, b));
    return false;
  }
  return true;
}

static bool check_rank(const char *op, const char *what, const TeTensor *t, int rank, LoomError *err) {
  if (t->ndim != rank) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s (\"%s\") has rank %d, expected %d", op, what, t->name, t->ndim, rank);
    return false;
  }
  return true;
}

/* ---------------- GridSample ---------------- */

typedef struct GsArgs {
  const TeTensor *x, *grid;
  int r;
  TopiGridSampleMode mode;
  TopiGridSamplePad pad;
  bool align;
  DType ct; /* coordinate dtype (grid's) */
  const Expr *n, *c;
  double lo[3], hi[3]; /* the reference's borders per spatial axis */
} GsArgs;

/* The reference's _gs_reflect: fold x into [lo, hi] by reflecting at the
 * nearer border until it lies inside. */
static const Expr *reflect(Arena *a, DType t, const Expr *x, double lo, double hi) {
  double rng = hi - lo;
  if (!(rng > 0)) return fc(a, t, lo);
  const Expr *flo = fc(a, t, lo), *fhi = fc(a, t, hi), *frng = fc(a, t, rng);
  const Expr *out[2];
  for (int side = 0; side < 2; side++) {
    const Expr *dx = side == 0 ? sub(a, flo, x) : sub(a, x, fhi);
    const Expr *nf = call1(a, CALL_FLOOR, fdiv_(a, dx, frng)); /* dx >= 0 where used: floor = int() */
    const Expr *r = sub(a, dx, mul(a, nf, frng));
    const Expr *even = expr_binary(a, EXPR_EQ, expr_floormod(a, to_i64(a, nf), ic(a, 2)), ic(a, 0));
    const Expr *near = side == 0 ? add(a, flo, r) : sub(a, fhi, r), *far = side == 0 ? sub(a, fhi, r) : add(a, flo, r);
    out[side] = expr_select(a, even, near, far);
  }
  return expr_select(a, lt(a, x, flo), out[0], expr_select(a, gt(a, x, fhi), out[1], x));
}

/* X[n, c, idx...] under the padding mode (the reference's _pixel_at_ndarray). */
static const Expr *gs_pixel(Arena *a, const GsArgs *g, const Expr *const *idx) {
  const Expr *full[5];
  full[0] = g->n;
  full[1] = g->c;
  const Expr *inside = NULL;
  for (int i = 0; i < g->r; i++) {
    int64_t d = g->x->shape[2 + i];
    const Expr *k = idx[i];
    if (g->pad == TOPI_GRID_ZEROS) {
      const Expr *in = expr_and(a, ge(a, k, ic(a, 0)), lt(a, k, ic(a, d)));
      inside = inside ? expr_and(a, inside, in) : in;
    } else if (g->pad == TOPI_GRID_REFLECTION) {
      k = to_i64(a, reflect(a, g->ct, to_t(a, g->ct, k), g->lo[i], g->hi[i])); /* int() truncates */
    }
    full[2 + i] = clampi(a, k, d);
  }
  const Expr *v = te_load(a, g->x, dup_idx(a, full, 2 + g->r));
  v = to_t(a, g->ct, v);
  return inside ? expr_select(a, inside, v, fc(a, g->ct, 0)) : v;
}

/* Keys' cubic convolution coefficients (alpha -0.75) at offset t in [0, 1). */
static void cubic_coeffs(Arena *a, DType ct, const Expr *t, const Expr **co) {
  const double al = -0.75;
  const Expr *one = fc(a, ct, 1), *two = fc(a, ct, 2);
  const Expr *xs[4] = {add(a, t, one), t, sub(a, one, t), sub(a, two, t)};
  for (int k = 0; k < 4; k++) {
    const Expr *x = xs[k];
    if (k == 0 || k == 3) /* ((al*x - 5al)*x + 8al)*x - 4al */
      co[k] = sub(a, mul(a, add(a, mul(a, sub(a, mul(a, fc(a, ct, al), x), fc(a, ct, 5 * al)), x), fc(a, ct, 8 * al)), x),
                  fc(a, ct, 4 * al));
    else /* ((al+2)*x - (al+3))*x*x + 1 */
      co[k] = add(a, mul(a, mul(a, sub(a, mul(a, fc(a, ct, al + 2), x), fc(a, ct, al + 3)), x), x), one);
  }
}

/* Nested interpolation over axes i..r-1 (the reference's recursion: the
 * innermost axes first, then the outer one over their results). */
static const Expr *gs_interp(Arena *a, const GsArgs *g, int i, const Expr *const *base, const Expr *const *co_all,
                             const Expr **idx) {
  if (i == g->r) return gs_pixel(a, g, idx);
  int taps = g->mode == TOPI_GRID_CUBIC ? 4 : 2;
  const Expr *sum = NULL;
  for (int k = 0; k < taps; k++) {
    idx[i] = add(a, base[i], ic(a, g->mode == TOPI_GRID_CUBIC ? k - 1 : k));
    const Expr *term = mul(a, co_all[i * 4 + k], gs_interp(a, g, i + 1, base, co_all, idx));
    sum = sum ? add(a, sum, term) : term;
  }
  return sum;
}

static const Expr *grid_sample_body(Arena *a, const Expr *const *ax, void *user) {
  GsArgs g = *(GsArgs *)user;
  g.n = ax[0];
  g.c = ax[1];
  DType ct = g.ct;
  const Expr *coord[3];
  for (int i = 0; i < g.r; i++) {
    const Expr *gi[5];
    gi[0] = ax[0];
    for (int k = 0; k < g.r; k++) gi[1 + k] = ax[2 + k];
    gi[1 + g.r] = ic(a, g.r - 1 - i); /* grid components are in reverse axis order */
    const Expr *nv = te_load(a, g.grid, dup_idx(a, gi, 2 + g.r));
    double d = (double)g.x->shape[2 + i];
    const Expr *one = fc(a, ct, 1), *x;
    if (g.align) x = mul(a, fdiv_(a, add(a, nv, one), fc(a, ct, 2)), fc(a, ct, d - 1));
    else x = fdiv_(a, sub(a, mul(a, add(a, nv, one), fc(a, ct, d)), one), fc(a, ct, 2));
    if (g.mode == TOPI_GRID_NEAREST) x = call1(a, CALL_ROUND, x); /* rint: half to even */
    const Expr *out = or_(a, lt(a, x, fc(a, ct, g.lo[i])), gt(a, x, fc(a, ct, g.hi[i])));
    if (g.pad == TOPI_GRID_BORDER)
      x = expr_select(a, out, expr_min(a, expr_max(a, x, fc(a, ct, 0)), fc(a, ct, d - 1)), x);
    else if (g.pad == TOPI_GRID_REFLECTION)
      x = reflect(a, ct, x, g.lo[i], g.hi[i]);
    coord[i] = x;
  }
  const Expr *idx[3];
  const Expr *v;
  if (g.mode == TOPI_GRID_NEAREST) {
    for (int i = 0; i < g.r; i++) idx[i] = to_i64(a, coord[i]);
    v = gs_pixel(a, &g, idx);
  } else {
    const Expr *base[3], *co[12];
    for (int i = 0; i < g.r; i++) {
      const Expr *f = call1(a, CALL_FLOOR, coord[i]);
      base[i] = to_i64(a, f);
      const Expr *t = sub(a, coord[i], f);
      if (g.mode == TOPI_GRID_LINEAR) {
        co[i * 4 + 0] = sub(a, fc(a, ct, 1), t);
        co[i * 4 + 1] = t;
      } else {
        cubic_coeffs(a, ct, t, &co[i * 4]);
      }
    }
    v = gs_interp(a, &g, 0, base, co, idx);
  }
  return to_t(a, g.x->dtype, v);
}

TeTensor *topi_grid_sample(Arena *a, const char *name, const TeTensor *x, const TeTensor *grid,
                           TopiGridSampleMode mode, TopiGridSamplePad pad, bool align_corners, LoomError *err) {
  const char *op = "GridSample";
  if (!op_check_name(op, name, err) || !check_float_op(op, "X", x, err) || !check_float_op(op, "grid", grid, err))
    return NULL;
  int r = x->ndim - 2;
  if (r < 1 || r > 3) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "GridSample: X has rank %d, expected 3, 4 or 5", x->ndim);
    return NULL;
  }
  if (grid->ndim != r + 2 || grid->shape[r + 1] != r || grid->shape[0] != x->shape[0]) {
    err_set(err, LOOM_ERR_INVALID_ARG, "GridSample: grid (\"%s\") must be [N, spatial..., %d] for X of rank %d",
            grid->name, r, x->ndim);
    return NULL;
  }
  if ((unsigned)mode > TOPI_GRID_CUBIC || (unsigned)pad > TOPI_GRID_REFLECTION) {
    err_set(err, LOOM_ERR_INVALID_ARG, "GridSample: unknown mode or padding mode");
    return NULL;
  }
  GsArgs g = {.x = x, .grid = grid, .r = r, .mode = mode, .pad = pad, .align = align_corners, .ct = grid->dtype};
  for (int i = 0; i < r; i++) {
    double d = (double)x->shape[2 + i];
    g.lo[i] = align_corners ? 0.0 : -0.5;
    g.hi[i] = align_corners ? d - 1 : d - 0.5;
  }
  int64_t shape[5];
  shape[0] = x->shape[0];
  shape[1] = x->shape[1];
  for (int i = 0; i < r; i++) shape[2 + i] = grid->shape[1 + i];
  return te_compute(a, name, r + 2, shape, grid_sample_body, &g, err);
}

/* ---------------- AffineGrid ---------------- */

typedef struct AgArgs {
  const TeTensor *theta;
  int r;
  const int64_t *size;
  bool align;
} AgArgs;

/* The reference's base coordinate of index i on an axis of n points (f64). */
static const Expr *ag_base(Arena *a, const Expr *i, int64_t n, bool align) {
  const Expr *fi = expr_cast(a, DT_F64, i);
  if (align) {
    if (n == 1) return fc(a, DT_F64, -1);
    return add(a, fc(a, DT_F64, -1), mul(a, fi, fc(a, DT_F64, 2.0 / (double)(n - 1))));
  }
  double step = 2.0 / (double)n;
  return add(a, fc(a, DT_F64, -1 + step / 2), mul(a, fi, fc(a, DT_F64, step)));
}

static const Expr *affine_grid_body(Arena *a, const Expr *const *ax, void *user) {
  const AgArgs *g = user;
  int r = g->r;
  /* homogeneous base point (x, y[, z], 1): x indexes the last axis */
  const Expr *pt[4];
  for (int j = 0; j < r; j++) pt[j] = ag_base(a, ax[r - j], g->size[2 + r - 1 - j], g->align);
  const Expr *sum = NULL;
  for (int j = 0; j <= r; j++) {
    const Expr *ti[3] = {ax[0], ax[r + 1], ic(a, j)};
    const Expr *t = to_t(a, DT_F64, te_load(a, g->theta, dup_idx(a, ti, 3)));
    const Expr *term = j < r ? mul(a, t, pt[j]) : t;
    sum = sum ? add(a, sum, term) : term;
  }
  return to_t(a, g->theta->dtype, sum);
}

TeTensor *topi_affine_grid(Arena *a, const char *name, const TeTensor *theta, const int64_t *size, int nsize,
                           bool align_corners, LoomError *err) {
  const char *op = "AffineGrid";
  if (!op_check_name(op, name, err) || !check_float_op(op, "theta", theta, err)) return NULL;
  if (!size || (nsize != 4 && nsize != 5)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "AffineGrid: size must have 4 or 5 elements");
    return NULL;
  }
  int r = nsize - 2;
  if (theta->ndim != 3 || theta->shape[0] != size[0] || theta->shape[1] != r || theta->shape[2] != r + 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "AffineGrid: theta (\"%s\") must be [%lld, %d, %d]", theta->name,
            (long long)size[0], r, r + 1);
    return NULL;
  }
  int64_t shape[5];
  shape[0] = size[0];
  for (int k = 0; k < r; k++) {
    if (size[2 + k] < 1) {
      err_set(err, LOOM_ERR_UNSUPPORTED, "AffineGrid: size[%d] is %lld (empty grids are not supported)", 2 + k,
              (long long)size[2 + k]);
      return NULL;
    }
    shape[1 + k] = size[2 + k];
  }
  shape[1 + r] = r;
  AgArgs g = {theta, r, size, align_corners};
  return te_compute(a, name, r + 2, shape, affine_grid_body, &g, err);
}

/* ---------------- RoiAlign ---------------- */

typedef struct RaArgs {
  const TeTensor *x, *rois, *bi;
  TopiRoiAlignParams p;
  IterVar iy, ix;
  DType t;
  const TeTensor *acc;
} RaArgs;

static const Expr *ra_roi(Arena *a, const RaArgs *r, const Expr *roi, int k) {
  const Expr *idx[2] = {roi, ic(a, k)};
  return to_t(a, r->t, te_load(a, r->rois, dup_idx(a, idx, 2)));
}

/* One sample's four weighted corners (the reference's pre_calc and its
 * use): zero weights outside [-1, H] x [-1, W]. Returns the corners'
 * weighted values in v[4]. */
static void ra_sample(Arena *a, const RaArgs *r, const Expr *const *ax, const Expr **v) {
  DType t = r->t;
  int64_t H = r->x->shape[2], W = r->x->shape[3];
  const Expr *roi = ax[0];
  double off = r->p.half_pixel ? 0.5 : 0.0;
  const Expr *ss = fc(a, t, r->p.spatial_scale), *fo = fc(a, t, off);
  const Expr *sw = sub(a, mul(a, ra_roi(a, r, roi, 0), ss), fo), *sh = sub(a, mul(a, ra_roi(a, r, roi, 1), ss), fo);
  const Expr *ew = sub(a, mul(a, ra_roi(a, r, roi, 2), ss), fo), *eh = sub(a, mul(a, ra_roi(a, r, roi, 3), ss), fo);
  const Expr *rw = sub(a, ew, sw), *rh = sub(a, eh, sh);
  if (!r->p.half_pixel) {
    rw = expr_max(a, rw, fc(a, t, 1));
    rh = expr_max(a, rh, fc(a, t, 1));
  }
  const Expr *bh = fdiv_(a, rh, fc(a, t, (double)r->p.out_h)), *bw = fdiv_(a, rw, fc(a, t, (double)r->p.out_w));
  const Expr *grid = fc(a, t, (double)r->p.sampling_ratio);
  const Expr *half = fc(a, t, 0.5);
  const Expr *yy = add(a, add(a, sh, mul(a, expr_cast(a, t, ax[2]), bh)),
                       fdiv_(a, mul(a, add(a, expr_cast(a, t, r->iy.var), half), bh), grid));
  const Expr *xx = add(a, add(a, sw, mul(a, expr_cast(a, t, ax[3]), bw)),
                       fdiv_(a, mul(a, add(a, expr_cast(a, t, r->ix.var), half), bw), grid));
  const Expr *outside = or_(a, or_(a, lt(a, yy, fc(a, t, -1)), gt(a, yy, fc(a, t, (double)H))),
                            or_(a, lt(a, xx, fc(a, t, -1)), gt(a, xx, fc(a, t, (double)W))));
  const Expr *lo[2], *hi[2], *l[2];
  const Expr *cs[2] = {yy, xx};
  int64_t ext[2] = {H, W};
  for (int d = 0; d < 2; d++) {
    const Expr *c = expr_max(a, cs[d], fc(a, t, 0));
    const Expr *low = to_i64(a, c); /* c >= 0: truncation is the reference's int() */
    const Expr *at_end = ge(a, low, ic(a, ext[d] - 1));
    lo[d] = expr_select(a, at_end, ic(a, ext[d] - 1), low);
    hi[d] = expr_select(a, at_end, ic(a, ext[d] - 1), add(a, low, ic(a, 1)));
    c = expr_select(a, at_end, expr_cast(a, t, lo[d]), c);
    l[d] = sub(a, c, expr_cast(a, t, lo[d]));
    lo[d] = clampi(a, lo[d], ext[d]);
    hi[d] = clampi(a, hi[d], ext[d]);
  }
  const Expr *one = fc(a, t, 1), *zero = fc(a, t, 0);
  const Expr *hy = sub(a, one, l[0]), *hx = sub(a, one, l[1]);
  const Expr *w[4] = {mul(a, hy, hx), mul(a, hy, l[1]), mul(a, l[0], hx), mul(a, l[0], l[1])};
  const Expr *bidx[1] = {roi};
  const Expr *n = clampi(a, to_i64(a, te_load(a, r->bi, dup_idx(a, bidx, 1))), r->x->shape[0]);
  for (int k = 0; k < 4; k++) {
    const Expr *xi[4] = {n, ax[1], k < 2 ? lo[0] : hi[0], k % 2 == 0 ? lo[1] : hi[1]};
    const Expr *val = to_t(a, t, te_load(a, r->x, dup_idx(a, xi, 4)));
    v[k] = mul(a, expr_select(a, outside, zero, w[k]), val);
  }
}

static const Expr *roi_acc_body(Arena *a, const Expr *const *ax, void *user) {
  const RaArgs *r = user;
  const Expr *v[4];
  ra_sample(a, r, ax, v);
  IterVar axes[2] = {r->iy, r->ix};
  if (r->p.max_mode) return te_max(a, expr_max(a, expr_max(a, expr_max(a, v[0], v[1]), v[2]), v[3]), axes, 2, NULL);
  return te_sum(a, add(a, add(a, add(a, v[0], v[1]), v[2]), v[3]), axes, 2, NULL);
}

static const Expr *roi_out_body(Arena *a, const Expr *const *ax, void *user) {
  const RaArgs *r = user;
  const Expr *v = te_load(a, r->acc, ax);
  if (!r->p.max_mode) v = fdiv_(a, v, fc(a, r->t, (double)(r->p.sampling_ratio * r->p.sampling_ratio)));
  return to_t(a, r->x->dtype, v);
}

TeTensor *topi_roi_align(Arena *a, const char *name, const TeTensor *x, const TeTensor *rois,
                         const TeTensor *batch_indices, const TopiRoiAlignParams *p, LoomError *err) {
  const char *op = "RoiAlign";
  if (!op_check_name(op, name, err) || !check_float_op(op, "X", x, err) || !check_float_op(op, "rois", rois, err) ||
      !op_check_tensor(op, "batch_indices", batch_indices, err) || !check_rank(op, "X", x, 4, err) ||
      !check_rank(op, "rois", rois, 2, err) || !check_rank(op, "batch_indices", batch_indices, 1, err))
    return NULL;
  if (!p || p->out_h < 1 || p->out_w < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "RoiAlign: output_height and output_width must be >= 1");
    return NULL;
  }
  if (p->sampling_ratio < 1) {
    err_set(err, LOOM_ERR_UNSUPPORTED,
            "RoiAlign: sampling_ratio %lld is not supported (the adaptive grid of sampling_ratio 0 depends on the "
            "roi values; give a positive sampling_ratio)",
            (long long)p->sampling_ratio);
    return NULL;
  }
  if (rois->shape[1] != 4 || batch_indices->shape[0] != rois->shape[0] || !dtype_is_int(batch_indices->dtype)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "RoiAlign: rois must be [R, 4] and batch_indices an integer [R]");
    return NULL;
  }
  RaArgs r = {.x = x, .rois = rois, .bi = batch_indices, .p = *p, .t = x->dtype};
  r.iy = te_reduce_axis(a, "iy", p->sampling_ratio);
  r.ix = te_reduce_axis(a, "ix", p->sampling_ratio);
  int64_t shape[4] = {rois->shape[0], x->shape[1], p->out_h, p->out_w};
  r.acc = te_compute(a, op_stage(a, name, "acc"), 4, shape, roi_acc_body, &r, err);
  if (!r.acc) return NULL;
  return te_compute(a, name, 4, shape, roi_out_body, &r, err);
}

/* ---------------- DeformConv ---------------- */

typedef struct DcArgs {
  const TeTensor *x, *w, *off, *bias, *mask, *conv;
  int64_t st[2], pad[4], dil[2], group, og;
  IterVar rc, ri, rj;
} DcArgs;

/* X[n, c] sampled bilinearly at (h, w), zero outside (GridSample linear,
 * zeros padding, align_corners: what the reference calls). */
static const Expr *bilinear_zero(Arena *a, const TeTensor *x, const Expr *n, const Expr *c, const Expr *h,
                                 const Expr *w) {
  DType t = h->dtype;
  const Expr *pos[2] = {h, w}, *base[2], *frac[2];
  for (int d = 0; d < 2; d++) {
    const Expr *f = call1(a, CALL_FLOOR, pos[d]);
    base[d] = to_i64(a, f);
    frac[d] = sub(a, pos[d], f);
  }
  const Expr *sum = NULL;
  for (int k = 0; k < 4; k++) {
    const Expr *idx[4] = {n, c, NULL, NULL}, *in = NULL, *wt = NULL;
    for (int d = 0; d < 2; d++) {
      int bit = d == 0 ? k / 2 : k % 2;
      const Expr *i = add(a, base[d], ic(a, bit));
      int64_t ext = x->shape[2 + d];
      const Expr *ok = expr_and(a, ge(a, i, ic(a, 0)), lt(a, i, ic(a, ext)));
      in = in ? expr_and(a, in, ok) : ok;
      idx[2 + d] = clampi(a, i, ext);
      const Expr *wd = bit ? frac[d] : sub(a, fc(a, t, 1), frac[d]);
      wt = wt ? mul(a, wt, wd) : wd;
    }
    const Expr *v = expr_select(a, in, to_t(a, t, te_load(a, x, dup_idx(a, idx, 4))), fc(a, t, 0));
    const Expr *term = mul(a, wt, v);
    sum = sum ? add(a, sum, term) : term;
  }
  return sum;
}

static const Expr *deform_conv_body(Arena *a, const Expr *const *ax, void *user) {
  const DcArgs *d = user;
  const Expr *n = ax[0], *oc = ax[1], *oh = ax[2], *ow = ax[3];
  int64_t C = d->x->shape[1], cpg = d->w->shape[1], ocpg = d->w->shape[0] / d->group;
  int64_t kh = d->w->shape[2], kw = d->w->shape[3], cpog = C / d->og;
  DType t = d->x->dtype;
  const Expr *c = add(a, mul(a, expr_floordiv(a, oc, ic(a, ocpg)), ic(a, cpg)), d->rc.var);
  const Expr *og = expr_floordiv(a, c, ic(a, cpog));
  const Expr *tap = add(a, mul(a, d->ri.var, ic(a, kw)), d->rj.var);
  const Expr *ch = add(a, mul(a, og, ic(a, kh * kw * 2)), mul(a, tap, ic(a, 2)));
  const Expr *oi_h[4] = {n, ch, oh, ow}, *oi_w[4] = {n, add(a, ch, ic(a, 1)), oh, ow};
  const Expr *offh = to_t(a, t, te_load(a, d->off, dup_idx(a, oi_h, 4)));
  const Expr *offw = to_t(a, t, te_load(a, d->off, dup_idx(a, oi_w, 4)));
  const Expr *h = add(a, expr_cast(a, t, add(a, sub(a, mul(a, oh, ic(a, d->st[0])), ic(a, d->pad[0])),
                                             mul(a, d->ri.var, ic(a, d->dil[0])))),
                      offh);
  const Expr *w = add(a, expr_cast(a, t, add(a, sub(a, mul(a, ow, ic(a, d->st[1])), ic(a, d->pad[1])),
                                             mul(a, d->rj.var, ic(a, d->dil[1])))),
                      offw);
  const Expr *v = bilinear_zero(a, d->x, n, c, h, w);
  const Expr *wi[4] = {oc, d->rc.var, d->ri.var, d->rj.var};
  v = mul(a, v, to_t(a, t, te_load(a, d->w, dup_idx(a, wi, 4))));
  if (d->mask) {
    const Expr *mi[4] = {n, add(a, mul(a, og, ic(a, kh * kw)), tap), oh, ow};
    v = mul(a, v, to_t(a, t, te_load(a, d->mask, dup_idx(a, mi, 4))));
  }
  IterVar axes[3] = {d->rc, d->ri, d->rj};
  return te_sum(a, v, axes, 3, NULL);
}

static const Expr *deform_bias_body(Arena *a, const Expr *const *ax, void *user) {
  const DcArgs *d = user;
  const Expr *bi[1] = {ax[1]};
  return add(a, te_load(a, d->conv, ax), te_load(a, d->bias, dup_idx(a, bi, 1)));
}

TeTensor *topi_deform_conv(Arena *a, const char *name, const TeTensor *x, const TeTensor *w,
                           const TeTensor *offset, const TeTensor *bias, const TeTensor *mask,
                           const TopiDeformConvParams *p, LoomError *err) {
  const char *op = "DeformConv";
  if (!op_check_name(op, name, err) || !check_float_op(op, "X", x, err) || !check_float_op(op, "W", w, err) ||
      !check_float_op(op, "offset", offset, err) || !check_rank(op, "X", x, 4, err) || !check_rank(op, "W", w, 4, err) ||
      !check_rank(op, "offset", offset, 4, err))
    return NULL;
  DcArgs d = {.x = x, .w = w, .off = offset, .bias = bias, .mask = mask};
  for (int k = 0; k < 2; k++) {
    d.st[k] = p && p->strides[k] > 0 ? p->strides[k] : 1;
    d.dil[k] = p && p->dilations[k] > 0 ? p->dilations[k] : 1;
  }
  for (int k = 0; k < 4; k++) d.pad[k] = p ? p->pads[k] : 0;
  d.group = p && p->group > 0 ? p->group : 1;
  d.og = p && p->offset_group > 0 ? p->offset_group : 1;
  int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], Wd = x->shape[3];
  int64_t OC = w->shape[0], kh = w->shape[2], kw = w->shape[3];
  if (C != w->shape[1] * d.group || OC % d.group || C % d.og) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "DeformConv: X has %lld channels, W is [%lld, %lld, ...], group %lld, offset_group %lld: inconsistent",
            (long long)C, (long long)OC, (long long)w->shape[1], (long long)d.group, (long long)d.og);
    return NULL;
  }
  int64_t oh = (H + d.pad[0] + d.pad[2] - ((kh - 1) * d.dil[0] + 1)) / d.st[0] + 1;
  int64_t ow = (Wd + d.pad[1] + d.pad[3] - ((kw - 1) * d.dil[1] + 1)) / d.st[1] + 1;
  if (oh < 1 || ow < 1 || offset->shape[0] != N || offset->shape[1] != d.og * kh * kw * 2 || offset->shape[2] != oh ||
      offset->shape[3] != ow) {
    err_set(err, LOOM_ERR_INVALID_ARG, "DeformConv: offset (\"%s\") must be [%lld, %lld, %lld, %lld]", offset->name,
            (long long)N, (long long)(d.og * kh * kw * 2), (long long)oh, (long long)ow);
    return NULL;
  }
  if (bias && (bias->ndim != 1 || bias->shape[0] != OC || !dtype_eq(bias->dtype, x->dtype))) {
    err_set(err, LOOM_ERR_INVALID_ARG, "DeformConv: B (\"%s\") must be [%lld] of X's dtype", bias->name, (long long)OC);
    return NULL;
  }
  if (mask && (mask->ndim != 4 || mask->shape[0] != N || mask->shape[1] != d.og * kh * kw || mask->shape[2] != oh ||
               mask->shape[3] != ow)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "DeformConv: mask (\"%s\") must be [%lld, %lld, %lld, %lld]", mask->name,
            (long long)N, (long long)(d.og * kh * kw), (long long)oh, (long long)ow);
    return NULL;
  }
  d.rc = te_reduce_axis(a, "rc", w->shape[1]);
  d.ri = te_reduce_axis(a, "ri", kh);
  d.rj = te_reduce_axis(a, "rj", kw);
  int64_t shape[4] = {N, OC, oh, ow};
  TeTensor *conv = te_compute(a, bias ? op_stage(a, name, "conv") : name, 4, shape, deform_conv_body, &d, err);
  if (!conv || !bias) return conv;
  d.conv = conv;
  return te_compute(a, name, 4, shape, deform_bias_body, &d, err);
}

/* ---------------- BitCast ---------------- */

typedef struct BcArgs {
  const TeTensor *x;
  DType to;
  bool convert; /* integer <-> integer (and bool -> u8/i8): a wrapping conversion is the bit cast */
} BcArgs;

static const Expr *bit_cast_body(Arena *a, const Expr *const *ax, void *user) {
  const BcArgs *b = user;
  const Expr *v = te_load(a, b->x, ax);
  if (dtype_eq(v->dtype, b->to)) return v;
  if (b->convert) return expr_cast(a, b->to, v);
  return expr_call(a, CALL_REINTERPRET, b->to, &v, 1);
}

TeTensor *topi_bit_cast(Arena *a, const char *name, const TeTensor *x, DType to, LoomError *err) {
  const char *op = "BitCast";
  if (!op_check_name(op, name, err) || !op_check_tensor(op, "input", x, err)) return NULL;
  DType s = x->dtype;
  int sb = dtype_is_bool(s) ? 8 : s.bits, tb = dtype_is_bool(to) ? 8 : to.bits;
  char b1[16], b2[16];
  bool plain = (dtype_is_int(s) || dtype_is_bool(s) || (s.code == DT_FLOAT && s.bits >= 32)) &&
               (dtype_is_int(to) || dtype_is_bool(to) || (to.code == DT_FLOAT && to.bits >= 32));
  if (sb != tb || !plain || s.lanes != 1 || to.lanes != 1) {
    err_set(err, sb != tb ? LOOM_ERR_INVALID_ARG : LOOM_ERR_UNSUPPORTED, "BitCast: %s (%d bits) to %s (%d bits) is %s",
            dtype_str(s, b1), sb, dtype_str(to, b2), tb, sb != tb ? "not a same-width cast" : "not supported");
    return NULL;
  }
  /* A bool holds 0 or 1: any other byte is not a bool, so only bool -> int. */
  if (dtype_is_bool(to) && !dtype_is_bool(s)) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "BitCast: %s to bool is not supported (a bool byte must be 0 or 1)",
            dtype_str(s, b1));
    return NULL;
  }
  BcArgs b = {x, to, (dtype_is_int(s) || dtype_is_bool(s)) && dtype_is_int(to)};
  return te_compute(a, name, x->ndim, x->shape, bit_cast_body, &b, err);
}
