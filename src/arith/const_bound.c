/* Constant interval bounds with saturating arithmetic: INT64_MIN/INT64_MAX
 * mean "unbounded", so any operation touching them stays unbounded. */
#include "arith/arith_internal.h"

int64_t arith_sat_add(int64_t x, int64_t y) {
  if (x == ARITH_NEG_INF || y == ARITH_NEG_INF) {
    if (x == ARITH_POS_INF || y == ARITH_POS_INF) return ARITH_POS_INF; /* caller widens */
    return ARITH_NEG_INF;
  }
  if (x == ARITH_POS_INF || y == ARITH_POS_INF) return ARITH_POS_INF;
  int64_t r;
  if (__builtin_add_overflow(x, y, &r)) return x > 0 ? ARITH_POS_INF : ARITH_NEG_INF;
  return r;
}

int64_t arith_sat_mul(int64_t x, int64_t y) {
  if (x == 0 || y == 0) return 0;
  bool neg = (x < 0) != (y < 0);
  bool inf = x == ARITH_NEG_INF || x == ARITH_POS_INF || y == ARITH_NEG_INF || y == ARITH_POS_INF;
  int64_t r;
  if (inf || __builtin_mul_overflow(x, y, &r)) return neg ? ARITH_NEG_INF : ARITH_POS_INF;
  return r;
}

int64_t arith_floordiv_i64(int64_t x, int64_t y) {
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
  return q;
}

int64_t arith_floormod_i64(int64_t x, int64_t y) {
  int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

int64_t arith_wrap_int(DType t, int64_t v) {
  if (t.code == DT_BOOL) return v != 0;
  if (t.bits >= 64) return v;
  uint64_t mask = (1ULL << t.bits) - 1;
  uint64_t u = (uint64_t)v & mask;
  if (t.code == DT_UINT) return (int64_t)u;
  uint64_t sign = 1ULL << (t.bits - 1);
  return (int64_t)((u ^ sign) - sign);
}

IntBound arith_dtype_bound(DType t) {
  IntBound b = {ARITH_NEG_INF, ARITH_POS_INF};
  if (t.code == DT_BOOL) {
    b.min = 0;
    b.max = 1;
  } else if (t.code == DT_UINT && t.bits < 64) {
    b.min = 0;
    b.max = (int64_t)((1ULL << t.bits) - 1);
  } else if (t.code == DT_INT && t.bits < 64) {
    b.max = (int64_t)((1ULL << (t.bits - 1)) - 1);
    b.min = -b.max - 1;
  }
  return b;
}

bool arith_is_index_type(DType t) { return t.code == DT_INT && t.bits == 64 && t.lanes == 1; }

static IntBound mk(int64_t lo, int64_t hi) {
  IntBound b = {lo, hi};
  return b;
}

static bool is_inf(int64_t v) { return v == ARITH_NEG_INF || v == ARITH_POS_INF; }

/* floordiv of a bound endpoint by a non-zero constant, keeping infinities. */
static int64_t div_end(int64_t x, int64_t c) {
  if (is_inf(x)) return ((x > 0) == (c > 0)) ? ARITH_POS_INF : ARITH_NEG_INF;
  if (x == INT64_MIN && c == -1) return ARITH_POS_INF;
  return arith_floordiv_i64(x, c);
}

static int64_t trunc_end(int64_t x, int64_t c) {
  if (is_inf(x)) return ((x > 0) == (c > 0)) ? ARITH_POS_INF : ARITH_NEG_INF;
  if (x == INT64_MIN && c == -1) return ARITH_POS_INF;
  return x / c;
}

static IntBound corners(int64_t (*f)(int64_t, int64_t), IntBound a, IntBound b) {
  int64_t v[4] = {f(a.min, b.min), f(a.min, b.max), f(a.max, b.min), f(a.max, b.max)};
  IntBound r = {v[0], v[0]};
  for (int i = 1; i < 4; i++) {
    if (v[i] < r.min) r.min = v[i];
    if (v[i] > r.max) r.max = v[i];
  }
  return r;
}

static IntBound bound_floordiv(IntBound a, IntBound b) {
  if (b.min <= 0 && b.max >= 0) return mk(ARITH_NEG_INF, ARITH_POS_INF);
  /* Division by a sign-fixed divisor is monotone in each argument. */
  return corners(div_end, a, b);
}

static IntBound bound_floormod(IntBound a, IntBound b) {
  if (b.min > 0) {
    if (b.min == b.max && !is_inf(a.min) && !is_inf(a.max)) {
      int64_t c = b.min;
      if (arith_floordiv_i64(a.min, c) == arith_floordiv_i64(a.max, c))
        return mk(arith_floormod_i64(a.min, c), arith_floormod_i64(a.max, c));
    }
    if (a.min >= 0 && a.max < b.min) return a;
    int64_t hi = b.max == ARITH_POS_INF ? ARITH_POS_INF : b.max - 1;
    if (a.min >= 0 && a.max < hi) hi = a.max;
    return mk(0, hi);
  }
  if (b.max < 0) {
    int64_t lo = b.min == ARITH_NEG_INF ? ARITH_NEG_INF : b.min + 1;
    return mk(lo, 0);
  }
  return mk(ARITH_NEG_INF, ARITH_POS_INF);
}

static IntBound bound_truncdiv(IntBound a, IntBound b) {
  if (b.min <= 0 && b.max >= 0) return mk(ARITH_NEG_INF, ARITH_POS_INF);
  return corners(trunc_end, a, b);
}

static IntBound bound_truncmod(IntBound a, IntBound b) {
  if (a.min >= 0 && b.min > 0) return bound_floormod(a, b);
  if (b.min <= 0 && b.max >= 0) return mk(ARITH_NEG_INF, ARITH_POS_INF);
  /* |a % b| < |b| and the sign follows a. */
  int64_t m = b.min > 0 ? b.max : (b.min == ARITH_NEG_INF ? ARITH_POS_INF : -b.min);
  int64_t lim = m == ARITH_POS_INF ? ARITH_POS_INF : m - 1;
  int64_t lo = a.min >= 0 ? 0 : (lim == ARITH_POS_INF ? ARITH_NEG_INF : -lim);
  int64_t hi = a.max <= 0 ? 0 : lim;
  if (a.min >= 0 && a.max < hi) hi = a.max;
  if (a.max <= 0 && a.min > lo) lo = a.min;
  return mk(lo, hi);
}

static IntBound bound_rec(Analyzer *az, const Expr *e, const PtrMap *dom, int depth);

static IntBound bound_raw(Analyzer *az, const Expr *e, const PtrMap *dom, int depth) {
  DType t = e->dtype;
  IntBound full = arith_dtype_bound(t);
  if (t.lanes != 1 || dtype_is_float(t) || t.code == DT_HANDLE) return mk(ARITH_NEG_INF, ARITH_POS_INF);
  if (depth > 64) return full;
  switch (e->kind) {
    case EXPR_INT: return mk(e->int_value, e->int_value);
    case EXPR_VAR: {
      if (dom) {
        const IntSet *s = ptrmap_get(dom, e);
        if (s) {
          IntBound b = full;
          if (s->min) b.min = bound_rec(az, s->min, NULL, depth + 1).min;
          if (s->max) b.max = bound_rec(az, s->max, NULL, depth + 1).max;
          return b;
        }
      }
      const VarRange *r = ptrmap_get(&az->ranges, e);
      return r ? r->bound : full;
    }
    case EXPR_ADD: case EXPR_SUB: {
      IntBound a = bound_rec(az, e->bin.a, dom, depth + 1), b = bound_rec(az, e->bin.b, dom, depth + 1);
      if (e->kind == EXPR_SUB) {
        int64_t lo = b.max == ARITH_POS_INF ? ARITH_NEG_INF : -b.max;
        int64_t hi = b.min == ARITH_NEG_INF ? ARITH_POS_INF : -b.min;
        b = mk(lo, hi);
      }
      IntBound r = {arith_sat_add(a.min, b.min), arith_sat_add(a.max, b.max)};
      if (a.min == ARITH_NEG_INF || b.min == ARITH_NEG_INF) r.min = ARITH_NEG_INF;
      return r;
    }
    case EXPR_MUL:
      return corners(arith_sat_mul, bound_rec(az, e->bin.a, dom, depth + 1), bound_rec(az, e->bin.b, dom, depth + 1));
    case EXPR_FLOORDIV:
      return bound_floordiv(bound_rec(az, e->bin.a, dom, depth + 1), bound_rec(az, e->bin.b, dom, depth + 1));
    case EXPR_FLOORMOD:
      return bound_floormod(bound_rec(az, e->bin.a, dom, depth + 1), bound_rec(az, e->bin.b, dom, depth + 1));
    case EXPR_DIV:
      return bound_truncdiv(bound_rec(az, e->bin.a, dom, depth + 1), bound_rec(az, e->bin.b, dom, depth + 1));
    case EXPR_MOD:
      return bound_truncmod(bound_rec(az, e->bin.a, dom, depth + 1), bound_rec(az, e->bin.b, dom, depth + 1));
    case EXPR_MIN: case EXPR_MAX: {
      IntBound a = bound_rec(az, e->bin.a, dom, depth + 1), b = bound_rec(az, e->bin.b, dom, depth + 1);
      if (e->kind == EXPR_MIN) return mk(a.min < b.min ? a.min : b.min, a.max < b.max ? a.max : b.max);
      return mk(a.min > b.min ? a.min : b.min, a.max > b.max ? a.max : b.max);
    }
    case EXPR_SELECT: {
      IntBound c = bound_rec(az, e->select.cond, dom, depth + 1);
      IntBound a = bound_rec(az, e->select.t, dom, depth + 1), b = bound_rec(az, e->select.f, dom, depth + 1);
      if (c.min >= 1) return a;
      if (c.max <= 0) return b;
      return mk(a.min < b.min ? a.min : b.min, a.max > b.max ? a.max : b.max);
    }
    case EXPR_CAST: {
      const Expr *x = e->un.a;
      if (t.code == DT_BOOL) return full;
      if (dtype_is_int(x->dtype) || dtype_is_bool(x->dtype)) {
        IntBound b = bound_rec(az, x, dom, depth + 1);
        if (b.min >= full.min && b.max <= full.max) return b;
      }
      return full;
    }
    case EXPR_EQ: case EXPR_NE: case EXPR_LT: case EXPR_LE: case EXPR_GT: case EXPR_GE: {
      const Expr *x = e->bin.a, *y = e->bin.b;
      if (!dtype_is_int(x->dtype) || x->dtype.lanes != 1) return full;
      IntBound a = bound_rec(az, x, dom, depth + 1), b = bound_rec(az, y, dom, depth + 1);
      if (x->dtype.code == DT_UINT && x->dtype.bits >= 64) return full;
      int r = -1; /* -1 unknown, else the decided value */
      switch (e->kind) {
        case EXPR_LT: r = a.max < b.min ? 1 : (a.min >= b.max ? 0 : -1); break;
        case EXPR_LE: r = a.max <= b.min ? 1 : (a.min > b.max ? 0 : -1); break;
        case EXPR_GT: r = a.min > b.max ? 1 : (a.max <= b.min ? 0 : -1); break;
        case EXPR_GE: r = a.min >= b.max ? 1 : (a.max < b.min ? 0 : -1); break;
        case EXPR_EQ: r = (a.max < b.min || a.min > b.max) ? 0 : (a.min == a.max && b.min == b.max && a.min == b.min && !is_inf(a.min) ? 1 : -1); break;
        case EXPR_NE: r = (a.max < b.min || a.min > b.max) ? 1 : (a.min == a.max && b.min == b.max && a.min == b.min && !is_inf(a.min) ? 0 : -1); break;
        default: break;
      }
      return r < 0 ? full : mk(r, r);
    }
    case EXPR_AND: {
      IntBound a = bound_rec(az, e->bin.a, dom, depth + 1), b = bound_rec(az, e->bin.b, dom, depth + 1);
      return mk(a.min >= 1 && b.min >= 1 ? 1 : 0, a.max <= 0 || b.max <= 0 ? 0 : 1);
    }
    case EXPR_OR: {
      IntBound a = bound_rec(az, e->bin.a, dom, depth + 1), b = bound_rec(az, e->bin.b, dom, depth + 1);
      return mk(a.min >= 1 || b.min >= 1 ? 1 : 0, a.max <= 0 && b.max <= 0 ? 0 : 1);
    }
    case EXPR_NOT: {
      IntBound a = bound_rec(az, e->un.a, dom, depth + 1);
      return mk(a.max <= 0 ? 1 : 0, a.min >= 1 ? 0 : 1);
    }
    default: return full;
  }
}

static IntBound bound_rec(Analyzer *az, const Expr *e, const PtrMap *dom, int depth) {
  /* 64-bit unsigned values do not fit the signed interval: know nothing. */
  if (e->dtype.code == DT_UINT && e->dtype.bits >= 64) return arith_dtype_bound(e->dtype);
  IntBound b = bound_raw(az, e, dom, depth);
  /* Narrow integer types wrap: a result outside the type is the whole type. */
  IntBound full = arith_dtype_bound(e->dtype);
  if (e->dtype.lanes == 1 && dtype_is_int(e->dtype) && (b.min < full.min || b.max > full.max || b.min > b.max))
    return full;
  return b;
}

IntBound arith_bound_in(Analyzer *az, const Expr *e, const PtrMap *dom) { return bound_rec(az, e, dom, 0); }

IntBound arith_const_bound(Analyzer *az, const Expr *e) { return bound_rec(az, e, NULL, 0); }
