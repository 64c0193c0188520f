/* Elementwise and broadcasting ops with ONNX semantics: unary math, Cast,
 * binary and n-ary arithmetic with numpy broadcasting, Where, PRelu and
 * inference BatchNormalization. Each is one stage, so the fuser can inline
 * it into a producer or consumer. */
#include "topi/op_internal.h"

#include <math.h>
#include <string.h>

static const char *unary_name(TopiUnaryOp op) {
  static const char *const names[] = {
      "Relu", "LeakyRelu", "Clip", "Sqrt", "Reciprocal", "Exp", "Log", "Neg", "Abs", "Floor",
      "Ceil", "Not", "Erf", "Tanh", "Sigmoid", "HardSigmoid", "HardSwish", "Gelu", "Identity"};
  return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "unary";
}

TopiUnaryParams topi_unary_defaults(TopiUnaryOp op) {
  TopiUnaryParams p = {0.0, 0.0, -INFINITY, INFINITY, false};
  if (op == TOPI_LEAKY_RELU) p.alpha = 0.01;
  if (op == TOPI_HARD_SIGMOID) p.alpha = 0.2, p.beta = 0.5;
  return p;
}

typedef struct UnaryArgs {
  TopiUnaryOp op;
  const TeTensor *x;
  TopiUnaryParams p;
} UnaryArgs;

static const Expr *call1(Arena *a, CallOp op, const Expr *v) {
  return expr_call(a, op, v->dtype, &v, 1);
}

static const Expr *unary_expr(Arena *a, TopiUnaryOp op, const Expr *v, const TopiUnaryParams *p) {
  DType t = v->dtype;
  const Expr *zero = op_const(a, t, 0), *one = op_const(a, t, 1);
  switch (op) {
    case TOPI_RELU: return expr_max(a, v, zero);
    case TOPI_LEAKY_RELU:
      return expr_select(a, expr_lt(a, v, zero), expr_mul(a, v, op_const(a, t, p->alpha)), v);
    case TOPI_CLIP: {
      const Expr *r = v;
      if (dtype_is_float(t) ? p->lo > -INFINITY : p->lo > -9.2e18) r = expr_max(a, r, op_const(a, t, p->lo));
      if (dtype_is_float(t) ? p->hi < INFINITY : p->hi < 9.2e18) r = expr_min(a, r, op_const(a, t, p->hi));
      return r;
    }
    case TOPI_SQRT: return call1(a, CALL_SQRT, v);
    case TOPI_RECIPROCAL: return expr_binary(a, EXPR_DIV, one, v);
    case TOPI_EXP: return call1(a, CALL_EXP, v);
    case TOPI_LOG: return call1(a, CALL_LOG, v);
    case TOPI_NEG: return expr_sub(a, zero, v);
    case TOPI_ABS:
      return dtype_is_float(t) ? call1(a, CALL_FABS, v)
                               : expr_select(a, expr_lt(a, v, zero), expr_sub(a, zero, v), v);
    case TOPI_FLOOR: return call1(a, CALL_FLOOR, v);
    case TOPI_CEIL: return call1(a, CALL_CEIL, v);
    case TOPI_NOT: return expr_not(a, v);
    case TOPI_ERF: return call1(a, CALL_ERF, v);
    case TOPI_TANH: return call1(a, CALL_TANH, v);
    case TOPI_SIGMOID: {
      const Expr *e = call1(a, CALL_EXP, expr_sub(a, zero, v));
      return expr_binary(a, EXPR_DIV, one, expr_add(a, one, e));
    }
    case TOPI_HARD_SIGMOID: {
      const Expr *l = expr_add(a, expr_mul(a, v, op_const(a, t, p->alpha)), op_const(a, t, p->beta));
      return expr_max(a, zero, expr_min(a, one, l));
    }
    case TOPI_HARD_SWISH: {
      const Expr *l = expr_add(a, expr_mul(a, v, op_const(a, t, 1.0 / 6.0)), op_const(a, t, 0.5));
      return expr_mul(a, v, expr_max(a, zero, expr_min(a, one, l)));
    }
    case TOPI_GELU: {
      const Expr *half = op_const(a, t, 0.5), *inner;
      if (p->gelu_tanh) {
        /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
        const Expr *x3 = expr_mul(a, expr_mul(a, v, v), v);
        inner = expr_add(a, v, expr_mul(a, op_const(a, t, 0.044715), x3));
        inner = call1(a, CALL_TANH, expr_mul(a, op_const(a, t, sqrt(2.0 / M_PI)), inner));
      } else {
        inner = call1(a, CALL_ERF, expr_mul(a, v, op_const(a, t, M_SQRT1_2)));
      }
      return expr_mul(a, expr_mul(a, half, v), expr_add(a, one, inner));
    }
    case TOPI_IDENTITY: return v;
  }
  return NULL;
}

static const Expr *unary_body(Arena *a, const Expr *const *ax, void *user) {
  UnaryArgs *u = user;
  return unary_expr(a, u->op, te_load(a, u->x, ax), &u->p);
}

TeTensor *topi_unary(Arena *a, const char *name, TopiUnaryOp op, const TeTensor *x,
                     const TopiUnaryParams *p, LoomError *err) {
  const char *on = unary_name(op);
  if ((unsigned)op > TOPI_IDENTITY) {
    err_set(err, LOOM_ERR_INVALID_ARG, "unary: unknown op code %d", (int)op);
    return NULL;
  }
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "X", x, err)) return NULL;
  DType t = x->dtype;
  bool ok;
  switch (op) {
    case TOPI_NOT: ok = dtype_is_bool(t); break;
    case TOPI_IDENTITY: ok = true; break;
    case TOPI_RELU:
    case TOPI_NEG:
    case TOPI_ABS:
    case TOPI_CLIP: ok = dtype_is_float(t) || t.code == DT_INT; break;
    default: ok = dtype_is_float(t); break; /* f16, bf16...: computed in f32 */
  }
  if (!ok) {
    char b[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: input X (\"%s\") has unsupported dtype %s", on,
            x->name, dtype_str(t, b));
    return NULL;
  }
  UnaryArgs u = {op, x, p ? *p : topi_unary_defaults(op)};
  /* min > max: ONNX makes every output max, which max-then-min gives. */
  return te_compute(a, name, x->ndim, x->shape, unary_body, &u, err);
}

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

static const char *binary_name(TopiBinaryOp op) {
  static const char *const names[] = {"Add",  "Sub",   "Mul",  "Div",     "Pow", "Max", "Min",
                                      "Equal", "Less", "Greater", "And", "Or", "PRelu"};
  return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "binary";
}

static const Expr *binary_expr(Arena *a, TopiBinaryOp op, const Expr *x, const Expr *y) {
  switch (op) {
    case TOPI_ADD: return expr_add(a, x, y);
    case TOPI_SUB: return expr_sub(a, x, y);
    case TOPI_MUL: return expr_mul(a, x, y);
    case TOPI_DIV: return expr_binary(a, EXPR_DIV, x, y);
    case TOPI_POW: {
      if (dtype_is_float(x->dtype)) {
        const Expr *args[2] = {x, dtype_eq(y->dtype, x->dtype) ? y : expr_cast(a, x->dtype, y)};
        return expr_call(a, CALL_POW, x->dtype, args, 2);
      }
      /* Integer base: pow in f64, back to the base's type (numpy's rule);
       * an integer power is rounded first, as libm's may be off by an ulp. */
      const Expr *args[2] = {expr_cast(a, DT_F64, x), expr_cast(a, DT_F64, y)};
      const Expr *p = expr_call(a, CALL_POW, DT_F64, args, 2);
      if (!dtype_is_float(y->dtype)) p = expr_call(a, CALL_ROUND, DT_F64, &p, 1);
      return expr_cast(a, x->dtype, p);
    }
    case TOPI_MAX: return expr_max(a, x, y);
    case TOPI_MIN: return expr_min(a, x, y);
    case TOPI_EQUAL: return expr_binary(a, EXPR_EQ, x, y);
    case TOPI_LESS: return expr_lt(a, x, y);
    case TOPI_GREATER: return expr_binary(a, EXPR_GT, x, y);
    case TOPI_AND: return expr_and(a, x, y);
    case TOPI_OR: return expr_binary(a, EXPR_OR, x, y);
    case TOPI_PRELU:
      return expr_select(a, expr_lt(a, x, op_const(a, x->dtype, 0)), expr_mul(a, y, x), x);
  }
  return NULL;
}

typedef struct NaryArgs {
  TopiBinaryOp op;
  const TeTensor *const *xs;
  int n, rank;
} NaryArgs;

static const Expr *nary_body(Arena *a, const Expr *const *ax, void *user) {
  NaryArgs *g = user;
  const Expr *acc = op_load_broadcast(a, g->xs[0], ax, g->rank);
  for (int i = 1; i < g->n; i++) {
    const Expr *v = op_load_broadcast(a, g->xs[i], ax, g->rank);
    if (!dtype_eq(v->dtype, acc->dtype) && g->op != TOPI_POW) v = expr_cast(a, acc->dtype, v);
    acc = binary_expr(a, g->op, acc, v);
  }
  return acc;
}

static bool binary_dtypes_ok(const char *on, TopiBinaryOp op, const TeTensor *const *xs, int n,
                             LoomError *err) {
  char b1[16], b2[16];
  DType t = xs[0]->dtype;
  for (int i = 1; i < n; i++) {
    if (op == TOPI_POW) break;
    if (!dtype_eq(xs[i]->dtype, t)) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: input %d (\"%s\") has dtype %s, input 0 has %s", on,
              i, xs[i]->name, dtype_str(xs[i]->dtype, b1), dtype_str(t, b2));
      return false;
    }
  }
  bool ok;
  switch (op) {
    case TOPI_AND:
    case TOPI_OR: ok = dtype_is_bool(t); break;
    case TOPI_EQUAL: ok = true; break;
    case TOPI_POW: ok = !dtype_is_bool(t) && !dtype_is_bool(xs[1]->dtype); break;
    case TOPI_PRELU: ok = dtype_is_float(t); break;
    default: ok = !dtype_is_bool(t); break;
  }
  if (!ok) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: input 0 (\"%s\") has unsupported dtype %s", on,
            xs[0]->name, dtype_str(t, b1));
    return false;
  }
  return true;
}

static TeTensor *nary(Arena *a, const char *name, TopiBinaryOp op, const char *on,
                      const TeTensor *const *xs, int n, LoomError *err) {
  if (!op_check_name(on, name, err)) return NULL;
  if (n < 1 || !xs) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: needs at least one input, got %d", on, n);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    if (!op_check_tensor(on, i == 0 ? "A" : "B", xs[i], err)) return NULL;
  }
  if (!binary_dtypes_ok(on, op, xs, n, err)) return NULL;
  int64_t shape[TOPI_MAX_RANK], tmp[TOPI_MAX_RANK];
  int rank = xs[0]->ndim;
  memcpy(shape, xs[0]->shape, sizeof(int64_t) * (size_t)rank);
  for (int i = 1; i < n; i++) {
    if (!topi_broadcast_shape(on, rank, shape, xs[i]->ndim, xs[i]->shape, &rank, tmp, err))
      return NULL;
    memcpy(shape, tmp, sizeof(int64_t) * (size_t)rank);
  }
  if (op == TOPI_PRELU) {
    bool same = rank == xs[0]->ndim;
    for (int d = 0; same && d < rank; d++) same = shape[d] == xs[0]->shape[d];
    if (!same) {
      err_set(err, LOOM_ERR_INVALID_ARG,
              "PRelu: slope (\"%s\") must broadcast to the shape of X (\"%s\")", xs[1]->name,
              xs[0]->name);
      return NULL;
    }
  }
  NaryArgs g = {op, arena_memdup(a, xs, sizeof(*xs) * (size_t)n), n, rank};
  return te_compute(a, name, rank, shape, nary_body, &g, err);
}

TeTensor *topi_binary(Arena *a, const char *name, TopiBinaryOp op, const TeTensor *x,
                      const TeTensor *y, LoomError *err) {
  if ((unsigned)op > TOPI_PRELU) {
    err_set(err, LOOM_ERR_INVALID_ARG, "binary: unknown op code %d", (int)op);
    return NULL;
  }
  const TeTensor *xs[2] = {x, y};
  if (!x || !y) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: input %s is missing", binary_name(op), x ? "B" : "A");
    return NULL;
  }
  return nary(a, name, op, binary_name(op), xs, 2, err);
}

TeTensor *topi_variadic(Arena *a, const char *name, TopiBinaryOp op, const TeTensor *const *xs,
                        int n, LoomError *err) {
  const char *on = op == TOPI_ADD ? "Sum" : op == TOPI_MAX ? "Max" : op == TOPI_MIN ? "Min" : NULL;
  if (!on) {
    err_set(err, LOOM_ERR_INVALID_ARG, "variadic: op must be Sum, Max or Min, got %s",
            binary_name(op));
    return NULL;
  }
  return nary(a, name, op, on, xs, n, err);
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
