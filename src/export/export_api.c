/* The project's API: PREFIX.h and the tail of PREFIX.c (status strings,
 * the weights loader or the thread pool when the project has them,
 * PREFIX_run). PREFIX_run wraps the generated run entry
 * (compile/run_entry.c): it builds the DLTensors of the graph
 * inputs/outputs on its stack from plain pointers and static shapes, so
 * nothing but the caller's workspace is written outside the outputs. */
#include "export/export.h"

#include <inttypes.h>
#include <string.h>

static const struct {
  uint8_t code, bits;
  const char *ctype, *dtype, *npy;
} k_dtypes[] = {
    {2, 32, "float", "float32", "<f4"},   {2, 64, "double", "float64", "<f8"},  {0, 8, "int8_t", "int8", "|i1"},
    {0, 16, "int16_t", "int16", "<i2"},   {0, 32, "int32_t", "int32", "<i4"},   {0, 64, "int64_t", "int64", "<i8"},
    {1, 8, "uint8_t", "uint8", "|u1"},    {1, 16, "uint16_t", "uint16", "<u2"}, {1, 32, "uint32_t", "uint32", "<u4"},
    {1, 64, "uint64_t", "uint64", "<u8"}, {6, 8, "uint8_t", "bool", "|b1"},
    /* narrow floats as their storage bits, as the kernels hold them (loom_convert.h
     * converts); .npy has no bfloat16: its files hold the bits as uint16 */
    {2, 16, "uint16_t", "float16", "<f2"}, {4, 16, "uint16_t", "bfloat16", "<u2"},
};

loom_status export_tensor_of(const ArtifactTensor *t, ExportTensor *out, LoomError *err) {
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
    if (k_dtypes[i].code == t->dtype.code && k_dtypes[i].bits == t->dtype.bits && t->dtype.lanes == 1) {
      out->ctype = k_dtypes[i].ctype;
      out->dtype = k_dtypes[i].dtype;
      out->npy = k_dtypes[i].npy;
    }
  if (!out->ctype)
    return err_set(err, LOOM_ERR_UNSUPPORTED, "export-c: tensor \"%s\": dtype code %u bits %u has no C type here",
                   t->name, t->dtype.code, t->dtype.bits);
  for (int32_t d = 0; d < t->ndim; d++)
    if (t->shape[d] < 0)
      return err_set(err, LOOM_ERR_UNSUPPORTED,
                     "export-c: tensor \"%s\": dimension %d is not static (export needs static shapes)", t->name,
                     (int)d);
  out->name = t->name;
  out->ndim = t->ndim;
  out->shape = t->shape;
  out->dl = t->dtype;
  out->dynamic = t->dynamic;
  out->numel = 1;
  for (int32_t d = 0; d < t->ndim; d++) out->numel *= (uint64_t)t->shape[d];
  /* The C field: the name with every other character as '_'. */
  size_t n = 0;
  if (!((t->name[0] >= 'a' && t->name[0] <= 'z') || (t->name[0] >= 'A' && t->name[0] <= 'Z')))
    out->field[n++] = 't';
  for (const char *p = t->name; *p && n + 1 < sizeof out->field; p++) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out->field[n++] = ok ? c : '_';
  }
  out->field[n] = '\0';
  return LOOM_OK;
}

static void shape_list(StrBuf *o, const ExportTensor *t) {
  if (t->ndim == 0) sb_puts(o, "1"); /* a scalar: one element */
  for (int32_t d = 0; d < t->ndim; d++) sb_printf(o, "%s%" PRId64, d ? ", " : "", t->shape[d]);
}

/* Status codes mirror the kernel ABI's error kinds (loom/loom_kernel.h) that
 * a caller can cause; any other kernel refusal is a bug in Loom: INTERNAL.
 * The weights loader's and the thread pool's exist only in projects that
 * have them (16 and up: never a kernel's kind). */
enum { ST_ALWAYS, ST_WEIGHTS_FILE, ST_THREADS };
static const struct {
  const char *name;
  int value, when;
  const char *message;
} k_status[] = {
    {"OK", 0, ST_ALWAYS, "ok"},
    {"ERR_NULL", 2, ST_ALWAYS, "a NULL inputs, outputs or workspace pointer, or a NULL tensor pointer in them"},
    {"ERR_ALIGN", 8, ST_ALWAYS, "misaligned data: tensors need their element alignment (some kernels 64 bytes), "
                                "the workspace 64 bytes"},
    {"ERR_WORKSPACE", 9, ST_ALWAYS, "the workspace is missing or misaligned"},
    {"ERR_WEIGHTS_TRUNCATED", 16, ST_WEIGHTS_FILE, "the weights file is truncated (shorter than its header says)"},
    {"ERR_WEIGHTS_SIZE", 17, ST_WEIGHTS_FILE, "the weights buffer is longer than the file its header describes"},
    {"ERR_WEIGHTS_MAGIC", 18, ST_WEIGHTS_FILE, "not a Loom weights file (bad magic number)"},
    {"ERR_WEIGHTS_ENDIAN", 19, ST_WEIGHTS_FILE, "the weights file is little-endian and this machine is not"},
    {"ERR_WEIGHTS_VERSION", 20, ST_WEIGHTS_FILE, "the weights file has a format version this code does not read"},
    {"ERR_WEIGHTS_ALIGN", 21, ST_WEIGHTS_FILE, "the weights buffer is not 64-byte aligned"},
    {"ERR_WEIGHTS_MODEL", 22, ST_WEIGHTS_FILE, "the weights file is another model's (its layout differs from this "
                                               "code's)"},
    {"ERR_WEIGHTS_CHECKSUM", 23, ST_WEIGHTS_FILE, "the weights file is corrupt (checksum mismatch)"},
    {"ERR_THREADS", 24, ST_THREADS, "starting the worker threads failed (pthread_create)"},
    {"ERR_INTERNAL", 255, ST_ALWAYS, "a kernel refused its arguments (a bug in Loom: please report it)"},
};
enum { NUM_STATUS = sizeof k_status / sizeof k_status[0] };

static bool has_status(const ExportModel *m, int i) {
  return k_status[i].when == ST_ALWAYS || (k_status[i].when == ST_WEIGHTS_FILE && m->weights_file) ||
         (k_status[i].when == ST_THREADS && m->threads > 1);
}

/* The run entry's parameters after the workspace, in PREFIX.h and PREFIX.c. */
static void run_params(StrBuf *o, const ExportModel *m) {
  const char *P = m->prefix;
  sb_printf(o, "const %s_inputs *in, %s_outputs *out, void *workspace", P, P);
  if (m->weights_file) sb_printf(o, ", const %s_weights *weights", P);
  if (m->threads > 1) sb_printf(o, ", %s_context *ctx", P);
}

static void tensor_macros(StrBuf *o, const char *P, const char *kind, int i, const ExportTensor *t) {
  sb_printf(o, "/* %s %d: \"%s\" */\n", kind, i, t->name);
  sb_printf(o, "#define %s_%s_%d_NAME \"%s\"\n", P, kind, i, t->name);
  sb_printf(o, "#define %s_%s_%d_DTYPE \"%s\"\n", P, kind, i, t->dtype);
  sb_printf(o, "#define %s_%s_%d_NDIM %d\n", P, kind, i, (int)t->ndim);
  sb_printf(o, "#define %s_%s_%d_SHAPE {", P, kind, i);
  shape_list(o, t);
  sb_printf(o, "}\n#define %s_%s_%d_NUMEL %" PRIu64 "\n", P, kind, i, t->numel);
  if (!strcmp(kind, "OUTPUT")) sb_printf(o, "#define %s_%s_%d_DYNAMIC %d\n", P, kind, i, t->dynamic ? 1 : 0);
}

static bool any_dynamic(const ExportModel *m) {
  for (int32_t i = 0; i < m->spec->num_outputs; i++)
    if (m->outputs[i].dynamic) return true;
  return false;
}

/* s inside a C comment, where a star followed by a slash in a name or path would end it. */
static void comment_text(StrBuf *o, const char *s) {
  for (; s && *s; s++) {
    sb_putc(o, *s);
    if (s[0] == '*' && s[1] == '/') sb_putc(o, ' ');
  }
}

/* Which inputs were given at export (--input): compiled in, or kept with
 * their shape fixed. */
static void bound_inputs_comment(const ExportModel *m, StrBuf *o) {
  const ExportOptions *opt = m->options;
  for (int kept = 0; opt && kept < 2; kept++) {
    bool any = false;
    for (int i = 0; i < opt->num_inputs; i++) {
      if (m->compiled_in[i] == (bool)kept) continue;
      if (!any)
        sb_puts(o, kept ? " * Inputs whose shape a value given at export fixed (read at run time):\n"
                        : " * Inputs compiled in at export (their values decide shapes or what runs,\n"
                          " * so this code computes the model for these values only; not in the API):\n");
      any = true;
      sb_puts(o, " *   \"");
      comment_text(o, opt->inputs[i].name);
      sb_puts(o, "\"");
      if (opt->input_files && opt->input_files[i]) {
        sb_puts(o, " from ");
        comment_text(o, opt->input_files[i]);
      }
      sb_puts(o, "\n");
    }
  }
}

void export_header(const ExportModel *m, StrBuf *o) {
  const char *P = m->prefix, *U = m->upper;
  const ArtifactSpec *s = m->spec;
  sb_printf(o, "/* %s: %s compiled by Loom %s (loom export-c, target %s).\n *\n * int %s_run(", P, m->model_path,
            LOOM_VERSION_STRING, m->target, P);
  run_params(o, m);
  sb_printf(o,
            ")\n"
            " * runs the model once. in/out hold one pointer per graph input/output\n"
            " * (row-major, dtype and shape below; outputs must not overlap inputs).\n"
            " * workspace: %s_WORKSPACE_BYTES bytes, 64-byte aligned, owned by the\n"
            " * caller and used only during the call (its content need not survive).\n",
            U);
  if (m->weights_file)
    sb_printf(o, " * weights: bound once by %s_weights_bind to the file %s.weights, read only.\n", P, P);
  if (any_dynamic(m))
    sb_puts(o,
            " * An output with _DYNAMIC 1 has a data-dependent shape (NonZero, Unique...):\n"
            " * its buffer holds _NUMEL elements of the upper-bound _SHAPE; the run writes\n"
            " * the real shape into the struct's FIELD_shape and the tensor compactly,\n"
            " * row-major for that shape, at the start of the buffer (the rest is\n"
            " * unspecified). FIELD_shape is written only when the run returns OK.\n");
  bound_inputs_comment(m, o);
  if (m->threads > 1)
    sb_printf(o,
              " * ctx: a %s_context started by %s_context_init: the kernels' parallel\n"
              " * loops run on its %d threads (the caller's included); NULL runs them all\n"
              " * on the calling thread.\n",
              P, P, m->threads);
  sb_printf(o,
            " * Returns %s_OK or a %s_status (%s_status_string says what it means).\n"
            " * The code never allocates and has no mutable global state: calls with\n"
            " * separate workspaces%s may run concurrently. %s */\n"
            "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
            "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
            U, P, P, m->threads > 1 ? " and contexts" : "",
            m->threads > 1 ? "Uses pthreads (link with -pthread)." : "Single-threaded.", U, U);
  sb_printf(o, "#define %s_WORKSPACE_BYTES %" PRIu64 "\n#define %s_WORKSPACE_ALIGN 64\n", U,
            m->arena_bytes + m->scratch_bytes > 0 ? m->arena_bytes + m->scratch_bytes : 64, U);
  sb_printf(o, "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n#define %s_THREADS %d\n\n", U,
            (int)s->num_inputs, U, (int)s->num_outputs, U, m->threads > 1 ? m->threads : 1);
  for (int32_t i = 0; i < s->num_inputs; i++) tensor_macros(o, U, "INPUT", i, &m->inputs[i]);
  for (int32_t i = 0; i < s->num_outputs; i++) tensor_macros(o, U, "OUTPUT", i, &m->outputs[i]);
  for (int k = 0; k < 2; k++) {
    int32_t n = k ? s->num_outputs : s->num_inputs;
    const ExportTensor *ts = k ? m->outputs : m->inputs;
    sb_printf(o, "\ntypedef struct %s_%s {\n", P, k ? "outputs" : "inputs");
    for (int32_t i = 0; i < n; i++)
      sb_printf(o, "  %s%s *%s; /* \"%s\" */\n", k ? "" : "const ", ts[i].ctype, ts[i].field, ts[i].name);
    /* after the pointers, so `PREFIX_outputs out = {a, b};` still sets them all */
    for (int32_t i = 0; k && i < n; i++)
      if (ts[i].dynamic)
        sb_printf(o, "  int64_t %s_shape[%d]; /* \"%s\": its real shape, written by %s_run */\n", ts[i].field,
                  (int)ts[i].ndim, ts[i].name, P);
    if (n == 0) sb_puts(o, "  int unused; /* the model has none */\n");
    sb_printf(o, "} %s_%s;\n", P, k ? "outputs" : "inputs");
  }
  sb_printf(o, "\ntypedef enum %s_status {\n", P);
  for (int i = 0; i < NUM_STATUS; i++)
    if (has_status(m, i))
      sb_printf(o, "  %s_%s = %d, /* %s */\n", U, k_status[i].name, k_status[i].value, k_status[i].message);
  sb_printf(o,
            "} %s_status;\n\n"
            "/* A static string for a %s_status (\"unknown status\" for others). */\n"
            "const char *%s_status_string(int status);\n",
            P, P, P);
  if (m->weights_file) export_weights_api(m, o);
  if (m->threads > 1) export_threads_api(m, o);
  sb_printf(o, "\nint %s_run(", P);
  run_params(o, m);
  sb_puts(o, ");\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}

static void tensor_init(StrBuf *o, const char *var, const char *src, int i, const ExportTensor *t) {
  sb_printf(o, "  int64_t %s_shape_%d[] = {", var, i);
  shape_list(o, t);
  sb_printf(o,
            "};\n"
            "  DLTensor %s_%d = {(void *)(uintptr_t)%s->%s, {kDLCPU, 0}, %d, {%u, %u, 1}, %s_shape_%d, NULL, 0};\n",
            var, i, src, t->field, (int)t->ndim, t->dl.code, t->dl.bits, var, i);
}

static void tensor_array(StrBuf *o, const char *var, int32_t n) {
  if (n == 0) {
    sb_printf(o, "  DLTensor *const *%s = NULL;\n", var);
    return;
  }
  sb_printf(o, "  DLTensor *const %s[%d] = {", var, (int)n);
  for (int32_t i = 0; i < n; i++) sb_printf(o, "%s&%s_%d", i ? ", " : "", var, (int)i);
  sb_puts(o, "};\n");
}

/* After the run entry: each dynamic output's real shape (the kernels wrote
 * it over the bound tensor_init put in tout_shape_i), checked against its
 * bound as the runtime does (outside it a kernel is wrong: INTERNAL), then
 * given to the caller; nothing is written unless every one is in bounds. */
static void dynamic_shapes(const ExportModel *m, StrBuf *o) {
  sb_puts(o, "  if (rc == 0 && (");
  bool first = true;
  for (int32_t i = 0; i < m->spec->num_outputs; i++)
    for (int32_t d = 0; m->outputs[i].dynamic && d < m->outputs[i].ndim; d++) {
      sb_printf(o, "%s\n      tout_shape_%d[%d] < 0 || tout_shape_%d[%d] > %" PRId64, first ? "" : " ||", (int)i,
                (int)d, (int)i, (int)d, m->outputs[i].shape[d]);
      first = false;
    }
  sb_printf(o, "))\n    return %s_ERR_INTERNAL;\n", m->upper);
  sb_puts(o, "  if (rc == 0) {\n");
  for (int32_t i = 0; i < m->spec->num_outputs; i++)
    if (m->outputs[i].dynamic)
      sb_printf(o, "    for (int d = 0; d < %d; d++) out->%s_shape[d] = tout_shape_%d[d];\n", (int)m->outputs[i].ndim,
                m->outputs[i].field, (int)i);
  sb_puts(o, "  }\n");
}

void export_run_source(const ExportModel *m, StrBuf *o) {
  const char *P = m->prefix, *U = m->upper;
  const ArtifactSpec *s = m->spec;
  sb_printf(o, "\n/* ---- the API (%s.h) ---- */\n\nconst char *%s_status_string(int status) {\n  switch (status) {\n",
            P, P);
  for (int i = 0; i < NUM_STATUS; i++)
    if (has_status(m, i)) sb_printf(o, "    case %s_%s: return \"%s\";\n", U, k_status[i].name, k_status[i].message);
  sb_puts(o, "    default: return \"unknown status\";\n  }\n}\n");
  if (m->weights_file) export_weights_loader(m, o);
  else sb_printf(o, "\nextern const uint64_t %s_embedded_weights[];\n", P);
  if (m->threads > 1) export_threads_source(m, o);
  sb_printf(o, "\nint %s_run(", P);
  run_params(o, m);
  sb_printf(o,
            ") {\n"
            "  if (!in || !out || !workspace%s) return %s_ERR_NULL;\n"
            "  if ((uintptr_t)workspace %% 64 != 0) return %s_ERR_ALIGN;\n",
            m->weights_file ? " || !weights || !weights->payload" : "", U, U);
  for (int32_t i = 0; i < s->num_inputs; i++) tensor_init(o, "tin", "in", i, &m->inputs[i]);
  for (int32_t i = 0; i < s->num_outputs; i++) tensor_init(o, "tout", "out", i, &m->outputs[i]);
  tensor_array(o, "tin", s->num_inputs);
  tensor_array(o, "tout", s->num_outputs);
  sb_printf(o,
            "  /* The workspace: the memory plan's arena, then the kernels' scratch. */\n"
            "  loom_kernel_env env = {NULL, NULL, 1, (char *)workspace + %" PRIu64 ", %" PRIu64 "};\n",
            m->arena_bytes, m->scratch_bytes);
  if (m->threads > 1) sb_printf(o, "  if (ctx) %s_context_env(ctx, &env);\n", P);
  if (m->weights_file)
    sb_printf(o, "  int32_t rc = %s(tin, tout, weights->payload, workspace, &env, NULL);\n", s->run_entry);
  else
    sb_printf(o, "  int32_t rc = %s(tin, tout, %s_embedded_weights, workspace, &env, NULL);\n", s->run_entry, P);
  if (any_dynamic(m)) dynamic_shapes(m, o);
  sb_printf(o,
            "  switch (LOOM_KERNEL_ERR_KIND(rc)) {\n"
            "    case LOOM_KERNEL_OK: return %s_OK;\n"
            "    case LOOM_KERNEL_ERR_NULL: return %s_ERR_NULL;\n"
            "    case LOOM_KERNEL_ERR_ALIGN: return %s_ERR_ALIGN;\n"
            "    case LOOM_KERNEL_ERR_WORKSPACE: return %s_ERR_WORKSPACE;\n"
            "    default: return %s_ERR_INTERNAL;\n"
            "  }\n}\n",
            U, U, U, U, U);
}
