/* Shared helpers for the lowering-pass tests: semantic comparison through
 * the reference interpreter, structure counting, and small IR builders.
 * Included by the C tests in tests/unit/transform/ and by tir_file_runner.c
 * (static functions only). */
#ifndef LOOM_TESTS_TRANSFORM_CHECK_H
#define LOOM_TESTS_TRANSFORM_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/ptrmap.h"
#include "support/strbuf.h"
#include "te/te.h"
#include "tir/interp.h"
#include "tir/text.h"
#include "tir/transform/transform.h"

static inline void xc_print(const char *title, const PrimFunc *f);

static inline uint64_t xc_rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static inline void xc_fill(void *data, DType t, int64_t n, uint64_t *seed) {
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = xc_rng(seed);
    if (dtype_is_narrow(t)) /* f16, bf16, fp8, int4...: finite values in [-8, 8] rounded to t */
      dtype_narrow_store(t, (char *)data + i * dtype_bytes(t), (double)(r % 2001) / 125.0 - 8.0);
    else if (dtype_is_float(t) && t.bits == 32) ((float *)data)[i] = (float)((double)(r % 2001) / 1000.0 - 1.0);
    else if (dtype_is_float(t) && t.bits == 64) ((double *)data)[i] = (double)(r % 2001) / 1000.0 - 1.0;
    else if (t.bits == 64) ((int64_t *)data)[i] = (int64_t)(r % 201) - 100;
    else if (t.bits == 32) ((int32_t *)data)[i] = (int32_t)(r % 201) - 100;
    else if (t.bits == 8) ((int8_t *)data)[i] = (int8_t)(r % 201 - 100);
    else if (dtype_is_bool(t)) ((uint8_t *)data)[i] = (uint8_t)(r & 1);
    else fail_msg("xc_fill: unsupported dtype");
  }
}

/* Runs before and after on the same random inputs (all parameters are
 * filled, outputs included, so a missed write shows) and requires both to
 * succeed and leave every parameter bit-identical. */
static inline void xc_check_same(const PrimFunc *before, const PrimFunc *after, uint64_t seed) {
  assert_int_equal(before->n_params, after->n_params);
  int n = before->n_params;
  void **xa = calloc((size_t)n, sizeof(void *)), **xb = calloc((size_t)n, sizeof(void *));
  int64_t *sizes = calloc((size_t)n, sizeof(int64_t));
  for (int i = 0; i < n; i++) {
    int64_t cnt = tir_buffer_elem_count(before->params[i]);
    assert_true(cnt > 0);
    assert_int_equal(cnt, tir_buffer_elem_count(after->params[i]));
    size_t bytes = (size_t)cnt * (size_t)dtype_bytes(before->params[i]->dtype);
    sizes[i] = (int64_t)bytes;
    xa[i] = malloc(bytes);
    xb[i] = malloc(bytes);
    xc_fill(xa[i], before->params[i]->dtype, cnt, &seed);
    memcpy(xb[i], xa[i], bytes);
  }
  LoomError err = {0};
  loom_status st = tir_interpret(before, xa, &err);
  if (st != LOOM_OK) fail_msg("interpreting the input failed: %s", err.msg);
  st = tir_interpret(after, xb, &err);
  if (st != LOOM_OK) {
    xc_print("output", after);
    fail_msg("interpreting the output failed: %s", err.msg);
  }
  for (int i = 0; i < n; i++) {
    if (memcmp(xa[i], xb[i], (size_t)sizes[i]) != 0) {
      xc_print("output", after);
      fail_msg("parameter %s differs after the pass", before->params[i]->name);
    }
    free(xa[i]);
    free(xb[i]);
  }
  free(xa);
  free(xb);
  free(sizes);
}

/* ---- structure ---- */

typedef struct XcCount {
  int stmt[STMT_KIND_COUNT];
  int for_kind[FOR_THREAD_BINDING + 1];
  int ramps, broadcasts, vector_stores;
  int non_pow2_vectors; /* C codegen only has power-of-two vector types */
} XcCount;

static inline bool xc_count_stmt(Visitor *v, const Stmt *s) {
  XcCount *c = v->user;
  c->stmt[s->kind]++;
  if (s->kind == STMT_FOR) c->for_kind[s->loop.kind]++;
  if (s->kind == STMT_STORE && s->store.value->dtype.lanes > 1) c->vector_stores++;
  return true;
}

static inline bool xc_count_expr(Visitor *v, const Expr *e) {
  XcCount *c = v->user;
  if (e->kind == EXPR_RAMP) c->ramps++;
  if (e->kind == EXPR_BROADCAST) c->broadcasts++;
  if (e->dtype.lanes > 1 && (e->dtype.lanes & (e->dtype.lanes - 1))) c->non_pow2_vectors++;
  return true;
}

static inline XcCount xc_count(const PrimFunc *f) {
  XcCount c;
  memset(&c, 0, sizeof c);
  Visitor v = {xc_count_stmt, xc_count_expr, &c};
  visit_stmt(&v, f->body);
  return c;
}

static inline void xc_print(const char *title, const PrimFunc *f) {
  char *text = tir_print_func(f);
  fprintf(stderr, "---- %s\n%s\n", title, text);
  free(text);
}

static inline void xc_dump(const char *title, const PrimFunc *f) {
  if (getenv("TRANSFORM_DUMP")) xc_print(title, f);
}

/* ---- builders ---- */

static inline const Expr *xc_i(Arena *a, int64_t v) { return expr_i64(a, v); }

/* A block with the given iterators, one write region (whole buffer) and
 * body; reads are left empty (the passes do not look at regions). */
static inline Block *xc_block(Arena *a, const char *name, const IterVar *iters, int n, const Buffer *out,
                       const Stmt *body) {
  Block *b = ARENA_NEW(a, Block);
  b->name = name;
  b->iters = arena_memdup(a, iters, sizeof(IterVar) * (size_t)(n ? n : 1));
  b->n_iters = n;
  BufferRegion *w = ARENA_NEW(a, BufferRegion);
  if (out) *w = region_full(a, out);
  b->writes = w;
  b->n_writes = out ? 1 : 0;
  b->body = body;
  return b;
}

static inline const Stmt *xc_root(Arena *a, const Stmt *body, const Buffer *const *allocs, int n_alloc) {
  Block *root = ARENA_NEW(a, Block);
  root->name = "root";
  root->body = body;
  root->alloc_buffers = allocs;
  root->n_alloc = n_alloc;
  return stmt_realize(a, NULL, 0, expr_bool(a, true), root);
}

static inline IterVar xc_iter(Arena *a, const char *name, int64_t extent, IterType t) {
  IterVar v = {expr_var(a, name, DT_I64), expr_i64(a, 0), expr_i64(a, extent), t};
  return v;
}

static inline Buffer *xc_buf1(Arena *a, const char *name, int64_t n) {
  const Expr *s = expr_i64(a, n);
  return buffer_new(a, name, DT_F32, 1, &s);
}

static inline Buffer *xc_buf2(Arena *a, const char *name, int64_t n, int64_t m) {
  const Expr *s[2] = {expr_i64(a, n), expr_i64(a, m)};
  return buffer_new(a, name, DT_F32, 2, s);
}


/* f(A: f32[n], B: f32[n]): B[i] = A[i] * 2 + 1 split by `factor` (n need not
 * divide): loops io, ii (ii of kind `inner`), predicate io*factor+ii < n. */
static inline PrimFunc *xc_split_elementwise(Arena *a, int64_t n, int64_t factor, ForKind inner) {
  Buffer *A = xc_buf1(a, "A", n), *B = xc_buf1(a, "B", n);
  IterVar vi = xc_iter(a, "vi", n, ITER_SPATIAL);
  const Expr *io = expr_var(a, "io", DT_I64), *ii = expr_var(a, "ii", DT_I64);
  const Expr *bind = expr_add(a, expr_mul(a, io, xc_i(a, factor)), ii);
  const Expr *val = expr_add(a, expr_mul(a, expr_load(a, A, &vi.var, 1), expr_float(a, DT_F32, 2.0)),
                             expr_float(a, DT_F32, 1.0));
  Block *blk = xc_block(a, "B", &vi, 1, B, stmt_store(a, B, val, &vi.var, 1));
  const Stmt *r = stmt_realize(a, &bind, 1, expr_lt(a, bind, xc_i(a, n)), blk);
  const Stmt *loops = stmt_for(a, io, xc_i(a, 0), xc_i(a, (n + factor - 1) / factor), FOR_SERIAL,
                               stmt_for(a, ii, xc_i(a, 0), xc_i(a, factor), inner, r));
  const Buffer *params[2] = {A, B};
  return primfunc_new(a, "split_ew", params, 2, xc_root(a, loops, NULL, 0));
}

typedef struct XcMatmul {
  TeTensor *A, *B;
  IterVar k;
} XcMatmul;

static inline const Expr *xc_matmul_body(Arena *a, const Expr *const *ax, void *user) {
  XcMatmul *m = user;
  const Expr *ia[2] = {ax[0], m->k.var}, *ib[2] = {m->k.var, ax[1]};
  return te_sum(a, expr_mul(a, te_load(a, m->A, ia), te_load(a, m->B, ib)), &m->k, 1, NULL);
}

/* te matmul C[m, n] = sum_k A[m, k] * B[k, n] (blocks with init). */
static inline PrimFunc *xc_te_matmul(Arena *a, int64_t M, int64_t N, int64_t K) {
  LoomError err = {0};
  XcMatmul mm;
  mm.A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){M, K}, &err);
  mm.B = te_placeholder(a, "B", DT_F32, 2, (int64_t[]){K, N}, &err);
  mm.k = te_reduce_axis(a, "k", K);
  TeTensor *C = te_compute(a, "C", 2, (int64_t[]){M, N}, xc_matmul_body, &mm, &err);
  assert_non_null(C);
  PrimFunc *f = te_create_primfunc(a, "matmul", (TeTensor *[]){mm.A, mm.B, C}, 3, &err);
  if (!f) fail_msg("te: %s", err.msg);
  return f;
}

#endif
