/* Sampling instructions: the points where a schedule asks its decision
 * source (defaults, seeded random, or a recorded trace) for a choice. Every
 * decision is recorded in the trace, so a trace replays exactly. */
#include "tir/schedule/schedule_internal.h"

#include <string.h>

/* ---- perfect tiles ---- */

/* Walks the ordered factorizations of `extent` into n factors whose
 * innermost is <= max_inner, in lexicographic order. */
typedef struct TileEnum {
  int n;
  int64_t max_inner;
  int64_t *cur;
  int64_t count;
  /* what to do with each one */
  int64_t pick;  /* >= 0: copy the pick-th into best */
  bool score;    /* keep the best-scoring one in best */
  int64_t *best;
  int64_t best_inner, best_outer_max;
  const int64_t *divisors; /* of the extent, ascending */
  int n_divisors;
} TileEnum;

static void tile_visit(TileEnum *t) {
  int64_t inner = t->cur[t->n - 1], outer_max = 0;
  for (int i = 0; i + 1 < t->n; i++)
    if (t->cur[i] > outer_max) outer_max = t->cur[i];
  if (t->pick == t->count) memcpy(t->best, t->cur, sizeof(int64_t) * (size_t)t->n);
  /* The default: the largest innermost factor (the contiguous, vectorizable
   * one), then the most balanced outer factors; the lexicographically first
   * of equals (strict comparisons keep the first). */
  if (t->score && (t->count == 0 || inner > t->best_inner ||
                   (inner == t->best_inner && outer_max < t->best_outer_max))) {
    memcpy(t->best, t->cur, sizeof(int64_t) * (size_t)t->n);
    t->best_inner = inner;
    t->best_outer_max = outer_max;
  }
  t->count++;
}

static void tile_enum(TileEnum *t, int64_t rem, int k) {
  if (k == t->n - 1) {
    if (t->max_inner > 0 && rem > t->max_inner) return;
    t->cur[k] = rem;
    tile_visit(t);
    return;
  }
  for (int i = 0; i < t->n_divisors && t->divisors[i] <= rem; i++) {
    int64_t d = t->divisors[i];
    if (rem % d) continue;
    t->cur[k] = d;
    tile_enum(t, rem / d, k + 1);
  }
}

/* Divisors of x in ascending order (every factor of a tile divides it). */
static int64_t *divisors_of(Arena *a, int64_t x, int *n) {
  int cnt = 0;
  for (int64_t d = 1; d <= x / d; d++)
    if (x % d == 0) cnt += d == x / d ? 1 : 2;
  int64_t *out = ARENA_ARRAY(a, int64_t, cnt);
  int lo = 0, hi = cnt - 1;
  for (int64_t d = 1; d <= x / d; d++)
    if (x % d == 0) {
      out[lo++] = d;
      if (d != x / d) out[hi--] = x / d;
    }
  *n = cnt;
  return out;
}

/* The next recorded sample decision, checked for its kind. DECIDE_TRACE:
 * a missing or mismatched one is an error. DECIDE_TRACE_OR_RANDOM: NULL
 * (the caller draws at random), a mismatched one consumed so the rest stay
 * in step where the schedule took the same path. */
static const Inst *next_decision(Schedule *s, InstKind kind) {
  const Trace *t = s->decisions;
  int k = s->next_decision;
  bool strict = s->mode == DECIDE_TRACE;
  while (t && k < t->n && t->insts[k].kind != INST_SAMPLE_PERFECT_TILE && t->insts[k].kind != INST_SAMPLE_CATEGORICAL) k++;
  if (!t || k >= t->n) {
    if (strict) sch_fail(s, "%s: the trace has no decision left for this sample", inst_kind_name(kind));
    return NULL;
  }
  if (t->insts[k].kind != kind) {
    if (strict)
      sch_fail(s, "%s: the trace's next decision is for %s (instruction %d)", inst_kind_name(kind),
               inst_kind_name(t->insts[k].kind), k);
    else s->next_decision = k + 1;
    return NULL;
  }
  s->next_decision = k + 1;
  return &t->insts[k];
}

loom_status sch_sample_perfect_tile(Schedule *s, SchRV loop_rv, int n, int64_t max_innermost, int64_t *out) {
  const Stmt *loop = sch_lookup_loop(s, loop_rv);
  if (!loop) return LOOM_ERR_SCHEDULE;
  const char *name = sch_loop_name(loop);
  if (n < 1 || !out) return sch_fail(s, "sample_perfect_tile of loop %s: expected n >= 1, got %d", name, n);
  if (max_innermost < 0)
    return sch_fail(s, "sample_perfect_tile of loop %s: max_innermost %lld is negative", name, (long long)max_innermost);
  int64_t extent;
  if (!expr_as_int(loop->loop.extent, &extent) || extent < 1)
    return sch_fail(s, "sample_perfect_tile of loop %s: extent %s is not a positive constant", name,
                    expr_to_string(s->arena, loop->loop.extent));
  int64_t *cur = ARENA_ARRAY(s->arena, int64_t, n), *res = ARENA_ARRAY(s->arena, int64_t, n);
  bool recorded = false;
  if (s->mode == DECIDE_TRACE || s->mode == DECIDE_TRACE_OR_RANDOM) {
    const Inst *in = next_decision(s, INST_SAMPLE_PERFECT_TILE);
    int64_t prod = 1;
    bool ok = in && in->n_decision == n;
    for (int i = 0; ok && i < n; i++)
      ok = in->decision[i] >= 1 && !__builtin_mul_overflow(prod, in->decision[i], &prod);
    ok = ok && prod == extent && (max_innermost == 0 || in->decision[n - 1] <= max_innermost);
    if (ok) memcpy(res, in->decision, sizeof(int64_t) * (size_t)n), recorded = true;
    else if (s->mode == DECIDE_TRACE && !in) return LOOM_ERR_SCHEDULE;
    else if (s->mode == DECIDE_TRACE)
      return sch_fail(s, "sample_perfect_tile of loop %s: the recorded decision is not %d factors of %lld with "
                         "innermost <= %lld",
                      name, n, (long long)extent, (long long)max_innermost);
  }
  if (!recorded) {
    int nd;
    const int64_t *divs = divisors_of(s->arena, extent, &nd);
    TileEnum t = {n, max_innermost, cur, 0, -1, s->mode == DECIDE_DEFAULT, res, 0, 0, divs, nd};
    tile_enum(&t, extent, 0);
    if (t.count == 0)
      return sch_fail(s, "sample_perfect_tile of loop %s: no factorization of %lld into %d factors has innermost "
                         "<= %lld",
                      name, (long long)extent, n, (long long)max_innermost);
    if (s->mode == DECIDE_RANDOM || s->mode == DECIDE_TRACE_OR_RANDOM) {
      TileEnum p = {n, max_innermost, cur, 0, (int64_t)(sch_rand(s) % (uint64_t)t.count), false, res, 0, 0, divs, nd};
      tile_enum(&p, extent, 0);
    }
  }
  memcpy(out, res, sizeof(int64_t) * (size_t)n);
  int64_t ints[2] = {n, max_innermost};
  Inst in = {.kind = INST_SAMPLE_PERFECT_TILE, .inputs = &loop_rv, .n_inputs = 1, .ints = ints, .n_ints = 2,
             .decision = res, .n_decision = n};
  sch_record(s, &in);
  return LOOM_OK;
}

/* ---- categorical ---- */

loom_status sch_sample_categorical(Schedule *s, const int64_t *candidates, const double *probs, int n, int64_t *out) {
  if (n < 1 || !candidates || !out) return sch_fail(s, "sample_categorical: expected at least one candidate, got %d", n);
  double total = 0;
  for (int i = 0; probs && i < n; i++) {
    if (!(probs[i] >= 0)) return sch_fail(s, "sample_categorical: probability %d (%g) is negative or NaN", i, probs[i]);
    total += probs[i];
  }
  if (probs && !(total > 0)) return sch_fail(s, "sample_categorical: the probabilities sum to %g; expected > 0", total);
  int pick = 0;
  bool recorded = false;
  if (s->mode == DECIDE_TRACE || s->mode == DECIDE_TRACE_OR_RANDOM) {
    const Inst *in = next_decision(s, INST_SAMPLE_CATEGORICAL);
    pick = -1;
    for (int i = 0; in && in->n_decision == 1 && i < n && pick < 0; i++)
      if (candidates[i] == in->decision[0] && (!probs || probs[i] > 0 || s->mode == DECIDE_TRACE)) pick = i;
    if (s->mode == DECIDE_TRACE && !in) return LOOM_ERR_SCHEDULE;
    if (s->mode == DECIDE_TRACE && pick < 0)
      return sch_fail(s, "sample_categorical: the recorded decision is not one of the %d candidates", n);
    recorded = pick >= 0;
    if (!recorded) pick = 0;
  }
  if (!recorded && s->mode == DECIDE_DEFAULT) {
    /* The most probable candidate; the first one when uniform or tied. */
    for (int i = 1; probs && i < n; i++)
      if (probs[i] > probs[pick]) pick = i;
  } else if (!recorded) {
    /* 53 random bits -> [0, 1) */
    double u = (double)(sch_rand(s) >> 11) * (1.0 / 9007199254740992.0);
    if (!probs) {
      pick = (int)(u * n);
    } else {
      double acc = 0, x = u * total;
      pick = -1;
      for (int i = 0; i < n && pick < 0; i++) {
        acc += probs[i];
        if (x < acc && probs[i] > 0) pick = i;
      }
      for (int i = n - 1; pick < 0; i--) /* rounding at the top end */
        if (probs[i] > 0) pick = i;
    }
  }
  *out = candidates[pick];
  Inst in = {.kind = INST_SAMPLE_CATEGORICAL, .ints = candidates, .n_ints = n, .floats = probs,
             .n_floats = probs ? n : 0, .decision = &candidates[pick], .n_decision = 1};
  sch_record(s, &in);
  return LOOM_OK;
}
