/* decompose_reduction: split a reduction block's init into its own block,
 * placed before a chosen loop (TVM reduction.cc). Afterwards the update
 * block has no init, so the loops around it can be reordered, vectorized or
 * tensorized without "first iteration" conditions.
 *
 * The init block runs once per spatial point: it gets copies of the loops at
 * and below `loop` that carry spatial iterators only; loops that carry
 * reduction iterators are left out (running the init inside them would reset
 * the accumulator). No loop above `loop` may carry a reduction iterator. */
#include "tir/schedule/block_util.h"

#include <string.h>

#define MAX_DEPTH 64

SchRV sch_decompose_reduction(Schedule *s, SchRV block_rv, SchRV loop_rv) {
  const Stmt *r = sch_lookup_block(s, block_rv);
  if (!r) return -1;
  const Stmt *loop = sch_lookup_loop(s, loop_rv);
  if (!loop) return -1;
  Arena *a = s->arena;
  const Stmt *body = s->func->body;
  const Block *blk = r->realize.block;
  const char *ln = loop->loop.var->var.name;
  if (!blk->init) return sch_fail(s, "decompose_reduction: block \"%s\" has no init", blk->name), -1;
  if (!stmt_contains(loop, r))
    return sch_fail(s, "decompose_reduction: loop \"%s\" is not an ancestor of block \"%s\"", ln, blk->name), -1;
  const Stmt *path[MAX_DEPTH];
  int np = sch_path_loops(body, r, path, MAX_DEPTH);
  LOOM_ASSERT(np <= MAX_DEPTH);
  int li = -1;
  for (int i = 0; i < np; i++)
    if (path[i] == loop) li = i;
  LOOM_ASSERT(li >= 0);

  /* Which loops carry spatial / reduction iterators. */
  bool *spatial = ARENA_ARRAY(a, bool, np), *reduce = ARENA_ARRAY(a, bool, np);
  for (int i = 0; i < np; i++)
    for (int k = 0; k < blk->n_iters; k++)
      if (expr_uses_var(r->realize.iter_values[k], path[i]->loop.var)) {
        if (blk->iters[k].type == ITER_REDUCE)
          reduce[i] = true;
        else
          spatial[i] = true;
      }
  for (int i = 0; i < np; i++) {
    const char *name = path[i]->loop.var->var.name;
    if (i < li && reduce[i])
      return sch_fail(s, "decompose_reduction: loop \"%s\" above loop \"%s\" carries a reduction iterator of "
                      "block \"%s\"; expected every reduction loop at or below \"%s\"", name, ln, blk->name,
                      ln), -1;
    if (reduce[i] && spatial[i])
      return sch_fail(s, "decompose_reduction: loop \"%s\" carries both spatial and reduction iterators of "
                      "block \"%s\"", name, blk->name), -1;
    /* A loop at or below `loop` that binds no iterator (left by compute_at)
     * re-runs the whole reduction each iteration; with the init hoisted
     * above it, the later runs would accumulate onto the earlier ones. */
    int64_t ext;
    if (i >= li && !reduce[i] && !spatial[i] && !(expr_as_int(path[i]->loop.extent, &ext) && ext == 1))
      return sch_fail(s, "decompose_reduction: loop \"%s\" at or below loop \"%s\" carries no iterator of "
                      "block \"%s\" (the reduction re-runs in each of its iterations); expected a loop "
                      "below it", name, ln, blk->name), -1;
  }

  /* Copies of the spatial loops at and below `loop`. */
  PtrMap lmap;
  ptrmap_init(&lmap, a);
  const Stmt **kept = ARENA_ARRAY(a, const Stmt *, np);
  const Expr **kvars = ARENA_ARRAY(a, const Expr *, np);
  int nk = 0;
  for (int i = li; i < np; i++) {
    if (!spatial[i]) continue;
    kept[nk] = path[i];
    kvars[nk] = expr_var(a, arena_printf(a, "%s_init", path[i]->loop.var->var.name), DT_I64);
    ptrmap_put(&lmap, path[i]->loop.var, (void *)kvars[nk]);
    nk++;
  }
  for (int i = li; i < np; i++)
    if (!spatial[i] && expr_uses_var(r->realize.predicate, path[i]->loop.var))
      return sch_fail(s, "decompose_reduction: the predicate of block \"%s\" depends on loop \"%s\", which the "
                      "init does not iterate", blk->name, path[i]->loop.var->var.name), -1;

  /* The init block over the spatial iterators (fresh variables). */
  int ns = 0;
  for (int k = 0; k < blk->n_iters; k++) ns += blk->iters[k].type == ITER_SPATIAL;
  IterVar *iters = ARENA_ARRAY(a, IterVar, ns);
  const Expr **vals = ARENA_ARRAY(a, const Expr *, ns);
  PtrMap imap;
  ptrmap_init(&imap, a);
  int j = 0;
  for (int k = 0; k < blk->n_iters; k++) {
    if (blk->iters[k].type != ITER_SPATIAL) continue;
    iters[j] = blk->iters[k];
    iters[j].var = expr_var(a, blk->iters[k].var->var.name, DT_I64);
    ptrmap_put(&imap, blk->iters[k].var, (void *)iters[j].var);
    vals[j] = expr_substitute(a, r->realize.iter_values[k], &lmap);
    j++;
  }
  Block *ib = ARENA_NEW(a, Block);
  ib->name = sch_unique_block_name(s, arena_printf(a, "%s_init", blk->name));
  ib->iters = iters;
  ib->n_iters = ns;
  ib->body = stmt_substitute(a, blk->init, &imap);
  BufferRegion *w = ARENA_ARRAY(a, BufferRegion, blk->n_writes);
  for (int k = 0; k < blk->n_writes; k++) w[k] = region_substitute(a, blk->writes[k], &imap);
  ib->writes = w;
  ib->n_writes = blk->n_writes;
  Analyzer *az = arith_analyzer_new(a);
  ib->reads = block_reads_from_loads(a, az, ib, &ib->n_reads);
  const Stmt *init = stmt_realize(a, vals, ns, expr_substitute(a, r->realize.predicate, &lmap), ib);
  for (int i = nk - 1; i >= 0; i--)
    init = stmt_for(a, kvars[i], expr_substitute(a, kept[i]->loop.min, &lmap),
                    expr_substitute(a, kept[i]->loop.extent, &lmap), FOR_SERIAL, init);

  Block *ub = block_copy(a, blk);
  ub->init = NULL;
  const Stmt *nbody = stmt_replace(a, body, r, stmt_realize(a, r->realize.iter_values, r->realize.n,
                                                            r->realize.predicate, ub));
  const Stmt *l2 = stmt_find_loop(nbody, loop->loop.var);
  nbody = stmt_replace(a, nbody, l2, stmt_seq2(a, init, l2));
  sch_set_body(s, nbody);
  SchRV out = sch_new_block_rv(s, ib->name);
  SchRV in[2] = {block_rv, loop_rv};
  SchRV outs[1] = {out};
  Inst inst = {.kind = INST_DECOMPOSE_REDUCTION, .inputs = in, .n_inputs = 2, .outputs = outs, .n_outputs = 1};
  sch_record(s, &inst);
  return out;
}
