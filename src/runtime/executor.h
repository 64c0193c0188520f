/* The model executor behind include/loom/loom_runtime.h: an artifact, one
 * arena for every intermediate tensor, input/output buffers, and the plan's
 * calls with their DLTensor arguments built once at load time (a run only
 * calls kernels; it allocates nothing). */
#ifndef LOOM_RUNTIME_EXECUTOR_H
#define LOOM_RUNTIME_EXECUTOR_H

#include "loom/loom_runtime.h"
#include "runtime/artifact.h"

/* The loaded artifact (for `loom inspect` and tests). */
const Artifact *executor_artifact(const LoomModel *m);

#endif
