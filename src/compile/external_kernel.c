/* The kernel around a BYOC back end's function (docs/byoc.md). The plugin
 * API hands the back end data pointers and a workspace
 * (loom/loom_byoc.h); the artifact's kernels all follow the kernel ABI
 * (loom/loom_kernel.h). This writes the one around the other: argument
 * count, every tensor checked against the region's dtype and static shape
 * with compact strides (the run entry's own check, compile_emit_tensor_check),
 * the workspace, then the call with the env's thread count. So the run entry and the executor call an
 * external kernel like any other, and a caller's mistake is a kernel error
 * code, never a back end reading the wrong memory. */
#include "byoc/byoc.h"
#include "compile/compile.h"

#include <inttypes.h>

static const loom_byoc_tensor *param(const loom_byoc_region *r, int32_t i) {
  return &r->graph.tensors[i < r->ninputs ? r->inputs[i] : r->outputs[i - r->ninputs]];
}

void compile_external_kernel_source(const ByocKernel *k, const loom_byoc_region *r, StrBuf *o) {
  const char *name = k->name;
  int32_t np = r->ninputs + r->noutputs;
  size_t ws = k->workspace_bytes;
  sb_puts(o, k->source);
  sb_printf(o, "const size_t %s_workspace_bytes = %zu;\n", name, ws);
  for (int32_t i = 0; i < np; i++) {
    const loom_byoc_tensor *t = param(r, i);
    sb_printf(o, "static const int64_t %s_shape%d[] = {", name, (int)i);
    for (int32_t d = 0; d < t->ndim; d++) sb_printf(o, "%s%" PRId64, d ? ", " : "", t->shape[d]);
    sb_puts(o, t->ndim ? "};\n" : "0};\n"); /* a scalar: a valid pointer, never read */
  }
  compile_emit_tensor_check(o, name);
  sb_printf(o,
            "int32_t %s(DLTensor *const *args, int32_t num_args, const loom_kernel_env *env) {\n"
            "  if (num_args != %d) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NUM_ARGS, 0);\n"
            "  if (!args) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NULL, 0);\n"
            "  int32_t rc;\n"
            "  void *data[%d];\n",
            name, (int)np, (int)(np > 0 ? np : 1));
  for (int32_t i = 0; i < np; i++) {
    const loom_byoc_tensor *t = param(r, i);
    sb_printf(o, "  if ((rc = %s_check(args[%d], %d, %u, %u, %d, %s_shape%d))) return rc;\n", name, (int)i, (int)i,
              t->dtype.code, t->dtype.bits, (int)t->ndim, name, (int)i);
    sb_printf(o, "  data[%d] = (char *)args[%d]->data + args[%d]->byte_offset;\n", (int)i, (int)i, (int)i);
  }
  if (ws)
    sb_printf(o,
              "  if (!env || !env->workspace || env->workspace_bytes < %zu || ((uintptr_t)env->workspace & 63))\n"
              "    return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_WORKSPACE, 0);\n",
              ws);
  sb_printf(o,
            "  int32_t threads = env && env->num_threads > 0 ? env->num_threads : 1;\n"
            "  return %s(data, %s, threads) ? LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_EXTERNAL, 0) : 0;\n"
            "}\n",
            r->symbol, ws ? "env->workspace" : "(void *)0");
}
