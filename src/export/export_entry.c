/* loom_export_c (include/loom/loom_tools.h): `loom export-c` for bindings,
 * over export_c_project. */
#include "export/export.h"
#include "loom/loom_tools.h"

#include <stdio.h>

loom_status loom_export_c(const char *onnx_path, const char *out_dir, const char *target, const char *target_options,
                          const char *name, const char *records, const char *weights, int threads, bool bench,
                          bool force, const loom_input_value *inputs, int num_inputs, char *errbuf, size_t errlen) {
  LoomError err = {0};
  loom_status st;
  if (!onnx_path || !out_dir) {
    st = err_set(&err, LOOM_ERR_INVALID_ARG, "loom_export_c: %s is NULL", onnx_path ? "out_dir" : "onnx_path");
  } else {
    ExportOptions opt = {.out_dir = out_dir, .target = target, .target_options = target_options, .records = records,
                         .name = name, .weights = weights, .threads = threads, .bench = bench, .force = force,
                         .inputs = inputs, .num_inputs = inputs ? num_inputs : 0};
    st = export_c_project(onnx_path, &opt, &err);
  }
  if (errbuf && errlen) snprintf(errbuf, errlen, "%s", st ? err.msg : "");
  return st;
}
