#include "frontend/onnx/tensor_pb.h"

#include "frontend/onnx/import_internal.h"

#include <errno.h>
#include <stdio.h>
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
  FILE *f = fopen(path, "rb");
  if (!f) {
    err_set(err, LOOM_ERR_IO, "cannot open \"%s\": %s", path, strerror(errno));
    return NULL;
  }
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 1 << 16;
      uint8_t *nb = realloc(buf, cap);
      if (!nb) break;
      buf = nb;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  bool bad = ferror(f) || len < cap;
  fclose(f);
  if (!buf || (bad && len == cap)) {
    free(buf);
    err_set(err, LOOM_ERR_IO, "cannot read \"%s\"", path);
    return NULL;
  }
  GraphTensor *t = onnx_tensor_pb_decode(g, buf, len, path, err);
  free(buf);
  return t;
}

static int onnx_type_of(DType t) {
  static const int8_t by_bits[][4] = {/* bits 8, 16, 32, 64 */
                                      [DT_INT] = {ONNX_INT8, ONNX_INT16, ONNX_INT32, ONNX_INT64},
                                      [DT_UINT] = {ONNX_UINT8, ONNX_UINT16, ONNX_UINT32, ONNX_UINT64},
                                      [DT_FLOAT] = {0, ONNX_FLOAT16, ONNX_FLOAT, ONNX_DOUBLE},
                                      [DT_BFLOAT] = {0, ONNX_BFLOAT16, 0, 0}};
  if (t.lanes != 1) return ONNX_UNDEFINED;
  if (t.code == DT_BOOL) return ONNX_BOOL;
  int col = t.bits == 8 ? 0 : t.bits == 16 ? 1 : t.bits == 32 ? 2 : t.bits == 64 ? 3 : -1;
  if (col < 0 || t.code > DT_BFLOAT || t.code == DT_HANDLE) return ONNX_UNDEFINED;
  return by_bits[t.code][col];
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
  size_t nbytes = numel * (size_t)(dtype.bits == 1 ? 1 : dtype.bits / 8);
  size_t nlen = strlen(name);
  /* Each field: tag (1 byte) + length/value varint (<= 10 bytes) + payload. */
  size_t cap = (size_t)rank * 11 + 11 + 11 + nlen + 11 + nbytes + 16;
  uint8_t *p = malloc(cap);
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
  if (nbytes) memcpy(p + at, data, nbytes);
  at += nbytes;
  *out = p;
  *size = at;
  return LOOM_OK;
}
