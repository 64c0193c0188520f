/* Resize (ONNX opset 11+) on any axes: nearest, linear and cubic, with
 * every coordinate transform, antialiasing and exclude_outside.
 *
 * Nearest is one gather stage; its coordinates are computed in f32, as
 * ONNX Runtime does, so the source index of every output element agrees
 * with it exactly. Linear and cubic follow ONNX's reference implementation:
 * the interpolation is separable, so each resized axis is one f64 stage
 * that sums n filter taps around the source coordinate x:
 *
 *   out[.., o, ..] = sum_k w_k * in[.., clamp(i_k), ..],   i_k = floor(x) - n/2 + 1 + k,
 *   w_k = f((i_k - x) * s)
 *
 * with f the tent (linear) or Keys cubic kernel and s = 1, or min(scale, 1)
 * when antialiasing (which also widens the footprint n to cover the
 * stretched kernel). Antialiased and exclude_outside weights are divided by
 * their sum, a 1-D stage over o. Out-of-range taps read the edge (the
 * reference pads by replication). */
#include "topi/op_internal.h"

#include <math.h>
#include <string.h>

typedef struct ResizeArgs {
  const TeTensor *x, *wsum;
  TopiResizeParams p;
  int64_t out[TOPI_MAX_RANK];
  double scale[TOPI_MAX_RANK], out_w[TOPI_MAX_RANK]; /* out_w: scale * in (fractional) */
  double roi[2 * TOPI_MAX_RANK];
  int axis;        /* the axis a separable stage resizes */
  int taps;        /* its footprint n */
  double s;        /* its kernel scale */
  bool normalize;
  IterVar k;
} ResizeArgs;

static const Expr *cst(Arena *a, DType t, double v) { return expr_float(a, t, dtype_eq(t, DT_F32) ? (double)(float)v : v); }

static const Expr *call1(Arena *a, CallOp op, const Expr *v) { return expr_call(a, op, v->dtype, &v, 1); }

/* tf_crop_and_resize's coordinate with the region read at run time: the
 * same arithmetic as with a constant roi, the two coefficients computed in
 * f64 and rounded to t once, as cst() rounds the constant ones. */
static const Expr *runtime_roi_coord(Arena *a, const ResizeArgs *r, int d, const Expr *of, DType t) {
  int64_t in = r->x->shape[d];
  double ow = r->out_w[d];
  const Expr *i0 = expr_i64(a, r->p.roi_at[d]), *i1 = expr_i64(a, r->p.roi_at[d] + r->p.roi_count);
  const Expr *r0 = expr_cast(a, DT_F64, te_load(a, r->p.roi_tensor, &i0));
  const Expr *r1 = expr_cast(a, DT_F64, te_load(a, r->p.roi_tensor, &i1));
  const Expr *span = expr_mul(a, expr_sub(a, r1, r0), cst(a, DT_F64, (double)(in - 1)));
  const Expr *k = expr_binary(a, EXPR_DIV, span, cst(a, DT_F64, ow == 1 ? 2 : ow - 1));
  const Expr *b = expr_mul(a, r0, cst(a, DT_F64, (double)(in - 1)));
  k = expr_cast(a, t, k);
  b = expr_cast(a, t, b);
  return expr_add(a, ow == 1 ? k : expr_mul(a, of, k), b);
}

/* The input coordinate (dtype t) of output index o along axis d. */
static const Expr *source_coord(Arena *a, const ResizeArgs *r, int d, const Expr *o, DType t) {
  int64_t in = r->x->shape[d];
  double ow = r->out_w[d], sc = r->scale[d];
  bool f32 = dtype_eq(t, DT_F32);
  const Expr *of = expr_cast(a, t, o);
  const Expr *half = expr_sub(a, expr_binary(a, EXPR_DIV, expr_add(a, of, cst(a, t, 0.5)), cst(a, t, sc)), cst(a, t, 0.5));
  switch (r->p.coord) {
    case TOPI_COORD_ASYMMETRIC: return expr_binary(a, EXPR_DIV, of, cst(a, t, sc));
    case TOPI_COORD_ALIGN_CORNERS:
      if (ow == 1) return cst(a, t, 0);
      return expr_mul(a, of, cst(a, t, f32 ? (double)((float)(in - 1) / (float)(ow - 1)) : (double)(in - 1) / (ow - 1)));
    case TOPI_COORD_PYTORCH_HALF_PIXEL: return ow == 1 ? cst(a, t, 0) : half;
    case TOPI_COORD_HALF_PIXEL: return half;
    case TOPI_COORD_HALF_PIXEL_SYMMETRIC: {
      double adjustment = (double)r->out[d] / ow, center = (double)in / 2;
      return expr_add(a, cst(a, t, center * (1 - adjustment)), half);
    }
    case TOPI_COORD_TF_CROP_AND_RESIZE: {
      if (r->p.roi_tensor && r->p.roi_at[d] >= 0) return runtime_roi_coord(a, r, d, of, t);
      double r0 = r->roi[d], r1 = r->roi[r->x->ndim + d];
      const Expr *c = ow == 1 ? cst(a, t, (r1 - r0) * (double)(in - 1) / 2)
                              : expr_mul(a, of, cst(a, t, (r1 - r0) * (double)(in - 1) / (ow - 1)));
      return expr_add(a, c, cst(a, t, r0 * (double)(in - 1)));
    }
  }
  return NULL;
}

/* tf_crop_and_resize: the coordinate falls outside [0, in - 1]. */
static const Expr *extrapolated(Arena *a, const ResizeArgs *r, int d, const Expr *c) {
  return expr_binary(a, EXPR_OR, expr_lt(a, c, cst(a, c->dtype, 0)),
                 expr_binary(a, EXPR_GT, c, cst(a, c->dtype, (double)(r->x->shape[d] - 1))));
}

static const Expr *clamp_index(Arena *a, const Expr *i, int64_t n) {
  return expr_min(a, expr_max(a, i, expr_i64(a, 0)), expr_i64(a, n - 1));
}

/* An axis left alone: same extent, scale 1 and (tf_crop_and_resize) the
 * whole input as the region. */
static bool axis_unchanged(const ResizeArgs *r, int d) {
  bool whole = r->p.coord != TOPI_COORD_TF_CROP_AND_RESIZE ||
               (r->roi[d] == 0 && r->roi[r->x->ndim + d] == 1 && !(r->p.roi_tensor && r->p.roi_at[d] >= 0));
  return r->out[d] == r->x->shape[d] && r->scale[d] == 1.0 && whole;
}

static const Expr *nearest_body(Arena *a, const Expr *const *ax, void *user) {
  ResizeArgs *r = user;
  const Expr *idx[TOPI_MAX_RANK] = {0}, *outside = NULL;
  for (int d = 0; d < r->x->ndim; d++) {
    if (axis_unchanged(r, d)) {
      idx[d] = ax[d];
      continue;
    }
    const Expr *c = source_coord(a, r, d, ax[d], DT_F32), *n;
    if (r->p.coord == TOPI_COORD_TF_CROP_AND_RESIZE) {
      const Expr *e = extrapolated(a, r, d, c);
      outside = outside ? expr_binary(a, EXPR_OR, outside, e) : e;
    }
    switch (r->p.nearest) {
      case TOPI_NEAREST_ROUND_PREFER_CEIL: n = call1(a, CALL_FLOOR, expr_add(a, c, cst(a, DT_F32, 0.5))); break;
      case TOPI_NEAREST_FLOOR: n = call1(a, CALL_FLOOR, c); break;
      case TOPI_NEAREST_CEIL: n = call1(a, CALL_CEIL, c); break;
      default: n = call1(a, CALL_CEIL, expr_sub(a, c, cst(a, DT_F32, 0.5))); break;
    }
    idx[d] = clamp_index(a, expr_cast(a, DT_I64, n), r->x->shape[d]);
  }
  const Expr *v = te_load(a, r->x, idx);
  return outside ? expr_select(a, outside, op_const(a, v->dtype, r->p.extrapolation_value), v) : v;
}

/* The filter kernel at distance t (f64). */
static const Expr *kernel_at(Arena *a, const ResizeArgs *r, const Expr *t) {
  const Expr *u = call1(a, CALL_FABS, t), *one = cst(a, DT_F64, 1);
  if (r->p.mode == TOPI_RESIZE_LINEAR) return expr_max(a, expr_sub(a, one, u), cst(a, DT_F64, 0));
  double A = r->p.cubic_a;
  const Expr *u2 = expr_mul(a, u, u), *u3 = expr_mul(a, u2, u);
  const Expr *near = expr_add(a, expr_sub(a, expr_mul(a, cst(a, DT_F64, A + 2), u3), expr_mul(a, cst(a, DT_F64, A + 3), u2)), one);
  const Expr *far = expr_sub(a, expr_add(a, expr_sub(a, expr_mul(a, cst(a, DT_F64, A), u3), expr_mul(a, cst(a, DT_F64, 5 * A), u2)),
                                         expr_mul(a, cst(a, DT_F64, 8 * A), u)),
                             cst(a, DT_F64, 4 * A));
  return expr_select(a, expr_binary(a, EXPR_LE, u, one), near,
                     expr_select(a, expr_lt(a, u, cst(a, DT_F64, 2)), far, cst(a, DT_F64, 0)));
}

/* Tap k (the reduce variable) around output index o: its input index
 * (unclamped), its weight (zero outside the input with exclude_outside),
 * and the coordinate. */
static void tap(Arena *a, const ResizeArgs *r, const Expr *o, const Expr **idx, const Expr **w, const Expr **coord) {
  int d = r->axis;
  const Expr *c = source_coord(a, r, d, o, DT_F64);
  const Expr *base = expr_cast(a, DT_I64, call1(a, CALL_FLOOR, c));
  *idx = expr_add(a, base, expr_add(a, r->k.var, expr_i64(a, 1 - r->taps / 2)));
  *w = kernel_at(a, r, expr_mul(a, expr_sub(a, expr_cast(a, DT_F64, *idx), c), cst(a, DT_F64, r->s)));
  if (r->p.exclude_outside) {
    const Expr *in = expr_and(a, expr_binary(a, EXPR_GE, *idx, expr_i64(a, 0)), expr_lt(a, *idx, expr_i64(a, r->x->shape[d])));
    *w = expr_select(a, in, *w, cst(a, DT_F64, 0));
  }
  *coord = c;
}

static const Expr *wsum_body(Arena *a, const Expr *const *ax, void *user) {
  ResizeArgs *r = user;
  const Expr *idx, *w, *c;
  tap(a, r, ax[0], &idx, &w, &c);
  return te_sum(a, w, &r->k, 1, NULL);
}

static const Expr *axis_body(Arena *a, const Expr *const *ax, void *user) {
  ResizeArgs *r = user;
  int d = r->axis;
  const Expr *idx, *w, *c;
  tap(a, r, ax[d], &idx, &w, &c);
  if (r->normalize) w = expr_binary(a, EXPR_DIV, w, te_load(a, r->wsum, &ax[d]));
  const Expr *xi[TOPI_MAX_RANK];
  memcpy(xi, ax, sizeof(*xi) * (size_t)r->x->ndim);
  xi[d] = clamp_index(a, idx, r->x->shape[d]);
  const Expr *v = te_load(a, r->x, xi);
  if (!dtype_eq(v->dtype, DT_F64)) v = expr_cast(a, DT_F64, v);
  const Expr *term = expr_mul(a, w, v);
  if (r->p.coord == TOPI_COORD_TF_CROP_AND_RESIZE) {
    /* Outside the input the sum is the extrapolation value (its tap 0). */
    const Expr *first = expr_binary(a, EXPR_EQ, r->k.var, expr_i64(a, 0));
    const Expr *ex = expr_select(a, first, cst(a, DT_F64, r->p.extrapolation_value), cst(a, DT_F64, 0));
    term = expr_select(a, extrapolated(a, r, d, c), ex, term);
  }
  return te_sum(a, term, &r->k, 1, NULL);
}

static const Expr *cast_body(Arena *a, const Expr *const *ax, void *user) {
  ResizeArgs *r = user;
  const Expr *v = te_load(a, r->wsum, ax);
  return dtype_eq(v->dtype, r->x->dtype) ? v : expr_cast(a, r->x->dtype, v);
}

/* The footprint of the (stretched) kernel: taps with nonzero weight. */
static int footprint(const ResizeArgs *r) {
  double support = r->p.mode == TOPI_RESIZE_CUBIC ? 2 : 1;
  int64_t start = (int64_t)floor(-support / r->s) + 1;
  return (int)(2 - 2 * start);
}

TeTensor *topi_resize_ex(Arena *a, const char *name, const TeTensor *x, const TopiResizeParams *p, LoomError *err) {
  const char *on = "Resize";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "X", x, err)) return NULL;
  if (!p || !p->out_shape || x->ndim < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Resize: needs the output shape and an input of rank >= 1");
    return NULL;
  }
  if ((unsigned)p->mode > TOPI_RESIZE_CUBIC || (unsigned)p->coord > TOPI_COORD_TF_CROP_AND_RESIZE ||
      (unsigned)p->nearest > TOPI_NEAREST_CEIL || (p->coord == TOPI_COORD_TF_CROP_AND_RESIZE && !p->roi)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Resize: unknown mode, coordinate transform or nearest mode (or no roi)");
    return NULL;
  }
  if (p->mode != TOPI_RESIZE_NEAREST && !op_check_float(on, "X", x, err)) return NULL;
  ResizeArgs r = {.x = x, .p = *p};
  for (int d = 0; d < x->ndim; d++) {
    r.out[d] = p->out_shape[d];
    r.scale[d] = p->scales ? p->scales[d] : (double)p->out_shape[d] / (double)x->shape[d];
    r.out_w[d] = p->scales ? r.scale[d] * (double)x->shape[d] : (double)p->out_shape[d];
    r.roi[d] = p->roi ? p->roi[d] : 0, r.roi[x->ndim + d] = p->roi ? p->roi[x->ndim + d] : 1;
    if (p->mode == TOPI_RESIZE_NEAREST && !p->scales) /* ORT's nearest scale: f32 out / in */
      r.scale[d] = (double)((float)p->out_shape[d] / (float)x->shape[d]);
    if (p->out_shape[d] < 1 || !(r.scale[d] > 0)) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Resize: axis %d has output extent %lld and scale %g; expected >= 1 and > 0",
              d, (long long)p->out_shape[d], r.scale[d]);
      return NULL;
    }
  }
  if (p->mode == TOPI_RESIZE_NEAREST) return te_compute(a, name, x->ndim, r.out, nearest_body, &r, err);
  /* Separable: one f64 stage per resized axis, then the cast back. */
  const TeTensor *cur = x;
  int64_t shape[TOPI_MAX_RANK];
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
  for (int d = 0; d < x->ndim; d++) {
    if (axis_unchanged(&r, d)) continue;
    ResizeArgs ar = r;
    ar.x = cur, ar.axis = d;
    ar.s = p->antialias && r.scale[d] < 1 ? r.scale[d] : 1;
    ar.taps = footprint(&ar);
    ar.normalize = p->antialias || p->exclude_outside;
    if (ar.taps < 2 || ar.taps > 4096) {
      err_set(err, LOOM_ERR_UNSUPPORTED, "Resize: axis %d needs %d filter taps", d, ar.taps);
      return NULL;
    }
    ar.k = te_reduce_axis(a, "k", ar.taps);
    shape[d] = r.out[d];
    const char *sname = arena_printf(a, "%s_ax%d", name, d);
    if (ar.normalize) {
      TeTensor *ws = te_compute(a, arena_printf(a, "%s_w", sname), 1, &r.out[d], wsum_body, &ar, err);
      if (!(ar.wsum = ws)) return NULL;
    }
    TeTensor *next = te_compute(a, sname, x->ndim, shape, axis_body, &ar, err);
    if (!next) return NULL;
    cur = next;
  }
  r.wsum = cur; /* the cast stage reads the last axis stage (or x) */
  return te_compute(a, name, x->ndim, r.out, cast_body, &r, err);
}

TeTensor *topi_resize(Arena *a, const char *name, const TeTensor *x, const int64_t *out_shape,
                      const double *scales, TopiResizeMode mode, TopiResizeCoord coord,
                      TopiResizeNearest nearest, LoomError *err) {
  TopiResizeParams p = {.out_shape = out_shape, .scales = scales, .mode = mode, .coord = coord, .nearest = nearest,
                        .cubic_a = -0.75};
  return topi_resize_ex(a, name, x, &p, err);
}
