#include "xform_check.h"

/* The first statement of loop `s`'s body (through Allocates). */
static const Stmt *skip_allocs(const Stmt *s) {
  while (s->kind == STMT_ALLOCATE) s = s->alloc.body;
  return s;
}

/* Stencil after compute_at: for i0 { T[i0*8 + a] = A[..] (a < 10);
 * B[i0*8 + b] = T[i0*8 + b] + T[i0*8 + b + 2] (b < 8) }. Regions of
 * consecutive i0 overlap, but each iteration writes its tile before reading
 * it, so T moves into the loop with 10 elements. */
static void test_stencil_tile_written_before_read(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf1(a, "A", 34), *T = xc_buf1(a, "T", 34), *B = xc_buf1(a, "B", 32);
  const Expr *i0 = expr_var(a, "i0", DT_I64), *x = expr_var(a, "x", DT_I64), *y = expr_var(a, "y", DT_I64);
  const Expr *base = expr_mul(a, i0, xc_i(a, 8));
  const Expr *tx = expr_add(a, base, x), *ty = expr_add(a, base, y);
  const Expr *ty2 = expr_add(a, ty, xc_i(a, 2));
  const Stmt *prod = stmt_for(a, x, xc_i(a, 0), xc_i(a, 10), FOR_SERIAL,
                              stmt_store(a, T, expr_mul(a, expr_load(a, A, &tx, 1), expr_float(a, DT_F32, 3.0)), &tx, 1));
  const Stmt *cons = stmt_for(a, y, xc_i(a, 0), xc_i(a, 8), FOR_SERIAL,
                              stmt_store(a, B, expr_add(a, expr_load(a, T, &ty, 1), expr_load(a, T, &ty2, 1)), &ty, 1));
  const Stmt *loop = stmt_for(a, i0, xc_i(a, 0), xc_i(a, 4), FOR_SERIAL, stmt_seq2(a, prod, cons));
  const Buffer *params[2] = {A, B};
  PrimFunc *f = primfunc_new(a, "stencil", params, 2, stmt_allocate(a, T, loop));
  const PrimFunc *g = tir_compact_buffers(a, f);
  xc_dump("compact(stencil)", g);
  assert_int_equal(g->body->kind, STMT_FOR);
  const Stmt *alloc = g->body->loop.body;
  assert_int_equal(alloc->kind, STMT_ALLOCATE);
  assert_true(expr_is_int(alloc->alloc.buffer->shape[0], 10));
  xc_check_same(f, g, 151);
  xc_check_same(f, tir_lower(a, f, NULL, &(LoomError){0}), 152);
  arena_free(a);
}

/* An accumulator read and written in every iteration of k stays outside k
 * (moving it in would drop the running sum); the interpreter's
 * uninitialized-read check would catch a wrong move. */
static void test_accumulator_stays_outside(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf1(a, "A", 20), *acc = xc_buf1(a, "acc", 4), *B = xc_buf1(a, "B", 4);
  const Expr *k = expr_var(a, "k", DT_I64), *j = expr_var(a, "j", DT_I64);
  const Expr *kj = expr_add(a, expr_mul(a, k, xc_i(a, 4)), j);
  const Stmt *init = stmt_if(a, expr_binary(a, EXPR_EQ, k, xc_i(a, 0)),
                             stmt_store(a, acc, expr_float(a, DT_F32, 0.0), &j, 1), NULL);
  const Stmt *upd = stmt_store(a, acc, expr_add(a, expr_load(a, acc, &j, 1), expr_load(a, A, &kj, 1)), &j, 1);
  const Stmt *out = stmt_store(a, B, expr_load(a, acc, &j, 1), &j, 1);
  const Stmt *body = stmt_for(a, j, xc_i(a, 0), xc_i(a, 4), FOR_SERIAL, stmt_seq(a, (const Stmt *[]){init, upd, out}, 3));
  const Buffer *params[2] = {A, B};
  PrimFunc *f = primfunc_new(a, "acc", params, 2,
                             stmt_allocate(a, acc, stmt_for(a, k, xc_i(a, 0), xc_i(a, 5), FOR_SERIAL, body)));
  const PrimFunc *g = tir_compact_buffers(a, f);
  xc_dump("compact(acc)", g);
  assert_int_equal(g->body->kind, STMT_ALLOCATE);
  xc_check_same(f, g, 153);
  arena_free(a);
}

/* Disjoint tiles: B computed per tile of a split loop moves inside the
 * tile loop with the tile's size, indices rebased. */
static PrimFunc *tiles_fn(Arena *a, int64_t cols, ForKind outer) {
  Buffer *A = xc_buf2(a, "A", 6, cols), *T = xc_buf2(a, "T", 6, cols), *B = xc_buf2(a, "B", 6, cols);
  const Expr *io = expr_var(a, "io", DT_I64), *ii = expr_var(a, "ii", DT_I64), *j = expr_var(a, "j", DT_I64);
  const Expr *r = expr_add(a, expr_mul(a, io, xc_i(a, 2)), ii);
  const Expr *idx[2] = {r, j};
  const Stmt *st1 = stmt_store(a, T, expr_add(a, expr_load(a, A, idx, 2), expr_float(a, DT_F32, 1.0)), idx, 2);
  const Stmt *st2 = stmt_store(a, B, expr_mul(a, expr_load(a, T, idx, 2), expr_load(a, T, idx, 2)), idx, 2);
  const Stmt *l1 = stmt_for(a, ii, xc_i(a, 0), xc_i(a, 2), FOR_SERIAL, stmt_for(a, j, xc_i(a, 0), xc_i(a, cols), FOR_SERIAL, st1));
  const Stmt *l2 = stmt_for(a, ii, xc_i(a, 0), xc_i(a, 2), FOR_SERIAL, stmt_for(a, j, xc_i(a, 0), xc_i(a, cols), FOR_SERIAL, st2));
  const Stmt *loop = stmt_for(a, io, xc_i(a, 0), xc_i(a, 3), outer, stmt_seq2(a, l1, l2));
  const Buffer *params[2] = {A, B};
  return primfunc_new(a, "tiles", params, 2, stmt_allocate(a, T, loop));
}

static void test_disjoint_tiles(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *f = tiles_fn(a, 8, FOR_PARALLEL);
  const PrimFunc *g = tir_compact_buffers(a, f);
  xc_dump("compact(tiles)", g);
  assert_int_equal(g->body->kind, STMT_FOR);
  const Buffer *t = g->body->loop.body->alloc.buffer;
  assert_true(expr_is_int(t->shape[0], 2));
  assert_true(expr_is_int(t->shape[1], 8));
  assert_int_equal(skip_allocs(g->body->loop.body)->kind, STMT_SEQ);
  xc_check_same(f, g, 154);
  arena_free(a);
}

/* Tiles of 2 x 10000 f32 (80 KB): private copies inside a parallel loop
 * would exceed the code generator's stack budget, and disjoint tiles are
 * race-free in one shared buffer, so T stays outside; a serial loop still
 * gets the compact per-iteration buffer. */
static void test_big_parallel_tiles_stay_shared(void **state) {
  (void)state;
  Arena *a = arena_new();
  PrimFunc *par = tiles_fn(a, 10000, FOR_PARALLEL), *ser = tiles_fn(a, 10000, FOR_SERIAL);
  const PrimFunc *gp = tir_compact_buffers(a, par), *gs = tir_compact_buffers(a, ser);
  assert_int_equal(gp->body->kind, STMT_ALLOCATE);
  assert_int_equal(gs->body->kind, STMT_FOR);
  assert_true(expr_is_int(gs->body->loop.body->alloc.buffer->shape[0], 2));
  xc_check_same(par, gp, 155);
  xc_check_same(ser, gs, 156);
  arena_free(a);
}

/* for f in 0:4 parallel { for i, j { T[idx] = A[idx]; T[idx] += 1 }
 * for i, j { B[idx] = T[idx] * T[flip] } } over [2, ni', nj'] buffers (i <
 * ni, j < nj): T is written and updated element by element in one nest (a
 * register tile's init and accumulation), then read at other indices
 * (flip), so only disjointness of f's tiles lets T move inside f (and no
 * further). */
static PrimFunc *fill_use_fn(Arena *a, const int64_t *shape, const Expr *f, const Expr *i, const Expr *j, int64_t ni,
                             int64_t nj, const Expr *const *idx, const Expr *const *flip) {
  const Expr *sh[3] = {xc_i(a, shape[0]), xc_i(a, shape[1]), xc_i(a, shape[2])};
  Buffer *A = buffer_new(a, "A", DT_F32, 3, sh), *T = buffer_new(a, "T", DT_F32, 3, sh);
  Buffer *B = buffer_new(a, "B", DT_F32, 3, sh);
  const Expr *t = expr_load(a, T, idx, 3);
  const Stmt *st[2] = {stmt_store(a, T, expr_load(a, A, idx, 3), idx, 3),
                       stmt_store(a, T, expr_add(a, t, expr_float(a, DT_F32, 1.0)), idx, 3)};
  const Stmt *fill = stmt_for(a, i, xc_i(a, 0), xc_i(a, ni), FOR_SERIAL,
                              stmt_for(a, j, xc_i(a, 0), xc_i(a, nj), FOR_SERIAL, stmt_seq(a, st, 2)));
  const Stmt *use = stmt_for(a, i, xc_i(a, 0), xc_i(a, ni), FOR_SERIAL,
                             stmt_for(a, j, xc_i(a, 0), xc_i(a, nj), FOR_SERIAL,
                                      stmt_store(a, B, expr_mul(a, t, expr_load(a, T, flip, 3)), idx, 3)));
  const Stmt *loop = stmt_for(a, f, xc_i(a, 0), xc_i(a, 4), FOR_PARALLEL, stmt_seq2(a, fill, use));
  const Buffer *params[2] = {A, B};
  return primfunc_new(a, "fill_use", params, 2, stmt_allocate(a, T, loop));
}

/* T's allocation moved right inside f, with extents e0 and e1 in its first
 * two dimensions. */
static void check_inside_f(Arena *a, PrimFunc *fn, int64_t e0, int64_t e1, uint64_t seed) {
  const PrimFunc *g = tir_compact_buffers(a, fn);
  xc_dump("compact(fused loop)", g);
  assert_int_equal(g->body->kind, STMT_FOR);
  const Stmt *alloc = g->body->loop.body;
  assert_int_equal(alloc->kind, STMT_ALLOCATE);
  assert_true(expr_is_int(alloc->alloc.buffer->shape[0], e0));
  assert_true(expr_is_int(alloc->alloc.buffer->shape[1], e1));
  xc_check_same(fn, g, seed);
}

/* Row tiles of a fused loop f = (a, rb): T[a, rb*2 + ii, j] with
 * a = floordiv(f, 2), rb = floormod(f, 2), read with the rows of the tile
 * flipped. No single dimension moves monotonically with f, but in
 * row-major order each tile (2 whole rows of T[a]) comes after the previous
 * one: T becomes a private [1, 2, 5] tile (the depthwise conv's padded rows
 * and accumulators per channel block x row block). */
static void test_fused_loop_tiles(void **state) {
  (void)state;
  Arena *a = arena_new();
  const Expr *f = expr_var(a, "f", DT_I64), *ii = expr_var(a, "ii", DT_I64), *j = expr_var(a, "j", DT_I64);
  const Expr *two = xc_i(a, 2), *rows = expr_mul(a, expr_floormod(a, f, two), two);
  const Expr *idx[3] = {expr_floordiv(a, f, two), expr_add(a, rows, ii), j};
  const Expr *flip[3] = {idx[0], expr_add(a, rows, expr_sub(a, xc_i(a, 1), ii)), j};
  check_inside_f(a, fill_use_fn(a, (int64_t[]){2, 4, 5}, f, ii, j, 2, 5, idx, flip), 1, 2, 157);
  arena_free(a);
}

/* Column tiles of a fused loop f = (a, t): T[a, i, t*3 + j] (i < 4, j < 3),
 * read with rows flipped. Consecutive f interleave in row-major order (two
 * column tiles per row), but split back into a = floordiv(f, 2),
 * t = floormod(f, 2) the tiles are disjoint over t and over a: T becomes a
 * private [1, 4, 3] tile (a batch matmul's register tile under batch x
 * column tiles in parallel). */
static void test_fused_column_tiles(void **state) {
  (void)state;
  Arena *a = arena_new();
  const Expr *f = expr_var(a, "f", DT_I64), *i = expr_var(a, "i", DT_I64), *j = expr_var(a, "j", DT_I64);
  const Expr *two = xc_i(a, 2);
  const Expr *col = expr_add(a, expr_mul(a, expr_floormod(a, f, two), xc_i(a, 3)), j);
  const Expr *idx[3] = {expr_floordiv(a, f, two), i, col};
  const Expr *flip[3] = {idx[0], expr_sub(a, xc_i(a, 3), i), col};
  check_inside_f(a, fill_use_fn(a, (int64_t[]){2, 4, 6}, f, i, j, 4, 3, idx, flip), 1, 4, 158);
  arena_free(a);
}

/* ---- a temporary shared by a parallel loop and the statements around it ---- */

typedef struct ParallelScan {
  int parallel;        /* parallel loops */
  int private_allocs;  /* allocations inside a parallel loop */
  int depth;
} ParallelScan;

static void scan_parallel(ParallelScan *p, const Stmt *s) {
  if (!s) return;
  switch (s->kind) {
    case STMT_FOR:
      if (s->loop.kind == FOR_PARALLEL) p->parallel++, p->depth++;
      scan_parallel(p, s->loop.body);
      if (s->loop.kind == FOR_PARALLEL) p->depth--;
      return;
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n; i++) scan_parallel(p, s->seq.stmts[i]);
      return;
    case STMT_IF:
      scan_parallel(p, s->if_.then_s);
      scan_parallel(p, s->if_.else_s);
      return;
    case STMT_ALLOCATE:
      p->private_allocs += p->depth > 0;
      scan_parallel(p, s->alloc.body);
      return;
    default: return;
  }
}

/* for v in 0:4 parallel { T[tv] = A[v]; B[v] = T[tv] * 2 }, every
 * iteration on the same element T[tv] of a 2-element T, between `before`
 * and `after` (statements on T, or NULL). */
static PrimFunc *shared_temp_fn(Arena *a, Buffer *A, Buffer *T, int64_t tv, const Stmt *before, const Stmt *after) {
  Buffer *B = xc_buf1(a, "B", 4);
  const Expr *v = expr_var(a, "v", DT_I64), *t = xc_i(a, tv);
  const Stmt *body = stmt_seq2(a, stmt_store(a, T, expr_load(a, A, &v, 1), &t, 1),
                               stmt_store(a, B, expr_mul(a, expr_load(a, T, &t, 1), expr_float(a, DT_F32, 2.0)), &v, 1));
  const Stmt *st[3];
  int n = 0;
  if (before) st[n++] = before;
  st[n++] = stmt_for(a, v, xc_i(a, 0), xc_i(a, 4), FOR_PARALLEL, body);
  if (after) st[n++] = after;
  const Buffer *params[3] = {A, B, NULL};
  int np = 2;
  if (after && after->kind == STMT_STORE && after->store.buffer != T) params[np++] = after->store.buffer;
  return primfunc_new(a, "shared_temp", params, np, stmt_allocate(a, T, stmt_seq(a, st, n)));
}

/* The statement after the loop reads what its iterations stored (the last
 * one's value, run serially): no cut is safe and private copies would lose
 * the value, so the loop runs serially. */
static void test_parallel_loop_feeding_later_reader_runs_serially(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf1(a, "A", 4), *T = xc_buf1(a, "T", 2), *C = xc_buf1(a, "C", 1);
  const Expr *zero = xc_i(a, 0);
  PrimFunc *f = shared_temp_fn(a, A, T, 0, NULL, stmt_store(a, C, expr_load(a, T, &zero, 1), &zero, 1));
  const PrimFunc *g = tir_compact_buffers(a, f);
  xc_dump("compact(parallel feeding a reader)", g);
  ParallelScan p = {0};
  scan_parallel(&p, g->body);
  assert_int_equal(p.parallel, 0);
  xc_check_same(f, g, 159);
  arena_free(a);
}

/* T[1] is written before the loop and read after it; the loop's iterations
 * share T[0], which nothing outside reads: no cut is provable (the reader
 * reads a value from before the loop), but the iterations get private
 * copies of T and the loop stays parallel. */
static void test_parallel_loop_beside_other_values_gets_private_copies(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf1(a, "A", 4), *T = xc_buf1(a, "T", 2), *C = xc_buf1(a, "C", 1);
  const Expr *zero = xc_i(a, 0), *one = xc_i(a, 1);
  const Stmt *before = stmt_store(a, T, expr_load(a, A, &zero, 1), &one, 1);
  PrimFunc *f = shared_temp_fn(a, A, T, 0, before, stmt_store(a, C, expr_load(a, T, &one, 1), &zero, 1));
  const PrimFunc *g = tir_compact_buffers(a, f);
  xc_dump("compact(parallel beside other values)", g);
  ParallelScan p = {0};
  scan_parallel(&p, g->body);
  assert_int_equal(p.parallel, 1);
  assert_int_equal(p.private_allocs, 1);
  xc_check_same(f, g, 160);
  arena_free(a);
}

/* The random schedule of softmax with seed 1129: a row sum T[f % 2]
 * recomputed by every iteration of a parallel loop, then by every iteration
 * of the serial tail that loop partitioning split off. The tail's
 * iterations overlap too, but each reads only what it wrote itself, so the
 * cut before it is safe: the parallel loop's iterations get private copies
 * (before, one allocation around both loops was shared by them: a race). */
static void test_parallel_loop_and_overlapping_tail(void **state) {
  (void)state;
  Arena *a = arena_new();
  Buffer *A = xc_buf1(a, "A", 8), *T = xc_buf1(a, "T", 2), *B = xc_buf1(a, "B", 8);
  const Expr *v = expr_var(a, "v", DT_I64), *w = expr_var(a, "w", DT_I64);
  const Stmt *loops[2];
  for (int k = 0; k < 2; k++) {
    const Expr *x = k ? expr_add(a, w, xc_i(a, 4)) : v, *t = expr_floormod(a, x, xc_i(a, 2));
    const Stmt *sum = stmt_seq2(a, stmt_store(a, T, expr_float(a, DT_F32, 1.0), &t, 1),
                                stmt_store(a, T, expr_add(a, expr_load(a, T, &t, 1), expr_load(a, A, &x, 1)), &t, 1));
    const Stmt *use = stmt_store(a, B, expr_mul(a, expr_load(a, T, &t, 1), expr_load(a, A, &x, 1)), &x, 1);
    loops[k] = stmt_for(a, k ? w : v, xc_i(a, 0), xc_i(a, 4), k ? FOR_UNROLLED : FOR_PARALLEL,
                        stmt_seq2(a, sum, use));
  }
  const Buffer *params[2] = {A, B};
  PrimFunc *f = primfunc_new(a, "sum_tail", params, 2, stmt_allocate(a, T, stmt_seq(a, loops, 2)));
  const PrimFunc *g = tir_compact_buffers(a, f);
  xc_dump("compact(parallel loop and tail)", g);
  ParallelScan p = {0};
  scan_parallel(&p, g->body);
  assert_int_equal(p.parallel, 1);
  assert_int_equal(p.private_allocs, 1);
  assert_int_equal(g->body->kind, STMT_SEQ);
  xc_check_same(f, g, 161);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stencil_tile_written_before_read),
      cmocka_unit_test(test_accumulator_stays_outside),
      cmocka_unit_test(test_disjoint_tiles),
      cmocka_unit_test(test_big_parallel_tiles_stay_shared),
      cmocka_unit_test(test_fused_loop_tiles),
      cmocka_unit_test(test_fused_column_tiles),
      cmocka_unit_test(test_parallel_loop_feeding_later_reader_runs_serially),
      cmocka_unit_test(test_parallel_loop_beside_other_values_gets_private_copies),
      cmocka_unit_test(test_parallel_loop_and_overlapping_tail),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
