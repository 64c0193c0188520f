/* The workload key: FNV-1a-128 against its published vectors; the same
 * computation under other function, buffer and variable names has one key;
 * other shapes, dtypes, operators or block names have other keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/workload.h"
#include "fixtures/op_funcs.h"
#include "te/te.h"
#include "tir/text.h"

static void key_of(const PrimFunc *f, char out[AUTOTUNE_WORKLOAD_KEY_LEN + 1]) {
  assert_non_null(f);
  autotune_workload_key(f, out);
}

static void test_fnv128_vectors(void **state) {
  (void)state;
  /* from the FNV reference (isthe.com/chongo/tech/comp/fnv) */
  const struct {
    const char *in;
    uint64_t hi, lo;
  } cases[] = {
      {"", 0x6c62272e07bb0142ULL, 0x62b821756295c58dULL},
      {"a", 0xd228cb696f1a8cafULL, 0x78912b704e4a8964ULL},
      {"foobar", 0x343e1662793c64bfULL, 0x6f0d3597ba446f18ULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Fnv128 h = autotune_fnv128_init();
    autotune_fnv128_update(&h, cases[i].in, strlen(cases[i].in));
    assert_true(h.hi == cases[i].hi);
    assert_true(h.lo == cases[i].lo);
  }
  /* in pieces = at once */
  Fnv128 a = autotune_fnv128_init(), b = autotune_fnv128_init();
  autotune_fnv128_update(&a, "foobar", 6);
  autotune_fnv128_update(&b, "foo", 3);
  autotune_fnv128_update(&b, "bar", 3);
  assert_true(a.hi == b.hi && a.lo == b.lo);
}

/* matmul through te, with every name but the block's chosen by the caller */
typedef struct Names {
  const char *func, *a, *b, *k, *i, *j, *block;
} Names;

typedef struct Mm {
  const TeTensor *A, *B;
  IterVar k;
} Mm;

static const Expr *mm_body(Arena *a, const Expr *const *ax, void *user) {
  Mm *m = user;
  const Expr *ia[2] = {ax[0], m->k.var}, *ib[2] = {m->k.var, ax[1]};
  return te_sum(a, expr_mul(a, te_load(a, m->A, ia), te_load(a, m->B, ib)), &m->k, 1, NULL);
}

static PrimFunc *named_matmul(Arena *a, const Names *n, DType t, int64_t M, int64_t N, int64_t K) {
  LoomError err = {0};
  TeTensor *A = te_placeholder(a, n->a, t, 2, (int64_t[]){M, K}, &err);
  TeTensor *B = te_placeholder(a, n->b, t, 2, (int64_t[]){K, N}, &err);
  Mm m = {A, B, te_reduce_axis(a, n->k, K)};
  TeTensor *C = te_compute_named(a, n->block, 2, (int64_t[]){M, N}, (const char *[]){n->i, n->j}, mm_body, &m, &err);
  assert_non_null(C);
  PrimFunc *f = te_create_primfunc(a, n->func, (TeTensor *[]){A, B, C}, 3, &err);
  assert_non_null(f);
  return f;
}

static void test_names_ignored(void **state) {
  (void)state;
  Arena *a = arena_new();
  Names n1 = {"matmul", "A", "B", "k", "i", "j", "C"};
  Names n2 = {"dense_17", "lhs", "weight", "r", "row", "col", "C"};
  PrimFunc *f1 = named_matmul(a, &n1, DT_F32, 8, 16, 32), *f2 = named_matmul(a, &n2, DT_F32, 8, 16, 32);
  /* the printed texts differ (so the names did reach the IR) ... */
  char *t1 = tir_print_func(f1), *t2 = tir_print_func(f2);
  assert_string_not_equal(t1, t2);
  assert_non_null(strstr(t2, "weight"));
  free(t1);
  free(t2);
  /* ... the keys do not */
  char k1[33], k2[33];
  key_of(f1, k1);
  key_of(f2, k2);
  assert_string_equal(k1, k2);
  assert_int_equal(strlen(k1), AUTOTUNE_WORKLOAD_KEY_LEN);
  for (const char *c = k1; *c; c++) assert_true(isdigit((unsigned char)*c) || (*c >= 'a' && *c <= 'f'));

  /* the same operator built twice */
  LoomError err = {0};
  char k3[33], k4[33];
  key_of(opfunc_matmul(a, 8, 16, 32, DT_F32, &err), k3);
  key_of(opfunc_matmul(a, 8, 16, 32, DT_F32, &err), k4);
  assert_string_equal(k3, k4);
  OpfuncConv2d p = {.N = 1, .C = 3, .H = 9, .W = 9, .K = 4, .R = 3, .S = 3, .stride = 2, .pad = 1};
  key_of(opfunc_conv2d_nchw(a, &p, &err), k3);
  key_of(opfunc_conv2d_nchw(a, &p, &err), k4);
  assert_string_equal(k3, k4);

  /* a function read back from its anonymous text: one key */
  PrimFunc *conv = opfunc_conv2d_nchw(a, &p, &err);
  char *anon = tir_print_func_anonymous(conv);
  PrimFunc *back = tir_parse_func(a, anon, &err);
  assert_non_null(back);
  assert_true(tir_func_equal(conv, back));
  key_of(back, k4);
  assert_string_equal(k3, k4);
  free(anon);
  arena_free(a);
}

/* The anonymous text: names by position, parameters first, block names
 * kept, the function called main. */
static void test_anonymous_text(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  const char *src =
      "func scale(X: f32[4], Y: f32[4]) {\n"
      "  block root() {\n"
      "    for i in 0:4 {\n"
      "      block Y(vi: spatial[0:4] = i) {\n"
      "        reads X[vi]\n"
      "        writes Y[vi]\n"
      "        Y[vi] = (X[vi] * 2.0f32)\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  const char *want =
      "func main(v: f32[4], v_1: f32[4]) {\n"
      "  block root() {\n"
      "    for v_2 in 0:4 {\n"
      "      block Y(v_3: spatial[0:4] = v_2) {\n"
      "        reads v[v_3]\n"
      "        writes v_1[v_3]\n"
      "        v_1[v_3] = (v[v_3] * 2.0f32)\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  PrimFunc *f = tir_parse_func(a, src, &err);
  if (!f) fprintf(stderr, "%s\n", err.msg);
  assert_non_null(f);
  char *anon = tir_print_func_anonymous(f);
  assert_string_equal(anon, want);
  free(anon);
  /* the plain printer is unchanged */
  char *plain = tir_print_func(f);
  assert_string_equal(plain, src);
  free(plain);
  arena_free(a);
}

static void test_structure_changes_key(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  Names n = {"matmul", "A", "B", "k", "i", "j", "C"}, renamed_block = {"matmul", "A", "B", "k", "i", "j", "D"};
  OpfuncConv2d p = {.N = 1, .C = 3, .H = 9, .W = 9, .K = 4, .R = 3, .S = 3, .stride = 2, .pad = 1};
  OpfuncConv2d p_stride = p, p_pad = p;
  p_stride.stride = 1;
  p_pad.pad = 0;
  const PrimFunc *fs[] = {
      opfunc_matmul(a, 8, 16, 32, DT_F32, &err),
      opfunc_matmul(a, 8, 16, 33, DT_F32, &err), /* another K */
      opfunc_matmul(a, 16, 8, 32, DT_F32, &err), /* M and N swapped */
      opfunc_matmul(a, 8, 16, 32, DT_I32, &err), /* another dtype */
      opfunc_batch_matmul(a, 1, 8, 16, 32, &err), /* another operator, same sizes */
      opfunc_softmax(a, 2, (int64_t[]){4, 12}, &err),
      opfunc_softmax(a, 2, (int64_t[]){12, 4}, &err),
      opfunc_layer_norm(a, 2, (int64_t[]){4, 12}, 1e-5, &err),
      opfunc_layer_norm(a, 2, (int64_t[]){4, 12}, 1e-6, &err), /* a constant */
      opfunc_conv2d_nchw(a, &p, &err),
      opfunc_conv2d_nchw(a, &p_stride, &err),
      opfunc_conv2d_nchw(a, &p_pad, &err),
      opfunc_depthwise_conv2d_nchw(a, &p, &err),
      named_matmul(a, &n, DT_F32, 8, 16, 32),
      named_matmul(a, &renamed_block, DT_F32, 8, 16, 32), /* block names are identity */
  };
  enum { N = sizeof fs / sizeof fs[0] };
  char keys[N][33];
  for (int i = 0; i < N; i++) {
    if (!fs[i]) fprintf(stderr, "function %d: %s\n", i, err.msg);
    key_of(fs[i], keys[i]);
  }
  for (int i = 0; i < N; i++)
    for (int j = i + 1; j < N; j++) {
      /* te's matmul and topi's may be the same program: only they may agree */
      if (i == 0 && j == N - 2) continue;
      if (strcmp(keys[i], keys[j]) == 0) fprintf(stderr, "functions %d and %d share key %s\n", i, j, keys[i]);
      assert_string_not_equal(keys[i], keys[j]);
    }
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fnv128_vectors),
      cmocka_unit_test(test_names_ignored),
      cmocka_unit_test(test_anonymous_text),
      cmocka_unit_test(test_structure_changes_key),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
