#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "unit/target/kernel_harness.h"

static void fill(float *x, int n, int seed) {
  for (int i = 0; i < n; i++) x[i] = (float)((i * 37 + seed * 11) % 101) / 50.0f - 1.0f;
}

static int32_t call(const Kernel *k, DLTensor **ts, int n, ThreadPool *pool) {
  int32_t code = -1;
  LoomError err = {0};
  kernel_call(k, (DLTensor *const *)ts, n, pool, &code, &err);
  return code;
}

/* C[i] = A[i] + B[i], as a scalar loop and as 16-lane vectors. */
static void test_vector_add(void **state) {
  (void)state;
  Arena *a = arena_new();
  enum { N = 1024 };
  const Buffer *A = h_buf(a, "A", DT_F32, N), *B = h_buf(a, "B", DT_F32, N), *C = h_buf(a, "C", DT_F32, N);
  const Buffer *ps[] = {A, B, C};
  const Expr *i = expr_var(a, "i", DT_I64);
  const Stmt *scalar = h_for(a, i, N, FOR_SERIAL, h_st(a, C, i, expr_add(a, h_ld(a, A, i), h_ld(a, B, i))));
  const Expr *io = expr_var(a, "i.outer", DT_I64); /* a name that needs sanitizing */
  const Expr *r = h_ramp(a, expr_mul(a, io, h_i(a, 16)), 16);
  const Stmt *vec = h_for(a, io, N / 16, FOR_SERIAL, h_st(a, C, r, expr_add(a, h_ld(a, A, r), h_ld(a, B, r))));
  PrimFunc *fs[] = {primfunc_new(a, "add_scalar", ps, 3, scalar), primfunc_new(a, "add_vec", ps, 3, vec)};
  char *src;
  Module *m = harness_compile(fs, 2, &src);
  assert_non_null(strstr(src, "typedef float float32x16 __attribute__((vector_size(64)));"));
  assert_non_null(strstr(src, "float *restrict A"));
  assert_non_null(strstr(src, "for (int64_t i = 0; i < 1024; ++i)"));
  assert_non_null(strstr(src, "i_outer"));
  const char *names[] = {"add_scalar", "add_vec"};
  for (int f = 0; f < 2; f++) {
    Kernel k = harness_kernel(m, names[f]);
    assert_int_equal(k.workspace_bytes, 0);
    static float x[N], y[N], z[N];
    fill(x, N, 1);
    fill(y, N, 2);
    memset(z, 0, sizeof z);
    int64_t shape[] = {N};
    DLTensor tx = harness_tensor(x, kDLFloat, 32, 1, shape), ty = harness_tensor(y, kDLFloat, 32, 1, shape),
             tz = harness_tensor(z, kDLFloat, 32, 1, shape);
    DLTensor *args[] = {&tx, &ty, &tz};
    assert_int_equal(call(&k, args, 3, NULL), 0);
    for (int j = 0; j < N; j++) assert_true(z[j] == x[j] + y[j]);
  }
  free(src);
  module_unload(m);
  arena_free(a);
}

/* C[M,N] = A[M,K] * B[K,N] with the i loop parallel (and, in a second kernel,
 * the j loop parallel inside it), flat 1-D buffers. */
static PrimFunc *matmul(Arena *a, const char *name, int M, int N, int K, ForKind jkind) {
  const Buffer *A = h_buf(a, "A", DT_F32, M * K), *B = h_buf(a, "B", DT_F32, K * N), *C = h_buf(a, "C", DT_F32, M * N);
  const Buffer *ps[] = {A, B, C};
  const Expr *i = expr_var(a, "i", DT_I64), *j = expr_var(a, "j", DT_I64), *k = expr_var(a, "k", DT_I64);
  const Expr *cij = expr_add(a, expr_mul(a, i, h_i(a, N)), j);
  const Expr *prod = expr_mul(a, h_ld(a, A, expr_add(a, expr_mul(a, i, h_i(a, K)), k)),
                              h_ld(a, B, expr_add(a, expr_mul(a, k, h_i(a, N)), j)));
  const Stmt *upd = h_st(a, C, cij, expr_add(a, h_ld(a, C, cij), prod));
  const Stmt *init = h_st(a, C, cij, expr_float(a, DT_F32, 0.0));
  const Stmt *body = h_for(a, i, M, FOR_PARALLEL, h_for(a, j, N, jkind, stmt_seq2(a, init, h_for(a, k, K, FOR_UNROLLED, upd))));
  return primfunc_new(a, name, ps, 3, body);
}

static void test_matmul_parallel(void **state) {
  (void)state;
  Arena *a = arena_new();
  enum { M = 33, N = 47, K = 5 };
  PrimFunc *fs[] = {matmul(a, "matmul_par", M, N, K, FOR_SERIAL), matmul(a, "matmul_nested", M, N, K, FOR_PARALLEL)};
  char *src;
  Module *m = harness_compile(fs, 2, &src);
  assert_non_null(strstr(src, "#pragma GCC unroll 5"));
  assert_non_null(strstr(src, "env->parallel_for(env->pool, 33, matmul_par_parallel0, &closure)"));
  static float x[M * K], y[K * N], z[M * N], ref[M * N];
  fill(x, M * K, 3);
  fill(y, K * N, 4);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float s = 0;
      for (int k = 0; k < K; k++) s += x[i * K + k] * y[k * N + j];
      ref[i * N + j] = s;
    }
  int64_t sa[] = {M * K}, sb[] = {K * N}, sc[] = {M * N};
  DLTensor ta = harness_tensor(x, kDLFloat, 32, 1, sa), tb = harness_tensor(y, kDLFloat, 32, 1, sb),
           tc = harness_tensor(z, kDLFloat, 32, 1, sc);
  DLTensor *args[] = {&ta, &tb, &tc};
  ThreadPool *pool;
  assert_int_equal(threadpool_create(3, &pool, NULL), LOOM_OK);
  const char *names[] = {"matmul_par", "matmul_nested"};
  for (int f = 0; f < 2; f++) {
    Kernel k = harness_kernel(m, names[f]);
    for (int rep = 0; rep < 2; rep++) {
      memset(z, 0xff, sizeof z); /* NaN: every element must be written */
      assert_int_equal(call(&k, args, 3, rep ? pool : NULL), 0);
      for (int e = 0; e < M * N; e++) assert_true(fabsf(z[e] - ref[e]) <= 1e-5f * (1 + fabsf(ref[e])));
    }
  }
  threadpool_destroy(pool);
  free(src);
  module_unload(m);
  arena_free(a);
}

static int64_t ref_floordiv(int64_t x, int64_t y) {
  int64_t q = x / y;
  return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}

/* floordiv/floormod with negative operands, scalar and 4-lane, and C's
 * truncating div/mod beside them. */
static void test_floordiv_floormod(void **state) {
  (void)state;
  Arena *a = arena_new();
  enum { N = 64 };
  const Buffer *X = h_buf(a, "X", DT_I64, N), *Y = h_buf(a, "Y", DT_I64, N), *O = h_buf(a, "O", DT_I64, 4 * N);
  const Buffer *ps[] = {X, Y, O};
  const Expr *i = expr_var(a, "i", DT_I64);
  const Expr *x = h_ld(a, X, i), *y = h_ld(a, Y, i);
  const Stmt *s[] = {
      h_st(a, O, i, expr_floordiv(a, x, y)),
      h_st(a, O, expr_add(a, i, h_i(a, N)), expr_floormod(a, x, y)),
      h_st(a, O, expr_add(a, i, h_i(a, 2 * N)), expr_binary(a, EXPR_DIV, x, y)),
      h_st(a, O, expr_add(a, i, h_i(a, 3 * N)), expr_binary(a, EXPR_MOD, x, y)),
  };
  const Stmt *scalar = h_for(a, i, N, FOR_SERIAL, stmt_seq(a, s, 4));
  const Expr *io = expr_var(a, "io", DT_I64);
  const Expr *r = h_ramp(a, expr_mul(a, io, h_i(a, 4)), 4);
  const Expr *xv = h_ld(a, X, r), *yv = h_ld(a, Y, r);
  const Stmt *sv[] = {
      h_st(a, O, r, expr_floordiv(a, xv, yv)),
      h_st(a, O, h_ramp(a, expr_add(a, expr_mul(a, io, h_i(a, 4)), h_i(a, N)), 4), expr_floormod(a, xv, yv)),
      h_st(a, O, h_ramp(a, expr_add(a, expr_mul(a, io, h_i(a, 4)), h_i(a, 2 * N)), 4), expr_binary(a, EXPR_DIV, xv, yv)),
      h_st(a, O, h_ramp(a, expr_add(a, expr_mul(a, io, h_i(a, 4)), h_i(a, 3 * N)), 4), expr_binary(a, EXPR_MOD, xv, yv)),
  };
  const Stmt *vec = h_for(a, io, N / 4, FOR_SERIAL, stmt_seq(a, sv, 4));
  PrimFunc *fs[] = {primfunc_new(a, "fdiv_scalar", ps, 3, scalar), primfunc_new(a, "fdiv_vec", ps, 3, vec)};
  Module *m = harness_compile(fs, 2, NULL);
  static const int64_t divisors[] = {-7, -3, -1, 1, 2, 5, 8, 13};
  int64_t xs[N], ys[N], out[4 * N];
  for (int j = 0; j < N; j++) {
    xs[j] = j * 7 % 41 - 20;
    ys[j] = divisors[j % 8];
  }
  int64_t s1[] = {N}, s4[] = {4 * N};
  DLTensor tx = harness_tensor(xs, kDLInt, 64, 1, s1), ty = harness_tensor(ys, kDLInt, 64, 1, s1),
           to = harness_tensor(out, kDLInt, 64, 1, s4);
  DLTensor *args[] = {&tx, &ty, &to};
  const char *names[] = {"fdiv_scalar", "fdiv_vec"};
  for (int f = 0; f < 2; f++) {
    Kernel k = harness_kernel(m, names[f]);
    memset(out, 0, sizeof out);
    assert_int_equal(call(&k, args, 3, NULL), 0);
    for (int j = 0; j < N; j++) {
      int64_t q = ref_floordiv(xs[j], ys[j]);
      assert_int_equal(out[j], q);
      assert_int_equal(out[N + j], xs[j] - q * ys[j]);
      assert_int_equal(out[2 * N + j], xs[j] / ys[j]);
      assert_int_equal(out[3 * N + j], xs[j] % ys[j]);
    }
  }
  module_unload(m);
  arena_free(a);
}

/* select (scalar ?: and vector mask blend), casts both ways, min/max, math
 * calls scalar and lane-wise; one output row per feature. */
static void test_select_cast_call(void **state) {
  (void)state;
  Arena *a = arena_new();
  enum { N = 64, ROWS = 8 };
  const Buffer *X = h_buf(a, "X", DT_F32, N), *O = h_buf(a, "O", DT_F32, ROWS * N), *I = h_buf(a, "I", DT_I32, N);
  const Buffer *ps[] = {X, O, I};
  for (int vec = 0; vec < 2; vec++) {
    int L = vec ? 8 : 1;
    const Expr *v = expr_var(a, "v", DT_I64);
    const Expr *base = vec ? expr_mul(a, v, h_i(a, L)) : v;
    const Expr *idx = vec ? h_ramp(a, base, L) : base;
#define ROW(r) (vec ? h_ramp(a, expr_add(a, base, h_i(a, (r) * N)), L) : expr_add(a, base, h_i(a, (r) * N)))
#define F(c) (vec ? expr_broadcast(a, expr_float(a, DT_F32, c), L) : expr_float(a, DT_F32, c))
    const Expr *x = h_ld(a, X, idx);
    DType f32 = dtype_with_lanes(DT_F32, L), i32 = dtype_with_lanes(DT_I32, L);
    const Expr *sel = expr_select(a, expr_lt(a, x, F(0.25)), expr_mul(a, x, F(2.0)), expr_sub(a, x, F(1.0)));
    const Expr *as_int = expr_cast(a, i32, expr_mul(a, x, F(10.0)));
    const Expr *idx_f = expr_mul(a, expr_cast(a, f32, idx), F(0.25));
    const Expr *ex = expr_call(a, CALL_EXP, f32, &x, 1);
    const Expr *ab = expr_call(a, CALL_FABS, f32, &x, 1);
    const Expr *sq = expr_call(a, CALL_SQRT, f32, &ab, 1);
    const Expr *pw_args[] = {ab, F(1.5)};
    const Expr *pw = expr_call(a, CALL_POW, f32, pw_args, 2);
    const Expr *mm = expr_max(a, expr_min(a, x, F(0.5)), F(-0.5));
    /* select on a comparison of the int64 index: the mask changes width */
    const Expr *isel = expr_select(a, expr_lt(a, idx, vec ? expr_broadcast(a, h_i(a, 20), L) : h_i(a, 20)), x, F(7.0));
    const Stmt *s[] = {
        h_st(a, O, ROW(0), sel), h_st(a, I, idx, as_int), h_st(a, O, ROW(1), idx_f), h_st(a, O, ROW(2), ex),
        h_st(a, O, ROW(3), sq),  h_st(a, O, ROW(4), pw),  h_st(a, O, ROW(5), mm),    h_st(a, O, ROW(6), isel),
        h_st(a, O, ROW(7), expr_cast(a, f32, as_int)),
    };
#undef ROW
#undef F
    PrimFunc *f = primfunc_new(a, vec ? "features_vec" : "features", ps, 3, h_for(a, v, N / L, FOR_SERIAL, stmt_seq(a, s, 9)));
    Module *m = harness_compile(&f, 1, NULL);
    Kernel k = harness_kernel(m, f->name);
    float xs[N], out[ROWS * N];
    int32_t ints[N];
    fill(xs, N, 5);
    int64_t s1[] = {N}, so[] = {ROWS * N};
    DLTensor tx = harness_tensor(xs, kDLFloat, 32, 1, s1), to = harness_tensor(out, kDLFloat, 32, 1, so),
             ti = harness_tensor(ints, kDLInt, 32, 1, s1);
    DLTensor *args[] = {&tx, &to, &ti};
    assert_int_equal(call(&k, args, 3, NULL), 0);
    for (int j = 0; j < N; j++) {
      float xv = xs[j];
      float want[ROWS] = {xv < 0.25f ? xv * 2 : xv - 1, (float)j * 0.25f, expf(xv), sqrtf(fabsf(xv)),
                          powf(fabsf(xv), 1.5f), fmaxf(fminf(xv, 0.5f), -0.5f), j < 20 ? xv : 7.0f,
                          (float)(int32_t)(xv * 10)};
      assert_int_equal(ints[j], (int32_t)(xv * 10));
      for (int r = 0; r < ROWS; r++) {
        float got = out[r * N + j];
        if (!(fabsf(got - want[r]) <= 1e-5f * (1 + fabsf(want[r]))))
          fail_msg("%s row %d element %d: got %g, want %g", f->name, r, j, got, want[r]);
      }
    }
    module_unload(m);
  }
  arena_free(a);
}

/* A 64-element temporary on the stack and an 80 KB one in the workspace. */
static void test_allocations(void **state) {
  (void)state;
  Arena *a = arena_new();
  enum { SMALL = 64, BIG = 20000 };
  const Buffer *X = h_buf(a, "X", DT_F32, BIG), *Y = h_buf(a, "Y", DT_F32, BIG);
  const Buffer *ps[] = {X, Y};
  const Buffer *t = h_buf(a, "tmp", DT_F32, SMALL), *w = h_buf(a, "big", DT_F32, BIG);
  const Expr *i = expr_var(a, "i", DT_I64), *j = expr_var(a, "j", DT_I64);
  /* Y[i] = 2 * X[BIG-1-i] (through big) + X[i % 64] * 3 (through tmp) for i < 64 */
  const Stmt *fill_t = h_for(a, i, SMALL, FOR_SERIAL, h_st(a, t, i, expr_mul(a, h_ld(a, X, i), expr_float(a, DT_F32, 3))));
  const Stmt *fill_w = h_for(a, i, BIG, FOR_SERIAL,
                             h_st(a, w, expr_sub(a, h_i(a, BIG - 1), i), expr_mul(a, h_ld(a, X, i), expr_float(a, DT_F32, 2))));
  const Expr *small_term = expr_select(a, expr_lt(a, j, h_i(a, SMALL)), h_ld(a, t, expr_min(a, j, h_i(a, SMALL - 1))),
                                       expr_float(a, DT_F32, 0));
  const Stmt *use = h_for(a, j, BIG, FOR_SERIAL, h_st(a, Y, j, expr_add(a, h_ld(a, w, j), small_term)));
  const Stmt *body = stmt_allocate(a, t, stmt_allocate(a, w, stmt_seq2(a, stmt_seq2(a, fill_t, fill_w), use)));
  PrimFunc *f = primfunc_new(a, "temps", ps, 2, body);
  char *src;
  Module *m = harness_compile(&f, 1, &src);
  assert_non_null(strstr(src, "float tmp[64] __attribute__((aligned(64)));"));
  assert_non_null(strstr(src, "env->workspace"));
  Kernel k = harness_kernel(m, "temps");
  assert_int_equal(k.workspace_bytes, BIG * 4);
  static float xs[BIG], ys[BIG];
  fill(xs, BIG, 6);
  int64_t s1[] = {BIG};
  DLTensor tx = harness_tensor(xs, kDLFloat, 32, 1, s1), ty = harness_tensor(ys, kDLFloat, 32, 1, s1);
  DLTensor *args[] = {&tx, &ty};
  assert_int_equal(call(&k, args, 2, NULL), 0);
  for (int q = 0; q < BIG; q++) {
    float want = xs[BIG - 1 - q] * 2 + (q < SMALL ? xs[q] * 3 : 0);
    assert_true(ys[q] == want);
  }
  /* Without a workspace the kernel refuses instead of crashing. */
  assert_int_equal(k.fn(args, 2, NULL), LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_WORKSPACE, 0));
  loom_kernel_env env = {0};
  env.workspace = xs;
  env.workspace_bytes = 100; /* too small */
  assert_int_equal(k.fn(args, 2, &env), LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_WORKSPACE, 0));
  free(src);
  module_unload(m);
  arena_free(a);
}

/* Every argument check returns its code and argument index; a symbolic
 * extent is bound from the tensor. */
static void test_argument_checks(void **state) {
  (void)state;
  Arena *a = arena_new();
  /* copy2d: flat params of 12 elements whose original shape is [3, 4] */
  const Buffer *A = h_buf(a, "A", DT_F32, 12), *B = h_buf(a, "B", DT_F32, 12);
  const Expr *sh[] = {h_i(a, 3), h_i(a, 4)};
  Buffer *A2 = buffer_new(a, "A", DT_F32, 2, sh), *B2 = buffer_new(a, "B", DT_F32, 2, sh);
  B2->align = 64;
  const Buffer *ps[] = {A, B}, *orig[] = {A2, B2};
  const Expr *i = expr_var(a, "i", DT_I64);
  PrimFunc *f = primfunc_new(a, "copy2d", ps, 2, h_for(a, i, 12, FOR_SERIAL, h_st(a, B, i, h_ld(a, A, i))));
  f->orig_params = orig;
  /* scale_n: A[n] -> B[n] with a symbolic n */
  const Expr *n = expr_var(a, "n", DT_I64);
  const Buffer *An = buffer_new(a, "A", DT_F32, 1, &n), *Bn = buffer_new(a, "B", DT_F32, 1, &n);
  const Buffer *psn[] = {An, Bn};
  PrimFunc *g = primfunc_new(a, "scale_n", psn, 2,
                             stmt_for(a, i, h_i(a, 0), n, FOR_SERIAL,
                                      h_st(a, Bn, i, expr_mul(a, h_ld(a, An, i), expr_float(a, DT_F32, 2)))));
  PrimFunc *fs[] = {f, g};
  Module *m = harness_compile(fs, 2, NULL);
  Kernel k = harness_kernel(m, "copy2d");
  _Alignas(64) float xs[16], ys[16];
  fill(xs, 16, 7);
  int64_t shape[] = {3, 4}, bad_shape[] = {4, 3}, flat[] = {12}, strides_ok[] = {4, 1}, strides_bad[] = {1, 3};
  DLTensor ta = harness_tensor(xs, kDLFloat, 32, 2, shape), tb = harness_tensor(ys, kDLFloat, 32, 2, shape);
  DLTensor *args[] = {&ta, &tb};
  assert_int_equal(call(&k, args, 2, NULL), 0);
  for (int q = 0; q < 12; q++) assert_true(ys[q] == xs[q]);
  ta.strides = strides_ok;
  assert_int_equal(call(&k, args, 2, NULL), 0);

#define EXPECT(kind, arg) assert_int_equal(call(&k, args, 2, NULL), LOOM_KERNEL_ERR(kind, arg))
  assert_int_equal(call(&k, args, 1, NULL), LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NUM_ARGS, 0));
  assert_int_equal(k.fn(NULL, 2, NULL), LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NULL, 0));
  DLTensor *with_null[] = {&ta, NULL};
  assert_int_equal(call(&k, with_null, 2, NULL), LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NULL, 1));
  ta.strides = strides_bad;
  EXPECT(LOOM_KERNEL_ERR_STRIDES, 0);
  ta.strides = NULL;
  tb.dtype.bits = 64;
  EXPECT(LOOM_KERNEL_ERR_DTYPE, 1);
  tb.dtype.bits = 32;
  tb.dtype.code = kDLInt;
  EXPECT(LOOM_KERNEL_ERR_DTYPE, 1);
  tb.dtype.code = kDLFloat;
  ta.shape = bad_shape;
  EXPECT(LOOM_KERNEL_ERR_SHAPE, 0);
  ta.shape = flat;
  ta.ndim = 1;
  EXPECT(LOOM_KERNEL_ERR_NDIM, 0);
  ta.shape = shape;
  ta.ndim = 2;
  ta.device.device_type = kDLCUDA;
  EXPECT(LOOM_KERNEL_ERR_DEVICE, 0);
  ta.device.device_type = kDLCPU;
  ta.byte_offset = 2; /* not a multiple of sizeof(float) */
  EXPECT(LOOM_KERNEL_ERR_ALIGN, 0);
  ta.byte_offset = 0;
  tb.byte_offset = 16; /* float-aligned, but B was declared 64-byte aligned */
  EXPECT(LOOM_KERNEL_ERR_ALIGN, 1);
  tb.byte_offset = 0;
  ta.data = NULL;
  EXPECT(LOOM_KERNEL_ERR_NULL, 0);
  ta.data = xs;
#undef EXPECT
  /* kernel_call turns the code into a message naming the argument. */
  LoomError err = {0};
  ta.shape = bad_shape;
  assert_int_equal(kernel_call(&k, args, 2, NULL, NULL, &err), LOOM_ERR_RUNTIME);
  assert_non_null(strstr(err.msg, "copy2d"));
  assert_non_null(strstr(err.msg, "argument 0"));
  assert_non_null(strstr(err.msg, "shape mismatch"));
  ta.shape = shape;

  Kernel kn = harness_kernel(m, "scale_n");
  for (int64_t len = 1; len <= 16; len += 15) {
    memset(ys, 0, sizeof ys);
    int64_t s1[] = {len}, s2[] = {len};
    DLTensor x1 = harness_tensor(xs, kDLFloat, 32, 1, s1), y1 = harness_tensor(ys, kDLFloat, 32, 1, s2);
    DLTensor *a1[] = {&x1, &y1};
    assert_int_equal(call(&kn, a1, 2, NULL), 0);
    for (int q = 0; q < 16; q++) assert_true(ys[q] == (q < len ? xs[q] * 2 : 0));
    s2[0] = len + 1; /* B must have the n bound from A */
    assert_int_equal(call(&kn, a1, 2, NULL), LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_SHAPE, 1));
  }
  module_unload(m);
  arena_free(a);
}

static void test_codegen_refusals(void **state) {
  (void)state;
  Arena *a = arena_new();
  const Buffer *A = h_buf(a, "A", DT_F32, 8);
  const Buffer *ps[] = {A};
  const Expr *i = expr_var(a, "i", DT_I64);
  const Stmt *st = h_st(a, A, i, expr_float(a, DT_F32, 1));
  StrBuf sb;
  sb_init(&sb);
  LoomError err = {0};
  assert_int_equal(codegen_c_func(&sb, primfunc_new(a, "bad-name", ps, 1, h_for(a, i, 8, FOR_SERIAL, st)), &err),
                   LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "bad-name"));
  const Stmt *gpu = stmt_for_thread(a, i, h_i(a, 0), h_i(a, 8), "threadIdx.x", st);
  assert_int_equal(codegen_c_func(&sb, primfunc_new(a, "gpu", ps, 1, gpu), &err), LOOM_ERR_UNSUPPORTED);
  assert_non_null(strstr(err.msg, "threadIdx.x"));
  /* i used outside its loop */
  assert_int_equal(codegen_c_func(&sb, primfunc_new(a, "free_var", ps, 1, st), &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "\"i\""));
  /* a buffer that is neither a parameter nor allocated */
  const Buffer *T = h_buf(a, "T", DT_F32, 8);
  const Stmt *st2 = h_for(a, i, 8, FOR_SERIAL, h_st(a, T, i, expr_float(a, DT_F32, 1)));
  assert_int_equal(codegen_c_func(&sb, primfunc_new(a, "stray", ps, 1, st2), &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "\"T\""));
  /* a big temporary inside a parallel loop */
  const Buffer *W = h_buf(a, "W", DT_F32, 1 << 20);
  const Stmt *par = h_for(a, i, 8, FOR_PARALLEL, stmt_allocate(a, W, h_st(a, A, i, h_ld(a, W, i))));
  assert_int_equal(codegen_c_func(&sb, primfunc_new(a, "par_ws", ps, 1, par), &err), LOOM_ERR_UNSUPPORTED);
  assert_non_null(strstr(err.msg, "\"W\""));
  assert_int_equal(sb.len, 0); /* nothing half-written */
  sb_free(&sb);
  arena_free(a);
}

/* f64 math, a bool output, and a parallel loop over a symbolic extent that
 * starts at 3 (the closure captures n; the chunk offsets add to the min). */
static void test_f64_bool_symbolic_parallel(void **state) {
  (void)state;
  Arena *a = arena_new();
  const Expr *n = expr_var(a, "n", DT_I64);
  const Buffer *X = buffer_new(a, "X", DT_F64, 1, &n), *Y = buffer_new(a, "Y", DT_F64, 1, &n);
  const Buffer *M = buffer_new(a, "M", DT_BOOL1, 1, &n);
  const Buffer *ps[] = {X, Y, M};
  const Expr *i = expr_var(a, "i", DT_I64);
  const Expr *x = h_ld(a, X, i);
  const Expr *args2[] = {x, expr_float(a, DT_F64, 2.0)};
  const Stmt *body[] = {
      h_st(a, Y, i, expr_add(a, expr_call(a, CALL_EXP, DT_F64, &x, 1), expr_call(a, CALL_POW, DT_F64, args2, 2))),
      h_st(a, M, i, expr_lt(a, x, expr_float(a, DT_F64, 0.0))),
  };
  const Stmt *loop = stmt_for(a, i, h_i(a, 3), expr_sub(a, n, h_i(a, 3)), FOR_PARALLEL, stmt_seq(a, body, 2));
  PrimFunc *f = primfunc_new(a, "f64_bool", ps, 3, loop);
  Module *m = harness_compile(&f, 1, NULL);
  Kernel k = harness_kernel(m, "f64_bool");
  ThreadPool *pool;
  assert_int_equal(threadpool_create(2, &pool, NULL), LOOM_OK);
  enum { LEN = 29 };
  double xs[LEN], ys[LEN];
  _Bool ms[LEN];
  for (int q = 0; q < LEN; q++) xs[q] = (q - 14) * 0.3;
  for (int use_pool = 0; use_pool < 2; use_pool++) {
    memset(ys, 0, sizeof ys);
    memset(ms, 0, sizeof ms);
    int64_t sh[] = {LEN};
    DLTensor tx = harness_tensor(xs, kDLFloat, 64, 1, sh), ty = harness_tensor(ys, kDLFloat, 64, 1, sh),
             tm = harness_tensor(ms, kDLUInt, 8, 1, sh);
    DLTensor *args[] = {&tx, &ty, &tm};
    assert_int_equal(call(&k, args, 3, use_pool ? pool : NULL), 0);
    for (int q = 0; q < LEN; q++) {
      double want = q < 3 ? 0 : exp(xs[q]) + pow(xs[q], 2.0);
      assert_true(fabs(ys[q] - want) <= 1e-12 * (1 + fabs(want)));
      assert_int_equal(ms[q], q >= 3 && xs[q] < 0);
    }
  }
  threadpool_destroy(pool);
  module_unload(m);
  arena_free(a);
}

/* A tile accessed only at constant offsets (an unrolled register tile)
 * becomes one variable per vector, and its scalar accesses lanes of them:
 * "tile" copies X to acc as two vectors, adds 1 to acc[5], copies acc to Y.
 * "array" fills its tile in a loop (a variable offset): it stays an array. */
static void test_register_tile_promotion(void **state) {
  (void)state;
  Arena *a = arena_new();
  const Buffer *X = h_buf(a, "X", DT_F32, 32), *Y = h_buf(a, "Y", DT_F32, 32);
  const Buffer *ps[] = {X, Y};
  const Buffer *t = h_buf(a, "acc", DT_F32, 32), *u = h_buf(a, "arr", DT_F32, 32);
  const Stmt *st[5], *st2[3];
  const Expr *i = expr_var(a, "i", DT_I64);
  st2[0] = h_for(a, i, 32, FOR_SERIAL, h_st(a, u, i, h_ld(a, X, i)));
  for (int v = 0; v < 2; v++) {
    const Expr *r = h_ramp(a, h_i(a, 16 * v), 16);
    st[v] = h_st(a, t, r, h_ld(a, X, r));
    st[3 + v] = h_st(a, Y, r, h_ld(a, t, r));
    st2[1 + v] = h_st(a, Y, r, h_ld(a, u, r));
  }
  st[2] = h_st(a, t, h_i(a, 5), expr_add(a, h_ld(a, t, h_i(a, 5)), expr_float(a, DT_F32, 1)));
  PrimFunc *fs[] = {primfunc_new(a, "tile", ps, 2, stmt_allocate(a, t, stmt_seq(a, st, 5))),
                    primfunc_new(a, "array", ps, 2, stmt_allocate(a, u, stmt_seq(a, st2, 3)))};
  char *src;
  Module *m = harness_compile(fs, 2, &src);
  assert_non_null(strstr(src, "float32x16 acc_0 = {0};"));
  assert_non_null(strstr(src, "float32x16 acc_1 = {0};"));
  assert_non_null(strstr(src, "acc_0[5] = (acc_0[5] + 1.0f);"));
  assert_null(strstr(src, "float acc[32]"));
  assert_non_null(strstr(src, "float arr[32] __attribute__((aligned(64)));"));
  const char *names[] = {"tile", "array"};
  for (int f = 0; f < 2; f++) {
    Kernel k = harness_kernel(m, names[f]);
    float x[32], y[32];
    fill(x, 32, 7);
    int64_t shape[] = {32};
    DLTensor tx = harness_tensor(x, kDLFloat, 32, 1, shape), ty = harness_tensor(y, kDLFloat, 32, 1, shape);
    DLTensor *args[] = {&tx, &ty};
    assert_int_equal(call(&k, args, 2, NULL), 0);
    for (int j = 0; j < 32; j++) assert_true(y[j] == x[j] + (f == 0 && j == 5 ? 1.0f : 0.0f));
  }
  free(src);
  module_unload(m);
  arena_free(a);
}

/* Unrolled loops the lowering left as loops (too long, or too big to
 * unroll whole) get an unroll pragma for as many copies as fit the
 * code-size budget: B[j] += A[i] (4 nodes) in three nested unrolled loops
 * of 1000: the innermost 250 copies (the most up to 256 that divide 1000),
 * the middle one 25 (25 x 250 x 4 nodes fit 32768), the outermost none. */
static void test_unroll_pragma_budget(void **state) {
  (void)state;
  Arena *a = arena_new();
  const Buffer *A = h_buf(a, "A", DT_F32, 1000), *B = h_buf(a, "B", DT_F32, 1000);
  const Buffer *ps[] = {A, B};
  const Expr *i = expr_var(a, "i", DT_I64), *j = expr_var(a, "j", DT_I64), *k = expr_var(a, "k", DT_I64);
  const Stmt *st = h_st(a, B, j, expr_add(a, h_ld(a, B, j), h_ld(a, A, k)));
  const Stmt *nest = h_for(a, i, 1000, FOR_UNROLLED, h_for(a, k, 1000, FOR_UNROLLED, h_for(a, j, 1000, FOR_UNROLLED, st)));
  StrBuf sb;
  sb_init(&sb);
  LoomError err = {0};
  assert_int_equal(codegen_c_func(&sb, primfunc_new(a, "unrolled", ps, 2, nest), &err), LOOM_OK);
  const char *src = sb_cstr(&sb);
  assert_non_null(strstr(src, "#pragma GCC unroll 250\n"));
  assert_non_null(strstr(src, "#pragma GCC unroll 25\n"));
  const char *first = strstr(src, "#pragma GCC unroll");
  assert_non_null(first);
  assert_null(strstr(strstr(first + 1, "#pragma GCC unroll") + 1, "#pragma GCC unroll"));
  assert_true(strstr(src, "for (int64_t i = 0;") < first);
  sb_free(&sb);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vector_add),       cmocka_unit_test(test_matmul_parallel),
      cmocka_unit_test(test_floordiv_floormod), cmocka_unit_test(test_select_cast_call),
      cmocka_unit_test(test_allocations),      cmocka_unit_test(test_argument_checks),
      cmocka_unit_test(test_codegen_refusals), cmocka_unit_test(test_f64_bool_symbolic_parallel),
      cmocka_unit_test(test_register_tile_promotion), cmocka_unit_test(test_unroll_pragma_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
