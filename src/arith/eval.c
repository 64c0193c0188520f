/* Evaluating integer/bool expressions at a point: the reference semantics
 * the simplifier is tested against (and a constant folder for callers). */
#include "arith/arith_internal.h"

static bool eval_rec(const Expr *e, const PtrMap *values, int64_t *out);

static bool eval_bin(const Expr *e, const PtrMap *values, int64_t *out) {
  int64_t x, y;
  if (!eval_rec(e->bin.a, values, &x) || !eval_rec(e->bin.b, values, &y)) return false;
  DType t = e->bin.a->dtype;
  bool uns = t.code == DT_UINT;
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  int64_t r;
  switch (e->kind) {
    case EXPR_ADD: r = (int64_t)(ux + uy); break;
    case EXPR_SUB: r = (int64_t)(ux - uy); break;
    case EXPR_MUL: r = (int64_t)(ux * uy); break;
    case EXPR_DIV: case EXPR_MOD: case EXPR_FLOORDIV: case EXPR_FLOORMOD: {
      if (y == 0) return false;
      bool div = e->kind == EXPR_DIV || e->kind == EXPR_FLOORDIV;
      if (uns) r = (int64_t)(div ? ux / uy : ux % uy);
      else if (y == -1) r = div ? (int64_t)(-ux) : 0;
      else if (e->kind == EXPR_DIV) r = x / y;
      else if (e->kind == EXPR_MOD) r = x % y;
      else if (e->kind == EXPR_FLOORDIV) r = arith_floordiv_i64(x, y);
      else r = arith_floormod_i64(x, y);
      break;
    }
    case EXPR_MIN: case EXPR_MAX: {
      bool lt = uns ? ux < uy : x < y;
      r = (e->kind == EXPR_MIN) == lt ? x : y;
      break;
    }
    case EXPR_EQ: r = x == y; break;
    case EXPR_NE: r = x != y; break;
    case EXPR_LT: r = uns ? ux < uy : x < y; break;
    case EXPR_LE: r = uns ? ux <= uy : x <= y; break;
    case EXPR_GT: r = uns ? ux > uy : x > y; break;
    case EXPR_GE: r = uns ? ux >= uy : x >= y; break;
    case EXPR_AND: r = x && y; break;
    case EXPR_OR: r = x || y; break;
    default: return false;
  }
  *out = arith_wrap_int(e->dtype, r);
  return true;
}

static bool eval_rec(const Expr *e, const PtrMap *values, int64_t *out) {
  if (e->dtype.lanes != 1 || !(dtype_is_int(e->dtype) || dtype_is_bool(e->dtype))) return false;
  switch (e->kind) {
    case EXPR_INT: *out = arith_wrap_int(e->dtype, e->int_value); return true;
    case EXPR_VAR: {
      const int64_t *v = values ? ptrmap_get(values, e) : NULL;
      if (!v) return false;
      *out = arith_wrap_int(e->dtype, *v);
      return true;
    }
    case EXPR_NOT: {
      int64_t x;
      if (!eval_rec(e->un.a, values, &x)) return false;
      *out = !x;
      return true;
    }
    case EXPR_CAST: {
      int64_t x;
      if (!eval_rec(e->un.a, values, &x)) return false;
      *out = arith_wrap_int(e->dtype, x);
      return true;
    }
    case EXPR_SELECT: {
      int64_t c, t, f;
      if (!eval_rec(e->select.cond, values, &c) || !eval_rec(e->select.t, values, &t) ||
          !eval_rec(e->select.f, values, &f))
        return false;
      *out = c ? t : f;
      return true;
    }
    default:
      if (expr_is_binary(e->kind)) return eval_bin(e, values, out);
      return false;
  }
}

bool arith_eval_int(const Expr *e, const PtrMap *values, int64_t *out) { return eval_rec(e, values, out); }
