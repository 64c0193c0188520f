/* A random schedule generator: every primitive, at random, on every block.
 *
 * The phases run in the order a hand-written schedule usually takes: inline
 * injective stages, add caches (and maybe inline them again), transform loops, move blocks under other
 * blocks' loops, transform the moved loops again, reduction and storage
 * details, then loop annotations. Block names are re-read before each phase
 * and RVs re-fetched before each primitive, because every primitive can
 * rename, remove or add loops. All randomness goes through the schedule's
 * sampling instructions so the trace alone replays the schedule. */
#include "autotune/autotune.h"

#include "support/arena.h"

#include <string.h>

#define MAX_BLOCKS 64
#define MAX_LOOPS 16

typedef struct Gen {
  Schedule *s;
  RandomScheduleStats *stats;
  LoomError *err;
  loom_status fatal; /* first sampling failure or dirty refusal; stops the generator */
} Gen;

/* ---- decisions (all recorded in the trace) ---- */

/* Uniform in [0, n). */
static int pick(Gen *g, int n) {
  if (n <= 1 || g->fatal) return 0;
  int64_t cand[MAX_LOOPS * 2];
  if (n > (int)(sizeof cand / sizeof cand[0])) n = (int)(sizeof cand / sizeof cand[0]);
  for (int i = 0; i < n; i++) cand[i] = i;
  int64_t v = 0;
  if (sch_sample_categorical(g->s, cand, NULL, n, &v)) {
    g->fatal = err_set(g->err, LOOM_ERR_INTERNAL, "random schedule: sample_categorical failed: %s",
                       sch_error(g->s));
    return 0;
  }
  return (int)v;
}

static int64_t pick_of(Gen *g, const int64_t *values, int n) { return values[pick(g, n)]; }

/* True with probability percent/100. */
static bool chance(Gen *g, int percent) {
  if (g->fatal) return false;
  int64_t cand[2] = {0, 1}, v = 0;
  double probs[2] = {(100 - percent) / 100.0, percent / 100.0};
  if (sch_sample_categorical(g->s, cand, probs, 2, &v)) {
    g->fatal = err_set(g->err, LOOM_ERR_INTERNAL, "random schedule: sample_categorical failed: %s",
                       sch_error(g->s));
    return false;
  }
  return v == 1;
}

/* ---- refusal bookkeeping ---- */

typedef struct Snap {
  const PrimFunc *func;
  int trace_len;
} Snap;

static Snap snap(const Gen *g) { return (Snap){sch_func(g->s), trace_length(sch_trace(g->s))}; }

const char *random_schedule_prim_name(RsPrim p) {
  static const char *const names[] = {
#define X(e, name) name,
      RS_PRIMS(X)
#undef X
  };
  return p >= 0 && p < RS_PRIM_COUNT ? names[p] : "?";
}

/* Counts the attempt; a refusal must leave program and trace as they were. */
static bool done(Gen *g, Snap before, bool ok, RsPrim prim, const char *block) {
  const char *what = random_schedule_prim_name(prim);
  if (g->stats) g->stats->tried++;
  if (ok) {
    if (g->stats) g->stats->applied++, g->stats->applied_by[prim]++;
    return true;
  }
  if (g->stats) g->stats->refused++, g->stats->refused_by[prim]++;
  if (!g->fatal && (sch_func(g->s) != before.func || trace_length(sch_trace(g->s)) != before.trace_len))
    g->fatal = err_set(g->err, LOOM_ERR_INTERNAL,
                       "random schedule: %s of block \"%s\" refused (%s) but changed the %s", what,
                       block, sch_error(g->s), sch_func(g->s) != before.func ? "program" : "trace");
  return false;
}

/* ---- reading the current program ---- */

typedef struct BlockList {
  const Block *blocks[MAX_BLOCKS];
  int n;
  const Block *root;
} BlockList;

static bool collect_block(Visitor *v, const Stmt *s) {
  BlockList *l = v->user;
  if (s->kind == STMT_BLOCK_REALIZE && s->realize.block != l->root && l->n < MAX_BLOCKS)
    l->blocks[l->n++] = s->realize.block;
  return true;
}

/* The non-root blocks of the current program, in program order. */
static void list_blocks(const Gen *g, BlockList *out) {
  const PrimFunc *f = sch_func(g->s);
  out->n = 0;
  out->root = primfunc_root(f);
  Visitor v = {.visit_stmt = collect_block, .user = out};
  visit_stmt(&v, f->body);
}

static const Block *find_block(const Gen *g, const char *name) {
  BlockList l;
  list_blocks(g, &l);
  for (int i = 0; i < l.n; i++)
    if (strcmp(l.blocks[i]->name, name) == 0) return l.blocks[i];
  return NULL;
}

static bool block_reads(const Block *b, const Buffer *buf) {
  for (int i = 0; i < b->n_reads; i++)
    if (b->reads[i].buffer == buf) return true;
  return false;
}

static bool block_writes(const Block *b, const Buffer *buf) {
  for (int i = 0; i < b->n_writes; i++)
    if (b->writes[i].buffer == buf) return true;
  return false;
}

/* Blocks that read what `b` writes (consumers) or write what it reads. */
static int related_blocks(const Gen *g, const Block *b, bool consumers, const char **out) {
  BlockList l;
  list_blocks(g, &l);
  int n = 0;
  for (int i = 0; i < l.n; i++) {
    const Block *o = l.blocks[i];
    if (o == b) continue;
    bool rel = false;
    if (consumers)
      for (int w = 0; w < b->n_writes && !rel; w++) rel = block_reads(o, b->writes[w].buffer);
    else
      for (int r = 0; r < b->n_reads && !rel; r++) rel = block_writes(o, b->reads[r].buffer);
    if (rel) out[n++] = o->name;
  }
  return n;
}

/* Loops enclosing the named block, outermost first; -1 when it is gone. */
static int block_loops(Gen *g, const char *name, SchRV *block, SchRV *loops) {
  *block = sch_get_block(g->s, name);
  if (*block < 0) return -1;
  int n = sch_get_loops(g->s, *block, loops, MAX_LOOPS);
  return n > MAX_LOOPS ? MAX_LOOPS : n;
}

/* The constant extent of a loop, or -1. */
static int64_t loop_extent(const Gen *g, SchRV loop) {
  const Expr *var = sch_loop_var(g->s, loop);
  const Stmt *l = var ? stmt_find_loop(sch_func(g->s)->body, var) : NULL;
  if (!l || l->loop.extent->kind != EXPR_INT) return -1;
  return l->loop.extent->int_value;
}

/* ---- phases ---- */

static void phase_inline(Gen *g, int fwd_percent, int rev_percent) {
  BlockList l;
  list_blocks(g, &l);
  for (int i = 0; i < l.n && !g->fatal; i++) {
    const char *name = l.blocks[i]->name;
    bool fwd = chance(g, fwd_percent), rev = !fwd && chance(g, rev_percent);
    if (!fwd && !rev) continue;
    SchRV b = sch_get_block(g->s, name);
    if (b < 0) continue; /* removed by an earlier inline */
    Snap before = snap(g);
    if (fwd)
      done(g, before, sch_compute_inline(g->s, b) == LOOM_OK, RS_COMPUTE_INLINE, name);
    else
      done(g, before, sch_reverse_compute_inline(g->s, b) == LOOM_OK, RS_REVERSE_COMPUTE_INLINE, name);
  }
}

static void phase_cache(Gen *g) {
  BlockList l;
  list_blocks(g, &l);
  for (int i = 0; i < l.n && !g->fatal; i++) {
    const Block *blk = l.blocks[i];
    const char *name = blk->name;
    if (blk->n_reads > 0 && chance(g, 12)) {
      int idx = pick(g, blk->n_reads);
      SchRV b = sch_get_block(g->s, name);
      Snap before = snap(g);
      if (b >= 0) done(g, before, sch_cache_read(g->s, b, idx, SCOPE_LOCAL) >= 0, RS_CACHE_READ, name);
    }
    if (blk->n_writes > 0 && chance(g, 12)) {
      int idx = pick(g, blk->n_writes);
      SchRV b = sch_get_block(g->s, name);
      Snap before = snap(g);
      if (b >= 0) done(g, before, sch_cache_write(g->s, b, idx, SCOPE_LOCAL) >= 0, RS_CACHE_WRITE, name);
    }
  }
}

/* Splits loop i of the block: a sampled perfect tiling (2-3 levels), or now
 * and then an imperfect factor so the block realizes under a predicate. */
static void split_one(Gen *g, const char *name, int i) {
  SchRV b, loops[MAX_LOOPS], out[3];
  int n = block_loops(g, name, &b, loops);
  if (i >= n) return;
  int64_t ext = loop_extent(g, loops[i]);
  if (ext < 2) return;
  if (chance(g, 20)) {
    static const int64_t inner_choices[] = {2, 3, 4, 5, 7, 8};
    int64_t f = pick_of(g, inner_choices, 6);
    if (f >= ext) return;
    int64_t factors[2] = {pick(g, 2) ? -1 : (ext + f - 1) / f, f};
    Snap before = snap(g);
    done(g, before, sch_split(g->s, loops[i], factors, 2, out) == 0, RS_SPLIT_IMPERFECT, name);
    return;
  }
  static const int64_t max_inner[] = {0, 4, 8, 16};
  int levels = 2 + pick(g, 2);
  int64_t factors[3];
  int64_t lim = pick_of(g, max_inner, 4);
  if (g->fatal) return;
  Snap before = snap(g);
  if (!done(g, before, sch_sample_perfect_tile(g->s, loops[i], levels, lim, factors) == LOOM_OK,
            RS_SAMPLE_PERFECT_TILE, name))
    return;
  before = snap(g);
  done(g, before, sch_split(g->s, loops[i], factors, levels, out) == 0, RS_SPLIT, name);
}

static void reorder_some(Gen *g, const char *name) {
  SchRV b, loops[MAX_LOOPS];
  int n = block_loops(g, name, &b, loops);
  if (n < 2) return;
  int k = 2 + pick(g, (n < 4 ? n : 4) - 1); /* 2..min(n, 4) loops */
  /* k distinct positions in nest order, then a random permutation of them. */
  int pos[MAX_LOOPS], np = 0;
  for (int i = 0; i < n; i++) pos[np++] = i;
  for (int i = 0; i < k; i++) { /* partial Fisher-Yates: pos[0..k) random subset */
    int j = i + pick(g, np - i);
    int t = pos[i]; pos[i] = pos[j]; pos[j] = t;
  }
  SchRV order[MAX_LOOPS];
  for (int i = 0; i < k; i++) order[i] = loops[pos[i]];
  Snap before = snap(g);
  done(g, before, sch_reorder(g->s, order, k) == LOOM_OK, RS_REORDER, name);
}

static void fuse_some(Gen *g, const char *name) {
  SchRV b, loops[MAX_LOOPS];
  int n = block_loops(g, name, &b, loops);
  if (n < 2) return;
  int count = n >= 3 && chance(g, 30) ? 3 : 2;
  int first = pick(g, n - count + 1);
  Snap before = snap(g);
  done(g, before, sch_fuse(g->s, &loops[first], count) >= 0, RS_FUSE, name);
}

/* tile: 1-3 adjacent loops, each split in two by a sampled perfect tile,
 * outer pieces first (a composite primitive: it must refuse atomically). */
static void tile_some(Gen *g, const char *name) {
  SchRV b, loops[MAX_LOOPS], out[6];
  int n = block_loops(g, name, &b, loops);
  if (n < 1) return;
  int count = 1 + pick(g, n < 3 ? n : 3);
  int first = pick(g, n - count + 1);
  int64_t factors[6];
  for (int i = 0; i < count; i++) {
    Snap before = snap(g);
    if (!done(g, before, sch_sample_perfect_tile(g->s, loops[first + i], 2, 0, &factors[2 * i]) == LOOM_OK,
              RS_SAMPLE_PERFECT_TILE, name))
      return;
  }
  Snap before = snap(g);
  done(g, before, sch_tile(g->s, &loops[first], count, factors, 2, out) == LOOM_OK, RS_TILE, name);
}

static void phase_loops(Gen *g, int percent) {
  BlockList l;
  list_blocks(g, &l);
  const char *names[MAX_BLOCKS];
  int nb = l.n;
  for (int i = 0; i < nb; i++) names[i] = l.blocks[i]->name;
  for (int bi = 0; bi < nb && !g->fatal; bi++) {
    if (!chance(g, percent)) continue;
    SchRV b, loops[MAX_LOOPS];
    if (chance(g, 15)) tile_some(g, names[bi]);
    int n = block_loops(g, names[bi], &b, loops);
    /* Split from the innermost out so earlier positions stay valid. */
    for (int i = n - 1; i >= 0 && !g->fatal; i--)
      if (chance(g, 45)) split_one(g, names[bi], i);
    if (chance(g, 40)) reorder_some(g, names[bi]);
    if (chance(g, 20)) fuse_some(g, names[bi]);
  }
}

/* compute_at a producer under a consumer's loop, or reverse_compute_at a
 * consumer under a producer's loop; outputs first so chains can form. */
static void phase_compute_at(Gen *g) {
  BlockList l;
  list_blocks(g, &l);
  const char *names[MAX_BLOCKS];
  int nb = l.n;
  for (int i = 0; i < nb; i++) names[i] = l.blocks[i]->name;
  for (int bi = nb - 1; bi >= 0 && !g->fatal; bi--) {
    bool fwd = chance(g, 40), rev = !fwd && chance(g, 30);
    if (!fwd && !rev) continue;
    const Block *blk = find_block(g, names[bi]);
    if (!blk) continue;
    const char *other[MAX_BLOCKS];
    int no = related_blocks(g, blk, fwd, other);
    if (no == 0) continue;
    const char *target = other[pick(g, no)];
    SchRV tb, loops[MAX_LOOPS];
    int n = block_loops(g, target, &tb, loops);
    if (n < 1) continue;
    SchRV loop = loops[pick(g, n)];
    SchRV b = sch_get_block(g->s, names[bi]);
    if (b < 0) continue;
    Snap before = snap(g);
    if (fwd)
      done(g, before, sch_compute_at(g->s, b, loop) == LOOM_OK, RS_COMPUTE_AT, names[bi]);
    else
      done(g, before, sch_reverse_compute_at(g->s, b, loop) == LOOM_OK, RS_REVERSE_COMPUTE_AT, names[bi]);
  }
}

static void phase_storage(Gen *g) {
  BlockList l;
  list_blocks(g, &l);
  const char *names[MAX_BLOCKS];
  int nb = l.n;
  for (int i = 0; i < nb; i++) names[i] = l.blocks[i]->name;
  for (int bi = 0; bi < nb && !g->fatal; bi++) {
    const Block *blk = find_block(g, names[bi]);
    if (!blk) continue;
    if (blk->n_writes > 0 && chance(g, 15)) {
      static const int64_t factors[] = {4, 8, 16, 32}, offsets[] = {0, 1, 3};
      int w = pick(g, blk->n_writes);
      int ndim = blk->writes[w].buffer->ndim;
      int axis = pick(g, ndim > 0 ? ndim : 1);
      int factor = (int)pick_of(g, factors, 4), offset = (int)pick_of(g, offsets, 3);
      SchRV b = sch_get_block(g->s, names[bi]);
      Snap before = snap(g);
      if (b >= 0)
        done(g, before, sch_storage_align(g->s, b, w, axis, factor, offset) == LOOM_OK,
             RS_STORAGE_ALIGN, names[bi]);
    }
    if (blk->init && chance(g, 20)) {
      /* Mostly the innermost loop: a reduction's, in a nest rfactor accepts. */
      SchRV b, loops[MAX_LOOPS];
      int n = block_loops(g, names[bi], &b, loops);
      if (n < 1) continue;
      SchRV loop = loops[chance(g, 50) ? n - 1 : pick(g, n)];
      Snap before = snap(g);
      done(g, before, sch_rfactor(g->s, loop) >= 0, RS_RFACTOR, names[bi]);
      blk = find_block(g, names[bi]);
      if (!blk) continue;
    }
    if (blk->init && chance(g, 40)) {
      SchRV b, loops[MAX_LOOPS];
      int n = block_loops(g, names[bi], &b, loops);
      if (n < 1) continue;
      SchRV loop = loops[pick(g, n)];
      Snap before = snap(g);
      done(g, before, sch_decompose_reduction(g->s, b, loop) >= 0, RS_DECOMPOSE_REDUCTION, names[bi]);
    }
  }
}

static void phase_annotate(Gen *g) {
  BlockList l;
  list_blocks(g, &l);
  const char *names[MAX_BLOCKS];
  int nb = l.n;
  for (int i = 0; i < nb; i++) names[i] = l.blocks[i]->name;
  for (int bi = 0; bi < nb && !g->fatal; bi++) {
    SchRV b, loops[MAX_LOOPS];
    if (chance(g, 35)) {
      int n = block_loops(g, names[bi], &b, loops);
      Snap before = snap(g);
      if (n >= 1) done(g, before, sch_vectorize(g->s, loops[n - 1]) == LOOM_OK, RS_VECTORIZE, names[bi]);
    }
    if (chance(g, 30)) {
      int n = block_loops(g, names[bi], &b, loops);
      Snap before = snap(g);
      if (n >= 1) done(g, before, sch_parallel(g->s, loops[0]) == LOOM_OK, RS_PARALLEL, names[bi]);
    }
    if (chance(g, 25)) {
      int n = block_loops(g, names[bi], &b, loops);
      if (n < 1) continue;
      SchRV loop = loops[pick(g, n)];
      Snap before = snap(g);
      done(g, before, sch_unroll(g->s, loop) == LOOM_OK, RS_UNROLL, names[bi]);
    }
  }
}

loom_status random_schedule_apply(Schedule *s, RandomScheduleStats *stats, LoomError *err) {
  if (!s) return err_set(err, LOOM_ERR_INVALID_ARG, "random_schedule_apply: schedule is NULL");
  Gen g = {.s = s, .stats = stats, .err = err, .fatal = LOOM_OK};
  if (stats) memset(stats, 0, sizeof *stats);
  phase_inline(&g, 30, 20);
  if (!g.fatal) phase_cache(&g);
  /* Again: the copy blocks of caches are the typical inline candidates
   * (a cache_write's copy-out is elementwise over its single producer). */
  if (!g.fatal) phase_inline(&g, 10, 25);
  if (!g.fatal) phase_loops(&g, 60);
  if (!g.fatal) phase_compute_at(&g);
  if (!g.fatal) phase_loops(&g, 25);
  if (!g.fatal) phase_storage(&g);
  if (!g.fatal) phase_annotate(&g);
  return g.fatal;
}
