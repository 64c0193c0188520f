/* External (BYOC) kernels at load time (docs/byoc.md).
 *
 * The kernels a back end wrote as C call its runtime library directly:
 * that library is loaded first, with global symbols, so the kernels'
 * object (which leaves those symbols undefined) resolves against it. The
 * kernels of a back end that returned a blob call through a slot,
 * NAME_external (loom/loom_kernel.h), which is filled here once the back
 * end's runtime has built its state from the blob and the weights: the
 * one-time work (weights reordered into the vendor's layout...) happens at
 * load, never per run. Every failure names the back end and what it
 * lacked. */
#include "loom/loom_byoc.h"
#include "runtime/artifact.h"
#include "runtime/byoc_library.h"
#include "support/alloc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

loom_status artifact_load_byoc_runtimes(Artifact *art, const char *what, LoomError *err) {
  int32_t n = art->spec.num_byoc_runtimes;
  if (n == 0) return LOOM_OK;
  art->byoc_handles = loom_calloc((size_t)n, sizeof *art->byoc_handles);
  if (!art->byoc_handles) return err_set(err, LOOM_ERR_RUNTIME, "artifact \"%s\": out of memory", what);
  for (int32_t i = 0; i < n; i++) {
    const ArtifactByocRuntime *rt = &art->spec.byoc_runtimes[i];
    char why[1024];
    void *h = byoc_library_open(rt->library, why, sizeof why);
    if (!h)
      return err_set(err, LOOM_ERR_IO,
                     "artifact \"%s\": its kernels from BYOC back end \"%s\" need the runtime library \"%s\", which "
                     "cannot be loaded: %s",
                     what, rt->backend, rt->library, why);
    art->byoc_handles[art->num_byoc_handles++] = h;
  }
  return LOOM_OK;
}

/* The runtime of kernel k's back end, from its library. */
static loom_status find_runtime(Artifact *art, const ArtifactKernel *k, const char *what,
                                const loom_byoc_runtime **out, LoomError *err) {
  for (int32_t i = 0; i < art->num_byoc_handles; i++) {
    const ArtifactByocRuntime *rt = &art->spec.byoc_runtimes[i];
    if (strcmp(rt->backend, k->backend)) continue;
    void *sym = dlsym(art->byoc_handles[i], k->runtime_entry);
    if (!sym)
      return err_set(err, LOOM_ERR_PARSE,
                     "artifact \"%s\": kernel %s: the runtime library \"%s\" of BYOC back end \"%s\" lacks its runtime "
                     "entry \"%s\"",
                     what, k->name, rt->library, k->backend, k->runtime_entry);
    loom_byoc_runtime_fn fn;
    memcpy(&fn, &sym, sizeof fn);
    const loom_byoc_runtime *r = fn();
    if (!r || r->abi_version != LOOM_BYOC_ABI_VERSION || !r->init || !r->run)
      return err_set(err, LOOM_ERR_UNSUPPORTED,
                     "artifact \"%s\": kernel %s: BYOC back end \"%s\"'s runtime entry \"%s\" returned %s (expected "
                     "ABI version %d with init and run)",
                     what, k->name, k->backend, k->runtime_entry, !r ? "nothing" : "another ABI or no init/run",
                     LOOM_BYOC_ABI_VERSION);
    *out = r;
    return LOOM_OK;
  }
  return err_set(err, LOOM_ERR_PARSE, "artifact \"%s\": kernel %s: BYOC back end \"%s\" has no runtime library listed",
                 what, k->name, k->backend);
}

loom_status artifact_init_external_kernels(Artifact *art, const char *what, int num_threads, LoomError *err) {
  const ArtifactSpec *s = &art->spec;
  int32_t n = s->num_kernels;
  bool any = false;
  for (int32_t k = 0; k < n; k++) any |= s->kernels[k].runtime_entry != NULL;
  if (!any) return LOOM_OK;
  art->external_runtimes = loom_calloc((size_t)n, sizeof *art->external_runtimes);
  art->external_states = loom_calloc((size_t)n, sizeof *art->external_states);
  if (!art->external_runtimes || !art->external_states)
    return err_set(err, LOOM_ERR_RUNTIME, "artifact \"%s\": out of memory", what);
  for (int32_t k = 0; k < n; k++) {
    const ArtifactKernel *kk = &s->kernels[k];
    if (!kk->runtime_entry) continue;
    const loom_byoc_runtime *rt = NULL;
    loom_status st = find_runtime(art, kk, what, &rt, err);
    if (st) return st;
    char slot_name[160];
    snprintf(slot_name, sizeof slot_name, "%s_external", kk->name);
    loom_external_slot *slot = module_symbol(art->module, slot_name);
    if (!slot)
      return err_set(err, LOOM_ERR_PARSE, "artifact \"%s\": its shared object lacks \"%s\" for kernel %s", what,
                     slot_name, kk->name);
    const ArtifactCall *call = NULL; /* the weights are the kernel's call's */
    for (int32_t c = 0; c < s->num_calls && !call; c++)
      if (s->calls[c].kernel == k) call = &s->calls[c];
    int32_t np = call ? call->num_args : 0;
    const void **weights = loom_calloc((size_t)np + 1, sizeof *weights);
    if (!weights) return err_set(err, LOOM_ERR_RUNTIME, "artifact \"%s\": out of memory", what);
    for (int32_t j = 0; j < np; j++)
      if (call->args[j].kind == ARTIFACT_ARG_WEIGHT) weights[j] = s->weights[call->args[j].index].data;
    const ArtifactWeight *blob = &s->weights[kk->blob];
    void *state = NULL;
    int rc = rt->init(blob->data, (size_t)blob->t.nbytes, weights, np, num_threads, &state);
    loom_free(weights);
    if (rc)
      return err_set(err, LOOM_ERR_RUNTIME, "artifact \"%s\": BYOC back end \"%s\": init of kernel %s failed (code %d)",
                     what, kk->backend, kk->name, rc);
    art->external_runtimes[k] = rt;
    art->external_states[k] = state;
    slot->state = state;
    slot->run = rt->run;
  }
  return LOOM_OK;
}

void artifact_release_external_kernels(Artifact *art) {
  for (int32_t k = 0; art->external_runtimes && k < art->spec.num_kernels; k++) {
    const loom_byoc_runtime *rt = art->external_runtimes[k];
    if (rt && rt->release) rt->release(art->external_states[k]);
  }
  loom_free(art->external_runtimes);
  loom_free(art->external_states);
  art->external_runtimes = NULL;
  art->external_states = NULL;
}
