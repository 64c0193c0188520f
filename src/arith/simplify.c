/* The simplifier: bottom-up, one rule set per node kind. Integer sums and
 * products go through the canonical form (canonical.c); index-typed (i64)
 * division, min/max and comparisons use bounds. Floats are only
 * constant-folded and given identities that are exact in IEEE arithmetic.
 *
 * The one rule above all: never change the value. Rules that depend on
 * bounds are restricted to int64 scalars, where index arithmetic does not
 * wrap; narrower integer types get only ring identities and folding. */
#include "arith/arith_internal.h"

#include <math.h>

static const Expr *simp(Analyzer *az, const Expr *e);

static bool is_int_scalar(const Expr *e) { return dtype_is_int(e->dtype) && e->dtype.lanes == 1; }

static const Expr *int_const(Analyzer *az, DType t, int64_t v) { return expr_int(az->arena, t, arith_wrap_int(t, v)); }

static const Expr *rebuild_bin(Analyzer *az, const Expr *e, const Expr *a, const Expr *b) {
  if (a == e->bin.a && b == e->bin.b) return e;
  return expr_binary(az->arena, e->kind, a, b);
}

static bool is_unsigned64(DType t) { return t.code == DT_UINT && t.bits >= 64; }

/* Three-way compare of two constants of integer dtype t. */
static int const_cmp(DType t, int64_t x, int64_t y) {
  if (t.code == DT_UINT) return (uint64_t)x < (uint64_t)y ? -1 : (uint64_t)x > (uint64_t)y;
  return x < y ? -1 : x > y;
}

/* ---- floats ---- */

static bool float_foldable(DType t) { return t.code == DT_FLOAT && (t.bits == 32 || t.bits == 64) && t.lanes == 1; }

static const Expr *float_const(Analyzer *az, DType t, double v) {
  if (t.bits == 32) v = (double)(float)v;
  return expr_float(az->arena, t, v);
}

static bool is_float_const(const Expr *e, double v) {
  return e->kind == EXPR_FLOAT && e->float_value == v && signbit(e->float_value) == signbit(v);
}

static const Expr *simp_float_bin(Analyzer *az, const Expr *e, const Expr *a, const Expr *b) {
  DType t = e->dtype;
  if (float_foldable(t) && a->kind == EXPR_FLOAT && b->kind == EXPR_FLOAT) {
    double x = a->float_value, y = b->float_value;
    switch (e->kind) {
      case EXPR_ADD: return float_const(az, t, x + y);
      case EXPR_SUB: return float_const(az, t, x - y);
      case EXPR_MUL: return float_const(az, t, x * y);
      case EXPR_DIV: return float_const(az, t, x / y);
      case EXPR_MIN: case EXPR_MAX:
        /* NaN and signed zeros are where min/max implementations differ. */
        if (isnan(x) || isnan(y) || (x == 0 && y == 0)) break;
        return float_const(az, t, (e->kind == EXPR_MIN) == (x < y) ? x : y);
      default: break;
    }
  }
  /* Exact identities only: x*1, x/1, x-0, x+(-0.0). (x+0 is not exact:
   * -0.0 + 0.0 = +0.0.) */
  switch (e->kind) {
    case EXPR_MUL:
      if (is_float_const(b, 1.0)) return a;
      if (is_float_const(a, 1.0)) return b;
      break;
    case EXPR_DIV: if (is_float_const(b, 1.0)) return a; break;
    case EXPR_SUB: if (is_float_const(b, 0.0)) return a; break;
    case EXPR_ADD:
      if (is_float_const(b, -0.0)) return a;
      if (is_float_const(a, -0.0)) return b;
      break;
    default: break;
  }
  return rebuild_bin(az, e, a, b);
}

/* ---- integer division ---- */

static const Expr *simp_floordiv_mod(Analyzer *az, ExprKind k, const Expr *a, const Expr *b);

/* floordiv/floormod of index expressions by a positive constant c.
 * Writes a = c*Q + R (Q: the terms whose coefficient c divides, plus the
 * floored constant), so floordiv(a, c) = Q + floordiv(R, c) and
 * floormod(a, c) = floormod(R, c); then R's bound may decide the rest. */
static const Expr *simp_div_by_const(Analyzer *az, ExprKind k, const Expr *a, int64_t c) {
  DType t = a->dtype;
  ArithSum s = arith_sum_of(az, a);
  ArithSum q = {t, ARENA_ARRAY(az->arena, ArithTerm, s.n), 0, arith_floordiv_i64(s.constant, c)};
  ArithSum r = {t, ARENA_ARRAY(az->arena, ArithTerm, s.n), 0, arith_floormod_i64(s.constant, c)};
  for (int i = 0; i < s.n; i++) {
    ArithTerm term = s.terms[i];
    /* Only whole multiples of c move out: reducing other coefficients
     * modulo c (x*9 -> x) would be exact but would hide the fused iterator
     * that iterator-map detection needs to see. */
    if (term.coef % c == 0) {
      term.coef /= c;
      q.terms[q.n++] = term;
    } else {
      r.terms[r.n++] = term;
    }
  }
  IntBound rb = arith_sum_bound(az, r, NULL);
  if (rb.min != ARITH_NEG_INF && rb.max != ARITH_POS_INF) {
    int64_t lo = arith_floordiv_i64(rb.min, c), hi = arith_floordiv_i64(rb.max, c);
    if (lo == hi) {
      if (k == EXPR_FLOORDIV) {
        q.constant += lo; /* no overflow: |lo| <= |rb.min| / c */
        return arith_sum_to_expr(az, q);
      }
      r.constant -= lo * c; /* R - lo*c lies in [0, c) */
      return arith_sum_to_expr(az, r);
    }
  }
  /* With g = gcd(c, coefficients of R) > 1 and R = g*Y + r1 (0 <= r1 < g):
   * floordiv(R, c) = floordiv(Y, c/g) and floormod(R, c) = floormod(Y, c/g)*g + r1,
   * because g*Y + r1 never crosses a multiple of c. This makes
   * floordiv(i*8 + 7, 16) and floordiv(i*8, 16) the same expression. */
  uint64_t g = (uint64_t)c;
  for (int i = 0; i < r.n && g > 1; i++) {
    uint64_t m = r.terms[i].coef < 0 ? -(uint64_t)r.terms[i].coef : (uint64_t)r.terms[i].coef;
    while (m) {
      uint64_t t2 = g % m;
      g = m;
      m = t2;
    }
  }
  if (g > 1 && r.n > 0) {
    int64_t gi = (int64_t)g, r1 = r.constant % gi;
    ArithSum y = {t, ARENA_ARRAY(az->arena, ArithTerm, r.n), r.n, r.constant / gi};
    for (int i = 0; i < r.n; i++) {
      y.terms[i] = r.terms[i];
      y.terms[i].coef /= gi;
    }
    const Expr *inner = simp_floordiv_mod(az, k, arith_sum_to_expr(az, y), expr_i64(az->arena, c / gi));
    ArithSum in = arith_sum_of(az, inner);
    if (k == EXPR_FLOORDIV) return arith_sum_to_expr(az, arith_sum_add(az, q, in, 1));
    in = arith_sum_scale(az, in, gi);
    in.constant += r1;
    return arith_sum_to_expr(az, in);
  }
  const Expr *rest = arith_sum_to_expr(az, r);
  const Expr *cexpr = expr_i64(az->arena, c);
  const Expr *inner = NULL;
  if (k == EXPR_FLOORDIV) {
    /* floordiv(floordiv(x, m), c) = floordiv(x, m*c) for m, c > 0. */
    int64_t m, mc;
    if (rest->kind == EXPR_FLOORDIV && expr_as_int(rest->bin.b, &m) && m > 0 && !__builtin_mul_overflow(m, c, &mc))
      inner = simp_floordiv_mod(az, EXPR_FLOORDIV, rest->bin.a, expr_i64(az->arena, mc));
    else
      inner = expr_floordiv(az->arena, rest, cexpr);
    if (q.n == 0 && q.constant == 0) return inner;
    return arith_sum_to_expr(az, arith_sum_add(az, q, arith_sum_of(az, inner), 1));
  }
  /* floormod(floormod(x, m), c) = floormod(x, c) when c divides m. */
  int64_t m;
  if (rest->kind == EXPR_FLOORMOD && expr_as_int(rest->bin.b, &m) && m > 0 && m % c == 0)
    return simp_floordiv_mod(az, EXPR_FLOORMOD, rest->bin.a, cexpr);
  return expr_floormod(az->arena, rest, cexpr);
}

/* a, b already simplified. Handles FLOORDIV/FLOORMOD and (trunc) DIV/MOD. */
static const Expr *simp_floordiv_mod(Analyzer *az, ExprKind k, const Expr *a, const Expr *b) {
  DType t = a->dtype;
  bool floor = k == EXPR_FLOORDIV || k == EXPR_FLOORMOD;
  bool is_div = k == EXPR_FLOORDIV || k == EXPR_DIV;
  int64_t x, y;
  bool ca = expr_as_int(a, &x), cb = expr_as_int(b, &y);
  if (cb && y == 1) return is_div ? a : int_const(az, t, 0);
  if (ca && cb && y != 0) {
    if (t.code == DT_UINT) {
      uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
      return int_const(az, t, (int64_t)(is_div ? ux / uy : ux % uy));
    }
    if (y == -1) return int_const(az, t, is_div ? (int64_t)(-(uint64_t)x) : 0);
    int64_t v = floor ? (is_div ? arith_floordiv_i64(x, y) : arith_floormod_i64(x, y)) : (is_div ? x / y : x % y);
    return int_const(az, t, v);
  }
  if (!arith_is_index_type(t)) return NULL;
  if (!floor) {
    /* Truncation equals flooring for non-negative operands. */
    IntBound ba = arith_const_bound(az, a), bb = arith_const_bound(az, b);
    if (ba.min >= 0 && bb.min > 0) return simp_floordiv_mod(az, is_div ? EXPR_FLOORDIV : EXPR_FLOORMOD, a, b);
    return NULL;
  }
  if (cb && y > 0) return simp_div_by_const(az, k, a, y);
  return NULL;
}

/* ---- min / max / compare ---- */

/* Bound of x - y for index expressions (canonical difference). */
static IntBound diff_bound(Analyzer *az, const Expr *x, const Expr *y) {
  ArithSum d = arith_sum_add(az, arith_sum_of(az, x), arith_sum_of(az, y), -1);
  return arith_sum_bound(az, d, NULL);
}

static const Expr *simp_minmax(Analyzer *az, const Expr *e, const Expr *a, const Expr *b) {
  bool is_min = e->kind == EXPR_MIN;
  if (dtype_is_float(e->dtype)) return simp_float_bin(az, e, a, b);
  if (!is_int_scalar(e)) return rebuild_bin(az, e, a, b);
  if (expr_equal(a, b)) return a;
  int64_t x, y;
  if (expr_as_int(a, &x) && expr_as_int(b, &y)) return (is_min == (const_cmp(e->dtype, x, y) < 0)) ? a : b;
  if (arith_is_index_type(e->dtype)) {
    IntBound d = diff_bound(az, a, b);
    if (d.max <= 0) return is_min ? a : b;
    if (d.min >= 0) return is_min ? b : a;
  }
  /* A deterministic operand order makes min(a, b) and min(b, a) equal. */
  if (arith_expr_order(a, b) > 0) return expr_binary(az->arena, e->kind, b, a);
  return rebuild_bin(az, e, a, b);
}

static const Expr *simp_compare(Analyzer *az, const Expr *e, const Expr *a, const Expr *b) {
  ExprKind k = e->kind;
  DType t = a->dtype;
  if (float_foldable(t) && a->kind == EXPR_FLOAT && b->kind == EXPR_FLOAT) {
    double x = a->float_value, y = b->float_value;
    bool r = k == EXPR_EQ ? x == y : k == EXPR_NE ? x != y : k == EXPR_LT ? x < y
           : k == EXPR_LE ? x <= y : k == EXPR_GT ? x > y : x >= y;
    return expr_bool(az->arena, r);
  }
  if (!(dtype_is_int(t) || dtype_is_bool(t)) || t.lanes != 1) return rebuild_bin(az, e, a, b);
  int c = 2; /* sign of a - b when known */
  int64_t x, y;
  if (expr_as_int(a, &x) && expr_as_int(b, &y)) {
    c = const_cmp(t, x, y);
  } else if (expr_equal(a, b)) {
    c = 0;
  } else if (arith_is_index_type(t)) {
    IntBound d = diff_bound(az, a, b);
    if (d.min > 0) c = 1;
    else if (d.max < 0) c = -1;
    else if (d.min == 0 && d.max == 0) c = 0;
    else {
      /* Only a partial answer: a <= b or a >= b. */
      if (d.max <= 0 && (k == EXPR_LE || k == EXPR_GT)) return expr_bool(az->arena, k == EXPR_LE);
      if (d.min >= 0 && (k == EXPR_GE || k == EXPR_LT)) return expr_bool(az->arena, k == EXPR_GE);
    }
  }
  if (c == 2) return rebuild_bin(az, e, a, b);
  bool r = k == EXPR_EQ ? c == 0 : k == EXPR_NE ? c != 0 : k == EXPR_LT ? c < 0
         : k == EXPR_LE ? c <= 0 : k == EXPR_GT ? c > 0 : c >= 0;
  return expr_bool(az->arena, r);
}

/* ---- booleans ---- */

static bool is_true(const Expr *e) { return e->kind == EXPR_INT && e->int_value != 0; }
static bool is_false(const Expr *e) { return e->kind == EXPR_INT && e->int_value == 0; }

static const Expr *simp_not(Analyzer *az, const Expr *e, const Expr *a) {
  if (a->kind == EXPR_INT) return expr_int(az->arena, e->dtype, a->int_value == 0);
  if (a->kind == EXPR_NOT) return a->un.a;
  if (expr_is_compare(a->kind)) {
    const Expr *x = a->bin.a, *y = a->bin.b;
    /* Negating an ordering is exact only without NaN, i.e. for integers. */
    bool ordered = !dtype_is_float(x->dtype);
    switch (a->kind) {
      case EXPR_EQ: return expr_binary(az->arena, EXPR_NE, x, y);
      case EXPR_NE: return expr_binary(az->arena, EXPR_EQ, x, y);
      case EXPR_LT: if (ordered) return expr_binary(az->arena, EXPR_LE, y, x); break;
      case EXPR_LE: if (ordered) return expr_binary(az->arena, EXPR_LT, y, x); break;
      case EXPR_GT: if (ordered) return expr_binary(az->arena, EXPR_LE, x, y); break;
      case EXPR_GE: if (ordered) return expr_binary(az->arena, EXPR_LT, x, y); break;
      default: break;
    }
  }
  if (a == e->un.a) return e;
  return expr_not(az->arena, a);
}

static const Expr *simp_and_or(Analyzer *az, const Expr *e, const Expr *a, const Expr *b) {
  bool is_and = e->kind == EXPR_AND;
  if (e->dtype.lanes == 1) {
    if (is_and) {
      if (is_true(a)) return b;
      if (is_true(b)) return a;
      if (is_false(a)) return a;
      if (is_false(b)) return b;
    } else {
      if (is_false(a)) return b;
      if (is_false(b)) return a;
      if (is_true(a)) return a;
      if (is_true(b)) return b;
    }
  }
  if (expr_equal(a, b)) return a;
  return rebuild_bin(az, e, a, b);
}

/* ---- casts ---- */

static const Expr *simp_cast(Analyzer *az, const Expr *e, const Expr *a) {
  DType t = e->dtype, s = a->dtype;
  if (dtype_eq(t, s)) return a;
  if (t.lanes == 1 && a->kind == EXPR_INT) {
    if (t.code == DT_BOOL) return expr_int(az->arena, t, a->int_value != 0);
    if (dtype_is_int(t)) return int_const(az, t, a->int_value);
    if (float_foldable(t)) {
      /* Exact in double below 2^53, so rounding to f32 happens once. */
      int64_t v = a->int_value;
      bool exact = !is_unsigned64(s) ? (v >= -(1LL << 53) && v <= (1LL << 53)) : ((uint64_t)v <= (1ULL << 53));
      if (exact) return float_const(az, t, (double)v);
    }
  }
  if (t.lanes == 1 && a->kind == EXPR_FLOAT && float_foldable(s)) {
    double v = a->float_value;
    if (t.code == DT_BOOL) return expr_int(az->arena, t, v != 0);
    if (float_foldable(t)) return float_const(az, t, v);
    if (dtype_is_int(t) && isfinite(v)) {
      /* C truncates toward zero; out-of-range conversions are undefined, so
       * only fold what fits. */
      IntBound r = arith_dtype_bound(t);
      double tv = trunc(v);
      if (t.code == DT_UINT && t.bits >= 64) r.min = 0;
      if (tv >= (double)r.min && tv < (double)r.max && tv >= -9.2e18 && tv <= 9.2e18)
        return int_const(az, t, (int64_t)tv);
    }
  }
  if (a == e->un.a) return e;
  return expr_cast(az->arena, t, a);
}

/* ---- driver ---- */

static const Expr *simp_int_arith(Analyzer *az, const Expr *e, const Expr *a, const Expr *b) {
  ExprKind k = e->kind;
  if (k == EXPR_ADD || k == EXPR_SUB || k == EXPR_MUL) {
    const Expr *n = rebuild_bin(az, e, a, b);
    return arith_sum_to_expr(az, arith_sum_of(az, n));
  }
  const Expr *r = simp_floordiv_mod(az, k, a, b);
  return r ? r : rebuild_bin(az, e, a, b);
}

static const Expr *simp(Analyzer *az, const Expr *e) {
  switch (e->kind) {
    case EXPR_INT:
      if (e->dtype.lanes == 1 && (dtype_is_int(e->dtype) || dtype_is_bool(e->dtype)) &&
          arith_wrap_int(e->dtype, e->int_value) != e->int_value)
        return int_const(az, e->dtype, e->int_value);
      return e;
    case EXPR_FLOAT:
      if (e->dtype.bits == 32 && e->dtype.code == DT_FLOAT && (double)(float)e->float_value != e->float_value &&
          !isnan(e->float_value))
        return float_const(az, e->dtype, e->float_value);
      return e;
    case EXPR_VAR: return e;
    case EXPR_ADD: case EXPR_SUB: case EXPR_MUL: case EXPR_DIV: case EXPR_MOD:
    case EXPR_FLOORDIV: case EXPR_FLOORMOD: {
      const Expr *a = simp(az, e->bin.a), *b = simp(az, e->bin.b);
      if (is_int_scalar(e)) return simp_int_arith(az, e, a, b);
      if (dtype_is_float(e->dtype)) return simp_float_bin(az, e, a, b);
      return rebuild_bin(az, e, a, b);
    }
    case EXPR_MIN: case EXPR_MAX:
      return simp_minmax(az, e, simp(az, e->bin.a), simp(az, e->bin.b));
    case EXPR_EQ: case EXPR_NE: case EXPR_LT: case EXPR_LE: case EXPR_GT: case EXPR_GE:
      return simp_compare(az, e, simp(az, e->bin.a), simp(az, e->bin.b));
    case EXPR_AND: case EXPR_OR:
      return simp_and_or(az, e, simp(az, e->bin.a), simp(az, e->bin.b));
    case EXPR_NOT: {
      const Expr *r = simp_not(az, e, simp(az, e->un.a));
      /* A flipped comparison may now be decidable. */
      if (r != e && expr_is_compare(r->kind)) return simp_compare(az, r, r->bin.a, r->bin.b);
      return r;
    }
    case EXPR_CAST: return simp_cast(az, e, simp(az, e->un.a));
    case EXPR_SELECT: {
      const Expr *c = simp(az, e->select.cond);
      if (c->kind == EXPR_INT && c->dtype.lanes == 1) return simp(az, c->int_value ? e->select.t : e->select.f);
      const Expr *t = simp(az, e->select.t), *f = simp(az, e->select.f);
      if (expr_equal(t, f)) return t;
      if (c == e->select.cond && t == e->select.t && f == e->select.f) return e;
      return expr_select(az->arena, c, t, f);
    }
    case EXPR_LOAD: {
      int n = e->load.n;
      const Expr **idx = ARENA_ARRAY(az->arena, const Expr *, n);
      bool changed = false;
      for (int i = 0; i < n; i++) {
        idx[i] = simp(az, e->load.indices[i]);
        changed |= idx[i] != e->load.indices[i];
      }
      if (!changed) return e;
      const Expr *r = expr_load(az->arena, e->load.buffer, idx, n);
      ((Expr *)r)->dtype = e->dtype; /* keep the lanes the node was built with */
      return r;
    }
    case EXPR_CALL: {
      int n = e->call.n;
      const Expr **args = ARENA_ARRAY(az->arena, const Expr *, n);
      bool changed = false;
      for (int i = 0; i < n; i++) {
        args[i] = simp(az, e->call.args[i]);
        changed |= args[i] != e->call.args[i];
      }
      return changed ? expr_call(az->arena, e->call.op, e->dtype, args, n) : e;
    }
    case EXPR_RAMP: {
      const Expr *b = simp(az, e->ramp.base), *s = simp(az, e->ramp.stride);
      if (b == e->ramp.base && s == e->ramp.stride) return e;
      return expr_ramp(az->arena, b, s, e->ramp.lanes);
    }
    case EXPR_BROADCAST: {
      const Expr *v = simp(az, e->broadcast.value);
      return v == e->broadcast.value ? e : expr_broadcast(az->arena, v, e->broadcast.lanes);
    }
    case EXPR_REDUCE: {
      const Expr *s = simp(az, e->reduce.source);
      const Expr *c = e->reduce.cond ? simp(az, e->reduce.cond) : NULL;
      if (s == e->reduce.source && c == e->reduce.cond) return e;
      return expr_reduce(az->arena, e->reduce.op, s, e->reduce.axes, e->reduce.n_axes, c);
    }
    default: return e;
  }
}

const Expr *arith_simplify(Analyzer *az, const Expr *e) { return simp(az, e); }
