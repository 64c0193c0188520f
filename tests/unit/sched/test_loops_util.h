/* Shared by the loop / sample / trace schedule tests: test programs built
 * with te, and a differential check against the unscheduled program run by
 * the reference interpreter. Header-only (each test file is one program). */
#ifndef LOOM_TEST_SCHED_LOOPS_UTIL_H
#define LOOM_TEST_SCHED_LOOPS_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "te/te.h"
#include "tir/interp.h"
#include "tir/schedule/sched_internal.h"
#include "tir/text.h"

static const Expr *matmul_body(Arena *a, const Expr *const *ax, void *user) {
  void **ab = user;
  const IterVar *k = ab[2];
  const Expr *ia[2] = {ax[0], k->var}, *ib[2] = {k->var, ax[1]};
  const Expr *prod = expr_binary(a, EXPR_MUL, te_load(a, ab[0], ia), te_load(a, ab[1], ib));
  return te_sum(a, prod, k, 1, NULL);
}

/* C[i, j] = sum_k A[i, k] * B[k, j] */
static inline PrimFunc *make_matmul(Arena *a, int64_t M, int64_t N, int64_t K) {
  LoomError err = {0};
  TeTensor *A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){M, K}, &err);
  TeTensor *B = te_placeholder(a, "B", DT_F32, 2, (int64_t[]){K, N}, &err);
  IterVar *k = ARENA_NEW(a, IterVar);
  *k = te_reduce_axis(a, "k", K);
  void *user[3] = {A, B, k};
  TeTensor *C = te_compute(a, "C", 2, (int64_t[]){M, N}, matmul_body, user, &err);
  assert_non_null(C);
  PrimFunc *f = te_create_primfunc(a, "matmul", (TeTensor *[]){A, B, C}, 3, &err);
  if (!f) fail_msg("te: %s", err.msg);
  return f;
}

static const Expr *ewise_body(Arena *a, const Expr *const *ax, void *user) {
  const Expr *x = te_load(a, user, ax);
  return expr_add(a, expr_binary(a, EXPR_MUL, x, expr_float(a, DT_F32, 2.0)), expr_float(a, DT_F32, 1.0));
}

/* B[i, j] = A[i, j] * 2 + 1 */
static inline PrimFunc *make_ewise(Arena *a, int64_t M, int64_t N) {
  LoomError err = {0};
  TeTensor *A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){M, N}, &err);
  TeTensor *B = te_compute(a, "B", 2, (int64_t[]){M, N}, ewise_body, A, &err);
  assert_non_null(B);
  PrimFunc *f = te_create_primfunc(a, "ewise", (TeTensor *[]){A, B}, 2, &err);
  if (!f) fail_msg("te: %s", err.msg);
  return f;
}

/* Runs `ref` and `f` on the same random inputs (outputs pre-filled with the
 * same garbage) and requires every parameter to end up bit-identical. The
 * interpreter also checks that no block runs outside its iterator domain and
 * that nothing is accessed out of bounds. */
static inline void check_same_results(const PrimFunc *ref, const PrimFunc *f, uint64_t seed) {
  assert_int_equal(ref->n_params, f->n_params);
  int n = ref->n_params;
  float **x = calloc((size_t)n, sizeof *x), **y = calloc((size_t)n, sizeof *y);
  uint64_t r = seed * 2654435761u + 1;
  for (int p = 0; p < n; p++) {
    int64_t cnt = tir_buffer_elem_count(ref->params[p]);
    assert_true(cnt > 0);
    x[p] = malloc(sizeof(float) * (size_t)cnt);
    y[p] = malloc(sizeof(float) * (size_t)cnt);
    for (int64_t i = 0; i < cnt; i++) {
      r = r * 6364136223846793005ULL + 1442695040888963407ULL;
      x[p][i] = y[p][i] = (float)((int)(r >> 40) % 2001 - 1000) / 256.0f;
    }
  }
  LoomError err = {0};
  if (tir_interpret(ref, (void *const *)x, &err) != LOOM_OK) fail_msg("reference: %s", err.msg);
  if (tir_interpret(f, (void *const *)y, &err) != LOOM_OK) fail_msg("scheduled: %s", err.msg);
  for (int p = 0; p < n; p++) {
    int64_t cnt = tir_buffer_elem_count(ref->params[p]);
    for (int64_t i = 0; i < cnt; i++)
      if (memcmp(&x[p][i], &y[p][i], sizeof(float)) != 0)
        fail_msg("param %s element %lld: %g (reference) vs %g", ref->params[p]->name, (long long)i, x[p][i], y[p][i]);
    free(x[p]);
    free(y[p]);
  }
  free(x);
  free(y);
}

/* The program as text (printer names are canonical, so equal text means
 * structurally equal programs). Freed with the arena. */
static inline const char *func_text(Arena *a, const PrimFunc *f) {
  char *t = tir_print_func(f);
  const char *r = arena_strdup(a, t);
  free(t);
  return r;
}

static inline void assert_contains(const char *hay, const char *needle) {
  if (!hay || !strstr(hay, needle)) fail_msg("expected \"%s\" in \"%s\"", needle, hay ? hay : "(null)");
}

/* Extents of the loops around block `name`, outermost first. */
static inline int loop_extents(Schedule *s, const char *name, int64_t *out, int max) {
  const Stmt *r = stmt_find_block(sch_func(s)->body, name);
  assert_non_null(r);
  const Stmt *loops[64];
  int n = sch_path_loops(sch_func(s)->body, r, loops, 64);
  for (int i = 0; i < n && i < max; i++) assert_true(expr_as_int(loops[i]->loop.extent, &out[i]));
  return n;
}

#endif
