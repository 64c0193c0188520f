/* TensorProto data -> graph tensors, and the importer's name map. */
#include "frontend/onnx/import_internal.h"
#include "support/alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds a single weight at 16 GiB so a forged dims list cannot make us
 * allocate (or multiply) without limit. */
#define ONNX_MAX_TENSOR_BYTES ((int64_t)1 << 34)

static uint64_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

void namemap_init(NameMap *m, Arena *arena) {
  memset(m, 0, sizeof *m);
  m->arena = arena;
}

static void namemap_grow(NameMap *m) {
  NameMap bigger;
  bigger.cap = m->cap ? m->cap * 2 : 256;
  bigger.count = 0;
  bigger.arena = m->arena;
  bigger.keys = ARENA_ARRAY(m->arena, const char *, bigger.cap);
  bigger.vals = ARENA_ARRAY(m->arena, ValueId, bigger.cap);
  for (int k = 0; k < m->cap; k++)
    if (m->keys[k]) namemap_put(&bigger, m->keys[k], m->vals[k]);
  *m = bigger;
}

void namemap_put(NameMap *m, const char *key, ValueId v) {
  if ((m->count + 1) * 2 > m->cap) namemap_grow(m);
  size_t mask = (size_t)m->cap - 1, i = (size_t)name_hash(key) & mask;
  while (m->keys[i] && strcmp(m->keys[i], key)) i = (i + 1) & mask;
  if (!m->keys[i]) m->count++;
  m->keys[i] = key;
  m->vals[i] = v;
}

ValueId namemap_get(const NameMap *m, const char *key) {
  if (!m->cap) return -1;
  size_t mask = (size_t)m->cap - 1, i = (size_t)name_hash(key) & mask;
  while (m->keys[i]) {
    if (!strcmp(m->keys[i], key)) return m->vals[i];
    i = (i + 1) & mask;
  }
  return -1;
}

bool onnx_dtype_to_loom(int t, DType *out) {
  switch (t) {
  case ONNX_FLOAT: *out = DT_F32; return true;
  case ONNX_DOUBLE: *out = DT_F64; return true;
  case ONNX_FLOAT16: *out = DT_F16; return true;
  case ONNX_BFLOAT16: *out = DT_BF16; return true;
  case ONNX_INT8: *out = DT_I8; return true;
  case ONNX_INT16: *out = dtype_make(DT_INT, 16, 1); return true;
  case ONNX_INT32: *out = DT_I32; return true;
  case ONNX_INT64: *out = DT_I64; return true;
  case ONNX_UINT8: *out = DT_U8; return true;
  case ONNX_UINT16: *out = dtype_make(DT_UINT, 16, 1); return true;
  case ONNX_UINT32: *out = dtype_make(DT_UINT, 32, 1); return true;
  case ONNX_UINT64: *out = dtype_make(DT_UINT, 64, 1); return true;
  case ONNX_BOOL: *out = DT_BOOL1; return true;
  case ONNX_FLOAT8E4M3FN: *out = dtype_make(DT_F8E4M3FN, 8, 1); return true;
  case ONNX_FLOAT8E4M3FNUZ: *out = dtype_make(DT_F8E4M3FNUZ, 8, 1); return true;
  case ONNX_FLOAT8E5M2: *out = dtype_make(DT_F8E5M2, 8, 1); return true;
  case ONNX_FLOAT8E5M2FNUZ: *out = dtype_make(DT_F8E5M2FNUZ, 8, 1); return true;
  case ONNX_FLOAT8E8M0: *out = dtype_make(DT_F8E8M0, 8, 1); return true;
  case ONNX_FLOAT4E2M1: *out = dtype_make(DT_F4E2M1, 4, 1); return true;
  case ONNX_UINT4: *out = dtype_make(DT_UINT, 4, 1); return true;
  case ONNX_INT4: *out = dtype_make(DT_INT, 4, 1); return true;
  case ONNX_UINT2: *out = dtype_make(DT_UINT, 2, 1); return true;
  case ONNX_INT2: *out = dtype_make(DT_INT, 2, 1); return true;
  default: return false;
  }
}

const char *onnx_dtype_name(int t) {
  static const char *names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
                                "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
                                "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4",
                                "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"};
  if (t >= 0 && t < (int)(sizeof names / sizeof names[0])) return names[t];
  return "an unknown type";
}

/* Reads [offset, offset + length) of base_dir/location. The location must
 * stay inside base_dir: no absolute paths and no "..", so a model cannot
 * make the compiler read arbitrary files. */
static bool read_external(Importer *im, const OnnxTensor *t, const char *what, size_t nbytes, void *dst) {
  const char *loc = t->ext_location;
  if (!im->base_dir) {
    err_set(im->err, LOOM_ERR_UNSUPPORTED, "%s: external data \"%s\" needs the model's directory (import from a file)", what,
            loc ? loc : "");
    return false;
  }
  if (!loc || !loc[0]) {
    err_set(im->err, LOOM_ERR_INVALID_ARG, "%s: external data has no location", what);
    return false;
  }
  if (loc[0] == '/' || strstr(loc, "..")) {
    err_set(im->err, LOOM_ERR_INVALID_ARG, "%s: external data location \"%s\" must be a relative path inside the model directory",
            what, loc);
    return false;
  }
  char *path = arena_printf(im->scratch, "%s/%s", im->base_dir, loc);
  FILE *f = fopen(path, "rb");
  if (!f) {
    err_set(im->err, LOOM_ERR_IO, "%s: cannot open external data file \"%s\": %s", what, path, strerror(errno));
    return false;
  }
  bool ok = false;
  if (fseeko(f, 0, SEEK_END) == 0) {
    off_t size = ftello(f);
    int64_t off = t->ext_offset, len = t->ext_length >= 0 ? t->ext_length : (int64_t)size - off;
    if (off > (int64_t)size || len != (int64_t)nbytes || off + len > (int64_t)size) {
      err_set(im->err, LOOM_ERR_INVALID_ARG,
              "%s: external data \"%s\" (size %lld) has offset %lld length %lld, but the tensor needs %zu bytes", what, loc,
              (long long)size, (long long)off, (long long)len, nbytes);
    } else if (fseeko(f, (off_t)off, SEEK_SET) != 0 || fread(dst, 1, nbytes, f) != nbytes) {
      err_set(im->err, LOOM_ERR_IO, "%s: cannot read %zu bytes from \"%s\"", what, nbytes, path);
    } else {
      ok = true;
    }
  } else {
    err_set(im->err, LOOM_ERR_IO, "%s: cannot seek in \"%s\"", what, path);
  }
  fclose(f);
  return ok;
}

void onnx_unpack_bits(DType dt, const uint8_t *packed, int64_t numel, void *out) {
  int bits = dt.bits, per_byte = 8 / bits;
  uint8_t mask = (uint8_t)((1u << bits) - 1), sign = (uint8_t)(1u << (bits - 1));
  for (int64_t k = 0; k < numel; k++) {
    uint8_t v = (uint8_t)(packed[k / per_byte] >> (k % per_byte * bits) & mask);
    if (dt.code == DT_INT && (v & sign)) v |= (uint8_t)~mask; /* sign-extend */
    ((uint8_t *)out)[k] = v;
  }
}

void onnx_pack_bits(DType dt, const void *in, int64_t numel, uint8_t *packed) {
  int bits = dt.bits, per_byte = 8 / bits;
  uint8_t mask = (uint8_t)((1u << bits) - 1);
  memset(packed, 0, (size_t)((numel * bits + 7) / 8));
  for (int64_t k = 0; k < numel; k++)
    packed[k / per_byte] |= (uint8_t)((((const uint8_t *)in)[k] & mask) << (k % per_byte * bits));
}

GraphTensor *onnx_tensor_to_graph(Importer *im, const OnnxTensor *t, const char *what) {
  DType dt;
  if (!onnx_dtype_to_loom(t->data_type, &dt)) {
    err_set(im->err, LOOM_ERR_UNSUPPORTED, "%s: data type %s (%d) is not supported", what, onnx_dtype_name(t->data_type),
            t->data_type);
    return NULL;
  }
  int64_t numel = 1;
  int eb = dtype_bytes(dt);
  for (int k = 0; k < t->ndims; k++) {
    if (t->dims[k] < 0) {
      err_set(im->err, LOOM_ERR_INVALID_ARG, "%s: dimension %d is negative (%lld)", what, k, (long long)t->dims[k]);
      return NULL;
    }
    if (t->dims[k] && numel > ONNX_MAX_TENSOR_BYTES / eb / t->dims[k]) {
      err_set(im->err, LOOM_ERR_UNSUPPORTED, "%s: more than %lld bytes", what, (long long)ONNX_MAX_TENSOR_BYTES);
      return NULL;
    }
    numel *= t->dims[k];
  }
  if (t->ndims > 64) {
    err_set(im->err, LOOM_ERR_UNSUPPORTED, "%s: rank %d is too large", what, t->ndims);
    return NULL;
  }
  size_t nbytes = (size_t)numel * (size_t)eb;
  /* 4- and 2-bit types are packed in files (two or four to a byte, the
   * first element in the low bits) and take a byte each in memory. */
  int packed_bits = dt.bits < 8 && !dtype_is_bool(dt) ? dt.bits : 0;
  size_t file_bytes = packed_bits ? ((size_t)numel * (size_t)packed_bits + 7) / 8 : nbytes;
  /* Check where the data comes from before allocating, so a forged shape
   * with no data behind it fails without a huge allocation. */
  int count = -1;
  const char *field = NULL;
  if (t->data_location == 1) {
    field = "external";
  } else if (t->has_raw_data) {
    if (t->raw_data.len != file_bytes) {
      err_set(im->err, LOOM_ERR_INVALID_ARG, "%s: raw_data has %zu bytes, expected %zu for %lld elements of %s", what,
              t->raw_data.len, file_bytes, (long long)numel, onnx_dtype_name(t->data_type));
      return NULL;
    }
    field = "raw_data";
  } else {
    switch (t->data_type) {
    case ONNX_FLOAT: count = t->float_data.n, field = "float_data"; break;
    case ONNX_DOUBLE: count = t->double_data.n, field = "double_data"; break;
    case ONNX_INT64: count = t->int64_data.n, field = "int64_data"; break;
    case ONNX_UINT32: case ONNX_UINT64: count = t->uint64_data.n, field = "uint64_data"; break;
    default: count = t->int32_data.n, field = "int32_data"; break;
    }
    /* int32_data holds one byte's worth of packed elements per entry */
    int64_t want = packed_bits ? (numel * packed_bits + 7) / 8 : numel;
    if ((int64_t)count != want) {
      err_set(im->err, LOOM_ERR_INVALID_ARG, "%s: %s has %d elements, expected %lld", what, field, count, (long long)want);
      return NULL;
    }
  }
  int64_t dims[64];
  for (int k = 0; k < t->ndims; k++) dims[k] = t->dims[k];
  GraphTensor *out = graph_tensor_new(im->g->arena, dt, t->ndims, dims);
  if (packed_bits) {
    uint8_t *bytes = arena_alloc(im->scratch, file_bytes ? file_bytes : 1);
    if (t->data_location == 1) {
      if (!read_external(im, t, what, file_bytes, bytes)) return NULL;
    } else if (t->has_raw_data) {
      if (file_bytes) memcpy(bytes, t->raw_data.data, file_bytes);
    } else {
      for (size_t k = 0; k < file_bytes; k++) bytes[k] = (uint8_t)t->int32_data.items[k];
    }
    onnx_unpack_bits(dt, bytes, numel, out->data);
  } else if (t->data_location == 1) {
    if (!read_external(im, t, what, nbytes, out->data)) return NULL;
  } else if (t->has_raw_data) {
    if (nbytes) memcpy(out->data, t->raw_data.data, nbytes); /* little-endian host, as raw_data */
  } else if (dtype_is_narrow(dt) && dt.bits == 8) {
    /* fp8: int32_data carries the 8-bit patterns */
    for (int64_t k = 0; k < numel; k++) ((uint8_t *)out->data)[k] = (uint8_t)t->int32_data.items[k];
  } else {
    for (int64_t k = 0; k < numel; k++) {
      switch (t->data_type) {
      case ONNX_FLOAT: case ONNX_DOUBLE: graph_tensor_set_f64(out, k, t->data_type == ONNX_FLOAT ? t->float_data.items[k] : t->double_data.items[k]); break;
      case ONNX_INT64: graph_tensor_set_i64(out, k, t->int64_data.items[k]); break;
      case ONNX_UINT32: case ONNX_UINT64: graph_tensor_set_i64(out, k, t->uint64_data.items[k]); break;
      case ONNX_FLOAT16: case ONNX_BFLOAT16: {
        /* int32_data carries the 16-bit patterns */
        uint16_t bits = (uint16_t)t->int32_data.items[k];
        memcpy((uint8_t *)out->data + 2 * k, &bits, 2);
        break;
      }
      default: graph_tensor_set_i64(out, k, t->int32_data.items[k]); break;
      }
    }
  }
  return out;
}
