/* The model's run entry, generated into the same C source as its kernels:
 * one function (loom_run_fn, include/loom/loom_kernel.h) that checks the graph
 * inputs and outputs, then calls every kernel of the plan in order with
 * DLTensors built from static shapes and base + offset data pointers. The
 * runtime then runs a model with one call instead of interpreting the plan;
 * both use the same kernels, arguments and order, so results are
 * bit-identical. Everything hard-coded here is covered by
 * artifact_run_hash, baked in as NAME_plan_hash for the loader to check. */
#include "compile/compile.h"
#include "support/alloc.h"
#include "support/oom.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Shapes as static arrays, shared between arguments with the same shape. */
typedef struct ShapeTable {
  StrBuf *out;
  const char *prefix;
  char **keys; /* "2,8" per emitted array */
  int n, cap;
} ShapeTable;

static int shape_id(ShapeTable *st, int32_t ndim, const int64_t *shape) {
  StrBuf key;
  sb_init(&key);
  for (int32_t d = 0; d < ndim; d++) sb_printf(&key, "%s%" PRId64, d ? ", " : "", shape[d]);
  if (ndim == 0) sb_puts(&key, "0"); /* scalar: a valid pointer, never read */
  for (int i = 0; i < st->n; i++)
    if (!strcmp(st->keys[i], sb_cstr(&key))) {
      sb_free(&key);
      return i;
    }
  if (st->n == st->cap) {
    st->cap = st->cap ? st->cap * 2 : 16;
    char **nk = loom_realloc(st->keys, (size_t)st->cap * sizeof *nk);
    if (!nk) oom_raise("the table of %d shape keys", st->cap);
    st->keys = nk;
  }
  /* const: an exported object keeps no writable data (all a run writes is
   * caller memory); DLTensor.shape is not const, but kernels only read it. */
  sb_printf(st->out, "static const int64_t %s_shape_%d[] = {%s};\n", st->prefix, st->n, sb_cstr(&key));
  st->keys[st->n] = sb_take(&key);
  return st->n++;
}

static void shape_table_free(ShapeTable *st) {
  for (int i = 0; i < st->n; i++) loom_free(st->keys[i]);
  loom_free(st->keys);
}

void compile_emit_tensor_check(StrBuf *o, const char *name) {
  sb_printf(o,
            "static int32_t %s_check(const DLTensor *t, int32_t i, uint8_t code, uint8_t bits, int32_t ndim,\n"
            "    const int64_t *shape) {\n"
            "  if (!t || !t->data || (t->ndim > 0 && !t->shape)) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NULL, i);\n"
            "  if (t->device.device_type != kDLCPU) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_DEVICE, i);\n"
            "  if (t->dtype.code != code || t->dtype.bits != bits || t->dtype.lanes != 1)\n"
            "    return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_DTYPE, i);\n"
            "  if (t->ndim != ndim) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NDIM, i);\n"
            "  int64_t stride = 1;\n"
            "  for (int32_t d = ndim - 1; d >= 0; d--) {\n"
            "    if (t->shape[d] != shape[d]) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_SHAPE, i);\n"
            "    if (t->strides && shape[d] != 1 && t->strides[d] != stride)\n"
            "      return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_STRIDES, i);\n"
            "    stride *= shape[d];\n"
            "  }\n"
            "  return 0;\n"
            "}\n",
            name);
}

static loom_status check_spec(const ArtifactSpec *s, LoomError *err) {
  if (!s->run_entry || !*s->run_entry)
    return err_set(err, LOOM_ERR_INVALID_ARG, "run entry: the spec names no run_entry symbol");
  if (s->num_weights > 0 && !s->run_entry_weight_offsets)
    return err_set(err, LOOM_ERR_INVALID_ARG, "run entry \"%s\": no weight offsets", s->run_entry);
  for (int32_t c = 0; c < s->num_calls; c++) {
    const ArtifactCall *call = &s->calls[c];
    if (call->kernel < 0 || call->kernel >= s->num_kernels)
      return err_set(err, LOOM_ERR_INVALID_ARG, "run entry \"%s\": plan step %d calls kernel %d of %d", s->run_entry,
                     (int)c, (int)call->kernel, (int)s->num_kernels);
    for (int32_t j = 0; j < call->num_args; j++) {
      DLDataType dt;
      int32_t nd;
      const int64_t *sh;
      if (!artifact_arg_tensor(s, &call->args[j], &dt, &nd, &sh) || (nd > 0 && !sh))
        return err_set(err, LOOM_ERR_INVALID_ARG, "run entry \"%s\": plan step %d argument %d: %s %d does not exist",
                       s->run_entry, (int)c, (int)j, artifact_arg_kind_name(call->args[j].kind),
                       (int)call->args[j].index);
    }
  }
  return LOOM_OK;
}

/* The data pointer expression of one kernel argument. */
static void emit_data(StrBuf *o, const ArtifactSpec *s, const ArtifactArg *a) {
  switch (a->kind) {
    case ARTIFACT_ARG_INPUT: sb_printf(o, "in[%d]", (int)a->index); break;
    case ARTIFACT_ARG_OUTPUT: sb_printf(o, "out[%d]", (int)a->index); break;
    case ARTIFACT_ARG_WEIGHT: sb_printf(o, "w + %" PRIu64, s->run_entry_weight_offsets[a->index]); break;
    case ARTIFACT_ARG_ARENA: sb_printf(o, "ar + %" PRIu64, a->offset); break;
    /* a dynamic output's shape array: the kernel writes the real extents there */
    case ARTIFACT_ARG_OUTPUT_SHAPE: sb_printf(o, "(char *)outputs[%d]->shape", (int)a->index); break;
  }
}

/* Graph inputs and outputs: checked, then their data pointers. */
static void emit_io(StrBuf *o, const ArtifactSpec *s, ShapeTable *shapes) {
  int32_t ni = s->num_inputs, no = s->num_outputs;
  if (ni > 0) sb_puts(o, "  if (!inputs) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NULL, 0);\n");
  if (no > 0) sb_printf(o, "  if (!outputs) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NULL, %d);\n", (int)ni);
  for (int32_t i = 0; i < ni + no; i++) {
    const ArtifactTensor *t = i < ni ? &s->inputs[i] : &s->outputs[i - ni];
    int sid = shape_id(shapes, t->ndim, t->shape);
    sb_printf(o, "  if ((rc = %s_check(%s[%d], %d, %u, %u, %d, %s_shape_%d))) return rc;\n", s->run_entry,
              i < ni ? "inputs" : "outputs", (int)(i < ni ? i : i - ni), (int)i, t->dtype.code, t->dtype.bits,
              (int)t->ndim, s->run_entry, sid);
  }
  int32_t base = ni + no;
  if (s->num_weights > 0)
    sb_printf(o, "  if (!weights) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NULL, %d);\n", (int)base);
  if (s->arena_bytes > 0)
    sb_printf(o, "  if (!arena) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NULL, %d);\n", (int)base + 1);
  sb_printf(o, "  if (!env) return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_NULL, %d);\n", (int)base + 2);
  for (int k = 0; k < 2; k++) {
    int32_t n = k ? no : ni;
    if (n == 0) continue;
    sb_printf(o, "  char *const %s[%d] = {", k ? "out" : "in", (int)n);
    for (int32_t i = 0; i < n; i++)
      sb_printf(o, "%s(char *)%s[%d]->data + %s[%d]->byte_offset", i ? ", " : "", k ? "outputs" : "inputs", (int)i,
                k ? "outputs" : "inputs", (int)i);
    sb_puts(o, "};\n");
  }
  sb_puts(o,
          "  char *const w = (char *)(uintptr_t)weights;\n"
          "  char *const ar = (char *)arena;\n"
          "  (void)w;\n  (void)ar;\n");
}

loom_status compile_run_entry_source(const ArtifactSpec *s, StrBuf *out, LoomError *err) {
  loom_status st = check_spec(s, err);
  if (st) return st;
  const char *name = s->run_entry;
  uint64_t hash = artifact_run_hash(s, s->run_entry_weight_offsets);
  StrBuf body;
  sb_init(&body);
  ShapeTable shapes = {.out = out, .prefix = name};
  sb_printf(out,
            "\n/* ---- run entry (src/compile/run_entry.c; ABI: loom_run_fn in loom/loom_kernel.h) ---- */\n"
            "const uint64_t %s_plan_hash = 0x%016" PRIx64 "ULL;\n"
            "const int32_t %s_num_steps = %d;\n",
            name, hash, name, (int)s->num_calls);
  compile_emit_tensor_check(out, name);

  sb_printf(&body,
            "int32_t %s(DLTensor *const *inputs, DLTensor *const *outputs, const void *weights, void *arena,\n"
            "    const loom_kernel_env *env, int32_t *failed_step) {\n"
            "  int32_t rc;\n"
            "  if (failed_step) *failed_step = -1;\n",
            name);
  emit_io(&body, s, &shapes);
  for (int32_t c = 0; c < s->num_calls; c++) {
    const ArtifactCall *call = &s->calls[c];
    const char *kname = s->kernels[call->kernel].name;
    int32_t na = call->num_args;
    sb_printf(&body, "  { /* step %d */\n", (int)c);
    if (na > 0) {
      sb_printf(&body, "    DLTensor t[%d] = {\n", (int)na);
      for (int32_t j = 0; j < na; j++) {
        const ArtifactArg *a = &call->args[j];
        DLDataType dt;
        int32_t nd;
        const int64_t *sh;
        artifact_arg_tensor(s, a, &dt, &nd, &sh);
        int sid = shape_id(&shapes, nd, sh);
        sb_puts(&body, "      {.data = ");
        emit_data(&body, s, a);
        sb_printf(&body,
                  ", .device = {kDLCPU, 0}, .ndim = %d, .dtype = {%u, %u, %u}, .shape = (int64_t *)%s_shape_%d},\n",
                  (int)nd, dt.code, dt.bits, dt.lanes, name, sid);
      }
      sb_printf(&body, "    };\n    DLTensor *p[%d] = {", (int)na);
      for (int32_t j = 0; j < na; j++) sb_printf(&body, "%s&t[%d]", j ? ", " : "", (int)j);
      sb_puts(&body, "};\n");
    } else {
      sb_puts(&body, "    DLTensor **p = NULL;\n");
    }
    sb_printf(&body,
              "    if ((rc = %s(p, %d, env))) {\n"
              "      if (failed_step) *failed_step = %d;\n"
              "      return rc;\n"
              "    }\n"
              "  }\n",
              kname, (int)na, (int)c);
  }
  sb_puts(&body, "  return 0;\n}\n");
  sb_puts(out, sb_cstr(&body));
  sb_free(&body);
  shape_table_free(&shapes);
  return LOOM_OK;
}
