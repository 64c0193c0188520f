/* The auto-tuner: `loom tune` (docs/tune.md).
 *
 * A model's fused groups are its tasks, merged by workload
 * (autotune_workload_key); each task's search space is what its group
 * strategy (compile_schedule_group_on: the default topi schedules' sampling
 * points, AutoTVM-style templates, and the generic schedule's for blocks no
 * template covers) can decide. Per round the task scheduler (below) picks a
 * task, the search proposes a batch of candidates, they are built (in parallel,
 * build and measurement never overlap) and measured in the measurer
 * process against the default schedule's output (autotune/measure.h), and
 * every result goes to the records database (autotune/records.h) in one
 * transaction per batch, and to the cost model (autotune/cost_model.h).
 *
 * Search (TUNE_SEARCH_EVOLUTIONARY, MetaSchedule's evolutionary search in
 * small): the default schedule is measured first, so a tuned result is
 * never slower than it; then a population of the best records of the task
 * plus random points, mutated (trace_mutate: one decision changed, the
 * strategy replayed with DECIDE_TRACE_OR_RANDOM), candidates already
 * measured dropped, the rest ranked by the cost model; the batch takes the
 * best-ranked, with an epsilon of random picks for exploration.
 * TUNE_SEARCH_RANDOM draws every candidate at random (the baseline).
 *
 * Resumable: everything measured is in the records; a second run with the
 * same records skips what is there and goes on from the best of it.
 *
 * Files: tune.c (tasks, batches, the loop), search.c (candidates, the
 * search), final_round.c (the best few measured again at the end),
 * task_scheduler.c (which task next). */
#ifndef LOOM_TUNE_TUNE_H
#define LOOM_TUNE_TUNE_H

#include "loom/loom_compile.h"
#include "target/target.h"
#include "tir/stmt.h"
#include "support/error.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum TuneSearch { TUNE_SEARCH_EVOLUTIONARY, TUNE_SEARCH_RANDOM } TuneSearch;

typedef struct TuneProgress {
  int trials, trials_total;  /* candidates measured (this run), the budget (0: time only) */
  int tasks_done, tasks;     /* tasks whose search ran out of new candidates */
  const char *task;          /* the task of the last batch (its first kernel's name) */
  double task_best_gflops;   /* its best so far */
  double model_ms_default;   /* the model's kernels at their default schedules (estimate: calls x time) */
  double model_ms_now;       /* the same with the best schedules so far */
  double elapsed_s, eta_s;   /* eta_s < 0: unknown */
  int failed;                /* candidates that crashed, hung, were wrong or did not build (this run) */
  /* The cost model's failures (this run). A failed update is counted and
   * the run goes on: the model keeps its trees, the batch's samples are
   * left out (they stay in the records; a resumed run's warm start learns
   * them), only the ranking suffers. A failed prediction ends the run
   * (tune_model returns the error): the batch would be the pool's order,
   * not the model's ranking, and nothing would say so. */
  int model_update_failures;
  int model_predict_failures;
  char model_error[192]; /* the first failure's message ("" when none) */
} TuneProgress;

typedef struct TuneOptions {
  const char *records;                /* the records database (created when missing); required */
  int trials;                         /* candidates to measure in all; 0: 64 per task */
  double seconds;                     /* stop after this long; 0: no limit */
  const loom_compile_options *compile;  /* target, target options, opt level (NULL: defaults) */
  int threads;                        /* 0: the thread count the compiler schedules for */
  TuneSearch search;
  const char *cost_model;             /* the cost model's file (loaded when there, saved at the end);
                                         NULL: "<records>.model" */
  int batch;                          /* candidates per batch; 0: 16 */
  uint64_t seed;
  double min_seconds;                 /* each candidate's timed runs; 0: 0.1 s (MetaSchedule: 100 ms) */
  double timeout_seconds;             /* per candidate's run; 0: 10 s */
  double build_timeout_seconds;       /* per candidate's C compiler run; 0: 60 s (then a failed "build") */
  void (*progress)(const TuneProgress *p, void *user);
  void *user;
  /* Fault injection, for tests only (NULL otherwise): called for each
   * searched candidate before it is built (n counts them from 0); what it
   * returns is built and measured in the candidate's place. */
  const PrimFunc *(*sabotage)(Arena *a, const PrimFunc *candidate, int n, void *user);
  /* Fault injection, for tests only (NULL otherwise): called before each
   * cost model call ("update" or "predict"); true makes it fail as if
   * XGBoost had. */
  bool (*cost_model_fault)(const char *call, void *user);
  /* For tests only (NULL otherwise): called with each batch of samples
   * handed to the cost model's update (n feature rows X, FEATURES_DIM
   * each, their throughputs y; the warm start's too), before it learns
   * them. */
  void (*model_samples)(const float *X, const float *y, int n, void *user);
} TuneOptions;

/* The batch's picks: of n candidates (feature rows X, n x dim, and
 * scores, higher better), up to `want` indices into out, best score first,
 * skipping a candidate whose features equal those of one already picked
 * (within a relative 1e-6 per feature: another trace of the same program,
 * a near-copy) while others remain; the skipped ones fill what is left.
 * Returns how many. */
int tune_select_diverse(const float *X, const float *scores, int n, int dim, int want, int *out);

/* ---- the task scheduler (task_scheduler.c; Ansor's gradient rule) ----
 * The model's estimated time is the sum over tasks of calls x best time.
 * Each round goes to the task whose next round is expected to cut it the
 * most: the gradient mixes the slope of the task's best time over its last
 * TUNE_GRADIENT_WINDOW rounds (weight 0.2) with an optimistic forward guess
 * (weight 0.8): another round gains what its average round gained, but no
 * more than reaching half the best throughput among tasks of its group
 * (the same anchor schedule rule: convs with convs). Every task first gets
 * TUNE_WARMUP_ROUNDS rounds (its default, then one search batch); a
 * TUNE_TASK_EPSILON of rounds go to a task at random. */
enum { TUNE_GRADIENT_WINDOW = 3, TUNE_WARMUP_ROUNDS = 2 };
#define TUNE_TASK_EPSILON 0.05

typedef struct TuneTaskState {
  int calls;           /* groups of the model with this workload */
  double flops;        /* per call */
  double best_us;      /* the fastest so far (<= 0: none yet) */
  double best_us_back; /* the fastest TUNE_GRADIENT_WINDOW rounds ago (<= 0: fewer rounds so far) */
  int rounds;          /* batches measured */
  int group;           /* tasks of the same kind share it; -1: none */
  bool exhausted;      /* no new candidate left */
} TuneTaskState;

/* d(model time)/d(round) of task i: negative, the more so the more a
 * round of it is expected to gain (-inf when it has no time yet). */
double tune_task_gradient(const TuneTaskState *tasks, int n, int i);
/* The task of the next round, -1 when all are exhausted; u in [0, 1) and r
 * are random draws (the epsilon pick and ties). */
int tune_pick_task(const TuneTaskState *tasks, int n, double u, uint64_t r);

/* Tunes the model's kernels. LOOM_OK when the budget was spent or every
 * task ran out of candidates; errors of the machinery only (the model does
 * not compile, the records file is refused, the measurer cannot start) --
 * a bad candidate is a failed record, never an error. *out (may be NULL)
 * gets the last progress. */
loom_status tune_model(const char *onnx_path, const TuneOptions *opt, TuneProgress *out, LoomError *err);
/* The same for any kernels (unscheduled PrimFuncs, e.g. one operator of a
 * benchmark), scheduled for target and `threads` (opt->compile and
 * opt->threads are not used). The measurer starts here: call it before
 * the process starts threads of its own. */
loom_status tune_kernels(const PrimFunc *const *funcs, int n, const Target *target, int threads,
                         const TuneOptions *opt, TuneProgress *out, LoomError *err);

#endif
