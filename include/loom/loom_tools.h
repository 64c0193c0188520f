/* What the `loom` command's tune, export-c and run --profile do, as
 * functions for bindings (the Python package, python/loom) and programs
 * that embed the compiler. Each is defined in its own layer: loom_tune_onnx
 * in src/tune, loom_export_c in src/export, loom_peak_gflops_per_core in
 * src/target. On failure a function returns the status and writes a message
 * naming the file, option or node at fault into errbuf (no "loom: error:"
 * prefix), as loom_compile_onnx does. */
#ifndef LOOM_TOOLS_H
#define LOOM_TOOLS_H

#include "loom/loom_compile.h"
#include "loom/loom_status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `loom tune`: searches the schedules of the model's kernels and keeps
 * every measurement in the records database (created when missing;
 * resumed when there). opt: target, target options and opt level (NULL:
 * the defaults). trials: candidates to measure in all (0: 64 per task);
 * seconds: stop after this long (0: no limit); threads: the thread count
 * to tune for (0: the compiler's default); seed: the search's PRNG. On
 * success the out parameters (each may be NULL) get the candidates measured
 * and failed in this call, and the model's kernel time (estimate, ms) at the
 * default schedules and at the best ones found. Errors are the machinery's
 * (the model does not compile, the records file is refused, the measurer
 * cannot start): LOOM_ERR_INVALID_ARG for a missing path or a negative
 * budget. */
loom_status loom_tune_onnx(const char *onnx_path, const char *records, const loom_compile_options *opt, int trials,
                           double seconds, int threads, uint64_t seed, int *measured, int *failed,
                           double *model_ms_default, double *model_ms_tuned, char *errbuf, size_t errlen);

/* `loom export-c`: the model as a dependency-free C project in out_dir
 * (docs/export.md). target (NULL: "generic"), target_options, name (NULL:
 * "model"), records, weights ("embed", "file", or NULL: by size) may be
 * NULL; threads 0 or 1: single-threaded, up to 1024: a pthread pool; bench
 * adds PREFIX_bench.c; force replaces an existing non-empty out_dir.
 * inputs (NULL, or num_inputs values; read during the call only):
 * specializes the model to them as loom_compile_options.inputs does (`loom
 * export-c --input`): each fixes its input's shape, and an input whose
 * value decides a shape or what runs is compiled in and is not among the
 * project's inputs. An unknown input name, or a dtype or rank the model
 * contradicts, is LOOM_ERR_INVALID_ARG naming the input. Nothing is left
 * at out_dir on failure. */
loom_status loom_export_c(const char *onnx_path, const char *out_dir, const char *target, const char *target_options,
                          const char *name, const char *records, const char *weights, int threads, bool bench,
                          bool force, const loom_input_value *inputs, int num_inputs, char *errbuf, size_t errlen);

/* The fp32 peak of one core of this machine in GFLOP/s, for kernels built
 * for artifact_target (loom_model_target's string; NULL: the host's widest
 * vectors), as `loom run --profile` rates kernels: times the thread count
 * it is the 100% of the profile. 0 when the clock is unknown. */
double loom_peak_gflops_per_core(const char *artifact_target);

#ifdef __cplusplus
}
#endif

#endif
