/* libFuzzer target: arbitrary bytes through the artifact loader's checks
 * (artifact_parse) and the .npy reader, the two parsers `loom run` feeds
 * with files from users. Any crash, leak or sanitizer report is a bug;
 * errors are expected.
 *
 * Each input is parsed twice. As is, with every check `loom run` makes:
 * nearly every mutation stops at a checksum, which is the point, and this
 * covers the magic, version and header-CRC paths. Then a copy with its
 * checksums recomputed (artifact_reseal), so the mutation reaches what the
 * CRCs guard: header fields, section bounds, padding, the CRC checks
 * passing, and the JSON schema; target and Loom version are not checked
 * there, as `loom inspect` does not, so mutated targets go on too. Nothing
 * is dlopen'ed: the loader only dlopens bytes whose checksums matched, and
 * glibc's ELF loader is not ours to fuzz. */
#include "runtime/artifact.h"
#include "runtime/artifact_checksum.h"
#include "tensor_data/npy.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Touches what the executor would: every argument's shape, every weight's
 * last byte (ASan checks they lie inside the image). */
static void walk(const Artifact *a) {
  const ArtifactSpec *s = &a->spec;
  volatile uint64_t sink = 0;
  for (int32_t c = 0; c < s->num_calls; c++)
    for (int32_t j = 0; j < s->calls[c].num_args; j++) {
      const ArtifactArg *arg = &s->calls[c].args[j];
      for (int32_t d = 0; d < arg->ndim; d++) sink += (uint64_t)arg->shape[d];
      sink += (uint64_t)s->kernels[s->calls[c].kernel].num_nodes;
    }
  for (int32_t w = 0; w < s->num_weights; w++)
    if (s->weights[w].t.nbytes) sink += ((const uint8_t *)s->weights[w].data)[s->weights[w].t.nbytes - 1];
  (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  LoomError err = {0};
  Artifact *a = NULL;
  if (artifact_parse(data, size, "fuzz.loom", 0, &a, &err) == LOOM_OK) {
    walk(a);
    artifact_free(a);
  }
  /* an exact-size copy, so ASan sees any read past the image */
  uint8_t *sealed = malloc(size ? size : 1);
  if (sealed) {
    memcpy(sealed, data, size);
    artifact_reseal(sealed, size);
    a = NULL;
    if (artifact_parse(sealed, size, "fuzz.loom", ARTIFACT_SKIP_TARGET_CHECK | ARTIFACT_SKIP_VERSION_CHECK, &a,
                       &err) == LOOM_OK) {
      walk(a);
      artifact_free(a);
    }
    free(sealed);
  }
  NpyArray arr;
  if (npy_parse(data, size, "fuzz.npy", &arr, &err) == LOOM_OK) npy_free(&arr);
  return 0;
}
