/* compute_inline and reverse_compute_inline: fold an elementwise block into
 * its consumers (producer), so its intermediate buffer disappears.
 *
 * Both only accept what makes the rewrite a plain substitution (TVM's
 * compute_inline.cc has the same conditions): the inlined block is a single
 * store at exactly its iterators, with no reduction and no init. */
#include "tir/schedule/block_util.h"

#include <string.h>

/* If blk is `buf[v0, v1, ...] = value` with distinct iterators v as indices
 * (one per iterator), returns the store; else NULL. */
static const Stmt *plain_store(const Block *blk) {
  const Stmt *st = blk->body;
  if (st->kind != STMT_STORE || blk->init) return NULL;
  if (st->store.n != blk->n_iters) return NULL;
  for (int d = 0; d < st->store.n; d++) {
    if (st->store.indices[d] != blk->iters[d].var) {
      /* Any order of distinct iterators is fine. */
      bool found = false;
      for (int k = 0; k < blk->n_iters; k++) found |= st->store.indices[d] == blk->iters[k].var;
      if (!found) return NULL;
    }
    for (int e = 0; e < d; e++)
      if (st->store.indices[e] == st->store.indices[d]) return NULL;
  }
  return st;
}

static bool all_spatial(const Block *blk, const char **bad) {
  for (int k = 0; k < blk->n_iters; k++)
    if (blk->iters[k].type != ITER_SPATIAL) {
      *bad = blk->iters[k].var->var.name;
      return false;
    }
  return true;
}

/* ---- compute_inline ---- */

typedef struct InlineCtx {
  const Buffer *buf;
  const Stmt *store; /* buf[iters] = value */
  const Stmt *root;
  Analyzer *az;
} InlineCtx;

static const Expr *inline_expr_cb(Mutator *m, const Expr *e) {
  InlineCtx *c = m->user;
  e = mutate_expr_children(m, e);
  if (e->kind != EXPR_LOAD || e->load.buffer != c->buf) return e;
  PtrMap vmap;
  ptrmap_init(&vmap, m->arena);
  for (int d = 0; d < e->load.n; d++) ptrmap_put(&vmap, c->store->store.indices[d], (void *)e->load.indices[d]);
  return expr_substitute(m->arena, c->store->store.value, &vmap);
}

/* Blocks whose body changed get their read regions rebuilt from their loads. */
static const Stmt *inline_stmt_cb(Mutator *m, const Stmt *s) {
  InlineCtx *c = m->user;
  const Stmt *n = mutate_stmt_children(m, s);
  if (n == s || n->kind != STMT_BLOCK_REALIZE || s == c->root) return n;
  Block *nb = block_copy(m->arena, n->realize.block);
  nb->reads = block_reads_from_loads(m->arena, c->az, nb, &nb->n_reads);
  return stmt_realize(m->arena, n->realize.iter_values, n->realize.n, n->realize.predicate, nb);
}

loom_status sch_compute_inline(Schedule *s, SchRV block_rv) {
  const Stmt *r = sch_lookup_block(s, block_rv);
  if (!r) return LOOM_ERR_SCHEDULE;
  Arena *a = s->arena;
  const Stmt *body = s->func->body;
  const Block *blk = r->realize.block;
  const char *bad = NULL;
  if (r == body) return sch_fail(s, "compute_inline: the root block cannot be inlined");
  if (blk->n_writes != 1)
    return sch_fail(s, "compute_inline: block \"%s\" writes %d buffers; expected exactly one", blk->name,
                    blk->n_writes);
  if (blk->init) return sch_fail(s, "compute_inline: block \"%s\" has an init (a reduction); expected none", blk->name);
  if (!all_spatial(blk, &bad))
    return sch_fail(s, "compute_inline: block \"%s\" has reduction iterator \"%s\"; expected spatial only",
                    blk->name, bad);
  const Buffer *buf = blk->writes[0].buffer;
  const Stmt *st = plain_store(blk);
  if (!st || st->store.buffer != buf)
    return sch_fail(s, "compute_inline: the body of block \"%s\" must be one store %s[iterators...] = value",
                    blk->name, buf->name);
  if (expr_reads_buffer(st->store.value, buf))
    return sch_fail(s, "compute_inline: block \"%s\" reads %s, the buffer it writes", blk->name, buf->name);
  if (buffer_is_param(s->func, buf))
    return sch_fail(s, "compute_inline: block \"%s\" writes %s, a function output; it cannot be inlined",
                    blk->name, buf->name);

  BlockOrder order = blocks_in_order(a, body);
  int pos = block_order_index(&order, r), last_reader = -1;
  for (int i = 0; i < order.n; i++) {
    const Block *ob = order.items[i]->realize.block;
    if (order.items[i] == r) continue;
    if (block_writes(ob, buf))
      return sch_fail(s, "compute_inline: block \"%s\" also writes %s; expected \"%s\" to be its only producer",
                      ob->name, buf->name, blk->name);
    if (block_reads(ob, buf)) {
      if (i < pos)
        return sch_fail(s, "compute_inline: block \"%s\" reads %s before block \"%s\" writes it", ob->name,
                        buf->name, blk->name);
      last_reader = i;
    }
  }
  /* The value is now computed where it is read: its inputs must not change
   * in between. */
  for (int i = pos + 1; i < last_reader; i++) {
    const Block *ob = order.items[i]->realize.block;
    for (int k = 0; k < blk->n_reads; k++)
      if (block_writes(ob, blk->reads[k].buffer))
        return sch_fail(s, "compute_inline: block \"%s\" writes %s between block \"%s\" and its consumers",
                        ob->name, blk->reads[k].buffer->name, blk->name);
  }

  Analyzer *az = arith_analyzer_new(a);
  const Stmt *nb = stmt_replace(a, body, block_nest_top(body, r), NULL);
  InlineCtx c = {buf, st, NULL, az};
  c.root = nb;
  Mutator m = {a, inline_stmt_cb, inline_expr_cb, &c};
  nb = mutate_stmt(&m, nb);
  nb = root_remove_alloc(a, nb, buf);
  sch_set_body(s, nb);
  SchRV in[1] = {block_rv};
  Inst inst = {.kind = INST_COMPUTE_INLINE, .inputs = in, .n_inputs = 1};
  sch_record(s, &inst);
  return LOOM_OK;
}

/* ---- reverse_compute_inline ---- */

typedef struct LoadReplaceCtx {
  const Buffer *buf;
  const Expr *with;
} LoadReplaceCtx;

static const Expr *load_replace_cb(Mutator *m, const Expr *e) {
  LoadReplaceCtx *c = m->user;
  if (e->kind == EXPR_LOAD && e->load.buffer == c->buf) return c->with;
  return mutate_expr_children(m, e);
}

loom_status sch_reverse_compute_inline(Schedule *s, SchRV block_rv) {
  const Stmt *r = sch_lookup_block(s, block_rv);
  if (!r) return LOOM_ERR_SCHEDULE;
  Arena *a = s->arena;
  const Stmt *body = s->func->body;
  const Block *blk = r->realize.block;
  const char *bad = NULL;
  const char *fn = "reverse_compute_inline";
  if (r == body) return sch_fail(s, "%s: the root block cannot be inlined", fn);
  if (blk->n_writes != 1)
    return sch_fail(s, "%s: block \"%s\" writes %d buffers; expected exactly one", fn, blk->name, blk->n_writes);
  if (blk->init || !all_spatial(blk, &bad))
    return sch_fail(s, "%s: block \"%s\" is a reduction; expected a spatial block", fn, blk->name);
  if (!(r->realize.predicate->kind == EXPR_INT && r->realize.predicate->int_value == 1))
    return sch_fail(s, "%s: block \"%s\" has a predicate; expected an unconditional block", fn, blk->name);
  const Stmt *cst = blk->body;
  if (cst->kind != STMT_STORE || cst->store.buffer != blk->writes[0].buffer)
    return sch_fail(s, "%s: the body of block \"%s\" must be one store to %s", fn, blk->name,
                    blk->writes[0].buffer->name);

  BlockOrder order = blocks_in_order(a, body);
  int pos = block_order_index(&order, r);
  /* The producer buffer: the one read buffer some other block writes. */
  const Buffer *buf = NULL;
  const Stmt *prod = NULL;
  for (int k = 0; k < blk->n_reads; k++) {
    const Buffer *in = blk->reads[k].buffer;
    for (int i = 0; i < order.n; i++) {
      const Stmt *o = order.items[i];
      if (o == r || !block_writes(o->realize.block, in)) continue;
      if (buf && buf != in)
        return sch_fail(s, "%s: block \"%s\" reads both %s and %s from other blocks; expected one producer", fn,
                        blk->name, buf->name, in->name);
      if (prod && prod != o)
        return sch_fail(s, "%s: %s has two producers, \"%s\" and \"%s\"; expected one", fn, in->name,
                        prod->realize.block->name, o->realize.block->name);
      buf = in;
      prod = o;
    }
  }
  if (!buf) return sch_fail(s, "%s: block \"%s\" reads nothing another block produces", fn, blk->name);
  const Block *pblk = prod->realize.block;
  if (buffer_is_param(s->func, buf))
    return sch_fail(s, "%s: %s is a function parameter; it must stay written", fn, buf->name);
  if (pblk->init || !all_spatial(pblk, &bad) || expr_reads_buffer(pblk->body->kind == STMT_STORE ? pblk->body->store.value : expr_i64(a, 0), buf))
    return sch_fail(s, "%s: producer \"%s\" of %s is a reduction; expected an injective (spatial) producer", fn,
                    pblk->name, buf->name);
  const Stmt *pst = pblk->body;
  if (pst->kind != STMT_STORE || pst->store.buffer != buf || pblk->n_writes != 1)
    return sch_fail(s, "%s: the body of producer \"%s\" must be one store to %s", fn, pblk->name, buf->name);
  const Expr **lds;
  int nl = loads_of(a, cst, buf, &lds);
  if (nl < 1) return sch_fail(s, "%s: block \"%s\" does not load %s", fn, blk->name, buf->name);
  if (buf->ndim != blk->n_iters)
    return sch_fail(s, "%s: block \"%s\" has %d iterators but %s has %d dimensions; expected elementwise", fn,
                    blk->name, blk->n_iters, buf->name, buf->ndim);
  PtrMap vmap; /* consumer iterator -> producer's index expression */
  ptrmap_init(&vmap, a);
  for (int d = 0; d < buf->ndim; d++) {
    const Expr *idx = lds[0]->load.indices[d];
    int k = -1;
    for (int j = 0; j < blk->n_iters; j++)
      if (blk->iters[j].var == idx) k = j;
    bool dup = false;
    for (int l = 1; l < nl; l++) dup |= !expr_equal(lds[l]->load.indices[d], idx);
    /* An extent-1 dimension read at its only index (the simplifier turns
     * the iterator of a one-element range into its constant minimum) maps
     * to the consumer iterator of that extent-1 range in the same position. */
    int64_t c, one;
    if (k < 0 && expr_as_int(idx, &c) && c == 0 && expr_as_int(buf->shape[d], &one) && one == 1 && d < blk->n_iters &&
        expr_is_int(blk->iters[d].extent, 1) && expr_is_int(blk->iters[d].min, 0)) {
      k = d;
      idx = blk->iters[d].var;
    }
    dup |= ptrmap_has(&vmap, idx);
    if (k < 0 || dup)
      return sch_fail(s, "%s: block \"%s\" must read %s at exactly its iterators", fn, blk->name, buf->name);
    int64_t ext, shp;
    if (!expr_is_int(blk->iters[k].min, 0) || !expr_as_int(blk->iters[k].extent, &ext) ||
        !expr_as_int(buf->shape[d], &shp) || ext != shp)
      return sch_fail(s, "%s: iterator \"%s\" of block \"%s\" must cover dimension %d of %s", fn,
                      blk->iters[k].var->var.name, blk->name, d, buf->name);
    ptrmap_put(&vmap, idx, (void *)pst->store.indices[d]);
  }
  for (int i = 0; i < order.n; i++) {
    const Stmt *o = order.items[i];
    if (o == r || o == prod) continue;
    if (block_reads(o->realize.block, buf))
      return sch_fail(s, "%s: block \"%s\" also reads %s; expected \"%s\" to be its only consumer", fn,
                      o->realize.block->name, buf->name, blk->name);
  }
  int ppos = block_order_index(&order, prod);
  if (ppos > pos) return sch_fail(s, "%s: producer \"%s\" comes after block \"%s\"", fn, pblk->name, blk->name);
  for (int i = ppos + 1; i < pos; i++) {
    const Block *ob = order.items[i]->realize.block;
    const Buffer *out = blk->writes[0].buffer;
    if (block_reads(ob, out) || block_writes(ob, out))
      return sch_fail(s, "%s: block \"%s\" accesses %s between \"%s\" and \"%s\"", fn, ob->name, out->name,
                      pblk->name, blk->name);
    for (int k = 0; k < blk->n_reads; k++)
      if (block_writes(ob, blk->reads[k].buffer))
        return sch_fail(s, "%s: block \"%s\" writes %s between \"%s\" and \"%s\"", fn, ob->name,
                        blk->reads[k].buffer->name, pblk->name, blk->name);
  }

  /* consumer value with its iterators at the producer's indices, then the
   * producer's value in place of the loads of buf. */
  const Expr *val = expr_substitute(a, cst->store.value, &vmap);
  LoadReplaceCtx lc = {buf, pst->store.value};
  Mutator m = {a, NULL, load_replace_cb, &lc};
  val = mutate_expr(&m, val);
  const Expr **oidx = ARENA_ARRAY(a, const Expr *, cst->store.n);
  for (int d = 0; d < cst->store.n; d++) oidx[d] = expr_substitute(a, cst->store.indices[d], &vmap);
  Analyzer *az = arith_analyzer_new(a);
  Block *nb = block_copy(a, pblk);
  nb->body = stmt_store(a, cst->store.buffer, val, oidx, cst->store.n);
  BufferRegion *w = ARENA_NEW(a, BufferRegion);
  *w = region_substitute(a, blk->writes[0], &vmap);
  nb->writes = w;
  nb->n_writes = 1;
  nb->reads = block_reads_from_loads(a, az, nb, &nb->n_reads);
  const Stmt *np = stmt_realize(a, prod->realize.iter_values, prod->realize.n, prod->realize.predicate, nb);
  const Stmt *nbody = stmt_replace(a, body, block_nest_top(body, r), NULL);
  nbody = stmt_replace(a, nbody, prod, np);
  nbody = root_remove_alloc(a, nbody, buf);
  sch_set_body(s, nbody);
  SchRV in[1] = {block_rv};
  Inst inst = {.kind = INST_REVERSE_COMPUTE_INLINE, .inputs = in, .n_inputs = 1};
  sch_record(s, &inst);
  return LOOM_OK;
}
