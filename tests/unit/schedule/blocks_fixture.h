/* Shared by the block-primitive tests: small te programs and the oracle
 * (run the scheduled and the unscheduled function with the reference
 * interpreter on the same random inputs, compare every parameter). */
#ifndef LOOM_TEST_BLOCKS_FIXTURE_H
#define LOOM_TEST_BLOCKS_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "te/te.h"
#include "tir/interp.h"
#include "tir/schedule/schedule_internal.h"
#include "tir/text.h"

/* ---- te bodies ---- */
typedef struct Args {
  TeTensor *t[4];
  double c;
  IterVar k;
} Args;

static inline const Expr *fx_i(Arena *a, int64_t v) { return expr_i64(a, v); }
static inline const Expr *fx_f(Arena *a, double v) { return expr_float(a, DT_F32, v); }

/* t0[axes] * c */
static inline const Expr *fx_scale(Arena *a, const Expr *const *ax, void *u) {
  Args *g = u;
  return expr_mul(a, te_load(a, g->t[0], ax), fx_f(a, g->c));
}
/* t0[axes] + c */
static inline const Expr *fx_addc(Arena *a, const Expr *const *ax, void *u) {
  Args *g = u;
  return expr_add(a, te_load(a, g->t[0], ax), fx_f(a, g->c));
}
/* max(t0[axes], 0) */
static inline const Expr *fx_relu(Arena *a, const Expr *const *ax, void *u) {
  Args *g = u;
  return expr_max(a, te_load(a, g->t[0], ax), fx_f(a, 0.0));
}
/* t0[i, j] + t1[j] */
static inline const Expr *fx_bias(Arena *a, const Expr *const *ax, void *u) {
  Args *g = u;
  return expr_add(a, te_load(a, g->t[0], ax), te_load(a, g->t[1], &ax[1]));
}
/* sum_k t0[i, k] * t1[k, j] */
static inline const Expr *fx_matmul(Arena *a, const Expr *const *ax, void *u) {
  Args *g = u;
  const Expr *ia[2] = {ax[0], g->k.var}, *ib[2] = {g->k.var, ax[1]};
  return te_sum(a, expr_mul(a, te_load(a, g->t[0], ia), te_load(a, g->t[1], ib)), &g->k, 1, NULL);
}
/* t0[i] + t0[i+1] + t0[i+2] */
static inline const Expr *fx_stencil(Arena *a, const Expr *const *ax, void *u) {
  Args *g = u;
  const Expr *i1[1] = {expr_add(a, ax[0], fx_i(a, 1))}, *i2[1] = {expr_add(a, ax[0], fx_i(a, 2))};
  return expr_add(a, expr_add(a, te_load(a, g->t[0], ax), te_load(a, g->t[0], i1)), te_load(a, g->t[0], i2));
}
/* pad: i in [1, n+1) ? t0[i-1] : 0 (c = n) */
static inline const Expr *fx_pad(Arena *a, const Expr *const *ax, void *u) {
  Args *g = u;
  const Expr *in = expr_and(a, expr_binary(a, EXPR_GE, ax[0], fx_i(a, 1)),
                            expr_lt(a, ax[0], fx_i(a, (int64_t)g->c + 1)));
  const Expr *idx[1] = {expr_max(a, expr_sub(a, ax[0], fx_i(a, 1)), fx_i(a, 0))};
  const Expr *clamped[1] = {expr_min(a, idx[0], fx_i(a, (int64_t)g->c - 1))};
  return expr_select(a, in, te_load(a, g->t[0], clamped), fx_f(a, 0.0));
}
/* max_k t0[i, k] / sum_k t0[i, k] */
static inline const Expr *fx_rowmax(Arena *a, const Expr *const *ax, void *u) {
  Args *g = u;
  const Expr *idx[2] = {ax[0], g->k.var};
  return te_max(a, te_load(a, g->t[0], idx), &g->k, 1, NULL);
}
static inline const Expr *fx_rowsum(Arena *a, const Expr *const *ax, void *u) {
  Args *g = u;
  const Expr *idx[2] = {ax[0], g->k.var};
  return te_sum(a, te_load(a, g->t[0], idx), &g->k, 1, NULL);
}
/* exp(t0[i, j] - t1[i]) */
static inline const Expr *fx_expsub(Arena *a, const Expr *const *ax, void *u) {
  Args *g = u;
  const Expr *d = expr_sub(a, te_load(a, g->t[0], ax), te_load(a, g->t[1], ax));
  return expr_call(a, CALL_EXP, DT_F32, &d, 1);
}
/* t0[i, j] / t1[i] */
static inline const Expr *fx_div(Arena *a, const Expr *const *ax, void *u) {
  Args *g = u;
  return expr_binary(a, EXPR_DIV, te_load(a, g->t[0], ax), te_load(a, g->t[1], ax));
}

static inline TeTensor *fx_compute(Arena *a, const char *name, int nd, const int64_t *shape, TeComputeFn fn,
                            TeTensor *t0, TeTensor *t1, double c, IterVar *k) {
  LoomError err = {0};
  Args *g = ARENA_NEW(a, Args);
  g->t[0] = t0;
  g->t[1] = t1;
  g->c = c;
  if (k) g->k = *k;
  TeTensor *t = te_compute(a, name, nd, shape, fn, g, &err);
  if (!t) fail_msg("te_compute %s: %s", name, err.msg);
  return t;
}

static inline TeTensor *fx_input(Arena *a, const char *name, int nd, const int64_t *shape) {
  LoomError err = {0};
  TeTensor *t = te_placeholder(a, name, DT_F32, nd, shape, &err);
  if (!t) fail_msg("te_placeholder %s: %s", name, err.msg);
  return t;
}

static inline PrimFunc *fx_func(Arena *a, const char *name, TeTensor **args, int n) {
  LoomError err = {0};
  PrimFunc *f = te_create_primfunc(a, name, args, n, &err);
  if (!f) fail_msg("te_create_primfunc %s: %s", name, err.msg);
  return f;
}

/* B = A * 2; C = B + 1 over [n] */
static inline PrimFunc *fx_chain(Arena *a, int64_t n) {
  int64_t sh[1] = {n};
  TeTensor *A = fx_input(a, "A", 1, sh);
  TeTensor *B = fx_compute(a, "B", 1, sh, fx_scale, A, NULL, 2.0, NULL);
  TeTensor *C = fx_compute(a, "C", 1, sh, fx_addc, B, NULL, 1.0, NULL);
  TeTensor *args[2] = {A, C};
  return fx_func(a, "chain", args, 2);
}

/* C = A @ W (m x k x n); D = C + bias; E = relu(D) */
static inline PrimFunc *fx_matmul_bias_relu(Arena *a, int64_t m, int64_t kk, int64_t n) {
  int64_t sa[2] = {m, kk}, sw[2] = {kk, n}, sb[1] = {n}, sc[2] = {m, n};
  TeTensor *A = fx_input(a, "A", 2, sa), *W = fx_input(a, "W", 2, sw), *bias = fx_input(a, "bias", 1, sb);
  IterVar k = te_reduce_axis(a, "k", kk);
  TeTensor *C = fx_compute(a, "C", 2, sc, fx_matmul, A, W, 0, &k);
  TeTensor *D = fx_compute(a, "D", 2, sc, fx_bias, C, bias, 0, NULL);
  TeTensor *E = fx_compute(a, "E", 2, sc, fx_relu, D, NULL, 0, NULL);
  TeTensor *args[4] = {A, W, bias, E};
  return fx_func(a, "mm_bias_relu", args, 4);
}

/* P = pad(A) (n+2), Q = P * 3, B[i] = Q[i] + Q[i+1] + Q[i+2] over [n] */
static inline PrimFunc *fx_stencil_prog(Arena *a, int64_t n) {
  int64_t sn[1] = {n}, sp[1] = {n + 2};
  TeTensor *A = fx_input(a, "A", 1, sn);
  TeTensor *P = fx_compute(a, "P", 1, sp, fx_pad, A, NULL, (double)n, NULL);
  TeTensor *Q = fx_compute(a, "Q", 1, sp, fx_scale, P, NULL, 3.0, NULL);
  TeTensor *B = fx_compute(a, "B", 1, sn, fx_stencil, Q, NULL, 0, NULL);
  TeTensor *args[2] = {A, B};
  return fx_func(a, "stencil", args, 2);
}

/* softmax over rows of A (m x n): M = rowmax, E = exp(A - M), S = rowsum(E), O = E / S */
static inline PrimFunc *fx_softmax(Arena *a, int64_t m, int64_t n) {
  int64_t sa[2] = {m, n}, sr[1] = {m};
  TeTensor *A = fx_input(a, "A", 2, sa);
  IterVar k1 = te_reduce_axis(a, "k", n), k2 = te_reduce_axis(a, "k", n);
  TeTensor *M = fx_compute(a, "M", 1, sr, fx_rowmax, A, NULL, 0, &k1);
  TeTensor *E = fx_compute(a, "E", 2, sa, fx_expsub, A, M, 0, NULL);
  TeTensor *S = fx_compute(a, "S", 1, sr, fx_rowsum, E, NULL, 0, &k2);
  TeTensor *O = fx_compute(a, "O", 2, sa, fx_div, E, S, 0, NULL);
  TeTensor *args[2] = {A, O};
  return fx_func(a, "softmax", args, 2);
}

/* ---- hand-built programs (what te cannot express) ---- */

/* for i in 0:n { block name(vi = i) { dst[vi] = src[vi + off] * scale } } */
static inline const Stmt *fx_elem(Arena *a, const char *name, const Buffer *dst, const Buffer *src, int64_t off,
                                  int64_t n, double scale) {
  const Expr *i = expr_var(a, "i", DT_I64), *vi = expr_var(a, "vi", DT_I64);
  IterVar *it = ARENA_NEW(a, IterVar);
  it->var = vi;
  it->min = expr_i64(a, 0);
  it->extent = expr_i64(a, n);
  it->type = ITER_SPATIAL;
  const Expr *ridx[1] = {off ? expr_add(a, vi, expr_i64(a, off)) : vi}, *widx[1] = {vi};
  Block *b = ARENA_NEW(a, Block);
  b->name = name;
  b->iters = it;
  b->n_iters = 1;
  BufferRegion *r = ARENA_NEW(a, BufferRegion), *w = ARENA_NEW(a, BufferRegion);
  *r = region_point(a, src, ridx);
  *w = region_point(a, dst, widx);
  b->reads = r;
  b->n_reads = 1;
  b->writes = w;
  b->n_writes = 1;
  b->body = stmt_store(a, dst, expr_mul(a, expr_load(a, src, ridx, 1), fx_f(a, scale)), widx, 1);
  return stmt_for(a, i, expr_i64(a, 0), expr_i64(a, n), FOR_SERIAL, stmt_realize(a, &i, 1, NULL, b));
}

/* A function of the given nests; params first, the rest allocated by the root. */
static inline PrimFunc *fx_hand_func(Arena *a, const Buffer *const *params, int np, const Buffer *const *allocs,
                                     int na, const Stmt *const *nests, int nn) {
  Block *root = ARENA_NEW(a, Block);
  root->name = "root";
  root->alloc_buffers = na ? arena_memdup(a, allocs, sizeof(*allocs) * (size_t)na) : NULL;
  root->n_alloc = na;
  root->body = stmt_seq(a, nests, nn);
  return primfunc_new(a, "hand", params, np, stmt_realize(a, NULL, 0, NULL, root));
}

static inline Buffer *fx_buf(Arena *a, const char *name, int64_t n) {
  const Expr *sh[1] = {expr_i64(a, n)};
  return buffer_new(a, name, DT_F32, 1, sh);
}

/* ---- oracle ---- */

static inline uint64_t fx_rng(uint64_t *st) {
  uint64_t z = (*st += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Runs both functions on the same random data (every parameter, outputs
 * included) and asserts equal results. */
static inline void fx_check_same(const PrimFunc *ref, const PrimFunc *got, uint64_t seed) {
  assert_int_equal(ref->n_params, got->n_params);
  int n = ref->n_params;
  float **x = calloc((size_t)n, sizeof *x), **y = calloc((size_t)n, sizeof *y);
  int64_t *cnt = calloc((size_t)n, sizeof *cnt);
  for (int i = 0; i < n; i++) {
    cnt[i] = tir_buffer_elem_count(ref->params[i]);
    assert_true(cnt[i] > 0);
    x[i] = malloc(sizeof(float) * (size_t)cnt[i]);
    y[i] = malloc(sizeof(float) * (size_t)cnt[i]);
    for (int64_t e = 0; e < cnt[i]; e++) x[i][e] = y[i][e] = (float)((double)(fx_rng(&seed) % 2001) / 1000.0 - 1.0);
  }
  LoomError err = {0};
  loom_status st = tir_interpret(ref, (void *const *)x, &err);
  if (st != LOOM_OK) fail_msg("reference program failed: %s", err.msg);
  st = tir_interpret(got, (void *const *)y, &err);
  if (st != LOOM_OK) fail_msg("scheduled program failed: %s", err.msg);
  for (int i = 0; i < n; i++)
    for (int64_t e = 0; e < cnt[i]; e++)
      if (fabsf(x[i][e] - y[i][e]) > 1e-5f * (1.0f + fabsf(x[i][e])))
        fail_msg("param %s[%lld]: expected %g, got %g", ref->params[i]->name, (long long)e, x[i][e], y[i][e]);
  for (int i = 0; i < n; i++) {
    free(x[i]);
    free(y[i]);
  }
  free(x);
  free(y);
  free(cnt);
}

/* Checks the scheduled program is well formed and computes the same as
 * the original. */
static inline void fx_check(Schedule *s) {
  LoomError err = {0};
  if (tir_verify(sch_func(s), &err) != LOOM_OK) {
    char *txt = tir_print_func(sch_func(s));
    fprintf(stderr, "%s\n", txt);
    free(txt);
    fail_msg("verify: %s", err.msg);
  }
  fx_check_same(sch_original(s), sch_func(s), 42);
  fx_check_same(sch_original(s), sch_func(s), 7);
}

/* A refused primitive: error message mentions `needle`, program unchanged. */
#define FX_REFUSED(s, call, needle)                                                        \
  do {                                                                                     \
    const PrimFunc *before_ = sch_func(s);                                                 \
    int tlen_ = trace_length(sch_trace(s));                                                \
    assert_true((call) != 0);                                                              \
    if (!strstr(sch_error(s), (needle)))                                                   \
      fail_msg("error \"%s\" does not mention \"%s\"", sch_error(s), (needle));           \
    assert_ptr_equal(before_, sch_func(s));                                                \
    assert_int_equal(tlen_, trace_length(sch_trace(s)));                                   \
  } while (0)

static inline const Block *fx_block(Schedule *s, const char *name) {
  const Stmt *r = stmt_find_block(sch_func(s)->body, name);
  assert_non_null(r);
  return r->realize.block;
}

/* Number of loops enclosing block `name`. */
static inline int fx_depth(Schedule *s, const char *name) {
  const Stmt *r = stmt_find_block(sch_func(s)->body, name);
  assert_non_null(r);
  const Stmt *loops[64];
  return sch_path_loops(sch_func(s)->body, r, loops, 64);
}

/* The loop (For) at depth d above block `name`. */
static inline const Stmt *fx_loop(Schedule *s, const char *name, int d) {
  const Stmt *r = stmt_find_block(sch_func(s)->body, name);
  assert_non_null(r);
  const Stmt *loops[64];
  int n = sch_path_loops(sch_func(s)->body, r, loops, 64);
  assert_true(d < n);
  return loops[d];
}

static inline SchRV fx_loop_rv(Schedule *s, const char *block, int d) {
  SchRV b = sch_get_block(s, block);
  assert_true(b >= 0);
  SchRV loops[16];
  int n = sch_get_loops(s, b, loops, 16);
  assert_true(d < n);
  return loops[d];
}

#endif
