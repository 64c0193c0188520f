/* Schedules: say *how* to compute, by transforming a PrimFunc of blocks.
 *
 * A Schedule holds the current PrimFunc (immutable IR; each primitive builds
 * a new one in the schedule's arena) and a table of random variables (RVs):
 * block, loop and integer handles that instructions take and return. Every
 * primitive validates its preconditions and, when it refuses, returns an
 * error value (-1 for functions that return an RV, a loom_status otherwise)
 * and leaves the message in sch_error(). A refused primitive leaves the
 * program unchanged.
 *
 * Every successful call is appended to the schedule's Trace. Replaying a
 * trace on the same unscheduled PrimFunc gives the identical program
 * (DESIGN.md principle 3). Sampling instructions draw decisions from the
 * decision source: defaults, seeded random, or the decisions recorded in a
 * trace (so a schedule *function* re-run against a trace reproduces it, and a
 * tuner can mutate decisions).
 *
 * Handles: a block RV names a block (by name, stable across rebuilds); a loop
 * RV names a loop by its variable node (kept when loops are rebuilt). A loop
 * RV whose loop was removed (split, fuse) is stale: using it is an error. */
#ifndef LOOM_TIR_SCHEDULE_H
#define LOOM_TIR_SCHEDULE_H

#include "support/error.h"
#include "tir/stmt.h"

typedef struct Schedule Schedule;
typedef struct Trace Trace;
typedef int32_t SchRV;

typedef enum DecisionMode {
  DECIDE_DEFAULT, /* deterministic defaults (e.g. largest innermost tile <= max) */
  DECIDE_RANDOM,  /* uniform over valid decisions, from a seeded PRNG */
  DECIDE_TRACE,   /* the k-th sample takes the k-th sample decision of a trace */
  /* the k-th sample takes the trace's k-th decision when that is valid for
   * it, else a random one: a mutated trace replayed through the schedule
   * that made it (a changed decision may change which samples follow) */
  DECIDE_TRACE_OR_RANDOM,
} DecisionMode;

/* The schedule keeps `f` (read-only) as its starting point. */
Schedule *sch_create(const PrimFunc *f, DecisionMode mode, uint64_t seed);
/* DECIDE_TRACE mode: decisions come from `decisions` (sample instructions in
 * order). A sample beyond the recorded ones, or a decision that is not valid
 * for the loop at hand, is an error. */
Schedule *sch_create_from_decisions(const PrimFunc *f, const Trace *decisions);
/* DECIDE_TRACE_OR_RANDOM: the decisions of `decisions` where they fit,
 * random ones (from seed) where they do not; never an error. */
Schedule *sch_create_from_decisions_or_random(const PrimFunc *f, const Trace *decisions, uint64_t seed);
void sch_free(Schedule *s);

const PrimFunc *sch_func(const Schedule *s);     /* the current program */
const PrimFunc *sch_original(const Schedule *s); /* the program it started from */
const Trace *sch_trace(const Schedule *s);
const char *sch_error(const Schedule *s); /* message of the last refusal */
Arena *sch_arena(Schedule *s);
/* Marks the program as scheduled for a target with a local memory of
 * `bytes` (PrimFunc.local_mem_bytes): its lowering turns the copies into
 * and out of local buffers into DMA calls and checks that the local
 * buffers fit; double_buffer asks for two of each input tile
 * (PrimFunc.dma_double_buffer). Not a primitive: traces do not record it. */
void sch_set_local_mem(Schedule *s, int64_t bytes, bool double_buffer);

/* ---- handles ---- */
SchRV sch_get_block(Schedule *s, const char *name);
/* Loops enclosing the block, outermost first; returns the count (or -1).
 * At most `max` are written to out. */
int sch_get_loops(Schedule *s, SchRV block, SchRV *out, int max);
/* The loop variable or block name an RV refers to (NULL if stale/wrong kind). */
const Expr *sch_loop_var(const Schedule *s, SchRV loop);
const char *sch_block_name(const Schedule *s, SchRV block);

/* ---- loop transformations ---- */
/* Split a loop into n nested loops with the given extents (outer first). At
 * most one factor may be -1 (inferred). If the product exceeds the extent the
 * block realizes under a predicate (no out-of-range access). Writes n new
 * loop RVs to out. Returns 0 or -1. */
int sch_split(Schedule *s, SchRV loop, const int64_t *factors, int n, SchRV *out);
/* Fuse loops that are directly nested (outer first) into one. */
SchRV sch_fuse(Schedule *s, const SchRV *loops, int n);
/* Reorder loops that lie on one nest path into the given order. Refused if a
 * loop in between is not among them and is not single-child, or if the nest
 * is not perfectly nested between them. */
loom_status sch_reorder(Schedule *s, const SchRV *loops, int n);
/* Tile: split each loop by its factors (factors[i*depth .. i*depth+depth-1])
 * and reorder so all outer pieces come first. out gets n*depth loops in the
 * final order (outermost first). */
loom_status sch_tile(Schedule *s, const SchRV *loops, int n, const int64_t *factors, int depth,
                     SchRV *out);

/* ---- loop annotations ---- */
/* Vectorize / parallel require the loop to carry no reduction dependence
 * (only spatial block iterators bound to it) — parallel also refuses loops
 * inside another parallel loop. Unroll is always legal. */
loom_status sch_vectorize(Schedule *s, SchRV loop);
loom_status sch_parallel(Schedule *s, SchRV loop);
loom_status sch_unroll(Schedule *s, SchRV loop);
loom_status sch_bind(Schedule *s, SchRV loop, const char *thread_tag);

/* ---- block movement ---- */
/* Move a producer block under `loop` of its consumer(s), computing only the
 * region the consumers under that loop need. Refused when the block is an
 * output, when its consumers are not all under the loop, or the loop is not
 * an ancestor of a consumer. */
loom_status sch_compute_at(Schedule *s, SchRV block, SchRV loop);
/* Move a consumer block under `loop` of its producer(s). */
loom_status sch_reverse_compute_at(Schedule *s, SchRV block, SchRV loop);
/* Inline a producer block (single write, spatial only, body a plain store of
 * an expression of its iterators) into every consumer; the block and its
 * buffer disappear. */
loom_status sch_compute_inline(Schedule *s, SchRV block);
/* Inline a consumer (elementwise over its single producer's output) into the
 * producer: the producer writes the consumer's buffer directly. */
loom_status sch_reverse_compute_inline(Schedule *s, SchRV block);

/* ---- caching ---- */
/* A new block copying the `read_index`-th read region of `block` into a
 * buffer of `scope`, placed before the block's consumers-to-be; `block` then
 * reads the copy. Returns the new block. */
SchRV sch_cache_read(Schedule *s, SchRV block, int read_index, MemScope scope);
/* `block` writes into a new buffer of `scope`; a new block copies it to the
 * original. Returns the new (copy-out) block. */
SchRV sch_cache_write(Schedule *s, SchRV block, int write_index, MemScope scope);
/* For a block that updates a buffer in place (B[i] = B[i] + ..., a
 * reduction after decompose_reduction), stage the region it updates in one
 * iteration of `loop` (an ancestor of the block) through a new buffer of
 * `scope`: a copy-in block at the start of the loop's body, the block
 * redirected to the cache, a copy-out block at the end (a register tile
 * that accumulates across an outer reduction loop: load, update, store).
 * Refused when another block under the loop accesses the buffer. Writes
 * the copy-in and copy-out blocks to out[0], out[1]. */
loom_status sch_cache_inplace(Schedule *s, SchRV block, SchRV loop, MemScope scope, SchRV *out);
/* Pad dimension `axis` of the block's write buffer so its stride is a
 * multiple of factor plus offset (avoids cache-set conflicts). */
loom_status sch_storage_align(Schedule *s, SchRV block, int write_index, int axis, int factor,
                              int offset);

/* ---- reductions ---- */
/* Split a reduction block's init out into its own block placed before
 * `loop` (which must be an ancestor of the block, above every reduction
 * loop). Returns the init block. */
SchRV sch_decompose_reduction(Schedule *s, SchRV block, SchRV loop);
/* Make reduction loop `loop` (of exactly one block, out = out op rhs) a
 * spatial axis of a partial-result buffer: a new block "<block>_rf"
 * computes the partial results over the other reduction loops, and the
 * original block, after them, reduces the partial results over a new loop
 * (rfactor.c has the conditions). Returns the "_rf" block. */
SchRV sch_rfactor(Schedule *s, SchRV loop);

/* ---- sampling (decisions recorded in the trace) ---- */
/* n factors whose product equals the loop's constant extent, innermost at
 * most max_innermost (0 = no limit). Writes n values to out. */
loom_status sch_sample_perfect_tile(Schedule *s, SchRV loop, int n, int64_t max_innermost,
                                    int64_t *out);
/* One of candidates[0..n) (probs may be NULL = uniform). */
loom_status sch_sample_categorical(Schedule *s, const int64_t *candidates, const double *probs,
                                   int n, int64_t *out);

/* ---- traces ---- */
/* Text form, one instruction per line, e.g.
 *   b0 = get_block("C")
 *   l1, l2, l3 = get_loops(b0)
 *   sample_perfect_tile(l1, n=2, max_innermost=16) -> [32, 4]
 *   l4, l5 = split(l1, [32, 4])
 * Caller frees the string. */
char *trace_to_text(const Trace *t);
Trace *trace_parse(Arena *a, const char *text, LoomError *err);
int trace_length(const Trace *t);
/* Re-executes every instruction of t on s (normally fresh from the same
 * PrimFunc); sampling instructions return their recorded decisions. On an
 * error s is left as it was before the call. */
loom_status trace_apply(const Trace *t, Schedule *s);

/* ---- searching over decisions (trace_mutate.c) ---- */
/* Sample instructions (sample_categorical, sample_perfect_tile) in t. */
int trace_num_samples(const Trace *t);
/* A copy of t with the decision of one sample, picked at random from
 * *rng's stream (any 64-bit state, advanced), changed to another valid
 * one: another candidate of nonzero probability, or another factorization
 * of the loop's extent with the same limit on the innermost factor. NULL
 * when no sample has another choice. The copy shares t's instructions, so
 * t must outlive it. Replay it with sch_create_from_decisions_or_random. */
Trace *trace_mutate(Arena *a, const Trace *t, uint64_t *rng);

#endif
