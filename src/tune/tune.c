/* The auto-tuner's loop (tune.h has the design). */
#include "support/alloc.h"
#include "tune/tune_internal.h"

#include "compile/compile.h"
#include "support/clock.h"
#include "tir/flops.h"
#include "tir/transform/transform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t tune_next_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* ---- tasks ---- */

static loom_status make_tasks(Tuner *t, LoomError *err) {
  t->tasks = ARENA_ARRAY(t->arena, Task, t->nfuncs > 0 ? t->nfuncs : 1);
  for (int i = 0; i < t->nfuncs; i++) {
    const PrimFunc *f = t->funcs[i];
    char key[AUTOTUNE_WORKLOAD_KEY_LEN + 1];
    autotune_workload_key(f, key);
    Task *task = NULL;
    for (int k = 0; k < t->ntasks && !task; k++)
      if (!strcmp(t->tasks[k].key, key)) task = &t->tasks[k];
    if (task) {
      task->calls++;
      continue;
    }
    task = &t->tasks[t->ntasks++];
    memset(task, 0, sizeof *task);
    task->func = f;
    task->name = f->name;
    memcpy(task->key, key, sizeof key);
    task->calls = 1;
    task->flops = (double)tir_func_flops(f);
    task->default_us = task->best_us = -1;
    task->kind = compile_anchor_rule(f);
    task->group = task->kind ? t->ntasks - 1 : -1; /* a group: the index of its first task */
    for (int k = 0; task->kind && k < t->ntasks - 1; k++)
      if (t->tasks[k].kind && !strcmp(t->tasks[k].kind, task->kind)) task->group = t->tasks[k].group;
    loom_status st = measure_args_from_func(f, task->args, MEASURE_MAX_ARGS, &task->nargs, err);
    if (st) return err_prefix(err, "tune: kernel %s", f->name), st;
  }
  return LOOM_OK;
}

loom_status tune_load_best(Tuner *t, Task *task, LoomError *err) {
  TuneRecord r;
  bool found = false;
  Arena *a = arena_new();
  loom_status st = records_best(t->rec, task->key, t->target.name, t->threads, a, &r, &found, err);
  if (!st && found) task->best_us = r.median_us;
  arena_free(a);
  return st;
}

/* ---- the cost model's calls, their failures counted ---- */

static void note_model_failure(Tuner *t, int *count, const char *msg) {
  if (t->prog.model_update_failures + t->prog.model_predict_failures == 0)
    snprintf(t->prog.model_error, sizeof t->prog.model_error, "%.*s", (int)sizeof t->prog.model_error - 1, msg);
  (*count)++;
}

void tune_model_update(Tuner *t, const char *workload, const float *X, int n, const float *y) {
  LoomError e = {0};
  if (t->opt->model_samples) t->opt->model_samples(X, y, n, t->opt->user);
  if (t->opt->cost_model_fault && t->opt->cost_model_fault("update", t->opt->user))
    err_set(&e, LOOM_ERR_INTERNAL, "cost model: XGBoost training failed (injected fault)");
  else if (cost_model_update(t->cm, workload, X, n, FEATURES_DIM, y, &e) == LOOM_OK)
    return;
  note_model_failure(t, &t->prog.model_update_failures, e.msg);
}

loom_status tune_model_predict(Tuner *t, const float *X, int n, float *scores, LoomError *err) {
  loom_status st;
  if (t->opt->cost_model_fault && t->opt->cost_model_fault("predict", t->opt->user))
    st = err_set(err, LOOM_ERR_INTERNAL, "cost model: XGBoost prediction failed (injected fault)");
  else
    st = cost_model_predict(t->cm, X, n, FEATURES_DIM, scores, err);
  if (!st) return LOOM_OK;
  note_model_failure(t, &t->prog.model_predict_failures, err->msg);
  return err_prefix(err, "tune: the cost model could not rank the candidates (%s, %d samples)",
                    cost_model_trained(t->cm) ? "trained" : "untrained", cost_model_num_samples(t->cm)),
         st;
}

/* ---- warm start: the cost model learns what the records hold ---- */

typedef struct WarmSamples {
  const Task *task;
  float *X, *y;
  int n, cap;
} WarmSamples;

static bool warm_record(const TuneRecord *r, void *user) {
  WarmSamples *w = user;
  if (w->n == w->cap) return false;
  Arena *a = arena_new();
  LoomError err = {0};
  Trace *t = trace_parse(a, r->trace, &err);
  Schedule *s = sch_create(w->task->func, DECIDE_DEFAULT, 0);
  LowerOptions lo = lower_options_default();
  const PrimFunc *lowered = t && trace_apply(t, s) == LOOM_OK ? tir_lower(a, sch_func(s), &lo, &err) : NULL;
  if (lowered && features_extract(lowered, w->X + (size_t)w->n * FEATURES_DIM, FEATURES_DIM, &err) == LOOM_OK) {
    bool ok = !strcmp(r->status, "ok") && r->median_us > 0;
    w->y[w->n++] = ok ? (float)(w->task->flops > 0 ? w->task->flops / r->median_us : 1.0 / r->median_us) : 0.0f;
  }
  sch_free(s);
  arena_free(a);
  return true;
}

/* A resumed run's model starts from every record of the model's tasks
 * (their traces replayed and lowered for their features), not from
 * nothing; tasks the loaded cost model knows already are left out (their
 * samples are in it). */
static void warm_start(Tuner *t) {
  enum { WARM_MAX_PER_TASK = 512 };
  WarmSamples w = {NULL, loom_malloc(sizeof(float) * FEATURES_DIM * WARM_MAX_PER_TASK),
                   loom_malloc(sizeof(float) * WARM_MAX_PER_TASK), 0, WARM_MAX_PER_TASK};
  for (int i = 0; w.X && w.y && i < t->ntasks; i++) {
    LoomError err = {0};
    w.task = &t->tasks[i];
    w.n = 0;
    if (cost_model_knows(t->cm, w.task->key)) continue;
    (void)records_foreach(t->rec, w.task->key, t->target.name, warm_record, &w, &err);
    if (w.n > 0) tune_model_update(t, w.task->key, w.X, w.n, w.y);
  }
  loom_free(w.X);
  loom_free(w.y);
}

/* ---- build, measure, record ---- */

loom_status tune_build_reference(Tuner *t, Task *task, Arena *a, LoomError *err) {
  Schedule *s = sch_create(task->func, DECIDE_DEFAULT, 0);
  compile_schedule_group_on(s, &t->target, t->threads);
  char *trace = trace_to_text(sch_trace(s));
  task->default_trace = arena_strdup(t->arena, trace);
  loom_free(trace);
  const PrimFunc *f = sch_func(s);
  BuildOptions build = {.cflags = t->target.cflags}; /* no time limit: the reference must build */
  loom_status st = measure_build_batch(a, &f, 1, NULL, &build, &task->ref, err);
  if (!st && task->ref.status != LOOM_OK)
    st = err_set(err, LOOM_ERR_INTERNAL, "tune: the default schedule of %s does not build: %s", task->name,
                 task->ref.message);
  sch_free(s);
  task->have_ref = st == LOOM_OK;
  return st;
}

static const char *result_status(MeasureStatus s) { return s == MEASURE_ERROR ? "build" : measure_status_name(s); }

/* Builds, measures and records n candidates of task (one transaction),
 * and teaches the cost model their throughputs. */
static loom_status run_batch(Tuner *t, Task *task, Candidate *c, int n, LoomError *err) {
  Arena *a = arena_new();
  const PrimFunc **funcs = ARENA_ARRAY(a, const PrimFunc *, n);
  MeasureBuild *built = ARENA_ARRAY(a, MeasureBuild, n);
  for (int i = 0; i < n; i++) funcs[i] = sch_func(c[i].s);
  for (int i = 0; i < n && t->opt->sabotage; i++)
    if (strcmp(c[i].provenance, "default")) funcs[i] = t->opt->sabotage(a, funcs[i], t->sabotaged++, t->opt->user);
  BuildOptions build = {.cflags = t->target.cflags, .timeout_seconds = t->opt->build_timeout_seconds};
  loom_status st = measure_build_batch(a, funcs, n, NULL, &build, built, err);
  float *X = ARENA_ARRAY(a, float, (size_t)n * FEATURES_DIM), *y = ARENA_ARRAY(a, float, n);
  /* The default again, beside this batch: its first measurement, alone
   * right after a build, can be off, and the progress line's estimate
   * rests on it (the fastest of its measurements counts). */
  if (!st && task->default_us >= 0) {
    MeasureRequest req = {.candidate = {task->ref.so_path, task->ref.kernel},
                          .reference = {task->ref.so_path, task->ref.kernel},
                          .args = task->args, .n_args = task->nargs, .threads = t->threads, .seed = 0x10,
                          .min_seconds = t->opt->min_seconds, .timeout_seconds = t->opt->timeout_seconds};
    MeasureResult r;
    if ((st = measurer_run(t->meas, &req, &r, err)) == LOOM_OK && r.status == MEASURE_OK &&
        r.median_us < task->default_us)
      task->default_us = r.median_us;
  }
  if (!st) st = records_begin(t->rec, err);
  int learned = 0;
  for (int i = 0; !st && i < n; i++) {
    MeasureResult r;
    memset(&r, 0, sizeof r);
    const char *status = "build";
    if (built[i].status == LOOM_OK) {
      MeasureRequest req = {.candidate = {built[i].so_path, built[i].kernel},
                            .reference = {task->ref.so_path, task->ref.kernel},
                            .args = task->args, .n_args = task->nargs, .threads = t->threads,
                            .seed = 0x10 + (uint64_t)task->trials, .min_seconds = t->opt->min_seconds,
                            .timeout_seconds = t->opt->timeout_seconds};
      if ((st = measurer_run(t->meas, &req, &r, err))) break;
      status = r.status == MEASURE_OK ? "ok" : result_status(r.status);
    } else {
      snprintf(r.message, sizeof r.message, "%.*s", (int)sizeof r.message - 1, built[i].message);
    }
    bool ok = !strcmp(status, "ok");
    double times[1] = {r.median_us};
    TuneRecord rec = {.workload = task->key, .target = t->target.name, .threads = t->threads,
                      .trace = c[i].trace, .status = status, .median_us = ok ? r.median_us : -1,
                      .times_us = ok ? times : NULL, .n_times = ok ? 1 : 0, .error = ok ? NULL : r.message,
                      .provenance = c[i].provenance};
    bool added = false;
    if ((st = records_add(t->rec, &rec, &added, err))) break;
    if (!added) continue; /* measured before (another process's run): the first measurement stands */
    int row = learned++; /* the model learns only what was recorded */
    task->trials++;
    t->prog.trials++;
    if (!ok) t->prog.failed++;
    if (ok && (task->best_us < 0 || r.median_us < task->best_us)) task->best_us = r.median_us;
    if (ok && !strcmp(c[i].provenance, "default")) task->default_us = r.median_us;
    memcpy(X + (size_t)row * FEATURES_DIM, c[i].feat, sizeof c[i].feat);
    y[row] = ok && r.median_us > 0 ? (float)(task->flops > 0 ? task->flops / r.median_us : 1.0 / r.median_us) : 0.0f;
  }
  if (!st) st = records_commit(t->rec, err);
  else records_rollback(t->rec);
  if (!st) tune_model_update(t, task->key, X, learned, y);
  arena_free(a);
  return st;
}


/* ---- the loop ---- */

static loom_status tune_kernels_with(Measurer *meas, const PrimFunc *const *funcs, int nfuncs, const Target *target,
                                     int threads, const TuneOptions *opt, TuneProgress *out, LoomError *err);

static void update_progress(Tuner *t, const Task *last) {
  TuneProgress *p = &t->prog;
  p->tasks = t->ntasks;
  p->tasks_done = 0;
  p->model_ms_default = p->model_ms_now = 0;
  for (int i = 0; i < t->ntasks; i++) {
    const Task *k = &t->tasks[i];
    p->tasks_done += k->exhausted;
    double d = k->default_us >= 0 ? k->default_us : k->best_us;
    p->model_ms_default += d > 0 ? d * k->calls * 1e-3 : 0;
    p->model_ms_now += k->best_us > 0 ? k->best_us * k->calls * 1e-3 : 0;
  }
  p->task = last ? last->name : NULL;
  p->task_best_gflops = last && last->best_us > 0 && last->flops > 0 ? last->flops / (last->best_us * 1e3) : 0;
  p->elapsed_s = loom_clock_s() - t->t0;
  p->trials_total = t->budget;
  p->eta_s = t->budget > 0 && p->trials > 0 ? p->elapsed_s / p->trials * (t->budget - p->trials) : -1;
  if (t->opt->seconds > 0) {
    double left = t->opt->seconds - p->elapsed_s;
    if (p->eta_s < 0 || left < p->eta_s) p->eta_s = left > 0 ? left : 0;
  }
  if (t->opt->progress) t->opt->progress(p, t->opt->user);
}

/* The next task (tune_pick_task, the gradient rule); NULL when every task
 * is exhausted. */
static Task *next_task(Tuner *t) {
  TuneTaskState *st = loom_malloc(sizeof *st * (size_t)(t->ntasks > 0 ? t->ntasks : 1));
  if (!st) return NULL;
  for (int i = 0; i < t->ntasks; i++) {
    const Task *k = &t->tasks[i];
    int back = k->rounds - 1 - TUNE_GRADIENT_WINDOW; /* the round whose result is W rounds old */
    st[i] = (TuneTaskState){k->calls, k->flops, k->best_us,
                            back >= 0 ? k->best_after[back % (TUNE_GRADIENT_WINDOW + 1)] : -1, k->rounds, k->group,
                            k->exhausted};
  }
  double u = (double)(tune_next_rand(&t->rng) >> 11) * (1.0 / 9007199254740992.0);
  int pick = tune_pick_task(st, t->ntasks, u, tune_next_rand(&t->rng));
  loom_free(st);
  return pick >= 0 ? &t->tasks[pick] : NULL;
}

static bool budget_left(const Tuner *t) {
  if (t->budget > 0 && t->prog.trials >= t->budget) return false;
  return !(t->opt->seconds > 0 && loom_clock_s() - t->t0 >= t->opt->seconds);
}

loom_status tune_model(const char *onnx_path, const TuneOptions *opt, TuneProgress *out, LoomError *err) {
  if (!onnx_path || !opt || !opt->records)
    return err_set(err, LOOM_ERR_INVALID_ARG, "tune: a model and a records file are required");
  /* The measurer first: it forks, and should before anything starts threads. */
  Measurer *meas;
  loom_status st = measurer_start(&meas, err);
  if (st) return st;
  CompileTasks ct;
  if ((st = compile_model_tasks(onnx_path, opt->compile, &ct, err)) == LOOM_OK) {
    const PrimFunc **funcs = ARENA_ARRAY(ct.arena, const PrimFunc *, ct.ngroups > 0 ? ct.ngroups : 1);
    int n = 0;
    for (int i = 0; i < ct.ngroups; i++)
      if (ct.groups[i].func) funcs[n++] = ct.groups[i].func; /* an external (--byoc) kernel has none */
    st = n == 0 ? err_set(err, LOOM_ERR_INVALID_ARG,
                          "tune: \"%s\": every kernel runs on a --byoc back end: nothing of Loom's to tune", onnx_path)
                : tune_kernels_with(meas, funcs, n, &ct.target, opt->threads > 0 ? opt->threads : ct.threads, opt,
                                    out, err);
    compile_tasks_free(&ct);
  }
  measurer_stop(meas);
  return st;
}

loom_status tune_kernels(const PrimFunc *const *funcs, int n, const Target *target, int threads,
                         const TuneOptions *opt, TuneProgress *out, LoomError *err) {
  Measurer *meas;
  loom_status st = measurer_start(&meas, err);
  if (st) return st;
  st = tune_kernels_with(meas, funcs, n, target, threads, opt, out, err);
  measurer_stop(meas);
  return st;
}

static loom_status tune_kernels_with(Measurer *meas, const PrimFunc *const *funcs, int nfuncs, const Target *target,
                                     int threads, const TuneOptions *opt, TuneProgress *out, LoomError *err) {
  if (!opt || !opt->records) return err_set(err, LOOM_ERR_INVALID_ARG, "tune: a records file is required");
  if (opt->trials < 0 || opt->seconds < 0 || opt->batch < 0)
    return err_set(err, LOOM_ERR_INVALID_ARG, "tune: --trials, --time and the batch must not be negative");
  if (threads < 1) return err_set(err, LOOM_ERR_INVALID_ARG, "tune: %d threads: expected at least one", threads);
  TuneOptions o = *opt;
  if (o.batch == 0) o.batch = 16;
  if (o.min_seconds <= 0) o.min_seconds = 0.1;
  if (o.timeout_seconds <= 0) o.timeout_seconds = 10;
  if (o.build_timeout_seconds <= 0) o.build_timeout_seconds = 60;
  Tuner t;
  memset(&t, 0, sizeof t);
  t.opt = &o;
  t.t0 = loom_clock_s();
  t.rng = o.seed ^ 0x5eed5eedULL;
  t.arena = arena_new();
  t.meas = meas;
  t.target = *target;
  t.funcs = funcs;
  t.nfuncs = nfuncs;
  t.threads = threads;
  loom_status st = records_open(o.records, &t.rec, err);
  if (!st) st = make_tasks(&t, err);
  /* The cost model: the one saved next to the records (or named), so a
   * run starts from what earlier runs learned, on these workloads or on
   * others (transfer: another model's records and cost model); else a new
   * one. A file that does not load is replaced at the end (it is only a
   * cache of what the records hold). */
  char *model_path = o.cost_model ? loom_strdup(o.cost_model) : NULL;
  if (!model_path && (model_path = loom_malloc(strlen(o.records) + 7))) sprintf(model_path, "%s.model", o.records);
  if (!st && model_path && access(model_path, F_OK) == 0) {
    LoomError e2 = {0};
    if (!(t.cm = cost_model_load(model_path, NULL, &e2)))
      fprintf(stderr, "loom: note: tune: %s: %s; starting a new cost model\n", model_path, e2.msg);
  }
  if (!st && !t.cm && !(t.cm = cost_model_new(FEATURES_DIM, NULL, err)))
    st = err->status ? err->status : LOOM_ERR_INTERNAL;
  t.budget = o.trials > 0 ? o.trials : o.seconds > 0 ? 0 : 64 * t.ntasks;
  for (int i = 0; !st && i < t.ntasks; i++) st = tune_load_best(&t, &t.tasks[i], err);
  if (!st) warm_start(&t);
  while (!st && budget_left(&t)) {
    Task *task = next_task(&t);
    if (!task) break;
    Arena *a = arena_new();
    if (!task->have_ref && (st = tune_build_reference(&t, task, t.arena, err))) {
      arena_free(a);
      break;
    }
    int want = o.batch;
    if (t.budget > 0 && want > t.budget - t.prog.trials) want = t.budget - t.prog.trials;
    Candidate *c = loom_calloc((size_t)want, sizeof *c);
    int n = 0;
    /* Every task's default schedule is measured first, alone, before any
     * task searches: a short budget still gets every default (the
     * baseline of the progress line, and the reference of the records). */
    if (task->default_us < 0) {
      Schedule *s = sch_create(task->func, DECIDE_DEFAULT, 0);
      if (tune_make_candidate(&t, task, s, "default", NULL, 0, c, 0, &c[0])) n = 1;
      else task->default_us = task->best_us; /* in the records already */
    }
    if (n == 0 && (n = tune_propose(&t, task, want, c, 0, c, err)) < 0) {
      st = err->status ? err->status : LOOM_ERR_INTERNAL;
      n = 0;
    } else if (n == 0) task->exhausted = true;
    else st = run_batch(&t, task, c, n, err);
    task->best_after[task->rounds++ % (TUNE_GRADIENT_WINDOW + 1)] = task->best_us;
    tune_free_candidates(c, n);
    loom_free(c);
    arena_free(a);
    update_progress(&t, task);
  }
  if (!st && model_path) {
    LoomError e2 = {0};
    if (cost_model_save(t.cm, model_path, &e2))
      fprintf(stderr, "loom: note: tune: the cost model was not saved: %s\n", e2.msg);
  }
  loom_free(model_path);
  /* The final round (unless the machinery failed). */
  for (int i = 0; !st && i < t.ntasks; i++) st = tune_final_round(&t, &t.tasks[i], err);
  update_progress(&t, NULL);
  if (out) *out = t.prog;
  cost_model_free(t.cm);
  records_close(t.rec);
  arena_free(t.arena);
  return st;
}
