/* Pieces of the importer shared between its files. */
#ifndef LOOM_FRONTEND_ONNX_IMPORT_INTERNAL_H
#define LOOM_FRONTEND_ONNX_IMPORT_INTERNAL_H

#include "frontend/onnx/onnx.h"
#include "frontend/onnx/onnx_proto.h"

/* String -> ValueId map (open addressing; names are owned elsewhere). */
typedef struct NameMap {
  const char **keys;
  ValueId *vals;
  int cap, count;
} NameMap;

typedef struct Importer {
  Graph *g;
  Arena *scratch; /* decoded protobuf structs; freed after import */
  const char *base_dir;
  int64_t opset;
  NameMap names;
  LoomError *err;
} Importer;

void namemap_init(NameMap *m);
void namemap_free(NameMap *m);
void namemap_put(NameMap *m, const char *key, ValueId v);
/* -1 when absent. */
ValueId namemap_get(const NameMap *m, const char *key);

/* ONNX data type -> DType; false for types Loom does not support. */
bool onnx_dtype_to_loom(int onnx_type, DType *out);
const char *onnx_dtype_name(int onnx_type);
/* Decodes a TensorProto's data into a graph tensor in the graph arena.
 * `what` names the tensor in messages ("initializer \"w\""). */
GraphTensor *onnx_tensor_to_graph(Importer *im, const OnnxTensor *t, const char *what);

/* Converts one node (already checked to be supported) and adds it to the
 * graph; inputs and outputs are resolved by name through im->names. */
loom_status onnx_convert_node(Importer *im, const OnnxNode *n);
/* True when the op type (default domain) has a converter. */
bool onnx_op_supported(const char *op_type);

#endif
