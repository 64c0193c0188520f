/* The artifact format: round trip, atomic writing, and the loader's refusal
 * of every kind of damage (truncation at each section boundary, header
 * fields, offsets, checksums, version and target mismatches).
 * test_artifact_damage.c flips bits all over the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "runtime/artifact_checksum.h"
#include "runtime/artifact_format.h"
#include "unit/runtime/artifact_fixture.h"

typedef struct Env {
  char dir[256];
  char so[4096];
  char art[4096];
  uint8_t *image; /* the good artifact's bytes */
  size_t len;
} Env;

static int setup(void **state) {
  Env *e = calloc(1, sizeof *e);
  snprintf(e->dir, sizeof e->dir, "/tmp/loom-test-artifact-XXXXXX");
  if (!mkdtemp(e->dir)) return -1;
  snprintf(e->art, sizeof e->art, "%s/model.loom", e->dir);
  *state = e;
  return fixture_artifact_image(e->dir, e->so, sizeof e->so, e->art, &e->image, &e->len);
}

static int teardown(void **state) {
  Env *e = *state;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->dir);
  if (system(cmd) != 0) return -1;
  free(e->image);
  free(e);
  return 0;
}

/* Parses a modified image; returns the status and leaves the message. */
static loom_status parse_bytes(const uint8_t *b, size_t len, int flags, LoomError *err) {
  Artifact *a = NULL;
  loom_status st = artifact_parse(b, len, "m.loom", flags, &a, err);
  if (st == LOOM_OK) {
    assert_non_null(a);
    artifact_free(a);
  } else {
    assert_null(a);
    assert_true(strlen(err->msg) > 0);
  }
  return st;
}

static void assert_contains(const char *msg, const char *part) {
  if (!strstr(msg, part)) fail_msg("expected \"%s\" in the message: %s", part, msg);
}

static void test_round_trip(void **state) {
  Env *e = *state;
  Artifact *a;
  LoomError err = {0};
  assert_int_equal(artifact_load(e->art, 0, &a, &err), LOOM_OK);
  const ArtifactSpec *s = &a->spec;
  assert_int_equal(s->num_inputs, 1);
  assert_string_equal(s->inputs[0].name, "x");
  assert_int_equal(s->inputs[0].ndim, 2);
  assert_int_equal(s->inputs[0].shape[1], 3);
  assert_int_equal(s->inputs[0].nbytes, 24);
  assert_string_equal(s->outputs[0].name, "y:0/out");
  assert_int_equal(s->num_weights, 1);
  assert_int_equal(s->weights[0].offset % 64, 0);
  assert_int_equal((uintptr_t)s->weights[0].data % 64, 0);
  FixtureModel m;
  fixture_model_init(&m, e->so);
  assert_memory_equal(s->weights[0].data, m.w, sizeof m.w);
  assert_int_equal(s->num_kernels, 2);
  assert_string_equal(s->kernels[0].name, "add_w");
  assert_int_equal(s->kernels[0].num_nodes, 2);
  assert_string_equal(s->kernels[0].nodes[1], "Identity_1");
  assert_int_equal(s->kernels[0].flops, 6);
  assert_int_equal(s->kernels[1].flops, 0);
  assert_int_equal(s->num_calls, 2);
  assert_int_equal(s->calls[0].num_args, 3);
  assert_int_equal(s->calls[0].args[2].kind, ARTIFACT_ARG_ARENA);
  assert_int_equal(s->calls[0].args[2].offset, 64);
  assert_int_equal(s->calls[1].args[1].kind, ARTIFACT_ARG_OUTPUT);
  assert_false(s->calls[1].args[1].view);
  assert_int_equal(s->arena_bytes, 128);
  assert_int_equal(s->intermediate_bytes, 24);
  assert_string_equal(a->loom_version, LOOM_VERSION_STRING);
  char host[128];
  assert_string_equal(a->target, artifact_host_target(host, sizeof host));
  /* Kernels resolved, with the exported workspace size. */
  assert_non_null(a->kernels[0].fn);
  assert_int_equal(a->kernels[0].workspace_bytes, 100);
  assert_int_equal(a->kernels[1].workspace_bytes, 0);
  artifact_free(a);
}

/* A truncation anywhere (and at each section boundary in particular) is
 * reported as such, never read past the end. */
static void test_truncation(void **state) {
  Env *e = *state;
  uint64_t meta = hdr_get_u64(e->image + HDR_META_OFFSET), w = hdr_get_u64(e->image + HDR_WEIGHTS_OFFSET);
  uint64_t so = hdr_get_u64(e->image + HDR_SO_OFFSET);
  size_t cuts[] = {0, 4, 8, 100, ARTIFACT_HEADER_BYTES - 1, ARTIFACT_HEADER_BYTES, meta + 1, w - 1, w, w + 1,
                   so - 1, so, so + 1, e->len / 2, e->len - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    LoomError err = {0};
    uint8_t *copy = malloc(cuts[i] + 1);
    memcpy(copy, e->image, cuts[i]);
    assert_int_equal(parse_bytes(copy, cuts[i], 0, &err), LOOM_ERR_PARSE);
    if (cuts[i] < 8) assert_contains(err.msg, "not a Loom artifact");
    else assert_contains(err.msg, "truncated");
    free(copy);
  }
  /* every length, cheaply: all refused */
  for (size_t n = 0; n < e->len; n += 7) {
    LoomError err = {0};
    uint8_t *copy = malloc(n + 1);
    memcpy(copy, e->image, n);
    assert_int_not_equal(parse_bytes(copy, n, 0, &err), LOOM_OK);
    free(copy);
  }
  /* a truncated file on disk */
  char p[4200];
  snprintf(p, sizeof p, "%s/trunc.loom", e->dir);
  assert_int_equal(fixture_write_file(p, e->image, (size_t)so + 10), 0);
  Artifact *a;
  LoomError err = {0};
  assert_int_equal(artifact_load(p, 0, &a, &err), LOOM_ERR_PARSE);
  assert_contains(err.msg, "trunc.loom");
  assert_contains(err.msg, "truncated");
}

/* A header field changed alone is refused by the header's CRC; with the
 * checksums recomputed (artifact_reseal) the field's own check still
 * refuses it, naming the field. */
static void test_header_damage(void **state) {
  Env *e = *state;
  uint8_t *b = malloc(e->len);
  LoomError err;
#define RESET() (memcpy(b, e->image, e->len), memset(&err, 0, sizeof err))
#define EXPECT(st, part)                                                     \
  do {                                                                       \
    assert_int_equal(parse_bytes(b, e->len, 0, &err), LOOM_ERR_PARSE);       \
    assert_contains(err.msg, "header section checksum mismatch");            \
    artifact_reseal(b, e->len);                                              \
    memset(&err, 0, sizeof err);                                             \
    assert_int_equal(parse_bytes(b, e->len, 0, &err), st);                   \
    assert_contains(err.msg, part);                                          \
  } while (0)
  RESET();
  b[0] = 'X';
  assert_int_equal(parse_bytes(b, e->len, 0, &err), LOOM_ERR_PARSE);
  assert_contains(err.msg, "not a Loom artifact");

  RESET();
  hdr_put_u32(b + HDR_VERSION, 3);
  EXPECT(LOOM_ERR_UNSUPPORTED, "artifact format version 3, this loader reads 2: recompile");

  RESET();
  hdr_put_u32(b + HDR_HEADER_BYTES, 200);
  EXPECT(LOOM_ERR_PARSE, "header size");

  RESET();
  memset(b + HDR_TARGET, 0, HDR_TARGET_LEN);
  EXPECT(LOOM_ERR_PARSE, "target");

  RESET();
  hdr_put_u64(b + HDR_META_OFFSET, e->len + 5);
  EXPECT(LOOM_ERR_PARSE, "metadata section");

  RESET();
  hdr_put_u64(b + HDR_SO_SIZE, UINT64_MAX - 3);
  EXPECT(LOOM_ERR_PARSE, "shared object section");

  RESET(); /* weights overlapping the metadata */
  hdr_put_u64(b + HDR_WEIGHTS_OFFSET, ARTIFACT_HEADER_BYTES);
  EXPECT(LOOM_ERR_PARSE, "weights section");

  RESET();
  b[HDR_RESERVED + 3] = 1;
  EXPECT(LOOM_ERR_PARSE, "reserved");

  RESET();
  hdr_put_u64(b + HDR_FILE_SIZE, e->len - 1);
  EXPECT(LOOM_ERR_PARSE, "past its end");

  RESET(); /* a stored section checksum changed: that section is named */
  b[HDR_WEIGHTS_CRC] ^= 0x80;
  assert_int_equal(parse_bytes(b, e->len, 0, &err), LOOM_ERR_PARSE);
  assert_contains(err.msg, "header section checksum mismatch");
  hdr_put_u32(b + HDR_HEADER_CRC, artifact_header_crc(b));
  assert_int_equal(parse_bytes(b, e->len, 0, &err), LOOM_ERR_PARSE);
  assert_contains(err.msg, "weights section checksum mismatch");

  RESET(); /* one flipped bit in the shared object */
  b[hdr_get_u64(b + HDR_SO_OFFSET) + 100] ^= 0x10;
  assert_int_equal(parse_bytes(b, e->len, 0, &err), LOOM_ERR_PARSE);
  assert_contains(err.msg, "shared object section checksum mismatch");
  assert_contains(err.msg, "the file is damaged");

  RESET(); /* and in the metadata */
  b[hdr_get_u64(b + HDR_META_OFFSET) + 3] ^= 0x01;
  assert_int_equal(parse_bytes(b, e->len, 0, &err), LOOM_ERR_PARSE);
  assert_contains(err.msg, "metadata section checksum mismatch");

  /* Every byte of the header set to a few values, as is and resealed (so
   * the field checks behind the CRC see it): refused or accepted, never a
   * crash (ASan watches). */
  for (int i = 0; i < ARTIFACT_HEADER_BYTES; i++)
    for (int v = 0; v < 8; v++) {
      static const uint8_t vals[4] = {0x00, 0xff, 0x7f, 0x40};
      RESET();
      b[i] = vals[v % 4];
      if (v >= 4) artifact_reseal(b, e->len);
      loom_status st = parse_bytes(b, e->len, 0, &err);
      if (v < 4 && b[i] != e->image[i]) assert_int_not_equal(st, LOOM_OK);
    }
  free(b);
#undef EXPECT
#undef RESET
}

static void write_spec_expect(const char *path, ArtifactSpec *spec) {
  LoomError err = {0};
  if (artifact_write(path, spec, &err)) fail_msg("artifact_write: %s", err.msg);
}

static void test_version_and_target_mismatch(void **state) {
  Env *e = *state;
  FixtureModel m;
  fixture_model_init(&m, e->so);
  char p[4200];
  snprintf(p, sizeof p, "%s/other.loom", e->dir);
  Artifact *a;
  LoomError err = {0};
  char host[128];
  artifact_host_target(host, sizeof host);

  m.spec.target = "aarch64";
  write_spec_expect(p, &m.spec);
  assert_int_equal(artifact_load(p, 0, &a, &err), LOOM_ERR_UNSUPPORTED);
  assert_contains(err.msg, "\"aarch64\"");
  assert_contains(err.msg, host);
  /* inspect may still read it */
  assert_int_equal(artifact_parse(e->image, e->len, "x", ARTIFACT_SKIP_TARGET_CHECK, &a, &err), LOOM_OK);
  artifact_free(a);

  m.spec.target = "x86_64-avx512-nosuchisa";
  write_spec_expect(p, &m.spec);
  assert_int_equal(artifact_load(p, 0, &a, &err), LOOM_ERR_UNSUPPORTED);
  assert_contains(err.msg, "nosuchisa");

  m.spec.target = NULL;
  m.spec.loom_version = "9.4.1";
  write_spec_expect(p, &m.spec);
  memset(&err, 0, sizeof err);
  assert_int_equal(artifact_load(p, 0, &a, &err), LOOM_ERR_UNSUPPORTED);
  assert_contains(err.msg, "Loom 9.4.1");
  assert_contains(err.msg, LOOM_VERSION_STRING);

  /* a patch release of the same major.minor loads */
  char patch[32];
  snprintf(patch, sizeof patch, "%.*s.99", (int)(strrchr(LOOM_VERSION_STRING, '.') - LOOM_VERSION_STRING),
           LOOM_VERSION_STRING);
  m.spec.loom_version = patch;
  write_spec_expect(p, &m.spec);
  assert_int_equal(artifact_load(p, 0, &a, &err), LOOM_OK);
  artifact_free(a);
}

static void test_target_strings(void **state) {
  (void)state;
  char host[128];
  artifact_host_target(host, sizeof host);
  LoomError err = {0};
  assert_int_equal(artifact_check_target(host, &err), LOOM_OK);
  size_t arch = strcspn(host, "-");
  char bare[64];
  snprintf(bare, sizeof bare, "%.*s", (int)arch, host);
  assert_int_equal(artifact_check_target(bare, &err), LOOM_OK);
  assert_int_equal(artifact_check_target("riscv64", &err), strcmp(bare, "riscv64") ? LOOM_ERR_UNSUPPORTED : LOOM_OK);
  char bad[80];
  snprintf(bad, sizeof bad, "%s-", bare);
  assert_int_equal(artifact_check_target(bad, &err), LOOM_ERR_UNSUPPORTED);
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

/* A failed write leaves nothing at the final path (an older file untouched)
 * and no temporary behind. */
static void test_atomic_write(void **state) {
  Env *e = *state;
  char sub[4200], p[4300];
  snprintf(sub, sizeof sub, "%s/atomic", e->dir);
  assert_int_equal(mkdir(sub, 0755), 0);
  snprintf(p, sizeof p, "%s/m.loom", sub);
  FixtureModel m;
  fixture_model_init(&m, e->so);
  LoomError err = {0};

  /* bad spec: refused before any file exists */
  m.weight.t.dtype = (DLDataType){kDLFloat, 7, 1};
  assert_int_equal(artifact_write(p, &m.spec, &err), LOOM_ERR_INVALID_ARG);
  assert_contains(err.msg, "weights[0]");
  assert_int_equal(count_entries(sub), 0);

  /* a spec the builder accepts but the self-check refuses (unwritten output)
   * fails after the temporary was written: it must be gone too */
  fixture_model_init(&m, e->so);
  m.relu_args[1] = m.add_args[2];
  assert_int_equal(artifact_write(p, &m.spec, &err), LOOM_ERR_PARSE);
  assert_contains(err.msg, "no call writes output");
  assert_int_equal(count_entries(sub), 0);

  /* a missing shared object */
  fixture_model_init(&m, "/nonexistent/kernels.so");
  assert_int_equal(artifact_write(p, &m.spec, &err), LOOM_ERR_IO);
  assert_contains(err.msg, "/nonexistent/kernels.so");
  assert_int_equal(count_entries(sub), 0);

  /* an existing artifact survives a failed overwrite */
  fixture_model_init(&m, e->so);
  write_spec_expect(p, &m.spec);
  m.kernels[0].name = NULL;
  assert_int_equal(artifact_write(p, &m.spec, &err), LOOM_ERR_INVALID_ARG);
  size_t len;
  uint8_t *now = fixture_read_file(p, &len);
  assert_int_equal(len, e->len);
  assert_memory_equal(now, e->image, len);
  free(now);
  assert_int_equal(count_entries(sub), 1);

  /* a directory that does not exist */
  fixture_model_init(&m, e->so);
  snprintf(p, sizeof p, "%s/no/such/dir/m.loom", e->dir);
  assert_int_equal(artifact_write(p, &m.spec, &err), LOOM_ERR_IO);
  assert_contains(err.msg, "no/such/dir/m.loom");
}

static void test_missing_kernel_symbol(void **state) {
  Env *e = *state;
  FixtureModel m;
  fixture_model_init(&m, e->so);
  m.kernels[1].name = "relu_missing";
  char p[4200];
  snprintf(p, sizeof p, "%s/missing.loom", e->dir);
  write_spec_expect(p, &m.spec);
  Artifact *a;
  LoomError err = {0};
  assert_int_equal(artifact_load(p, 0, &a, &err), LOOM_ERR_PARSE);
  assert_contains(err.msg, "relu_missing");
  /* and a .so that is not an ELF file: dlopen refuses, no crash */
  snprintf(p, sizeof p, "%s/garbage.loom", e->dir);
  fixture_model_init(&m, NULL);
  m.spec.so_path = NULL;
  m.spec.so_bytes = "this is not a shared object";
  m.spec.so_size = 27;
  write_spec_expect(p, &m.spec);
  assert_int_not_equal(artifact_load(p, 0, &a, &err), LOOM_OK);
  assert_contains(err.msg, "garbage.loom");
}

/* External (BYOC) kernels: the back end survives the round trip, and the
 * runtime library they call is loaded before the kernels; a missing one
 * refuses the artifact naming the back end and the library. */
static void test_byoc_runtime_libraries(void **state) {
  Env *e = *state;
  FixtureModel m;
  fixture_model_init(&m, e->so);
  m.kernels[1].backend = "vendor";
  ArtifactByocRuntime rt = {"vendor", "libm.so.6"};
  m.spec.byoc_runtimes = &rt;
  m.spec.num_byoc_runtimes = 1;
  char p[4200];
  snprintf(p, sizeof p, "%s/byoc.loom", e->dir);
  write_spec_expect(p, &m.spec);
  Artifact *a;
  LoomError err = {0};
  assert_int_equal(artifact_load(p, 0, &a, &err), LOOM_OK);
  assert_null(a->spec.kernels[0].backend);
  assert_string_equal(a->spec.kernels[1].backend, "vendor");
  assert_int_equal(a->spec.num_byoc_runtimes, 1);
  assert_string_equal(a->spec.byoc_runtimes[0].library, "libm.so.6");
  assert_int_equal(a->num_byoc_handles, 1);
  artifact_free(a);
  rt.library = "libloom_no_such_runtime.so";
  write_spec_expect(p, &m.spec);
  assert_int_equal(artifact_load(p, 0, &a, &err), LOOM_ERR_IO);
  assert_contains(err.msg, "BYOC back end \"vendor\"");
  assert_contains(err.msg, "libloom_no_such_runtime.so");
  /* a bare name: the library path, then next to the code loading it (this test program) */
  assert_contains(err.msg, "looked on the library path, then in /");
  assert_contains(err.msg, "/../lib)");
}

/* Two different shared objects loaded at the same time each get their own
 * kernels (dlopen returns an already loaded object whose name matches, so a
 * reused /proc/self/fd/N or temporary name would hand the second artifact
 * the first one's code). Both loading paths, memfd and temporary file. */
static void test_two_artifacts_loaded_at_once(void **state) {
  Env *e = *state;
  static const char *const renames[] = {"-Dadd_w=add_w_b", "-Drelu_p=relu_p_b",
                                        "-Dadd_w_workspace_bytes=add_w_b_workspace_bytes", NULL};
  char so_b[4096], p_b[4200];
  assert_int_equal(fixture_build_so_ex(e->dir, "kernels_b", renames, so_b, sizeof so_b), 0);
  FixtureModel m;
  fixture_model_init(&m, so_b);
  m.kernels[0].name = "add_w_b";
  m.kernels[1].name = "relu_p_b";
  snprintf(p_b, sizeof p_b, "%s/model_b.loom", e->dir);
  write_spec_expect(p_b, &m.spec);
  for (int flags = 0; flags <= ARTIFACT_NO_MEMFD; flags += ARTIFACT_NO_MEMFD) {
    Artifact *a, *b, *a2;
    LoomError err = {0};
    assert_int_equal(artifact_load(e->art, flags, &a, &err), LOOM_OK);
    if (artifact_load(p_b, flags, &b, &err)) fail_msg("flags %d: %s", flags, err.msg);
    assert_string_equal(b->kernels[0].name, "add_w_b");
    assert_int_equal(b->kernels[0].workspace_bytes, 100);
    assert_true(a->kernels[0].fn != b->kernels[0].fn);
    /* the same artifact twice is fine too */
    assert_int_equal(artifact_load(e->art, flags, &a2, &err), LOOM_OK);
    assert_non_null(a2->kernels[1].fn);
    artifact_free(a);
    artifact_free(b);
    artifact_free(a2);
  }
}

static void test_missing_file(void **state) {
  (void)state;
  Artifact *a;
  LoomError err = {0};
  assert_int_equal(artifact_load("/nonexistent/model.loom", 0, &a, &err), LOOM_ERR_IO);
  assert_contains(err.msg, "/nonexistent/model.loom");
  assert_int_equal(artifact_load("/tmp", 0, &a, &err), LOOM_ERR_IO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_truncation),
      cmocka_unit_test(test_header_damage),
      cmocka_unit_test(test_version_and_target_mismatch),
      cmocka_unit_test(test_target_strings),
      cmocka_unit_test(test_atomic_write),
      cmocka_unit_test(test_missing_kernel_symbol),
      cmocka_unit_test(test_byoc_runtime_libraries),
      cmocka_unit_test(test_two_artifacts_loaded_at_once),
      cmocka_unit_test(test_missing_file),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
