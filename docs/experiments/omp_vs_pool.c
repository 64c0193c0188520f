/* Thread pool vs OpenMP for the parallel loops of generated kernels.
 *
 * The same matmul-like loop nest (i parallel, j, k serial) is run twice: in
 * the shape codegen_c emits (body outlined into a static function taking a
 * closure, called through loom_kernel_env.parallel_for on src/runtime's pool)
 * and with `#pragma omp parallel for` over i. An empty body measures the
 * fork/join latency alone. Build and run (from the repository root):
 *
 *   cc -O3 -march=native -std=gnu11 -fopenmp -D_GNU_SOURCE -Isrc -Iinclude \
 *      docs/experiments/omp_vs_pool.c src/runtime/threadpool.c src/support/error.c \
 *      -lpthread -o /tmp/omp_vs_pool
 *   OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive /tmp/omp_vs_pool 2
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/threadpool.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct mm_closure {
  const float *A, *B;
  float *C;
  int64_t N, K;
};

static void mm_chunk(void *closure, int64_t begin, int64_t end) {
  const struct mm_closure *c = closure;
  const float *restrict A = c->A, *restrict B = c->B;
  float *restrict C = c->C;
  for (int64_t i = begin; i < end; ++i)
    for (int64_t j = 0; j < c->N; ++j) C[i * c->N + j] = 0.0f;
  for (int64_t i = begin; i < end; ++i)
    for (int64_t k = 0; k < c->K; ++k)
      for (int64_t j = 0; j < c->N; ++j) C[i * c->N + j] += A[i * c->K + k] * B[k * c->N + j];
}

static void mm_pool(const loom_kernel_env *env, struct mm_closure *c, int64_t M) {
  env->parallel_for(env->pool, M, mm_chunk, c);
}

static void mm_omp(struct mm_closure *c, int64_t M) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < M; ++i) mm_chunk(c, i, i + 1);
}

static void empty_chunk(void *closure, int64_t begin, int64_t end) {
  (void)closure;
  (void)begin;
  (void)end;
}

static volatile int64_t sink;

static void empty_omp(int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) sink = i;
}

/* Median of `reps` timings of fn, in microseconds. */
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  ThreadPool *pool;
  if (threadpool_create(threads, &pool, NULL)) return 1;
  loom_kernel_env env = {0};
  threadpool_fill_env(pool, &env);
  static const int64_t sizes[][3] = {{64, 64, 64}, {256, 256, 256}, {512, 512, 64}};
  enum { REPS = 41 };
  double t[REPS];
  for (int s = 0; s < 3; s++) {
    int64_t M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
    float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
    float *C = malloc(sizeof(float) * (size_t)(M * N));
    for (int64_t q = 0; q < M * K; q++) A[q] = (float)(q % 7) * 0.25f;
    for (int64_t q = 0; q < K * N; q++) B[q] = (float)(q % 5) * 0.5f;
    struct mm_closure c = {A, B, C, N, K};
    for (int variant = 0; variant < 2; variant++) {
      for (int r = 0; r < REPS; r++) {
        double t0 = now();
        if (variant == 0)
          mm_pool(&env, &c, M);
        else
          mm_omp(&c, M);
        t[r] = (now() - t0) * 1e6;
      }
      qsort(t, REPS, sizeof t[0], cmp_double);
      printf("matmul %4lldx%4lldx%4lld %-6s median %10.1f us  min %10.1f us\n", (long long)M, (long long)N,
             (long long)K, variant ? "openmp" : "pool", t[REPS / 2], t[0]);
    }
    free(A);
    free(B);
    free(C);
  }
  enum { CALLS = 20000 };
  for (int variant = 0; variant < 2; variant++) {
    double t0 = now();
    for (int r = 0; r < CALLS; r++) {
      if (variant == 0)
        env.parallel_for(env.pool, threads, empty_chunk, NULL);
      else
        empty_omp(threads);
    }
    printf("empty fork/join %-6s %8.2f us per call\n", variant ? "openmp" : "pool", (now() - t0) * 1e6 / CALLS);
  }
  threadpool_destroy(pool);
  return 0;
}
