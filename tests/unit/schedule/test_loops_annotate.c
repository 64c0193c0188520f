/* Loop annotations: vectorize, parallel, unroll, bind -- what they mark and
 * what they refuse (loops carrying a reduction, nested parallelism,
 * non-constant vector lengths, unknown thread tags, step loops). */
#include "unit/schedule/test_loops_util.h"

static int loops_of(Schedule *s, const char *blk, SchRV *out) {
  SchRV b = sch_get_block(s, blk);
  assert_true(b >= 0);
  return sch_get_loops(s, b, out, 16);
}

static void assert_refused(Schedule *s, loom_status st, const PrimFunc *before, const char *what) {
  assert_int_equal(st, LOOM_ERR_SCHEDULE);
  assert_ptr_equal(sch_func(s), before);
  assert_contains(sch_error(s), what);
}

static ForKind kind_of(Schedule *s, SchRV l) {
  const Stmt *loop = stmt_find_loop(sch_func(s)->body, sch_loop_var(s, l));
  assert_non_null(loop);
  return loop->loop.kind;
}

static void test_annotate_matmul(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_matmul(a, 64, 48, 32);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  SchRV l[16];
  loops_of(s, "C", l);
  const PrimFunc *before = sch_func(s);
  /* k is bound to the reduction iterator vk */
  assert_refused(s, sch_parallel(s, l[2]), before, "reduction iterator vk of block \"C\"");
  assert_refused(s, sch_vectorize(s, l[2]), before, "loop k carries reduction iterator vk");
  assert_refused(s, sch_bind(s, l[2], "threadIdx.x"), before, "reduction");
  assert_int_equal(sch_parallel(s, l[0]), LOOM_OK);
  assert_int_equal(kind_of(s, l[0]), FOR_PARALLEL);
  before = sch_func(s);
  assert_refused(s, sch_parallel(s, l[1]), before, "nested inside parallel loop i");
  assert_refused(s, sch_parallel(s, l[0]), before, "already parallel");
  assert_refused(s, sch_unroll(s, l[0]), before, "already parallel");
  assert_int_equal(sch_fuse(s, (SchRV[]){l[0], l[1]}, 2), -1);
  assert_refused(s, LOOM_ERR_SCHEDULE, before, "loop i is parallel; only serial loops can be fused");
  assert_int_equal(sch_vectorize(s, l[1]), LOOM_OK);
  assert_int_equal(kind_of(s, l[1]), FOR_VECTORIZED);
  assert_int_equal(sch_unroll(s, l[2]), LOOM_OK); /* unroll is always legal */
  assert_int_equal(kind_of(s, l[2]), FOR_UNROLLED);
  assert_refused(s, sch_vectorize(s, 0), sch_func(s), "not a loop");
  check_same_results(f, sch_func(s), 11);
  sch_free(s);

  /* a parallel loop below refuses an outer parallel */
  s = sch_create(f, DECIDE_DEFAULT, 0);
  loops_of(s, "C", l);
  assert_int_equal(sch_parallel(s, l[1]), LOOM_OK);
  before = sch_func(s);
  assert_refused(s, sch_parallel(s, l[0]), before, "contains a parallel loop");
  sch_free(s);
  arena_free(a);
}

static void test_bind(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_ewise(a, 16, 32);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  SchRV l[16];
  loops_of(s, "B", l);
  const PrimFunc *before = sch_func(s);
  assert_refused(s, sch_bind(s, l[0], "threadIdx.w"), before, "thread tag \"threadIdx.w\"");
  assert_refused(s, sch_bind(s, l[0], NULL), before, "thread tag");
  assert_int_equal(sch_bind(s, l[0], "blockIdx.x"), LOOM_OK);
  assert_int_equal(sch_bind(s, l[1], "threadIdx.x"), LOOM_OK);
  const Stmt *loop = stmt_find_loop(sch_func(s)->body, sch_loop_var(s, l[1]));
  assert_int_equal(loop->loop.kind, FOR_THREAD_BINDING);
  assert_string_equal(loop->loop.thread_tag, "threadIdx.x");
  check_same_results(f, sch_func(s), 12);
  sch_free(s);
  arena_free(a);
}

/* for i in 0:n { B[i] = A[i] + 1 } with a symbolic n */
static PrimFunc *make_symbolic(Arena *a) {
  const Expr *n = expr_var(a, "n", DT_I64);
  Buffer *A = buffer_new(a, "A", DT_F32, 1, &n), *B = buffer_new(a, "B", DT_F32, 1, &n);
  const Expr *i = expr_var(a, "i", DT_I64), *v = expr_var(a, "vi", DT_I64);
  IterVar *iv = ARENA_NEW(a, IterVar);
  *iv = (IterVar){v, expr_i64(a, 0), n, ITER_SPATIAL};
  Block *b = ARENA_NEW(a, Block);
  b->name = "B";
  b->iters = iv;
  b->n_iters = 1;
  BufferRegion *rr = ARENA_NEW(a, BufferRegion), *wr = ARENA_NEW(a, BufferRegion);
  *rr = region_point(a, A, &v);
  *wr = region_point(a, B, &v);
  b->reads = rr, b->n_reads = 1, b->writes = wr, b->n_writes = 1;
  b->body = stmt_store(a, B, expr_add(a, expr_load(a, A, &v, 1), expr_float(a, DT_F32, 1)), &v, 1);
  const Stmt *loop = stmt_for(a, i, expr_i64(a, 0), n, FOR_SERIAL, stmt_realize(a, &i, 1, expr_bool(a, true), b));
  Block *root = ARENA_NEW(a, Block);
  root->name = "root";
  root->body = loop;
  const Buffer *params[2] = {A, B};
  return primfunc_new(a, "sym", params, 2, stmt_realize(a, NULL, 0, expr_bool(a, true), root));
}

static void test_symbolic_extent(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = make_symbolic(a);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  SchRV l[4], io[2];
  loops_of(s, "B", l);
  const PrimFunc *before = sch_func(s);
  assert_refused(s, sch_vectorize(s, l[0]), before, "non-constant extent n");
  assert_refused(s, sch_split(s, l[0], (int64_t[]){4, 4}, 2, io) < 0 ? LOOM_ERR_SCHEDULE : LOOM_OK, before,
                 "one factor must be -1");
  int64_t t[2];
  assert_refused(s, sch_sample_perfect_tile(s, l[0], 2, 0, t), before, "not a positive constant");
  /* [-1, 4] on n: outer = ceildiv(n, 4) and the block is guarded by i < n */
  assert_int_equal(sch_split(s, l[0], (int64_t[]){-1, 4}, 2, io), 0);
  const Stmt *outer = stmt_find_loop(sch_func(s)->body, sch_loop_var(s, io[0]));
  assert_true(expr_uses_var(outer->loop.extent, f->params[0]->shape[0]));
  const Stmt *r = stmt_find_block(sch_func(s)->body, "B");
  assert_true(expr_uses_var(r->realize.predicate, f->params[0]->shape[0]));
  assert_int_equal(sch_vectorize(s, io[1]), LOOM_OK);
  sch_free(s);
  arena_free(a);
}

/* A step loop (te_step_loop): h[d, s, j] = h[d, s - 1, j] * 0.5 + A[d, s, j]
 * (1 before the first step) for d in 0:2, s in 0:6, then Y = h. */
typedef struct StepArgs {
  const TeStepLoop *loop;
  const TeTensor *A, *h;
} StepArgs;

static const Expr *step_body(Arena *a, const Expr *const *ax, void *user) {
  StepArgs *t = user;
  const Expr *s = t->loop->step, *one = expr_i64(a, 1);
  const Expr *prev = te_load(a, t->h, (const Expr *[]){ax[0], expr_max(a, expr_sub(a, s, one), expr_i64(a, 0)), ax[2]});
  prev = expr_select(a, expr_binary(a, EXPR_EQ, s, expr_i64(a, 0)), expr_float(a, DT_F32, 1), prev);
  return expr_add(a, expr_mul(a, prev, expr_float(a, DT_F32, 0.5)), te_load(a, t->A, ax));
}

static const Expr *copy_body(Arena *a, const Expr *const *ax, void *user) {
  return te_load(a, ((StepArgs *)user)->h, ax);
}

static void test_step_loop(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  int64_t shape[3] = {2, 6, 4};
  StepArgs t = {te_step_loop(a, "step", 6, 1, (const char *[]){"dir"}, shape, &err), NULL, NULL};
  assert_non_null(t.loop);
  t.A = te_placeholder(a, "A", DT_F32, 3, shape, &err);
  TeTensor *h = te_step_declare(a, t.loop, true, "h", DT_F32, 3, shape, &err);
  t.h = h;
  assert_true(te_step_define(a, h, step_body, &t, &err));
  TeTensor *y = te_compute(a, "Y", 3, shape, copy_body, &t, &err);
  PrimFunc *f = te_create_primfunc(a, "step", (TeTensor *[]){(TeTensor *)t.A, y}, 2, &err);
  assert_non_null(f);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  SchRV l[16];
  assert_int_equal(loops_of(s, "h", l), 3); /* dir, step, its own i2 */
  const PrimFunc *before = sch_func(s);
  assert_refused(s, sch_parallel(s, l[1]), before, "loop step is a step loop: block \"h\" uses its variable");
  assert_refused(s, sch_vectorize(s, l[1]), before, "step loop");
  assert_int_equal(sch_parallel(s, l[0]), LOOM_OK); /* the directions are independent */
  assert_int_equal(sch_vectorize(s, l[2]), LOOM_OK);
  check_same_results(f, sch_func(s), 13);
  sch_free(s);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_annotate_matmul),
      cmocka_unit_test(test_bind),
      cmocka_unit_test(test_symbolic_extent),
      cmocka_unit_test(test_step_loop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
