/* Internal to src/tune: the tuner's state, shared by its loop (tune.c),
 * its search (search.c) and its final round (final_round.c). */
#ifndef LOOM_TUNE_TUNE_INTERNAL_H
#define LOOM_TUNE_TUNE_INTERNAL_H

#include "tune/tune.h"

#include "autotune/cost_model.h"
#include "autotune/features.h"
#include "autotune/measure.h"
#include "autotune/records.h"
#include "autotune/workload.h"
#include "tir/schedule/schedule.h"

typedef struct Task {
  const PrimFunc *func; /* unscheduled */
  const char *name;     /* its first group's kernel name */
  char key[AUTOTUNE_WORKLOAD_KEY_LEN + 1];
  int calls;            /* groups with this workload */
  double flops;
  double default_us, best_us; /* < 0: not measured */
  int trials;
  int rounds;                                 /* batches measured */
  double best_after[TUNE_GRADIENT_WINDOW + 1]; /* best_us after each of the last rounds (a ring) */
  const char *kind;                           /* its anchor's schedule rule (NULL: none) */
  int group;                                  /* the task scheduler's group: tasks of the same kind */
  bool exhausted;
  MeasureArg args[MEASURE_MAX_ARGS];
  int nargs;
  MeasureBuild ref; /* the default schedule's kernel: the reference outputs */
  bool have_ref;
  const char *default_trace;
} Task;

typedef struct Tuner {
  const TuneOptions *opt;
  Target target;
  const PrimFunc *const *funcs; /* the kernels, unscheduled; equal workloads become one task */
  int nfuncs;
  Task *tasks;
  int ntasks;
  RecordStore *rec;
  Measurer *meas;
  CostModel *cm;
  Arena *arena;
  int threads;
  int budget; /* trials; 0: time only */
  uint64_t rng;
  TuneProgress prog;
  double t0;
  int sabotaged; /* candidates handed to opt->sabotage */
} Tuner;

typedef struct Candidate {
  Schedule *s;
  char *trace; /* malloc'd */
  float feat[FEATURES_DIM];
  float score;
  const char *provenance;
} Candidate;

uint64_t tune_next_rand(uint64_t *state);

/* ---- tune.c ---- */
/* The cost model's calls, counted in t->prog (TuneProgress has which
 * failures end the run): an update that fails is noted and the run goes
 * on; a prediction that fails is noted and returned. */
void tune_model_update(Tuner *t, const char *workload, const float *X, int n, const float *y);
loom_status tune_model_predict(Tuner *t, const float *X, int n, float *scores, LoomError *err);
/* task->best_us from the records (a resumed run starts from there). */
loom_status tune_load_best(Tuner *t, Task *task, LoomError *err);
/* Builds task's default schedule: the reference every candidate's outputs
 * are compared with. */
loom_status tune_build_reference(Tuner *t, Task *task, Arena *a, LoomError *err);

/* ---- search.c ---- */
/* A task's records ranked by time, fastest first: at most cap of them,
 * r taking the place of the slowest when it is faster (its trace copied
 * into a). */
typedef struct RankedRecord {
  int64_t id;
  const char *trace;
  double us;
  int n_times;
} RankedRecord;
void tune_rank_record(Arena *a, RankedRecord *top, int *n, int cap, const TuneRecord *r);

/* Runs the group strategy on s and fills c (trace, features); false when
 * the candidate is not new (measured before, in the records, among the
 * n_taken already taken or the n of this pool) or cannot be lowered (s is
 * then freed). */
bool tune_make_candidate(Tuner *t, Task *task, Schedule *s, const char *provenance, const Candidate *taken,
                         int n_taken, const Candidate *pool, int n, Candidate *c);
void tune_free_candidates(Candidate *c, int n);
/* Up to `want` new candidates of task into out (evolutionary or random
 * search), none equal to the n_taken already in this batch; returns how
 * many, or -1 with err set when the cost model failed to rank them. */
int tune_propose(Tuner *t, Task *task, int want, const Candidate *taken, int n_taken, Candidate *out,
                 LoomError *err);

/* ---- final_round.c ---- */
/* The task's fastest records and its default measured again (their
 * medians then decide what `loom compile --records` takes). */
loom_status tune_final_round(Tuner *t, Task *task, LoomError *err);

#endif
