/* Features of a schedule candidate for the learned cost model: one
 * fixed-length vector of floats per lowered PrimFunc.
 *
 * What (AutoTVM's loop features, MetaSchedule's per-store features; the
 * full list with each feature's definition is docs/autotune.md,
 * "Features"): the function is walked once; for every Store it computes
 * the arithmetic it runs by kind, its vector lanes, the loop nest above it
 * (extents, parallel / unrolled loops), the straight-line body it sits in
 * (a register tile's ops per load), the loop the C compiler may vectorize
 * (strided accesses and carried reductions in it), and for every buffer
 * access the bytes and cache lines touched at a few loop levels, the
 * stride of the innermost access and the reuse carried by an enclosing
 * loop. The stores
 * are then aggregated, weighted by how often each runs, into: global
 * counts, sums over all stores, the heaviest store's features, and a
 * work-weighted mean. Magnitudes are log2(1 + x).
 *
 * Input: the IR after tir_lower (plain loops, flat buffers, vectors as
 * ramp/broadcast); a function that still has blocks is refused. Pure and
 * deterministic (same function, same vector); no allocation that outlives
 * the call. Cost: tens of microseconds for a default matmul or conv
 * schedule (test_features reports it).
 *
 * FEATURES_VERSION names the feature set: any change to what a feature
 * means, to their order or to their number bumps it, and a cost model
 * saved with another version is refused (cost_model.h). */
#ifndef LOOM_AUTOTUNE_FEATURES_H
#define LOOM_AUTOTUNE_FEATURES_H

#include "support/error.h"
#include "tir/stmt.h"

#include <stddef.h>

#define FEATURES_VERSION 1
/* The vector's length; features.c checks it against its tables. */
#define FEATURES_DIM 152

/* Writes the FEATURES_DIM features of `lowered` into out[0..cap).
 * LOOM_ERR_INVALID_ARG when an argument is NULL or cap < FEATURES_DIM;
 * LOOM_ERR_UNSUPPORTED (naming the block or the depth) when the function
 * is not lowered (a block remains) or nests loops deeper than 64. */
loom_status features_extract(const PrimFunc *lowered, float *out, int cap, LoomError *err);

/* The name of feature i ("g.n_stores", "sum.flops", "top.lanes",
 * "top.acc0.stride", "mean.bytes_nest"; docs/autotune.md lists them),
 * written into buf[0..cap); returns buf, or NULL when i is out of range. */
const char *features_name(int i, char *buf, size_t cap);

#endif
