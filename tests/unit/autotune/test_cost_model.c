/* The XGBoost cost model (src/autotune/cost_model.h) on features of real
 * candidates: random schedules of small matmuls, lowered.
 *
 * The targets are synthetic, so the test does not depend on the machine's
 * timing noise: an analytic "time" of each lowered program computed here,
 * independently of features.c (its own walk; strides by evaluating the
 * index expressions at two points): every store costs its executions times
 * (1 + its float operations + a cost per access that depends on the
 * access's stride in the innermost loop: 0.2 invariant, 1 contiguous or a
 * unit-stride vector, 3 strided, one per lane for a gathered vector),
 * divided by min(parallel extent, 4) under parallel loops, plus 2000 per
 * launch of a parallel loop. Throughput = FLOPs / time. The model sees only
 * the feature vectors; it must rank held-out candidates as this function
 * does (Spearman's rank correlation), on the workloads it trained on and
 * on one it never saw (transfer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arith/arith.h"
#include "autotune/autotune.h"
#include "autotune/cost_model.h"
#include "autotune/features.h"
#include "fixtures/op_funcs.h"
#include "support/ptrmap.h"
#include "tir/transform/transform.h"

/* ---- the synthetic time ---- */

enum { ORACLE_DEPTH = 64 };

typedef struct Oracle {
  Arena *a;
  const Expr *vars[ORACLE_DEPTH];
  int64_t ext[ORACLE_DEPTH], val[ORACLE_DEPTH];
  bool parallel[ORACLE_DEPTH];
  int depth;
  double time;
} Oracle;

static int64_t eval_at(Oracle *o, const Expr *e, int moved) {
  PtrMap m;
  ptrmap_init(&m, o->a);
  for (int d = 0; d < o->depth; d++) {
    o->val[d] = d == moved ? 1 : 0;
    ptrmap_put(&m, o->vars[d], &o->val[d]);
  }
  int64_t v = 0;
  return arith_eval_int(e, &m, &v) ? v : 0;
}

static double access_cost(Oracle *o, const Expr *index) {
  int lanes = index->dtype.lanes > 1 ? index->dtype.lanes : 1;
  if (lanes > 1) return index->kind == EXPR_RAMP && expr_is_int(index->ramp.stride, 1) ? 1 : lanes;
  int inner = o->depth - 1;
  while (inner >= 0 && o->ext[inner] <= 1) inner--;
  if (inner < 0) return 1;
  int64_t stride = llabs(eval_at(o, index, inner) - eval_at(o, index, -1));
  return stride == 0 ? 0.2 : stride == 1 ? 1 : 3;
}

static double expr_cost(Oracle *o, const Expr *e) {
  double c = 0;
  switch (e->kind) {
    case EXPR_LOAD: return access_cost(o, e->load.indices[0]);
    case EXPR_ADD:
    case EXPR_SUB:
    case EXPR_MUL:
      c = dtype_is_float(e->dtype) ? 1 : 0;
      return c + expr_cost(o, e->bin.a) + expr_cost(o, e->bin.b);
    case EXPR_BROADCAST: return expr_cost(o, e->broadcast.value);
    case EXPR_CAST: return expr_cost(o, e->un.a);
    default: return 0;
  }
}

static void oracle_walk(Oracle *o, const Stmt *s) {
  if (!s) return;
  switch (s->kind) {
    case STMT_FOR: {
      int64_t e = 1;
      expr_as_int(s->loop.extent, &e);
      assert_true(o->depth < ORACLE_DEPTH);
      if (s->loop.kind == FOR_PARALLEL) {
        double launches = 1;
        for (int d = 0; d < o->depth; d++) launches *= (double)o->ext[d];
        o->time += 2000 * launches;
      }
      o->vars[o->depth] = s->loop.var, o->ext[o->depth] = e, o->parallel[o->depth] = s->loop.kind == FOR_PARALLEL;
      o->depth++;
      oracle_walk(o, s->loop.body);
      o->depth--;
      return;
    }
    case STMT_STORE: {
      double exec = 1, par = 1;
      for (int d = 0; d < o->depth; d++) {
        exec *= (double)o->ext[d];
        if (o->parallel[d]) par *= (double)o->ext[d];
      }
      double cost = 1 + expr_cost(o, s->store.value) + access_cost(o, s->store.indices[0]);
      o->time += exec * cost / fmin(par, 4);
      return;
    }
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n; i++) oracle_walk(o, s->seq.stmts[i]);
      return;
    case STMT_IF: oracle_walk(o, s->if_.then_s), oracle_walk(o, s->if_.else_s); return;
    case STMT_ALLOCATE: oracle_walk(o, s->alloc.body); return;
    default: return;
  }
}

/* ---- candidates ---- */

typedef struct Set {
  int n;
  float *X; /* n x FEATURES_DIM */
  float *y; /* synthetic throughput */
} Set;

/* n random schedules (seeds seed0...) of an M x N x K matmul. */
static Set candidates(int64_t M, int64_t N, int64_t K, uint64_t seed0, int n) {
  Set s = {0, malloc(sizeof(float) * FEATURES_DIM * (size_t)n), malloc(sizeof(float) * (size_t)n)};
  LoomError err = {0};
  LowerOptions lo = lower_options_default();
  for (uint64_t seed = seed0; s.n < n; seed++) {
    Arena *a = arena_new();
    PrimFunc *f = opfunc_matmul(a, M, N, K, DT_F32, &err);
    assert_non_null(f);
    Schedule *sch = sch_create(f, DECIDE_RANDOM, seed);
    if (random_schedule_apply(sch, NULL, &err)) fail_msg("random schedule %llu: %s", (unsigned long long)seed, err.msg);
    const PrimFunc *g = tir_lower(a, sch_func(sch), &lo, &err);
    if (!g) fail_msg("lowering random schedule %llu: %s", (unsigned long long)seed, err.msg);
    if (features_extract(g, s.X + (size_t)s.n * FEATURES_DIM, FEATURES_DIM, &err))
      fail_msg("features of random schedule %llu: %s", (unsigned long long)seed, err.msg);
    Oracle o = {.a = a};
    oracle_walk(&o, g->body);
    s.y[s.n++] = (float)(2.0 * (double)(M * N * K) / o.time);
    sch_free(sch);
    arena_free(a);
  }
  return s;
}

static void set_free(Set *s) { free(s->X), free(s->y); }

/* ---- Spearman's rank correlation (ties get their mean rank) ---- */

typedef struct Ranked {
  double v;
  int i;
} Ranked;

static int cmp_ranked(const void *x, const void *y) {
  double a = ((const Ranked *)x)->v, b = ((const Ranked *)y)->v;
  return (a > b) - (a < b);
}

static void ranks(const double *v, int n, double *out) {
  Ranked *r = malloc(sizeof *r * (size_t)n);
  for (int i = 0; i < n; i++) r[i] = (Ranked){v[i], i};
  qsort(r, (size_t)n, sizeof *r, cmp_ranked);
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && r[j + 1].v == r[i].v) j++;
    for (int k = i; k <= j; k++) out[r[k].i] = (i + j) / 2.0;
    i = j + 1;
  }
  free(r);
}

static double spearman(const float *x, const float *y, int n) {
  double *a = calloc(4 * (size_t)n, sizeof(double)), *b = a + n, *ra = a + 2 * n, *rb = a + 3 * n;
  for (int i = 0; i < n; i++) a[i] = x[i], b[i] = y[i];
  ranks(a, n, ra);
  ranks(b, n, rb);
  double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
  for (int i = 0; i < n; i++) ma += ra[i] / n, mb += rb[i] / n;
  for (int i = 0; i < n; i++)
    sab += (ra[i] - ma) * (rb[i] - mb), saa += (ra[i] - ma) * (ra[i] - ma), sbb += (rb[i] - mb) * (rb[i] - mb);
  free(a);
  return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : 0;
}

static double held_out_spearman(CostModel *cm, const Set *s, int from, int to) {
  LoomError err = {0};
  int n = to - from;
  float *scores = malloc(sizeof(float) * (size_t)n);
  if (cost_model_predict(cm, s->X + (size_t)from * FEATURES_DIM, n, FEATURES_DIM, scores, &err))
    fail_msg("predict: %s", err.msg);
  double rho = spearman(scores, s->y + from, n);
  free(scores);
  return rho;
}

static void update(CostModel *cm, const char *workload, const Set *s, int from, int to) {
  LoomError err = {0};
  if (cost_model_update(cm, workload, s->X + (size_t)from * FEATURES_DIM, to - from, FEATURES_DIM, s->y + from, &err))
    fail_msg("update: %s", err.msg);
}

/* ---- the shared data: two workloads, and one kept for transfer ---- */

enum { TRAIN = 160, TEST = 80, BATCH = 40, TRANSFER = 80 }; /* TRAIN: a multiple of 2 * BATCH */

typedef struct Data {
  Set a, b, c;
} Data;

static int setup(void **state) {
  Data *d = calloc(1, sizeof *d);
  d->a = candidates(64, 64, 64, 1, TRAIN + TEST);
  d->b = candidates(32, 96, 48, 1001, TRAIN + TEST);
  d->c = candidates(48, 80, 56, 5001, TRANSFER);
  *state = d;
  return 0;
}

static int teardown(void **state) {
  Data *d = *state;
  set_free(&d->a), set_free(&d->b), set_free(&d->c);
  free(d);
  return 0;
}

/* Workload b's throughputs are scaled 1000 x: normalization per workload
 * must make that irrelevant. */
static CostModel *train_on(const Data *d, const CostModelOptions *opt, int batch) {
  LoomError err = {0};
  CostModel *cm = cost_model_new(FEATURES_DIM, opt, &err);
  assert_non_null(cm);
  Set b = d->b;
  float *scaled = malloc(sizeof(float) * TRAIN);
  for (int i = 0; i < TRAIN; i++) scaled[i] = 1000 * b.y[i];
  b.y = scaled;
  /* online: batches alternating between the workloads, retrained after each */
  assert_int_equal(TRAIN % batch, 0);
  for (int i = 0; i < TRAIN; i += batch) {
    update(cm, "matmul_64x64x64", &d->a, i, i + batch);
    update(cm, "matmul_32x96x48", &b, i, i + batch);
    assert_true(cost_model_trained(cm));
  }
  free(scaled);
  assert_int_equal(cost_model_num_samples(cm), 2 * TRAIN);
  return cm;
}

/* The held-out Spearman of the one feature that ranks the training part of
 * `s` best: what the model must beat to have learned a combination. */
static double best_single_feature(const Set *s, int train, int test, int *which) {
  float *col = malloc(sizeof(float) * (size_t)(train + test));
  double best = -1, held_out = 0;
  for (int j = 0; j < FEATURES_DIM; j++) {
    for (int i = 0; i < train + test; i++) col[i] = s->X[(size_t)i * FEATURES_DIM + j];
    double r = fabs(spearman(col, s->y, train));
    if (r > best) best = r, *which = j, held_out = fabs(spearman(col + train, s->y + train, test));
  }
  free(col);
  return held_out;
}

static void check_ranking(const Data *d, CostModelObjective objective) {
  CostModelOptions opt = cost_model_options_default();
  opt.objective = objective;
  /* rank:pairwise trains ~10x slower in XGBoost 1.7: fewer, larger batches */
  CostModel *cm = train_on(d, &opt, objective == COST_MODEL_RANK ? 2 * BATCH : BATCH);
  double ra = held_out_spearman(cm, &d->a, TRAIN, TRAIN + TEST);
  double rb = held_out_spearman(cm, &d->b, TRAIN, TRAIN + TEST);
  double rc = held_out_spearman(cm, &d->c, 0, TRANSFER);
  int which = 0;
  double single = best_single_feature(&d->a, TRAIN, TEST, &which);
  char name[64];
  print_message("%s: Spearman on held-out candidates: matmul 64x64x64 %.3f, 32x96x48 %.3f; "
                "unseen 48x80x56 (transfer) %.3f  [%d training samples; best single feature %s: %.3f]\n",
                objective == COST_MODEL_RANK ? "rank:pairwise" : "regression", ra, rb, rc,
                cost_model_num_samples(cm), features_name(which, name, sizeof name), single);
  assert_true(ra > 0.7);
  assert_true(rb > 0.7);
  assert_true(rc > 0.6);
  assert_true(ra > single + 0.05);
  cost_model_free(cm);
}

/* The negative control: targets shuffled among the candidates carry no
 * information, and the model must not find any. */
static void test_shuffled_targets(void **state) {
  const Data *d = *state;
  LoomError err = {0};
  CostModel *cm = cost_model_new(FEATURES_DIM, NULL, &err);
  float *y = malloc(sizeof(float) * TRAIN);
  for (int i = 0; i < TRAIN; i++) y[i] = d->a.y[(i * 37 + 11) % TRAIN]; /* 37 is prime to TRAIN */
  Set shuffled = {TRAIN, d->a.X, y};
  update(cm, "w", &shuffled, 0, TRAIN);
  double r = held_out_spearman(cm, &d->a, TRAIN, TRAIN + TEST);
  print_message("shuffled targets: Spearman on held-out candidates %.3f\n", r);
  assert_true(fabs(r) < 0.3);
  free(y);
  cost_model_free(cm);
}

static void test_ranks_held_out_regression(void **state) { check_ranking(*state, COST_MODEL_REGRESSION); }
static void test_ranks_held_out_rank(void **state) { check_ranking(*state, COST_MODEL_RANK); }

/* Before min_samples: random scores in [0, 1), the same for the same seed;
 * not trained. A constant feature vector tells nothing: the scores still
 * differ (a random ranking, not a tie). */
static void test_untrained_is_random(void **state) {
  const Data *d = *state;
  LoomError err = {0};
  CostModel *x = cost_model_new(FEATURES_DIM, NULL, &err), *y = cost_model_new(FEATURES_DIM, NULL, &err);
  update(x, "w", &d->a, 0, 15);
  assert_false(cost_model_trained(x));
  float sx[20], sy[20];
  assert_int_equal(cost_model_predict(x, d->a.X, 20, FEATURES_DIM, sx, &err), LOOM_OK);
  assert_int_equal(cost_model_predict(y, d->a.X, 20, FEATURES_DIM, sy, &err), LOOM_OK);
  assert_memory_equal(sx, sy, sizeof sx);
  int distinct = 0;
  for (int i = 0; i < 20; i++) {
    assert_true(sx[i] >= 0 && sx[i] < 1);
    distinct += i > 0 && sx[i] != sx[i - 1];
  }
  assert_true(distinct >= 18);
  update(x, "w", &d->a, 15, 16); /* the 16th sample trains it */
  assert_true(cost_model_trained(x));
  cost_model_free(x);
  cost_model_free(y);
}

static void test_deterministic(void **state) {
  const Data *d = *state;
  CostModelOptions opt = cost_model_options_default();
  opt.nthread = 2;
  LoomError err = {0};
  float s[2][TEST];
  for (int k = 0; k < 2; k++) {
    CostModel *cm = cost_model_new(FEATURES_DIM, &opt, &err);
    update(cm, "w", &d->a, 0, TRAIN);
    assert_int_equal(cost_model_predict(cm, d->a.X + TRAIN * FEATURES_DIM, TEST, FEATURES_DIM, s[k], &err), LOOM_OK);
    cost_model_free(cm);
  }
  assert_memory_equal(s[0], s[1], sizeof s[0]);
}

static void test_bad_input(void **state) {
  const Data *d = *state;
  LoomError err = {0};
  CostModel *cm = cost_model_new(FEATURES_DIM, NULL, &err);
  update(cm, "w", &d->a, 0, 20);
  float y[2] = {1, NAN}, scores[2];
  assert_int_equal(cost_model_update(cm, "w", d->a.X, 2, FEATURES_DIM, y, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "row 1"));
  assert_int_equal(cost_model_update(cm, "w", d->a.X, 2, FEATURES_DIM - 1, d->a.y, &err), LOOM_ERR_INVALID_ARG);
  assert_int_equal(cost_model_update(cm, "a\nb", d->a.X, 2, FEATURES_DIM, d->a.y, &err), LOOM_ERR_INVALID_ARG);
  assert_int_equal(cost_model_predict(cm, d->a.X, 2, 3, scores, &err), LOOM_ERR_INVALID_ARG);
  assert_int_equal(cost_model_num_samples(cm), 20);
  CostModelOptions bad = cost_model_options_default();
  bad.rounds = 0;
  assert_null(cost_model_new(FEATURES_DIM, &bad, &err));
  assert_non_null(strstr(err.msg, "rounds"));
  cost_model_free(cm);
}

/* ---- files ---- */

static char *temp_path(void) {
  char *p = strdup("/tmp/loom-cost-model-XXXXXX");
  int fd = mkstemp(p);
  assert_true(fd >= 0);
  close(fd);
  return p;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc(*len + 1);
  assert_int_equal(fread(buf, 1, *len, f), *len);
  fclose(f);
  buf[*len] = '\0';
  return buf;
}

static void write_file(const char *path, const char *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, len, f), len);
  fclose(f);
}

/* save -> load: the same predictions, bit for bit; the loaded model keeps
 * its samples and learns on. */
static void test_save_load(void **state) {
  const Data *d = *state;
  LoomError err = {0};
  CostModel *cm = cost_model_new(FEATURES_DIM, NULL, &err);
  update(cm, "matmul_64x64x64", &d->a, 0, 64);
  update(cm, "matmul_32x96x48", &d->b, 0, 64);
  char *path = temp_path();
  assert_int_equal(cost_model_save(cm, path, &err), LOOM_OK);
  CostModel *back = cost_model_load(path, NULL, &err);
  if (!back) fail_msg("load: %s", err.msg);
  assert_true(cost_model_trained(back));
  assert_int_equal(cost_model_num_samples(back), 128);
  float s1[TEST], s2[TEST];
  assert_int_equal(cost_model_predict(cm, d->c.X, TEST, FEATURES_DIM, s1, &err), LOOM_OK);
  assert_int_equal(cost_model_predict(back, d->c.X, TEST, FEATURES_DIM, s2, &err), LOOM_OK);
  assert_memory_equal(s1, s2, sizeof s1);
  /* both learn the same from the same batch (retrained on all samples) */
  update(cm, "matmul_64x64x64", &d->a, 64, 96);
  update(back, "matmul_64x64x64", &d->a, 64, 96);
  assert_int_equal(cost_model_predict(cm, d->c.X, TEST, FEATURES_DIM, s1, &err), LOOM_OK);
  assert_int_equal(cost_model_predict(back, d->c.X, TEST, FEATURES_DIM, s2, &err), LOOM_OK);
  assert_memory_equal(s1, s2, sizeof s1);

  /* an untrained model saves and loads too */
  CostModel *empty = cost_model_new(FEATURES_DIM, NULL, &err);
  assert_int_equal(cost_model_save(empty, path, &err), LOOM_OK);
  CostModel *empty_back = cost_model_load(path, NULL, &err);
  assert_non_null(empty_back);
  assert_false(cost_model_trained(empty_back));
  cost_model_free(empty_back);
  cost_model_free(empty);

  cost_model_free(back);
  cost_model_free(cm);
  unlink(path);
  free(path);
}

/* A model saved under another feature set version is refused, naming both
 * versions; a truncated or foreign file is a parse error; a missing one IO. */
static void test_load_refusals(void **state) {
  const Data *d = *state;
  LoomError err = {0};
  CostModel *cm = cost_model_new(FEATURES_DIM, NULL, &err);
  update(cm, "w", &d->a, 0, 32);
  char *path = temp_path();
  assert_int_equal(cost_model_save(cm, path, &err), LOOM_OK);
  size_t len;
  char *buf = read_file(path, &len);

  char line[64], other[64];
  snprintf(line, sizeof line, "\nfeatures %d dim", FEATURES_VERSION);
  snprintf(other, sizeof other, "\nfeatures %d dim", FEATURES_VERSION + 1);
  assert_int_equal(strlen(line), strlen(other));
  char *at = strstr(buf, line);
  assert_non_null(at);
  memcpy(at, other, strlen(other));
  write_file(path, buf, len);
  assert_null(cost_model_load(path, NULL, &err));
  assert_int_equal(err.status, LOOM_ERR_UNSUPPORTED);
  snprintf(line, sizeof line, "feature set version %d, but this build extracts version %d", FEATURES_VERSION + 1,
           FEATURES_VERSION);
  if (!strstr(err.msg, line)) fail_msg("message: %s", err.msg);

  /* this version again, but the samples cut short */
  snprintf(other, sizeof other, "\nfeatures %d dim", FEATURES_VERSION);
  memcpy(at, other, strlen(other));
  write_file(path, buf, len - 7);
  assert_null(cost_model_load(path, NULL, &err));
  assert_int_equal(err.status, LOOM_ERR_PARSE);
  write_file(path, "not a model\n", 12);
  assert_null(cost_model_load(path, NULL, &err));
  assert_int_equal(err.status, LOOM_ERR_PARSE);
  unlink(path);
  assert_null(cost_model_load(path, NULL, &err));
  assert_int_equal(err.status, LOOM_ERR_IO);
  free(buf);
  free(path);
  cost_model_free(cm);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ranks_held_out_regression),
      cmocka_unit_test(test_ranks_held_out_rank),
      cmocka_unit_test(test_shuffled_targets),
      cmocka_unit_test(test_untrained_is_random),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_save_load),
      cmocka_unit_test(test_load_refusals),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
