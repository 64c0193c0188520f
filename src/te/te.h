/* Compute definitions (TVM's tensor expressions): say *what* to compute.
 *
 *   A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){M, K});
 *   k = te_reduce_axis(a, "k", K);
 *   C = te_compute(a, "C", 2, (int64_t[]){M, N}, matmul_body, &args);
 *        where matmul_body returns te_sum(a, A[i,k] * B[k,j], &k, 1)
 *   f = te_create_primfunc(a, "matmul", (TeTensor*[]){A, B, C}, 3, &err);
 *
 * te_create_primfunc lowers the DAG reachable from the outputs to a PrimFunc
 * of blocks: one block per compute tensor (named after the tensor), inside a
 * loop nest over its spatial axes then its reduction axes; each block iterator
 * bound one-to-one to its loop; reductions get an init from the reduction's
 * identity. Tensors in `args` become parameters (in that order);
 * intermediate compute tensors become buffers allocated in the root block. */
#ifndef LOOM_TE_TE_H
#define LOOM_TE_TE_H

#include "support/error.h"
#include "tir/stmt.h"

typedef enum TeKind { TE_PLACEHOLDER, TE_COMPUTE } TeKind;

/* A step loop (TVM's te.scan, in small): a recurrence computed as a loop
 * over steps, not one stage per step. Its stages are lowered as one nest
 *   for o_0 in [0, outer_extents[0]):   ... independent loops (spatial)
 *     for step in [0, steps):           ... ordered, serial
 *       <the stages' nests, producers first>
 * The outer loops index the leading dimensions of every stage of the loop
 * (each stage's block binds an iterator to them, so they may run in
 * parallel); the step variable is used by the stages' bodies directly
 * (free in their blocks), so the step loop can only run in order (the
 * annotations refuse it, tir/schedule/annotate.c). A stage made with
 * per_step keeps every step's value: its dimension after the outer ones is
 * indexed by the step; the others hold one step's value, overwritten by
 * the next. A stage reads an earlier step of a per_step stage with a
 * load whose step index is not the step variable itself (s - 1, clamped):
 * the definitions must make sure that step was computed. */
typedef struct TeStepLoop {
  int n_outer;
  const Expr *const *outer; /* n_outer loop variables (i64) */
  const int64_t *outer_extents;
  const Expr *step; /* the step loop's variable (i64) */
  int64_t steps;
} TeStepLoop;

typedef struct TeTensor {
  TeKind kind;
  const char *name;
  DType dtype;
  int ndim;
  const int64_t *shape;
  const Buffer *buffer; /* the buffer this tensor is stored in */
  /* compute only: */
  const IterVar *axes; /* ndim spatial axes, var ranges [0, shape[d]) */
  const Expr *body;    /* value at axes; an EXPR_REDUCE only at the top */
  /* The default schedule of this stage's block (Block.schedule_rule), or
   * NULL; see te_set_schedule_rule. */
  const char *schedule_rule;
  struct TeTensor *accumulator; /* a narrow reduction's "<name>_acc" stage, else NULL */
  const TeStepLoop *loop; /* the step loop computing this stage, or NULL */
  bool per_step;          /* loop: axis n_outer is the step (every step kept) */
} TeTensor;

/* Shapes are static here; every dimension must be >= 1. Errors (bad shape,
 * unsupported dtype) return NULL with a message in err. */
TeTensor *te_placeholder(Arena *a, const char *name, DType t, int ndim, const int64_t *shape,
                         LoomError *err);

/* Names the default schedule that applies to t's block (TVM's
 * schedule_rule block attribute): "matmul", "conv2d_nchwc", ... (the table
 * in compile/schedule_group.c). A narrow reduction's rule goes to its
 * "_acc" stage, the one that reduces. Returns t. */
TeTensor *te_set_schedule_rule(TeTensor *t, const char *rule);

/* body(a, axis_vars, user) builds the element expression. A reduction of a
 * narrow dtype (f16, bf16, fp8...) becomes two stages: "<name>_acc" reduces
 * in the compute type (f32), `name` casts the result back (accumulating in
 * f16 would round at every step). */
typedef const Expr *(*TeComputeFn)(Arena *a, const Expr *const *axes, void *user);
TeTensor *te_compute(Arena *a, const char *name, int ndim, const int64_t *shape, TeComputeFn body,
                     void *user, LoomError *err);
/* Same, naming the axes (and so the loops: "n", "c", "h", "w"; block
 * iterators get a "v" prefix). axis_names NULL = defaults i, j, then i2, i3... */
TeTensor *te_compute_named(Arena *a, const char *name, int ndim, const int64_t *shape,
                           const char *const *axis_names, TeComputeFn body, void *user,
                           LoomError *err);

/* A step loop of `steps` iterations (variable step_name) inside n_outer
 * independent loops (names, extents). Errors (extent < 1) return NULL. */
TeStepLoop *te_step_loop(Arena *a, const char *step_name, int64_t steps, int n_outer, const char *const *outer_names,
                         const int64_t *outer_extents, LoomError *err);
/* A stage of step loop `loop`, declared first so that stages defined before
 * it can read its earlier steps (an LSTM's hidden state is read by the
 * next step's products, which it reads): shape starts with the loop's
 * outer extents, then (per_step) its step count, then the stage's own
 * dimensions. te_step_define gives the body, which gets the loop's
 * variables as those axes (the step variable itself) and may use the step
 * variable anywhere; it must return dtype dt. Narrow floats are not
 * supported (their reductions would need an accumulation stage). Errors
 * return NULL / false with a message in err. */
TeTensor *te_step_declare(Arena *a, const TeStepLoop *loop, bool per_step, const char *name, DType dt, int ndim,
                          const int64_t *shape, LoomError *err);
bool te_step_define(Arena *a, TeTensor *t, TeComputeFn body, void *user, LoomError *err);
/* Both at once. */
TeTensor *te_compute_step(Arena *a, const TeStepLoop *loop, bool per_step, const char *name, DType dt, int ndim,
                          const int64_t *shape, TeComputeFn body, void *user, LoomError *err);

/* A reduction axis ranging over [0, extent). */
IterVar te_reduce_axis(Arena *a, const char *name, int64_t extent);

/* t[idx...]: idx has t->ndim int64 expressions. */
const Expr *te_load(Arena *a, const TeTensor *t, const Expr *const *idx);
/* Reductions over axes (cond may be NULL): only valid as a compute's top. */
const Expr *te_sum(Arena *a, const Expr *src, const IterVar *axes, int n, const Expr *cond);
const Expr *te_max(Arena *a, const Expr *src, const IterVar *axes, int n, const Expr *cond);
const Expr *te_min(Arena *a, const Expr *src, const IterVar *axes, int n, const Expr *cond);
const Expr *te_prod(Arena *a, const Expr *src, const IterVar *axes, int n, const Expr *cond);

/* Lowers to a PrimFunc of blocks (see top of file). Checks: every tensor the
 * outputs depend on is either computed or listed in args; reductions only at
 * the top of a body; dtypes of operands agree. */
PrimFunc *te_create_primfunc(Arena *a, const char *name, TeTensor *const *args, int n_args,
                             LoomError *err);

#endif
