#include "tensor_data/npy.h"

#include "runtime/dl_dtype.h"
#include "support/alloc.h"
#include "support/atomic_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- header parsing: a Python dict literal with three keys ---- */

typedef struct Cursor {
  const char *p, *end;
} Cursor;

static void skip_ws(Cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static bool eat(Cursor *c, char ch) {
  skip_ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

/* A quoted string ('...' or "...") without escapes, into buf. */
static bool read_string(Cursor *c, char *buf, size_t len) {
  skip_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
  char q = *c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || n + 1 >= len) return false;
    buf[n++] = *c->p++;
  }
  if (c->p >= c->end) return false;
  c->p++;
  buf[n] = 0;
  return true;
}

static bool read_word(Cursor *c, const char *w) {
  skip_ws(c);
  size_t n = strlen(w);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n)) return false;
  c->p += n;
  return true;
}

/* "(2, 3)", "(5,)", "()". */
static bool read_shape(Cursor *c, NpyArray *a) {
  if (!eat(c, '(')) return false;
  a->ndim = 0;
  for (;;) {
    if (eat(c, ')')) return true;
    skip_ws(c);
    if (c->p >= c->end || !isdigit((unsigned char)*c->p)) return false;
    int64_t v = 0;
    while (c->p < c->end && isdigit((unsigned char)*c->p)) {
      if (v > (INT64_MAX - 9) / 10) return false;
      v = v * 10 + (*c->p++ - '0');
    }
    if (c->p < c->end && *c->p == 'L') c->p++; /* Python 2 longs */
    if (a->ndim >= NPY_MAX_DIMS) return false;
    a->shape[a->ndim++] = v;
    if (eat(c, ')')) return true;
    if (!eat(c, ',')) return false;
  }
}

static loom_status parse_descr(const char *descr, const char *what, DLDataType *out, LoomError *err) {
  char order = descr[0];
  if (order == '>')
    return err_set(err, LOOM_ERR_UNSUPPORTED,
                   "%s: big-endian data (dtype '%s') is not supported; expected little-endian "
                   "(convert with a.astype(a.dtype.newbyteorder('<')))",
                   what, descr);
  if (order != '<' && order != '|' && order != '=')
    return err_set(err, LOOM_ERR_UNSUPPORTED, "%s: unsupported dtype '%s'", what, descr);
  const char *k = descr + 1;
  static const struct {
    const char *npy, *dl;
  } table[] = {{"f4", "float32"}, {"f8", "float64"}, {"f2", "float16"}, {"i1", "int8"},   {"i2", "int16"},
               {"i4", "int32"},   {"i8", "int64"},   {"u1", "uint8"},   {"u2", "uint16"}, {"u4", "uint32"},
               {"u8", "uint64"},  {"b1", "bool"}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(k, table[i].npy)) {
      dl_dtype_parse(table[i].dl, out);
      return LOOM_OK;
    }
  return err_set(err, LOOM_ERR_UNSUPPORTED,
                 "%s: unsupported dtype '%s' (expected float16/32/64, int8-64, uint8-64 or bool)", what, descr);
}

static const char *npy_descr(DLDataType t) {
  const char *n = dl_dtype_name(t);
  if (!n) return NULL;
  static const struct {
    const char *dl, *npy;
  } table[] = {{"float32", "<f4"}, {"float64", "<f8"}, {"float16", "<f2"}, {"int8", "|i1"},
               {"int16", "<i2"},   {"int32", "<i4"},   {"int64", "<i8"},   {"uint8", "|u1"},
               {"uint16", "<u2"},  {"uint32", "<u4"},  {"uint64", "<u8"},  {"bool", "|b1"}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(n, table[i].dl)) return table[i].npy;
  return NULL;
}

loom_status npy_parse(const void *buf, size_t len, const char *what, NpyArray *out, LoomError *err) {
  memset(out, 0, sizeof *out);
  const unsigned char *b = buf;
  if (len < 10 || memcmp(b, "\x93NUMPY", 6))
    return err_set(err, LOOM_ERR_PARSE, "%s: not a .npy file (missing the \\x93NUMPY magic)", what);
  int major = b[6];
  size_t header_len, data_at;
  if (major == 1) {
    header_len = (size_t)b[8] | (size_t)b[9] << 8;
    data_at = 10 + header_len;
  } else if (major == 2 || major == 3) {
    if (len < 12) return err_set(err, LOOM_ERR_PARSE, "%s: truncated .npy header", what);
    header_len = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    data_at = 12 + header_len;
  } else {
    return err_set(err, LOOM_ERR_UNSUPPORTED, "%s: .npy format version %d.%d, expected 1.0, 2.0 or 3.0", what, major,
                   b[7]);
  }
  if (data_at > len)
    return err_set(err, LOOM_ERR_PARSE, "%s: truncated .npy header (%zu header bytes, file has %zu)", what,
                   header_len, len);
  Cursor c = {(const char *)b + data_at - header_len, (const char *)b + data_at};
  char descr[32] = {0};
  bool have_descr = false, have_order = false, have_shape = false, fortran = false;
  if (!eat(&c, '{')) return err_set(err, LOOM_ERR_PARSE, "%s: .npy header is not a dict", what);
  while (!eat(&c, '}')) {
    char key[32];
    if (!read_string(&c, key, sizeof key) || !eat(&c, ':'))
      return err_set(err, LOOM_ERR_PARSE, "%s: malformed .npy header", what);
    if (!strcmp(key, "descr")) {
      if (!read_string(&c, descr, sizeof descr))
        return err_set(err, LOOM_ERR_UNSUPPORTED, "%s: unsupported 'descr' (structured dtypes are not supported)",
                       what);
      have_descr = true;
    } else if (!strcmp(key, "fortran_order")) {
      if (read_word(&c, "True")) fortran = true;
      else if (!read_word(&c, "False")) return err_set(err, LOOM_ERR_PARSE, "%s: malformed 'fortran_order'", what);
      have_order = true;
    } else if (!strcmp(key, "shape")) {
      if (!read_shape(&c, out)) return err_set(err, LOOM_ERR_PARSE, "%s: malformed 'shape' in the .npy header", what);
      have_shape = true;
    } else {
      return err_set(err, LOOM_ERR_PARSE, "%s: unexpected key '%s' in the .npy header", what, key);
    }
    if (!eat(&c, ',')) {
      if (!eat(&c, '}')) return err_set(err, LOOM_ERR_PARSE, "%s: malformed .npy header", what);
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape)
    return err_set(err, LOOM_ERR_PARSE, "%s: .npy header lacks '%s'", what,
                   !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
  if (fortran)
    return err_set(err, LOOM_ERR_UNSUPPORTED,
                   "%s: Fortran-order array is not supported; expected C order (use np.ascontiguousarray)", what);
  loom_status st = parse_descr(descr, what, &out->dtype, err);
  if (st) return st;
  uint64_t nbytes;
  if (!dl_shape_bytes(out->shape, out->ndim, dl_dtype_bytes(out->dtype), (uint64_t)len, &nbytes) ||
      nbytes != len - data_at) {
    char sh[256];
    return err_set(err, LOOM_ERR_PARSE, "%s: holds %zu data bytes, too few or too many for %s %s", what,
                   len - data_at, dl_dtype_name(out->dtype), dl_shape_str(out->shape, out->ndim, sh, sizeof sh));
  }
  out->nbytes = (size_t)nbytes;
  out->data = loom_aligned_alloc(64, (out->nbytes + 63) / 64 * 64 + 64);
  if (!out->data) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", what, out->nbytes);
  memcpy(out->data, b + data_at, out->nbytes);
  return LOOM_OK;
}

loom_status npy_read(const char *path, NpyArray *out, LoomError *err) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return err_set(err, LOOM_ERR_IO, "cannot open \"%s\": %s", path, strerror(errno));
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 1 << 16;
      char *nb = loom_realloc(buf, cap);
      if (!nb) {
        loom_free(buf);
        fclose(f);
        return err_set(err, LOOM_ERR_RUNTIME, "\"%s\": out of memory", path);
      }
      buf = nb;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    loom_free(buf);
    return err_set(err, LOOM_ERR_IO, "cannot read \"%s\"", path);
  }
  loom_status st = npy_parse(buf, len, path, out, err);
  loom_free(buf);
  return st;
}

void npy_free(NpyArray *a) {
  loom_free(a->data);
  a->data = NULL;
}

DLTensor npy_as_tensor(NpyArray *a) {
  DLTensor t = {0};
  t.data = a->data;
  t.device.device_type = kDLCPU;
  t.ndim = a->ndim;
  t.dtype = a->dtype;
  t.shape = a->shape;
  return t;
}

static bool is_compact(const DLTensor *t) {
  if (!t->strides) return true;
  int64_t expect = 1;
  for (int32_t i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->strides[i] != expect) return false;
    expect *= t->shape[i];
  }
  return true;
}

loom_status npy_write(const char *path, const DLTensor *t, LoomError *err) {
  const char *descr = npy_descr(t->dtype);
  if (!descr) return err_set(err, LOOM_ERR_INVALID_ARG, "cannot write \"%s\": dtype not supported by .npy", path);
  if (t->device.device_type != kDLCPU || !is_compact(t) || t->ndim < 0 || t->ndim > NPY_MAX_DIMS)
    return err_set(err, LOOM_ERR_INVALID_ARG, "cannot write \"%s\": expected a compact CPU tensor", path);
  uint64_t nbytes;
  if (!dl_shape_bytes(t->shape, t->ndim, dl_dtype_bytes(t->dtype), UINT64_MAX / 2, &nbytes))
    return err_set(err, LOOM_ERR_INVALID_ARG, "cannot write \"%s\": bad shape", path);
  char dict[1024];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int32_t i = 0; i < t->ndim; i++)
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)t->shape[i],
                  i + 1 < t->ndim ? " " : "");
  n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
  /* Pad with spaces and a final newline so the data starts 64-byte aligned. */
  size_t prefix = 10, total = prefix + (size_t)n + 1;
  size_t padded = (total + 63) / 64 * 64;
  size_t header_len = padded - prefix;
  unsigned char head[16] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(header_len & 0xff),
                            (unsigned char)(header_len >> 8)};
  char *hdr = loom_malloc(header_len);
  if (!hdr) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory writing \"%s\"", path);
  memset(hdr, ' ', header_len);
  memcpy(hdr, dict, (size_t)n);
  hdr[header_len - 1] = '\n';
  AtomicFile af;
  loom_status st = atomic_file_open(&af, path, err);
  if (st) {
    loom_free(hdr);
    return st;
  }
  atomic_file_write(&af, head, prefix);
  atomic_file_write(&af, hdr, header_len);
  atomic_file_write(&af, (const char *)t->data + t->byte_offset, (size_t)nbytes);
  loom_free(hdr);
  return atomic_file_commit(&af, err);
}
