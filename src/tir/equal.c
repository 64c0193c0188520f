/* Structural equality of loop IR modulo renaming (alpha-equivalence).
 *
 * Variables and buffers are nodes, so "the same program" means: walk both
 * trees in step, and where x binds a node, y must bind one of the same
 * dtype/shape there; from then on uses must correspond. The correspondence
 * is kept in both directions (fwd: x -> y, rev: y -> x) and rebinding
 * overwrites it, so a node bound twice (two sibling loops sharing a Var) is
 * fine, and a use that refers to a different binder than its counterpart is
 * caught: x's outer i against y's inner i fails because rev no longer
 * points back to it. Nodes used without a binder (shape variables, or a
 * malformed tree) are bound on first use. */
#include "tir/text.h"

#include "support/ptrmap.h"

#include <math.h>
#include <string.h>

typedef struct Eq {
  PtrMap fwd, rev; /* vars and buffers share the maps: nodes are distinct */
} Eq;

static void eq_bind(Eq *q, const void *x, const void *y) {
  ptrmap_put(&q->fwd, x, (void *)y);
  ptrmap_put(&q->rev, y, (void *)x);
}

static bool eq_var_decl(Eq *q, const Expr *x, const Expr *y) {
  if (x->kind != EXPR_VAR || y->kind != EXPR_VAR || !dtype_eq(x->dtype, y->dtype)) return false;
  eq_bind(q, x, y);
  return true;
}

/* A use of x against a use of y. */
static bool eq_ref(Eq *q, const void *x, const void *y) {
  const void *fx = ptrmap_get(&q->fwd, x), *ry = ptrmap_get(&q->rev, y);
  if (!fx && !ry) {
    eq_bind(q, x, y);
    return true;
  }
  return fx == y && ry == x;
}

static bool eq_expr(Eq *q, const Expr *x, const Expr *y);
static bool eq_buffer_decl(Eq *q, const Buffer *x, const Buffer *y);

static bool eq_exprs(Eq *q, const Expr *const *xs, const Expr *const *ys, int n) {
  for (int i = 0; i < n; i++)
    if (!eq_expr(q, xs[i], ys[i])) return false;
  return true;
}

static bool eq_buffer_ref(Eq *q, const Buffer *x, const Buffer *y) {
  if (!ptrmap_has(&q->fwd, x) && !ptrmap_has(&q->rev, y)) return eq_buffer_decl(q, x, y);
  return eq_ref(q, x, y);
}

static bool eq_expr(Eq *q, const Expr *x, const Expr *y) {
  if (!x || !y) return x == y;
  if (x->kind != y->kind || !dtype_eq(x->dtype, y->dtype)) return false;
  switch (x->kind) {
    case EXPR_INT: return x->int_value == y->int_value;
    case EXPR_FLOAT:
      return x->float_value == y->float_value || (isnan(x->float_value) && isnan(y->float_value));
    case EXPR_VAR: return eq_ref(q, x, y);
    case EXPR_NOT:
    case EXPR_CAST: return eq_expr(q, x->un.a, y->un.a);
    case EXPR_SELECT:
      return eq_expr(q, x->select.cond, y->select.cond) && eq_expr(q, x->select.t, y->select.t) &&
             eq_expr(q, x->select.f, y->select.f);
    case EXPR_LOAD:
      return x->load.n == y->load.n && eq_buffer_ref(q, x->load.buffer, y->load.buffer) &&
             eq_exprs(q, x->load.indices, y->load.indices, x->load.n);
    case EXPR_CALL:
      return x->call.op == y->call.op && x->call.n == y->call.n && eq_exprs(q, x->call.args, y->call.args, x->call.n);
    case EXPR_RAMP:
      return x->ramp.lanes == y->ramp.lanes && eq_expr(q, x->ramp.base, y->ramp.base) &&
             eq_expr(q, x->ramp.stride, y->ramp.stride);
    case EXPR_BROADCAST:
      return x->broadcast.lanes == y->broadcast.lanes && eq_expr(q, x->broadcast.value, y->broadcast.value);
    case EXPR_REDUCE:
      if (x->reduce.op != y->reduce.op || x->reduce.n_axes != y->reduce.n_axes) return false;
      for (int i = 0; i < x->reduce.n_axes; i++) {
        const IterVar *a = &x->reduce.axes[i], *b = &y->reduce.axes[i];
        if (a->type != b->type || !eq_expr(q, a->min, b->min) || !eq_expr(q, a->extent, b->extent)) return false;
      }
      for (int i = 0; i < x->reduce.n_axes; i++)
        if (!eq_var_decl(q, x->reduce.axes[i].var, y->reduce.axes[i].var)) return false;
      return eq_expr(q, x->reduce.cond, y->reduce.cond) && eq_expr(q, x->reduce.source, y->reduce.source);
    default:
      return eq_expr(q, x->bin.a, y->bin.a) && eq_expr(q, x->bin.b, y->bin.b);
  }
}

/* A buffer declaration (parameter, alloc): everything but the name. */
static bool eq_buffer_decl(Eq *q, const Buffer *x, const Buffer *y) {
  if (!dtype_eq(x->dtype, y->dtype) || x->ndim != y->ndim || x->scope != y->scope || x->align != y->align ||
      x->align_factor != y->align_factor || (x->align_factor && (x->align_axis != y->align_axis ||
                                                                 x->align_offset != y->align_offset)))
    return false;
  if (!eq_exprs(q, x->shape, y->shape, x->ndim)) return false;
  if ((x->strides == NULL) != (y->strides == NULL)) return false;
  if (x->strides && !eq_exprs(q, x->strides, y->strides, x->ndim)) return false;
  eq_bind(q, x, y);
  return true;
}

static bool eq_regions(Eq *q, const BufferRegion *xs, const BufferRegion *ys, int n) {
  for (int i = 0; i < n; i++) {
    if (!eq_buffer_ref(q, xs[i].buffer, ys[i].buffer)) return false;
    if (!eq_exprs(q, xs[i].min, ys[i].min, xs[i].buffer->ndim) ||
        !eq_exprs(q, xs[i].extent, ys[i].extent, xs[i].buffer->ndim))
      return false;
  }
  return true;
}

static bool str_eq(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static bool eq_stmt(Eq *q, const Stmt *x, const Stmt *y);

static bool eq_realize(Eq *q, const Stmt *x, const Stmt *y) {
  const Block *a = x->realize.block, *b = y->realize.block;
  if (x->realize.n != y->realize.n || !eq_exprs(q, x->realize.iter_values, y->realize.iter_values, x->realize.n) ||
      !eq_expr(q, x->realize.predicate, y->realize.predicate))
    return false;
  if (!str_eq(a->name, b->name) || !str_eq(a->schedule_rule, b->schedule_rule) || a->n_iters != b->n_iters ||
      a->n_reads != b->n_reads ||
      a->n_writes != b->n_writes || a->n_alloc != b->n_alloc)
    return false;
  for (int i = 0; i < a->n_iters; i++) {
    const IterVar *u = &a->iters[i], *v = &b->iters[i];
    if (u->type != v->type || !eq_expr(q, u->min, v->min) || !eq_expr(q, u->extent, v->extent)) return false;
  }
  for (int i = 0; i < a->n_iters; i++)
    if (!eq_var_decl(q, a->iters[i].var, b->iters[i].var)) return false;
  for (int i = 0; i < a->n_alloc; i++)
    if (!eq_buffer_decl(q, a->alloc_buffers[i], b->alloc_buffers[i])) return false;
  return eq_regions(q, a->reads, b->reads, a->n_reads) && eq_regions(q, a->writes, b->writes, a->n_writes) &&
         eq_stmt(q, a->init, b->init) && eq_stmt(q, a->body, b->body);
}

/* A Seq as the list stmt_seq would make of it: nested Seqs flattened,
 * Evaluate no-ops dropped. Hand-built or rewritten trees need not be in that
 * form, and the nesting means nothing, so it does not count as a difference. */
static void seq_flatten(Eq *q, const Stmt *s, const Stmt ***items, int *n, int *cap) {
  if (s->kind == STMT_SEQ) {
    for (int i = 0; i < s->seq.n; i++)
      if (s->seq.stmts[i] && s->seq.stmts[i]->kind != STMT_EVALUATE) seq_flatten(q, s->seq.stmts[i], items, n, cap);
    return;
  }
  if (*n == *cap) {
    int grown = *cap ? *cap * 2 : 8;
    const Stmt **more = ARENA_ARRAY(q->fwd.arena, const Stmt *, grown);
    if (*n) memcpy(more, *items, sizeof(*more) * (size_t)*n);
    *items = more;
    *cap = grown;
  }
  (*items)[(*n)++] = s;
}

static bool eq_seq(Eq *q, const Stmt *x, const Stmt *y) {
  const Stmt **xs = NULL, **ys = NULL;
  int nx = 0, ny = 0, cx = 0, cy = 0;
  seq_flatten(q, x, &xs, &nx, &cx);
  seq_flatten(q, y, &ys, &ny, &cy);
  if (nx != ny) return false;
  for (int i = 0; i < nx; i++)
    if (!eq_stmt(q, xs[i], ys[i])) return false;
  return true;
}

static bool eq_stmt(Eq *q, const Stmt *x, const Stmt *y) {
  if (!x || !y) return x == y;
  if (x->kind == STMT_SEQ || y->kind == STMT_SEQ) return eq_seq(q, x, y);
  if (x->kind != y->kind) return false;
  switch (x->kind) {
    case STMT_FOR:
      if (x->loop.kind != y->loop.kind || !eq_expr(q, x->loop.min, y->loop.min) ||
          !eq_expr(q, x->loop.extent, y->loop.extent))
        return false;
      if (x->loop.kind == FOR_THREAD_BINDING && !str_eq(x->loop.thread_tag, y->loop.thread_tag)) return false;
      return eq_var_decl(q, x->loop.var, y->loop.var) && eq_stmt(q, x->loop.body, y->loop.body);
    case STMT_BLOCK_REALIZE: return eq_realize(q, x, y);
    case STMT_STORE:
      return x->store.n == y->store.n && eq_buffer_ref(q, x->store.buffer, y->store.buffer) &&
             eq_exprs(q, x->store.indices, y->store.indices, x->store.n) && eq_expr(q, x->store.value, y->store.value);
    case STMT_SEQ: break; /* handled above */
    case STMT_IF:
      return eq_expr(q, x->if_.cond, y->if_.cond) && eq_stmt(q, x->if_.then_s, y->if_.then_s) &&
             eq_stmt(q, x->if_.else_s, y->if_.else_s);
    case STMT_EVALUATE: return eq_expr(q, x->eval.value, y->eval.value);
    case STMT_ALLOCATE:
      return x->alloc.offset == y->alloc.offset && eq_buffer_decl(q, x->alloc.buffer, y->alloc.buffer) &&
             eq_stmt(q, x->alloc.body, y->alloc.body);
    case STMT_DMA:
      return x->dma.dir == y->dma.dir && eq_expr(q, x->dma.dst, y->dma.dst) && eq_expr(q, x->dma.src, y->dma.src) &&
             eq_expr(q, x->dma.row_elems, y->dma.row_elems) && eq_expr(q, x->dma.rows, y->dma.rows) &&
             eq_expr(q, x->dma.dst_stride, y->dma.dst_stride) && eq_expr(q, x->dma.src_stride, y->dma.src_stride) &&
             (x->dma.ticket ? y->dma.ticket && eq_expr(q, x->dma.ticket, y->dma.ticket) : !y->dma.ticket);
    case STMT_DMA_WAIT: return eq_expr(q, x->dma_wait.ticket, y->dma_wait.ticket);
    case STMT_KIND_COUNT: break;
  }
  return false;
}

static void eq_init(Eq *q, Arena *a) {
  ptrmap_init(&q->fwd, a);
  ptrmap_init(&q->rev, a);
}

bool tir_func_equal(const PrimFunc *x, const PrimFunc *y) {
  if (x == y) return true;
  if (!x || !y || x->n_params != y->n_params) return false;
  Arena *a = arena_new();
  Eq q;
  eq_init(&q, a);
  bool same = true;
  for (int i = 0; same && i < x->n_params; i++) same = eq_buffer_decl(&q, x->params[i], y->params[i]);
  same = same && eq_stmt(&q, x->body, y->body);
  arena_free(a);
  return same;
}

bool tir_stmt_equal(const Stmt *x, const Stmt *y) {
  Arena *a = arena_new();
  Eq q;
  eq_init(&q, a);
  bool same = eq_stmt(&q, x, y);
  arena_free(a);
  return same;
}
