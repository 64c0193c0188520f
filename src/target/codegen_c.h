/* C code generation: a lowered PrimFunc -> readable C11.
 *
 * The generated function has the kernel ABI of include/loom/loom_kernel.h:
 *   int32_t NAME(DLTensor *const *args, int32_t num_args, const LoomKernelEnv *env);
 * It checks num_args and each argument's dtype, ndim and shape against the
 * PrimFunc's parameters and returns a non-zero code (never aborts) on
 * mismatch. Buffers are `restrict` pointers with alignment hints; vector
 * expressions use GCC/Clang vector types; parallel loops are outlined into
 * closures and run through env->parallel_for. Temporaries live on the stack
 * when small, else in env->workspace (size exported as NAME_workspace_bytes). */
#ifndef LOOM_TARGET_CODEGEN_C_H
#define LOOM_TARGET_CODEGEN_C_H

#include "support/error.h"
#include "support/strbuf.h"
#include "tir/stmt.h"

/* Appends the code for one lowered function (plus its helpers) to out. The
 * first function emitted into a StrBuf should be preceded by
 * codegen_c_prelude(). */
void codegen_c_prelude(StrBuf *out);
loom_status codegen_c_func(StrBuf *out, const PrimFunc *lowered, LoomError *err);

#endif
