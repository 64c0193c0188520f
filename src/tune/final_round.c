/* The tuner's final round: the best few of each task measured again. */
#include "tune/tune_internal.h"

#include "runtime/artifact.h" /* LOOM_VERSION_STRING */

#include <string.h>

/* A task's fastest REMEASURE_TOP "ok" records of this run's target, thread
 * count and version family, and its default's record. */
enum { REMEASURE_TOP = 3, REMEASURE_ROUNDS = 2 };

typedef struct Finalists {
  Arena *a;
  const Tuner *t;
  const Task *task;
  RankedRecord top[REMEASURE_TOP + 1]; /* room for the default after them */
  int n;
  RankedRecord def; /* def.id < 0: none */
} Finalists;

static bool collect_finalist(const TuneRecord *r, void *user) {
  Finalists *f = user;
  char family[32], current[32];
  if (strcmp(r->status, "ok") || r->threads != f->t->threads || !records_version_family(r->loom_version, family) ||
      !records_version_family(LOOM_VERSION_STRING, current) || strcmp(family, current))
    return true;
  if (f->task->default_trace && !strcmp(r->trace, f->task->default_trace))
    f->def = (RankedRecord){r->id, arena_strdup(f->a, r->trace), r->median_us, r->n_times};
  else tune_rank_record(f->a, f->top, &f->n, REMEASURE_TOP, r);
  return true;
}

/* The fastest records of a task and its default, built again and measured
 * REMEASURE_ROUNDS more times, interleaved; each measurement is added to
 * its record (records_add_time), whose median then decides what `loom
 * compile --records` takes. Among a thousand candidates measured once on a
 * noisy machine, the fastest single measurement is often a lucky one.
 * Nothing to do when every finalist has been measured again before and
 * this run measured nothing new for the task. */
loom_status tune_final_round(Tuner *t, Task *task, LoomError *err) {
  Finalists f = {.a = arena_new(), .t = t, .task = task, .def = {.id = -1}};
  loom_status st = records_foreach(t->rec, task->key, t->target.name, collect_finalist, &f, err);
  if (f.def.id >= 0) f.top[f.n++] = f.def;
  bool fresh = task->trials > 0;
  for (int i = 0; i < f.n; i++) fresh |= f.top[i].n_times < 1 + REMEASURE_ROUNDS;
  if (st || f.n < 2 || !fresh || (!task->have_ref && (st = tune_build_reference(t, task, t->arena, err)))) {
    arena_free(f.a);
    return st;
  }
  const PrimFunc **funcs = ARENA_ARRAY(f.a, const PrimFunc *, f.n);
  Schedule **scheds = ARENA_ARRAY(f.a, Schedule *, f.n);
  MeasureBuild *built = ARENA_ARRAY(f.a, MeasureBuild, f.n);
  int n = 0;
  int64_t ids[REMEASURE_TOP + 1];
  for (int i = 0; i < f.n; i++) {
    LoomError e2 = {0};
    Trace *tr = trace_parse(f.a, f.top[i].trace, &e2);
    Schedule *s = sch_create(task->func, DECIDE_DEFAULT, 0);
    if (tr && trace_apply(tr, s) == LOOM_OK) {
      scheds[n] = s, funcs[n] = sch_func(s), ids[n++] = f.top[i].id;
    } else {
      sch_free(s);
    }
  }
  BuildOptions build = {.cflags = t->target.cflags, .timeout_seconds = t->opt->build_timeout_seconds};
  if (n > 1) st = measure_build_batch(f.a, funcs, n, NULL, &build, built, err);
  if (!st && n > 1) st = records_begin(t->rec, err);
  for (int round = 0; !st && n > 1 && round < REMEASURE_ROUNDS; round++)
    for (int i = 0; !st && i < n; i++) {
      if (built[i].status != LOOM_OK) continue;
      MeasureRequest req = {.candidate = {built[i].so_path, built[i].kernel},
                            .reference = {task->ref.so_path, task->ref.kernel},
                            .args = task->args, .n_args = task->nargs, .threads = t->threads,
                            .seed = 0x20 + (uint64_t)round, .min_seconds = t->opt->min_seconds,
                            .timeout_seconds = t->opt->timeout_seconds};
      MeasureResult r;
      if ((st = measurer_run(t->meas, &req, &r, err)) == LOOM_OK && r.status == MEASURE_OK)
        st = records_add_time(t->rec, ids[i], r.median_us, err);
    }
  if (n > 1) st = st ? (records_rollback(t->rec), st) : records_commit(t->rec, err);
  for (int i = 0; i < n; i++) sch_free(scheds[i]);
  arena_free(f.a);
  if (!st) st = tune_load_best(t, task, err);
  /* The default's estimate from its record's median too, as the best's is:
   * the minimum of its per-batch measurements would flatter the default. */
  Finalists again = {.a = arena_new(), .t = t, .task = task, .def = {.id = -1}};
  if (!st) st = records_foreach(t->rec, task->key, t->target.name, collect_finalist, &again, err);
  if (!st && again.def.id >= 0 && again.def.us > 0) task->default_us = again.def.us;
  arena_free(again.a);
  return st;
}
