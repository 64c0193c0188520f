/* reorder: permute loops that lie on one path of the loop tree.
 *
 * The chain from the outermost to the innermost given loop must be a perfect
 * nest (each loop's body is exactly the next loop), so permuting only changes
 * the order iterations run in, never which iterations run or what code runs
 * between them. Loops of the chain that were not given keep their place;
 * the given ones fill their slots in the requested order. Block bindings are
 * unchanged: they name loop variables, which keep their identity.
 *
 * A reduction's init runs at the iteration where every reduction iterator
 * is at its start, which must come first among each output's iterations.
 * Permuting loops that each carry only spatial or only reduction iterators
 * keeps that; with a loop carrying both (a fused spatial x reduction loop,
 * or a part of one) it holds only while the loops carrying the reduction
 * keep their order: a fused loop's parts swapped visit an output first at a
 * later reduction step than its init. */
#include "tir/schedule/block_util.h"

#include <string.h>

loom_status sch_reorder(Schedule *s, const SchRV *loop_rvs, int n) {
  if (n < 1 || !loop_rvs) return sch_fail(s, "reorder: expected at least one loop, got %d", n);
  Arena *a = s->arena;
  const Stmt *root = s->func->body;
  const Stmt **loops = ARENA_ARRAY(a, const Stmt *, n);
  int inner = 0, inner_depth = -1;
  const Stmt *path[256];
  for (int i = 0; i < n; i++) {
    loops[i] = sch_lookup_loop(s, loop_rvs[i]);
    if (!loops[i]) return LOOM_ERR_SCHEDULE;
    for (int j = 0; j < i; j++)
      if (loops[j] == loops[i]) return sch_fail(s, "reorder: loop %s appears twice", sch_loop_name(loops[i]));
    int d = sch_path_loops(root, loops[i], path, 256);
    if (d > inner_depth) inner_depth = d, inner = i;
  }
  /* Every given loop must be an ancestor of the innermost one. */
  int depth = sch_path_loops(root, loops[inner], path, 256);
  LOOM_ASSERT(depth >= 0 && depth < 256);
  path[depth] = loops[inner];
  int outer_pos = depth;
  for (int i = 0; i < n; i++) {
    int p = -1;
    for (int d = 0; d <= depth; d++)
      if (path[d] == loops[i]) p = d;
    if (p < 0)
      return sch_fail(s, "reorder: loops %s and %s are not on one path (neither encloses the other)",
                      sch_loop_name(loops[i]), sch_loop_name(loops[inner]));
    if (p < outer_pos) outer_pos = p;
  }
  const Stmt **chain = path + outer_pos;
  int len = depth - outer_pos + 1;
  for (int d = 0; d + 1 < len; d++)
    if (chain[d]->loop.body != chain[d + 1])
      return sch_fail(s, "reorder: loop %s does not have loop %s as its only child, so the loops "
                         "between %s and %s are not a perfect nest",
                      sch_loop_name(chain[d]), sch_loop_name(chain[d + 1]), sch_loop_name(chain[0]),
                      sch_loop_name(chain[len - 1]));

  /* Slots of the given loops, outermost first, receive them in the new order. */
  const Stmt **placed = ARENA_ARRAY(a, const Stmt *, len);
  int next = 0;
  for (int d = 0; d < len; d++) {
    bool given = false;
    for (int i = 0; i < n; i++) given |= loops[i] == chain[d];
    placed[d] = given ? loops[next++] : chain[d];
  }
  for (int d = 0; d < len; d++)
    for (int e = d; e < len; e++)
      if (e != d && (expr_uses_var(placed[d]->loop.min, placed[e]->loop.var) ||
                     expr_uses_var(placed[d]->loop.extent, placed[e]->loop.var)))
        return sch_fail(s, "reorder: the range of loop %s depends on loop %s, which would be inside it",
                        sch_loop_name(placed[d]), sch_loop_name(placed[e]));

  BlockOrder blocks = blocks_in_order(a, chain[len - 1]);
  bool *spatial = ARENA_ARRAY(a, bool, len), *reduce = ARENA_ARRAY(a, bool, len);
  for (int b = 0; b < blocks.n; b++) {
    block_loop_kinds(blocks.items[b], chain, len, spatial, reduce);
    int mixed = -1;
    for (int d = 0; d < len; d++)
      if (spatial[d] && reduce[d]) mixed = d;
    if (mixed < 0) continue;
    /* the loops carrying its reduction, in their old order, must keep it */
    for (int d = 0, e = 0; d < len; d++) {
      int old = -1;
      for (int k = 0; k < len; k++)
        if (chain[k] == placed[d]) old = k;
      if (!reduce[old]) continue;
      while (!reduce[e]) e++;
      if (chain[e++] != placed[d])
        return sch_fail(s, "reorder: loop %s carries both spatial and reduction iterators of block %s, so the "
                           "loops carrying its reduction must keep their order",
                        sch_loop_name(chain[mixed]), blocks.items[b]->realize.block->name);
    }
  }

  const Stmt *body = chain[len - 1]->loop.body;
  for (int d = len - 1; d >= 0; d--) {
    Stmt *l = arena_memdup(a, placed[d], sizeof(Stmt));
    l->loop.body = body;
    body = l;
  }
  sch_set_body(s, stmt_replace(a, root, chain[0], body));
  Inst in = {.kind = INST_REORDER, .inputs = loop_rvs, .n_inputs = n};
  sch_record(s, &in);
  return LOOM_OK;
}
