/* export_c_project: the pipeline of `loom export-c`, in order (export.h). */
#include "export/export.h"

#include "tir/transform/transform.h"
#include "target/codegen_c.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The kernel ABI (include/loom/loom_kernel.h) and the part of DLPack it
 * uses, written into PREFIX.c in place of the prelude's #include so the
 * project needs no header of Loom's or DLPack's. Layouts are DLPack's. */
static const char k_abi[] =
    "/* ---- the kernel ABI (Loom's loom/loom_kernel.h, DLPack's DLTensor) ---- */\n"
    "typedef enum { kDLCPU = 1 } DLDeviceType;\n"
    "typedef struct { DLDeviceType device_type; int32_t device_id; } DLDevice;\n"
    "typedef enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 } DLDataTypeCode;\n"
    "typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;\n"
    "typedef struct {\n"
    "  void *data;\n  DLDevice device;\n  int32_t ndim;\n  DLDataType dtype;\n"
    "  int64_t *shape;\n  int64_t *strides;\n  uint64_t byte_offset;\n"
    "} DLTensor;\n"
    "typedef void (*loom_parallel_body)(void *closure, int64_t begin, int64_t end);\n"
    "typedef void (*loom_parallel_for)(void *pool, int64_t n, loom_parallel_body body, void *closure);\n"
    "typedef struct loom_kernel_env {\n"
    "  loom_parallel_for parallel_for; /* NULL here: parallel loops run serially */\n"
    "  void *pool;\n  int32_t num_threads;\n  void *workspace;\n  size_t workspace_bytes;\n"
    "} loom_kernel_env;\n"
    "typedef enum loom_kernel_err {\n"
    "  LOOM_KERNEL_OK = 0, LOOM_KERNEL_ERR_NUM_ARGS = 1, LOOM_KERNEL_ERR_NULL = 2, LOOM_KERNEL_ERR_DEVICE = 3,\n"
    "  LOOM_KERNEL_ERR_DTYPE = 4, LOOM_KERNEL_ERR_NDIM = 5, LOOM_KERNEL_ERR_SHAPE = 6, LOOM_KERNEL_ERR_STRIDES = 7,\n"
    "  LOOM_KERNEL_ERR_ALIGN = 8, LOOM_KERNEL_ERR_WORKSPACE = 9\n"
    "} loom_kernel_err;\n"
    "#define LOOM_KERNEL_ERR(kind, arg) ((int32_t)(kind) | ((int32_t)(arg) << 8))\n"
    "#define LOOM_KERNEL_ERR_KIND(code) ((loom_kernel_err)((code) & 0xff))\n\n";

static const char k_prelude_include[] = "#include \"loom/loom_kernel.h\"\n";
static const char k_convert_include[] = "#include \"loom/loom_convert.h\"\n";

#include "export_convert_text.h" /* k_convert_header: loom_convert.h's text (CMakeLists.txt) */

/* Kernels with narrow types (bfloat16, float16 as uint16_t) include
 * loom_convert.h for their conversions: the project gets its text at the
 * first include, and the later ones go (it is one file). */
static void inline_convert_header(StrBuf *src) {
  const char *text = sb_cstr(src), *first = strstr(text, k_convert_include);
  if (!first) return;
  size_t n = strlen(k_convert_include);
  StrBuf out;
  sb_init(&out);
  sb_printf(&out, "%.*s/* ---- Loom's loom/loom_convert.h ---- */\n", (int)(first - text), text);
  sb_puts(&out, k_convert_header);
  for (const char *p = first + n, *next;; p = next + n) {
    if (!(next = strstr(p, k_convert_include))) {
      sb_puts(&out, p);
      break;
    }
    sb_printf(&out, "%.*s", (int)(next - p), p);
  }
  sb_free(src);
  *src = out;
}

static bool is_c_identifier(const char *s) {
  if (!*s || (*s >= '0' && *s <= '9')) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
      return false;
  return true;
}

/* ---- the output directory: written beside it, renamed when complete ---- */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void remove_tree(const char *dir) { nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* LOOM_OK when dir does not exist, is an empty directory, or force. *nonempty:
 * it exists with entries (to move aside). */
static loom_status check_out_dir(const char *dir, bool force, bool *nonempty, LoomError *err) {
  struct stat st;
  *nonempty = false;
  if (stat(dir, &st) != 0) {
    if (errno == ENOENT) return LOOM_OK;
    return err_set(err, LOOM_ERR_INVALID_ARG, "export-c: -o %s: %s", dir, strerror(errno));
  }
  if (!S_ISDIR(st.st_mode))
    return err_set(err, LOOM_ERR_INVALID_ARG, "export-c: -o %s: exists and is not a directory", dir);
  DIR *d = opendir(dir);
  if (!d) return err_set(err, LOOM_ERR_INVALID_ARG, "export-c: -o %s: %s", dir, strerror(errno));
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) *nonempty = true;
  closedir(d);
  if (*nonempty && !force)
    return err_set(err, LOOM_ERR_INVALID_ARG, "export-c: -o %s: exists and is not empty (--force replaces it)", dir);
  return LOOM_OK;
}

static loom_status write_file(const char *dir, const char *name, StrBuf *text, LoomError *err) {
  StrBuf path;
  sb_init(&path);
  sb_printf(&path, "%s/%s", dir, name);
  loom_status st = LOOM_OK;
  FILE *f = fopen(sb_cstr(&path), "wb");
  if (!f) {
    st = err_set(err, LOOM_ERR_IO, "export-c: cannot create %s: %s", sb_cstr(&path), strerror(errno));
  } else {
    bool ok = fwrite(sb_cstr(text), 1, text->len, f) == text->len;
    if (fclose(f) != 0) ok = false;
    if (!ok) st = err_set(err, LOOM_ERR_IO, "export-c: writing %s failed: %s", sb_cstr(&path), strerror(errno));
  }
  sb_free(&path);
  return st;
}

typedef struct ProjectFile {
  char name[128]; /* "": not part of this project */
  StrBuf text;    /* text, or the bytes of PREFIX.weights */
} ProjectFile;
enum { MAX_FILES = 8 };

/* Writes the files into a fresh sibling of dir, then renames it to dir
 * (replacing an existing one only when force). */
static loom_status write_project(const char *dir, bool force, ProjectFile *files, LoomError *err) {
  bool nonempty;
  loom_status st = check_out_dir(dir, force, &nonempty, err);
  if (st) return st;
  char tmp[4096], old[4096] = "";
  snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", dir);
  if (!mkdtemp(tmp))
    return err_set(err, LOOM_ERR_IO, "export-c: -o %s: cannot create a directory beside it (%s): %s", dir, tmp,
                   strerror(errno));
  for (int i = 0; i < MAX_FILES && !st; i++)
    if (files[i].name[0]) st = write_file(tmp, files[i].name, &files[i].text, err);
  mode_t mask = umask(0); /* mkdtemp made it 0700: give it a new directory's mode */
  umask(mask);
  if (!st) chmod(tmp, 0777 & ~mask);
  if (!st && nonempty) {
    snprintf(old, sizeof old, "%s.old-XXXXXX", dir);
    if (!mkdtemp(old) || rename(dir, old) != 0)
      st = err_set(err, LOOM_ERR_IO, "export-c: -o %s: cannot move the existing directory aside: %s", dir,
                   strerror(errno));
  }
  /* rename replaces an empty directory */
  if (!st && rename(tmp, dir) != 0)
    st = err_set(err, LOOM_ERR_IO, "export-c: -o %s: cannot rename %s to it: %s", dir, tmp, strerror(errno));
  if (st) {
    remove_tree(tmp);
    if (old[0] && rename(old, dir) != 0) remove_tree(old);
    return st;
  }
  if (old[0]) remove_tree(old);
  return LOOM_OK;
}

/* ---- PREFIX.c ---- */

/* The workspace bytes codegen_c_func declared for the kernel it just
 * appended (`const size_t NAME_workspace_bytes = N;`); 0 when none. */
static uint64_t declared_workspace(const char *src, const char *name) {
  char key[256];
  snprintf(key, sizeof key, "const size_t %s_workspace_bytes = ", name);
  const char *p = strstr(src, key);
  return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* Every kernel (lowered, then C), then the run entry and the API. */
static loom_status model_source(Arena *a, const CompileModelParts *parts, ExportModel *m, StrBuf *out,
                                LoomError *err) {
  StrBuf prelude;
  sb_init(&prelude);
  codegen_c_prelude(&prelude);
  const char *pre = sb_cstr(&prelude), *inc = strstr(pre, k_prelude_include);
  LOOM_ASSERT(inc); /* codegen_c_prelude includes the kernel ABI: replaced by k_abi */
  sb_printf(out, "/* %s: the model's kernels, run entry and API (Loom export-c, target %s). */\n", m->prefix,
            m->target);
  if (m->threads > 1) export_threads_feature_macros(m, out);
  sb_printf(out, "#include \"%s.h\"\n\n", m->prefix);
  sb_printf(out, "%.*s", (int)(inc - pre), pre);
  sb_puts(out, k_abi);
  sb_puts(out, inc + strlen(k_prelude_include));
  sb_free(&prelude);
  export_dma_source(m, parts, out);
  LowerOptions lower = compile_lower_options(&parts->target);
  for (int i = 0; i < parts->nfuncs; i++) {
    const PrimFunc *f = tir_lower(a, parts->funcs[i], &lower, err);
    if (!f) {
      if (err->status == LOOM_OK) err->status = LOOM_ERR_INTERNAL;
      err_prefix(err, "export-c: lowering \"%s\"", parts->funcs[i]->name);
      return err->status;
    }
    size_t start = out->len;
    loom_status st = codegen_c_func(out, f, err);
    if (st) {
      err_prefix(err, "export-c: generating C for \"%s\"", f->name);
      return st;
    }
    uint64_t ws = declared_workspace(sb_cstr(out) + start, f->name);
    if (ws > m->scratch_bytes) m->scratch_bytes = ws;
  }
  inline_convert_header(out);
  return compile_run_entry_source(m->spec, out, err);
}

/* The kernels renamed PREFIX_<name> (no symbol of two exported models
 * collides), in the funcs and in a copy of the spec. */
static void rename_kernels(Arena *a, const char *prefix, CompileModelParts *parts, ArtifactSpec *spec) {
  ArtifactKernel *ks = ARENA_ARRAY(a, ArtifactKernel, spec->num_kernels > 0 ? spec->num_kernels : 1);
  const PrimFunc **fs = ARENA_ARRAY(a, const PrimFunc *, parts->nfuncs > 0 ? parts->nfuncs : 1);
  for (int i = 0; i < parts->nfuncs; i++) {
    PrimFunc *f = ARENA_NEW(a, PrimFunc);
    *f = *parts->funcs[i];
    f->name = arena_printf(a, "%s_%s", prefix, parts->funcs[i]->name);
    fs[i] = f;
    ks[i] = spec->kernels[i];
    ks[i].name = f->name;
  }
  spec->kernels = ks;
  parts->funcs = fs;
}

static loom_status check_options(const ExportOptions *o, LoomError *err) {
  if (!o->out_dir || !*o->out_dir) return err_set(err, LOOM_ERR_INVALID_ARG, "export-c: missing -o DIR");
  if (o->name && (!is_c_identifier(o->name) || strlen(o->name) > 48))
    return err_set(err, LOOM_ERR_INVALID_ARG, "export-c: --name \"%s\": expected a C identifier ([A-Za-z_][A-Za-z0-9_]*, at most 48 characters)",
                   o->name);
  if (o->weights && strcmp(o->weights, "embed") && strcmp(o->weights, "file"))
    return err_set(err, LOOM_ERR_INVALID_ARG, "export-c: --weights \"%s\": expected embed or file", o->weights);
  if (o->threads < 0 || o->threads > EXPORT_MAX_THREADS)
    return err_set(err, LOOM_ERR_INVALID_ARG, "export-c: --threads %d: expected 1 to %d", o->threads,
                   EXPORT_MAX_THREADS);
  Target t;
  loom_status st = target_parse(o->target ? o->target : "generic", &t, err);
  if (st) {
    err_prefix(err, "export-c: --target");
    return st;
  }
  /* --threads is the core count the kernels are scheduled (and their
   * records looked up) for: a --target-opt cores= may only repeat it */
  t.num_cores = 0;
  if ((st = target_apply_options(&t, o->target_options, err))) {
    err_prefix(err, "export-c");
    return st;
  }
  int threads = o->threads > 1 ? o->threads : 1;
  if (t.num_cores && t.num_cores != threads)
    return err_set(err, LOOM_ERR_INVALID_ARG,
                   "export-c: --target-opt cores=%d contradicts --threads %d (the kernels are scheduled for "
                   "--threads cores: drop cores= or make them equal)",
                   t.num_cores, threads);
  return LOOM_OK;
}

/* Two tensors' C names clash: the same field, or one is the other's
 * FIELD_shape (a dynamic output's real shape, export_api.c). */
static bool fields_collide(const ExportTensor *t, const ExportTensor *u) {
  if (!strcmp(t->field, u->field)) return true;
  for (int k = 0; k < 2; k++) {
    const ExportTensor *dyn = k ? u : t, *other = k ? t : u;
    size_t n = strlen(dyn->field);
    if (dyn->dynamic && !strncmp(other->field, dyn->field, n) && !strcmp(other->field + n, "_shape")) return true;
  }
  return false;
}

/* A refused input value (an unknown name, a dtype or rank the model
 * contradicts: compile/specialize.c names the input) also names the file
 * it came from. */
static void name_input_file(const ExportOptions *o, LoomError *err) {
  if (strncmp(err->msg, "specialize: ", 12) && strncmp(err->msg, "graph input ", 12)) return;
  for (int i = 0; o->input_files && i < o->num_inputs; i++) {
    char quoted[300];
    snprintf(quoted, sizeof quoted, "\"%s\"", o->inputs[i].name ? o->inputs[i].name : "");
    if (o->input_files[i] && strstr(err->msg, quoted)) {
      err_prefix(err, "export-c: input \"%s\" from \"%s\"", o->inputs[i].name, o->input_files[i]);
      return;
    }
  }
}

/* Per given input: its value was compiled in (the program no longer has
 * the input) rather than only fixing its shape. */
static const bool *compiled_in_inputs(Arena *a, const ExportOptions *o, const ArtifactSpec *spec) {
  bool *in = ARENA_ARRAY(a, bool, o->num_inputs > 0 ? o->num_inputs : 1);
  for (int i = 0; i < o->num_inputs; i++) {
    in[i] = true;
    for (int32_t k = 0; k < spec->num_inputs; k++)
      if (!strcmp(spec->inputs[k].name, o->inputs[i].name)) in[i] = false;
  }
  return in;
}

loom_status export_c_project(const char *onnx_path, const ExportOptions *o, LoomError *err) {
  loom_status st = check_options(o, err);
  if (st) return st;
  bool nonempty;
  if ((st = check_out_dir(o->out_dir, o->force, &nonempty, err))) return st; /* before the minutes of compiling */
  const char *target = o->target ? o->target : "generic";
  Arena *a = arena_new();
  /* --threads cores (1: the schedules have no parallel loops to outline);
   * tuning records apply when tuned at that many threads */
  int threads = o->threads > 1 ? o->threads : 1;
  const char *topt = o->target_options && *o->target_options
                         ? arena_printf(a, "cores=%d,%s", threads, o->target_options)
                         : arena_printf(a, "cores=%d", threads);
  loom_compile_options copt = {.target = target, .target_options = topt, .opt_level = 2, .records = o->records,
                               .inputs = o->inputs, .num_inputs = o->num_inputs};
  ExportModel m = {.prefix = o->name ? o->name : "model", .model_path = onnx_path, .target = target,
                   .threads = threads, .bench = o->bench, .options = o};
  for (size_t i = 0; m.prefix[i] && i + 1 < sizeof m.upper; i++)
    m.upper[i] = (char)(m.prefix[i] >= 'a' && m.prefix[i] <= 'z' ? m.prefix[i] - 32 : m.prefix[i]);
  CompileModelParts parts;
  st = compile_model_parts(onnx_path, &copt, arena_printf(a, "%s_entry", m.prefix), &parts, err);
  if (st) name_input_file(o, err);
  ArtifactSpec spec;
  if (!st) {
    m.compiled_in = compiled_in_inputs(a, o, parts.spec);
    spec = *parts.spec;
    m.spec = &spec;
    /* The flags Loom's own build uses for the target (the host's: this
     * machine's ISA); generic is portable C, optimized but no -march. */
    m.cflags = !strcmp(target, "generic") ? "-O2"
               : parts.target.cflags     ? parts.target.cflags
                                         : "-O3 -march=native -ffp-contract=fast -fno-math-errno -Wno-psabi";
    m.cross_cc = parts.target.cross_cc;
    rename_kernels(a, m.prefix, &parts, &spec);
    m.inputs = ARENA_ARRAY(a, ExportTensor, spec.num_inputs > 0 ? spec.num_inputs : 1);
    m.outputs = ARENA_ARRAY(a, ExportTensor, spec.num_outputs > 0 ? spec.num_outputs : 1);
    for (int32_t i = 0; i < spec.num_inputs && !st; i++) st = export_tensor_of(&spec.inputs[i], &m.inputs[i], err);
    for (int32_t i = 0; i < spec.num_outputs && !st; i++) st = export_tensor_of(&spec.outputs[i], &m.outputs[i], err);
    /* two names that differ only in characters C cannot spell (or one is a
     * dynamic output's FIELD_shape): number the later one */
    for (int32_t i = 0; i < spec.num_inputs + spec.num_outputs && !st; i++) {
      ExportTensor *t = i < spec.num_inputs ? &m.inputs[i] : &m.outputs[i - spec.num_inputs];
      for (int32_t j = 0; j < i; j++) {
        const ExportTensor *u = j < spec.num_inputs ? &m.inputs[j] : &m.outputs[j - spec.num_inputs];
        if (fields_collide(t, u)) {
          size_t n = strlen(t->field);
          snprintf(t->field + (n < 52 ? n : 52), sizeof t->field - (n < 52 ? n : 52), "_%d", (int)i);
          break;
        }
      }
    }
    m.arena_bytes = (spec.arena_bytes + 63) / 64 * 64;
    uint64_t *offsets = ARENA_ARRAY(a, uint64_t, spec.num_weights + 1);
    if (!st && !artifact_weight_layout(spec.weights, spec.num_weights, offsets, &m.weights_bytes))
      st = err_set(err, LOOM_ERR_INTERNAL, "export-c: a weight has a dtype or shape the blob cannot hold");
    m.weights_file = o->weights ? !strcmp(o->weights, "file") : m.weights_bytes > EXPORT_EMBED_MAX_BYTES;
    if (!st) m.weights_layout = export_weights_layout(&m);
  }
  ProjectFile files[MAX_FILES];
  memset(files, 0, sizeof files);
  for (int i = 0; i < MAX_FILES; i++) sb_init(&files[i].text);
  if (!st) {
    snprintf(files[0].name, sizeof files[0].name, "%s.c", m.prefix);
    st = model_source(a, &parts, &m, &files[0].text, err); /* first: it measures the kernel scratch */
  }
  if (!st) {
    snprintf(files[1].name, sizeof files[1].name, "%s.h", m.prefix);
    snprintf(files[2].name, sizeof files[2].name, m.weights_file ? "%s.weights" : "%s_weights.c", m.prefix);
    snprintf(files[3].name, sizeof files[3].name, "Makefile");
    snprintf(files[4].name, sizeof files[4].name, "CMakeLists.txt");
    snprintf(files[5].name, sizeof files[5].name, "example_main.c");
    if (m.bench) snprintf(files[6].name, sizeof files[6].name, "%s_bench.c", m.prefix);
    export_run_source(&m, &files[0].text);
    export_header(&m, &files[1].text);
    if (m.weights_file) export_weights_file(&m, &files[2].text);
    else export_weights_source(&m, &files[2].text);
    export_makefile(&m, &files[3].text);
    export_cmakelists(&m, &files[4].text);
    export_example_main(&m, &files[5].text);
    if (m.bench) export_bench(&m, &files[6].text);
    st = write_project(o->out_dir, o->force, files, err);
  }
  for (int i = 0; i < MAX_FILES; i++) sb_free(&files[i].text);
  compile_model_parts_free(&parts);
  arena_free(a);
  return st;
}
