/* The generated run entry (src/compile/run_entry.c, loom_run_fn in
 * include/loom/loom_kernel.h): a small ONNX model, encoded here, compiled at
 * opt levels 0 and 2; the executor's two paths (one call into the entry, the
 * plan interpreted call by call) give bit-identical outputs that also match
 * a double-precision reference; the entry checks its own arguments; and an
 * artifact whose entry is missing, generated for another plan, or whose
 * metadata is inconsistent is refused at load (or at write) with a message
 * naming the entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom/loom_compile.h"
#include "loom/loom_runtime.h"
#include "artifact_write/artifact_write.h"
#include "runtime/artifact_checksum.h"
#include "runtime/artifact_format.h"
#include "runtime/executor.h"

/* ---- a minimal protobuf writer ---- */
typedef struct Buf {
  uint8_t *data;
  size_t len, cap;
} Buf;

static void put_byte(Buf *b, uint8_t x) {
  if (b->len == b->cap) {
    b->cap = b->cap ? b->cap * 2 : 256;
    b->data = realloc(b->data, b->cap);
    assert_non_null(b->data);
  }
  b->data[b->len++] = x;
}
static void put_varint(Buf *b, uint64_t v) {
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    put_byte(b, byte | (v ? 0x80 : 0));
  } while (v);
}
static void put_tag(Buf *b, int field, int wire) { put_varint(b, (uint64_t)field << 3 | (uint64_t)wire); }
static void put_int(Buf *b, int field, int64_t v) {
  put_tag(b, field, 0);
  put_varint(b, (uint64_t)v);
}
static void put_bytes(Buf *b, int field, const void *p, size_t n) {
  put_tag(b, field, 2);
  put_varint(b, n);
  for (size_t k = 0; k < n; k++) put_byte(b, ((const uint8_t *)p)[k]);
}
static void put_str(Buf *b, int field, const char *s) { put_bytes(b, field, s, strlen(s)); }
static void put_msg(Buf *b, int field, Buf *m) {
  put_bytes(b, field, m->data, m->len);
  free(m->data);
  memset(m, 0, sizeof *m);
}

/* ---- the model ----
 *   h = Relu(MatMul(x, W1) + b1)           x: [2, 16], W1: [16, 8], b1: [8]
 *   y = Softmax(MatMul(h, W2) + z)         W2: [8, 4], z: input [2, 4]
 * outputs y and h (an intermediate that is also a graph output). */
enum { B = 2, I = 16, H = 8, O = 4 };

typedef struct Model {
  float w1[I * H], b1[H], w2[H * O];
} Model;

static uint64_t rng_next(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 33;
}
static float rng_f32(uint64_t *s) { return (float)((double)rng_next(s) / (double)(1ULL << 31) * 2.0 - 1.0); }

static void value_info(Buf *g, int field, const char *name, const int64_t *dims, int nd) {
  Buf vi = {0}, type = {0}, tt = {0}, shape = {0};
  for (int d = 0; d < nd; d++) {
    Buf dim = {0};
    put_int(&dim, 1, dims[d]);
    put_msg(&shape, 1, &dim);
  }
  put_int(&tt, 1, 1); /* FLOAT */
  put_msg(&tt, 2, &shape);
  put_msg(&type, 1, &tt);
  put_str(&vi, 1, name);
  put_msg(&vi, 2, &type);
  put_msg(g, field, &vi);
}

static void initializer(Buf *g, const char *name, const float *data, const int64_t *dims, int nd) {
  Buf t = {0};
  int64_t n = 1;
  for (int d = 0; d < nd; d++) {
    put_int(&t, 1, dims[d]);
    n *= dims[d];
  }
  put_int(&t, 2, 1);
  put_str(&t, 8, name);
  put_bytes(&t, 9, data, (size_t)n * sizeof(float));
  put_msg(g, 5, &t);
}

static void node(Buf *g, const char *op, const char *name, const char *in0, const char *in1, const char *out) {
  Buf n = {0};
  put_str(&n, 1, in0);
  if (in1) put_str(&n, 1, in1);
  put_str(&n, 2, out);
  put_str(&n, 3, name);
  put_str(&n, 4, op);
  put_msg(g, 1, &n);
}

static void write_model(const char *path, Model *m) {
  uint64_t s = 42;
  for (int i = 0; i < I * H; i++) m->w1[i] = rng_f32(&s);
  for (int i = 0; i < H; i++) m->b1[i] = rng_f32(&s);
  for (int i = 0; i < H * O; i++) m->w2[i] = rng_f32(&s);
  Buf g = {0};
  node(&g, "MatMul", "mm1", "x", "W1", "t1");
  node(&g, "Add", "add1", "t1", "b1", "t2");
  node(&g, "Relu", "relu", "t2", NULL, "h");
  node(&g, "MatMul", "mm2", "h", "W2", "t3");
  node(&g, "Add", "add2", "t3", "z", "t4");
  node(&g, "Softmax", "sm", "t4", NULL, "y");
  put_str(&g, 2, "run_entry_mlp");
  int64_t dw1[] = {I, H}, db1[] = {H}, dw2[] = {H, O}, dx[] = {B, I}, dz[] = {B, O}, dy[] = {B, O}, dh[] = {B, H};
  initializer(&g, "W1", m->w1, dw1, 2);
  initializer(&g, "b1", m->b1, db1, 1);
  initializer(&g, "W2", m->w2, dw2, 2);
  value_info(&g, 11, "x", dx, 2);
  value_info(&g, 11, "z", dz, 2);
  value_info(&g, 12, "y", dy, 2);
  value_info(&g, 12, "h", dh, 2);
  Buf model = {0}, opset = {0};
  put_int(&model, 1, 8);
  put_str(&opset, 1, "");
  put_int(&opset, 2, 13);
  put_msg(&model, 8, &opset);
  put_msg(&model, 7, &g);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(model.data, 1, model.len, f), model.len);
  fclose(f);
  free(model.data);
}

/* Double-precision reference of the model. */
static void reference(const Model *m, const float *x, const float *z, double *y, double *h) {
  for (int b = 0; b < B; b++) {
    for (int j = 0; j < H; j++) {
      double acc = m->b1[j];
      for (int k = 0; k < I; k++) acc += (double)x[b * I + k] * m->w1[k * H + j];
      h[b * H + j] = acc > 0 ? acc : 0;
    }
    double t[O], mx = -INFINITY, sum = 0;
    for (int j = 0; j < O; j++) {
      t[j] = z[b * O + j];
      for (int k = 0; k < H; k++) t[j] += h[b * H + k] * m->w2[k * O + j];
      if (t[j] > mx) mx = t[j];
    }
    for (int j = 0; j < O; j++) sum += exp(t[j] - mx);
    for (int j = 0; j < O; j++) y[b * O + j] = exp(t[j] - mx) / sum;
  }
}

/* ---- fixture: a temporary directory with the model ---- */
typedef struct Fixture {
  char dir[256], onnx[300];
  Model model;
  float x[B * I], z[B * O];
} Fixture;

static int setup(void **state) {
  Fixture *f = calloc(1, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "/tmp/loom_run_entry_XXXXXX");
  if (!mkdtemp(f->dir)) return -1;
  snprintf(f->onnx, sizeof f->onnx, "%s/mlp.onnx", f->dir);
  write_model(f->onnx, &f->model);
  uint64_t s = 7;
  for (int i = 0; i < B * I; i++) f->x[i] = rng_f32(&s);
  for (int i = 0; i < B * O; i++) f->z[i] = rng_f32(&s);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  Fixture *f = *state;
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
  int rc = system(cmd);
  (void)rc;
  free(f);
  return 0;
}

static void compile_to(Fixture *f, int opt_level, const char *name, char *path, size_t len) {
  snprintf(path, len, "%s/%s", f->dir, name);
  loom_compile_options opt = {.target = NULL, .opt_level = opt_level};
  char err[1024] = "";
  loom_status st = loom_compile_onnx(f->onnx, path, &opt, err, sizeof err);
  if (st) fprintf(stderr, "compile: %s\n", err);
  assert_int_equal(st, LOOM_OK);
}

static void set_inputs(loom_model *m, Fixture *f) {
  int64_t sx[] = {B, I}, sz[] = {B, O};
  DLTensor x = {.data = f->x, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = sx};
  DLTensor z = {.data = f->z, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = sz};
  assert_int_equal(loom_model_set_input_by_name(m, "x", &x), LOOM_OK);
  assert_int_equal(loom_model_set_input_by_name(m, "z", &z), LOOM_OK);
}

/* Runs once and copies both outputs (y then h) into out. */
static void run_copy(loom_model *m, float *out) {
  if (loom_model_run(m)) fprintf(stderr, "run: %s\n", loom_model_error(m));
  DLTensor y, h;
  assert_int_equal(loom_model_get_output(m, loom_model_output_index(m, "y"), &y), LOOM_OK);
  assert_int_equal(loom_model_get_output(m, loom_model_output_index(m, "h"), &h), LOOM_OK);
  memcpy(out, y.data, B * O * sizeof(float));
  memcpy(out + B * O, h.data, B * H * sizeof(float));
}

static loom_model *load(const char *path, int threads) {
  loom_model *m = NULL;
  char err[1024] = "";
  loom_model_options opt = {.num_threads = threads};
  loom_status st = loom_model_load(path, &opt, &m, err, sizeof err);
  if (st) fprintf(stderr, "load: %s\n", err);
  assert_int_equal(st, LOOM_OK);
  return m;
}

static void check_both_paths(Fixture *f, const char *path, int threads) {
  loom_model *m = load(path, threads);
  const Artifact *art = executor_artifact(m);
  assert_non_null(art->run_fn);
  assert_string_equal(art->spec.run_entry, "loom_run");
  set_inputs(m, f);

  float entry[B * (O + H)], plan[B * (O + H)], prof[B * (O + H)];
  assert_true(executor_uses_run_entry(m));
  run_copy(m, entry);
  /* Clobber the outputs so a path that writes nothing cannot pass. */
  memset(plan, 0xff, sizeof plan);
  executor_set_run_entry(m, false);
  assert_false(executor_uses_run_entry(m));
  run_copy(m, plan);
  executor_set_run_entry(m, true);
  loom_model_set_profiling(m, true);
  assert_false(executor_uses_run_entry(m));
  run_copy(m, prof);
  loom_profile_entry pe;
  assert_int_equal(loom_model_profile_entry(m, 0, &pe), LOOM_OK);
  assert_int_equal(pe.calls, 1); /* the profiled run went through the plan */
  loom_model_set_profiling(m, false);
  assert_true(executor_uses_run_entry(m));

  assert_memory_equal(entry, plan, sizeof entry);
  assert_memory_equal(entry, prof, sizeof entry);

  double ry[B * O], rh[B * H];
  reference(&f->model, f->x, f->z, ry, rh);
  for (int i = 0; i < B * O; i++) assert_true(fabs(entry[i] - ry[i]) <= 1e-4);
  for (int i = 0; i < B * H; i++) assert_true(fabs(entry[B * O + i] - rh[i]) <= 1e-4 * fmax(1.0, fabs(rh[i])));
  loom_model_free(m);
}

static void test_paths_agree(void **state) {
  Fixture *f = *state;
  char path[400];
  compile_to(f, 0, "o0.loom", path, sizeof path);
  check_both_paths(f, path, 1);
  check_both_paths(f, path, 2);
  compile_to(f, 2, "o2.loom", path, sizeof path);
  check_both_paths(f, path, 1);
  check_both_paths(f, path, 2);
}

/* The entry refuses bad arguments itself, before any kernel runs. */
static void test_entry_checks_arguments(void **state) {
  Fixture *f = *state;
  char path[400];
  compile_to(f, 2, "args.loom", path, sizeof path);
  loom_model *m = load(path, 1);
  const Artifact *art = executor_artifact(m);
  const ArtifactSpec *s = &art->spec;
  assert_int_equal(s->num_inputs, 2);
  assert_int_equal(s->num_outputs, 2);
  float *arena = aligned_alloc(64, (s->arena_bytes + 63) / 64 * 64 + 64);
  float xin[B * I], zin[B * O], yout[B * O], hout[B * H];
  memcpy(xin, f->x, sizeof xin);
  memcpy(zin, f->z, sizeof zin);
  int64_t sx[] = {B, I}, sz[] = {B, O}, sy[] = {B, O}, sh[] = {B, H}, bad[] = {B, I + 1};
  DLTensor t[4] = {
      {.data = xin, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = sx},
      {.data = zin, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = sz},
      {.data = yout, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = sy},
      {.data = hout, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = sh},
  };
  DLTensor *ins[2] = {&t[0], &t[1]}, *outs[2] = {&t[2], &t[3]};
  /* The metadata's output order decides which DLTensor is which. */
  if (!strcmp(s->outputs[0].name, "h")) {
    outs[0] = &t[3];
    outs[1] = &t[2];
  }
  loom_kernel_env env = {.num_threads = 1};
  size_t ws = 0;
  for (int32_t k = 0; k < s->num_kernels; k++)
    if (art->kernels[k].workspace_bytes > ws) ws = art->kernels[k].workspace_bytes;
  ws = (ws + 63) / 64 * 64;
  env.workspace = ws ? aligned_alloc(64, ws) : NULL;
  env.workspace_bytes = ws;
  int32_t step = 99;
  assert_int_equal(art->run_fn(ins, outs, art->weights, arena, &env, &step), 0);
  assert_int_equal(step, -1);
  double ry[B * O], rh[B * H];
  reference(&f->model, f->x, f->z, ry, rh);
  for (int i = 0; i < B * O; i++) assert_true(fabs(yout[i] - ry[i]) <= 1e-4);

  t[0].shape = bad; /* input 0 with a wrong shape */
  step = 99;
  int32_t rc = art->run_fn(ins, outs, art->weights, arena, &env, &step);
  assert_int_equal(LOOM_KERNEL_ERR_KIND(rc), LOOM_KERNEL_ERR_SHAPE);
  assert_int_equal(LOOM_KERNEL_ERR_ARG(rc), 0);
  assert_int_equal(step, -1);
  t[0].shape = sx;
  t[1].dtype.bits = 64; /* input 1 with a wrong dtype */
  rc = art->run_fn(ins, outs, art->weights, arena, &env, NULL);
  assert_int_equal(LOOM_KERNEL_ERR_KIND(rc), LOOM_KERNEL_ERR_DTYPE);
  assert_int_equal(LOOM_KERNEL_ERR_ARG(rc), 1);
  t[1].dtype.bits = 32;
  outs[1]->data = NULL; /* output 1 without data */
  rc = art->run_fn(ins, outs, art->weights, arena, &env, &step);
  assert_int_equal(LOOM_KERNEL_ERR_KIND(rc), LOOM_KERNEL_ERR_NULL);
  assert_int_equal(LOOM_KERNEL_ERR_ARG(rc), 3);
  outs[1]->data = outs[1] == &t[2] ? (void *)yout : (void *)hout;
  if (s->arena_bytes > 0) { /* no arena: argument num_inputs + num_outputs + 1 */
    rc = art->run_fn(ins, outs, art->weights, NULL, &env, &step);
    assert_int_equal(LOOM_KERNEL_ERR_KIND(rc), LOOM_KERNEL_ERR_NULL);
    assert_int_equal(LOOM_KERNEL_ERR_ARG(rc), 5);
  }
  rc = art->run_fn(ins, outs, art->weights, arena, NULL, &step); /* no env */
  assert_int_equal(LOOM_KERNEL_ERR_KIND(rc), LOOM_KERNEL_ERR_NULL);
  assert_int_equal(LOOM_KERNEL_ERR_ARG(rc), 6);
  /* A misaligned arena passes the entry's checks but not the kernels': the
   * failing plan step is reported. */
  if (s->arena_bytes > 0) {
    rc = art->run_fn(ins, outs, art->weights, (char *)arena + 4, &env, &step);
    if (rc) {
      assert_int_equal(LOOM_KERNEL_ERR_KIND(rc), LOOM_KERNEL_ERR_ALIGN);
      assert_true(step >= 0 && step < s->num_calls);
    }
  }
  free(env.workspace);
  free(arena);
  loom_model_free(m);
}

static void assert_contains(const char *msg, const char *part) {
  if (!strstr(msg, part)) fail_msg("\"%s\" does not contain \"%s\"", msg, part);
}

/* Rewrites the compiled artifact with a modified spec (same shared object). */
static loom_status rewrite(const ArtifactSpec *s, const char *path, LoomError *err) {
  return artifact_write(path, s, err);
}

static void expect_load_error(const char *path, const char *part1, const char *part2) {
  loom_model *m = NULL;
  char err[1024] = "";
  assert_int_not_equal(loom_model_load(path, NULL, &m, err, sizeof err), LOOM_OK);
  assert_null(m);
  assert_contains(err, part1);
  if (part2) assert_contains(err, part2);
}

static void test_corrupt_entry_refused(void **state) {
  Fixture *f = *state;
  char path[400], bad[400];
  compile_to(f, 2, "good.loom", path, sizeof path);
  Artifact *art;
  LoomError err = {0};
  assert_int_equal(artifact_load(path, 0, &art, &err), LOOM_OK);
  snprintf(bad, sizeof bad, "%s/bad.loom", f->dir);

  /* The metadata names an entry the shared object lacks. */
  ArtifactSpec s = art->spec;
  s.run_entry = "loom_missing";
  assert_int_equal(rewrite(&s, bad, &err), LOOM_OK);
  expect_load_error(bad, "lacks the run entry \"loom_missing\"", "recompile");

  /* The entry was generated for another plan: a call's arena offset moved
   * (still a valid plan: the arena grows to hold it). */
  s = art->spec;
  ArtifactCall *calls = malloc((size_t)s.num_calls * sizeof *calls);
  memcpy(calls, s.calls, (size_t)s.num_calls * sizeof *calls);
  int32_t moved = -1;
  for (int32_t c = 0; c < s.num_calls && moved < 0; c++)
    for (int32_t j = 0; j < calls[c].num_args; j++)
      if (calls[c].args[j].kind == ARTIFACT_ARG_ARENA) {
        ArtifactArg *args = malloc((size_t)calls[c].num_args * sizeof *args);
        memcpy(args, calls[c].args, (size_t)calls[c].num_args * sizeof *args);
        args[j].offset += s.arena_bytes;
        calls[c].args = args;
        moved = c;
        break;
      }
  assert_true(moved >= 0);
  s.calls = calls;
  s.arena_bytes *= 2;
  assert_int_equal(rewrite(&s, bad, &err), LOOM_OK);
  expect_load_error(bad, "run entry \"loom_run\" was generated for another plan", "recompile");
  free((void *)calls[moved].args);
  free(calls);

  /* Another arena size alone changes the hash too. */
  s = art->spec;
  s.arena_bytes += 64;
  assert_int_equal(rewrite(&s, bad, &err), LOOM_OK);
  expect_load_error(bad, "generated for another plan", NULL);

  /* The writer refuses weight offsets other than its own layout. */
  s = art->spec;
  assert_true(s.num_weights >= 2);
  uint64_t *offs = malloc((size_t)s.num_weights * sizeof *offs);
  memcpy(offs, s.run_entry_weight_offsets, (size_t)s.num_weights * sizeof *offs);
  offs[1] += 64;
  s.run_entry_weight_offsets = offs;
  err = (LoomError){0};
  assert_int_equal(rewrite(&s, bad, &err), LOOM_ERR_INVALID_ARG);
  assert_contains(err.msg, "run entry \"loom_run\" assumes weight");
  free(offs);

  /* No entry at all (an artifact from before run entries): it loads, and
   * runs through the plan with the same results. */
  s = art->spec;
  s.run_entry = NULL;
  s.run_entry_weight_offsets = NULL;
  assert_int_equal(rewrite(&s, bad, &err), LOOM_OK);
  loom_model *m1 = load(bad, 1), *m2 = load(path, 1);
  assert_null(executor_artifact(m1)->run_fn);
  assert_false(executor_uses_run_entry(m1));
  assert_true(executor_uses_run_entry(m2));
  set_inputs(m1, f);
  set_inputs(m2, f);
  float o1[B * (O + H)], o2[B * (O + H)];
  run_copy(m1, o1);
  run_copy(m2, o2);
  assert_memory_equal(o1, o2, sizeof o1);
  loom_model_free(m1);
  loom_model_free(m2);
  artifact_free(art);

  /* Metadata that names an entry without its weight offsets (the checksums
   * recomputed, so only the schema check can catch it). */
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  fseek(fp, 0, SEEK_END);
  long len = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  uint8_t *img = malloc((size_t)len);
  assert_int_equal(fread(img, 1, (size_t)len, fp), (size_t)len);
  fclose(fp);
  uint64_t mo = hdr_get_u64(img + HDR_META_OFFSET), ms = hdr_get_u64(img + HDR_META_SIZE);
  char *json = (char *)img + mo;
  const char *key = "\"run_entry_weight_offsets\"";
  char *hit = NULL;
  for (uint64_t i = 0; i + strlen(key) <= ms && !hit; i++)
    if (!memcmp(json + i, key, strlen(key))) hit = json + i;
  assert_non_null(hit);
  hit[strlen(key) - 2] = 'z'; /* ..._offsetz */
  artifact_reseal(img, (size_t)len);
  Artifact *parsed = NULL;
  err = (LoomError){0};
  assert_int_equal(artifact_parse(img, (size_t)len, "patched", 0, &parsed, &err), LOOM_ERR_PARSE);
  assert_null(parsed);
  assert_contains(err.msg, "run_entry_weight_offsets");
  free(img);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_paths_agree),
      cmocka_unit_test(test_entry_checks_arguments),
      cmocka_unit_test(test_corrupt_entry_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
