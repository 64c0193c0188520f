/* The shortest complete Loom program: define C = A x B, schedule it, build
 * it to native code, run it on random data and check it against a naive loop. */
#include <loom/loom.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { M = 256, N = 256, K = 256 };
#define CHECK(x) do { if (!(x)) { fprintf(stderr, "%s\n", loom_ctx_error(ctx)); return 1; } } while (0)

static loom_tensor *A, *B;
static loom_expr *matmul_body(loom_ctx *ctx, loom_expr *const *ij, void *user) {
  loom_expr *k = user; /* C[i, j] = sum over k of A[i, k] * B[k, j] */
  return loom_sum(ctx, loom_mul(ctx, loom_load(ctx, A, (loom_expr *[]){ij[0], k}, 2),
                                loom_load(ctx, B, (loom_expr *[]){k, ij[1]}, 2)), &k, 1);
}

int main(void) {
  loom_ctx *ctx = loom_ctx_create();
  A = loom_placeholder(ctx, "A", LOOM_F32, 2, (int64_t[]){M, K});
  B = loom_placeholder(ctx, "B", LOOM_F32, 2, (int64_t[]){K, N});
  loom_tensor *C = loom_compute(ctx, "C", 2, (int64_t[]){M, N}, matmul_body,
                                loom_reduce_axis(ctx, "k", K));
  loom_func *f = loom_func_create(ctx, "matmul", (loom_tensor *[]){A, B, C}, 3);
  CHECK(f);

  loom_sched *s = loom_sched_create(ctx, f, 0);
  loom_rv l[3], i[2], j[2]; /* loops i, j, k of block C */
  CHECK(loom_sched_get_loops(s, loom_sched_get_block(s, "C"), l, 3) == 3);
  CHECK(!loom_sched_split(s, l[0], (int64_t[]){-1, 8}, 2, i));
  CHECK(!loom_sched_split(s, l[1], (int64_t[]){-1, 16}, 2, j));
  CHECK(!loom_sched_reorder(s, (loom_rv[]){i[0], j[0], l[2], i[1], j[1]}, 5));
  CHECK(!loom_sched_vectorize(s, j[1]) && !loom_sched_parallel(s, i[0]));
  printf("%s", loom_func_text(ctx, loom_sched_func(s)));

  loom_module *mod = loom_build(ctx, (loom_func *[]){loom_sched_func(s)}, 1);
  CHECK(mod);
  float *a = aligned_alloc(64, sizeof(float) * M * K), *b = aligned_alloc(64, sizeof(float) * K * N);
  float *c = aligned_alloc(64, sizeof(float) * M * N);
  for (int x = 0; x < M * K; x++) a[x] = (float)rand() / RAND_MAX - 0.5f;
  for (int x = 0; x < K * N; x++) b[x] = (float)rand() / RAND_MAX - 0.5f;
  DLTensor ta = loom_dltensor(a, LOOM_F32, 2, (int64_t[]){M, K});
  DLTensor tb = loom_dltensor(b, LOOM_F32, 2, (int64_t[]){K, N});
  DLTensor tc = loom_dltensor(c, LOOM_F32, 2, (int64_t[]){M, N});
  CHECK(!loom_module_run(mod, "matmul", (DLTensor *[]){&ta, &tb, &tc}, 3));

  double max_err = 0;
  for (int x = 0; x < M; x++)
    for (int y = 0; y < N; y++) {
      double ref = 0;
      for (int z = 0; z < K; z++) ref += (double)a[x * K + z] * b[z * N + y];
      max_err = fmax(max_err, fabs(ref - c[x * N + y]));
    }
  printf("max error vs naive loop: %g\n", max_err);
  free(a), free(b), free(c);
  loom_ctx_destroy(ctx);
  return max_err < 1e-3 ? 0 : 1;
}
