/* Default CPU schedule for 2-D max and average pooling (topi_pool_nd_onnx:
 * loops n, c, oh, ow, [cb] | ry, rx; the average's window sums are block
 * "<name>_sum", divided by the count in the epilogue "<name>"; the padding
 * is stage "<name>_pad").
 *
 * A pool does one max or add per loaded element, so it is bound by loads
 * and stores. Unscheduled, it accumulates every output in memory (a load
 * and a store per window element) after a padding stage has written the
 * whole padded input once more. Here:
 *   - the register tile is OWB output columns x one vector: the channel
 *     block (NCHWc), or, in plain NCHW with a unit column stride, vectors of
 *     consecutive output columns; plain with a larger stride keeps a tile
 *     of scalars (a strided vector load is a gather, which vectorize turns
 *     back into scalars anyway). The tile is accumulated in a cache
 *     (cache_write + reverse_compute_at; compaction makes it registers),
 *     initialised once, written out once with the epilogue (the average's
 *     division) folded in;
 *   - the tile is unrolled, and the window with it while the copies fit
 *     the code-size budget (TIR_CODE_BUDGET: a 3x3 or 7x7 window whole, a
 *     60x80 one by rows of taps or not at all), so neighbouring columns of
 *     a window share their loads in the C compiler;
 *   - the padding is never written for the whole tensor. With the channel
 *     block (or scalars) as the vector it is inlined: a select per window
 *     element, but its conditions depend only on the row and the tile
 *     (the columns are unrolled constants), so the C compiler hoists them
 *     and interior tiles run branch-free. ResNet-50's stem pool
 *     (112x112x64, 3x3 / 2, input in cache): inlined 0.18 ms, computed per
 *     block of output rows (the rows it reads, in L1) 0.24 ms, the whole
 *     padded tensor first (the unscheduled form) 0.47 ms. With columns as
 *     the vector the condition differs across lanes and vectorize would
 *     fall back to scalars, so the rows are padded first (a 3x3 / 1 NCHW
 *     pool on 64x56x56: 0.26 ms against 0.35 unscheduled and 0.45
 *     inlined). A sampling point (rows: the OHB rows that fit three
 *     quarters of the target's L1d);
 *   - parallel over (n, c, row block), fused.
 * OWB, OHB and the padding's place are sampling points. */
#include "topi/topi_schedule.h"

#include "arith/arith.h"
#include "support/ptrmap.h"

#include <string.h>

/* POOL_DEFAULT_OWB: the widest default tile; wider ones measured no faster
 * (the pools are bound by memory) and waste more in the last tile. It is
 * narrowed further where the tile's vectors, an input vector and the
 * window's weight (average) would not fit the target's registers. */
enum { POOL_MAX_OWB = 16, POOL_DEFAULT_OWB = 8 };

/* Where the padded input is computed. */
enum { PAD_AT_ROWS, PAD_INLINE, PAD_AT_ROOT };

/* Output columns per register tile: the fewest tiles per row with tiles of
 * at most max_owb columns, then the least waste in the last one (56
 * columns: 7 x 8; 17: 3 x 6 rather than 3 x 7). */
static int64_t default_owb(int64_t ow, int64_t max_owb) {
  int64_t best = 1, best_tiles = ow, best_waste = 0;
  for (int64_t w = 2; w <= max_owb && w <= ow; w++) {
    int64_t tiles = (ow + w - 1) / w, waste = tiles * w - ow;
    if (tiles < best_tiles || (tiles == best_tiles && waste < best_waste)) best = w, best_tiles = tiles, best_waste = waste;
  }
  return best;
}

typedef struct FindWriter {
  const Buffer *buffer;
  const Block *found;
} FindWriter;

static bool find_writer_cb(Visitor *v, const Stmt *st) {
  FindWriter *fw = v->user;
  if (st->kind == STMT_BLOCK_REALIZE && st->realize.block->n_writes == 1 &&
      st->realize.block->writes[0].buffer == fw->buffer)
    fw->found = st->realize.block;
  return true;
}

/* The block that writes `buf` (the padding stage of the pool's input), or
 * NULL when the pool reads a parameter. */
static const Block *writer_of(const Schedule *s, const Buffer *buf) {
  FindWriter fw = {buf, NULL};
  Visitor v = {find_writer_cb, NULL, &fw};
  visit_stmt(&v, sch_func(s)->body);
  return fw.found;
}

/* How far the window moves per step of iterator `it` along dimension d of
 * the input (the stride): the index at it = 1 minus the index at it = 0,
 * every other iterator 0. -1 when the index is not affine in it. */
static int64_t index_step(Arena *a, const Block *b, const BufferRegion *r, int d, const Expr *it) {
  PtrMap at;
  ptrmap_init(&at, a);
  static const int64_t zero = 0, one = 1;
  for (int i = 0; i < b->n_iters; i++) ptrmap_put(&at, b->iters[i].var, (void *)&zero);
  int64_t x0, x1;
  if (!arith_eval_int(r->min[d], &at, &x0)) return -1;
  ptrmap_put(&at, it, (void *)&one);
  if (!arith_eval_int(r->min[d], &at, &x1)) return -1;
  return x1 - x0;
}

/* Vectorizes the innermost loop of `blk` (split into vectors of `lanes`
 * first when it is longer); with lanes == 0 unrolls it instead. */
static loom_status vectorize_innermost(Schedule *s, SchRV blk, int64_t lanes) {
  SchRV l[8], parts[2];
  int n = sch_get_loops(s, blk, l, 8);
  if (n < 1) return LOOM_ERR_SCHEDULE;
  if (lanes == 0) return sch_unroll(s, l[n - 1]);
  if (topi_loop_extent(s, l[n - 1]) <= lanes) return sch_vectorize(s, l[n - 1]);
  if (sch_split(s, l[n - 1], (int64_t[]){-1, lanes}, 2, parts)) return LOOM_ERR_SCHEDULE;
  return sch_vectorize(s, parts[1]);
}

loom_status topi_schedule_pool2d_cpu(Schedule *s, const char *block, const char *epilogue, const Target *target,
                                     int num_threads) {
  SchRV b = sch_get_block(s, block);
  const Stmt *realize = stmt_find_block(sch_func(s)->body, block);
  if (b < 0 || !realize || realize->realize.block->n_reads != 1) return LOOM_ERR_SCHEDULE;
  const Block *blk = realize->realize.block;
  SchRV l[7];
  int nl = sch_get_loops(s, b, l, 7);
  if ((nl != 6 && nl != 7) || nl != blk->n_iters) return LOOM_ERR_SCHEDULE;
  bool blocked = nl == 7;
  SchRV n = l[0], c = l[1], oh = l[2], ow = l[3], ry = l[nl - 2], rx = l[nl - 1];
  int64_t oh_ext = topi_loop_extent(s, oh), ow_ext = topi_loop_extent(s, ow), r_ext = topi_loop_extent(s, ry);
  if (oh_ext < 1 || ow_ext < 1 || r_ext < 1) return LOOM_ERR_SCHEDULE;
  const BufferRegion *in = &blk->reads[0];
  int64_t stride_h = index_step(sch_arena(s), blk, in, 2, blk->iters[2].var);
  int64_t stride_w = index_step(sch_arena(s), blk, in, 3, blk->iters[3].var);
  /* Only a padding stage moves: another producer (a stage too costly to
   * inline into every window element) stays where it is. */
  const Block *pad_block = writer_of(s, in->buffer);
  size_t pn = pad_block ? strlen(pad_block->name) : 0;
  bool is_pad = pn > 4 && !strcmp(pad_block->name + pn - 4, "_pad");
  SchRV pad = is_pad ? sch_get_block(s, pad_block->name) : -1;

  /* The vector: the channel block, or output columns in plain NCHW. */
  int64_t lanes = target_lanes(target, DT_F32);
  int64_t vec = blocked ? topi_loop_extent(s, l[4]) : stride_w == 1 && ow_ext >= lanes ? lanes : 0;
  if (blocked && vec < 1) return LOOM_ERR_SCHEDULE;

  /* Register tile width, in columns (blocked, plain scalar) or in vectors
   * of columns (plain vector). */
  int64_t tile_units = !blocked && vec ? (ow_ext + vec - 1) / vec : ow_ext;
  int64_t owb_choices[POOL_MAX_OWB], owb;
  double owb_probs[POOL_MAX_OWB];
  int64_t max_owb = !blocked && vec ? 4 : POOL_DEFAULT_OWB, rpv = vec ? topi_registers_per_vector(target, vec) : 1;
  while (max_owb > 1 && max_owb * rpv + 2 > topi_vector_registers(target)) max_owb--;
  int64_t best = default_owb(tile_units, max_owb);
  for (int i = 0; i < POOL_MAX_OWB; i++)
    owb_choices[i] = i + 1, owb_probs[i] = owb_choices[i] == best ? 0.5 : 0.5 / (POOL_MAX_OWB - 1);
  if (sch_sample_categorical(s, owb_choices, owb_probs, POOL_MAX_OWB, &owb)) return LOOM_ERR_SCHEDULE;
  if (owb > tile_units) owb = tile_units;

  /* Rows per block: the padded rows one block reads, (OHB-1)*sh + R rows of
   * the input's width, fit three quarters of L1d (the rest: the tile's
   * output and the next block's first rows). */
  int64_t width = ow_ext, pad_tile_bytes = (int64_t)target->l1d_bytes * 3 / 4;
  if (in->buffer->ndim > 3 && !expr_as_int(in->buffer->shape[3], &width)) width = ow_ext;
  int64_t row_bytes = width * (blocked ? vec : 1) * (int64_t)sizeof(float), max_rows = 1;
  int64_t sh = stride_h > 0 ? stride_h : 1;
  while (max_rows < oh_ext && (max_rows * sh + r_ext) * row_bytes <= pad_tile_bytes) max_rows++;
  int64_t ohs[2];
  if (sch_sample_perfect_tile(s, oh, 2, max_rows, ohs)) return LOOM_ERR_SCHEDULE;
  static const int64_t pad_choices[] = {PAD_AT_ROWS, PAD_INLINE, PAD_AT_ROOT};
  /* Inlined, the padding's column condition varies across the lanes when
   * the vector is made of output columns (plain NCHW), and vectorize then
   * falls back to scalars: there the rows are padded first. */
  static const double pad_probs_inline[] = {0.1, 0.8, 0.1}, pad_probs_rows[] = {0.8, 0.1, 0.1};
  int64_t pad_at = PAD_AT_ROOT;
  if (sch_sample_categorical(s, pad_choices, !blocked && vec ? pad_probs_rows : pad_probs_inline, 3, &pad_at))
    return LOOM_ERR_SCHEDULE;

  SchRV hs[2], ws[3];
  if (sch_split(s, oh, ohs, 2, hs)) return LOOM_ERR_SCHEDULE;
  int n_ws = !blocked && vec ? 3 : 2;
  int64_t wf[3] = {-1, owb, vec};
  if (sch_split(s, ow, wf, n_ws, ws)) return LOOM_ERR_SCHEDULE;
  SchRV vloop = blocked ? l[4] : n_ws == 3 ? ws[2] : -1;
  SchRV order[9] = {n, c, hs[0], hs[1], ws[0], ry, rx, ws[1], vloop};
  if (sch_reorder(s, order, vloop >= 0 ? 9 : 8)) return LOOM_ERR_SCHEDULE;

  SchRV init, copy;
  if (topi_tile_accumulator(s, b, epilogue, ws[0], ry, &init, &copy)) return LOOM_ERR_SCHEDULE;
  if (vloop >= 0 && sch_vectorize(s, vloop)) return LOOM_ERR_SCHEDULE;
  /* Init and copy-out: vectors of the tile (a scalar tile stays scalar:
   * a vector access to it would keep it in memory). */
  if (vectorize_innermost(s, init, vec) || vectorize_innermost(s, copy, vec)) return LOOM_ERR_SCHEDULE;
  topi_unroll_tile_loops(s, init, ws[0]);
  topi_unroll_tile_loops(s, copy, ws[0]);

  bool pad_done = false;
  if (pad >= 0 && pad_at == PAD_INLINE) {
    pad_done = sch_compute_inline(s, pad) == LOOM_OK;
    if (!pad_done) topi_schedule_note(s, "inline the padding");
  } else if (pad >= 0 && pad_at == PAD_AT_ROWS) {
    pad_done = sch_compute_at(s, pad, hs[0]) == LOOM_OK && vectorize_innermost(s, pad, vec ? vec : lanes) == LOOM_OK;
    if (!pad_done) topi_schedule_note(s, "compute the padding at the row block");
  }

  /* The tile's columns unrolled, and the window around them while the
   * copies fit the code-size budget, weighed after the padding is inlined:
   * a 3x3 window whole, a 60x80 one by rows of taps (all its 33,600
   * statements over a 7-column tile took clang more than 8 minutes). */
  if (topi_unroll_within_budget(s, (SchRV[]){ry, rx, ws[1]}, 3)) return LOOM_ERR_SCHEDULE;

  /* Threads: (n, c, row block) as one loop; the padding computed at the row
   * block sits inside it. */
  if (num_threads > 1) {
    SchRV par = sch_fuse(s, (SchRV[]){n, c, hs[0]}, 3);
    if (par < 0 || sch_parallel(s, par)) return LOOM_ERR_SCHEDULE;
  }
  if (pad >= 0 && !pad_done && topi_schedule_copy_stage(s, pad, num_threads)) return LOOM_ERR_SCHEDULE;
  return LOOM_OK;
}
