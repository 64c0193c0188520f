/* Test-only artifacts: a shared object built from small hand-written C that
 * follows the kernel ABI (include/loom/loom_kernel.h), and a spec computing
 *
 *   y = relu(x + w)        x: input f32[2, 3], w: weight f32[2, 3]
 *
 * through the arena (add_w writes t = x + w at an arena offset, relu_p reads
 * it and writes y with a parallel loop). Used by the runtime unit tests and by
 * the CLI tests' artifact maker. Not named test_*: the unit glob skips it. */
#ifndef LOOM_TESTS_ARTIFACT_FIXTURE_H
#define LOOM_TESTS_ARTIFACT_FIXTURE_H

#include "artifact_write/artifact_write.h"

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char k_fixture_kernels_c[] =
    "#include \"loom/loom_kernel.h\"\n"
    "static int32_t check_f32(DLTensor *const *args, int32_t n, int64_t *numel) {\n"
    "  for (int32_t i = 0; i < n; i++) {\n"
    "    if (!args[i] || !args[i]->data) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NULL, i);\n"
    "    if (args[i]->dtype.code != kDLFloat || args[i]->dtype.bits != 32 || args[i]->dtype.lanes != 1)\n"
    "      return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_DTYPE, i);\n"
    "    int64_t e = 1;\n"
    "    for (int32_t d = 0; d < args[i]->ndim; d++) e *= args[i]->shape[d];\n"
    "    if (i == 0) *numel = e;\n"
    "    else if (e != *numel) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_SHAPE, i);\n"
    "  }\n"
    "  return 0;\n"
    "}\n"
    "const size_t add_w_workspace_bytes = 100;\n"
    "int32_t add_w(DLTensor *const *args, int32_t num_args, const loom_kernel_env *env) {\n"
    "  if (num_args != 3) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NUM_ARGS, 0);\n"
    "  int64_t n;\n"
    "  int32_t rc = check_f32(args, 3, &n);\n"
    "  if (rc) return rc;\n"
    "  if (!env->workspace || env->workspace_bytes < 100 || ((uintptr_t)env->workspace & 63))\n"
    "    return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_WORKSPACE, 0);\n"
    "  const float *x = args[0]->data, *w = args[1]->data;\n"
    "  float *t = args[2]->data;\n"
    "  for (int64_t i = 0; i < n; i++) t[i] = x[i] + w[i];\n"
    "  return 0;\n"
    "}\n"
    "typedef struct { const float *in; float *out; } ReluClosure;\n"
    "static void relu_body(void *c, int64_t b, int64_t e) {\n"
    "  ReluClosure *r = c;\n"
    "  for (int64_t i = b; i < e; i++) r->out[i] = r->in[i] > 0 ? r->in[i] : 0;\n"
    "}\n"
    "int32_t relu_p(DLTensor *const *args, int32_t num_args, const loom_kernel_env *env) {\n"
    "  if (num_args != 2) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NUM_ARGS, 0);\n"
    "  int64_t n;\n"
    "  int32_t rc = check_f32(args, 2, &n);\n"
    "  if (rc) return rc;\n"
    "  ReluClosure c = {args[0]->data, args[1]->data};\n"
    "  if (env->parallel_for) env->parallel_for(env->pool, n, relu_body, &c);\n"
    "  else relu_body(&c, 0, n);\n"
    "  return 0;\n"
    "}\n"
    /* a data-dependent output: the rows of t[2, 3] with a positive element,
     * compactly in y, and y's real shape into its shape array (i64[2]);
     * t[0] == 1234 reports a second extent beyond the bound */
    "int32_t rows_pos(DLTensor *const *args, int32_t num_args, const loom_kernel_env *env) {\n"
    "  (void)env;\n"
    "  if (num_args != 3) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NUM_ARGS, 0);\n"
    "  if (args[2]->dtype.code != kDLInt || args[2]->dtype.bits != 64 || args[2]->ndim != 1 || args[2]->shape[0] != 2)\n"
    "    return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_DTYPE, 2);\n"
    "  const float *t = args[0]->data;\n"
    "  float *y = args[1]->data;\n"
    "  int64_t *shape = args[2]->data, rows = 0;\n"
    "  for (int r = 0; r < 2; r++) {\n"
    "    if (!(t[3 * r] > 0 || t[3 * r + 1] > 0 || t[3 * r + 2] > 0)) continue;\n"
    "    for (int k = 0; k < 3; k++) y[3 * rows + k] = t[3 * r + k];\n"
    "    rows++;\n"
    "  }\n"
    "  shape[0] = rows;\n"
    "  shape[1] = t[0] == 1234 ? 4 : 3;\n"
    "  return 0;\n"
    "}\n";

/* Writes k_fixture_kernels_c into dir/STEM.c and compiles dir/STEM.so with
 * cc, adding `extra` flags (NULL-terminated, may be NULL; e.g. -D renames
 * for a second, different shared object). Returns 0 on success. */
static inline int fixture_build_so_ex(const char *dir, const char *stem, const char *const *extra, char *so_path,
                                      size_t len) {
  char c_path[4096], inc[4096];
  snprintf(c_path, sizeof c_path, "%s/%s.c", dir, stem);
  snprintf(so_path, len, "%s/%s.so", dir, stem);
  snprintf(inc, sizeof inc, "-I%s/include", LOOM_SOURCE_DIR);
  FILE *f = fopen(c_path, "w");
  if (!f) return -1;
  fputs(k_fixture_kernels_c, f);
  fclose(f);
  const char *cc = getenv("CC");
  if (!cc || !*cc) cc = "cc";
  char *argv[32] = {(char *)cc, "-shared", "-fPIC", "-O1", inc, "-o", so_path, c_path};
  int n = 8;
  for (int i = 0; extra && extra[i] && n < 31; i++) argv[n++] = (char *)extra[i];
  argv[n] = NULL;
  pid_t pid;
  if (posix_spawnp(&pid, cc, NULL, NULL, argv, environ) != 0) return -1;
  int status;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static inline int fixture_build_so(const char *dir, char *so_path, size_t len) {
  return fixture_build_so_ex(dir, "kernels", NULL, so_path, len);
}

/* The y = relu(x + w) model; every pointer in `spec` points into this
 * struct, so keep it alive (and unmoved) while the spec is used. */
/* A whole file (NULL when unreadable; caller frees) and its writer (0 on
 * success): the artifact tests damage images in memory and write them back. */
static inline uint8_t *fixture_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)n + 1);
  *len = b ? fread(b, 1, (size_t)n, f) : 0;
  fclose(f);
  return b;
}

static inline int fixture_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t n = fwrite(data, 1, len, f);
  return fclose(f) == 0 && n == len ? 0 : -1;
}

typedef struct FixtureModel {
  int64_t shape[2];
  float w[6];
  ArtifactTensor in, out;
  ArtifactWeight weight;
  const char *add_nodes[2];
  const char *relu_nodes[1];
  ArtifactKernel kernels[2];
  ArtifactArg add_args[3], relu_args[2];
  ArtifactCall calls[2];
  ArtifactSpec spec;
} FixtureModel;

static const DLDataType k_f32 = {kDLFloat, 32, 1};

static inline void fixture_model_init(FixtureModel *m, const char *so_path) {
  memset(m, 0, sizeof *m);
  m->shape[0] = 2;
  m->shape[1] = 3;
  static const float w[6] = {0.5f, -1.0f, 2.0f, -3.0f, 0.25f, 1.5f};
  memcpy(m->w, w, sizeof w);
  m->in = (ArtifactTensor){.name = "x", .dtype = k_f32, .ndim = 2, .shape = m->shape};
  m->out = (ArtifactTensor){.name = "y:0/out", .dtype = k_f32, .ndim = 2, .shape = m->shape};
  m->weight = (ArtifactWeight){.t = {.name = "w", .dtype = k_f32, .ndim = 2, .shape = m->shape}, .data = m->w};
  m->add_nodes[0] = "Add_0";
  m->add_nodes[1] = "Identity_1";
  m->relu_nodes[0] = "Relu_2";
  /* add_w says its FLOPs (one add per element), relu_p does not (unknown) */
  m->kernels[0] = (ArtifactKernel){.name = "add_w", .num_nodes = 2, .nodes = m->add_nodes, .flops = 6};
  m->kernels[1] = (ArtifactKernel){.name = "relu_p", .num_nodes = 1, .nodes = m->relu_nodes};
  m->add_args[0] = (ArtifactArg){.kind = ARTIFACT_ARG_INPUT, .index = 0};
  m->add_args[1] = (ArtifactArg){.kind = ARTIFACT_ARG_WEIGHT, .index = 0};
  /* the intermediate sits at offset 64 of a 128-byte arena */
  m->add_args[2] = (ArtifactArg){.kind = ARTIFACT_ARG_ARENA, .offset = 64, .dtype = k_f32, .ndim = 2, .shape = m->shape};
  m->relu_args[0] = m->add_args[2];
  m->relu_args[1] = (ArtifactArg){.kind = ARTIFACT_ARG_OUTPUT, .index = 0};
  m->calls[0] = (ArtifactCall){.kernel = 0, .num_args = 3, .args = m->add_args};
  m->calls[1] = (ArtifactCall){.kernel = 1, .num_args = 2, .args = m->relu_args};
  m->spec = (ArtifactSpec){
      .num_inputs = 1, .num_outputs = 1, .num_weights = 1, .num_kernels = 2, .num_calls = 2,
      .inputs = &m->in, .outputs = &m->out, .weights = &m->weight, .kernels = m->kernels, .calls = m->calls,
      .arena_bytes = 128, .intermediate_bytes = 24, .so_path = so_path,
  };
}

/* The expected output for input x. */
/* The fixture model's artifact written at art (its kernels built in dir)
 * and its bytes read back into *image (caller frees); 0 on success. */
static inline int fixture_artifact_image(const char *dir, char *so, size_t so_len, const char *art, uint8_t **image,
                                         size_t *len) {
  if (fixture_build_so(dir, so, so_len)) return -1;
  FixtureModel m;
  fixture_model_init(&m, so);
  LoomError err = {0};
  if (artifact_write(art, &m.spec, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return -1;
  }
  *image = fixture_read_file(art, len);
  return *image ? 0 : -1;
}

static inline void fixture_reference(const FixtureModel *m, const float *x, float *y) {
  for (int i = 0; i < 6; i++) {
    float t = x[i] + m->w[i];
    y[i] = t > 0 ? t : 0;
  }
}

#endif
