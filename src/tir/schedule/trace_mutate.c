/* Mutating a trace's decisions: the step of an evolutionary search over
 * the space a schedule's sampling points span (MetaSchedule's mutators).
 * A mutation changes one sample's decision to another valid one; replaying
 * the schedule with DECIDE_TRACE_OR_RANDOM then turns the changed decision
 * into a consistent program (samples that the change made different take
 * random decisions). */
#include "tir/schedule/schedule_internal.h"

#include <string.h>

static uint64_t next_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static bool is_sample(const Inst *in) {
  return in->kind == INST_SAMPLE_CATEGORICAL || in->kind == INST_SAMPLE_PERFECT_TILE;
}

/* Another candidate of nonzero probability for a categorical sample. */
static bool mutate_categorical(Arena *a, const Inst *in, uint64_t *rng, int64_t **out) {
  int n = in->n_ints, alternatives = 0;
  for (int i = 0; i < n; i++)
    alternatives += in->ints[i] != in->decision[0] && (!in->n_floats || in->floats[i] > 0);
  if (!alternatives) return false;
  int pick = (int)(next_rand(rng) % (uint64_t)alternatives);
  for (int i = 0; i < n; i++)
    if (in->ints[i] != in->decision[0] && (!in->n_floats || in->floats[i] > 0) && pick-- == 0) {
      *out = ARENA_NEW(a, int64_t);
      **out = in->ints[i];
      return true;
    }
  return false;
}

/* Another factorization of the same extent into as many factors, the
 * innermost at most max_innermost: random divisors of what is left, tried
 * a bounded number of times. */
static bool mutate_tile(Arena *a, const Inst *in, uint64_t *rng, int64_t **out) {
  int n = in->n_decision;
  int64_t extent = 1, max_inner = in->n_ints > 1 ? in->ints[1] : 0;
  for (int i = 0; i < n; i++) extent *= in->decision[i];
  if (n < 2 || extent < 2) return false;
  int64_t *f = ARENA_ARRAY(a, int64_t, n);
  for (int attempt = 0; attempt < 64; attempt++) {
    int64_t left = extent;
    for (int i = n - 1; i > 0; i--) { /* innermost first: it has the limit */
      int64_t divs[512];
      int nd = 0;
      for (int64_t d = 1; d <= left / d && nd < 510; d++) {
        if (left % d) continue;
        int64_t pair[2] = {d, left / d};
        for (int k = 0; k < (pair[0] == pair[1] ? 1 : 2); k++)
          if (i < n - 1 || max_inner == 0 || pair[k] <= max_inner) divs[nd++] = pair[k];
      }
      f[i] = divs[next_rand(rng) % (uint64_t)nd];
      left /= f[i];
    }
    f[0] = left;
    if (memcmp(f, in->decision, sizeof(int64_t) * (size_t)n) != 0) {
      *out = f;
      return true;
    }
  }
  return false;
}

int trace_num_samples(const Trace *t) {
  int n = 0;
  for (int i = 0; t && i < t->n; i++) n += is_sample(&t->insts[i]);
  return n;
}

Trace *trace_mutate(Arena *a, const Trace *t, uint64_t *rng) {
  int n = trace_num_samples(t);
  if (n == 0) return NULL;
  /* Start at a random sample; the first one from there that has another
   * valid decision is changed. */
  int start = (int)(next_rand(rng) % (uint64_t)n);
  for (int tries = 0; tries < n; tries++) {
    int want = (start + tries) % n, k = -1;
    for (int i = 0, seen = 0; i < t->n && k < 0; i++)
      if (is_sample(&t->insts[i]) && seen++ == want) k = i;
    const Inst *in = &t->insts[k];
    int64_t *decision = NULL;
    bool ok = in->kind == INST_SAMPLE_CATEGORICAL ? mutate_categorical(a, in, rng, &decision)
                                                  : mutate_tile(a, in, rng, &decision);
    if (!ok) continue;
    Trace *m = trace_new(a);
    m->insts = ARENA_ARRAY(a, Inst, t->n);
    memcpy(m->insts, t->insts, sizeof(Inst) * (size_t)t->n);
    m->n = m->cap = t->n;
    m->insts[k].decision = decision;
    return m;
  }
  return NULL;
}
