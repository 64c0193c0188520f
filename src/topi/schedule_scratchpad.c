/* Scratchpad schedules: conv2d and matmul on a target with a local memory
 * (swTVM's Sunway LDM: a small on-chip memory the core computes from,
 * filled and drained by DMA; docs/schedule.md "Scratchpad targets").
 *
 * Every iterator of the block is split once by a sampled perfect tile,
 * and the loops are ordered
 *
 *     S0 (spatial tiles) . R0 (reduction tiles) | R1 . S1 (inside a tile)
 *
 * Each input's tile is staged into a `local` buffer (cache_read, computed
 * at the innermost R0 loop), the output tile accumulates in a `local`
 * buffer (cache_write, written out at the innermost S0 loop; its init
 * before the R0 loops), so the compute loops R1 . S1 touch local buffers
 * only. Compaction shrinks each cache to its tile; tir_inject_dma turns the
 * copy loops into DMA calls; tir_verify_scratchpad checks the result.
 *
 * Sizes come from the declared local memory only (Target.local_mem_bytes,
 * never this host's caches): the tile of iterator k is t_k, a divisor of
 * its extent (no partial tiles, so no guards in the copies), and an
 * access's tile spans prod_d (1 + sum_k |c_dk| (t_k - 1)) elements for
 * its affine index sum_k c_dk i_k along dimension d. The tiles are grown
 * greedily, one iterator to its next divisor at a time, while the inputs'
 * tiles (twice each with dma=double) and the output tile fit, taking the
 * step that lowers the estimated traffic the most: the bytes the input
 * tiles move over all tiles plus a fixed cost per DMA call (ties go to the
 * innermost iterator, whose copies are contiguous). Each tile is then the
 * max_innermost of a sampling point, so a tuner's smaller choices fit too. */
#include "topi/topi_schedule.h"

#include <stdlib.h>
#include <string.h>

enum { SP_MAX_ITERS = 12, SP_MAX_DIMS = 8, SP_MAX_INPUTS = 4 };

/* What one DMA call costs beyond its bytes, in bytes of traffic: the
 * setup of a transfer, so that of two tilings moving the same data the one
 * with fewer, longer copies wins. */
#define DMA_CALL_COST_BYTES 64.0

/* An access of the block (an input read or the output write): per buffer
 * dimension the coefficient of each iterator in its index. */
typedef struct SpAccess {
  int buffer_ndim;
  int64_t coef[SP_MAX_DIMS][SP_MAX_ITERS];
  int64_t elem_bytes;
} SpAccess;

typedef struct SpProblem {
  int n;                         /* iterators */
  int64_t extent[SP_MAX_ITERS];
  bool reduce[SP_MAX_ITERS];
  bool pinned[SP_MAX_ITERS];     /* tiles of one (read through floordiv/floormod) */
  SpAccess in[SP_MAX_INPUTS], out;
  int n_in;
  int in_read[SP_MAX_INPUTS];    /* the block's read index of each input */
  int64_t copies;                /* buffers per input tile: 2 double-buffered */
  int64_t budget;                /* bytes */
} SpProblem;

/* e as sum_k coef[k] * vars[k] + constant, scaled by `scale`; false when it
 * is not affine in vars with constant coefficients. A floordiv or floormod
 * by a constant (a grouped conv's group, floordiv(ko, kg) * cg) pins the
 * iterators it reads to tiles of one, where it is a constant of the tile. */
static bool affine(const Expr *e, const Expr *const *vars, int n, int64_t scale, int64_t *coef, bool *pinned) {
  int64_t c;
  switch (e->kind) {
    case EXPR_INT: return true;
    case EXPR_VAR:
      for (int k = 0; k < n; k++)
        if (vars[k] == e) {
          coef[k] += scale;
          return true;
        }
      return false;
    case EXPR_ADD:
      return affine(e->bin.a, vars, n, scale, coef, pinned) && affine(e->bin.b, vars, n, scale, coef, pinned);
    case EXPR_SUB:
      return affine(e->bin.a, vars, n, scale, coef, pinned) && affine(e->bin.b, vars, n, -scale, coef, pinned);
    case EXPR_MUL:
      if (expr_as_int(e->bin.b, &c)) return affine(e->bin.a, vars, n, scale * c, coef, pinned);
      if (expr_as_int(e->bin.a, &c)) return affine(e->bin.b, vars, n, scale * c, coef, pinned);
      return false;
    case EXPR_FLOORDIV:
    case EXPR_FLOORMOD:
      if (!expr_as_int(e->bin.b, &c) || c < 1) return false;
      for (int k = 0; k < n; k++)
        if (expr_uses_var(e->bin.a, vars[k])) pinned[k] = true;
      return true;
    default: return false;
  }
}

static bool access_of(const Block *b, const BufferRegion *r, SpAccess *out, bool *pinned) {
  const Buffer *buf = r->buffer;
  if (buf->ndim > SP_MAX_DIMS || dtype_bytes(dtype_element(buf->dtype)) < 1) return false;
  memset(out, 0, sizeof *out);
  out->buffer_ndim = buf->ndim;
  out->elem_bytes = dtype_bytes(dtype_element(buf->dtype));
  const Expr *vars[SP_MAX_ITERS];
  for (int k = 0; k < b->n_iters; k++) vars[k] = b->iters[k].var;
  for (int d = 0; d < buf->ndim; d++)
    if (!expr_is_int(r->extent[d], 1) || !affine(r->min[d], vars, b->n_iters, 1, out->coef[d], pinned)) return false;
  return true;
}

/* Elements of an access's tile for tiles t. */
static int64_t tile_elems(const SpAccess *a, int n, const int64_t *t) {
  int64_t e = 1;
  for (int d = 0; d < a->buffer_ndim; d++) {
    int64_t span = 1;
    for (int k = 0; k < n; k++) span += llabs(a->coef[d][k]) * (t[k] - 1);
    e *= span;
  }
  return e;
}

static int64_t local_bytes(const SpProblem *p, const int64_t *t) {
  int64_t bytes = tile_elems(&p->out, p->n, t) * p->out.elem_bytes;
  for (int i = 0; i < p->n_in; i++) bytes += p->copies * tile_elems(&p->in[i], p->n, t) * p->in[i].elem_bytes;
  return bytes;
}

/* Bytes the input tiles move over all tiles, plus the calls' cost (one
 * call per tile and input, a lower bound: strided tiles take a call per
 * row block). The output moves once whatever the tiling. */
static double traffic(const SpProblem *p, const int64_t *t) {
  double tiles = 1;
  for (int k = 0; k < p->n; k++) tiles *= (double)(p->extent[k] / t[k]);
  double bytes = 0;
  for (int i = 0; i < p->n_in; i++)
    bytes += (double)(tile_elems(&p->in[i], p->n, t) * p->in[i].elem_bytes) + DMA_CALL_COST_BYTES;
  return tiles * bytes;
}

static int64_t next_divisor(int64_t extent, int64_t t) {
  for (int64_t d = t + 1; d <= extent; d++)
    if (extent % d == 0) return d;
  return 0;
}

/* The greedy tiling (see the top of the file); false when not even tiles of
 * one element fit. */
static bool choose_tiles(const SpProblem *p, int64_t *t) {
  for (int k = 0; k < p->n; k++) t[k] = 1;
  if (local_bytes(p, t) > p->budget) return false;
  for (;;) {
    double best = traffic(p, t);
    int pick = -1;
    int64_t pick_to = 0;
    for (int k = p->n - 1; k >= 0; k--) {
      int64_t to = p->pinned[k] ? 0 : next_divisor(p->extent[k], t[k]), was = t[k];
      if (!to) continue;
      t[k] = to;
      double cost = traffic(p, t);
      if (local_bytes(p, t) <= p->budget && cost < best) best = cost, pick = k, pick_to = to;
      t[k] = was;
    }
    if (pick < 0) return true;
    t[pick] = pick_to;
  }
}

/* The block's problem: loops binding its iterators one to one, constant
 * extents, affine point accesses, one output. */
static bool problem_of(Schedule *s, const char *block, const Target *target, SpProblem *p, SchRV *loops) {
  SchRV b = sch_get_block(s, block);
  const Stmt *r = stmt_find_block(sch_func(s)->body, block);
  if (b < 0 || !r) return false;
  const Block *blk = r->realize.block;
  int n = sch_get_loops(s, b, loops, SP_MAX_ITERS + 1);
  if (n != blk->n_iters || n < 1 || n > SP_MAX_ITERS || blk->n_writes != 1) return false;
  memset(p, 0, sizeof *p);
  p->n = n;
  for (int k = 0; k < n; k++) {
    if (r->realize.iter_values[k] != sch_loop_var(s, loops[k])) return false;
    p->extent[k] = topi_loop_extent(s, loops[k]);
    p->reduce[k] = blk->iters[k].type == ITER_REDUCE;
    if (p->extent[k] < 1) return false;
  }
  if (!access_of(blk, &blk->writes[0], &p->out, p->pinned)) return false;
  for (int i = 0; i < blk->n_reads; i++) {
    if (blk->reads[i].buffer == blk->writes[0].buffer) continue; /* the accumulator */
    for (int j = 0; j < p->n_in; j++)
      if (blk->reads[p->in_read[j]].buffer == blk->reads[i].buffer) return false; /* one cache per buffer */
    if (p->n_in == SP_MAX_INPUTS || !access_of(blk, &blk->reads[i], &p->in[p->n_in], p->pinned)) return false;
    p->in_read[p->n_in++] = i;
  }
  p->copies = target->dma_double_buffer ? 2 : 1;
  p->budget = target->local_mem_bytes;
  return p->n_in > 0;
}

/* The read index of `buf` in block `name` now (caching renames the others). */
static int read_index(Schedule *s, const char *name, const Buffer *buf) {
  const Stmt *r = stmt_find_block(sch_func(s)->body, name);
  for (int i = 0; r && i < r->realize.block->n_reads; i++)
    if (r->realize.block->reads[i].buffer == buf) return i;
  return -1;
}

loom_status topi_schedule_scratchpad(Schedule *s, const char *block, const Target *target) {
  if (target->local_mem_bytes <= 0) return LOOM_ERR_SCHEDULE;
  SpProblem p;
  SchRV loops[SP_MAX_ITERS + 1];
  if (!problem_of(s, block, target, &p, loops)) return LOOM_ERR_SCHEDULE;
  int64_t best[SP_MAX_ITERS];
  if (!choose_tiles(&p, best)) return LOOM_ERR_SCHEDULE;
  const Block *blk = stmt_find_block(sch_func(s)->body, block)->realize.block;
  const Buffer *inputs[SP_MAX_INPUTS];
  for (int i = 0; i < p.n_in; i++) inputs[i] = blk->reads[p.in_read[i]].buffer;

  /* Sampling points: each tile at most the chosen one (the default takes
   * it), which keeps every choice within the local memory. */
  SchRV outer[SP_MAX_ITERS], inner[SP_MAX_ITERS];
  for (int k = 0; k < p.n; k++) {
    int64_t f[2];
    SchRV parts[2];
    if (sch_sample_perfect_tile(s, loops[k], 2, best[k], f) || sch_split(s, loops[k], f, 2, parts))
      return LOOM_ERR_SCHEDULE;
    outer[k] = parts[0], inner[k] = parts[1];
  }
  SchRV order[2 * SP_MAX_ITERS];
  int m = 0, last_s0 = -1, first_r0 = -1, last_r0 = -1, last_s1 = -1;
  for (int k = 0; k < p.n; k++)
    if (!p.reduce[k]) order[m++] = outer[k], last_s0 = k;
  for (int k = 0; k < p.n; k++)
    if (p.reduce[k]) {
      order[m++] = outer[k], last_r0 = k;
      if (first_r0 < 0) first_r0 = k;
    }
  for (int k = 0; k < p.n; k++)
    if (p.reduce[k]) order[m++] = inner[k];
  for (int k = 0; k < p.n; k++)
    if (!p.reduce[k]) order[m++] = inner[k], last_s1 = k;
  if (last_s0 < 0 || first_r0 < 0 || sch_reorder(s, order, m)) return LOOM_ERR_SCHEDULE;

  SchRV b = sch_get_block(s, block);
  SchRV copy_out = sch_cache_write(s, b, 0, SCOPE_LOCAL);
  if (copy_out < 0 || sch_reverse_compute_at(s, copy_out, outer[last_s0])) return LOOM_ERR_SCHEDULE;
  if (sch_decompose_reduction(s, b, outer[first_r0]) < 0) return LOOM_ERR_SCHEDULE;
  for (int i = 0; i < p.n_in; i++) {
    int idx = read_index(s, block, inputs[i]);
    SchRV copy_in = idx < 0 ? -1 : sch_cache_read(s, b, idx, SCOPE_LOCAL);
    if (copy_in < 0 || sch_compute_at(s, copy_in, outer[last_r0])) return LOOM_ERR_SCHEDULE;
  }
  /* The compute's innermost spatial loop in vectors (local operands). */
  int64_t vec = topi_loop_extent(s, inner[last_s1]);
  if (vec >= 2 && vec <= 64 && sch_vectorize(s, inner[last_s1])) topi_schedule_note(s, "scratchpad: vectorize");
  return LOOM_OK;
}
