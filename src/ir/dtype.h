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
static inline bool dtype_is_float(DType t) { return t.code == DT_FLOAT || t.code == DT_BFLOAT; }
static inline bool dtype_is_bool(DType t) { return t.code == DT_BOOL; }
static inline int dtype_bytes(DType t) { return (t.bits == 1 ? 8 : t.bits) / 8 * (t.lanes ? t.lanes : 1); }

/* "f32", "i64", "u8", "bool", "bf16", "f32x16". Returns a static or
 * thread-unsafe buffer-free string when lanes == 1, otherwise writes buf. */
const char *dtype_str(DType t, char buf[16]);
/* Parses the names dtype_str prints; false on anything else. */
bool dtype_parse(const char *s, DType *out);
/* The C type for one element ("float", "int64_t", "uint8_t", "_Bool"...),
 * NULL for types codegen cannot express yet. */
const char *dtype_c_type(DType t);

#endif
