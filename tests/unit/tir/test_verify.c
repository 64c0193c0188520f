/* tir_verify: well-formed functions pass; each malformed one is rejected
 * with a message naming the block/loop/buffer at fault. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "tir/text.h"
#include "unit/tir/tir_fixtures.h"

static void expect_rejected(const PrimFunc *f, const char *want) {
  LoomError err = {0};
  assert_int_equal(tir_verify(f, &err), LOOM_ERR_INVALID_ARG);
  assert_int_equal(err.status, LOOM_ERR_INVALID_ARG);
  if (strcmp(err.msg, want) != 0) fail_msg("\n  got  %s\n  want %s", err.msg, want);
}

static PrimFunc *parse_ok(Arena *a, const char *text) {
  LoomError err = {0};
  PrimFunc *f = tir_parse_func(a, text, &err);
  if (!f) fail_msg("parse: %s", err.msg);
  return f;
}

static void test_valid(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  assert_int_equal(tir_verify(fixture_matmul(a), &err), LOOM_OK);
  assert_int_equal(tir_verify(parse_ok(a, fixture_matmul_text), &err), LOOM_OK);
  /* symbolic shapes, vectors, Allocate, if, thread loops, reductions */
  const char *text =
      "func f[n](A: f32[n, 8], B: f32[n]) {\n"
      "  block root() {\n"
      "    alloc T: f32[8] local\n"
      "    for i in 0:n parallel {\n"
      "      for t in 0:2 thread(\"threadIdx.x\") {\n"
      "        block s(vi: spatial[0:n] = i, vt: spatial[0:2] = t) where (i < n) {\n"
      "          reads A[vi, 0:8]\n"
      "          writes B[vi]\n"
      "          T[ramp(0, 1, 4)] = A[vi, ramp(vt * 4, 1, 4)] + broadcast(1.0f32, 4)\n"
      "          if vt == 0 { B[vi] = reduce_sum(T[k], [k, 0, 8], where=k < 8) } else { nop }\n"
      "        }\n"
      "      }\n"
      "    }\n"
      "    allocate L: i64[1] { L[0] = n }\n"
      "  }\n"
      "}\n";
  PrimFunc *f = parse_ok(a, text);
  if (tir_verify(f, &err) != LOOM_OK) fail_msg("%s", err.msg);
  arena_free(a);
}

/* Text that parses (the parser checks names and arity) but breaks a rule
 * only the verifier knows. */
static void test_rejects_text(void **state) {
  (void)state;
  static const struct {
    const char *text, *msg;
  } cases[] = {
      {"func f(A: f32[4]) { for i in 0:4 { A[i] = 1i32 } }",
       "func f: store to buffer \"A\" of a value 1i32 of dtype i32, expected f32"},
      {"func f(A: f32[4]) { for i in 0:4i32 { A[0] = 1.0f32 } }",
       "func f: extent of loop \"i\" 4i32 has dtype i32, expected i64 (index arithmetic is int64)"},
      {"func f(A: f32[4]) { for i<i32> in 0:4 { A[0] = 1.0f32 } }",
       "func f: loop \"i\": variable has dtype i32, expected i64"},
      {"func f(A: f32[4]) { block b() { A[0] = 1.0f32 } block b() { A[1] = 1.0f32 } }",
       "func f: block name \"b\" is used twice"},
      {"func f(A: f32[4]) { for i in 0:4 { block b(v: spatial[0:4] = i) { A[v + 1i32] = 1.0f32 } } }",
       "func f, block \"b\": operands of add in (v + 1i32) have dtypes i64 and i32, expected one dtype"},
      {"func f(A: f32[4]) { for i in 0:4 { block b(v: spatial[0:4] = i) where i { A[v] = 1.0f32 } } }",
       "func f, block \"b\": predicate i has dtype i64, expected bool"},
      {"func f(A: f32[4]) { for i in 0:4 { block b(v: spatial[0:4] = cast(i32, i)) { A[v] = 1.0f32 } } }",
       "func f, block \"b\": binding of iterator \"v\" cast(i32, i) has dtype i32, expected i64 (index arithmetic is "
       "int64)"},
      {"func f(A: f32[4]) { if 1 { A[0] = 1.0f32 } }", "func f: if condition 1 has dtype i64, expected bool"},
      {"func f(A: f32[4]) { A[0] = select(1, 1.0f32, 2.0f32) }",
       "func f: select condition 1 has dtype i64, expected bool"},
      {"func f(A: f32[4]) { A[1.0f32] = 1.0f32 }",
       "func f: index 0 of buffer \"A\" is 1.0f32 of dtype f32, expected an integer"},
      {"func f(A: f32[4]) { A[0] = broadcast(1.0f32, 4) }",
       "func f: store to buffer \"A\" of a value broadcast(1.0f32, 4) of dtype f32x4, expected f32"},
      {"func f(A: f32[4]) { block b() { alloc T: f32[4] storage_align(0, 16, 0) reads A[0:4i32] A[0] = 1.0f32 } }",
       "func f, block \"b\": region extent 4i32 has dtype i32, expected i64 (index arithmetic is int64)"},
  };
  Arena *a = arena_new();
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    PrimFunc *f = parse_ok(a, cases[k].text);
    LoomError err = {0};
    if (tir_verify(f, &err) == LOOM_OK) fail_msg("case %zu passed: %s", k, cases[k].text);
    if (strcmp(err.msg, cases[k].msg) != 0) fail_msg("case %zu:\n  got  %s\n  want %s", k, err.msg, cases[k].msg);
  }
  arena_free(a);
}

/* Malformations the parser cannot produce: built by hand. */
static void test_rejects_built(void **state) {
  (void)state;
  Arena *a = arena_new();
  const Expr *c4 = expr_i64(a, 4), *zero = expr_i64(a, 0);
  const Expr *shape2[2] = {c4, c4};
  Buffer *A = buffer_new(a, "A", DT_F32, 1, &c4);
  Buffer *M = buffer_new(a, "M", DT_F32, 2, shape2);
  Buffer *X = buffer_new(a, "X", DT_F32, 1, &c4); /* never declared */
  const Expr *i = expr_var(a, "i", DT_I64);
  const Expr *one = expr_float(a, DT_F32, 1.0);
  const Buffer *params[2] = {A, M};

  /* a loop variable used after its loop */
  const Stmt *loop = stmt_for(a, i, zero, c4, FOR_SERIAL, stmt_store(a, A, one, &i, 1));
  const Stmt *after = stmt_store(a, A, one, &i, 1);
  expect_rejected(primfunc_new(a, "f", params, 2, stmt_seq2(a, loop, after)),
                  "func f: variable \"i\" is used outside the loop, block or reduction that binds it");

  /* a buffer that is neither a parameter nor allocated */
  expect_rejected(primfunc_new(a, "f", params, 2, stmt_store(a, X, one, &zero, 1)),
                  "func f: store to buffer \"X\", which is neither a parameter nor allocated in an enclosing block");
  const Expr *ld = expr_load(a, X, &zero, 1);
  expect_rejected(primfunc_new(a, "f", params, 2, stmt_store(a, A, ld, &zero, 1)),
                  "func f: load from buffer \"X\", which is neither a parameter nor allocated in an enclosing block");

  /* index counts */
  expect_rejected(primfunc_new(a, "f", params, 2, stmt_store(a, A, expr_load(a, M, &zero, 1), &zero, 1)),
                  "func f: load from buffer \"M\" with 1 indices, expected 2 (its ndim)");
  const Expr *idx2[2] = {zero, zero};
  expect_rejected(primfunc_new(a, "f", params, 2, stmt_store(a, A, one, idx2, 2)),
                  "func f: store to buffer \"A\" with 2 indices, expected 1 (its ndim)");

  /* binding count */
  const Expr *v = expr_var(a, "v", DT_I64);
  Block *blk = ARENA_NEW(a, Block);
  blk->name = "b";
  IterVar iv = {v, zero, c4, ITER_SPATIAL};
  blk->iters = &iv;
  blk->n_iters = 1;
  blk->body = stmt_store(a, A, one, &v, 1);
  expect_rejected(primfunc_new(a, "f", params, 2, stmt_realize(a, NULL, 0, expr_bool(a, true), blk)),
                  "func f, block \"b\": 0 iterator bindings for 1 block iterators");

  /* a block's allocation used outside the block; its iterator too */
  Buffer *T = buffer_new(a, "T", DT_F32, 1, &c4);
  Block *alloc_blk = ARENA_NEW(a, Block);
  alloc_blk->name = "owner";
  alloc_blk->alloc_buffers = (const Buffer *const *)arena_memdup(a, &T, sizeof T);
  alloc_blk->n_alloc = 1;
  alloc_blk->body = stmt_store(a, T, one, &zero, 1);
  const Stmt *owner = stmt_realize(a, NULL, 0, expr_bool(a, true), alloc_blk);
  expect_rejected(primfunc_new(a, "f", params, 2, stmt_seq2(a, owner, stmt_store(a, T, one, &zero, 1))),
                  "func f: store to buffer \"T\", which is neither a parameter nor allocated in an enclosing block");
  const Stmt *bound = stmt_realize(a, &zero, 1, expr_bool(a, true), blk);
  expect_rejected(primfunc_new(a, "f", params, 2, stmt_seq2(a, bound, stmt_store(a, A, one, &v, 1))),
                  "func f: variable \"v\" is used outside the loop, block or reduction that binds it");

  /* intrinsic arity, thread tag, missing body, unnamed block */
  const Expr *bad_call = expr_call(a, CALL_POW, DT_F32, &one, 1);
  expect_rejected(primfunc_new(a, "f", params, 2, stmt_store(a, A, bad_call, &zero, 1)),
                  "func f: call to pow has 1 arguments, expected 2");
  Stmt *thread = (Stmt *)stmt_for_thread(a, i, zero, c4, "threadIdx.x", stmt_nop(a));
  thread->loop.thread_tag = NULL;
  expect_rejected(primfunc_new(a, "f", params, 2, thread),
                  "func f: loop \"i\" is bound to a thread but has no thread tag");
  expect_rejected(primfunc_new(a, "f", params, 2, stmt_for(a, i, zero, c4, FOR_SERIAL, NULL)),
                  "func f: missing statement (NULL)");
  Block *anon = ARENA_NEW(a, Block);
  anon->name = "";
  anon->body = stmt_nop(a);
  expect_rejected(primfunc_new(a, "f", params, 2, stmt_realize(a, NULL, 0, expr_bool(a, true), anon)),
                  "func f: a block has no name");
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid),
      cmocka_unit_test(test_rejects_text),
      cmocka_unit_test(test_rejects_built),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
