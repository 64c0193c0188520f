/* The affine canonical form of integer expressions:
 *
 *   sum_k coef_k * monomial_k + constant
 *
 * where a monomial is a sorted product of "atoms" (anything that is not a
 * sum or product: variables, floordiv/floormod, min/max, loads, ...).
 * Coefficients live in the ring of the dtype (wrapping to its width), so the
 * form is exact for every integer type. Terms are ordered by
 * arith_expr_order, which makes equal affine expressions print equally. */
#include "arith/arith_internal.h"

#include <string.h>

/* Products of sums are distributed only up to this many terms, so a chain of
 * products cannot blow up the expression. */
#define ARITH_MAX_DISTRIBUTED_TERMS 16

static int cmp_i64(int64_t x, int64_t y) { return x < y ? -1 : x > y; }

static int dtype_order(DType x, DType y) {
  if (x.code != y.code) return x.code < y.code ? -1 : 1;
  if (x.bits != y.bits) return x.bits < y.bits ? -1 : 1;
  return cmp_i64(x.lanes, y.lanes);
}

int arith_expr_order(const Expr *x, const Expr *y) {
  if (x == y) return 0;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  int c = dtype_order(x->dtype, y->dtype);
  if (c) return c;
  switch (x->kind) {
    case EXPR_INT: return cmp_i64(x->int_value, y->int_value);
    case EXPR_FLOAT: return x->float_value < y->float_value ? -1 : (x->float_value > y->float_value);
    case EXPR_VAR:
      /* Names first (stable across runs); identity breaks ties between
       * distinct variables that share a name. */
      c = strcmp(x->var.name, y->var.name);
      if (c) return c < 0 ? -1 : 1;
      return (uintptr_t)x < (uintptr_t)y ? -1 : 1;
    case EXPR_NOT: case EXPR_CAST: return arith_expr_order(x->un.a, y->un.a);
    case EXPR_SELECT:
      if ((c = arith_expr_order(x->select.cond, y->select.cond))) return c;
      if ((c = arith_expr_order(x->select.t, y->select.t))) return c;
      return arith_expr_order(x->select.f, y->select.f);
    case EXPR_LOAD:
      if (x->load.buffer != y->load.buffer) {
        c = strcmp(x->load.buffer->name, y->load.buffer->name);
        if (c) return c < 0 ? -1 : 1;
        return (uintptr_t)x->load.buffer < (uintptr_t)y->load.buffer ? -1 : 1;
      }
      if (x->load.n != y->load.n) return cmp_i64(x->load.n, y->load.n);
      for (int i = 0; i < x->load.n; i++)
        if ((c = arith_expr_order(x->load.indices[i], y->load.indices[i]))) return c;
      return 0;
    case EXPR_CALL:
      if (x->call.op != y->call.op) return cmp_i64(x->call.op, y->call.op);
      if (x->call.n != y->call.n) return cmp_i64(x->call.n, y->call.n);
      for (int i = 0; i < x->call.n; i++)
        if ((c = arith_expr_order(x->call.args[i], y->call.args[i]))) return c;
      return 0;
    case EXPR_RAMP:
      if ((c = arith_expr_order(x->ramp.base, y->ramp.base))) return c;
      return arith_expr_order(x->ramp.stride, y->ramp.stride);
    case EXPR_BROADCAST: return arith_expr_order(x->broadcast.value, y->broadcast.value);
    case EXPR_REDUCE:
      /* Reductions never reach index arithmetic; equality is all we need. */
      if (expr_equal(x, y)) return 0;
      return (uintptr_t)x < (uintptr_t)y ? -1 : 1;
    default:
      if ((c = arith_expr_order(x->bin.a, y->bin.a))) return c;
      return arith_expr_order(x->bin.b, y->bin.b);
  }
}

/* Coefficients are kept sign-extended to the dtype's width. */
static int64_t coef_wrap(DType t, int64_t v) {
  if (t.bits >= 64 || t.bits == 0) return v;
  uint64_t mask = (1ULL << t.bits) - 1, sign = 1ULL << (t.bits - 1);
  uint64_t u = (uint64_t)v & mask;
  return (int64_t)((u ^ sign) - sign);
}
static int64_t wadd(DType t, int64_t x, int64_t y) { return coef_wrap(t, (int64_t)((uint64_t)x + (uint64_t)y)); }
static int64_t wmul(DType t, int64_t x, int64_t y) { return coef_wrap(t, (int64_t)((uint64_t)x * (uint64_t)y)); }

static int monomial_order(const ArithTerm *x, const ArithTerm *y) {
  int n = x->n_atoms < y->n_atoms ? x->n_atoms : y->n_atoms;
  for (int i = 0; i < n; i++) {
    int c = arith_expr_order(x->atoms[i], y->atoms[i]);
    if (c) return c;
  }
  return cmp_i64(x->n_atoms, y->n_atoms);
}

static ArithSum sum_const(DType t, int64_t c) {
  ArithSum s = {t, NULL, 0, coef_wrap(t, c)};
  return s;
}

static ArithSum sum_atom(Analyzer *az, const Expr *e) {
  ArithSum s = {e->dtype, ARENA_NEW(az->arena, ArithTerm), 1, 0};
  const Expr **atoms = ARENA_ARRAY(az->arena, const Expr *, 1);
  atoms[0] = e;
  s.terms[0].coef = 1;
  s.terms[0].atoms = atoms;
  s.terms[0].n_atoms = 1;
  return s;
}

ArithSum arith_sum_add(Analyzer *az, ArithSum x, ArithSum y, int64_t y_scale) {
  DType t = x.dtype;
  ArithSum r = {t, ARENA_ARRAY(az->arena, ArithTerm, x.n + y.n), 0, wadd(t, x.constant, wmul(t, y.constant, y_scale))};
  int i = 0, j = 0;
  while (i < x.n || j < y.n) {
    int c = i == x.n ? 1 : j == y.n ? -1 : monomial_order(&x.terms[i], &y.terms[j]);
    ArithTerm term;
    if (c < 0) {
      term = x.terms[i++];
    } else if (c > 0) {
      term = y.terms[j++];
      term.coef = wmul(t, term.coef, y_scale);
    } else {
      term = x.terms[i];
      term.coef = wadd(t, x.terms[i].coef, wmul(t, y.terms[j].coef, y_scale));
      i++, j++;
    }
    if (term.coef != 0) r.terms[r.n++] = term;
  }
  return r;
}

ArithSum arith_sum_scale(Analyzer *az, ArithSum x, int64_t k) {
  ArithSum zero = sum_const(x.dtype, 0);
  return arith_sum_add(az, zero, x, k);
}

static ArithTerm term_mul(Analyzer *az, DType t, const ArithTerm *x, const ArithTerm *y) {
  ArithTerm r;
  r.coef = wmul(t, x->coef, y->coef);
  r.n_atoms = x->n_atoms + y->n_atoms;
  const Expr **atoms = ARENA_ARRAY(az->arena, const Expr *, r.n_atoms);
  int i = 0, j = 0, k = 0;
  while (i < x->n_atoms || j < y->n_atoms) {
    if (j == y->n_atoms || (i < x->n_atoms && arith_expr_order(x->atoms[i], y->atoms[j]) <= 0))
      atoms[k++] = x->atoms[i++];
    else
      atoms[k++] = y->atoms[j++];
  }
  r.atoms = atoms;
  return r;
}

bool arith_sum_mul(Analyzer *az, ArithSum x, ArithSum y, ArithSum *out) {
  DType t = x.dtype;
  if (x.n == 0) {
    *out = arith_sum_scale(az, y, x.constant);
    return true;
  }
  if (y.n == 0) {
    *out = arith_sum_scale(az, x, y.constant);
    return true;
  }
  if ((x.n + 1) * (y.n + 1) > ARITH_MAX_DISTRIBUTED_TERMS) return false;
  /* The constant takes part as a term with no atoms. */
  ArithTerm cx = {x.constant, NULL, 0}, cy = {y.constant, NULL, 0};
  ArithSum acc = sum_const(t, 0);
  for (int i = 0; i <= x.n; i++) {
    const ArithTerm *a = i < x.n ? &x.terms[i] : &cx;
    for (int j = 0; j <= y.n; j++) {
      const ArithTerm *b = j < y.n ? &y.terms[j] : &cy;
      ArithTerm p = term_mul(az, t, a, b);
      if (p.coef == 0) continue;
      ArithSum ps = sum_const(t, 0);
      if (p.n_atoms == 0) {
        ps.constant = p.coef;
      } else {
        ps.terms = ARENA_NEW(az->arena, ArithTerm);
        ps.terms[0] = p;
        ps.n = 1;
      }
      acc = arith_sum_add(az, acc, ps, 1);
    }
  }
  *out = acc;
  return true;
}

/* floordiv(x, c) * c + floormod(x, c) == x exactly; fusing loops produces
 * this pattern, so fold it back (index type only, where x cannot wrap). */
static ArithSum merge_div_mod(Analyzer *az, ArithSum s) {
  if (!arith_is_index_type(s.dtype)) return s;
  for (int i = 0; i < s.n; i++) {
    const ArithTerm *m = &s.terms[i];
    if (m->n_atoms != 1 || m->atoms[0]->kind != EXPR_FLOORMOD) continue;
    const Expr *x = m->atoms[0]->bin.a, *c = m->atoms[0]->bin.b;
    int64_t cv;
    if (!expr_as_int(c, &cv) || cv == 0) continue;
    for (int j = 0; j < s.n; j++) {
      const ArithTerm *d = &s.terms[j];
      if (d->n_atoms != 1 || d->atoms[0]->kind != EXPR_FLOORDIV) continue;
      if (!expr_equal(d->atoms[0]->bin.a, x) || !expr_equal(d->atoms[0]->bin.b, c)) continue;
      int64_t want;
      if (__builtin_mul_overflow(m->coef, cv, &want) || want != d->coef) continue;
      ArithSum rest = s;
      rest.terms = ARENA_ARRAY(az->arena, ArithTerm, s.n);
      rest.n = 0;
      for (int k = 0; k < s.n; k++)
        if (k != i && k != j) rest.terms[rest.n++] = s.terms[k];
      ArithSum xs = arith_sum_of(az, x);
      return merge_div_mod(az, arith_sum_add(az, rest, xs, m->coef));
    }
  }
  return s;
}

static ArithSum sum_of_rec(Analyzer *az, const Expr *e) {
  DType t = e->dtype;
  switch (e->kind) {
    case EXPR_INT: return sum_const(t, e->int_value);
    case EXPR_ADD: return arith_sum_add(az, sum_of_rec(az, e->bin.a), sum_of_rec(az, e->bin.b), 1);
    case EXPR_SUB: return arith_sum_add(az, sum_of_rec(az, e->bin.a), sum_of_rec(az, e->bin.b), -1);
    case EXPR_MUL: {
      ArithSum p;
      if (arith_sum_mul(az, sum_of_rec(az, e->bin.a), sum_of_rec(az, e->bin.b), &p)) return p;
      return sum_atom(az, e);
    }
    default: return sum_atom(az, e);
  }
}

ArithSum arith_sum_of(Analyzer *az, const Expr *e) {
  LOOM_ASSERT(dtype_is_int(e->dtype) && e->dtype.lanes == 1);
  return merge_div_mod(az, sum_of_rec(az, e));
}

static const Expr *mk_const(Analyzer *az, DType t, int64_t v) { return expr_int(az->arena, t, arith_wrap_int(t, v)); }

const Expr *arith_term_monomial(Analyzer *az, DType t, const ArithTerm *term) {
  const Expr *m = NULL;
  for (int i = 0; i < term->n_atoms; i++) m = m ? expr_mul(az->arena, m, term->atoms[i]) : term->atoms[i];
  if (!m) return mk_const(az, t, term->coef);
  if (term->coef != 1) m = expr_mul(az->arena, m, mk_const(az, t, term->coef));
  return m;
}

const Expr *arith_sum_to_expr(Analyzer *az, ArithSum s) {
  DType t = s.dtype;
  const Expr *r = NULL;
  /* Positive terms first, then negative ones as subtractions. */
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < s.n; i++) {
      ArithTerm term = s.terms[i];
      bool neg = term.coef < 0 && coef_wrap(t, -(uint64_t)term.coef) > 0;
      if (neg != (pass == 1)) continue;
      if (neg && r) {
        term.coef = coef_wrap(t, (int64_t)(-(uint64_t)term.coef));
        r = expr_sub(az->arena, r, arith_term_monomial(az, t, &term));
      } else {
        const Expr *m = arith_term_monomial(az, t, &term);
        r = r ? expr_add(az->arena, r, m) : m;
      }
    }
  }
  if (!r) return mk_const(az, t, s.constant);
  if (s.constant > 0 || (s.constant < 0 && coef_wrap(t, -(uint64_t)s.constant) <= 0))
    r = expr_add(az->arena, r, mk_const(az, t, s.constant));
  else if (s.constant < 0)
    r = expr_sub(az->arena, r, mk_const(az, t, (int64_t)(-(uint64_t)s.constant)));
  return r;
}

IntBound arith_sum_bound(Analyzer *az, ArithSum s, const PtrMap *dom) {
  if (!arith_is_index_type(s.dtype)) return arith_bound_in(az, arith_sum_to_expr(az, s), dom);
  IntBound acc = {s.constant, s.constant};
  for (int i = 0; i < s.n; i++) {
    const ArithTerm *term = &s.terms[i];
    IntBound m = {term->coef, term->coef};
    for (int k = 0; k < term->n_atoms; k++) {
      IntBound b = arith_bound_in(az, term->atoms[k], dom);
      int64_t v[4] = {arith_sat_mul(m.min, b.min), arith_sat_mul(m.min, b.max), arith_sat_mul(m.max, b.min),
                      arith_sat_mul(m.max, b.max)};
      m.min = m.max = v[0];
      for (int q = 1; q < 4; q++) {
        if (v[q] < m.min) m.min = v[q];
        if (v[q] > m.max) m.max = v[q];
      }
    }
    int64_t lo = (acc.min == ARITH_NEG_INF || m.min == ARITH_NEG_INF) ? ARITH_NEG_INF : arith_sat_add(acc.min, m.min);
    int64_t hi = (acc.max == ARITH_POS_INF || m.max == ARITH_POS_INF) ? ARITH_POS_INF : arith_sat_add(acc.max, m.max);
    acc.min = lo;
    acc.max = hi;
  }
  return acc;
}
