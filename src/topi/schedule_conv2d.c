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
 * OWB and KT are sampling points (the accumulators, the weight vectors and
 * a broadcast fit the target's vector registers). Many input channels
 * block the input-channel loop (see below). Every size here comes from the
 * target: its register count and width, its L1d and L2 sizes. */
#include "topi/topi_schedule.h"

#include <string.h>

/* The share of the threads' time a parallel loop of n equal iterations
 * keeps busy (1: they divide evenly). */
static double thread_balance(int64_t n, int threads) {
  int64_t rounds = (n + threads - 1) / threads;
  return n > 0 ? (double)n / (double)(rounds * threads) : 0.0;
}

/* The cost of one reduction step of a w x kt register tile, in issue
 * slots: its loads (w broadcasts, kt weight vectors at weight_load each),
 * at least the accumulators the FMA units need to hide their latency
 * (fewer leave the units idle for as many slots), plus one for the loop
 * step, and one more for a partial tile (a loop of its own). */
static double tile_cost(const Target *t, int64_t w, int64_t kt, double weight_load, bool partial) {
  double fmas_per_cycle = (double)t->flops_per_cycle / (2.0 * target_lanes(t, DT_F32));
  double need = (double)t->fma_latency * (fmas_per_cycle > 1 ? fmas_per_cycle : 1);
  double loads = (double)w + weight_load * (double)kt;
  return (loads > need ? loads : need) + 1.0 + (partial ? 1.0 : 0.0);
}

loom_status topi_schedule_conv2d_nchwc_cpu(Schedule *s, const char *block, const char *epilogue,
                                           const Target *target, int num_threads) {
  return topi_schedule_conv2d_nchwc_blocked(s, block, epilogue, target, num_threads, 512);
}

loom_status topi_schedule_conv2d_nchwc_blocked(Schedule *s, const char *block, const char *epilogue,
                                               const Target *target, int num_threads, int64_t block_min_channels) {
  SchRV b = sch_get_block(s, block);
  if (b < 0) return LOOM_ERR_SCHEDULE;
  /* n, ko, oh, ow, ki, then 4 reduction loops ico, rh, rw, ici. */
  SchRV l[9];
  if (sch_get_loops(s, b, l, 9) != 9) return LOOM_ERR_SCHEDULE;
  SchRV n = l[0], ko = l[1], oh = l[2], ow = l[3], ki = l[4];
  SchRV ico = l[5], rh = l[6], rw = l[7], ici = l[8];
  int64_t ow_ext = topi_loop_extent(s, ow), ko_ext = topi_loop_extent(s, ko), ico_ext = topi_loop_extent(s, ico);
  /* Weight bytes per input-channel block and output-channel block. */
  int64_t wblock = topi_loop_extent(s, ki) * topi_loop_extent(s, ici) * topi_loop_extent(s, rh) *
                   topi_loop_extent(s, rw) * (int64_t)sizeof(float);
  if (ow_ext < 1 || ko_ext < 1 || ico_ext < 1 || wblock < 1) return LOOM_ERR_SCHEDULE;

  /* Input-channel blocking (512 input channels or more): every column
   * tile reads all the weights of its KT output blocks (96 KiB for 512
   * input channels of a 1x1 conv), which then stream from L2 for a handful
   * of FMAs each. Blocked, the input-channel loop goes outermost in chunks
   * whose weights stay in L1 (at most chunk_bytes: half of it, the input
   * rows need the rest), every tile accumulates into the whole output (its
   * register tile loaded and stored per chunk: cache_inplace) and the
   * epilogue runs after the last chunk. bench/ops on ResNet-50: the convs
   * with 512 to 2048 input channels gain 5-20% at every size (7x7 to
   * 28x28); with 256 or fewer the unblocked order is as fast or faster
   * (the default block_min_channels, 512). */
  int64_t chunk_bytes = target->l1d_bytes / 2;
  static const int64_t kblock_choices[] = {0, 1};
  static const double kblock_no[] = {0.9, 0.1}, kblock_yes[] = {0.2, 0.8}; /* both valid everywhere */
  int64_t kblock;
  if (sch_sample_categorical(s, kblock_choices,
                             ico_ext > 1 && ico_ext * topi_loop_extent(s, ici) >= block_min_channels ? kblock_yes
                                                                                                    : kblock_no,
                             2, &kblock))
    return LOOM_ERR_SCHEDULE;

  /* Register tile: OWB output columns x KT output-channel blocks, one
   * vector each. Per reduction step it loads KT weight vectors and OWB
   * broadcasts for OWB * KT FMAs, so the best tile has the lowest cost per
   * FMA (tile_cost: loads, or the accumulators the FMA latency needs, plus
   * the loop step) among those whose accumulators, weights and broadcast
   * fit the target's vector registers (a channel block wider than one
   * register takes several). A row's last tile may be partial (a
   * partitioned loop with a smaller tile, costed as such); partial
   * output-channel tiles may waste at most an eighth. With AVX-512 on Zen 4
   * (32 registers, 4 accumulators hide the latency) blocked 1x1 convs get
   * 7 x 3 at 7 and 14 columns, 6 x 4 at 28 and 56; with AVX2 (16
   * registers, 8 accumulators) 4 x 3, and the 3-channel stem 6 x 2.
   * Sampling points (the best is the most probable choice). */
  enum { MAX_OWB = 16, N_KT = 4 };
  int rpv = topi_registers_per_vector(target, topi_loop_extent(s, ki));
  int64_t best_owb = 1, best_kt = 1;
  double best_cost = 1e9;
  for (int64_t kt = 1; kt <= N_KT && kt <= ko_ext; kt++) {
    int64_t ktiles = (ko_ext + kt - 1) / kt;
    if (ktiles * kt > ko_ext + ko_ext / 8) continue;
    /* Unblocked, a tile's weights over all input channels are reused from
     * L1 by the next row only when they fit; otherwise they stream from L2
     * and a weight load costs its bytes at L2's bandwidth on top of the
     * load (AVX-512 on Zen 4: 1 + 64/32 = 3 broadcasts, which made wide
     * 14 x 2 tiles win; AVX2: 2), so wider tiles that reuse each weight
     * vector more often gain. */
    double vector_bytes = (double)target->vector_bits / 8.0 * rpv;
    double weight_load = !kblock && kt * ico_ext * wblock > target->l1d_bytes
                             ? 1.0 + vector_bytes / (target->l2_bytes_per_cycle > 0 ? target->l2_bytes_per_cycle : 32)
                             : 1.0;
    for (int64_t w = 1; w <= MAX_OWB && w <= ow_ext; w++) {
      if (!topi_register_tile_fits(target, w, kt, rpv)) continue;
      /* Per row: the full tiles and the partial one (a partitioned loop
       * with a tile of the remaining columns). */
      int64_t full = ow_ext / w, rem = ow_ext % w;
      double loads = (double)full * tile_cost(target, w, kt, weight_load, false) +
                     (rem ? tile_cost(target, rem, kt, weight_load, true) : 0.0);
      double cost = loads / (double)(ow_ext * kt) * (double)(ktiles * kt) / (double)ko_ext;
      if (cost < best_cost - 1e-9) best_cost = cost, best_owb = w, best_kt = kt;
    }
  }
  int64_t owb_choices[MAX_OWB], kt_choices[N_KT];
  double owb_probs[MAX_OWB], kt_probs[N_KT];
  for (int i = 0; i < MAX_OWB; i++)
    owb_choices[i] = i + 1, owb_probs[i] = owb_choices[i] == best_owb ? 0.5 : 0.5 / (MAX_OWB - 1);
  for (int i = 0; i < N_KT; i++)
    kt_choices[i] = i + 1, kt_probs[i] = kt_choices[i] == best_kt ? 0.7 : 0.1;
  int64_t owb_pick, kt;
  if (sch_sample_categorical(s, owb_choices, owb_probs, MAX_OWB, &owb_pick) ||
      sch_sample_categorical(s, kt_choices, kt_probs, N_KT, &kt))
    return LOOM_ERR_SCHEDULE;
  if (owb_pick > ow_ext) owb_pick = ow_ext;
  if (kt > ko_ext) kt = ko_ext;
  /* The chunk: the most input-channel blocks whose weights fit chunk_bytes
   * and divide the blocks (a partial chunk cannot decompose its init). */
  int64_t icb = 1;
  for (int64_t d = 2; d < ico_ext; d++)
    if (ico_ext % d == 0 && d * kt * wblock <= chunk_bytes) icb = d;
  if (kblock && icb >= ico_ext) kblock = 0;
  SchRV ows[2], kos[2];
  if (sch_split(s, ow, (int64_t[]){-1, owb_pick}, 2, ows)) return LOOM_ERR_SCHEDULE;
  if (sch_split(s, ko, (int64_t[]){-1, kt}, 2, kos)) return LOOM_ERR_SCHEDULE;
  /* Reduction order: input-channel blocks outermost, as computed, unless
   * the channel block is tiny (the 3-channel stem: blocks of 1): then the
   * window loop rw would be the innermost, and the C compiler unrolls it
   * and keeps the broadcasts that neighbouring columns share live across
   * it, which spills the tile. With ico innermost consecutive steps read
   * other channel planes. A sampling point. */
  static const int64_t ico_inner_choices[] = {0, 1};
  static const double probs_big[] = {0.9, 0.1}, probs_tiny[] = {0.1, 0.9};
  int64_t ico_inner;
  if (sch_sample_categorical(s, ico_inner_choices, topi_loop_extent(s, ici) < 4 && !kblock ? probs_tiny : probs_big,
                             2, &ico_inner))
    return LOOM_ERR_SCHEDULE;
  SchRV ics[2] = {ico, ico};
  if (kblock && sch_split(s, ico, (int64_t[]){-1, icb}, 2, ics)) return LOOM_ERR_SCHEDULE;
  SchRV order[13] = {n, kos[0], oh, ows[0], ico, rh, rw, ici, ows[1], kos[1], ki};
  if (ico_inner) order[4] = rh, order[5] = rw, order[6] = ico;
  /* Unblocked, output-channel tiles outside rows stream the whole input
   * once per tile. A conv with an input over half of L2 and 4 or more
   * tiles puts the rows outermost instead, so each input row is reused
   * from L2 by all the tiles (ResNet-50's stride-2 downsample, 16 tiles
   * over a 3 MiB input: 1.5x -> 1.1x oneDNN's time), when its weights,
   * which every row then reads, fit L2 (1x1 convs; ResNet-50's 3x3 stride-2
   * conv of 128 channels at 56x56, 590 KiB of weights: 0.35 ms faster at 2
   * threads, 0.08 at 1; with 2.3 MiB of weights, at 256 channels, it was
   * 0.24 ms slower). A sampling point. */
  int64_t l2_half_bytes = target->l2_bytes / 2;
  static const int64_t rows_choices[] = {0, 1};
  static const double rows_no[] = {0.9, 0.1}, rows_yes[] = {0.1, 0.9};
  int64_t in_bytes = 1;
  const Stmt *br = stmt_find_block(sch_func(s)->body, block);
  const Buffer *xb = br && br->realize.block->n_reads > 0 ? br->realize.block->reads[0].buffer : NULL;
  for (int d = 0; xb && d < xb->ndim; d++) {
    int64_t e;
    in_bytes *= expr_as_int(xb->shape[d], &e) ? e : 1;
  }
  in_bytes *= (int64_t)sizeof(float);
  int64_t weight_bytes = ko_ext * ico_ext * wblock;
  bool one_by_one = wblock == topi_loop_extent(s, ki) * topi_loop_extent(s, ici) * (int64_t)sizeof(float);
  bool stream_rows = !kblock && (one_by_one || weight_bytes <= 2 * l2_half_bytes) &&
                     in_bytes > l2_half_bytes && topi_loop_extent(s, kos[0]) >= 4;
  int64_t rows_outer;
  if (sch_sample_categorical(s, rows_choices, stream_rows ? rows_yes : rows_no, 2, &rows_outer))
    return LOOM_ERR_SCHEDULE;
  rows_outer = rows_outer && !kblock;
  if (rows_outer) order[1] = oh, order[2] = kos[0];
  /* Blocked, each thread takes its own band (the outermost loop, parallel)
   * through all the chunks: one parallel region with the band's init before
   * the chunks and its epilogue after them, instead of a fork and a join
   * per chunk plus an init and an epilogue pass of their own (ResNet-50's
   * 512-channel 1x1 convs at 2 threads: 1.3x ORT's time). The bands are
   * rows, one per thread when they divide the rows (a partial band would
   * guard every register tile), else the output-channel tiles; a single
   * band when neither can be shared. */
  SchRV band = -1;
  int n_order = 11;
  if (kblock) {
    int64_t nb = num_threads > 1 ? num_threads : 1, oh_ext = topi_loop_extent(s, oh);
    SchRV rows[2];
    if (oh_ext % nb != 0 && topi_loop_extent(s, kos[0]) >= nb) {
      SchRV o[12] = {n, kos[0], ics[0], oh, ows[0], ics[1], rh, rw, ici, ows[1], kos[1], ki};
      memcpy(order, o, sizeof o), n_order = 12, band = kos[0];
    } else {
      if (sch_split(s, oh, (int64_t[]){oh_ext % nb ? 1 : nb, -1}, 2, rows)) return LOOM_ERR_SCHEDULE;
      SchRV o[13] = {n, rows[0], ics[0], kos[0], rows[1], ows[0], ics[1], rh, rw, ici, ows[1], kos[1], ki};
      memcpy(order, o, sizeof o), n_order = 13, band = rows[0];
    }
  }
  if (sch_reorder(s, order, n_order)) return LOOM_ERR_SCHEDULE;
  SchRV copy = sch_cache_write(s, b, 0, SCOPE_LOCAL);
  if (copy < 0) return LOOM_ERR_SCHEDULE;
  topi_fold_epilogue(s, epilogue);
  if (sch_reverse_compute_at(s, copy, kblock ? band : ows[0])) return LOOM_ERR_SCHEDULE;
  SchRV init = sch_decompose_reduction(s, b, kblock ? ics[0] : order[4]), tile[2];
  if (init < 0 || (kblock && sch_cache_inplace(s, b, ows[0], SCOPE_LOCAL, tile))) return LOOM_ERR_SCHEDULE;
  if (sch_unroll(s, ows[1]) || sch_unroll(s, kos[1]) || sch_vectorize(s, ki)) return LOOM_ERR_SCHEDULE;
  /* Init, copy-out (and the tile's load and store): vectorized over the
   * channel block, unrolled when they are the register tile's. */
  SchRV stages[4] = {init, copy, kblock ? tile[0] : -1, kblock ? tile[1] : -1};
  for (int t = 0; t < 4 && stages[t] >= 0; t++) {
    SchRV xl[16];
    int nx = sch_get_loops(s, stages[t], xl, 16);
    if (nx < 1 || nx > 16 || sch_vectorize(s, xl[nx - 1])) return LOOM_ERR_SCHEDULE;
    if (!kblock || t >= 2) topi_unroll_tile_loops(s, stages[t], ows[0]);
  }
  /* Parallel over the output-channel chunks, or over output rows when
   * there are too few chunks to share (64 channels in tiles of 4 blocks is
   * one chunk) or the rows share better among the threads (11 chunks on 2
   * threads idle one a twelfth of the time, 14 rows do not: ResNet-50's
   * 14x14 3x3 convs with AVX2's 3-block tiles); blocked, over the row
   * bands. Not fused (a fused index would reach the padding stage's rows
   * and the tiles through floordiv/floormod). */
  if (num_threads > 1) {
    int64_t chunks = topi_loop_extent(s, kos[0]), rows = topi_loop_extent(s, oh);
    bool by_chunks = chunks >= 2 * num_threads && !rows_outer &&
                     thread_balance(chunks, num_threads) >= thread_balance(rows, num_threads);
    SchRV par = kblock ? band : by_chunks ? kos[0] : oh;
    if (sch_parallel(s, par)) return LOOM_ERR_SCHEDULE;
  }
  SchRV pad = topi_find_pad(s, block);
  if (pad >= 0 && topi_schedule_copy_stage(s, pad, num_threads)) return LOOM_ERR_SCHEDULE;
  return LOOM_OK;
}
