/* The kernel ABI: the contract between generated code and whoever calls it
 * (the runtime's module loader, an AOT `run` entry, a test).
 *
 * Every generated kernel has the signature
 *
 *   int32_t NAME(DLTensor *const *args, int32_t num_args, const loom_kernel_env *env);
 *
 * and exports `const size_t NAME_workspace_bytes` (0 when it needs none).
 * args are the PrimFunc's parameters in order (inputs, then outputs). The
 * kernel checks every argument on entry (count, NULL, device, dtype, shape,
 * compact strides, element alignment, plus 64-byte alignment for buffers
 * declared aligned) and returns a LOOM_KERNEL_ERR() code instead of touching
 * memory when something is off. It never aborts, never calls malloc and keeps
 * no state between calls. Outputs must not alias inputs (parameters are
 * `restrict`).
 *
 * This header is included by generated code, so it may use only libc and
 * DLPack: no compiler types, nothing from src/. */
#ifndef LOOM_KERNEL_H
#define LOOM_KERNEL_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

/* One chunk of a parallel loop: run iterations [begin, end) of the outlined
 * loop body whose captured variables are in `closure`. */
typedef void (*loom_parallel_body)(void *closure, int64_t begin, int64_t end);

/* Runs body over [0, n) split into chunks, possibly concurrently, and returns
 * once every iteration has run. Must accept nested and concurrent calls
 * (running them serially is fine). */
typedef void (*loom_parallel_for)(void *pool, int64_t n, loom_parallel_body body, void *closure);

typedef struct loom_kernel_env {
  loom_parallel_for parallel_for; /* NULL: parallel loops run serially */
  void *pool;                   /* opaque, passed back to parallel_for */
  int32_t num_threads;          /* informational; >= 1 */
  void *workspace;              /* 64-byte aligned scratch, >= NAME_workspace_bytes */
  size_t workspace_bytes;
} loom_kernel_env;

typedef int32_t (*loom_kernel_fn)(DLTensor *const *args, int32_t num_args, const loom_kernel_env *env);

/* Return codes: the low byte is what went wrong, the next bits the index of
 * the argument at fault (0 when no argument is involved). */
typedef enum loom_kernel_err {
  LOOM_KERNEL_OK = 0,
  LOOM_KERNEL_ERR_NUM_ARGS = 1,  /* num_args differs from the parameter count */
  LOOM_KERNEL_ERR_NULL = 2,      /* args, args[i] or args[i]->data is NULL */
  LOOM_KERNEL_ERR_DEVICE = 3,    /* not a kDLCPU tensor */
  LOOM_KERNEL_ERR_DTYPE = 4,     /* dtype code, bits or lanes differ */
  LOOM_KERNEL_ERR_NDIM = 5,
  LOOM_KERNEL_ERR_SHAPE = 6,     /* a dimension (or the flat element count) differs */
  LOOM_KERNEL_ERR_STRIDES = 7,   /* strides given and not compact row-major */
  LOOM_KERNEL_ERR_ALIGN = 8,     /* data misaligned for the element or the declared alignment */
  LOOM_KERNEL_ERR_WORKSPACE = 9, /* env->workspace missing, too small or misaligned */
  LOOM_KERNEL_ERR_EXTERNAL = 10, /* an external (BYOC) kernel's own code reported a failure */
} loom_kernel_err;

#define LOOM_KERNEL_ERR(kind, arg) ((int32_t)(kind) | ((int32_t)(arg) << 8))
#define LOOM_KERNEL_ERR_KIND(code) ((loom_kernel_err)((code) & 0xff))
#define LOOM_KERNEL_ERR_ARG(code) ((int32_t)(code) >> 8)

/* ---- The model's run entry ----
 *
 * A compiled model's shared object also exports one function that runs the
 * whole model: every kernel in plan order, with each kernel's DLTensor
 * arguments built from static shapes and base + byte-offset data pointers
 * (graph inputs/outputs, the weights blob, the intermediate arena).
 *
 *   int32_t loom_run(DLTensor *const *inputs, DLTensor *const *outputs,
 *                    const void *weights, void *arena,
 *                    const loom_kernel_env *env, int32_t *failed_step);
 *
 * inputs/outputs are the graph's, in the artifact metadata's order (checked
 * on entry: non-NULL data, CPU, dtype, shape, compact strides; byte_offset is
 * honoured). weights is the start of the artifact's weights blob (64-byte
 * aligned), arena a 64-byte aligned buffer of the metadata's arena_bytes;
 * env is passed to every kernel unchanged (its workspace must cover the
 * largest NAME_workspace_bytes). Returns 0, or the first non-zero code:
 *   - a kernel's code (LOOM_KERNEL_ERR(kind, arg) with the kernel's argument
 *     index), and *failed_step = the plan step (0-based) that failed;
 *   - the entry's own check: *failed_step = -1 and the code's argument index
 *     counts inputs then outputs (input i is i, output j is num_inputs + j;
 *     weights, arena and env are num_inputs + num_outputs + 0, 1, 2).
 * failed_step may be NULL. Nothing is written before the checks pass.
 * A dynamic output (metadata "dynamic": true) has the upper-bound shape on
 * entry; the entry writes its real extents into that DLTensor's shape array.
 *
 * Alongside the entry the object exports `const uint64_t NAME_plan_hash`
 * (the artifact plan it was generated for: the loader recomputes it from
 * the metadata and refuses a mismatch) and `const int32_t NAME_num_steps`. */
/* ---- External kernels (BYOC, loom/loom_byoc.h) ----
 *
 * The kernel of a back end that returned a blob calls its runtime through
 * `loom_external_slot NAME_external`, which the loader fills after the back
 * end's init (run NULL until then: the kernel returns
 * LOOM_KERNEL_ERR_EXTERNAL). */
typedef struct loom_external_slot {
  void *state;
  int (*run)(void *state, void *const *data, void *workspace);
} loom_external_slot;

typedef int32_t (*loom_run_fn)(DLTensor *const *inputs, DLTensor *const *outputs, const void *weights, void *arena,
                             const loom_kernel_env *env, int32_t *failed_step);
#define LOOM_RUN_ENTRY_DEFAULT "loom_run"

#endif
