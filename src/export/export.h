/* loom export-c: a model as a dependency-free C project (docs/export.md).
 *
 *   compile_model_parts (the compiler up to scheduled kernels and the
 *   artifact plan) -> lower + C for each kernel, renamed PREFIX_k<i>_<op> ->
 *   PREFIX.h (the API), PREFIX.c (kernels, run entry, PREFIX_run),
 *   PREFIX_weights.c (const arrays), Makefile, CMakeLists.txt,
 *   example_main.c -> written into a temporary sibling of the output
 *   directory, renamed into place only when complete.
 *
 * The generated code uses libc/libm only, never allocates and keeps no
 * mutable global state: the caller passes a workspace of
 * PREFIX_WORKSPACE_BYTES (the memory plan's arena plus kernel scratch). */
#ifndef LOOM_EXPORT_EXPORT_H
#define LOOM_EXPORT_EXPORT_H

#include "compile/compile.h"
#include "support/error.h"
#include "support/strbuf.h"

#include <stdbool.h>

typedef struct ExportOptions {
  const char *out_dir;     /* the project directory to create */
  const char *target;      /* NULL: "generic" */
  const char *target_options;
  const char *records;     /* NULL, or a tuning records database */
  const char *name;        /* NULL: "model"; a C identifier */
  const char *weights;     /* NULL or "embed"; "file" is not implemented yet */
  int threads;             /* 0 or 1; more is not implemented yet */
  bool force;              /* replace an existing non-empty out_dir */
} ExportOptions;

/* Exports onnx_path per opt. Errors (LOOM_ERR_INVALID_ARG or
 * LOOM_ERR_UNSUPPORTED, the message naming the argument): an unknown
 * target, a name that is not a C identifier, --weights other than embed,
 * --threads > 1, a model with data-dependent output shapes, an output
 * directory that exists and is not empty (without force) or cannot be
 * created; plus whatever compiling the model reports. Nothing is left
 * behind on error. */
loom_status export_c_project(const char *onnx_path, const ExportOptions *opt, LoomError *err);

/* ---- the files, each into a StrBuf (export_api.c, export_files.c) ---- */

/* One graph input or output as the project sees it. */
typedef struct ExportTensor {
  const char *name;    /* the ONNX name */
  char field[64];      /* its C identifier in PREFIX_inputs/PREFIX_outputs */
  const char *ctype;   /* "float", "int64_t", ... */
  const char *dtype;   /* "float32", "int64", ... */
  const char *npy;     /* the .npy descr: "<f4", "|u1", ... */
  int32_t ndim;
  const int64_t *shape;
  uint64_t numel;
  DLDataType dl;
} ExportTensor;

typedef struct ExportModel {
  const char *prefix;         /* functions and types: PREFIX_run, PREFIX_inputs */
  char upper[64];             /* macros and status codes: PREFIX_WORKSPACE_BYTES, PREFIX_OK */
  const char *model_path;
  const char *target;
  const ArtifactSpec *spec;   /* kernels renamed PREFIX_k<i>_<op>, run_entry PREFIX_entry */
  ExportTensor *inputs, *outputs;
  uint64_t arena_bytes;       /* rounded up to 64 */
  uint64_t scratch_bytes;     /* the largest kernel workspace */
  uint64_t weights_bytes;     /* the blob (artifact_weight_layout) */
  const char *cflags;         /* the target's C flags for the Makefile, "" for none */
  const char *cross_cc;       /* the cross compiler of another ISA's target, else NULL */
} ExportModel;

/* The model's tensors as the project sees them; LOOM_ERR_UNSUPPORTED naming
 * the tensor for a dtype the project cannot express. */
loom_status export_tensor_of(const ArtifactTensor *t, ExportTensor *out, LoomError *err);
void export_header(const ExportModel *m, StrBuf *out);
/* The part of PREFIX.c after the kernels and the run entry: status strings
 * and PREFIX_run. */
void export_run_source(const ExportModel *m, StrBuf *out);
/* PREFIX_weights.c: the blob as one 64-byte aligned const array. */
void export_weights_source(const ExportModel *m, StrBuf *out);
void export_makefile(const ExportModel *m, StrBuf *out);
void export_cmakelists(const ExportModel *m, StrBuf *out);
void export_example_main(const ExportModel *m, StrBuf *out);
/* For kernels scheduled for a local memory: the DMA hooks they call, as
 * PREFIX_dma_* with memcpy defaults (export_dma.c); nothing otherwise. */
void export_dma_source(const ExportModel *m, const CompileModelParts *parts, StrBuf *out);

#endif
