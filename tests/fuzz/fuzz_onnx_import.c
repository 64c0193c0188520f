/* libFuzzer target: arbitrary bytes through the ONNX importer and the graph
 * passes that run on every import. Any crash, leak or sanitizer report is a
 * bug; errors are expected. External data is refused (no base directory),
 * so the fuzzer cannot touch the file system. */
#include "frontend/onnx/onnx.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  LoomError err = {0};
  Graph *g = onnx_import_bytes(data, size, NULL, &err);
  if (!g) return 0;
  loom_status st = graph_pass_fold_constants(g, &err);
  if (!st) st = graph_pass_remove_identity(g, &err);
  if (!st) st = graph_pass_dce(g, &err);
  if (!st) st = graph_pass_infer(g, &err);
  StrBuf sb;
  sb_init(&sb);
  graph_print(g, &sb);
  sb_free(&sb);
  graph_free(g);
  return 0;
}
