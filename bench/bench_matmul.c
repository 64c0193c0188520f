/* bench/matmul: Loom's default matmul schedule (topi_schedule_matmul_cpu, a
 * schedule on the compute definition, not a hand-written kernel) against
 * OpenBLAS cblas_sgemm, side by side in one run, 1 and 2 threads.
 *
 * For each shape and thread count both are run alternately `repeat` times
 * after a warm-up; we report the median time of each, its GFLOP/s and the
 * ratio Loom/OpenBLAS (throughput; > 1 means Loom is faster). The outputs
 * are compared (relative error 1e-4 of the largest magnitude) so a fast
 * wrong kernel cannot pass.
 *
 * usage: bench_matmul [--repeat N] [--threads 1,2] [M N K ...] */
#include "bench_timing.h"
#include "driver/driver.h"
#include "fixtures/op_funcs.h"
#include "runtime/threadpool.h"
#include "target/target.h"
#include "tir/schedule/schedule.h"
#include "topi/topi_schedule.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct Shape {
  int64_t M, N, K;
} Shape;

static int bench_one(Shape sh, int threads, int repeat, const Target *target) {
  Arena *a = arena_new();
  LoomError err = {0};
  int rc = 1;
  DriverModule *mod = NULL;
  ThreadPool *pool = NULL;
  DriverTensors t = {0};
  PrimFunc *f = opfunc_matmul(a, sh.M, sh.N, sh.K, DT_F32, &err);
  if (!f) goto out;
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  if (topi_schedule_matmul_cpu(s, "C", NULL, target, threads)) {
    fprintf(stderr, "schedule: %s\n", sch_error(s));
    sch_free(s);
    goto out;
  }
  const PrimFunc *funcs[1] = {sch_func(s)};
  BuildOptions build = {.cflags = target->cflags};
  DriverOptions dopt = {.build = &build};
  loom_status st = driver_build(a, funcs, 1, &dopt, &mod, &err);
  sch_free(s);
  if (st) goto out;
  Kernel k;
  if (driver_get_kernel(mod, "matmul", &k, &err)) goto out;
  if (driver_tensors_alloc(driver_lowered(mod, 0), 42, &t, &err)) goto out;
  if (threadpool_create(threads, &pool, &err)) goto out;
  openblas_set_num_threads(threads);
  float *A = t.tensors[0].data, *B = t.tensors[1].data, *C = t.tensors[2].data;
  float *R = malloc(sizeof(float) * (size_t)(sh.M * sh.N));
  double *tl = malloc(sizeof(double) * (size_t)repeat), *tb = malloc(sizeof(double) * (size_t)repeat);
  int M = (int)sh.M, N = (int)sh.N, K = (int)sh.K;
  for (int w = 0; w < 3; w++) {
    if (kernel_call(&k, t.ptrs, 3, pool, NULL, &err)) goto out_free;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N, 0.0f, R, N);
  }
  double maxref = 0, maxdiff = 0;
  for (int64_t i = 0; i < sh.M * sh.N; i++) {
    maxref = fmax(maxref, fabs(R[i]));
    maxdiff = fmax(maxdiff, fabs((double)R[i] - C[i]));
  }
  if (maxdiff > 1e-4 * fmax(maxref, 1.0)) {
    fprintf(stderr, "bench_matmul: %lldx%lldx%lld: Loom differs from OpenBLAS by %g\n", (long long)sh.M,
            (long long)sh.N, (long long)sh.K, maxdiff);
    goto out_free;
  }
  /* Each side waits for the other's workers to sleep: OpenBLAS's spin for
   * ~80 ms after a call and would take the second core from Loom's. */
  for (int r = 0; r < repeat; r++) {
    quiesce();
    double t0 = now_s();
    kernel_call(&k, t.ptrs, 3, pool, NULL, &err);
    tl[r] = now_s() - t0;
    quiesce();
    t0 = now_s();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N, 0.0f, R, N);
    tb[r] = now_s() - t0;
  }
  double ml = median(tl, repeat), mb = median(tb, repeat), flop = 2.0 * (double)sh.M * (double)sh.N * (double)sh.K;
  printf("| %5lld | %5lld | %5lld | %d | %8.3f | %6.1f | %8.3f | %6.1f | %5.2f |\n", (long long)sh.M, (long long)sh.N,
         (long long)sh.K, threads, ml * 1e3, flop / ml * 1e-9, mb * 1e3, flop / mb * 1e-9, mb / ml);
  fflush(stdout);
  rc = 0;
out_free:
  free(R);
  free(tl);
  free(tb);
out:
  if (rc && err.msg[0]) fprintf(stderr, "bench_matmul: %s\n", err.msg);
  threadpool_destroy(pool);
  driver_tensors_free(&t);
  driver_module_free(mod);
  arena_free(a);
  return rc;
}

int main(int argc, char **argv) {
  int repeat = 15;
  int thread_counts[4] = {1, 2}, n_threads = 2;
  Shape shapes[16];
  int n_shapes = 0;
  const char *target_name = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      n_threads = 0;
      for (char *p = strtok(argv[++i], ","); p && n_threads < 4; p = strtok(NULL, ",")) thread_counts[n_threads++] = atoi(p);
    } else if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) {
      target_name = argv[++i];
    } else if (i + 2 < argc && n_shapes < 16) {
      shapes[n_shapes++] = (Shape){atoll(argv[i]), atoll(argv[i + 1]), atoll(argv[i + 2])};
      i += 2;
    } else {
      fprintf(stderr, "usage: bench_matmul [--repeat N] [--threads 1,2] [--target NAME] [M N K ...]\n");
      return 2;
    }
  }
  if (repeat < 1) repeat = 1;
  if (n_shapes == 0) {
    static const Shape defaults[] = {{1024, 1024, 1024}, {128, 768, 768}, {128, 3072, 768}, {1, 1000, 2048}};
    memcpy(shapes, defaults, sizeof defaults);
    n_shapes = 4;
  }
  Target target;
  LoomError err = {0};
  if (target_parse(target_name, &target, &err)) {
    fprintf(stderr, "bench_matmul: --target: %s\n", err.msg);
    return 2;
  }
  printf("bench_matmul: Loom (%s, default schedule) vs OpenBLAS sgemm (core %s), median of %d alternating runs\n\n",
         target.name, openblas_get_corename(), repeat);
  printf("|     M |     N |     K | threads | Loom ms | GFLOP/s | OpenBLAS ms | GFLOP/s | ratio |\n");
  printf("|------:|------:|------:|--------:|--------:|--------:|------------:|--------:|------:|\n");
  int rc = 0;
  for (int s = 0; s < n_shapes; s++)
    for (int t = 0; t < n_threads; t++) rc |= bench_one(shapes[s], thread_counts[t], repeat, &target);
  printf("\nratio = OpenBLAS time / Loom time (> 1: Loom faster)\n");
  return rc;
}
