/* Elementwise and broadcasting ops with ONNX semantics: the unary and
 * binary op tables of topi_ops.h (TOPI_UNARY_OPS, TOPI_BINARY_OPS) with one
 * expression builder per row, Cast, the n-ary Sum/Max/Min/Mean, Clip by
 * runtime bounds, Where and inference BatchNormalization. Each is one
 * stage, so the fuser can inline it into a producer or consumer. */
#include "topi/op_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool is_integer(DType t) { return t.code == DT_INT || t.code == DT_UINT; }

static bool dtype_in_class(DType t, TopiDTypeClass c) {
  switch (c) {
    case TOPI_DTYPES_ANY: return true;
    case TOPI_DTYPES_BOOL: return dtype_is_bool(t);
    case TOPI_DTYPES_NOT_BOOL: return !dtype_is_bool(t);
    case TOPI_DTYPES_FLOAT: return dtype_is_float(t);
    case TOPI_DTYPES_FLOAT16: return (t.code == DT_FLOAT || t.code == DT_BFLOAT) && t.bits >= 16;
    case TOPI_DTYPES_SIGNED: return dtype_is_float(t) || t.code == DT_INT;
    case TOPI_DTYPES_NUMERIC: return dtype_is_float(t) || is_integer(t);
    case TOPI_DTYPES_INTEGER: return is_integer(t);
    case TOPI_DTYPES_UNSIGNED: return t.code == DT_UINT;
  }
  return false;
}

static bool check_dtype_class(const char *on, const char *what, const TeTensor *x, TopiDTypeClass c, LoomError *err) {
  if (dtype_in_class(x->dtype, c)) return true;
  char b[16];
  if (c == TOPI_DTYPES_FLOAT16)
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: input %s (\"%s\") has dtype %s, expected f32, f64, f16 or bf16", on, what,
            x->name, dtype_str(x->dtype, b));
  else
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: input %s (\"%s\") has unsupported dtype %s", on, what, x->name,
            dtype_str(x->dtype, b));
  return false;
}

static const Expr *call1(Arena *a, CallOp op, const Expr *v) { return expr_call(a, op, v->dtype, &v, 1); }

static const Expr *div_(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_DIV, x, y); }

/* ---- unary ops: one builder per TOPI_UNARY_OPS row ---- */

typedef struct UnaryCtx {
  Arena *a;
  const TopiUnaryParams *p;
  const Expr *zero, *one; /* of the element's dtype */
} UnaryCtx;

static const Expr *unary_relu(const UnaryCtx *c, const Expr *v) { return expr_max(c->a, v, c->zero); }
static const Expr *unary_leaky_relu(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  return expr_select(a, expr_lt(a, v, c->zero), expr_mul(a, v, op_const(a, v->dtype, c->p->alpha)), v);
}
/* min > max: ONNX makes every output max, which max-then-min gives. */
static const Expr *unary_clip(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  DType t = v->dtype;
  const Expr *r = v;
  if (dtype_is_float(t) ? c->p->lo > -INFINITY : c->p->lo > -9.2e18) r = expr_max(a, r, op_const(a, t, c->p->lo));
  if (dtype_is_float(t) ? c->p->hi < INFINITY : c->p->hi < 9.2e18) r = expr_min(a, r, op_const(a, t, c->p->hi));
  return r;
}
static const Expr *unary_sqrt(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_SQRT, v); }
static const Expr *unary_reciprocal(const UnaryCtx *c, const Expr *v) { return div_(c->a, c->one, v); }
static const Expr *unary_exp(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_EXP, v); }
static const Expr *unary_log(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_LOG, v); }
static const Expr *unary_neg(const UnaryCtx *c, const Expr *v) { return expr_sub(c->a, c->zero, v); }
static const Expr *unary_abs(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  return dtype_is_float(v->dtype) ? call1(a, CALL_FABS, v) : expr_select(a, expr_lt(a, v, c->zero), expr_sub(a, c->zero, v), v);
}
static const Expr *unary_floor(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_FLOOR, v); }
static const Expr *unary_ceil(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_CEIL, v); }
static const Expr *unary_logical_not(const UnaryCtx *c, const Expr *v) { return expr_not(c->a, v); }
static const Expr *unary_erf(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_ERF, v); }
static const Expr *unary_tanh(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_TANH, v); }
static const Expr *unary_sigmoid(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  const Expr *e = call1(a, CALL_EXP, expr_sub(a, c->zero, v));
  return div_(a, c->one, expr_add(a, c->one, e));
}
static const Expr *unary_hard_sigmoid(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  DType t = v->dtype;
  const Expr *l = expr_add(a, expr_mul(a, v, op_const(a, t, c->p->alpha)), op_const(a, t, c->p->beta));
  return expr_max(a, c->zero, expr_min(a, c->one, l));
}
static const Expr *unary_hard_swish(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  DType t = v->dtype;
  const Expr *l = expr_add(a, expr_mul(a, v, op_const(a, t, 1.0 / 6.0)), op_const(a, t, 0.5));
  return expr_mul(a, v, expr_max(a, c->zero, expr_min(a, c->one, l)));
}
static const Expr *unary_gelu(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  DType t = v->dtype;
  const Expr *half = op_const(a, t, 0.5), *inner;
  if (c->p->gelu_tanh) {
    /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    const Expr *x3 = expr_mul(a, expr_mul(a, v, v), v);
    inner = expr_add(a, v, expr_mul(a, op_const(a, t, 0.044715), x3));
    inner = call1(a, CALL_TANH, expr_mul(a, op_const(a, t, sqrt(2.0 / M_PI)), inner));
  } else {
    inner = call1(a, CALL_ERF, expr_mul(a, v, op_const(a, t, M_SQRT1_2)));
  }
  return expr_mul(a, expr_mul(a, half, v), expr_add(a, c->one, inner));
}
static const Expr *unary_identity(const UnaryCtx *c, const Expr *v) {
  (void)c;
  return v;
}
static const Expr *unary_sin(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_SIN, v); }
static const Expr *unary_cos(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_COS, v); }
static const Expr *unary_tan(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_TAN, v); }
static const Expr *unary_asin(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_ASIN, v); }
static const Expr *unary_acos(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_ACOS, v); }
static const Expr *unary_atan(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_ATAN, v); }
static const Expr *unary_sinh(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_SINH, v); }
static const Expr *unary_cosh(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_COSH, v); }
static const Expr *unary_asinh(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_ASINH, v); }
static const Expr *unary_acosh(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_ACOSH, v); }
static const Expr *unary_atanh(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_ATANH, v); }
static const Expr *unary_round(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_ROUND, v); }
/* Floats keep 0, -0 and NaN as they are. */
static const Expr *unary_sign(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  DType t = v->dtype;
  const Expr *rest = dtype_is_float(t) ? v : c->zero;
  const Expr *pos = expr_select(a, expr_binary(a, EXPR_GT, v, c->zero), c->one, rest);
  return t.code == DT_UINT ? pos : expr_select(a, expr_lt(a, v, c->zero), op_const(a, t, -1), pos);
}
static const Expr *unary_is_nan(const UnaryCtx *c, const Expr *v) { return expr_binary(c->a, EXPR_NE, v, v); }
static const Expr *unary_is_inf(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  const Expr *pi = expr_binary(a, EXPR_EQ, v, op_const(a, v->dtype, INFINITY));
  const Expr *ni = expr_binary(a, EXPR_EQ, v, op_const(a, v->dtype, -INFINITY));
  if (c->p->detect_positive && c->p->detect_negative) return expr_binary(a, EXPR_OR, pi, ni);
  return c->p->detect_positive ? pi : c->p->detect_negative ? ni : expr_bool(a, false);
}
static const Expr *unary_elu(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  const Expr *neg = expr_mul(a, op_const(a, v->dtype, c->p->alpha), expr_sub(a, call1(a, CALL_EXP, v), c->one));
  return expr_select(a, expr_lt(a, v, c->zero), neg, v);
}
static const Expr *unary_selu(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  const Expr *al = op_const(a, v->dtype, c->p->alpha), *g = op_const(a, v->dtype, c->p->gamma);
  const Expr *neg = expr_sub(a, expr_mul(a, al, call1(a, CALL_EXP, v)), al);
  return expr_mul(a, g, expr_select(a, expr_binary(a, EXPR_GT, v, c->zero), v, neg));
}
static const Expr *unary_celu(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  const Expr *al = op_const(a, v->dtype, c->p->alpha);
  const Expr *e = expr_mul(a, al, expr_sub(a, call1(a, CALL_EXP, div_(a, v, al)), c->one));
  return expr_add(a, expr_max(a, v, c->zero), expr_min(a, e, c->zero));
}
/* log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): no overflow for large x,
 * full precision for very negative x. */
static const Expr *softplus(Arena *a, const Expr *v) {
  DType t = v->dtype;
  const Expr *e = call1(a, CALL_EXP, expr_sub(a, op_const(a, t, 0), call1(a, CALL_FABS, v)));
  return expr_add(a, expr_max(a, v, op_const(a, t, 0)), call1(a, CALL_LOG1P, e));
}
static const Expr *unary_softplus(const UnaryCtx *c, const Expr *v) { return softplus(c->a, v); }
static const Expr *unary_softsign(const UnaryCtx *c, const Expr *v) {
  return div_(c->a, v, expr_add(c->a, c->one, call1(c->a, CALL_FABS, v)));
}
static const Expr *unary_swish(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  const Expr *e = call1(a, CALL_EXP, expr_mul(a, op_const(a, v->dtype, -c->p->alpha), v));
  return div_(a, v, expr_add(a, c->one, e));
}
static const Expr *unary_mish(const UnaryCtx *c, const Expr *v) {
  return expr_mul(c->a, v, call1(c->a, CALL_TANH, softplus(c->a, v)));
}
static const Expr *unary_shrink(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  DType t = v->dtype;
  const Expr *hi = expr_select(a, expr_binary(a, EXPR_GT, v, op_const(a, t, c->p->lambd)),
                               expr_sub(a, v, op_const(a, t, c->p->bias)), c->zero);
  if (t.code == DT_UINT) return hi;
  return expr_select(a, expr_lt(a, v, op_const(a, t, -c->p->lambd)), expr_add(a, v, op_const(a, t, c->p->bias)), hi);
}
static const Expr *unary_thresholded_relu(const UnaryCtx *c, const Expr *v) {
  Arena *a = c->a;
  return expr_select(a, expr_binary(a, EXPR_GT, v, op_const(a, v->dtype, c->p->alpha)), v, c->zero);
}
static const Expr *unary_bitwise_not(const UnaryCtx *c, const Expr *v) { return call1(c->a, CALL_BITNOT, v); }

typedef struct UnaryInfo {
  const char *name;
  TopiDTypeClass dtypes;
  const Expr *(*build)(const UnaryCtx *c, const Expr *v);
} UnaryInfo;

static const UnaryInfo unary_ops[] = {
#define X(e, nm, dtypes, builder) [TOPI_##e] = {nm, TOPI_DTYPES_##dtypes, unary_##builder},
    TOPI_UNARY_OPS(X)
#undef X
};
_Static_assert(sizeof unary_ops / sizeof unary_ops[0] == TOPI_UNARY_COUNT, "one unary_ops row per TopiUnaryOp");

const char *topi_unary_name(TopiUnaryOp op) { return (unsigned)op < TOPI_UNARY_COUNT ? unary_ops[op].name : "?"; }

typedef struct UnaryArgs {
  TopiUnaryOp op;
  const TeTensor *x;
  TopiUnaryParams p;
} UnaryArgs;

static const Expr *unary_body(Arena *a, const Expr *const *ax, void *user) {
  UnaryArgs *u = user;
  const Expr *v = te_load(a, u->x, ax);
  UnaryCtx c = {a, &u->p, op_const(a, v->dtype, 0), op_const(a, v->dtype, 1)};
  return unary_ops[u->op].build(&c, v);
}

TeTensor *topi_unary(Arena *a, const char *name, TopiUnaryOp op, const TeTensor *x,
                     const TopiUnaryParams *p, LoomError *err) {
  if ((unsigned)op >= TOPI_UNARY_COUNT) {
    err_set(err, LOOM_ERR_INVALID_ARG, "unary: unknown op code %d", (int)op);
    return NULL;
  }
  const char *on = unary_ops[op].name;
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "X", x, err)) return NULL;
  if (!check_dtype_class(on, "X", x, unary_ops[op].dtypes, err)) return NULL;
  static const TopiUnaryParams none = {.lo = -INFINITY, .hi = INFINITY};
  UnaryArgs u = {op, x, p ? *p : none};
  return te_compute(a, name, x->ndim, x->shape, unary_body, &u, err);
}

/* ---- Cast ---- */

typedef struct CastArgs {
  const TeTensor *x;
  DType to;
  bool saturate;
} CastArgs;

/* The largest finite value of an 8-bit float that ONNX's saturate applies
 * to; 0 for other types. */
static double saturate_max(DType t) {
  switch (t.code) {
    case DT_F8E4M3FN: return 448.0;
    case DT_F8E4M3FNUZ: return 240.0;
    case DT_F8E5M2:
    case DT_F8E5M2FNUZ: return 57344.0;
    default: return 0.0;
  }
}

const Expr *op_cast_value(Arena *a, const Expr *v, DType to, bool saturate) {
  if (dtype_eq(v->dtype, to)) return v;
  if (dtype_is_bool(to))
    return expr_binary(a, EXPR_NE, v, op_const(a, v->dtype, 0));
  double m = saturate ? saturate_max(to) : 0.0;
  if (m > 0) {
    /* saturate: clamp to the largest finite value first (inf too; NaN
     * compares false and stays NaN), then convert, as ONNX's reference does */
    if (!dtype_is_float(v->dtype)) v = expr_cast(a, DT_F32, v);
    const Expr *hi = op_const(a, v->dtype, m), *lo = op_const(a, v->dtype, -m);
    v = expr_select(a, expr_binary(a, EXPR_GT, v, hi), hi, expr_select(a, expr_lt(a, v, lo), lo, v));
  }
  return expr_cast(a, to, v);
}

static const Expr *cast_body(Arena *a, const Expr *const *ax, void *user) {
  CastArgs *c = user;
  return op_cast_value(a, te_load(a, c->x, ax), c->to, c->saturate);
}

TeTensor *topi_cast_saturate(Arena *a, const char *name, const TeTensor *x, DType to, bool saturate, LoomError *err) {
  if (!op_check_name("Cast", name, err) || !op_check_tensor("Cast", "input", x, err)) return NULL;
  if (to.lanes != 1 || !dtype_c_type(to) || to.code == DT_HANDLE) {
    char b[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "Cast: target dtype %s is not supported", dtype_str(to, b));
    return NULL;
  }
  CastArgs c = {x, to, saturate};
  return te_compute(a, name, x->ndim, x->shape, cast_body, &c, err);
}

TeTensor *topi_cast(Arena *a, const char *name, const TeTensor *x, DType to, LoomError *err) {
  return topi_cast_saturate(a, name, x, to, true, err);
}

/* ---- broadcasting ---- */

bool topi_broadcast_shape(const char *op, int rx, const int64_t *x, int ry, const int64_t *y,
                          int *rout, int64_t *out, LoomError *err) {
  int r = rx > ry ? rx : ry;
  for (int d = 0; d < r; d++) {
    int dx = d - (r - rx), dy = d - (r - ry);
    int64_t ex = dx >= 0 ? x[dx] : 1, ey = dy >= 0 ? y[dy] : 1;
    if (ex != ey && ex != 1 && ey != 1) {
      err_set(err, LOOM_ERR_INVALID_ARG,
              "%s: shapes do not broadcast: output axis %d has extents %lld and %lld", op, d,
              (long long)ex, (long long)ey);
      return false;
    }
    out[d] = ex == 1 ? ey : ex;
  }
  *rout = r;
  return true;
}

/* Combines the n operands' values at one output index into the result. */
typedef const Expr *(*CombineFn)(Arena *a, const Expr *const *v, int n, const void *user);

typedef struct NaryArgs {
  const TeTensor *const *xs;
  int n, rank;
  CombineFn fn;
  const void *user;
} NaryArgs;

static const Expr *nary_body(Arena *a, const Expr *const *ax, void *user) {
  NaryArgs *g = user;
  const Expr **v = ARENA_ARRAY(a, const Expr *, g->n);
  for (int i = 0; i < g->n; i++) v[i] = op_load_broadcast(a, g->xs[i], ax, g->rank);
  return g->fn(a, v, g->n, g->user);
}

/* Checks the operands (present, one dtype unless mixed_dtypes), broadcasts
 * their shapes together and builds the stage fn(loads...). */
static TeTensor *nary(Arena *a, const char *name, const char *on, const TeTensor *const *xs, int n, bool mixed_dtypes,
                      CombineFn fn, const void *user, LoomError *err) {
  if (!op_check_name(on, name, err)) return NULL;
  if (n < 1 || !xs) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: needs at least one input, got %d", on, n);
    return NULL;
  }
  char b1[16], b2[16];
  int64_t shape[TOPI_MAX_RANK], tmp[TOPI_MAX_RANK];
  int rank = 0;
  for (int i = 0; i < n; i++) {
    char what[16];
    snprintf(what, sizeof what, "%d", i);
    if (!op_check_tensor(on, what, xs[i], err)) return NULL;
    if (!mixed_dtypes && !dtype_eq(xs[i]->dtype, xs[0]->dtype)) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: input %d (\"%s\") has dtype %s, input 0 has %s", on, i, xs[i]->name,
              dtype_str(xs[i]->dtype, b1), dtype_str(xs[0]->dtype, b2));
      return NULL;
    }
    if (!topi_broadcast_shape(on, rank, shape, xs[i]->ndim, xs[i]->shape, &rank, tmp, err)) return NULL;
    memcpy(shape, tmp, sizeof(int64_t) * (size_t)rank);
  }
  NaryArgs g = {arena_memdup(a, xs, sizeof(*xs) * (size_t)n), n, rank, fn, user};
  return te_compute(a, name, rank, shape, nary_body, &g, err);
}

/* ---- binary ops: one builder per TOPI_BINARY_OPS row ---- */

static const Expr *binary_add(Arena *a, const Expr *x, const Expr *y) { return expr_add(a, x, y); }
static const Expr *binary_sub(Arena *a, const Expr *x, const Expr *y) { return expr_sub(a, x, y); }
static const Expr *binary_mul(Arena *a, const Expr *x, const Expr *y) { return expr_mul(a, x, y); }
static const Expr *binary_div(Arena *a, const Expr *x, const Expr *y) { return div_(a, x, y); }
static const Expr *binary_pow(Arena *a, const Expr *x, const Expr *y) {
  if (dtype_is_float(x->dtype)) {
    const Expr *args[2] = {x, dtype_eq(y->dtype, x->dtype) ? y : expr_cast(a, x->dtype, y)};
    return expr_call(a, CALL_POW, x->dtype, args, 2);
  }
  /* Integer base: pow in f64, back to the base's type (numpy's rule); an
   * integer power is rounded first, as libm's may be off by an ulp. */
  const Expr *args[2] = {expr_cast(a, DT_F64, x), expr_cast(a, DT_F64, y)};
  const Expr *p = expr_call(a, CALL_POW, DT_F64, args, 2);
  if (!dtype_is_float(y->dtype)) p = expr_call(a, CALL_ROUND, DT_F64, &p, 1);
  return expr_cast(a, x->dtype, p);
}
static const Expr *binary_max(Arena *a, const Expr *x, const Expr *y) { return expr_max(a, x, y); }
static const Expr *binary_min(Arena *a, const Expr *x, const Expr *y) { return expr_min(a, x, y); }
static const Expr *binary_equal(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_EQ, x, y); }
static const Expr *binary_less(Arena *a, const Expr *x, const Expr *y) { return expr_lt(a, x, y); }
static const Expr *binary_greater(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_GT, x, y); }
static const Expr *binary_greater_equal(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_GE, x, y); }
static const Expr *binary_less_equal(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_LE, x, y); }
static const Expr *binary_logical_and(Arena *a, const Expr *x, const Expr *y) { return expr_and(a, x, y); }
static const Expr *binary_logical_or(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_OR, x, y); }
static const Expr *binary_logical_xor(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_NE, x, y); }
static const Expr *binary_prelu(Arena *a, const Expr *x, const Expr *y) {
  return expr_select(a, expr_lt(a, x, op_const(a, x->dtype, 0)), expr_mul(a, y, x), x);
}
/* An integer divisor that cannot trap: 0 (and -1, whose quotient can
 * overflow, and whose remainder is 0 like 1's) become 1. */
static const Expr *safe_divisor(Arena *a, const Expr *y) {
  DType t = y->dtype;
  const Expr *one = op_const(a, t, 1);
  const Expr *bad = expr_binary(a, EXPR_EQ, y, op_const(a, t, 0));
  if (t.code == DT_INT) bad = expr_binary(a, EXPR_OR, bad, expr_binary(a, EXPR_EQ, y, op_const(a, t, -1)));
  return expr_select(a, bad, one, y);
}
static const Expr *int_safe_remainder(Arena *a, ExprKind k, const Expr *x, const Expr *y) {
  return expr_binary(a, k, x, dtype_is_float(x->dtype) ? y : safe_divisor(a, y));
}
static const Expr *binary_mod(Arena *a, const Expr *x, const Expr *y) { return int_safe_remainder(a, EXPR_FLOORMOD, x, y); }
static const Expr *binary_fmod(Arena *a, const Expr *x, const Expr *y) { return int_safe_remainder(a, EXPR_MOD, x, y); }
static const Expr *bitwise(Arena *a, CallOp op, const Expr *x, const Expr *y) {
  const Expr *args[2] = {x, y};
  return expr_call(a, op, x->dtype, args, 2);
}
static const Expr *binary_bitwise_and(Arena *a, const Expr *x, const Expr *y) { return bitwise(a, CALL_BITAND, x, y); }
static const Expr *binary_bitwise_or(Arena *a, const Expr *x, const Expr *y) { return bitwise(a, CALL_BITOR, x, y); }
static const Expr *binary_bitwise_xor(Arena *a, const Expr *x, const Expr *y) { return bitwise(a, CALL_BITXOR, x, y); }
/* C leaves counts >= the width undefined; ONNX (numpy) gives 0. */
static const Expr *shift(Arena *a, CallOp op, const Expr *x, const Expr *y) {
  DType t = x->dtype;
  const Expr *bits = op_const(a, t, t.bits);
  const Expr *args[2] = {x, expr_min(a, y, op_const(a, t, t.bits - 1))};
  const Expr *s = expr_call(a, op, t, args, 2);
  return expr_select(a, expr_lt(a, y, bits), s, op_const(a, t, 0));
}
static const Expr *binary_shift_left(Arena *a, const Expr *x, const Expr *y) { return shift(a, CALL_SHL, x, y); }
static const Expr *binary_shift_right(Arena *a, const Expr *x, const Expr *y) { return shift(a, CALL_SHR, x, y); }

typedef struct BinaryInfo {
  const char *name;
  TopiDTypeClass dtypes;
  const Expr *(*build)(Arena *a, const Expr *x, const Expr *y);
} BinaryInfo;

static const BinaryInfo binary_ops[] = {
#define X(e, nm, dtypes, builder) [TOPI_##e] = {nm, TOPI_DTYPES_##dtypes, binary_##builder},
    TOPI_BINARY_OPS(X)
#undef X
};
_Static_assert(sizeof binary_ops / sizeof binary_ops[0] == TOPI_BINARY_COUNT, "one binary_ops row per TopiBinaryOp");

const char *topi_binary_name(TopiBinaryOp op) { return (unsigned)op < TOPI_BINARY_COUNT ? binary_ops[op].name : "?"; }

/* Folds the operands left to right with the op's builder. */
static const Expr *binary_combine(Arena *a, const Expr *const *v, int n, const void *user) {
  const BinaryInfo *info = user;
  const Expr *acc = v[0];
  for (int i = 1; i < n; i++) acc = info->build(a, acc, v[i]);
  return acc;
}

static TeTensor *binary_nary(Arena *a, const char *name, TopiBinaryOp op, const char *on, const TeTensor *const *xs, int n,
                             LoomError *err) {
  if (n >= 1 && xs && xs[0] && !check_dtype_class(on, "A", xs[0], binary_ops[op].dtypes, err)) return NULL;
  /* Pow's exponent may have any non-bool dtype. */
  if (op == TOPI_POW && n == 2 && xs[1] && !check_dtype_class(on, "B", xs[1], TOPI_DTYPES_NOT_BOOL, err)) return NULL;
  return nary(a, name, on, xs, n, op == TOPI_POW, binary_combine, &binary_ops[op], err);
}

TeTensor *topi_binary(Arena *a, const char *name, TopiBinaryOp op, const TeTensor *x,
                      const TeTensor *y, LoomError *err) {
  if ((unsigned)op >= TOPI_BINARY_COUNT) {
    err_set(err, LOOM_ERR_INVALID_ARG, "binary: unknown op code %d", (int)op);
    return NULL;
  }
  const char *on = binary_ops[op].name;
  if (!x || !y) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: input %s is missing", on, x ? "B" : "A");
    return NULL;
  }
  const TeTensor *xs[2] = {x, y};
  TeTensor *r = binary_nary(a, name, op, on, xs, 2, err);
  if (r && op == TOPI_PRELU && (r->ndim != x->ndim || memcmp(r->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim))) {
    err_set(err, LOOM_ERR_INVALID_ARG, "PRelu: slope (\"%s\") must broadcast to the shape of X (\"%s\")", y->name,
            x->name);
    return NULL;
  }
  return r;
}

TeTensor *topi_variadic(Arena *a, const char *name, TopiBinaryOp op, const TeTensor *const *xs,
                        int n, LoomError *err) {
  const char *on = op == TOPI_ADD ? "Sum" : op == TOPI_MAX ? "Max" : op == TOPI_MIN ? "Min" : NULL;
  if (!on) {
    err_set(err, LOOM_ERR_INVALID_ARG, "variadic: op must be Sum, Max or Min, got %s", topi_binary_name(op));
    return NULL;
  }
  return binary_nary(a, name, op, on, xs, n, err);
}

static const Expr *mean_combine(Arena *a, const Expr *const *v, int n, const void *user) {
  (void)user;
  const Expr *acc = v[0];
  for (int i = 1; i < n; i++) acc = expr_add(a, acc, v[i]);
  return n == 1 ? acc : div_(a, acc, op_const(a, acc->dtype, n));
}

TeTensor *topi_mean(Arena *a, const char *name, const TeTensor *const *xs, int n, LoomError *err) {
  if (n >= 1 && xs && !op_check_float("Mean", "0", xs[0], err)) return NULL;
  return nary(a, name, "Mean", xs, n, false, mean_combine, NULL, err);
}

typedef struct ClipArgs {
  bool lo, hi;
} ClipArgs;

static const Expr *clip_combine(Arena *a, const Expr *const *v, int n, const void *user) {
  (void)n;
  const ClipArgs *c = user;
  const Expr *r = v[0];
  if (c->lo) r = expr_max(a, r, v[1]);
  if (c->hi) r = expr_min(a, r, v[c->lo ? 2 : 1]);
  return r;
}

TeTensor *topi_clip_tensors(Arena *a, const char *name, const TeTensor *x, const TeTensor *lo,
                            const TeTensor *hi, LoomError *err) {
  if (!op_check_tensor("Clip", "input", x, err) || !check_dtype_class("Clip", "input", x, TOPI_DTYPES_NUMERIC, err))
    return NULL;
  const TeTensor *xs[3] = {x, lo, hi};
  int n = 1;
  if (lo) xs[n++] = lo;
  if (hi) xs[n++] = hi;
  ClipArgs *c = ARENA_NEW(a, ClipArgs);
  c->lo = lo != NULL;
  c->hi = hi != NULL;
  TeTensor *r = nary(a, name, "Clip", xs, n, false, clip_combine, c, err);
  if (r && (r->ndim != x->ndim || memcmp(r->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim))) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Clip: min and max must broadcast to the shape of input (\"%s\")", x->name);
    return NULL;
  }
  return r;
}

typedef struct WhereArgs {
  const TeTensor *c, *x, *y;
  int rank;
} WhereArgs;

static const Expr *where_body(Arena *a, const Expr *const *ax, void *user) {
  WhereArgs *w = user;
  return expr_select(a, op_load_broadcast(a, w->c, ax, w->rank),
                     op_load_broadcast(a, w->x, ax, w->rank), op_load_broadcast(a, w->y, ax, w->rank));
}

TeTensor *topi_where(Arena *a, const char *name, const TeTensor *cond, const TeTensor *x,
                     const TeTensor *y, LoomError *err) {
  if (!op_check_name("Where", name, err) || !op_check_tensor("Where", "condition", cond, err) ||
      !op_check_tensor("Where", "X", x, err) || !op_check_tensor("Where", "Y", y, err))
    return NULL;
  char b1[16], b2[16];
  if (!dtype_is_bool(cond->dtype)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Where: condition (\"%s\") has dtype %s, expected bool",
            cond->name, dtype_str(cond->dtype, b1));
    return NULL;
  }
  if (!dtype_eq(x->dtype, y->dtype)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Where: X has dtype %s but Y has %s",
            dtype_str(x->dtype, b1), dtype_str(y->dtype, b2));
    return NULL;
  }
  int64_t s1[TOPI_MAX_RANK], s2[TOPI_MAX_RANK];
  int r1, r2;
  if (!topi_broadcast_shape("Where", cond->ndim, cond->shape, x->ndim, x->shape, &r1, s1, err) ||
      !topi_broadcast_shape("Where", r1, s1, y->ndim, y->shape, &r2, s2, err))
    return NULL;
  WhereArgs w = {cond, x, y, r2};
  return te_compute(a, name, r2, s2, where_body, &w, err);
}

typedef struct BnArgs {
  const TeTensor *x, *scale, *bias, *mean, *var;
  double eps;
} BnArgs;

static const Expr *bn_body(Arena *a, const Expr *const *ax, void *user) {
  BnArgs *b = user;
  DType t = b->x->dtype;
  const Expr *c[1] = {ax[1]};
  const Expr *den = expr_add(a, te_load(a, b->var, c), op_const(a, t, b->eps));
  den = expr_call(a, CALL_SQRT, t, &den, 1);
  const Expr *v = expr_sub(a, te_load(a, b->x, ax), te_load(a, b->mean, c));
  v = expr_binary(a, EXPR_DIV, v, den);
  return expr_add(a, expr_mul(a, v, te_load(a, b->scale, c)), te_load(a, b->bias, c));
}

TeTensor *topi_batch_norm(Arena *a, const char *name, const TeTensor *x, const TeTensor *scale,
                          const TeTensor *bias, const TeTensor *mean, const TeTensor *var,
                          double eps, LoomError *err) {
  const char *on = "BatchNormalization";
  if (!op_check_name(on, name, err) || !op_check_float(on, "X", x, err)) return NULL;
  if (x->ndim < 2) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: X (\"%s\") has rank %d, expected >= 2", on, x->name,
            x->ndim);
    return NULL;
  }
  const TeTensor *ps[4] = {scale, bias, mean, var};
  const char *pn[4] = {"scale", "B", "input_mean", "input_var"};
  for (int i = 0; i < 4; i++) {
    if (!op_check_float(on, pn[i], ps[i], err)) return NULL;
    if (ps[i]->ndim != 1 || ps[i]->shape[0] != x->shape[1] || !dtype_eq(ps[i]->dtype, x->dtype)) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s (\"%s\") must be [%lld] of X's dtype", on, pn[i],
              ps[i]->name, (long long)x->shape[1]);
      return NULL;
    }
  }
  if (!(eps >= 0)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: epsilon %g must be >= 0", on, eps);
    return NULL;
  }
  BnArgs b = {x, scale, bias, mean, var, eps};
  return te_compute(a, name, x->ndim, x->shape, bn_body, &b, err);
}
