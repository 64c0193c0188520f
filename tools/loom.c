/* The `loom` command line.
 *
 *   loom compile MODEL.onnx -o OUT.loom [--target host|x86_64|x86_64-sse2|x86_64-avx2|x86_64-avx512] [--opt-level 0..3]
 *            [--byoc NAME|PATH.so,...] [--dump-before=PASS,...] [--dump-after=PASS,...|all] [--dump-list-passes]
 *   loom run OUT.loom|MODEL.onnx [--input NAME=FILE ...] [FILE ...] [--output-dir DIR]
 *            [--output-format npy|pb] [--repeat N] [--threads N] [--json] [--profile]
 *
 * Tensor files are .npy or ONNX TensorProto .pb (by extension). Running an
 * .onnx model compiles it first, specialized to the given inputs (the
 * dynamic-shape path: shapes that depend on input values).
 *   loom inspect MODEL.onnx|OUT.loom [--dump graph|partitioned|fused|tir|c|json] [--byoc ...]
 *            [--dump-before/--dump-after ...]
 *   loom export-c MODEL.onnx -o DIR [--target generic|host|x86_64-...|aarch64|riscv64] [--records FILE]
 *            [--name PREFIX] [--weights embed|file] [--threads N] [--bench] [--force]
 *            [--input NAME=FILE ...]   (docs/export.md)
 *
 * --dump-before / --dump-after print the IR around the named passes: to
 * stderr for compile (stdout keeps its one "wrote" line), to stdout for
 * inspect.
 *
 * Exit status 0 on success; otherwise 1 (or 2 for a usage error) with one
 * "loom: error: ..." line on stderr. docs/runtime.md has the details. */
#include "autotune/cost_model.h"
#include "export/export.h"
#include "frontend/onnx/onnx.h"
#include "frontend/onnx/tensor_pb.h"
#include "loom/loom_compile.h"
#include "loom/loom_runtime.h"
#include "runtime/artifact.h"
#include "runtime/dl_dtype.h"
#include "support/atomic_file.h"
#include "support/clock.h"
#include "support/subprocess.h"
#include "tensor_data/npy.h"
#include "target/target.h"
#include "tune/tune.h"

#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { EXIT_USAGE = 2 };

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("loom: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return code;
}

static const char k_usage[] =
    "usage:\n"
    "  loom compile MODEL.onnx -o OUT.loom [--target host|x86_64|x86_64-sse2|x86_64-avx2|x86_64-avx512]\n"
    "           [--target-opt KEY=VALUE,...] [--opt-level 0..3] [--records FILE] [--byoc NAME|PATH.so,...]\n"
    "           [DUMPS]   (--byoc: external back ends claim what their patterns match; built in: cblas, dnnl)\n"
    "  loom run OUT.loom|MODEL.onnx [--input NAME=FILE ...] [FILE ...] [--output-dir DIR]\n"
    "           [--output-format npy|pb] [--repeat N] [--threads N] [--json] [--profile]\n"
    "  (input and output tensor files: .npy or ONNX TensorProto .pb)\n"
    "  loom inspect MODEL.onnx|OUT.loom [--dump graph|partitioned|fused|tir|c|json] [--records FILE]\n"
    "           [--target NAME] [--target-opt ...] [--byoc NAME|PATH.so,...] [DUMPS]\n"
    "  DUMPS: --dump-before=PASS,... --dump-after=PASS,... (repeatable; PASS or all): the graph or each\n"
    "   kernel's loop IR before/after every run of the pass; to stderr for compile, stdout for inspect.\n"
    "   --dump-list-passes prints the passes in pipeline order.\n"
    "  loom tune MODEL.onnx --records FILE [--trials N] [--time 30m] [--target NAME] [--target-opt ...]\n"
    "           [--threads N] [--search evolutionary|random] [--batch N] [--seed N] [--cost-model FILE]\n"
    "           [--byoc NAME|PATH.so,...]   (--byoc: tune the kernels the back ends leave to Loom)\n"
    "  loom export-c MODEL.onnx -o DIR [--target generic|host|x86_64|x86_64-sse2|x86_64-avx2|x86_64-avx512|\n"
    "           aarch64|riscv64] [--target-opt ...] [--records FILE] [--name PREFIX] [--weights embed|file]\n"
    "           [--threads N] [--bench] [--force] [--input NAME=FILE ...]\n"
    "   (a dependency-free C project: PREFIX.h/.c, PREFIX_weights.c, Makefile, example_main.c;\n"
    "   --input: specialize as `loom run MODEL.onnx` does, values that decide shapes compiled in)\n"
    "  loom target [--target NAME] [--target-opt KEY=VALUE,...]   (what kernels are built for)\n"
    "  (targets: host or x86_64 = this machine; x86_64-sse2, x86_64-avx2, x86_64-avx512 =\n"
    "   the x86-64 baseline (128-bit vectors), x86-64-v3 (256-bit), x86-64-v4 (512-bit))\n"
    "  loom --version\n";

/* "--flag VALUE" or "--flag=VALUE": the value, advancing *i; NULL when the
 * argument is not this flag. *missing is set when the value is absent. */
static const char *flag_value(int argc, char **argv, int *i, const char *flag, bool *missing) {
  size_t n = strlen(flag);
  if (strncmp(argv[*i], flag, n)) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n]) return NULL;
  if (*i + 1 >= argc) {
    *missing = true;
    return NULL;
  }
  return argv[++*i];
}

static bool parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || !*s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

static bool file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* ---- --dump-before / --dump-after (compile and inspect) ---- */

typedef struct DumpFlags {
  char *before, *after; /* comma lists, repeated flags joined (malloc'd), or NULL */
  bool list_passes;     /* --dump-list-passes */
} DumpFlags;

static void dump_flags_free(DumpFlags *d) {
  free(d->before);
  free(d->after);
}

/* `list` with ",item" appended (`item` alone when list is NULL). */
static char *append_item(char *list, const char *item) {
  size_t n = list ? strlen(list) : 0, k = strlen(item);
  char *out = realloc(list, n + k + 2);
  if (!out) {
    free(list);
    return NULL;
  }
  if (list) out[n++] = ',';
  memcpy(out + n, item, k + 1);
  return out;
}

/* 1 when argv[*i] is one of the dump flags (taken into d), 0 when not,
 * -1 on failure (a missing value sets *missing; out of memory). */
static int take_dump_flag(int argc, char **argv, int *i, DumpFlags *d, bool *missing) {
  const char *v;
  if (!strcmp(argv[*i], "--dump-list-passes")) {
    d->list_passes = true;
    return 1;
  }
  char **list = NULL;
  if ((v = flag_value(argc, argv, i, "--dump-before", missing))) list = &d->before;
  else if ((v = flag_value(argc, argv, i, "--dump-after", missing))) list = &d->after;
  if (!list) return *missing ? -1 : 0;
  return (*list = append_item(*list, v)) ? 1 : -1;
}

/* Unknown pass names are usage errors listing the valid ones. */
static int check_dump_flags(const char *cmd, const DumpFlags *d) {
  char err[1024];
  if (loom_compile_check_pass_list(d->before, err, sizeof err))
    return fail(EXIT_USAGE, "%s: --dump-before: %s", cmd, err);
  if (loom_compile_check_pass_list(d->after, err, sizeof err))
    return fail(EXIT_USAGE, "%s: --dump-after: %s", cmd, err);
  return 0;
}

static void print_pass_list(void) {
  loom_pass_info info;
  const char *level = "";
  for (int i = 0; loom_compile_pass_info(i, &info); i++) {
    if (strcmp(level, info.level))
      printf("%s passes (once per %s, in order):\n", info.level, !strcmp(info.level, "graph") ? "model" : "kernel");
    level = info.level;
    if (info.condition) printf("  %-22s (%s)\n", info.name, info.condition);
    else printf("  %s\n", info.name);
  }
}

/* ---- compile ---- */

static int compile_call(const char *model, const char *out, const loom_compile_options *opt) {
  char err[2048] = "";
  if (loom_compile_onnx(model, out, opt, err, sizeof err) != LOOM_OK)
    return fail(1, "compile: %s", err[0] ? err : "failed");
  printf("wrote %s\n", out);
  return 0;
}

static int compile_with_dumps(int argc, char **argv, DumpFlags *dumps) {
  const char *model = NULL, *out = NULL;
  loom_compile_options opt = {.target = NULL, .opt_level = 2};
  for (int i = 0; i < argc; i++) {
    bool missing = false;
    const char *v;
    int took = take_dump_flag(argc, argv, &i, dumps, &missing);
    if (took > 0) continue;
    if (took < 0 && !missing) return fail(1, "out of memory");
    if (missing) return fail(EXIT_USAGE, "compile: %s needs a value", argv[i]);
    if ((v = flag_value(argc, argv, &i, "-o", &missing)) || (v = flag_value(argc, argv, &i, "--output", &missing))) {
      out = v;
    } else if ((v = flag_value(argc, argv, &i, "--target", &missing))) {
      opt.target = v;
    } else if ((v = flag_value(argc, argv, &i, "--target-opt", &missing))) {
      opt.target_options = v;
    } else if ((v = flag_value(argc, argv, &i, "--records", &missing))) {
      opt.records = v;
    } else if ((v = flag_value(argc, argv, &i, "--byoc", &missing))) {
      opt.byoc = v;
    } else if ((v = flag_value(argc, argv, &i, "--opt-level", &missing))) {
      long n;
      if (!parse_int(v, 0, 3, &n)) return fail(EXIT_USAGE, "compile: --opt-level \"%s\": expected 0, 1, 2 or 3", v);
      opt.opt_level = (int)n;
    } else if (missing) {
      return fail(EXIT_USAGE, "compile: %s needs a value", argv[i]);
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return fail(EXIT_USAGE, "compile: unknown flag \"%s\"", argv[i]);
    } else if (!model) {
      model = argv[i];
    } else {
      return fail(EXIT_USAGE, "compile: unexpected argument \"%s\" (one model only)", argv[i]);
    }
  }
  if (dumps->list_passes) {
    print_pass_list();
    return 0;
  }
  int rc = check_dump_flags("compile", dumps);
  if (rc) return rc;
  if (!model) return fail(EXIT_USAGE, "compile: missing MODEL.onnx\n%s", k_usage);
  if (!out) return fail(EXIT_USAGE, "compile: missing -o OUT.loom");
  if (!file_exists(model)) return fail(1, "compile: cannot open \"%s\": %s", model, strerror(errno ? errno : ENOENT));
  opt.dump_before = dumps->before;
  opt.dump_after = dumps->after;
  return compile_call(model, out, &opt);
}

static int cmd_compile(int argc, char **argv) {
  DumpFlags dumps = {0};
  int rc = compile_with_dumps(argc, argv, &dumps);
  dump_flags_free(&dumps);
  return rc;
}

/* ---- run ---- */

/* A tensor file held in memory (.pb in g's arena, or .npy). */
typedef struct HeldTensor {
  DLTensor t;
  int64_t shape[NPY_MAX_DIMS];
  NpyArray npy;
  bool is_npy;
} HeldTensor;

/* The value files given for an .onnx model's inputs (`loom run
 * MODEL.onnx`, `loom export-c --input`), read into memory: vals[i] names a
 * graph input of the model (or one with a default) and holds files[i]'s
 * tensor; .pb data lives in graph's arena. */
typedef struct InputValues {
  Graph *graph;
  HeldTensor *held;
  loom_input_value *vals;
  const char **files;
  int n;
} InputValues;

typedef struct RunArgs {
  const char *model;
  const char **named_names, **named_files; /* --input NAME=FILE */
  int num_named;
  const char **positional;
  int num_positional;
  const char *output_dir;
  bool output_pb; /* --output-format pb */
  bool specialized; /* an .onnx model compiled for these inputs: some may be compiled in */
  /* The input files specialize_onnx read, kept to bind them without reading
   * them again. */
  InputValues given;
  long repeat, threads;
  bool json, profile;
} RunArgs;

static int parse_run_args(int argc, char **argv, RunArgs *a) {
  memset(a, 0, sizeof *a);
  a->repeat = 1;
  a->named_names = calloc((size_t)argc + 1, sizeof(char *));
  a->named_files = calloc((size_t)argc + 1, sizeof(char *));
  a->positional = calloc((size_t)argc + 1, sizeof(char *));
  if (!a->named_names || !a->named_files || !a->positional) return fail(1, "out of memory");
  for (int i = 0; i < argc; i++) {
    bool missing = false;
    const char *v;
    long n;
    if ((v = flag_value(argc, argv, &i, "--input", &missing))) {
      const char *eq = strchr(v, '=');
      if (!eq || eq == v || !eq[1]) return fail(EXIT_USAGE, "run: --input \"%s\": expected NAME=FILE (.npy or .pb)", v);
      char *name = strndup(v, (size_t)(eq - v));
      a->named_names[a->num_named] = name;
      a->named_files[a->num_named++] = eq + 1;
    } else if ((v = flag_value(argc, argv, &i, "--output-dir", &missing))) {
      a->output_dir = v;
    } else if ((v = flag_value(argc, argv, &i, "--output-format", &missing))) {
      if (strcmp(v, "npy") && strcmp(v, "pb"))
        return fail(EXIT_USAGE, "run: --output-format \"%s\": expected npy or pb", v);
      a->output_pb = !strcmp(v, "pb");
    } else if ((v = flag_value(argc, argv, &i, "--repeat", &missing))) {
      if (!parse_int(v, 1, 1000000000, &n)) return fail(EXIT_USAGE, "run: --repeat \"%s\": expected a count >= 1", v);
      a->repeat = n;
    } else if ((v = flag_value(argc, argv, &i, "--threads", &missing))) {
      if (!parse_int(v, 1, 1024, &n)) return fail(EXIT_USAGE, "run: --threads \"%s\": expected 1 to 1024", v);
      a->threads = n;
    } else if (missing) {
      return fail(EXIT_USAGE, "run: %s needs a value", argv[i]);
    } else if (!strcmp(argv[i], "--json")) {
      a->json = true;
    } else if (!strcmp(argv[i], "--profile")) {
      a->profile = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return fail(EXIT_USAGE, "run: unknown flag \"%s\"", argv[i]);
    } else if (!a->model) {
      a->model = argv[i];
    } else {
      a->positional[a->num_positional++] = argv[i];
    }
  }
  if (!a->model) return fail(EXIT_USAGE, "run: missing OUT.loom\n%s", k_usage);
  return 0;
}

static void input_values_free(InputValues *iv);

static void free_run_args(RunArgs *a) {
  input_values_free(&a->given);
  for (int i = 0; i < a->num_named; i++) free((char *)a->named_names[i]);
  free(a->named_names);
  free(a->named_files);
  free(a->positional);
}

/* Output names become file names: anything but [A-Za-z0-9._-] turns into
 * '_', and names that collide after that get their index appended. */
static void file_safe_name(const char *name, char *buf, size_t len) {
  size_t n = 0;
  for (const char *p = name; *p && n + 1 < len; p++) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    buf[n++] = ok ? c : '_';
  }
  buf[n] = 0;
  if (n == 0 || !strcmp(buf, ".") || !strcmp(buf, "..")) snprintf(buf, len, "_");
  if (buf[0] == '.') buf[0] = '_'; /* no hidden files */
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static cJSON *shape_json(int32_t ndim, const int64_t *shape) {
  cJSON *a = cJSON_CreateArray();
  for (int32_t i = 0; i < ndim; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)shape[i]));
  return a;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* A TensorProto file as a DLTensor; the data lives in g's arena. */
static loom_status read_pb_input(Graph *g, const char *file, DLTensor *t, int64_t *shape, LoomError *err) {
  GraphTensor *gt = onnx_tensor_pb_read(g, file, err);
  if (!gt) return err->status;
  if (gt->rank > NPY_MAX_DIMS) return err_set(err, LOOM_ERR_UNSUPPORTED, "%s: rank %d is too large", file, gt->rank);
  for (int k = 0; k < gt->rank; k++) shape[k] = gt->dims[k];
  memset(t, 0, sizeof *t);
  t->data = gt->data;
  t->device.device_type = kDLCPU;
  t->ndim = gt->rank;
  t->shape = shape;
  /* bool is one byte per element in both, which DLPack spells as 8 bits */
  t->dtype = (DLDataType){gt->dtype.code, gt->dtype.code == DT_BOOL ? 8 : gt->dtype.bits, 1};
  return LOOM_OK;
}

/* what: the message's prefix (the command, and the input when known). */
static int hold_tensor(const char *what, Graph *g, const char *file, HeldTensor *h) {
  LoomError err = {0};
  if (ends_with(file, ".pb")) {
    if (read_pb_input(g, file, &h->t, h->shape, &err)) return fail(1, "%s: %s", what, err.msg);
  } else {
    if (npy_read(file, &h->npy, &err)) return fail(1, "%s: %s", what, err.msg);
    h->is_npy = true;
    h->t = npy_as_tensor(&h->npy);
  }
  return 0;
}

static void held_free(HeldTensor *h) {
  if (h->is_npy) npy_free(&h->npy);
}

/* Binds one .npy or .pb file to input `index`; the message names the file too. */
static int bind_input(loom_model *m, int32_t index, const char *file) {
  Graph *g = graph_new("input");
  HeldTensor h = {0};
  int rc = hold_tensor("run", g, file, &h);
  if (!rc && loom_model_set_input(m, index, &h.t)) rc = fail(1, "run: %s (from \"%s\")", loom_model_error(m), file);
  held_free(&h);
  graph_free(g);
  return rc;
}

/* Writes t as an ONNX TensorProto file named after the output, atomically. */
static loom_status write_pb(const char *path, const char *name, const DLTensor *t, LoomError *err) {
  DType dt = dtype_make((DTypeCode)t->dtype.code, t->dtype.code == DL_DTYPE_BOOL_CODE ? 1 : t->dtype.bits, 1);
  uint8_t *buf;
  size_t len;
  loom_status st = onnx_tensor_pb_encode(name, dt, t->ndim, t->shape, (const char *)t->data + t->byte_offset, &buf,
                                         &len, err);
  if (st) return st;
  AtomicFile af;
  if (!(st = atomic_file_open(&af, path, err))) {
    atomic_file_write(&af, buf, len);
    st = atomic_file_commit(&af, err);
  }
  free(buf);
  return st;
}

static int bind_inputs(loom_model *m, const RunArgs *a) {
  int32_t n = loom_model_num_inputs(m);
  const char **file = calloc((size_t)n + 1, sizeof(char *));
  if (!file) return fail(1, "out of memory");
  int rc = 0;
  if (a->num_positional > n)
    rc = fail(1, "run: %d positional input files, but the model has %d inputs", a->num_positional, (int)n);
  for (int i = 0; !rc && i < a->num_positional; i++) file[i] = a->positional[i];
  for (int i = 0; !rc && i < a->num_named; i++) {
    int32_t k = loom_model_input_index(m, a->named_names[i]);
    if (k < 0 && a->specialized) continue; /* its value was compiled in (checked against the ONNX inputs) */
    if (k < 0) {
      char names[1024] = "";
      size_t at = 0;
      for (int32_t j = 0; j < n && at < sizeof names; j++) {
        loom_tensor_info info;
        loom_model_input_info(m, j, &info);
        at += (size_t)snprintf(names + at, sizeof names - at, "%s\"%s\"", j ? ", " : "", info.name);
      }
      rc = fail(1, "run: --input: the model has no input named \"%s\" (its inputs: %s)", a->named_names[i], names);
    } else if (file[k]) {
      rc = fail(1, "run: input \"%s\" is given twice (\"%s\" and \"%s\")", a->named_names[i], file[k],
                a->named_files[i]);
    } else {
      file[k] = a->named_files[i];
    }
  }
  for (int32_t k = 0; !rc && k < n; k++) {
    loom_tensor_info info;
    loom_model_input_info(m, k, &info);
    if (!file[k]) {
      char sh[256];
      rc = fail(1, "run: missing input \"%s\" (%s %s): pass --input %s=FILE or a positional file", info.name,
                dl_dtype_name(info.dtype), dl_shape_str(info.shape, info.ndim, sh, sizeof sh), info.name);
    } else {
      int h = -1;
      for (int j = 0; j < a->given.n && h < 0; j++)
        if (!strcmp(a->given.vals[j].name, info.name)) h = j;
      if (h < 0) rc = bind_input(m, k, file[k]);
      else if (loom_model_set_input(m, k, &a->given.held[h].t))
        rc = fail(1, "run: %s (from \"%s\")", loom_model_error(m), file[k]);
    }
  }
  free(file);
  return rc;
}

static int prepare_output_dir(const char *dir) {
  struct stat sb;
  if (stat(dir, &sb) != 0) {
    if (errno != ENOENT || mkdir(dir, 0777) != 0)
      return fail(1, "run: cannot create output directory \"%s\": %s", dir, strerror(errno));
  } else if (!S_ISDIR(sb.st_mode)) {
    return fail(1, "run: output directory \"%s\" is not a directory", dir);
  }
  if (access(dir, W_OK | X_OK) != 0) return fail(1, "run: output directory \"%s\" is not writable", dir);
  return 0;
}

/* Writes every output as DIR/<file-safe name>.npy (or .pb); records the paths. */
static int write_outputs(loom_model *m, const char *dir, bool pb, cJSON *outs) {
  int32_t n = loom_model_num_outputs(m);
  char(*used)[300] = calloc((size_t)n + 1, sizeof *used);
  if (!used) return fail(1, "out of memory");
  int rc = 0;
  for (int32_t i = 0; !rc && i < n; i++) {
    loom_tensor_info info;
    loom_model_output_info(m, i, &info);
    char safe[256];
    file_safe_name(info.name, safe, sizeof safe);
    for (int32_t j = 0; j < i; j++)
      if (!strcmp(used[j], safe)) {
        size_t l = strlen(safe);
        snprintf(safe + (l > 240 ? 240 : l), sizeof safe - (l > 240 ? 240 : l), "_%d", (int)i);
        break;
      }
    snprintf(used[i], sizeof used[i], "%s", safe);
    size_t plen = strlen(dir) + strlen(safe) + 8;
    char *path = malloc(plen);
    snprintf(path, plen, "%s/%s.%s", dir, safe, pb ? "pb" : "npy");
    DLTensor t;
    LoomError err = {0};
    loom_model_get_output(m, i, &t);
    if (pb ? write_pb(path, info.name, &t, &err) : npy_write(path, &t, &err)) rc = fail(1, "run: output \"%s\": %s", info.name, err.msg);
    else cJSON_AddStringToObject(cJSON_GetArrayItem(outs, (int)i), "file", path);
    free(path);
  }
  free(used);
  return rc;
}

static void print_output_summary(loom_model *m) {
  for (int32_t i = 0; i < loom_model_num_outputs(m); i++) {
    loom_tensor_info info;
    DLTensor t;
    loom_model_output_info(m, i, &info);
    loom_model_get_output(m, i, &t);
    char sh[256];
    printf("output %s: %s %s", info.name, dl_dtype_name(info.dtype), dl_shape_str(t.shape, t.ndim, sh, sizeof sh));
    uint64_t bytes;
    if (dl_shape_bytes(t.shape, t.ndim, 1, UINT64_MAX, &bytes) && bytes > 0) {
      printf(" [");
      uint64_t show = bytes < 6 ? bytes : 6;
      for (uint64_t k = 0; k < show; k++) {
        double v = 0;
        const void *p = (const char *)t.data + k * dl_dtype_bytes(info.dtype);
        if (info.dtype.code == kDLFloat && info.dtype.bits == 32) v = *(const float *)p;
        else if (info.dtype.code == kDLFloat && info.dtype.bits == 64) v = *(const double *)p;
        else if (info.dtype.code == kDLInt && info.dtype.bits == 64) v = (double)*(const int64_t *)p;
        else if (info.dtype.code == kDLInt && info.dtype.bits == 32) v = *(const int32_t *)p;
        else if (info.dtype.bits == 8) v = *(const uint8_t *)p;
        else break;
        printf("%s%g", k ? ", " : "", v);
      }
      printf("%s]", bytes > show ? ", ..." : "");
    }
    printf("\n");
  }
}

/* Per plan step: mean time per run, share of the kernels' time, and, from
 * the FLOPs the compiler counted (loom_profile_entry.flops; 0 = unknown),
 * GFLOP/s and the percentage of the peak: this host's per core (the
 * target's FLOP per cycle times its clock, `loom target`) times the
 * model's thread count. */
static cJSON *profile_report(loom_model *m, double run_ms_total, bool print, Target *rated_out) {
  int32_t n = loom_model_profile_count(m);
  cJSON *arr = cJSON_CreateArray();
  double sum = 0, flops_sum = 0; /* per run */
  for (int32_t i = 0; i < n; i++) {
    loom_profile_entry p;
    loom_model_profile_entry(m, i, &p);
    sum += p.calls ? p.total_ms / (double)p.calls : 0;
    flops_sum += (double)p.flops;
  }
  int threads = loom_model_num_threads(m) > 0 ? loom_model_num_threads(m) : 1;
  /* The peak of the ISA the kernels were built for (an AVX2 artifact on an
   * AVX-512 host has AVX2's), so the table says what it measured. */
  Target host = target_for_artifact(loom_model_target(m));
  double per_thread = target_peak_gflops_per_core(&host), peak = per_thread * threads; /* GFLOP/s */
  if (rated_out) *rated_out = host;
  if (print) {
    printf("target %s (kernels built for %s), %d thread%s\n", host.name, loom_model_target(m), threads,
           threads == 1 ? "" : "s");
    printf("%-5s %-40s %10s %7s %9s %7s  %s\n", "step", "kernel", "avg ms", "%", "GFLOP/s", "%peak", "onnx nodes");
  }
  for (int32_t i = 0; i < n; i++) {
    loom_profile_entry p;
    loom_model_profile_entry(m, i, &p);
    double avg = p.calls ? p.total_ms / (double)p.calls : 0;
    double pct = sum > 0 ? 100.0 * avg / sum : 0;
    bool rated = p.flops > 0 && avg > 0;
    double gflops = rated ? (double)p.flops / (avg * 1e6) : 0;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", i);
    cJSON_AddStringToObject(o, "kernel", p.kernel);
    if (p.backend) cJSON_AddStringToObject(o, "backend", p.backend); /* an external (BYOC) kernel */
    cJSON_AddNumberToObject(o, "calls", (double)p.calls);
    cJSON_AddNumberToObject(o, "total_ms", p.total_ms);
    cJSON_AddNumberToObject(o, "avg_ms", avg);
    cJSON_AddNumberToObject(o, "flops", (double)p.flops);
    if (rated) {
      cJSON_AddNumberToObject(o, "gflops", gflops);
      if (peak > 0) cJSON_AddNumberToObject(o, "peak_pct", 100.0 * gflops / peak);
      else cJSON_AddNullToObject(o, "peak_pct");
    } else {
      cJSON_AddNullToObject(o, "gflops");
      cJSON_AddNullToObject(o, "peak_pct");
    }
    cJSON *nodes = cJSON_AddArrayToObject(o, "nodes");
    for (int32_t k = 0; k < p.num_nodes; k++) cJSON_AddItemToArray(nodes, cJSON_CreateString(p.nodes[k]));
    cJSON_AddItemToArray(arr, o);
    if (print) {
      char label[128]; /* external kernels carry their back end: "k3_cblas [cblas]" */
      snprintf(label, sizeof label, p.backend ? "%s [%s]" : "%s", p.kernel, p.backend);
      printf("%-5d %-40s %10.4f %6.1f%% ", (int)i, label, avg, pct);
      if (rated && peak > 0) printf("%9.2f %6.1f%%  ", gflops, 100.0 * gflops / peak);
      else if (rated) printf("%9.2f %7s  ", gflops, "-");
      else printf("%9s %7s  ", "-", "-");
      /* A back end's region can hold a whole trunk: the table names its
       * first and last nodes (--json lists all). */
      enum { SHOWN = 4 };
      for (int32_t k = 0; k < p.num_nodes; k++) {
        if (p.num_nodes > SHOWN + 1 && k == SHOWN - 1) {
          printf(", ... %d more ...", (int)(p.num_nodes - SHOWN));
          k = p.num_nodes - 1;
        }
        printf("%s%s", k ? ", " : "", p.nodes[k]);
      }
      printf("\n");
    }
  }
  if (print) {
    printf("kernels %.4f ms of %.4f ms per run (mean)\n", sum, run_ms_total);
    if (flops_sum > 0 && sum > 0 && peak > 0)
      printf("%.4f GFLOP per run: %.2f GFLOP/s over the kernels' time, %.1f%% of the peak (%d thread%s x %.1f GFLOP/s, "
             "%s: `loom target`)\n",
             flops_sum * 1e-9, flops_sum / (sum * 1e6), 100.0 * flops_sum / (sum * 1e6) / peak, threads,
             threads == 1 ? "" : "s", per_thread, host.name);
    else if (flops_sum > 0 && sum > 0)
      printf("%.4f GFLOP per run: %.2f GFLOP/s over the kernels' time (peak unknown: the clock is)\n",
             flops_sum * 1e-9, flops_sum / (sum * 1e6));
  }
  return arr;
}

static void input_values_free(InputValues *iv) {
  for (int i = 0; iv->held && i < iv->n; i++) held_free(&iv->held[i]);
  free(iv->held);
  free(iv->vals);
  free(iv->files);
  if (iv->graph) graph_free(iv->graph);
  memset(iv, 0, sizeof *iv);
}

/* Reads the files given for model's inputs: positional ones take the
 * model's inputs in order, then --input NAME=FILE ones. Each name must be
 * an input of the model (or have a default there) and be given once; the
 * messages (prefixed cmd) name the input and the file. */
static int read_input_values(const char *cmd, const char *model, const char *const *positional, int num_positional,
                             const char *const *named_names, const char *const *named_files, int num_named,
                             InputValues *iv) {
  LoomError err = {0};
  memset(iv, 0, sizeof *iv);
  if (!(iv->graph = graph_new("inputs"))) return fail(1, "out of memory");
  Arena *arena = iv->graph->arena;
  /* Only the input names: the compiler imports the model itself. */
  const char **model_inputs = NULL, **defaults = NULL;
  int n_model_inputs = onnx_input_names(model, arena, &model_inputs, &defaults, &err);
  if (n_model_inputs < 0) return fail(1, "%s: %s", cmd, err.msg);
  int n = num_positional + num_named;
  iv->held = calloc((size_t)n + 1, sizeof *iv->held);
  iv->vals = calloc((size_t)n + 1, sizeof *iv->vals);
  iv->files = calloc((size_t)n + 1, sizeof *iv->files);
  if (!iv->held || !iv->vals || !iv->files) return fail(1, "out of memory");
  if (num_positional > n_model_inputs)
    return fail(1, "%s: %d positional input files, but the model has %d inputs", cmd, num_positional, n_model_inputs);
  for (int i = 0; i < n; i++) {
    bool pos = i < num_positional;
    const char *name = pos ? model_inputs[i] : named_names[i - num_positional];
    const char *file = pos ? positional[i] : named_files[i - num_positional];
    bool known = false;
    for (int k = 0; k < n_model_inputs; k++) known |= !strcmp(model_inputs[k], name);
    /* An input with a default (an initializer) is fed by name only; the
     * given value replaces the default. */
    for (int k = 0; !pos && defaults[k]; k++) known |= !strcmp(defaults[k], name);
    if (!known) {
      StrBuf names;
      sb_init(&names);
      for (int k = 0; k < n_model_inputs; k++) sb_printf(&names, "%s\"%s\"", k ? ", " : "", model_inputs[k]);
      int rc = fail(1, "%s: --input %s=%s: the model has no input named \"%s\" (its inputs: %s)", cmd, name, file,
                    name, n_model_inputs ? sb_cstr(&names) : "none");
      sb_free(&names);
      return rc;
    }
    for (int k = 0; k < iv->n; k++)
      if (!strcmp(iv->vals[k].name, name))
        return fail(1, "%s: input \"%s\" is given twice (\"%s\" and \"%s\")", cmd, name, iv->files[k], file);
    char what[512];
    snprintf(what, sizeof what, "%s: input \"%s\"", cmd, name);
    if (hold_tensor(what, iv->graph, file, &iv->held[i])) return 1;
    iv->vals[i] = (loom_input_value){arena_strdup(arena, name), &iv->held[i].t};
    iv->files[i] = file;
    iv->n = i + 1;
  }
  return 0;
}

/* `loom run MODEL.onnx`: compiles the model specialized to these inputs
 * (their shapes, and the values of those that decide shapes; see
 * src/compile/specialize.c) into a temporary artifact at out, and turns
 * positional files into named ones (a compiled-in input leaves the
 * artifact, so positions would shift). */
static int specialize_onnx(RunArgs *a, char *out, size_t outlen) {
  InputValues *iv = &a->given;
  int rc = read_input_values("run", a->model, a->positional, a->num_positional, a->named_names, a->named_files,
                             a->num_named, iv);
  for (int i = 0; !rc && i < a->num_positional; i++) { /* becomes --input NAME=FILE */
    a->named_names[a->num_named] = strdup(iv->vals[i].name);
    a->named_files[a->num_named++] = a->positional[i];
  }
  int fd = -1;
  if (!rc) {
    const char *tmp = getenv("TMPDIR");
    snprintf(out, outlen, "%s/loom-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if ((fd = mkstemp(out)) < 0) rc = fail(1, "run: cannot create a temporary artifact in %s: %s", out, strerror(errno));
  }
  if (!rc) {
    close(fd);
    char msg[2048];
    loom_compile_options opt = {.opt_level = 2, .inputs = iv->vals, .num_inputs = iv->n};
    if (loom_compile_onnx(a->model, out, &opt, msg, sizeof msg)) rc = fail(1, "run: compile: %s", msg);
    if (rc) unlink(out);
  }
  a->num_positional = 0;
  a->specialized = true;
  return rc;
}

static int cmd_run(int argc, char **argv) {
  RunArgs a;
  int rc = parse_run_args(argc, argv, &a);
  loom_model *m = NULL;
  /* The profile's peak needs the clock, timed on the first call: before the
   * model's threads exist, so nothing of ours competes with the timing. */
  if (!rc && a.profile) (void)target_host();
  double *times = NULL;
  cJSON *report = NULL;
  if (rc) goto done;
  if (a.output_dir && (rc = prepare_output_dir(a.output_dir))) goto done;
  char err[2048], artifact[4096] = "";
  const char *model_name = a.model;
  if (ends_with(a.model, ".onnx")) {
    if ((rc = specialize_onnx(&a, artifact, sizeof artifact))) goto done;
    a.model = artifact;
  }
  loom_model_options opt = {.num_threads = (int32_t)a.threads};
  loom_status load_st = loom_model_load(a.model, &opt, &m, err, sizeof err);
  if (artifact[0]) unlink(artifact); /* loaded (or not): the temporary is not needed any more */
  if (load_st) {
    rc = fail(1, "run: %s", err);
    goto done;
  }
  if ((rc = bind_inputs(m, &a))) goto done;
  times = calloc((size_t)a.repeat, sizeof(double));
  if (!times) {
    rc = fail(1, "out of memory");
    goto done;
  }
  /* With --repeat N > 1, one untimed warm-up run first: the first run pays
   * for page faults in the arena and cold caches, which a latency median
   * should not mix in. */
  int warmup = a.repeat > 1 ? 1 : 0;
  if (warmup && loom_model_run(m)) {
    rc = fail(1, "run: %s", loom_model_error(m));
    goto done;
  }
  loom_model_set_profiling(m, a.profile);
  for (long r = 0; r < a.repeat; r++) {
    double t0 = loom_clock_ms();
    if (loom_model_run(m)) {
      rc = fail(1, "run: %s", loom_model_error(m));
      goto done;
    }
    times[r] = loom_clock_ms() - t0;
  }
  report = cJSON_CreateObject();
  cJSON_AddStringToObject(report, "model", model_name);
  if (a.specialized) { /* which inputs' values were compiled in: the rest are read at run time */
    cJSON *in = cJSON_AddArrayToObject(report, "compiled_in");
    for (int i = 0; i < a.given.n; i++)
      if (loom_model_input_index(m, a.given.vals[i].name) < 0)
        cJSON_AddItemToArray(in, cJSON_CreateString(a.given.vals[i].name));
  }
  cJSON *outs = cJSON_AddArrayToObject(report, "outputs");
  for (int32_t i = 0; i < loom_model_num_outputs(m); i++) {
    loom_tensor_info info;
    DLTensor t;
    loom_model_output_info(m, i, &info);
    loom_model_get_output(m, i, &t); /* a dynamic output's real shape */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", info.name);
    cJSON_AddStringToObject(o, "dtype", dl_dtype_name(info.dtype));
    cJSON_AddItemToObject(o, "shape", shape_json(t.ndim, t.shape));
    cJSON_AddItemToArray(outs, o);
  }
  if (a.output_dir && (rc = write_outputs(m, a.output_dir, a.output_pb, outs))) goto done;
  double total = 0;
  for (long r = 0; r < a.repeat; r++) total += times[r];
  qsort(times, (size_t)a.repeat, sizeof *times, cmp_double);
  double median = a.repeat % 2 ? times[a.repeat / 2] : 0.5 * (times[a.repeat / 2 - 1] + times[a.repeat / 2]);
  cJSON_AddNumberToObject(report, "repeat", (double)a.repeat);
  cJSON_AddNumberToObject(report, "warmup", warmup);
  cJSON_AddNumberToObject(report, "threads", loom_model_num_threads(m));
  cJSON_AddNumberToObject(report, "median_ms", median);
  cJSON_AddNumberToObject(report, "min_ms", times[0]);
  cJSON_AddNumberToObject(report, "max_ms", times[a.repeat - 1]);
  cJSON_AddNumberToObject(report, "mean_ms", total / (double)a.repeat);
  if (!a.json) {
    if (!a.output_dir) print_output_summary(m);
    for (int i = 0; a.output_dir && i < cJSON_GetArraySize(outs); i++) {
      cJSON *f = cJSON_GetObjectItem(cJSON_GetArrayItem(outs, i), "file");
      if (f) printf("wrote %s\n", f->valuestring);
    }
  }
  if (a.profile) {
    Target rated = {0};
    cJSON_AddItemToObject(report, "profile", profile_report(m, total / (double)a.repeat, !a.json, &rated));
    /* what peak_pct is a percentage of; the clock in it is timed per process */
    cJSON_AddNumberToObject(report, "peak_gflops_per_thread", target_peak_gflops_per_core(&rated));
    cJSON_AddNumberToObject(report, "peak_flops_per_cycle", rated.flops_per_cycle);
    cJSON_AddStringToObject(report, "target", target_for_artifact(loom_model_target(m)).name);
    cJSON_AddStringToObject(report, "artifact_target", loom_model_target(m));
  }
  if (a.json) {
    char *s = cJSON_PrintUnformatted(report);
    if (!s) {
      rc = fail(1, "out of memory");
      goto done;
    }
    printf("%s\n", s); /* the last line of stdout, for scripts */
    free(s);
  } else {
    printf("%ld run%s, %d thread%s: median %.4f ms, min %.4f ms\n", a.repeat, a.repeat == 1 ? "" : "s",
           (int)loom_model_num_threads(m), loom_model_num_threads(m) == 1 ? "" : "s", median, times[0]);
  }
  if (fflush(stdout) != 0) rc = fail(1, "run: cannot write to stdout");
done:
  cJSON_Delete(report);
  free(times);
  loom_model_free(m);
  free_run_args(&a);
  return rc;
}

/* ---- inspect ---- */

static bool read_whole(const char *path, uint8_t **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t cap = 1 << 16, n = 0;
  uint8_t *b = malloc(cap);
  for (;;) {
    if (!b) break;
    size_t got = fread(b + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
    if (n == cap) {
      uint8_t *nb = realloc(b, cap * 2);
      if (!nb) {
        free(b);
        b = NULL;
        break;
      }
      b = nb;
      cap *= 2;
    }
  }
  bool ok = b && !ferror(f);
  fclose(f);
  if (!ok) {
    free(b);
    return false;
  }
  *data = b;
  *len = n;
  return true;
}

static void print_tensor_line(const char *kind, int i, const ArtifactTensor *t) {
  char sh[256];
  printf("  %s[%d] %s: %s %s%s (%llu bytes)\n", kind, i, t->name, dl_dtype_name(t->dtype),
         dl_shape_str(t->shape, t->ndim, sh, sizeof sh), t->dynamic ? " at most (dynamic extents)" : "",
         (unsigned long long)t->nbytes);
}

static int inspect_artifact(const char *path, const uint8_t *b, size_t len, const char *dump) {
  Artifact *art;
  LoomError err = {0};
  if (artifact_parse(b, len, path, ARTIFACT_SKIP_TARGET_CHECK | ARTIFACT_SKIP_VERSION_CHECK, &art, &err))
    return fail(1, "inspect: %s", err.msg);
  if (dump && strcmp(dump, "json")) {
    artifact_free(art);
    return fail(1, "inspect: --dump %s needs an ONNX model; an artifact holds only metadata (use --dump json)", dump);
  }
  if (dump) {
    cJSON *root = cJSON_ParseWithLength((const char *)b + art->meta_offset, (size_t)art->meta_size);
    char *s = root ? cJSON_Print(root) : NULL;
    if (s) printf("%s\n", s);
    free(s);
    cJSON_Delete(root);
    artifact_free(art);
    return 0;
  }
  const ArtifactSpec *s = &art->spec;
  LoomError terr = {0};
  bool runs_here = artifact_check_target(art->target, &terr) == LOOM_OK;
  char host[128];
  printf("artifact %s\n", path);
  printf("  format version %u, written by Loom %s (this is Loom %s)\n", art->format_version, art->loom_version,
         LOOM_VERSION_STRING);
  printf("  target %s (%s; this machine is %s)\n", art->target, runs_here ? "runs here" : "does NOT run here",
         artifact_host_target(host, sizeof host));
  printf("  file %llu bytes: metadata %llu, weights %llu, shared object %llu\n", (unsigned long long)art->file_size,
         (unsigned long long)art->meta_size, (unsigned long long)art->weights_size,
         (unsigned long long)s->so_size);
  printf("inputs (%d)\n", (int)s->num_inputs);
  for (int32_t i = 0; i < s->num_inputs; i++) print_tensor_line("input", (int)i, &s->inputs[i]);
  printf("outputs (%d)\n", (int)s->num_outputs);
  for (int32_t i = 0; i < s->num_outputs; i++) print_tensor_line("output", (int)i, &s->outputs[i]);
  uint64_t wbytes = 0;
  for (int32_t i = 0; i < s->num_weights; i++) wbytes += s->weights[i].t.nbytes;
  printf("weights: %d tensors, %llu bytes\n", (int)s->num_weights, (unsigned long long)wbytes);
  double pct = s->intermediate_bytes ? 100.0 * (double)s->arena_bytes / (double)s->intermediate_bytes : 0;
  printf("arena: %llu bytes; sum of intermediate tensors: %llu bytes (arena is %.1f%% of it)\n",
         (unsigned long long)s->arena_bytes, (unsigned long long)s->intermediate_bytes, pct);
  printf("kernels (%d)\n", (int)s->num_kernels);
  for (int32_t i = 0; i < s->num_kernels; i++) {
    if (s->kernels[i].backend) printf("  %s [%s]:", s->kernels[i].name, s->kernels[i].backend); /* external (BYOC) */
    else printf("  %s:", s->kernels[i].name);
    for (int32_t k = 0; k < s->kernels[i].num_nodes; k++) printf(" %s", s->kernels[i].nodes[k]);
    printf("\n");
  }
  for (int32_t i = 0; i < s->num_byoc_runtimes; i++)
    printf("runtime library of BYOC back end %s: %s\n", s->byoc_runtimes[i].backend, s->byoc_runtimes[i].library);
  printf("plan (%d calls)\n", (int)s->num_calls);
  for (int32_t c = 0; c < s->num_calls; c++) {
    printf("  %d: %s(", (int)c, s->kernels[s->calls[c].kernel].name);
    for (int32_t j = 0; j < s->calls[c].num_args; j++) {
      const ArtifactArg *a = &s->calls[c].args[j];
      char sh[256];
      dl_shape_str(a->shape, a->ndim, sh, sizeof sh);
      if (a->kind == ARTIFACT_ARG_ARENA)
        printf("%sarena@%llu %s %s", j ? ", " : "", (unsigned long long)a->offset, dl_dtype_name(a->dtype), sh);
      else
        printf("%s%s %s%s%s", j ? ", " : "", artifact_arg_kind_name(a->kind),
               a->kind == ARTIFACT_ARG_INPUT                                          ? s->inputs[a->index].name
               : a->kind == ARTIFACT_ARG_OUTPUT || a->kind == ARTIFACT_ARG_OUTPUT_SHAPE ? s->outputs[a->index].name
                                                                                      : s->weights[a->index].t.name,
               a->view ? " as " : "", a->view ? sh : "");
    }
    printf(")\n");
  }
  artifact_free(art);
  return 0;
}

/* `loom target`: the machine description schedules are derived from. */
static int cmd_target(int argc, char **argv) {
  const char *name = NULL, *options = NULL;
  for (int i = 0; i < argc; i++) {
    bool missing = false;
    const char *v;
    if ((v = flag_value(argc, argv, &i, "--target", &missing))) name = v;
    else if ((v = flag_value(argc, argv, &i, "--target-opt", &missing))) options = v;
    else if (missing) return fail(EXIT_USAGE, "target: %s needs a value", argv[i]);
    else return fail(EXIT_USAGE, "target: unexpected argument \"%s\"", argv[i]);
  }
  Target t;
  LoomError err = {0};
  if (target_parse(name, &t, &err) || target_apply_options(&t, options, &err)) return fail(1, "target: %s", err.msg);
  char buf[1024];
  target_describe(&t, buf, sizeof buf);
  fputs(buf, stdout);
  return 0;
}

/* The cost model `loom tune` saved beside the records (<records>.model):
 * its boosting rounds (0: never trained) and samples, as read back. */
static void print_cost_model(const char *records) {
  char *path = malloc(strlen(records) + 7);
  if (!path) return;
  sprintf(path, "%s.model", records);
  LoomError err = {0};
  CostModel *cm = access(path, F_OK) == 0 ? cost_model_load(path, NULL, &err) : NULL;
  if (cm)
    printf("cost model %s: %d boosting rounds, %d samples\n", path, cost_model_num_rounds(cm),
           cost_model_num_samples(cm));
  else if (err.status)
    printf("cost model %s: does not load: %s\n", path, err.msg);
  cost_model_free(cm);
  free(path);
}

static int inspect_with_dumps(int argc, char **argv, DumpFlags *dumps) {
  const char *file = NULL, *dump = NULL, *records = NULL, *target = NULL, *target_options = NULL, *byoc = NULL;
  for (int i = 0; i < argc; i++) {
    bool missing = false;
    const char *v;
    int took = take_dump_flag(argc, argv, &i, dumps, &missing);
    if (took > 0) continue;
    if (took < 0 && !missing) return fail(1, "out of memory");
    if (missing) return fail(EXIT_USAGE, "inspect: %s needs a value", argv[i]);
    if ((v = flag_value(argc, argv, &i, "--target", &missing))) {
      target = v;
    } else if ((v = flag_value(argc, argv, &i, "--target-opt", &missing))) {
      target_options = v;
    } else if ((v = flag_value(argc, argv, &i, "--dump", &missing))) {
      if (strcmp(v, "graph") && strcmp(v, "partitioned") && strcmp(v, "fused") && strcmp(v, "tir") && strcmp(v, "c") &&
          strcmp(v, "json"))
        return fail(EXIT_USAGE, "inspect: --dump \"%s\": expected graph, partitioned, fused, tir, c or json", v);
      dump = v;
    } else if ((v = flag_value(argc, argv, &i, "--records", &missing))) {
      records = v;
    } else if ((v = flag_value(argc, argv, &i, "--byoc", &missing))) {
      byoc = v;
    } else if (missing) {
      return fail(EXIT_USAGE, "inspect: %s needs a value", argv[i]);
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return fail(EXIT_USAGE, "inspect: unknown flag \"%s\"", argv[i]);
    } else if (!file) {
      file = argv[i];
    } else {
      return fail(EXIT_USAGE, "inspect: unexpected argument \"%s\" (one file only)", argv[i]);
    }
  }
  if (dumps->list_passes) {
    print_pass_list();
    return 0;
  }
  int rc = check_dump_flags("inspect", dumps);
  if (rc) return rc;
  if (!file) return fail(EXIT_USAGE, "inspect: missing MODEL.onnx or OUT.loom\n%s", k_usage);
  uint8_t *b;
  size_t len;
  if (!file_exists(file) || !read_whole(file, &b, &len))
    return fail(1, "inspect: cannot read \"%s\": %s", file, strerror(errno ? errno : EIO));
  /* The content decides, not the extension. */
  if (len >= 8 && !memcmp(b, ARTIFACT_MAGIC, 8)) {
    rc = records || target || target_options || byoc || dumps->before || dumps->after
             ? fail(EXIT_USAGE, "inspect: --records, --target, --target-opt, --byoc, --dump-before and --dump-after "
                                "need an ONNX model (an artifact is compiled already)")
             : inspect_artifact(file, b, len, dump);
  } else {
    char err[2048] = "";
    loom_compile_options opt = {.target = target,
                              .target_options = target_options,
                              .opt_level = 2,
                              .records = records,
                              .byoc = byoc,
                              .dump_before = dumps->before,
                              .dump_after = dumps->after};
    rc = loom_inspect_onnx(file, dump, &opt, stdout, err, sizeof err) == LOOM_OK ? 0
                                                                              : fail(1, "inspect: %s", err);
    if (!rc && records) print_cost_model(records);
  }
  free(b);
  return rc;
}

static int cmd_inspect(int argc, char **argv) {
  DumpFlags dumps = {0};
  int rc = inspect_with_dumps(argc, argv, &dumps);
  dump_flags_free(&dumps);
  return rc;
}

/* ---- tune ---- */

/* "90", "90s", "30m", "2h": seconds; false when malformed or not positive. */
static bool parse_duration(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  double mul = !strcmp(end, "") || !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600 : 0;
  if (errno || end == s || mul == 0 || !(v > 0) || v * mul > 1e7) return false;
  *out = v * mul;
  return true;
}

static void print_duration(double s, char *buf, size_t cap) {
  if (s < 0) snprintf(buf, cap, "?");
  else if (s < 60) snprintf(buf, cap, "%.0fs", s);
  else if (s < 3600) snprintf(buf, cap, "%dm%02ds", (int)(s / 60), (int)s % 60);
  else snprintf(buf, cap, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

static void tune_progress(const TuneProgress *p, void *user) {
  bool tty = *(bool *)user;
  char eta[32], trials[32];
  print_duration(p->eta_s, eta, sizeof eta);
  if (p->trials_total > 0) snprintf(trials, sizeof trials, "%d/%d", p->trials, p->trials_total);
  else snprintf(trials, sizeof trials, "%d", p->trials);
  char model[48] = "";
  if (p->model_update_failures > 0)
    snprintf(model, sizeof model, ", cost model: %d failed updates", p->model_update_failures);
  printf("%strials %s (%d failed), tasks %d/%d done, %s: best %.1f GFLOP/s, model %.4f ms -> %.4f ms, ETA %s%s%s",
         tty ? "\r\033[K" : "", trials, p->failed, p->tasks_done, p->tasks, p->task ? p->task : "-",
         p->task_best_gflops, p->model_ms_default, p->model_ms_now, eta, model, tty ? "" : "\n");
  fflush(stdout);
}

static int cmd_tune(int argc, char **argv) {
  const char *model = NULL;
  loom_compile_options copt = {.target = NULL, .opt_level = 2};
  TuneOptions opt = {.compile = &copt};
  for (int i = 0; i < argc; i++) {
    bool missing = false;
    const char *v;
    long n;
    if ((v = flag_value(argc, argv, &i, "--records", &missing))) {
      opt.records = v;
    } else if ((v = flag_value(argc, argv, &i, "--cost-model", &missing))) {
      opt.cost_model = v;
    } else if ((v = flag_value(argc, argv, &i, "--trials", &missing))) {
      if (!parse_int(v, 1, 10000000, &n)) return fail(EXIT_USAGE, "tune: --trials \"%s\": expected a count >= 1", v);
      opt.trials = (int)n;
    } else if ((v = flag_value(argc, argv, &i, "--time", &missing))) {
      if (!parse_duration(v, &opt.seconds))
        return fail(EXIT_USAGE, "tune: --time \"%s\": expected a duration such as 90s, 30m or 2h", v);
    } else if ((v = flag_value(argc, argv, &i, "--threads", &missing))) {
      if (!parse_int(v, 1, 1024, &n)) return fail(EXIT_USAGE, "tune: --threads \"%s\": expected 1 to 1024", v);
      opt.threads = (int)n;
    } else if ((v = flag_value(argc, argv, &i, "--batch", &missing))) {
      if (!parse_int(v, 1, 1024, &n)) return fail(EXIT_USAGE, "tune: --batch \"%s\": expected 1 to 1024", v);
      opt.batch = (int)n;
    } else if ((v = flag_value(argc, argv, &i, "--seed", &missing))) {
      if (!parse_int(v, 0, LONG_MAX, &n)) return fail(EXIT_USAGE, "tune: --seed \"%s\": expected a number >= 0", v);
      opt.seed = (uint64_t)n;
    } else if ((v = flag_value(argc, argv, &i, "--search", &missing))) {
      if (!strcmp(v, "evolutionary")) opt.search = TUNE_SEARCH_EVOLUTIONARY;
      else if (!strcmp(v, "random")) opt.search = TUNE_SEARCH_RANDOM;
      else return fail(EXIT_USAGE, "tune: --search \"%s\": expected evolutionary or random", v);
    } else if ((v = flag_value(argc, argv, &i, "--target", &missing))) {
      copt.target = v;
    } else if ((v = flag_value(argc, argv, &i, "--target-opt", &missing))) {
      copt.target_options = v;
    } else if ((v = flag_value(argc, argv, &i, "--byoc", &missing))) {
      copt.byoc = v; /* the back ends take their regions first: Loom's own kernels are tuned */
    } else if (missing) {
      return fail(EXIT_USAGE, "tune: %s needs a value", argv[i]);
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return fail(EXIT_USAGE, "tune: unknown flag \"%s\"", argv[i]);
    } else if (!model) {
      model = argv[i];
    } else {
      return fail(EXIT_USAGE, "tune: unexpected argument \"%s\" (one model only)", argv[i]);
    }
  }
  if (!model) return fail(EXIT_USAGE, "tune: missing MODEL.onnx\n%s", k_usage);
  if (!opt.records) return fail(EXIT_USAGE, "tune: missing --records FILE (the tuning records database)");
  if (!file_exists(model)) return fail(1, "tune: cannot open \"%s\": %s", model, strerror(errno ? errno : ENOENT));
  bool tty = isatty(STDOUT_FILENO);
  opt.progress = tune_progress;
  opt.user = &tty;
  TuneProgress last;
  LoomError err = {0};
  loom_status st = tune_model(model, &opt, &last, &err);
  if (tty) printf("\n");
  if (st) return fail(1, "tune: %s", err.msg);
  printf("tuned %s: %d candidates measured (%d failed), model kernels %.4f ms -> %.4f ms (estimate); records in %s\n",
         model, last.trials, last.failed, last.model_ms_default, last.model_ms_now, opt.records);
  if (last.model_update_failures > 0) /* the run went on: they cost ranking quality only (tune.h) */
    printf("cost model: %d failed updates (first: %s)\n", last.model_update_failures, last.model_error);
  return 0;
}

/* ---- export-c ---- */

static int cmd_export_c(int argc, char **argv) {
  const char *model = NULL;
  ExportOptions opt = {0};
  /* --input NAME=FILE, as `loom run MODEL.onnx` takes them */
  char **names = calloc((size_t)argc + 1, sizeof *names);
  const char **files = calloc((size_t)argc + 1, sizeof *files);
  int num_named = 0, rc = names && files ? 0 : fail(1, "out of memory");
  for (int i = 0; !rc && i < argc; i++) {
    bool missing = false;
    const char *v;
    if ((v = flag_value(argc, argv, &i, "--input", &missing))) {
      const char *eq = strchr(v, '=');
      if (!eq || eq == v || !eq[1])
        rc = fail(EXIT_USAGE, "export-c: --input \"%s\": expected NAME=FILE (.npy or .pb)", v);
      else if (!(names[num_named] = strndup(v, (size_t)(eq - v))))
        rc = fail(1, "out of memory");
      else
        files[num_named++] = eq + 1;
    } else if ((v = flag_value(argc, argv, &i, "-o", &missing)) ||
               (v = flag_value(argc, argv, &i, "--output", &missing))) {
      opt.out_dir = v;
    } else if ((v = flag_value(argc, argv, &i, "--target-opt", &missing))) {
      opt.target_options = v;
    } else if ((v = flag_value(argc, argv, &i, "--target", &missing))) {
      opt.target = v;
    } else if ((v = flag_value(argc, argv, &i, "--records", &missing))) {
      opt.records = v;
    } else if ((v = flag_value(argc, argv, &i, "--name", &missing))) {
      opt.name = v;
    } else if ((v = flag_value(argc, argv, &i, "--weights", &missing))) {
      if (strcmp(v, "embed") && strcmp(v, "file"))
        rc = fail(EXIT_USAGE, "export-c: --weights \"%s\": expected embed or file", v);
      else
        opt.weights = v;
    } else if ((v = flag_value(argc, argv, &i, "--threads", &missing))) {
      long n;
      if (!parse_int(v, 1, EXPORT_MAX_THREADS, &n))
        rc = fail(EXIT_USAGE, "export-c: --threads \"%s\": expected a count from 1 to %d", v, EXPORT_MAX_THREADS);
      else
        opt.threads = (int)n;
    } else if (missing) {
      rc = fail(EXIT_USAGE, "export-c: %s needs a value", argv[i]);
    } else if (!strcmp(argv[i], "--force")) {
      opt.force = true;
    } else if (!strcmp(argv[i], "--bench")) {
      opt.bench = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      rc = fail(EXIT_USAGE, "export-c: unknown flag \"%s\"", argv[i]);
    } else if (!model) {
      model = argv[i];
    } else {
      rc = fail(EXIT_USAGE, "export-c: unexpected argument \"%s\" (one model only)", argv[i]);
    }
  }
  if (!rc && !model) rc = fail(EXIT_USAGE, "export-c: missing MODEL.onnx\n%s", k_usage);
  if (!rc && !opt.out_dir) rc = fail(EXIT_USAGE, "export-c: missing -o DIR");
  if (!rc && !file_exists(model))
    rc = fail(1, "export-c: cannot open \"%s\": %s", model, strerror(errno ? errno : ENOENT));
  InputValues given = {0};
  if (!rc && num_named > 0 &&
      !(rc = read_input_values("export-c", model, NULL, 0, (const char *const *)names, files, num_named, &given))) {
    opt.inputs = given.vals;
    opt.input_files = given.files;
    opt.num_inputs = given.n;
  }
  LoomError err = {0};
  if (!rc && export_c_project(model, &opt, &err)) rc = fail(1, "%s", err.msg);
  if (!rc) printf("wrote %s\n", opt.out_dir);
  input_values_free(&given);
  for (int i = 0; i < num_named; i++) free(names[i]);
  free(names);
  free(files);
  return rc;
}

int main(int argc, char **argv) {
  /* Ctrl-C or a timeout's SIGTERM stops the compilers Loom started and
   * removes its temporary files before Loom goes. */
  subprocess_install_signal_cleanup();
  if (argc < 2) return fail(EXIT_USAGE, "missing command\n%s", k_usage);
  const char *cmd = argv[1];
  if (!strcmp(cmd, "compile")) return cmd_compile(argc - 2, argv + 2);
  if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
  if (!strcmp(cmd, "inspect")) return cmd_inspect(argc - 2, argv + 2);
  if (!strcmp(cmd, "target")) return cmd_target(argc - 2, argv + 2);
  if (!strcmp(cmd, "tune")) return cmd_tune(argc - 2, argv + 2);
  if (!strcmp(cmd, "export-c")) return cmd_export_c(argc - 2, argv + 2);
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    char host[128];
    printf("loom %s (artifact format %d, host target %s)\n", LOOM_VERSION_STRING, ARTIFACT_FORMAT_VERSION,
           artifact_host_target(host, sizeof host));
    return 0;
  }
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    fputs(k_usage, stdout);
    return 0;
  }
  return fail(EXIT_USAGE, "unknown command \"%s\"\n%s", cmd, k_usage);
}
