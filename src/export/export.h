/* loom export-c: a model as a dependency-free C project (docs/export.md).
 *
 *   compile_model_parts (the compiler up to scheduled kernels and the
 *   artifact plan, for --threads cores) -> lower + C for each kernel,
 *   renamed PREFIX_k<i>_<op> -> PREFIX.h (the API), PREFIX.c (kernels, run
 *   entry, PREFIX_run; the weights loader or the thread pool when asked),
 *   PREFIX_weights.c (embedded) or PREFIX.weights (a file), Makefile,
 *   CMakeLists.txt, example_main.c, PREFIX_bench.c (--bench) -> written into
 *   a temporary sibling of the output directory, renamed into place only
 *   when complete.
 *
 * The generated code uses libc/libm only (and pthreads with --threads > 1),
 * never allocates and keeps no mutable global state: the caller passes a
 * workspace of PREFIX_WORKSPACE_BYTES (the memory plan's arena plus kernel
 * scratch), and with threads a PREFIX_context it owns. */
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
  const char *weights;     /* "embed", "file", or NULL: embed up to EXPORT_EMBED_MAX_BYTES, else file */
  int threads;             /* 0 or 1: single-threaded; 2..EXPORT_MAX_THREADS: a pthread pool */
  bool bench;              /* also write PREFIX_bench.c */
  bool force;              /* replace an existing non-empty out_dir */
  /* Values to specialize the model to, as `loom run MODEL.onnx --input`
   * does (compile/specialize.c): each fixes its input's shape, and an input
   * whose value decides a shape or what runs is compiled in and leaves
   * PREFIX_inputs. input_files (NULL, or one per input, each may be NULL)
   * names where each value came from, for PREFIX.h and error messages. */
  const loom_input_value *inputs;
  const char *const *input_files;
  int num_inputs;
} ExportOptions;

/* The default --weights: embedded up to 4 MiB of weights, a file above.
 * Measured with gcc 12 -O2 on a const array of 64-bit words: 4 MiB
 * compiles in ~9 s and 145 MB, 16 MiB in ~90 s and 490 MB (the time grows
 * faster than the size), so past a few MiB the build of the weights, not
 * of the model, dominates; a file costs nothing to build. */
enum { EXPORT_EMBED_MAX_BYTES = 4 << 20, EXPORT_MAX_THREADS = 1024 };

/* Exports onnx_path per opt. Errors (LOOM_ERR_INVALID_ARG or
 * LOOM_ERR_UNSUPPORTED, the message naming the argument): an unknown
 * target, a name that is not a C identifier, --weights other than embed or
 * file, --threads outside 1..EXPORT_MAX_THREADS or a --target-opt cores=
 * that contradicts it, an input value the model has no input for or whose
 * dtype or rank contradicts it, an output directory that exists and is
 * not empty (without force) or cannot be created; plus whatever compiling
 * the model reports (a data-dependent output shape feeding another op).
 * Nothing is left behind on error. */
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
  bool dynamic;        /* an output with a data-dependent shape (graph/graph_dynamic.h): shape and
                        * numel are its upper bound, the run writes the real shape into
                        * PREFIX_outputs' FIELD_shape */
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
  bool weights_file;          /* PREFIX.weights and PREFIX_weights_bind, not PREFIX_weights.c */
  int threads;                /* 1, or the worker pool's threads (the caller's included) */
  bool bench;                 /* PREFIX_bench.c and its Makefile/CMake targets */
  uint64_t weights_layout;    /* FNV-1a 64 of the weights file's table (export_weights.c) */
  const ExportOptions *options; /* the inputs given (bound or not) for PREFIX.h's comment */
  const bool *compiled_in;    /* per options->inputs: its value was compiled in */
} ExportModel;

/* The model's tensors as the project sees them; LOOM_ERR_UNSUPPORTED naming
 * the tensor for a dtype the project cannot express. */
loom_status export_tensor_of(const ArtifactTensor *t, ExportTensor *out, LoomError *err);
void export_header(const ExportModel *m, StrBuf *out);
/* The part of PREFIX.c after the kernels and the run entry: status strings
 * and PREFIX_run. */
void export_run_source(const ExportModel *m, StrBuf *out);
void export_makefile(const ExportModel *m, StrBuf *out);
void export_cmakelists(const ExportModel *m, StrBuf *out);
void export_example_main(const ExportModel *m, StrBuf *out);
/* For kernels scheduled for a local memory: the DMA hooks they call, as
 * PREFIX_dma_* with memcpy defaults (export_dma.c); nothing otherwise. */
void export_dma_source(const ExportModel *m, const CompileModelParts *parts, StrBuf *out);

/* ---- export_weights.c: the weights, embedded or as a file ---- */
/* PREFIX_weights.c: the blob as one 64-byte aligned array of 64-bit words. */
void export_weights_source(const ExportModel *m, StrBuf *out);
/* PREFIX.weights (docs/export.md "The weights file"), binary. */
void export_weights_file(const ExportModel *m, StrBuf *out);
/* The weights file's layout hash of m, without writing the file. */
uint64_t export_weights_layout(const ExportModel *m);
/* The declarations of PREFIX.h's weights part, and PREFIX_weights_bind in PREFIX.c. */
void export_weights_api(const ExportModel *m, StrBuf *out);
void export_weights_loader(const ExportModel *m, StrBuf *out);
/* read_weights(path, &size) for the example and the bench (they may allocate). */
void export_read_weights_function(const ExportModel *m, StrBuf *out);

/* ---- export_threads.c: the worker pool of --threads N ---- */
void export_threads_api(const ExportModel *m, StrBuf *out);   /* PREFIX.h: PREFIX_context, init, destroy */
void export_threads_source(const ExportModel *m, StrBuf *out); /* PREFIX.c: the pool and PREFIX_parallel_for */
void export_threads_feature_macros(const ExportModel *m, StrBuf *out); /* PREFIX.c's first lines: POSIX for the pool */

/* ---- export_bench.c: PREFIX_bench.c (--bench) ---- */
void export_bench(const ExportModel *m, StrBuf *out);

#endif
