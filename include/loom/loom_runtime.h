/* Loom's runtime API: load a compiled model (`model.loom`, written by
 * `loom compile`), bind inputs, run, read outputs. No compiler inside: this
 * header uses only DLPack and loom_status.
 *
 *   loom_model *m;
 *   char err[1024];
 *   loom_model_options opt = {.num_threads = 0};
 *   if (loom_model_load("model.loom", &opt, &m, err, sizeof err)) { puts(err); ... }
 *   loom_model_set_input(m, 0, &x);            // copies x (checked: dtype, shape)
 *                                              // (loom_model_bind_input: no copy)
 *   loom_model_run(m);
 *   DLTensor y;
 *   loom_model_get_output(m, 0, &y);           // a view, valid until the next run
 *   loom_model_free(m);
 *
 * Errors: every call returns a loom_status; after a failure other than in
 * loom_model_load, loom_model_error(m) says what was wrong, naming the input,
 * kernel or file and what was expected. Nothing aborts on bad input.
 * A model is not thread-safe: one run at a time (its kernels use the model's
 * own thread pool). */
#ifndef LOOM_RUNTIME_API_H
#define LOOM_RUNTIME_API_H

#include "loom/loom_status.h"

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_model loom_model;

typedef struct loom_model_options {
  /* Threads for parallel loops, the caller included. <= 0: $LOOM_NUM_THREADS,
   * else the number of online CPUs. */
  int32_t num_threads;
} loom_model_options;

/* Loads and validates an artifact (format version, the CRC-32 of its header
 * and of every section, Loom version, target vs this CPU, every offset, the
 * metadata schema) and allocates its arena; nothing of a damaged file is
 * used. opt may be NULL. On failure *out is NULL and errbuf (may be NULL)
 * holds the message: LOOM_ERR_IO (unreadable), LOOM_ERR_PARSE (corrupt or
 * damaged, naming the section), LOOM_ERR_UNSUPPORTED (another version or
 * target), LOOM_ERR_INVALID_ARG. */
loom_status loom_model_load(const char *path, const loom_model_options *opt, loom_model **out, char *errbuf,
                            size_t errlen);
/* NULL is allowed. Output views die with the model. */
void loom_model_free(loom_model *m);
/* The message of the last failed call on m ("" when none). */
const char *loom_model_error(const loom_model *m);

/* A graph input or output. Pointers are valid while the model lives. */
typedef struct loom_tensor_info {
  const char *name;
  DLDataType dtype;
  int32_t ndim;
  const int64_t *shape;
  /* Outputs whose extents depend on the data (NonZero, Unique, ...): shape
   * is an upper bound; loom_model_get_output gives the real shape of the
   * last run (the data is compact row-major for it). */
  bool dynamic;
} loom_tensor_info;

int32_t loom_model_num_inputs(const loom_model *m);
int32_t loom_model_num_outputs(const loom_model *m);
/* LOOM_ERR_INVALID_ARG for an index out of range. */
loom_status loom_model_input_info(const loom_model *m, int32_t index, loom_tensor_info *out);
loom_status loom_model_output_info(const loom_model *m, int32_t index, loom_tensor_info *out);
/* Index of the input/output with that name, or -1. */
int32_t loom_model_input_index(const loom_model *m, const char *name);
int32_t loom_model_output_index(const loom_model *m, const char *name);
int32_t loom_model_num_threads(const loom_model *m);
/* The ISA the artifact's kernels were built for, as it records it
 * ("x86_64-avx2-fma", "x86_64" for the SSE2 baseline, ...). */
const char *loom_model_target(const loom_model *m);

/* Copies t into the model's input buffer. t must be a CPU tensor with the
 * input's dtype and shape, compact row-major (strides NULL or compact).
 * LOOM_ERR_INVALID_ARG naming the input and what was expected otherwise. */
loom_status loom_model_set_input(loom_model *m, int32_t index, const DLTensor *t);
loom_status loom_model_set_input_by_name(loom_model *m, const char *name, const DLTensor *t);

/* Zero-copy binding. bind_input makes the kernels read input `index`
 * straight from t's memory (no copy) until the input is set, bound again or
 * unbound (t NULL: back to the model's buffer, and the input must be set
 * again before a run). The memory must stay valid and unchanged during every
 * run that reads it; kernels never write inputs. bind_output makes the runs
 * write output `index` into t's memory (and loom_model_get_output view it)
 * until it is unbound (t NULL: back to the model's buffer). t: as for
 * loom_model_set_input (a dynamic output: its upper-bound shape), with data
 * + byte_offset 64-byte aligned (the kernels' vector code needs it), and not
 * overlapping a bound input / output. LOOM_ERR_INVALID_ARG naming the
 * tensor otherwise. */
loom_status loom_model_bind_input(loom_model *m, int32_t index, const DLTensor *t);
loom_status loom_model_bind_output(loom_model *m, int32_t index, const DLTensor *t);

/* Runs every kernel in plan order. LOOM_ERR_INVALID_ARG when an input was
 * never set (naming it); LOOM_ERR_RUNTIME naming the kernel when one fails. */
loom_status loom_model_run(loom_model *m);

/* A view of output `index` (data owned by the model, or the caller's memory
 * bound to it; valid until the next run or free). A dynamic output's shape is the one the last successful run
 * computed (checked against the upper bound), compact row-major. */
loom_status loom_model_get_output(loom_model *m, int32_t index, DLTensor *out);

/* ---- profiling: time per plan step (one fused kernel), summed over runs ---- */
void loom_model_set_profiling(loom_model *m, bool enable);
void loom_model_profile_reset(loom_model *m);
typedef struct loom_profile_entry {
  const char *kernel;       /* the kernel's symbol */
  int32_t num_nodes;
  const char *const *nodes; /* the ONNX nodes fused into it */
  int64_t calls;            /* profiled runs */
  double total_ms;
  /* Floating-point operations of one call, counted by the compiler on the
   * kernel's compute definition (src/tir/flops.h: a multiply-add reduction
   * update is 2 per point, an elementwise op 1 per output element; copies
   * and layout transforms 0). 0 when the artifact does not say. GFLOP/s =
   * flops * calls / (total_ms * 1e6). */
  uint64_t flops;
  /* NULL for Loom's own kernels; for an external one, the BYOC back end
   * that generated it ("cblas"). */
  const char *backend;
} loom_profile_entry;

/* One entry per plan step, in call order. */
int32_t loom_model_profile_count(const loom_model *m);
loom_status loom_model_profile_entry(const loom_model *m, int32_t index, loom_profile_entry *out);

/* The Loom release of this runtime ("0.1.0"). */
const char *loom_runtime_version(void);

#ifdef __cplusplus
}
#endif

#endif
