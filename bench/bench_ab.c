/* bench_ab: two compiled artifacts of one model (say, two schedules) timed
 * in one process, one run of each in turn, so that a shared machine's speed,
 * which drifts by tens of percent within seconds, hits both alike.
 *
 *   bench_ab A.loom B.loom INPUT.npy [--threads N] [--runs R]
 *
 * Prints the median run time of each, the median of the per-run ratios B/A,
 * and, when both have the same kernels in the same order, the kernels whose
 * median times differ by more than 1%: median A, median B and the median of
 * the paired differences B - A. */
#include "bench_timing.h"
#include "loom/loom_runtime.h"
#include "tensor_data/npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct Side {
  const char *path;
  loom_model *m;
  int n_kernels;
  double *run_ms;    /* [runs] */
  double *kernel_ms; /* [n_kernels][runs] */
} Side;

static int usage(void) {
  fprintf(stderr, "usage: bench_ab A.loom B.loom INPUT.npy [--threads N] [--runs R]\n");
  return 2;
}

static int load(Side *s, int threads, int runs, const DLTensor *x) {
  char err[1024];
  loom_model_options opt = {.num_threads = threads};
  if (loom_model_load(s->path, &opt, &s->m, err, sizeof err)) {
    fprintf(stderr, "bench_ab: %s\n", err);
    return 1;
  }
  if (loom_model_set_input(s->m, 0, x)) {
    fprintf(stderr, "bench_ab: %s: %s\n", s->path, loom_model_error(s->m));
    return 1;
  }
  loom_model_set_profiling(s->m, true);
  s->n_kernels = loom_model_profile_count(s->m);
  s->run_ms = calloc((size_t)runs, sizeof(double));
  s->kernel_ms = calloc((size_t)runs * (size_t)(s->n_kernels > 0 ? s->n_kernels : 1), sizeof(double));
  return !s->run_ms || !s->kernel_ms;
}

static int run_once(Side *s, int r, int runs) {
  loom_model_profile_reset(s->m);
  double t0 = now_s();
  if (loom_model_run(s->m)) {
    fprintf(stderr, "bench_ab: %s: %s\n", s->path, loom_model_error(s->m));
    return 1;
  }
  s->run_ms[r] = (now_s() - t0) * 1e3;
  for (int k = 0; k < s->n_kernels; k++) {
    loom_profile_entry e;
    if (loom_model_profile_entry(s->m, k, &e)) return 1;
    s->kernel_ms[(size_t)k * (size_t)runs + (size_t)r] = e.total_ms;
  }
  /* Let the other model's pool see idle cores: a worker spins ~0.2 ms
   * after its last loop. */
  usleep(1000);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) return usage();
  int threads = 1, runs = 40;
  for (int i = 4; i < argc; i++) {
    if (i + 1 < argc && !strcmp(argv[i], "--threads")) threads = atoi(argv[++i]);
    else if (i + 1 < argc && !strcmp(argv[i], "--runs")) runs = atoi(argv[++i]);
    else return usage();
  }
  if (threads < 1 || runs < 3) return usage();
  NpyArray in;
  LoomError err = {0};
  if (npy_read(argv[3], &in, &err)) {
    fprintf(stderr, "bench_ab: %s\n", err.msg);
    return 1;
  }
  DLTensor x = npy_as_tensor(&in);
  Side side[2] = {{.path = argv[1]}, {.path = argv[2]}};
  int rc = load(&side[0], threads, runs, &x) || load(&side[1], threads, runs, &x);
  /* Warm-up: page in the weights, start the pools. */
  for (int w = 0; w < 3 && !rc; w++) rc = run_once(&side[0], 0, runs) || run_once(&side[1], 0, runs);
  for (int r = 0; r < runs && !rc; r++) rc = run_once(&side[r & 1], r, runs) || run_once(&side[!(r & 1)], r, runs);
  if (!rc) {
    double *ratio = malloc(sizeof(double) * (size_t)runs), *diff = malloc(sizeof(double) * (size_t)runs);
    for (int r = 0; r < runs; r++) ratio[r] = side[1].run_ms[r] / side[0].run_ms[r];
    printf("runs %d, threads %d: A %.3f ms, B %.3f ms (medians); B/A %.4f (median of per-run ratios)\n", runs,
           threads, median(side[0].run_ms, runs), median(side[1].run_ms, runs), median(ratio, runs));
    if (side[0].n_kernels == side[1].n_kernels) {
      loom_profile_entry e;
      for (int k = 0; k < side[0].n_kernels; k++) {
        const double *a = side[0].kernel_ms + (size_t)k * (size_t)runs, *b = side[1].kernel_ms + (size_t)k * (size_t)runs;
        for (int r = 0; r < runs; r++) diff[r] = b[r] - a[r];
        double ma = median(a, runs), mb = median(b, runs);
        if (fabs(mb - ma) > 0.01 * ma && !loom_model_profile_entry(side[0].m, k, &e))
          printf("  %-24s A %8.3f  B %8.3f  B-A %+7.3f ms\n", e.kernel, ma, mb, median(diff, runs));
      }
    } else {
      printf("  (the artifacts have %d and %d kernels: no per-kernel comparison)\n", side[0].n_kernels,
             side[1].n_kernels);
    }
    free(ratio);
    free(diff);
  }
  for (int i = 0; i < 2; i++) {
    loom_model_free(side[i].m);
    free(side[i].run_ms);
    free(side[i].kernel_ms);
  }
  npy_free(&in);
  return rc;
}
