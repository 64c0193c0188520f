/* The build driver: lower -> one C source -> shared object -> loaded module. */
#include "driver/driver.h"

#include "support/strbuf.h"
#include "target/codegen_c.h"

#include <stdlib.h>
#include <string.h>

struct DriverModule {
  Module *module;
  int n;
  const PrimFunc **lowered;
  char *source;
  char so_path[PATH_MAX];
};

static loom_status check_unique_names(const PrimFunc *const *funcs, int n, LoomError *err) {
  for (int i = 0; i < n; i++) {
    if (!funcs[i]) return err_set(err, LOOM_ERR_INVALID_ARG, "driver_build: function %d is NULL", i);
    if (!funcs[i]->name || !funcs[i]->name[0])
      return err_set(err, LOOM_ERR_INVALID_ARG, "driver_build: function %d has no name", i);
    for (int j = 0; j < i; j++)
      if (strcmp(funcs[i]->name, funcs[j]->name) == 0)
        return err_set(err, LOOM_ERR_INVALID_ARG,
                       "driver_build: functions %d and %d are both named \"%s\"; kernel names must "
                       "be unique within a module",
                       j, i, funcs[i]->name);
  }
  return LOOM_OK;
}

/* Lowers every function and emits it after the prelude. */
static loom_status emit_source(Arena *a, const PrimFunc *const *funcs, int n,
                               const LowerOptions *lower, const PrimFunc **lowered, StrBuf *sb,
                               LoomError *err) {
  codegen_c_prelude(sb);
  for (int i = 0; i < n; i++) {
    lowered[i] = tir_lower(a, funcs[i], lower, err);
    if (!lowered[i]) {
      if (err && err->status == LOOM_OK) err->status = LOOM_ERR_INTERNAL;
      err_prefix(err, "driver_build: lowering \"%s\"", funcs[i]->name);
      return err ? err->status : LOOM_ERR_INTERNAL;
    }
    loom_status st = codegen_c_func(sb, lowered[i], err);
    if (st) {
      err_prefix(err, "driver_build: generating C for \"%s\"", funcs[i]->name);
      return st;
    }
  }
  return LOOM_OK;
}

loom_status driver_build(Arena *a, const PrimFunc *const *funcs, int n, const DriverOptions *opt,
                         DriverModule **out, LoomError *err) {
  if (!a || !funcs || !out)
    return err_set(err, LOOM_ERR_INVALID_ARG, "driver_build: arena, funcs and out must be non-NULL");
  /* No kernels is fine when an epilogue is the module (a model whose
   * outputs are all empty still has a run entry). */
  if (n < (opt && opt->epilogue ? 0 : 1))
    return err_set(err, LOOM_ERR_INVALID_ARG, "driver_build: need at least one function, got %d", n);
  loom_status st = check_unique_names(funcs, n, err);
  if (st) return st;

  LowerOptions lower = opt && opt->lower ? *opt->lower : lower_options_default();
  BuildOptions build = {0};
  if (opt && opt->build) build = *opt->build;

  DriverModule *m = calloc(1, sizeof *m);
  if (!m) return err_set(err, LOOM_ERR_INTERNAL, "driver_build: out of memory");
  m->n = n;
  m->lowered = ARENA_ARRAY(a, const PrimFunc *, n);

  StrBuf sb;
  sb_init(&sb);
  st = emit_source(a, funcs, n, &lower, m->lowered, &sb, err);
  if (st) {
    sb_free(&sb);
    free(m);
    return st;
  }
  if (opt && opt->epilogue) sb_puts(&sb, opt->epilogue);
  m->source = sb_take(&sb);

  BuildResult r;
  st = build_shared_object(m->source, &build, &r, err);
  if (st == LOOM_OK) {
    memcpy(m->so_path, r.so_path, sizeof m->so_path);
    st = module_load(m->so_path, &m->module, err);
  }
  if (st) {
    free(m->source);
    free(m);
    return st;
  }
  *out = m;
  return LOOM_OK;
}

loom_status driver_get_kernel(DriverModule *m, const char *name, Kernel *out, LoomError *err) {
  if (!m || !name || !out)
    return err_set(err, LOOM_ERR_INVALID_ARG, "driver_get_kernel: module, name and out must be non-NULL");
  return module_get_kernel(m->module, name, out, err);
}

int driver_num_funcs(const DriverModule *m) { return m ? m->n : 0; }

const PrimFunc *driver_lowered(const DriverModule *m, int i) {
  return m && i >= 0 && i < m->n ? m->lowered[i] : NULL;
}

const char *driver_source(const DriverModule *m) { return m ? m->source : NULL; }
const char *driver_so_path(const DriverModule *m) { return m ? m->so_path : NULL; }

void driver_module_free(DriverModule *m) {
  if (!m) return;
  module_unload(m->module);
  free(m->source);
  free(m);
}
