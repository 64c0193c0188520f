/* Loading back ends for `--byoc NAME|PATH.so,...`: a name without a slash
 * or ".so" is a back end built into Loom (byoc_builtin), anything else a
 * plugin shared library exporting loom_byoc_register (loom/loom_byoc.h).
 * Every description is checked before use, ABI version first (a plugin
 * built against another layout of the structures must not be read past
 * that field), and each error names the back end and what was expected. */
#include "byoc/byoc.h"
#include "runtime/byoc_library.h"
#include "support/alloc.h"

#include <dlfcn.h>
#include <string.h>

static const struct {
  const char *name;
  const loom_byoc_plugin *(*get)(void);
} k_builtin[] = {
    {"cblas", byoc_cblas_plugin},
    {"dnnl", byoc_dnnl_plugin},
};

const loom_byoc_plugin *byoc_builtin(const char *name) {
  for (size_t i = 0; i < sizeof k_builtin / sizeof k_builtin[0]; i++)
    if (!strcmp(k_builtin[i].name, name)) return k_builtin[i].get();
  return NULL;
}

static bool is_backend_name(const char *s) {
  if (!s || !*s || strlen(s) > 32) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return false;
  return true;
}

loom_status byoc_plugin_check(const loom_byoc_plugin *p, const char *who, LoomError *err) {
  if (!p) return err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s returned no plugin description", who, LOOM_BYOC_REGISTER_SYMBOL);
  if (p->abi_version != LOOM_BYOC_ABI_VERSION)
    return err_set(err, LOOM_ERR_UNSUPPORTED,
                   "%s: plugin ABI version %d, expected %d (rebuild it against this Loom's loom/loom_byoc.h)", who,
                   (int)p->abi_version, LOOM_BYOC_ABI_VERSION);
  if (!is_backend_name(p->name))
    return err_set(err, LOOM_ERR_INVALID_ARG,
                   "%s: back end name \"%s\": expected 1 to 32 lower-case letters, digits or '_'", who,
                   p->name ? p->name : "(null)");
  if (!p->codegen) return err_set(err, LOOM_ERR_INVALID_ARG, "%s (back end \"%s\"): no codegen function", who, p->name);
  if (!p->patterns || !p->patterns[0].name)
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s (back end \"%s\"): no patterns", who, p->name);
  for (const loom_byoc_pattern *q = p->patterns; q->name; q++) {
    loom_status st = byoc_pattern_check(q, who, err);
    if (st) return st;
  }
  return LOOM_OK;
}

static int pattern_count(const loom_byoc_plugin *p) {
  int n = 0;
  while (p->patterns[n].name) n++;
  return n;
}

/* A path to a plugin (a slash, or a name ending in ".so"), not a built-in name. */
static bool is_plugin_path(const char *spec) {
  size_t n = strlen(spec);
  return strchr(spec, '/') || (n > 3 && !strcmp(spec + n - 3, ".so"));
}

static int by_length_desc(const loom_byoc_plugin *p, int a, int b) {
  return byoc_pattern_length(&p->patterns[b]) - byoc_pattern_length(&p->patterns[a]);
}

ByocSession *byoc_session_new(int max_backends) {
  ByocSession *s = loom_calloc(1, sizeof *s);
  if (!s) return NULL;
  s->arena = arena_new();
  s->backends = ARENA_ARRAY(s->arena, ByocBackend, max_backends);
  s->max_backends = max_backends;
  return s;
}

loom_status byoc_session_add(ByocSession *s, const loom_byoc_plugin *p, const char *spec, void *handle, LoomError *err) {
  if (s->nbackends == s->max_backends) {
    if (handle) dlclose(handle);
    return err_set(err, LOOM_ERR_INVALID_ARG, "--byoc: more than %d back ends", s->max_backends);
  }
  ByocBackend *be = &s->backends[s->nbackends++]; /* closed by byoc_session_free, also on error */
  memset(be, 0, sizeof *be);
  be->spec = arena_strdup(s->arena, spec);
  be->handle = handle;
  const char *who = arena_printf(s->arena, "BYOC %s \"%s\"", is_plugin_path(spec) ? "plugin" : "back end", spec);
  loom_status st = byoc_plugin_check(p, who, err);
  if (st) return st;
  be->plugin = p;
  for (int k = 0; k < s->nbackends - 1; k++)
    if (!strcmp(s->backends[k].plugin->name, p->name))
      return err_set(err, LOOM_ERR_INVALID_ARG, "--byoc: back end \"%s\" is named twice (%s and %s)", p->name,
                     s->backends[k].spec, spec);
  be->npatterns = pattern_count(p);
  be->pattern_order = ARENA_ARRAY(s->arena, int, be->npatterns);
  for (int k = 0; k < be->npatterns; k++) be->pattern_order[k] = k;
  /* Longest first; equal lengths keep the plugin's order (insertion sort is stable). */
  for (int k = 1; k < be->npatterns; k++)
    for (int j = k; j > 0 && by_length_desc(p, be->pattern_order[j - 1], be->pattern_order[j]) > 0; j--) {
      int t = be->pattern_order[j];
      be->pattern_order[j] = be->pattern_order[j - 1];
      be->pattern_order[j - 1] = t;
    }
  return LOOM_OK;
}

/* One --byoc item: a built-in name, or a plugin's path (dlopen'ed). */
static loom_status load_one(ByocSession *s, const char *spec, LoomError *err) {
  if (!is_plugin_path(spec)) {
    const loom_byoc_plugin *p = byoc_builtin(spec);
    if (!p)
      return err_set(err, LOOM_ERR_INVALID_ARG,
                     "--byoc %s: no back end of that name is built in (built in: cblas, dnnl); a plugin is a path to its "
                     ".so",
                     spec);
    return byoc_session_add(s, p, spec, NULL, err);
  }
  /* RTLD_NODELETE: a vendor library with its own threads (OpenMP, BLAS)
   * must not be unmapped under them when the session closes. */
  void *handle = dlopen(spec, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    const char *why = dlerror();
    return err_set(err, LOOM_ERR_IO, "BYOC plugin \"%s\": cannot load it: %s", spec, why ? why : "unknown dlopen error");
  }
  void *sym = dlsym(handle, LOOM_BYOC_REGISTER_SYMBOL);
  if (!sym) {
    dlclose(handle);
    return err_set(err, LOOM_ERR_INVALID_ARG,
                   "BYOC plugin \"%s\": exports no \"%s\" (expected: const loom_byoc_plugin *%s(void), loom/loom_byoc.h)",
                   spec, LOOM_BYOC_REGISTER_SYMBOL, LOOM_BYOC_REGISTER_SYMBOL);
  }
  loom_byoc_register_fn reg;
  memcpy(&reg, &sym, sizeof reg);
  return byoc_session_add(s, reg(), spec, handle, err);
}

loom_status byoc_session_open(const char *list, ByocSession **out, LoomError *err) {
  *out = NULL;
  int cap = 1;
  for (const char *c = list; c && *c; c++) cap += *c == ',';
  ByocSession *s = byoc_session_new(cap);
  if (!s) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "--byoc: out of memory");
  loom_status st = LOOM_OK;
  for (const char *p = list ? list : ""; !st;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    if (n == 0) {
      st = err_set(err, LOOM_ERR_INVALID_ARG, "--byoc \"%s\": expected NAME or PATH.so, comma-separated", list ? list : "");
      break;
    }
    st = load_one(s, arena_strndup(s->arena, p, n), err);
    if (!comma) break;
    p = comma + 1;
  }
  if (st) {
    byoc_session_free(s);
    return st;
  }
  *out = s;
  return LOOM_OK;
}

loom_status byoc_session_load_runtimes(ByocSession *s, LoomError *err) {
  if (s->runtime_handles) return LOOM_OK;
  s->runtime_handles = ARENA_ARRAY(s->arena, void *, s->nbackends);
  for (int b = 0; b < s->nbackends; b++) {
    const loom_byoc_plugin *p = s->backends[b].plugin;
    if (!p->runtime_library || !s->backends[b].claimed) continue;
    char why[1024];
    void *h = byoc_library_open(p->runtime_library, why, sizeof why);
    if (!h)
      return err_set(err, LOOM_ERR_IO, "BYOC back end \"%s\": cannot load its runtime library \"%s\": %s", p->name,
                     p->runtime_library, why);
    s->runtime_handles[s->nruntime_handles++] = h;
  }
  return LOOM_OK;
}

void byoc_session_free(ByocSession *s) {
  if (!s) return;
  for (int i = 0; i < s->nruntime_handles; i++) dlclose(s->runtime_handles[i]);
  for (int b = 0; b < s->nbackends; b++)
    if (s->backends[b].handle) dlclose(s->backends[b].handle);
  arena_free(s->arena);
  loom_free(s);
}
