/* A damaged artifact is refused, never run: flipped bits in every section
 * (header, metadata, weights, shared object), in the padding between them,
 * truncation and appended bytes are each refused by loom_model_load with a
 * message naming the file and the part that was hit, while the undamaged
 * file loads and computes the right answer. Old and later format versions
 * are refused by their number. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "loom/loom_runtime.h"
#include "runtime/artifact_checksum.h"
#include "runtime/artifact_format.h"
#include "unit/runtime/artifact_fixture.h"

enum { RANDOM_DAMAGES = 50 }; /* per section */

typedef struct Env {
  char dir[256];
  char so[4096];
  char art[4096];     /* the good artifact */
  char damaged[4200]; /* where each damaged copy is written */
  uint8_t *image;     /* the good artifact's bytes */
  size_t len;
} Env;

typedef struct Section {
  const char *name; /* as the loader names it */
  uint64_t off, size;
} Section;

static int setup(void **state) {
  Env *e = calloc(1, sizeof *e);
  snprintf(e->dir, sizeof e->dir, "/tmp/loom-test-damage-XXXXXX");
  if (!mkdtemp(e->dir)) return -1;
  snprintf(e->art, sizeof e->art, "%s/model.loom", e->dir);
  snprintf(e->damaged, sizeof e->damaged, "%s/damaged.loom", e->dir);
  *state = e;
  return fixture_artifact_image(e->dir, e->so, sizeof e->so, e->art, &e->image, &e->len);
}

static int teardown(void **state) {
  Env *e = *state;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->dir);
  int rc = system(cmd);
  free(e->image);
  free(e);
  return rc == 0 ? 0 : -1;
}

static void sections_of(const uint8_t *b, Section s[4]) {
  s[0] = (Section){"header", 0, ARTIFACT_HEADER_BYTES};
  s[1] = (Section){"metadata", hdr_get_u64(b + HDR_META_OFFSET), hdr_get_u64(b + HDR_META_SIZE)};
  s[2] = (Section){"weights", hdr_get_u64(b + HDR_WEIGHTS_OFFSET), hdr_get_u64(b + HDR_WEIGHTS_SIZE)};
  s[3] = (Section){"shared object", hdr_get_u64(b + HDR_SO_OFFSET), hdr_get_u64(b + HDR_SO_SIZE)};
}

/* splitmix64: a fixed seed gives the same damage on every run */
static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void assert_contains(const char *msg, const char *part) {
  if (!strstr(msg, part)) fail_msg("expected \"%s\" in the message: %s", part, msg);
}

/* Writes the bytes to e->damaged and loads them through the public API:
 * the load must fail (nothing runs) with LOOM_ERR_PARSE naming the file
 * and containing `expect`. */
static void expect_refused(const Env *e, const uint8_t *b, size_t len, const char *expect, const char *what) {
  assert_int_equal(fixture_write_file(e->damaged, b, len), 0);
  loom_model *m = NULL;
  char err[1024] = "";
  loom_model_options opt = {.num_threads = 1};
  loom_status st = loom_model_load(e->damaged, &opt, &m, err, sizeof err);
  if (st == LOOM_OK) fail_msg("%s: the damaged artifact loaded", what);
  assert_null(m);
  if (st != LOOM_ERR_PARSE) fail_msg("%s: status %d: %s", what, (int)st, err);
  if (!strstr(err, e->damaged)) fail_msg("%s: the message does not name the file: %s", what, err);
  if (!strstr(err, expect)) fail_msg("%s: expected \"%s\" in: %s", what, expect, err);
}

/* What the loader says about damage to a section: a damaged magic means
 * "not an artifact at all", checked before the header's CRC. */
static const char *expected_message(const Section *s, const uint64_t *bits, int n, char *buf, size_t len) {
  for (int i = 0; i < n && s->off == 0; i++)
    if (bits[i] / 8 < 8) return "lacks the magic";
  snprintf(buf, len, "%s section checksum mismatch", s->name);
  return buf;
}

/* 1 to 4 distinct bits at random positions of each section, written to a
 * file and loaded: every copy refused, naming the section. */
static void test_random_bit_flips_in_each_section(void **state) {
  Env *e = *state;
  Section secs[4];
  sections_of(e->image, secs);
  uint8_t *b = malloc(e->len);
  uint64_t rng = 20261122;
  for (int s = 0; s < 4; s++) {
    assert_true(secs[s].size > 0);
    for (int k = 0; k < RANDOM_DAMAGES; k++) {
      memcpy(b, e->image, e->len);
      int n = 1 + (int)(next_random(&rng) % 4);
      uint64_t bits[4];
      for (int i = 0; i < n; i++) {
        bool fresh;
        do { /* distinct bits: two flips of one bit would undo each other */
          bits[i] = next_random(&rng) % (secs[s].size * 8);
          fresh = true;
          for (int j = 0; j < i; j++) fresh = fresh && bits[j] != bits[i];
        } while (!fresh);
        b[secs[s].off + bits[i] / 8] ^= (uint8_t)(1u << (bits[i] % 8));
      }
      char what[160], buf[96];
      snprintf(what, sizeof what, "%s section, damage %d (%d bits, first at bit %llu)", secs[s].name, k, n,
               (unsigned long long)bits[0]);
      expect_refused(e, b, e->len, expected_message(&secs[s], bits, n, buf, sizeof buf), what);
    }
  }
  free(b);
}

/* Every single-bit flip of the header, metadata and weights, and of every
 * 8th byte of the shared object (in memory, through artifact_parse: the
 * first thing artifact_load does): each refused naming its section. */
static void test_every_single_bit_flip(void **state) {
  Env *e = *state;
  Section secs[4];
  sections_of(e->image, secs);
  uint8_t *b = malloc(e->len);
  memcpy(b, e->image, e->len);
  for (int s = 0; s < 4; s++) {
    uint64_t stride = s == 3 ? 8 : 1;
    for (uint64_t i = 0; i < secs[s].size; i += stride)
      for (int bit = 0; bit < 8; bit++) {
        uint64_t pos = i * 8 + (uint64_t)bit;
        b[secs[s].off + i] ^= (uint8_t)(1u << bit);
        Artifact *a = NULL;
        LoomError err = {0};
        loom_status st = artifact_parse(b, e->len, "m.loom", 0, &a, &err);
        if (st == LOOM_OK) fail_msg("%s section: byte %llu bit %d flipped was accepted", secs[s].name,
                                    (unsigned long long)i, bit);
        assert_null(a);
        char buf[96];
        const char *expect = expected_message(&secs[s], &pos, 1, buf, sizeof buf);
        if (!strstr(err.msg, expect))
          fail_msg("%s section, byte %llu bit %d: expected \"%s\" in: %s", secs[s].name, (unsigned long long)i, bit,
                   expect, err.msg);
        b[secs[s].off + i] ^= (uint8_t)(1u << bit);
      }
  }
  assert_memory_equal(b, e->image, e->len);
  free(b);
}

/* The bytes between sections belong to no checksum: they must be zero. */
static void test_padding_damage(void **state) {
  Env *e = *state;
  Section secs[4];
  sections_of(e->image, secs);
  uint8_t *b = malloc(e->len + 64);
  for (int s = 1; s < 3; s++) {
    uint64_t end = secs[s].off + secs[s].size;
    for (uint64_t i = end; i < secs[s + 1].off; i++) {
      memcpy(b, e->image, e->len);
      b[i] = 0x20;
      char expect[96];
      snprintf(expect, sizeof expect, "padding after the %s section", secs[s].name);
      expect_refused(e, b, e->len, expect, expect);
    }
  }
  /* padding after the shared object, in a file whose header says it is there */
  memcpy(b, e->image, e->len);
  memset(b + e->len, 0, 64);
  hdr_put_u64(b + HDR_FILE_SIZE, e->len + 64);
  artifact_reseal(b, e->len + 64);
  Artifact *a = NULL;
  LoomError err = {0};
  if (artifact_parse(b, e->len + 64, "m.loom", 0, &a, &err)) fail_msg("zero padding refused: %s", err.msg);
  artifact_free(a);
  b[e->len + 63] = 1;
  expect_refused(e, b, e->len + 64, "padding after the shared object section", "padding after the .so");
  free(b);
}

static void test_truncated_or_appended(void **state) {
  Env *e = *state;
  Section secs[4];
  sections_of(e->image, secs);
  uint8_t *b = malloc(2 * e->len + 4096);
  /* cut inside and at the end of each section, and one byte short */
  for (int s = 0; s < 4; s++) {
    uint64_t cuts[3] = {secs[s].off + secs[s].size / 2, secs[s].off + secs[s].size - 1, e->len - 1};
    for (int c = 0; c < 3; c++) {
      char what[96];
      snprintf(what, sizeof what, "cut at %llu (%s section)", (unsigned long long)cuts[c], secs[s].name);
      expect_refused(e, e->image, (size_t)cuts[c], "truncated", what);
    }
  }
  /* bytes appended: one zero, one random, a page, the whole file again */
  uint64_t rng = 7;
  size_t extra[4] = {1, 1, 4096, e->len};
  for (int k = 0; k < 4; k++) {
    memcpy(b, e->image, e->len);
    for (size_t i = 0; i < extra[k]; i++) b[e->len + i] = k == 0 ? 0 : (uint8_t)next_random(&rng);
    if (k == 3) memcpy(b + e->len, e->image, e->len);
    char what[64];
    snprintf(what, sizeof what, "%zu bytes appended", extra[k]);
    expect_refused(e, b, e->len + extra[k], "past its end", what);
  }
  free(b);
}

/* A file of another format version is refused by its number when its header
 * is intact: format version 1 (before the CRCs; a seed of the fuzz corpus
 * kept as written then) and a later version, with this header's size or a
 * larger one. */
static void test_other_format_versions(void **state) {
  Env *e = *state;
  char v1[4096];
  snprintf(v1, sizeof v1, "%s/tests/fuzz/corpus/artifact/format_v1.loom", LOOM_SOURCE_DIR);
  loom_model *m = NULL;
  char err[1024] = "";
  loom_model_options opt = {.num_threads = 1};
  assert_int_equal(loom_model_load(v1, &opt, &m, err, sizeof err), LOOM_ERR_UNSUPPORTED);
  assert_contains(err, "format_v1.loom");
  assert_contains(err, "artifact format version 1, this loader reads 2: recompile");

  uint8_t *b = malloc(e->len + 64);
  memcpy(b, e->image, e->len);
  hdr_put_u32(b + HDR_VERSION, 3);
  artifact_reseal(b, e->len);
  Artifact *a = NULL;
  LoomError le = {0};
  assert_int_equal(artifact_parse(b, e->len, "m.loom", 0, &a, &le), LOOM_ERR_UNSUPPORTED);
  assert_contains(le.msg, "artifact format version 3, this loader reads 2: recompile");

  /* a later header of 256 bytes, ending with its CRC (artifact_format.h) */
  memset(b, 0, e->len + 64);
  memcpy(b, e->image, HDR_FIXED_BYTES);
  hdr_put_u32(b + HDR_VERSION, 7);
  hdr_put_u32(b + HDR_HEADER_BYTES, 256);
  hdr_put_u32(b + 252, artifact_crc32(0, b, 252));
  assert_int_equal(artifact_parse(b, e->len, "m.loom", 0, &a, &le), LOOM_ERR_UNSUPPORTED);
  assert_contains(le.msg, "artifact format version 7");
  /* the same header damaged: damage, not a version */
  b[100] ^= 4;
  assert_int_equal(artifact_parse(b, e->len, "m.loom", 0, &a, &le), LOOM_ERR_PARSE);
  assert_contains(le.msg, "header section checksum mismatch");
  free(b);
}

/* The writer's checksums are the ones artifact_reseal computes, and the
 * undamaged file (after all the damaged copies) loads and runs. */
static void test_undamaged_loads_and_runs(void **state) {
  Env *e = *state;
  uint8_t *b = malloc(e->len);
  memcpy(b, e->image, e->len);
  artifact_reseal(b, e->len);
  assert_memory_equal(b, e->image, e->len);
  free(b);

  loom_model *m = NULL;
  char err[1024] = "";
  loom_model_options opt = {.num_threads = 2};
  if (loom_model_load(e->art, &opt, &m, err, sizeof err)) fail_msg("load: %s", err);
  float x[6] = {1.0f, 2.0f, -3.0f, 4.0f, -0.5f, -2.0f}, want[6];
  int64_t shape[2] = {2, 3};
  DLTensor t = {.data = x, .device = {kDLCPU, 0}, .ndim = 2, .dtype = k_f32, .shape = shape};
  assert_int_equal(loom_model_set_input(m, 0, &t), LOOM_OK);
  assert_int_equal(loom_model_run(m), LOOM_OK);
  DLTensor y;
  assert_int_equal(loom_model_get_output(m, 0, &y), LOOM_OK);
  FixtureModel fm;
  fixture_model_init(&fm, e->so);
  fixture_reference(&fm, x, want);
  assert_memory_equal(y.data, want, sizeof want);
  loom_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_bit_flips_in_each_section),
      cmocka_unit_test(test_every_single_bit_flip),
      cmocka_unit_test(test_padding_damage),
      cmocka_unit_test(test_truncated_or_appended),
      cmocka_unit_test(test_other_format_versions),
      cmocka_unit_test(test_undamaged_loads_and_runs),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
