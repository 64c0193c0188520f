/* Elementwise math with ONNX semantics beyond op_elemwise.c's set:
 * trigonometric and hyperbolic functions, Round, Sign, IsNaN/IsInf, the
 * exponential-family activations (Elu, Selu, Celu, Softplus, Softsign,
 * Swish, Mish), Shrink, ThresholdedRelu, bitwise ops and shifts, Mod,
 * GreaterOrEqual/LessOrEqual/Xor, Mean and Clip by runtime bounds. Each is
 * one stage, so the fuser inlines it into its neighbours like any other
 * elementwise op. */
#include "topi/op_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *math_name(TopiMathOp op) {
  static const char *const names[] = {
      "Sin",   "Cos",  "Tan",   "Asin",  "Acos", "Atan",     "Sinh",     "Cosh",  "Asinh", "Acosh",
      "Atanh", "Round", "Sign", "IsNaN", "IsInf", "Elu",     "Selu",     "Celu",  "Softplus",
      "Softsign", "Swish", "Mish", "Shrink", "ThresholdedRelu", "BitwiseNot"};
  return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "math";
}

TopiMathParams topi_math_defaults(TopiMathOp op) {
  TopiMathParams p = {1.0, 1.0, 0.5, 0.0, true, true};
  if (op == TOPI_SELU) p.alpha = 1.67326319217681884765625, p.gamma = 1.05070102214813232421875;
  return p;
}

static const Expr *call1(Arena *a, CallOp op, const Expr *v) { return expr_call(a, op, v->dtype, &v, 1); }

static const Expr *div_(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_DIV, x, y); }

/* log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): no overflow for large x,
 * full precision for very negative x. */
static const Expr *softplus(Arena *a, const Expr *v) {
  DType t = v->dtype;
  const Expr *e = call1(a, CALL_EXP, expr_sub(a, op_const(a, t, 0), call1(a, CALL_FABS, v)));
  return expr_add(a, expr_max(a, v, op_const(a, t, 0)), call1(a, CALL_LOG1P, e));
}

static const Expr *math_expr(Arena *a, TopiMathOp op, const Expr *v, const TopiMathParams *p) {
  static const CallOp calls[] = {CALL_SIN,  CALL_COS,  CALL_TAN,   CALL_ASIN,  CALL_ACOS, CALL_ATAN,
                                 CALL_SINH, CALL_COSH, CALL_ASINH, CALL_ACOSH, CALL_ATANH, CALL_ROUND};
  DType t = v->dtype;
  const Expr *zero = op_const(a, t, 0), *one = op_const(a, t, 1);
  if (op <= TOPI_ROUND) return call1(a, calls[op], v);
  switch (op) {
    case TOPI_SIGN: {
      /* Floats keep 0, -0 and NaN as they are. */
      const Expr *rest = dtype_is_float(t) ? v : zero;
      const Expr *pos = expr_select(a, expr_binary(a, EXPR_GT, v, zero), one, rest);
      return t.code == DT_UINT ? pos : expr_select(a, expr_lt(a, v, zero), op_const(a, t, -1), pos);
    }
    case TOPI_IS_NAN: return expr_binary(a, EXPR_NE, v, v);
    case TOPI_IS_INF: {
      const Expr *pi = expr_binary(a, EXPR_EQ, v, op_const(a, t, INFINITY));
      const Expr *ni = expr_binary(a, EXPR_EQ, v, op_const(a, t, -INFINITY));
      if (p->detect_positive && p->detect_negative) return expr_binary(a, EXPR_OR, pi, ni);
      return p->detect_positive ? pi : p->detect_negative ? ni : expr_bool(a, false);
    }
    case TOPI_ELU: {
      const Expr *neg = expr_mul(a, op_const(a, t, p->alpha), expr_sub(a, call1(a, CALL_EXP, v), one));
      return expr_select(a, expr_lt(a, v, zero), neg, v);
    }
    case TOPI_SELU: {
      const Expr *al = op_const(a, t, p->alpha), *g = op_const(a, t, p->gamma);
      const Expr *neg = expr_sub(a, expr_mul(a, al, call1(a, CALL_EXP, v)), al);
      return expr_mul(a, g, expr_select(a, expr_binary(a, EXPR_GT, v, zero), v, neg));
    }
    case TOPI_CELU: {
      const Expr *al = op_const(a, t, p->alpha);
      const Expr *e = expr_mul(a, al, expr_sub(a, call1(a, CALL_EXP, div_(a, v, al)), one));
      return expr_add(a, expr_max(a, v, zero), expr_min(a, e, zero));
    }
    case TOPI_SOFTPLUS: return softplus(a, v);
    case TOPI_SOFTSIGN: return div_(a, v, expr_add(a, one, call1(a, CALL_FABS, v)));
    case TOPI_SWISH: {
      const Expr *e = call1(a, CALL_EXP, expr_mul(a, op_const(a, t, -p->alpha), v));
      return div_(a, v, expr_add(a, one, e));
    }
    case TOPI_MISH: return expr_mul(a, v, call1(a, CALL_TANH, softplus(a, v)));
    case TOPI_SHRINK: {
      const Expr *hi = expr_select(a, expr_binary(a, EXPR_GT, v, op_const(a, t, p->lambd)),
                                   expr_sub(a, v, op_const(a, t, p->bias)), zero);
      if (t.code == DT_UINT) return hi;
      return expr_select(a, expr_lt(a, v, op_const(a, t, -p->lambd)), expr_add(a, v, op_const(a, t, p->bias)), hi);
    }
    case TOPI_THRESHOLDED_RELU:
      return expr_select(a, expr_binary(a, EXPR_GT, v, op_const(a, t, p->alpha)), v, zero);
    case TOPI_BITWISE_NOT: return call1(a, CALL_BITNOT, v);
    default: return NULL;
  }
}

typedef struct MathArgs {
  TopiMathOp op;
  const TeTensor *x;
  TopiMathParams p;
} MathArgs;

static const Expr *math_body(Arena *a, const Expr *const *ax, void *user) {
  MathArgs *m = user;
  return math_expr(a, m->op, te_load(a, m->x, ax), &m->p);
}

static bool is_integer(DType t) { return t.code == DT_INT || t.code == DT_UINT; }

static bool unsupported_dtype(const char *on, const char *what, const TeTensor *x, LoomError *err) {
  char b[16];
  err_set(err, LOOM_ERR_UNSUPPORTED, "%s: input %s (\"%s\") has unsupported dtype %s", on, what, x->name,
          dtype_str(x->dtype, b));
  return false;
}

TeTensor *topi_math_unary(Arena *a, const char *name, TopiMathOp op, const TeTensor *x,
                          const TopiMathParams *p, LoomError *err) {
  if ((unsigned)op > TOPI_BITWISE_NOT) {
    err_set(err, LOOM_ERR_INVALID_ARG, "math: unknown op code %d", (int)op);
    return NULL;
  }
  const char *on = math_name(op);
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "X", x, err)) return NULL;
  DType t = x->dtype;
  if (op == TOPI_SIGN || op == TOPI_SHRINK) {
    if (!dtype_is_float(t) && !is_integer(t)) return unsupported_dtype(on, "X", x, err), NULL;
  } else if (op == TOPI_BITWISE_NOT) {
    if (!is_integer(t)) return unsupported_dtype(on, "X", x, err), NULL;
  } else if (!op_check_float(on, "X", x, err)) {
    return NULL;
  }
  MathArgs m = {op, x, p ? *p : topi_math_defaults(op)};
  return te_compute(a, name, x->ndim, x->shape, math_body, &m, err);
}

/* ---- n-ary broadcasting ops ---- */

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

/* Checks the operands (present, one dtype), broadcasts their shapes and
 * builds the stage fn(loads...). */
static TeTensor *nary(Arena *a, const char *name, const char *on, const TeTensor *const *xs, int n, CombineFn fn,
                      const void *user, LoomError *err) {
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
    if (!dtype_eq(xs[i]->dtype, xs[0]->dtype)) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: input %d (\"%s\") has dtype %s, input 0 has %s", on, i, xs[i]->name,
              dtype_str(xs[i]->dtype, b1), dtype_str(xs[0]->dtype, b2));
      return NULL;
    }
    if (!topi_broadcast_shape(on, rank, shape, xs[i]->ndim, xs[i]->shape, &rank, tmp, err)) return NULL;
    memcpy(shape, tmp, sizeof(int64_t) * (size_t)rank);
  }
  if (rank > TOPI_MAX_RANK) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: the broadcast result has rank %d, at most %d supported", on, rank,
            TOPI_MAX_RANK);
    return NULL;
  }
  NaryArgs g = {arena_memdup(a, xs, sizeof(*xs) * (size_t)n), n, rank, fn, user};
  return te_compute(a, name, rank, shape, nary_body, &g, err);
}

static const char *binary_name(TopiMathBinaryOp op) {
  static const char *const names[] = {"GreaterOrEqual", "LessOrEqual", "Xor",        "Mod",
                                      "Mod",            "BitwiseAnd",  "BitwiseOr",  "BitwiseXor",
                                      "BitShift",       "BitShift"};
  return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "binary";
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

static const Expr *binary_combine(Arena *a, const Expr *const *v, int n, const void *user) {
  (void)n;
  TopiMathBinaryOp op = *(const TopiMathBinaryOp *)user;
  const Expr *x = v[0], *y = v[1];
  DType t = x->dtype;
  switch (op) {
    case TOPI_GREATER_EQUAL: return expr_binary(a, EXPR_GE, x, y);
    case TOPI_LESS_EQUAL: return expr_binary(a, EXPR_LE, x, y);
    case TOPI_XOR: return expr_binary(a, EXPR_NE, x, y);
    case TOPI_MOD:
    case TOPI_FMOD: {
      ExprKind k = op == TOPI_MOD ? EXPR_FLOORMOD : EXPR_MOD;
      if (dtype_is_float(t)) return expr_binary(a, k, x, y);
      return expr_binary(a, k, x, safe_divisor(a, y));
    }
    case TOPI_BITWISE_AND:
    case TOPI_BITWISE_OR:
    case TOPI_BITWISE_XOR: {
      CallOp c = op == TOPI_BITWISE_AND ? CALL_BITAND : op == TOPI_BITWISE_OR ? CALL_BITOR : CALL_BITXOR;
      return expr_call(a, c, t, v, 2);
    }
    case TOPI_SHIFT_LEFT:
    case TOPI_SHIFT_RIGHT: {
      /* C leaves counts >= the width undefined; ONNX (numpy) gives 0. */
      const Expr *bits = op_const(a, t, t.bits);
      const Expr *args[2] = {x, expr_min(a, y, op_const(a, t, t.bits - 1))};
      const Expr *s = expr_call(a, op == TOPI_SHIFT_LEFT ? CALL_SHL : CALL_SHR, t, args, 2);
      return expr_select(a, expr_lt(a, y, bits), s, op_const(a, t, 0));
    }
  }
  return NULL;
}

TeTensor *topi_math_binary(Arena *a, const char *name, TopiMathBinaryOp op, const TeTensor *x,
                           const TeTensor *y, LoomError *err) {
  if ((unsigned)op > TOPI_SHIFT_RIGHT) {
    err_set(err, LOOM_ERR_INVALID_ARG, "binary: unknown op code %d", (int)op);
    return NULL;
  }
  const char *on = binary_name(op);
  if (!op_check_tensor(on, "A", x, err) || !op_check_tensor(on, "B", y, err)) return NULL;
  DType t = x->dtype;
  bool ok;
  switch (op) {
    case TOPI_GREATER_EQUAL:
    case TOPI_LESS_EQUAL: ok = true; break;
    case TOPI_XOR: ok = dtype_is_bool(t); break;
    case TOPI_MOD:
    case TOPI_FMOD: ok = is_integer(t) || dtype_is_float(t); break;
    case TOPI_SHIFT_LEFT:
    case TOPI_SHIFT_RIGHT: ok = t.code == DT_UINT; break;
    default: ok = is_integer(t); break;
  }
  if (!ok) return unsupported_dtype(on, "A", x, err), NULL;
  const TeTensor *xs[2] = {x, y};
  TopiMathBinaryOp *u = ARENA_NEW(a, TopiMathBinaryOp);
  *u = op;
  return nary(a, name, on, xs, 2, binary_combine, u, err);
}

static const Expr *mean_combine(Arena *a, const Expr *const *v, int n, const void *user) {
  (void)user;
  const Expr *acc = v[0];
  for (int i = 1; i < n; i++) acc = expr_add(a, acc, v[i]);
  return n == 1 ? acc : div_(a, acc, op_const(a, acc->dtype, n));
}

TeTensor *topi_mean(Arena *a, const char *name, const TeTensor *const *xs, int n, LoomError *err) {
  if (n >= 1 && xs && !op_check_float("Mean", "0", xs[0], err)) return NULL;
  return nary(a, name, "Mean", xs, n, mean_combine, NULL, err);
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
  if (!op_check_tensor("Clip", "input", x, err)) return NULL;
  if (!dtype_is_float(x->dtype) && !is_integer(x->dtype)) return unsupported_dtype("Clip", "input", x, err), NULL;
  const TeTensor *xs[3] = {x, lo, hi};
  int n = 1;
  if (lo) xs[n++] = lo;
  if (hi) xs[n++] = hi;
  ClipArgs *c = ARENA_NEW(a, ClipArgs);
  c->lo = lo != NULL;
  c->hi = hi != NULL;
  TeTensor *r = nary(a, name, "Clip", xs, n, clip_combine, c, err);
  if (r && (r->ndim != x->ndim || memcmp(r->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim))) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Clip: min and max must broadcast to the shape of input (\"%s\")", x->name);
    return NULL;
  }
  return r;
}
