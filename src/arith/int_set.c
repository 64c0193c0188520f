/* Symbolic integer sets: the interval [min, max] an expression takes while
 * some variables range over their sets (region inference for compute_at).
 * Affine parts are exact: each term contributes its min or max according to
 * the sign of its coefficient. Everything else is over-approximated, never
 * under-approximated. */
#include "arith/arith_internal.h"

IntSet intset_point(const Expr *e) {
  IntSet s = {e, e};
  return s;
}

IntSet intset_range(Analyzer *az, const Expr *min, const Expr *extent) {
  IntSet s = {min, arith_simplify(az, expr_sub(az->arena, expr_add(az->arena, min, extent), expr_i64(az->arena, 1)))};
  return s;
}

IntSet intset_union(Analyzer *az, IntSet x, IntSet y) {
  IntSet s = {NULL, NULL};
  if (x.min && y.min) s.min = arith_simplify(az, expr_min(az->arena, x.min, y.min));
  if (x.max && y.max) s.max = arith_simplify(az, expr_max(az->arena, x.max, y.max));
  return s;
}

static bool uses_dom(const Expr *e, const PtrMap *dom) {
  if (!dom) return false;
  for (int i = 0; i < dom->cap; i++)
    if (dom->keys[i] && expr_uses_var(e, dom->keys[i])) return true;
  return false;
}

static IntSet everything(void) {
  IntSet s = {NULL, NULL};
  return s;
}

static IntSet from_bound(Analyzer *az, IntBound b) {
  IntSet s = {b.min == ARITH_NEG_INF ? NULL : expr_i64(az->arena, b.min),
              b.max == ARITH_POS_INF ? NULL : expr_i64(az->arena, b.max)};
  return s;
}

static const Expr *add_or_null(Analyzer *az, const Expr *x, const Expr *y) {
  return x && y ? expr_add(az->arena, x, y) : NULL;
}

static const Expr *mul_or_null(Analyzer *az, const Expr *x, const Expr *k) {
  return x ? expr_mul(az->arena, x, k) : NULL;
}

static IntSet eval_rec(Analyzer *az, const Expr *e, const PtrMap *dom);

/* Set of multiplier * x where x ranges over sx and the multiplier's sign is
 * fixed (else unbounded). */
static IntSet scale_set(Analyzer *az, IntSet sx, const Expr *mult) {
  IntBound mb = arith_const_bound(az, mult);
  IntSet r;
  if (mb.min >= 0) {
    r.min = mul_or_null(az, sx.min, mult);
    r.max = mul_or_null(az, sx.max, mult);
  } else if (mb.max <= 0) {
    r.min = mul_or_null(az, sx.max, mult);
    r.max = mul_or_null(az, sx.min, mult);
  } else {
    return everything();
  }
  return r;
}

static IntSet eval_sum(Analyzer *az, const Expr *e, const PtrMap *dom) {
  ArithSum s = arith_sum_of(az, e);
  const Expr *c = expr_i64(az->arena, s.constant);
  IntSet acc = {c, c};
  for (int i = 0; i < s.n; i++) {
    const ArithTerm *term = &s.terms[i];
    const Expr *mono = arith_term_monomial(az, s.dtype, term);
    IntSet ts;
    if (!uses_dom(mono, dom)) {
      ts = intset_point(mono);
    } else {
      /* Exactly one atom may vary; the rest multiply it. */
      int varying = -1, n_varying = 0;
      for (int k = 0; k < term->n_atoms; k++)
        if (uses_dom(term->atoms[k], dom)) varying = k, n_varying++;
      /* A product too large to distribute stays an atom of kind mul;
       * recursing into it would parse it back into the same atom. */
      ExprKind vk = n_varying == 1 ? term->atoms[varying]->kind : EXPR_MUL;
      if (n_varying != 1 || vk == EXPR_ADD || vk == EXPR_SUB || vk == EXPR_MUL) {
        ts = from_bound(az, arith_bound_in(az, mono, dom));
      } else {
        const Expr *mult = expr_i64(az->arena, term->coef);
        for (int k = 0; k < term->n_atoms; k++)
          if (k != varying) mult = expr_mul(az->arena, mult, term->atoms[k]);
        ts = scale_set(az, eval_rec(az, term->atoms[varying], dom), arith_simplify(az, mult));
      }
    }
    acc.min = add_or_null(az, acc.min, ts.min);
    acc.max = add_or_null(az, acc.max, ts.max);
  }
  return acc;
}

static IntSet eval_rec(Analyzer *az, const Expr *e, const PtrMap *dom) {
  if (!uses_dom(e, dom)) return intset_point(e);
  if (!arith_is_index_type(e->dtype)) return from_bound(az, arith_bound_in(az, e, dom));
  int64_t c;
  switch (e->kind) {
    case EXPR_VAR: {
      const IntSet *s = ptrmap_get(dom, e);
      return s ? *s : intset_point(e);
    }
    case EXPR_ADD: case EXPR_SUB: case EXPR_MUL: return eval_sum(az, e, dom);
    case EXPR_FLOORDIV:
      if (expr_as_int(e->bin.b, &c) && c != 0) {
        IntSet sx = eval_rec(az, e->bin.a, dom);
        const Expr *lo = sx.min ? expr_floordiv(az->arena, sx.min, e->bin.b) : NULL;
        const Expr *hi = sx.max ? expr_floordiv(az->arena, sx.max, e->bin.b) : NULL;
        IntSet r = {c > 0 ? lo : hi, c > 0 ? hi : lo};
        return r;
      }
      break;
    case EXPR_FLOORMOD:
      if (expr_as_int(e->bin.b, &c) && c > 0) {
        IntSet sx = eval_rec(az, e->bin.a, dom);
        if (sx.min && sx.max) {
          /* All of [lo, hi] in one block of c: floormod is x - k*c there. */
          const Expr *qlo = arith_simplify(az, expr_floordiv(az->arena, sx.min, e->bin.b));
          const Expr *qhi = arith_simplify(az, expr_floordiv(az->arena, sx.max, e->bin.b));
          if (expr_equal(qlo, qhi)) {
            IntSet r = {expr_floormod(az->arena, sx.min, e->bin.b), expr_floormod(az->arena, sx.max, e->bin.b)};
            return r;
          }
        }
        IntBound b = arith_bound_in(az, e, dom);
        return from_bound(az, b);
      }
      break;
    case EXPR_MIN: case EXPR_MAX: {
      IntSet a = eval_rec(az, e->bin.a, dom), b = eval_rec(az, e->bin.b, dom);
      IntSet r;
      if (e->kind == EXPR_MIN) {
        r.min = a.min && b.min ? expr_min(az->arena, a.min, b.min) : NULL;
        r.max = a.max && b.max ? expr_min(az->arena, a.max, b.max) : (a.max ? a.max : b.max);
      } else {
        r.min = a.min && b.min ? expr_max(az->arena, a.min, b.min) : (a.min ? a.min : b.min);
        r.max = a.max && b.max ? expr_max(az->arena, a.max, b.max) : NULL;
      }
      return r;
    }
    case EXPR_SELECT: {
      IntSet a = eval_rec(az, e->select.t, dom), b = eval_rec(az, e->select.f, dom);
      IntSet r = {a.min && b.min ? expr_min(az->arena, a.min, b.min) : NULL,
                  a.max && b.max ? expr_max(az->arena, a.max, b.max) : NULL};
      return r;
    }
    default: break;
  }
  return from_bound(az, arith_bound_in(az, e, dom));
}

IntSet arith_eval_set(Analyzer *az, const Expr *e, const PtrMap *dom) {
  if (!dtype_is_int(e->dtype) || e->dtype.lanes != 1) return uses_dom(e, dom) ? everything() : intset_point(e);
  IntSet r = eval_rec(az, arith_simplify(az, e), dom);
  if (r.min) r.min = arith_simplify(az, r.min);
  if (r.max) r.max = arith_simplify(az, r.max);
  /* A set may mention another variable of dom (an inner loop whose min is
   * an outer loop variable): relax each end again over dom. */
  for (int round = 0; round < 4; round++) {
    bool again = false;
    if (r.min && uses_dom(r.min, dom)) {
      r.min = eval_rec(az, r.min, dom).min;
      if (r.min) r.min = arith_simplify(az, r.min);
      again = true;
    }
    if (r.max && uses_dom(r.max, dom)) {
      r.max = eval_rec(az, r.max, dom).max;
      if (r.max) r.max = arith_simplify(az, r.max);
      again = true;
    }
    if (!again) break;
  }
  if (r.min && uses_dom(r.min, dom)) r.min = NULL;
  if (r.max && uses_dom(r.max, dom)) r.max = NULL;
  /* A constant bound may be tighter than the symbolic one where the symbolic
   * answer is only an over-approximation. */
  if (r.min && r.max && r.min->kind == EXPR_INT && r.max->kind == EXPR_INT) {
    IntBound b = arith_bound_in(az, e, dom);
    if (b.min > r.min->int_value) r.min = expr_i64(az->arena, b.min);
    if (b.max < r.max->int_value) r.max = expr_i64(az->arena, b.max);
  }
  return r;
}
