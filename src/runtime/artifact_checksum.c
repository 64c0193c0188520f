/* The artifact's CRC-32 checksums (artifact_checksum.h): computing them over
 * sections of any size, verifying one, and resealing an image. */
#include "runtime/artifact_checksum.h"

#include "runtime/artifact.h"
#include "runtime/artifact_format.h"

#include <zlib.h>

_Static_assert(HDR_HEADER_CRC + 4 == ARTIFACT_HEADER_BYTES, "the header CRC is the header's last field");

uint32_t artifact_crc32(uint32_t crc, const void *data, uint64_t n) {
  /* zlib's crc32() takes a uInt length: feed it at most 1 GiB at a time */
  const Bytef *p = data;
  uLong c = crc;
  while (n) {
    uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
    c = crc32(c, p, k);
    p += k;
    n -= k;
  }
  return (uint32_t)c;
}

uint32_t artifact_header_crc(const uint8_t *header) { return artifact_crc32(0, header, HDR_HEADER_CRC); }

loom_status artifact_verify_section(const uint8_t *image, uint64_t off, uint64_t size, uint32_t stored,
                                    const char *what, const char *section, LoomError *err) {
  uint32_t computed = artifact_crc32(0, image + off, size);
  if (computed == stored) return LOOM_OK;
  return err_set(err, LOOM_ERR_PARSE,
                 "artifact \"%s\": %s section checksum mismatch (stored 0x%08x, computed 0x%08x): the file is damaged",
                 what, section, stored, computed);
}

/* The part of [off, off + size) inside the image. */
static uint32_t clamped_crc(const uint8_t *b, size_t len, uint64_t off, uint64_t size) {
  if (off >= len) return artifact_crc32(0, b, 0);
  if (size > len - off) size = len - off;
  return artifact_crc32(0, b + off, size);
}

void artifact_reseal(uint8_t *b, size_t len) {
  if (len < ARTIFACT_HEADER_BYTES) return;
  static const struct {
    int off, size, crc;
  } sections[] = {{HDR_META_OFFSET, HDR_META_SIZE, HDR_META_CRC},
                  {HDR_WEIGHTS_OFFSET, HDR_WEIGHTS_SIZE, HDR_WEIGHTS_CRC},
                  {HDR_SO_OFFSET, HDR_SO_SIZE, HDR_SO_CRC}};
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
    hdr_put_u32(b + sections[i].crc,
                clamped_crc(b, len, hdr_get_u64(b + sections[i].off), hdr_get_u64(b + sections[i].size)));
  hdr_put_u32(b + HDR_HEADER_CRC, artifact_header_crc(b));
}
