/* The floating-point work of a PrimFunc, counted on its blocks: what
 * `loom run --profile` divides by a kernel's time to report GFLOP/s.
 *
 * Rule (docs/tir.md, "Counting FLOPs"): for every block, the number of
 * iteration points (the product of its iterator extents, spatial and
 * reduction alike; 1 for a block without iterators) times the number of
 * floating-point arithmetic operations in its body: each float-typed add,
 * sub, mul, div, mod, min, max and math call counts one per lane. So a
 * multiply-add reduction update C = C + A * B counts 2 per point (a matmul
 * is exactly 2 * M * N * K), an elementwise op 1 per output element, a row
 * max 1 per point. Loads, stores, casts, selects, comparisons, integer
 * index arithmetic and a reduction's init count nothing, so copies, pads
 * and layout transforms are 0 FLOPs.
 *
 * Count the compute definition (the PrimFunc te_create_primfunc made,
 * before scheduling): that is the useful work, independent of the schedule
 * (inlining that recomputes an expression, or a packing copy, does not
 * change it). */
#ifndef LOOM_TIR_FLOPS_H
#define LOOM_TIR_FLOPS_H

#include "tir/stmt.h"

#include <stdint.h>

/* The FLOP count of one call of f, or -1 when it is unknown: an iterator
 * extent that is not a constant, or a total beyond 2^53. */
int64_t tir_func_flops(const PrimFunc *f);

/* Like tir_func_flops, but a block with no arithmetic (a copy, pad or
 * layout transform) counts 1 per point instead of 0: the size of a
 * kernel's work, used to keep small kernels serial (schedule_group.c). */
int64_t tir_func_work(const PrimFunc *f);

#endif
