/* loom_tune_onnx (include/loom/loom_tools.h): `loom tune` for bindings,
 * over tune_model with the CLI's defaults. */
#include "loom/loom_tools.h"
#include "tune/tune.h"

#include <stdio.h>

loom_status loom_tune_onnx(const char *onnx_path, const char *records, const loom_compile_options *opt, int trials,
                           double seconds, int threads, uint64_t seed, int *measured, int *failed,
                           double *model_ms_default, double *model_ms_tuned, char *errbuf, size_t errlen) {
  LoomError err = {0};
  loom_status st = LOOM_OK;
  if (!onnx_path || !records) {
    st = err_set(&err, LOOM_ERR_INVALID_ARG, "loom_tune_onnx: %s is NULL", onnx_path ? "records" : "onnx_path");
  } else if (trials < 0 || seconds < 0 || threads < 0) {
    st = err_set(&err, LOOM_ERR_INVALID_ARG,
                 "loom_tune_onnx: trials (%d), seconds (%g) and threads (%d) must be >= 0 (0: the default)", trials,
                 seconds, threads);
  } else {
    loom_compile_options defaults = {.opt_level = 2};
    TuneOptions t = {.records = records, .trials = trials, .seconds = seconds, .compile = opt ? opt : &defaults,
                     .threads = threads, .seed = seed};
    TuneProgress last = {0};
    st = tune_model(onnx_path, &t, &last, &err);
    if (!st) {
      if (measured) *measured = last.trials;
      if (failed) *failed = last.failed;
      if (model_ms_default) *model_ms_default = last.model_ms_default;
      if (model_ms_tuned) *model_ms_tuned = last.model_ms_now;
    }
  }
  if (errbuf && errlen) snprintf(errbuf, errlen, "%s", st ? err.msg : "");
  return st;
}
