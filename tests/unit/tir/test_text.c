/* Printer and parser: golden text, print -> parse -> print identity for
 * hand-built functions covering every construct and for random
 * expressions, hand-written text, and parse errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/expr_parser.h"
#include "support/strbuf.h"
#include "tir/text.h"
#include "unit/tir/tir_fixtures.h"

/* print -> parse -> print must give the same text, and the parsed function
 * must be structurally equal to the original. Returns the text (freed by
 * the caller). */
static char *check_round_trip(Arena *a, const PrimFunc *f) {
  char *text = tir_print_func(f);
  LoomError err = {0};
  PrimFunc *g = tir_parse_func(a, text, &err);
  if (!g) fail_msg("reparse failed: %s\n--- text ---\n%s", err.msg, text);
  char *again = tir_print_func(g);
  if (strcmp(text, again) != 0) {
    FILE *o = fopen("roundtrip_first.txt", "w"), *o2 = fopen("roundtrip_second.txt", "w");
    if (o) fputs(text, o), fclose(o);
    if (o2) fputs(again, o2), fclose(o2);
    fail_msg("print -> parse -> print changed the text (see roundtrip_first.txt / roundtrip_second.txt)");
  }
  assert_true(tir_func_equal(f, g));
  assert_true(tir_func_equal(g, f));
  free(again);
  return text;
}

static void test_matmul_golden(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = fixture_matmul(a);
  char *text = check_round_trip(a, f);
  assert_string_equal(text, fixture_matmul_text);
  free(text);
  arena_free(a);
}

static Block *new_block(Arena *a, const char *name) {
  Block *b = ARENA_NEW(a, Block);
  b->name = name;
  return b;
}

static const Expr *load1(Arena *a, const Buffer *b, const Expr *i) { return expr_load(a, b, &i, 1); }
static const Expr *load2(Arena *a, const Buffer *b, const Expr *i, const Expr *j) {
  const Expr *idx[2] = {i, j};
  return expr_load(a, b, idx, 2);
}
static const Stmt *store1(Arena *a, const Buffer *b, const Expr *i, const Expr *v) { return stmt_store(a, b, v, &i, 1); }
static const Stmt *store2(Arena *a, const Buffer *b, const Expr *i, const Expr *j, const Expr *v) {
  const Expr *idx[2] = {i, j};
  return stmt_store(a, b, v, idx, 2);
}

/* One function that uses every statement kind, every expression kind, every
 * for kind, buffer attribute and name collision the printer must handle. */
static PrimFunc *build_everything(Arena *a) {
  const Expr *zero = expr_i64(a, 0), *four = expr_i64(a, 4), *c64 = expr_i64(a, 64), *c128 = expr_i64(a, 128);
  const Expr *n = expr_var(a, "n", DT_I64); /* a shape variable: free in the function */
  const Expr *sa[2] = {n, c64};
  Buffer *A = buffer_new(a, "A", DT_F32, 2, sa);
  Buffer *B = buffer_new(a, "B", DT_F16, 1, &c64);
  const Expr *two = expr_i64(a, 2);
  B->strides = arena_memdup(a, &two, sizeof two);
  const Expr *sc[2] = {four, four};
  Buffer *C = buffer_new(a, "C", DT_I32, 2, sc);
  C->scope = SCOPE_LOCAL;
  C->align = 64;
  C->align_axis = 1;
  C->align_factor = 16;
  C->align_offset = 1;
  Buffer *V = buffer_new(a, "for", dtype_with_lanes(DT_F32, 4), 1, &c64); /* reserved name, vector elements */
  Buffer *T1 = buffer_new(a, "T", DT_F32, 1, &c128); /* two allocations named T, one 0-dim */
  T1->scope = SCOPE_SHARED;
  Buffer *T2 = buffer_new(a, "T", DT_BF16, 0, NULL);
  Buffer *L = buffer_new(a, "L", DT_U8, 1, &c128);

  const Expr *i0 = expr_var(a, "i", DT_I64), *i1 = expr_var(a, "i", DT_I64); /* distinct, same name */
  const Expr *io = expr_var(a, "i.outer", DT_I64), *tx = expr_var(a, "threadIdx.x", DT_I64);
  const Expr *w = expr_var(a, "w", DT_I32);
  const Expr *vi = expr_var(a, "vi", DT_I64), *vk = expr_var(a, "vk", DT_I64);
  const Expr *r = expr_var(a, "r", DT_I64), *s = expr_var(a, "s", DT_I64);

  /* index arithmetic with every integer binary operator */
  const Expr *idx = vi;
  for (int k = EXPR_ADD; k <= EXPR_MAX; k++) idx = expr_binary(a, (ExprKind)k, idx, expr_i64(a, k + 1));
  /* every comparison, &&, ||, ! */
  const Expr *cmp = expr_bool(a, false);
  for (int k = EXPR_EQ; k <= EXPR_GE; k++)
    cmp = expr_binary(a, k % 2 ? EXPR_AND : EXPR_OR, cmp, expr_binary(a, (ExprKind)k, vi, expr_i64(a, k)));
  cmp = expr_not(a, expr_and(a, cmp, expr_bool(a, true)));
  /* calls (one with a result dtype unlike its argument), casts, select, specials */
  const Expr *x = load2(a, A, idx, vk);
  const Expr *pow_args[2] = {x, expr_float(a, DT_F32, 2.5)};
  const Expr *val = expr_add(a, expr_call(a, CALL_EXP, DT_F32, &x, 1), expr_call(a, CALL_POW, DT_F32, pow_args, 2));
  val = expr_add(a, val, expr_cast(a, DT_F32, expr_call(a, CALL_SQRT, DT_F64, &x, 1)));
  val = expr_add(a, val, expr_cast(a, DT_F32, load1(a, B, vk)));
  val = expr_select(a, cmp, val, expr_float(a, DT_F32, -INFINITY));
  val = expr_max(a, val, expr_float(a, DT_F32, NAN));
  val = expr_min(a, val, expr_float(a, DT_F32, 1e20));
  val = expr_binary(a, EXPR_DIV, val, expr_float(a, DT_F32, -0.0));
  val = expr_add(a, val, expr_cast(a, DT_F32, expr_float(a, DT_F64, 1.0000000000000001e-300)));
  val = expr_add(a, val, expr_cast(a, DT_F32, expr_float(a, DT_F64, INFINITY)));
  /* vectors: ramp index loads a vector, broadcast */
  const Expr *vec = expr_add(a, load2(a, A, vi, expr_ramp(a, zero, expr_i64(a, 1), 4)),
                             expr_broadcast(a, expr_float(a, DT_F32, 0.5), 4));

  /* the compute block */
  Block *blk = new_block(a, "my block.1");
  blk->schedule_rule = "matmul \"tiled\""; /* the rule survives print -> parse, quotes escaped */
  IterVar iters[2] = {{vi, zero, n, ITER_SPATIAL}, {vk, zero, c64, ITER_REDUCE}};
  blk->iters = arena_memdup(a, iters, sizeof iters);
  blk->n_iters = 2;
  const Expr *amin[2] = {vi, zero}, *aext[2] = {expr_i64(a, 1), c64};
  const Expr *cmin[2] = {zero, zero}, *cext[2] = {four, four};
  BufferRegion reads[3] = {{A, arena_memdup(a, amin, sizeof amin), arena_memdup(a, aext, sizeof aext)},
                           region_point(a, B, &vk),
                           {C, arena_memdup(a, cmin, sizeof cmin), arena_memdup(a, cext, sizeof cext)}};
  BufferRegion writes[2] = {{T1, arena_memdup(a, &vi, sizeof vi), arena_memdup(a, &four, sizeof four)},
                            region_point(a, V, &vi)};
  blk->reads = arena_memdup(a, reads, sizeof reads);
  blk->n_reads = 3;
  blk->writes = arena_memdup(a, writes, sizeof writes);
  blk->n_writes = 2;
  blk->init = store1(a, T1, vi, expr_float(a, DT_F32, 0.0));
  const Stmt *body[2] = {store1(a, T1, vi, expr_add(a, load1(a, T1, vi), val)), store1(a, V, vi, vec)};
  blk->body = stmt_seq(a, body, 2);
  const Expr *binds[2] = {expr_add(a, expr_mul(a, i0, four), i1), zero};
  const Stmt *realize = stmt_realize(a, binds, 2, expr_lt(a, i0, expr_i64(a, 100)), blk);
  const Stmt *nest = stmt_for(a, i0, zero, n, FOR_PARALLEL, stmt_for(a, i1, zero, four, FOR_VECTORIZED, realize));

  /* GPU-style loops, if/else, eval, a loop with an i32 variable */
  const Stmt *then_s = store1(a, T1, tx, expr_float(a, DT_F32, 1.0));
  Stmt *ev = (Stmt *)stmt_nop(a);
  ev->eval.value = expr_call(a, CALL_TANH, DT_F32, &(const Expr *){expr_float(a, DT_F32, 1.5)}, 1);
  const Stmt *gpu_body[2] = {stmt_if(a, expr_lt(a, tx, expr_i64(a, 16)), then_s, stmt_nop(a)),
                             stmt_if(a, expr_binary(a, EXPR_EQ, tx, expr_i64(a, 3)), ev, NULL)};
  const Stmt *gpu = stmt_for(a, io, zero, two, FOR_UNROLLED,
                             stmt_for_thread(a, tx, zero, expr_i64(a, 32), "threadIdx.x", stmt_seq(a, gpu_body, 2)));
  const Stmt *i32loop = stmt_for(a, w, expr_int(a, DT_I32, 0), expr_int(a, DT_I32, 4), FOR_SERIAL, stmt_nop(a));

  /* integer literals of every flavour, reductions, Allocate, 0-dim store */
  const Expr *lit = expr_add(a, expr_int(a, DT_I32, 5), expr_int(a, DT_I32, -3));
  lit = expr_select(a, expr_bool(a, true), lit, expr_cast(a, DT_I32, expr_i64(a, INT64_MIN)));
  lit = expr_add(a, lit, expr_cast(a, DT_I32, expr_int(a, DT_I8, -128)));
  const Expr *ulit = expr_add(a, expr_int(a, DT_U8, 255), expr_cast(a, DT_U8, expr_int(a, dtype_make(DT_UINT, 64, 1), -1)));
  IterVar raxes[1] = {{r, zero, n, ITER_REDUCE}};
  const Expr *red = expr_reduce(a, REDUCE_SUM, load2(a, A, r, zero), raxes, 1, expr_lt(a, r, expr_i64(a, 5)));
  IterVar raxes2[2] = {{r, zero, n, ITER_REDUCE}, {s, zero, c64, ITER_SPATIAL}};
  const Expr *red2 = expr_reduce(a, REDUCE_MAX, load2(a, A, r, s), raxes2, 2, NULL);
  const Stmt *alloc_body[4] = {store1(a, L, zero, ulit), stmt_store(a, T2, expr_cast(a, DT_BF16, load1(a, T1, zero)), NULL, 0),
                               store2(a, C, zero, expr_i64(a, 1), lit),
                               store1(a, T1, expr_i64(a, 1), expr_add(a, red, red2))};
  const Stmt *allocate = stmt_allocate(a, L, stmt_seq(a, alloc_body, 4));

  Block *root = new_block(a, "root");
  const Buffer *allocs[2] = {T1, T2};
  root->alloc_buffers = arena_memdup(a, allocs, sizeof allocs);
  root->n_alloc = 2;
  const Stmt *top[4] = {nest, gpu, i32loop, allocate};
  root->body = stmt_seq(a, top, 4);
  const Buffer *params[4] = {A, B, C, V};
  return primfunc_new(a, "everything", params, 4, stmt_realize(a, NULL, 0, expr_bool(a, true), root));
}

static void test_everything_round_trip(void **state) {
  (void)state;
  Arena *a = arena_new();
  char *text = check_round_trip(a, build_everything(a));
  if (getenv("TIR_DUMP")) fputs(text, stderr); /* to look at the format */
  /* spot checks of the choices the format makes */
  const char *must[] = {"func everything[n](A: f32[n, 64], B: f16[64] strides[2], "
                        "C: i32[4, 4] local align(64) storage_align(1, 16, 1), for_: f32x4[64]) {",
                        "alloc T: f32[128] shared", "alloc T_1: bf16[]", "for i in 0:n parallel {",
                        "for i_1 in 0:4 vectorized {", "block \"my block.1\"(vi: spatial[0:n] = ((i * 4) + i_1), "
                        "vk: reduce[0:64] = 0) where (i < 100) {",
                        "reads A[vi, 0:64], B[vk], C[0:4, 0:4]", "writes T[vi:4], for_[vi]",
                        "for i_outer in 0:2 unroll {", "for threadIdx_x in 0:32 thread(\"threadIdx.x\") {",
                        "} else {", "eval tanh(1.5f32)", "for w<i32> in 0i32:4i32 {", "allocate L: u8[128] {",
                        "T_1[] = cast(bf16, T[0])", "sqrt<f64>(A[", "f32(-inf)", "f32(nan)", "1e+20f32", "-0.0f32",
                        "e-300f64", "f64(inf)", "-9223372036854775808", "-128i8", "-1u64",
                        "reduce_sum(A[r, 0], [r, 0, n], where=(r < 5))",
                        "reduce_max(A[r_1, s], [r_1, 0, n], [s, 0, 64, spatial])", "ramp(0, 1, 4)", "broadcast(0.5f32, 4)",
                        "floordiv(", "floormod(", "min(", "max(", "!(", "&&", "||", "<=", ">=", "!=", "=="};
  for (size_t k = 0; k < sizeof must / sizeof must[0]; k++)
    if (!strstr(text, must[k])) fail_msg("missing \"%s\" in:\n%s", must[k], text);
  free(text);
  arena_free(a);
}

/* ---- random expressions: print -> parse -> equal ---- */

typedef struct Rng {
  uint64_t s;
} Rng;
static uint32_t rng_next(Rng *r) {
  r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(r->s >> 33);
}

typedef struct Env {
  const Expr *vars[3];
  const Buffer *buf; /* f32[8, 8] */
} Env;

static const Expr *rand_index(Arena *a, Rng *r, const Env *env, int depth);
static const Expr *rand_float(Arena *a, Rng *r, const Env *env, int depth);

static const Expr *rand_bool(Arena *a, Rng *r, const Env *env, int depth) {
  switch (rng_next(r) % (depth > 0 ? 5 : 1)) {
    case 0: return expr_bool(a, rng_next(r) % 2);
    case 1: return expr_binary(a, (ExprKind)(EXPR_EQ + rng_next(r) % 6), rand_index(a, r, env, depth - 1), rand_index(a, r, env, depth - 1));
    case 2: return expr_binary(a, rng_next(r) % 2 ? EXPR_AND : EXPR_OR, rand_bool(a, r, env, depth - 1), rand_bool(a, r, env, depth - 1));
    case 3: return expr_not(a, rand_bool(a, r, env, depth - 1));
    default: return expr_binary(a, EXPR_LT, rand_float(a, r, env, depth - 1), rand_float(a, r, env, depth - 1));
  }
}

static const Expr *rand_index(Arena *a, Rng *r, const Env *env, int depth) {
  switch (rng_next(r) % (depth > 0 ? 5 : 2)) {
    case 0: return expr_i64(a, (int64_t)(rng_next(r) % 200) - 100);
    case 1: return env->vars[rng_next(r) % 3];
    case 2: return expr_binary(a, (ExprKind)(EXPR_ADD + rng_next(r) % 9), rand_index(a, r, env, depth - 1), rand_index(a, r, env, depth - 1));
    case 3: return expr_select(a, rand_bool(a, r, env, depth - 1), rand_index(a, r, env, depth - 1), rand_index(a, r, env, depth - 1));
    default: return expr_cast(a, DT_I64, rand_float(a, r, env, depth - 1));
  }
}

static const Expr *rand_float(Arena *a, Rng *r, const Env *env, int depth) {
  switch (rng_next(r) % (depth > 0 ? 6 : 1)) {
    case 0: {
      double v = ((double)rng_next(r) - 2147483648.0) / (double)(1u << (rng_next(r) % 31));
      return expr_float(a, rng_next(r) % 2 ? DT_F32 : DT_F32, v);
    }
    case 1: return load2(a, env->buf, rand_index(a, r, env, depth - 1), rand_index(a, r, env, depth - 1));
    case 2: return expr_binary(a, (ExprKind)(EXPR_ADD + rng_next(r) % 4), rand_float(a, r, env, depth - 1), rand_float(a, r, env, depth - 1));
    case 3: {
      CallOp op = (CallOp)(rng_next(r) % CALL_OP_COUNT);
      const Expr *args[2] = {rand_float(a, r, env, depth - 1), rand_float(a, r, env, depth - 1)};
      return expr_call(a, op, DT_F32, args, call_op_arity(op));
    }
    case 4: return expr_cast(a, DT_F32, rand_index(a, r, env, depth - 1));
    default: return expr_min(a, rand_float(a, r, env, depth - 1), rand_float(a, r, env, depth - 1));
  }
}

static void test_random_expr_round_trip(void **state) {
  (void)state;
  Arena *a = arena_new();
  const Expr *c8 = expr_i64(a, 8), *shape[2] = {c8, c8};
  Env env = {{expr_var(a, "x", DT_I64), expr_var(a, "y", DT_I64), expr_var(a, "x", DT_I64)},
             buffer_new(a, "M", DT_F32, 2, shape)};
  Rng r = {42};
  for (int iter = 0; iter < 500; iter++) {
    const Expr *e = iter % 3 == 0 ? rand_index(a, &r, &env, 5) : iter % 3 == 1 ? rand_float(a, &r, &env, 5)
                                                                           : rand_bool(a, &r, &env, 5);
    /* wrap in a function so the printer names the two vars called x apart */
    const Expr *xs[3] = {env.vars[0], env.vars[1], env.vars[2]};
    Buffer *out = buffer_new(a, "out", e->dtype, 0, NULL);
    const Stmt *st = stmt_store(a, out, e, NULL, 0);
    for (int k = 0; k < 3; k++) st = stmt_for(a, xs[k], expr_i64(a, 0), c8, FOR_SERIAL, st);
    const Buffer *params[2] = {env.buf, out};
    PrimFunc *f = primfunc_new(a, "rand", params, 2, st);
    free(check_round_trip(a, f));
    /* the expression parser on its own, with the names as given */
    StrBuf sb;
    sb_init(&sb);
    expr_print(&sb, e);
    const Expr *vars2[2] = {env.vars[1], env.vars[2]}; /* "x" resolves to vars[2] */
    ExprScope scope = {vars2, 2, &env.buf, 1};
    LoomError err = {0};
    const Expr *back = expr_parse(a, sb_cstr(&sb), &scope, &err);
    if (!back) fail_msg("%s: %s", sb_cstr(&sb), err.msg);
    if (!expr_uses_var(e, env.vars[0])) assert_true(expr_equal(e, back));
    sb_free(&sb);
  }
  arena_free(a);
}

/* ---- hand-written text ---- */

static void test_parse_handwritten(void **state) {
  (void)state;
  Arena *a = arena_new();
  /* precedence, comments, optional region extents, loop kinds spelled out */
  const char *src =
      "# a comment\n"
      "func f(A: f32[16], B: f32[16]) {\n"
      "  for i in 0:16 serial {  # trailing comment\n"
      "    block b(v: spatial[0:16] = i) where i < 8 && i >= 0 || false {\n"
      "      reads A[v:1]\n"
      "      writes B[v]\n"
      "      B[v] = A[v] * 2.0f32 + A[v] / 4.0f32 - 1.0f32\n"
      "    }\n"
      "  }\n"
      "}\n";
  LoomError err = {0};
  PrimFunc *f = tir_parse_func(a, src, &err);
  if (!f) fail_msg("%s", err.msg);
  char *text = tir_print_func(f);
  assert_string_equal(text,
                      "func f(A: f32[16], B: f32[16]) {\n"
                      "  for i in 0:16 {\n"
                      "    block b(v: spatial[0:16] = i) where (((i < 8) && (i >= 0)) || false) {\n"
                      "      reads A[v]\n"
                      "      writes B[v]\n"
                      "      B[v] = (((A[v] * 2.0f32) + (A[v] / 4.0f32)) - 1.0f32)\n"
                      "    }\n"
                      "  }\n"
                      "}\n");
  assert_int_equal(tir_verify(f, &err), LOOM_OK);
  free(text);
  /* parsing the golden text gives the hand-built matmul */
  PrimFunc *m = tir_parse_func(a, fixture_matmul_text, &err);
  assert_non_null(m);
  assert_true(tir_func_equal(m, fixture_matmul(a)));
  arena_free(a);
}

/* ---- parse errors ---- */

static void test_parse_errors(void **state) {
  (void)state;
  static const struct {
    const char *text, *msg;
  } cases[] = {
      {"", "line 1, column 1: expected 'func', got end of input"},
      {"func f(A: f32[4]) {\n  A[i] = 1.0f32\n}", "line 2, column 5: expected a variable in scope, got 'i'"},
      {"func f(A: f32[4]) {\n  Q[0] = 1.0f32\n}", "line 2, column 3: expected a buffer in scope, got 'Q'"},
      {"func f(A: f32[4]) {\n  A[0, 1] = 1.0f32\n}", "line 2, column 3: expected 1 indices for buffer 'A', got 2"},
      {"func f(A: f32[4]) {\n  A[0] = exp(1.0f32, 2.0f32)\n}", "line 2, column 10: expected 1 argument to 'exp', got 2"},
      {"func f(A: f33[4]) {\n}", "line 1, column 11: expected a dtype such as f32, i64 or f32x8, got 'f33'"},
      {"func f(A: f32[4]) {\n  A[0] = 1.0f33\n}", "line 2, column 13: expected a dtype suffix such as i32 or f32, got 'f33'"},
      {"func f(A: f32[4]) {\n  A[0] = (1.0f32\n}", "line 3, column 1: expected ')', got '}'"},
      {"func f(A: f32[4]) {\n  A[0] = 1.0f32\n", "line 3, column 1: expected a statement, got end of input"},
      {"func f(A: f32[4]) {\n  while A[0] {}\n}", "line 2, column 3: expected a statement (for, block, if, nop, eval, "
                                                   "allocate, dma_get, dma_put, dma_get_async, dma_put_async, dma_wait or a store A[...] = ...), got 'while'"},
      {"func f(A: f32[4]) {\n  for i in 0:4 sideways {}\n}", "line 2, column 16: expected '{', got 'sideways'"},
      {"func f(A: f32[4]) {\n  block b(v: sideways[0:4] = 0) {}\n}",
       "line 2, column 14: expected 'spatial' or 'reduce', got 'sideways'"},
      {"func f(A: f32[4]) {\n  block b() {\n    reads A[0, 1]\n  }\n}",
       "line 3, column 16: expected ']' (the buffer has fewer dimensions), got '1'"},
      {"func f(A: f32[4]) {\n  block b() {\n    rule matmul\n  }\n}",
       "line 3, column 10: expected a schedule rule name string such as \"matmul\", got 'matmul'"},
      {"func f(A: f32[4]) {\n  block b() {\n    rule \"a\"\n    rule \"b\"\n  }\n}",
       "line 4, column 10: expected one 'rule' per block, got '\"b\"'"},
      {"func \"f", "line 1, column 6: expected a closing '\"', got '\"f'"},
      {"func f() { $ }", "line 1, column 12: expected a token, got '$'"},
      {"func f() {} extra", "line 1, column 13: expected end of input after the function, got 'extra'"},
      {"func f(A: i64[4]) {\n  A[0] = 99999999999999999999\n}",
       "line 2, column 10: expected an integer literal that fits in 64 bits, got '99999999999999999999'"},
      {"func f(A: f32[4]) {\n  A[0] = 1.5\n}",
       "line 2, column 10: expected a float literal with a float dtype suffix (1.5f32), got '1.5'"},
      {"func f(A: f32[4]) {\n  A[0] = ramp(0, 1, 0)\n}", "line 2, column 21: expected an integer in [1, 1024], got '0'"},
      {"func f(A: bool[4]) {\n  A[0] = 5bool\n}", "line 2, column 10: expected 0 or 1 for a bool literal, got '5bool'"},
      {"func f(A: f32[4]) {\n  A[0] = f32(up)\n}", "line 2, column 14: expected 'inf' or 'nan', got 'up'"},
      {"func f(A: f32[4]) {\n  A[0] = reduce_sum(A[0])\n}",
       "line 2, column 25: expected at least one reduction axis [k, min, extent], got ')'"},
  };
  Arena *a = arena_new();
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    LoomError err = {0};
    PrimFunc *f = tir_parse_func(a, cases[k].text, &err);
    if (f) fail_msg("case %zu parsed: %s", k, cases[k].text);
    assert_int_equal(err.status, LOOM_ERR_PARSE);
    if (strcmp(err.msg, cases[k].msg) != 0) fail_msg("case %zu:\n  got  %s\n  want %s", k, err.msg, cases[k].msg);
  }
  /* deep nesting is refused, not a stack overflow */
  StrBuf sb;
  sb_init(&sb);
  sb_puts(&sb, "func f(A: i64[1]) {\n  A[0] = ");
  for (int i = 0; i < 100000; i++) sb_putc(&sb, '(');
  LoomError err = {0};
  assert_null(tir_parse_func(a, sb_cstr(&sb), &err));
  assert_non_null(strstr(err.msg, "nesting at most 200 deep"));
  sb_free(&sb);
  sb_init(&sb);
  sb_puts(&sb, "func f(A: i64[1]) {\n  A[0] = 0");
  for (int i = 0; i < 100000; i++) sb_puts(&sb, " + 1");
  assert_null(tir_parse_func(a, sb_cstr(&sb), &err));
  assert_non_null(strstr(err.msg, "nesting at most 200 deep"));
  sb_free(&sb);
  arena_free(a);
}

/* ---- structural equality ---- */

static void test_func_equal(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = fixture_matmul(a), *g = fixture_matmul(a);
  assert_true(tir_func_equal(f, g));
  LoomError err = {0};
  /* each variant differs from the matmul in one place */
  static const struct {
    const char *from, *to;
  } edits[] = {
      {"B[vk, vj]))", "B[vj, vk]))"},              /* swapped uses */
      {"0.0f32", "1.0f32"},                        /* a constant */
      {"block C(", "block D("},                    /* block identity */
      {"for j in 0:32 {", "for j in 0:32 parallel {"}, /* loop kind */
      {"vk: reduce", "vk: spatial"},               /* iterator type */
      {"C: f32[128, 32]", "C: f32[128, 32] local"}, /* buffer scope */
      {"= j, vk", "= i, vk"},                      /* binding */
      {"reads A[vi, vk], ", "reads "},             /* regions */
  };
  for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++) {
    const char *hit = strstr(fixture_matmul_text, edits[k].from);
    assert_non_null(hit);
    char *text = arena_printf(a, "%.*s%s%s", (int)(hit - fixture_matmul_text), fixture_matmul_text, edits[k].to,
                              hit + strlen(edits[k].from));
    PrimFunc *h = tir_parse_func(a, text, &err);
    if (!h) fail_msg("edit %zu: %s", k, err.msg);
    if (tir_func_equal(f, h) || tir_func_equal(h, f)) fail_msg("edit %zu compared equal:\n%s", k, text);
  }
  /* renaming everything keeps equality */
  PrimFunc *renamed = tir_parse_func(a,
                                     "func other(X: f32[128, 64], Y: f32[64, 32], Z: f32[128, 32]) {\n"
                                     "  block root() {\n"
                                     "    for a in 0:128 { for b in 0:32 { for c in 0:64 {\n"
                                     "      block C(p: spatial[0:128] = a, q: spatial[0:32] = b, r: reduce[0:64] = c) {\n"
                                     "        reads X[p, r], Y[r, q]\n        writes Z[p, q]\n"
                                     "        init { Z[p, q] = 0.0f32 }\n"
                                     "        Z[p, q] = Z[p, q] + X[p, r] * Y[r, q]\n"
                                     "      }\n    } } }\n  }\n}\n",
                                     &err);
  if (!renamed) fail_msg("%s", err.msg);
  assert_true(tir_func_equal(f, renamed));
  /* outer vs inner binder with the same name: not equal */
  PrimFunc *outer = tir_parse_func(a, "func f(A: i64[4]) { for i in 0:4 { for j in 0:4 { A[i] = i } } }", &err);
  PrimFunc *inner = tir_parse_func(a, "func f(A: i64[4]) { for i in 0:4 { for i in 0:4 { A[i] = i } } }", &err);
  assert_non_null(outer);
  assert_non_null(inner);
  assert_false(tir_func_equal(outer, inner));
  assert_false(tir_func_equal(inner, outer));
  /* Seq nesting and no-ops inside a Seq are not differences; order and
   * content are */
  const Expr *c4 = expr_i64(a, 4);
  Buffer *X = buffer_new(a, "X", DT_I64, 1, &c4);
  const Stmt *s1 = stmt_store(a, X, expr_i64(a, 1), &c4, 1), *s2 = stmt_store(a, X, expr_i64(a, 2), &c4, 1);
  const Stmt *s3 = stmt_store(a, X, expr_i64(a, 3), &c4, 1);
  Stmt *nested = ARENA_NEW(a, Stmt), *outer_seq = ARENA_NEW(a, Stmt);
  nested->kind = outer_seq->kind = STMT_SEQ;
  nested->seq.stmts = (const Stmt *const *)arena_memdup(a, (const Stmt *[]){s1, stmt_nop(a)}, 2 * sizeof(Stmt *));
  nested->seq.n = 2;
  outer_seq->seq.stmts = (const Stmt *const *)arena_memdup(a, (const Stmt *[]){nested, s2, s3}, 3 * sizeof(Stmt *));
  outer_seq->seq.n = 3;
  assert_true(tir_stmt_equal(outer_seq, stmt_seq(a, (const Stmt *[]){s1, s2, s3}, 3)));
  assert_false(tir_stmt_equal(outer_seq, stmt_seq(a, (const Stmt *[]){s1, s3, s2}, 3)));
  assert_false(tir_stmt_equal(outer_seq, stmt_seq2(a, s1, s2)));
  assert_false(tir_stmt_equal(s1, stmt_seq2(a, s1, s2)));
  assert_true(tir_stmt_equal(s1, nested));
  /* statement-level equality */
  assert_true(tir_stmt_equal(f->body, g->body));
  assert_false(tir_stmt_equal(f->body, outer->body));
  arena_free(a);
}

static void test_print_stmt(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = fixture_matmul(a);
  /* the loop nest under root, at indent 1, with the names it has */
  const Stmt *loops = primfunc_root(f)->body;
  StrBuf sb;
  sb_init(&sb);
  tir_print_stmt(&sb, loops, 1);
  const char *want_start = "  for i in 0:128 {\n    for j in 0:32 {\n";
  assert_memory_equal(sb_cstr(&sb), want_start, strlen(want_start));
  /* the same lines as in the function's text, two levels shallower */
  assert_non_null(strstr(sb_cstr(&sb), "\n          C[vi, vj] = (C[vi, vj] + (A[vi, vk] * B[vk, vj]))\n"));
  sb_free(&sb);
  /* a Seq prints one item per line; free variables print by name */
  const Expr *n = expr_var(a, "n", DT_I64);
  const Expr *c4 = expr_i64(a, 4);
  Buffer *X = buffer_new(a, "X", DT_I64, 1, &c4);
  const Stmt *two = stmt_seq2(a, stmt_store(a, X, n, &c4, 1), stmt_store(a, X, expr_add(a, n, n), &c4, 1));
  sb_init(&sb);
  tir_print_stmt(&sb, two, 0);
  assert_string_equal(sb_cstr(&sb), "X[4] = n\nX[4] = (n + n)\n");
  sb_free(&sb);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_golden),         cmocka_unit_test(test_everything_round_trip),
      cmocka_unit_test(test_random_expr_round_trip), cmocka_unit_test(test_parse_handwritten),
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_func_equal),            cmocka_unit_test(test_print_stmt),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
