/* bench/cost_model: how well the cost model ranks real measurements on this
 * machine (docs/autotune.md, "Cost model"). Not a test: the numbers depend
 * on the machine and its load.
 *
 * N random schedules (random_schedule_apply, seeds 1..N) of one matmul are
 * built into one module, each timed (median of `repeat` runs after a
 * warm-up, serially or on a pool of --threads), its output checked against
 * the unscheduled function's. The first 70% (in seed order) train the
 * model as a tuner would (batches of 16, retrained after each), the rest
 * are held out: we report Spearman's rank correlation between the model's
 * scores and the measured throughputs there, and how fast the candidate
 * the model ranks first (and the best of its first five) is compared with
 * the best held-out one; then the same averaged over 5 other splits. All
 * candidates are measured twice: the rank correlation between the two
 * passes is what noise leaves of any ranking (the ceiling).
 *
 * --data PATH writes the measurements for experiments elsewhere: int32 n,
 * int32 dim, then n x dim float32 features and n float32 GFLOP/s.
 *
 * usage: bench_cost_model [--n 100] [--repeat 7] [--threads 1] [--rank] [--data PATH] [M N K] */
#include "autotune/autotune.h"
#include "autotune/cost_model.h"
#include "autotune/features.h"
#include "bench_timing.h"
#include "driver/driver.h"
#include "fixtures/op_funcs.h"
#include "runtime/threadpool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static double spearman(const double *x, const double *y, int n) {
  double *rx = malloc(sizeof(double) * (size_t)n), *ry = malloc(sizeof(double) * (size_t)n);
  ranks(x, n, rx);
  ranks(y, n, ry);
  double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
  for (int i = 0; i < n; i++) mx += rx[i] / n, my += ry[i] / n;
  for (int i = 0; i < n; i++)
    sxy += (rx[i] - mx) * (ry[i] - my), sxx += (rx[i] - mx) * (rx[i] - mx), syy += (ry[i] - my) * (ry[i] - my);
  free(rx), free(ry);
  return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0;
}

int main(int argc, char **argv) {
  int n = 100, repeat = 7, threads = 1;
  bool rank = false;
  const char *data = NULL;
  int64_t M = 128, N = 128, K = 128;
  int pos = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rank")) rank = true;
    else if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
    else if (pos < 3) *(pos == 0 ? &M : pos == 1 ? &N : &K) = atoll(argv[i]), pos++;
    else {
      fprintf(stderr, "usage: bench_cost_model [--n 100] [--repeat 7] [--threads 1] [--rank] [--data PATH] [M N K]\n");
      return 2;
    }
  }
  if (n < 10 || repeat < 1 || threads < 1) return 2;

  Arena *a = arena_new();
  LoomError err = {0};
  PrimFunc *f = opfunc_matmul(a, M, N, K, DT_F32, &err);
  if (!f) return fprintf(stderr, "%s\n", err.msg), 1;
  /* function 0: the unscheduled reference; 1..n: the candidates */
  const PrimFunc **funcs = calloc((size_t)n + 1, sizeof *funcs);
  Schedule **schedules = calloc((size_t)n + 1, sizeof *schedules); /* own the candidates' nodes */
  funcs[0] = f;
  double t0 = now_s();
  for (int i = 1; i <= n; i++) {
    Schedule *s = sch_create(f, DECIDE_RANDOM, (uint64_t)i);
    if (random_schedule_apply(s, NULL, &err)) return fprintf(stderr, "seed %d: %s\n", i, err.msg), 1;
    PrimFunc *g = ARENA_NEW(a, PrimFunc);
    *g = *sch_func(s);
    g->name = arena_printf(a, "cand%d", i);
    funcs[i] = g;
    schedules[i] = s;
  }
  BuildOptions build = {0};
  DriverOptions dopt = {.build = &build};
  DriverModule *mod = NULL;
  if (driver_build(a, funcs, n + 1, &dopt, &mod, &err)) return fprintf(stderr, "build: %s\n", err.msg), 1;
  double t_build = now_s() - t0;

  float *X = malloc(sizeof(float) * FEATURES_DIM * (size_t)n);
  double t_feat = 0;
  for (int i = 0; i < n; i++) {
    double t = now_s();
    if (features_extract(driver_lowered(mod, i + 1), X + (size_t)i * FEATURES_DIM, FEATURES_DIM, &err))
      return fprintf(stderr, "features: %s\n", err.msg), 1;
    t_feat += now_s() - t;
  }

  ThreadPool *pool = NULL;
  if (threads > 1 && threadpool_create(threads, &pool, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
  DriverTensors ref, t;
  if (driver_tensors_alloc(driver_lowered(mod, 0), 7, &ref, &err) || driver_tensors_alloc(driver_lowered(mod, 0), 7, &t, &err))
    return fprintf(stderr, "%s\n", err.msg), 1;
  Kernel k0;
  if (driver_get_kernel(mod, "matmul", &k0, &err) || kernel_call(&k0, ref.ptrs, 3, NULL, NULL, &err))
    return fprintf(stderr, "%s\n", err.msg), 1;
  const float *C_ref = ref.tensors[2].data, *C = t.tensors[2].data;
  double flops = 2.0 * (double)(M * N * K);
  float *gflops = malloc(sizeof(float) * (size_t)n);
  double *times = malloc(sizeof(double) * (size_t)repeat), *pass[2];
  pass[0] = malloc(sizeof(double) * (size_t)n), pass[1] = malloc(sizeof(double) * (size_t)n);
  t0 = now_s();
  /* two passes over all candidates: their agreement is the ceiling of any
   * ranking of them (the machine's noise); the model learns the first */
  for (int p = 0; p < 2; p++) {
    for (int i = 0; i < n; i++) {
      Kernel k;
      char name[32];
      snprintf(name, sizeof name, "cand%d", i + 1);
      if (driver_get_kernel(mod, name, &k, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
      memset(t.tensors[2].data, 0, t.bytes[2]);
      if (kernel_call(&k, t.ptrs, 3, pool, NULL, &err)) return fprintf(stderr, "%s: %s\n", name, err.msg), 1;
      for (int64_t e = 0; e < M * N; e++)
        if (fabsf(C[e] - C_ref[e]) > 1e-4f * fmaxf(1.0f, fabsf(C_ref[e])))
          return fprintf(stderr, "%s: wrong result at %lld\n", name, (long long)e), 1;
      for (int r = 0; r < repeat; r++) {
        double s = now_s();
        kernel_call(&k, t.ptrs, 3, pool, NULL, &err);
        times[r] = now_s() - s;
      }
      pass[p][i] = flops / median(times, repeat) * 1e-9;
      if (p == 0) gflops[i] = (float)pass[0][i];
    }
  }
  double t_measure = now_s() - t0;
  if (data) {
    FILE *fp = fopen(data, "wb");
    int32_t hdr[2] = {n, FEATURES_DIM};
    if (!fp || fwrite(hdr, sizeof hdr, 1, fp) != 1 || fwrite(X, sizeof(float) * FEATURES_DIM, (size_t)n, fp) != (size_t)n ||
        fwrite(gflops, sizeof(float), (size_t)n, fp) != (size_t)n || fclose(fp) != 0)
      return fprintf(stderr, "cannot write %s\n", data), 1;
  }

  printf("matmul %lldx%lldx%lld, %d random schedules, %d thread%s, median of %d runs\n", (long long)M, (long long)N,
         (long long)K, n, threads, threads > 1 ? "s" : "", repeat);
  double gmin = 1e30, gmax = 0;
  for (int i = 0; i < n; i++) gmin = fmin(gmin, gflops[i]), gmax = fmax(gmax, gflops[i]);
  printf("  build %.1f s, features %.1f us each, measuring %.1f s (two passes); throughput %.2f .. %.2f GFLOP/s "
         "(%.0fx apart); Spearman between the passes %.3f\n",
         t_build, t_feat / n * 1e6, t_measure, gmin, gmax, gmax / gmin, spearman(pass[0], pass[1], n));

  /* Split k of 5: held out are the candidates i with (i + 3k) % 10 < 3
   * (split 0: seeds 1-3, 11-13, ...); the first 70% in seed order is
   * reported on its own too. The model trains online, batches of 16. */
  CostModelOptions opt = cost_model_options_default();
  if (rank) opt.objective = COST_MODEL_RANK;
  float *Xt = malloc(sizeof(float) * FEATURES_DIM * (size_t)n), *yt = malloc(sizeof(float) * (size_t)n);
  float *Xh = malloc(sizeof(float) * FEATURES_DIM * (size_t)n), *scores = malloc(sizeof(float) * (size_t)n);
  double *s = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)n);
  double sum_rho = 0, sum_top1 = 0, sum_top5 = 0, t_train = 0;
  for (int split = -1; split < 5; split++) {
    int nt = 0, nh = 0;
    for (int i = 0; i < n; i++) {
      bool held = split < 0 ? i >= n * 7 / 10 : (i + 3 * split) % 10 < 3;
      if (held) memcpy(Xh + (size_t)nh * FEATURES_DIM, X + (size_t)i * FEATURES_DIM, sizeof(float) * FEATURES_DIM), y[nh++] = gflops[i];
      else memcpy(Xt + (size_t)nt * FEATURES_DIM, X + (size_t)i * FEATURES_DIM, sizeof(float) * FEATURES_DIM), yt[nt++] = gflops[i];
    }
    CostModel *cm = cost_model_new(FEATURES_DIM, &opt, &err);
    t0 = now_s();
    for (int i = 0; i < nt; i += 16)
      if (cost_model_update(cm, "matmul", Xt + (size_t)i * FEATURES_DIM, nt - i < 16 ? nt - i : 16, FEATURES_DIM, yt + i, &err))
        return fprintf(stderr, "%s\n", err.msg), 1;
    if (split < 0) t_train = now_s() - t0;
    if (cost_model_predict(cm, Xh, nh, FEATURES_DIM, scores, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    cost_model_free(cm);
    /* the model's five first choices, and the best held-out candidate */
    int order[5] = {-1, -1, -1, -1, -1}, best = 0;
    for (int i = 0; i < nh; i++) {
      s[i] = scores[i];
      if (y[i] > y[best]) best = i;
      for (int k = 0; k < 5; k++)
        if (order[k] < 0 || s[i] > s[order[k]]) {
          memmove(order + k + 1, order + k, sizeof order[0] * (size_t)(4 - k));
          order[k] = i;
          break;
        }
    }
    double top5 = 0;
    for (int k = 0; k < 5 && order[k] >= 0; k++) top5 = fmax(top5, y[order[k]]);
    double rho = spearman(s, y, nh), top1 = y[order[0]] / y[best];
    if (split < 0) {
      printf("  %s, trained on the first %d (%d updates, %.2f s), held out %d: Spearman %.3f; the model's first "
             "choice runs at %.0f%% of the best held-out candidate, the best of its top 5 at %.0f%%\n",
             rank ? "rank:pairwise" : "regression", nt, (nt + 15) / 16, t_train, nh, rho, 100 * top1,
             100 * top5 / y[best]);
    } else {
      sum_rho += rho, sum_top1 += top1, sum_top5 += top5 / y[best];
    }
  }
  printf("  mean over 5 splits (30%% held out each): Spearman %.3f, first choice %.0f%%, best of top 5 %.0f%%\n",
         sum_rho / 5, 100 * sum_top1 / 5, 100 * sum_top5 / 5);
  free(Xt), free(yt), free(Xh);
  driver_tensors_free(&ref);
  driver_tensors_free(&t);
  if (pool) threadpool_destroy(pool);
  driver_module_free(mod);
  for (int i = 1; i <= n; i++) sch_free(schedules[i]);
  arena_free(a);
  free(pass[0]), free(pass[1]);
  free(funcs), free(schedules), free(X), free(gflops), free(times), free(scores), free(s), free(y);
  return 0;
}
