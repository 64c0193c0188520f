/* The kernel ABI: the contract between generated code and whoever calls it
 * (the runtime's module loader, an AOT `run` entry, a test).
 *
 * Every generated kernel has the signature
 *
 *   int32_t NAME(DLTensor *const *args, int32_t num_args, const LoomKernelEnv *env);
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
typedef void (*LoomParallelBody)(void *closure, int64_t begin, int64_t end);

/* Runs body over [0, n) split into chunks, possibly concurrently, and returns
 * once every iteration has run. Must accept nested and concurrent calls
 * (running them serially is fine). */
typedef void (*LoomParallelFor)(void *pool, int64_t n, LoomParallelBody body, void *closure);

typedef struct LoomKernelEnv {
  LoomParallelFor parallel_for; /* NULL: parallel loops run serially */
  void *pool;                   /* opaque, passed back to parallel_for */
  int32_t num_threads;          /* informational; >= 1 */
  void *workspace;              /* 64-byte aligned scratch, >= NAME_workspace_bytes */
  size_t workspace_bytes;
} LoomKernelEnv;

typedef int32_t (*LoomKernelFn)(DLTensor *const *args, int32_t num_args, const LoomKernelEnv *env);

/* Return codes: the low byte is what went wrong, the next bits the index of
 * the argument at fault (0 when no argument is involved). */
typedef enum LoomKernelErr {
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
} LoomKernelErr;

#define LOOM_KERNEL_ERR(kind, arg) ((int32_t)(kind) | ((int32_t)(arg) << 8))
#define LOOM_KERNEL_ERR_KIND(code) ((LoomKernelErr)((code) & 0xff))
#define LOOM_KERNEL_ERR_ARG(code) ((int32_t)(code) >> 8)

#endif
