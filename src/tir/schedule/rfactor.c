/* rfactor: turn one reduction loop of a block into a spatial axis of a
 * partial-result buffer (TVM's rfactor, TensorIR §4.2).
 *
 *   for i: for ko: for ki:  out[i] = out[i] + f(i, ko*16 + ki)
 * becomes
 *   for i:
 *     for ko: for ki:  rf[i, ki] = rf[i, ki] + f(i, ko*16 + ki)      (block out_rf)
 *     for ki_wb:       out[i] = out[i] + rf[i, ki_wb]                (block out)
 *
 * The partial sums over ki are independent, so ki can be vectorized (a row
 * sum becomes 16-lane vector adds and one 16-element sum) or run in
 * parallel. Reassociating the reduction is what a vectorizing compiler does
 * with -ffast-math; Loom's C already builds with -ffp-contract=fast.
 *
 * Requirements: the loop carries only reduction iterators of exactly one
 * block, whose body is out[...] = out[...] op rhs (op: + * max min, rhs not
 * reading out) with an init; every loop from the outermost reduction loop
 * down is a perfect nest over that block and carries reduction iterators
 * only (or has one iteration);
 * the block's predicate does not depend on those loops (a partial split of
 * the reduction would leave rf lanes unwritten). rf's shape is the block's
 * spatial domain plus the loop's extent; tir_compact_buffers shrinks it to
 * the part live under the loops both blocks share. */
#include "tir/schedule/block_util.h"

#include <math.h>
#include <string.h>

#define MAX_DEPTH 64

/* The neutral element of op for dtype t; NULL when there is none we emit. */
static const Expr *identity_of(Arena *a, ExprKind op, DType t) {
  bool fl = dtype_is_float(t);
  switch (op) {
    case EXPR_ADD: return fl ? expr_float(a, t, 0.0) : expr_int(a, t, 0);
    case EXPR_MUL: return fl ? expr_float(a, t, 1.0) : expr_int(a, t, 1);
    case EXPR_MAX: return fl ? expr_float(a, t, -INFINITY) : NULL;
    case EXPR_MIN: return fl ? expr_float(a, t, INFINITY) : NULL;
    default: return NULL;
  }
}

/* Matches body out[idx] = out[idx] op rhs (or rhs op out[idx]); returns rhs. */
static const Expr *match_update(const Block *blk, ExprKind *op) {
  const Stmt *st = blk->body;
  if (blk->n_writes != 1 || st->kind != STMT_STORE || st->store.buffer != blk->writes[0].buffer) return NULL;
  const Expr *v = st->store.value;
  if (v->kind != EXPR_ADD && v->kind != EXPR_MUL && v->kind != EXPR_MAX && v->kind != EXPR_MIN) return NULL;
  for (int side = 0; side < 2; side++) {
    const Expr *acc = side ? v->bin.b : v->bin.a, *rhs = side ? v->bin.a : v->bin.b;
    if (acc->kind != EXPR_LOAD || acc->load.buffer != st->store.buffer || acc->load.n != st->store.n) continue;
    bool same = true;
    for (int d = 0; d < st->store.n; d++) same = same && expr_equal(acc->load.indices[d], st->store.indices[d]);
    if (same && !expr_reads_buffer(rhs, st->store.buffer)) {
      *op = v->kind;
      return rhs;
    }
  }
  return NULL;
}

static const Stmt *store_combine(Arena *a, const Buffer *b, const Expr *const *idx, int n, ExprKind op,
                                 const Expr *rhs) {
  return stmt_store(a, b, expr_binary(a, op, expr_load(a, b, idx, n), rhs), idx, n);
}

SchRV sch_rfactor(Schedule *s, SchRV loop_rv) {
  const Stmt *loop = sch_lookup_loop(s, loop_rv);
  if (!loop) return -1;
  Arena *a = s->arena;
  const Stmt *body = s->func->body;
  const char *ln = loop->loop.var->var.name;
  BlockOrder under = blocks_in_order(a, loop);
  if (under.n != 1)
    return sch_fail(s, "rfactor: loop \"%s\" holds %d blocks; expected exactly one reduction block", ln, under.n), -1;
  const Stmt *r = under.items[0];
  const Block *blk = r->realize.block;
  ExprKind op;
  const Expr *rhs = match_update(blk, &op);
  if (!blk->init || !rhs)
    return sch_fail(s, "rfactor: block \"%s\" is not a reduction out = out op rhs (op + * max min) with an init",
                    blk->name), -1;
  const Buffer *out = blk->writes[0].buffer;
  const Expr *ident = identity_of(a, op, out->dtype);
  if (!ident) return sch_fail(s, "rfactor: block \"%s\": no identity for its max/min over integers", blk->name), -1;

  const Stmt *path[MAX_DEPTH];
  int np = sch_path_loops(body, r, path, MAX_DEPTH);
  LOOM_ASSERT(np <= MAX_DEPTH);
  bool spatial[MAX_DEPTH], reduce[MAX_DEPTH];
  block_loop_kinds(r, path, np, spatial, reduce);
  int li = -1, top = -1;
  for (int i = 0; i < np; i++) {
    if (path[i] == loop) li = i;
    if (reduce[i] && top < 0) top = i;
  }
  LOOM_ASSERT(li >= 0);
  if (!reduce[li] || spatial[li])
    return sch_fail(s, "rfactor: loop \"%s\" must carry reduction iterators of block \"%s\" only", ln, blk->name), -1;
  for (int i = top; i < np; i++) {
    const char *name = path[i]->loop.var->var.name;
    if (spatial[i])
      return sch_fail(s, "rfactor: loop \"%s\" inside the reduction loops of block \"%s\" carries a spatial iterator",
                      name, blk->name), -1;
    /* A loop that binds no iterator re-runs the reduction (its init
     * included); as a reduction axis of the partial results it would
     * accumulate across its iterations instead. */
    int64_t ext;
    if (!reduce[i] && !(expr_as_int(path[i]->loop.extent, &ext) && ext == 1))
      return sch_fail(s, "rfactor: loop \"%s\" inside the reduction loops of block \"%s\" binds none of its "
                      "iterators", name, blk->name), -1;
    if (path[i]->loop.body != (i + 1 < np ? path[i + 1] : r))
      return sch_fail(s, "rfactor: loop \"%s\" holds more than the reduction of block \"%s\"", name, blk->name), -1;
    if (expr_uses_var(r->realize.predicate, path[i]->loop.var))
      return sch_fail(s, "rfactor: the predicate of block \"%s\" depends on reduction loop \"%s\"; expected an "
                      "exact split of the reduction", blk->name, name), -1;
  }

  /* The partial-result block's iterators: the spatial ones (fresh), then one
   * per reduction loop, the rfactor loop's spatial. Old reduction iterators
   * become their bindings in terms of the new ones. */
  int ns = 0;
  for (int k = 0; k < blk->n_iters; k++) ns += blk->iters[k].type == ITER_SPATIAL;
  int nl = np - top, nrf = ns + nl;
  IterVar *it = ARENA_ARRAY(a, IterVar, nrf);
  const Expr **vals = ARENA_ARRAY(a, const Expr *, nrf);
  PtrMap imap, lmap;
  ptrmap_init(&imap, a);
  ptrmap_init(&lmap, a);
  const Expr **shape = ARENA_ARRAY(a, const Expr *, ns + 1), **idx = ARENA_ARRAY(a, const Expr *, ns + 1);
  int j = 0;
  const Expr *rf_var = NULL;
  for (int k = 0; k < blk->n_iters; k++) {
    if (blk->iters[k].type != ITER_SPATIAL) continue;
    it[j] = blk->iters[k];
    it[j].var = expr_var(a, blk->iters[k].var->var.name, DT_I64);
    ptrmap_put(&imap, blk->iters[k].var, (void *)it[j].var);
    vals[j] = r->realize.iter_values[k];
    shape[j] = it[j].extent;
    idx[j] = expr_sub(a, it[j].var, it[j].min);
    j++;
  }
  for (int i = top; i < np; i++, j++) {
    const Stmt *l = path[i];
    it[j] = (IterVar){.var = expr_var(a, arena_printf(a, "v%s", l->loop.var->var.name), DT_I64),
                      .min = l->loop.min,
                      .extent = l->loop.extent,
                      .type = l == loop ? ITER_SPATIAL : ITER_REDUCE};
    ptrmap_put(&lmap, l->loop.var, (void *)it[j].var);
    vals[j] = l->loop.var;
    if (l == loop) rf_var = it[j].var;
  }
  shape[ns] = loop->loop.extent;
  idx[ns] = expr_sub(a, rf_var, loop->loop.min);
  for (int k = 0; k < blk->n_iters; k++)
    if (blk->iters[k].type == ITER_REDUCE)
      ptrmap_put(&imap, blk->iters[k].var, (void *)expr_substitute(a, r->realize.iter_values[k], &lmap));
  Analyzer *az = arith_analyzer_new(a);
  for (int d = 0; d <= ns; d++) idx[d] = sched_simplify(az, idx[d]);

  const char *rf_name = sch_unique_block_name(s, arena_printf(a, "%s_rf", blk->name));
  Buffer *rf = buffer_new(a, rf_name, out->dtype, ns + 1, shape);
  rf->scope = SCOPE_LOCAL;
  Block *rb = ARENA_NEW(a, Block);
  rb->name = rf_name;
  rb->iters = it;
  rb->n_iters = nrf;
  rb->init = stmt_store(a, rf, ident, idx, ns + 1);
  rb->body = store_combine(a, rf, idx, ns + 1, op, expr_substitute(a, rhs, &imap));
  BufferRegion *rw = ARENA_NEW(a, BufferRegion);
  *rw = region_point(a, rf, idx);
  rb->writes = rw;
  rb->n_writes = 1;
  rb->reads = block_reads_from_loads(a, az, rb, &rb->n_reads);
  const Stmt *rf_realize = stmt_realize(a, vals, nrf, r->realize.predicate, rb);

  /* The write-back: the original block (same name) reducing rf over a new
   * loop, right after the reduction loops. */
  const Expr *wl = sch_new_loop_var(s, arena_printf(a, "%s_wb", ln));
  IterVar *wit = ARENA_ARRAY(a, IterVar, ns + 1);
  const Expr **wvals = ARENA_ARRAY(a, const Expr *, ns + 1), **widx = ARENA_ARRAY(a, const Expr *, ns + 1);
  PtrMap wmap;
  ptrmap_init(&wmap, a);
  for (int k = 0, q = 0; k < blk->n_iters; k++) {
    if (blk->iters[k].type != ITER_SPATIAL) continue;
    wit[q] = blk->iters[k];
    wit[q].var = expr_var(a, blk->iters[k].var->var.name, DT_I64);
    ptrmap_put(&wmap, blk->iters[k].var, (void *)wit[q].var);
    wvals[q] = r->realize.iter_values[k];
    widx[q] = sched_simplify(az, expr_sub(a, wit[q].var, wit[q].min));
    q++;
  }
  wit[ns] = (IterVar){.var = expr_var(a, arena_printf(a, "v%s_wb", ln), DT_I64),
                      .min = expr_i64(a, 0),
                      .extent = loop->loop.extent,
                      .type = ITER_REDUCE};
  wvals[ns] = wl;
  widx[ns] = wit[ns].var;
  const Stmt *ost = blk->body;
  const Expr **oidx = ARENA_ARRAY(a, const Expr *, ost->store.n);
  for (int d = 0; d < ost->store.n; d++) oidx[d] = expr_substitute(a, ost->store.indices[d], &wmap);
  Block *wb = ARENA_NEW(a, Block);
  wb->name = blk->name;
  wb->iters = wit;
  wb->n_iters = ns + 1;
  wb->init = stmt_substitute(a, blk->init, &wmap);
  wb->body = store_combine(a, out, oidx, ost->store.n, op, expr_load(a, rf, widx, ns + 1));
  BufferRegion *ww = ARENA_NEW(a, BufferRegion);
  *ww = region_substitute(a, blk->writes[0], &wmap);
  wb->writes = ww;
  wb->n_writes = 1;
  wb->reads = block_reads_from_loads(a, az, wb, &wb->n_reads);
  const Stmt *wb_loop = stmt_for(a, wl, expr_i64(a, 0), loop->loop.extent, FOR_SERIAL,
                                 stmt_realize(a, wvals, ns + 1, r->realize.predicate, wb));

  const Stmt *nbody = stmt_replace(a, body, r, rf_realize);
  const Stmt *nest = stmt_find_loop(nbody, path[top]->loop.var);
  nbody = stmt_replace(a, nbody, nest, stmt_seq2(a, nest, wb_loop));
  nbody = root_add_alloc(a, nbody, rf);
  sch_set_body(s, nbody);
  SchRV outb = sch_new_block_rv(s, rf_name);
  SchRV in[1] = {loop_rv};
  SchRV outs[1] = {outb};
  Inst inst = {.kind = INST_RFACTOR, .inputs = in, .n_inputs = 1, .outputs = outs, .n_outputs = 1};
  sch_record(s, &inst);
  return outb;
}
