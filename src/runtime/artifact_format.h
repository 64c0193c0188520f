/* Internal: the header's byte layout and the metadata limits, shared by the
 * artifact writer and reader. */
#ifndef LOOM_RUNTIME_ARTIFACT_FORMAT_H
#define LOOM_RUNTIME_ARTIFACT_FORMAT_H

#include <stdint.h>
#include <string.h>

enum {
  HDR_MAGIC = 0,          /* 8 bytes "LOOMART\0" */
  HDR_VERSION = 8,        /* u32 */
  HDR_HEADER_BYTES = 12,  /* u32 */
  HDR_LOOM_VERSION = 16,  /* 32 bytes, NUL-padded */
  HDR_TARGET = 48,        /* 64 bytes, NUL-padded */
  HDR_META_OFFSET = 112,  /* u64 x 2 */
  HDR_META_SIZE = 120,
  HDR_WEIGHTS_OFFSET = 128,
  HDR_WEIGHTS_SIZE = 136,
  HDR_SO_OFFSET = 144,
  HDR_SO_SIZE = 152,
  HDR_FILE_SIZE = 160,
  HDR_CHECKSUM = 168,     /* FNV-1a 64 of metadata then .so bytes */
  /* [176, 192) reserved, zero */
  HDR_LOOM_VERSION_LEN = 32,
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

static inline uint64_t artifact_fnv1a64(uint64_t h, const void *data, uint64_t n) {
  const uint8_t *p = data;
  for (uint64_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}
#define ARTIFACT_FNV_OFFSET 0xcbf29ce484222325ULL

static inline uint64_t artifact_align(uint64_t v) { return (v + 63) / 64 * 64; }

#endif
