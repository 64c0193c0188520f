/* Default CPU schedule for depthwise conv2d in the blocked NCHWc layout
 * (topi_depthwise_conv2d_nchwc_onnx: out[n, c, h, w, cb] = sum over ry, rx
 * of pad[n, c, h*sh + ry*dh, w*sw + rx*dw, cb] * w[c, 0, ry, rx, 0, cb]).
 *
 * Loops of the compute: n, c, oh, ow, cb | ry, rx. Each output element
 * needs only R x S products, so the kernel is bound by loads, not FMAs:
 *   - the register tile is OWB output columns x one vector of the channel
 *     block (cb lanes); per window position one weight vector feeds OWB
 *     FMAs whose input operand comes straight from memory (for stride 1
 *     the C compiler reuses the loaded input vectors across rx). The tile
 *     is accumulated in a cache (cache_write + reverse_compute_at; the
 *     lowering's compaction makes it registers), initialised once, written
 *     out once with the epilogue (bias, clip) folded in;
 *   - the tile is unrolled, and the R x S window with it while the copies
 *     fit the code-size budget (TIR_CODE_BUDGET; 3x3 and 5x5 windows whole);
 *   - the padded input is not materialized for the whole tensor: the pad
 *     stage is computed at a block of OHB output rows of one channel block
 *     (compute_at; the rows that block reads, all columns: (OHB-1)*sh + R
 *     rows, sized to stay in the L1/L2 cache), or at the channel block;
 *     strided convs inline it into the window's loads instead;
 *   - parallel over channel blocks x row blocks (fused).
 * OWB, OHB and where the padding goes are sampling points; the defaults
 * come from bench/ops on MobileNetV2's depthwise convs. */
#include "topi/topi_schedule.h"

enum { DW_MAX_OWB = 16 };

/* Where the padded input is computed. */
enum { PAD_AT_ROWS, PAD_AT_CHANNEL, PAD_AT_ROOT, PAD_INLINE };

/* Output columns per register tile: the fewest tiles per row with tiles of
 * at most max_owb columns, then the least waste in the last one
 * (56 columns: 4 x 14 rather than 4 x 15). */
static int64_t default_owb(int64_t ow, int64_t max_owb) {
  int64_t best = 1, best_tiles = ow, best_waste = 0;
  for (int64_t w = 2; w <= max_owb && w <= ow; w++) {
    int64_t tiles = (ow + w - 1) / w, waste = tiles * w - ow;
    if (tiles < best_tiles || (tiles == best_tiles && waste < best_waste)) best = w, best_tiles = tiles, best_waste = waste;
  }
  return best;
}

/* Extent of dimension d of the buffer `blk` writes (-1 if unknown). */
static int64_t written_extent(Schedule *s, SchRV blk, int d) {
  const Stmt *r = stmt_find_block(sch_func(s)->body, sch_block_name(s, blk));
  int64_t e;
  if (!r || r->realize.block->n_writes != 1) return -1;
  const Buffer *b = r->realize.block->writes[0].buffer;
  return d < b->ndim && expr_as_int(b->shape[d], &e) ? e : -1;
}

loom_status topi_schedule_depthwise_conv2d_nchwc_cpu(Schedule *s, const char *block, const char *epilogue,
                                                     const Target *target, int num_threads) {
  SchRV b = sch_get_block(s, block);
  if (b < 0) return LOOM_ERR_SCHEDULE;
  SchRV l[7];
  if (sch_get_loops(s, b, l, 7) != 7) return LOOM_ERR_SCHEDULE;
  SchRV n = l[0], c = l[1], oh = l[2], ow = l[3], cb = l[4], ry = l[5], rx = l[6];
  int64_t oh_ext = topi_loop_extent(s, oh), ow_ext = topi_loop_extent(s, ow), cb_ext = topi_loop_extent(s, cb);
  int64_t r_ext = topi_loop_extent(s, ry);
  if (oh_ext < 1 || ow_ext < 1 || cb_ext < 1 || r_ext < 1) return LOOM_ERR_SCHEDULE;
  SchRV pad = topi_find_pad(s, block);

  /* Register tile width: at most DW_MAX_OWB columns, and the tile's
   * accumulators, a weight vector and an input vector fit the target's
   * registers. */
  int64_t owb_choices[DW_MAX_OWB], owb;
  double owb_probs[DW_MAX_OWB];
  int64_t max_owb = DW_MAX_OWB, rpv = topi_registers_per_vector(target, cb_ext);
  while (max_owb > 1 && max_owb * rpv + 2 > topi_vector_registers(target)) max_owb--;
  int64_t best = default_owb(ow_ext, max_owb);
  for (int i = 0; i < DW_MAX_OWB; i++)
    owb_choices[i] = i + 1, owb_probs[i] = owb_choices[i] == best ? 0.5 : 0.5 / (DW_MAX_OWB - 1);
  if (sch_sample_categorical(s, owb_choices, owb_probs, DW_MAX_OWB, &owb)) return LOOM_ERR_SCHEDULE;
  if (owb > ow_ext) owb = ow_ext;

  /* Rows per block: the padded rows one block reads, (OHB-1)*sh + R rows of
   * the padded width, fit one and a half L1d (stride from the padded
   * height; measured on Zen 4's 32 KiB L1d with MobileNetV2: rows that
   * mostly stay in L1 while the next rows stream in). */
  int64_t hp = pad >= 0 ? written_extent(s, pad, 2) : -1, wp = pad >= 0 ? written_extent(s, pad, 3) : -1;
  int64_t sh = hp > 0 && oh_ext > 1 ? (hp - r_ext) / (oh_ext - 1) : 1;
  if (sh < 1) sh = 1;
  int64_t row_bytes = (wp > 0 ? wp : ow_ext) * cb_ext * 4, max_rows = 1;
  while (max_rows < oh_ext && (max_rows * sh + r_ext) * row_bytes <= (int64_t)target->l1d_bytes * 3 / 2) max_rows++;
  int64_t ohs[2];
  if (sch_sample_perfect_tile(s, oh, 2, max_rows, ohs)) return LOOM_ERR_SCHEDULE;
  static const int64_t pad_choices[] = {PAD_AT_ROWS, PAD_AT_CHANNEL, PAD_AT_ROOT, PAD_INLINE};
  /* Strided, the padded copy is mostly rows the window never reads twice
   * (stride 2: each input element feeds 2.25 outputs instead of 9), so
   * copying costs about as much as the conv: the padding is inlined
   * instead (a select per load; the unrolled tile's constant columns let
   * the C compiler hoist it). bench/ops, MobileNetV2's 3x3 stride-2
   * depthwise convs, AVX2 on Zen 4, 1 thread: 112x112x96 0.19 -> 0.09 ms,
   * 56x56x144 0.064 -> 0.040 ms; with stride 1 inlining measured no
   * faster. */
  static const double pad_probs[] = {0.7, 0.1, 0.1, 0.1}, pad_probs_strided[] = {0.1, 0.1, 0.1, 0.7};
  int64_t pad_at = PAD_AT_ROOT;
  if (sch_sample_categorical(s, pad_choices, sh > 1 ? pad_probs_strided : pad_probs, 4, &pad_at))
    return LOOM_ERR_SCHEDULE;

  SchRV hs[2], ws[2];
  if (sch_split(s, oh, ohs, 2, hs) || sch_split(s, ow, (int64_t[]){-1, owb}, 2, ws)) return LOOM_ERR_SCHEDULE;
  SchRV order[9] = {n, c, hs[0], hs[1], ws[0], ry, rx, ws[1], cb};
  if (sch_reorder(s, order, 9)) return LOOM_ERR_SCHEDULE;

  SchRV init, copy;
  if (topi_tile_accumulator(s, b, epilogue, ws[0], ry, &init, &copy)) return LOOM_ERR_SCHEDULE;
  /* The tile's columns unrolled, the window too while the copies fit the
   * code-size budget (a 31x31 window: by rows of taps). */
  if (sch_vectorize(s, cb) || topi_unroll_within_budget(s, (SchRV[]){ry, rx, ws[1]}, 3)) return LOOM_ERR_SCHEDULE;
  SchRV il[8], cl[8];
  int ni = sch_get_loops(s, init, il, 8), nc = sch_get_loops(s, copy, cl, 8);
  if (ni < 1 || sch_vectorize(s, il[ni - 1]) || nc < 1 || sch_vectorize(s, cl[nc - 1])) return LOOM_ERR_SCHEDULE;
  topi_unroll_tile_loops(s, init, ws[0]);
  topi_unroll_tile_loops(s, copy, ws[0]);

  /* The padding: computed where the tile rows need it, vectorized over the
   * channel block. */
  bool pad_done = false;
  if (pad >= 0 && pad_at == PAD_INLINE) {
    pad_done = sch_compute_inline(s, pad) == LOOM_OK;
    if (!pad_done) topi_schedule_note(s, "inline the padding");
  } else if (pad >= 0 && pad_at != PAD_AT_ROOT && sch_compute_at(s, pad, pad_at == PAD_AT_ROWS ? hs[0] : c) == LOOM_OK) {
    SchRV pl[8];
    int np = sch_get_loops(s, pad, pl, 8);
    pad_done = np >= 1 && sch_vectorize(s, pl[np - 1]) == LOOM_OK;
  } else if (pad >= 0 && pad_at != PAD_AT_ROOT && pad_at != PAD_INLINE) {
    topi_schedule_note(s, "compute the padding at the tile");
  }

  /* Threads: channel blocks x row blocks as one parallel loop (n, c and the
   * row-block loop are directly nested: the padding sits inside the row
   * block loop, or inside c, then only n and c are fused). */
  if (num_threads > 1) {
    SchRV outer[3] = {n, c, hs[0]};
    int k = pad_done && pad_at == PAD_AT_CHANNEL ? 2 : 3;
    SchRV par = sch_fuse(s, outer, k);
    if (par < 0 || sch_parallel(s, par)) return LOOM_ERR_SCHEDULE;
  }
  if (pad >= 0 && !pad_done && topi_schedule_copy_stage(s, pad, num_threads)) return LOOM_ERR_SCHEDULE;
  return LOOM_OK;
}
