/* Lowering passes: PrimFunc of blocks -> flat, simplified program ready for
 * code generation. Each pass is a function IR -> IR (new nodes in `a`).
 *
 * Pipeline (tir_lower runs it in this order; lower.c's k_pipeline is the
 * one list, which tir_lower_step reads back):
 *   simplify          arith_simplify on every expression, with loop ranges bound
 *   lower_blocks      blocks -> plain loops: iterators replaced by their
 *                     bindings, predicates -> if, init -> if (all reduction
 *                     iterators at their minimum), alloc_buffers -> Allocate
 *   simplify          fold the substituted bindings
 *   loop_partition    split a loop whose body is guarded by a predicate on
 *                     the loop variable into a guard-free main part and a
 *                     tail (LowerOptions.partition_loops)
 *   simplify          drop the guards proven false in tails (partition_loops)
 *   compact_buffers   move each temporary's Allocate down to where it is
 *                     used and shrink it to the region used there
 *                     (compact_buffers)
 *   flatten_buffers   N-d buffers -> 1-d (row-major, honouring storage_align);
 *                     PrimFunc.orig_params keeps the N-d parameters
 *   legalize_narrow   f16/bf16/fp8/fp4/int4 are stored, not computed: loads
 *                     widen to f32 (i32), stores round back
 *   simplify          fold flat indices (vectorize needs constant strides)
 *   vectorize         FOR_VECTORIZED loops -> ramp/broadcast vector
 *                     expressions; what cannot be vectorized falls back
 *                     to a serial loop (correct, just slower)
 *   unroll            FOR_UNROLLED loops with constant extent -> copies,
 *                     as many as the code-size budget allows
 *   storage_rewrite   reuse the memory of temporaries whose lifetimes
 *                     do not overlap (storage_rewrite)
 *   simplify          again, to clean up
 *   inject_dma        scratchpad kernels only (PrimFunc.local_mem_bytes):
 *                     copy loops between local and global buffers -> DMA
 *   verify_scratchpad scratchpad kernels only: local buffers fit, compute
 *                     loops touch global memory through DMA only, every
 *                     asynchronous copy waited for before use
 *                     (tir_verify_scratchpad, a check)
 *   plan_local_mem    scratchpad kernels only: each local buffer's offset
 *                     in the local memory
 * Pass NAME is the function tir_NAME. docs/transform.md has the details and
 * an example. */
#ifndef LOOM_TIR_TRANSFORM_H
#define LOOM_TIR_TRANSFORM_H

#include "support/error.h"
#include "tir/stmt.h"

/* Called by tir_lower around every step it runs: before it (after =
 * false) with the function the pass receives, after it with what the pass
 * returned. step: the step's position in the pipeline, from 1 (simplify has
 * several); the hook decides what to print (`--dump-before` /
 * `--dump-after`: compile/pass_dump.c). */
typedef void (*TirDumpHook)(void *user, const char *pass, int step, bool after, const PrimFunc *f);

typedef struct LowerOptions {
  bool partition_loops;  /* default true */
  bool storage_rewrite;  /* default true */
  bool compact_buffers;  /* default true */
  int max_unroll_extent; /* unrolled loops longer than this stay loops; default 64 */
  bool vector_types;     /* default true; false (a target without vectors, generic C11):
                            vectorized loops stay serial loops, no vector types reach the C */
  /* NULL (the default, and what the tuner uses): no dumps, one NULL check
   * per step. */
  TirDumpHook dump;
  void *dump_user;
} LowerOptions;

LowerOptions lower_options_default(void);

/* ---- code size (code_size.c; docs/transform.md "Code size") ----
 * TIR_CODE_BUDGET bounds every decision that multiplies code: one unrolled
 * body (tir_unroll, the C back end's unroll pragma, the pool and depthwise
 * schedules' windows), one vectorized loop's chunks; TIR_PARTITION_BUDGET
 * bounds the copies loop partitioning adds to one function. The unit is one
 * operation or statement on at most one 512-bit vector. It is sized by the
 * L1 instruction cache (32 KiB on the x86 cores Loom targets), past which
 * unrolling stops paying at run time: the default schedules' unrolled bodies
 * compile to 0.2-0.6 bytes of x86 code per node (the C compiler's CSE,
 * immediates and addressing modes absorb most of them), so 32768 nodes stay
 * within it. The system compiler's time grows faster than linearly in one
 * basic block (clang -O3 on 2,000 / 4,000 / 8,000 / 16,000 pool taps of ~11
 * nodes: 0.5 / 1.2 / 6.1 / 27 s; all 33,600 of a 60x80 window over a
 * 7-column tile: minutes), and 32768 nodes keep it near a second. The
 * largest default body (a Winograd input transform, 18,016 nodes) fits with
 * room. */
enum {
  TIR_CODE_BUDGET = 32768,
  TIR_PARTITION_BUDGET = 2 * TIR_CODE_BUDGET, /* a function's growth by loop partitioning */
  TIR_MAX_UNROLL_COPIES = 256,                /* copies of one unrolled loop, whatever its body */
  TIR_SYMBOLIC_UNROLL = 8,                    /* copies the C compiler makes of a symbolic unrolled loop */
};

/* The 512-bit vector registers a value of type t takes (1 for scalars). */
int64_t tir_vector_registers(DType t);
/* Nodes of e: its operations as a tree, each weighted by the 512-bit
 * vectors its type takes; constants and variables count nothing, a select
 * on a constant only its taken branch. Saturates far above the budget. */
int64_t tir_expr_code_size(const Expr *e);
/* Nodes of the code s becomes: unrolled loops count their body once per copy
 * (tir_unroll_copies), vectorized loops once per vector of each chunk. Blocks
 * count their init, body, bindings and predicate, so schedules can weigh a
 * block before lowering. */
int64_t tir_code_size(const Stmt *s);
/* Copies an unrolled loop of `extent` iterations over a body of `body_size`
 * nodes may become: all of them when they fit TIR_CODE_BUDGET, else as many
 * as fit (at least 1, at most TIR_MAX_UNROLL_COPIES). */
int64_t tir_unroll_copies(int64_t extent, int64_t body_size);

const PrimFunc *tir_simplify(Arena *a, const PrimFunc *f);
const PrimFunc *tir_lower_blocks(Arena *a, const PrimFunc *f, LoomError *err);
const PrimFunc *tir_compact_buffers(Arena *a, const PrimFunc *f);
const PrimFunc *tir_loop_partition(Arena *a, const PrimFunc *f);
const PrimFunc *tir_flatten_buffers(Arena *a, const PrimFunc *f, LoomError *err);
const PrimFunc *tir_vectorize(Arena *a, const PrimFunc *f);
/* Every FOR_VECTORIZED loop made a serial loop (targets without vectors). */
const PrimFunc *tir_vectorize_serial(Arena *a, const PrimFunc *f);
const PrimFunc *tir_unroll(Arena *a, const PrimFunc *f, int max_extent);
const PrimFunc *tir_storage_rewrite(Arena *a, const PrimFunc *f);
const PrimFunc *tir_legalize_narrow(Arena *a, const PrimFunc *f);
/* Scratchpad kernels (f->local_mem_bytes > 0; others are returned as they
 * are): each copy loop nest between a local and a global flat buffer
 * becomes a DMA statement, contiguous or 2-d strided, inside the loops it
 * cannot merge (inject_dma.c). */
const PrimFunc *tir_inject_dma(Arena *a, const PrimFunc *f);
/* Scratchpad kernels: every local allocation gets its byte offset in the
 * kernel's local memory (Allocate.offset), siblings sharing, nested ones
 * stacked; NULL with a message in err when the plan exceeds
 * local_mem_bytes (plan_local_mem.c). */
const PrimFunc *tir_plan_local_mem(Arena *a, const PrimFunc *f, LoomError *err);
/* The bytes of local memory f's plan uses (0 before tir_plan_local_mem). */
int64_t tir_local_plan_bytes(const PrimFunc *f);

/* One lowering pass behind a uniform signature (lower.c's table). opt may
 * be NULL (lower_options_default); only unroll reads it. NULL with a message
 * in err on failure. The flags that turn a step of tir_lower off do not
 * apply: run alone, a pass always runs. */
typedef const PrimFunc *(*TirPassFn)(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err);
typedef struct TirPass {
  const char *name;
  TirPassFn run;
} TirPass;
/* The pass named `name` ("simplify", "lower_blocks", "loop_partition",
 * "compact_buffers", "flatten_buffers", "legalize_narrow", "vectorize",
 * "unroll", "storage_rewrite", "inject_dma", "verify_scratchpad": a check
 * that returns the function or fails), or NULL. */
const TirPass *tir_pass_find(const char *name);
/* All passes in pipeline order (of their first step), *n set to the count. */
const TirPass *tir_pass_list(int *n);
/* Step i (from 0) of tir_lower's pipeline, NULL past the last. *option
 * (when option is non-NULL) is set to the LowerOptions flag the step runs
 * under ("partition_loops", ...), or NULL when it always runs. */
const TirPass *tir_lower_step(int i, const char **option);

/* The whole pipeline; NULL with a message in err on failure. */
const PrimFunc *tir_lower(Arena *a, const PrimFunc *f, const LowerOptions *opt, LoomError *err);

#endif
