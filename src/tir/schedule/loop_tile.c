/* tile: split each loop, then reorder so that level d of every loop comes
 * before level d+1 of any. A composite: the trace records the splits and the
 * reorder it performs, so replay needs no tile instruction. It is atomic: if
 * any step refuses, the program, RV table and trace are restored. */
#include "tir/schedule/schedule_internal.h"

loom_status sch_tile(Schedule *s, const SchRV *loop_rvs, int n, const int64_t *factors, int depth,
                     SchRV *out) {
  if (n < 1 || !loop_rvs) return sch_fail(s, "tile: expected at least one loop, got %d", n);
  if (depth < 1 || !factors) return sch_fail(s, "tile: expected a depth of at least 1, got %d", depth);
  for (int i = 0; i < n; i++)
    if (!sch_lookup_loop(s, loop_rvs[i])) return LOOM_ERR_SCHEDULE;
  const PrimFunc *saved_func = s->func;
  int saved_rvs = s->n_rvs, saved_trace = s->trace->n;
  SchRV *pieces = ARENA_ARRAY(s->arena, SchRV, n * depth);
  SchRV *order = ARENA_ARRAY(s->arena, SchRV, n * depth);
  loom_status st = LOOM_OK;
  for (int i = 0; i < n && st == LOOM_OK; i++)
    if (sch_split(s, loop_rvs[i], factors + (size_t)i * depth, depth, pieces + (size_t)i * depth) != 0)
      st = LOOM_ERR_SCHEDULE;
  if (st == LOOM_OK) {
    for (int d = 0; d < depth; d++)
      for (int i = 0; i < n; i++) order[d * n + i] = pieces[i * depth + d];
    st = sch_reorder(s, order, n * depth);
  }
  if (st != LOOM_OK) {
    s->func = saved_func;
    s->n_rvs = saved_rvs;
    s->trace->n = saved_trace;
    err_prefix(&s->err, "tile");
    return st;
  }
  if (out)
    for (int k = 0; k < n * depth; k++) out[k] = order[k];
  return LOOM_OK;
}
