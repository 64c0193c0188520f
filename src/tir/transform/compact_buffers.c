/* tir_compact_buffers: allocate each temporary where it is used, only as big
 * as the region used there (TVM's buffer-allocation planning + compaction).
 *
 * After block lowering every intermediate buffer is allocated at the top of
 * the function at its full size, even when compute_at placed its producer
 * under a loop so that one iteration only needs a tile of it. For
 * Allocate(b, body) we walk down from body while all accesses of b stay in
 * one child (a seq element, a loop body, an if's then-branch) and put the
 * allocation there, then shrink each dimension to the accessed region
 * [lo_d, hi_d] (relaxed over the loops inside the new position; lo_d may
 * depend on the loops around it) and rewrite indices to idx_d - lo_d.
 *
 * Entering a loop L is only done when no value can flow between iterations
 * of L through b, because after compaction the elements of different
 * iterations share storage and each iteration's storage is fresh:
 *   - disjoint: the regions of consecutive iterations are disjoint in some
 *     dimension, or in row-major order (v + 1's first element after v's
 *     last: the tiles of a fused loop); then they are disjoint for all pairs
 *     of iterations, since lo(v+1) > hi(v) >= lo(v) chains; or a fused loop
 *     split back into v = q*T + r (T from its floordiv/floormod) is
 *     disjoint over r for each q and over q (whole rows of tiles), or
 *   - written before read: L's body is a sequence in which a statement
 *     before the first load of b stores b unconditionally as
 *     `b[u0 + c0, ...] = ...` over distinct loops u_d (so it writes exactly
 *     a box) and the box covers every load
 *     (the shape compute_at and cache_read produce), or a loop whose
 *     iterations each are such a sequence (cache_inplace's tile under a
 *     tile loop, inside an outer reduction loop; iterations may overlap,
 *     each reads only what it wrote).
 * Parallel loops under an allocation shared with other statements: see
 * parallel_safe.
 * A reduction accumulator (read and written in the same statement, or read
 * before written) fails both and stays outside the loop.
 * Extents that are not bounded by a constant keep the original shape. */
#include "arith/arith.h"
#include "support/ptrmap.h"
#include "support/vec.h"
#include "tir/transform/transform.h"
#include "tir/transform/transform_util.h"

typedef struct CompactCtx {
  Analyzer *az;
  Arena *arena;
  int parallel_depth; /* parallel loops around the placement being tried */
} CompactCtx;

/* ---- accessed region of b in a statement ---- */

typedef struct RegionWalk {
  CompactCtx *c;
  const Buffer *b;
  PtrMap dom; /* loop var inside the statement -> IntSet* */
  IntSet *box;
  bool any, ok;
  bool loads, stores; /* which kinds of access to include */
  const Stmt *skip;   /* a statement left out (NULL: none) */
} RegionWalk;

static void region_add(RegionWalk *w, const Expr *const *idx, int n) {
  if (n != w->b->ndim) {
    w->ok = false;
    return;
  }
  for (int d = 0; d < n; d++) {
    IntSet s = arith_eval_set(w->c->az, idx[d], &w->dom);
    if (!s.min || !s.max) {
      w->ok = false;
      return;
    }
    w->box[d] = w->any ? intset_union(w->c->az, w->box[d], s) : s;
  }
  w->any = true;
}

static bool region_expr_cb(Visitor *v, const Expr *e) {
  RegionWalk *w = v->user;
  if (e->kind == EXPR_LOAD && e->load.buffer == w->b && w->loads) region_add(w, e->load.indices, e->load.n);
  return w->ok;
}

static void region_exprs(RegionWalk *w, const Expr *e) {
  Visitor v = {NULL, region_expr_cb, w};
  visit_expr(&v, e);
}

static void region_stmt(RegionWalk *w, const Stmt *s) {
  if (!s || !w->ok || s == w->skip) return;
  switch (s->kind) {
    case STMT_FOR: {
      /* Loops that never touch b add nothing, and evaluating their ranges
       * made placing each of an unrolled LSTM's step temporaries walk all
       * the other steps' loops. */
      if (!transform_stmt_touches_buffer(s, w->b)) return;
      IntSet lo = arith_eval_set(w->c->az, s->loop.min, &w->dom);
      IntSet hi = arith_eval_set(w->c->az, expr_sub(w->c->arena, expr_add(w->c->arena, s->loop.min, s->loop.extent),
                                                    expr_i64(w->c->arena, 1)),
                                 &w->dom);
      if (!lo.min || !hi.max) {
        w->ok = false;
        return;
      }
      IntSet *r = ARENA_NEW(w->c->arena, IntSet);
      r->min = lo.min;
      r->max = hi.max;
      ptrmap_put(&w->dom, s->loop.var, r);
      region_stmt(w, s->loop.body);
      return;
    }
    case STMT_STORE:
      region_exprs(w, s->store.value);
      for (int i = 0; i < s->store.n; i++) region_exprs(w, s->store.indices[i]);
      if (s->store.buffer == w->b && w->stores) region_add(w, s->store.indices, s->store.n);
      return;
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n; i++) region_stmt(w, s->seq.stmts[i]);
      return;
    case STMT_IF:
      region_exprs(w, s->if_.cond);
      region_stmt(w, s->if_.then_s);
      region_stmt(w, s->if_.else_s);
      return;
    case STMT_ALLOCATE: region_stmt(w, s->alloc.body); return;
    case STMT_EVALUATE: return;
    default: w->ok = false; return; /* blocks: not lowered yet */
  }
}

/* Region of b's accesses in s (loops inside s relaxed); NULL if unknown. */
static IntSet *region_of(CompactCtx *c, const Buffer *b, const Stmt *s, bool loads, bool stores) {
  RegionWalk w = {c, b, {0}, ARENA_ARRAY(c->arena, IntSet, b->ndim), false, true, loads, stores, NULL};
  ptrmap_init(&w.dom, c->arena);
  region_stmt(&w, s);
  return w.ok && w.any ? w.box : NULL;
}

/* ---- may the allocation move inside loop L? ---- */

/* The smallest constant T > 1 with floordiv(v, T) or floormod(v, T) in e
 * (a fused loop's variable), or 0. */
typedef struct FusedCtx {
  const Expr *v;
  int64_t t;
} FusedCtx;

static bool fused_cb(Visitor *vis, const Expr *e) {
  FusedCtx *f = vis->user;
  int64_t t;
  if ((e->kind == EXPR_FLOORDIV || e->kind == EXPR_FLOORMOD) && e->bin.a == f->v && expr_as_int(e->bin.b, &t) &&
      t > 1 && (!f->t || t < f->t))
    f->t = t;
  return true;
}

/* Are the regions `box` (in terms of v, v in [min, min + ext); enclosing
 * loops bound in the analyzer) of any two iterations of v disjoint? */
static bool box_disjoint(CompactCtx *c, const Buffer *b, const IntSet *box, const Expr *v, const Expr *min,
                         int64_t ext, int depth) {
  if (ext <= 1) return true;
  Arena *a = c->arena;
  PtrMap next;
  ptrmap_init(&next, a);
  ptrmap_put(&next, v, (void *)expr_add(a, v, expr_i64(a, 1)));
  /* v and v + 1 both in range. */
  arith_bind_range(c->az, v, min, expr_i64(a, ext - 1));
  bool disjoint = false;
  for (int d = 0; d < b->ndim && !disjoint; d++) {
    const Expr *lo_next = expr_substitute(a, box[d].min, &next);
    disjoint = arith_can_prove(c->az, expr_binary(a, EXPR_GT, lo_next, box[d].max));
  }
  /* A fused loop walks its tiles through floordiv/floormod, so no single
   * dimension moves monotonically; when the tiles are whole rows they still
   * follow one another in row-major order: v + 1's first element lies
   * after v's last. */
  const Expr *flat_lo = expr_i64(a, 0), *flat_hi = flat_lo;
  int64_t stride = 1, dim;
  for (int d = b->ndim - 1; d >= 0 && !disjoint && !b->strides; d--) {
    if (!expr_as_int(b->shape[d], &dim) || dim < 1 || stride > INT64_MAX / dim) break;
    flat_lo = expr_add(a, flat_lo, expr_mul(a, box[d].min, expr_i64(a, stride)));
    flat_hi = expr_add(a, flat_hi, expr_mul(a, box[d].max, expr_i64(a, stride)));
    stride *= dim;
    if (d == 0)
      disjoint = arith_can_prove(c->az, expr_binary(a, EXPR_GT, expr_substitute(a, flat_lo, &next), flat_hi));
  }
  arith_bind_range(c->az, v, min, expr_i64(a, ext));
  if (disjoint || depth >= 4 || !expr_is_int(min, 0)) return disjoint;
  /* Otherwise split a fused v back into its loops, v = q*T + r: two
   * iterations differ in r at equal q (disjoint over r, q fixed) or in q
   * (disjoint over q, each region the hull over all r). Column tiles of
   * batch x tiles are the case. */
  FusedCtx fc = {v, 0};
  Visitor vis = {NULL, fused_cb, &fc};
  for (int d = 0; d < b->ndim; d++) visit_expr(&vis, box[d].min), visit_expr(&vis, box[d].max);
  if (!fc.t) return false;
  int64_t t = fc.t, qext = (ext + t - 1) / t;
  const Expr *q = expr_var(a, "fused_q", DT_I64), *r = expr_var(a, "fused_r", DT_I64);
  PtrMap split;
  ptrmap_init(&split, a);
  ptrmap_put(&split, v, (void *)expr_add(a, expr_mul(a, q, expr_i64(a, t)), r));
  arith_bind_range(c->az, q, expr_i64(a, 0), expr_i64(a, qext));
  arith_bind_range(c->az, r, expr_i64(a, 0), expr_i64(a, t));
  IntSet *by_r = ARENA_ARRAY(a, IntSet, b->ndim), *by_q = ARENA_ARRAY(a, IntSet, b->ndim);
  PtrMap rdom;
  ptrmap_init(&rdom, a);
  IntSet *rset = ARENA_NEW(a, IntSet);
  *rset = intset_range(c->az, expr_i64(a, 0), expr_i64(a, t));
  ptrmap_put(&rdom, r, rset);
  for (int d = 0; d < b->ndim; d++) {
    by_r[d].min = arith_simplify(c->az, expr_substitute(a, box[d].min, &split));
    by_r[d].max = arith_simplify(c->az, expr_substitute(a, box[d].max, &split));
    IntSet lo = arith_eval_set(c->az, by_r[d].min, &rdom), hi = arith_eval_set(c->az, by_r[d].max, &rdom);
    if (!lo.min || !hi.max) return false;
    by_q[d].min = lo.min, by_q[d].max = hi.max;
  }
  const Expr *zero = expr_i64(a, 0);
  return box_disjoint(c, b, by_r, r, zero, t, depth + 1) && box_disjoint(c, b, by_q, q, zero, qext, depth + 1);
}

static bool regions_disjoint(CompactCtx *c, const Buffer *b, const Stmt *loop) {
  int64_t ext;
  if (!expr_as_int(loop->loop.extent, &ext)) return false;
  if (ext <= 1) return true;
  IntSet *box = region_of(c, b, loop->loop.body, true, true);
  if (!box) return false;
  bool disjoint = box_disjoint(c, b, box, loop->loop.var, loop->loop.min, ext, 0);
  arith_bind_range(c->az, loop->loop.var, loop->loop.min, loop->loop.extent);
  return disjoint;
}

typedef VEC(const Stmt *) LoopList;

/* The box written by `b[u_0 + c_0, ...] = ...` under loops `loops` (inside
 * the candidate loop): each index one distinct loop variable plus an offset
 * free of those loops. False when the store does not have that shape. */
static bool store_box(CompactCtx *c, const Stmt *st, const LoopList *loops, IntSet *out) {
  Arena *a = c->arena;
  const Expr **used = ARENA_ARRAY(a, const Expr *, st->store.n);
  for (int d = 0; d < st->store.n; d++) {
    const Stmt *hit = NULL;
    for (int k = 0; k < loops->n; k++) {
      if (!expr_uses_var(st->store.indices[d], loops->items[k]->loop.var)) continue;
      if (hit) return false;
      hit = loops->items[k];
    }
    if (!hit) { /* a single element */
      out[d].min = out[d].max = arith_simplify(c->az, st->store.indices[d]);
      used[d] = NULL;
      continue;
    }
    for (int k = 0; k < loops->n; k++)
      if (expr_uses_var(hit->loop.min, loops->items[k]->loop.var) ||
          expr_uses_var(hit->loop.extent, loops->items[k]->loop.var))
        return false;
    for (int e = 0; e < d; e++)
      if (used[e] == hit->loop.var) return false;
    used[d] = hit->loop.var;
    const Expr *off = arith_simplify(c->az, expr_sub(a, st->store.indices[d], hit->loop.var));
    for (int k = 0; k < loops->n; k++)
      if (expr_uses_var(off, loops->items[k]->loop.var)) return false;
    out[d].min = arith_simplify(c->az, expr_add(a, hit->loop.min, off));
    out[d].max = arith_simplify(c->az, expr_sub(a, expr_add(a, out[d].min, hit->loop.extent), expr_i64(a, 1)));
  }
  return true;
}

/* Does s (through loops and sequences only, so unconditionally) contain a
 * box store of b covering `need`? */
static bool has_covering_store(CompactCtx *c, const Buffer *b, const Stmt *s, LoopList *loops, const IntSet *need) {
  switch (s->kind) {
    case STMT_FOR: {
      VEC_PUSH(c->arena, *loops, s);
      bool ok = has_covering_store(c, b, s->loop.body, loops, need);
      loops->n--;
      return ok;
    }
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n; i++)
        if (has_covering_store(c, b, s->seq.stmts[i], loops, need)) return true;
      return false;
    case STMT_STORE: {
      if (s->store.buffer != b || s->store.n != b->ndim) return false;
      IntSet *box = ARENA_ARRAY(c->arena, IntSet, b->ndim);
      if (!store_box(c, s, loops, box)) return false;
      for (int d = 0; d < b->ndim; d++) {
        if (!arith_can_prove(c->az, expr_binary(c->arena, EXPR_LE, box[d].min, need[d].min))) return false;
        if (!arith_can_prove(c->az, expr_binary(c->arena, EXPR_GE, box[d].max, need[d].max))) return false;
      }
      return true;
    }
    default: return false;
  }
}

typedef struct AccessCtx {
  const Buffer *b;
  bool loads, stores;
} AccessCtx;

static bool access_stmt_cb(Visitor *v, const Stmt *s) {
  AccessCtx *c = v->user;
  if (s->kind == STMT_STORE && s->store.buffer == c->b) c->stores = true;
  return true;
}

static bool access_expr_cb(Visitor *v, const Expr *e) {
  AccessCtx *c = v->user;
  if (e->kind == EXPR_LOAD && e->load.buffer == c->b) c->loads = true;
  return true;
}

static AccessCtx accesses(const Stmt *s, const Buffer *b) {
  AccessCtx c = {b, false, false};
  Visitor v = {access_stmt_cb, access_expr_cb, &c};
  visit_stmt(&v, s);
  return c;
}

/* Does every load of b in s read an element that s wrote before, in the
 * same execution of s? A sequence: each statement that loads b is covered
 * itself, or an earlier statement writes a box covering its loads. A loop:
 * each iteration is covered, so it reads only what it wrote itself (the
 * register tile loaded, updated and stored per iteration of a tile loop; a
 * row sum recomputed by every iteration of a partitioned tail). Iterations
 * may overlap: they pass nothing to each other either way. A parallel loop
 * among them shares b only where allocate_compact makes that safe. */
static bool covered(CompactCtx *c, const Buffer *b, const Stmt *s) {
  if (s->kind == STMT_ALLOCATE) return covered(c, b, s->alloc.body);
  if (s->kind == STMT_FOR) {
    if (s->loop.kind == FOR_THREAD_BINDING) return false;
    arith_bind_range(c->az, s->loop.var, s->loop.min, s->loop.extent);
    return covered(c, b, s->loop.body);
  }
  if (s->kind != STMT_SEQ) return false;
  for (int i = 0; i < s->seq.n; i++) {
    const Stmt *st = s->seq.stmts[i];
    if (!accesses(st, b).loads || covered(c, b, st)) continue;
    IntSet *need = region_of(c, b, st, true, false);
    bool ok = false;
    for (int j = i - 1; j >= 0 && need && !ok; j--) {
      LoopList loops = {0};
      ok = has_covering_store(c, b, s->seq.stmts[j], &loops, need);
    }
    if (!ok) return false;
  }
  return true;
}

static bool written_before_read(CompactCtx *c, const Buffer *b, const Stmt *loop) {
  return covered(c, b, loop->loop.body);
}

/* ---- placement and rewriting ---- */

typedef struct RebaseCtx {
  const Buffer *from;
  const Buffer *to;
  const Expr *const *lo;
  const Expr *lead; /* non-NULL: a leading index (the expanded dimension) */
} RebaseCtx;

static const Expr *const *rebase_indices(Arena *a, const RebaseCtx *r, const Expr *const *idx, int n) {
  int k = r->lead ? 1 : 0;
  const Expr **out = ARENA_ARRAY(a, const Expr *, n + k);
  if (k) out[0] = r->lead;
  for (int d = 0; d < n; d++) out[k + d] = expr_is_int(r->lo[d], 0) ? idx[d] : expr_sub(a, idx[d], r->lo[d]);
  return out;
}

static const Expr *rebase_expr_cb(Mutator *m, const Expr *e) {
  RebaseCtx *r = m->user;
  e = mutate_expr_children(m, e);
  if (e->kind != EXPR_LOAD || e->load.buffer != r->from) return e;
  return expr_load(m->arena, r->to, rebase_indices(m->arena, r, e->load.indices, e->load.n),
                   e->load.n + (r->lead ? 1 : 0));
}

static const Stmt *rebase_stmt_cb(Mutator *m, const Stmt *s) {
  RebaseCtx *r = m->user;
  s = mutate_stmt_children(m, s);
  if (s->kind != STMT_STORE || s->store.buffer != r->from) return s;
  return stmt_store(m->arena, r->to, s->store.value, rebase_indices(m->arena, r, s->store.indices, s->store.n),
                    s->store.n + (r->lead ? 1 : 0));
}

/* Mirrors the C code generator's stack limit (CODEGEN_C_STACK_LIMIT). */
enum { COMPACT_PRIVATE_LIMIT_BYTES = 64 * 1024 };

static int64_t region_bytes(CompactCtx *c, const Buffer *b, const Stmt *s);
static const Stmt *place(CompactCtx *c, const Buffer *b, const Stmt *s);

/* ---- parallel loops inside a shared allocation ----
 * An allocation around a parallel loop and other statements (no cut
 * between them was proven safe) is one copy for all the loop's iterations.
 * Iterations storing the same places of it race (each recomputing one row
 * sum: one initializes it while another accumulates), so such a loop gets
 * private copies where that provably changes no value, and runs serially
 * otherwise. */

/* Would private copies of b for the iterations of parallel loop p (inside
 * scope, which the allocation surrounds) compute the same values? Yes when
 * no value flows in (each iteration reads only what it wrote itself) and
 * none flows out (nothing else in scope loads a place p stores). */
static bool private_copies_exact(CompactCtx *c, const Buffer *b, const Stmt *scope, const Stmt *p) {
  if (!written_before_read(c, b, p)) return false;
  RegionWalk w = {c, b, {0}, ARENA_ARRAY(c->arena, IntSet, b->ndim), false, true, true, false, p};
  ptrmap_init(&w.dom, c->arena);
  region_stmt(&w, scope);
  if (!w.ok) return false;
  if (!w.any) return true;
  IntSet *stored = region_of(c, b, p, false, true);
  for (int d = 0; stored && d < b->ndim; d++)
    if (arith_can_prove(c->az, expr_binary(c->arena, EXPR_LT, w.box[d].max, stored[d].min)) ||
        arith_can_prove(c->az, expr_binary(c->arena, EXPR_LT, stored[d].max, w.box[d].min)))
      return true;
  return false;
}

/* s with every parallel loop that stores b at places its iterations share
 * given private copies of b (private_copies_exact) or made serial. */
static const Stmt *parallel_safe(CompactCtx *c, const Buffer *b, const Stmt *scope, const Stmt *s) {
  Arena *a = c->arena;
  switch (s->kind) {
    case STMT_FOR: {
      if (s->loop.kind == FOR_THREAD_BINDING || !transform_stmt_touches_buffer(s, b)) return s;
      arith_bind_range(c->az, s->loop.var, s->loop.min, s->loop.extent);
      if (s->loop.kind != FOR_PARALLEL) {
        const Stmt *body = parallel_safe(c, b, scope, s->loop.body);
        if (body == s->loop.body) return s;
        Stmt *n = arena_memdup(a, s, sizeof *s);
        n->loop.body = body;
        return n;
      }
      if (!accesses(s, b).stores || regions_disjoint(c, b, s)) return s;
      if (private_copies_exact(c, b, scope, s)) {
        Buffer *own = arena_memdup(a, b, sizeof *b);
        PtrMap to_own;
        ptrmap_init(&to_own, a);
        ptrmap_put(&to_own, b, own);
        const Stmt *placed = place(c, own, stmt_replace_buffers(a, s, &to_own));
        if (placed) return placed;
      }
      Stmt *serial = arena_memdup(a, s, sizeof *s);
      serial->loop.kind = FOR_SERIAL;
      return serial;
    }
    case STMT_SEQ: {
      const Stmt **out = ARENA_ARRAY(a, const Stmt *, s->seq.n);
      bool changed = false;
      for (int i = 0; i < s->seq.n; i++) {
        out[i] = parallel_safe(c, b, scope, s->seq.stmts[i]);
        changed |= out[i] != s->seq.stmts[i];
      }
      return changed ? stmt_seq(a, out, s->seq.n) : s;
    }
    case STMT_IF: {
      const Stmt *t = parallel_safe(c, b, scope, s->if_.then_s);
      const Stmt *e = s->if_.else_s ? parallel_safe(c, b, scope, s->if_.else_s) : NULL;
      return t == s->if_.then_s && e == s->if_.else_s ? s : stmt_if(a, s->if_.cond, t, e);
    }
    case STMT_ALLOCATE: {
      const Stmt *body = parallel_safe(c, b, scope, s->alloc.body);
      return body == s->alloc.body ? s : stmt_allocate(a, s->alloc.buffer, body);
    }
    default: return s;
  }
}

/* Allocate b around s, shrunk to the region s accesses. NULL when the
 * allocation would be private to a parallel loop's iteration and too big
 * for the stack (the caller then allocates further out). */
static const Stmt *allocate_compact(CompactCtx *c, const Buffer *b, const Stmt *s) {
  Arena *a = c->arena;
  if (c->parallel_depth > 0 && region_bytes(c, b, s) > COMPACT_PRIVATE_LIMIT_BYTES) return NULL;
  /* Parallel loops do not nest: inside one there is none to check. */
  if (c->parallel_depth == 0) s = parallel_safe(c, b, s, s);
  IntSet *box = b->strides ? NULL : region_of(c, b, s, true, true);
  if (!box) return stmt_allocate(a, b, s);
  const Expr **shape = ARENA_ARRAY(a, const Expr *, b->ndim);
  const Expr **lo = ARENA_ARRAY(a, const Expr *, b->ndim);
  bool changed = false;
  for (int d = 0; d < b->ndim; d++) {
    const Expr *ext = arith_simplify(c->az, expr_add(a, expr_sub(a, box[d].max, box[d].min), expr_i64(a, 1)));
    IntBound eb = arith_const_bound(c->az, ext);
    int64_t full;
    bool full_const = expr_as_int(b->shape[d], &full);
    if (eb.max == INT64_MAX || eb.max < 1 || (full_const && eb.max >= full)) {
      shape[d] = b->shape[d];
      lo[d] = expr_i64(a, 0);
      continue;
    }
    shape[d] = expr_i64(a, eb.max);
    lo[d] = box[d].min;
    changed = true;
  }
  if (!changed) return stmt_allocate(a, b, s);
  Buffer *nb = arena_memdup(a, b, sizeof *b);
  nb->shape = shape;
  RebaseCtx r = {b, nb, lo, NULL};
  Mutator m = {a, rebase_stmt_cb, rebase_expr_cb, &r};
  return stmt_allocate(a, nb, mutate_stmt(&m, s));
}



/* Bytes b would take compacted to its region in s (INT64_MAX if unknown). */
static int64_t region_bytes(CompactCtx *c, const Buffer *b, const Stmt *s) {
  IntSet *box = region_of(c, b, s, true, true);
  if (!box) return INT64_MAX;
  int64_t total = dtype_bytes(dtype_element(b->dtype));
  for (int d = 0; d < b->ndim; d++) {
    const Expr *ext = expr_add(c->arena, expr_sub(c->arena, box[d].max, box[d].min), expr_i64(c->arena, 1));
    IntBound eb = arith_const_bound(c->az, arith_simplify(c->az, ext));
    if (eb.max == INT64_MAX || eb.max > INT64_MAX / 2 / (total > 0 ? total : 1)) return INT64_MAX;
    total *= eb.max > 0 ? eb.max : 1;
  }
  return total;
}

/* A temporary each iteration of parallel loop `loop` uses privately but
 * that is too big for the stack: one copy of the per-iteration region per
 * iteration, iteration-major, b'[v - min, idx - lo(v)], allocated around the
 * loop. Same memory as the full buffer, but each task's region is
 * contiguous (a packed matmul panel stays packed). NULL when the region is
 * not bounded by constants or the copies would cost much more memory than
 * the buffer itself. */
static const Stmt *allocate_expanded(CompactCtx *c, const Buffer *b, const Stmt *loop) {
  Arena *a = c->arena;
  int64_t iters, full = 1, per = 1;
  if (b->strides || b->align_factor || !expr_as_int(loop->loop.extent, &iters)) return NULL;
  IntSet *box = region_of(c, b, loop->loop.body, true, true);
  if (!box) return NULL;
  const Expr **shape = ARENA_ARRAY(a, const Expr *, b->ndim + 1);
  const Expr **lo = ARENA_ARRAY(a, const Expr *, b->ndim);
  shape[0] = expr_i64(a, iters);
  for (int d = 0; d < b->ndim; d++) {
    int64_t dim;
    if (!expr_as_int(b->shape[d], &dim)) return NULL;
    full *= dim;
    const Expr *ext = arith_simplify(c->az, expr_add(a, expr_sub(a, box[d].max, box[d].min), expr_i64(a, 1)));
    IntBound eb = arith_const_bound(c->az, ext);
    if (eb.max == INT64_MAX || eb.max < 1) return NULL;
    int64_t e = eb.max < dim ? eb.max : dim;
    lo[d] = e < dim ? box[d].min : expr_i64(a, 0);
    shape[d + 1] = expr_i64(a, e);
    per *= e;
  }
  if (per > full || iters > (2 * full) / per + 1) return NULL;
  Buffer *nb = arena_memdup(a, b, sizeof *b);
  nb->ndim = b->ndim + 1;
  nb->shape = shape;
  RebaseCtx r = {b, nb, lo, expr_sub(a, loop->loop.var, loop->loop.min)};
  Mutator m = {a, rebase_stmt_cb, rebase_expr_cb, &r};
  return stmt_allocate(a, nb, mutate_stmt(&m, loop));
}

/* Do statements [from, mid) and [mid, to) of seq s access disjoint
 * regions of b (provably apart in some dimension)? */
static bool runs_disjoint(CompactCtx *c, const Buffer *b, const Stmt *s, int from, int mid, int to) {
  Arena *a = c->arena;
  IntSet *x = region_of(c, b, stmt_seq(a, s->seq.stmts + from, mid - from), true, true);
  IntSet *y = region_of(c, b, stmt_seq(a, s->seq.stmts + mid, to - mid), true, true);
  for (int d = 0; x && y && d < b->ndim; d++)
    if (arith_can_prove(c->az, expr_binary(a, EXPR_LT, x[d].max, y[d].min)) ||
        arith_can_prove(c->az, expr_binary(a, EXPR_LT, y[d].max, x[d].min)))
      return true;
  return false;
}

typedef VEC(const Stmt *) StmtList;

/* Places b in statements [from, to) of seq s, appending the result to
 * out; false when a placement would be too big for a parallel loop's
 * stack. One statement touching b: placed inside it. Several: cut before
 * the first statement p touching b from which no value flows back, i.e.
 * everything from p on is covered (reads only what it wrote itself) or
 * touches a region of b disjoint from what comes before p; each side gets
 * its own allocation (a loop and the tail partitioning split off it, row
 * tiles and their tail, column tiles). No such cut: one allocation around
 * them all. */
static bool place_run(CompactCtx *c, const Buffer *b, const Stmt *s, int from, int to, StmtList *out) {
  Arena *a = c->arena;
  int touching = 0, first = -1, last = -1;
  for (int i = from; i < to; i++)
    if (transform_stmt_touches_buffer(s->seq.stmts[i], b)) {
      if (first < 0) first = i;
      last = i;
      touching++;
    }
  if (touching <= 1) {
    const Stmt *placed = touching ? place(c, b, s->seq.stmts[last]) : NULL;
    if (touching && !placed) return false;
    for (int i = from; i < to; i++) VEC_PUSH(a, *out, i == last ? placed : s->seq.stmts[i]);
    return true;
  }
  /* Statements that do not touch b add nothing to its regions: the cut
   * tests read only the span from the first statement touching b to the
   * last (an LSTM's 64 unrolled steps, each with its own temporaries, made
   * them quadratic in the steps). */
  int end = last + 1;
  for (int p = first + 1; p < end; p++) {
    if (!transform_stmt_touches_buffer(s->seq.stmts[p], b)) continue;
    if (covered(c, b, stmt_seq(a, s->seq.stmts + p, end - p)) || runs_disjoint(c, b, s, first, p, end))
      return place_run(c, b, s, from, p, out) && place_run(c, b, s, p, to, out);
  }
  const Stmt *placed = allocate_compact(c, b, stmt_seq(a, s->seq.stmts + from, to - from));
  if (!placed) return false;
  VEC_PUSH(a, *out, placed);
  return true;
}

/* Places b in a sequence (see place_run); NULL as place. */
static const Stmt *place_seq(CompactCtx *c, const Buffer *b, const Stmt *s) {
  StmtList out = {0};
  if (!place_run(c, b, s, 0, s->seq.n, &out)) return NULL;
  return out.n == 1 ? out.items[0] : stmt_seq(c->arena, out.items, out.n);
}

/* Places b's allocation as deep in s as its accesses allow. NULL when the
 * only placements left would be private to a parallel loop's iterations
 * and too big for the stack; the parallel loop then keeps it outside. */
static const Stmt *place(CompactCtx *c, const Buffer *b, const Stmt *s) {
  Arena *a = c->arena;
  switch (s->kind) {
    case STMT_SEQ:
      if (!transform_stmt_touches_buffer(s, b)) break;
      return place_seq(c, b, s);
    case STMT_FOR: {
      if (s->loop.kind == FOR_THREAD_BINDING) break;
      arith_bind_range(c->az, s->loop.var, s->loop.min, s->loop.extent);
      bool disjoint = regions_disjoint(c, b, s);
      /* A parallel loop's iterations cannot pass values to each other
       * through b (every access of b is under it), so each may have its
       * own copy even where written_before_read cannot prove it; one copy
       * shared by iterations that touch the same places is a race. */
      bool parallel = s->loop.kind == FOR_PARALLEL;
      if (!disjoint && !parallel && !written_before_read(c, b, s)) break;
      /* Inside a parallel loop the allocation becomes per-iteration stack
       * memory, which code generators bound; disjoint tiles are race-free
       * in one shared buffer, so if no small enough placement exists
       * inside, it stays outside; overlapping ones get a copy per iteration
       * (allocate_expanded) or, failing that, the loop runs serially. */
      c->parallel_depth += parallel;
      const Stmt *body = place(c, b, s->loop.body);
      c->parallel_depth -= parallel;
      if (!body) {
        if (!parallel) return NULL;
        const Stmt *expanded = allocate_expanded(c, b, s);
        if (expanded) return expanded;
        if (disjoint) break;
        Stmt *serial = arena_memdup(a, s, sizeof *s);
        serial->loop.kind = FOR_SERIAL;
        return allocate_compact(c, b, serial);
      }
      Stmt *n = arena_memdup(a, s, sizeof *s);
      n->loop.body = body;
      return n;
    }
    case STMT_IF: {
      if ((s->if_.else_s && transform_stmt_touches_buffer(s->if_.else_s, b)) ||
          expr_reads_buffer(s->if_.cond, b))
        break;
      const Stmt *then_s = place(c, b, s->if_.then_s);
      return then_s ? stmt_if(a, s->if_.cond, then_s, s->if_.else_s) : NULL;
    }
    case STMT_ALLOCATE: {
      const Stmt *body = place(c, b, s->alloc.body);
      return body ? stmt_allocate(a, s->alloc.buffer, body) : NULL;
    }
    default: break;
  }
  return allocate_compact(c, b, s);
}

static const Stmt *compact_stmt_cb(Mutator *m, const Stmt *s) {
  CompactCtx *c = m->user;
  if (s->kind == STMT_FOR) arith_bind_range(c->az, s->loop.var, s->loop.min, s->loop.extent);
  s = mutate_stmt_children(m, s); /* inner allocations first */
  if (s->kind != STMT_ALLOCATE) return s;
  if (!transform_stmt_touches_buffer(s->alloc.body, s->alloc.buffer)) return s;
  return place(c, s->alloc.buffer, s->alloc.body);
}

static const Expr *keep_expr_cb(Mutator *m, const Expr *e) { return e; }

const PrimFunc *tir_compact_buffers(Arena *a, const PrimFunc *f) {
  CompactCtx c = {arith_analyzer_new(a), a, 0};
  Mutator m = {a, compact_stmt_cb, keep_expr_cb, &c};
  const Stmt *body = mutate_stmt(&m, f->body);
  return body == f->body ? f : transform_func_with_body(a, f, body);
}
