/* Traces: random schedules -> text -> parse -> replay on a fresh schedule
 * gives the identical program; re-running the schedule function against the
 * recorded decisions reproduces it; parse and replay errors are reported
 * with their position. */
#include "unit/schedule/test_loops_util.h"

#include "tir/text.h"

/* A schedule "function" with sampling points: tiles i and j of a matmul,
 * picks how deep to tile and what to annotate. */
static void matmul_sched(Schedule *s) {
  SchRV b = sch_get_block(s, "C"), l[3];
  assert_int_equal(sch_get_loops(s, b, l, 3), 3);
  int64_t depth;
  assert_int_equal(sch_sample_categorical(s, (int64_t[]){2, 3}, (double[]){0.5, 0.5}, 2, &depth), LOOM_OK);
  int64_t ti[3], tj[3], tk[2];
  assert_int_equal(sch_sample_perfect_tile(s, l[0], (int)depth, 8, ti), LOOM_OK);
  assert_int_equal(sch_sample_perfect_tile(s, l[1], (int)depth, 16, tj), LOOM_OK);
  assert_int_equal(sch_sample_perfect_tile(s, l[2], 2, 0, tk), LOOM_OK);
  int64_t factors[6];
  for (int d = 0; d < depth; d++) factors[d] = ti[d], factors[depth + d] = tj[d];
  SchRV t[6], k[2];
  assert_int_equal(sch_tile(s, l, 2, factors, (int)depth, t), LOOM_OK);
  assert_int_equal(sch_split(s, l[2], tk, 2, k), 0);
  /* k_0 goes between the outer tiles and the innermost ones */
  SchRV order[3] = {k[0], t[2 * depth - 2], t[2 * depth - 1]};
  assert_int_equal(sch_reorder(s, order, 3), LOOM_OK);
  SchRV outer = sch_fuse(s, t, 2);
  assert_true(outer >= 0);
  int64_t choice;
  assert_int_equal(sch_sample_categorical(s, (int64_t[]){0, 1, 2}, NULL, 3, &choice), LOOM_OK);
  if (choice == 1) assert_int_equal(sch_parallel(s, outer), LOOM_OK);
  if (choice == 2) assert_int_equal(sch_bind(s, outer, "blockIdx.x"), LOOM_OK);
  assert_int_equal(sch_vectorize(s, t[2 * depth - 1]), LOOM_OK);
  assert_int_equal(sch_unroll(s, k[1]), LOOM_OK);
}

static void test_random_roundtrip(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_matmul(a, 64, 48, 32);
  for (uint64_t seed = 0; seed < 12; seed++) {
    Schedule *s = sch_create(f, DECIDE_RANDOM, seed);
    matmul_sched(s);
    char *text = trace_to_text(sch_trace(s));
    LoomError err = {0};
    Trace *t = trace_parse(a, text, &err);
    if (!t) fail_msg("%s\n%s", err.msg, text);
    assert_int_equal(trace_length(t), trace_length(sch_trace(s)));
    /* printing the parsed trace gives the same text */
    char *again = trace_to_text(t);
    assert_string_equal(again, text);
    free(again);
    /* replay on a fresh schedule (whatever its own decision mode) */
    Schedule *r = sch_create(f, DECIDE_RANDOM, seed + 1000);
    if (trace_apply(t, r) != LOOM_OK) fail_msg("%s\n%s", sch_error(r), text);
    assert_true(func_equal(sch_func(r), sch_func(s)));
    assert_true(tir_func_equal(sch_func(r), sch_func(s)));
    /* the replay records the same trace */
    char *rt = trace_to_text(sch_trace(r));
    assert_string_equal(rt, text);
    free(rt);
    /* the schedule function against the recorded decisions */
    Schedule *d = sch_create_from_decisions(f, t);
    matmul_sched(d);
    assert_true(func_equal(sch_func(d), sch_func(s)));
    /* and the check can fail: a different seed gives a different program */
    Schedule *o = sch_create(f, DECIDE_RANDOM, seed + 7);
    matmul_sched(o);
    char *ot = trace_to_text(sch_trace(o));
    /* different decisions -> different extents or annotations */
    assert_int_equal(func_equal(sch_func(o), sch_func(s)), strcmp(ot, text) == 0);
    free(ot);
    sch_free(o);
    if (seed < 4) check_same_results(f, sch_func(s), seed);
    free(text);
    sch_free(d);
    sch_free(r);
    sch_free(s);
  }
  arena_free(a);
}

static const Expr *add1_body(Arena *a, const Expr *const *ax, void *user) {
  return expr_add(a, te_load(a, user, ax), expr_float(a, DT_F32, 1.0));
}

/* The block primitives replay too: their instructions carry the layout
 * documented in schedule_internal.h. Cache blocks get fresh buffers and
 * iterators, so this compares with tir_func_equal (matches by position). */
static void test_block_primitives_roundtrip(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){16, 12}, &err);
  TeTensor *B = te_compute(a, "B", 2, (int64_t[]){16, 12}, add1_body, A, &err);
  TeTensor *C = te_compute(a, "C", 2, (int64_t[]){16, 12}, add1_body, B, &err);
  PrimFunc *f = te_create_primfunc(a, "two_stages", (TeTensor *[]){A, C}, 2, &err);
  assert_non_null(f);
  Schedule *s = sch_create(f, DECIDE_RANDOM, 5);
  SchRV bc = sch_get_block(s, "C"), lc[2], io[2];
  SchRV cr = sch_cache_read(s, bc, 0, SCOPE_LOCAL);
  if (cr < 0) fail_msg("%s", sch_error(s));
  assert_int_equal(sch_get_loops(s, bc, lc, 2), 2);
  int64_t t[2];
  assert_int_equal(sch_sample_perfect_tile(s, lc[0], 2, 4, t), LOOM_OK);
  assert_int_equal(sch_split(s, lc[0], t, 2, io), 0);
  if (sch_compute_at(s, cr, io[0]) != LOOM_OK) fail_msg("%s", sch_error(s));
  assert_int_equal(sch_parallel(s, io[0]), LOOM_OK);
  char *text = trace_to_text(sch_trace(s));
  assert_contains(text, "compute_at(b");
  assert_contains(text, "cache_read(b");
  Trace *tr = trace_parse(a, text, &err);
  if (!tr) fail_msg("%s", err.msg);
  Schedule *r = sch_create(f, DECIDE_DEFAULT, 0);
  if (trace_apply(tr, r) != LOOM_OK) fail_msg("%s\n%s", sch_error(r), text);
  assert_true(tir_func_equal(sch_func(r), sch_func(s)));
  check_same_results(f, sch_func(r), 21);
  free(text);
  sch_free(r);
  sch_free(s);
  arena_free(a);
}

static void test_text_form(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_matmul(a, 64, 48, 32);
  const char *text = "b0 = get_block(\"C\")\n"
                     "l1, l2, l3 = get_loops(b0)\n"
                     "sample_perfect_tile(l1, n=2, max_innermost=16) -> [8, 8]\n"
                     "l4, l5 = split(l1, [-1, 8])\n"
                     "sample_categorical([1, 2, 4], probs=[0.5, 0.25, 0.25]) -> 4\n"
                     "reorder(l2, l4)\n"
                     "l6 = fuse(l2, l5)\n"
                     "bind(l6, \"blockIdx.x\")\n";
  LoomError err = {0};
  Trace *t = trace_parse(a, text, &err);
  if (!t) fail_msg("%s", err.msg);
  char *back = trace_to_text(t);
  assert_string_equal(back, text);
  free(back);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  if (trace_apply(t, s) != LOOM_OK) fail_msg("%s", sch_error(s));
  int64_t ext[4];
  assert_int_equal(loop_extents(s, "C", ext, 4), 3);
  assert_int_equal(ext[0], 48 * 8);
  check_same_results(f, sch_func(s), 5);
  /* blank lines and comments are fine */
  assert_non_null(trace_parse(a, "\n# a comment\nb0 = get_block(\"C\")  # the matmul\n\n", &err));
  sch_free(s);
  arena_free(a);
}

static void expect_parse_error(Arena *a, const char *text, const char *where, const char *what) {
  LoomError err = {0};
  assert_null(trace_parse(a, text, &err));
  assert_int_equal(err.status, LOOM_ERR_PARSE);
  assert_contains(err.msg, where);
  assert_contains(err.msg, what);
}

static void test_parse_errors(void **state) {
  (void)state;
  Arena *a = arena_new();
  expect_parse_error(a, "b0 = get_block(\"C\")\nl1 = frobnicate(b0)\n", "trace:2:", "unknown instruction 'frobnicate'");
  expect_parse_error(a, "b0 = get_block(\"C\"\n", "trace:1:19", "expected ')'");
  expect_parse_error(a, "b0 = get_block(\"C)\n", "trace:1:", "unterminated string");
  expect_parse_error(a, "x = get_block(\"C\")\n", "trace:1:", "'x' is not a handle");
  expect_parse_error(a, "l1, l2 = split(q7, [2, 2])", "trace:1:", "'q7' is not a handle");
  expect_parse_error(a, "sample_perfect_tile(l1, n=2, max_innermost=4)\n", "trace:1:", "needs a recorded decision");
  expect_parse_error(a, "l1, l2 = split(l0, [2, x])\n", "trace:1:", "expected an integer");
  expect_parse_error(a, "reorder(l1, l2) extra\n", "trace:1:17", "unexpected 'e'");
  expect_parse_error(a, "sample_perfect_tile(l1, m=2) -> [1]\n", "trace:1:", "unknown argument 'm'");
  arena_free(a);
}

static void test_apply_errors(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_matmul(a, 64, 48, 32);
  LoomError err = {0};
  struct {
    const char *text, *msg;
  } cases[] = {
      {"l1, l2 = split(l9, [8, 8])\n", "instruction 1 (split): handle 9 is not defined"},
      {"b0 = get_block(\"D\")\n", "no block named \"D\""},
      {"b0 = get_block(\"C\")\nl1, l2 = get_loops(b0)\n", "produced 3 handles, the trace records 2"},
      {"b0 = get_block(\"C\")\nl1, l2, l3 = get_loops(b0)\nsample_perfect_tile(l1, n=2, max_innermost=0) -> [3, 5]\n",
       "instruction 3 (sample_perfect_tile)"},
      {"b0 = get_block(\"C\")\nl1, l2, l3 = get_loops(b0)\nl4, l5 = split(l1, [3, 5])\n", "less than its extent"},
      {"b0 = get_block(\"C\")\nl1, l2, l3 = get_loops(b0)\nparallel(l3)\n", "reduction iterator vk"},
      {"sample_categorical([1, 2], probs=[0.5, 0.5]) -> 3\n", "not one of the 2 candidates"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Trace *t = trace_parse(a, cases[i].text, &err);
    if (!t) fail_msg("%s", err.msg);
    Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
    assert_int_equal(trace_apply(t, s), LOOM_ERR_SCHEDULE);
    assert_contains(sch_error(s), cases[i].msg);
    /* nothing of the failed replay remains */
    assert_ptr_equal(sch_func(s), f);
    assert_int_equal(trace_length(sch_trace(s)), 0);
    assert_int_equal(s->n_rvs, 0);
    sch_free(s);
  }
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_roundtrip),
      cmocka_unit_test(test_block_primitives_roundtrip),
      cmocka_unit_test(test_text_form),
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_apply_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
