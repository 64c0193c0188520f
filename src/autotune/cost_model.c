/* The XGBoost cost model (cost_model.h; docs/autotune.md, "Cost model").
 *
 * The model keeps every sample (features, raw throughput, workload) and
 * retrains from scratch after each update, as MetaSchedule's XGBModel
 * does: the normalization of a workload's targets changes whenever a new
 * best is measured, so earlier trees would be fitted to stale targets.
 * Every XGBoost call is checked; its message (XGBGetLastError) becomes a
 * LoomError. */
#include "autotune/cost_model.h"

#include "autotune/features.h"
#include "support/alloc.h"
#include "support/atomic_file.h"

#include <xgboost/c_api.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FILE_MAGIC "loom-cost-model"
#define FILE_FORMAT 1

struct CostModel {
  CostModelOptions opt;
  int dim;
  /* samples: X is n x dim; y the raw throughputs; wl the workload index */
  float *X, *y;
  int *wl;
  int n, cap;
  char **workloads;
  int n_wl, cap_wl;
  BoosterHandle booster; /* NULL until trained or loaded */
  uint64_t rng;          /* the untrained model's scores */
};

CostModelOptions cost_model_options_default(void) {
  return (CostModelOptions){
      .objective = COST_MODEL_REGRESSION,
      .rounds = 200,
      .max_depth = 6,
      .eta = 0.1,
      .nthread = 1,
      .seed = 0,
      .min_samples = 16,
  };
}

static loom_status check_options(const CostModelOptions *o, LoomError *err) {
  if (o->objective != COST_MODEL_REGRESSION && o->objective != COST_MODEL_RANK)
    return err_set(err, LOOM_ERR_INVALID_ARG, "cost model: unknown objective %d", (int)o->objective);
  if (o->rounds < 1 || o->rounds > 100000)
    return err_set(err, LOOM_ERR_INVALID_ARG, "cost model: rounds must be in [1, 100000], got %d", o->rounds);
  if (o->max_depth < 1 || o->max_depth > 32)
    return err_set(err, LOOM_ERR_INVALID_ARG, "cost model: max_depth must be in [1, 32], got %d", o->max_depth);
  if (!(o->eta > 0 && o->eta <= 1))
    return err_set(err, LOOM_ERR_INVALID_ARG, "cost model: eta must be in (0, 1], got %g", o->eta);
  if (o->nthread < 1 || o->nthread > 256)
    return err_set(err, LOOM_ERR_INVALID_ARG, "cost model: nthread must be in [1, 256], got %d", o->nthread);
  if (o->min_samples < 2)
    return err_set(err, LOOM_ERR_INVALID_ARG, "cost model: min_samples must be at least 2, got %d", o->min_samples);
  return LOOM_OK;
}

static const char *objective_name(CostModelObjective o) { return o == COST_MODEL_RANK ? "rank" : "regression"; }

/* ---- XGBoost calls ---- */

static loom_status xgb_check(int rc, const char *call, LoomError *err) {
  if (rc == 0) return LOOM_OK;
  const char *msg = XGBGetLastError();
  return err_set(err, LOOM_ERR_INTERNAL, "cost model: XGBoost %s failed: %s", call, msg && *msg ? msg : "(no message)");
}

/* Evaluates an XGBoost call; on failure sets `st` and jumps to `done`. */
#define XGB(call)                              \
  do {                                         \
    st = xgb_check((call), #call, err);        \
    if (st) goto done;                         \
  } while (0)

/* Parameters that are not saved with a model (set again after loading). */
static loom_status set_runtime_params(BoosterHandle b, const CostModelOptions *o, LoomError *err) {
  loom_status st = LOOM_OK;
  char buf[32];
  snprintf(buf, sizeof buf, "%d", o->nthread);
  XGB(XGBoosterSetParam(b, "nthread", buf));
  snprintf(buf, sizeof buf, "%" PRIu64, o->seed % 2147483647u);
  XGB(XGBoosterSetParam(b, "seed", buf));
  XGB(XGBoosterSetParam(b, "verbosity", "0"));
done:
  return st;
}

static loom_status set_train_params(BoosterHandle b, const CostModelOptions *o, LoomError *err) {
  loom_status st = set_runtime_params(b, o, err);
  if (st) return st;
  char buf[32];
  XGB(XGBoosterSetParam(b, "objective", o->objective == COST_MODEL_RANK ? "rank:pairwise" : "reg:squarederror"));
  XGB(XGBoosterSetParam(b, "tree_method", "hist"));
  snprintf(buf, sizeof buf, "%d", o->max_depth);
  XGB(XGBoosterSetParam(b, "max_depth", buf));
  snprintf(buf, sizeof buf, "%g", o->eta);
  XGB(XGBoosterSetParam(b, "eta", buf));
  /* MetaSchedule's settings: small leaves are fine (the data are few and
   * exact), a little pruning. */
  XGB(XGBoosterSetParam(b, "min_child_weight", "0"));
  XGB(XGBoosterSetParam(b, "gamma", "0.0001"));
  XGB(XGBoosterSetParam(b, "lambda", "1"));
done:
  return st;
}

/* ---- samples ---- */

CostModel *cost_model_new(int dim, const CostModelOptions *opt, LoomError *err) {
  CostModelOptions o = opt ? *opt : cost_model_options_default();
  if (check_options(&o, err)) return NULL;
  if (dim < 1 || dim > 1 << 16) {
    err_set(err, LOOM_ERR_INVALID_ARG, "cost_model_new: dim must be in [1, 65536], got %d", dim);
    return NULL;
  }
  CostModel *cm = loom_calloc(1, sizeof *cm);
  if (!cm) {
    err_set(err, LOOM_ERR_OUT_OF_MEMORY, "cost_model_new: out of memory");
    return NULL;
  }
  cm->opt = o, cm->dim = dim;
  cm->rng = o.seed ^ 0x9e3779b97f4a7c15ull;
  return cm;
}

void cost_model_free(CostModel *cm) {
  if (!cm) return;
  if (cm->booster) XGBoosterFree(cm->booster);
  for (int i = 0; i < cm->n_wl; i++) loom_free(cm->workloads[i]);
  loom_free(cm->workloads);
  loom_free(cm->X), loom_free(cm->y), loom_free(cm->wl);
  loom_free(cm);
}

bool cost_model_trained(const CostModel *cm) { return cm && cm->booster; }
int cost_model_num_samples(const CostModel *cm) { return cm ? cm->n : 0; }

int cost_model_num_rounds(const CostModel *cm) {
  int rounds = 0;
  if (!cm || !cm->booster || XGBoosterBoostedRounds(cm->booster, &rounds) != 0) return 0;
  return rounds;
}
int cost_model_dim(const CostModel *cm) { return cm ? cm->dim : 0; }

static bool reserve_samples(CostModel *cm, int need) {
  if (need <= cm->cap) return true;
  int cap = cm->cap ? cm->cap : 64;
  while (cap < need) cap *= 2;
  float *X = loom_realloc(cm->X, (size_t)cap * (size_t)cm->dim * sizeof *X);
  if (X) cm->X = X;
  float *y = loom_realloc(cm->y, (size_t)cap * sizeof *y);
  if (y) cm->y = y;
  int *wl = loom_realloc(cm->wl, (size_t)cap * sizeof *wl);
  if (wl) cm->wl = wl;
  if (!X || !y || !wl) return false;
  cm->cap = cap;
  return true;
}

/* The index of `name`, adding it; -1 when out of memory. */
bool cost_model_knows(const CostModel *cm, const char *workload) {
  for (int i = 0; cm && workload && i < cm->n_wl; i++)
    if (strcmp(cm->workloads[i], workload) == 0) return true;
  return false;
}

static int workload_index(CostModel *cm, const char *name) {
  for (int i = 0; i < cm->n_wl; i++)
    if (strcmp(cm->workloads[i], name) == 0) return i;
  if (cm->n_wl == cm->cap_wl) {
    int cap = cm->cap_wl ? 2 * cm->cap_wl : 8;
    char **w = loom_realloc(cm->workloads, (size_t)cap * sizeof *w);
    if (!w) return -1;
    cm->workloads = w, cm->cap_wl = cap;
  }
  char *copy = loom_strdup(name);
  if (!copy) return -1;
  cm->workloads[cm->n_wl] = copy;
  return cm->n_wl++;
}

/* The training target of throughput y when the workload's best is `best`:
 * r = y / best in [0, 1] on a log scale, log2(1 + 255 r) / 8: 1 for the
 * best, 0.5 at r = 1/16, 0 for a failed candidate. Plain r (MetaSchedule's
 * target) squashes the slow majority of candidates near 0 where squared
 * error cannot tell them apart; on real measurements (bench_cost_model, 300
 * random schedules of a 128^3 matmul, 5 held-out splits) the log scale took
 * Spearman from 0.34 to 0.44, and the best of the model's top 5 from 0.91
 * to 0.97 of the best held-out candidate. */
static float target(float y, float best) {
  if (!(best > 0) || !(y > 0)) return 0;
  double r = y >= best ? 1.0 : (double)y / best;
  return (float)(log2(1 + 255 * r) / 8);
}

/* Retrains on all samples: rows grouped by workload (the rank objective
 * needs each group contiguous), targets from the workload's best. */
static loom_status train(CostModel *cm, LoomError *err) {
  loom_status st = LOOM_OK;
  const int n = cm->n, dim = cm->dim, nw = cm->n_wl;
  float *X = loom_malloc((size_t)n * (size_t)dim * sizeof *X), *label = loom_malloc((size_t)n * sizeof *label);
  unsigned *group = loom_calloc((size_t)nw, sizeof *group);
  float *best = loom_calloc((size_t)nw, sizeof *best);
  DMatrixHandle dm = NULL;
  BoosterHandle b = NULL;
  if (!X || !label || !group || !best) {
    st = err_set(err, LOOM_ERR_OUT_OF_MEMORY, "cost model: out of memory for %d samples", n);
    goto done;
  }
  for (int i = 0; i < n; i++)
    if (cm->y[i] > best[cm->wl[i]]) best[cm->wl[i]] = cm->y[i];
  int row = 0, groups = 0;
  for (int w = 0; w < nw; w++) {
    int start = row;
    for (int i = 0; i < n; i++) {
      if (cm->wl[i] != w) continue;
      memcpy(X + (size_t)row * dim, cm->X + (size_t)i * dim, (size_t)dim * sizeof *X);
      label[row++] = target(cm->y[i], best[w]);
    }
    if (row > start) group[groups++] = (unsigned)(row - start);
  }
  XGB(XGDMatrixCreateFromMat(X, (bst_ulong)n, (bst_ulong)dim, NAN, &dm));
  XGB(XGDMatrixSetFloatInfo(dm, "label", label, (bst_ulong)n));
  if (cm->opt.objective == COST_MODEL_RANK) XGB(XGDMatrixSetUIntInfo(dm, "group", group, (bst_ulong)groups));
  XGB(XGBoosterCreate(&dm, 1, &b));
  st = set_train_params(b, &cm->opt, err);
  if (st) goto done;
  for (int it = 0; it < cm->opt.rounds; it++) XGB(XGBoosterUpdateOneIter(b, it, dm));
  if (cm->booster) XGBoosterFree(cm->booster);
  cm->booster = b;
  b = NULL;
done:
  if (b) XGBoosterFree(b);
  if (dm) XGDMatrixFree(dm);
  loom_free(X), loom_free(label), loom_free(group), loom_free(best);
  return st;
}

loom_status cost_model_update(CostModel *cm, const char *workload, const float *X, int n, int dim,
                              const float *throughput, LoomError *err) {
  if (!cm || !workload || (n > 0 && (!X || !throughput)))
    return err_set(err, LOOM_ERR_INVALID_ARG, "cost_model_update: model, workload, X and throughput must be non-NULL");
  if (!workload[0] || strchr(workload, '\n'))
    return err_set(err, LOOM_ERR_INVALID_ARG, "cost_model_update: workload name must be non-empty, without newlines");
  if (dim != cm->dim)
    return err_set(err, LOOM_ERR_INVALID_ARG, "cost_model_update: rows have %d features, the model %d", dim, cm->dim);
  if (n < 0) return err_set(err, LOOM_ERR_INVALID_ARG, "cost_model_update: n must be >= 0, got %d", n);
  for (int i = 0; i < n; i++) {
    if (!isfinite(throughput[i]) || throughput[i] < 0)
      return err_set(err, LOOM_ERR_INVALID_ARG, "cost_model_update: throughput of row %d is %g; want finite and >= 0", i,
                     (double)throughput[i]);
    for (int j = 0; j < dim; j++)
      if (!isfinite(X[(size_t)i * dim + j]))
        return err_set(err, LOOM_ERR_INVALID_ARG, "cost_model_update: feature %d of row %d is not finite", j, i);
  }
  if (n == 0) return LOOM_OK;
  if (cm->n > INT32_MAX - n || !reserve_samples(cm, cm->n + n))
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "cost_model_update: out of memory for %d samples", cm->n + n);
  int old_n = cm->n, old_wl = cm->n_wl;
  int w = workload_index(cm, workload);
  if (w < 0) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "cost_model_update: out of memory");
  memcpy(cm->X + (size_t)old_n * dim, X, (size_t)n * dim * sizeof *X);
  for (int i = 0; i < n; i++) cm->y[old_n + i] = throughput[i], cm->wl[old_n + i] = w;
  cm->n += n;
  if (cm->n < cm->opt.min_samples) return LOOM_OK;
  loom_status st = train(cm, err);
  if (st) { /* drop this batch: the model stays as it was */
    cm->n = old_n;
    while (cm->n_wl > old_wl) loom_free(cm->workloads[--cm->n_wl]);
  }
  return st;
}

/* splitmix64: the untrained model's scores */
static uint64_t next_random(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

loom_status cost_model_predict(CostModel *cm, const float *X, int n, int dim, float *scores, LoomError *err) {
  if (!cm || (n > 0 && (!X || !scores)))
    return err_set(err, LOOM_ERR_INVALID_ARG, "cost_model_predict: model, X and scores must be non-NULL");
  if (dim != cm->dim)
    return err_set(err, LOOM_ERR_INVALID_ARG, "cost_model_predict: rows have %d features, the model %d", dim, cm->dim);
  if (n <= 0) return LOOM_OK;
  if (!cm->booster) {
    for (int i = 0; i < n; i++) scores[i] = (float)((next_random(&cm->rng) >> 40) * 0x1p-24);
    return LOOM_OK;
  }
  loom_status st = LOOM_OK;
  DMatrixHandle dm = NULL;
  bst_ulong const *shape = NULL;
  bst_ulong ndim = 0;
  const float *out = NULL;
  XGB(XGDMatrixCreateFromMat(X, (bst_ulong)n, (bst_ulong)dim, NAN, &dm));
  XGB(XGBoosterPredictFromDMatrix(cm->booster, dm,
                                  "{\"type\": 0, \"training\": false, \"iteration_begin\": 0, "
                                  "\"iteration_end\": 0, \"strict_shape\": false}",
                                  &shape, &ndim, &out));
  if (ndim != 1 || shape[0] != (bst_ulong)n) {
    st = err_set(err, LOOM_ERR_INTERNAL, "cost model: XGBoost predicted %llu values of %llu dimensions for %d rows",
                 ndim ? (unsigned long long)shape[0] : 0ull, (unsigned long long)ndim, n);
    goto done;
  }
  memcpy(scores, out, (size_t)n * sizeof *scores);
done:
  if (dm) XGDMatrixFree(dm);
  return st;
}

/* ---- files ----
 *
 *   loom-cost-model 1
 *   features <FEATURES_VERSION> dim <dim>
 *   objective <regression|rank>
 *   workloads <w>
 *   <name>                          (w lines)
 *   samples <n>
 *   booster <bytes>
 *   <bytes of XGBoost's UBJSON model>   (0 bytes: not trained)
 *   <n int32 workload indices> <n float32 throughputs> <n x dim float32 features>
 *
 * The binary parts are in host byte order (little-endian on the x86 hosts
 * Loom targets). */

loom_status cost_model_save(const CostModel *cm, const char *path, LoomError *err) {
  if (!cm || !path) return err_set(err, LOOM_ERR_INVALID_ARG, "cost_model_save: model and path must be non-NULL");
  loom_status st = LOOM_OK;
  bst_ulong len = 0;
  const char *bytes = NULL;
  if (cm->booster) XGB(XGBoosterSaveModelToBuffer(cm->booster, "{\"format\": \"ubj\"}", &len, &bytes));
  AtomicFile af;
  st = atomic_file_open(&af, path, err);
  if (st) goto done;
  fprintf(af.f, "%s %d\nfeatures %d dim %d\nobjective %s\nworkloads %d\n", FILE_MAGIC, FILE_FORMAT, FEATURES_VERSION,
          cm->dim, objective_name(cm->opt.objective), cm->n_wl);
  for (int i = 0; i < cm->n_wl; i++) fprintf(af.f, "%s\n", cm->workloads[i]);
  fprintf(af.f, "samples %d\nbooster %llu\n", cm->n, (unsigned long long)len);
  if (len) atomic_file_write(&af, bytes, (size_t)len);
  if (cm->n) {
    atomic_file_write(&af, cm->wl, (size_t)cm->n * sizeof *cm->wl);
    atomic_file_write(&af, cm->y, (size_t)cm->n * sizeof *cm->y);
    atomic_file_write(&af, cm->X, (size_t)cm->n * (size_t)cm->dim * sizeof *cm->X);
  }
  st = atomic_file_commit(&af, err);
  if (st) err_prefix(err, "cost_model_save");
done:
  return st;
}

typedef struct Reader {
  FILE *f;
  const char *path;
  LoomError *err;
  char line[4096];
} Reader;

static loom_status bad_file(Reader *r, const char *what) {
  return err_set(r->err, LOOM_ERR_PARSE, "cost_model_load: \"%s\" is not a Loom cost model file (%s)", r->path, what);
}

static bool read_line(Reader *r) {
  if (!fgets(r->line, sizeof r->line, r->f)) return false;
  size_t len = strlen(r->line);
  if (len == 0 || r->line[len - 1] != '\n') return false;
  r->line[len - 1] = '\0';
  return true;
}

static bool read_bytes(Reader *r, void *p, size_t n) { return n == 0 || fread(p, 1, n, r->f) == n; }

static loom_status load_body(Reader *r, const CostModelOptions *o, CostModel **out) {
  LoomError *err = r->err;
  char magic[32], obj[32];
  int format, version, dim, n_wl, n;
  unsigned long long blen;
  if (!read_line(r) || sscanf(r->line, "%31s %d", magic, &format) != 2 || strcmp(magic, FILE_MAGIC) != 0)
    return bad_file(r, "no \"" FILE_MAGIC "\" header");
  if (format != FILE_FORMAT)
    return err_set(err, LOOM_ERR_UNSUPPORTED, "cost_model_load: \"%s\" has file format %d; this build reads format %d",
                   r->path, format, FILE_FORMAT);
  if (!read_line(r) || sscanf(r->line, "features %d dim %d", &version, &dim) != 2)
    return bad_file(r, "no \"features\" line");
  if (version != FEATURES_VERSION)
    return err_set(err, LOOM_ERR_UNSUPPORTED,
                   "cost_model_load: \"%s\" was trained on feature set version %d, but this build extracts version %d "
                   "(docs/autotune.md, \"Features\"); its trees split on features that mean something else now: "
                   "train a new model",
                   r->path, version, FEATURES_VERSION);
  if (!read_line(r) || sscanf(r->line, "objective %31s", obj) != 1 ||
      (strcmp(obj, "regression") != 0 && strcmp(obj, "rank") != 0))
    return bad_file(r, "no \"objective regression|rank\" line");
  if (!read_line(r) || sscanf(r->line, "workloads %d", &n_wl) != 1 || n_wl < 0)
    return bad_file(r, "no \"workloads\" line");
  CostModelOptions opt = *o;
  opt.objective = strcmp(obj, "rank") == 0 ? COST_MODEL_RANK : COST_MODEL_REGRESSION;
  CostModel *cm = cost_model_new(dim, &opt, err);
  if (!cm) return err ? err->status : LOOM_ERR_INVALID_ARG;
  loom_status st = LOOM_OK;
  char *model = NULL;
  for (int i = 0; i < n_wl; i++) {
    if (!read_line(r) || !r->line[0]) {
      st = bad_file(r, "missing workload name");
      goto fail;
    }
    if (workload_index(cm, r->line) != i) {
      st = bad_file(r, "repeated workload name");
      goto fail;
    }
  }
  if (!read_line(r) || sscanf(r->line, "samples %d", &n) != 1 || n < 0) {
    st = bad_file(r, "no \"samples\" line");
    goto fail;
  }
  if (!read_line(r) || sscanf(r->line, "booster %llu", &blen) != 1) {
    st = bad_file(r, "no \"booster\" line");
    goto fail;
  }
  /* the sizes must match the rest of the file before anything is allocated */
  long here = ftell(r->f);
  if (here < 0 || fseek(r->f, 0, SEEK_END) != 0) {
    st = err_set(err, LOOM_ERR_IO, "cost_model_load: cannot seek in \"%s\"", r->path);
    goto fail;
  }
  long end = ftell(r->f);
  unsigned long long want = blen + (unsigned long long)n * (sizeof(int32_t) + sizeof(float) * (1ull + (unsigned)dim));
  if (end < here || (unsigned long long)(end - here) != want || fseek(r->f, here, SEEK_SET) != 0) {
    st = bad_file(r, "truncated or trailing data");
    goto fail;
  }
  if (blen) {
    model = loom_malloc(blen);
    if (!model || !read_bytes(r, model, blen)) {
      st = bad_file(r, "cannot read the booster");
      goto fail;
    }
    XGB(XGBoosterCreate(NULL, 0, &cm->booster));
    XGB(XGBoosterLoadModelFromBuffer(cm->booster, model, (bst_ulong)blen));
    st = set_runtime_params(cm->booster, &cm->opt, err);
    if (st) goto fail;
  }
  if (n > 0) {
    if (!reserve_samples(cm, n)) {
      st = err_set(err, LOOM_ERR_OUT_OF_MEMORY, "cost_model_load: out of memory for %d samples", n);
      goto fail;
    }
    if (!read_bytes(r, cm->wl, (size_t)n * sizeof *cm->wl) || !read_bytes(r, cm->y, (size_t)n * sizeof *cm->y) ||
        !read_bytes(r, cm->X, (size_t)n * (size_t)dim * sizeof *cm->X)) {
      st = bad_file(r, "cannot read the samples");
      goto fail;
    }
    for (int i = 0; i < n; i++)
      if (cm->wl[i] < 0 || cm->wl[i] >= n_wl || !isfinite(cm->y[i]) || cm->y[i] < 0) {
        st = bad_file(r, "a sample with a bad workload index or throughput");
        goto fail;
      }
    cm->n = n;
  }
  loom_free(model);
  *out = cm;
  return LOOM_OK;
done: /* the XGB() macro's exit */
fail:
  loom_free(model);
  cost_model_free(cm);
  return st;
}

CostModel *cost_model_load(const char *path, const CostModelOptions *opt, LoomError *err) {
  if (!path) {
    err_set(err, LOOM_ERR_INVALID_ARG, "cost_model_load: path must be non-NULL");
    return NULL;
  }
  CostModelOptions o = opt ? *opt : cost_model_options_default();
  if (check_options(&o, err)) return NULL;
  Reader r = {.f = fopen(path, "rb"), .path = path, .err = err};
  if (!r.f) {
    err_set(err, LOOM_ERR_IO, "cost_model_load: cannot open \"%s\"", path);
    return NULL;
  }
  CostModel *cm = NULL;
  load_body(&r, &o, &cm);
  fclose(r.f);
  return cm;
}
