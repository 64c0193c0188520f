/* tir_legalize_narrow: narrow types (f16, bf16, fp8, int4) are stored, not
 * computed. Each program is checked against the reference interpreter
 * before and after the pass (bit-identical outputs: one operation rounds the
 * same once in f32 as in f16) and for its shape: no arithmetic of a narrow
 * dtype is left, copies are not converted, explicit casts still round. */
#include "xform_check.h"

typedef struct Narrow {
  int narrow_ops; /* expressions of a narrow dtype other than load/cast */
  int casts;
} Narrow;

static bool narrow_expr(Visitor *v, const Expr *e) {
  Narrow *n = v->user;
  if (e->kind == EXPR_CAST) n->casts++;
  if (dtype_is_narrow(e->dtype) && e->kind != EXPR_LOAD && e->kind != EXPR_CAST) n->narrow_ops++;
  return true;
}

static Narrow scan(const PrimFunc *f) {
  Narrow n = {0, 0};
  Visitor v = {NULL, narrow_expr, &n};
  visit_stmt(&v, f->body);
  return n;
}

/* for i in 0:n { B[i] = value(A[i], C[i]) } over 1-d buffers of dtypes ta, tb. */
static PrimFunc *loop(Arena *a, DType ta, DType tb, const Expr *(*value)(Arena *, const Expr *, const Expr *)) {
  const Expr *s = xc_i(a, 37);
  Buffer *A = buffer_new(a, "A", ta, 1, &s), *C = buffer_new(a, "C", ta, 1, &s), *B = buffer_new(a, "B", tb, 1, &s);
  const Expr *i = expr_var(a, "i", DT_I64);
  const Expr *v = value(a, expr_load(a, A, &i, 1), expr_load(a, C, &i, 1));
  const Buffer *params[3] = {A, C, B};
  return primfunc_new(a, "n", params, 3, stmt_for(a, i, xc_i(a, 0), s, FOR_SERIAL, stmt_store(a, B, v, &i, 1)));
}

static const Expr *add(Arena *a, const Expr *x, const Expr *y) { return expr_add(a, x, y); }
static const Expr *copy(Arena *a, const Expr *x, const Expr *y) { (void)a, (void)y; return x; }
static const Expr *mul_const(Arena *a, const Expr *x, const Expr *y) {
  (void)y;
  return expr_mul(a, x, expr_float(a, x->dtype, 0.1)); /* 0.1 is not an f16 value: rounded first */
}
static const Expr *through_f16(Arena *a, const Expr *x, const Expr *y) {
  return expr_cast(a, DT_F32, expr_cast(a, DT_F16, expr_binary(a, EXPR_DIV, x, y)));
}
static const Expr *to_fp8(Arena *a, const Expr *x, const Expr *y) {
  return expr_cast(a, dtype_make(DT_F8E4M3FN, 8, 1), expr_sub(a, x, y));
}
static const Expr *to_i4(Arena *a, const Expr *x, const Expr *y) {
  return expr_cast(a, dtype_make(DT_INT, 4, 1), expr_add(a, expr_cast(a, DT_I32, x), expr_cast(a, DT_I32, y)));
}
static const Expr *compare(Arena *a, const Expr *x, const Expr *y) {
  return expr_select(a, expr_lt(a, x, y), x, y);
}

static void check(PrimFunc *f, int want_casts, uint64_t seed) {
  Arena *a = arena_new();
  const PrimFunc *g = tir_legalize_narrow(a, f);
  xc_dump("legalized", g);
  Narrow n = scan(g);
  assert_int_equal(n.narrow_ops, 0);
  if (want_casts >= 0) assert_int_equal(n.casts, want_casts);
  xc_check_same(f, g, seed);
  arena_free(a);
}

static void test_f16_arithmetic(void **state) {
  (void)state;
  Arena *a = arena_new();
  /* two widening loads, one rounding store */
  check(loop(a, DT_F16, DT_F16, add), 3, 1);
  check(loop(a, DT_BF16, DT_BF16, add), 3, 2);
  check(loop(a, DT_F16, DT_F16, compare), -1, 3);
  check(loop(a, DT_F16, DT_F16, mul_const), 2, 4);
  arena_free(a);
}

static void test_copies_are_not_converted(void **state) {
  (void)state;
  Arena *a = arena_new();
  check(loop(a, DT_F16, DT_F16, copy), 0, 5);
  check(loop(a, dtype_make(DT_F8E5M2, 8, 1), dtype_make(DT_F8E5M2, 8, 1), copy), 0, 6);
  /* nothing narrow: the function comes back unchanged */
  PrimFunc *f = loop(a, DT_F32, DT_F32, add);
  assert_ptr_equal(tir_legalize_narrow(a, f), f);
  arena_free(a);
}

static void test_casts_round(void **state) {
  (void)state;
  Arena *a = arena_new();
  /* f32 -> f16 -> f32 in mid-expression keeps its rounding */
  check(loop(a, DT_F32, DT_F32, through_f16), 2, 7);
  check(loop(a, DT_F32, dtype_make(DT_F8E4M3FN, 8, 1), to_fp8), 1, 8);
  check(loop(a, dtype_make(DT_INT, 4, 1), dtype_make(DT_INT, 4, 1), to_i4), -1, 9);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f16_arithmetic),
      cmocka_unit_test(test_copies_are_not_converted),
      cmocka_unit_test(test_casts_round),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
