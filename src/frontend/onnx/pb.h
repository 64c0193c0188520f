/* Protobuf wire-format reader: just enough of the encoding to decode ONNX.
 * Every read is bounds-checked against the enclosing message; a failure
 * leaves a message naming the byte offset (from the start of the file) and
 * what was expected, and all later reads fail too, so decoders can check
 * once per message. */
#ifndef LOOM_FRONTEND_ONNX_PB_H
#define LOOM_FRONTEND_ONNX_PB_H

#include "support/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum PbWireType {
  PB_VARINT = 0,
  PB_FIXED64 = 1,
  PB_LEN = 2,
  PB_FIXED32 = 5,
} PbWireType;

typedef struct PbReader {
  const uint8_t *base; /* start of the whole file, for offsets in messages */
  size_t pos, end;     /* current position and end of this message, from base */
  LoomError *err;
  bool failed;
  int depth; /* nesting depth, bounded so garbage cannot recurse forever */
} PbReader;

/* One decoded field: the tag and, depending on the wire type, a scalar or a
 * byte range [data, data + len). */
typedef struct PbField {
  uint32_t number;
  PbWireType wire;
  uint64_t value;      /* PB_VARINT, PB_FIXED32, PB_FIXED64 */
  const uint8_t *data; /* PB_LEN */
  size_t len;
  size_t offset; /* where the field's tag starts */
} PbField;

#define PB_MAX_DEPTH 64

PbReader pb_reader_init(const uint8_t *data, size_t size, LoomError *err);
/* A reader over a length-delimited field's payload (a sub-message). */
PbReader pb_reader_sub(const PbReader *parent, const PbField *f);
/* Reads the next field; false at the end of the message or on error
 * (check r->failed). Unknown fields are returned too; callers skip them. */
bool pb_next(PbReader *r, PbField *f);
/* Marks the reader failed with a message "at byte N: ...". */
bool pb_fail(PbReader *r, size_t offset, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Checks the field's wire type; fails with the field name otherwise. */
bool pb_expect(PbReader *r, const PbField *f, PbWireType wire, const char *what);

/* Repeated scalar fields arrive either packed (one PB_LEN field) or one
 * element per field. These append to a growable array in the arena. */
typedef struct Arena Arena;
typedef struct PbI64List {
  int64_t *items;
  int n, cap;
} PbI64List;
typedef struct PbF64List {
  double *items;
  int n, cap;
} PbF64List;
/* Varint elements (int32/int64/uint64/bool/enum). */
bool pb_read_varints(PbReader *r, Arena *a, const PbField *f, PbI64List *out, const char *what);
/* fixed32 floats (float_data, floats): widened to double. */
bool pb_read_floats(PbReader *r, Arena *a, const PbField *f, PbF64List *out, const char *what);
/* fixed64 doubles (double_data). */
bool pb_read_doubles(PbReader *r, Arena *a, const PbField *f, PbF64List *out, const char *what);
/* A length-delimited field as a NUL-terminated string in the arena. */
const char *pb_read_string(PbReader *r, Arena *a, const PbField *f, const char *what);

#endif
