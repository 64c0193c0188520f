/* The model's weights in an exported project: embedded in PREFIX_weights.c
 * as 64-bit words, or as the file PREFIX.weights that PREFIX_weights_bind
 * (generated into PREFIX.c) checks and binds from a caller's buffer. Both
 * hold the same payload: the artifact's weights blob (each tensor at its
 * 64-byte aligned run-entry offset, little-endian), which the run entry
 * reads unchanged.
 *
 * The file (docs/export.md "The weights file"), every integer little-endian:
 *
 *   0  magic "\x89LOOMWT\n" (8 bytes; the 0x89 and \n catch 7-bit and
 *      text-mode transfers)
 *   8  u32 format version (1)    12 u32 endianness mark 0x01020304
 *  16  u64 file bytes            24 u64 payload offset (a multiple of 64)
 *  32  u64 payload bytes         40 u32 weight count   44 u32 alignment (64)
 *  48  u64 layout hash: FNV-1a 64 of the table
 *  56  u64 checksum: FNV-1a 64 of bytes [0, 56) then [64, file bytes)
 *  64  the table: per weight u64 offset (into the payload), u64 bytes
 *      zeros up to the payload offset, then the payload. */
#include "export/export.h"

#include "runtime/artifact_format.h"

#include <inttypes.h>
#include <string.h>

enum { FILE_VERSION = 1, HEADER_BYTES = 64, TABLE_ENTRY_BYTES = 16 };
static const unsigned char k_magic[8] = {0x89, 'L', 'O', 'O', 'M', 'W', 'T', '\n'};

/* ---- the payload, in pieces: zero padding and each weight's bytes ---- */

typedef void (*PayloadSink)(void *user, const unsigned char *p, uint64_t n);

static uint64_t weight_bytes(const ArtifactWeight *w) {
  uint64_t b = w->t.dtype.bits / 8u;
  for (int32_t d = 0; d < w->t.ndim; d++) b *= (uint64_t)w->t.shape[d];
  return b;
}

static void payload_each(const ExportModel *m, PayloadSink sink, void *user) {
  static const unsigned char zeros[64];
  const ArtifactSpec *s = m->spec;
  uint64_t at = 0;
  for (int32_t w = 0; w <= s->num_weights; w++) {
    /* the offsets increase with w (artifact_weight_layout); the end pads to weights_bytes */
    uint64_t off = w < s->num_weights ? s->run_entry_weight_offsets[w] : m->weights_bytes;
    for (; at < off; at += off - at < 64 ? off - at : 64) sink(user, zeros, off - at < 64 ? off - at : 64);
    if (w == s->num_weights) break;
    uint64_t n = weight_bytes(&s->weights[w]);
    sink(user, s->weights[w].data, n);
    at += n;
  }
}

/* ---- embedded: PREFIX_weights.c ---- */

typedef struct WordWriter {
  StrBuf *o;
  unsigned char pending[8];
  int npending;
  uint64_t words;
} WordWriter;

/* One little-endian 64-bit word: "0x" and the hex digits without leading
 * zeros (2.5 source bytes per weight byte, a token per 8 bytes). */
static void word_out(WordWriter *ww) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | ww->pending[i];
  if (v) sb_printf(ww->o, "0x%" PRIx64 ",", v);
  else sb_puts(ww->o, "0,");
  if (++ww->words % 8 == 0) sb_putc(ww->o, '\n');
  ww->npending = 0;
}

static void words_sink(void *user, const unsigned char *p, uint64_t n) {
  WordWriter *ww = user;
  for (uint64_t i = 0; i < n; i++) {
    ww->pending[ww->npending++] = p[i];
    if (ww->npending == 8) word_out(ww);
  }
}

void export_weights_source(const ExportModel *m, StrBuf *o) {
  const char *P = m->prefix;
  uint64_t nwords = (m->weights_bytes + 7) / 8;
  sb_printf(o,
            "/* %s's weights (Loom export-c): one blob, each tensor at a 64-byte aligned\n"
            " * offset, in the order the run entry of %s.c reads them. Written as\n"
            " * little-endian 64-bit words: word k holds bytes 8k..8k+7, so the bytes in\n"
            " * memory are the blob's on a little-endian machine (checked below). */\n"
            "#include <stdint.h>\n\n"
            "#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)\n"
            "#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__\n"
            "#error \"%s_weights.c: the weights are little-endian; this target is not\"\n"
            "#endif\n#endif\n\n"
            "extern const uint64_t %s_embedded_weights[%" PRIu64 "];\n"
            "_Alignas(64) const uint64_t %s_embedded_weights[%" PRIu64 "] = {\n",
            P, P, P, P, nwords > 0 ? nwords : 1, P, nwords > 0 ? nwords : 1);
  WordWriter ww = {.o = o};
  payload_each(m, words_sink, &ww);
  if (ww.npending) {
    memset(ww.pending + ww.npending, 0, (size_t)(8 - ww.npending));
    word_out(&ww);
  }
  if (ww.words == 0) sb_puts(o, "0");
  sb_puts(o, "\n};\n");
}

/* ---- the file: PREFIX.weights ---- */

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t payload_offset(const ExportModel *m) {
  return artifact_align(HEADER_BYTES + (uint64_t)TABLE_ENTRY_BYTES * (uint64_t)m->spec->num_weights);
}

static void table_entry(const ExportModel *m, int32_t w, unsigned char e[TABLE_ENTRY_BYTES]) {
  put_u64(e, m->spec->run_entry_weight_offsets[w]);
  put_u64(e + 8, weight_bytes(&m->spec->weights[w]));
}

uint64_t export_weights_layout(const ExportModel *m) {
  uint64_t h = ARTIFACT_FNV_OFFSET;
  for (int32_t w = 0; w < m->spec->num_weights; w++) {
    unsigned char e[TABLE_ENTRY_BYTES];
    table_entry(m, w, e);
    h = artifact_fnv1a64(h, e, sizeof e);
  }
  return h;
}

typedef struct FileWriter {
  StrBuf *o;
  uint64_t hash;
} FileWriter;

static void file_sink(void *user, const unsigned char *p, uint64_t n) {
  FileWriter *fw = user;
  fw->hash = artifact_fnv1a64(fw->hash, p, n);
  for (uint64_t i = 0; i < n; i++) sb_putc(fw->o, (char)p[i]);
}

void export_weights_file(const ExportModel *m, StrBuf *o) {
  const ArtifactSpec *s = m->spec;
  uint64_t poff = payload_offset(m);
  unsigned char h[HEADER_BYTES] = {0};
  memcpy(h, k_magic, sizeof k_magic);
  put_u32(h + 8, FILE_VERSION);
  put_u32(h + 12, 0x01020304u);
  put_u64(h + 16, poff + m->weights_bytes);
  put_u64(h + 24, poff);
  put_u64(h + 32, m->weights_bytes);
  put_u32(h + 40, (uint32_t)s->num_weights);
  put_u32(h + 44, 64);
  put_u64(h + 48, m->weights_layout);
  /* the header (its checksum field zero for now), then everything after it */
  size_t start = o->len;
  FileWriter fw = {.o = o, .hash = artifact_fnv1a64(ARTIFACT_FNV_OFFSET, h, 56)};
  for (int i = 0; i < HEADER_BYTES; i++) sb_putc(o, (char)h[i]);
  for (int32_t w = 0; w < s->num_weights; w++) {
    unsigned char e[TABLE_ENTRY_BYTES];
    table_entry(m, w, e);
    file_sink(&fw, e, sizeof e);
  }
  static const unsigned char zero = 0;
  for (uint64_t at = HEADER_BYTES + (uint64_t)TABLE_ENTRY_BYTES * (uint64_t)s->num_weights; at < poff; at++)
    file_sink(&fw, &zero, 1);
  payload_each(m, file_sink, &fw);
  put_u64((unsigned char *)o->data + start + 56, fw.hash);
}

/* ---- the loader: PREFIX.h's declarations and PREFIX_weights_bind ---- */

void export_weights_api(const ExportModel *m, StrBuf *o) {
  const char *P = m->prefix, *U = m->upper;
  sb_printf(o,
            "\n/* ---- the weights: the file %s.weights (docs/export.md \"The weights file\") ----\n"
            " * Read the file into a buffer of %s_WEIGHTS_FILE_BYTES, %s_WEIGHTS_ALIGN-byte\n"
            " * aligned (or map it), then bind it once; the buffer must outlive every\n"
            " * %s_run that uses the binding and is only read. */\n"
            "#define %s_WEIGHTS_FILE_BYTES %" PRIu64 "\n#define %s_WEIGHTS_ALIGN 64\n"
            "#define %s_WEIGHTS_VERSION %d\n\n"
            "typedef struct %s_weights {\n"
            "  const void *payload; /* set by %s_weights_bind: the weights inside the caller's buffer */\n"
            "} %s_weights;\n\n"
            "/* Checks blob (size bytes: the whole file) and points w into it. Returns\n"
            " * %s_OK, or a %s_ERR_WEIGHTS_* status saying what is wrong (w is then\n"
            " * cleared): truncated, not a weights file, another byte order or\n"
            " * version, misaligned, another model's weights, a checksum mismatch.\n"
            " * Reads the whole blob once (the checksum); never writes it. */\n"
            "int %s_weights_bind(%s_weights *w, const void *blob, size_t size);\n",
            P, U, U, P, U, payload_offset(m) + m->weights_bytes, U, U, FILE_VERSION, P, P, P, U, U, P, P);
}

void export_weights_loader(const ExportModel *m, StrBuf *o) {
  const char *P = m->prefix, *U = m->upper;
  sb_printf(o,
            "\n/* ---- %s_weights_bind (%s.h; the file layout: docs/export.md) ---- */\n\n"
            "static uint64_t %s_fnv1a64(uint64_t h, const unsigned char *p, size_t n) {\n"
            "  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;\n"
            "  return h;\n"
            "}\n\n"
            "int %s_weights_bind(%s_weights *w, const void *blob, size_t size) {\n"
            "  static const unsigned char magic[8] = {0x89, 'L', 'O', 'O', 'M', 'W', 'T', '\\n'};\n"
            "  const unsigned char *b = (const unsigned char *)blob;\n"
            "  uint32_t u32[2];\n"
            "  uint64_t u64[6];\n"
            "  if (!w) return %s_ERR_NULL;\n"
            "  w->payload = NULL;\n"
            "  if (!blob) return %s_ERR_NULL;\n"
            "  if (size < 64) return %s_ERR_WEIGHTS_TRUNCATED;\n"
            "  if (memcmp(b, magic, 8) != 0) return %s_ERR_WEIGHTS_MAGIC;\n"
            "  memcpy(u32, b + 8, 8);\n"
            "  /* the file is little-endian: read natively only once the mark says so */\n"
            "  if (u32[1] != 0x01020304u) return %s_ERR_WEIGHTS_ENDIAN;\n"
            "  if (u32[0] != %d) return %s_ERR_WEIGHTS_VERSION;\n"
            "  if ((uintptr_t)blob %% 64 != 0) return %s_ERR_WEIGHTS_ALIGN;\n"
            "  memcpy(u64, b + 16, sizeof u64); /* file bytes, payload offset and bytes, count|align, layout, checksum */\n"
            "  if (size < u64[0]) return %s_ERR_WEIGHTS_TRUNCATED;\n"
            "  if (size > u64[0]) return %s_ERR_WEIGHTS_SIZE;\n"
            "  memcpy(u32, b + 40, 8);\n"
            "  if (u64[0] != %" PRIu64 "u || u64[1] != %" PRIu64 "u || u64[2] != %" PRIu64 "u || u32[0] != %" PRIu32
            "u || u32[1] != 64 ||\n"
            "      u64[4] != 0x%016" PRIx64 "ULL || %s_fnv1a64(0xcbf29ce484222325ULL, b + 64, (size_t)%" PRIu64
            "u) != u64[4])\n"
            "    return %s_ERR_WEIGHTS_MODEL;\n"
            "  if (%s_fnv1a64(%s_fnv1a64(0xcbf29ce484222325ULL, b, 56), b + 64, size - 64) != u64[5])\n"
            "    return %s_ERR_WEIGHTS_CHECKSUM;\n"
            "  w->payload = b + %" PRIu64 ";\n"
            "  return %s_OK;\n"
            "}\n",
            P, P, P, P, P, U, U, U, U, U, FILE_VERSION, U, U, U, U, payload_offset(m) + m->weights_bytes,
            payload_offset(m), m->weights_bytes, (uint32_t)m->spec->num_weights, m->weights_layout, P,
            (uint64_t)TABLE_ENTRY_BYTES * (uint64_t)m->spec->num_weights, U, P, P, U, payload_offset(m), U);
}

void export_read_weights_function(const ExportModel *m, StrBuf *o) {
  sb_printf(o,
            "/* The whole weights file in a %s_WEIGHTS_ALIGN-aligned buffer; NULL on failure. */\n"
            "static void *read_weights(const char *path, size_t *size) {\n"
            "  FILE *f = fopen(path, \"rb\");\n"
            "  if (!f) return NULL;\n"
            "  void *buf = NULL;\n"
            "  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;\n"
            "  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 &&\n"
            "      (buf = aligned_alloc(%s_WEIGHTS_ALIGN, ((size_t)n + 64) / 64 * 64)) &&\n"
            "      fread(buf, 1, (size_t)n, f) != (size_t)n) {\n"
            "    free(buf);\n"
            "    buf = NULL;\n"
            "  }\n"
            "  fclose(f);\n"
            "  *size = (size_t)n;\n"
            "  return buf;\n"
            "}\n\n",
            m->upper, m->upper);
}
