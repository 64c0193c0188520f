/* The model executor behind include/loom/loom_runtime.h: an artifact, one
 * arena for every intermediate tensor, input/output buffers, and the plan's
 * calls with their DLTensor arguments built once at load time (a run only
 * calls kernels; it allocates nothing).
 *
 * Two ways to run, with bit-identical results (same kernels, arguments,
 * order and env): the artifact's generated run entry (one call per run),
 * used when the artifact has one and profiling is off; else the plan,
 * interpreted call by call (profiling times each). */
#ifndef LOOM_RUNTIME_EXECUTOR_H
#define LOOM_RUNTIME_EXECUTOR_H

#include "loom/loom_runtime.h"
#include "runtime/artifact.h"

/* The loaded artifact (for `loom inspect` and tests). */
const Artifact *executor_artifact(const loom_model *m);

/* Whether the next run goes through the generated run entry. */
bool executor_uses_run_entry(const loom_model *m);
/* false: always interpret the plan (tests compare the two paths). */
void executor_set_run_entry(loom_model *m, bool enable);

#endif
