/* Hand-built loop IR shared by the tir tests (header-only: each test file
 * is its own executable). */
#ifndef LOOM_TESTS_TIR_FIXTURES_H
#define LOOM_TESTS_TIR_FIXTURES_H

#include "tir/stmt.h"

/* C[i, j] += A[i, k] * B[k, j] over 128 x 32 x 64, as te would build it:
 * a root block around three loops and one reduction block "C". */
static inline PrimFunc *fixture_matmul(Arena *a) {
  const Expr *s128 = expr_i64(a, 128), *s64 = expr_i64(a, 64), *s32 = expr_i64(a, 32);
  const Expr *sa[2] = {s128, s64}, *sb[2] = {s64, s32}, *sc[2] = {s128, s32};
  Buffer *A = buffer_new(a, "A", DT_F32, 2, sa);
  Buffer *B = buffer_new(a, "B", DT_F32, 2, sb);
  Buffer *C = buffer_new(a, "C", DT_F32, 2, sc);
  const Expr *i = expr_var(a, "i", DT_I64), *j = expr_var(a, "j", DT_I64), *k = expr_var(a, "k", DT_I64);
  const Expr *vi = expr_var(a, "vi", DT_I64), *vj = expr_var(a, "vj", DT_I64), *vk = expr_var(a, "vk", DT_I64);
  const Expr *zero = expr_i64(a, 0);
  IterVar iters[3] = {{vi, zero, s128, ITER_SPATIAL}, {vj, zero, s32, ITER_SPATIAL}, {vk, zero, s64, ITER_REDUCE}};
  const Expr *ia[2] = {vi, vk}, *ib[2] = {vk, vj}, *ic[2] = {vi, vj};
  BufferRegion reads[2] = {region_point(a, A, ia), region_point(a, B, ib)};
  BufferRegion writes[1] = {region_point(a, C, ic)};
  Block *blk = ARENA_NEW(a, Block);
  blk->name = "C";
  blk->iters = arena_memdup(a, iters, sizeof iters);
  blk->n_iters = 3;
  blk->reads = arena_memdup(a, reads, sizeof reads);
  blk->n_reads = 2;
  blk->writes = arena_memdup(a, writes, sizeof writes);
  blk->n_writes = 1;
  blk->init = stmt_store(a, C, expr_float(a, DT_F32, 0.0), ic, 2);
  const Expr *prod = expr_mul(a, expr_load(a, A, ia, 2), expr_load(a, B, ib, 2));
  blk->body = stmt_store(a, C, expr_add(a, expr_load(a, C, ic, 2), prod), ic, 2);
  const Expr *vals[3] = {i, j, k};
  const Stmt *realize = stmt_realize(a, vals, 3, expr_bool(a, true), blk);
  const Stmt *loops = stmt_for(a, i, zero, s128, FOR_SERIAL,
                               stmt_for(a, j, zero, s32, FOR_SERIAL, stmt_for(a, k, zero, s64, FOR_SERIAL, realize)));
  Block *root = ARENA_NEW(a, Block);
  root->name = "root";
  root->body = loops;
  const Buffer *params[3] = {A, B, C};
  return primfunc_new(a, "matmul", params, 3, stmt_realize(a, NULL, 0, expr_bool(a, true), root));
}

static const char fixture_matmul_text[] =
    "func matmul(A: f32[128, 64], B: f32[64, 32], C: f32[128, 32]) {\n"
    "  block root() {\n"
    "    for i in 0:128 {\n"
    "      for j in 0:32 {\n"
    "        for k in 0:64 {\n"
    "          block C(vi: spatial[0:128] = i, vj: spatial[0:32] = j, vk: reduce[0:64] = k) {\n"
    "            reads A[vi, vk], B[vk, vj]\n"
    "            writes C[vi, vj]\n"
    "            init {\n"
    "              C[vi, vj] = 0.0f32\n"
    "            }\n"
    "            C[vi, vj] = (C[vi, vj] + (A[vi, vk] * B[vk, vj]))\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

#endif
