/* The project's API and data files: PREFIX.h, the tail of PREFIX.c
 * (status strings, PREFIX_run) and PREFIX_weights.c. PREFIX_run wraps the
 * generated run entry (compile/run_entry.c): it builds the DLTensors of the
 * graph inputs/outputs on its stack from plain pointers and static shapes,
 * so nothing but the caller's workspace is written outside the outputs. */
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
 * a caller can cause; any other kernel refusal is a bug in Loom: INTERNAL. */
static const struct {
  const char *name;
  int value;
  const char *message;
} k_status[] = {
    {"OK", 0, "ok"},
    {"ERR_NULL", 2, "a NULL inputs, outputs or workspace pointer, or a NULL tensor pointer in them"},
    {"ERR_ALIGN", 8, "misaligned data: tensors need their element alignment (some kernels 64 bytes), "
                     "the workspace 64 bytes"},
    {"ERR_WORKSPACE", 9, "the workspace is missing or misaligned"},
    {"ERR_INTERNAL", 255, "a kernel refused its arguments (a bug in Loom: please report it)"},
};
enum { NUM_STATUS = sizeof k_status / sizeof k_status[0] };

static void tensor_macros(StrBuf *o, const char *P, const char *kind, int i, const ExportTensor *t) {
  sb_printf(o, "/* %s %d: \"%s\" */\n", kind, i, t->name);
  sb_printf(o, "#define %s_%s_%d_NAME \"%s\"\n", P, kind, i, t->name);
  sb_printf(o, "#define %s_%s_%d_DTYPE \"%s\"\n", P, kind, i, t->dtype);
  sb_printf(o, "#define %s_%s_%d_NDIM %d\n", P, kind, i, (int)t->ndim);
  sb_printf(o, "#define %s_%s_%d_SHAPE {", P, kind, i);
  shape_list(o, t);
  sb_printf(o, "}\n#define %s_%s_%d_NUMEL %" PRIu64 "\n", P, kind, i, t->numel);
}

void export_header(const ExportModel *m, StrBuf *o) {
  const char *P = m->prefix, *U = m->upper;
  const ArtifactSpec *s = m->spec;
  sb_printf(o,
            "/* %s: %s compiled by Loom %s (loom export-c, target %s).\n"
            " *\n"
            " * int %s_run(const %s_inputs *in, %s_outputs *out, void *workspace)\n"
            " * runs the model once. in/out hold one pointer per graph input/output\n"
            " * (row-major, dtype and shape below; outputs must not overlap inputs).\n"
            " * workspace: %s_WORKSPACE_BYTES bytes, 64-byte aligned, owned by the\n"
            " * caller and used only during the call (its content need not survive).\n"
            " * Returns %s_OK or a %s_status (%s_status_string says what it means).\n"
            " * The code never allocates and has no mutable global state: calls with\n"
            " * separate workspaces may run concurrently. Single-threaded. */\n"
            "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
            "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
            P, m->model_path, LOOM_VERSION_STRING, m->target, P, P, P, U, U, P, P, U, U);
  sb_printf(o, "#define %s_WORKSPACE_BYTES %" PRIu64 "\n#define %s_WORKSPACE_ALIGN 64\n", U,
            m->arena_bytes + m->scratch_bytes > 0 ? m->arena_bytes + m->scratch_bytes : 64, U);
  sb_printf(o, "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n\n", U, (int)s->num_inputs, U,
            (int)s->num_outputs);
  for (int32_t i = 0; i < s->num_inputs; i++) tensor_macros(o, U, "INPUT", i, &m->inputs[i]);
  for (int32_t i = 0; i < s->num_outputs; i++) tensor_macros(o, U, "OUTPUT", i, &m->outputs[i]);
  for (int k = 0; k < 2; k++) {
    int32_t n = k ? s->num_outputs : s->num_inputs;
    const ExportTensor *ts = k ? m->outputs : m->inputs;
    sb_printf(o, "\ntypedef struct %s_%s {\n", P, k ? "outputs" : "inputs");
    for (int32_t i = 0; i < n; i++)
      sb_printf(o, "  %s%s *%s; /* \"%s\" */\n", k ? "" : "const ", ts[i].ctype, ts[i].field, ts[i].name);
    if (n == 0) sb_puts(o, "  int unused; /* the model has none */\n");
    sb_printf(o, "} %s_%s;\n", P, k ? "outputs" : "inputs");
  }
  sb_printf(o, "\ntypedef enum %s_status {\n", P);
  for (int i = 0; i < NUM_STATUS; i++)
    sb_printf(o, "  %s_%s = %d, /* %s */\n", U, k_status[i].name, k_status[i].value, k_status[i].message);
  sb_printf(o,
            "} %s_status;\n\n"
            "/* A static string for a %s_run result (\"unknown status\" for others). */\n"
            "const char *%s_status_string(int status);\n\n"
            "int %s_run(const %s_inputs *in, %s_outputs *out, void *workspace);\n\n"
            "#ifdef __cplusplus\n}\n#endif\n\n#endif\n",
            P, P, P, P, P, P);
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

void export_run_source(const ExportModel *m, StrBuf *o) {
  const char *P = m->prefix, *U = m->upper;
  const ArtifactSpec *s = m->spec;
  sb_printf(o, "\n/* ---- the API (%s.h) ---- */\n\nconst char *%s_status_string(int status) {\n  switch (status) {\n",
            P, P);
  for (int i = 0; i < NUM_STATUS; i++)
    sb_printf(o, "    case %s_%s: return \"%s\";\n", U, k_status[i].name, k_status[i].message);
  sb_puts(o, "    default: return \"unknown status\";\n  }\n}\n\n");
  sb_printf(o,
            "extern const unsigned char %s_weights[];\n\n"
            "int %s_run(const %s_inputs *in, %s_outputs *out, void *workspace) {\n"
            "  if (!in || !out || !workspace) return %s_ERR_NULL;\n"
            "  if ((uintptr_t)workspace %% 64 != 0) return %s_ERR_ALIGN;\n",
            P, P, P, P, U, U);
  for (int32_t i = 0; i < s->num_inputs; i++) tensor_init(o, "tin", "in", i, &m->inputs[i]);
  for (int32_t i = 0; i < s->num_outputs; i++) tensor_init(o, "tout", "out", i, &m->outputs[i]);
  tensor_array(o, "tin", s->num_inputs);
  tensor_array(o, "tout", s->num_outputs);
  sb_printf(o,
            "  /* The workspace: the memory plan's arena, then the kernels' scratch. */\n"
            "  LoomKernelEnv env = {NULL, NULL, 1, (char *)workspace + %" PRIu64 ", %" PRIu64 "};\n"
            "  int32_t rc = %s(tin, tout, %s_weights, workspace, &env, NULL);\n"
            "  switch (LOOM_KERNEL_ERR_KIND(rc)) {\n"
            "    case LOOM_KERNEL_OK: return %s_OK;\n"
            "    case LOOM_KERNEL_ERR_NULL: return %s_ERR_NULL;\n"
            "    case LOOM_KERNEL_ERR_ALIGN: return %s_ERR_ALIGN;\n"
            "    case LOOM_KERNEL_ERR_WORKSPACE: return %s_ERR_WORKSPACE;\n"
            "    default: return %s_ERR_INTERNAL;\n"
            "  }\n}\n",
            m->arena_bytes, m->scratch_bytes, s->run_entry, P, U, U, U, U, U);
}

void export_weights_source(const ExportModel *m, StrBuf *o) {
  const ArtifactSpec *s = m->spec;
  const char *P = m->prefix;
  sb_printf(o,
            "/* %s's weights (Loom export-c): one blob, each tensor at a 64-byte aligned\n"
            " * offset, little-endian, in the order the run entry of %s.c reads them. */\n"
            "const unsigned char %s_weights[%" PRIu64 "] __attribute__((aligned(64))) = {\n",
            P, P, P, m->weights_bytes > 0 ? m->weights_bytes : 1);
  uint64_t at = 0;
  for (int32_t w = 0; w < s->num_weights; w++) {
    const ArtifactWeight *aw = &s->weights[w];
    uint64_t off = s->run_entry_weight_offsets[w];
    uint64_t bytes = aw->t.dtype.bits / 8u;
    for (int32_t d = 0; d < aw->t.ndim; d++) bytes *= (uint64_t)aw->t.shape[d];
    sb_printf(o, "  /* %s */\n", aw->t.name);
    for (; at < off; at++) sb_puts(o, at % 32 == 31 ? "0,\n" : "0,");
    const unsigned char *d = aw->data;
    for (uint64_t b = 0; b < bytes; b++, at++) sb_printf(o, "%u,%s", d[b], at % 32 == 31 ? "\n" : "");
    sb_puts(o, "\n");
  }
  if (at == 0) sb_puts(o, "  0\n");
  sb_puts(o, "};\n");
}
