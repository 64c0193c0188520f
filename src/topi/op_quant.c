/* Quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger, QLinearMatMul, QLinearConv (the numerics are in
 * topi_ops_quant.h). Integer products reuse topi_matmul_nd and
 * topi_conv_integer_nd (int32 operand stages). */
#include "topi/op_internal.h"

#include <string.h>

/* ---- helpers ---- */

static const Expr *as(Arena *a, DType t, const Expr *e) { return dtype_eq(e->dtype, t) ? e : expr_cast(a, t, e); }

/* x op y evaluated in dtype t as numpy does: a narrow float (f16...) is
 * computed in f32 and rounded to t. */
static const Expr *arith_in(Arena *a, ExprKind k, DType t, const Expr *x, const Expr *y) {
  DType c = dtype_compute_type(t);
  const Expr *r = expr_binary(a, k, as(a, c, x), as(a, c, y));
  return dtype_is_narrow(t) ? expr_cast(a, t, r) : r;
}

static void int_range(DType t, int64_t *lo, int64_t *hi) {
  if (t.code == DT_UINT) {
    *lo = 0;
    *hi = (int64_t)((1ULL << t.bits) - 1);
  } else {
    *hi = (int64_t)((1ULL << (t.bits - 1)) - 1);
    *lo = -*hi - 1;
  }
}

static bool is_quant_int(DType t) { return dtype_is_int(t) && t.bits <= 16 && t.lanes == 1; }

/* f32, f64, f16, bf16 */
static bool is_real(DType t) { return (t.code == DT_FLOAT || t.code == DT_BFLOAT) && t.bits >= 16; }

static bool fail_dtype(const char *on, const char *what, const TeTensor *t, const char *expected, LoomError *err) {
  char b[16];
  err_set(err, LOOM_ERR_UNSUPPORTED, "%s: %s (\"%s\") has dtype %s, expected %s", on, what, t->name,
          dtype_str(t->dtype, b), expected);
  return false;
}

/* rint(v) clamped to the range of integer dtype `out`, converted as numpy
 * does on x86: v (f32 or f64) -> int32 gives INT32_MIN for NaN and values
 * outside int32, then + zp (int64 here: no wrap), clamp, cast. */
static const Expr *requantize(Arena *a, const Expr *v, const Expr *zp, DType out) {
  DType ft = v->dtype;
  const Expr *r = expr_call(a, CALL_ROUND, ft, &v, 1);
  const Expr *lo32 = op_const(a, ft, -2147483648.0), *hi32 = op_const(a, ft, 2147483648.0);
  const Expr *ok = expr_and(a, expr_binary(a, EXPR_GE, r, lo32), expr_lt(a, r, hi32));
  const Expr *ri = expr_cast(a, DT_I64, expr_select(a, ok, r, lo32));
  if (zp) ri = expr_add(a, ri, as(a, DT_I64, zp));
  int64_t lo, hi;
  int_range(out, &lo, &hi);
  ri = expr_max(a, expr_min(a, ri, expr_i64(a, hi)), expr_i64(a, lo));
  return expr_cast(a, out, ri);
}

/* ---- scales and zero points: per tensor, per axis, blocked ---- */

typedef enum QMode { Q_TENSOR, Q_AXIS, Q_BLOCK } QMode;

typedef struct QParam {
  const TeTensor *t; /* NULL: absent */
  QMode mode;
  int axis;
  int64_t block;
} QParam;

static bool qparam(const char *on, const char *what, const TeTensor *t, const TeTensor *x, int axis, int64_t block,
                   QParam *q, LoomError *err) {
  q->t = t;
  q->mode = Q_TENSOR;
  q->axis = axis;
  q->block = block;
  if (!t || op_numel(t->ndim, t->shape) == 1) return true;
  if (block <= 0) {
    if (t->ndim != 1 || t->shape[0] != x->shape[axis]) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s (\"%s\") must have one element or %lld (per axis %d); got rank %d", on,
              what, t->name, (long long)x->shape[axis], axis, t->ndim);
      return false;
    }
    q->mode = Q_AXIS;
    return true;
  }
  bool ok = t->ndim == x->ndim;
  for (int d = 0; ok && d < x->ndim; d++)
    ok = t->shape[d] == (d == axis ? (x->shape[d] + block - 1) / block : x->shape[d]);
  if (!ok) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "%s: %s (\"%s\") must have x's shape with ceil(%lld / block_size %lld) along axis %d (blocked)", on, what,
            t->name, (long long)x->shape[axis], (long long)block, axis);
    return false;
  }
  q->mode = Q_BLOCK;
  return true;
}

/* The parameter for the element of x at ax. */
static const Expr *qload(Arena *a, const QParam *q, const Expr *const *ax) {
  const Expr *idx[TOPI_MAX_RANK];
  int n = q->t->ndim;
  for (int d = 0; d < n; d++) {
    if (q->mode == Q_TENSOR) idx[d] = expr_i64(a, 0);
    else if (q->mode == Q_AXIS) idx[d] = ax[q->axis];
    else idx[d] = d == q->axis ? expr_floordiv(a, ax[d], expr_i64(a, q->block)) : ax[d];
  }
  return te_load(a, q->t, idx);
}

static bool setup(const char *on, const char *name, const TeTensor *x, const TeTensor *scale, const TeTensor *zp,
                  int64_t axis, int64_t block, QParam *qs, QParam *qz, LoomError *err) {
  int ax;
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "x", x, err) || !op_check_tensor(on, "scale", scale, err) ||
      (zp && !op_check_tensor(on, "zero_point", zp, err)))
    return false;
  if (!is_real(scale->dtype)) return fail_dtype(on, "scale", scale, "f32, f16 or bf16", err);
  /* the axis matters only to per-axis and blocked parameters */
  bool per_tensor = op_numel(scale->ndim, scale->shape) == 1 && (!zp || op_numel(zp->ndim, zp->shape) == 1);
  if (per_tensor) ax = 0;
  else if (!op_axis(on, "axis", axis, x->ndim, false, &ax, err)) return false;
  return qparam(on, "scale", scale, x, ax, block, qs, err) && qparam(on, "zero_point", zp, x, ax, block, qz, err);
}

/* ---- QuantizeLinear ---- */

typedef struct QuantArgs {
  const TeTensor *x;
  QParam scale, zp;
  DType out, prec;
  bool saturate;
} QuantArgs;

static const Expr *quant_body(Arena *a, const Expr *const *ax, void *user) {
  QuantArgs *q = user;
  const Expr *v = arith_in(a, EXPR_DIV, q->prec, te_load(a, q->x, ax), qload(a, &q->scale, ax));
  const Expr *zp = q->zp.t ? qload(a, &q->zp, ax) : NULL;
  DType wide = q->prec.code == DT_FLOAT && q->prec.bits == 64 ? DT_F64 : DT_F32;
  if (dtype_is_int(q->out)) return requantize(a, as(a, wide, v), zp, q->out);
  if (q->out.code == DT_F4E2M1) { /* no inf/NaN: the cast saturates by itself */
    v = as(a, DT_F32, v);
    if (zp) v = expr_add(a, v, as(a, DT_F32, zp));
    return expr_cast(a, q->out, v);
  }
  return op_cast_value(a, v, q->out, q->saturate); /* 8-bit floats: the zero point is 0 */
}

TeTensor *topi_quantize_linear(Arena *a, const char *name, const TeTensor *x, const TeTensor *scale, const TeTensor *zp,
                               int64_t axis, int64_t block_size, DType out, bool saturate, DType precision,
                               LoomError *err) {
  const char *on = "QuantizeLinear";
  QuantArgs q = {.x = x, .out = out, .saturate = saturate};
  if (!setup(on, name, x, scale, zp, axis, block_size, &q.scale, &q.zp, err)) return NULL;
  if (!is_real(x->dtype)) return fail_dtype(on, "x", x, "f32, f64, f16 or bf16", err), NULL;
  bool fp8 = dtype_is_float(out) && out.bits <= 8 && out.code != DT_F8E8M0;
  if (!is_quant_int(out) && !fp8) {
    char b[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: output dtype %s is not a quantized type (u8, i8, u16, i16, u4, i4, u2, i2, "
            "8-bit floats, f4e2m1)", on, dtype_str(out, b));
    return NULL;
  }
  if (zp && !dtype_eq(zp->dtype, out)) return fail_dtype(on, "zero_point", zp, "the output dtype", err), NULL;
  q.prec = precision.bits ? precision : x->dtype;
  return te_compute(a, name, x->ndim, x->shape, quant_body, &q, err);
}

/* ---- DequantizeLinear ---- */

typedef struct DequantArgs {
  const TeTensor *x;
  QParam scale, zp;
  DType out;
} DequantArgs;

static const Expr *dequant_body(Arena *a, const Expr *const *ax, void *user) {
  DequantArgs *q = user;
  const Expr *x = te_load(a, q->x, ax);
  DType w = dtype_eq(x->dtype, DT_I32) ? DT_F64 : DT_F32; /* numpy: f32 - int32 is f64 */
  const Expr *dx = as(a, w, x);
  if (q->zp.t && !dtype_is_float(q->x->dtype)) dx = expr_sub(a, dx, as(a, w, qload(a, &q->zp, ax)));
  return as(a, q->out, expr_mul(a, dx, as(a, w, qload(a, &q->scale, ax))));
}

TeTensor *topi_dequantize_linear(Arena *a, const char *name, const TeTensor *x, const TeTensor *scale,
                                 const TeTensor *zp, int64_t axis, int64_t block_size, DType out, LoomError *err) {
  const char *on = "DequantizeLinear";
  DequantArgs q = {.x = x, .out = out};
  if (!setup(on, name, x, scale, zp, axis, block_size, &q.scale, &q.zp, err)) return NULL;
  bool narrow_float = dtype_is_narrow(x->dtype) && dtype_is_float(x->dtype) && x->dtype.bits <= 8;
  if (!is_quant_int(x->dtype) && !dtype_eq(x->dtype, DT_I32) && !narrow_float)
    return fail_dtype(on, "x", x, "an integer of at most 32 bits or an 8/4-bit float", err), NULL;
  if (!is_real(out)) {
    char b[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: output dtype %s, expected f32, f16 or bf16", on, dtype_str(out, b));
    return NULL;
  }
  return te_compute(a, name, x->ndim, x->shape, dequant_body, &q, err);
}

/* ---- DynamicQuantizeLinear ---- */

typedef struct DynArgs {
  const TeTensor *x, *mx, *mn, *scale, *zp;
  IterVar k[TOPI_MAX_RANK];
  bool is_max;
} DynArgs;

static const Expr *dyn_reduce_body(Arena *a, const Expr *const *ax, void *user) {
  (void)ax;
  DynArgs *d = user;
  const Expr *idx[TOPI_MAX_RANK];
  for (int i = 0; i < d->x->ndim; i++) idx[i] = d->k[i].var;
  const Expr *v = as(a, DT_F32, te_load(a, d->x, idx));
  return d->is_max ? te_max(a, v, d->k, d->x->ndim, NULL) : te_min(a, v, d->k, d->x->ndim, NULL);
}

static const Expr *scalar_load(Arena *a, const TeTensor *t) {
  const Expr *none[1] = {NULL};
  return te_load(a, t, none);
}

/* y_scale = (max(0, max x) - min(0, min x)) / 255, or 1 / 255 when equal */
static const Expr *dyn_scale_body(Arena *a, const Expr *const *ax, void *user) {
  (void)ax;
  DynArgs *d = user;
  const Expr *zero = op_const(a, DT_F32, 0);
  const Expr *mx = expr_max(a, scalar_load(a, d->mx), zero), *mn = expr_min(a, scalar_load(a, d->mn), zero);
  const Expr *range = expr_select(a, expr_binary(a, EXPR_EQ, mx, mn), op_const(a, DT_F32, 1), expr_sub(a, mx, mn));
  return expr_binary(a, EXPR_DIV, range, op_const(a, DT_F32, 255));
}

/* rint(clamp(0 - min(0, min x) / y_scale, 0, 255)) */
static const Expr *dyn_zp_body(Arena *a, const Expr *const *ax, void *user) {
  (void)ax;
  DynArgs *d = user;
  const Expr *zero = op_const(a, DT_F32, 0);
  const Expr *mn = expr_min(a, scalar_load(a, d->mn), zero);
  const Expr *z = expr_sub(a, zero, expr_binary(a, EXPR_DIV, mn, scalar_load(a, d->scale)));
  z = expr_max(a, zero, expr_min(a, op_const(a, DT_F32, 255), z));
  return expr_call(a, CALL_ROUND, DT_F32, &z, 1);
}

static const Expr *dyn_y_body(Arena *a, const Expr *const *ax, void *user) {
  DynArgs *d = user;
  const Expr *v = expr_binary(a, EXPR_DIV, as(a, DT_F32, te_load(a, d->x, ax)), scalar_load(a, d->scale));
  v = expr_add(a, expr_call(a, CALL_ROUND, DT_F32, &v, 1), scalar_load(a, d->zp));
  /* clip to [0, 255]; NaN gives 0 as numpy's conversion does on x86 */
  const Expr *zero = op_const(a, DT_F32, 0);
  v = expr_select(a, expr_binary(a, EXPR_GE, v, zero), expr_min(a, v, op_const(a, DT_F32, 255)), zero);
  return expr_cast(a, DT_U8, v);
}

static const Expr *dyn_out_scale_body(Arena *a, const Expr *const *ax, void *user) {
  (void)ax;
  DynArgs *d = user;
  return as(a, d->x->dtype, scalar_load(a, d->scale));
}

static const Expr *dyn_out_zp_body(Arena *a, const Expr *const *ax, void *user) {
  (void)ax;
  return expr_cast(a, DT_U8, scalar_load(a, ((DynArgs *)user)->zp));
}

bool topi_dynamic_quantize_linear(Arena *a, const char *name, const TeTensor *x, TeTensor **outs, LoomError *err) {
  const char *on = "DynamicQuantizeLinear";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "x", x, err)) return false;
  if (!is_real(x->dtype)) return fail_dtype(on, "x", x, "f32, f16 or bf16", err);
  DynArgs d = {.x = x};
  for (int i = 0; i < x->ndim; i++) d.k[i] = te_reduce_axis(a, arena_printf(a, "k%d", i), x->shape[i]);
  d.is_max = true;
  if (!(d.mx = te_compute(a, op_stage(a, name, "max"), 0, NULL, dyn_reduce_body, &d, err))) return false;
  DynArgs d2 = d;
  d2.is_max = false;
  for (int i = 0; i < x->ndim; i++) d2.k[i] = te_reduce_axis(a, arena_printf(a, "k%d", i), x->shape[i]);
  if (!(d.mn = te_compute(a, op_stage(a, name, "min"), 0, NULL, dyn_reduce_body, &d2, err))) return false;
  if (!(d.scale = te_compute(a, op_stage(a, name, "scale"), 0, NULL, dyn_scale_body, &d, err)) ||
      !(d.zp = te_compute(a, op_stage(a, name, "zp"), 0, NULL, dyn_zp_body, &d, err)))
    return false;
  outs[0] = te_compute(a, name, x->ndim, x->shape, dyn_y_body, &d, err);
  outs[1] = outs[0] ? te_compute(a, op_stage(a, name, "y_scale"), 0, NULL, dyn_out_scale_body, &d, err) : NULL;
  outs[2] = outs[1] ? te_compute(a, op_stage(a, name, "y_zero_point"), 0, NULL, dyn_out_zp_body, &d, err) : NULL;
  return outs[2] != NULL;
}

/* ---- integer operands: int32(v) - int32(zero point) ---- */

typedef struct ShiftArgs {
  const TeTensor *v, *zp;
  int zp_axis; /* the axis of v a 1-D zero point runs along; -1: per tensor */
} ShiftArgs;

static const Expr *shift_body(Arena *a, const Expr *const *ax, void *user) {
  ShiftArgs *s = user;
  const Expr *v = as(a, DT_I32, te_load(a, s->v, ax));
  if (!s->zp) return v;
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < s->zp->ndim; d++) idx[d] = s->zp_axis >= 0 ? ax[s->zp_axis] : expr_i64(a, 0);
  return expr_sub(a, v, as(a, DT_I32, te_load(a, s->zp, idx)));
}

/* The int32 operand stage "<name>_<what>"; zp per tensor or, 1-D with
 * v.shape[axis] elements, along `axis`. */
static TeTensor *shifted(Arena *a, const char *on, const char *name, const char *what, const TeTensor *v,
                         const TeTensor *zp, int axis, LoomError *err) {
  if (!op_check_tensor(on, what, v, err) || (zp && !op_check_tensor(on, "zero point", zp, err))) return NULL;
  if (!dtype_is_int(v->dtype) || v->dtype.bits > 32) return fail_dtype(on, what, v, "an 8-bit integer", err), NULL;
  ShiftArgs s = {v, zp, -1};
  if (zp && op_numel(zp->ndim, zp->shape) != 1) {
    if (zp->ndim != 1 || axis < 0 || axis >= v->ndim || zp->shape[0] != v->shape[axis]) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: the zero point of %s (\"%s\") must be a scalar or 1-D with %lld elements",
              on, what, zp->name, axis >= 0 && axis < v->ndim ? (long long)v->shape[axis] : 1LL);
      return NULL;
    }
    s.zp_axis = axis;
  }
  return te_compute(a, op_stage(a, name, what), v->ndim, v->shape, shift_body, &s, err);
}

TeTensor *topi_matmul_integer(Arena *a, const char *name, const TeTensor *A, const TeTensor *B, const TeTensor *a_zp,
                              const TeTensor *b_zp, LoomError *err) {
  const char *on = "MatMulInteger";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "A", A, err) || !op_check_tensor(on, "B", B, err))
    return NULL;
  /* a_zp per row of A (axis -2), b_zp per column of B (axis -1) */
  TeTensor *ai = shifted(a, on, name, "a", A, a_zp, A->ndim >= 2 ? A->ndim - 2 : 0, err);
  TeTensor *bi = ai ? shifted(a, on, name, "b", B, b_zp, B->ndim - 1, err) : NULL;
  return bi ? topi_matmul_nd(a, name, ai, bi, err) : NULL;
}

/* ---- requantized products ---- */

typedef struct RequantArgs {
  const TeTensor *acc;         /* the int32 product */
  const TeTensor *bias;        /* int32 per output channel (axis 1), or NULL */
  const TeTensor *s1, *s2, *ys; /* scales: s1 * s2 / ys */
  int s1_axis, s2_axis;        /* output axis a 1-D scale runs along, -1: per tensor */
  const TeTensor *yzp;
  DType out;
  bool round_first; /* QLinearMatMul rounds then clamps; QLinearConv clamps then rounds */
} RequantArgs;

static const Expr *scale_at(Arena *a, const TeTensor *s, int axis, const Expr *const *ax) {
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < s->ndim; d++) idx[d] = axis >= 0 ? ax[axis] : expr_i64(a, 0);
  return te_load(a, s, idx);
}

static const Expr *requant_body(Arena *a, const Expr *const *ax, void *user) {
  RequantArgs *r = user;
  DType st = r->s1->dtype;
  const Expr *m = arith_in(a, EXPR_MUL, st, scale_at(a, r->s1, r->s1_axis, ax), scale_at(a, r->s2, r->s2_axis, ax));
  m = arith_in(a, EXPR_DIV, st, m, scale_at(a, r->ys, -1, ax));
  const Expr *acc = te_load(a, r->acc, ax);
  if (r->bias) acc = expr_add(a, acc, te_load(a, r->bias, &ax[1]));
  /* numpy: int32 array times a float array is f64 */
  const Expr *v = expr_mul(a, as(a, DT_F64, acc), as(a, DT_F64, m));
  const Expr *zp = r->yzp ? scale_at(a, r->yzp, -1, ax) : NULL;
  if (r->round_first) return requantize(a, v, zp, r->out);
  if (zp) v = expr_add(a, v, as(a, DT_F64, zp));
  int64_t lo, hi;
  int_range(r->out, &lo, &hi);
  v = expr_max(a, expr_min(a, v, op_const(a, DT_F64, (double)hi)), op_const(a, DT_F64, (double)lo));
  return requantize(a, v, NULL, r->out);
}

/* The 1-D scale's axis: per tensor (-1) when it has one element, else `axis`
 * after checking its length against `extent`. */
static bool scale_axis(const char *on, const char *what, const TeTensor *s, int axis, int64_t extent, int *out,
                       LoomError *err) {
  if (!op_check_tensor(on, what, s, err)) return false;
  if (!is_real(s->dtype)) return fail_dtype(on, what, s, "f32, f16 or bf16", err);
  int64_t n = op_numel(s->ndim, s->shape);
  *out = n == 1 ? -1 : axis;
  if (n != 1 && (s->ndim != 1 || n != extent || axis < 0)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s (\"%s\") must be a scalar or 1-D with %lld elements", on, what, s->name,
            (long long)extent);
    return false;
  }
  return true;
}

static TeTensor *requant(Arena *a, const char *on, const char *name, RequantArgs *r, const TeTensor *y_scale,
                         const TeTensor *y_zp, DType fallback, LoomError *err) {
  int dummy;
  if (!scale_axis(on, "y_scale", y_scale, -1, 1, &dummy, err)) return NULL;
  if (y_zp && (!op_check_tensor(on, "y_zero_point", y_zp, err) || op_numel(y_zp->ndim, y_zp->shape) != 1)) {
    if (!err->status)
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: y_zero_point (\"%s\") must be a scalar", on, y_zp->name);
    return NULL;
  }
  r->ys = y_scale;
  r->yzp = y_zp;
  r->out = y_zp ? y_zp->dtype : fallback;
  if (!is_quant_int(r->out) || r->out.bits != 8) {
    char b[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: output dtype %s, expected u8 or i8", on, dtype_str(r->out, b));
    return NULL;
  }
  const TeTensor *acc = r->acc;
  return te_compute(a, name, acc->ndim, acc->shape, requant_body, r, err);
}

TeTensor *topi_qlinear_matmul(Arena *a, const char *name, const TeTensor *A, const TeTensor *a_scale,
                              const TeTensor *a_zp, const TeTensor *B, const TeTensor *b_scale, const TeTensor *b_zp,
                              const TeTensor *y_scale, const TeTensor *y_zp, LoomError *err) {
  const char *on = "QLinearMatMul";
  TeTensor *acc = topi_matmul_integer(a, op_stage(a, name, "mm"), A, B, a_zp, b_zp, err);
  if (!acc) return NULL;
  RequantArgs r = {.acc = acc, .s1 = a_scale, .s2 = b_scale, .round_first = true};
  /* a_scale per row (output axis -2 when A has rows), b_scale per column (-1) */
  int r_axis = A->ndim >= 2 ? acc->ndim - (B->ndim >= 2 ? 2 : 1) : -1;
  int c_axis = B->ndim >= 2 ? acc->ndim - 1 : -1;
  if (!scale_axis(on, "a_scale", a_scale, r_axis, A->ndim >= 2 ? A->shape[A->ndim - 2] : 1, &r.s1_axis, err) ||
      !scale_axis(on, "b_scale", b_scale, c_axis, B->ndim >= 2 ? B->shape[B->ndim - 1] : 1, &r.s2_axis, err))
    return NULL;
  if (!dtype_eq(a_scale->dtype, b_scale->dtype) || !dtype_eq(a_scale->dtype, y_scale->dtype))
    return fail_dtype(on, "b_scale", b_scale, "a_scale's dtype", err), NULL;
  return requant(a, on, name, &r, y_scale, y_zp, A->dtype, err);
}

TeTensor *topi_qlinear_conv(Arena *a, const char *name, const TeTensor *x, const TeTensor *x_scale,
                            const TeTensor *x_zp, const TeTensor *w, const TeTensor *w_scale, const TeTensor *w_zp,
                            const TeTensor *y_scale, const TeTensor *y_zp, const TeTensor *bias,
                            const TopiWindowParams *p, LoomError *err) {
  const char *on = "QLinearConv";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "w", w, err)) return NULL;
  if (bias && !op_check_tensor(on, "B", bias, err)) return NULL;
  if (bias && (!dtype_eq(bias->dtype, DT_I32) || bias->ndim != 1 || bias->shape[0] != w->shape[0]))
    return fail_dtype(on, "B", bias, "i32 with one value per output channel", err), NULL;
  /* the int32 convolution of the shifted operands (op_conv_nd.c) */
  TeTensor *acc = topi_conv_integer_nd(a, op_stage(a, name, "conv"), x, w, x_zp, w_zp, p, err);
  if (!acc) return NULL;
  RequantArgs r = {.acc = acc, .bias = bias, .s1 = x_scale, .s2 = w_scale, .round_first = false};
  if (!scale_axis(on, "x_scale", x_scale, -1, 1, &r.s1_axis, err) ||
      !scale_axis(on, "w_scale", w_scale, 1, w->shape[0], &r.s2_axis, err)) /* per output channel: axis 1 of y */
    return NULL;
  return requant(a, on, name, &r, y_scale, y_zp, x->dtype, err);
}
