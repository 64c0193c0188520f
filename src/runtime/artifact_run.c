/* The contract between the compiler's generated run entry and the artifact:
 * the weights blob layout and a hash of the plan the entry hard-codes. Both
 * sides compute them with these functions, so they agree by construction;
 * the hash lets the loader refuse a .so that does not match the metadata. */
#include "runtime/artifact.h"

#include "runtime/artifact_format.h"
#include "runtime/dl_dtype.h"

#include <string.h>

bool artifact_weight_layout(const ArtifactWeight *ws, int32_t n, uint64_t *offsets, uint64_t *blob_bytes) {
  uint64_t blob = 0;
  for (int32_t i = 0; i < n; i++) {
    const ArtifactTensor *t = &ws[i].t;
    uint64_t nb;
    size_t eb = dl_dtype_bytes(t->dtype);
    if (!eb || t->ndim < 0 || t->ndim > ARTIFACT_MAX_DIMS || (t->ndim > 0 && !t->shape) ||
        !dl_shape_bytes(t->shape, t->ndim, eb, ARTIFACT_MAX_BYTES, &nb))
      return false;
    offsets[i] = blob;
    blob = artifact_align(blob + nb);
  }
  *blob_bytes = blob;
  return true;
}

bool artifact_arg_tensor(const ArtifactSpec *s, const ArtifactArg *a, DLDataType *dtype, int32_t *ndim,
                         const int64_t **shape) {
  if (a->kind == ARTIFACT_ARG_ARENA || a->kind == ARTIFACT_ARG_OUTPUT_SHAPE || a->view) {
    *dtype = a->dtype;
    *ndim = a->ndim;
    *shape = a->shape;
    return true;
  }
  const ArtifactTensor *src = NULL;
  if (a->index >= 0) {
    if (a->kind == ARTIFACT_ARG_INPUT && a->index < s->num_inputs) src = &s->inputs[a->index];
    if (a->kind == ARTIFACT_ARG_OUTPUT && a->index < s->num_outputs) src = &s->outputs[a->index];
    if (a->kind == ARTIFACT_ARG_WEIGHT && a->index < s->num_weights) src = &s->weights[a->index].t;
  }
  if (!src) return false;
  *dtype = src->dtype;
  *ndim = src->ndim;
  *shape = src->shape;
  return true;
}

static uint64_t mix_u64(uint64_t h, uint64_t v) {
  uint8_t b[8];
  hdr_put_u64(b, v);
  return artifact_fnv1a64(h, b, 8);
}

static uint64_t mix_tensor(uint64_t h, DLDataType dtype, int32_t ndim, const int64_t *shape) {
  h = mix_u64(h, (uint64_t)dtype.code << 32 | (uint64_t)dtype.bits << 16 | dtype.lanes);
  h = mix_u64(h, (uint64_t)(int64_t)ndim);
  for (int32_t d = 0; shape && d < ndim; d++) h = mix_u64(h, (uint64_t)shape[d]);
  return h;
}

static uint64_t mix_str(uint64_t h, const char *s) {
  size_t n = s ? strlen(s) : 0;
  h = mix_u64(h, n);
  return artifact_fnv1a64(h, s ? s : "", n);
}

uint64_t artifact_run_hash(const ArtifactSpec *s, const uint64_t *weight_offsets) {
  uint64_t h = artifact_fnv1a64(ARTIFACT_FNV_OFFSET, "loom-run-1", 10);
  h = mix_u64(h, (uint64_t)s->num_inputs);
  for (int32_t i = 0; i < s->num_inputs; i++)
    h = mix_tensor(h, s->inputs[i].dtype, s->inputs[i].ndim, s->inputs[i].shape);
  h = mix_u64(h, (uint64_t)s->num_outputs);
  for (int32_t i = 0; i < s->num_outputs; i++) {
    h = mix_tensor(h, s->outputs[i].dtype, s->outputs[i].ndim, s->outputs[i].shape);
    if (s->outputs[i].dynamic) h = mix_u64(h, 0x64796e); /* the entry writes its shape ("dyn") */
  }
  h = mix_u64(h, (uint64_t)s->num_weights);
  for (int32_t i = 0; i < s->num_weights; i++) {
    const ArtifactTensor *t = &s->weights[i].t;
    h = mix_u64(h, weight_offsets ? weight_offsets[i] : 0);
    h = mix_tensor(h, t->dtype, t->ndim, t->shape);
  }
  h = mix_u64(h, s->arena_bytes);
  h = mix_u64(h, (uint64_t)s->num_calls);
  for (int32_t c = 0; c < s->num_calls; c++) {
    const ArtifactCall *call = &s->calls[c];
    bool known = call->kernel >= 0 && call->kernel < s->num_kernels;
    h = mix_str(h, known ? s->kernels[call->kernel].name : NULL);
    h = mix_u64(h, (uint64_t)call->num_args);
    for (int32_t j = 0; j < call->num_args; j++) {
      const ArtifactArg *a = &call->args[j];
      h = mix_u64(h, (uint64_t)a->kind);
      h = mix_u64(h, a->kind == ARTIFACT_ARG_ARENA ? a->offset : (uint64_t)(int64_t)a->index);
      DLDataType dt = {0, 0, 0};
      int32_t nd = 0;
      const int64_t *sh = NULL;
      if (artifact_arg_tensor(s, a, &dt, &nd, &sh)) h = mix_tensor(h, dt, nd, sh);
    }
  }
  return h;
}
