/* The compiler entry points the `loom` command calls for `loom compile` and
 * `loom inspect MODEL.onnx`, defined by the graph compiler
 * (src/compile/compile_model.c, library loom_compile). The runtime header
 * loom_runtime.h does not need them: a deployed model runs without them. */
#ifndef LOOM_COMPILE_H
#define LOOM_COMPILE_H

#include "loom/loom_status.h"

#include <dlpack/dlpack.h>

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A concrete tensor for one graph input, to specialize the model to it
 * (src/compile/specialize.c). The compiler takes the tensor's shape for the
 * input (the model's may be symbolic), and where the model's shapes depend
 * on the input's VALUE (Reshape's shape, Slice's starts, Resize's sizes, a
 * reduction's axes...) it compiles the value in as a constant: the
 * artifact then no longer has that input. An input whose default an
 * initializer gives (listed among the inputs, as IR version 3 files do) is
 * a constant unless named here; named, it is an input like any other. */
typedef struct loom_input_value {
  const char *name; /* the ONNX graph input */
  const DLTensor *tensor;
} loom_input_value;

typedef struct loom_compile_options {
  /* NULL, "host" or "x86_64": this machine, every feature it has;
   * "x86_64-sse2" (the x86-64 baseline: 128-bit vectors, no AVX or FMA),
   * "x86_64-avx2" or "x86_64-avx512": that ISA level (older x86 CPUs);
   * anything else: LOOM_ERR_UNSUPPORTED. */
  const char *target;
  /* NULL, or "key=value,..." overriding single properties of the target
   * (cores, l1d, l2, l3, ghz, flops_per_cycle, vector_registers,
   * fma_latency, l2_bytes_per_cycle), e.g.
   * "l2=1MiB,cores=8": a build for another machine of the same ISA. */
  const char *target_options;
  int opt_level;      /* 0..3 (the CLI's default is 2) */
  const loom_input_value *inputs; /* NULL, or num_inputs inputs to specialize to */
  int num_inputs;
  /* NULL, or a tuning records database (`loom tune --records`): each
   * kernel whose workload has a record for this target and thread count
   * takes the fastest one's schedule instead of the default. A record that
   * no longer replays (another Loom version's) is skipped with a note on
   * stderr; a file that is not a records database is an error. */
  const char *records;
  /* NULL, or a comma list of pass names (loom_compile_pass_info) or "all":
   * the IR is printed before (dump_before) / after (dump_after) every run of
   * each named pass. A graph pass prints the graph (from fuse on with the
   * fused groups, from plan_memory on with the arena offsets); a lowering
   * pass prints each kernel's loop IR, once per kernel. Each dump opens with
   * a `#` line naming the pass, its step and, for lowering, the kernel.
   * loom_compile_onnx prints them to stderr, loom_inspect_onnx to its `out`.
   * An unknown name is LOOM_ERR_INVALID_ARG listing the valid ones. */
  const char *dump_before;
  const char *dump_after;
  /* NULL, or external back ends (BYOC, docs/byoc.md), comma-separated: a
   * built-in name ("cblas") or a path to a plugin .so (loom/loom_byoc.h).
   * Each claims, before Loom's fusion, the regions its patterns match and
   * its supports() accepts (the first listed first), and generates their
   * code. A back end that cannot be loaded, claims nothing, crashes or
   * returns C that does not compile is an error naming it. (The last
   * field, so the earlier ones keep their offsets for callers through FFI.) */
  const char *byoc;
} loom_compile_options;

/* One step of the compiler's pipeline that dump_before / dump_after can
 * name. */
typedef struct loom_pass_info {
  const char *name;
  const char *level; /* "graph" (runs once per model) or "lowering" (once per kernel) */
  /* NULL when the step always runs, else when it does: "opt level >= 2",
   * or the lowering option that turns it on ("partition_loops"). */
  const char *condition;
} loom_pass_info;

/* Step `index` (from 0) of the pipeline, in the order the steps run: the
 * graph passes, then the lowering passes. A pass that runs more than once
 * (dce, simplify) has a step per run. Returns 0 past the last step, else 1
 * with *out filled (static strings). */
int loom_compile_pass_info(int index, loom_pass_info *out);

/* Checks a dump_before / dump_after list: LOOM_OK (NULL is fine), else
 * LOOM_ERR_INVALID_ARG with a message in errbuf naming the unknown (or
 * empty) name and listing the valid ones. */
loom_status loom_compile_check_pass_list(const char *list, char *errbuf, size_t errlen);

/* Compiles an ONNX model into an artifact written atomically at out_path
 * (runtime/artifact.h: artifact_write). On failure returns the status and
 * writes a message naming the file, node or op at fault into errbuf (no
 * "loom: error:" prefix; the CLI adds it); nothing is left at out_path. */
loom_status loom_compile_onnx(const char *onnx_path, const char *out_path, const loom_compile_options *opt,
                              char *errbuf, size_t errlen);

/* Prints a summary of an ONNX model to `out`, or with dump = "graph",
 * "partitioned" (the graph after BYOC partitioning, then the regions),
 * "fused", "tir" or "c" the IR after that stage (dump NULL: the summary).
 * The summary includes the planned arena size next to the sum of all
 * intermediate tensor sizes. opt's dump_before / dump_after print to `out`
 * too, ahead of that: the pipeline runs as far as `dump` needs, and through
 * lowering (no C compiler) when a lowering pass is named, except that
 * dump = "graph" stops after the graph pass infer. */
loom_status loom_inspect_onnx(const char *onnx_path, const char *dump, const loom_compile_options *opt, FILE *out,
                              char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
