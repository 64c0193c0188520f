/* Loading compiled kernels: a shared object built by target/build.c (or any
 * .so whose functions follow include/loom/loom_kernel.h), looked up by name
 * and called with DLPack tensors. No compiler is needed here. */
#ifndef LOOM_RUNTIME_MODULE_H
#define LOOM_RUNTIME_MODULE_H

#include "loom/loom_kernel.h"
#include "runtime/threadpool.h"
#include "support/error.h"

typedef struct Module Module;

/* A kernel found in a module: valid until the module is unloaded. */
typedef struct Kernel {
  char name[128];
  loom_kernel_fn fn;
  size_t workspace_bytes; /* from NAME_workspace_bytes (0 when not exported) */
} Kernel;

/* dlopen(RTLD_NOW | RTLD_LOCAL). LOOM_ERR_IO naming the path and dlerror()'s
 * reason when the file is missing or not a loadable object. */
loom_status module_load(const char *path, Module **out, LoomError *err);
/* NULL is allowed. Kernels of the module must not be used afterwards. */
void module_unload(Module *m);
const char *module_path(const Module *m);

/* The address of an exported symbol, NULL when absent. */
void *module_symbol(Module *m, const char *name);

/* LOOM_ERR_INVALID_ARG naming the symbol and the file when absent. */
loom_status module_get_kernel(Module *m, const char *name, Kernel *out, LoomError *err);

/* Calls a kernel: allocates its workspace (64-byte aligned) for the call,
 * runs parallel loops on `pool` (NULL: serially). A non-zero kernel return
 * code becomes LOOM_ERR_RUNTIME with a message naming the kernel, the
 * argument and what was wrong; *code (may be NULL) receives the raw code. */
loom_status kernel_call(const Kernel *k, DLTensor *const *args, int32_t num_args, ThreadPool *pool,
                        int32_t *code, LoomError *err);

/* "dtype mismatch" etc. for a loom_kernel_err kind. */
const char *kernel_err_kind_name(loom_kernel_err kind);

#endif
