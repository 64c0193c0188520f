/* MatMulPacked (topi_matmul_packed, B as column panels packed at compile
 * time by graph_pass_pack_matmul) under the default matmul schedule
 * computes what the unscheduled, unpacked MatMul computes, with a bias add
 * and a GELU fused as the register tile's epilogue: both are compiled into
 * one module, the packed one gets the reference's A and bias and its B
 * packed here. Also checked on the lowered code: the accumulator is a
 * register tile and B is not copied at run time (no cache of Bp). Shapes:
 * tiles that divide, N not a multiple of the panel width (a zero-padded
 * last panel) with M not a multiple of the tile rows, BERT's [S, 1, K]
 * batch sharing B, and a K x NR panel over 512 KiB (the K-blocked path). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "driver/driver.h"
#include "runtime/threadpool.h"
#include "schedule_run.h"
#include "topi/topi_ops.h"
#include "topi/topi_schedule.h"

enum { WIDTH = 16 };

typedef struct PackedCase {
  int rank;         /* of A: 2 or 3 */
  int64_t a[3];     /* A's shape */
  int64_t n;        /* columns of B */
} PackedCase;

/* matmul -> + bias -> GELU over A and B (B [K, N], or Bp when packed);
 * the bias add is inlined into the GELU as the graph compiler does. */
static PrimFunc *build(Arena *a, const PackedCase *c, bool packed) {
  LoomError err = {0};
  int64_t K = c->a[c->rank - 1], P = (c->n + WIDTH - 1) / WIDTH;
  TeTensor *A = te_placeholder(a, "A", DT_F32, c->rank, c->a, &err);
  TeTensor *B = packed ? te_placeholder(a, "Bp", DT_F32, 3, (int64_t[]){P, K, WIDTH}, &err)
                       : te_placeholder(a, "B", DT_F32, 2, (int64_t[]){K, c->n}, &err);
  TeTensor *bias = te_placeholder(a, "bias", DT_F32, 1, &c->n, &err);
  TeTensor *y = packed ? topi_matmul_packed(a, "y", A, B, c->n, &err) : topi_matmul_nd(a, "y", A, B, &err);
  if (!y) fail_msg("%s", err.msg);
  TeTensor *yb = topi_binary(a, "y_bias", TOPI_ADD, y, bias, &err);
  assert_non_null(yb);
  TeTensor *r = topi_unary(a, "r", TOPI_GELU, yb, NULL, &err);
  assert_non_null(r);
  PrimFunc *f = te_create_primfunc(a, packed ? "packed" : "reference", (TeTensor *[]){A, B, bias, r}, 4, &err);
  if (!f) fail_msg("%s", err.msg);
  return f;
}

static PrimFunc *schedule_packed(Arena *a, PrimFunc *f, int threads, Schedule **keep) {
  Target target = target_host();
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  *keep = s;
  assert_int_equal(sch_compute_inline(s, sch_get_block(s, "y_bias")), LOOM_OK);
  if (topi_schedule_matmul_cpu(s, "y", "r", &target, threads)) fail_msg("schedule refused: %s", sch_error(s));
  PrimFunc *g = arena_memdup(a, sch_func(s), sizeof *g);
  g->name = "packed";
  return g;
}

/* Bp[p, k, c] = B[k, p * WIDTH + c], zero past column N. */
static void pack(const float *b, int64_t K, int64_t N, float *bp) {
  int64_t P = (N + WIDTH - 1) / WIDTH;
  for (int64_t p = 0; p < P; p++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t c = 0; c < WIDTH; c++) {
        int64_t j = p * WIDTH + c;
        bp[(p * K + k) * WIDTH + c] = j < N ? b[k * N + j] : 0.0f;
      }
}

static void check_case(const PackedCase *c, int threads) {
  Arena *a = arena_new();
  LoomError err = {0};
  PrimFunc *ref = build(a, c, false), *packed = build(a, c, true);
  Schedule *s;
  const PrimFunc *funcs[2] = {ref, schedule_packed(a, packed, threads, &s)};
  DriverModule *m = NULL;
  if (driver_build(a, funcs, 2, NULL, &m, &err)) fail_msg("build: %s", err.msg);

  const PrimFunc *lowered = driver_lowered(m, 1);
  schedule_check_register_tiles(a, packed, "y", lowered, 64 * 64);
  AllocBytes bp_caches = {"Bp_", "", 0, 0, 0, 0, 0, 0};
  schedule_alloc_bytes(lowered->body, false, &bp_caches);
  if (bp_caches.count) fail_msg("B is copied at run time:\n%s", tir_print_func(lowered));

  DriverTensors tr, tp;
  assert_int_equal(driver_tensors_alloc(driver_lowered(m, 0), 21, &tr, &err), LOOM_OK);
  assert_int_equal(driver_tensors_alloc(lowered, 22, &tp, &err), LOOM_OK);
  int64_t K = c->a[c->rank - 1];
  memcpy(tp.tensors[0].data, tr.tensors[0].data, tr.bytes[0]); /* A */
  pack(tr.tensors[1].data, K, c->n, tp.tensors[1].data);
  memcpy(tp.tensors[2].data, tr.tensors[2].data, tr.bytes[2]); /* bias */
  Kernel kr, kp;
  assert_int_equal(driver_get_kernel(m, "reference", &kr, &err), LOOM_OK);
  assert_int_equal(driver_get_kernel(m, "packed", &kp, &err), LOOM_OK);
  ThreadPool *pool = NULL;
  assert_int_equal(threadpool_create(threads, &pool, &err), LOOM_OK);
  if (kernel_call(&kr, tr.ptrs, tr.n, NULL, NULL, &err)) fail_msg("reference: %s", err.msg);
  if (kernel_call(&kp, tp.ptrs, tp.n, pool, NULL, &err)) fail_msg("packed: %s", err.msg);
  threadpool_destroy(pool);

  const float *want = tr.tensors[3].data, *got = tp.tensors[3].data;
  size_t count = tr.bytes[3] / sizeof(float);
  assert_int_equal(tp.bytes[3], tr.bytes[3]);
  double scale = 1.0;
  for (size_t i = 0; i < count; i++) scale = fmax(scale, fabs(want[i]));
  for (size_t i = 0; i < count; i++)
    if (fabs((double)want[i] - got[i]) > 1e-4 * scale)
      fail_msg("element %zu: reference %g, packed %g (threads %d)", i, want[i], got[i], threads);
  driver_tensors_free(&tr);
  driver_tensors_free(&tp);
  driver_module_free(m);
  sch_free(s);
  arena_free(a);
}

static void test_packed_matches_matmul(void **state) {
  (void)state;
  static const PackedCase cases[] = {
      {2, {48, 64, 0}, 128},   /* whole tiles */
      {2, {30, 50, 0}, 40},    /* N = 2.5 panels, M = 5 tiles of 6 rows */
      {3, {20, 1, 24}, 64},    /* [S, 1, K]: the batch shares B */
      {3, {1, 40, 24}, 33},    /* [1, S, K], one column past two panels */
      {2, {32, 2304, 0}, 80},  /* K x NR panel over 512 KiB: K blocked */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int threads = 1; threads <= 2; threads++) check_case(&cases[i], threads);
}

/* A Bp whose panels do not cover n columns, or a wrong K, is an error
 * naming the operands, not a crash. */
static void test_packed_bad_shapes(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){16, 8}, &err);
  TeTensor *bp = te_placeholder(a, "Bp", DT_F32, 3, (int64_t[]){2, 8, 16}, &err);
  TeTensor *bk = te_placeholder(a, "Bk", DT_F32, 3, (int64_t[]){2, 9, 16}, &err);
  TeTensor *v = te_placeholder(a, "v", DT_F32, 1, (int64_t[]){8}, &err);
  assert_null(topi_matmul_packed(a, "y", A, bp, 40, &err));
  assert_non_null(strstr(err.msg, "Bp"));
  assert_null(topi_matmul_packed(a, "y", A, bk, 32, &err));
  assert_null(topi_matmul_packed(a, "y", v, bp, 32, &err));
  assert_non_null(topi_matmul_packed(a, "y", A, bp, 17, &err));
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_packed_matches_matmul),
      cmocka_unit_test(test_packed_bad_shapes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
