/* The whole compiler path on real programs: te compute -> schedule ->
 * tir_lower -> codegen_c -> cc -> dlopen -> run, against plain C loops. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "te/te.h"
#include "tir/schedule/schedule.h"
#include "tir/transform/transform.h"
#include "unit/target/kernel_harness.h"

typedef struct Mm {
  TeTensor *A, *B;
  IterVar k;
} Mm;

static const Expr *mm_body(Arena *a, const Expr *const *ax, void *user) {
  Mm *m = user;
  const Expr *ia[2] = {ax[0], m->k.var}, *ib[2] = {m->k.var, ax[1]};
  return te_sum(a, expr_mul(a, te_load(a, m->A, ia), te_load(a, m->B, ib)), &m->k, 1, NULL);
}

static PrimFunc *te_matmul(Arena *a, const char *name, int64_t M, int64_t N, int64_t K) {
  LoomError err = {0};
  Mm mm;
  mm.A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){M, K}, &err);
  mm.B = te_placeholder(a, "B", DT_F32, 2, (int64_t[]){K, N}, &err);
  mm.k = te_reduce_axis(a, "k", K);
  TeTensor *C = te_compute(a, "C", 2, (int64_t[]){M, N}, mm_body, &mm, &err);
  PrimFunc *f = C ? te_create_primfunc(a, name, (TeTensor *[]){mm.A, mm.B, C}, 3, &err) : NULL;
  if (!f) fail_msg("te: %s", err.msg);
  return f;
}

static SchRV loop_of(Schedule *s, const char *block, int d) {
  SchRV loops[16];
  int n = sch_get_loops(s, sch_get_block(s, block), loops, 16);
  assert_true(d < n);
  return loops[d];
}

static void must(Schedule *s, loom_status st) {
  if (st != LOOM_OK) fail_msg("schedule refused: %s", sch_error(s));
}

static const PrimFunc *lower(Arena *a, const PrimFunc *f) {
  LoomError err = {0};
  LowerOptions opt = lower_options_default();
  const PrimFunc *g = tir_lower(a, f, &opt, &err);
  if (!g) fail_msg("tir_lower: %s", err.msg);
  return g;
}

static void fill(float *x, int n, int seed) {
  for (int i = 0; i < n; i++) x[i] = (float)((i * 37 + seed * 11) % 101) / 50.0f - 1.0f;
}

/* Matmul 30x20x17, i and j split by 8 (imperfect), ji vectorized, ii
 * unrolled, io parallel; and the same program unscheduled. */
static void test_matmul_scheduled(void **state) {
  (void)state;
  enum { M = 30, N = 20, K = 17 };
  Arena *a = arena_new();
  PrimFunc *plain = te_matmul(a, "mm_plain", M, N, K);
  Schedule *s = sch_create(te_matmul(a, "mm_tiled", M, N, K), DECIDE_DEFAULT, 0);
  SchRV i = loop_of(s, "C", 0), j = loop_of(s, "C", 1), k = loop_of(s, "C", 2);
  SchRV ip[2], jp[2];
  assert_int_equal(sch_split(s, i, (int64_t[]){-1, 8}, 2, ip), 0);
  assert_int_equal(sch_split(s, j, (int64_t[]){-1, 8}, 2, jp), 0);
  must(s, sch_reorder(s, (SchRV[]){ip[0], jp[0], k, ip[1], jp[1]}, 5));
  must(s, sch_vectorize(s, jp[1]));
  must(s, sch_unroll(s, ip[1]));
  must(s, sch_parallel(s, ip[0]));
  PrimFunc *fs[] = {(PrimFunc *)lower(a, plain), (PrimFunc *)lower(a, sch_func(s))};
  char *src;
  Module *m = harness_compile(fs, 2, &src);
  assert_non_null(strstr(src, "parallel_for"));
  static float x[M * K], y[K * N], z[M * N], ref[M * N];
  fill(x, M * K, 1);
  fill(y, K * N, 2);
  for (int r = 0; r < M; r++)
    for (int c = 0; c < N; c++) {
      float acc = 0;
      for (int q = 0; q < K; q++) acc += x[r * K + q] * y[q * N + c];
      ref[r * N + c] = acc;
    }
  int64_t sa[] = {M, K}, sb[] = {K, N}, sc[] = {M, N};
  DLTensor ta = harness_tensor(x, kDLFloat, 32, 2, sa), tb = harness_tensor(y, kDLFloat, 32, 2, sb),
           tc = harness_tensor(z, kDLFloat, 32, 2, sc);
  DLTensor *args[] = {&ta, &tb, &tc};
  ThreadPool *pool;
  assert_int_equal(threadpool_create(2, &pool, NULL), LOOM_OK);
  for (int f = 0; f < 2; f++) {
    Kernel kern = harness_kernel(m, fs[f]->name);
    for (int rep = 0; rep < 2; rep++) {
      memset(z, 0xff, sizeof z);
      LoomError err = {0};
      loom_status st = kernel_call(&kern, args, 3, rep ? pool : NULL, NULL, &err);
      if (st) fail_msg("%s", err.msg);
      for (int e = 0; e < M * N; e++)
        if (!(fabsf(z[e] - ref[e]) <= 1e-5f * (1 + fabsf(ref[e]))))
          fail_msg("%s element %d: got %g want %g", fs[f]->name, e, z[e], ref[e]);
    }
  }
  /* The lowered kernel checks N-d shapes from orig_params. */
  int64_t wrong[] = {K, M};
  ta.shape = wrong;
  Kernel kern = harness_kernel(m, "mm_tiled");
  int32_t code;
  LoomError err = {0};
  assert_int_equal(kernel_call(&kern, args, 3, NULL, &code, &err), LOOM_ERR_RUNTIME);
  assert_int_equal(code, LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_SHAPE, 0));
  threadpool_destroy(pool);
  sch_free(s);
  free(src);
  module_unload(m);
  arena_free(a);
}

typedef struct Ew {
  TeTensor *X, *bias;
} Ew;

static const Expr *ew_body(Arena *a, const Expr *const *ax, void *user) {
  Ew *e = user;
  const Expr *x = te_load(a, e->X, ax);
  const Expr *ex = expr_call(a, CALL_EXP, DT_F32, &x, 1);
  const Expr *b = te_load(a, e->bias, &ax[1]);
  /* select keeps the vector blend path honest */
  return expr_select(a, expr_lt(a, x, expr_float(a, DT_F32, 0.0)), expr_add(a, expr_mul(a, ex, expr_float(a, DT_F32, 0.5)), b),
                     expr_sub(a, x, b));
}

/* Elementwise on [7, 100]: fuse, split by 16 (imperfect: 700 = 43*16 + 12),
 * vectorize the inner part, parallelize the outer one. */
static void test_elementwise_vectorized(void **state) {
  (void)state;
  enum { R = 7, C = 100 };
  Arena *a = arena_new();
  LoomError err = {0};
  Ew ew;
  ew.X = te_placeholder(a, "X", DT_F32, 2, (int64_t[]){R, C}, &err);
  ew.bias = te_placeholder(a, "bias", DT_F32, 1, (int64_t[]){C}, &err);
  TeTensor *Y = te_compute(a, "Y", 2, (int64_t[]){R, C}, ew_body, &ew, &err);
  PrimFunc *f = Y ? te_create_primfunc(a, "ew", (TeTensor *[]){ew.X, ew.bias, Y}, 3, &err) : NULL;
  if (!f) fail_msg("te: %s", err.msg);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  SchRV fused = sch_fuse(s, (SchRV[]){loop_of(s, "Y", 0), loop_of(s, "Y", 1)}, 2);
  assert_true(fused >= 0);
  SchRV parts[2];
  assert_int_equal(sch_split(s, fused, (int64_t[]){-1, 16}, 2, parts), 0);
  must(s, sch_vectorize(s, parts[1]));
  must(s, sch_parallel(s, parts[0]));
  PrimFunc *g = (PrimFunc *)lower(a, sch_func(s));
  char *src;
  Module *m = harness_compile(&g, 1, &src);
  static float x[R * C], bias[C], y[R * C];
  fill(x, R * C, 3);
  fill(bias, C, 4);
  int64_t sx[] = {R, C}, sb[] = {C};
  DLTensor tx = harness_tensor(x, kDLFloat, 32, 2, sx), tb = harness_tensor(bias, kDLFloat, 32, 1, sb),
           ty = harness_tensor(y, kDLFloat, 32, 2, sx);
  DLTensor *args[] = {&tx, &tb, &ty};
  ThreadPool *pool;
  assert_int_equal(threadpool_create(2, &pool, NULL), LOOM_OK);
  Kernel kern = harness_kernel(m, "ew");
  if (kernel_call(&kern, args, 3, pool, NULL, &err)) fail_msg("%s", err.msg);
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      float xv = x[r * C + c], want = xv < 0 ? expf(xv) * 0.5f + bias[c] : xv - bias[c];
      float got = y[r * C + c];
      if (!(fabsf(got - want) <= 1e-5f * (1 + fabsf(want)))) fail_msg("[%d,%d]: got %g want %g", r, c, got, want);
    }
  threadpool_destroy(pool);
  sch_free(s);
  free(src);
  module_unload(m);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_scheduled),
      cmocka_unit_test(test_elementwise_vectorized),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
