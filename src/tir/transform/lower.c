/* tir_lower: the lowering pipeline, in order, as one table (see
 * transform.h). The table is also the list `--dump-before` / `--dump-after`
 * name passes from, and the one the .tir test runner looks passes up in. */
#include "tir/transform/transform.h"

#include "tir/text.h"

#include <string.h>

LowerOptions lower_options_default(void) {
  LowerOptions o = {.partition_loops = true, .storage_rewrite = true, .compact_buffers = true,
                    .max_unroll_extent = 64, .vector_types = true};
  return o;
}

/* ---- every pass behind one signature ---- */

static const PrimFunc *run_simplify(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  (void)opt, (void)err;
  return tir_simplify(a, f);
}

static const PrimFunc *run_lower_blocks(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  (void)opt;
  return tir_lower_blocks(a, f, err);
}

static const PrimFunc *run_loop_partition(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  (void)opt, (void)err;
  return tir_loop_partition(a, f);
}

static const PrimFunc *run_compact_buffers(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  (void)opt, (void)err;
  return tir_compact_buffers(a, f);
}

static const PrimFunc *run_flatten_buffers(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  (void)opt;
  return tir_flatten_buffers(a, f, err);
}

static const PrimFunc *run_legalize_narrow(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  (void)opt, (void)err;
  return tir_legalize_narrow(a, f);
}

static const PrimFunc *run_vectorize(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  (void)err;
  return opt && !opt->vector_types ? tir_vectorize_serial(a, f) : tir_vectorize(a, f);
}

static const PrimFunc *run_unroll(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  (void)err;
  return tir_unroll(a, f, opt ? opt->max_unroll_extent : lower_options_default().max_unroll_extent);
}

static const PrimFunc *run_storage_rewrite(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  (void)opt, (void)err;
  return tir_storage_rewrite(a, f);
}

static const PrimFunc *run_inject_dma(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  (void)opt, (void)err;
  return tir_inject_dma(a, f);
}

/* A check, not a rewrite: the function itself, or NULL with the violation. */
static const PrimFunc *run_verify_scratchpad(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  (void)a, (void)opt;
  return tir_verify_scratchpad(f, err) == LOOM_OK ? f : NULL;
}

static const PrimFunc *run_plan_local_mem(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  (void)opt;
  return tir_plan_local_mem(a, f, err);
}

enum {
  PASS_SIMPLIFY,
  PASS_LOWER_BLOCKS,
  PASS_LOOP_PARTITION,
  PASS_COMPACT_BUFFERS,
  PASS_FLATTEN_BUFFERS,
  PASS_LEGALIZE_NARROW,
  PASS_VECTORIZE,
  PASS_UNROLL,
  PASS_STORAGE_REWRITE,
  PASS_INJECT_DMA,
  PASS_VERIFY_SCRATCHPAD,
  PASS_PLAN_LOCAL_MEM,
  PASS_COUNT
};

/* In the order of their first step in k_pipeline. */
static const TirPass k_passes[] = {
    [PASS_SIMPLIFY] = {"simplify", run_simplify},
    [PASS_LOWER_BLOCKS] = {"lower_blocks", run_lower_blocks},
    [PASS_LOOP_PARTITION] = {"loop_partition", run_loop_partition},
    [PASS_COMPACT_BUFFERS] = {"compact_buffers", run_compact_buffers},
    [PASS_FLATTEN_BUFFERS] = {"flatten_buffers", run_flatten_buffers},
    [PASS_LEGALIZE_NARROW] = {"legalize_narrow", run_legalize_narrow},
    [PASS_VECTORIZE] = {"vectorize", run_vectorize},
    [PASS_UNROLL] = {"unroll", run_unroll},
    [PASS_STORAGE_REWRITE] = {"storage_rewrite", run_storage_rewrite},
    [PASS_INJECT_DMA] = {"inject_dma", run_inject_dma},
    [PASS_VERIFY_SCRATCHPAD] = {"verify_scratchpad", run_verify_scratchpad},
    [PASS_PLAN_LOCAL_MEM] = {"plan_local_mem", run_plan_local_mem},
};
_Static_assert(sizeof k_passes / sizeof k_passes[0] == PASS_COUNT, "one row per pass");

/* ---- the pipeline ---- */

/* The LowerOptions flag a step depends on, or the kernel's local memory
 * (named for --dump-list-passes). */
typedef enum { ALWAYS, IF_PARTITION_LOOPS, IF_COMPACT_BUFFERS, IF_STORAGE_REWRITE, IF_LOCAL_MEM } StepCondition;

static bool step_enabled(StepCondition when, const LowerOptions *opt, const PrimFunc *f) {
  switch (when) {
  case ALWAYS: return true;
  case IF_PARTITION_LOOPS: return opt->partition_loops;
  case IF_COMPACT_BUFFERS: return opt->compact_buffers;
  case IF_STORAGE_REWRITE: return opt->storage_rewrite;
  case IF_LOCAL_MEM: return f->local_mem_bytes > 0;
  }
  return true;
}

static const char *const k_condition_names[] = {
    [ALWAYS] = NULL,
    [IF_PARTITION_LOOPS] = "partition_loops",
    [IF_COMPACT_BUFFERS] = "compact_buffers",
    [IF_STORAGE_REWRITE] = "storage_rewrite",
    [IF_LOCAL_MEM] = "local_mem (scratchpad kernels)",
};

typedef struct LowerStep {
  int pass;
  StepCondition when;
} LowerStep;

static const LowerStep k_pipeline[] = {
    {PASS_SIMPLIFY, ALWAYS},
    {PASS_LOWER_BLOCKS, ALWAYS},
    /* Bindings substituted into guards fold here, before partitioning reads them. */
    {PASS_SIMPLIFY, ALWAYS},
    /* Partitioning first (the simplifier then drops the guards proven false
     * in tails): a tile without guards is one compaction can keep in
     * registers, each part of a partitioned loop its own. */
    {PASS_LOOP_PARTITION, IF_PARTITION_LOOPS},
    {PASS_SIMPLIFY, IF_PARTITION_LOOPS},
    {PASS_COMPACT_BUFFERS, IF_COMPACT_BUFFERS},
    {PASS_FLATTEN_BUFFERS, ALWAYS},
    {PASS_LEGALIZE_NARROW, ALWAYS},
    /* Vectorize sees folded flat indices (ramp strides must come out as 1). */
    {PASS_SIMPLIFY, ALWAYS},
    {PASS_VECTORIZE, ALWAYS},
    {PASS_UNROLL, ALWAYS},
    {PASS_STORAGE_REWRITE, IF_STORAGE_REWRITE},
    {PASS_SIMPLIFY, ALWAYS},
    /* Scratchpad kernels: the copies are final loop nests by now (nothing
     * after this vectorizes or unrolls them), so each becomes a DMA call;
     * then the kernel is checked against its local memory, whose plan
     * places its local buffers last (nothing after it rebuilds them). */
    {PASS_INJECT_DMA, IF_LOCAL_MEM},
    {PASS_VERIFY_SCRATCHPAD, IF_LOCAL_MEM},
    {PASS_PLAN_LOCAL_MEM, IF_LOCAL_MEM},
};

enum { STEP_COUNT = (int)(sizeof k_pipeline / sizeof k_pipeline[0]) };

const TirPass *tir_pass_list(int *n) {
  if (n) *n = PASS_COUNT;
  return k_passes;
}

const TirPass *tir_pass_find(const char *name) {
  for (int i = 0; name && i < PASS_COUNT; i++)
    if (!strcmp(k_passes[i].name, name)) return &k_passes[i];
  return NULL;
}

const TirPass *tir_lower_step(int i, const char **option) {
  if (i < 0 || i >= STEP_COUNT) return NULL;
  if (option) *option = k_condition_names[k_pipeline[i].when];
  return &k_passes[k_pipeline[i].pass];
}

const PrimFunc *tir_lower(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err) {
  LowerOptions defaults = lower_options_default();
  if (!opt) opt = &defaults;
  for (int i = 0; i < STEP_COUNT; i++) {
    if (!step_enabled(k_pipeline[i].when, opt, f)) continue;
    const TirPass *p = &k_passes[k_pipeline[i].pass];
    if (opt->dump) opt->dump(opt->dump_user, p->name, i + 1, false, f);
    f = p->run(a, f, opt, err);
    if (!f) return NULL;
    if (opt->dump) opt->dump(opt->dump_user, p->name, i + 1, true, f);
  }
  return f;
}
