/* compute_at and reverse_compute_at: move a block under a loop of its
 * consumer (producer), computing only the region needed (produced) in one
 * iteration of that loop.
 *
 * Region inference (TensorIR §4.2, TVM compute_at.cc): the accesses of the
 * blocks under the loop, with their iterators replaced by their bindings,
 * are evaluated as integer sets over the loops *below* the loop; the loop
 * itself and the loops above it stay symbolic. The moved block gets one new
 * loop per buffer dimension over that hull, its iterators bound to
 * hull.min + loop var, and a predicate clipping it to its iterator domain
 * when the hull can stick out (e.g. a stencil's halo at the last tile). */
#include "tir/schedule/block_util.h"

#include "support/vec.h"

#include <string.h>

#define MAX_DEPTH 64

typedef struct StoreCtx {
  Arena *arena;
  const Buffer *buf;
  VEC(const Stmt *) list;
} StoreCtx;

static bool store_cb(Visitor *v, const Stmt *s) {
  StoreCtx *c = v->user;
  if (s->kind == STMT_STORE && s->store.buffer == c->buf) VEC_PUSH(c->arena, c->list, s);
  return true;
}

typedef const Expr *const *IndexList; /* one index per buffer dimension */

/* Index lists of every access to buf in the block (loads or stores). */
static int block_accesses(Arena *a, const Block *blk, const Buffer *buf, bool loads,
                          const IndexList **out) {
  VEC(IndexList) idx = {0};
  if (loads) {
    const Expr **ls;
    int n = loads_of(a, blk->init, buf, &ls);
    for (int i = 0; i < n; i++) VEC_PUSH(a, idx, ls[i]->load.indices);
    n = loads_of(a, blk->body, buf, &ls);
    for (int i = 0; i < n; i++) VEC_PUSH(a, idx, ls[i]->load.indices);
  } else {
    StoreCtx c = {a, buf, {0}};
    Visitor v = {store_cb, NULL, &c};
    visit_stmt(&v, blk->init);
    visit_stmt(&v, blk->body);
    for (int i = 0; i < c.list.n; i++) VEC_PUSH(a, idx, c.list.items[i]->store.indices);
  }
  *out = idx.items;
  return idx.n;
}

/* Binds the range of `loop` and of every loop above it. */
static void bind_outer_loops(Analyzer *az, const Stmt *body, const Stmt *loop) {
  const Stmt *path[MAX_DEPTH];
  int n = sch_path_loops(body, loop, path, MAX_DEPTH);
  for (int i = 0; i < n && i < MAX_DEPTH; i++)
    arith_bind_range(az, path[i]->loop.var, path[i]->loop.min, path[i]->loop.extent);
  arith_bind_range(az, loop->loop.var, loop->loop.min, loop->loop.extent);
}

/* Hull (per dimension of buf) of the accesses of `blocks` to buf, over the
 * loops strictly below `loop`. Returns false with a message on an unbounded
 * access. */
static bool access_hull(Schedule *s, Analyzer *az, const Stmt *loop, const Stmt *const *blocks,
                        int n_blocks, const Buffer *buf, bool loads, IntSet *hull) {
  Arena *a = s->arena;
  const Stmt *body = s->func->body;
  bool any = false;
  for (int bi = 0; bi < n_blocks; bi++) {
    const Stmt *r = blocks[bi];
    const Stmt *path[MAX_DEPTH];
    int np = sch_path_loops(body, r, path, MAX_DEPTH);
    PtrMap dom;
    ptrmap_init(&dom, a);
    bool below = false;
    for (int i = 0; i < np && i < MAX_DEPTH; i++) {
      if (below) {
        IntSet *set = ARENA_NEW(a, IntSet);
        *set = intset_range(az, path[i]->loop.min, path[i]->loop.extent);
        ptrmap_put(&dom, path[i]->loop.var, set);
      }
      if (path[i] == loop) below = true;
    }
    PtrMap *bind = block_binding_map(a, r);
    const IndexList *acc;
    int na = block_accesses(a, r->realize.block, buf, loads, &acc);
    for (int k = 0; k < na; k++)
      for (int d = 0; d < buf->ndim; d++) {
        const Expr *e = expr_substitute(a, acc[k][d], bind);
        IntSet set = arith_eval_set(az, e, &dom);
        if (!set.min || !set.max) {
          sch_fail(s, "cannot bound the access %s[..., %s, ...] of block \"%s\" under loop \"%s\"",
                   buf->name, expr_to_string(a, acc[k][d]), r->realize.block->name,
                   loop->loop.var->var.name);
          return false;
        }
        hull[d] = any || k > 0 ? intset_union(az, hull[d], set) : set;
      }
    /* `any` tracks whether hull holds a first set; an access-free block adds nothing. */
    if (na > 0) any = true;
  }
  if (!any) {
    sch_fail(s, "no block under loop \"%s\" accesses buffer \"%s\"", loop->loop.var->var.name, buf->name);
    return false;
  }
  return true;
}

/* The new realize (inside its new loops) of block `r` covering `hull` of the
 * buffer it accesses at `acc` (indices that are its own iterators). Iterators
 * not in acc cover their whole domain; if `spatial_must_map`, a spatial
 * iterator missing from acc is refused. */
static const Stmt *nest_for_hull(Schedule *s, Analyzer *az, const Stmt *r, const Expr *const *acc,
                                 int ndim, const IntSet *hull, bool spatial_must_map) {
  Arena *a = s->arena;
  const Block *blk = r->realize.block;
  const Expr **vals = ARENA_ARRAY(a, const Expr *, blk->n_iters);
  const Expr **lvars = ARENA_ARRAY(a, const Expr *, blk->n_iters);
  const Expr **lext = ARENA_ARRAY(a, const Expr *, blk->n_iters);
  const Expr *pred = NULL; /* conjunction of the clips needed */
  int nl = 0;
  for (int k = 0; k < blk->n_iters; k++) {
    const IterVar *it = &blk->iters[k];
    int dim = -1;
    for (int d = 0; d < ndim; d++)
      if (acc[d] == it->var) dim = d;
    if (dim < 0) {
      if (spatial_must_map && it->type == ITER_SPATIAL) {
        sch_fail(s, "block \"%s\": spatial iterator \"%s\" does not index the buffer it writes", blk->name,
                 it->var->var.name);
        return NULL;
      }
      const Expr *v = sch_new_loop_var(s, arena_printf(a, "ax%d", k));
      lvars[nl] = v;
      lext[nl++] = it->extent;
      vals[k] = sched_simplify(az, expr_add(a, it->min, v));
      if (expr_is_int(it->min, 0)) vals[k] = v;
      continue;
    }
    const Expr *lo = sched_simplify(az, hull[dim].min);
    const Expr *ext = sched_simplify(az, expr_add(a, expr_sub(a, hull[dim].max, hull[dim].min), expr_i64(a, 1)));
    if (expr_is_int(ext, 1)) {
      vals[k] = lo;
    } else {
      const Expr *v = sch_new_loop_var(s, arena_printf(a, "ax%d", k));
      lvars[nl] = v;
      lext[nl++] = ext;
      vals[k] = sched_simplify(az, expr_add(a, lo, v));
    }
    const Expr *last = expr_sub(a, expr_add(a, it->min, it->extent), expr_i64(a, 1));
    bool lo_ok = arith_can_prove(az, expr_binary(a, EXPR_GE, lo, it->min));
    bool hi_ok = arith_can_prove(az, expr_binary(a, EXPR_LE, sched_simplify(az, hull[dim].max), last));
    const Expr *clip[2] = {lo_ok ? NULL : expr_binary(a, EXPR_GE, vals[k], it->min),
                           hi_ok ? NULL : expr_binary(a, EXPR_LE, vals[k], sched_simplify(az, last))};
    for (int c = 0; c < 2; c++)
      if (clip[c]) pred = pred ? expr_and(a, pred, clip[c]) : clip[c];
  }
  const Stmt *st = stmt_realize(a, vals, blk->n_iters, pred, blk);
  for (int i = nl - 1; i >= 0; i--) st = stmt_for(a, lvars[i], expr_i64(a, 0), lext[i], FOR_SERIAL, st);
  return st;
}

/* Are the accesses `acc` (ndim indices) distinct iterators of blk? */
static bool indices_are_iters(const Block *blk, const Expr *const *acc, int ndim) {
  for (int d = 0; d < ndim; d++) {
    bool found = false;
    for (int k = 0; k < blk->n_iters; k++) found |= acc[d] == blk->iters[k].var;
    if (!found) return false;
    for (int e = 0; e < d; e++)
      if (acc[e] == acc[d]) return false;
  }
  return true;
}

/* Does any loop on the path to (and including) `loop` carry a reduction
 * iterator of block realize r? */
static bool reduction_bound_above(const Stmt *body, const Stmt *loop, const Stmt *r) {
  const Stmt *path[MAX_DEPTH];
  int n = sch_path_loops(body, loop, path, MAX_DEPTH);
  const Block *blk = r->realize.block;
  for (int k = 0; k < blk->n_iters; k++) {
    if (blk->iters[k].type != ITER_REDUCE) continue;
    const Expr *v = r->realize.iter_values[k];
    if (expr_uses_var(v, loop->loop.var)) return true;
    for (int i = 0; i < n && i < MAX_DEPTH; i++)
      if (expr_uses_var(v, path[i]->loop.var)) return true;
  }
  return false;
}

/* Checks shared by both directions; returns the block or NULL. */
static const Block *check_movable(Schedule *s, const Stmt *r, const Stmt *loop) {
  const Stmt *body = s->func->body;
  const Block *blk = r->realize.block;
  if (r == body) {
    sch_fail(s, "the root block cannot be moved");
    return NULL;
  }
  if (stmt_contains(loop, r)) {
    sch_fail(s, "loop \"%s\" is an ancestor of block \"%s\"; expected a loop outside it",
             loop->loop.var->var.name, blk->name);
    return NULL;
  }
  if (sch_enclosing_block(body, r) != sch_enclosing_block(body, loop)) {
    sch_fail(s, "block \"%s\" and loop \"%s\" are in different block scopes", blk->name,
             loop->loop.var->var.name);
    return NULL;
  }
  return blk;
}

static void record2(Schedule *s, InstKind k, SchRV block, SchRV loop) {
  SchRV in[2] = {block, loop};
  Inst inst = {.kind = k, .inputs = in, .n_inputs = 2};
  sch_record(s, &inst);
}

/* Removes r's nest, then replaces the loop (found again by its variable)
 * with one whose body has `nest` first (at_end false) or last. */
static void move_nest(Schedule *s, const Stmt *r, const Stmt *loop, const Stmt *nest, bool at_end) {
  Arena *a = s->arena;
  const Stmt *body = stmt_replace(a, s->func->body, block_nest_top(s->func->body, r), NULL);
  const Stmt *l2 = stmt_find_loop(body, loop->loop.var);
  LOOM_ASSERT(l2);
  Stmt *nl = arena_memdup(a, l2, sizeof *nl);
  nl->loop.body = at_end ? stmt_seq2(a, l2->loop.body, nest) : stmt_seq2(a, nest, l2->loop.body);
  sch_set_body(s, stmt_replace(a, body, l2, nl));
}

loom_status sch_compute_at(Schedule *s, SchRV block_rv, SchRV loop_rv) {
  const Stmt *r = sch_lookup_block(s, block_rv);
  if (!r) return LOOM_ERR_SCHEDULE;
  const Stmt *loop = sch_lookup_loop(s, loop_rv);
  if (!loop) return LOOM_ERR_SCHEDULE;
  const Block *blk = check_movable(s, r, loop);
  if (!blk) return LOOM_ERR_SCHEDULE;
  Arena *a = s->arena;
  const Stmt *body = s->func->body;
  const char *ln = loop->loop.var->var.name;
  if (blk->n_writes != 1)
    return sch_fail(s, "compute_at: block \"%s\" writes %d buffers; expected exactly one", blk->name,
                    blk->n_writes);
  const Buffer *buf = blk->writes[0].buffer;
  const IndexList *widx;
  if (block_accesses(a, blk, buf, false, &widx) < 1 || !indices_are_iters(blk, widx[0], buf->ndim))
    return sch_fail(s, "compute_at: block \"%s\" must store %s at its own iterators", blk->name,
                    buf->name);

  BlockOrder order = blocks_in_order(a, body);
  int pos = block_order_index(&order, r);
  int first = -1, last = -1;
  VEC(const Stmt *) consumers = {0};
  for (int i = 0; i < order.n; i++) {
    const Stmt *o = order.items[i];
    bool under = stmt_contains(loop, o);
    if (under && first < 0) first = i;
    if (under) last = i;
    if (o == r) continue;
    const Block *ob = o->realize.block;
    if (block_writes(ob, buf))
      return sch_fail(s, "compute_at: block \"%s\" also writes %s%s; expected \"%s\" to be its only producer",
                      ob->name, buf->name, buffer_is_param(s->func, buf) ? " (a function output)" : "",
                      blk->name);
    if (block_reads(ob, buf)) {
      if (!under)
        return sch_fail(s, "compute_at: consumer \"%s\" of block \"%s\" is not under loop \"%s\"",
                        ob->name, blk->name, ln);
      VEC_PUSH(a, consumers, o);
    }
  }
  if (consumers.n == 0)
    return sch_fail(s, "compute_at: block \"%s\" is not a producer of any block under loop \"%s\"",
                    blk->name, ln);
  if (pos > first)
    return sch_fail(s, "compute_at: block \"%s\" comes after loop \"%s\"; expected a producer before it",
                    blk->name, ln);
  /* Moving the block later must not make it read something written after its
   * old position: no block between it and (or under) the loop writes its inputs. */
  for (int i = pos + 1; i <= last; i++) {
    const Block *ob = order.items[i]->realize.block;
    for (int k = 0; k < blk->n_reads; k++) {
      const Buffer *in = blk->reads[k].buffer;
      if (in != buf && block_writes(ob, in))
        return sch_fail(s, "compute_at: block \"%s\" writes %s, which block \"%s\" reads; it would be "
                        "read before it is written", ob->name, in->name, blk->name);
    }
  }

  Analyzer *az = arith_analyzer_new(a);
  bind_outer_loops(az, body, loop);
  IntSet *hull = ARENA_ARRAY(a, IntSet, buf->ndim);
  if (!access_hull(s, az, loop, consumers.items, consumers.n, buf, true, hull)) return LOOM_ERR_SCHEDULE;
  const Stmt *nest = nest_for_hull(s, az, r, widx[0], buf->ndim, hull, true);
  if (!nest) return LOOM_ERR_SCHEDULE;
  move_nest(s, r, loop, nest, false);
  record2(s, INST_COMPUTE_AT, block_rv, loop_rv);
  return LOOM_OK;
}

loom_status sch_reverse_compute_at(Schedule *s, SchRV block_rv, SchRV loop_rv) {
  const Stmt *r = sch_lookup_block(s, block_rv);
  if (!r) return LOOM_ERR_SCHEDULE;
  const Stmt *loop = sch_lookup_loop(s, loop_rv);
  if (!loop) return LOOM_ERR_SCHEDULE;
  const Block *blk = check_movable(s, r, loop);
  if (!blk) return LOOM_ERR_SCHEDULE;
  Arena *a = s->arena;
  const Stmt *body = s->func->body;
  const char *ln = loop->loop.var->var.name;
  if (blk->init) return sch_fail(s, "reverse_compute_at: block \"%s\" has an init; expected a spatial block", blk->name);
  for (int k = 0; k < blk->n_iters; k++)
    if (blk->iters[k].type != ITER_SPATIAL)
      return sch_fail(s, "reverse_compute_at: block \"%s\" has reduction iterator \"%s\"; expected a spatial block",
                      blk->name, blk->iters[k].var->var.name);

  BlockOrder order = blocks_in_order(a, body);
  int pos = block_order_index(&order, r);
  int first = -1, last = -1;
  for (int i = 0; i < order.n; i++)
    if (stmt_contains(loop, order.items[i])) {
      if (first < 0) first = i;
      last = i;
    }
  if (first < 0 || pos < first)
    return sch_fail(s, "reverse_compute_at: block \"%s\" does not come after loop \"%s\"", blk->name, ln);

  /* The one buffer the block reads that blocks under the loop produce. */
  const Buffer *buf = NULL;
  VEC(const Stmt *) producers = {0};
  for (int k = 0; k < blk->n_reads; k++) {
    const Buffer *in = blk->reads[k].buffer;
    bool produced = false;
    for (int i = first; i <= last; i++) produced |= block_writes(order.items[i]->realize.block, in);
    if (!produced || in == buf) continue;
    if (buf)
      return sch_fail(s, "reverse_compute_at: block \"%s\" reads both %s and %s from blocks under loop \"%s\"; "
                      "expected one producer buffer", blk->name, buf->name, in->name, ln);
    buf = in;
  }
  if (!buf)
    return sch_fail(s, "reverse_compute_at: block \"%s\" is not a consumer of any block under loop \"%s\"",
                    blk->name, ln);
  for (int i = 0; i < order.n; i++) {
    const Stmt *o = order.items[i];
    const Block *ob = o->realize.block;
    bool under = i >= first && i <= last;
    if (o != r && block_writes(ob, buf)) {
      if (!under)
        return sch_fail(s, "reverse_compute_at: block \"%s\" also writes %s outside loop \"%s\"", ob->name,
                        buf->name, ln);
      if (reduction_bound_above(body, loop, o))
        return sch_fail(s, "reverse_compute_at: producer \"%s\" is a reduction not complete within loop \"%s\"",
                        ob->name, ln);
      VEC_PUSH(a, producers, o);
    }
    /* Blocks the move jumps over (or lands after) must not touch what it
     * writes nor write what it reads. */
    if (i >= first && i < pos) {
      for (int w = 0; w < blk->n_writes; w++)
        if (block_reads(ob, blk->writes[w].buffer) || block_writes(ob, blk->writes[w].buffer))
          return sch_fail(s, "reverse_compute_at: block \"%s\" accesses %s, which block \"%s\" writes",
                          ob->name, blk->writes[w].buffer->name, blk->name);
      if (!under)
        for (int k = 0; k < blk->n_reads; k++)
          if (block_writes(ob, blk->reads[k].buffer))
            return sch_fail(s, "reverse_compute_at: block \"%s\" writes %s between loop \"%s\" and block \"%s\"",
                            ob->name, blk->reads[k].buffer->name, ln, blk->name);
    }
  }
  const IndexList *ridx;
  int nr = block_accesses(a, blk, buf, true, &ridx);
  if (nr < 1 || !indices_are_iters(blk, ridx[0], buf->ndim))
    return sch_fail(s, "reverse_compute_at: block \"%s\" must read %s at its own iterators", blk->name, buf->name);
  for (int k = 1; k < nr; k++)
    for (int d = 0; d < buf->ndim; d++)
      if (ridx[k][d] != ridx[0][d])
        return sch_fail(s, "reverse_compute_at: block \"%s\" reads %s at different indices", blk->name, buf->name);

  Analyzer *az = arith_analyzer_new(a);
  bind_outer_loops(az, body, loop);
  IntSet *hull = ARENA_ARRAY(a, IntSet, buf->ndim);
  if (!access_hull(s, az, loop, producers.items, producers.n, buf, false, hull)) return LOOM_ERR_SCHEDULE;
  const Stmt *nest = nest_for_hull(s, az, r, ridx[0], buf->ndim, hull, false);
  if (!nest) return LOOM_ERR_SCHEDULE;
  move_nest(s, r, loop, nest, true);
  record2(s, INST_REVERSE_COMPUTE_AT, block_rv, loop_rv);
  return LOOM_OK;
}

/* ---- cache_inplace ---- */

/* The block realize inside a nest of loops (copy_block_nest's result). */
static const Stmt *nest_realize(const Stmt *nest) {
  while (nest->kind == STMT_FOR) nest = nest->loop.body;
  return nest;
}

/* A copy block `dst = src` named `name`, placed over `hull` (see
 * nest_for_hull). */
static const Stmt *copy_over_hull(Schedule *s, Analyzer *az, const char *name, const Buffer *src, const Buffer *dst,
                                  const IntSet *hull) {
  const Stmt *r = nest_realize(copy_block_nest(s, name, src, dst));
  const IndexList *widx;
  if (block_accesses(s->arena, r->realize.block, dst, false, &widx) != 1) return NULL;
  return nest_for_hull(s, az, r, widx[0], dst->ndim, hull, true);
}

loom_status sch_cache_inplace(Schedule *s, SchRV block_rv, SchRV loop_rv, MemScope scope, SchRV *out) {
  const Stmt *r = sch_lookup_block(s, block_rv);
  if (!r) return LOOM_ERR_SCHEDULE;
  const Stmt *loop = sch_lookup_loop(s, loop_rv);
  if (!loop) return LOOM_ERR_SCHEDULE;
  Arena *a = s->arena;
  const Stmt *body = s->func->body;
  const Block *blk = r->realize.block;
  const char *ln = loop->loop.var->var.name;
  if (r == body) return sch_fail(s, "cache_inplace: the root block has no buffer to update");
  if (!stmt_contains(loop, r))
    return sch_fail(s, "cache_inplace: loop \"%s\" is not an ancestor of block \"%s\"", ln, blk->name);
  if (sch_enclosing_block(body, r) != sch_enclosing_block(body, loop))
    return sch_fail(s, "cache_inplace: block \"%s\" and loop \"%s\" are in different block scopes", blk->name, ln);
  if (scope != SCOPE_GLOBAL && scope != SCOPE_LOCAL && scope != SCOPE_SHARED)
    return sch_fail(s, "cache_inplace: invalid memory scope %d", (int)scope);
  if (blk->n_writes != 1)
    return sch_fail(s, "cache_inplace: block \"%s\" writes %d buffers; expected exactly one", blk->name,
                    blk->n_writes);
  const Buffer *buf = blk->writes[0].buffer;
  /* An update in place: every load and store of buf at one index list, so
   * the region read is the region written. */
  const IndexList *st, *ld;
  int ns = block_accesses(a, blk, buf, false, &st), nld = block_accesses(a, blk, buf, true, &ld);
  if (nld < 1)
    return sch_fail(s, "cache_inplace: block \"%s\" does not read %s; expected an update (a reduction after "
                    "decompose_reduction)", blk->name, buf->name);
  for (int k = 0; k < ns + nld; k++)
    for (int d = 0; d < buf->ndim; d++)
      if (!expr_equal((k < ns ? st[k] : ld[k - ns])[d], st[0][d]))
        return sch_fail(s, "cache_inplace: block \"%s\" accesses %s at different indices", blk->name, buf->name);
  BlockOrder order = blocks_in_order(a, body);
  for (int i = 0; i < order.n; i++) {
    const Stmt *o = order.items[i];
    if (o != r && stmt_contains(loop, o) && (block_reads(o->realize.block, buf) || block_writes(o->realize.block, buf)))
      return sch_fail(s, "cache_inplace: block \"%s\" also accesses %s under loop \"%s\"", o->realize.block->name,
                      buf->name, ln);
  }

  Analyzer *az = arith_analyzer_new(a);
  bind_outer_loops(az, body, loop);
  IntSet *hull = ARENA_ARRAY(a, IntSet, buf->ndim);
  const Stmt *one[1] = {r};
  if (!access_hull(s, az, loop, one, 1, buf, false, hull)) return LOOM_ERR_SCHEDULE;
  const char *cname = sch_unique_block_name(s, arena_printf(a, "%s_%s", buf->name, mem_scope_name(scope)));
  Buffer *cache = buffer_clone(a, buf, cname, scope);
  const char *in_name = sch_unique_block_name(s, arena_printf(a, "%s_in", cname));
  const Stmt *in_nest = copy_over_hull(s, az, in_name, buf, cache, hull);
  const char *out_name = sch_unique_block_name(s, arena_printf(a, "%s_out", cname));
  const Stmt *out_nest = in_nest ? copy_over_hull(s, az, out_name, cache, buf, hull) : NULL;
  if (!in_nest || !out_nest) return LOOM_ERR_SCHEDULE;

  PtrMap bmap;
  ptrmap_init(&bmap, a);
  ptrmap_put(&bmap, buf, cache);
  const Stmt *nbody = stmt_replace(a, body, r, stmt_replace_buffers(a, r, &bmap));
  const Stmt *l2 = stmt_find_loop(nbody, loop->loop.var);
  LOOM_ASSERT(l2);
  Stmt *nl = arena_memdup(a, l2, sizeof *nl);
  nl->loop.body = stmt_seq(a, (const Stmt *[]){in_nest, l2->loop.body, out_nest}, 3);
  nbody = root_add_alloc(a, stmt_replace(a, nbody, l2, nl), cache);
  sch_set_body(s, nbody);
  out[0] = sch_new_block_rv(s, in_name);
  out[1] = sch_new_block_rv(s, out_name);
  SchRV in[2] = {block_rv, loop_rv};
  int64_t ints[1] = {(int64_t)scope};
  Inst inst = {.kind = INST_CACHE_INPLACE, .inputs = in, .n_inputs = 2, .ints = ints, .n_ints = 1, .outputs = out,
               .n_outputs = 2};
  sch_record(s, &inst);
  return LOOM_OK;
}
