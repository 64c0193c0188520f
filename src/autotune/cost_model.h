/* The learned cost model: gradient-boosted trees (XGBoost, through its C
 * API) that score schedule candidates from their features (features.h),
 * trained online on the candidates measured so far (AutoTVM, MetaSchedule's
 * XGBModel; docs/autotune.md, "Cost model").
 *
 * Training data: every update adds a batch of measured candidates of one
 * workload (its key: autotune_workload_key, or any string without a
 * newline) with their throughputs (higher is better: FLOP/s, or 1 / time;
 * 0 for a candidate that failed). The target of a sample is its throughput
 * divided by the best throughput seen for its workload, on a log scale
 * (log2(1 + 255 r) / 8: 1 for the best, 0 for a failure), so every
 * workload's targets lie in [0, 1] and one model learns from all workloads
 * and scores candidates of a workload it never saw (transfer). The model is retrained
 * from scratch on all samples after every update (a fixed number of rounds,
 * seeded: the same updates give the same model).
 *
 * Scores: higher means faster; only their order within one workload is
 * meaningful. Until the model has been trained (fewer than min_samples
 * samples and nothing loaded), cost_model_predict returns uniform random
 * scores in [0, 1) from the options' seed: a random ranking, so a search
 * that keeps the best-scored candidates explores at random.
 *
 * Not thread-safe: one thread at a time per model. */
#ifndef LOOM_AUTOTUNE_COST_MODEL_H
#define LOOM_AUTOTUNE_COST_MODEL_H

#include "support/error.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum CostModelObjective {
  /* squared error on normalized throughput (MetaSchedule's XGBModel) */
  COST_MODEL_REGRESSION,
  /* pairwise ranking within each workload (AutoTVM's rank objective) */
  COST_MODEL_RANK,
} CostModelObjective;

typedef struct CostModelOptions {
  CostModelObjective objective; /* default COST_MODEL_REGRESSION */
  int rounds;                   /* boosting rounds per training; default 200 */
  int max_depth;                /* default 6 */
  double eta;                   /* learning rate; default 0.1 */
  int nthread;                  /* XGBoost threads; default 1 (2 at most is sensible here) */
  uint64_t seed;                /* XGBoost's seed and the untrained scores'; default 0 */
  int min_samples;              /* samples before the first training; default 16 */
} CostModelOptions;

CostModelOptions cost_model_options_default(void);

typedef struct CostModel CostModel;

/* A model over feature vectors of `dim` floats (FEATURES_DIM for
 * features_extract's). opt NULL: defaults. NULL on a bad option
 * (LOOM_ERR_INVALID_ARG naming it). */
CostModel *cost_model_new(int dim, const CostModelOptions *opt, LoomError *err);

/* Adds n measured candidates of `workload`: X is n x dim, row-major;
 * throughput[i] >= 0 (finite) is candidate i's. Retrains when the model
 * then holds at least min_samples samples. LOOM_ERR_INVALID_ARG for a dim
 * other than the model's, a bad throughput or workload name (the message
 * names the row); LOOM_ERR_INTERNAL with XGBoost's message when training
 * fails. On error the samples of this batch are not kept. */
loom_status cost_model_update(CostModel *cm, const char *workload, const float *X, int n, int dim,
                              const float *throughput, LoomError *err);

/* scores[i] for row i of X (n x dim, the model's dim). See above for an
 * untrained model. */
loom_status cost_model_predict(CostModel *cm, const float *X, int n, int dim, float *scores, LoomError *err);

/* Whether predictions come from trees (trained here or loaded). */
bool cost_model_trained(const CostModel *cm);
int cost_model_num_samples(const CostModel *cm);
/* The booster's boosting rounds (trees per output): 0 until trained. */
int cost_model_num_rounds(const CostModel *cm);
/* Whether the model holds samples of `workload`. */
bool cost_model_knows(const CostModel *cm, const char *workload);
int cost_model_dim(const CostModel *cm);

/* Writes the model to `path` (replacing it): a text header with the
 * feature-set version (FEATURES_VERSION) and dim, the workload names, the
 * booster in XGBoost's own UBJSON model format, and the training samples,
 * so a loaded model predicts as the saved one did and keeps learning from
 * them (the format is in docs/autotune.md). LOOM_ERR_IO naming the path. */
loom_status cost_model_save(const CostModel *cm, const char *path, LoomError *err);

/* Reads a model saved by cost_model_save. opt (NULL: defaults) sets how it
 * trains from now on (the objective comes from the file). Refused:
 * LOOM_ERR_IO (cannot read), LOOM_ERR_PARSE (not a cost model file, or
 * truncated), LOOM_ERR_UNSUPPORTED when it was saved with another feature
 * set version than this build's FEATURES_VERSION (the message names both:
 * its trees split on features that mean something else now). */
CostModel *cost_model_load(const char *path, const CostModelOptions *opt, LoomError *err);

void cost_model_free(CostModel *cm);

#endif
