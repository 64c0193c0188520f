/* Sampling: perfect tiles and categorical choices under each decision
 * source (defaults, seeded random, recorded decisions). */
#include "unit/schedule/test_loops_util.h"

static SchRV first_loop(Schedule *s, const char *blk, int idx) {
  SchRV l[16];
  SchRV b = sch_get_block(s, blk);
  assert_true(sch_get_loops(s, b, l, 16) > idx);
  return l[idx];
}

static bool valid_tile(const int64_t *t, int n, int64_t extent, int64_t max_inner) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) {
    if (t[i] < 1) return false;
    p *= t[i];
  }
  return p == extent && (max_inner == 0 || t[n - 1] <= max_inner);
}

/* Number of ordered factorizations of x into n factors, innermost <= max. */
static int count_tiles(int64_t x, int n, int64_t max_inner) {
  if (n == 1) return max_inner == 0 || x <= max_inner;
  int c = 0;
  for (int64_t d = 1; d <= x; d++)
    if (x % d == 0) c += count_tiles(x / d, n - 1, max_inner);
  return c;
}

static void test_perfect_tile_default(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_matmul(a, 64, 48, 32);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  SchRV i = first_loop(s, "C", 0), j = first_loop(s, "C", 1);
  int64_t t[4];
  /* largest innermost <= max, then the most balanced outer factors */
  assert_int_equal(sch_sample_perfect_tile(s, i, 2, 16, t), LOOM_OK);
  assert_int_equal(t[0], 4);
  assert_int_equal(t[1], 16);
  assert_int_equal(sch_sample_perfect_tile(s, i, 4, 16, t), LOOM_OK);
  int64_t want[4] = {1, 2, 2, 16};
  for (int k = 0; k < 4; k++) assert_int_equal(t[k], want[k]);
  assert_int_equal(sch_sample_perfect_tile(s, j, 3, 5, t), LOOM_OK); /* 48: inner 4, then 12 -> 3, 4 */
  assert_int_equal(t[0], 3);
  assert_int_equal(t[1], 4);
  assert_int_equal(t[2], 4);
  assert_int_equal(sch_sample_perfect_tile(s, j, 1, 0, t), LOOM_OK);
  assert_int_equal(t[0], 48);
  /* every sample is recorded with its decision */
  const Trace *tr = sch_trace(s);
  const Inst *last = &tr->insts[tr->n - 1];
  assert_int_equal(last->kind, INST_SAMPLE_PERFECT_TILE);
  assert_int_equal(last->n_decision, 1);
  assert_int_equal(last->decision[0], 48);
  sch_free(s);
  arena_free(a);
}

static void test_perfect_tile_random(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_matmul(a, 24, 48, 32);
  /* extent 24 into 3 factors with innermost <= 4: every one is reachable
   * and nothing invalid comes out */
  int total = count_tiles(24, 3, 4);
  int64_t *seen = calloc((size_t)total * 3, sizeof(int64_t));
  int n_seen = 0;
  for (uint64_t seed = 0; seed < 400; seed++) {
    Schedule *s = sch_create(f, DECIDE_RANDOM, seed);
    int64_t t[3];
    assert_int_equal(sch_sample_perfect_tile(s, first_loop(s, "C", 0), 3, 4, t), LOOM_OK);
    assert_true(valid_tile(t, 3, 24, 4));
    bool found = false;
    for (int k = 0; k < n_seen && !found; k++) found = memcmp(&seen[k * 3], t, sizeof t) == 0;
    if (!found) {
      assert_true(n_seen < total);
      memcpy(&seen[n_seen++ * 3], t, sizeof t);
    }
    sch_free(s);
  }
  assert_int_equal(n_seen, total);
  free(seen);
  /* the same seed gives the same decisions */
  Schedule *s1 = sch_create(f, DECIDE_RANDOM, 42), *s2 = sch_create(f, DECIDE_RANDOM, 42);
  for (int r = 0; r < 5; r++) {
    int64_t t1[2], t2[2];
    assert_int_equal(sch_sample_perfect_tile(s1, first_loop(s1, "C", 1), 2, 0, t1), LOOM_OK);
    assert_int_equal(sch_sample_perfect_tile(s2, first_loop(s2, "C", 1), 2, 0, t2), LOOM_OK);
    assert_memory_equal(t1, t2, sizeof t1);
  }
  sch_free(s1);
  sch_free(s2);
  arena_free(a);
}

static void test_perfect_tile_errors(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_ewise(a, 7, 8);
  Schedule *s = sch_create(f, DECIDE_RANDOM, 1);
  SchRV i = first_loop(s, "B", 0);
  int64_t t[4];
  int tn = trace_length(sch_trace(s));
  assert_int_equal(sch_sample_perfect_tile(s, i, 0, 0, t), LOOM_ERR_SCHEDULE);
  assert_contains(sch_error(s), "n >= 1");
  assert_int_equal(sch_sample_perfect_tile(s, i, 1, 3, t), LOOM_ERR_SCHEDULE); /* 7 alone > 3 */
  assert_contains(sch_error(s), "no factorization of 7");
  assert_int_equal(sch_sample_perfect_tile(s, i, 2, -1, t), LOOM_ERR_SCHEDULE);
  assert_contains(sch_error(s), "negative");
  assert_int_equal(sch_sample_perfect_tile(s, 0, 2, 0, t), LOOM_ERR_SCHEDULE);
  assert_contains(sch_error(s), "not a loop");
  assert_int_equal(trace_length(sch_trace(s)), tn);
  /* a prime extent still tiles as [1, 7] or [7, 1] */
  assert_int_equal(sch_sample_perfect_tile(s, i, 2, 0, t), LOOM_OK);
  assert_true(valid_tile(t, 2, 7, 0));
  sch_free(s);
  arena_free(a);
}

static void test_categorical(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_ewise(a, 4, 4);
  const int64_t cand[3] = {1, 2, 4};
  const double probs[3] = {0.5, 0.25, 0.25};
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  int64_t v;
  assert_int_equal(sch_sample_categorical(s, cand, NULL, 3, &v), LOOM_OK);
  assert_int_equal(v, 1);
  assert_int_equal(sch_sample_categorical(s, cand, (double[]){0.1, 0.7, 0.2}, 3, &v), LOOM_OK);
  assert_int_equal(v, 2);
  /* errors */
  assert_int_equal(sch_sample_categorical(s, cand, NULL, 0, &v), LOOM_ERR_SCHEDULE);
  assert_contains(sch_error(s), "at least one candidate");
  assert_int_equal(sch_sample_categorical(s, cand, (double[]){0.5, -0.1, 0.6}, 3, &v), LOOM_ERR_SCHEDULE);
  assert_contains(sch_error(s), "probability 1");
  assert_int_equal(sch_sample_categorical(s, cand, (double[]){0, 0, 0}, 3, &v), LOOM_ERR_SCHEDULE);
  assert_contains(sch_error(s), "sum to 0");
  sch_free(s);
  /* random: frequencies follow the probabilities; zero-probability never */
  s = sch_create(f, DECIDE_RANDOM, 7);
  int count[5] = {0};
  const int N = 8000;
  for (int k = 0; k < N; k++) {
    assert_int_equal(sch_sample_categorical(s, cand, probs, 3, &v), LOOM_OK);
    count[v]++;
    assert_int_equal(sch_sample_categorical(s, cand, (double[]){0, 1, 0}, 3, &v), LOOM_OK);
    assert_int_equal(v, 2);
  }
  assert_true(count[1] > N * 0.47 && count[1] < N * 0.53);
  assert_true(count[2] > N * 0.22 && count[2] < N * 0.28);
  assert_true(count[4] > N * 0.22 && count[4] < N * 0.28);
  sch_free(s);
  arena_free(a);
}

/* A schedule function with sampling points, run under each source. */
static void sched_fn(Schedule *s, int64_t *out) {
  SchRV b = sch_get_block(s, "C"), l[3];
  sch_get_loops(s, b, l, 3);
  assert_int_equal(sch_sample_perfect_tile(s, l[0], 2, 8, out), LOOM_OK);
  assert_int_equal(sch_sample_categorical(s, (int64_t[]){2, 3, 4}, NULL, 3, out + 2), LOOM_OK);
}

static void test_decisions_replay(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_matmul(a, 64, 48, 32);
  Schedule *s = sch_create(f, DECIDE_RANDOM, 99);
  int64_t d1[3], d2[3];
  sched_fn(s, d1);
  Schedule *r = sch_create_from_decisions(f, sch_trace(s));
  sched_fn(r, d2);
  assert_memory_equal(d1, d2, sizeof d1);
  /* one sample too many */
  int64_t t[2];
  assert_int_equal(sch_sample_perfect_tile(r, 1, 2, 8, t), LOOM_ERR_SCHEDULE);
  assert_contains(sch_error(r), "no decision left");
  sch_free(r);
  /* a decision that does not fit the loop at hand (extent 64 vs 48) */
  r = sch_create_from_decisions(f, sch_trace(s));
  SchRV b = sch_get_block(r, "C"), l[3];
  sch_get_loops(r, b, l, 3);
  assert_int_equal(sch_sample_perfect_tile(r, l[1], 2, 8, t), LOOM_ERR_SCHEDULE);
  assert_contains(sch_error(r), "loop j: the recorded decision");
  sch_free(r);
  /* the wrong kind of sample */
  r = sch_create_from_decisions(f, sch_trace(s));
  int64_t v;
  assert_int_equal(sch_sample_categorical(r, (int64_t[]){2, 3, 4}, NULL, 3, &v), LOOM_ERR_SCHEDULE);
  assert_contains(sch_error(r), "is for sample_perfect_tile");
  sch_free(r);
  sch_free(s);
  arena_free(a);
}

/* Mutation (trace_mutate) changes one decision to another valid one, and a
 * replay that takes recorded decisions where they fit and random ones
 * elsewhere (DECIDE_TRACE_OR_RANDOM) never fails. */
static void test_mutate_and_replay_or_random(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_matmul(a, 64, 48, 32);
  Schedule *s = sch_create(f, DECIDE_RANDOM, 7);
  int64_t d[3];
  sched_fn(s, d);
  assert_int_equal(trace_num_samples(sch_trace(s)), 2);
  uint64_t rng = 1;
  int changed_tile = 0, changed_cat = 0;
  for (int k = 0; k < 40; k++) {
    Trace *m = trace_mutate(a, sch_trace(s), &rng);
    assert_non_null(m);
    Schedule *r = sch_create_from_decisions_or_random(f, m, (uint64_t)k);
    int64_t e[3];
    sched_fn(r, e);
    assert_true(valid_tile(e, 2, 64, 8));
    assert_true(e[2] == 2 || e[2] == 3 || e[2] == 4);
    int diffs = (e[0] != d[0]) + (e[2] != d[2]);
    assert_int_equal(diffs, 1); /* exactly one decision changed, both replayed as recorded */
    changed_tile += e[0] != d[0], changed_cat += e[2] != d[2];
    sch_free(r);
  }
  assert_true(changed_tile > 0 && changed_cat > 0);
  /* Decisions that do not fit (made for extent 64, replayed on a loop of
   * 48; a perfect tile where a categorical comes; none left): random ones,
   * never an error. */
  PrimFunc *g = make_matmul(a, 48, 48, 32);
  Schedule *r = sch_create_from_decisions_or_random(g, sch_trace(s), 3);
  int64_t e[3], t[2];
  SchRV b = sch_get_block(r, "C"), l[3];
  sch_get_loops(r, b, l, 3);
  assert_int_equal(sch_sample_categorical(r, (int64_t[]){5, 6}, NULL, 2, e), LOOM_OK);
  assert_true(e[0] == 5 || e[0] == 6);
  assert_int_equal(sch_sample_perfect_tile(r, l[0], 2, 8, t), LOOM_OK);
  assert_true(valid_tile(t, 2, 48, 8));
  assert_int_equal(sch_sample_perfect_tile(r, l[1], 3, 0, e), LOOM_OK); /* none left */
  assert_true(valid_tile(e, 3, 48, 0));
  sch_free(r);
  /* Nothing to mutate: a categorical of one candidate. */
  Schedule *one = sch_create(f, DECIDE_DEFAULT, 0);
  int64_t v;
  assert_int_equal(sch_sample_categorical(one, (int64_t[]){4}, NULL, 1, &v), LOOM_OK);
  assert_null(trace_mutate(a, sch_trace(one), &rng));
  sch_free(one);
  sch_free(s);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mutate_and_replay_or_random),
      cmocka_unit_test(test_perfect_tile_default), cmocka_unit_test(test_perfect_tile_random),
      cmocka_unit_test(test_perfect_tile_errors),  cmocka_unit_test(test_categorical),
      cmocka_unit_test(test_decisions_replay),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
