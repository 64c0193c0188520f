/* The group scheduler (src/compile/schedule_group.c). Dispatch: the anchor's
 * default schedule is the one its block's schedule rule names, not a guess
 * from loop counts (a matmul written without the rule gets the generic
 * schedule; the same compute with it, the register-tiled one).
 * The generic group schedule on row-wise
 * reductions: softmax, LogSumExp, a kept-dims mean and an integer max along
 * the last axis. Each row's stages must be computed per row (compute_at)
 * and its reductions vectorized through partial results (rfactor) where the
 * row length allows, and the scheduled kernel must compute what the
 * unscheduled one computes, at 1 and 2 threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compile/compile.h"
#include "unit/topi/schedule_run.h"
#include "tir/schedule/schedule.h"
#include "te/te.h"
#include "topi/topi_ops.h"

typedef struct RowCase {
  const char *label;
  int64_t shape[3];
  int kind; /* 0 softmax, 1 LogSumExp, 2 mean with kept dims */
  bool per_row, vectorized; /* expected: stages moved under the rows, rfactor applied */
} RowCase;

static PrimFunc *build(Arena *a, const RowCase *c) {
  LoomError err = {0};
  TeTensor *x = te_placeholder(a, "x", DT_F32, 3, c->shape, &err), *y = NULL;
  assert_non_null(x);
  int64_t axis = 2;
  if (c->kind == 0) y = topi_softmax_axis(a, "y", x, axis, &err);
  if (c->kind == 1) y = topi_reduce(a, "y", TOPI_REDUCE_LOG_SUM_EXP, x, &axis, 1, false, false, &err);
  if (c->kind == 2) y = topi_reduce(a, "y", TOPI_REDUCE_MEAN, x, &axis, 1, true, false, &err);
  if (!y) fail_msg("%s: %s", c->label, err.msg);
  PrimFunc *f = te_create_primfunc(a, c->label, (TeTensor *[]){x, y}, 2, &err);
  if (!f) fail_msg("%s: %s", c->label, err.msg);
  return f;
}

static void check(const RowCase *c) {
  for (int threads = 1; threads <= 2; threads++) {
    Arena *a = arena_new();
    PrimFunc *f = build(a, c);
    GroupFunc gf = {.func = f};
    Target target = target_host();
    Schedule *keep = NULL;
    const PrimFunc *g = compile_schedule_group(&gf, &target, threads, &keep);
    char *trace = trace_to_text(sch_trace(keep));
    if ((strstr(trace, "compute_at(") != NULL) != c->per_row)
      fail_msg("%s: stages %sexpected per row; trace:\n%s", c->label, c->per_row ? "" : "not ", trace);
    if ((strstr(trace, "rfactor(") != NULL) != c->vectorized)
      fail_msg("%s: rfactor %sexpected; trace:\n%s", c->label, c->vectorized ? "" : "not ", trace);
    free(trace);
    ScheduleRun r = {0};
    schedule_run(a, f, g, threads, 3, &r);
    for (size_t i = 0; i < r.count; i++)
      if (fabs((double)r.want[i] - r.got[i]) > 1e-5 * fmax(1.0, fabs(r.want[i])))
        fail_msg("%s, %d threads: element %zu: reference %g, scheduled %g", c->label, threads, i, r.want[i],
                 r.got[i]);
    schedule_run_free(&r);
    sch_free(keep);
    arena_free(a);
  }
}

static void test_row_reductions(void **state) {
  (void)state;
  static const RowCase cases[] = {
      {"softmax", {3, 5, 48}, 0, true, true},
      {"softmax_rows_of_40", {2, 3, 40}, 0, true, true}, /* vectors of 8 */
      {"softmax_rows_of_7", {2, 3, 7}, 0, true, false},  /* too short to vectorize */
      {"logsumexp", {4, 2, 64}, 1, true, true},
      {"mean_keepdims", {2, 6, 32}, 2, true, true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check(&cases[i]);
}

typedef struct Mm {
  const TeTensor *A, *B;
  IterVar k;
} Mm;

static const Expr *mm_body(Arena *a, const Expr *const *ax, void *user) {
  const Mm *m = user;
  const Expr *ia[2] = {ax[0], m->k.var}, *ib[2] = {m->k.var, ax[1]};
  return te_sum(a, expr_mul(a, te_load(a, m->A, ia), te_load(a, m->B, ib)), &m->k, 1, NULL);
}

static void test_rule_dispatch(void **state) {
  (void)state;
  for (int with_rule = 0; with_rule < 2; with_rule++) {
    Arena *a = arena_new();
    LoomError err = {0};
    TeTensor *A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){48, 40}, &err);
    TeTensor *B = te_placeholder(a, "B", DT_F32, 2, (int64_t[]){40, 64}, &err);
    Mm m = {A, B, te_reduce_axis(a, "k", 40)};
    TeTensor *C = te_compute(a, "C", 2, (int64_t[]){48, 64}, mm_body, &m, &err);
    assert_non_null(C);
    if (with_rule) te_set_schedule_rule(C, "matmul");
    PrimFunc *f = te_create_primfunc(a, "mm", (TeTensor *[]){A, B, C}, 3, &err);
    assert_non_null(f);
    GroupFunc gf = {.func = f};
    Target target = target_host();
    Schedule *keep = NULL;
    const PrimFunc *g = compile_schedule_group(&gf, &target, 1, &keep);
    char *trace = trace_to_text(sch_trace(keep));
    /* The matmul schedule's register tile: its MR choices and a cache_write. */
    bool tiled = strstr(trace, "sample_categorical([1, 2, 3, 4, 6, 8, 12]") && strstr(trace, "cache_write(");
    if (tiled != (with_rule == 1))
      fail_msg("rule %s: the matmul schedule was %sapplied; trace:\n%s", with_rule ? "\"matmul\"" : "none",
               tiled ? "" : "not ", trace);
    free(trace);
    ScheduleRun r = {0};
    schedule_run(a, f, g, 1, 5, &r);
    for (size_t i = 0; i < r.count; i++)
      if (fabs((double)r.want[i] - r.got[i]) > 1e-5 * fmax(1.0, fabs(r.want[i])))
        fail_msg("rule %d: element %zu: reference %g, scheduled %g", with_rule, i, r.want[i], r.got[i]);
    schedule_run_free(&r);
    sch_free(keep);
    arena_free(a);
  }
}

/* The tuner's template space: the group strategy run with random decisions
 * (compile_schedule_group_on on a DECIDE_RANDOM schedule) gives other
 * schedules than the default, each computing what the unscheduled
 * function computes, and replays from its trace. Kinds: a matmul, a conv,
 * and a matmul with K = 256, whose K-blocked form (unlikely by default, a
 * valid random point) is searched for among the seeds and run. */
static PrimFunc *random_case(Arena *a, int kind) {
  LoomError err = {0};
  TeTensor *x, *w, *y;
  if (kind != 1) {
    int64_t K = kind == 0 ? 40 : 256;
    x = te_placeholder(a, "x", DT_F32, 2, (int64_t[]){24, K}, &err);
    w = te_placeholder(a, "w", DT_F32, 2, (int64_t[]){K, 48}, &err);
    y = topi_matmul_nd(a, "y", x, w, &err);
  } else {
    x = te_placeholder(a, "x", DT_F32, 5, (int64_t[]){1, 2, 9, 9, 8}, &err);
    w = te_placeholder(a, "w", DT_F32, 6, (int64_t[]){3, 2, 3, 3, 8, 8}, &err);
    TopiConvParams p = {.pads = {1, 1, 1, 1}};
    y = topi_conv2d_nchwc_onnx(a, "y", x, w, NULL, &p, &err);
  }
  if (!y) fail_msg("%s", err.msg);
  PrimFunc *f = te_create_primfunc(a, kind == 1 ? "conv" : "mm", (TeTensor *[]){x, w, y}, 3, &err);
  assert_non_null(f);
  return f;
}

/* A random point s of f's space (its trace text `trace`): replays to the
 * same program and computes what f computes at `threads`. */
static void check_random_point(Arena *a, PrimFunc *f, Schedule *s, const char *trace, const char *label,
                               uint64_t seed, int threads) {
  LoomError err = {0};
  Schedule *r = sch_create(f, DECIDE_DEFAULT, 0);
  Trace *t = trace_parse(a, trace, &err);
  if (!t || trace_apply(t, r) != LOOM_OK || !tir_func_equal(sch_func(r), sch_func(s)))
    fail_msg("%s seed %llu: the trace does not replay to the same program:\n%s", label, (unsigned long long)seed,
             trace);
  ScheduleRun run = {0};
  schedule_run(a, f, sch_func(s), threads, 7 + (int)seed, &run);
  for (size_t i = 0; i < run.count; i++)
    if (fabs((double)run.want[i] - run.got[i]) > 1e-4 * fmax(1.0, fabs(run.want[i])))
      fail_msg("%s seed %llu: element %zu: reference %g, scheduled %g\n%s", label, (unsigned long long)seed, i,
               run.want[i], run.got[i], trace);
  schedule_run_free(&run);
  sch_free(r);
}

static void test_random_decisions(void **state) {
  (void)state;
  static const char *const kinds[] = {"matmul", "conv", "matmul K-blocked"};
  Target target = target_host();
  /* A seed whose matmul of K = 256 is K-blocked (cache_inplace). */
  uint64_t blocked = 0;
  for (uint64_t seed = 1; seed <= 400 && !blocked; seed++) {
    Arena *a = arena_new();
    Schedule *s = sch_create(random_case(a, 2), DECIDE_RANDOM, seed);
    compile_schedule_group_on(s, &target, 2);
    char *trace = trace_to_text(sch_trace(s));
    if (strstr(trace, "cache_inplace(")) blocked = seed;
    free(trace);
    sch_free(s);
    arena_free(a);
  }
  if (!blocked) fail_msg("no random decision of 400 blocks the K loop of a 24x256x48 matmul");
  const uint64_t seeds[3][6] = {{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}, {blocked, 1, 2, 0, 0, 0}};
  for (int kind = 0; kind < 3; kind++)
    for (int k = 0; k < 6 && seeds[kind][k]; k++) {
      uint64_t seed = seeds[kind][k];
      Arena *a = arena_new();
      PrimFunc *f = random_case(a, kind);
      Schedule *s = sch_create(f, DECIDE_RANDOM, seed);
      compile_schedule_group_on(s, &target, 2);
      char *trace = trace_to_text(sch_trace(s));
      check_random_point(a, f, s, trace, kinds[kind], seed, 2);
      free(trace);
      sch_free(s);
      arena_free(a);
    }
}

/* The generated sketch (multi-level tiling, schedule_tiling.c): sampled
 * beside the matmul and conv templates and beside the generic schedule of
 * a reduction without a rule; never the default. Random points of it
 * replay from their traces and compute what the unscheduled function
 * computes, at 1 and 2 threads. */
static PrimFunc *sketch_case(Arena *a, int kind) {
  if (kind < 2) return random_case(a, kind);
  LoomError err = {0};
  TeTensor *A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){24, 40}, &err);
  TeTensor *B = te_placeholder(a, "B", DT_F32, 2, (int64_t[]){40, 36}, &err);
  Mm m = {A, B, te_reduce_axis(a, "k", 40)};
  TeTensor *C = te_compute(a, "C", 2, (int64_t[]){24, 36}, mm_body, &m, &err); /* no rule */
  PrimFunc *f = C ? te_create_primfunc(a, "mm_norule", (TeTensor *[]){A, B, C}, 3, &err) : NULL;
  if (!f) fail_msg("%s", err.msg);
  return f;
}

static void test_generated_sketch(void **state) {
  (void)state;
  static const char *const kinds[] = {"matmul", "conv", "matmul without a rule"};
  Target target = target_host();
  for (int kind = 0; kind < 3; kind++) {
    Arena *a = arena_new();
    PrimFunc *f = sketch_case(a, kind);
    Schedule *d = sch_create(f, DECIDE_DEFAULT, 0);
    compile_schedule_group_on(d, &target, 2);
    char *trace = trace_to_text(sch_trace(d));
    if (strstr(trace, "sample_perfect_tile(")) fail_msg("%s: the default is the generated sketch:\n%s", kinds[kind], trace);
    free(trace);
    sch_free(d);
    int found = 0;
    for (uint64_t seed = 1; seed <= 200 && found < 4; seed++) {
      int threads = 1 + (int)(seed % 2);
      Schedule *s = sch_create(f, DECIDE_RANDOM, seed);
      compile_schedule_group_on(s, &target, threads);
      trace = trace_to_text(sch_trace(s));
      if (!strstr(trace, "sample_perfect_tile(") || !strstr(trace, "cache_write(")) {
        free(trace);
        sch_free(s);
        continue;
      }
      found++;
      check_random_point(a, f, s, trace, kinds[kind], seed, threads);
      free(trace);
      sch_free(s);
    }
    if (found < 4) fail_msg("%s: %d of 200 random points took the generated sketch (expected 4)", kinds[kind], found);
    arena_free(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_row_reductions), cmocka_unit_test(test_rule_dispatch),
                                     cmocka_unit_test(test_random_decisions), cmocka_unit_test(test_generated_sketch)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
