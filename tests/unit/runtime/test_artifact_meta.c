/* The metadata schema: each violation is refused with a message naming the
 * field at fault. Images are built here byte by byte (valid header and
 * checksums), so only the JSON is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/artifact.h"
#include "runtime/artifact_checksum.h"
#include "runtime/artifact_format.h"

/* Header + json + `weights` zero bytes (64-aligned) + a fake .so. */
static uint8_t *make_image(const char *json, uint64_t weights, size_t *len) {
  static const char so[] = "\x7f" "ELF not really";
  uint64_t meta_size = strlen(json), w_off = artifact_align(ARTIFACT_HEADER_BYTES + meta_size);
  uint64_t so_off = artifact_align(w_off + weights), so_size = sizeof so;
  *len = (size_t)(so_off + so_size);
  uint8_t *b = calloc(1, *len);
  memcpy(b, ARTIFACT_MAGIC, 8);
  hdr_put_u32(b + HDR_VERSION, ARTIFACT_FORMAT_VERSION);
  hdr_put_u32(b + HDR_HEADER_BYTES, ARTIFACT_HEADER_BYTES);
  memcpy(b + HDR_LOOM_VERSION, LOOM_VERSION_STRING, strlen(LOOM_VERSION_STRING));
  char host[64];
  artifact_host_target(host, sizeof host);
  memcpy(b + HDR_TARGET, host, strlen(host));
  hdr_put_u64(b + HDR_META_OFFSET, ARTIFACT_HEADER_BYTES);
  hdr_put_u64(b + HDR_META_SIZE, meta_size);
  hdr_put_u64(b + HDR_WEIGHTS_OFFSET, w_off);
  hdr_put_u64(b + HDR_WEIGHTS_SIZE, weights);
  hdr_put_u64(b + HDR_SO_OFFSET, so_off);
  hdr_put_u64(b + HDR_SO_SIZE, so_size);
  hdr_put_u64(b + HDR_FILE_SIZE, *len);
  memcpy(b + ARTIFACT_HEADER_BYTES, json, meta_size);
  memcpy(b + so_off, so, so_size);
  artifact_reseal(b, *len);
  return b;
}

#define IN "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[2,3]}]"
#define OUT "\"outputs\":[{\"name\":\"y\",\"dtype\":\"float32\",\"shape\":[2,3]}]"
#define WTS "\"weights\":[{\"name\":\"w\",\"dtype\":\"float32\",\"shape\":[6],\"offset\":64}]"
#define KER "\"kernels\":[{\"name\":\"k0\",\"nodes\":[\"Add_0\"]}]"
#define ARENA "\"arena_bytes\":128,\"intermediate_bytes\":24"
#define ARG_X "{\"kind\":\"input\",\"index\":0,\"dtype\":\"float32\",\"shape\":[2,3]}"
#define ARG_W "{\"kind\":\"weight\",\"index\":0,\"dtype\":\"float32\",\"shape\":[2,3]}"
#define ARG_T "{\"kind\":\"arena\",\"offset\":64,\"dtype\":\"float32\",\"shape\":[6]}"
#define ARG_Y "{\"kind\":\"output\",\"index\":0,\"dtype\":\"float32\",\"shape\":[2,3]}"
#define PLAN "\"plan\":[{\"kernel\":0,\"args\":[" ARG_X "," ARG_W "," ARG_T "]},{\"kernel\":0,\"args\":[" ARG_T "," ARG_Y "]}]"
#define GOOD "{" IN "," OUT "," WTS "," KER "," ARENA "," PLAN "}"

static loom_status parse_json(const char *json, uint64_t weights, LoomError *err, Artifact **out) {
  size_t len;
  uint8_t *b = make_image(json, weights, &len);
  Artifact *a = NULL;
  memset(err, 0, sizeof *err);
  loom_status st = artifact_parse(b, len, "m.loom", 0, &a, err);
  if (out && !st) *out = a;
  else artifact_free(a);
  if (st) assert_null(a);
  free(b);
  return st;
}

static char *replace(const char *s, const char *from, const char *to);

static void test_good(void **state) {
  (void)state;
  LoomError err;
  Artifact *a = NULL;
  assert_int_equal(parse_json(GOOD, 128, &err, &a), LOOM_OK);
  assert_int_equal(a->spec.num_calls, 2);
  /* the weight viewed as [2, 3] is a view of its [6] */
  assert_true(a->spec.calls[0].args[1].view);
  assert_false(a->spec.calls[0].args[0].view);
  assert_int_equal(a->spec.weights[0].t.nbytes, 24);
  assert_int_equal(a->spec.kernels[0].flops, 0); /* no "flops": unknown */
  artifact_free(a);
  /* with one */
  char *json = replace(GOOD, "\"nodes\":[\"Add_0\"]", "\"nodes\":[\"Add_0\"],\"flops\":9007199254740992");
  assert_int_equal(parse_json(json, 128, &err, &a), LOOM_OK);
  assert_int_equal(a->spec.kernels[0].flops, (uint64_t)1 << 53);
  artifact_free(a);
  free(json);
}

typedef struct Case {
  const char *json;
  const char *expect; /* a substring of the message */
} Case;

static char *replace(const char *s, const char *from, const char *to) {
  const char *at = strstr(s, from);
  assert_non_null(at);
  size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
  char *r = malloc(n);
  snprintf(r, n, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
  return r;
}

static void test_schema_violations(void **state) {
  (void)state;
  static const struct {
    const char *from, *to, *expect;
  } edits[] = {
      {"{\"inputs\"", "[\"inputs\"", "does not parse"},
      /* external (BYOC) kernels: their back end, the libraries they call */
      {"\"nodes\":[\"Add_0\"]", "\"nodes\":[\"Add_0\"],\"backend\":5", "kernels[0].backend"},
      {"\"arena_bytes\"", "\"byoc_runtimes\":7,\"arena_bytes\"", "byoc_runtimes"},
      {"\"nodes\":[\"Add_0\"]", "\"nodes\":[\"Add_0\"],\"runtime_entry\":\"f\",\"blob\":0", "needs its \"backend\""},
      {"\"nodes\":[\"Add_0\"]", "\"nodes\":[\"Add_0\"],\"backend\":\"b\",\"runtime_entry\":\"f g\",\"blob\":0",
       "kernels[0].runtime_entry"},
      {"\"nodes\":[\"Add_0\"]", "\"nodes\":[\"Add_0\"],\"backend\":\"b\",\"runtime_entry\":\"f\",\"blob\":3",
       "kernels[0].blob"},
      {"\"arena_bytes\"", "\"byoc_runtimes\":[{\"backend\":\"x\"}],\"arena_bytes\"", "byoc_runtimes[0].library"},
      {"\"inputs\":", "\"inputz\":", "inputs: missing"},
      {"\"dtype\":\"float32\",\"shape\":[2,3]}]", "\"dtype\":\"float33\",\"shape\":[2,3]}]", "inputs[0].dtype"},
      {"\"shape\":[2,3]}]", "\"shape\":[2,-3]}]", "inputs[0].shape[1]"},
      {"\"shape\":[2,3]}]", "\"shape\":[2,3.5]}]", "inputs[0].shape[1]"},
      {"\"shape\":[2,3]}]", "\"shape\":[2,\"3\"]}]", "inputs[0].shape[1]"},
      {"\"shape\":[2,3]}]", "\"shape\":[1000000000,1000000000,1000000]}]", "larger than"},
      {"\"shape\":[2,3]}]", "\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]",
       "dimensions"},
      {"{\"name\":\"x\"", "{\"name\":\"\"", "inputs[0].name"},
      {"{\"name\":\"x\"", "{\"name\":\"a\\u0001b\"", "control character"},
      {"\"name\":\"y\"", "\"name\":7", "outputs[0].name"},
      {"\"outputs\":[{\"name\":\"y\",\"dtype\":\"float32\",\"shape\":[2,3]}]", "\"outputs\":[]", "at least one output"},
      {"\"offset\":64}", "\"offset\":65}", "weights[0].offset"},
      {"\"offset\":64}", "\"offset\":128}", "outside the 128-byte weights section"},
      {"\"offset\":64}", "\"offset\":1e300}", "weights[0].offset"},
      {"\"name\":\"k0\"", "\"name\":\"k0; rm\"", "not a C identifier"},
      {"\"nodes\":[\"Add_0\"]", "\"nodes\":\"Add_0\"", "kernels[0].nodes"},
      {"\"nodes\":[\"Add_0\"]", "\"nodes\":[\"Add_0\"],\"flops\":-6", "kernels[0].flops"},
      {"\"nodes\":[\"Add_0\"]", "\"nodes\":[\"Add_0\"],\"flops\":6.5", "kernels[0].flops"},
      {"\"nodes\":[\"Add_0\"]", "\"nodes\":[\"Add_0\"],\"flops\":\"6\"", "kernels[0].flops"},
      {"\"nodes\":[\"Add_0\"]", "\"nodes\":[\"Add_0\"],\"flops\":1e300", "kernels[0].flops"},
      {"\"arena_bytes\":128", "\"arena_bytes\":-1", "arena_bytes"},
      {"\"arena_bytes\":128", "\"arena_bytes\":64", "exceed the 64-byte arena"},
      {"{\"kernel\":0,\"args\":[" ARG_T, "{\"kernel\":1,\"args\":[" ARG_T, "plan[1].kernel"},
      {"\"kind\":\"input\",\"index\":0", "\"kind\":\"input\",\"index\":1", "input 1 does not exist"},
      {"\"kind\":\"input\"", "\"kind\":\"inptu\"", "plan[0].args[0].kind"},
      {"\"kind\":\"weight\",\"index\":0,\"dtype\":\"float32\",\"shape\":[2,3]",
       "\"kind\":\"weight\",\"index\":0,\"dtype\":\"float32\",\"shape\":[2,4]", "views weight \"w\""},
      {"\"kind\":\"weight\",\"index\":0,\"dtype\":\"float32\"", "\"kind\":\"weight\",\"index\":0,\"dtype\":\"int32\"",
       "views weight \"w\""},
      {"\"kind\":\"arena\",\"offset\":64", "\"kind\":\"arena\",\"offset\":66", "not aligned"},
      {ARG_Y, ARG_T, "no call writes output \"y\""},
      {"\"plan\":[", "\"plan\":{\"a\":1},\"plan2\":[", "plan: missing"},
      {"\"args\":[" ARG_T "," ARG_Y "]", "\"args\":7", "plan[1].args"},
      /* every array is read the same way: bounded, its elements named by index */
      {KER, "\"kernels\":[7]", "kernels[0]: expected an object"},
      {"\"plan\":[", "\"plan\":[7,", "plan[0]: expected an object"},
      {"\"args\":[" ARG_T "," ARG_Y "]", "\"args\":[" ARG_T "," ARG_Y ",3]", "plan[1].args[2]: expected an object"},
      {"\"nodes\":[\"Add_0\"]", "\"nodes\":[\"Add_0\",5]", "kernels[0].nodes[1]: expected a string"},
      {"\"nodes\":[\"Add_0\"]", "\"nodez\":[\"Add_0\"]", "kernels[0].nodes: missing"},
      {"\"arena_bytes\"",
       "\"byoc_runtimes\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
       "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],\"arena_bytes\"",
       "65 runtime libraries, at most 64"},
      {"\"arena_bytes\"", "\"run_entry\":\"r\",\"run_entry_weight_offsets\":[0],\"arena_bytes\"",
       "run_entry_weight_offsets[0]: the run entry assumes weight \"w\" at offset 0"},
      {"\"arena_bytes\"", "\"run_entry\":\"r\",\"run_entry_weight_offsets\":[64,64],\"arena_bytes\"",
       "2 entries for 1 weights"},
      {"\"arena_bytes\"", "\"run_entry\":\"r\",\"arena_bytes\"", "run_entry_weight_offsets: missing"},
  };
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
    char *json = replace(GOOD, edits[i].from, edits[i].to);
    LoomError err;
    loom_status st = parse_json(json, 128, &err, NULL);
    if (st == LOOM_OK) fail_msg("case %zu accepted: %s", i, json);
    assert_int_equal(st, LOOM_ERR_PARSE);
    if (!strstr(err.msg, edits[i].expect))
      fail_msg("case %zu: expected \"%s\" in: %s", i, edits[i].expect, err.msg);
    assert_non_null(strstr(err.msg, "m.loom"));
    free(json);
  }
  /* duplicate input names */
  LoomError err;
  char *dup = replace(GOOD, IN, "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[2,3]},"
                                "{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[1]}]");
  assert_int_equal(parse_json(dup, 128, &err, NULL), LOOM_ERR_PARSE);
  assert_non_null(strstr(err.msg, "duplicate name \"x\""));
  free(dup);
  /* a NUL inside the JSON */
  char nul[] = GOOD;
  size_t len;
  uint8_t *b = make_image(nul, 128, &len);
  b[ARTIFACT_HEADER_BYTES + 5] = 0;
  Artifact *a;
  assert_int_equal(artifact_parse(b, len, "m.loom", ARTIFACT_SKIP_CHECKSUM, &a, &err), LOOM_ERR_PARSE);
  free(b);
  /* deep nesting does not blow the stack */
  char deep[20000];
  memset(deep, '[', sizeof deep - 1);
  deep[sizeof deep - 1] = 0;
  assert_int_equal(parse_json(deep, 0, &err, NULL), LOOM_ERR_PARSE);
}

/* Dynamic extents (artifact.h): an output flagged "dynamic" whose shape is
 * an upper bound, written through an "output_shape" argument. */
#define ARG_YS "{\"kind\":\"output_shape\",\"index\":0,\"dtype\":\"int64\",\"shape\":[2]}"
#define DYN                                                                                                          \
  "{" IN ",\"outputs\":[{\"name\":\"y\",\"dtype\":\"float32\",\"shape\":[2,3],\"dynamic\":true}]," WTS "," KER "," ARENA \
  ",\"plan\":[{\"kernel\":0,\"args\":[" ARG_X "," ARG_W "," ARG_T "]},{\"kernel\":0,\"args\":[" ARG_T "," ARG_Y "," ARG_YS \
  "]}]}"

static void test_dynamic_outputs(void **state) {
  (void)state;
  LoomError err;
  Artifact *a = NULL;
  assert_int_equal(parse_json(DYN, 128, &err, &a), LOOM_OK);
  assert_true(a->spec.outputs[0].dynamic);
  assert_false(a->spec.inputs[0].dynamic);
  const ArtifactArg *ys = &a->spec.calls[1].args[2];
  assert_int_equal(ys->kind, ARTIFACT_ARG_OUTPUT_SHAPE);
  assert_int_equal(ys->index, 0);
  assert_int_equal(ys->ndim, 1);
  assert_int_equal(ys->shape[0], 2);
  DLDataType dt;
  int32_t nd;
  const int64_t *sh;
  assert_true(artifact_arg_tensor(&a->spec, ys, &dt, &nd, &sh));
  assert_int_equal(dt.code, kDLInt);
  assert_int_equal(dt.bits, 64);
  assert_int_equal(nd, 1);
  /* the flag is part of what a run entry hard-codes */
  uint64_t h = artifact_run_hash(&a->spec, NULL);
  ((ArtifactTensor *)a->spec.outputs)[0].dynamic = false;
  assert_true(artifact_run_hash(&a->spec, NULL) != h);
  artifact_free(a);
  /* "dynamic": false is the default */
  char *json = replace(GOOD, "\"shape\":[2,3]}]," WTS, "\"shape\":[2,3],\"dynamic\":false}]," WTS);
  assert_int_equal(parse_json(json, 128, &err, &a), LOOM_OK);
  assert_false(a->spec.outputs[0].dynamic);
  artifact_free(a);
  free(json);
  static const struct {
    const char *from, *to, *expect;
  } edits[] = {
      {"\"dynamic\":true", "\"dynamic\":1", "outputs[0].dynamic: expected true or false"},
      {"\"dynamic\":true", "\"dynamic\":\"yes\"", "outputs[0].dynamic"},
      {"\"shape\":[2,3]}]", "\"shape\":[2,3],\"dynamic\":true}]", "only outputs can have dynamic extents"},
      {"\"shape\":[2,3],\"dynamic\":true", "\"shape\":[],\"dynamic\":true", "needs rank >= 1"},
      {"\"dynamic\":true", "\"dynamic\":false", "output \"y\" is not dynamic"},
      {ARG_YS, "{\"kind\":\"output_shape\",\"index\":0,\"dtype\":\"int32\",\"shape\":[2]}", "must be passed as int64 [2]"},
      {ARG_YS, "{\"kind\":\"output_shape\",\"index\":0,\"dtype\":\"int64\",\"shape\":[3]}", "must be passed as int64 [2]"},
      {ARG_YS, "{\"kind\":\"output_shape\",\"index\":0,\"dtype\":\"int64\",\"shape\":[2,1]}", "must be passed as int64 [2]"},
      {ARG_YS, "{\"kind\":\"output_shape\",\"index\":3,\"dtype\":\"int64\",\"shape\":[2]}", "output_shape 3 does not exist"},
      {ARG_YS, "{\"kind\":\"output_shape\",\"index\":-1,\"dtype\":\"int64\",\"shape\":[2]}", "plan[1].args[2].index"},
      {ARG_YS, "{\"kind\":\"output_shape\",\"dtype\":\"int64\",\"shape\":[2]}", "plan[1].args[2].index"},
      {"," ARG_YS, "", "no call writes the shape of dynamic output \"y\""},
      {"\"kind\":\"output_shape\"", "\"kind\":\"output_shapes\"", "plan[1].args[2].kind"},
  };
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
    char *bad = replace(DYN, edits[i].from, edits[i].to);
    loom_status st = parse_json(bad, 128, &err, NULL);
    if (st == LOOM_OK) fail_msg("case %zu accepted: %s", i, bad);
    assert_int_equal(st, LOOM_ERR_PARSE);
    if (!strstr(err.msg, edits[i].expect)) fail_msg("case %zu: expected \"%s\" in: %s", i, edits[i].expect, err.msg);
    free(bad);
  }
}

/* The fuzzer's seed artifacts are valid (a seed the loader refuses would
 * start every fuzzing run in the error paths only). */
static void test_fuzz_seeds_parse(void **state) {
  (void)state;
  static const char *const seeds[] = {"two_kernels.loom", "no_inputs.loom"};
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/artifact/%s", LOOM_SOURCE_DIR, seeds[i]);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t buf[8192];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    Artifact *a;
    LoomError err = {0};
    if (artifact_parse(buf, len, path, ARTIFACT_SKIP_TARGET_CHECK, &a, &err)) fail_msg("%s", err.msg);
    artifact_free(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_good),
      cmocka_unit_test(test_schema_violations),
      cmocka_unit_test(test_dynamic_outputs),
      cmocka_unit_test(test_fuzz_seeds_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
