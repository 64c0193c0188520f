#include "ir/dtype.h"

#include "loom/loom_convert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *dtype_scalar_name(DType t) {
  switch (t.code) {
    case DT_INT:
      switch (t.bits) { case 2: return "i2"; case 4: return "i4"; case 8: return "i8"; case 16: return "i16"; case 32: return "i32"; case 64: return "i64"; }
      break;
    case DT_UINT:
      switch (t.bits) { case 2: return "u2"; case 4: return "u4"; case 8: return "u8"; case 16: return "u16"; case 32: return "u32"; case 64: return "u64"; }
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
    case DT_F8E4M3FN: return t.bits == 8 ? "f8e4m3fn" : NULL;
    case DT_F8E4M3FNUZ: return t.bits == 8 ? "f8e4m3fnuz" : NULL;
    case DT_F8E5M2: return t.bits == 8 ? "f8e5m2" : NULL;
    case DT_F8E5M2FNUZ: return t.bits == 8 ? "f8e5m2fnuz" : NULL;
    case DT_F8E8M0: return t.bits == 8 ? "f8e8m0" : NULL;
    case DT_F4E2M1: return t.bits == 4 ? "f4e2m1" : NULL;
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
  char full[32]; /* "f8e5m2fnuzx1024" is the longest that fits in 16 */
  snprintf(full, sizeof full, "%sx%d", s, t.lanes);
  snprintf(buf, 16, "%.15s", full);
  return buf;
}

bool dtype_parse(const char *s, DType *out) {
  static const DType all[] = {
      {DT_INT, 8, 1},    {DT_INT, 16, 1},   {DT_INT, 32, 1},   {DT_INT, 64, 1},
      {DT_UINT, 8, 1},   {DT_UINT, 16, 1},  {DT_UINT, 32, 1},  {DT_UINT, 64, 1},
      {DT_FLOAT, 16, 1}, {DT_FLOAT, 32, 1}, {DT_FLOAT, 64, 1}, {DT_BFLOAT, 16, 1},
      {DT_BOOL, 1, 1},   {DT_HANDLE, 64, 1},
      {DT_INT, 4, 1},    {DT_UINT, 4, 1},   {DT_INT, 2, 1},    {DT_UINT, 2, 1},
      {DT_F8E4M3FN, 8, 1}, {DT_F8E4M3FNUZ, 8, 1}, {DT_F8E5M2, 8, 1}, {DT_F8E5M2FNUZ, 8, 1},
      {DT_F8E8M0, 8, 1}, {DT_F4E2M1, 4, 1},
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
  if (dtype_is_narrow(t)) {
    if (t.bits == 16) return "uint16_t";
    return t.code == DT_INT ? "int8_t" : "uint8_t";
  }
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

double dtype_narrow_round(DType t, double v) {
  float f = (float)v;
  if (!dtype_is_narrow(t)) return v;
  switch (t.code) {
    case DT_FLOAT: return loom_f16_to_f32(loom_f64_to_f16(v));
    case DT_BFLOAT: return loom_bf16_to_f32(loom_f32_to_bf16(f));
    case DT_F8E4M3FN: return loom_f8e4m3fn_to_f32(loom_f32_to_f8e4m3fn(f));
    case DT_F8E4M3FNUZ: return loom_f8e4m3fnuz_to_f32(loom_f32_to_f8e4m3fnuz(f));
    case DT_F8E5M2: return loom_f8e5m2_to_f32(loom_f32_to_f8e5m2(f));
    case DT_F8E5M2FNUZ: return loom_f8e5m2fnuz_to_f32(loom_f32_to_f8e5m2fnuz(f));
    case DT_F8E8M0: return loom_f8e8m0_to_f32(loom_f32_to_f8e8m0(f));
    case DT_F4E2M1: return loom_f4e2m1_to_f32(loom_f32_to_f4e2m1(f));
    default: return v;
  }
}

int64_t dtype_narrow_wrap(DType t, int64_t v) {
  if (!dtype_is_int(t)) return v;
  if (t.bits == 4) return t.code == DT_INT ? loom_i64_to_i4(v) : loom_i64_to_u4(v);
  if (t.bits == 2) return t.code == DT_INT ? loom_i64_to_i2(v) : loom_i64_to_u2(v);
  return v;
}

double dtype_narrow_load(DType t, const void *p) {
  uint16_t h;
  uint8_t c = *(const uint8_t *)p;
  if (dtype_is_int(t)) return t.code == DT_INT ? *(const int8_t *)p : c;
  switch (t.code) {
    case DT_FLOAT: memcpy(&h, p, 2); return loom_f16_to_f32(h);
    case DT_BFLOAT: memcpy(&h, p, 2); return loom_bf16_to_f32(h);
    case DT_F8E4M3FN: return loom_f8e4m3fn_to_f32(c);
    case DT_F8E4M3FNUZ: return loom_f8e4m3fnuz_to_f32(c);
    case DT_F8E5M2: return loom_f8e5m2_to_f32(c);
    case DT_F8E5M2FNUZ: return loom_f8e5m2fnuz_to_f32(c);
    case DT_F8E8M0: return loom_f8e8m0_to_f32(c);
    default: return loom_f4e2m1_to_f32(c & 15);
  }
}

void dtype_narrow_store(DType t, void *p, double v) {
  float f = (float)v;
  uint16_t h;
  uint8_t *c = (uint8_t *)p;
  if (dtype_is_int(t)) {
    *c = (uint8_t)dtype_narrow_wrap(t, v > -9.2e18 && v < 9.2e18 ? (int64_t)v : 0);
    return;
  }
  switch (t.code) {
    case DT_FLOAT: h = loom_f64_to_f16(v); memcpy(p, &h, 2); return;
    case DT_BFLOAT: h = loom_f32_to_bf16(f); memcpy(p, &h, 2); return;
    case DT_F8E4M3FN: *c = loom_f32_to_f8e4m3fn(f); return;
    case DT_F8E4M3FNUZ: *c = loom_f32_to_f8e4m3fnuz(f); return;
    case DT_F8E5M2: *c = loom_f32_to_f8e5m2(f); return;
    case DT_F8E5M2FNUZ: *c = loom_f32_to_f8e5m2fnuz(f); return;
    case DT_F8E8M0: *c = loom_f32_to_f8e8m0(f); return;
    default: *c = loom_f32_to_f4e2m1(f); return;
  }
}
