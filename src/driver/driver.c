/* The build driver: lower -> one C source -> shared object -> loaded module. */
#include "driver/driver.h"

#include "support/alloc.h"
#include "support/oom.h"
#include "support/strbuf.h"
#include "target/codegen_c.h"
#include "tir/text.h"

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

/* Same code whatever the names: alpha-equivalent lowered bodies, and the
 * same parameter shapes before flattening (the argument checks read them). */
static bool same_code(const PrimFunc *x, const PrimFunc *y) {
  if (x->n_params != y->n_params || !x->orig_params != !y->orig_params) return false;
  for (int i = 0; x->orig_params && i < x->n_params; i++) {
    const Buffer *a = x->orig_params[i], *b = y->orig_params[i];
    if (!dtype_eq(a->dtype, b->dtype) || a->ndim != b->ndim || !a->strides != !b->strides) return false;
    for (int d = 0; d < a->ndim; d++)
      if (!expr_equal(a->shape[d], b->shape[d]) || (a->strides && !expr_equal(a->strides[d], b->strides[d])))
        return false;
  }
  return tir_func_equal(x, y);
}

/* A kernel whose code an earlier one already has is that kernel under a
 * second name: repeated layers (ResNet's blocks, BERT's encoder layers)
 * reach the C compiler once. */
static void emit_alias(StrBuf *sb, const char *name, const char *target) {
  sb_printf(sb,
            "extern const size_t %s_workspace_bytes __attribute__((alias(\"%s_workspace_bytes\")));\n"
            "int32_t %s(DLTensor *const *args, int32_t num_args, const loom_kernel_env *env)"
            " __attribute__((alias(\"%s\")));\n\n",
            name, target, name, target);
}

/* A translation unit takes kernels until it holds about this much C: big
 * enough that the compiler's start-up (~40 ms with the headers) stays
 * small against its work, small enough that a model's kernels spread over
 * the cores (ResNet-50: ~1.8 MB of C). */
enum { UNIT_TARGET_BYTES = 64 * 1024 };

typedef struct Units {
  char **text;
  int n, cap;
} Units;

static void units_push(Units *u, StrBuf *sb) {
  if (u->n == u->cap) {
    u->cap = u->cap ? 2 * u->cap : 8;
    char **t = loom_realloc(u->text, (size_t)u->cap * sizeof *t);
    if (!t) oom_raise("the list of %d translation units", u->cap);
    u->text = t;
  }
  u->text[u->n++] = sb_take(sb);
}

static void units_free(Units *u) {
  for (int i = 0; i < u->n; i++) loom_free(u->text[i]);
  loom_free(u->text);
}

/* Lowers every function, generates C for each distinct one, and packs them
 * into translation units, each opening with the prelude (whose include
 * guard keeps their concatenation valid C too: driver_source). The
 * epilogue goes into the last unit, after a declaration of every kernel. */
static loom_status emit_units(Arena *a, const PrimFunc *const *funcs, int n, const LowerOptions *lower,
                              const char *epilogue, const PrimFunc **lowered, Units *units, LoomError *err) {
  int *original = ARENA_ARRAY(a, int, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    lowered[i] = tir_lower(a, funcs[i], lower, err);
    if (!lowered[i]) {
      if (err && err->status == LOOM_OK) err->status = LOOM_ERR_INTERNAL;
      err_prefix(err, "driver_build: lowering \"%s\"", funcs[i]->name);
      return err ? err->status : LOOM_ERR_INTERNAL;
    }
    original[i] = i;
    for (int j = 0; j < i && original[i] == i; j++)
      if (original[j] == j && same_code(lowered[j], lowered[i])) original[i] = j;
  }
  StrBuf sb;
  sb_init(&sb);
  for (int i = 0; i < n; i++) {
    if (original[i] != i) continue;
    if (sb.len == 0) codegen_c_prelude(&sb);
    loom_status st = codegen_c_func(&sb, lowered[i], err);
    if (st) {
      sb_free(&sb);
      err_prefix(err, "driver_build: generating C for \"%s\"", funcs[i]->name);
      return st;
    }
    for (int k = i + 1; k < n; k++)
      if (original[k] == i) emit_alias(&sb, funcs[k]->name, funcs[i]->name);
    if (sb.len >= UNIT_TARGET_BYTES) units_push(units, &sb);
  }
  if (epilogue) {
    if (sb.len == 0) codegen_c_prelude(&sb);
    for (int i = 0; i < n; i++)
      sb_printf(&sb, "int32_t %s(DLTensor *const *args, int32_t num_args, const loom_kernel_env *env);\n",
                funcs[i]->name);
    sb_puts(&sb, epilogue);
  }
  if (sb.len > 0) units_push(units, &sb);
  sb_free(&sb);
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

  DriverModule *m = loom_calloc(1, sizeof *m);
  if (!m) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "driver_build: out of memory");
  m->n = n;
  m->lowered = ARENA_ARRAY(a, const PrimFunc *, n);

  Units units = {0};
  st = emit_units(a, funcs, n, &lower, opt ? opt->epilogue : NULL, m->lowered, &units, err);
  if (st == LOOM_OK) {
    StrBuf all;
    sb_init(&all);
    for (int i = 0; i < units.n; i++) sb_puts(&all, units.text[i]);
    m->source = sb_take(&all);
    BuildResult r;
    st = build_shared_object_units((const char *const *)units.text, units.n, &build, &r, err);
    if (st == LOOM_OK) {
      memcpy(m->so_path, r.so_path, sizeof m->so_path);
      st = module_load(m->so_path, &m->module, err);
    }
  }
  units_free(&units);
  if (st) {
    loom_free(m->source);
    loom_free(m);
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
  loom_free(m->source);
  loom_free(m);
}
