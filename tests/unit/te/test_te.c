/* te lowering: the structure of the PrimFunc (loops, blocks, iterators,
 * regions, init, allocations), its results under the interpreter, and the
 * errors for malformed definitions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "te/te.h"
#include "tir/interp.h"

typedef struct Mm {
  const TeTensor *A, *B;
  IterVar k;
} Mm;

static const Expr *mm_body(Arena *a, const Expr *const *ax, void *user) {
  Mm *m = user;
  const Expr *ia[2] = {ax[0], m->k.var}, *ib[2] = {m->k.var, ax[1]};
  return te_sum(a, expr_mul(a, te_load(a, m->A, ia), te_load(a, m->B, ib)), &m->k, 1, NULL);
}

static PrimFunc *build_matmul(Arena *a, DType t, int64_t M, int64_t N, int64_t K, LoomError *err) {
  TeTensor *A = te_placeholder(a, "A", t, 2, (int64_t[]){M, K}, err);
  TeTensor *B = te_placeholder(a, "B", t, 2, (int64_t[]){K, N}, err);
  Mm m = {A, B, te_reduce_axis(a, "k", K)};
  TeTensor *C = te_compute(a, "C", 2, (int64_t[]){M, N}, mm_body, &m, err);
  assert_non_null(C);
  return te_create_primfunc(a, "matmul", (TeTensor *[]){A, B, C}, 3, err);
}

static void assert_const(const Expr *e, int64_t v) {
  int64_t x;
  assert_true(expr_as_int(e, &x));
  assert_int_equal(x, v);
}

static void test_matmul_structure(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  PrimFunc *f = build_matmul(a, DT_F32, 4, 5, 6, &err);
  assert_non_null(f);
  assert_int_equal(f->n_params, 3);
  assert_string_equal(f->params[2]->name, "C");
  const Block *root = primfunc_root(f);
  assert_non_null(root);
  assert_string_equal(root->name, "root");
  assert_int_equal(root->n_iters, 0);
  assert_int_equal(root->n_alloc, 0);
  /* for i, for j, for k, realize C */
  const Stmt *s = root->body;
  const char *names[3] = {"i", "j", "k"};
  const int64_t ext[3] = {4, 5, 6};
  const Expr *loop_vars[3];
  for (int d = 0; d < 3; d++) {
    assert_int_equal(s->kind, STMT_FOR);
    assert_string_equal(s->loop.var->var.name, names[d]);
    assert_const(s->loop.min, 0);
    assert_const(s->loop.extent, ext[d]);
    loop_vars[d] = s->loop.var;
    s = s->loop.body;
  }
  assert_int_equal(s->kind, STMT_BLOCK_REALIZE);
  assert_true(expr_is_int(s->realize.predicate, 1));
  const Block *b = s->realize.block;
  assert_string_equal(b->name, "C");
  assert_int_equal(b->n_iters, 3);
  const IterType types[3] = {ITER_SPATIAL, ITER_SPATIAL, ITER_REDUCE};
  for (int d = 0; d < 3; d++) {
    assert_ptr_equal(s->realize.iter_values[d], loop_vars[d]);
    assert_ptr_not_equal(b->iters[d].var, loop_vars[d]);
    assert_int_equal(b->iters[d].type, types[d]);
    assert_const(b->iters[d].extent, ext[d]);
  }
  assert_string_equal(b->iters[0].var->var.name, "vi");
  /* reads A[vi, vk], B[vk, vj] (points); writes C[vi, vj] */
  assert_int_equal(b->n_reads, 2);
  assert_string_equal(b->reads[0].buffer->name, "A");
  assert_ptr_equal(b->reads[0].min[0], b->iters[0].var);
  assert_ptr_equal(b->reads[0].min[1], b->iters[2].var);
  assert_const(b->reads[0].extent[1], 1);
  assert_string_equal(b->reads[1].buffer->name, "B");
  assert_ptr_equal(b->reads[1].min[0], b->iters[2].var);
  assert_int_equal(b->n_writes, 1);
  assert_ptr_equal(b->writes[0].buffer, f->params[2]);
  /* init C[vi, vj] = 0; body C[vi, vj] = C[vi, vj] + A * B */
  assert_non_null(b->init);
  assert_int_equal(b->init->kind, STMT_STORE);
  assert_int_equal(b->init->store.value->kind, EXPR_FLOAT);
  assert_int_equal(b->body->kind, STMT_STORE);
  assert_string_equal(expr_to_string(a, b->body->store.value), "(C[vi, vj] + (A[vi, vk] * B[vk, vj]))");
  arena_free(a);
}

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

static void test_matmul_i32_runs(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  enum { M = 3, N = 4, K = 5 };
  PrimFunc *f = build_matmul(a, DT_I32, M, N, K, &err);
  assert_non_null(f);
  int32_t A[M * K], B[K * N], C[M * N], R[M * N];
  uint32_t seed = 7;
  for (int i = 0; i < M * K; i++) A[i] = (int32_t)(lcg(&seed) % 201) - 100;
  for (int i = 0; i < K * N; i++) B[i] = (int32_t)(lcg(&seed) % 201) - 100;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      R[i * N + j] = 0;
      for (int k = 0; k < K; k++) R[i * N + j] += A[i * K + k] * B[k * N + j];
    }
  memset(C, 0x5a, sizeof C); /* init must overwrite whatever is there */
  void *data[3] = {A, B, C};
  assert_int_equal(tir_interpret(f, data, &err), LOOM_OK);
  assert_memory_equal(C, R, sizeof R);
  arena_free(a);
}

/* Two stages: T = A * 2 (intermediate), B[i] = T[i] + T[i + 2] + A[idx[i]] */
typedef struct Two {
  const TeTensor *A, *T, *idx;
} Two;

static const Expr *double_body(Arena *a, const Expr *const *ax, void *user) {
  Two *t = user;
  return expr_mul(a, te_load(a, t->A, ax), expr_int(a, DT_I32, 2));
}

static const Expr *window_body(Arena *a, const Expr *const *ax, void *user) {
  Two *t = user;
  const Expr *i2[1] = {expr_add(a, ax[0], expr_i64(a, 2))};
  const Expr *gi[1] = {expr_cast(a, DT_I64, te_load(a, t->idx, ax))};
  return expr_add(a, expr_add(a, te_load(a, t->T, ax), te_load(a, t->T, i2)), te_load(a, t->A, gi));
}

static void test_two_stages_regions(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *A = te_placeholder(a, "A", DT_I32, 1, (int64_t[]){8}, &err);
  TeTensor *idx = te_placeholder(a, "idx", DT_I32, 1, (int64_t[]){6}, &err);
  Two t = {A, NULL, idx};
  TeTensor *T = te_compute(a, "T", 1, (int64_t[]){8}, double_body, &t, &err);
  t.T = T;
  TeTensor *B = te_compute(a, "B", 1, (int64_t[]){6}, window_body, &t, &err);
  assert_non_null(B);
  PrimFunc *f = te_create_primfunc(a, "two", (TeTensor *[]){A, idx, B}, 3, &err);
  assert_non_null(f);
  const Block *root = primfunc_root(f);
  assert_int_equal(root->n_alloc, 1);
  assert_ptr_equal(root->alloc_buffers[0], T->buffer);
  assert_int_equal(root->body->kind, STMT_SEQ);
  assert_int_equal(root->body->seq.n, 2);
  const Block *bb = stmt_find_block(f->body, "B")->realize.block;
  assert_null(bb->init);
  /* T read at [vi, vi + 3): the two loads differ by a constant. */
  assert_int_equal(bb->n_reads, 3);
  assert_string_equal(bb->reads[0].buffer->name, "T");
  assert_ptr_equal(bb->reads[0].min[0], bb->iters[0].var);
  assert_const(bb->reads[0].extent[0], 3);
  /* A read through a data-dependent index: all of A; idx read at a point. */
  assert_string_equal(bb->reads[1].buffer->name, "A");
  assert_const(bb->reads[1].min[0], 0);
  assert_const(bb->reads[1].extent[0], 8);
  assert_string_equal(bb->reads[2].buffer->name, "idx");
  assert_ptr_equal(bb->reads[2].min[0], bb->iters[0].var);
  assert_const(bb->reads[2].extent[0], 1);

  int32_t a_data[8] = {1, -2, 3, 4, -5, 6, 7, 8}, idx_data[6] = {7, 0, 3, 3, 1, 5}, out[6];
  void *data[3] = {a_data, idx_data, out};
  assert_int_equal(tir_interpret(f, data, &err), LOOM_OK);
  for (int i = 0; i < 6; i++) assert_int_equal(out[i], 2 * a_data[i] + 2 * a_data[i + 2] + a_data[idx_data[i]]);
  /* A bad gather index is caught by the interpreter, naming the buffer. */
  idx_data[4] = 8;
  assert_int_equal(tir_interpret(f, data, &err), LOOM_ERR_RUNTIME);
  assert_non_null(strstr(err.msg, "A[8]"));
  arena_free(a);
}

/* A conditional reduction: S[i] = sum over k < i of A[i, k] (lower triangle). */
typedef struct Tri {
  const TeTensor *A;
  IterVar k;
} Tri;

static const Expr *tri_body(Arena *a, const Expr *const *ax, void *user) {
  Tri *t = user;
  const Expr *idx[2] = {ax[0], t->k.var};
  return te_sum(a, te_load(a, t->A, idx), &t->k, 1, expr_lt(a, t->k.var, ax[0]));
}

static void test_reduce_cond(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  TeTensor *A = te_placeholder(a, "A", DT_F64, 2, (int64_t[]){4, 4}, &err);
  Tri t = {A, te_reduce_axis(a, "k", 4)};
  TeTensor *S = te_compute(a, "S", 1, (int64_t[]){4}, tri_body, &t, &err);
  PrimFunc *f = te_create_primfunc(a, "tri", (TeTensor *[]){A, S}, 2, &err);
  assert_non_null(f);
  double ad[16], sd[4];
  for (int i = 0; i < 16; i++) ad[i] = i * 0.5 - 3;
  void *data[2] = {ad, sd};
  assert_int_equal(tir_interpret(f, data, &err), LOOM_OK);
  for (int i = 0; i < 4; i++) {
    double want = 0;
    for (int k = 0; k < i; k++) want += ad[i * 4 + k];
    assert_true(sd[i] == want);
  }
  arena_free(a);
}

static const Expr *mixed_body(Arena *a, const Expr *const *ax, void *user) {
  const TeTensor *const *in = user;
  return expr_add(a, te_load(a, in[0], ax), te_load(a, in[1], ax));
}

static const Expr *nested_body(Arena *a, const Expr *const *ax, void *user) {
  Tri *t = user;
  const Expr *idx[2] = {ax[0], t->k.var};
  const Expr *r = te_sum(a, te_load(a, t->A, idx), &t->k, 1, NULL);
  return expr_add(a, r, expr_float(a, DT_F32, 1.0));
}

static void test_errors(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  /* bad shape */
  assert_null(te_placeholder(a, "X", DT_F32, 2, (int64_t[]){3, 0}, &err));
  assert_int_equal(err.status, LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "\"X\""));
  assert_null(te_compute(a, "Y", 1, (int64_t[]){-1}, mixed_body, NULL, &err));
  assert_non_null(strstr(err.msg, "\"Y\""));
  /* dtype mismatch in a binary op: the message names the compute */
  TeTensor *F = te_placeholder(a, "F", DT_F32, 1, (int64_t[]){4}, &err);
  TeTensor *I = te_placeholder(a, "I", DT_I32, 1, (int64_t[]){4}, &err);
  const TeTensor *fi[2] = {F, I};
  TeTensor *M = te_compute(a, "Mixed", 1, (int64_t[]){4}, mixed_body, (void *)fi, &err);
  assert_non_null(M);
  assert_null(te_create_primfunc(a, "bad", (TeTensor *[]){F, I, M}, 3, &err));
  assert_non_null(strstr(err.msg, "\"Mixed\""));
  assert_non_null(strstr(err.msg, "f32"));
  /* a placeholder reached but not listed */
  TeTensor *G = te_placeholder(a, "G", DT_F32, 1, (int64_t[]){4}, &err);
  const TeTensor *fg[2] = {F, G};
  TeTensor *S = te_compute(a, "Sum", 1, (int64_t[]){4}, mixed_body, (void *)fg, &err);
  assert_null(te_create_primfunc(a, "missing", (TeTensor *[]){F, S}, 2, &err));
  assert_non_null(strstr(err.msg, "placeholder \"G\""));
  /* duplicate tensor names */
  TeTensor *F2 = te_placeholder(a, "F", DT_F32, 1, (int64_t[]){4}, &err);
  const TeTensor *ff[2] = {F, F2};
  TeTensor *D = te_compute(a, "D", 1, (int64_t[]){4}, mixed_body, (void *)ff, &err);
  assert_null(te_create_primfunc(a, "dup", (TeTensor *[]){F, F2, D}, 3, &err));
  assert_non_null(strstr(err.msg, "\"F\""));
  /* a reduction below the top of the body */
  TeTensor *A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){4, 4}, &err);
  Tri t = {A, te_reduce_axis(a, "k", 4)};
  TeTensor *N = te_compute(a, "Nested", 1, (int64_t[]){4}, nested_body, &t, &err);
  assert_null(te_create_primfunc(a, "nested", (TeTensor *[]){A, N}, 2, &err));
  assert_non_null(strstr(err.msg, "\"Nested\""));
  assert_non_null(strstr(err.msg, "top"));
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_structure),
      cmocka_unit_test(test_matmul_i32_runs),
      cmocka_unit_test(test_two_stages_regions),
      cmocka_unit_test(test_reduce_cond),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
