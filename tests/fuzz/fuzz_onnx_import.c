/* libFuzzer target: arbitrary bytes through the ONNX importer and the graph
 * passes that run on every import (control-flow inlining included), and
 * through the TensorProto (.pb) reader of `loom run`. Any crash, leak or sanitizer report is a
 * bug; errors are expected. External data is refused (no base directory),
 * so the fuzzer cannot touch the file system. */
#include "frontend/onnx/onnx.h"
#include "frontend/onnx/tensor_pb.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  LoomError err = {0};
  Graph *t = graph_new("tensor");
  onnx_tensor_pb_decode(t, data, size, "fuzz.pb", &err);
  graph_free(t);
  Graph *g = onnx_import_bytes(data, size, NULL, &err);
  if (!g) return 0;
  onnx_prepare_graph(g, "fuzz.onnx", &err);
  StrBuf sb;
  sb_init(&sb);
  graph_print(g, &sb);
  sb_free(&sb);
  graph_free(g);
  return 0;
}
