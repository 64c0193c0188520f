/* `--dump-before=PASS` / `--dump-after=PASS` (loom_compile_options): which
 * steps of the pipeline print the IR, and how. The pipelines own their pass
 * lists (compile_model.c's graph table, tir/transform/lower.c's); this file
 * only selects and prints. */
#ifndef LOOM_COMPILE_PASS_DUMP_H
#define LOOM_COMPILE_PASS_DUMP_H

#include "graph/passes.h"
#include "tir/transform/transform.h"

#include <stdbool.h>
#include <stdio.h>

typedef struct PassDump {
  const char *before, *after; /* comma lists checked by loom_compile_check_pass_list, or NULL */
  FILE *out;
} PassDump;

/* Whether a comma list names `pass` (or is "all"). NULL names nothing. */
bool pass_dump_named(const char *list, const char *pass);
/* Whether d prints around any lowering pass (so the kernels must be lowered). */
bool pass_dump_wants_lowering(const PassDump *d);
/* Around graph step `step` (from 1): the graph, then the fusion plan and the
 * arena offsets once they exist (plan, mem NULL before). Nothing unless d
 * names the pass on that side. */
void pass_dump_graph(const PassDump *d, const char *pass, int step, bool after, const Graph *g,
                     const GraphFusionPlan *plan, const GraphMemoryPlan *mem);
/* A TirDumpHook (user: the PassDump): the kernel's loop IR. */
void pass_dump_tir(void *user, const char *pass, int step, bool after, const PrimFunc *f);
/* lo with its dump hook set to pass_dump_tir when d names a lowering pass
 * (else untouched: no hook, no cost). */
void pass_dump_set_hook(PassDump *d, LowerOptions *lo);

#endif
