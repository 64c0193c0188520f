/* loom_peak_gflops_per_core (include/loom/loom_tools.h): the 100% of
 * `loom run --profile`'s "% of peak", for bindings. */
#include "loom/loom_tools.h"
#include "target/target.h"

double loom_peak_gflops_per_core(const char *artifact_target) {
  Target t = artifact_target ? target_for_artifact(artifact_target) : target_host();
  return target_peak_gflops_per_core(&t);
}
