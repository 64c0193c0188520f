/* Internals shared by the schedule primitive files: the Schedule struct, the
 * RV table, trace recording and lookups. Not a public header. */
#ifndef LOOM_TIR_SCHEDULE_INTERNAL_H
#define LOOM_TIR_SCHEDULE_INTERNAL_H

#include "tir/schedule/schedule.h"

typedef enum RVKind { RV_BLOCK, RV_LOOP } RVKind;

typedef struct RVEntry {
  RVKind kind;
  const char *block_name; /* RV_BLOCK */
  const Expr *loop_var;   /* RV_LOOP */
} RVEntry;

#define SCH_INSTS(X)                      \
  X(INST_GET_BLOCK, "get_block")          \
  X(INST_GET_LOOPS, "get_loops")          \
  X(INST_SPLIT, "split")                  \
  X(INST_FUSE, "fuse")                    \
  X(INST_REORDER, "reorder")              \
  X(INST_VECTORIZE, "vectorize")          \
  X(INST_PARALLEL, "parallel")            \
  X(INST_UNROLL, "unroll")                \
  X(INST_BIND, "bind")                    \
  X(INST_COMPUTE_AT, "compute_at")        \
  X(INST_REVERSE_COMPUTE_AT, "reverse_compute_at") \
  X(INST_COMPUTE_INLINE, "compute_inline") \
  X(INST_REVERSE_COMPUTE_INLINE, "reverse_compute_inline") \
  X(INST_CACHE_READ, "cache_read")        \
  X(INST_CACHE_WRITE, "cache_write")      \
  X(INST_CACHE_INPLACE, "cache_inplace")  \
  X(INST_STORAGE_ALIGN, "storage_align")  \
  X(INST_DECOMPOSE_REDUCTION, "decompose_reduction") \
  X(INST_RFACTOR, "rfactor")              \
  X(INST_SAMPLE_PERFECT_TILE, "sample_perfect_tile") \
  X(INST_SAMPLE_CATEGORICAL, "sample_categorical")

typedef enum InstKind {
#define X(e, name) e,
  SCH_INSTS(X)
#undef X
  INST_KIND_COUNT
} InstKind;

const char *inst_kind_name(InstKind k);
bool inst_kind_parse(const char *name, InstKind *out);

/* How each instruction kind fills an Inst (trace_apply and the text form
 * rely on it; keep the recording in each primitive consistent with it):
 *   get_block            str = block name; outputs = {block}
 *   get_loops            inputs = {block}; outputs = loops, outermost first
 *   split                inputs = {loop}; ints = factors as given (-1 kept); outputs = n loops
 *   fuse                 inputs = loops (outer first); outputs = {fused loop}
 *   reorder              inputs = loops in the new order
 *   vectorize/parallel/unroll   inputs = {loop}
 *   bind                 inputs = {loop}; str = thread tag
 *   compute_at, reverse_compute_at   inputs = {block, loop}
 *   compute_inline, reverse_compute_inline   inputs = {block}
 *   cache_read/cache_write   inputs = {block}; ints = {index, scope}; outputs = {new block}
 *   cache_inplace        inputs = {block, loop}; ints = {scope}; outputs = {copy-in, copy-out blocks}
 *   storage_align        inputs = {block}; ints = {write_index, axis, factor, offset}
 *   decompose_reduction  inputs = {block, loop}; outputs = {init block}
 *   rfactor              inputs = {loop}; outputs = {partial-result block}
 *   sample_perfect_tile  inputs = {loop}; ints = {n, max_innermost}; decision = n factors
 *   sample_categorical   ints = candidates; floats = probs (none = uniform);
 *                        decision = {chosen value}
 * sch_tile is a composite: it records the split and reorder it performs. */

/* One recorded instruction. Inputs and outputs are RV ids of the schedule
 * that recorded it; ints are integer attributes (split factors, indices,
 * scope, sample arguments); str is a block name or thread tag; floats are
 * sample_categorical probabilities; decision is what a sample returned. */
typedef struct Inst {
  InstKind kind;
  const SchRV *inputs;
  int n_inputs;
  const int64_t *ints;
  int n_ints;
  const char *str;
  const double *floats;
  int n_floats;
  const SchRV *outputs;
  int n_outputs;
  const int64_t *decision;
  int n_decision;
} Inst;

struct Trace {
  Arena *arena;
  Inst *insts;
  int n, cap;
};

struct Schedule {
  Arena *arena;
  const PrimFunc *orig;
  const PrimFunc *func;
  RVEntry *rvs;
  int n_rvs, cap_rvs;
  Trace *trace;
  DecisionMode mode;
  uint64_t rng;
  const Trace *decisions; /* DECIDE_TRACE */
  int next_decision;      /* index of the next sample inst in decisions */
  int record_depth;       /* >0 while a composite primitive runs: inner calls are not recorded */
  int name_counter;
  LoomError err;
};

Trace *trace_new(Arena *a);
/* Appends an instruction (arrays are copied). */
void trace_append(Trace *t, const Inst *inst);
/* Records into s->trace unless a composite primitive is running. */
void sch_record(Schedule *s, const Inst *inst);

/* Sets the error message; returns LOOM_ERR_SCHEDULE. */
loom_status sch_fail(Schedule *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
SchRV sch_new_block_rv(Schedule *s, const char *name);
SchRV sch_new_loop_rv(Schedule *s, const Expr *var);
/* Resolve an RV to its block realize / For statement in the current
 * function; NULL with an error message when invalid or stale. */
const Stmt *sch_lookup_block(Schedule *s, SchRV rv);
const Stmt *sch_lookup_loop(Schedule *s, SchRV rv);
/* Replace the current function's body. */
void sch_set_body(Schedule *s, const Stmt *body);
/* A block or variable name not used yet in this schedule ("A_local", then
 * "A_local_1", ...). */
const char *sch_unique_block_name(Schedule *s, const char *base);

/* The For statements from the root down to `target` (outermost first; a
 * target that is a loop is not included). Returns the count, -1 if target is
 * not in the tree. */
int sch_path_loops(const Stmt *root, const Stmt *target, const Stmt **out, int max);
/* The statement that directly contains `target` (For, SEQ, IF, block realize
 * of the enclosing block, ...), NULL for the root. */
const Stmt *sch_parent(const Stmt *root, const Stmt *target);
/* The realize of the innermost block that encloses `target`. */
const Stmt *sch_enclosing_block(const Stmt *root, const Stmt *target);

/* ---- helpers shared by the loop primitives (loop_util.c) ---- */
/* Rebuilds every block realize in `root` whose bindings or predicate mention
 * one of vars[0..n): each binding and the predicate is simplified under the
 * ranges of its enclosing loops, so printed IR stays readable
 * (vi = i_0*8 + i_1). */
const Stmt *sch_simplify_bindings(Schedule *s, const Stmt *root, const Expr *const *vars, int n);
/* A fresh loop variable (int64) named after `base`. */
const Expr *sch_new_loop_var(Schedule *s, const char *base);
/* For error messages: a loop's variable name. */
const char *sch_loop_name(const Stmt *loop);

/* Next pseudo-random number (splitmix64). */
uint64_t sch_rand(Schedule *s);

#endif
