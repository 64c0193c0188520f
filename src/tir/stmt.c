#include "tir/stmt.h"

#include "support/error.h"
#include "support/ptrmap.h"

#include <string.h>

static Stmt *stmt_node(Arena *a, StmtKind k) {
  Stmt *s = ARENA_NEW(a, Stmt);
  s->kind = k;
  return s;
}

const Stmt *stmt_for(Arena *a, const Expr *var, const Expr *min, const Expr *extent, ForKind kind,
                     const Stmt *body) {
  Stmt *s = stmt_node(a, STMT_FOR);
  s->loop.var = var;
  s->loop.min = min;
  s->loop.extent = extent;
  s->loop.kind = kind;
  s->loop.body = body;
  return s;
}

const Stmt *stmt_for_thread(Arena *a, const Expr *var, const Expr *min, const Expr *extent,
                            const char *thread_tag, const Stmt *body) {
  Stmt *s = (Stmt *)stmt_for(a, var, min, extent, FOR_THREAD_BINDING, body);
  s->loop.thread_tag = arena_strdup(a, thread_tag);
  return s;
}

const Stmt *stmt_realize(Arena *a, const Expr *const *values, int n, const Expr *predicate,
                         const Block *block) {
  Stmt *s = stmt_node(a, STMT_BLOCK_REALIZE);
  s->realize.iter_values = arena_memdup(a, values, sizeof(*values) * (size_t)n);
  s->realize.n = n;
  s->realize.predicate = predicate ? predicate : expr_bool(a, true);
  s->realize.block = block;
  return s;
}

const Stmt *stmt_store(Arena *a, const Buffer *b, const Expr *value, const Expr *const *idx, int n) {
  Stmt *s = stmt_node(a, STMT_STORE);
  s->store.buffer = b;
  s->store.value = value;
  s->store.indices = arena_memdup(a, idx, sizeof(*idx) * (size_t)n);
  s->store.n = n;
  return s;
}

static int seq_count(const Stmt *s) {
  if (s->kind == STMT_EVALUATE) return 0;
  if (s->kind != STMT_SEQ) return 1;
  int n = 0;
  for (int i = 0; i < s->seq.n; i++) n += seq_count(s->seq.stmts[i]);
  return n;
}

static void seq_fill(const Stmt *s, const Stmt **out, int *k) {
  if (s->kind == STMT_EVALUATE) return;
  if (s->kind != STMT_SEQ) {
    out[(*k)++] = s;
    return;
  }
  for (int i = 0; i < s->seq.n; i++) seq_fill(s->seq.stmts[i], out, k);
}

const Stmt *stmt_seq(Arena *a, const Stmt *const *stmts, int n) {
  int total = 0;
  for (int i = 0; i < n; i++)
    if (stmts[i]) total += seq_count(stmts[i]);
  if (total == 0) return stmt_nop(a);
  const Stmt **items = ARENA_ARRAY(a, const Stmt *, total);
  int k = 0;
  for (int i = 0; i < n; i++)
    if (stmts[i]) seq_fill(stmts[i], items, &k);
  if (total == 1) return items[0];
  Stmt *s = stmt_node(a, STMT_SEQ);
  s->seq.stmts = items;
  s->seq.n = total;
  return s;
}

const Stmt *stmt_seq2(Arena *a, const Stmt *x, const Stmt *y) {
  const Stmt *both[2] = {x, y};
  return stmt_seq(a, both, 2);
}

const Stmt *stmt_if(Arena *a, const Expr *cond, const Stmt *then_s, const Stmt *else_s) {
  Stmt *s = stmt_node(a, STMT_IF);
  s->if_.cond = cond;
  s->if_.then_s = then_s;
  s->if_.else_s = else_s;
  return s;
}

const Stmt *stmt_nop(Arena *a) {
  Stmt *s = stmt_node(a, STMT_EVALUATE);
  s->eval.value = expr_i64(a, 0);
  return s;
}

const Stmt *stmt_allocate(Arena *a, const Buffer *b, const Stmt *body) {
  return stmt_allocate_at(a, b, body, -1);
}

const Stmt *stmt_allocate_at(Arena *a, const Buffer *b, const Stmt *body, int64_t offset) {
  Stmt *s = stmt_node(a, STMT_ALLOCATE);
  s->alloc.buffer = b;
  s->alloc.body = body;
  s->alloc.offset = offset;
  return s;
}

const Stmt *stmt_dma(Arena *a, DmaDir dir, const Expr *dst, const Expr *src, const Expr *row_elems, const Expr *rows,
                     const Expr *dst_stride, const Expr *src_stride) {
  LOOM_ASSERT(dst->kind == EXPR_LOAD && src->kind == EXPR_LOAD);
  Stmt *s = stmt_node(a, STMT_DMA);
  s->dma.dir = dir;
  s->dma.dst = dst;
  s->dma.src = src;
  s->dma.row_elems = row_elems;
  s->dma.rows = rows;
  s->dma.dst_stride = dst_stride;
  s->dma.src_stride = src_stride;
  return s;
}

const Stmt *stmt_dma_async(Arena *a, const Stmt *dma, const Expr *ticket) {
  LOOM_ASSERT(dma->kind == STMT_DMA && ticket);
  Stmt *s = arena_memdup(a, dma, sizeof *s);
  s->dma.ticket = ticket;
  return s;
}

const Stmt *stmt_dma_wait(Arena *a, const Expr *ticket) {
  Stmt *s = stmt_node(a, STMT_DMA_WAIT);
  s->dma_wait.ticket = ticket;
  return s;
}

Block *block_copy(Arena *a, const Block *b) { return arena_memdup(a, b, sizeof *b); }

BufferRegion region_full(Arena *a, const Buffer *b) {
  const Expr **mins = ARENA_ARRAY(a, const Expr *, b->ndim);
  for (int i = 0; i < b->ndim; i++) mins[i] = expr_i64(a, 0);
  BufferRegion r = {b, mins, b->shape};
  return r;
}

BufferRegion region_point(Arena *a, const Buffer *b, const Expr *const *idx) {
  const Expr **ext = ARENA_ARRAY(a, const Expr *, b->ndim);
  for (int i = 0; i < b->ndim; i++) ext[i] = expr_i64(a, 1);
  BufferRegion r = {b, arena_memdup(a, idx, sizeof(*idx) * (size_t)b->ndim), ext};
  return r;
}

PrimFunc *primfunc_new(Arena *a, const char *name, const Buffer *const *params, int n_params,
                       const Stmt *body) {
  PrimFunc *f = ARENA_NEW(a, PrimFunc);
  f->name = arena_strdup(a, name);
  f->params = arena_memdup(a, params, sizeof(*params) * (size_t)n_params);
  f->n_params = n_params;
  f->body = body;
  return f;
}

const Block *primfunc_root(const PrimFunc *f) {
  return f->body->kind == STMT_BLOCK_REALIZE ? f->body->realize.block : NULL;
}

const char *for_kind_name(ForKind k) {
  switch (k) {
    case FOR_SERIAL: return "serial";
    case FOR_PARALLEL: return "parallel";
    case FOR_VECTORIZED: return "vectorized";
    case FOR_UNROLLED: return "unroll";
    case FOR_THREAD_BINDING: return "thread";
  }
  return "?";
}

/* ---- mutator ---- */

const Expr *mutate_expr(Mutator *m, const Expr *e) {
  if (!e) return NULL;
  return m->visit_expr ? m->visit_expr(m, e) : mutate_expr_children(m, e);
}

const Stmt *mutate_stmt(Mutator *m, const Stmt *s) {
  if (!s) return NULL;
  return m->visit_stmt ? m->visit_stmt(m, s) : mutate_stmt_children(m, s);
}

/* Mutates an array of expressions; returns the original array if unchanged. */
static const Expr *const *mutate_expr_array(Mutator *m, const Expr *const *xs, int n) {
  const Expr **out = NULL;
  for (int i = 0; i < n; i++) {
    const Expr *y = mutate_expr(m, xs[i]);
    if (y != xs[i] && !out) {
      out = ARENA_ARRAY(m->arena, const Expr *, n);
      memcpy(out, xs, sizeof(*xs) * (size_t)i);
    }
    if (out) out[i] = y;
  }
  return out ? out : xs;
}

const Expr *mutate_expr_children(Mutator *m, const Expr *e) {
  Arena *a = m->arena;
  switch (e->kind) {
    case EXPR_INT:
    case EXPR_FLOAT:
    case EXPR_VAR: return e;
    case EXPR_NOT:
    case EXPR_CAST: {
      const Expr *x = mutate_expr(m, e->un.a);
      if (x == e->un.a) return e;
      return e->kind == EXPR_NOT ? expr_not(a, x) : expr_cast(a, e->dtype, x);
    }
    case EXPR_SELECT: {
      const Expr *c = mutate_expr(m, e->select.cond), *t = mutate_expr(m, e->select.t),
                 *f = mutate_expr(m, e->select.f);
      if (c == e->select.cond && t == e->select.t && f == e->select.f) return e;
      return expr_select(a, c, t, f);
    }
    case EXPR_LOAD: {
      const Expr *const *idx = mutate_expr_array(m, e->load.indices, e->load.n);
      if (idx == e->load.indices) return e;
      return expr_load(a, e->load.buffer, idx, e->load.n);
    }
    case EXPR_CALL: {
      const Expr *const *args = mutate_expr_array(m, e->call.args, e->call.n);
      if (args == e->call.args) return e;
      return expr_call(a, e->call.op, e->dtype, args, e->call.n);
    }
    case EXPR_RAMP: {
      const Expr *b = mutate_expr(m, e->ramp.base), *s = mutate_expr(m, e->ramp.stride);
      if (b == e->ramp.base && s == e->ramp.stride) return e;
      return expr_ramp(a, b, s, e->ramp.lanes);
    }
    case EXPR_BROADCAST: {
      const Expr *v = mutate_expr(m, e->broadcast.value);
      if (v == e->broadcast.value) return e;
      return expr_broadcast(a, v, e->broadcast.lanes);
    }
    case EXPR_REDUCE: {
      const Expr *src = mutate_expr(m, e->reduce.source);
      const Expr *cond = e->reduce.cond ? mutate_expr(m, e->reduce.cond) : NULL;
      if (src == e->reduce.source && cond == e->reduce.cond) return e;
      return expr_reduce(a, e->reduce.op, src, e->reduce.axes, e->reduce.n_axes, cond);
    }
    default: {
      const Expr *x = mutate_expr(m, e->bin.a), *y = mutate_expr(m, e->bin.b);
      if (x == e->bin.a && y == e->bin.b) return e;
      return expr_binary(a, e->kind, x, y);
    }
  }
}

static bool mutate_regions(Mutator *m, const BufferRegion *rs, int n, const BufferRegion **out) {
  BufferRegion *copy = NULL;
  for (int i = 0; i < n; i++) {
    const Expr *const *mn = mutate_expr_array(m, rs[i].min, rs[i].buffer->ndim);
    const Expr *const *ex = mutate_expr_array(m, rs[i].extent, rs[i].buffer->ndim);
    if ((mn != rs[i].min || ex != rs[i].extent) && !copy) {
      copy = ARENA_ARRAY(m->arena, BufferRegion, n);
      memcpy(copy, rs, sizeof(*rs) * (size_t)n);
    }
    if (copy) {
      copy[i].min = mn;
      copy[i].extent = ex;
    }
  }
  *out = copy ? copy : rs;
  return copy != NULL;
}

static const Block *mutate_block(Mutator *m, const Block *b) {
  bool changed = false;
  IterVar *iters = NULL;
  for (int i = 0; i < b->n_iters; i++) {
    const Expr *mn = mutate_expr(m, b->iters[i].min), *ex = mutate_expr(m, b->iters[i].extent);
    if ((mn != b->iters[i].min || ex != b->iters[i].extent) && !iters) {
      iters = ARENA_ARRAY(m->arena, IterVar, b->n_iters);
      memcpy(iters, b->iters, sizeof(IterVar) * (size_t)b->n_iters);
    }
    if (iters) {
      iters[i].min = mn;
      iters[i].extent = ex;
    }
  }
  const BufferRegion *reads, *writes;
  changed |= iters != NULL;
  changed |= mutate_regions(m, b->reads, b->n_reads, &reads);
  changed |= mutate_regions(m, b->writes, b->n_writes, &writes);
  const Stmt *init = mutate_stmt(m, b->init);
  const Stmt *body = mutate_stmt(m, b->body);
  changed |= init != b->init || body != b->body;
  if (!changed) return b;
  Block *nb = block_copy(m->arena, b);
  if (iters) nb->iters = iters;
  nb->reads = reads;
  nb->writes = writes;
  nb->init = init;
  nb->body = body;
  return nb;
}

const Stmt *mutate_stmt_children(Mutator *m, const Stmt *s) {
  Arena *a = m->arena;
  switch (s->kind) {
    case STMT_FOR: {
      const Expr *mn = mutate_expr(m, s->loop.min), *ex = mutate_expr(m, s->loop.extent);
      const Stmt *body = mutate_stmt(m, s->loop.body);
      if (mn == s->loop.min && ex == s->loop.extent && body == s->loop.body) return s;
      Stmt *n = arena_memdup(a, s, sizeof *s);
      n->loop.min = mn;
      n->loop.extent = ex;
      n->loop.body = body;
      return n;
    }
    case STMT_BLOCK_REALIZE: {
      const Expr *const *vals = mutate_expr_array(m, s->realize.iter_values, s->realize.n);
      const Expr *pred = mutate_expr(m, s->realize.predicate);
      const Block *blk = mutate_block(m, s->realize.block);
      if (vals == s->realize.iter_values && pred == s->realize.predicate && blk == s->realize.block) return s;
      return stmt_realize(a, vals, s->realize.n, pred, blk);
    }
    case STMT_STORE: {
      const Expr *v = mutate_expr(m, s->store.value);
      const Expr *const *idx = mutate_expr_array(m, s->store.indices, s->store.n);
      if (v == s->store.value && idx == s->store.indices) return s;
      return stmt_store(a, s->store.buffer, v, idx, s->store.n);
    }
    case STMT_SEQ: {
      const Stmt **out = NULL;
      for (int i = 0; i < s->seq.n; i++) {
        const Stmt *y = mutate_stmt(m, s->seq.stmts[i]);
        if (y != s->seq.stmts[i] && !out) {
          out = ARENA_ARRAY(a, const Stmt *, s->seq.n);
          memcpy(out, s->seq.stmts, sizeof(Stmt *) * (size_t)i);
        }
        if (out) out[i] = y;
      }
      return out ? stmt_seq(a, out, s->seq.n) : s;
    }
    case STMT_IF: {
      const Expr *c = mutate_expr(m, s->if_.cond);
      const Stmt *t = mutate_stmt(m, s->if_.then_s), *e = mutate_stmt(m, s->if_.else_s);
      if (c == s->if_.cond && t == s->if_.then_s && e == s->if_.else_s) return s;
      return stmt_if(a, c, t, e);
    }
    case STMT_EVALUATE: {
      const Expr *v = mutate_expr(m, s->eval.value);
      if (v == s->eval.value) return s;
      Stmt *n = stmt_node(a, STMT_EVALUATE);
      n->eval.value = v;
      return n;
    }
    case STMT_ALLOCATE: {
      const Stmt *body = mutate_stmt(m, s->alloc.body);
      if (body == s->alloc.body) return s;
      return stmt_allocate_at(a, s->alloc.buffer, body, s->alloc.offset);
    }
    case STMT_DMA: {
      const Expr *dst = mutate_expr(m, s->dma.dst), *src = mutate_expr(m, s->dma.src);
      const Expr *re = mutate_expr(m, s->dma.row_elems), *rows = mutate_expr(m, s->dma.rows);
      const Expr *ds = mutate_expr(m, s->dma.dst_stride), *ss = mutate_expr(m, s->dma.src_stride);
      const Expr *t = s->dma.ticket ? mutate_expr(m, s->dma.ticket) : NULL;
      if (dst == s->dma.dst && src == s->dma.src && re == s->dma.row_elems && rows == s->dma.rows &&
          ds == s->dma.dst_stride && ss == s->dma.src_stride && t == s->dma.ticket)
        return s;
      const Stmt *copy = stmt_dma(a, s->dma.dir, dst, src, re, rows, ds, ss);
      return t ? stmt_dma_async(a, copy, t) : copy;
    }
    case STMT_DMA_WAIT: {
      const Expr *t = mutate_expr(m, s->dma_wait.ticket);
      return t == s->dma_wait.ticket ? s : stmt_dma_wait(a, t);
    }
    case STMT_KIND_COUNT: break;
  }
  LOOM_ASSERT(0 && "bad stmt kind");
  return s;
}

/* ---- visitor ---- */

static void visit_regions(Visitor *v, const BufferRegion *rs, int n) {
  for (int i = 0; i < n; i++)
    for (int d = 0; d < rs[i].buffer->ndim; d++) {
      visit_expr(v, rs[i].min[d]);
      visit_expr(v, rs[i].extent[d]);
    }
}

void visit_expr(Visitor *v, const Expr *e) {
  if (!e) return;
  if (v->visit_expr && !v->visit_expr(v, e)) return;
  switch (e->kind) {
    case EXPR_INT:
    case EXPR_FLOAT:
    case EXPR_VAR: return;
    case EXPR_NOT:
    case EXPR_CAST: visit_expr(v, e->un.a); return;
    case EXPR_SELECT:
      visit_expr(v, e->select.cond);
      visit_expr(v, e->select.t);
      visit_expr(v, e->select.f);
      return;
    case EXPR_LOAD:
      for (int i = 0; i < e->load.n; i++) visit_expr(v, e->load.indices[i]);
      return;
    case EXPR_CALL:
      for (int i = 0; i < e->call.n; i++) visit_expr(v, e->call.args[i]);
      return;
    case EXPR_RAMP:
      visit_expr(v, e->ramp.base);
      visit_expr(v, e->ramp.stride);
      return;
    case EXPR_BROADCAST: visit_expr(v, e->broadcast.value); return;
    case EXPR_REDUCE:
      visit_expr(v, e->reduce.source);
      visit_expr(v, e->reduce.cond);
      return;
    default:
      visit_expr(v, e->bin.a);
      visit_expr(v, e->bin.b);
      return;
  }
}

void visit_stmt(Visitor *v, const Stmt *s) {
  if (!s) return;
  if (v->visit_stmt && !v->visit_stmt(v, s)) return;
  switch (s->kind) {
    case STMT_FOR:
      visit_expr(v, s->loop.min);
      visit_expr(v, s->loop.extent);
      visit_stmt(v, s->loop.body);
      return;
    case STMT_BLOCK_REALIZE: {
      for (int i = 0; i < s->realize.n; i++) visit_expr(v, s->realize.iter_values[i]);
      visit_expr(v, s->realize.predicate);
      const Block *b = s->realize.block;
      for (int i = 0; i < b->n_iters; i++) {
        visit_expr(v, b->iters[i].min);
        visit_expr(v, b->iters[i].extent);
      }
      visit_regions(v, b->reads, b->n_reads);
      visit_regions(v, b->writes, b->n_writes);
      visit_stmt(v, b->init);
      visit_stmt(v, b->body);
      return;
    }
    case STMT_STORE:
      visit_expr(v, s->store.value);
      for (int i = 0; i < s->store.n; i++) visit_expr(v, s->store.indices[i]);
      return;
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n; i++) visit_stmt(v, s->seq.stmts[i]);
      return;
    case STMT_IF:
      visit_expr(v, s->if_.cond);
      visit_stmt(v, s->if_.then_s);
      visit_stmt(v, s->if_.else_s);
      return;
    case STMT_EVALUATE: visit_expr(v, s->eval.value); return;
    case STMT_ALLOCATE: visit_stmt(v, s->alloc.body); return;
    case STMT_DMA:
      visit_expr(v, s->dma.dst);
      visit_expr(v, s->dma.src);
      visit_expr(v, s->dma.row_elems);
      visit_expr(v, s->dma.rows);
      visit_expr(v, s->dma.dst_stride);
      visit_expr(v, s->dma.src_stride);
      if (s->dma.ticket) visit_expr(v, s->dma.ticket);
      return;
    case STMT_DMA_WAIT: visit_expr(v, s->dma_wait.ticket); return;
    case STMT_KIND_COUNT: return;
  }
}

/* ---- substitution ---- */

static const Expr *subst_expr_cb(Mutator *m, const Expr *e) {
  if (e->kind == EXPR_VAR) {
    const Expr *r = ptrmap_get(m->user, e);
    return r ? r : e;
  }
  return mutate_expr_children(m, e);
}

const Expr *expr_substitute(Arena *a, const Expr *e, const PtrMap *vmap) {
  Mutator m = {a, NULL, subst_expr_cb, (void *)vmap};
  return mutate_expr(&m, e);
}

const Stmt *stmt_substitute(Arena *a, const Stmt *s, const PtrMap *vmap) {
  Mutator m = {a, NULL, subst_expr_cb, (void *)vmap};
  return mutate_stmt(&m, s);
}

static const Expr *rebuf_expr_cb(Mutator *m, const Expr *e) {
  e = mutate_expr_children(m, e);
  if (e->kind == EXPR_LOAD) {
    const Buffer *nb = ptrmap_get(m->user, e->load.buffer);
    if (nb) return expr_load(m->arena, nb, e->load.indices, e->load.n);
  }
  return e;
}

static const BufferRegion *rebuf_regions(Arena *a, const BufferRegion *rs, int n, const PtrMap *bmap) {
  BufferRegion *out = NULL;
  for (int i = 0; i < n; i++) {
    const Buffer *nb = ptrmap_get(bmap, rs[i].buffer);
    if (nb && !out) {
      out = ARENA_ARRAY(a, BufferRegion, n);
      memcpy(out, rs, sizeof(*rs) * (size_t)n);
    }
    if (nb) out[i].buffer = nb;
  }
  return out ? out : rs;
}

static const Stmt *rebuf_stmt_cb(Mutator *m, const Stmt *s) {
  s = mutate_stmt_children(m, s);
  if (s->kind == STMT_STORE) {
    const Buffer *nb = ptrmap_get(m->user, s->store.buffer);
    if (nb) return stmt_store(m->arena, nb, s->store.value, s->store.indices, s->store.n);
  } else if (s->kind == STMT_BLOCK_REALIZE) {
    const Block *b = s->realize.block;
    const BufferRegion *r = rebuf_regions(m->arena, b->reads, b->n_reads, m->user);
    const BufferRegion *w = rebuf_regions(m->arena, b->writes, b->n_writes, m->user);
    if (r != b->reads || w != b->writes) {
      Block *nb = block_copy(m->arena, b);
      nb->reads = r;
      nb->writes = w;
      return stmt_realize(m->arena, s->realize.iter_values, s->realize.n, s->realize.predicate, nb);
    }
  }
  return s;
}

const Stmt *stmt_replace_buffers(Arena *a, const Stmt *s, const PtrMap *bmap) {
  Mutator m = {a, rebuf_stmt_cb, rebuf_expr_cb, (void *)bmap};
  return mutate_stmt(&m, s);
}

/* ---- lookup ---- */

typedef struct FindCtx {
  const char *name;
  const Expr *var;
  const Stmt *found;
} FindCtx;

static bool find_cb(Visitor *v, const Stmt *s) {
  FindCtx *c = v->user;
  if (c->found) return false;
  if (c->name && s->kind == STMT_BLOCK_REALIZE && strcmp(s->realize.block->name, c->name) == 0) {
    c->found = s;
    return false;
  }
  if (c->var && s->kind == STMT_FOR && s->loop.var == c->var) {
    c->found = s;
    return false;
  }
  return true;
}

const Stmt *stmt_find_block(const Stmt *root, const char *name) {
  FindCtx c = {name, NULL, NULL};
  Visitor v = {find_cb, NULL, &c};
  visit_stmt(&v, root);
  return c.found;
}

const Stmt *stmt_find_loop(const Stmt *root, const Expr *var) {
  FindCtx c = {NULL, var, NULL};
  Visitor v = {find_cb, NULL, &c};
  visit_stmt(&v, root);
  return c.found;
}

typedef struct ReplaceCtx {
  const Stmt *target, *with;
  Arena *arena;
} ReplaceCtx;

static const Stmt *replace_cb(Mutator *m, const Stmt *s) {
  ReplaceCtx *c = m->user;
  if (s == c->target) return c->with ? c->with : stmt_nop(c->arena);
  return mutate_stmt_children(m, s);
}

static const Expr *replace_expr_cb(Mutator *m, const Expr *e) { return e; }

const Stmt *stmt_replace(Arena *a, const Stmt *root, const Stmt *target, const Stmt *with) {
  ReplaceCtx c = {target, with, a};
  Mutator m = {a, replace_cb, replace_expr_cb, &c};
  return mutate_stmt(&m, root);
}
