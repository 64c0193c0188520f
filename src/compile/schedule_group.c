/* The schedule half of the op strategy for one fused group.
 *
 *   1. inline every injective stage that is not a group output (the
 *      elementwise chain of the group collapses into its consumer; padding
 *      stages stay, since an inlined pad puts a select in the hot loop, and
 *      so do math-heavy stages read by several blocks and stages a block
 *      reads at several indices);
 *   2. the anchor (the reduction with the most iterations: the conv,
 *      depthwise conv, matmul or pool of the group) gets its topi default
 *      schedule (src/topi/schedule_*.c), with the block
 *      consuming its output folded into the register tile as an epilogue;
 *   3. every other block gets the generic schedule: parallel over its outer
 *      loops, vectorized innermost where that is legal.
 * A primitive that refuses leaves the program as it was, so every step is
 * best effort and the result is always correct.
 *
 * The generic schedule is also the search space of the blocks no topi
 * schedule covers (MetaSchedule's generated sketches, in small): it samples
 * the vector width, a row reduction's partial-result width, a 2-D tile of
 * a transposing copy, how many outer loops the parallel loop fuses, and
 * where a chain of row-wise stages is computed (per row, per block of
 * rows, or whole). The most probable choice of each is what the schedule
 * did before it sampled anything, so the defaults are one point of it. */
#include "compile/compile.h"

#include "support/vec.h"
#include "tir/flops.h"
#include "tir/schedule/schedule.h"
#include "topi/topi_schedule.h"

#include <string.h>

enum { MAX_CHOICES = 4 };

/* A sampling point of the generic schedule: one of cands[0..n) where
 * allowed, cands[best] the most probable (the default). No instruction when
 * only best is allowed: a decision without alternatives only lengthens the
 * trace. */
static int64_t sample_choice(Schedule *s, const int64_t *cands, const bool *allowed, int n, int best) {
  int others = 0;
  for (int i = 0; i < n; i++) others += i != best && allowed[i];
  if (others == 0) return cands[best];
  double probs[MAX_CHOICES];
  topi_probs_favoring(probs, n, best, 0.6, allowed);
  int64_t pick;
  return sch_sample_categorical(s, cands, probs, n, &pick) == LOOM_OK ? pick : cands[best];
}

/* The generated sketch (multi-level tiling) or the schedule written for
 * the block: a sampling point where the generated one applies, the written
 * one the default. */
static bool sample_tiled_sketch(Schedule *s, const char *block) {
  if (!topi_multi_level_tiling_applies(s, block)) return false;
  static const int64_t sketches[] = {0, 1};
  static const bool ok[] = {true, true};
  return sample_choice(s, sketches, ok, 2, 0) == 1;
}

typedef struct BlockInfo {
  const Block *block;
  int64_t volume; /* product of the iterator extents (-1: symbolic) */
  int n_spatial, n_reduce;
  bool writes_param;
} BlockInfo;

typedef struct Blocks {
  Arena *arena;
  const PrimFunc *f;
  VEC(BlockInfo) items;
} Blocks;

static bool is_param(const PrimFunc *f, const Buffer *b) {
  for (int i = 0; i < f->n_params; i++)
    if (f->params[i] == b) return true;
  return false;
}

static bool collect_block(Visitor *v, const Stmt *s) {
  Blocks *bs = v->user;
  if (s->kind != STMT_BLOCK_REALIZE || s->realize.block->n_iters == 0) return true;
  const Block *b = s->realize.block;
  BlockInfo info = {b, 1, 0, 0, false};
  for (int i = 0; i < b->n_iters; i++) {
    int64_t e;
    if (b->iters[i].type == ITER_REDUCE) info.n_reduce++;
    else info.n_spatial++;
    if (info.volume >= 0 && expr_as_int(b->iters[i].extent, &e)) info.volume *= e;
    else info.volume = -1;
  }
  for (int i = 0; i < b->n_writes; i++) info.writes_param |= is_param(bs->f, b->writes[i].buffer);
  VEC_PUSH(bs->arena, bs->items, info);
  return true;
}

static void collect_blocks(Arena *a, const PrimFunc *f, Blocks *out) {
  memset(out, 0, sizeof *out);
  out->arena = a;
  out->f = f;
  Visitor v = {collect_block, NULL, out};
  visit_stmt(&v, f->body);
}

/* A stage of a step loop (te_step_loop: an RNN's cell, run once per time
 * step) sits under loops its block does not bind: the step loop, which
 * its body uses directly and which runs in order, inside the independent
 * loops around it (bound to the block's leading iterators). Returns how
 * many of its loops l[0..n) belong to that nest (through the innermost
 * unbound loop of more than one iteration), 0 for a block of no step loop;
 * *bound: how many of the block's iterators those loops bind. */
static int step_nest_depth(Schedule *s, const char *name, const SchRV *l, int n, int *bound) {
  const Stmt *r = stmt_find_block(sch_func(s)->body, name);
  int depth = 0;
  *bound = 0;
  for (int i = 0; r && i < n; i++) {
    bool used = false;
    for (int k = 0; k < r->realize.n && !used; k++) used = expr_uses_var(r->realize.iter_values[k], sch_loop_var(s, l[i]));
    if (!used && topi_loop_extent(s, l[i]) > 1) depth = i + 1;
  }
  for (int k = 0; r && k < r->realize.n; k++)
    for (int i = 0; i < depth; i++)
      if (expr_uses_var(r->realize.iter_values[k], sch_loop_var(s, l[i]))) {
        ++*bound;
        break;
      }
  return depth;
}

static int block_step_depth(Schedule *s, const char *name) {
  SchRV b = sch_get_block(s, name), l[16];
  int n = b >= 0 ? sch_get_loops(s, b, l, 16) : 0, bound;
  return n >= 1 && n <= 16 ? step_nest_depth(s, name, l, n, &bound) : 0;
}

/* The step loops' nests: the outermost independent loop of more than one
 * iteration around a step loop (an RNN's directions) runs in parallel, so
 * each thread runs whole sequences and the steps need no synchronization.
 * Returns whether the block's nest is parallel (its own loops then stay
 * serial: a parallel loop cannot nest in another). */
static bool parallel_step_nest(Schedule *s, const char *name, int num_threads) {
  SchRV b = sch_get_block(s, name), l[16];
  int n = b >= 0 ? sch_get_loops(s, b, l, 16) : 0, bound;
  int depth = n >= 1 && n <= 16 ? step_nest_depth(s, name, l, n, &bound) : 0;
  for (int i = 0; i < depth; i++) {
    const Stmt *loop = stmt_find_loop(sch_func(s)->body, sch_loop_var(s, l[i]));
    if (loop && loop->loop.kind == FOR_PARALLEL) return true;
  }
  for (int i = 0; num_threads > 1 && i < depth - 1; i++)
    if (topi_loop_extent(s, l[i]) > 1) return sch_parallel(s, l[i]) == LOOM_OK;
  return false;
}

/* Step 1: inline until nothing more inlines (an inlined stage can make its
 * producer inlinable next). */
static bool has_call_cb(Visitor *v, const Expr *e) {
  if (e->kind == EXPR_CALL) *(bool *)v->user = true;
  return true;
}

/* A stage whose body calls a math function (exp, erf...) and that more
 * than one block reads: inlining would compute the function once per
 * consumer (softmax's exp feeds both the sum and the division). */
static bool costly_to_duplicate(const Blocks *bs, const Block *b) {
  bool calls = false;
  Visitor v = {NULL, has_call_cb, &calls};
  visit_stmt(&v, b->body);
  if (!calls || b->n_writes != 1) return false;
  int readers = 0;
  for (int i = 0; i < bs->items.n; i++) {
    const Block *o = bs->items.items[i].block;
    for (int r = 0; r < o->n_reads && o != b; r++)
      if (o->reads[r].buffer == b->writes[0].buffer) {
        readers++;
        break;
      }
  }
  return readers > 1;
}

/* Does some other block load b's buffer at two or more different indices?
 * Inlined, b would be computed once per load; a chain of such stages (one
 * Gaussian-elimination step per column, each reading the previous matrix
 * at several rows) would grow exponentially. */
typedef struct LoadSites {
  const Buffer *buf;
  const Expr *first;
  bool several;
} LoadSites;

static bool load_site_cb(Visitor *v, const Expr *e) {
  LoadSites *ls = v->user;
  if (e->kind != EXPR_LOAD || e->load.buffer != ls->buf || ls->several) return true;
  if (!ls->first) ls->first = e;
  else if (!expr_equal(ls->first, e)) ls->several = true;
  return true;
}

static bool read_at_several_indices(const Blocks *bs, const Block *b) {
  if (b->n_writes != 1) return false;
  for (int i = 0; i < bs->items.n; i++) {
    const Block *o = bs->items.items[i].block;
    if (o == b) continue;
    LoadSites ls = {b->writes[0].buffer, NULL, false};
    Visitor v = {NULL, load_site_cb, &ls};
    visit_stmt(&v, o->body);
    if (ls.several) return true;
  }
  return false;
}

static void inline_injective(Schedule *s, Arena *a) {
  for (bool changed = true; changed;) {
    changed = false;
    Blocks bs;
    collect_blocks(a, sch_func(s), &bs);
    for (int i = 0; i < bs.items.n; i++) {
      const BlockInfo *bi = &bs.items.items[i];
      /* A block with a schedule rule of its own stays: a padding stage
       * (inlined, it puts a select in the hot loop) or a Winograd input
       * transform (inlined, the product would recompute it for every
       * output-channel block). */
      if (bi->writes_param || bi->n_reduce > 0 || bi->block->schedule_rule) continue;
      /* A stage of a step loop keeps its buffer: one step's hidden state
       * is read by the next step's products as one contiguous row. */
      if (block_step_depth(s, bi->block->name) > 0) continue;
      if (costly_to_duplicate(&bs, bi->block) || read_at_several_indices(&bs, bi->block)) continue;
      SchRV b = sch_get_block(s, bi->block->name);
      if (b >= 0 && sch_compute_inline(s, b) == LOOM_OK) changed = true;
    }
  }
}

/* The one block reading `buf` other than `self`, or NULL. */
static const char *sole_consumer(const Blocks *bs, const Buffer *buf, const Block *self) {
  const char *found = NULL;
  for (int i = 0; i < bs->items.n; i++) {
    const Block *b = bs->items.items[i].block;
    if (b == self) continue;
    for (int r = 0; r < b->n_reads; r++)
      if (b->reads[r].buffer == buf) {
        if (found) return NULL;
        found = b->name;
        break;
      }
  }
  return found;
}

/* Does the last index of some input of block b use iterator v (so walking
 * v walks memory contiguously, give or take a stride)? */
static bool innermost_reads_use(const Block *b, const Expr *v) {
  for (int r = 0; r < b->n_reads; r++) {
    const BufferRegion *rg = &b->reads[r];
    int nd = rg->buffer->ndim;
    bool own = false; /* a reduction's accumulator, listed as read too */
    for (int w = 0; w < b->n_writes; w++) own = own || b->writes[w].buffer == rg->buffer;
    if (own) continue;
    if (nd > 0 && expr_uses_var(rg->min[nd - 1], v)) return true;
  }
  return false;
}

/* A reduction whose innermost loop reduces along memory (a row sum, max or
 * mean: softmax, layer norm) is a chain of dependent scalar operations, one
 * per element. Split by a vector width w and rfactor'd, it accumulates w
 * partial results in a vector (the tile compacts to w elements, which the
 * C code generator keeps in a register) and sums them once per row. */
static void vectorize_row_reduction(Schedule *s, const char *name, int lanes) {
  SchRV b = sch_get_block(s, name), l[16];
  int n = b >= 0 ? sch_get_loops(s, b, l, 16) : 0;
  const Stmt *r = stmt_find_block(sch_func(s)->body, name);
  if (n < 1 || n > 16 || !r) return;
  /* The block iterator the innermost loop walks, and the outermost loop that
   * carries a reduction (where the partial results' init goes). */
  const Block *blk = r->realize.block;
  int inner = -1, first = -1;
  for (int k = 0; k < blk->n_iters; k++) {
    const Expr *v = r->realize.iter_values[k];
    if (v == sch_loop_var(s, l[n - 1])) inner = k;
    for (int i = 0; i < n && blk->iters[k].type == ITER_REDUCE; i++)
      if (expr_uses_var(v, sch_loop_var(s, l[i])) && (first < 0 || i < first)) first = i;
  }
  if (inner < 0 || blk->iters[inner].type != ITER_REDUCE || !innermost_reads_use(blk, blk->iters[inner].var)) return;
  /* The partial results' width: a vector (the default: the widest that
   * divides the row, at least two per row), half or twice that, or none. */
  int64_t ext = topi_loop_extent(s, l[n - 1]), w = lanes;
  while (w > 4 && ext % w) w /= 2;
  if (ext < 2 * w || ext % w) return;
  const int64_t widths[] = {w, w / 2, 2 * w, 0};
  bool ok[] = {true, w / 2 >= 4 && ext % (w / 2) == 0, ext % (2 * w) == 0 && ext >= 4 * w, true};
  if (!(w = sample_choice(s, widths, ok, 4, 0))) return;
  SchRV k[2];
  if (sch_split(s, l[n - 1], (int64_t[]){-1, w}, 2, k)) return;
  SchRV rf = sch_rfactor(s, k[1]);
  if (rf < 0) return;
  SchRV init = sch_decompose_reduction(s, rf, first < n - 1 ? l[first] : k[0]);
  SchRV il[16], wl[16];
  int ni = init >= 0 ? sch_get_loops(s, init, il, 16) : 0, nw = sch_get_loops(s, b, wl, 16);
  if (ni < 1 || sch_vectorize(s, il[ni - 1]) || sch_vectorize(s, k[1]) || nw < 1 || sch_unroll(s, wl[nw - 1]))
    topi_schedule_note(s, "row reduction: partial results not vectorized");
}

/* A copy that transposes (its innermost loop walks no input contiguously)
 * may be tiled in 2-D so the reads of a tile share cache lines: the last
 * two spatial loops split by t and reordered (io, jo, ii, ji). t = 0 (the
 * default) leaves them. Returns the loops that replace l[ns-2], l[ns-1]
 * (outer ones first) through out, and how many there are. */
static int tile_transpose(Schedule *s, const SchRV *l, int ns, int lanes, SchRV *out) {
  int64_t e0 = topi_loop_extent(s, l[ns - 2]), e1 = topi_loop_extent(s, l[ns - 1]);
  const int64_t tiles[] = {0, lanes, 2 * lanes, 4 * lanes};
  bool ok[4] = {true};
  for (int i = 1; i < 4; i++) ok[i] = e0 > tiles[i] && e1 > tiles[i] && e0 % tiles[i] == 0 && e1 % tiles[i] == 0;
  int64_t t = sample_choice(s, tiles, ok, 4, 0);
  SchRV i2[2], j2[2];
  out[0] = l[ns - 2], out[1] = l[ns - 1];
  if (!t || sch_split(s, l[ns - 2], (int64_t[]){-1, t}, 2, i2) || sch_split(s, l[ns - 1], (int64_t[]){-1, t}, 2, j2))
    return 2;
  SchRV order[4] = {i2[0], j2[0], i2[1], j2[1]};
  if (sch_reorder(s, order, 4)) return topi_schedule_note(s, "transpose tile"), 2;
  memcpy(out, order, sizeof order);
  return 4;
}

/* Body C[...] = C[...] + X[...] * Y[...] (a sum of products of two other
 * reads): what the matmul schedule's tiling assumes, unlike a row max. */
static bool is_multiply_accumulate(const Block *b) {
  const Stmt *st = b->body;
  if (st->kind != STMT_STORE || st->store.value->kind != EXPR_ADD) return false;
  const Expr *v = st->store.value, *prod = v->bin.b;
  if (v->bin.a->kind != EXPR_LOAD || v->bin.a->load.buffer != st->store.buffer) {
    prod = v->bin.a;
    if (v->bin.b->kind != EXPR_LOAD || v->bin.b->load.buffer != st->store.buffer) return false;
  }
  /* x * x (a sum of squares: layer norm's variance) is a row reduction, not a product of two matrices. */
  return prod->kind == EXPR_MUL && prod->bin.a->kind == EXPR_LOAD && prod->bin.b->kind == EXPR_LOAD &&
         !expr_equal(prod->bin.a, prod->bin.b);
}

/* A product inside a step loop (an RNN's H R^T: one row times a matrix,
 * every step, each step waiting for the previous one) whose innermost
 * spatial loop walks the weight contiguously. The generic schedule runs it
 * as `for k { for g in vectors: acc[g] += h[k] * w[k, g] }` with the whole
 * row of accumulators (4 x hidden floats) in memory: a load and a store
 * per FMA. Here it gets a register tile: the columns split into panels of
 * topi_gemv_accumulators vectors (FMA units x latency, what keeps the FMA
 * units busy), `for panel { acc[0..v) = 0; for k { acc[t] += h[k] *
 * w[k, panel, t] }; store }`, the accumulators in vector registers
 * (cache_write, its tile unrolled). l[0..n): the block's own loops.
 * Returns whether it applied (else the program is unchanged enough for
 * the generic schedule: every step checks before it transforms). */
static bool schedule_step_gemv(Schedule *s, const BlockInfo *bi, const Target *target, const SchRV *l, int n, int ns) {
  if (bi->n_reduce != 1 || ns < 1 || n != ns + 1 || !is_multiply_accumulate(bi->block)) return false;
  const Expr *last = bi->block->iters[bi->n_spatial - 1].var;
  if (!innermost_reads_use(bi->block, last)) return false;
  int lanes = target_lanes(target, DT_F32);
  int64_t e = topi_loop_extent(s, l[ns - 1]);
  if (lanes < 1 || e < lanes || e % lanes) return false;
  int64_t vecs = topi_gemv_accumulators(target);
  while (vecs > 1 && (e / lanes) % vecs) vecs--;
  SchRV b = sch_get_block(s, bi->block->name), j[3];
  if (b < 0 || sch_split(s, l[ns - 1], (int64_t[]){-1, vecs, lanes}, 3, j)) return false;
  SchRV order[4] = {j[0], l[ns], j[1], j[2]};
  if (sch_reorder(s, order, 4)) return topi_schedule_note(s, "step gemv: reorder"), true;
  /* The init before the panel loop (one pass over the row), so the
   * panel's loads, updates and stores are its accumulators' only accesses
   * (cache_inplace; cache_write would put its copy-out after the whole
   * step nest, where the cell's stages of the same step read too late). */
  SchRV init = sch_decompose_reduction(s, b, j[0]), tile[2];
  if (init < 0 || sch_cache_inplace(s, b, j[0], SCOPE_LOCAL, tile)) return topi_schedule_note(s, "step gemv: cache"), true;
  if (sch_unroll(s, j[1]) || sch_vectorize(s, j[2])) return topi_schedule_note(s, "step gemv: tile"), true;
  SchRV il[16];
  int ni = sch_get_loops(s, init, il, 16);
  if (ni < 1 || sch_vectorize(s, il[ni - 1])) topi_schedule_note(s, "step gemv: init");
  for (int t = 0; t < 2; t++) {
    SchRV tl[16];
    int nt = sch_get_loops(s, tile[t], tl, 16);
    if (nt < 1 || sch_vectorize(s, tl[nt - 1])) return topi_schedule_note(s, "step gemv: load and store"), true;
    topi_unroll_tile_loops(s, tile[t], j[0]);
  }
  return true;
}

/* Step 3: loops are kept as they are (fusing them all would put a
 * floordiv/floormod per dimension into every index); the innermost spatial
 * loop is split into vector chunks and vectorized, the outermost loop with
 * more than one iteration runs in parallel (fused with the next one or two
 * where the search says so). A reduction whose innermost spatial loop walks
 * its input contiguously (pooling) gets its reduction loops moved outside
 * that loop so it can be vectorized. */
static void schedule_generic(Schedule *s, const BlockInfo *bi, const Target *target, int num_threads) {
  SchRV b = sch_get_block(s, bi->block->name);
  if (b < 0) return;
  SchRV all[16];
  int n = sch_get_loops(s, b, all, 16);
  if (n < 1 || n > 16) return;
  /* A stage of a step loop: its own loops are those inside the step loop,
   * and the iterators bound outside them come first. */
  int bound, depth = step_nest_depth(s, bi->block->name, all, n, &bound);
  const SchRV *l = all + depth;
  n -= depth;
  if (n < 1) return;
  if (n != bi->block->n_iters - bound) { /* moved by compute_at: its loops no longer follow its iterators */
    if (bi->n_reduce > 0) vectorize_row_reduction(s, bi->block->name, target_lanes(target, DT_F32));
    return;
  }
  if (depth > 0 && schedule_step_gemv(s, bi, target, l, n, bi->n_spatial - bound)) return;
  if (bi->n_reduce > 0 && sample_tiled_sketch(s, bi->block->name)) {
    if (topi_schedule_multi_level_tiling(s, bi->block->name, NULL, target, num_threads))
      topi_schedule_note(s, "multi-level tiling");
    return;
  }
  int lanes = target_lanes(target, DT_F32);
  int ns = bi->n_spatial - bound;               /* the block's own spatial loops */
  const Expr *last = bi->n_spatial > 0 ? bi->block->iters[bi->n_spatial - 1].var : NULL; /* innermost spatial */
  /* outer[0..n_outer): the spatial loops outside the vector loop, outermost first. */
  SchRV outer[18], inner = ns > 0 ? l[ns - 1] : -1;
  int n_outer = ns > 0 ? ns - 1 : 0;
  memcpy(outer, l, sizeof(SchRV) * (size_t)n_outer);
  if (bi->n_reduce > 0 && ns > 0 && innermost_reads_use(bi->block, last)) {
    SchRV order[16];
    int k = 0;
    for (int i = 0; i < ns - 1; i++) order[k++] = l[i];
    for (int i = ns; i < n; i++) order[k++] = l[i];
    order[k++] = inner;
    if (sch_reorder(s, order, k)) topi_schedule_note(s, "reorder reduction outside the vector loop");
  } else if (bi->n_reduce > 0) {
    inner = -1; /* innermost loops reduce: vectorized, if at all, by partial results */
    if (ns == 1) outer[n_outer++] = l[0];
    vectorize_row_reduction(s, bi->block->name, lanes);
  } else if (ns >= 2 && !innermost_reads_use(bi->block, last)) {
    SchRV t[4];
    int nt = tile_transpose(s, l, ns, lanes, t);
    memcpy(outer + ns - 2, t, sizeof(SchRV) * (size_t)(nt - 1));
    n_outer = ns - 2 + nt - 1;
    inner = t[nt - 1];
  }
  int64_t e = inner >= 0 ? topi_loop_extent(s, inner) : -1;
  if (e >= lanes) { /* the vector chunk: one vector (the default) or two or four */
    const int64_t widths[] = {lanes, 2 * lanes, 4 * lanes};
    bool ok[] = {true, e >= 2 * lanes, e >= 4 * lanes};
    SchRV parts[2];
    if (sch_split(s, inner, (int64_t[]){-1, sample_choice(s, widths, ok, 3, 0)}, 2, parts) == 0) {
      if (sch_vectorize(s, parts[1])) topi_schedule_note(s, "vectorize");
      inner = parts[0];
    }
  }
  if (n_outer == 0 && inner >= 0) outer[n_outer++] = inner;
  if (num_threads <= 1) return;
  int first = 0;
  while (first < n_outer && topi_loop_extent(s, outer[first]) <= 1) first++;
  if (first == n_outer) return;
  /* How many loops the parallel loop fuses: one (the default), two or three. */
  const int64_t fused[] = {1, 2, 3};
  bool ok[] = {true, n_outer - first >= 2, n_outer - first >= 3};
  int k = (int)sample_choice(s, fused, ok, 3, 0);
  SchRV p = k > 1 ? sch_fuse(s, outer + first, k) : outer[first];
  if (p < 0) p = outer[first], topi_schedule_note(s, "fuse the parallel loops");
  if (sch_parallel(s, p)) topi_schedule_note(s, "parallel");
}

/* A chain of row-wise stages with one output (softmax: max, exp, sum and
 * divide along the last axis) runs stage by stage over the whole tensor,
 * each stage a pass through memory (BERT's attention scores: 768 KiB a
 * stage, beyond L2 with the input and output). Computed at the output's
 * loop over its second-to-last axis, every stage runs per row, and a row's
 * intermediates stay in L1. Stages are moved consumers first, so each one's
 * consumers are already inside that loop. */
static void fuse_rows(Schedule *s, const Blocks *bs) {
  const BlockInfo *out = NULL;
  for (int i = 0; i < bs->items.n; i++) {
    const BlockInfo *bi = &bs->items.items[i];
    if (!bi->writes_param) continue;
    if (out) return; /* several outputs */
    out = bi;
  }
  if (!out || bs->items.n < 2 || out->n_reduce > 0 || out->n_spatial < 2) return;
  SchRV ob = sch_get_block(s, out->block->name), l[16];
  int ns = out->n_spatial;
  if (ob < 0 || sch_get_loops(s, ob, l, 16) != ns) return;
  /* Where: per row (the default), per block of rows (the loop outside the
   * row loop), or nowhere (stage by stage over the whole tensor). */
  const int64_t at[] = {ns - 2, ns - 3, -1};
  bool ok[] = {true, ns >= 3 && topi_loop_extent(s, l[ns - 3]) > 1, true};
  int64_t loop = sample_choice(s, at, ok, 3, 0);
  if (loop < 0) return;
  for (int i = bs->items.n - 1; i >= 0; i--) {
    const BlockInfo *bi = &bs->items.items[i];
    SchRV b = bi == out ? -1 : sch_get_block(s, bi->block->name);
    if (b >= 0 && sch_compute_at(s, b, l[loop]) != LOOM_OK) return;
  }
}

static loom_status schedule_winograd(Schedule *s, const char *gemm, const char *output, const Target *target,
                                     int num_threads) {
  return topi_schedule_conv2d_winograd_cpu(s, gemm, output, target, num_threads);
}

/* The anchor schedules, one row per rule name a compute definition gives
 * its block (te_set_schedule_rule): the block's default schedule, with the
 * block consuming its output folded in as the epilogue. `owns` names the
 * rule of the stages the schedule places itself (the generic schedule
 * leaves them alone once it succeeded). `mac` asks for the body the
 * schedule's tiling assumes, a multiply-accumulate of two loads (a matmul
 * of narrow floats reduces casts: it keeps the generic schedule). */
typedef loom_status (*AnchorSchedule)(Schedule *s, const char *block, const char *epilogue, const Target *target,
                                      int num_threads);
static const struct {
  const char *rule;
  AnchorSchedule schedule;
  const char *owns;
  bool mac;
  bool tiled; /* the generated sketch (multi-level tiling) is sampled beside the template */
  /* On a target with a local memory: staged through it by DMA
   * (topi_schedule_scratchpad) instead of the template. */
  bool scratchpad;
} kAnchorRules[] = {
    {"matmul", topi_schedule_matmul_cpu, NULL, true, true, true},
    {"conv2d_nchwc", topi_schedule_conv2d_nchwc_cpu, "pad", false, true, true},
    {"conv2d_winograd", schedule_winograd, "conv2d_winograd_transform", false, false, false},
    {"depthwise_conv2d_nchwc", topi_schedule_depthwise_conv2d_nchwc_cpu, "pad", false, false, true},
    {"pool2d", topi_schedule_pool2d_cpu, "pad", false, false, true},
};

static int anchor_rule(const Block *b) {
  for (size_t i = 0; b->schedule_rule && i < sizeof kAnchorRules / sizeof kAnchorRules[0]; i++)
    if (!strcmp(b->schedule_rule, kAnchorRules[i].rule))
      return kAnchorRules[i].mac && !is_multiply_accumulate(b) ? -1 : (int)i;
  return -1;
}

/* The anchor: the largest block with an anchor rule (NULL: none). */
static const BlockInfo *find_anchor(const Blocks *bs, int *rule) {
  const BlockInfo *anchor = NULL;
  *rule = -1;
  for (int i = 0; i < bs->items.n; i++) {
    const BlockInfo *bi = &bs->items.items[i];
    int r = anchor_rule(bi->block);
    if (r >= 0 && bi->volume > 0 && (!anchor || bi->volume > anchor->volume)) anchor = bi, *rule = r;
  }
  return anchor;
}

const char *compile_anchor_rule(const PrimFunc *f) {
  Arena *a = arena_new();
  Blocks bs;
  collect_blocks(a, f, &bs);
  int rule;
  const char *name = find_anchor(&bs, &rule) ? kAnchorRules[rule].rule : NULL;
  arena_free(a);
  return name;
}

/* A group whose work (tir_func_work) is below this stays serial. Chosen
 * from `loom run --profile` of MobileNetV2 at 2 threads: a dispatch to the
 * pool costs ~0.5 µs (a 1-µs flatten runs faster serially), while a
 * 63k-unit global pool already ran 2.5x slower serially and 1M-unit
 * depthwise convs ~1.7x slower; 4096 units is ~1 µs of serial work, where
 * halving the time cannot pay for the dispatch. */
#define SERIAL_WORK_LIMIT ((int64_t)1 << 12)

const PrimFunc *compile_schedule_group(const GroupFunc *gf, const Target *target, int num_threads,
                                       Schedule **keep) {
  *keep = sch_create(gf->func, DECIDE_DEFAULT, 0);
  compile_schedule_group_on(*keep, target, num_threads);
  return sch_func(*keep);
}

void compile_schedule_group_on(Schedule *s, const Target *target, int num_threads) {
  int64_t work = tir_func_work(sch_func(s));
  if (work >= 0 && work < SERIAL_WORK_LIMIT) num_threads = 1;
  Arena *a = sch_arena(s);
  inline_injective(s, a);

  Blocks bs;
  collect_blocks(a, sch_func(s), &bs);
  int rule;
  const BlockInfo *anchor = find_anchor(&bs, &rule);

  const char *done_epilogue = NULL, *owned = NULL;
  if (anchor && target->local_mem_bytes > 0 && kAnchorRules[rule].scratchpad) {
    /* A scratchpad target: the kernel is marked whether or not the staging
     * succeeds, so lowering's verifier reports a kernel that computes from
     * global memory (a tiling that cannot fit) as an error naming it. */
    if (topi_schedule_scratchpad(s, anchor->block->name, target) != LOOM_OK) {
      topi_schedule_note(s, "scratchpad");
      anchor = NULL;
    }
    sch_set_local_mem(s, target->local_mem_bytes, target->dma_double_buffer);
  } else if (anchor && anchor->block->n_writes == 1) {
    const char *epi = sole_consumer(&bs, anchor->block->writes[0].buffer, anchor->block);
    for (int i = 0; epi && i < bs.items.n; i++)
      if (!strcmp(bs.items.items[i].block->name, epi) && bs.items.items[i].n_reduce > 0) epi = NULL;
    bool tiled = kAnchorRules[rule].tiled && sample_tiled_sketch(s, anchor->block->name);
    loom_status st = tiled ? topi_schedule_multi_level_tiling(s, anchor->block->name, epi, target, num_threads)
                           : kAnchorRules[rule].schedule(s, anchor->block->name, epi, target, num_threads);
    if (st == LOOM_OK) {
      if (epi && sch_get_block(s, epi) < 0) done_epilogue = epi;
      owned = tiled ? NULL : kAnchorRules[rule].owns;
    } else { /* refused (a 2-D product has no row loop to tile): the generic schedule takes it */
      topi_schedule_note(s, tiled ? "multi-level tiling" : kAnchorRules[rule].rule);
      anchor = NULL;
    }
  } else {
    anchor = NULL;
    fuse_rows(s, &bs);
  }
  /* Everything else, as collected before the anchor's schedule. */
  for (int i = 0; i < bs.items.n; i++) {
    const BlockInfo *bi = &bs.items.items[i];
    if (bi == anchor) continue;
    if (done_epilogue && !strcmp(bi->block->name, done_epilogue)) continue;
    if (owned && bi->block->schedule_rule && !strcmp(bi->block->schedule_rule, owned)) continue;
    bool nest_parallel = parallel_step_nest(s, bi->block->name, num_threads);
    schedule_generic(s, bi, target, nest_parallel ? 1 : num_threads);
  }
}
