/* Auto-scheduling: generating schedules rather than writing them.
 *
 * random_schedule_apply is a generic random "sketch": it walks the blocks of
 * the schedule's program and tries, at random, the whole primitive set
 * (inline, compute_at, split with sampled tiles and imperfect factors,
 * reorder, fuse, cache_read/write, storage_align, decompose_reduction,
 * vectorize, parallel, unroll). Every random choice goes through the
 * schedule's sampling instructions (sample_categorical, sample_perfect_tile),
 * so the decisions come from the schedule's decision source (create it with
 * DECIDE_RANDOM and a seed) and are recorded: the trace replays the schedule.
 *
 * A primitive that refuses is skipped (refusals are legal answers); but a
 * refusal that changed the program or the trace is a bug in the primitive,
 * reported as LOOM_ERR_INTERNAL naming the primitive and the block. */
#ifndef LOOM_AUTOTUNE_AUTOTUNE_H
#define LOOM_AUTOTUNE_AUTOTUNE_H

#include "support/error.h"
#include "tir/schedule/schedule.h"

/* The primitives the generator calls (for coverage statistics). */
#define RS_PRIMS(X)                                               \
  X(RS_COMPUTE_INLINE, "compute_inline")                          \
  X(RS_REVERSE_COMPUTE_INLINE, "reverse_compute_inline")          \
  X(RS_CACHE_READ, "cache_read")                                  \
  X(RS_CACHE_WRITE, "cache_write")                                \
  X(RS_SAMPLE_PERFECT_TILE, "sample_perfect_tile")                \
  X(RS_SPLIT, "split")                                            \
  X(RS_SPLIT_IMPERFECT, "split (imperfect)")                      \
  X(RS_TILE, "tile")                                              \
  X(RS_REORDER, "reorder")                                        \
  X(RS_FUSE, "fuse")                                              \
  X(RS_COMPUTE_AT, "compute_at")                                  \
  X(RS_REVERSE_COMPUTE_AT, "reverse_compute_at")                  \
  X(RS_STORAGE_ALIGN, "storage_align")                            \
  X(RS_DECOMPOSE_REDUCTION, "decompose_reduction")                \
  X(RS_RFACTOR, "rfactor")                                        \
  X(RS_VECTORIZE, "vectorize")                                    \
  X(RS_PARALLEL, "parallel")                                      \
  X(RS_UNROLL, "unroll")

typedef enum RsPrim {
#define X(e, name) e,
  RS_PRIMS(X)
#undef X
  RS_PRIM_COUNT
} RsPrim;

const char *random_schedule_prim_name(RsPrim p);

typedef struct RandomScheduleStats {
  int tried;   /* primitive calls made */
  int applied; /* calls that succeeded */
  int refused; /* calls refused (program unchanged) */
  int applied_by[RS_PRIM_COUNT], refused_by[RS_PRIM_COUNT];
} RandomScheduleStats;

/* Applies one random schedule to s (which may already hold instructions).
 * stats may be NULL. LOOM_OK when every primitive either succeeded or
 * refused cleanly; LOOM_ERR_INTERNAL (message names the primitive, block
 * and the refusal's own message) when a refusal mutated the schedule; a
 * sampling error (e.g. a DECIDE_TRACE source ran out) is returned as is. */
loom_status random_schedule_apply(Schedule *s, RandomScheduleStats *stats, LoomError *err);

#endif
