/* Measuring tuning candidates so that a bad one cannot break the tuner
 * (docs/autotune.md, "Measurement").
 *
 * Candidates are built first, in parallel (measure_build_batch), and then
 * run one at a time in a separate process, the measurer (tools/loom_measure.c,
 * the `loom-measure` executable), under a time limit: measurer_run sends it
 * a request, it checks the candidate's outputs against the reference
 * kernel's (the default schedule) on seeded random inputs and only then
 * times it. A candidate that crashes the measurer, hangs, writes out of
 * bounds or computes a wrong answer comes back as a failed MeasureResult,
 * never as an error of these functions; the measurer is restarted for the
 * next request.
 *
 * Building and measuring never overlap: both calls block, and a caller
 * must not build (or run anything heavy) on other threads while
 * measurer_run times a candidate, or the timings measure the contention.
 *
 * Processes. measurer_start forks and execs the measurer; call it early,
 * before the program starts threads of its own (a fork copies the whole
 * address space, and the cheapest moment is before it grows). A restart
 * after a crash may happen in a threaded process: it also forks and execs
 * at once, and the child runs only async-signal-safe calls in between
 * (support/subprocess.h). The measurer runs in its own process group, is
 * killed by the kernel when the thread that started it exits
 * (PR_SET_PDEATHSIG follows the thread, not the process: use one
 * long-lived thread, e.g. the main one, for the Measurer; if that thread
 * exits, the next request notices the dead measurer before sending and
 * restarts it without blaming a candidate), and is killed with its group
 * on a time-out and by measurer_stop. */
#ifndef LOOM_AUTOTUNE_MEASURE_H
#define LOOM_AUTOTUNE_MEASURE_H

#include "autotune/measure_protocol.h"
#include "ir/dtype.h"
#include "support/arena.h"
#include "support/error.h"
#include "target/build.h"
#include "tir/stmt.h"
#include "tir/transform/transform.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

/* One kernel parameter, in order: element type, shape, and whether the
 * kernel writes it (outputs are compared; inputs get random values). */
typedef struct MeasureArg {
  DType dtype; /* scalar (lanes 1) */
  int ndim;    /* 0 .. MEASURE_MAX_NDIM */
  int64_t shape[MEASURE_MAX_NDIM];
  bool written;
} MeasureArg;

/* A kernel in a shared object built for the kernel ABI
 * (include/loom/loom_kernel.h). A path names one content for the
 * measurer's lifetime (the build cache's paths do: they are content
 * hashes): loaded objects and reference results are cached by path. */
typedef struct MeasureKernel {
  const char *so_path;
  const char *name;
} MeasureKernel;

typedef struct MeasureRequest {
  MeasureKernel candidate, reference; /* reference: the default schedule's kernel */
  const MeasureArg *args;             /* n_args (1 .. MEASURE_MAX_ARGS), shared by both kernels */
  int n_args;
  int threads;            /* the kernel's thread pool (1 .. MEASURE_MAX_THREADS) */
  uint64_t seed;          /* the random inputs */
  double min_seconds;     /* timed runs go on until this much time has passed (at least 3 runs) */
  double timeout_seconds; /* the whole request's limit; <= 0: 10 s plus min_seconds */
} MeasureRequest;

typedef enum MeasureStatus {
  MEASURE_OK,      /* outputs match the reference; the times are valid */
  MEASURE_WRONG,   /* an output differs, or bytes around an argument changed */
  MEASURE_CRASH,   /* the measurer died (a signal, or an exit) during the request */
  MEASURE_TIMEOUT, /* no answer within timeout_seconds; the measurer was killed */
  MEASURE_ERROR,   /* the request could not be measured: a kernel or shared object that cannot be
                    * loaded, a kernel that refuses the arguments, the reference failing (also by a
                    * crash or a hang: the measurer says which kernel was running), a malformed
                    * request */
} MeasureStatus;

typedef struct MeasureResult {
  MeasureStatus status;
  double median_us, min_us; /* per call, MEASURE_OK only */
  int runs;                 /* timed calls */
  double max_error;         /* largest output difference seen (f32: max|x-y| / max(1, max|y|)) */
  char message[256];        /* what happened, for the records and for people */
} MeasureResult;

typedef struct Measurer Measurer;

/* Starts the measurer: $LOOM_MEASURE when set, else `loom-measure` next to
 * the running executable (the `loom` binary's directory), else the one in
 * the build tree (compiled in by CMake). LOOM_ERR_IO when it cannot be
 * started or does not answer with protocol version
 * MEASURE_PROTOCOL_VERSION (the message names the path and what it did). */
loom_status measurer_start(Measurer **out, LoomError *err);

/* Runs one request and fills *out (every field; the times only for
 * MEASURE_OK). A bad candidate is a result, not an error: LOOM_OK is
 * returned for every MeasureStatus. LOOM_ERR_INVALID_ARG for NULL
 * arguments; LOOM_ERR_IO when the measurer cannot be (re)started. */
loom_status measurer_run(Measurer *m, const MeasureRequest *req, MeasureResult *out, LoomError *err);

/* Processes started so far (1 after measurer_start; each crash or time-out
 * costs one more at the next request). */
int measurer_starts(const Measurer *m);

/* Ends the measurer (closing its input, then killing its process group if
 * it has not exited within a second) and frees m. NULL is allowed. */
void measurer_stop(Measurer *m);

/* "ok", "wrong", "crash", "timeout", "error". */
const char *measure_status_name(MeasureStatus s);

/* The MeasureArgs of a PrimFunc, lowered or not: its parameters (the
 * N-d ones from before flattening) with their dtypes and constant shapes,
 * written = the function stores to that buffer (or a block writes it).
 * LOOM_ERR_INVALID_ARG naming the parameter for a symbolic shape, a vector
 * dtype or more than MEASURE_MAX_NDIM dimensions, and when f has more than
 * cap parameters. */
loom_status measure_args_from_func(const PrimFunc *f, MeasureArg *out, int cap, int *n_out, LoomError *err);

/* ---- building candidates ---- */

typedef struct MeasureBuild {
  loom_status status;      /* LOOM_OK: so_path holds the kernel `kernel` */
  char so_path[PATH_MAX];
  char kernel[128];        /* "<function name>_c<index>" */
  const PrimFunc *lowered; /* in the arena; NULL when lowering failed */
  char message[512];       /* why, when status != LOOM_OK (a compiler error cut short) */
} MeasureBuild;

/* Lowers funcs[0..n), generates C for each and builds them into one
 * shared object, one translation unit per candidate (up to 64 units),
 * compiled in parallel (BuildOptions.jobs; 0: $LOOM_BUILD_JOBS, else the
 * online CPUs) through the build cache. Each candidate is renamed
 * "<name>_c<i>" so that candidates of one function can share the object.
 * A candidate that fails to lower or generate gets its error in out[i]
 * and is left out; when the C compiler fails on the batch, every
 * candidate is built alone, one after the other, so only the broken ones
 * fail. lower, build: NULL for the defaults. Returns LOOM_OK when the
 * batch was processed (check out[i].status), LOOM_ERR_INVALID_ARG for
 * NULL arguments or n < 1. */
loom_status measure_build_batch(Arena *a, const PrimFunc *const *funcs, int n, const LowerOptions *lower,
                                const BuildOptions *build, MeasureBuild *out, LoomError *err);

#endif
