/* libFuzzer target: arbitrary bytes through the artifact loader's checks
 * (artifact_parse) and the .npy reader, the two parsers `loom run` feeds
 * with files from users. Any crash, leak or sanitizer report is a bug;
 * errors are expected.
 *
 * The checksum is skipped on one pass so mutations reach the JSON schema
 * checks (with it, nearly every mutated input stops at the checksum), and
 * kept on another so the header path with it is covered. Nothing is
 * dlopen'ed: the loader only dlopens bytes whose checksum matched, and
 * glibc's ELF loader is not ours to fuzz. */
#include "runtime/artifact.h"
#include "runtime/npy.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  LoomError err = {0};
  Artifact *a = NULL;
  if (artifact_parse(data, size, "fuzz.loom", ARTIFACT_SKIP_CHECKSUM, &a, &err) == LOOM_OK) {
    /* walk what the executor would touch */
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
    artifact_free(a);
  }
  a = NULL;
  if (artifact_parse(data, size, "fuzz.loom", ARTIFACT_SKIP_TARGET_CHECK, &a, &err) == LOOM_OK) artifact_free(a);
  NpyArray arr;
  if (npy_parse(data, size, "fuzz.npy", &arr, &err) == LOOM_OK) npy_free(&arr);
  return 0;
}
