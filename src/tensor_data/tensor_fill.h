/* Seeded random tensor contents, shared by the compiler's test helpers
 * (driver_tensors_randomize) and the measurer (tools/loom_measure.c), so a
 * kernel sees the same inputs in a unit test and in a measurement. */
#ifndef LOOM_TENSOR_DATA_TENSOR_FILL_H
#define LOOM_TENSOR_DATA_TENSOR_FILL_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

/* Fills `bytes` of `data` (elements of `dtype`, lanes 1) deterministically
 * from (seed, index), index being the parameter's position:
 *   f32/f64: uniform in [-1, 1); f16: zero (exact in every encoding);
 *   signed ints: [-4, 4]; unsigned and the other codes: [0, 8];
 *   bool (DLPack code 6): 0/1. */
void tensor_fill_random(void *data, DLDataType dtype, size_t bytes, uint64_t seed, int index);

#endif
