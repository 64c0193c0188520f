#include "runtime/module.h"
#include "support/alloc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct Module {
  void *handle;
  char *path;
};

loom_status module_load(const char *path, Module **out, LoomError *err) {
  *out = NULL;
  if (!path || !*path) return err_set(err, LOOM_ERR_INVALID_ARG, "module_load: empty path");
  /* dlopen searches the library path for names without a slash: a module
   * path is a file, never a library name. */
  char *resolved = NULL;
  if (!strchr(path, '/')) {
    size_t n = strlen(path) + 3;
    resolved = loom_malloc(n);
    if (!resolved) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "module_load: out of memory");
    snprintf(resolved, n, "./%s", path);
  } else {
    resolved = loom_strdup(path);
    if (!resolved) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "module_load: out of memory");
  }
  dlerror();
  void *h = dlopen(resolved, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    loom_free(resolved);
    return err_set(err, LOOM_ERR_IO, "cannot load module \"%s\": %s", path, why ? why : "unknown dlopen error");
  }
  Module *m = loom_calloc(1, sizeof *m);
  if (!m) {
    dlclose(h);
    loom_free(resolved);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "module_load: out of memory");
  }
  m->handle = h;
  m->path = resolved;
  *out = m;
  return LOOM_OK;
}

void module_unload(Module *m) {
  if (!m) return;
  dlclose(m->handle);
  loom_free(m->path);
  loom_free(m);
}

const char *module_path(const Module *m) { return m->path; }

void *module_symbol(Module *m, const char *name) {
  if (!m || !name) return NULL;
  dlerror();
  return dlsym(m->handle, name);
}

loom_status module_get_kernel(Module *m, const char *name, Kernel *out, LoomError *err) {
  memset(out, 0, sizeof *out);
  dlerror();
  void *sym = dlsym(m->handle, name);
  if (!sym)
    return err_set(err, LOOM_ERR_INVALID_ARG, "kernel \"%s\" not found in module \"%s\"", name, m->path);
  char ws_name[512];
  int len = snprintf(ws_name, sizeof ws_name, "%s_workspace_bytes", name);
  if (len > 0 && (size_t)len < sizeof ws_name) {
    const size_t *ws = dlsym(m->handle, ws_name);
    if (ws) out->workspace_bytes = *ws;
  }
  /* ISO C forbids object -> function pointer casts; POSIX guarantees dlsym
   * results convert, and memcpy says so without a warning. */
  loom_kernel_fn fn;
  memcpy(&fn, &sym, sizeof fn);
  out->fn = fn;
  snprintf(out->name, sizeof out->name, "%s", name);
  return LOOM_OK;
}

const char *kernel_err_kind_name(loom_kernel_err kind) {
  switch (kind) {
    case LOOM_KERNEL_OK: return "ok";
    case LOOM_KERNEL_ERR_NUM_ARGS: return "wrong number of arguments";
    case LOOM_KERNEL_ERR_NULL: return "NULL tensor or data";
    case LOOM_KERNEL_ERR_DEVICE: return "tensor not on the CPU";
    case LOOM_KERNEL_ERR_DTYPE: return "dtype mismatch";
    case LOOM_KERNEL_ERR_NDIM: return "ndim mismatch";
    case LOOM_KERNEL_ERR_SHAPE: return "shape mismatch";
    case LOOM_KERNEL_ERR_STRIDES: return "strides not compact row-major";
    case LOOM_KERNEL_ERR_ALIGN: return "data misaligned";
    case LOOM_KERNEL_ERR_WORKSPACE: return "workspace missing or too small";
    case LOOM_KERNEL_ERR_EXTERNAL: return "the external back end's code failed";
  }
  return "unknown error";
}

loom_status kernel_call(const Kernel *k, DLTensor *const *args, int32_t num_args, ThreadPool *pool,
                        int32_t *code, LoomError *err) {
  loom_kernel_env env = {0};
  threadpool_fill_env(pool, &env);
  if (k->workspace_bytes) {
    size_t bytes = (k->workspace_bytes + 63) / 64 * 64;
    env.workspace = loom_aligned_alloc(64, bytes);
    if (!env.workspace)
      return err_set(err, LOOM_ERR_RUNTIME, "kernel \"%s\": cannot allocate %zu workspace bytes", k->name, bytes);
    env.workspace_bytes = bytes;
  }
  int32_t rc = k->fn(args, num_args, &env);
  loom_free(env.workspace);
  if (code) *code = rc;
  if (rc == 0) return LOOM_OK;
  loom_kernel_err kind = LOOM_KERNEL_ERR_KIND(rc);
  if (kind == LOOM_KERNEL_ERR_NUM_ARGS)
    return err_set(err, LOOM_ERR_RUNTIME, "kernel \"%s\": %s (got %d)", k->name, kernel_err_kind_name(kind),
                   (int)num_args);
  return err_set(err, LOOM_ERR_RUNTIME, "kernel \"%s\": argument %d: %s (code %d)", k->name,
                 (int)LOOM_KERNEL_ERR_ARG(rc), kernel_err_kind_name(kind), (int)rc);
}
