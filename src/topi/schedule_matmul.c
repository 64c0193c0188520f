/* Default CPU schedule for matmul-like blocks C[..., i, j] += A[..., i, k] *
 * B[..., k, j] (matmul, batch matmul, dense after the graph turns weights
 * into [K, N]).
 *
 * The classic register-blocked outer product (BLIS's micro-kernel, TVM's
 * x86 dense schedule): an MR x NR tile of C lives in vector registers
 * (cache_write + reverse_compute_at; tir_compact_buffers shrinks the cache
 * to the tile), each k step broadcasts MR elements of A and loads NR
 * vectors of B. B's K x NR panel is copied to a contiguous buffer once per
 * column tile (cache_read + compute_at; compaction makes it the packed
 * panel), so the k loop walks it with unit stride instead of jumping a row
 * of B (4 KiB at N = 1024) every step. Small M (matrix-vector) skips the
 * packing: B is read once either way; for M = 1 the column tile is wide
 * instead, so B streams from memory in long contiguous runs.
 *
 * A constant B that graph_pass_pack_matmul packed at compile time into
 * column panels (MatMulPacked: Bp[j / w, k, j % w], w one vector) needs
 * no run-time copy: each vector of the column tile reads its own panel,
 * contiguous in k.
 *
 * Decisions are sampling points (MR, NR, whether to pack) so a tuner can
 * replace the defaults, which the target decides: the register tile from
 * its vector registers and width, K blocking from its L2 size. */
#include "topi/topi_schedule.h"

#include "tir/schedule/schedule.h"

#include <string.h>

/* Does the block's second read (B) ignore its first nb iterators (the
 * batch)? */
static bool batch_shares_b(Schedule *s, const char *block, int nb) {
  const Stmt *r = stmt_find_block(sch_func(s)->body, block);
  if (!r || r->realize.block->n_reads < 2 || r->realize.block->n_iters < nb) return false;
  const Block *b = r->realize.block;
  const BufferRegion *rb = &b->reads[1];
  for (int d = 0; d < rb->buffer->ndim; d++)
    for (int i = 0; i < nb; i++)
      if (expr_uses_var(rb->min[d], b->iters[i].var)) return false;
  return true;
}

/* B given in column panels, Bp[j / w, k, j % w] (MatMulPacked, packed at
 * compile time by graph_pass_pack_matmul): the panel width w, else 0. */
static int64_t b_panel_width(Schedule *s, const char *block) {
  const Stmt *r = stmt_find_block(sch_func(s)->body, block);
  if (!r || r->realize.block->n_reads < 2 || r->realize.block->n_iters < 3) return 0;
  const Block *b = r->realize.block;
  const BufferRegion *rb = &b->reads[1];
  const Expr *j = b->iters[b->n_iters - 2].var, *k = b->iters[b->n_iters - 1].var;
  int64_t w;
  if (rb->buffer->ndim != 3 || !expr_as_int(rb->buffer->shape[2], &w) || w < 1) return 0;
  bool panels = expr_uses_var(rb->min[0], j) && !expr_uses_var(rb->min[0], k) && expr_uses_var(rb->min[1], k) &&
                !expr_uses_var(rb->min[1], j) && expr_uses_var(rb->min[2], j) && !expr_uses_var(rb->min[2], k);
  return panels ? w : 0;
}

/* The default register tile (indices into the choices): among the tiles
 * whose accumulators, B vectors and A broadcast fit the target's vector
 * registers (topi_register_tile_fits), the one with the fewest loads per
 * FMA, (MR + NR) / (MR x NR), weighted by the work partial tiles waste
 * (a partial row tile is a partitioned loop with a smaller tile; a
 * partial column tile costs double, see below). AVX-512 (32 registers)
 * gets 6 x 4 vectors (8 x 3 when the rows must divide M = 128: blocked K),
 * AVX2 (16) 4 x 3. Blocked K needs MR to divide M (rows_divide). */
static void default_tile(const Target *t, int64_t M, int64_t N_vecs, int rpv, const int64_t *mr_choices, int n_mr,
                         const int64_t *nr_choices, int n_nr, bool rows_divide, int *best_mr, int *best_nr) {
  double best = 1e30;
  *best_mr = 0, *best_nr = 0;
  for (int i = 0; i < n_mr; i++)
    for (int j = 0; j < n_nr; j++) {
      int64_t mr = mr_choices[i] < M ? mr_choices[i] : M, nr = nr_choices[j];
      if ((mr == 1) != (M == 1) || mr != mr_choices[i] || !topi_register_tile_fits(t, mr, nr, rpv) ||
          (rows_divide && M % mr))
        continue;
      int64_t row_tiles = (M + mr - 1) / mr, col_tiles = (N_vecs + nr - 1) / nr;
      double cost = (double)(mr + nr) / (double)(mr * nr) * (double)(row_tiles * mr) / (double)M *
                    (double)(col_tiles * nr) / (double)N_vecs;
      /* A partial column tile guards the vector loop of every tile (the
       * guard is not partitioned away): BERT's 128-column attention scores
       * with 3 AVX2 vectors a tile ran at 5 GFLOP/s instead of 100. */
      if (N_vecs % nr) cost *= 2;
      if (cost < best - 1e-9) best = cost, *best_mr = i, *best_nr = j;
    }
}

static loom_status fail_rv(Schedule *s, SchRV rv) { return rv < 0 ? LOOM_ERR_SCHEDULE : LOOM_OK; }

loom_status topi_schedule_matmul_cpu(Schedule *s, const char *block, const char *epilogue, const Target *target,
                                     int num_threads) {
  SchRV b = sch_get_block(s, block);
  if (b < 0) return LOOM_ERR_SCHEDULE;
  int64_t panel = b_panel_width(s, block);
  SchRV loops[8];
  int n = sch_get_loops(s, b, loops, 8);
  if (n < 3) return LOOM_ERR_SCHEDULE;
  SchRV li = loops[n - 3], lj = loops[n - 2], lk = loops[n - 1];
  /* The work, for whether threads pay (topi_parallel_pays): 2 flops an
   * iteration, B read once (once per batch where the batch has its own). */
  double iters = 1, b_bytes = (double)sizeof(float) * (double)topi_loop_extent(s, lj) * (double)topi_loop_extent(s, lk);
  for (int d = 0; d < n; d++) iters *= (double)topi_loop_extent(s, loops[d]);
  if (n > 3 && !batch_shares_b(s, block, n - 3))
    for (int d = 0; d < n - 3; d++) b_bytes *= (double)topi_loop_extent(s, loops[d]);
  /* Batch loops over a shared B ([S, 1, K] x [K, N], as transformer
   * exports have it) make one tall matmul: fuse them into the row loop so
   * the register tile and the packed panel see all S rows, instead of S
   * matrix-vector products. */
  if (n > 3 && batch_shares_b(s, block, n - 3)) {
    SchRV rows = sch_fuse(s, loops, n - 2);
    if (rows >= 0) li = rows;
  }
  int64_t M = topi_loop_extent(s, li), N = topi_loop_extent(s, lj);
  if (M < 1 || N < 1) return LOOM_ERR_SCHEDULE;
  /* Packed B: a column vector is one panel (the pass packs panels one
   * target vector wide), so each vector of the tile streams its panel. A
   * matrix-vector product's panels are several vectors wide (the pass's
   * GEMV panels, topi_gemv_panel_vectors): its column tile is
   * topi_gemv_streams whole panels, each streamed from first byte to last,
   * side by side. */
  int target_vec = target_lanes(target, DT_F32);
  bool gemv_panel = M == 1 && panel > target_vec && panel % target_vec == 0;
  int lanes = panel > 0 && !gemv_panel ? (int)panel : target_vec;

  int64_t mr, nr_vecs, pack, kc;
  /* Matrix-vector products (M = 1) read every element of B once, so they
   * stream B from memory (ResNet-50's classifier: 8 MB of weights). A
   * column tile of 4 vectors reads 256 bytes of a row of B, then jumps a
   * whole row (4 KB at N = 1000) for the next k: the prefetcher follows
   * badly. Wide tiles read B's rows in long contiguous runs; the
   * accumulators that do not fit the vector registers are spilled to L1,
   * which still outruns memory. The default is two tiles per thread:
   * measured on that classifier (loom run --profile, medians), 16 vectors
   * take 0.92 ms at 1 thread and 0.71 ms at 2 (4 vectors: 1.32 and 0.73,
   * 32: 0.88 and 0.89; one tile of the whole row, 63: 0.78, serial).
   * Capped at GEMV_MAX_VECS vectors (the unroll limit). */
  enum { GEMV_MAX_VECS = 64, GEMV_TILES_PER_THREAD = 2 };
  int64_t N_vecs = (N + lanes - 1) / lanes, tiles = GEMV_TILES_PER_THREAD * (num_threads > 1 ? num_threads : 1);
  /* A batch of at least one product per thread (graph_pass_split_gemv's
   * row ranges of one matrix) needs no column tiles to share the work:
   * each product reads its whole rows in one contiguous run. */
  bool batched = n > 3 && li == loops[n - 3]; /* batch loops kept (B not shared) */
  int64_t batches = 1;
  for (int d = 0; batched && d < n - 3; d++) batches *= topi_loop_extent(s, loops[d]);
  if (batched && batches >= num_threads) tiles = 1;
  int64_t gemv_vecs = (N_vecs + tiles - 1) / tiles;
  if (gemv_vecs > GEMV_MAX_VECS) gemv_vecs = GEMV_MAX_VECS;
  if (gemv_vecs < 1) gemv_vecs = 1;
  /* GEMV panels: the tile streams topi_gemv_streams whole panels at once
   * (one panel's indices are affine only for whole panels). */
  if (gemv_panel) gemv_vecs = topi_gemv_streams(target, (N + panel - 1) / panel, panel / target_vec, num_threads) * (panel / target_vec);
  enum { N_MR = 7, N_NR = 5 };
  static const int64_t mr_choices[N_MR] = {1, 2, 3, 4, 6, 8, 12};
  const int64_t nr_choices[N_NR] = {1, 2, 3, 4, gemv_vecs};
  static const double nr_probs_gemv[N_NR] = {0.05, 0.05, 0.05, 0.15, 0.7}, nr_probs_panel[N_NR] = {0, 0, 0, 0, 1};
  static const int64_t pack_choices[] = {0, 1};
  /* A probability of 0 marks a choice that is invalid here (a run-time
   * copy of panels packed at compile time); an unlikely but valid one keeps
   * a small probability, so random decisions (the tuner's space) reach it. */
  static const double pack_probs_none[] = {1.0, 0.0}, pack_probs_small[] = {0.9, 0.1}, pack_probs_big[] = {0.1, 0.9};
  int rpv = topi_registers_per_vector(target, lanes);
  int best_mr, best_nr;
  default_tile(target, M, N_vecs, rpv, mr_choices, N_MR, nr_choices, N_NR - 1, false, &best_mr, &best_nr);
  /* K blocking: a K x NR panel of B over half the L2 cache (BERT's K =
   * 3072 with 4 AVX-512 vectors: 768 KiB) is streamed from memory for
   * every row tile. Blocked, the K loop is outermost (BLIS's order): per
   * block of KC, each panel KC x NR is packed once and stays in L1 while
   * every row tile runs, the C tile is loaded from and stored back to C's
   * accumulator per block (cache_inplace), and the block of A (M x KC)
   * stays in L2. The accumulator is then the whole C (in the workspace)
   * and the epilogue runs after the last block. KC = 128 (bench/ops
   * ffn_down: 0.55 -> 0.75 of oneDNN's speed; no gain for K = 768). The
   * tile rows must divide M (a partial tile's guard keeps compaction from
   * making it registers): 8 x 3 AVX-512 vectors for M = 128. */
  static const int64_t kc_choices[] = {0, 128, 256};
  static const double kc_probs_no[] = {0.9, 0.05, 0.05}, kc_probs_big[] = {0.1, 0.7, 0.2};
  int64_t K = topi_loop_extent(s, lk);
  int64_t panel_bytes = K * nr_choices[best_nr] * lanes * (int64_t)sizeof(float);
  bool big_panel = K > 0 && M >= 16 && panel_bytes > target->l2_bytes / 2;
  if (sch_sample_categorical(s, kc_choices, big_panel ? kc_probs_big : kc_probs_no, 3, &kc)) return LOOM_ERR_SCHEDULE;
  bool kblock = kc > 0 && K > kc;
  if (kblock)
    default_tile(target, M, N_vecs, rpv, mr_choices, N_MR, nr_choices, N_NR - 1, true, &best_mr, &best_nr);
  double mr_probs[N_MR], nr_probs[N_NR];
  bool mr_allowed[N_MR], nr_allowed[N_NR] = {true, true, true, true, false};
  for (int i = 0; i < N_MR; i++) mr_allowed[i] = (mr_choices[i] == 1) == (M == 1);
  topi_probs_favoring(mr_probs, N_MR, M == 1 ? 0 : best_mr, 0.6, mr_allowed);
  topi_probs_favoring(nr_probs, N_NR, best_nr, 0.6, nr_allowed);
  if (sch_sample_categorical(s, mr_choices, mr_probs, N_MR, &mr)) return LOOM_ERR_SCHEDULE;
  /* A GEMV panel's tile is the panel (the indices of a part of one are
   * not affine): the decision is sampled but has one valid answer. */
  const double *nr_probs_m = gemv_panel ? nr_probs_panel : M == 1 ? nr_probs_gemv : nr_probs;
  if (sch_sample_categorical(s, nr_choices, nr_probs_m, N_NR, &nr_vecs))
    return LOOM_ERR_SCHEDULE;
  /* Panels packed at compile time need no run-time copy: the decision is
   * still sampled (the trace keeps its shape) but can only be 0. */
  if (sch_sample_categorical(s, pack_choices, panel > 0 ? pack_probs_none : M < 16 ? pack_probs_small : pack_probs_big, 2,
                             &pack))
    return LOOM_ERR_SCHEDULE;

  /* Narrow outputs: the column tile cannot exceed N rounded up to vectors. */
  while (!gemv_panel && nr_vecs > 1 && (nr_vecs - 1) * lanes >= N) nr_vecs--;
  if (mr > M) mr = M;
  if (kblock && (M % mr || K % kc)) kblock = false; /* partial tiles: see above; a partial K block cannot decompose */

  SchRV io[2], jo[3], ks[2] = {lk, -1}, jp = -1;
  if (sch_split(s, li, (int64_t[]){-1, mr}, 2, io)) return LOOM_ERR_SCHEDULE;
  int64_t panel_vecs = gemv_panel ? panel / lanes : nr_vecs;
  if (nr_vecs > panel_vecs) {
    SchRV j4[4];
    if (sch_split(s, lj, (int64_t[]){-1, nr_vecs / panel_vecs, panel_vecs, lanes}, 4, j4)) return LOOM_ERR_SCHEDULE;
    jo[0] = j4[0], jp = j4[1], jo[1] = j4[2], jo[2] = j4[3];
  } else if (sch_split(s, lj, (int64_t[]){-1, nr_vecs, lanes}, 3, jo)) {
    return LOOM_ERR_SCHEDULE;
  }
  if (kblock && sch_split(s, lk, (int64_t[]){-1, kc}, 2, ks)) return LOOM_ERR_SCHEDULE;
  SchRV order[8] = {jo[0], io[0], lk, io[1], jo[1], jo[2]};
  int n_order = 6;
  if (kblock) {
    SchRV o[7] = {ks[0], jo[0], io[0], ks[1], io[1], jo[1], jo[2]};
    memcpy(order, o, sizeof o);
    n_order = 7;
  }
  if (jp >= 0) { /* the panels of the tile just outside its vectors */
    memmove(order + n_order - 1, order + n_order - 2, 2 * sizeof(SchRV));
    order[n_order - 2] = jp;
    n_order++;
  }
  if (sch_reorder(s, order, n_order)) return LOOM_ERR_SCHEDULE;

  SchRV copy = sch_cache_write(s, b, 0, SCOPE_LOCAL);
  if (fail_rv(s, copy)) return LOOM_ERR_SCHEDULE;
  topi_fold_epilogue(s, epilogue);
  if (!kblock && sch_reverse_compute_at(s, copy, io[0])) return LOOM_ERR_SCHEDULE;
  SchRV init = sch_decompose_reduction(s, b, ks[0]);
  if (fail_rv(s, init)) return LOOM_ERR_SCHEDULE;
  SchRV tile[2] = {-1, -1};
  if (kblock && sch_cache_inplace(s, b, io[0], SCOPE_LOCAL, tile)) return LOOM_ERR_SCHEDULE;
  if (pack) {
    SchRV bp = sch_cache_read(s, b, 1, SCOPE_LOCAL);
    if (fail_rv(s, bp) || sch_compute_at(s, bp, jo[0])) return LOOM_ERR_SCHEDULE;
    SchRV pl[8];
    int np = sch_get_loops(s, bp, pl, 8);
    if (np < 1 || sch_vectorize(s, pl[np - 1])) return LOOM_ERR_SCHEDULE;
  }
  for (int t = 0; t < 2 && kblock; t++) {
    SchRV tl[8];
    int nt = sch_get_loops(s, tile[t], tl, 8);
    if (nt < 1 || sch_vectorize(s, tl[nt - 1])) return LOOM_ERR_SCHEDULE;
    topi_unroll_tile_loops(s, tile[t], io[0]);
  }
  /* Micro-kernel: MR x NR/lanes vector FMAs per k, fully unrolled. */
  if (sch_unroll(s, io[1]) || sch_unroll(s, jo[1]) || sch_vectorize(s, jo[2])) return LOOM_ERR_SCHEDULE;
  if (jp >= 0 && sch_unroll(s, jp)) return LOOM_ERR_SCHEDULE;
  /* Init and copy-out: vectorize their innermost (column) loop; unrolled
   * when they are the register tile's. */
  SchRV il[8], cl[8];
  int ni = sch_get_loops(s, init, il, 8);
  if (ni < 1 || sch_vectorize(s, il[ni - 1])) return LOOM_ERR_SCHEDULE;
  int nc = sch_get_loops(s, copy, cl, 8);
  SchRV cs[2];
  if (nc < 1 || sch_split(s, cl[nc - 1], (int64_t[]){-1, lanes}, 2, cs) || sch_vectorize(s, cs[1]))
    return LOOM_ERR_SCHEDULE;
  if (!kblock) {
    topi_unroll_tile_loops(s, init, io[0]);
    topi_unroll_tile_loops(s, copy, io[0]);
  }
  /* Threads: the column tiles, fused with the batch loops of a batch
   * matmul (12 heads x 1 column tile in BERT's attention). Blocked K: the
   * init and the copy-out (whole C) run in parallel over their rows. A
   * product too small to repay the fork/join runs on one thread. */
  if (topi_parallel_pays(target, 2 * iters, b_bytes, num_threads)) {
    SchRV l2[8];
    int nl = sch_get_loops(s, b, l2, 8), at = -1;
    for (int i = 0; i < nl; i++)
      if (sch_loop_var(s, l2[i]) == sch_loop_var(s, jo[0])) at = i;
    int first = kblock ? at : 0; /* blocked K: the batch loops are outside ks[0] */
    if (kblock) {
      for (int i = 0; i < nl; i++)
        if (sch_loop_var(s, l2[i]) == sch_loop_var(s, ks[0])) first = i + 1;
    }
    SchRV par = at > first ? sch_fuse(s, l2 + first, at - first + 1) : jo[0];
    if (par < 0) par = jo[0];
    if (sch_parallel(s, par)) return LOOM_ERR_SCHEDULE;
    if (kblock) {
      SchRV xl[8];
      int nx = sch_get_loops(s, init, xl, 8);
      if (nx > 1 && sch_parallel(s, xl[0])) topi_schedule_note(s, "parallel init");
      nx = sch_get_loops(s, copy, xl, 8);
      if (nx > 1 && sch_parallel(s, xl[0])) topi_schedule_note(s, "parallel copy-out");
    }
  }
  return LOOM_OK;
}
