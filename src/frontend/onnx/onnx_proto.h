/* The subset of onnx.proto that Loom reads, decoded into plain structs in an
 * arena. Field numbers are those of the public onnx.proto schema. Nothing is
 * validated here beyond the wire format; import.c checks meaning. */
#ifndef LOOM_FRONTEND_ONNX_PROTO_H
#define LOOM_FRONTEND_ONNX_PROTO_H

#include "frontend/onnx/pb.h"
#include "support/arena.h"

/* TensorProto.DataType values. */
enum {
  ONNX_UNDEFINED = 0, ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3, ONNX_UINT16 = 4, ONNX_INT16 = 5,
  ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_STRING = 8, ONNX_BOOL = 9, ONNX_FLOAT16 = 10, ONNX_DOUBLE = 11,
  ONNX_UINT32 = 12, ONNX_UINT64 = 13, ONNX_BFLOAT16 = 16, ONNX_FLOAT8E4M3FN = 17, ONNX_FLOAT8E4M3FNUZ = 18,
  ONNX_FLOAT8E5M2 = 19, ONNX_FLOAT8E5M2FNUZ = 20, ONNX_UINT4 = 21, ONNX_INT4 = 22, ONNX_FLOAT4E2M1 = 23,
  ONNX_FLOAT8E8M0 = 24, ONNX_UINT2 = 25, ONNX_INT2 = 26,
};

/* AttributeProto.AttributeType values. */
enum {
  ONNX_ATTR_UNDEFINED = 0, ONNX_ATTR_FLOAT = 1, ONNX_ATTR_INT = 2, ONNX_ATTR_STRING = 3, ONNX_ATTR_TENSOR = 4,
  ONNX_ATTR_GRAPH = 5, ONNX_ATTR_FLOATS = 6, ONNX_ATTR_INTS = 7, ONNX_ATTR_STRINGS = 8, ONNX_ATTR_TENSORS = 9,
  ONNX_ATTR_GRAPHS = 10, ONNX_ATTR_SPARSE_TENSOR = 11,
};

typedef struct OnnxBytes {
  const uint8_t *data; /* points into the model file's bytes */
  size_t len;
} OnnxBytes;

typedef struct OnnxTensor {
  const char *name;
  int data_type;
  int64_t *dims;
  int ndims;
  OnnxBytes raw_data;
  bool has_raw_data;
  PbF64List float_data, double_data; /* float_data is widened to double */
  PbI64List int32_data, int64_data, uint64_data;
  int data_location; /* 0 DEFAULT, 1 EXTERNAL */
  const char *ext_location;
  int64_t ext_offset, ext_length; /* length -1 when absent */
  size_t offset; /* byte offset of the TensorProto in the file, for messages */
} OnnxTensor;

typedef struct OnnxGraph OnnxGraph;

typedef struct OnnxAttr {
  const char *name;
  int type; /* ONNX_ATTR_*; 0 when the producer left it out (inferred) */
  double f;
  int64_t i;
  OnnxBytes s;
  OnnxTensor *t;
  OnnxGraph *g;
  PbF64List floats;
  PbI64List ints;
  int nstrings;
  OnnxBytes *strings;
  bool has_f, has_i, has_s;
  int ntensors, ngraphs;
} OnnxAttr;

typedef struct OnnxNode {
  const char *name, *op_type, *domain;
  const char **inputs, **outputs;
  int ninputs, noutputs;
  OnnxAttr *attrs;
  int nattrs;
} OnnxNode;

typedef struct OnnxDim {
  int64_t value; /* -1 when unknown */
  const char *param; /* symbolic name or NULL */
} OnnxDim;

typedef struct OnnxValueInfo {
  const char *name;
  int elem_type; /* 0 when absent or not a tensor */
  bool has_shape;
  bool is_tensor;
  OnnxDim *dims;
  int ndims;
} OnnxValueInfo;

struct OnnxGraph {
  const char *name;
  OnnxNode *nodes;
  int nnodes;
  OnnxTensor *initializers;
  int ninitializers;
  OnnxValueInfo *inputs, *outputs, *value_infos;
  int ninputs, noutputs, nvalue_infos;
  int nsparse_initializers;
};

typedef struct OnnxOpset {
  const char *domain; /* "" or "ai.onnx" for the default domain */
  int64_t version;
} OnnxOpset;

typedef struct OnnxModel {
  int64_t ir_version;
  const char *producer_name;
  OnnxOpset *opsets;
  int nopsets;
  OnnxGraph *graph;
} OnnxModel;

/* Decodes a ModelProto. Strings and lists live in the arena; raw_data points
 * into `data`, which must outlive the model. NULL with err set on a
 * malformed file. */
OnnxModel *onnx_model_decode(Arena *a, const uint8_t *data, size_t size, LoomError *err);
/* Decodes one serialized TensorProto (a .pb tensor file); same lifetime
 * rules. */
OnnxTensor *onnx_tensor_decode(Arena *a, const uint8_t *data, size_t size, LoomError *err);

#endif
