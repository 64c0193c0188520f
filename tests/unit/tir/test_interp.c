/* The reference interpreter: semantics of expressions (checked against C),
 * block-level and lowered IR, and the errors a wrong schedule must produce. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "te/te.h"
#include "tir/interp.h"

static const Expr *c64(Arena *a, int64_t v) { return expr_i64(a, v); }

static Buffer *buf1(Arena *a, const char *name, DType t, int64_t n) {
  const Expr *shape[1] = {expr_i64(a, n)};
  return buffer_new(a, name, t, 1, shape);
}

/* Root block realize around body, allocating allocs. */
static const Stmt *root_of(Arena *a, const Stmt *body, const Buffer *const *allocs, int n_alloc) {
  Block *root = ARENA_NEW(a, Block);
  root->name = "root";
  root->alloc_buffers = allocs;
  root->n_alloc = n_alloc;
  root->body = body;
  return stmt_realize(a, NULL, 0, expr_bool(a, true), root);
}

/* Evaluates scalar expression e (no loads) through a 1-element output store. */
static loom_status eval_scalar(Arena *a, const Expr *e, void *out, LoomError *err) {
  Buffer *o = buf1(a, "out", e->dtype, 1);
  const Expr *idx[1] = {c64(a, 0)};
  const Stmt *body = stmt_store(a, o, e, idx, 1);
  const Buffer *params[1] = {o};
  PrimFunc *f = primfunc_new(a, "scalar", params, 1, body);
  void *data[1] = {out};
  return tir_interpret(f, data, err);
}

static int64_t eval_i64(Arena *a, ExprKind k, int64_t x, int64_t y) {
  int64_t out = 0;
  LoomError err = {0};
  assert_int_equal(eval_scalar(a, expr_binary(a, k, c64(a, x), c64(a, y)), &out, &err), LOOM_OK);
  return out;
}

static void test_int_semantics(void **state) {
  (void)state;
  Arena *a = arena_new();
  const int64_t xs[] = {7, -7, 6, -6, 0, 13, -13};
  const int64_t ys[] = {2, -2, 3, -3, 5, -5};
  for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
    for (size_t j = 0; j < sizeof ys / sizeof ys[0]; j++) {
      int64_t x = xs[i], y = ys[j];
      int64_t fd = (int64_t)floor((double)x / (double)y);
      assert_int_equal(eval_i64(a, EXPR_FLOORDIV, x, y), fd);
      assert_int_equal(eval_i64(a, EXPR_FLOORMOD, x, y), x - fd * y);
      assert_int_equal(eval_i64(a, EXPR_DIV, x, y), x / y);
      assert_int_equal(eval_i64(a, EXPR_MOD, x, y), x % y);
      assert_int_equal(eval_i64(a, EXPR_MIN, x, y), x < y ? x : y);
      assert_int_equal(eval_i64(a, EXPR_MAX, x, y), x > y ? x : y);
      assert_int_equal(eval_i64(a, EXPR_LT, x, y) & 1, x < y);
    }
  }
  /* Narrow types wrap like C's fixed-width conversions. */
  int8_t i8;
  LoomError err = {0};
  assert_int_equal(eval_scalar(a, expr_add(a, expr_int(a, DT_I8, 100), expr_int(a, DT_I8, 100)), &i8, &err), LOOM_OK);
  assert_int_equal(i8, (int8_t)(uint8_t)200);
  uint8_t u8;
  assert_int_equal(eval_scalar(a, expr_sub(a, expr_int(a, DT_U8, 3), expr_int(a, DT_U8, 5)), &u8, &err), LOOM_OK);
  assert_int_equal(u8, 254);
  int32_t i32;
  assert_int_equal(eval_scalar(a, expr_cast(a, DT_I32, expr_float(a, DT_F32, -2.75)), &i32, &err), LOOM_OK);
  assert_int_equal(i32, -2);
  /* Division by zero is an error, not a crash. */
  int64_t out;
  assert_int_equal(eval_scalar(a, expr_floordiv(a, c64(a, 1), c64(a, 0)), &out, &err), LOOM_ERR_RUNTIME);
  assert_non_null(strstr(err.msg, "by zero"));
  /* Float to int out of range. */
  assert_int_equal(eval_scalar(a, expr_cast(a, DT_I8, expr_float(a, DT_F32, 300.0)), &i8, &err), LOOM_ERR_RUNTIME);
  arena_free(a);
}

static void test_float_semantics(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  float f;
  /* f32 rounds after every operation: 2^24 + 1 - 2^24 is 0 in float, 1 in double. */
  const Expr *big = expr_float(a, DT_F32, 16777216.0);
  const Expr *e = expr_sub(a, expr_add(a, big, expr_float(a, DT_F32, 1.0)), big);
  assert_int_equal(eval_scalar(a, e, &f, &err), LOOM_OK);
  assert_true(f == 0.0f);
  double d;
  const Expr *bigd = expr_float(a, DT_F64, 16777216.0);
  assert_int_equal(eval_scalar(a, expr_sub(a, expr_add(a, bigd, expr_float(a, DT_F64, 1.0)), bigd), &d, &err), LOOM_OK);
  assert_true(d == 1.0);
  /* Calls use the float functions for f32. */
  const Expr *arg[1] = {expr_float(a, DT_F32, 0.3)};
  assert_int_equal(eval_scalar(a, expr_call(a, CALL_EXP, DT_F32, arg, 1), &f, &err), LOOM_OK);
  assert_true(f == expf(0.3f));
  /* floordiv / floormod on floats. */
  assert_int_equal(eval_scalar(a, expr_floormod(a, expr_float(a, DT_F64, -7.5), expr_float(a, DT_F64, 2.0)), &d, &err), LOOM_OK);
  assert_true(d == 0.5);
  /* select evaluates only the chosen branch (the other divides by zero). */
  int64_t out;
  const Expr *sel = expr_select(a, expr_lt(a, c64(a, 1), c64(a, 2)), c64(a, 4),
                                expr_floordiv(a, c64(a, 1), c64(a, 0)));
  assert_int_equal(eval_scalar(a, sel, &out, &err), LOOM_OK);
  assert_int_equal(out, 4);
  arena_free(a);
}

/* Lowered IR: flattened buffers, Allocate, vector ramp/broadcast, If.
 *   allocate T[16]
 *   for io in 0..4: T[ramp(io*4, 1, 4)] = A[ramp(io*4, 1, 4)] * broadcast(3, 4)
 *   for i in 0..16: if (i < 10) B[i] = T[15 - i] else B[i] = -1 */
static void test_lowered_vector(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = buf1(a, "A", DT_I32, 16), *B = buf1(a, "B", DT_I32, 16), *T = buf1(a, "T", DT_I32, 16);
  const Expr *io = expr_var(a, "io", DT_I64), *i = expr_var(a, "i", DT_I64);
  const Expr *ramp[1] = {expr_ramp(a, expr_mul(a, io, c64(a, 4)), c64(a, 1), 4)};
  const Expr *val = expr_mul(a, expr_load(a, A, ramp, 1), expr_broadcast(a, expr_int(a, DT_I32, 3), 4));
  const Stmt *l1 = stmt_for(a, io, c64(a, 0), c64(a, 4), FOR_VECTORIZED, stmt_store(a, T, val, ramp, 1));
  const Expr *rev[1] = {expr_sub(a, c64(a, 15), i)}, *ii[1] = {i};
  const Stmt *then_s = stmt_store(a, B, expr_load(a, T, rev, 1), ii, 1);
  const Stmt *else_s = stmt_store(a, B, expr_int(a, DT_I32, -1), ii, 1);
  const Stmt *l2 = stmt_for(a, i, c64(a, 0), c64(a, 16), FOR_PARALLEL,
                            stmt_if(a, expr_lt(a, i, c64(a, 10)), then_s, else_s));
  const Stmt *body = stmt_allocate(a, T, stmt_seq2(a, l1, l2));
  const Buffer *params[2] = {A, B};
  PrimFunc *f = primfunc_new(a, "lowered", params, 2, body);
  int32_t in[16], out[16];
  for (int k = 0; k < 16; k++) in[k] = k * 7 - 20;
  void *data[2] = {in, out};
  LoomError err = {0};
  assert_int_equal(tir_interpret(f, data, &err), LOOM_OK);
  for (int k = 0; k < 16; k++) assert_int_equal(out[k], k < 10 ? in[15 - k] * 3 : -1);
  arena_free(a);
}

/* A vector store reads all lanes before writing any: A[1..4] = A[0..3]. */
static void test_vector_store_reads_first(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = buf1(a, "A", DT_I64, 5);
  const Expr *dst[1] = {expr_ramp(a, c64(a, 1), c64(a, 1), 4)};
  const Expr *src[1] = {expr_ramp(a, c64(a, 0), c64(a, 1), 4)};
  const Stmt *s = stmt_store(a, A, expr_load(a, A, src, 1), dst, 1);
  const Buffer *params[1] = {A};
  PrimFunc *f = primfunc_new(a, "shift", params, 1, s);
  int64_t x[5] = {10, 11, 12, 13, 14};
  void *data[1] = {x};
  LoomError err = {0};
  assert_int_equal(tir_interpret(f, data, &err), LOOM_OK);
  int64_t want[5] = {10, 10, 11, 12, 13};
  assert_memory_equal(x, want, sizeof want);
  arena_free(a);
}

static void test_out_of_bounds(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = buf1(a, "A", DT_F32, 8), *B = buf1(a, "B", DT_F32, 8);
  const Expr *i = expr_var(a, "i", DT_I64);
  const Expr *ip1[1] = {expr_add(a, i, c64(a, 1))}, *ii[1] = {i};
  const Stmt *s = stmt_for(a, i, c64(a, 0), c64(a, 8), FOR_SERIAL, stmt_store(a, B, expr_load(a, A, ip1, 1), ii, 1));
  const Buffer *params[2] = {A, B};
  PrimFunc *f = primfunc_new(a, "oob", params, 2, s);
  float x[8] = {0}, y[8];
  void *data[2] = {x, y};
  LoomError err = {0};
  assert_int_equal(tir_interpret(f, data, &err), LOOM_ERR_RUNTIME);
  assert_non_null(strstr(err.msg, "out-of-bounds load A[8]"));
  /* Store out of bounds too. */
  const Stmt *s2 = stmt_for(a, i, c64(a, 0), c64(a, 9), FOR_SERIAL, stmt_store(a, B, expr_float(a, DT_F32, 1), ii, 1));
  f = primfunc_new(a, "oob2", params, 2, s2);
  assert_int_equal(tir_interpret(f, data, &err), LOOM_ERR_RUNTIME);
  assert_non_null(strstr(err.msg, "out-of-bounds store B[8]"));
  /* Missing data pointer. */
  void *none[2] = {x, NULL};
  assert_int_equal(tir_interpret(f, none, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "\"B\""));
  arena_free(a);
}

static void test_uninit_and_unbound(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *B = buf1(a, "B", DT_F32, 4), *T = buf1(a, "T", DT_F32, 4);
  const Expr *i = expr_var(a, "i", DT_I64);
  const Expr *ii[1] = {i};
  const Expr *z[1] = {c64(a, 0)};
  /* T[0] written, T[1..3] read without a write. */
  const Stmt *w = stmt_store(a, T, expr_float(a, DT_F32, 2), z, 1);
  const Stmt *r = stmt_for(a, i, c64(a, 0), c64(a, 4), FOR_SERIAL, stmt_store(a, B, expr_load(a, T, ii, 1), ii, 1));
  const Buffer *allocs[1] = {T};
  const Buffer *params[1] = {B};
  PrimFunc *f = primfunc_new(a, "uninit", params, 1, root_of(a, stmt_seq2(a, w, r), allocs, 1));
  float y[4];
  void *data[1] = {y};
  LoomError err = {0};
  assert_int_equal(tir_interpret(f, data, &err), LOOM_ERR_RUNTIME);
  assert_non_null(strstr(err.msg, "T[1]"));
  assert_non_null(strstr(err.msg, "never written"));
  TirInterpOptions o = tir_interp_default_options();
  o.check_uninit = false;
  assert_int_equal(tir_interpret_opts(f, data, &o, &err), LOOM_OK);
  assert_true(y[0] == 2.0f && y[1] == 0.0f);
  /* A variable used outside its loop. */
  const Stmt *bad = stmt_store(a, B, expr_float(a, DT_F32, 1), ii, 1);
  f = primfunc_new(a, "unbound", params, 1, bad);
  assert_int_equal(tir_interpret(f, data, &err), LOOM_ERR_RUNTIME);
  assert_non_null(strstr(err.msg, "\"i\""));
  arena_free(a);
}

/* Block semantics: a reduction split as k = ko * 4 + ki with a predicate
 * (k < 10); init runs once per output element when k is at 0. */
static void test_block_init_predicate(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = buf1(a, "A", DT_I32, 10), *S = buf1(a, "S", DT_I32, 1);
  const Expr *ko = expr_var(a, "ko", DT_I64), *ki = expr_var(a, "ki", DT_I64);
  const Expr *vk = expr_var(a, "vk", DT_I64);
  IterVar *iters = ARENA_NEW(a, IterVar);
  *iters = (IterVar){vk, c64(a, 0), c64(a, 10), ITER_REDUCE};
  const Expr *z[1] = {c64(a, 0)}, *k1[1] = {vk};
  Block *b = ARENA_NEW(a, Block);
  b->name = "S";
  b->iters = iters;
  b->n_iters = 1;
  b->init = stmt_store(a, S, expr_int(a, DT_I32, 0), z, 1);
  b->body = stmt_store(a, S, expr_add(a, expr_load(a, S, z, 1), expr_load(a, A, k1, 1)), z, 1);
  const Expr *bind = expr_add(a, expr_mul(a, ko, c64(a, 4)), ki);
  const Expr *vals[1] = {bind};
  const Stmt *re = stmt_realize(a, vals, 1, expr_lt(a, bind, c64(a, 10)), b);
  const Stmt *nest = stmt_for(a, ko, c64(a, 0), c64(a, 3), FOR_SERIAL,
                              stmt_for(a, ki, c64(a, 0), c64(a, 4), FOR_UNROLLED, re));
  const Buffer *params[2] = {A, S};
  PrimFunc *f = primfunc_new(a, "sum", params, 2, root_of(a, nest, NULL, 0));
  int32_t x[10], s = 12345;
  for (int k = 0; k < 10; k++) x[k] = k * k - 3;
  void *data[2] = {x, &s};
  LoomError err = {0};
  assert_int_equal(tir_interpret(f, data, &err), LOOM_OK);
  int32_t want = 0;
  for (int k = 0; k < 10; k++) want += x[k];
  assert_int_equal(s, want);
  /* Without the predicate vk reaches 11: outside the iterator's domain. */
  const Stmt *re2 = stmt_realize(a, vals, 1, expr_bool(a, true), b);
  nest = stmt_for(a, ko, c64(a, 0), c64(a, 3), FOR_SERIAL, stmt_for(a, ki, c64(a, 0), c64(a, 4), FOR_SERIAL, re2));
  f = primfunc_new(a, "sum_bad", params, 2, root_of(a, nest, NULL, 0));
  assert_int_equal(tir_interpret(f, data, &err), LOOM_ERR_RUNTIME);
  assert_non_null(strstr(err.msg, "block \"S\""));
  assert_non_null(strstr(err.msg, "vk = 10"));
  arena_free(a);
}

/* storage_align pads the stride of align_axis; element count follows it. */
static void test_storage_align_layout(void **state) {
  (void)state;
  Arena *a = arena_new();
  const Expr *shape[2] = {c64(a, 3), c64(a, 5)};
  Buffer *B = buffer_new(a, "B", DT_F32, 2, shape);
  assert_int_equal(tir_buffer_elem_count(B), 15);
  B->align_axis = 0;
  B->align_factor = 8;
  B->align_offset = 1;
  /* stride of axis 0: 5 -> 9 (9 % 8 == 1); count = 2 * 9 + 4 + 1 = 23 */
  assert_int_equal(tir_buffer_elem_count(B), 23);
  /* Writing B[i, j] = i * 10 + j lands at i * 9 + j. */
  const Expr *i = expr_var(a, "i", DT_I64), *j = expr_var(a, "j", DT_I64);
  const Expr *idx[2] = {i, j};
  const Stmt *s = stmt_for(a, i, c64(a, 0), c64(a, 3), FOR_SERIAL,
                           stmt_for(a, j, c64(a, 0), c64(a, 5), FOR_SERIAL,
                                    stmt_store(a, B, expr_cast(a, DT_F32, expr_add(a, expr_mul(a, i, c64(a, 10)), j)), idx, 2)));
  const Buffer *params[1] = {B};
  PrimFunc *f = primfunc_new(a, "aligned", params, 1, s);
  float data_b[23];
  for (int k = 0; k < 23; k++) data_b[k] = -1;
  void *data[1] = {data_b};
  LoomError err = {0};
  assert_int_equal(tir_interpret(f, data, &err), LOOM_OK);
  for (int ii = 0; ii < 3; ii++)
    for (int jj = 0; jj < 5; jj++) assert_true(data_b[ii * 9 + jj] == (float)(ii * 10 + jj));
  assert_true(data_b[5] == -1.0f);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_int_semantics),
      cmocka_unit_test(test_float_semantics),
      cmocka_unit_test(test_lowered_vector),
      cmocka_unit_test(test_vector_store_reads_first),
      cmocka_unit_test(test_out_of_bounds),
      cmocka_unit_test(test_uninit_and_unbound),
      cmocka_unit_test(test_block_init_predicate),
      cmocka_unit_test(test_storage_align_layout),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
