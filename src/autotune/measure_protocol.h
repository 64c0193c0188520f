/* The protocol between the tuner (src/autotune/measure.c) and the measurer
 * process (tools/loom_measure.c). Header only: the measurer includes it
 * without linking anything of the compiler.
 *
 * Text lines ending in '\n'; a line is a key, one space, and a value. A
 * path is the rest of its line (it may hold spaces, never a newline).
 * Numbers are printed with %.17g / %llu and read back with strtod /
 * strtoull (the C locale: neither program calls setlocale).
 *
 * Once, when the measurer starts (before reading anything):
 *   loom-measure <version>
 * The tuner refuses a measurer that speaks another version.
 *
 * Per request, tuner -> measurer:
 *   measure
 *   candidate <kernel> <shared object path>
 *   reference <kernel> <shared object path>
 *   threads <n>                       1 .. MEASURE_MAX_THREADS
 *   seed <u64>                        the random inputs
 *   min_seconds <x>                   time the candidate at least this long
 *   arg <dtype> <in|out> <ndim> <dim>...   one per kernel parameter, in order;
 *                                     dtype as runtime/dl_dtype.h names it
 *                                     ("float32", "int8", "bool", ...);
 *                                     out = the kernel writes it
 *   end
 * measurer -> tuner:
 *   phase reference                   before it computes the reference's
 *                                     outputs (only when not cached)
 *   phase candidate                   before it loads and runs the candidate
 *   status ok|wrong|error
 *   median_us <x>
 *   min_us <x>
 *   runs <n>
 *   max_error <x>
 *   message <text to the end of the line>
 *   exiting 1                         only when the measurer exits after
 *                                     this response (a kernel wrote out of
 *                                     bounds: its state is not to be trusted)
 *   end
 * A reader ignores response keys it does not know (a later version may add
 * some); a request key the measurer does not know is an error (status
 * error). End of input: the measurer exits with status 0.
 *
 * A crash or a hang never produces a response: the tuner sees the end of
 * the output or no answer within its time limit, and the last "phase"
 * line says whether the reference or the candidate was running. */
#ifndef LOOM_AUTOTUNE_MEASURE_PROTOCOL_H
#define LOOM_AUTOTUNE_MEASURE_PROTOCOL_H

#define MEASURE_PROTOCOL_VERSION 1
#define MEASURE_HELLO "loom-measure"

enum {
  MEASURE_MAX_ARGS = 64,     /* kernel parameters per request */
  MEASURE_MAX_NDIM = 8,      /* dimensions per parameter */
  MEASURE_MAX_THREADS = 1024 /* as threadpool_create */
};

/* A response line is at most this long (the message is cut to fit). */
enum { MEASURE_LINE_MAX = 4096 };

#endif
