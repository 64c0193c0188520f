#include "frontend/onnx/tensor_pb.h"

#include "frontend/onnx/import_internal.h"
#include "support/alloc.h"

#include <stdlib.h>
#include <string.h>

GraphTensor *onnx_tensor_pb_decode(Graph *g, const uint8_t *data, size_t size, const char *what, LoomError *err) {
  Arena *scratch = arena_new();
  GraphTensor *out = NULL;
  OnnxTensor *t = onnx_tensor_decode(scratch, data, size, err);
  if (!t) {
    err_prefix(err, "%s: not a valid TensorProto: ", what);
  } else if (t->data_type == ONNX_STRING) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: string tensors are not supported", what);
  } else if (t->data_location == 1) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: a tensor file with external data is not supported", what);
  } else {
    /* base_dir NULL: the importer refuses external data, which was checked above anyway. */
    Importer im = {.g = g, .scratch = scratch, .base_dir = NULL, .err = err};
    out = onnx_tensor_to_graph(&im, t, what);
  }
  arena_free(scratch);
  return out;
}

GraphTensor *onnx_tensor_pb_read(Graph *g, const char *path, LoomError *err) {
  size_t len;
  uint8_t *buf = onnx_read_file(path, &len, err);
  if (!buf) return NULL;
  GraphTensor *t = onnx_tensor_pb_decode(g, buf, len, path, err);
  loom_free(buf);
  return t;
}

static int onnx_type_of(DType t) {
  for (int k = ONNX_FLOAT; t.lanes == 1 && k <= ONNX_INT2; k++) {
    DType d;
    if (onnx_dtype_to_loom(k, &d) && dtype_eq(d, t)) return k;
  }
  return ONNX_UNDEFINED;
}

static size_t put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  do {
    p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  return n;
}

loom_status onnx_tensor_pb_encode(const char *name, DType dtype, int rank, const int64_t *dims, const void *data,
                                  uint8_t **out, size_t *size, LoomError *err) {
  int type = onnx_type_of(dtype);
  if (type == ONNX_UNDEFINED)
    return err_set(err, LOOM_ERR_UNSUPPORTED, "tensor \"%s\": its dtype has no ONNX TensorProto type", name);
  size_t numel = 1;
  for (int k = 0; k < rank; k++) numel *= (size_t)dims[k];
  /* 4- and 2-bit types are packed (one byte each in memory) */
  bool packed = dtype.bits < 8 && !dtype_is_bool(dtype);
  size_t nbytes = packed ? (numel * dtype.bits + 7) / 8 : numel * (size_t)dtype_bytes(dtype);
  size_t nlen = strlen(name);
  /* Each field: tag (1 byte) + length/value varint (<= 10 bytes) + payload. */
  size_t cap = (size_t)rank * 11 + 11 + 11 + nlen + 11 + nbytes + 16;
  uint8_t *p = loom_malloc(cap);
  if (!p) return err_set(err, LOOM_ERR_RUNTIME, "tensor \"%s\": out of memory encoding %zu bytes", name, nbytes);
  size_t at = 0;
  for (int k = 0; k < rank; k++) {
    p[at++] = 1 << 3 | 0; /* dims, varint */
    at += put_varint(p + at, (uint64_t)dims[k]);
  }
  p[at++] = 2 << 3 | 0; /* data_type */
  at += put_varint(p + at, (uint64_t)type);
  p[at++] = 8 << 3 | 2; /* name */
  at += put_varint(p + at, nlen);
  memcpy(p + at, name, nlen);
  at += nlen;
  p[at++] = 9 << 3 | 2; /* raw_data */
  at += put_varint(p + at, nbytes);
  if (packed) onnx_pack_bits(dtype, data, (int64_t)numel, p + at);
  else if (nbytes) memcpy(p + at, data, nbytes);
  at += nbytes;
  *out = p;
  *size = at;
  return LOOM_OK;
}
