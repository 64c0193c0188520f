/* Iterator-map detection (TensorIR's affine-binding check; the idea of TVM's
 * iter_affine_map.cc, written afresh).
 *
 * Every index is rewritten as a sum of *splits* plus a loop-invariant base:
 *
 *   split(M, lower, extent, scale) = floormod(floordiv(M, lower), extent) * scale
 *
 * where M is an iterator *mark*: a loop variable shifted to start at 0, or a
 * fusion of other splits (i0*8 + i1 becomes one mark of extent 128). An
 * index is a valid binding when its splits fuse into a single split of scale
 * 1. The map is bijective when the splits used by all indices tile every
 * mark exactly once (lower factors 1, e1, e1*e2, ... up to the extent). A
 * predicate `fused < n` restricts a mark to its first n values (non-perfect
 * splits); such a mark may only be used whole. */
#include "arith/arith_internal.h"
#include "support/vec.h"

#include <stdlib.h>

typedef struct IterMark IterMark;

typedef struct Split {
  IterMark *mark;
  int64_t lower, extent, scale;
} Split;

typedef struct Sum {
  Split *splits;
  int n;
  const Expr *base; /* loop-invariant part */
} Sum;

typedef VEC(Split) SplitVec;

struct IterMark {
  int id;
  const Expr *loop_var; /* NULL for a fused mark */
  Split *source;        /* fused: the pieces, scales relative (smallest 1) */
  int n_source;
  int64_t extent, limit; /* limit < extent where a predicate cuts it short */
};

typedef struct Ctx {
  Analyzer *az;
  Arena *a;
  const IterVar *loops;
  int n_loops;
  IterMark **loop_marks; /* NULL for loops of extent 1 (constants) */
  VEC(IterMark *) marks; /* all marks in creation order */
  LoomError *err;
  const char *what; /* "index 0 (i*8 + j)" for messages */
  bool failed;
} Ctx;

static bool fail(Ctx *c, const char *fmt, const char *detail) {
  if (!c->failed) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, detail ? detail : "");
    err_set(c->err, LOOM_ERR_INVALID_ARG, "%s: %s", c->what, msg);
  }
  c->failed = true;
  return false;
}

static bool uses_loop(Ctx *c, const Expr *e) {
  for (int l = 0; l < c->n_loops; l++)
    if (expr_uses_var(e, c->loops[l].var)) return true;
  return false;
}

static Sum sum_base(const Expr *base) {
  Sum s = {NULL, 0, base};
  return s;
}

static Sum sum_one(Ctx *c, Split sp, const Expr *base) {
  Sum s = {ARENA_NEW(c->a, Split), 1, base};
  s.splits[0] = sp;
  return s;
}

static Sum sum_add(Ctx *c, Sum x, Sum y, int64_t sign) {
  Sum s = {ARENA_ARRAY(c->a, Split, x.n + y.n), 0, NULL};
  for (int i = 0; i < x.n; i++) s.splits[s.n++] = x.splits[i];
  for (int i = 0; i < y.n; i++) {
    Split sp = y.splits[i];
    sp.scale *= sign;
    s.splits[s.n++] = sp;
  }
  s.base = arith_simplify(c->az, sign > 0 ? expr_add(c->a, x.base, y.base) : expr_sub(c->a, x.base, y.base));
  return s;
}

static int cmp_scale(const void *p, const void *q) {
  const Split *x = p, *y = q;
  return x->scale < y->scale ? -1 : x->scale > y->scale;
}

static bool same_splits(const Split *x, int nx, const Split *y, int ny) {
  if (nx != ny) return false;
  for (int i = 0; i < nx; i++)
    if (x[i].mark != y[i].mark || x[i].lower != y[i].lower || x[i].extent != y[i].extent || x[i].scale != y[i].scale)
      return false;
  return true;
}

/* Fuses the splits of x (base ignored) into one split. They must form a
 * mixed-radix chain: sorted by scale, each scale is the previous scale times
 * the previous extent. */
static bool fuse(Ctx *c, Sum x, Split *out) {
  LOOM_ASSERT(x.n > 0);
  if (x.n == 1) {
    if (x.splits[0].scale <= 0) return fail(c, "iterator with a non-positive scale%s", NULL);
    *out = x.splits[0];
    return true;
  }
  Split *sp = arena_memdup(c->a, x.splits, sizeof(Split) * (size_t)x.n);
  qsort(sp, (size_t)x.n, sizeof(Split), cmp_scale);
  int64_t s0 = sp[0].scale, expected = s0, total = 1;
  if (s0 <= 0) return fail(c, "iterator with a non-positive scale%s", NULL);
  for (int i = 0; i < x.n; i++) {
    if (sp[i].scale != expected)
      return fail(c, "iterators overlap or leave gaps (an iterator used twice, or scales that do not chain)%s", NULL);
    if (sp[i].mark->limit != sp[i].mark->extent)
      return fail(c, "an iterator restricted by the predicate is fused with others%s", NULL);
    if (__builtin_mul_overflow(expected, sp[i].extent, &expected) || __builtin_mul_overflow(total, sp[i].extent, &total))
      return fail(c, "extent overflow%s", NULL);
  }
  /* Pieces of one mark in order (floordiv(f,32)*32 + floormod(f,32)) fuse
   * back into that mark. */
  bool contiguous = true;
  for (int i = 1; i < x.n && contiguous; i++)
    contiguous = sp[i].mark == sp[0].mark && sp[i].lower == sp[i - 1].lower * sp[i - 1].extent;
  if (contiguous) {
    Split r = {sp[0].mark, sp[0].lower, total, s0};
    *out = r;
    return true;
  }
  for (int i = 0; i < x.n; i++) sp[i].scale /= s0;
  IterMark *m = NULL;
  for (int i = 0; i < c->marks.n && !m; i++)
    if (!c->marks.items[i]->loop_var && same_splits(c->marks.items[i]->source, c->marks.items[i]->n_source, sp, x.n))
      m = c->marks.items[i];
  if (!m) {
    m = ARENA_NEW(c->a, IterMark);
    m->id = c->marks.n;
    m->source = sp;
    m->n_source = x.n;
    m->extent = m->limit = total;
    VEC_PUSH(c->a, c->marks, m);
  }
  Split r = {m, 1, total, s0};
  *out = r;
  return true;
}

static bool to_sum(Ctx *c, const Expr *e, Sum *out);

/* floordiv / floormod of an iterator sum by a positive constant. */
static bool div_mod(Ctx *c, ExprKind k, const Expr *e, int64_t d, Sum *out) {
  Sum x;
  if (!to_sum(c, e->bin.a, &x)) return false;
  int64_t b;
  if (!expr_as_int(x.base, &b)) return fail(c, "division of an iterator with a symbolic offset%s", NULL);
  if (arith_floormod_i64(b, d) != 0) return fail(c, "division of an iterator with an offset not divisible by the divisor%s", NULL);
  const Expr *zero = expr_i64(c->a, 0);
  if (x.n == 0) {
    *out = sum_base(arith_simplify(c->az, expr_binary(c->a, k, x.base, e->bin.b)));
    return true;
  }
  Split f;
  if (!fuse(c, x, &f)) return false;
  int64_t s = f.scale;
  if (d % s == 0) {
    int64_t q = d / s;
    if (f.extent <= q) { /* f*s < d: floordiv is 0, floormod is f*s */
      *out = k == EXPR_FLOORDIV ? sum_base(expr_i64(c->a, b / d)) : sum_one(c, f, zero);
      return true;
    }
    if (f.extent % q != 0) return fail(c, "split by a factor that does not divide the iterator's extent%s", NULL);
    if (f.mark->limit != f.mark->extent)
      return fail(c, "split of an iterator restricted by the predicate%s", NULL);
    Split r = f;
    if (k == EXPR_FLOORDIV) {
      r.lower = f.lower * q;
      r.extent = f.extent / q;
      r.scale = 1;
      *out = sum_one(c, r, expr_i64(c->a, b / d));
    } else {
      r.extent = q;
      *out = sum_one(c, r, zero);
    }
    return true;
  }
  if (s % d == 0) {
    if (k == EXPR_FLOORMOD) {
      *out = sum_base(zero);
    } else {
      Split r = f;
      r.scale = s / d;
      *out = sum_one(c, r, expr_i64(c->a, b / d));
    }
    return true;
  }
  return fail(c, "divisor does not align with the iterator's scale%s", NULL);
}

static bool to_sum(Ctx *c, const Expr *e, Sum *out) {
  if (!uses_loop(c, e)) {
    *out = sum_base(e);
    return true;
  }
  switch (e->kind) {
    case EXPR_VAR:
      for (int l = 0; l < c->n_loops; l++) {
        if (c->loops[l].var != e) continue;
        IterMark *m = c->loop_marks[l];
        *out = m ? sum_one(c, (Split){m, 1, m->extent, 1}, c->loops[l].min) : sum_base(c->loops[l].min);
        return true;
      }
      break;
    case EXPR_ADD: case EXPR_SUB: {
      Sum x, y;
      if (!to_sum(c, e->bin.a, &x) || !to_sum(c, e->bin.b, &y)) return false;
      *out = sum_add(c, x, y, e->kind == EXPR_ADD ? 1 : -1);
      return true;
    }
    case EXPR_MUL: {
      const Expr *p = e->bin.a, *q = e->bin.b;
      if (uses_loop(c, q)) p = e->bin.b, q = e->bin.a;
      if (uses_loop(c, q)) return fail(c, "product of two iterators (not affine)%s", NULL);
      int64_t k;
      if (!expr_as_int(arith_simplify(c->az, q), &k)) return fail(c, "iterator scaled by a non-constant%s", NULL);
      Sum x;
      if (!to_sum(c, p, &x)) return false;
      for (int i = 0; i < x.n; i++) x.splits[i].scale *= k;
      x.base = arith_simplify(c->az, expr_mul(c->a, x.base, expr_i64(c->a, k)));
      *out = x;
      return true;
    }
    case EXPR_FLOORDIV: case EXPR_FLOORMOD: {
      int64_t d;
      if (!expr_as_int(arith_simplify(c->az, e->bin.b), &d) || d <= 0) return fail(c, "division of an iterator by a non-positive or symbolic divisor%s", NULL);
      return div_mod(c, e->kind, e, d, out);
    }
    default: break;
  }
  return fail(c, "iterator used in a non-affine expression (%s)", expr_kind_name(e->kind));
}

/* A conjunct `lhs < n` (or <=, >, >=) restricts the mark lhs fuses into. */
static bool apply_predicate(Ctx *c, const Expr *p, bool strict) {
  if (p->kind == EXPR_AND) return apply_predicate(c, p->bin.a, strict) && apply_predicate(c, p->bin.b, strict);
  if (p->kind == EXPR_INT && p->int_value != 0) return true;
  const Expr *lhs = NULL, *rhs = NULL;
  int64_t inclusive = 0;
  switch (p->kind) {
    case EXPR_LT: lhs = p->bin.a, rhs = p->bin.b; break;
    case EXPR_LE: lhs = p->bin.a, rhs = p->bin.b, inclusive = 1; break;
    case EXPR_GT: lhs = p->bin.b, rhs = p->bin.a; break;
    case EXPR_GE: lhs = p->bin.b, rhs = p->bin.a, inclusive = 1; break;
    default: break;
  }
  int64_t n, b;
  Sum x;
  Split f;
  if (!lhs || !expr_as_int(rhs, &n) || uses_loop(c, rhs)) goto unsupported;
  if (!to_sum(c, lhs, &x)) return false;
  if (x.n == 0 || !expr_as_int(x.base, &b)) goto unsupported;
  if (!fuse(c, x, &f)) return false;
  if (f.scale != 1 || f.lower != 1 || f.extent != f.mark->extent) goto unsupported;
  int64_t limit = n - b + inclusive;
  if (limit <= 0) return fail(c, "the predicate leaves no iteration%s", NULL);
  if (limit < f.mark->limit) f.mark->limit = limit;
  return true;
unsupported:
  if (!strict) return true; /* it only shrinks the domain; extents stay upper bounds */
  return fail(c, "unsupported predicate (expected `fused_iterators < constant`)%s", NULL);
}

static int cmp_lower(const void *p, const void *q) {
  const Split *x = p, *y = q;
  return x->lower < y->lower ? -1 : x->lower > y->lower;
}

static const char *mark_name(Ctx *c, const IterMark *m) {
  if (m->loop_var) return m->loop_var->var.name;
  return arena_printf(c->a, "fused iterator of extent %lld", (long long)m->extent);
}

/* A split of a fused mark covers the digit range [lower, lower*extent) of
 * it. Where that range cuts the fused pieces at digit boundaries, it is the
 * union of splits of the pieces' own marks: floormod(i0*4 + i1, 4) uses i1
 * itself, as if it had been simplified to i1. */
static bool split_aligned(const IterMark *m, Split s) {
  int64_t lo_all = s.lower, hi_all = s.lower * s.extent;
  for (int k = 0; k < m->n_source; k++) {
    int64_t b = m->source[k].scale, top = b * m->source[k].extent;
    int64_t lo = lo_all > b ? lo_all : b, hi = hi_all < top ? hi_all : top;
    if (lo < hi && !(lo % b == 0 && hi % lo == 0)) return false;
  }
  return true;
}

static void push_pieces(Ctx *c, SplitVec *uses, const IterMark *m, Split s) {
  int64_t lo_all = s.lower, hi_all = s.lower * s.extent;
  for (int k = 0; k < m->n_source; k++) {
    const Split *p = &m->source[k];
    int64_t b = p->scale, top = b * p->extent;
    int64_t lo = lo_all > b ? lo_all : b, hi = hi_all < top ? hi_all : top;
    if (lo >= hi) continue;
    Split sub = {p->mark, p->lower * (lo / b), hi / lo, 1};
    VEC_PUSH(c->a, uses[p->mark->id], sub);
  }
}

/* The uses of every mark must tile it (bijective) or at least not overlap. */
static bool check_uses(Ctx *c, const SplitVec *top, bool bijective) {
  int nm = c->marks.n;
  SplitVec *uses = ARENA_ARRAY(c->a, SplitVec, nm);
  for (int i = 0; i < nm; i++) uses[i].n = uses[i].cap = 0, uses[i].items = NULL;
  for (int i = 0; i < top->n; i++) VEC_PUSH(c->a, uses[top->items[i].mark->id], top->items[i]);
  /* Newest marks first: a fused mark's sources are older marks. */
  for (int id = nm - 1; id >= 0; id--) {
    IterMark *m = c->marks.items[id];
    SplitVec *u = &uses[id];
    if (u->n == 0) {
      if (bijective && m->loop_var) return fail(c, "loop %s is not used by any index", m->loop_var->var.name);
      if (bijective && m->limit != m->extent) return fail(c, "the predicate does not match any index%s", NULL);
      continue;
    }
    /* A fused mark whose uses all cut it at piece boundaries hands them
     * down to the pieces (marks cut short by a predicate are not products,
     * so they are checked whole). */
    if (!m->loop_var && m->limit == m->extent) {
      bool aligned = true;
      for (int k = 0; k < u->n && aligned; k++) aligned = split_aligned(m, u->items[k]);
      if (aligned) {
        for (int k = 0; k < u->n; k++) push_pieces(c, uses, m, u->items[k]);
        continue;
      }
    }
    /* Checked whole: a piece of it may also be used directly on its own
     * mark (floormod(i0*4 + i1, 2) simplifies to floormod(i1, 2)); lift
     * such uses up to digits of m so that m's tiling sees them. */
    if (!m->loop_var && m->limit == m->extent) {
      for (int k = 0; k < m->n_source; k++) {
        const Split *p = &m->source[k];
        SplitVec *pu = &uses[p->mark->id];
        int kept = 0;
        for (int q = 0; q < pu->n; q++) {
          Split w = pu->items[q];
          int64_t top = p->lower * p->extent, wtop = w.lower * w.extent;
          if (w.lower >= p->lower && w.lower % p->lower == 0 && wtop <= top && top % wtop == 0) {
            Split lifted = {m, p->scale * (w.lower / p->lower), w.extent, 1};
            VEC_PUSH(c->a, *u, lifted);
          } else {
            pu->items[kept++] = w;
          }
        }
        pu->n = kept;
      }
    }
    qsort(u->items, (size_t)u->n, sizeof(Split), cmp_lower);
    int64_t expected = 1;
    for (int k = 0; k < u->n; k++) {
      const Split *s = &u->items[k];
      /* Without bijectivity, gaps are fine but pieces must stay separate
       * mixed-radix digits. */
      bool ok = bijective ? s->lower == expected : (s->lower >= expected && s->lower % expected == 0);
      if (!ok) {
        if (s->lower < expected) return fail(c, "%s is used more than once (overlapping pieces)", mark_name(c, m));
        return fail(c, "%s is not fully covered by the indices", mark_name(c, m));
      }
      expected = s->lower * s->extent;
    }
    if (bijective && expected != m->extent)
      return fail(c, "%s is not fully covered by the indices", mark_name(c, m));
    for (int k = 0; k < m->n_source; k++) VEC_PUSH(c->a, uses[m->source[k].mark->id], m->source[k]);
  }
  return true;
}

static bool detect_once(Analyzer *az, const Expr *const *indices, int n, const IterVar *loops, int n_loops,
                        const Expr *predicate, bool require_bijective, bool simplify_first,
                        const Expr **out_extents, const Expr **out_mins, LoomError *err) {
  Ctx c = {az, arith_arena(az), loops, n_loops, NULL, {NULL, 0, 0}, err, "iterator map", false};
  c.loop_marks = ARENA_ARRAY(c.a, IterMark *, n_loops);
  for (int l = 0; l < n_loops; l++) {
    int64_t ext;
    const Expr *e = arith_simplify(az, loops[l].extent);
    if (!expr_as_int(e, &ext)) {
      c.what = arena_printf(c.a, "loop %s", loops[l].var->var.name);
      return fail(&c, "extent %s is not a constant", expr_to_string(c.a, loops[l].extent));
    }
    if (ext <= 0) {
      c.what = arena_printf(c.a, "loop %s", loops[l].var->var.name);
      return fail(&c, "extent must be positive%s", NULL);
    }
    if (ext == 1) continue;
    IterMark *m = ARENA_NEW(c.a, IterMark);
    m->id = c.marks.n;
    m->loop_var = loops[l].var;
    m->extent = m->limit = ext;
    c.loop_marks[l] = m;
    VEC_PUSH(c.a, c.marks, m);
  }
  if (predicate) {
    c.what = arena_printf(c.a, "predicate %s", expr_to_string(c.a, predicate));
    const Expr *p = simplify_first ? arith_simplify(az, predicate) : predicate;
    if (!apply_predicate(&c, p, require_bijective)) return false;
  }
  SplitVec top = {NULL, 0, 0};
  for (int k = 0; k < n; k++) {
    c.what = arena_printf(c.a, "index %d (%s)", k, expr_to_string(c.a, indices[k]));
    Sum s;
    if (!to_sum(&c, simplify_first ? arith_simplify(az, indices[k]) : indices[k], &s)) return false;
    int64_t extent = 1;
    if (s.n > 0) {
      Split f;
      if (!fuse(&c, s, &f)) return false;
      if (f.scale != 1) return fail(&c, "the index is strided (scale %s), not a dense range", arena_printf(c.a, "%lld", (long long)f.scale));
      bool whole = f.lower == 1 && f.extent == f.mark->extent;
      if (f.mark->limit != f.mark->extent && !whole)
        return fail(&c, "uses part of an iterator restricted by the predicate%s", NULL);
      extent = whole ? f.mark->limit : f.extent;
      VEC_PUSH(c.a, top, f);
    }
    if (out_extents) out_extents[k] = expr_i64(c.a, extent);
    if (out_mins) out_mins[k] = arith_simplify(az, s.base);
  }
  c.what = "iterator map";
  return check_uses(&c, &top, require_bijective);
}

/* The bindings as written by split/fuse are compositional, which is what the
 * coverage check reads best; the simplifier may rewrite them across fusion
 * boundaries (floormod(i*12 + j*4 + k, 6) -> floormod(j*4 + k, 6)) but also
 * cancels what the raw form cannot take (i - i). Both forms have the same
 * value, so accepting either is sound: try the raw form, then the simplified
 * one, and report the raw form's error. */
bool arith_detect_iter_map(Analyzer *az, const Expr *const *indices, int n, const IterVar *loops,
                           int n_loops, const Expr *predicate, bool require_bijective,
                           const Expr **out_extents, const Expr **out_mins, LoomError *err) {
  LoomError first = {0};
  if (detect_once(az, indices, n, loops, n_loops, predicate, require_bijective, false, out_extents, out_mins, &first))
    return true;
  LoomError second = {0};
  if (detect_once(az, indices, n, loops, n_loops, predicate, require_bijective, true, out_extents, out_mins, &second))
    return true;
  if (err) *err = first;
  return false;
}
