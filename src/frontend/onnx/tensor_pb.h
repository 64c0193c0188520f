/* ONNX TensorProto files (.pb): the tensor files of ONNX's own test suite,
 * which `loom run` reads as inputs and writes as outputs next to .npy.
 *
 * Decoding accepts every storage form the importer accepts for initializers
 * (raw_data, float/double/int32/int64/uint64_data) and no external data.
 * Encoding always writes dims, data_type, name and raw_data
 * (little-endian), which is what onnx.numpy_helper.from_array produces. */
#ifndef LOOM_FRONTEND_ONNX_TENSOR_PB_H
#define LOOM_FRONTEND_ONNX_TENSOR_PB_H

#include "graph/graph.h"

#include <stddef.h>
#include <stdint.h>

/* Decodes a serialized TensorProto into a tensor in g's arena. `what` names
 * it in messages (the file). NULL with err set: a malformed message names
 * the byte offset; strings and external data are LOOM_ERR_UNSUPPORTED. */
GraphTensor *onnx_tensor_pb_decode(Graph *g, const uint8_t *data, size_t size, const char *what, LoomError *err);
/* Reads and decodes a .pb file. */
GraphTensor *onnx_tensor_pb_read(Graph *g, const char *path, LoomError *err);

/* Encodes a dense tensor as a TensorProto into a malloc'd buffer (*out,
 * *size). LOOM_ERR_UNSUPPORTED when the dtype has no ONNX type. */
loom_status onnx_tensor_pb_encode(const char *name, DType dtype, int rank, const int64_t *dims, const void *data,
                                  uint8_t **out, size_t *size, LoomError *err);

#endif
