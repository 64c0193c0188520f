/* Internal: the header's byte layout and the metadata limits, shared by the
 * artifact writer and reader. */
#ifndef LOOM_RUNTIME_ARTIFACT_FORMAT_H
#define LOOM_RUNTIME_ARTIFACT_FORMAT_H

#include <stdint.h>
#include <string.h>

/* From format version 2 on, every version keeps the first 16 bytes (magic,
 * version, header size) and ends its header with a CRC-32 of the bytes
 * before it: a loader can then tell an intact header of another version
 * (refused by version) from a damaged one (refused as damage). */
enum {
  HDR_MAGIC = 0,          /* 8 bytes "LOOMART\0" */
  HDR_VERSION = 8,        /* u32 */
  HDR_HEADER_BYTES = 12,  /* u32 */
  HDR_FIXED_BYTES = 16,   /* magic, version, header size: the same in every version */
  HDR_LOOM_VERSION = 16,  /* 32 bytes, NUL-padded */
  HDR_TARGET = 48,        /* 64 bytes, NUL-padded */
  HDR_META_OFFSET = 112,  /* u64 x 2 */
  HDR_META_SIZE = 120,
  HDR_WEIGHTS_OFFSET = 128,
  HDR_WEIGHTS_SIZE = 136,
  HDR_SO_OFFSET = 144,
  HDR_SO_SIZE = 152,
  HDR_FILE_SIZE = 160,
  HDR_META_CRC = 168,     /* u32 CRC-32 of each section's bytes */
  HDR_WEIGHTS_CRC = 172,
  HDR_SO_CRC = 176,
  HDR_RESERVED = 180,     /* [180, 188) zero */
  HDR_HEADER_CRC = 188,   /* u32 CRC-32 of header bytes [0, 188): the header's last field */
  HDR_LOOM_VERSION_LEN = 32,
  /* Format version 1 (FNV-1a 64 of metadata and .so at 168, [176, 192)
   * zero): recognized only to refuse it by name. */
  HDR_V1_RESERVED = 176,
  HDR_TARGET_LEN = 64,
};

/* JSON numbers are doubles: integers above 2^53 would silently round. */
#define ARTIFACT_MAX_INT ((uint64_t)1 << 53)
/* A sanity bound on any one tensor, the arena and the weights (1 TiB). */
#define ARTIFACT_MAX_BYTES ((uint64_t)1 << 40)
enum { ARTIFACT_MAX_ARGS = 4096 };

static inline void hdr_put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void hdr_put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t hdr_get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static inline uint64_t hdr_get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* The run entry's plan hash (artifact_run.c); the file's checksums are
 * CRC-32 (artifact_checksum.h). */
static inline uint64_t artifact_fnv1a64(uint64_t h, const void *data, uint64_t n) {
  const uint8_t *p = data;
  for (uint64_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}
#define ARTIFACT_FNV_OFFSET 0xcbf29ce484222325ULL

static inline uint64_t artifact_align(uint64_t v) { return (v + 63) / 64 * 64; }

#endif
