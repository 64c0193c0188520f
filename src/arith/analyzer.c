/* The Analyzer: variable ranges plus the proving helpers built on bounds. */
#include "arith/arith_internal.h"

Analyzer *arith_analyzer_new(Arena *a) {
  Analyzer *az = ARENA_NEW(a, Analyzer);
  az->arena = a;
  ptrmap_init(&az->ranges, a);
  return az;
}

Arena *arith_arena(Analyzer *az) { return az->arena; }

void arith_bind_range(Analyzer *az, const Expr *var, const Expr *min, const Expr *extent) {
  LOOM_ASSERT(var && var->kind == EXPR_VAR && min && extent);
  VarRange *r = ARENA_NEW(az->arena, VarRange);
  r->min = min;
  r->extent = extent;
  /* Bound of min..min+extent-1 computed now, from what is known now. */
  IntBound bm = arith_const_bound(az, min);
  IntBound be = arith_const_bound(az, extent);
  r->bound.min = bm.min;
  if (bm.max == ARITH_POS_INF || be.max == ARITH_POS_INF)
    r->bound.max = ARITH_POS_INF;
  else
    r->bound.max = arith_sat_add(bm.max, be.max - 1);
  IntBound tb = arith_dtype_bound(var->dtype);
  if (r->bound.min < tb.min) r->bound.min = tb.min;
  if (r->bound.max > tb.max) r->bound.max = tb.max;
  ptrmap_put(&az->ranges, var, r);
}

void arith_bind_const_range(Analyzer *az, const Expr *var, int64_t min, int64_t extent) {
  arith_bind_range(az, var, expr_i64(az->arena, min), expr_i64(az->arena, extent));
}

/* Symbolic fallback for index comparisons: relax every bound variable over
 * its (possibly symbolic) range, so `i < n` holds for i in [0, n). */
static bool prove_symbolic(Analyzer *az, const Expr *s) {
  if (s->kind == EXPR_AND) return prove_symbolic(az, s->bin.a) && prove_symbolic(az, s->bin.b);
  if (!expr_is_compare(s->kind) || s->kind == EXPR_NE || !arith_is_index_type(s->bin.a->dtype)) return false;
  PtrMap dom;
  ptrmap_init(&dom, az->arena);
  for (int i = 0; i < az->ranges.cap; i++) {
    if (!az->ranges.keys[i]) continue;
    const VarRange *r = az->ranges.vals[i];
    IntSet *set = ARENA_NEW(az->arena, IntSet);
    *set = intset_range(az, r->min, r->extent);
    ptrmap_put(&dom, az->ranges.keys[i], set);
  }
  const Expr *d = expr_sub(az->arena, s->bin.a, s->bin.b);
  IntSet ds = arith_eval_set(az, d, &dom);
  int64_t lo, hi;
  bool has_lo = ds.min && expr_as_int(ds.min, &lo), has_hi = ds.max && expr_as_int(ds.max, &hi);
  switch (s->kind) {
    case EXPR_LT: return has_hi && hi <= -1;
    case EXPR_LE: return has_hi && hi <= 0;
    case EXPR_GT: return has_lo && lo >= 1;
    case EXPR_GE: return has_lo && lo >= 0;
    case EXPR_EQ: return has_lo && has_hi && lo == 0 && hi == 0;
    default: return false;
  }
}

bool arith_can_prove(Analyzer *az, const Expr *cond) {
  const Expr *s = arith_simplify(az, cond);
  if (s->kind == EXPR_INT) return s->int_value != 0;
  IntBound b = arith_const_bound(az, s);
  if (b.min >= 1) return true;
  return prove_symbolic(az, s);
}

bool arith_can_prove_equal(Analyzer *az, const Expr *x, const Expr *y) {
  if (expr_equal(x, y)) return true;
  if (!dtype_eq(x->dtype, y->dtype)) return false;
  if (dtype_is_int(x->dtype) && x->dtype.lanes == 1) {
    const Expr *d = arith_simplify(az, expr_sub(az->arena, x, y));
    return expr_is_int(d, 0);
  }
  return expr_equal(arith_simplify(az, x), arith_simplify(az, y));
}
