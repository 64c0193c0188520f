#include "ir/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *dtype_scalar_name(DType t) {
  switch (t.code) {
    case DT_INT:
      switch (t.bits) { case 8: return "i8"; case 16: return "i16"; case 32: return "i32"; case 64: return "i64"; }
      break;
    case DT_UINT:
      switch (t.bits) { case 8: return "u8"; case 16: return "u16"; case 32: return "u32"; case 64: return "u64"; }
      break;
    case DT_FLOAT:
      switch (t.bits) { case 16: return "f16"; case 32: return "f32"; case 64: return "f64"; }
      break;
    case DT_BFLOAT:
      if (t.bits == 16) return "bf16";
      break;
    case DT_BOOL:
      return "bool";
    case DT_HANDLE:
      return "handle";
  }
  return NULL;
}

const char *dtype_str(DType t, char buf[16]) {
  const char *s = dtype_scalar_name(t);
  if (!s) {
    snprintf(buf, 16, "?%d.%d", t.code, t.bits);
    return buf;
  }
  if (t.lanes <= 1) return s;
  snprintf(buf, 16, "%sx%d", s, t.lanes);
  return buf;
}

bool dtype_parse(const char *s, DType *out) {
  static const DType all[] = {
      {DT_INT, 8, 1},    {DT_INT, 16, 1},   {DT_INT, 32, 1},   {DT_INT, 64, 1},
      {DT_UINT, 8, 1},   {DT_UINT, 16, 1},  {DT_UINT, 32, 1},  {DT_UINT, 64, 1},
      {DT_FLOAT, 16, 1}, {DT_FLOAT, 32, 1}, {DT_FLOAT, 64, 1}, {DT_BFLOAT, 16, 1},
      {DT_BOOL, 1, 1},   {DT_HANDLE, 64, 1},
  };
  const char *x = strchr(s, 'x');
  size_t base_len = x ? (size_t)(x - s) : strlen(s);
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    const char *name = dtype_scalar_name(all[i]);
    if (strlen(name) != base_len || strncmp(name, s, base_len) != 0) continue;
    DType t = all[i];
    if (x) {
      char *end;
      long lanes = strtol(x + 1, &end, 10);
      if (*end || lanes < 2 || lanes > 1024) return false;
      t.lanes = (uint16_t)lanes;
    }
    *out = t;
    return true;
  }
  return false;
}

const char *dtype_c_type(DType t) {
  switch (t.code) {
    case DT_INT:
      switch (t.bits) { case 8: return "int8_t"; case 16: return "int16_t"; case 32: return "int32_t"; case 64: return "int64_t"; }
      break;
    case DT_UINT:
      switch (t.bits) { case 8: return "uint8_t"; case 16: return "uint16_t"; case 32: return "uint32_t"; case 64: return "uint64_t"; }
      break;
    case DT_FLOAT:
      switch (t.bits) { case 32: return "float"; case 64: return "double"; }
      break;
    case DT_BOOL:
      return "_Bool";
    default:
      break;
  }
  return NULL;
}
