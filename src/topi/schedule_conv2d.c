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


loom_status topi_schedule_conv2d_nchwc_cpu(Schedule *s, const char *block, const char *epilogue,
                                           const Target *target, int num_threads) {
  (void)target;
  SchRV b = sch_get_block(s, block);
  if (b < 0) return LOOM_ERR_SCHEDULE;
  /* n, ko, oh, ow, ki, then 4 reduction loops (ico, rh, rw, ici) or, for
   * depthwise, 2 (rh, rw). */
  SchRV l[9];
  int nl = sch_get_loops(s, b, l, 9);
  if (nl != 9 && nl != 7) return LOOM_ERR_SCHEDULE;
  SchRV n = l[0], ko = l[1], oh = l[2], ow = l[3], ki = l[4];
  int nr = nl - 5;

  /* Register tile: OWB output columns x KT output-channel blocks, one
   * vector each. Per reduction step it loads KT weight vectors and OWB
   * broadcasts for OWB * KT FMAs, so the best tile has the fewest loads per
   * FMA among those whose accumulators, weights and broadcast fit the 32
   * vector registers; OWB need not divide the width (the tail is a
   * partitioned loop) as long as little work is wasted. Measured like the
   * matmul's 6 x 4: wide channel tiles beat long column tiles. Both are
   * sampling points (the best is the most probable choice). */
  int64_t ow_ext = topi_loop_extent(s, ow), ko_ext = topi_loop_extent(s, ko);
  if (ow_ext < 1 || ko_ext < 1) return LOOM_ERR_SCHEDULE;
  int64_t best_owb = 1, best_kt = 1;
  double best_cost = 1e9;
  for (int64_t kt = 1; kt <= 4; kt *= 2) {
    if (ko_ext % kt) continue;
    for (int64_t w = 1; w <= 16 && w <= ow_ext; w++) {
      int64_t tiles = (ow_ext + w - 1) / w;
      if (w * kt + kt + 1 > 32 || tiles * w > ow_ext + ow_ext / 8) continue;
      double cost = (double)(w + kt) / (double)(w * kt);
      if (cost < best_cost - 1e-9) best_cost = cost, best_owb = w, best_kt = kt;
    }
  }
  int64_t owb_choices[16], kt_choices[3] = {1, 2, 4};
  double owb_probs[16], kt_probs[3];
  for (int i = 0; i < 16; i++) owb_choices[i] = i + 1, owb_probs[i] = owb_choices[i] == best_owb ? 0.5 : 0.5 / 15;
  for (int i = 0; i < 3; i++) kt_probs[i] = kt_choices[i] == best_kt ? 0.8 : (ko_ext % kt_choices[i] ? 0.0 : 0.1);
  int64_t owb_pick, kt;
  if (sch_sample_categorical(s, owb_choices, owb_probs, 16, &owb_pick) ||
      sch_sample_categorical(s, kt_choices, kt_probs, 3, &kt))
    return LOOM_ERR_SCHEDULE;
  if (owb_pick > ow_ext) owb_pick = ow_ext;
  int64_t owb[2] = {-1, owb_pick};
  SchRV ows[2], kos[2];
  if (sch_split(s, ow, owb, 2, ows)) return LOOM_ERR_SCHEDULE;
  if (sch_split(s, ko, (int64_t[]){ko_ext / kt, kt}, 2, kos)) return LOOM_ERR_SCHEDULE;
  SchRV order[12] = {n, kos[0], oh, ows[0]};
  for (int r = 0; r < nr; r++) order[4 + r] = l[5 + r];
  order[4 + nr] = ows[1];
  order[5 + nr] = kos[1];
  order[6 + nr] = ki;
  if (sch_reorder(s, order, 7 + nr)) return LOOM_ERR_SCHEDULE;
  ko = kos[0];
  SchRV copy = sch_cache_write(s, b, 0, SCOPE_LOCAL);
  if (copy < 0) return LOOM_ERR_SCHEDULE;
  topi_fold_epilogue(s, epilogue);
  if (sch_reverse_compute_at(s, copy, ows[0])) return LOOM_ERR_SCHEDULE;
  SchRV init = sch_decompose_reduction(s, b, l[5]);
  if (init < 0) return LOOM_ERR_SCHEDULE;
  if (sch_unroll(s, ows[1]) || sch_unroll(s, kos[1]) || sch_vectorize(s, ki)) return LOOM_ERR_SCHEDULE;
  SchRV il[8], cl[8];
  int ni = sch_get_loops(s, init, il, 8), nc = sch_get_loops(s, copy, cl, 8);
  if (ni < 1 || sch_vectorize(s, il[ni - 1])) return LOOM_ERR_SCHEDULE;
  if (nc < 1 || sch_vectorize(s, cl[nc - 1])) return LOOM_ERR_SCHEDULE;
  topi_unroll_tile_loops(s, init, ows[0]);
  topi_unroll_tile_loops(s, copy, ows[0]);
  /* Parallel over the output-channel chunks, or over output rows when
   * there are too few chunks to share (64 channels in tiles of 4 blocks is
   * one chunk). Not fused: the fused index reaches the tile's cache only
   * through floordiv/floormod, and compaction then cannot prove that tasks
   * touch disjoint tiles, so the register tile would stay in memory. */
  (void)n;
  if (num_threads > 1) {
    SchRV par = topi_loop_extent(s, ko) >= 2 * num_threads ? ko : oh;
    if (sch_parallel(s, par)) return LOOM_ERR_SCHEDULE;
  }
  SchRV pad = topi_find_pad(s, block);
  if (pad >= 0 && topi_schedule_copy_stage(s, pad, num_threads)) return LOOM_ERR_SCHEDULE;
  return LOOM_OK;
}
