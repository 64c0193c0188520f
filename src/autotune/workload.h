/* The workload key: which tuning records belong to which computation.
 *
 * The key is a 128-bit structural hash of an unscheduled PrimFunc (its
 * compute definition, shapes and dtypes), written as 32 lowercase hex
 * digits. It ignores the function's name and the names of its buffers and
 * variables, so the same operator built twice, or met in two models, has
 * one key; it keeps block names, because a schedule's trace looks blocks up
 * by name (`get_block("C")`) and a record is only useful to a function its
 * trace replays on.
 *
 * How: FNV-1a-128 over tir_print_func_anonymous (src/tir/text.h), the
 * printer's text with every variable and buffer renamed by position. The
 * printer shows every field of the IR that a schedule can see and
 * reparses into an equal function, so equal text is structural equality;
 * and whatever the IR grows, the printer must show it, so the key follows
 * without a second walk to keep in step.
 *
 * Collisions: FNV-1a-128 is not cryptographic. For n distinct workloads
 * taken as random, the chance that any two share a key is about
 * n^2 / 2^129: 1e-27 for a million workloads, so an accidental collision is
 * not a concern. A crafted one could be made, and would at worst hand a
 * tuner a trace that does not replay on its function (refused as a
 * schedule error) or a schedule that the measurement's check against
 * the unscheduled program records as "wrong".
 *
 * Stability: the key is a function of the printer's text, so a Loom
 * release that changes the text form changes keys; records are looked up
 * within one Loom version family anyway (records.h). */
#ifndef LOOM_AUTOTUNE_WORKLOAD_H
#define LOOM_AUTOTUNE_WORKLOAD_H

#include "tir/stmt.h"

#include <stddef.h>
#include <stdint.h>

#define AUTOTUNE_WORKLOAD_KEY_LEN 32 /* hex digits; the buffer holds one more for the NUL */

/* Writes the key of f into out (32 hex digits and a NUL). */
void autotune_workload_key(const PrimFunc *f, char out[AUTOTUNE_WORKLOAD_KEY_LEN + 1]);

/* FNV-1a with a 128-bit state (hi, lo) over n bytes, continuing from
 * *state; start from autotune_fnv128_init. Exposed for tests (the
 * published test vectors). */
typedef struct Fnv128 {
  uint64_t hi, lo;
} Fnv128;
Fnv128 autotune_fnv128_init(void);
void autotune_fnv128_update(Fnv128 *state, const void *bytes, size_t n);

#endif
