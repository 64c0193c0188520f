/* Writing the compiled artifact `model.loom` (layout and metadata schema:
 * src/runtime/artifact.h, docs/runtime.md). The compiler's side of the
 * artifact: a deployed model needs only the loader in src/runtime, so the
 * writer (JSON output, the atomic file) is not in libloomrt. It checks what
 * it wrote with the loader's artifact_parse before the file appears. */
#ifndef LOOM_ARTIFACT_WRITE_ARTIFACT_WRITE_H
#define LOOM_ARTIFACT_WRITE_ARTIFACT_WRITE_H

#include "runtime/artifact.h"

/* Writes `path` atomically (temporary file in the same directory, checked by
 * artifact_parse, then rename). LOOM_ERR_INVALID_ARG naming the field at
 * fault for a malformed spec, LOOM_ERR_IO naming the path. On failure no file
 * is left at `path` (an older one stays untouched) nor a temporary. */
loom_status artifact_write(const char *path, const ArtifactSpec *spec, LoomError *err);

#endif
