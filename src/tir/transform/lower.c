/* tir_lower: the lowering pipeline, in order (see transform.h). */
#include "tir/transform/transform.h"

LowerOptions lower_options_default(void) {
  LowerOptions o = {.partition_loops = true, .storage_rewrite = true, .compact_buffers = true,
                    .max_unroll_extent = 64};
  return o;
}

const PrimFunc *tir_lower(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  LowerOptions defaults = lower_options_default();
  if (!opt) opt = &defaults;
  f = tir_simplify(a, f);
  f = tir_lower_blocks(a, f, err);
  if (!f) return NULL;
  /* Bindings substituted into guards fold here, before partitioning reads them. */
  f = tir_simplify(a, f);
  /* Partitioning first (the simplifier then drops the guards proven false
   * in tails): a tile without guards is one compaction can keep in
   * registers, each part of a partitioned loop its own. */
  if (opt->partition_loops) f = tir_simplify(a, tir_loop_partition(a, f));
  if (opt->compact_buffers) f = tir_compact_buffers(a, f);
  f = tir_flatten_buffers(a, f, err);
  if (!f) return NULL;
  f = tir_legalize_narrow(a, f);
  /* Vectorize sees folded flat indices (ramp strides must come out as 1). */
  f = tir_simplify(a, f);
  f = tir_vectorize(a, f);
  f = tir_unroll(a, f, opt->max_unroll_extent);
  if (opt->storage_rewrite) f = tir_storage_rewrite(a, f);
  return tir_simplify(a, f);
}
