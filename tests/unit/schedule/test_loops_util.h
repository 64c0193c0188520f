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
#include "tir/schedule/schedule_internal.h"
#include "support/ptrmap.h"

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

/* Structural equality of two schedules' programs that start from the same
 * PrimFunc: buffers and block iterators are shared nodes, loop variables are
 * fresh in each, so loops are matched where they are bound. (Independent of
 * the text module, so these tests stand on their own.) */
typedef struct EqCtx {
  PtrMap vars; /* x loop var -> y loop var */
} EqCtx;

static bool eq_expr(EqCtx *c, const Expr *x, const Expr *y);

static bool eq_exprs(EqCtx *c, const Expr *const *x, const Expr *const *y, int n) {
  for (int i = 0; i < n; i++)
    if (!eq_expr(c, x[i], y[i])) return false;
  return true;
}

static bool eq_expr(EqCtx *c, const Expr *x, const Expr *y) {
  if (!x || !y) return x == y;
  if (x->kind != y->kind || !dtype_eq(x->dtype, y->dtype)) return false;
  switch (x->kind) {
    case EXPR_INT: return x->int_value == y->int_value;
    case EXPR_FLOAT: return memcmp(&x->float_value, &y->float_value, sizeof(double)) == 0;
    case EXPR_VAR: {
      const Expr *m = ptrmap_get(&c->vars, x);
      return (m ? m : x) == y;
    }
    case EXPR_NOT:
    case EXPR_CAST: return eq_expr(c, x->un.a, y->un.a);
    case EXPR_SELECT:
      return eq_expr(c, x->select.cond, y->select.cond) && eq_expr(c, x->select.t, y->select.t) &&
             eq_expr(c, x->select.f, y->select.f);
    case EXPR_LOAD:
      return x->load.buffer == y->load.buffer && x->load.n == y->load.n &&
             eq_exprs(c, x->load.indices, y->load.indices, x->load.n);
    case EXPR_CALL:
      return x->call.op == y->call.op && x->call.n == y->call.n && eq_exprs(c, x->call.args, y->call.args, x->call.n);
    case EXPR_RAMP:
    case EXPR_BROADCAST:
    case EXPR_REDUCE: return expr_equal(x, y);
    default: return eq_expr(c, x->bin.a, y->bin.a) && eq_expr(c, x->bin.b, y->bin.b);
  }
}

static bool eq_stmt(EqCtx *c, const Stmt *x, const Stmt *y) {
  if (!x || !y) return x == y;
  if (x->kind != y->kind) return false;
  switch (x->kind) {
    case STMT_FOR:
      if (x->loop.kind != y->loop.kind || !eq_expr(c, x->loop.min, y->loop.min) ||
          !eq_expr(c, x->loop.extent, y->loop.extent))
        return false;
      if ((x->loop.thread_tag == NULL) != (y->loop.thread_tag == NULL) ||
          (x->loop.thread_tag && strcmp(x->loop.thread_tag, y->loop.thread_tag) != 0))
        return false;
      ptrmap_put(&c->vars, x->loop.var, (void *)y->loop.var);
      return eq_stmt(c, x->loop.body, y->loop.body);
    case STMT_BLOCK_REALIZE: {
      const Block *a = x->realize.block, *b = y->realize.block;
      if (strcmp(a->name, b->name) != 0 || x->realize.n != y->realize.n ||
          !eq_exprs(c, x->realize.iter_values, y->realize.iter_values, x->realize.n) ||
          !eq_expr(c, x->realize.predicate, y->realize.predicate) || a->n_iters != b->n_iters)
        return false;
      for (int i = 0; i < a->n_iters; i++)
        if (a->iters[i].var != b->iters[i].var || a->iters[i].type != b->iters[i].type ||
            !eq_expr(c, a->iters[i].extent, b->iters[i].extent))
          return false;
      return eq_stmt(c, a->init, b->init) && eq_stmt(c, a->body, b->body);
    }
    case STMT_STORE:
      return x->store.buffer == y->store.buffer && x->store.n == y->store.n &&
             eq_expr(c, x->store.value, y->store.value) && eq_exprs(c, x->store.indices, y->store.indices, x->store.n);
    case STMT_SEQ:
      if (x->seq.n != y->seq.n) return false;
      for (int i = 0; i < x->seq.n; i++)
        if (!eq_stmt(c, x->seq.stmts[i], y->seq.stmts[i])) return false;
      return true;
    case STMT_IF:
      return eq_expr(c, x->if_.cond, y->if_.cond) && eq_stmt(c, x->if_.then_s, y->if_.then_s) &&
             eq_stmt(c, x->if_.else_s, y->if_.else_s);
    case STMT_ALLOCATE: return x->alloc.buffer == y->alloc.buffer && eq_stmt(c, x->alloc.body, y->alloc.body);
    default: return true;
  }
}

static inline bool func_equal(const PrimFunc *x, const PrimFunc *y) {
  Arena *a = arena_new();
  EqCtx c;
  ptrmap_init(&c.vars, a);
  bool r = x->n_params == y->n_params && eq_stmt(&c, x->body, y->body);
  for (int i = 0; r && i < x->n_params; i++) r = x->params[i] == y->params[i];
  arena_free(a);
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
