/* Lowering passes: PrimFunc of blocks -> flat, simplified program ready for
 * code generation. Each pass is a function IR -> IR (new nodes in `a`).
 *
 * Pipeline (tir_lower runs it in this order):
 *   tir_simplify          arith_simplify on every expression, with loop ranges bound
 *   tir_lower_blocks      blocks -> plain loops: iterators replaced by their
 *                         bindings, predicates -> if, init -> if (all reduction
 *                         iterators at their minimum), alloc_buffers -> Allocate
 *   tir_simplify          fold the substituted bindings
 *   tir_compact_buffers   move each temporary's Allocate down to where it is
 *                         used and shrink it to the region used there
 *   tir_loop_partition    split a loop whose body is guarded by a predicate on
 *                         the loop variable into a guard-free main part and a tail
 *   tir_flatten_buffers   N-d buffers -> 1-d (row-major, honouring storage_align);
 *                         PrimFunc.orig_params keeps the N-d parameters
 *   tir_legalize_narrow   f16/bf16/fp8/fp4/int4 are stored, not computed: loads
 *                         widen to f32 (i32), stores round back
 *   tir_simplify          fold flat indices (vectorize needs constant strides)
 *   tir_vectorize         FOR_VECTORIZED loops -> ramp/broadcast vector
 *                         expressions; what cannot be vectorized falls back
 *                         to a serial loop (correct, just slower)
 *   tir_unroll            FOR_UNROLLED loops with constant extent -> copies
 *   tir_storage_rewrite   reuse the memory of temporaries whose lifetimes
 *                         do not overlap
 *   tir_simplify          again, to clean up
 * docs/lowering.md has the details and an example. */
#ifndef LOOM_TIR_TRANSFORM_H
#define LOOM_TIR_TRANSFORM_H

#include "support/error.h"
#include "tir/stmt.h"

typedef struct LowerOptions {
  bool partition_loops;  /* default true */
  bool storage_rewrite;  /* default true */
  bool compact_buffers;  /* default true */
  int max_unroll_extent; /* unrolled loops longer than this stay loops; default 64 */
} LowerOptions;

LowerOptions lower_options_default(void);

const PrimFunc *tir_simplify(Arena *a, const PrimFunc *f);
const PrimFunc *tir_lower_blocks(Arena *a, const PrimFunc *f, LoomError *err);
const PrimFunc *tir_compact_buffers(Arena *a, const PrimFunc *f);
const PrimFunc *tir_loop_partition(Arena *a, const PrimFunc *f);
const PrimFunc *tir_flatten_buffers(Arena *a, const PrimFunc *f, LoomError *err);
const PrimFunc *tir_vectorize(Arena *a, const PrimFunc *f);
const PrimFunc *tir_unroll(Arena *a, const PrimFunc *f, int max_extent);
const PrimFunc *tir_storage_rewrite(Arena *a, const PrimFunc *f);
const PrimFunc *tir_legalize_narrow(Arena *a, const PrimFunc *f);

/* The whole pipeline; NULL with a message in err on failure. */
const PrimFunc *tir_lower(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err);

#endif
