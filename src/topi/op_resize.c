/* Resize (ONNX opset 11+): nearest on any axis, linear on the last two.
 * Coordinates are computed in f32, as ONNX Runtime does, so the source
 * index of every output element agrees with it exactly. */
#include "topi/op_internal.h"

#include <math.h>
#include <string.h>

typedef struct ResizeArgs {
  const TeTensor *x;
  int64_t out[TOPI_MAX_RANK];
  double scale[TOPI_MAX_RANK];
  TopiResizeMode mode;
  TopiResizeCoord coord;
  TopiResizeNearest nearest;
} ResizeArgs;

static const Expr *f32c(Arena *a, double v) { return expr_float(a, DT_F32, v); }

static const Expr *call1(Arena *a, CallOp op, const Expr *v) { return expr_call(a, op, DT_F32, &v, 1); }

/* The input coordinate (f32) of output index o along axis d. */
static const Expr *source_coord(Arena *a, const ResizeArgs *r, int d, const Expr *o) {
  int64_t in = r->x->shape[d], out = r->out[d];
  const Expr *of = expr_cast(a, DT_F32, o);
  switch (r->coord) {
    case TOPI_COORD_ASYMMETRIC: return expr_binary(a, EXPR_DIV, of, f32c(a, r->scale[d]));
    case TOPI_COORD_ALIGN_CORNERS:
      if (out == 1) return f32c(a, 0);
      return expr_mul(a, of, f32c(a, (float)(in - 1) / (float)(out - 1)));
    case TOPI_COORD_PYTORCH_HALF_PIXEL:
      if (out == 1) return f32c(a, 0);
      /* fall through */
    case TOPI_COORD_HALF_PIXEL:
      return expr_sub(a, expr_binary(a, EXPR_DIV, expr_add(a, of, f32c(a, 0.5)), f32c(a, r->scale[d])),
                      f32c(a, 0.5));
  }
  return NULL;
}

static const Expr *clamp_index(Arena *a, const Expr *i, int64_t n) {
  return expr_min(a, expr_max(a, i, expr_i64(a, 0)), expr_i64(a, n - 1));
}

static const Expr *nearest_index(Arena *a, const ResizeArgs *r, int d, const Expr *o) {
  if (r->out[d] == r->x->shape[d] && r->scale[d] == 1.0) return o;
  const Expr *c = source_coord(a, r, d, o), *n;
  switch (r->nearest) {
    case TOPI_NEAREST_ROUND_PREFER_CEIL: n = call1(a, CALL_FLOOR, expr_add(a, c, f32c(a, 0.5))); break;
    case TOPI_NEAREST_FLOOR: n = call1(a, CALL_FLOOR, c); break;
    case TOPI_NEAREST_CEIL: n = call1(a, CALL_CEIL, c); break;
    default: n = call1(a, CALL_CEIL, expr_sub(a, c, f32c(a, 0.5))); break;
  }
  return clamp_index(a, expr_cast(a, DT_I64, n), r->x->shape[d]);
}

static const Expr *nearest_body(Arena *a, const Expr *const *ax, void *user) {
  ResizeArgs *r = user;
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < r->x->ndim; d++) idx[d] = nearest_index(a, r, d, ax[d]);
  return te_load(a, r->x, idx);
}

/* Linear along axis d: lo, hi indices and the weight of hi (ORT's rule:
 * the coordinate is clamped into [0, n-1] first). */
static void linear_axis(Arena *a, const ResizeArgs *r, int d, const Expr *o, const Expr **lo,
                        const Expr **hi, const Expr **w) {
  int64_t n = r->x->shape[d];
  const Expr *c = source_coord(a, r, d, o);
  c = expr_min(a, expr_max(a, c, f32c(a, 0)), f32c(a, (double)(n - 1)));
  *lo = expr_cast(a, DT_I64, c); /* c >= 0: truncation is floor */
  *hi = expr_min(a, expr_add(a, *lo, expr_i64(a, 1)), expr_i64(a, n - 1));
  *w = expr_sub(a, c, expr_cast(a, DT_F32, *lo));
}

static const Expr *linear_body(Arena *a, const Expr *const *ax, void *user) {
  ResizeArgs *r = user;
  int R = r->x->ndim;
  const Expr *ylo, *yhi, *wy, *xlo, *xhi, *wx;
  linear_axis(a, r, R - 2, ax[R - 2], &ylo, &yhi, &wy);
  linear_axis(a, r, R - 1, ax[R - 1], &xlo, &xhi, &wx);
  const Expr *idx[TOPI_MAX_RANK];
  memcpy(idx, ax, sizeof(*idx) * (size_t)R);
  const Expr *v[4];
  for (int k = 0; k < 4; k++) {
    idx[R - 2] = k < 2 ? ylo : yhi;
    idx[R - 1] = k % 2 == 0 ? xlo : xhi;
    const Expr *const *cp = arena_memdup(a, idx, sizeof(*idx) * (size_t)R);
    v[k] = te_load(a, r->x, cp);
  }
  const Expr *one = f32c(a, 1);
  const Expr *top = expr_add(a, expr_mul(a, expr_sub(a, one, wx), v[0]), expr_mul(a, wx, v[1]));
  const Expr *bot = expr_add(a, expr_mul(a, expr_sub(a, one, wx), v[2]), expr_mul(a, wx, v[3]));
  return expr_add(a, expr_mul(a, expr_sub(a, one, wy), top), expr_mul(a, wy, bot));
}

TeTensor *topi_resize(Arena *a, const char *name, const TeTensor *x, const int64_t *out_shape,
                      const double *scales, TopiResizeMode mode, TopiResizeCoord coord,
                      TopiResizeNearest nearest, LoomError *err) {
  const char *on = "Resize";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "X", x, err)) return NULL;
  if (!dtype_eq(x->dtype, DT_F32)) {
    char b[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "Resize: X has dtype %s, only f32 is supported", dtype_str(x->dtype, b));
    return NULL;
  }
  if (!out_shape || x->ndim < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Resize: needs the output shape and an input of rank >= 1");
    return NULL;
  }
  if ((unsigned)mode > TOPI_RESIZE_LINEAR || (unsigned)coord > TOPI_COORD_ALIGN_CORNERS ||
      (unsigned)nearest > TOPI_NEAREST_CEIL) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Resize: unknown mode, coordinate transform or nearest mode");
    return NULL;
  }
  ResizeArgs r = {.x = x, .mode = mode, .coord = coord, .nearest = nearest};
  for (int d = 0; d < x->ndim; d++) {
    r.out[d] = out_shape[d];
    r.scale[d] = scales ? scales[d] : (double)((float)out_shape[d] / (float)x->shape[d]);
    if (out_shape[d] < 1 || !(r.scale[d] > 0)) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Resize: axis %d has output extent %lld and scale %g; expected >= 1 and > 0",
              d, (long long)out_shape[d], r.scale[d]);
      return NULL;
    }
    if (mode == TOPI_RESIZE_LINEAR && d < x->ndim - 2 && out_shape[d] != x->shape[d]) {
      err_set(err, LOOM_ERR_UNSUPPORTED, "Resize: linear mode resizes only the last two axes (axis %d changes)", d);
      return NULL;
    }
  }
  if (mode == TOPI_RESIZE_LINEAR && x->ndim < 2) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "Resize: linear mode needs rank >= 2");
    return NULL;
  }
  return te_compute(a, name, x->ndim, r.out, mode == TOPI_RESIZE_NEAREST ? nearest_body : linear_body,
                    &r, err);
}
