/* Default CPU schedule for conv2d in the blocked NCHWc layout (TVM's
 * conv2d_avx_common, in TensorIR primitives).
 *
 * Loops of the compute: n, ko, oh, ow, ki | ico, rh, rw, ici (reduction;
 * the order both conv2d NCHWc computes in src/topi use).
 * The register tile is OWB output columns x one vector of the kb output
 * channels: per reduction step, one weight vector weight[ko, ico, rh, rw,
 * ici, 0:kb] and OWB broadcasts of the (padded) input feed OWB FMAs. The
 * tile is accumulated in a cache (cache_write + reverse_compute_at; the
 * lowering's compaction makes it OWB x kb registers) and copied out once.
 * OWB is a sampling point (a divisor of the output width, at most 16 by
 * default, so the accumulators fit the 32 vector registers). */
#include "topi/topi_schedule.h"

#include <string.h>

/* A plain copy stage (the padding): vectorized over the innermost loop,
 * parallel over all loops but the last two, fused. */
static loom_status schedule_copy_stage(Schedule *s, SchRV blk, int num_threads) {
  SchRV l[8];
  int n = sch_get_loops(s, blk, l, 8);
  if (n < 1 || sch_vectorize(s, l[n - 1])) return LOOM_ERR_SCHEDULE;
  if (num_threads > 1 && n >= 3) {
    SchRV f = sch_fuse(s, l, n - 2);
    if (f < 0 || sch_parallel(s, f)) return LOOM_ERR_SCHEDULE;
  }
  return LOOM_OK;
}

loom_status topi_schedule_conv2d_nchwc_cpu(Schedule *s, const char *block, const char *epilogue,
                                           const Target *target, int num_threads) {
  (void)target;
  SchRV b = sch_get_block(s, block);
  if (b < 0) return LOOM_ERR_SCHEDULE;
  SchRV l[9];
  if (sch_get_loops(s, b, l, 9) != 9) return LOOM_ERR_SCHEDULE;
  SchRV n = l[0], ko = l[1], oh = l[2], ow = l[3], ki = l[4], ico = l[5], rh = l[6], rw = l[7], ici = l[8];

  int64_t owb[2];
  if (sch_sample_perfect_tile(s, ow, 2, 16, owb)) return LOOM_ERR_SCHEDULE;
  SchRV ows[2];
  if (sch_split(s, ow, owb, 2, ows)) return LOOM_ERR_SCHEDULE;
  SchRV order[9] = {n, ko, oh, ows[0], ico, rh, rw, ici, ows[1]};
  if (sch_reorder(s, order, 9)) return LOOM_ERR_SCHEDULE;
  /* ki stays innermost (it already is). */
  SchRV copy = sch_cache_write(s, b, 0, SCOPE_LOCAL);
  if (copy < 0) return LOOM_ERR_SCHEDULE;
  topi_fold_epilogue(s, epilogue);
  if (sch_reverse_compute_at(s, copy, ows[0])) return LOOM_ERR_SCHEDULE;
  SchRV init = sch_decompose_reduction(s, b, ico);
  if (init < 0) return LOOM_ERR_SCHEDULE;
  if (sch_unroll(s, ows[1]) || sch_vectorize(s, ki)) return LOOM_ERR_SCHEDULE;
  SchRV il[8], cl[8];
  int ni = sch_get_loops(s, init, il, 8), nc = sch_get_loops(s, copy, cl, 8);
  if (ni < 1 || sch_vectorize(s, il[ni - 1])) return LOOM_ERR_SCHEDULE;
  if (nc < 1 || sch_vectorize(s, cl[nc - 1])) return LOOM_ERR_SCHEDULE;
  if (num_threads > 1) {
    SchRV outer = sch_fuse(s, (SchRV[]){n, ko, oh}, 3);
    if (outer < 0 || sch_parallel(s, outer)) return LOOM_ERR_SCHEDULE;
  }
  SchRV pad = sch_get_block(s, "pad");
  if (pad >= 0 && schedule_copy_stage(s, pad, num_threads)) return LOOM_ERR_SCHEDULE;
  return LOOM_OK;
}
