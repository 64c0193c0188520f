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

bool arith_can_prove(Analyzer *az, const Expr *cond) {
  const Expr *s = arith_simplify(az, cond);
  if (s->kind == EXPR_INT) return s->int_value != 0;
  IntBound b = arith_const_bound(az, s);
  return b.min >= 1;
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
