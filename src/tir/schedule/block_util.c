/* Helpers shared by the block primitives: block order, buffer access,
 * nests, regions. */
#include "tir/schedule/block_util.h"

#include "support/vec.h"

#include <string.h>

/* ---- program order ---- */

typedef struct OrderCtx {
  Arena *arena;
  const Stmt *skip; /* the root realize */
  VEC(const Stmt *) list;
} OrderCtx;

static bool order_cb(Visitor *v, const Stmt *s) {
  OrderCtx *c = v->user;
  if (s->kind == STMT_BLOCK_REALIZE && s != c->skip) VEC_PUSH(c->arena, c->list, s);
  return true;
}

BlockOrder blocks_in_order(Arena *a, const Stmt *body) {
  OrderCtx c = {a, body->kind == STMT_BLOCK_REALIZE ? body : NULL, {0}};
  Visitor v = {order_cb, NULL, &c};
  visit_stmt(&v, body);
  BlockOrder o = {c.list.items, c.list.n};
  return o;
}

int block_order_index(const BlockOrder *o, const Stmt *realize) {
  for (int i = 0; i < o->n; i++)
    if (o->items[i] == realize) return i;
  return -1;
}

/* ---- buffer access ---- */

typedef struct AccessCtx {
  const Buffer *buf;
  bool load, store;
} AccessCtx;

static bool access_expr_cb(Visitor *v, const Expr *e) {
  AccessCtx *c = v->user;
  if (e->kind == EXPR_LOAD && e->load.buffer == c->buf) c->load = true;
  return !c->load;
}

static bool access_stmt_cb(Visitor *v, const Stmt *s) {
  AccessCtx *c = v->user;
  if (s->kind == STMT_STORE && s->store.buffer == c->buf) c->store = true;
  return true;
}

static AccessCtx access_scan(const Block *blk, const Buffer *b) {
  AccessCtx c = {b, false, false};
  Visitor v = {access_stmt_cb, access_expr_cb, &c};
  visit_stmt(&v, blk->init);
  visit_stmt(&v, blk->body);
  return c;
}

bool block_reads(const Block *blk, const Buffer *b) {
  for (int i = 0; i < blk->n_reads; i++)
    if (blk->reads[i].buffer == b) return true;
  return access_scan(blk, b).load;
}

bool block_writes(const Block *blk, const Buffer *b) {
  for (int i = 0; i < blk->n_writes; i++)
    if (blk->writes[i].buffer == b) return true;
  return access_scan(blk, b).store;
}

bool buffer_is_param(const PrimFunc *f, const Buffer *b) {
  for (int i = 0; i < f->n_params; i++)
    if (f->params[i] == b) return true;
  return false;
}

bool buffer_is_root_alloc(const PrimFunc *f, const Buffer *b) {
  const Block *root = primfunc_root(f);
  if (!root) return false;
  for (int i = 0; i < root->n_alloc; i++)
    if (root->alloc_buffers[i] == b) return true;
  return false;
}

/* ---- tree shape ---- */

typedef struct ContainsCtx {
  const Stmt *target;
  bool found;
} ContainsCtx;

static bool contains_cb(Visitor *v, const Stmt *s) {
  ContainsCtx *c = v->user;
  if (s == c->target) c->found = true;
  return !c->found;
}

bool stmt_contains(const Stmt *root, const Stmt *target) {
  ContainsCtx c = {target, false};
  Visitor v = {contains_cb, NULL, &c};
  visit_stmt(&v, root);
  return c.found;
}

const Stmt *block_nest_top(const Stmt *func_body, const Stmt *realize) {
  const Stmt *cur = realize;
  for (;;) {
    const Stmt *p = sch_parent(func_body, cur);
    if (!p || p->kind != STMT_FOR || p->loop.body != cur) return cur;
    cur = p;
  }
}

const Stmt *root_child_of(const Stmt *func_body, const Stmt *target) {
  const Block *root = func_body->realize.block;
  const Stmt *body = root->body;
  if (body->kind != STMT_SEQ) return stmt_contains(body, target) ? body : NULL;
  for (int i = 0; i < body->seq.n; i++)
    if (stmt_contains(body->seq.stmts[i], target)) return body->seq.stmts[i];
  return NULL;
}

const Stmt *root_insert(Arena *a, const Stmt *func_body, const Stmt *anchor, const Stmt *nest, bool after) {
  const Block *root = func_body->realize.block;
  const Stmt *body = root->body;
  int n = body->kind == STMT_SEQ ? body->seq.n : 1;
  const Stmt **items = ARENA_ARRAY(a, const Stmt *, n + 1);
  int k = 0;
  for (int i = 0; i < n; i++) {
    const Stmt *c = body->kind == STMT_SEQ ? body->seq.stmts[i] : body;
    if (c == anchor && !after) items[k++] = nest;
    items[k++] = c;
    if (c == anchor && after) items[k++] = nest;
  }
  LOOM_ASSERT(k == n + 1);
  Block *nb = block_copy(a, root);
  nb->body = stmt_seq(a, items, k);
  return stmt_realize(a, func_body->realize.iter_values, func_body->realize.n, func_body->realize.predicate, nb);
}

Buffer *buffer_clone(Arena *a, const Buffer *b, const char *name, MemScope scope) {
  Buffer *nb = buffer_new(a, name, b->dtype, b->ndim, b->shape);
  nb->scope = scope;
  return nb;
}

const char *mem_scope_name(MemScope scope) {
  switch (scope) {
    case SCOPE_GLOBAL: return "global";
    case SCOPE_LOCAL: return "local";
    case SCOPE_SHARED: return "shared";
  }
  return "?";
}

const Stmt *root_with_allocs(Arena *a, const Stmt *func_body, const Buffer *const *allocs, int n) {
  Block *nb = block_copy(a, func_body->realize.block);
  nb->alloc_buffers = n ? arena_memdup(a, allocs, sizeof(*allocs) * (size_t)n) : NULL;
  nb->n_alloc = n;
  return stmt_realize(a, func_body->realize.iter_values, func_body->realize.n,
                      func_body->realize.predicate, nb);
}

const Stmt *root_add_alloc(Arena *a, const Stmt *func_body, const Buffer *b) {
  const Block *root = func_body->realize.block;
  const Buffer **list = ARENA_ARRAY(a, const Buffer *, root->n_alloc + 1);
  if (root->n_alloc) memcpy(list, root->alloc_buffers, sizeof(*list) * (size_t)root->n_alloc);
  list[root->n_alloc] = b;
  return root_with_allocs(a, func_body, list, root->n_alloc + 1);
}

const Stmt *root_remove_alloc(Arena *a, const Stmt *func_body, const Buffer *b) {
  const Block *root = func_body->realize.block;
  const Buffer **list = ARENA_ARRAY(a, const Buffer *, root->n_alloc);
  int k = 0;
  for (int i = 0; i < root->n_alloc; i++)
    if (root->alloc_buffers[i] != b) list[k++] = root->alloc_buffers[i];
  return root_with_allocs(a, func_body, list, k);
}

void block_loop_kinds(const Stmt *realize, const Stmt *const *path, int np, bool *spatial, bool *reduce) {
  const Block *blk = realize->realize.block;
  for (int i = 0; i < np; i++) {
    spatial[i] = reduce[i] = false;
    for (int k = 0; k < blk->n_iters; k++)
      if (expr_uses_var(realize->realize.iter_values[k], path[i]->loop.var)) {
        if (blk->iters[k].type == ITER_REDUCE)
          reduce[i] = true;
        else
          spatial[i] = true;
      }
  }
}

PtrMap *block_binding_map(Arena *a, const Stmt *realize) {
  PtrMap *m = ARENA_NEW(a, PtrMap);
  ptrmap_init(m, a);
  const Block *b = realize->realize.block;
  for (int i = 0; i < b->n_iters; i++) ptrmap_put(m, b->iters[i].var, (void *)realize->realize.iter_values[i]);
  return m;
}

/* ---- loads and regions ---- */

typedef struct LoadsCtx {
  Arena *arena;
  const Buffer *buf; /* NULL = every buffer */
  VEC(const Expr *) list;
} LoadsCtx;

static bool loads_cb(Visitor *v, const Expr *e) {
  LoadsCtx *c = v->user;
  if (e->kind == EXPR_LOAD && (!c->buf || e->load.buffer == c->buf)) VEC_PUSH(c->arena, c->list, e);
  return true;
}

int loads_of(Arena *a, const Stmt *s, const Buffer *b, const Expr ***out) {
  LoadsCtx c = {a, b, {0}};
  Visitor v = {NULL, loads_cb, &c};
  visit_stmt(&v, s);
  *out = (const Expr **)c.list.items;
  return c.list.n;
}

/* Loads in the block's own init and body. Region expressions are skipped:
 * they describe accesses, they are not accesses. */
static bool body_loads_stmt_cb(Visitor *v, const Stmt *s) {
  if (s->kind == STMT_BLOCK_REALIZE) {
    /* Nested blocks: descend into statements only. */
    visit_stmt(v, s->realize.block->init);
    visit_stmt(v, s->realize.block->body);
    return false;
  }
  return true;
}

const BufferRegion *block_reads_from_loads(Arena *a, Analyzer *az, const Block *blk, int *n_out) {
  LoadsCtx c = {a, NULL, {0}};
  Visitor v = {body_loads_stmt_cb, loads_cb, &c};
  visit_stmt(&v, blk->init);
  visit_stmt(&v, blk->body);
  BufferRegion *out = ARENA_ARRAY(a, BufferRegion, c.list.n);
  int n = 0;
  for (int i = 0; i < c.list.n; i++) {
    const Expr *ld = c.list.items[i];
    const Buffer *b = ld->load.buffer;
    bool seen = false;
    for (int k = 0; k < n; k++) seen |= out[k].buffer == b;
    if (seen) continue;
    /* Hull over all loads of b. */
    const Expr **mins = ARENA_ARRAY(a, const Expr *, b->ndim);
    const Expr **exts = ARENA_ARRAY(a, const Expr *, b->ndim);
    for (int d = 0; d < b->ndim; d++) {
      IntSet hull = intset_point(ld->load.indices[d]);
      for (int j = i + 1; j < c.list.n; j++) {
        const Expr *o = c.list.items[j];
        if (o->load.buffer == b) hull = intset_union(az, hull, intset_point(o->load.indices[d]));
      }
      mins[d] = sched_simplify(az, hull.min);
      exts[d] = sched_simplify(az, expr_add(a, expr_sub(a, hull.max, hull.min), expr_i64(a, 1)));
    }
    out[n].buffer = b;
    out[n].min = mins;
    out[n].extent = exts;
    n++;
  }
  *n_out = n;
  return out;
}

BufferRegion region_substitute(Arena *a, BufferRegion r, const PtrMap *vmap) {
  const Expr **mins = ARENA_ARRAY(a, const Expr *, r.buffer->ndim);
  const Expr **exts = ARENA_ARRAY(a, const Expr *, r.buffer->ndim);
  for (int d = 0; d < r.buffer->ndim; d++) {
    mins[d] = expr_substitute(a, r.min[d], vmap);
    exts[d] = expr_substitute(a, r.extent[d], vmap);
  }
  BufferRegion out = {r.buffer, mins, exts};
  return out;
}

/* ---- building nests ---- */

const Stmt *loop_nest_build(Arena *a, const char *base, const Expr *const *mins,
                            const Expr *const *extents, int n, const Stmt *body,
                            const Expr **vars_out) {
  for (int k = 0; k < n; k++) vars_out[k] = expr_var(a, arena_printf(a, "%s%d", base, k), DT_I64);
  for (int k = n - 1; k >= 0; k--)
    body = stmt_for(a, vars_out[k], mins ? mins[k] : expr_i64(a, 0), extents[k], FOR_SERIAL, body);
  return body;
}

const Stmt *copy_block_nest(Schedule *s, const char *name, const Buffer *src, const Buffer *dst) {
  Arena *a = s->arena;
  int nd = dst->ndim;
  IterVar *iters = ARENA_ARRAY(a, IterVar, nd);
  const Expr **ivars = ARENA_ARRAY(a, const Expr *, nd);
  for (int d = 0; d < nd; d++) {
    ivars[d] = expr_var(a, arena_printf(a, "v%d", d), DT_I64);
    iters[d].var = ivars[d];
    iters[d].min = expr_i64(a, 0);
    iters[d].extent = dst->shape[d];
    iters[d].type = ITER_SPATIAL;
  }
  Block *blk = ARENA_NEW(a, Block);
  blk->name = arena_strdup(a, name);
  blk->iters = iters;
  blk->n_iters = nd;
  BufferRegion *r = ARENA_NEW(a, BufferRegion), *w = ARENA_NEW(a, BufferRegion);
  *r = region_point(a, src, ivars);
  *w = region_point(a, dst, ivars);
  blk->reads = r;
  blk->n_reads = 1;
  blk->writes = w;
  blk->n_writes = 1;
  blk->body = stmt_store(a, dst, expr_load(a, src, ivars, nd), ivars, nd);
  const Expr **lvars = ARENA_ARRAY(a, const Expr *, nd);
  /* Loop vars first so the realize can bind iterators to them. */
  for (int d = 0; d < nd; d++) lvars[d] = sch_new_loop_var(s, arena_printf(a, "ax%d", d));
  const Stmt *nest = stmt_realize(a, lvars, nd, NULL, blk);
  for (int d = nd - 1; d >= 0; d--) nest = stmt_for(a, lvars[d], expr_i64(a, 0), dst->shape[d], FOR_SERIAL, nest);
  return nest;
}

const Expr *sched_simplify(Analyzer *az, const Expr *e) {
  if (!e) return NULL;
  return az ? arith_simplify(az, e) : e;
}
