/* Iterator-map detection, checked by enumeration: whenever detection says
 * "bijective", enumerating the loop domain must hit every point of the
 * product of the reported index ranges exactly once. Random split/fuse
 * schedules (which are bijective by construction) must be accepted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arith/arith.h"

enum { MAXL = 8, MAXI = 3 };

typedef struct Map {
  Arena *a;
  Analyzer *az;
  IterVar loops[MAXL];
  int n_loops;
  const Expr *idx[MAXI];
  int n_idx;
  const Expr *pred;
} Map;

static void map_init(Map *m) {
  memset(m, 0, sizeof *m);
  m->a = arena_new();
  m->az = arith_analyzer_new(m->a);
}

static const Expr *map_loop(Map *m, const char *name, int64_t extent) {
  IterVar *iv = &m->loops[m->n_loops++];
  iv->var = expr_var(m->a, name, DT_I64);
  iv->min = expr_i64(m->a, 0);
  iv->extent = expr_i64(m->a, extent);
  return iv->var;
}

static bool detect(Map *m, const Expr **ext, const Expr **mins, LoomError *err) {
  return arith_detect_iter_map(m->az, m->idx, m->n_idx, m->loops, m->n_loops, m->pred, true, ext, mins, err);
}

/* True iff the (predicated) loop domain maps one-to-one onto the product of
 * [mins[k], mins[k] + ext[k]). */
static bool enumerate_bijective(Map *m, const Expr **ext, const Expr **mins) {
  int64_t e[MAXI], lo[MAXI], cells = 1;
  for (int k = 0; k < m->n_idx; k++) {
    assert_true(expr_as_int(ext[k], &e[k]));
    assert_true(expr_as_int(mins[k], &lo[k]));
    cells *= e[k];
  }
  assert_true(cells <= 1 << 16);
  int *hits = calloc((size_t)cells, sizeof(int));
  int64_t v[MAXL] = {0}, ext_l[MAXL];
  PtrMap vals;
  ptrmap_init(&vals, m->a);
  for (int l = 0; l < m->n_loops; l++) {
    ptrmap_put(&vals, m->loops[l].var, &v[l]);
    assert_true(expr_as_int(m->loops[l].extent, &ext_l[l]));
  }
  bool ok = true;
  for (;;) {
    int64_t p = 1;
    if (m->pred) assert_true(arith_eval_int(m->pred, &vals, &p));
    if (p) {
      int64_t cell = 0;
      for (int k = 0; k < m->n_idx; k++) {
        int64_t x;
        assert_true(arith_eval_int(m->idx[k], &vals, &x));
        if (x < lo[k] || x >= lo[k] + e[k]) ok = false;
        else cell = cell * e[k] + (x - lo[k]);
      }
      if (ok && hits[cell]++) ok = false;
    }
    int l = m->n_loops - 1;
    while (l >= 0 && ++v[l] == ext_l[l]) v[l--] = 0;
    if (l < 0) break;
  }
  for (int64_t c = 0; c < cells && ok; c++)
    if (hits[c] != 1) ok = false;
  free(hits);
  return ok;
}

#define C(v) expr_i64(m.a, (v))

static void test_split_fuse_examples(void **state) {
  (void)state;
  const Expr *ext[MAXI], *mins[MAXI];
  LoomError err = {0};
  Map m;
  /* split: vi = i0*8 + i1 */
  map_init(&m);
  const Expr *i0 = map_loop(&m, "i0", 16), *i1 = map_loop(&m, "i1", 8);
  m.idx[m.n_idx++] = expr_add(m.a, expr_mul(m.a, i0, C(8)), i1);
  assert_true(detect(&m, ext, mins, &err));
  assert_true(expr_is_int(ext[0], 128) && expr_is_int(mins[0], 0));
  assert_true(enumerate_bijective(&m, ext, mins));
  arena_free(m.a);
  /* fuse: vi = f / 32, vj = f % 32 */
  map_init(&m);
  const Expr *f = map_loop(&m, "f", 4096);
  m.idx[m.n_idx++] = expr_floordiv(m.a, f, C(32));
  m.idx[m.n_idx++] = expr_floormod(m.a, f, C(32));
  assert_true(detect(&m, ext, mins, &err));
  assert_true(expr_is_int(ext[0], 128) && expr_is_int(ext[1], 32));
  assert_true(enumerate_bijective(&m, ext, mins));
  arena_free(m.a);
  /* non-perfect split with its predicate */
  map_init(&m);
  i0 = map_loop(&m, "i0", 13), i1 = map_loop(&m, "i1", 8);
  const Expr *fused = expr_add(m.a, expr_mul(m.a, i0, C(8)), i1);
  m.idx[m.n_idx++] = fused;
  m.pred = expr_lt(m.a, fused, C(100));
  assert_true(detect(&m, ext, mins, &err));
  assert_true(expr_is_int(ext[0], 100));
  assert_true(enumerate_bijective(&m, ext, mins));
  /* ... and without the predicate the extent is 104 */
  m.pred = NULL;
  assert_true(detect(&m, ext, mins, &err));
  assert_true(expr_is_int(ext[0], 104));
  arena_free(m.a);
  /* loop with a non-zero min and an extent-1 loop */
  map_init(&m);
  i0 = map_loop(&m, "i0", 4);
  m.loops[0].min = C(3);
  const Expr *u = map_loop(&m, "u", 1);
  m.idx[m.n_idx++] = expr_add(m.a, i0, u);
  assert_true(detect(&m, ext, mins, &err));
  assert_true(expr_is_int(ext[0], 4) && expr_is_int(mins[0], 3));
  arena_free(m.a);
}

static void expect_refused(Map *m, const char *needle) {
  LoomError err = {0};
  const Expr *ext[MAXI], *mins[MAXI];
  assert_false(detect(m, ext, mins, &err));
  if (!strstr(err.msg, needle)) fail_msg("message \"%s\" lacks \"%s\"", err.msg, needle);
  arena_free(m->a);
}

static void test_refusals(void **state) {
  (void)state;
  Map m;
  map_init(&m);
  const Expr *i = map_loop(&m, "i", 8);
  m.idx[m.n_idx++] = expr_add(m.a, i, i);
  expect_refused(&m, "index 0");

  map_init(&m);
  i = map_loop(&m, "i", 8);
  const Expr *j = map_loop(&m, "j", 8);
  m.idx[m.n_idx++] = expr_mul(m.a, i, j);
  expect_refused(&m, "not affine");

  map_init(&m); /* overlapping: vi = i0*8 + i1, vj = i1 */
  const Expr *i0 = map_loop(&m, "i0", 4), *i1 = map_loop(&m, "i1", 8);
  m.idx[m.n_idx++] = expr_add(m.a, expr_mul(m.a, i0, C(8)), i1);
  m.idx[m.n_idx++] = i1;
  expect_refused(&m, "more than once");

  map_init(&m); /* extents do not match: i0*4 + i1 with i1 in [0, 8) */
  i0 = map_loop(&m, "i0", 4), i1 = map_loop(&m, "i1", 8);
  m.idx[m.n_idx++] = expr_add(m.a, expr_mul(m.a, i0, C(4)), i1);
  expect_refused(&m, "overlap");

  map_init(&m); /* a loop not used */
  i0 = map_loop(&m, "i0", 4), i1 = map_loop(&m, "i1", 8);
  m.idx[m.n_idx++] = i0;
  expect_refused(&m, "loop i1 is not used");

  map_init(&m); /* fuse by a factor that does not divide */
  i = map_loop(&m, "f", 30);
  m.idx[m.n_idx++] = expr_floordiv(m.a, i, C(4));
  m.idx[m.n_idx++] = expr_floormod(m.a, i, C(4));
  expect_refused(&m, "index 0");

  map_init(&m); /* predicate on the fused value, but indices use pieces */
  i0 = map_loop(&m, "i0", 13), i1 = map_loop(&m, "i1", 8);
  m.pred = expr_lt(m.a, expr_add(m.a, expr_mul(m.a, i0, C(8)), i1), C(100));
  m.idx[m.n_idx++] = i0;
  m.idx[m.n_idx++] = i1;
  expect_refused(&m, "predicate");
}

/* ---- random schedules ---- */

typedef struct Rng {
  uint64_t s;
} Rng;
static int64_t rnd(Rng *r, int64_t lo, int64_t hi) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return lo + (int64_t)(r->s % (uint64_t)(hi - lo + 1));
}

static const Expr *subst(Arena *a, const Expr *e, const Expr *v, const Expr *by) {
  if (e == v) return by;
  if (e->kind == EXPR_INT || e->kind == EXPR_VAR) return e;
  return expr_binary(a, e->kind, subst(a, e->bin.a, v, by), subst(a, e->bin.b, v, by));
}

static void map_subst(Map *m, const Expr *v, const Expr *by) {
  for (int k = 0; k < m->n_idx; k++) m->idx[k] = subst(m->a, m->idx[k], v, by);
  if (m->pred) m->pred = subst(m->a, m->pred, v, by);
}

static void map_remove_loop(Map *m, int l) {
  for (int q = l; q + 1 < m->n_loops; q++) m->loops[q] = m->loops[q + 1];
  m->n_loops--;
}

static const int64_t divisors[] = {2, 3, 4};

/* Builds a random schedule of n_idx indices; perfect-only when `perfect`. */
static void random_map(Map *m, Rng *r, bool perfect) {
  map_init(m);
  m->n_idx = (int)rnd(r, 1, 3);
  for (int k = 0; k < m->n_idx; k++) {
    char name[16];
    snprintf(name, sizeof name, "v%d", k);
    m->idx[k] = map_loop(m, name, rnd(r, 1, 4) * (k == 0 ? 6 : 4));
  }
  int steps = (int)rnd(r, 1, 4);
  for (int s = 0; s < steps; s++) {
    int l = (int)rnd(r, 0, m->n_loops - 1);
    int64_t ext;
    assert_true(expr_as_int(m->loops[l].extent, &ext));
    if (rnd(r, 0, 1) && m->n_loops + 1 < MAXL) { /* split */
      int64_t f = divisors[rnd(r, 0, 2)];
      bool divides = ext % f == 0;
      if (!divides && perfect) continue;
      const Expr *v = m->loops[l].var;
      char n0[64], n1[64];
      snprintf(n0, sizeof n0, "%s_o", v->var.name);
      snprintf(n1, sizeof n1, "%s_i", v->var.name);
      const Expr *o = map_loop(m, n0, (ext + f - 1) / f), *in = map_loop(m, n1, f);
      const Expr *val = expr_add(m->a, expr_mul(m->a, o, expr_i64(m->a, f)), in);
      map_subst(m, v, val);
      if (!divides) {
        const Expr *p = expr_lt(m->a, val, expr_i64(m->a, ext));
        m->pred = m->pred ? expr_and(m->a, m->pred, p) : p;
      }
      map_remove_loop(m, l);
    } else if (m->n_loops >= 2) { /* fuse l with another loop */
      int q = (int)rnd(r, 0, m->n_loops - 2);
      if (q >= l) q++;
      int64_t eq;
      assert_true(expr_as_int(m->loops[q].extent, &eq));
      if (ext * eq > 4096) continue;
      const Expr *vl = m->loops[l].var, *vq = m->loops[q].var;
      const Expr *f = map_loop(m, "f", ext * eq);
      map_subst(m, vl, expr_floordiv(m->a, f, expr_i64(m->a, eq)));
      map_subst(m, vq, expr_floormod(m->a, f, expr_i64(m->a, eq)));
      map_remove_loop(m, l > q ? l : q);
      map_remove_loop(m, l > q ? q : l);
    }
  }
}

static void test_random_schedules(void **state) {
  (void)state;
  Rng r = {88172645463325252ULL};
  int accepted = 0;
  const char *soak = getenv("LOOM_ARITH_SOAK");
  int cases = 600 * (soak && atoi(soak) > 0 ? atoi(soak) : 1);
  for (int n = 0; n < cases; n++) {
    Map m;
    bool perfect = n % 2 == 0;
    random_map(&m, &r, perfect);
    int mutate = (int)rnd(&r, 0, 3);
    if (mutate == 0) { /* swap one loop variable for another: usually breaks it */
      int k = (int)rnd(&r, 0, m.n_idx - 1);
      int l = (int)rnd(&r, 0, m.n_loops - 1), q = (int)rnd(&r, 0, m.n_loops - 1);
      m.idx[k] = subst(m.a, m.idx[k], m.loops[l].var, m.loops[q].var);
    }
    if (n % 4 < 2) { /* schedules usually simplify bindings with the loop ranges known */
      for (int l = 0; l < m.n_loops; l++) arith_bind_range(m.az, m.loops[l].var, m.loops[l].min, m.loops[l].extent);
      for (int k = 0; k < m.n_idx; k++) m.idx[k] = arith_simplify(m.az, m.idx[k]);
    }
    const Expr *ext[MAXI], *mins[MAXI];
    LoomError err = {0};
    bool ok = detect(&m, ext, mins, &err);
    if (perfect && mutate != 0 && !ok) {
      for (int k = 0; k < m.n_idx; k++) fprintf(stderr, "idx %s\n", expr_to_string(m.a, m.idx[k]));
      fail_msg("perfect schedule refused: %s", err.msg);
    }
    if (ok) {
      accepted++;
      if (!enumerate_bijective(&m, ext, mins)) {
        for (int k = 0; k < m.n_idx; k++) fprintf(stderr, "idx %s ext %s\n", expr_to_string(m.a, m.idx[k]), expr_to_string(m.a, ext[k]));
        if (m.pred) fprintf(stderr, "pred %s\n", expr_to_string(m.a, m.pred));
        fail_msg("detection accepted a map that is not bijective (case %d)", n);
      }
    }
    arena_free(m.a);
  }
  assert_true(accepted > cases / 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_fuse_examples),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_random_schedules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
