/* The tuner's search: candidates from the records' best traces mutated
 * (evolutionary) or drawn at random, ranked by the cost model, the batch
 * kept diverse (tune.h has the design). */
#include "support/alloc.h"
#include "tune/tune_internal.h"

#include "compile/compile.h"
#include "tir/transform/transform.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { POPULATION = 16, CANDIDATES_PER_SLOT = 4, MAX_ATTEMPTS_PER_SLOT = 16 };
#define MUTATION_PROBABILITY 0.85
#define EPSILON 0.05

void tune_rank_record(Arena *a, RankedRecord *top, int *n, int cap, const TuneRecord *r) {
  int at;
  if (*n < cap) at = (*n)++;
  else if (r->median_us < top[cap - 1].us) at = cap - 1; /* replaces the slowest */
  else return;
  top[at] = (RankedRecord){r->id, arena_strdup(a, r->trace), r->median_us, r->n_times};
  for (int i = at; i > 0 && top[i].us < top[i - 1].us; i--) {
    RankedRecord x = top[i];
    top[i] = top[i - 1], top[i - 1] = x;
  }
}

/* The parents of the evolutionary search: the task's fastest records. */
typedef struct Population {
  Arena *a;
  RankedRecord top[POPULATION];
  int n;
} Population;

static bool collect_record(const TuneRecord *r, void *user) {
  Population *p = user;
  if (!strcmp(r->status, "ok") && r->median_us >= 0) tune_rank_record(p->a, p->top, &p->n, POPULATION, r);
  return true;
}

bool tune_make_candidate(Tuner *t, Task *task, Schedule *s, const char *provenance, const Candidate *taken,
                         int n_taken, const Candidate *pool, int n, Candidate *c) {
  compile_schedule_group_on(s, &t->target, t->threads);
  char *trace = trace_to_text(sch_trace(s));
  for (int i = 0; i < n; i++)
    if (!strcmp(pool[i].trace, trace)) goto drop;
  for (int i = 0; i < n_taken; i++)
    if (!strcmp(taken[i].trace, trace)) goto drop;
  bool seen = false;
  LoomError err = {0};
  if (records_contains(t->rec, task->key, t->target.name, t->threads, trace, &seen, &err) || seen) goto drop;
  LowerOptions lo = lower_options_default();
  const PrimFunc *lowered = tir_lower(sch_arena(s), sch_func(s), &lo, &err);
  if (!lowered || features_extract(lowered, c->feat, FEATURES_DIM, &err)) goto drop;
  c->s = s, c->trace = trace, c->provenance = provenance, c->score = 0;
  return true;
drop:
  loom_free(trace);
  sch_free(s);
  return false;
}

void tune_free_candidates(Candidate *c, int n) {
  for (int i = 0; i < n; i++) loom_free(c[i].trace), sch_free(c[i].s);
}

static bool same_features(const float *a, const float *b, int dim) {
  for (int i = 0; i < dim; i++)
    if (fabsf(a[i] - b[i]) > 1e-6f * fmaxf(1.0f, fmaxf(fabsf(a[i]), fabsf(b[i])))) return false;
  return true;
}

int tune_select_diverse(const float *X, const float *scores, int n, int dim, int want, int *out) {
  int *order = loom_malloc(sizeof(int) * (size_t)(n > 0 ? n : 1)), picked = 0;
  bool *taken = loom_calloc((size_t)(n > 0 ? n : 1), 1);
  if (!order || !taken) {
    loom_free(order);
    loom_free(taken);
    return 0;
  }
  for (int i = 0; i < n; i++) order[i] = i;
  for (int i = 1; i < n; i++) /* by score, best first; stable */
    for (int j = i; j > 0 && scores[order[j]] > scores[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1], order[j - 1] = t;
    }
  for (int pass = 0; pass < 2 && picked < want; pass++)
    for (int k = 0; k < n && picked < want; k++) {
      int c = order[k];
      if (taken[c]) continue;
      bool copy = false;
      for (int p = 0; pass == 0 && p < picked && !copy; p++)
        copy = same_features(X + (size_t)c * dim, X + (size_t)out[p] * dim, dim);
      if (copy) continue;
      taken[c] = true;
      out[picked++] = c;
    }
  loom_free(order);
  loom_free(taken);
  return picked;
}

int tune_propose(Tuner *t, Task *task, int want, const Candidate *taken, int n_taken, Candidate *out,
                 LoomError *err_out) {
  Population pop = {arena_new(), {{0}}, 0};
  LoomError err = {0};
  if (t->opt->search == TUNE_SEARCH_EVOLUTIONARY)
    (void)records_foreach(t->rec, task->key, t->target.name, collect_record, &pop, &err);
  int pool_cap = want * CANDIDATES_PER_SLOT, n = 0;
  Candidate *pool = loom_calloc((size_t)pool_cap, sizeof *pool);
  for (int attempt = 0; attempt < pool_cap * MAX_ATTEMPTS_PER_SLOT && n < pool_cap; attempt++) {
    uint64_t seed = tune_next_rand(&t->rng);
    double u = (double)(tune_next_rand(&t->rng) >> 11) * (1.0 / 9007199254740992.0);
    Schedule *s = NULL;
    const char *provenance = "random";
    if (t->opt->search == TUNE_SEARCH_EVOLUTIONARY && pop.n > 0 && u < MUTATION_PROBABILITY) {
      /* Parents: the faster, the likelier (rank-weighted). */
      int total = pop.n * (pop.n + 1) / 2, r = (int)(tune_next_rand(&t->rng) % (uint64_t)total), parent = 0;
      while (r >= pop.n - parent) r -= pop.n - parent, parent++;
      Trace *tr = trace_parse(pop.a, pop.top[parent].trace, &err);
      Trace *m = tr ? trace_mutate(pop.a, tr, &t->rng) : NULL;
      if (!m) continue;
      s = sch_create_from_decisions_or_random(task->func, m, seed);
      provenance = "evolutionary";
    } else {
      s = sch_create(task->func, DECIDE_RANDOM, seed);
    }
    if (tune_make_candidate(t, task, s, provenance, taken, n_taken, pool, n, &pool[n])) n++;
  }
  arena_free(pop.a);
  if (n == 0) {
    loom_free(pool);
    return 0;
  }
  /* The cost model ranks the pool; the batch takes the best of them but not
   * two with the same features (near-copies: the same program from other
   * decisions), and an epsilon of it is drawn from the rest at random
   * (exploration: the model only knows what it saw). */
  int keep = n < want ? n : want;
  if (t->opt->search == TUNE_SEARCH_EVOLUTIONARY) {
    float *X = loom_malloc(sizeof(float) * FEATURES_DIM * (size_t)n), *scores = loom_malloc(sizeof(float) * (size_t)n);
    int *pick = loom_malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) memcpy(X + (size_t)i * FEATURES_DIM, pool[i].feat, sizeof pool[i].feat);
    if (tune_model_predict(t, X, n, scores, err_out)) {
      loom_free(pick), loom_free(X), loom_free(scores);
      tune_free_candidates(pool, n);
      loom_free(pool);
      return -1;
    }
    for (int i = 0; i < n; i++) pool[i].score = scores[i];
    /* Reorder the pool: the diverse picks first (by score), then the rest by score. */
    int np = tune_select_diverse(X, scores, n, FEATURES_DIM, n, pick);
    Candidate *sorted = loom_malloc(sizeof *sorted * (size_t)n);
    for (int i = 0; i < np; i++) sorted[i] = pool[pick[i]];
    memcpy(pool, sorted, sizeof *pool * (size_t)np);
    loom_free(sorted);
    loom_free(pick);
    loom_free(X);
    loom_free(scores);
    int eps = (int)ceil(EPSILON * keep);
    for (int i = keep - eps; i < keep && n > keep; i++) { /* swap in random picks from the tail */
      int j = keep + (int)(tune_next_rand(&t->rng) % (uint64_t)(n - keep));
      Candidate tmp = pool[i];
      pool[i] = pool[j], pool[j] = tmp;
    }
  }
  memcpy(out, pool, sizeof *pool * (size_t)keep);
  tune_free_candidates(pool + keep, n - keep);
  loom_free(pool);
  return keep;
}
