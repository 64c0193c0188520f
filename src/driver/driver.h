/* The build driver: PrimFuncs of blocks -> one loaded shared object.
 *
 *   driver_build: tir_lower every function, generate C for each distinct
 *   one (a function whose lowered code equals an earlier one's, names
 *   aside, becomes an alias of it), pack them into translation units of
 *   about 64 KiB, build those in parallel into one shared object through
 *   the content-hash cache (target/build.h) and dlopen it
 *   (runtime/module.h).
 *
 * Many kernels per unit matters: the system compiler costs ~40 ms per run
 * before any work, and the random-schedule harness compiles hundreds of
 * variants.
 *
 * Plus helpers to call kernels in tests and tools: DriverTensors allocates a
 * 64-byte-aligned DLTensor per PrimFunc parameter, filled with seeded random
 * data (f32/f64 uniform in [-1, 1], integers in a small range). */
#ifndef LOOM_DRIVER_DRIVER_H
#define LOOM_DRIVER_DRIVER_H

#include "runtime/module.h"
#include "support/arena.h"
#include "support/error.h"
#include "target/build.h"
#include "tir/stmt.h"
#include "tir/transform/transform.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct DriverOptions {
  const LowerOptions *lower; /* NULL: lower_options_default() */
  const BuildOptions *build; /* NULL: build.h defaults (all fields NULL) */
  /* C appended to the source after every kernel (NULL: none), e.g. the graph
   * compiler's generated run entry, which calls the kernels by name. */
  const char *epilogue;
} DriverOptions;

typedef struct DriverModule DriverModule;

/* Lowers, generates, builds and loads funcs[0..n). Lowered IR lives in `a`
 * (it must outlive the module's use of driver_lowered). Errors:
 * LOOM_ERR_INVALID_ARG (n < 1, NULL function, two functions with one name:
 * the message names it), whatever tir_lower / codegen_c_func return
 * (prefixed with the function's name), and build/load errors. *out is set
 * only on success. */
loom_status driver_build(Arena *a, const PrimFunc *const *funcs, int n, const DriverOptions *opt,
                         DriverModule **out, LoomError *err);

/* The kernel compiled from the function named `name`. */
loom_status driver_get_kernel(DriverModule *m, const char *name, Kernel *out, LoomError *err);
int driver_num_funcs(const DriverModule *m);
/* The i-th function after tir_lower (for dumps on failure). */
const PrimFunc *driver_lowered(const DriverModule *m, int i);
/* The generated C source and the shared object it was built into. */
const char *driver_source(const DriverModule *m);
const char *driver_so_path(const DriverModule *m);
/* Unloads the shared object. NULL is allowed. */
void driver_module_free(DriverModule *m);

/* ---- tensors for a PrimFunc's parameters ---- */
typedef struct DriverTensors {
  int n;
  DLTensor *tensors;   /* n tensors, data 64-byte aligned, strides NULL */
  DLTensor **ptrs;     /* &tensors[i], the args array for kernel_call */
  size_t *bytes;       /* size of each tensor's data */
} DriverTensors;

/* One tensor per parameter of f (constant shapes required; f may be lowered
 * or not: orig_params are used when present), filled by
 * driver_tensors_randomize(seed). LOOM_ERR_INVALID_ARG naming the parameter
 * when a shape is not constant or the dtype has no DLPack form. */
loom_status driver_tensors_alloc(const PrimFunc *f, uint64_t seed, DriverTensors *out,
                                 LoomError *err);
/* f32/f64: uniform in [-1, 1]; signed ints: [-4, 4]; unsigned: [0, 8];
 * bool: 0/1. Deterministic in seed (and in the parameter index). */
void driver_tensors_randomize(DriverTensors *t, uint64_t seed);
/* dst = src element for element; both must come from the same function. */
void driver_tensors_copy(DriverTensors *dst, const DriverTensors *src);
/* The data pointers, in parameter order, for tir_interpret. */
void driver_tensors_data(const DriverTensors *t, void **out);
void driver_tensors_free(DriverTensors *t);

#endif
