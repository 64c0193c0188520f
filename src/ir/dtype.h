/* Data types: a code, a bit width and a lane count (lanes > 1 is a vector).
 * Index arithmetic in Loom is always int64. */
#ifndef LOOM_IR_DTYPE_H
#define LOOM_IR_DTYPE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum DTypeCode {
  DT_INT = 0,   /* same numbering as DLPack's DLDataTypeCode */
  DT_UINT = 1,
  DT_FLOAT = 2,
  DT_HANDLE = 3,
  DT_BFLOAT = 4,
  DT_BOOL = 6,
  /* DLPack 1.1's narrow floats (8 bits; e2m1 4 bits). include/loom/loom_convert.h
   * has their formats. Like f16/bf16 they are storage-only: kernels load
   * them into f32 and round on store (tir_legalize_narrow). */
  DT_F8E4M3FN = 10,
  DT_F8E4M3FNUZ = 11,
  DT_F8E5M2 = 12,
  DT_F8E5M2FNUZ = 13,
  DT_F8E8M0 = 14,
  DT_F4E2M1 = 17,
} DTypeCode;

typedef struct DType {
  uint8_t code, bits;
  uint16_t lanes;
} DType;

static inline DType dtype_make(DTypeCode code, int bits, int lanes) {
  DType t = {(uint8_t)code, (uint8_t)bits, (uint16_t)lanes};
  return t;
}
#define DT_I64 dtype_make(DT_INT, 64, 1)
#define DT_I32 dtype_make(DT_INT, 32, 1)
#define DT_I8 dtype_make(DT_INT, 8, 1)
#define DT_U8 dtype_make(DT_UINT, 8, 1)
#define DT_F32 dtype_make(DT_FLOAT, 32, 1)
#define DT_F64 dtype_make(DT_FLOAT, 64, 1)
#define DT_F16 dtype_make(DT_FLOAT, 16, 1)
#define DT_BF16 dtype_make(DT_BFLOAT, 16, 1)
#define DT_BOOL1 dtype_make(DT_BOOL, 1, 1)
#define DT_VOID dtype_make(DT_HANDLE, 0, 0)

static inline bool dtype_eq(DType a, DType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
static inline DType dtype_with_lanes(DType t, int lanes) {
  t.lanes = (uint16_t)lanes;
  return t;
}
static inline DType dtype_element(DType t) { return dtype_with_lanes(t, 1); }
static inline bool dtype_is_int(DType t) { return t.code == DT_INT || t.code == DT_UINT; }
static inline bool dtype_is_narrow_float_code(int code) { return (code >= DT_F8E4M3FN && code <= DT_F8E8M0) || code == DT_F4E2M1; }
static inline bool dtype_is_float(DType t) {
  return t.code == DT_FLOAT || t.code == DT_BFLOAT || dtype_is_narrow_float_code(t.code);
}
static inline bool dtype_is_bool(DType t) { return t.code == DT_BOOL; }
/* Bytes in memory: types narrower than a byte (bool, int4, e2m1...) take one
 * byte per element (they are packed only in files). */
static inline int dtype_bytes(DType t) { return (t.bits < 8 ? 8 : t.bits) / 8 * (t.lanes ? t.lanes : 1); }
/* Storage-only types: f16, bf16, the 8/4-bit floats and the 4/2-bit ints.
 * Memory holds them; arithmetic happens in dtype_compute_type (f32, or i32
 * for the ints) after tir_legalize_narrow. */
static inline bool dtype_is_narrow(DType t) {
  return ((t.code == DT_FLOAT || t.code == DT_BFLOAT) && t.bits == 16) || dtype_is_narrow_float_code(t.code) ||
         (dtype_is_int(t) && t.bits < 8);
}
static inline DType dtype_compute_type(DType t) {
  if (!dtype_is_narrow(t)) return t;
  return dtype_make(dtype_is_int(t) ? DT_INT : DT_FLOAT, 32, t.lanes);
}

/* "f32", "i64", "u8", "bool", "bf16", "f32x16", "f8e4m3fn", "i4". Returns a static or
 * thread-unsafe buffer-free string when lanes == 1, otherwise writes buf. */
const char *dtype_str(DType t, char buf[16]);
/* Parses the names dtype_str prints; false on anything else. */
bool dtype_parse(const char *s, DType *out);
/* The C type for one element ("float", "int64_t", "uint8_t", "_Bool"...),
 * NULL for types codegen cannot express yet. Narrow types give their
 * storage type: "uint16_t" for f16/bf16, "uint8_t" for the 8/4-bit floats
 * and u4/u2, "int8_t" for i4/i2. */
const char *dtype_c_type(DType t);
/* v rounded to the narrow float type t (loom_convert.h's conversions; f16
 * from double directly), as a double; dtype_narrow_wrap keeps the low bits
 * of an integer for int4/uint4/int2/uint2. Other types: v unchanged. */
double dtype_narrow_round(DType t, double v);
int64_t dtype_narrow_wrap(DType t, int64_t v);
/* One element of narrow type t in memory (its storage format) as a number,
 * and a number rounded (integers: truncated and wrapped) into one. */
double dtype_narrow_load(DType t, const void *p);
void dtype_narrow_store(DType t, void *p, double v);

#endif
