/* Randomized tests against brute-force evaluation: random integer
 * expressions over three variables with small ranges are simplified, and at
 * every point of the domain the original and the simplified expression must
 * evaluate equal; const_bound and eval_set must contain every value, and be
 * exact for affine expressions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "arith/arith.h"

typedef struct Rng {
  uint64_t s;
} Rng;

static uint64_t rng_next(Rng *r) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return r->s;
}
static int64_t rng_int(Rng *r, int64_t lo, int64_t hi) { return lo + (int64_t)(rng_next(r) % (uint64_t)(hi - lo + 1)); }

enum { NV = 3 };

typedef struct Ctx {
  Arena *a;
  Rng rng;
  DType t;
  const Expr *vars[NV];
  int64_t mins[NV], exts[NV];
} Ctx;

static const Expr *gen_int(Ctx *c, int depth);

static const Expr *gen_bool(Ctx *c, int depth) {
  int pick = (int)rng_int(&c->rng, 0, 9);
  if (depth <= 0 || pick < 6) {
    static const ExprKind cmps[] = {EXPR_EQ, EXPR_NE, EXPR_LT, EXPR_LE, EXPR_GT, EXPR_GE};
    return expr_binary(c->a, cmps[rng_int(&c->rng, 0, 5)], gen_int(c, depth - 1), gen_int(c, depth - 1));
  }
  if (pick == 6) return expr_not(c->a, gen_bool(c, depth - 1));
  if (pick == 7) return expr_bool(c->a, rng_int(&c->rng, 0, 1));
  return expr_binary(c->a, pick == 8 ? EXPR_AND : EXPR_OR, gen_bool(c, depth - 1), gen_bool(c, depth - 1));
}

static const Expr *gen_leaf(Ctx *c) {
  if (rng_int(&c->rng, 0, 2) == 0) return expr_int(c->a, c->t, rng_int(&c->rng, -9, 9));
  return c->vars[rng_int(&c->rng, 0, NV - 1)];
}

static const Expr *gen_int(Ctx *c, int depth) {
  if (depth <= 0) return gen_leaf(c);
  int pick = (int)rng_int(&c->rng, 0, 15);
  const Expr *x = gen_int(c, depth - 1);
  const Expr *k = expr_int(c->a, c->t, rng_int(&c->rng, 1, 9));
  switch (pick) {
    case 0: case 1: return expr_add(c->a, x, gen_int(c, depth - 1));
    case 2: case 3: return expr_sub(c->a, x, gen_int(c, depth - 1));
    case 4: return expr_mul(c->a, x, k);
    case 5: return expr_mul(c->a, x, gen_int(c, depth - 1));
    case 6: case 7: return expr_floordiv(c->a, x, k);
    case 8: case 9: return expr_floormod(c->a, x, k);
    case 10: return expr_binary(c->a, rng_int(&c->rng, 0, 1) ? EXPR_DIV : EXPR_MOD, x,
                                rng_int(&c->rng, 0, 3) ? k : expr_int(c->a, c->t, -rng_int(&c->rng, 1, 5)));
    case 11: return expr_min(c->a, x, gen_int(c, depth - 1));
    case 12: return expr_max(c->a, x, gen_int(c, depth - 1));
    case 13: return expr_select(c->a, gen_bool(c, depth - 1), x, gen_int(c, depth - 1));
    case 14: return expr_floordiv(c->a, expr_add(c->a, expr_mul(c->a, x, k), gen_int(c, depth - 1)), k);
    default: return gen_leaf(c);
  }
}

/* Calls f at every point of the domain; stops early when f returns false. */
typedef bool (*PointFn)(Ctx *c, const PtrMap *vals, void *ud);
static bool for_each_point(Ctx *c, PointFn f, void *ud) {
  int64_t v[NV];
  PtrMap vals;
  ptrmap_init(&vals, c->a);
  for (int q = 0; q < NV; q++) ptrmap_put(&vals, c->vars[q], &v[q]);
  for (v[0] = c->mins[0]; v[0] < c->mins[0] + c->exts[0]; v[0]++)
    for (v[1] = c->mins[1]; v[1] < c->mins[1] + c->exts[1]; v[1]++)
      for (v[2] = c->mins[2]; v[2] < c->mins[2] + c->exts[2]; v[2]++)
        if (!f(c, &vals, ud)) return false;
  return true;
}

typedef struct Check {
  const Expr *orig, *simp;
  IntBound bound;
  const Expr *set_min, *set_max;
  int64_t lo, hi;
  bool any;
  const Expr *proven; /* a condition arith_can_prove accepted, or NULL */
  const char *failure;
} Check;

static bool check_point(Ctx *c, const PtrMap *vals, void *ud) {
  Check *k = ud;
  int64_t x, y, p;
  if (k->proven && arith_eval_int(k->proven, vals, &p) && !p) {
    k->failure = "can_prove accepted a condition that is false somewhere";
    return false;
  }
  bool okx = arith_eval_int(k->orig, vals, &x);
  bool oky = arith_eval_int(k->simp, vals, &y);
  if (!okx) return true; /* division by zero in the original: nothing to compare */
  if (!oky || x != y) {
    k->failure = "value changed";
    return false;
  }
  if (!k->any || x < k->lo) k->lo = x;
  if (!k->any || x > k->hi) k->hi = x;
  k->any = true;
  if (x < k->bound.min || x > k->bound.max) {
    k->failure = "const_bound misses a value";
    return false;
  }
  int64_t smin, smax;
  if (k->set_min && (!arith_eval_int(k->set_min, vals, &smin) || x < smin)) {
    k->failure = "eval_set min misses a value";
    return false;
  }
  if (k->set_max && (!arith_eval_int(k->set_max, vals, &smax) || x > smax)) {
    k->failure = "eval_set max misses a value";
    return false;
  }
  return true;
}

static void ctx_init(Ctx *c, uint64_t seed, DType t) {
  c->a = arena_new();
  c->rng.s = seed * 2654435761u + 1;
  c->t = t;
  static const char *names[NV] = {"i", "j", "k"};
  for (int q = 0; q < NV; q++) {
    c->vars[q] = expr_var(c->a, names[q], t);
    c->mins[q] = rng_int(&c->rng, -4, 3);
    c->exts[q] = rng_int(&c->rng, 1, 6);
  }
}

static void report(Ctx *c, Check *k) {
  fprintf(stderr, "%s\n  orig: %s\n  simp: %s\n", k->failure, expr_to_string(c->a, k->orig),
          expr_to_string(c->a, k->simp));
  if (k->proven) fprintf(stderr, "  proven: %s\n", expr_to_string(c->a, k->proven));
  for (int q = 0; q < NV; q++)
    fprintf(stderr, "  %s in [%lld, %lld)\n", c->vars[q]->var.name, (long long)c->mins[q],
            (long long)(c->mins[q] + c->exts[q]));
}

static void run_random(DType t, int cases, uint64_t seed0, bool with_sets) {
  for (int n = 0; n < cases; n++) {
    Ctx c;
    ctx_init(&c, seed0 + (uint64_t)n, t);
    Analyzer *az = arith_analyzer_new(c.a);
    for (int q = 0; q < NV; q++)
      arith_bind_range(az, c.vars[q], expr_int(c.a, t, c.mins[q]), expr_int(c.a, t, c.exts[q]));
    Check k = {0};
    k.orig = gen_int(&c, (int)rng_int(&c.rng, 1, 5));
    k.simp = arith_simplify(az, k.orig);
    k.bound = arith_const_bound(az, k.orig);
    const Expr *cond = gen_bool(&c, (int)rng_int(&c.rng, 1, 3));
    if (arith_can_prove(az, cond)) k.proven = cond;
    /* The canonical form is a fixed point. */
    const Expr *again = arith_simplify(az, k.simp);
    if (!expr_equal(again, k.simp))
      fail_msg("not idempotent:\n  %s\n  %s", expr_to_string(c.a, k.simp), expr_to_string(c.a, again));
    if (with_sets) {
      /* Variable 0 stays symbolic; the others range over their domains. */
      PtrMap dom;
      ptrmap_init(&dom, c.a);
      IntSet sets[NV];
      for (int q = 1; q < NV; q++) {
        sets[q] = intset_range(az, expr_i64(c.a, c.mins[q]), expr_i64(c.a, c.exts[q]));
        ptrmap_put(&dom, c.vars[q], &sets[q]);
      }
      IntSet s = arith_eval_set(az, k.orig, &dom);
      k.set_min = s.min;
      k.set_max = s.max;
    }
    if (!for_each_point(&c, check_point, &k)) {
      report(&c, &k);
      fail_msg("random case %d failed", n);
    }
    arena_free(c.a);
  }
}

/* LOOM_ARITH_SOAK=n multiplies the case counts for a long local run. */
static int soak(void) {
  const char *s = getenv("LOOM_ARITH_SOAK");
  int n = s ? atoi(s) : 1;
  return n > 0 ? n : 1;
}

static void test_random_i64(void **state) {
  (void)state;
  run_random(DT_I64, 4000 * soak(), 1, true);
}

static void test_random_narrow(void **state) {
  (void)state;
  run_random(DT_I8, 1500 * soak(), 10000000, false);
  run_random(DT_I32, 1500 * soak(), 20000000, false);
  run_random(dtype_make(DT_UINT, 8, 1), 1500 * soak(), 30000000, false);
  run_random(dtype_make(DT_UINT, 64, 1), 1000 * soak(), 40000000, false);
  run_random(dtype_make(DT_UINT, 32, 1), 1000 * soak(), 50000000, false);
}

/* Affine expressions: simplified const bound and eval_set are exact. */
static bool affine_point(Ctx *c, const PtrMap *vals, void *ud) {
  Check *k = ud;
  int64_t x;
  if (!arith_eval_int(k->orig, vals, &x)) return false;
  if (!k->any || x < k->lo) k->lo = x;
  if (!k->any || x > k->hi) k->hi = x;
  k->any = true;
  return true;
}

static void test_affine_tight(void **state) {
  (void)state;
  for (int n = 0; n < 1000; n++) {
    Ctx c;
    ctx_init(&c, 500000 + (uint64_t)n, DT_I64);
    Analyzer *az = arith_analyzer_new(c.a);
    PtrMap dom;
    ptrmap_init(&dom, c.a);
    IntSet sets[NV];
    for (int q = 0; q < NV; q++) {
      arith_bind_const_range(az, c.vars[q], c.mins[q], c.exts[q]);
      sets[q] = intset_range(az, expr_i64(c.a, c.mins[q]), expr_i64(c.a, c.exts[q]));
      ptrmap_put(&dom, c.vars[q], &sets[q]);
    }
    /* Sum of coef*var terms in a shuffled, unnormalized shape. */
    const Expr *e = expr_i64(c.a, rng_int(&c.rng, -20, 20));
    for (int t = 0; t < 5; t++) {
      const Expr *term = expr_mul(c.a, expr_i64(c.a, rng_int(&c.rng, -6, 6)), c.vars[rng_int(&c.rng, 0, NV - 1)]);
      e = rng_int(&c.rng, 0, 1) ? expr_add(c.a, term, e) : expr_sub(c.a, e, term);
    }
    Check k = {0};
    k.orig = e;
    for_each_point(&c, affine_point, &k);
    IntBound b = arith_const_bound(az, arith_simplify(az, e));
    assert_int_equal(b.min, k.lo);
    assert_int_equal(b.max, k.hi);
    IntSet s = arith_eval_set(az, e, &dom);
    assert_non_null(s.min);
    assert_non_null(s.max);
    assert_true(expr_is_int(s.min, k.lo));
    assert_true(expr_is_int(s.max, k.hi));
    arena_free(c.a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_i64),
      cmocka_unit_test(test_random_narrow),
      cmocka_unit_test(test_affine_tight),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
