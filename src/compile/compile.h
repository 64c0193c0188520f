/* The graph compiler: ONNX model -> graph passes -> fused groups -> one
 * PrimFunc per group (compute definitions from src/topi composed at the te
 * level) -> default schedules -> lowering -> C -> one shared object ->
 * artifact. compile_model.c runs the pipeline in order; each stage is its
 * own file. */
#ifndef LOOM_COMPILE_COMPILE_H
#define LOOM_COMPILE_COMPILE_H

#include "graph/graph.h"
#include "loom/loom_compile.h"
#include "runtime/artifact.h"
#include "support/strbuf.h"
#include "graph/passes.h"
#include "target/target.h"
#include "tir/transform/transform.h"
#include "te/te.h"

/* ---- op_compute.c: the compute half of the op strategy ---- */
/* False for the operands whose value the compiler needs to build the
 * program: the op's compile-time inputs in the graph op table (Reshape's
 * shape, Slice's starts, Resize's scales, TopK's K, If's condition...).
 * Every other operand is data, which a runtime value may feed;
 * specialization (specialize.c) compiles in only the inputs the former
 * depend on. */
bool compile_input_is_data(const GraphNode *n, int input);
/* Whether the kernel of n reads operand `input` at run time: a data operand,
 * except the parameters that the compute bakes in when g has them as
 * constants (Clip's bounds, Pad's constant_value, Resize's roi) and a roi
 * that Resize does not use. */
bool compile_operand_is_data(const Graph *g, const GraphNode *n, int input);
/* Builds node n's compute from its data inputs (ins[i] is the TeTensor for
 * input i, NULL for metadata/omitted inputs) and writes one TeTensor per
 * output to outs. `prefix` makes the tensor (block) names unique. Errors
 * name the node. */
loom_status compile_node_compute(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                 const char *prefix, TeTensor **outs, LoomError *err);
/* Whether op has its one row in the compute tables (op_compute*.c). Every
 * op has one except If, Loop and Scan (the importer inlines them or
 * refuses the model) and External (its back end writes its code); the ops
 * folding usually removes (Shape, Size, ConstantOfShape, Range, CastLike)
 * have rows for what it leaves, e.g. a result over its size limit. */
bool compile_op_has_compute(GraphOp op);

/* Constant integer operand `input` of n into out (at most 64 values): the
 * count, -1 when omitted, -2 when not a compile-time constant. */
int compile_const_ints(const Graph *g, const GraphNode *n, int input, int64_t *out);
/* INTS attribute `name` into out (at most 64 values): the count, -1 when absent. */
int compile_attr_ints(const GraphNode *n, const char *name, int64_t *out);

/* A graph op's compute function: compile_node_compute's contract, for the
 * ops of one row. */
typedef loom_status (*CompileComputeFn)(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                        const char *name, TeTensor **outs, LoomError *err);

/* The compute rows of the op families that have a file of their own,
 * indexed by GraphOp and NULL for the ops of other files. Every op that
 * reaches lowering has exactly one row, here or in op_compute.c's own
 * table (compile_op_has_compute checks both). */
/* op_compute_tensor.c: indexing, rearrangements, N-D windows, Pad, Resize, Dropout. */
extern const CompileComputeFn compile_tensor_computes[GRAPH_OP_COUNT];
/* op_compute_vision.c: GridSample, AffineGrid, RoiAlign, DeformConv, BitCast,
 * TopK, NonZero, Compress, Unique, NonMaxSuppression (the last four also
 * write their extent tensors, graph/graph_dynamic.h). */
extern const CompileComputeFn compile_vision_computes[GRAPH_OP_COUNT];
/* op_compute_quant.c: QuantizeLinear, DequantizeLinear, QLinearMatMul... */
extern const CompileComputeFn compile_quant_computes[GRAPH_OP_COUNT];
/* op_compute_seq.c: attention, recurrent and signal-processing ops. */
extern const CompileComputeFn compile_seq_computes[GRAPH_OP_COUNT];

/* The window attributes (kernel_shape, strides, dilations, pads, group...)
 * of a node over nsp spatial axes (op_compute_tensor.c). */
struct TopiWindowParams;
loom_status compile_window_params(const GraphNode *n, int nsp, struct TopiWindowParams *p, LoomError *err);

/* ---- dynamic.c: data-dependent output extents (graph/graph_dynamic.h) ---- */
/* Gives every NonZero/Compress/Unique/NonMaxSuppression node its extent
 * outputs and appends the extents of graph outputs to g->outputs, after
 * the model's own ("hidden" outputs, never artifact outputs). Run after
 * inference, before fusion. LOOM_ERR_UNSUPPORTED naming the nodes when a
 * data-dependent output feeds another node. */
loom_status compile_attach_extents(Graph *g, LoomError *err);
/* The extent value of data output v, or GRAPH_NO_VALUE (a static value). */
ValueId compile_extent_of(const Graph *g, ValueId v);
/* When v is the extent of a graph output: that output's index in
 * g->outputs; else -1. */
int compile_extent_of_output(const Graph *g, ValueId v);

/* ---- specialize.c ---- */
/* The decision alone, on g as it is (read only): bind[i] is true when the
 * value of vals[i] would be compiled in: at most 4096 elements, and a
 * compile-time operand (compile_input_is_data false) of a live node depends
 * on it, Shape, Size, EyeLike and CastLike's target being barriers (the rule
 * is spelled out at the top of specialize.c). A name that is not a graph
 * input of g gets false. */
loom_status compile_specialize_decide(const Graph *g, const loom_input_value *vals, int n, bool *bind, LoomError *err);
/* Specializes a freshly imported graph (before folding) to concrete input
 * tensors: every input's shape, and as constants the values that
 * compile_specialize_decide picks or force[i] names (force may be NULL);
 * bound (NULL or n flags) reports which were compiled in. Errors name the
 * input. */
loom_status compile_specialize_inputs(Graph *g, const loom_input_value *vals, int n, const bool *force, bool *bound,
                                      LoomError *err);
/* Imports the model at path specialized to the n inputs and prepares it
 * (onnx_prepare_graph: control flow inlined, constants folded, shapes
 * inferred). When the prepared graph shows a compile-time operand (in an
 * inlined If/Loop/Scan body) that reads an input kept at run time, imports
 * again with that input compiled in. LOOM_DEBUG_SPECIALIZE=1 prints the
 * decision. */
loom_status compile_import_specialized(const char *path, const loom_input_value *vals, int n, Graph **out,
                                       LoomError *err);

/* ---- lower_group.c ---- */
typedef struct GroupFunc {
  PrimFunc *func;         /* params: data inputs (in `inputs` order), then outputs */
  ValueId *inputs;        /* graph values bound to the input params */
  int ninputs;
  ValueId *outputs;       /* graph values bound to the output params */
  int noutputs;
} GroupFunc;

loom_status compile_lower_group(Arena *a, const Graph *g, const GraphFusedGroup *grp, const char *name,
                                GroupFunc *out, LoomError *err);

/* ---- compile_model.c: the model's kernels for the tuner ---- */
/* A model's fused groups, lowered to unscheduled PrimFuncs (the tuner's
 * tasks, in call order; equal workloads are not merged here), with the
 * target and thread count the compiler schedules them for. With --byoc,
 * the regions external back ends claimed are groups without a PrimFunc
 * (func NULL): only Loom's own kernels are tasks. */
typedef struct CompileTasks {
  Arena *arena;
  struct Graph *graph;
  Target target;
  int threads;
  GroupFunc *groups;
  int ngroups;
} CompileTasks;
loom_status compile_model_tasks(const char *onnx_path, const loom_compile_options *opt, CompileTasks *out,
                                LoomError *err);
void compile_tasks_free(CompileTasks *t);

/* ---- compile_model.c: a model's scheduled kernels and plan, for export ---- */
/* Everything loom_compile_onnx has before it builds a shared object: the
 * scheduled PrimFuncs (one per group, in call order) and the artifact spec
 * (so_path and target unset; spec.run_entry is run_entry, which the caller
 * names). src/export turns them into a C project. Free with
 * compile_model_parts_free (also after an error). */
typedef struct CompileModelParts {
  struct Compiled *compiled; /* owns everything below */
  const PrimFunc *const *funcs;
  int nfuncs;
  const ArtifactSpec *spec;
  Target target;
} CompileModelParts;
loom_status compile_model_parts(const char *onnx_path, const loom_compile_options *opt, const char *run_entry,
                                CompileModelParts *out, LoomError *err);
void compile_model_parts_free(CompileModelParts *p);

/* ---- schedule_group.c: the schedule half of the op strategy ---- */
/* Inlines the injective stages, schedules the anchor with its topi default
 * schedule (matmul, conv NCHWc) or a generic one, and every other block
 * with a generic parallel/vectorized schedule. Never fails: a step a
 * primitive refuses is skipped (the program stays correct, only slower).
 * The result lives in the returned schedule (*keep), which the caller frees
 * with sch_free after code generation. */
struct Schedule;
const PrimFunc *compile_schedule_group(const GroupFunc *gf, const Target *target, int num_threads,
                                       struct Schedule **keep);
/* The schedule of the fastest "ok" record of gf's workload for target and
 * threads (autotune/records.h), its trace replayed; NULL when there is none
 * or it no longer replays (noted on stderr): then the default applies. */
struct RecordStore;
const PrimFunc *compile_schedule_from_records(struct RecordStore *rec, const GroupFunc *gf, const Target *target,
                                             int threads, struct Schedule **keep);
/* The same strategy on a schedule of the group's function made by the
 * caller, with any decision source: DECIDE_DEFAULT gives the default
 * schedule, DECIDE_RANDOM a random point of the space its sampling points
 * span (the tuner's template space), DECIDE_TRACE replays a record. */
void compile_schedule_group_on(struct Schedule *s, const Target *target, int num_threads);
/* The schedule rule of f's anchor, the block compile_schedule_group_on
 * gives a template (the tuner groups its tasks by it); NULL when none. */
const char *compile_anchor_rule(const PrimFunc *f);

/* The lowering options for kernels built for t: the defaults, with vector
 * types only where t has vectors (generic C11 keeps vectorized loops as
 * loops). Used by compile, inspect and export alike. */
LowerOptions compile_lower_options(const Target *t);

/* ---- run_entry.c: the model's generated run entry ---- */
/* Appends to `out` the C of spec->run_entry (loom_run_fn, loom/loom_kernel.h):
 * checks of the graph inputs/outputs, then every call of spec->calls in
 * order, with DLTensors from static shapes and data at input/output base,
 * weights base + spec->run_entry_weight_offsets[i], or arena base + offset;
 * plus NAME_plan_hash (artifact_run_hash) and NAME_num_steps. The kernels
 * must be defined earlier in the same source. LOOM_ERR_INVALID_ARG for a
 * spec with dangling references. */
loom_status compile_run_entry_source(const ArtifactSpec *spec, StrBuf *out, LoomError *err);
/* Appends `static int32_t NAME_check(const DLTensor *t, int32_t i, uint8_t
 * code, uint8_t bits, int32_t ndim, const int64_t *shape)`: 0 when t is a
 * non-NULL CPU tensor of that dtype and shape with compact strides, else
 * the LOOM_KERNEL_ERR for argument i. */
void compile_emit_tensor_check(StrBuf *o, const char *name);

/* ---- external_kernel.c: the kernel around a BYOC back end's function ---- */
/* Appends k's source (the back end's C, byoc_codegen) and the kernel k->name
 * with the standard ABI (loom/loom_kernel.h) around its function r->symbol:
 * argument count, every tensor's dtype, shape and strides, the workspace
 * (k->workspace_bytes, exported as NAME_workspace_bytes) checked like
 * generated kernels do; a non-zero return of the function is
 * LOOM_KERNEL_ERR_EXTERNAL. */
struct ByocKernel;
struct loom_byoc_region;
void compile_external_kernel_source(const struct ByocKernel *k, const struct loom_byoc_region *r, StrBuf *out);

#endif
