/* Handles: get_block and get_loops. */
#include "tir/schedule/schedule_internal.h"

SchRV sch_get_block(Schedule *s, const char *name) {
  if (!name) {
    sch_fail(s, "get_block: block name is NULL");
    return -1;
  }
  if (!stmt_find_block(s->func->body, name)) {
    sch_fail(s, "get_block: no block named \"%s\" in function \"%s\"", name, s->func->name);
    return -1;
  }
  SchRV b = sch_new_block_rv(s, name);
  Inst in = {.kind = INST_GET_BLOCK, .str = name, .outputs = &b, .n_outputs = 1};
  sch_record(s, &in);
  return b;
}

int sch_get_loops(Schedule *s, SchRV block, SchRV *out, int max) {
  const Stmt *realize = sch_lookup_block(s, block);
  if (!realize) return -1;
  if (max < 0 || (max > 0 && !out)) {
    sch_fail(s, "get_loops: output array of %d entries is not valid", max);
    return -1;
  }
  const Stmt *loops[256];
  int n = sch_path_loops(s->func->body, realize, loops, 256);
  LOOM_ASSERT(n >= 0 && n <= 256);
  /* Every loop gets an RV even when the caller keeps fewer, so replaying the
   * trace creates the same RV numbering. */
  SchRV *rvs = ARENA_ARRAY(s->arena, SchRV, n);
  for (int i = 0; i < n; i++) {
    rvs[i] = sch_new_loop_rv(s, loops[i]->loop.var);
    if (i < max) out[i] = rvs[i];
  }
  Inst in = {.kind = INST_GET_LOOPS, .inputs = &block, .n_inputs = 1, .outputs = rvs, .n_outputs = n};
  sch_record(s, &in);
  return n;
}
