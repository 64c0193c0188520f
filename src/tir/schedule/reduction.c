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

/* Do the loops path[li..np) that carry spatial iterators visit each
 * spatial point of the block once? Their bindings must be a bijection of
 * those loops (arith_detect_iter_map; the loops above are constants there).
 * Two ways compute_at breaks it: a loop it left unbound fused with one that
 * binds the block (softmax's row sum at the output's column loop, fused
 * with the row loop: rows x columns iterations over the rows), and a
 * consumer that reads the block at overlapping places (a Winograd output
 * transform: 9 points of M per output, 4 outputs per tile), which binds the
 * block's point index to a shifted range plus the consumer's position. */
static bool spatial_bindings_bijective(Arena *a, const Stmt *r, const Stmt *const *path, int np, int li,
                                       const bool *spatial, LoomError *err) {
  const Block *blk = r->realize.block;
  IterVar *loops = ARENA_ARRAY(a, IterVar, np);
  const Expr **idx = ARENA_ARRAY(a, const Expr *, blk->n_iters);
  int nl = 0, ni = 0;
  for (int i = li; i < np; i++)
    if (spatial[i])
      loops[nl++] = (IterVar){path[i]->loop.var, path[i]->loop.min, path[i]->loop.extent, ITER_SPATIAL};
  for (int k = 0; k < blk->n_iters; k++) {
    if (blk->iters[k].type != ITER_SPATIAL) continue;
    bool uses = false;
    for (int j = 0; j < nl && !uses; j++) uses = expr_uses_var(r->realize.iter_values[k], loops[j].var);
    if (uses) idx[ni++] = r->realize.iter_values[k];
  }
  if (nl == 0 || ni == 0) return true;
  /* Without the block's guard: a guard only removes iterations, and one over
   * outer loops too (an imperfect split's) is not a form the detection
   * takes. */
  return arith_detect_iter_map(arith_analyzer_new(a), idx, ni, loops, nl, NULL, true, NULL, NULL, err);
}

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
  block_loop_kinds(r, path, np, spatial, reduce);
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

  LoomError berr = {0};
  if (!spatial_bindings_bijective(a, r, path, np, li, spatial, &berr))
    return sch_fail(s, "decompose_reduction: the loops at and below loop \"%s\" may visit a point of block \"%s\" more "
                    "than once (%s); expected loops whose bindings are a bijection", ln, blk->name, berr.msg), -1;

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
