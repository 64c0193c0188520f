#include "runtime/dl_dtype.h"

#include <stdio.h>
#include <string.h>

typedef struct DtypeName {
  const char *name;
  uint8_t code, bits;
} DtypeName;

static const DtypeName k_dtypes[] = {
    {"float32", kDLFloat, 32}, {"float64", kDLFloat, 64}, {"float16", kDLFloat, 16},
    {"bfloat16", kDLBfloat, 16}, {"int8", kDLInt, 8},     {"int16", kDLInt, 16},
    {"int32", kDLInt, 32},     {"int64", kDLInt, 64},     {"uint8", kDLUInt, 8},
    {"uint16", kDLUInt, 16},   {"uint32", kDLUInt, 32},   {"uint64", kDLUInt, 64},
    {"bool", DL_DTYPE_BOOL_CODE, 8},
    /* DLPack 1.1 codes; ml_dtypes' names. One byte per element in memory,
     * also for the 4- and 2-bit types (packed only in files). */
    {"float8_e4m3fn", 10, 8},  {"float8_e4m3fnuz", 11, 8}, {"float8_e5m2", 12, 8},
    {"float8_e5m2fnuz", 13, 8}, {"float8_e8m0fnu", 14, 8},  {"float4_e2m1fn", 17, 4},
    {"int4", kDLInt, 4},       {"uint4", kDLUInt, 4},     {"int2", kDLInt, 2},
    {"uint2", kDLUInt, 2},
};

const char *dl_dtype_name(DLDataType t) {
  if (t.lanes != 1) return NULL;
  for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
    if (k_dtypes[i].code == t.code && k_dtypes[i].bits == t.bits) return k_dtypes[i].name;
  return NULL;
}

bool dl_dtype_parse(const char *name, DLDataType *out) {
  for (size_t i = 0; name && i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
    if (!strcmp(k_dtypes[i].name, name)) {
      *out = (DLDataType){.code = k_dtypes[i].code, .bits = k_dtypes[i].bits, .lanes = 1};
      return true;
    }
  return false;
}

size_t dl_dtype_bytes(DLDataType t) { return dl_dtype_name(t) ? ((size_t)t.bits + 7) / 8 : 0; }

bool dl_dtype_equal(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

bool dl_shape_bytes(const int64_t *shape, int32_t ndim, size_t elem_bytes, uint64_t limit, uint64_t *bytes) {
  uint64_t n = elem_bytes;
  if (ndim < 0) return false;
  for (int32_t i = 0; i < ndim; i++) {
    if (shape[i] < 0) return false;
    uint64_t d = (uint64_t)shape[i];
    if (d != 0 && n > limit / d) return false;
    n *= d;
  }
  if (n > limit) return false;
  *bytes = n;
  return true;
}

char *dl_shape_str(const int64_t *shape, int32_t ndim, char *buf, size_t len) {
  size_t at = 0;
  if (!len) return buf;
  buf[0] = 0;
#define PUT(...)                                                    \
  do {                                                              \
    int k = snprintf(buf + at, at < len ? len - at : 0, __VA_ARGS__); \
    if (k > 0) at += (size_t)k;                                     \
    if (at >= len) return buf;                                      \
  } while (0)
  PUT("[");
  for (int32_t i = 0; i < ndim; i++) PUT("%s%lld", i ? ", " : "", (long long)shape[i]);
  PUT("]");
#undef PUT
  return buf;
}
