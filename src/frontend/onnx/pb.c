/* Protobuf wire decoding. See pb.h; the encoding is the public protobuf
 * wire format: varint tags (field << 3 | wire type), then the payload. */
#include "frontend/onnx/pb.h"

#include "support/arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

PbReader pb_reader_init(const uint8_t *data, size_t size, LoomError *err) {
  PbReader r = {data, 0, size, err, false, 0};
  return r;
}

PbReader pb_reader_sub(const PbReader *parent, const PbField *f) {
  PbReader r = *parent;
  r.pos = (size_t)(f->data - parent->base);
  r.end = r.pos + f->len;
  r.depth = parent->depth + 1;
  if (r.depth > PB_MAX_DEPTH) pb_fail(&r, f->offset, "messages nested deeper than %d levels", PB_MAX_DEPTH);
  return r;
}

bool pb_fail(PbReader *r, size_t offset, const char *fmt, ...) {
  if (!r->failed) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    err_set(r->err, LOOM_ERR_PARSE, "protobuf: at byte %zu: %s", offset, msg);
  }
  r->failed = true;
  return false;
}

static bool read_varint(PbReader *r, uint64_t *out) {
  uint64_t v = 0;
  size_t start = r->pos;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->pos >= r->end) return pb_fail(r, start, "truncated varint");
    uint8_t b = r->base[r->pos++];
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return pb_fail(r, start, "varint longer than 10 bytes");
}

static bool read_fixed(PbReader *r, int bytes, uint64_t *out) {
  if (r->end - r->pos < (size_t)bytes) return pb_fail(r, r->pos, "truncated %d-byte fixed field", bytes);
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)r->base[r->pos + (size_t)i] << (8 * i);
  r->pos += (size_t)bytes;
  *out = v;
  return true;
}

bool pb_next(PbReader *r, PbField *f) {
  if (r->failed || r->pos >= r->end) return false;
  memset(f, 0, sizeof *f);
  f->offset = r->pos;
  uint64_t tag;
  if (!read_varint(r, &tag)) return false;
  uint64_t number = tag >> 3;
  if (number == 0 || number > 536870911u) return pb_fail(r, f->offset, "invalid field number %llu", (unsigned long long)number);
  f->number = (uint32_t)number;
  f->wire = (PbWireType)(tag & 7);
  switch ((int)f->wire) {
  case PB_VARINT: return read_varint(r, &f->value);
  case PB_FIXED64: return read_fixed(r, 8, &f->value);
  case PB_FIXED32: return read_fixed(r, 4, &f->value);
  case PB_LEN: {
    uint64_t len;
    if (!read_varint(r, &len)) return false;
    if (len > r->end - r->pos)
      return pb_fail(r, f->offset, "field %u claims %llu bytes but only %zu remain", f->number,
                     (unsigned long long)len, r->end - r->pos);
    f->data = r->base + r->pos;
    f->len = (size_t)len;
    r->pos += (size_t)len;
    return true;
  }
  default:
    return pb_fail(r, f->offset, "field %u has unsupported wire type %d (groups are not used by ONNX)", f->number,
                   (int)f->wire);
  }
}

bool pb_expect(PbReader *r, const PbField *f, PbWireType wire, const char *what) {
  if (f->wire == wire) return true;
  return pb_fail(r, f->offset, "field %u (%s) has wire type %d, expected %d", f->number, what, (int)f->wire, (int)wire);
}

#define LIST_PUSH(a, l, x)                                                   \
  do {                                                                       \
    if ((l)->n == (l)->cap) {                                                \
      int cap_ = (l)->cap ? (l)->cap * 2 : 8;                                \
      void *p_ = arena_alloc((a), sizeof(*(l)->items) * (size_t)cap_);       \
      if ((l)->n) memcpy(p_, (l)->items, sizeof(*(l)->items) * (size_t)(l)->n); \
      (l)->items = p_;                                                       \
      (l)->cap = cap_;                                                       \
    }                                                                        \
    (l)->items[(l)->n++] = (x);                                              \
  } while (0)

/* Reserves room for `extra` more elements at once (packed payloads know
 * their size up front; avoids quadratic copying on big weight tensors). */
#define LIST_RESERVE(a, l, extra)                                             \
  do {                                                                        \
    if ((l)->n + (extra) > (l)->cap) {                                        \
      int cap_ = (l)->n + (extra);                                            \
      void *p_ = arena_alloc((a), sizeof(*(l)->items) * (size_t)cap_);        \
      if ((l)->n) memcpy(p_, (l)->items, sizeof(*(l)->items) * (size_t)(l)->n); \
      (l)->items = p_;                                                        \
      (l)->cap = cap_;                                                        \
    }                                                                         \
  } while (0)

bool pb_read_varints(PbReader *r, Arena *a, const PbField *f, PbI64List *out, const char *what) {
  if (f->wire == PB_VARINT) {
    LIST_PUSH(a, out, (int64_t)f->value);
    return true;
  }
  if (!pb_expect(r, f, PB_LEN, what)) return false;
  PbReader sub = pb_reader_sub(r, f);
  if (f->len > (size_t)1 << 30) return pb_fail(r, f->offset, "%s: packed list too large", what);
  while (sub.pos < sub.end) {
    uint64_t v;
    if (!read_varint(&sub, &v)) {
      r->failed = true;
      return false;
    }
    LIST_PUSH(a, out, (int64_t)v);
  }
  return true;
}

static bool read_fixed_list(PbReader *r, Arena *a, const PbField *f, PbF64List *out, const char *what, int bytes) {
  PbWireType scalar = bytes == 4 ? PB_FIXED32 : PB_FIXED64;
  uint64_t bits;
  if (f->wire == scalar) {
    bits = f->value;
    double d;
    if (bytes == 4) {
      uint32_t b32 = (uint32_t)bits;
      float x;
      memcpy(&x, &b32, 4);
      d = x;
    } else {
      memcpy(&d, &bits, 8);
    }
    LIST_PUSH(a, out, d);
    return true;
  }
  if (!pb_expect(r, f, PB_LEN, what)) return false;
  if (f->len % (size_t)bytes)
    return pb_fail(r, f->offset, "%s: packed payload of %zu bytes is not a multiple of %d", what, f->len, bytes);
  if (f->len / (size_t)bytes > (size_t)1 << 30) return pb_fail(r, f->offset, "%s: packed list too large", what);
  int count = (int)(f->len / (size_t)bytes);
  LIST_RESERVE(a, out, count);
  for (int i = 0; i < count; i++) {
    const uint8_t *p = f->data + (size_t)i * (size_t)bytes;
    double d;
    if (bytes == 4) {
      uint32_t b32 = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
      float x;
      memcpy(&x, &b32, 4);
      d = x;
    } else {
      uint64_t b64 = 0;
      for (int k = 0; k < 8; k++) b64 |= (uint64_t)p[k] << (8 * k);
      memcpy(&d, &b64, 8);
    }
    out->items[out->n++] = d;
  }
  return true;
}

bool pb_read_floats(PbReader *r, Arena *a, const PbField *f, PbF64List *out, const char *what) {
  return read_fixed_list(r, a, f, out, what, 4);
}

bool pb_read_doubles(PbReader *r, Arena *a, const PbField *f, PbF64List *out, const char *what) {
  return read_fixed_list(r, a, f, out, what, 8);
}

const char *pb_read_string(PbReader *r, Arena *a, const PbField *f, const char *what) {
  if (!pb_expect(r, f, PB_LEN, what)) return NULL;
  return arena_strndup(a, (const char *)f->data, f->len);
}
