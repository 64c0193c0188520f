/* Multi-level tiling: the generated sketch of a reduction with data reuse
 * (MetaSchedule's MultiLevelTiling rule for CPUs, "SSRSRS"), for blocks no
 * template covers and, beside the template, for the matmul and conv
 * anchors.
 *
 * Every spatial loop is split into four (S0..S3) and every reduction loop
 * into two (R0, R1), all by sampled perfect tiles, and reordered
 *
 *     S0 (parallel) . S1 . R0 . S2 . R1 . S3 (vector loop innermost)
 *
 * The output tile of S2 x S3 accumulates in a local cache (cache_write,
 * computed at the last S1 loop; compaction shrinks it to the tile) and is
 * copied out, with the epilogue, once per tile; S3 is unrolled, S2 where
 * sampled and the tile fits the vector registers. The spatial loop that
 * walks the output's last dimension is the vector loop. An S3 beyond the
 * vector registers gives factors to S2, and an accumulator beyond half of
 * L1d gives S2's and then S3's to S1 (deterministic repairs, so a trace
 * replays to the same program). The space is large and most of it slow:
 * the search and the cost model find the few fast points, which is the
 * case a learned model is for. */
#include "topi/topi_schedule.h"

#include <string.h>

enum { MAX_LOOPS = 12, S_LEVELS = 4, R_LEVELS = 2, MAX_TILE_INNER = 8 };

/* Does some read (other than the accumulator) ignore a spatial iterator,
 * so a tile of that iterator reuses it? A row sum reads every element
 * once: nothing to tile for. */
static bool has_reuse(const Block *b) {
  for (int r = 0; r < b->n_reads; r++) {
    const BufferRegion *rg = &b->reads[r];
    bool own = false;
    for (int w = 0; w < b->n_writes; w++) own = own || b->writes[w].buffer == rg->buffer;
    if (own) continue;
    for (int k = 0; k < b->n_iters; k++) {
      if (b->iters[k].type == ITER_REDUCE) continue;
      bool used = false;
      for (int d = 0; d < rg->buffer->ndim && !used; d++) used = expr_uses_var(rg->min[d], b->iters[k].var);
      if (!used) return true;
    }
  }
  return false;
}

bool topi_multi_level_tiling_applies(Schedule *s, const char *block) {
  SchRV b = sch_get_block(s, block), l[MAX_LOOPS + 1];
  const Stmt *r = stmt_find_block(sch_func(s)->body, block);
  if (b < 0 || !r) return false;
  const Block *blk = r->realize.block;
  int n = sch_get_loops(s, b, l, MAX_LOOPS + 1), ns = 0, nr = 0;
  if (n != blk->n_iters || n > MAX_LOOPS || blk->n_writes != 1 || !has_reuse(blk)) return false;
  for (int k = 0; k < n; k++) {
    /* Each loop binds its own iterator, outermost first (as computed). */
    if (r->realize.iter_values[k] != sch_loop_var(s, l[k]) || topi_loop_extent(s, l[k]) < 1) return false;
    if (blk->iters[k].type == ITER_REDUCE) nr++;
    else ns++;
  }
  return ns > 0 && nr > 0;
}

/* The product of one level's factors over the spatial loops. */
static int64_t level_elements(int64_t (*f)[S_LEVELS], int ns, int level) {
  int64_t e = 1;
  for (int i = 0; i < ns; i++) e *= f[i][level];
  return e;
}

/* Elements of the accumulator tile: the product of S2 x S3 over the
 * spatial loops. */
static int64_t tile_elements(int64_t (*f)[S_LEVELS], int ns) {
  int64_t e = 1;
  for (int i = 0; i < ns; i++) e *= f[i][2] * f[i][3];
  return e;
}

loom_status topi_schedule_multi_level_tiling(Schedule *s, const char *block, const char *epilogue,
                                             const Target *target, int num_threads) {
  if (!topi_multi_level_tiling_applies(s, block)) return LOOM_ERR_SCHEDULE;
  SchRV b = sch_get_block(s, block), l[MAX_LOOPS];
  int n = sch_get_loops(s, b, l, MAX_LOOPS);
  const Block *blk = stmt_find_block(sch_func(s)->body, block)->realize.block;
  const BufferRegion *out = &blk->writes[0];
  const Expr *last_index = out->buffer->ndim > 0 ? out->min[out->buffer->ndim - 1] : NULL;
  int lanes = target_lanes(target, DT_F32);

  /* Spatial loops in order with the vector loop (the one walking the
   * output's last dimension) moved last; reduction loops in order. */
  SchRV sp[MAX_LOOPS], rd[MAX_LOOPS];
  int ns = 0, nr = 0, vec = -1;
  for (int k = 0; k < n; k++) {
    if (blk->iters[k].type == ITER_REDUCE) rd[nr++] = l[k];
    else {
      if (last_index && expr_uses_var(last_index, blk->iters[k].var)) vec = ns;
      sp[ns++] = l[k];
    }
  }
  if (vec >= 0 && vec != ns - 1) {
    SchRV v = sp[vec];
    memmove(sp + vec, sp + vec + 1, sizeof(SchRV) * (size_t)(ns - 1 - vec));
    sp[ns - 1] = v, vec = ns - 1;
  }

  int64_t sf[MAX_LOOPS][S_LEVELS], rf[MAX_LOOPS][R_LEVELS];
  for (int i = 0; i < ns; i++)
    if (sch_sample_perfect_tile(s, sp[i], S_LEVELS, i == vec ? 4 * lanes : MAX_TILE_INNER, sf[i]))
      return LOOM_ERR_SCHEDULE;
  for (int i = 0; i < nr; i++)
    if (sch_sample_perfect_tile(s, rd[i], R_LEVELS, 0, rf[i])) return LOOM_ERR_SCHEDULE;
  /* The repairs. S3, unrolled, within the vector registers (an unrolled
   * tile beyond them only spills, and its code can keep the C compiler's
   * optimizer busy for minutes): the other loops' S3 factors move to S2
   * (the vector loop's S3, at most four vectors, stays). Then the accumulator (S2 x S3) within half of L1d: S2, then S3,
   * factors move to S1. */
  int64_t regs = (int64_t)topi_vector_registers(target) * lanes;
  for (int i = 0; i < ns && level_elements(sf, ns, 3) > regs; i++)
    if (i != vec) sf[i][2] *= sf[i][3], sf[i][3] = 1;
  int64_t cap = target->l1d_bytes / 2 / (int64_t)sizeof(float);
  for (int level = 2; level <= 3 && tile_elements(sf, ns) > cap; level++)
    for (int i = 0; i < ns && tile_elements(sf, ns) > cap; i++)
      sf[i][1] *= sf[i][level], sf[i][level] = 1;

  SchRV ss[MAX_LOOPS][S_LEVELS], rs[MAX_LOOPS][R_LEVELS];
  for (int i = 0; i < ns; i++)
    if (sch_split(s, sp[i], sf[i], S_LEVELS, ss[i])) return LOOM_ERR_SCHEDULE;
  for (int i = 0; i < nr; i++)
    if (sch_split(s, rd[i], rf[i], R_LEVELS, rs[i])) return LOOM_ERR_SCHEDULE;
  SchRV order[MAX_LOOPS * S_LEVELS];
  int k = 0;
  for (int i = 0; i < ns; i++) order[k++] = ss[i][0];
  for (int i = 0; i < ns; i++) order[k++] = ss[i][1];
  for (int i = 0; i < nr; i++) order[k++] = rs[i][0];
  for (int i = 0; i < ns; i++) order[k++] = ss[i][2];
  for (int i = 0; i < nr; i++) order[k++] = rs[i][1];
  for (int i = 0; i < ns; i++) order[k++] = ss[i][3];
  if (sch_reorder(s, order, k)) return LOOM_ERR_SCHEDULE;

  SchRV init, copy, tile_loop = ss[ns - 1][1];
  if (topi_tile_accumulator(s, b, epilogue, tile_loop, rs[0][0], &init, &copy)) return LOOM_ERR_SCHEDULE;
  for (int i = 0; i < ns; i++)
    if (i == vec ? sch_vectorize(s, ss[i][3]) : sch_unroll(s, ss[i][3])) return LOOM_ERR_SCHEDULE;
  /* S2 unrolled too: each copy of the R1 loops then indexes its part of
   * the tile by constants, so the C compiler keeps it in registers across
   * them; otherwise every R1 step loads and stores the tile. A sampling
   * point (code size against register reuse). */
  static const int64_t unroll_choices[] = {0, 1};
  static const double unroll_probs[] = {0.5, 0.5};
  int64_t unroll_s2;
  if (sch_sample_categorical(s, unroll_choices, unroll_probs, 2, &unroll_s2)) return LOOM_ERR_SCHEDULE;
  if (tile_elements(sf, ns) > regs) unroll_s2 = 0; /* the tile cannot stay in registers anyway */
  for (int i = 0; i < ns && unroll_s2; i++)
    if (sch_unroll(s, ss[i][2])) return LOOM_ERR_SCHEDULE;
  /* Init and copy-out: vectorized over the tile's last loop (a plain loop
   * where the lowering cannot), the loops above it in the tile unrolled. */
  SchRV stages[2] = {init, copy};
  for (int t = 0; t < 2; t++) {
    SchRV xl[MAX_LOOPS * S_LEVELS];
    int nx = sch_get_loops(s, stages[t], xl, MAX_LOOPS * S_LEVELS);
    if (nx < 1 || nx > MAX_LOOPS * S_LEVELS) return LOOM_ERR_SCHEDULE;
    if (vec >= 0 && sch_vectorize(s, xl[nx - 1])) topi_schedule_note(s, "tiling: vectorize init/copy-out");
    topi_unroll_tile_loops(s, stages[t], tile_loop);
  }
  if (num_threads > 1) {
    /* The S0 loops from the first to the last with more than one iteration, fused. */
    int first = 0, last = ns - 1;
    while (first < ns && sf[first][0] == 1) first++;
    while (last > first && sf[last][0] == 1) last--;
    SchRV par[MAX_LOOPS];
    for (int i = first; i <= last; i++) par[i - first] = ss[i][0];
    SchRV p = first == ns ? -1 : last > first ? sch_fuse(s, par, last - first + 1) : par[0];
    if (p >= 0 && sch_parallel(s, p)) topi_schedule_note(s, "tiling: parallel");
  }
  return LOOM_OK;
}
