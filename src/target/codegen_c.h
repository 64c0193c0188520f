/* C code generation: a lowered PrimFunc -> readable C11 (docs/target.md).
 *
 * Input contract (what tir_lower produces): only For (serial, parallel,
 * unrolled, vectorized-left-as-loop), Store, Seq, If, Allocate, Evaluate;
 * 1-D buffers (N-d ones are indexed row-major); vectors as Ramp/Broadcast
 * expressions with power-of-two lanes. PrimFunc.orig_params, when set, gives
 * the N-d shapes the kernel checks its arguments against.
 *
 * The generated function has the kernel ABI of include/loom/loom_kernel.h:
 *   int32_t NAME(DLTensor *const *args, int32_t num_args, const loom_kernel_env *env);
 * It checks num_args and each argument's device, dtype, ndim, shape, strides
 * and alignment and returns LOOM_KERNEL_ERR(kind, arg) (never aborts) on a
 * mismatch. Buffers are `restrict` pointers; vector expressions use GCC/Clang
 * vector types; parallel loops are outlined into closures run through
 * env->parallel_for. Temporaries live on the stack up to 64 KiB, else in
 * env->workspace (size exported as `const size_t NAME_workspace_bytes`). */
#ifndef LOOM_TARGET_CODEGEN_C_H
#define LOOM_TARGET_CODEGEN_C_H

#include "support/error.h"
#include "support/strbuf.h"
#include "tir/stmt.h"

/* Includes and the scalar helpers (floor division, min/max, shape checks).
 * Emit once per file, before the first codegen_c_func. Guarded, so a second
 * copy is harmless. */
void codegen_c_prelude(StrBuf *out);

/* Appends one kernel (its vector typedefs, helpers and outlined parallel
 * bodies first). The kernel's symbol is f->name, which must be a C
 * identifier. Errors: LOOM_ERR_INVALID_ARG for IR that is not lowered or not
 * well formed (a block left in, a variable used outside its loop, a buffer
 * that is neither a parameter nor allocated), LOOM_ERR_UNSUPPORTED for what C
 * codegen cannot express yet (GPU thread loops, f16/bf16, non-power-of-two
 * lanes, symbolic allocation sizes, a workspace-sized temporary inside a
 * parallel loop); the message names the function and the buffer/variable.
 * On error nothing is appended to out. */
loom_status codegen_c_func(StrBuf *out, const PrimFunc *lowered, LoomError *err);

#endif
