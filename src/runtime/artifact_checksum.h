/* Internal: the artifact's checksums. Every section (metadata, weights,
 * shared object) has its own CRC-32 in the header, and the header has one
 * over its own bytes, so any damage is refused naming the part that was hit
 * before anything from the file is used or dlopen'ed. CRC-32 is zlib's
 * (fast enough for weights of hundreds of MB): it always detects a burst of
 * up to 32 bits and one or two flipped bits anywhere in a section under
 * 512 MiB; other damage passes with probability 2^-32. It guards against
 * damage, not against tampering. */
#ifndef LOOM_RUNTIME_ARTIFACT_CHECKSUM_H
#define LOOM_RUNTIME_ARTIFACT_CHECKSUM_H

#include "support/error.h"

#include <stddef.h>
#include <stdint.h>

/* CRC-32 of n bytes continuing `crc` (0 to start); any n, unlike zlib's
 * uInt-sized crc32(). */
uint32_t artifact_crc32(uint32_t crc, const void *data, uint64_t n);

/* The CRC the header stores over its own bytes [0, HDR_HEADER_CRC). */
uint32_t artifact_header_crc(const uint8_t *header);

/* LOOM_OK when the CRC-32 of [off, off + size) of the image equals `stored`;
 * else LOOM_ERR_PARSE "artifact "<what>": <section> section checksum
 * mismatch (stored 0x..., computed 0x...): the file is damaged". The range
 * must lie inside the image (artifact_parse checks it first). */
loom_status artifact_verify_section(const uint8_t *image, uint64_t off, uint64_t size, uint32_t stored,
                                    const char *what, const char *section, LoomError *err);

/* Recomputes every checksum of an image in place: the three sections' from
 * the offsets and sizes its header gives (clamped to the image), then the
 * header's. For tests and the fuzzer, which change bytes on purpose and want
 * the checks behind the checksums to see the change; the writer and the
 * loader never call it. Images shorter than a header are left alone. */
void artifact_reseal(uint8_t *image, size_t len);

#endif
