/* tir_inject_dma: the copy loops between global and local memory of a
 * scratchpad kernel become DMA statements (TVM's InjectCopyIntrin;
 * docs/transform.md, step 11; docs/schedule.md "Scratchpad targets").
 *
 * A copy nest is a perfect nest of sequential loops of constant extent
 * whose body is one store `D[d] = S[s]` (scalar, one dtype) between a
 * local and a non-local flat buffer: into local memory a get, out of it a
 * put. Both indices must be affine in the nest's loop variables with
 * constant coefficients: d = d0 + sum_k a_k v_k, s = s0 + sum_k b_k v_k
 * (a_k = d[v_k := min_k + 1] - d[v_k := min_k], proven equal to d by the
 * analyzer). From the innermost loop out:
 *   - a loop with a_k = b_k = 1 makes the contiguous row (else rows of one
 *     element);
 *   - loops with a_k = b_k = the row length so far lengthen the row
 *     (a whole contiguous block);
 *   - the next loop makes the rows (a_k, b_k the strides), and loops with
 *     a_k = rows x dst_stride, b_k = rows x src_stride add rows;
 *   - the loops left stay loops around the one DMA statement.
 * Merged loops run in the order the nest ran them, so the copy writes what
 * the loops wrote, in the same order. Anything else is left as it is (the
 * scratchpad verifier then names it). With PrimFunc.dma_double_buffer
 * the tile loops are then double-buffered (below). Runs only on kernels
 * scheduled for a local memory (PrimFunc.local_mem_bytes > 0): other
 * targets use `local` buffers for register tiles and packed panels, which
 * must stay loops. */
#include "tir/transform/transform.h"
#include "tir/transform/transform_util.h"

#include "arith/arith.h"
#include "support/ptrmap.h"
#include "support/vec.h"

#include <string.h>

enum { MAX_NEST = 16 };

typedef struct DmaCtx {
  Arena *a;
  Analyzer *az;
  int tickets; /* handed out so far (PrimFunc.dma_tickets) */
} DmaCtx;

/* The nest under s: its loops (outermost first; none for a copy of one
 * element, its unit loops simplified away) and the copy store; -1 when s
 * is not a copy nest. */
static int copy_nest(const Stmt *s, const Stmt **loops, const Stmt **store) {
  int n = 0;
  int64_t c;
  while (s->kind == STMT_FOR) {
    if (n == MAX_NEST || s->loop.kind == FOR_PARALLEL || s->loop.kind == FOR_THREAD_BINDING ||
        !expr_as_int(s->loop.extent, &c) || !expr_as_int(s->loop.min, &c))
      return -1;
    loops[n++] = s;
    s = s->loop.body;
  }
  if (s->kind != STMT_STORE || s->store.n != 1) return -1;
  const Expr *v = s->store.value;
  const Buffer *d = s->store.buffer;
  if (v->kind != EXPR_LOAD || v->load.n != 1 || v->dtype.lanes != 1 || s->store.indices[0]->dtype.lanes != 1 ||
      v->load.indices[0]->dtype.lanes != 1 || !dtype_eq(v->dtype, d->dtype) || v->load.buffer == d || d->ndim != 1 ||
      v->load.buffer->ndim != 1)
    return -1;
  bool dst_local = d->scope == SCOPE_LOCAL, src_local = v->load.buffer->scope == SCOPE_LOCAL;
  if (dst_local == src_local) return -1;
  *store = s;
  return n;
}

/* e with loop variable k at its min + delta and every other variable of
 * `fixed` (loops[i] for fixed[i]) at its min, simplified. */
static const Expr *at(DmaCtx *c, const Expr *e, const Stmt *const *loops, int n, const bool *fixed, int k,
                      int64_t delta) {
  PtrMap m;
  ptrmap_init(&m, c->a);
  for (int i = 0; i < n; i++)
    if (fixed[i] || i == k) {
      int64_t mn;
      expr_as_int(loops[i]->loop.min, &mn);
      ptrmap_put(&m, loops[i]->loop.var, (void *)expr_i64(c->a, mn + (i == k ? delta : 0)));
    }
  return arith_simplify(c->az, expr_substitute(c->a, e, &m));
}

/* The coefficient of each loop variable in e (false when e is not affine
 * in them with constant coefficients). */
static bool coefficients(DmaCtx *c, const Expr *e, const Stmt *const *loops, int n, int64_t *coef) {
  bool all[MAX_NEST] = {false};
  for (int i = 0; i < n; i++) all[i] = true;
  const Expr *base = at(c, e, loops, n, all, -1, 0), *sum = base;
  for (int k = 0; k < n; k++) {
    const Expr *d = arith_simplify(c->az, expr_sub(c->a, at(c, e, loops, n, all, k, 1), base));
    if (!expr_as_int(d, &coef[k])) return false;
    int64_t mn;
    expr_as_int(loops[k]->loop.min, &mn);
    sum = expr_add(c->a, sum, expr_mul(c->a, expr_i64(c->a, coef[k]),
                                       expr_sub(c->a, loops[k]->loop.var, expr_i64(c->a, mn))));
  }
  return arith_can_prove_equal(c->az, e, sum);
}

static const Stmt *inject(DmaCtx *c, const Stmt *const *loops, int n, const Stmt *store) {
  const Expr *d = store->store.indices[0], *sv = store->store.value, *s = sv->load.indices[0];
  int64_t a[MAX_NEST], b[MAX_NEST], ext[MAX_NEST];
  for (int k = 0; k < n; k++) {
    arith_bind_range(c->az, loops[k]->loop.var, loops[k]->loop.min, loops[k]->loop.extent);
    expr_as_int(loops[k]->loop.extent, &ext[k]);
  }
  if (!coefficients(c, d, loops, n, a) || !coefficients(c, s, loops, n, b)) return NULL;
  bool merged[MAX_NEST] = {false};
  int k = n - 1;
  int64_t row = 1, rows = 1, dst_stride = 0, src_stride = 0;
  if (k >= 0 && a[k] == 1 && b[k] == 1) row = ext[k], merged[k--] = true;
  while (k >= 0 && a[k] == row && b[k] == row) row *= ext[k], merged[k--] = true;
  if (k >= 0) {
    rows = ext[k], dst_stride = a[k], src_stride = b[k], merged[k--] = true;
    while (k >= 0 && a[k] == rows * dst_stride && b[k] == rows * src_stride) rows *= ext[k], merged[k--] = true;
  }
  if (rows == 1) dst_stride = row, src_stride = row;
  if (dst_stride < 0 || src_stride < 0) return NULL; /* the hooks take sizes: a reversed copy stays a loop */
  const Expr *d0 = at(c, d, loops, n, merged, -1, 0), *s0 = at(c, s, loops, n, merged, -1, 0);
  bool put = store->store.buffer->scope != SCOPE_LOCAL;
  const Stmt *out =
      stmt_dma(c->a, put ? DMA_PUT : DMA_GET, expr_load(c->a, store->store.buffer, &d0, 1),
               expr_load(c->a, sv->load.buffer, &s0, 1), expr_i64(c->a, row), expr_i64(c->a, rows),
               expr_i64(c->a, dst_stride), expr_i64(c->a, src_stride));
  /* The loops not merged stay around it, as sequential loops. */
  for (int i = k; i >= 0; i--)
    out = stmt_for(c->a, loops[i]->loop.var, loops[i]->loop.min, loops[i]->loop.extent,
                   loops[i]->loop.kind == FOR_UNROLLED ? FOR_UNROLLED : FOR_SERIAL, out);
  return out;
}

static const Stmt *inject_stmt_cb(Mutator *m, const Stmt *s) {
  DmaCtx *c = m->user;
  const Stmt *loops[MAX_NEST], *store = NULL;
  int n = copy_nest(s, loops, &store);
  const Stmt *dma = n >= 0 ? inject(c, loops, n, store) : NULL;
  if (dma) return dma;
  if (s->kind == STMT_FOR) arith_bind_range(c->az, s->loop.var, s->loop.min, s->loop.extent);
  return mutate_stmt_children(m, s);
}

static const Expr *keep_expr_cb(Mutator *m, const Expr *e) {
  (void)m;
  return e;
}

/* ---- double buffering (PrimFunc.dma_double_buffer; TVM's
 * InjectDoubleBuffer) ----
 *
 *   for v in m:n {                  allocate T2[2 x size] {
 *     allocate T[size] {              GET_ASYNC(t0, T2[0..], tile m)
 *       GET(T[0..], tile v)   ->      for v in m:n {
 *       compute(T)                      if v + 1 < m + n: GET_ASYNC(t(v + 1), T2[slot(v + 1)..], tile v + 1)
 *     }                                 WAIT(t(v))
 *   }                                   compute(T2[slot(v)..])
 *                                     }
 *                                   }
 *
 * slot(v) = floormod(v - m, 2) x size, t(v) = t0 + slot(v) x per_slot.
 * Tile i+1's copy is started before tile i is computed, into the other
 * half, and tile i's is waited for right before the first statement that
 * uses it, so a DMA engine copies while the core computes. Every start
 * has its own ticket (PrimFunc.dma_tickets): a get inside loops takes one
 * per iteration, each slot its own. Applies to a serial loop of constant
 * extent >= 2
 * whose body, under local allocations (wherever compaction nested them),
 * is a sequence that starts with DMA gets (each maybe inside loops) into
 * those allocations, and whose other statements only read them. */

enum { MAX_DB = 8 };

typedef struct Rebase {
  const Buffer *from[MAX_DB], *to[MAX_DB];
  const Expr *offset[MAX_DB];
  int n;
  Analyzer *az;
} Rebase;

static int rebase_find(const Rebase *r, const Buffer *b) {
  for (int i = 0; i < r->n; i++)
    if (r->from[i] == b) return i;
  return -1;
}

/* Loads of a doubled buffer move to their slot; every flat load's index
 * is simplified (the copies of the leading gets had the loop variable
 * substituted). */
static const Expr *rebase_expr_cb(Mutator *m, const Expr *e) {
  e = mutate_expr_children(m, e);
  const Rebase *r = m->user;
  if (e->kind != EXPR_LOAD || e->load.n != 1) return e;
  int i = rebase_find(r, e->load.buffer);
  const Expr *idx = arith_simplify(r->az, i < 0 ? e->load.indices[0] : expr_add(m->arena, e->load.indices[0], r->offset[i]));
  return expr_load(m->arena, i < 0 ? e->load.buffer : r->to[i], &idx, 1);
}

static const Stmt *rebase_stmt_cb(Mutator *m, const Stmt *s) {
  s = mutate_stmt_children(m, s);
  const Rebase *r = m->user;
  int i = s->kind == STMT_STORE && s->store.n == 1 ? rebase_find(r, s->store.buffer) : -1;
  if (i < 0) return s;
  const Expr *idx = arith_simplify(r->az, expr_add(m->arena, s->store.indices[0], r->offset[i]));
  return stmt_store(m->arena, r->to[i], s->store.value, &idx, 1);
}

/* s with every access to a doubled buffer moved to its slot `slot`. */
static const Stmt *rebase(DmaCtx *c, const Stmt *s, Rebase *r, const int64_t *sizes, const Expr *slot) {
  for (int i = 0; i < r->n; i++)
    r->offset[i] = arith_simplify(c->az, expr_mul(c->a, slot, expr_i64(c->a, sizes[i])));
  Mutator m = {c->a, rebase_stmt_cb, rebase_expr_cb, r};
  return mutate_stmt(&m, s);
}

/* The blocking DMA get at the bottom of s (s itself or a loop nest of
 * constant bounds around it; an asynchronous one is some inner loop's
 * double buffering already). */
static const Stmt *leading_get(const Stmt *s) {
  int64_t c;
  while (s->kind == STMT_FOR && (s->loop.kind == FOR_SERIAL || s->loop.kind == FOR_UNROLLED) &&
         expr_as_int(s->loop.min, &c) && expr_as_int(s->loop.extent, &c))
    s = s->loop.body;
  return s->kind == STMT_DMA && s->dma.dir == DMA_GET && !s->dma.ticket ? s : NULL;
}

/* Tickets a leading get takes per slot: one per iteration of its loops. */
static int64_t tickets_of(const Stmt *s) {
  int64_t n = 1, e;
  for (; s->kind == STMT_FOR; s = s->loop.body) n *= expr_as_int(s->loop.extent, &e) ? e : 1;
  return n;
}

/* The leading get `s` (a loop nest around a DMA) as its asynchronous start
 * (wait false) or its wait (true): each iteration of its loops gets the
 * ticket first + the iteration's row-major number. */
static const Stmt *with_ticket(DmaCtx *c, const Stmt *s, const Expr *first, bool wait) {
  if (s->kind == STMT_FOR) {
    int64_t per = tickets_of(s->loop.body);
    const Expr *iter = expr_sub(c->a, s->loop.var, s->loop.min);
    const Expr *at = expr_add(c->a, first, expr_mul(c->a, iter, expr_i64(c->a, per)));
    const Stmt *body = with_ticket(c, s->loop.body, at, wait);
    return stmt_for(c->a, s->loop.var, s->loop.min, s->loop.extent, s->loop.kind, body);
  }
  const Expr *t = arith_simplify(c->az, first);
  return wait ? stmt_dma_wait(c->a, t) : stmt_dma_async(c->a, s, t);
}

typedef struct WritesCtx {
  const Rebase *r;
  bool found;
} WritesCtx;

static bool writes_cb(Visitor *v, const Stmt *s) {
  WritesCtx *w = v->user;
  if ((s->kind == STMT_STORE && rebase_find(w->r, s->store.buffer) >= 0) ||
      (s->kind == STMT_DMA && rebase_find(w->r, s->dma.dst->load.buffer) >= 0))
    w->found = true;
  return !w->found;
}

/* A loop body as its local allocations and the statements under them in
 * order: compaction nests each allocation around the statements that use
 * it (`allocate A { GET A; allocate B { GET B; compute } }`); within one
 * iteration an allocation may as well cover the whole body. */
typedef struct Body {
  const Buffer *allocs[MAX_DB];
  int na;
  VEC(const Stmt *) items;
} Body;

static void flatten_body(Arena *a, const Stmt *s, Body *b) {
  if (s->kind == STMT_ALLOCATE && s->alloc.buffer->scope == SCOPE_LOCAL && b->na < MAX_DB) {
    b->allocs[b->na++] = s->alloc.buffer;
    flatten_body(a, s->alloc.body, b);
  } else if (s->kind == STMT_SEQ) {
    for (int i = 0; i < s->seq.n; i++) flatten_body(a, s->seq.stmts[i], b);
  } else {
    VEC_PUSH(a, b->items, s);
  }
}

static const Stmt *double_buffer_loop(DmaCtx *c, const Stmt *loop) {
  int64_t mn, ext;
  if (loop->loop.kind != FOR_SERIAL || !expr_as_int(loop->loop.min, &mn) || !expr_as_int(loop->loop.extent, &ext) ||
      ext < 2)
    return NULL;
  Body body_parts = {.na = 0};
  flatten_body(c->a, loop->loop.body, &body_parts);
  int na = body_parts.na, n_items = body_parts.items.n;
  const Stmt *const *items = body_parts.items.items;
  if (na == 0 || n_items < 2) return NULL;
  /* The leading gets and the allocations they fill. */
  bool doubled[MAX_DB] = {false};
  int lead = 0;
  for (; lead < n_items - 1; lead++) {
    const Stmt *g = leading_get(items[lead]);
    int which = -1;
    for (int i = 0; g && i < na; i++)
      if (body_parts.allocs[i] == g->dma.dst->load.buffer) which = i;
    if (which < 0) break;
    doubled[which] = true;
  }
  Rebase r = {.n = 0, .az = c->az};
  int64_t sizes[MAX_DB];
  for (int i = 0; i < na; i++) {
    const Buffer *b = body_parts.allocs[i];
    if (!doubled[i]) continue;
    if (b->ndim != 1 || b->strides || !expr_as_int(b->shape[0], &sizes[r.n])) return NULL;
    const Expr *twice = expr_i64(c->a, 2 * sizes[r.n]);
    Buffer *nb = buffer_new(c->a, b->name, b->dtype, 1, &twice);
    nb->scope = b->scope;
    nb->align = b->align;
    r.from[r.n] = b, r.to[r.n++] = nb;
  }
  if (r.n == 0) return NULL;
  /* The rest only reads what the leading gets wrote. */
  WritesCtx w = {&r, false};
  Visitor v = {writes_cb, NULL, &w};
  for (int i = lead; i < n_items; i++) visit_stmt(&v, items[i]);
  if (w.found) return NULL;

  Arena *a = c->a;
  const Expr *var = loop->loop.var, *first = expr_i64(a, mn);
  PtrMap at_first, at_next;
  ptrmap_init(&at_first, a);
  ptrmap_init(&at_next, a);
  ptrmap_put(&at_first, var, (void *)first);
  ptrmap_put(&at_next, var, (void *)expr_add(a, var, expr_i64(a, 1)));
  const Expr *slot_next = expr_binary(a, EXPR_FLOORMOD, expr_sub(a, expr_add(a, var, expr_i64(a, 1)), first), expr_i64(a, 2));
  const Expr *slot_now = expr_binary(a, EXPR_FLOORMOD, expr_sub(a, var, first), expr_i64(a, 2));
  /* Tickets: slot s of leading get i takes base + s x per_slot + its
   * offset + the iteration of its loops. */
  int64_t offset[MAX_DB * 4], per_slot = 0;
  if (lead > MAX_DB * 4) return NULL;
  for (int i = 0; i < lead; i++) offset[i] = per_slot, per_slot += tickets_of(items[i]);
  if (c->tickets + 2 * per_slot > (1 << 20)) return NULL; /* absurd: stay blocking */
  int64_t base = c->tickets;
  c->tickets += (int)(2 * per_slot);
  VEC(const Stmt *) prologue = {0}, body = {0};
  VEC(const Stmt *) prefetch = {0};
  for (int i = 0; i < lead; i++) {
    const Expr *t0 = expr_i64(a, base + offset[i]);
    const Expr *t_next = expr_add(a, t0, expr_mul(a, slot_next, expr_i64(a, per_slot)));
    const Stmt *tile_first = rebase(c, stmt_substitute(a, items[i], &at_first), &r, sizes, expr_i64(a, 0));
    const Stmt *tile_next = rebase(c, stmt_substitute(a, items[i], &at_next), &r, sizes, slot_next);
    VEC_PUSH(a, prologue, with_ticket(c, tile_first, t0, false));
    VEC_PUSH(a, prefetch, with_ticket(c, tile_next, t_next, false));
  }
  const Expr *not_last = expr_lt(a, var, expr_i64(a, mn + ext - 1));
  VEC_PUSH(a, body, stmt_if(a, not_last, stmt_seq(a, prefetch.items, prefetch.n), NULL));
  /* Each tile is waited for right before the first statement that uses
   * its buffer (at the end when none does: its ticket is reused). */
  bool waited[MAX_DB * 4] = {false};
  for (int j = lead; j <= n_items; j++) {
    for (int i = 0; i < lead; i++) {
      const Buffer *tile = leading_get(items[i])->dma.dst->load.buffer;
      if (waited[i] || (j < n_items && !transform_stmt_touches_buffer(items[j], tile))) continue;
      const Expr *t_now = expr_add(a, expr_i64(a, base + offset[i]), expr_mul(a, slot_now, expr_i64(a, per_slot)));
      VEC_PUSH(a, body, with_ticket(c, rebase(c, items[i], &r, sizes, slot_now), t_now, true));
      waited[i] = true;
    }
    if (j < n_items) VEC_PUSH(a, body, rebase(c, items[j], &r, sizes, slot_now));
  }
  const Stmt *loop_body = stmt_seq(a, body.items, body.n);
  for (int i = na - 1; i >= 0; i--)
    if (!doubled[i]) loop_body = stmt_allocate(a, body_parts.allocs[i], loop_body);
  const Stmt *out = stmt_seq2(a, stmt_seq(a, prologue.items, prologue.n),
                              stmt_for(a, var, loop->loop.min, loop->loop.extent, FOR_SERIAL, loop_body));
  for (int i = r.n - 1; i >= 0; i--) out = stmt_allocate(a, r.to[i], out);
  return out;
}

static const Stmt *double_buffer_cb(Mutator *m, const Stmt *s) {
  s = mutate_stmt_children(m, s); /* inner loops first */
  const Stmt *d = s->kind == STMT_FOR ? double_buffer_loop(m->user, s) : NULL;
  return d ? d : s;
}

const PrimFunc *tir_inject_dma(Arena *a, const PrimFunc *f) {
  if (f->local_mem_bytes <= 0) return f;
  DmaCtx c = {a, arith_analyzer_new(a), f->dma_tickets};
  Mutator m = {a, inject_stmt_cb, keep_expr_cb, &c};
  const Stmt *body = mutate_stmt(&m, f->body);
  if (f->dma_double_buffer) {
    Mutator db = {a, double_buffer_cb, keep_expr_cb, &c};
    body = mutate_stmt(&db, body);
  }
  if (body == f->body) return f;
  PrimFunc *n = arena_memdup(a, f, sizeof *n);
  n->body = body;
  n->dma_tickets = c.tickets;
  return n;
}
