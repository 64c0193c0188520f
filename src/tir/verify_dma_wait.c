/* tir_verify_dma_waits: every access to a local buffer waits for the
 * asynchronous DMA that fills it (docs/schedule.md "Scratchpad targets").
 *
 * An asynchronous start (`dma_get_async(T, ...)`) may copy at any time
 * until `dma_wait(T)`: until then its local end holds no defined value (a
 * get) or must not change (a put). This pass proves, statically and for
 * every iteration, that no load or store of a local buffer, and no other
 * copy into or out of it, touches an element range of a copy still in
 * flight, and that every copy is waited for before its buffer's scope
 * ends. It walks the statements in order with the set of copies in flight:
 *
 *   - a start adds one (its ticket, the element range of its local end,
 *     the conditions of the ifs around it); a nest of constant loops whose
 *     innermost statement is one start (a strided tile's rows) adds one
 *     family, its loop variables ranging over their loops;
 *   - a wait (or a wait nest of the same shape) removes the copy whose
 *     ticket it provably equals;
 *   - an access conflicts with a copy of its buffer unless their ranges are
 *     provably disjoint (the analyzer, with each enclosing loop variable
 *     also split by parity, v = min + 2j + r: the two halves of a double
 *     buffer are floormod(v, 2) apart);
 *   - a loop is checked for its first iteration with the copies in flight
 *     before it, then for a later iteration with those in flight at the end
 *     of the previous one (renamed v := v - 1), until that set is stable:
 *     tile i+1's prefetch, started in iteration i, is the copy in flight at
 *     the top of iteration i+1 that its wait must remove;
 *   - an if is checked both ways: a wait in one branch only removes
 *     nothing.
 *
 * Conservative: what it cannot prove it rejects, naming the kernel, the
 * buffer and the copy's ticket. */
#include "tir/text.h"

#include "arith/arith.h"
#include "support/ptrmap.h"
#include "support/strbuf.h"
#include "support/vec.h"

enum { MAX_LOOPS = 32, MAX_ROUNDS = 4 };

typedef struct InFlight {
  const Stmt *start; /* the asynchronous STMT_DMA */
  const Stmt *nest;  /* the loop nest around it (NULL: none) */
  const Buffer *local;
  bool get;          /* fills `local` (any access conflicts); a put only reads it (stores conflict) */
  const Expr *ticket, *lo, *hi; /* element range of the local end, inclusive */
  const Expr *guard; /* started only where this holds (NULL: always) */
} InFlight;

typedef VEC(InFlight) Flights;

typedef struct LoopRange {
  const Expr *var;
  int64_t min, extent;
} LoopRange;

typedef struct WaitCheck {
  const PrimFunc *f;
  Arena *a;
  Analyzer *az;
  LoomError *err;
  bool failed;
  LoopRange loops[MAX_LOOPS]; /* the enclosing loops, for parity splits */
  int n_loops;
  const Expr *guard; /* the conditions of the enclosing ifs */
} WaitCheck;

static void check_stmt(WaitCheck *w, const Stmt *s, Flights *fl);

static bool wfail(WaitCheck *w, const InFlight *x, const char *what, const char *name) {
  if (!w->failed)
    err_set(w->err, LOOM_ERR_INVALID_ARG,
            "kernel \"%s\": %s \"%s\" while its asynchronous DMA %s (ticket %s) may still be in flight; "
            "a dma_wait of that ticket must come first",
            w->f->name, what, name, x->get ? "into it" : "out of it",
            expr_to_string(w->a, arith_simplify(w->az, x->ticket)));
  w->failed = true;
  return false;
}

/* x == y wherever they are evaluated (a loop's first iteration binds its
 * variable to one value, which the simplifier need not substitute). */
static bool same_value(WaitCheck *w, const Expr *x, const Expr *y) {
  if (arith_can_prove_equal(w->az, x, y)) return true;
  IntBound b = arith_const_bound(w->az, arith_simplify(w->az, expr_sub(w->a, x, y)));
  return b.min == 0 && b.max == 0;
}

static Flights flights_copy(WaitCheck *w, const Flights *fl) {
  Flights c = {0};
  for (int i = 0; i < fl->n; i++) VEC_PUSH(w->a, c, fl->items[i]);
  return c;
}

/* ---- the nests of constant loops around one start or wait ---- */

/* The start or wait at the bottom of s (s itself or a nest of constant
 * loops with it alone inside); NULL otherwise. */
static const Stmt *nest_leaf(const Stmt *s) {
  int64_t c;
  while (s->kind == STMT_FOR && expr_as_int(s->loop.min, &c) && expr_as_int(s->loop.extent, &c)) s = s->loop.body;
  if (s->kind == STMT_DMA_WAIT || (s->kind == STMT_DMA && s->dma.ticket)) return s;
  return NULL;
}

/* The wait nest w has the shape of the start nest x: variable by variable
 * the same bounds, in *map w's variables as x's. */
static bool same_shape(Arena *a, const Stmt *x, const Stmt *w, PtrMap *map) {
  ptrmap_init(map, a);
  while (x->kind == STMT_FOR && w->kind == STMT_FOR) {
    int64_t xm, xe, wm, we;
    expr_as_int(x->loop.min, &xm), expr_as_int(x->loop.extent, &xe);
    expr_as_int(w->loop.min, &wm), expr_as_int(w->loop.extent, &we);
    if (xm != wm || xe != we) return false;
    ptrmap_put(map, w->loop.var, (void *)x->loop.var);
    x = x->loop.body, w = w->loop.body;
  }
  return x->kind != STMT_FOR && w->kind != STMT_FOR;
}

static void bind_nest(WaitCheck *w, const Stmt *s) {
  for (; s->kind == STMT_FOR; s = s->loop.body) arith_bind_range(w->az, s->loop.var, s->loop.min, s->loop.extent);
}

/* ---- element ranges ---- */

/* The elements an index touches: [*lo, *hi]. A vector index is a sum of
 * ramps, broadcasts and scalars scaled by constants (what vectorize
 * leaves); false for any other. */
static bool index_range(WaitCheck *w, const Expr *idx, const Expr **lo, const Expr **hi) {
  if (idx->dtype.lanes == 1) {
    *lo = *hi = idx;
    return true;
  }
  const Expr *alo, *ahi, *blo, *bhi;
  int64_t c;
  switch (idx->kind) {
    case EXPR_BROADCAST: return index_range(w, idx->broadcast.value, lo, hi);
    case EXPR_RAMP: {
      if (!expr_as_int(idx->ramp.stride, &c) || !index_range(w, idx->ramp.base, &alo, &ahi)) return false;
      const Expr *span = expr_i64(w->a, c * (idx->ramp.lanes - 1));
      *lo = c >= 0 ? alo : expr_add(w->a, alo, span);
      *hi = c >= 0 ? expr_add(w->a, ahi, span) : ahi;
      return true;
    }
    case EXPR_ADD:
    case EXPR_SUB:
      if (!index_range(w, idx->bin.a, &alo, &ahi) || !index_range(w, idx->bin.b, &blo, &bhi)) return false;
      *lo = idx->kind == EXPR_ADD ? expr_add(w->a, alo, blo) : expr_sub(w->a, alo, bhi);
      *hi = idx->kind == EXPR_ADD ? expr_add(w->a, ahi, bhi) : expr_sub(w->a, ahi, blo);
      return true;
    case EXPR_MUL: {
      const Expr *x = idx->bin.a, *k = idx->bin.b;
      if (k->kind == EXPR_BROADCAST) k = k->broadcast.value;
      if (!expr_as_int(k, &c)) {
        x = idx->bin.b, k = idx->bin.a;
        if (k->kind == EXPR_BROADCAST) k = k->broadcast.value;
        if (!expr_as_int(k, &c)) return false;
      }
      if (!index_range(w, x, &alo, &ahi)) return false;
      const Expr *ce = expr_i64(w->a, c);
      *lo = expr_mul(w->a, c >= 0 ? alo : ahi, ce);
      *hi = expr_mul(w->a, c >= 0 ? ahi : alo, ce);
      return true;
    }
    default: return false;
  }
}

/* The local end of a DMA statement: buffer and element range. */
static const Buffer *dma_local(WaitCheck *w, const Stmt *s, const Expr **lo, const Expr **hi) {
  bool get = s->dma.dir == DMA_GET;
  const Expr *end = get ? s->dma.dst : s->dma.src;
  const Expr *stride = get ? s->dma.dst_stride : s->dma.src_stride;
  *lo = end->load.indices[0];
  /* lo + (rows - 1) x stride + row_elems - 1 */
  const Expr *span = expr_add(w->a, expr_mul(w->a, expr_sub(w->a, s->dma.rows, expr_i64(w->a, 1)), stride), s->dma.row_elems);
  *hi = expr_add(w->a, *lo, expr_sub(w->a, span, expr_i64(w->a, 1)));
  return end->load.buffer;
}

static bool prove_disjoint(WaitCheck *w, const Expr *lo, const Expr *hi, const Expr *x_lo, const Expr *x_hi) {
  return arith_can_prove(w->az, expr_lt(w->a, hi, x_lo)) || arith_can_prove(w->az, expr_lt(w->a, x_hi, lo));
}

/* e with var := value. Not simplified: what is kept of a copy in flight
 * must hold in every iteration, not only under the ranges bound now (the
 * first iteration's k0 = 0 would turn floormod(k0 + 1, 2) into k0 + 1). */
static const Expr *subst1(WaitCheck *w, const Expr *e, const Expr *var, const Expr *value) {
  if (!e) return NULL;
  PtrMap m;
  ptrmap_init(&m, w->a);
  ptrmap_put(&m, var, (void *)value);
  return expr_substitute(w->a, e, &m);
}

/* [lo, hi] and x's range are disjoint wherever x may be in flight: proven
 * directly, or for each parity of one enclosing loop variable. */
static bool disjoint(WaitCheck *w, const Expr *lo, const Expr *hi, const InFlight *x) {
  if (prove_disjoint(w, lo, hi, x->lo, x->hi)) return true;
  for (int k = w->n_loops - 1; k >= 0; k--) {
    const LoopRange *l = &w->loops[k];
    if (l->extent < 2 || !(expr_uses_var(lo, l->var) || expr_uses_var(hi, l->var) || expr_uses_var(x->lo, l->var) ||
                           expr_uses_var(x->hi, l->var)))
      continue; /* a split of a variable neither range reads proves nothing new */
    const Expr *j = expr_var(w->a, "parity", l->var->dtype);
    arith_bind_const_range(w->az, j, 0, (l->extent + 1) / 2);
    bool both = true;
    for (int r = 0; r < 2 && both; r++) {
      const Expr *v = expr_add(w->a, expr_mul(w->a, j, expr_i64(w->a, 2)), expr_i64(w->a, l->min + r));
      both = prove_disjoint(w, subst1(w, lo, l->var, v), subst1(w, hi, l->var, v), subst1(w, x->lo, l->var, v),
                            subst1(w, x->hi, l->var, v));
    }
    if (both) return true;
  }
  return false;
}

/* An access [lo, hi] of buffer b (a store when `store`) against the copies in flight. */
static bool check_access(WaitCheck *w, const Flights *fl, const Buffer *b, const Expr *lo, const Expr *hi, bool store,
                         const char *what) {
  for (int i = 0; i < fl->n && !w->failed; i++) {
    const InFlight *x = &fl->items[i];
    if (x->local != b || (!x->get && !store)) continue;
    if (!lo || !disjoint(w, lo, hi, x)) return wfail(w, x, what, b->name);
  }
  return !w->failed;
}

typedef struct ExprCheck {
  WaitCheck *w;
  const Flights *fl;
} ExprCheck;

static bool expr_cb(Visitor *v, const Expr *e) {
  ExprCheck *c = v->user;
  if (c->w->failed) return false;
  if (e->kind == EXPR_LOAD && e->load.n == 1 && e->load.buffer->scope == SCOPE_LOCAL) {
    const Expr *lo = NULL, *hi = NULL;
    if (!index_range(c->w, e->load.indices[0], &lo, &hi)) lo = hi = NULL;
    check_access(c->w, c->fl, e->load.buffer, lo, hi, false, "a load of");
  }
  return true;
}

static void check_exprs_of(WaitCheck *w, const Expr *e, const Flights *fl) {
  if (!fl->n || !e) return;
  ExprCheck c = {w, fl};
  Visitor v = {NULL, expr_cb, &c};
  visit_expr(&v, e);
}

/* ---- starts and waits ---- */

/* 0 <= ticket < PrimFunc.dma_tickets wherever the statement runs. */
static bool ticket_in_range(WaitCheck *w, const Expr *ticket) {
  IntBound b = arith_const_bound(w->az, ticket);
  if (b.min >= 0 && b.max < w->f->dma_tickets) return true;
  if (!w->failed)
    err_set(w->err, LOOM_ERR_INVALID_ARG, "kernel \"%s\": DMA ticket %s is not provably within its %d tickets (dma_tickets)",
            w->f->name, expr_to_string(w->a, ticket), w->f->dma_tickets);
  w->failed = true;
  return false;
}

static void start(WaitCheck *w, const Stmt *nest, const Stmt *s, Flights *fl) {
  check_exprs_of(w, s->dma.ticket, fl);
  if (!ticket_in_range(w, s->dma.ticket)) return;
  const Expr *lo, *hi;
  const Buffer *local = dma_local(w, s, &lo, &hi);
  check_access(w, fl, local, lo, hi, s->dma.dir == DMA_GET, "a DMA start on");
  for (int i = 0; i < fl->n && !w->failed; i++)
    if (same_value(w, fl->items[i].ticket, s->dma.ticket))
      wfail(w, &fl->items[i], "a second DMA start on the ticket of the copy on", fl->items[i].local->name);
  InFlight x = {s, nest == s ? NULL : nest, local, s->dma.dir == DMA_GET, s->dma.ticket, lo, hi, w->guard};
  VEC_PUSH(w->a, *fl, x);
}

static void wait_for(WaitCheck *w, const Stmt *nest, const Stmt *s, Flights *fl) {
  if (!ticket_in_range(w, s->dma_wait.ticket)) return;
  int kept = 0;
  for (int i = 0; i < fl->n; i++) {
    const InFlight *x = &fl->items[i];
    const Stmt *xn = x->nest ? x->nest : x->start;
    PtrMap map;
    bool done = false;
    if (same_shape(w->a, xn, nest, &map))
      done = same_value(w, arith_simplify(w->az, expr_substitute(w->a, s->dma_wait.ticket, &map)), x->ticket);
    if (!done) fl->items[kept++] = *x;
  }
  fl->n = kept;
}

/* ---- loops ---- */

static bool has_async(const Stmt *s);

static bool has_async_cb(Visitor *v, const Stmt *s) {
  if (s->kind == STMT_DMA_WAIT || (s->kind == STMT_DMA && s->dma.ticket)) *(bool *)v->user = true;
  return !*(bool *)v->user;
}

static bool has_async(const Stmt *s) {
  bool found = false;
  Visitor v = {has_async_cb, NULL, &found};
  visit_stmt(&v, s);
  return found;
}

/* fl with var := value in every copy, less those whose guard is then
 * provably false (a prefetch past the last tile). */
static Flights flights_rename(WaitCheck *w, const Flights *fl, const Expr *var, const Expr *value) {
  Flights out = {0};
  for (int i = 0; i < fl->n; i++) {
    InFlight x = fl->items[i];
    x.ticket = subst1(w, x.ticket, var, value);
    x.lo = subst1(w, x.lo, var, value);
    x.hi = subst1(w, x.hi, var, value);
    x.guard = subst1(w, x.guard, var, value);
    if (x.guard && arith_can_prove(w->az, expr_not(w->a, x.guard))) continue;
    VEC_PUSH(w->a, out, x);
  }
  return out;
}

/* Every copy of `sub` is one of `set` (same start, ticket and range). */
static bool subset(WaitCheck *w, const Flights *sub, const Flights *set) {
  for (int i = 0; i < sub->n; i++) {
    bool found = false;
    for (int k = 0; k < set->n && !found; k++)
      found = sub->items[i].start == set->items[k].start &&
              same_value(w, sub->items[i].ticket, set->items[k].ticket) && same_value(w, sub->items[i].lo, set->items[k].lo);
    if (!found) return false;
  }
  return true;
}

static void check_loop(WaitCheck *w, const Stmt *s, Flights *fl) {
  int64_t mn, ext;
  const Expr *var = s->loop.var;
  if (w->n_loops == MAX_LOOPS || !expr_as_int(s->loop.min, &mn) || !expr_as_int(s->loop.extent, &ext)) {
    if (has_async(s->loop.body) || fl->n) {
      w->failed = true;
      err_set(w->err, LOOM_ERR_INVALID_ARG,
              "kernel \"%s\": asynchronous DMA around or inside loop %s, whose bounds are not constant (or nested too "
              "deep to check)",
              w->f->name, var->var.name);
      return;
    }
    arith_bind_range(w->az, var, s->loop.min, s->loop.extent);
    check_stmt(w, s->loop.body, fl);
    return;
  }
  w->loops[w->n_loops++] = (LoopRange){var, mn, ext};
  if (!has_async(s->loop.body)) { /* the copies in flight stay as they are */
    arith_bind_const_range(w->az, var, mn, ext);
    check_stmt(w, s->loop.body, fl);
    w->n_loops--;
    return;
  }
  /* The first iteration, with what is in flight before the loop. */
  arith_bind_const_range(w->az, var, mn, 1);
  Flights first = flights_copy(w, fl);
  check_stmt(w, s->loop.body, &first);
  Flights end = first;
  if (ext > 1 && !w->failed) {
    /* A later iteration, with what the previous one left in flight. */
    arith_bind_const_range(w->az, var, mn + 1, ext - 1);
    const Expr *prev = expr_sub(w->a, var, expr_i64(w->a, 1));
    Flights in = flights_rename(w, &first, var, prev);
    int round = 0;
    for (; round < MAX_ROUNDS && !w->failed; round++) {
      end = flights_copy(w, &in);
      check_stmt(w, s->loop.body, &end);
      Flights next = flights_rename(w, &end, var, prev);
      if (subset(w, &next, &in)) break;
      for (int i = 0; i < next.n; i++) VEC_PUSH(w->a, in, next.items[i]);
    }
    if (round == MAX_ROUNDS && !w->failed) {
      w->failed = true;
      err_set(w->err, LOOM_ERR_INVALID_ARG,
              "kernel \"%s\": an asynchronous DMA started in one iteration of loop %s is still in flight %d "
              "iterations later (no dma_wait of its ticket)",
              w->f->name, var->var.name, MAX_ROUNDS);
    }
  }
  w->n_loops--;
  arith_bind_const_range(w->az, var, mn, ext);
  *fl = flights_rename(w, &end, var, expr_i64(w->a, mn + ext - 1)); /* after the last iteration */
}

static void check_stmt(WaitCheck *w, const Stmt *s, Flights *fl) {
  if (!s || w->failed) return;
  const Stmt *leaf = nest_leaf(s);
  if (leaf) {
    bind_nest(w, s);
    if (leaf->kind == STMT_DMA) start(w, s, leaf, fl);
    else wait_for(w, s, leaf, fl);
    return;
  }
  switch (s->kind) {
    case STMT_FOR: check_loop(w, s, fl); return;
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n; i++) check_stmt(w, s->seq.stmts[i], fl);
      return;
    case STMT_IF: {
      check_exprs_of(w, s->if_.cond, fl);
      const Expr *outer = w->guard;
      Flights then_fl = flights_copy(w, fl), else_fl = flights_copy(w, fl);
      w->guard = outer ? expr_and(w->a, outer, s->if_.cond) : s->if_.cond;
      check_stmt(w, s->if_.then_s, &then_fl);
      w->guard = outer ? expr_and(w->a, outer, expr_not(w->a, s->if_.cond)) : expr_not(w->a, s->if_.cond);
      check_stmt(w, s->if_.else_s, &else_fl);
      w->guard = outer;
      *fl = then_fl; /* in flight after it: what either way left */
      for (int i = 0; i < else_fl.n; i++) {
        Flights one = {&else_fl.items[i], 1, 1};
        if (!subset(w, &one, fl)) VEC_PUSH(w->a, *fl, else_fl.items[i]);
      }
      return;
    }
    case STMT_STORE: {
      check_exprs_of(w, s->store.value, fl);
      for (int i = 0; i < s->store.n; i++) check_exprs_of(w, s->store.indices[i], fl);
      if (s->store.buffer->scope == SCOPE_LOCAL && s->store.n == 1 && fl->n) {
        const Expr *lo = NULL, *hi = NULL;
        if (!index_range(w, s->store.indices[0], &lo, &hi)) lo = hi = NULL;
        check_access(w, fl, s->store.buffer, lo, hi, true, "a store to");
      }
      return;
    }
    case STMT_ALLOCATE:
      check_stmt(w, s->alloc.body, fl);
      for (int i = 0; i < fl->n && !w->failed; i++)
        if (fl->items[i].local == s->alloc.buffer) wfail(w, &fl->items[i], "the end of the scope of", s->alloc.buffer->name);
      return;
    case STMT_DMA: { /* blocking: its local end is accessed now */
      const Expr *lo, *hi;
      const Buffer *local = dma_local(w, s, &lo, &hi);
      check_access(w, fl, local, lo, hi, s->dma.dir == DMA_GET, "a blocking DMA on");
      return;
    }
    case STMT_EVALUATE: check_exprs_of(w, s->eval.value, fl); return;
    default: return; /* a wait of nothing in flight removes nothing */
  }
}

loom_status tir_verify_dma_waits(const PrimFunc *f, LoomError *err) {
  if (!has_async(f->body)) return LOOM_OK;
  Arena *a = arena_new();
  WaitCheck w = {.f = f, .a = a, .az = arith_analyzer_new(a), .err = err};
  Flights fl = {0};
  check_stmt(&w, f->body, &fl);
  if (!w.failed && fl.n)
    wfail(&w, &fl.items[0], "the end of the kernel, with a DMA on", fl.items[0].local->name);
  arena_free(a);
  return w.failed ? LOOM_ERR_INVALID_ARG : LOOM_OK;
}
