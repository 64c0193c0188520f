/* Loom's public compiler API: define a computation, schedule it, build it
 * into native code and run it on DLPack tensors — from C, through opaque
 * handles. docs/api.md has a walkthrough; examples/matmul.c is the shortest
 * complete program.
 *
 *   loom_ctx *ctx = loom_ctx_create();
 *   loom_tensor *A = loom_placeholder(ctx, "A", LOOM_F32, 2, (int64_t[]){M, K});
 *   ...                                   define C = A x B with loom_compute
 *   loom_func *f = loom_func_create(ctx, "matmul", (loom_tensor *[]){A, B, C}, 3);
 *   loom_sched *s = loom_sched_create(ctx, f, 0);
 *   ...                                   split / reorder / vectorize / parallel
 *   loom_module *m = loom_build(ctx, (loom_func *[]){loom_sched_func(s)}, 1);
 *   loom_module_run(m, "matmul", args, 3);
 *   loom_ctx_destroy(ctx);                frees everything above
 *
 * Ownership. The context owns every handle and string it hands out: tensors,
 * expressions, functions, schedules, modules and the returned text all stay
 * valid until loom_ctx_destroy (schedules and modules may be released early
 * with loom_sched_free / loom_module_free). Nothing returned needs free().
 * Handles of one context must not be used with another. A context is not
 * thread-safe: use one per thread.
 *
 * Errors. No function aborts on bad input. A function that fails returns a
 * non-zero loom_status, NULL, or -1 (for functions returning a count or a
 * schedule handle), and leaves a message in the context (loom_ctx_error)
 * naming the function, the argument or IR node at fault and what was
 * expected. Expression builders given a NULL operand return NULL and keep the
 * earlier message, so nested builder calls report the first failure. When the
 * handle that leads to the context is itself NULL or invalid there is no
 * context to write to: the function returns LOOM_ERR_INVALID_ARG / NULL / -1
 * only. A successful call does not clear the message; loom_ctx_clear_error
 * does. */
#ifndef LOOM_LOOM_H
#define LOOM_LOOM_H

#include "loom/loom_status.h"

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_ctx loom_ctx;
typedef struct loom_tensor loom_tensor; /* a placeholder or computed tensor */
typedef struct loom_expr loom_expr;     /* an element expression (or a reduce axis) */
typedef struct loom_func loom_func;     /* a function of blocks (loop IR) */
typedef struct loom_sched loom_sched;   /* a schedule: a func being transformed, plus its trace */
typedef struct loom_module loom_module; /* built, loaded native code */

/* A block or loop handle inside one schedule (TVM's "random variables"):
 * the schedule functions return and take them. -1 is never valid. */
typedef int32_t loom_rv;

/* Element types. Codegen supports all of these; bool tensors hold one byte
 * per element (DLPack: kDLUInt, 8 bits). */
typedef enum loom_dtype {
  LOOM_F32,
  LOOM_F64,
  LOOM_I8,
  LOOM_I32,
  LOOM_I64,
  LOOM_U8,
  LOOM_BOOL,
} loom_dtype;

/* Memory scope of a cache buffer. */
typedef enum loom_scope { LOOM_SCOPE_GLOBAL, LOOM_SCOPE_LOCAL, LOOM_SCOPE_SHARED } loom_scope;

/* ======================= context ======================= */

/* A new context; NULL only when out of memory. */
loom_ctx *loom_ctx_create(void);
/* Frees the context and everything it owns (unloads modules, joins its
 * thread pool). NULL is allowed. */
void loom_ctx_destroy(loom_ctx *ctx);
/* The message of the last failure ("" when none). Owned by ctx; overwritten
 * by the next failure. A NULL ctx gives a static message saying so. */
const char *loom_ctx_error(const loom_ctx *ctx);
/* The status of the last failure (LOOM_OK when none). */
loom_status loom_ctx_status(const loom_ctx *ctx);
void loom_ctx_clear_error(loom_ctx *ctx);
/* Threads for parallel loops of kernels run by loom_module_run: n >= 1, or
 * 0 for the default ($LOOM_NUM_THREADS, else the online CPUs). Takes effect
 * on the next run. Errors: LOOM_ERR_INVALID_ARG for n < 0. */
loom_status loom_ctx_set_num_threads(loom_ctx *ctx, int n);
/* Where loom_build caches compiled shared objects (NULL: $LOOM_CACHE_DIR,
 * else $HOME/.cache/loom) and the directory holding loom/loom_kernel.h
 * (NULL: $LOOM_INCLUDE_DIR, else the include/ directory of the source tree
 * this library was built from). Strings are copied. */
loom_status loom_ctx_set_cache_dir(loom_ctx *ctx, const char *dir);
loom_status loom_ctx_set_include_dir(loom_ctx *ctx, const char *dir);
/* Extra C compiler flags for loom_build (e.g. "-Wall -Werror"); NULL: none. */
loom_status loom_ctx_set_cflags(loom_ctx *ctx, const char *extra_flags);

/* "f32", "i64", ... ; "?" for a value outside loom_dtype. */
const char *loom_dtype_name(loom_dtype t);

/* ======================= tensors ======================= */

/* An input tensor of a fixed shape (every dimension >= 1, ndim 0..8; shape
 * may be NULL when ndim is 0). The name is copied. Errors:
 * LOOM_ERR_INVALID_ARG (empty name, bad rank or dimension, unknown dtype). */
loom_tensor *loom_placeholder(loom_ctx *ctx, const char *name, loom_dtype t, int ndim,
                              const int64_t *shape);

/* Builds the element at `axes` (ndim i64 index variables, owned by ctx) with
 * the expression builders below; returns NULL to report a failure (leave
 * the message with any builder, or the call reports "returned NULL"). */
typedef loom_expr *(*loom_compute_fn)(loom_ctx *ctx, loom_expr *const *axes, void *user);

/* A tensor whose element at index (i, j, ...) is fn(ctx, axes, user); the
 * element dtype is the expression's. fn is called once, during this call.
 * A reduction (loom_sum/max/min) may only be the whole body. Errors:
 * LOOM_ERR_INVALID_ARG (as loom_placeholder, NULL fn, fn failed, body
 * invalid: the message names the tensor). */
loom_tensor *loom_compute(loom_ctx *ctx, const char *name, int ndim, const int64_t *shape,
                          loom_compute_fn fn, void *user);

/* Rank, one dimension (-1 for an out-of-range axis, with a message), dtype
 * and name of a tensor. */
int loom_tensor_ndim(const loom_tensor *t);
int64_t loom_tensor_dim(loom_ctx *ctx, const loom_tensor *t, int axis);
loom_dtype loom_tensor_dtype(const loom_tensor *t);
const char *loom_tensor_name(const loom_tensor *t);

/* ======================= expressions ======================= */
/* All builders return an expression owned by ctx, or NULL on failure.
 * Operands of arithmetic and comparisons must have equal dtypes (no implicit
 * conversion: use loom_cast); index expressions are LOOM_I64. */

loom_expr *loom_int(loom_ctx *ctx, loom_dtype t, int64_t v);   /* integer or bool type */
loom_expr *loom_float(loom_ctx *ctx, loom_dtype t, double v);  /* LOOM_F32 / LOOM_F64 */
loom_expr *loom_index(loom_ctx *ctx, int64_t v);               /* an i64 constant */

/* A reduction axis over [0, extent) (extent >= 1), usable in loads as an
 * index and in loom_sum/max/min as an axis. */
loom_expr *loom_reduce_axis(loom_ctx *ctx, const char *name, int64_t extent);

/* t[idx[0], ..., idx[n-1]]: n must equal t's rank, indices i64. */
loom_expr *loom_load(loom_ctx *ctx, const loom_tensor *t, loom_expr *const *idx, int n);

loom_expr *loom_add(loom_ctx *ctx, loom_expr *a, loom_expr *b);
loom_expr *loom_sub(loom_ctx *ctx, loom_expr *a, loom_expr *b);
loom_expr *loom_mul(loom_ctx *ctx, loom_expr *a, loom_expr *b);
/* C semantics: truncating for integers, true division for floats. */
loom_expr *loom_div(loom_ctx *ctx, loom_expr *a, loom_expr *b);
loom_expr *loom_mod(loom_ctx *ctx, loom_expr *a, loom_expr *b);
/* Rounding toward -infinity; integers only. */
loom_expr *loom_floordiv(loom_ctx *ctx, loom_expr *a, loom_expr *b);
loom_expr *loom_floormod(loom_ctx *ctx, loom_expr *a, loom_expr *b);
loom_expr *loom_min(loom_ctx *ctx, loom_expr *a, loom_expr *b);
loom_expr *loom_max(loom_ctx *ctx, loom_expr *a, loom_expr *b);

/* Comparisons give LOOM_BOOL. */
loom_expr *loom_eq(loom_ctx *ctx, loom_expr *a, loom_expr *b);
loom_expr *loom_ne(loom_ctx *ctx, loom_expr *a, loom_expr *b);
loom_expr *loom_lt(loom_ctx *ctx, loom_expr *a, loom_expr *b);
loom_expr *loom_le(loom_ctx *ctx, loom_expr *a, loom_expr *b);
loom_expr *loom_gt(loom_ctx *ctx, loom_expr *a, loom_expr *b);
loom_expr *loom_ge(loom_ctx *ctx, loom_expr *a, loom_expr *b);
/* Bool operands only. */
loom_expr *loom_and(loom_ctx *ctx, loom_expr *a, loom_expr *b);
loom_expr *loom_or(loom_ctx *ctx, loom_expr *a, loom_expr *b);
loom_expr *loom_not(loom_ctx *ctx, loom_expr *a);

/* cond ? t : f; cond bool, t and f of one dtype. */
loom_expr *loom_select(loom_ctx *ctx, loom_expr *cond, loom_expr *t, loom_expr *f);
loom_expr *loom_cast(loom_ctx *ctx, loom_dtype t, loom_expr *a);
/* A math intrinsic by name: exp log sqrt tanh erf fabs floor ceil round sin
 * cos (one argument) or pow (two); float arguments of one dtype. */
loom_expr *loom_call(loom_ctx *ctx, const char *fn, loom_expr *const *args, int n);

/* Reductions of src over the reduce axes axes[0..n) (from loom_reduce_axis,
 * each at most once). Only valid as the whole body of a loom_compute. */
loom_expr *loom_sum(loom_ctx *ctx, loom_expr *src, loom_expr *const *axes, int n);
loom_expr *loom_max_reduce(loom_ctx *ctx, loom_expr *src, loom_expr *const *axes, int n);
loom_expr *loom_min_reduce(loom_ctx *ctx, loom_expr *src, loom_expr *const *axes, int n);
/* The same, over only the points where cond (bool, required) holds; where
 * it never holds the result is the identity (0, -inf / type min, +inf / type
 * max). */
typedef enum loom_reduce_op { LOOM_REDUCE_SUM, LOOM_REDUCE_MAX, LOOM_REDUCE_MIN } loom_reduce_op;
loom_expr *loom_reduce_where(loom_ctx *ctx, loom_reduce_op op, loom_expr *src,
                             loom_expr *const *axes, int n, loom_expr *cond);

loom_dtype loom_expr_dtype(const loom_expr *e);
/* The expression in the loop IR's text syntax (owned by ctx). */
const char *loom_expr_text(loom_ctx *ctx, const loom_expr *e);

/* ======================= functions ======================= */

/* A function of blocks computing every compute tensor reachable from the
 * tensors in args; args are its parameters in call order (inputs, then
 * outputs). name must be a C identifier (it becomes the kernel's symbol).
 * Errors: LOOM_ERR_INVALID_ARG (a tensor the outputs read is not in args,
 * nothing computed, duplicate argument, bad name). */
loom_func *loom_func_create(loom_ctx *ctx, const char *name, loom_tensor *const *args, int n);
/* Parses a function from its IR text (the format loom_func_text prints;
 * grammar in docs/tir.md). Errors: LOOM_ERR_PARSE with line and column. */
loom_func *loom_func_parse(loom_ctx *ctx, const char *text);
/* The function as IR text (owned by ctx). */
const char *loom_func_text(loom_ctx *ctx, const loom_func *f);
/* The C source loom_build would generate for f alone (owned by ctx). Errors:
 * whatever lowering or code generation refuses (LOOM_ERR_UNSUPPORTED...). */
const char *loom_func_c_source(loom_ctx *ctx, const loom_func *f);
const char *loom_func_name(const loom_func *f);
int loom_func_num_params(const loom_func *f);

/* One parameter of a function, as loom_module_run expects its tensor. */
typedef struct loom_param {
  const char *name;     /* owned by ctx */
  loom_dtype dtype;
  int ndim;
  const int64_t *shape; /* ndim dimensions, owned by ctx */
  int align;            /* bytes the data must be aligned to (at least the element size) */
  int written;          /* 1 when the function stores to it (an output), else 0 */
} loom_param;

/* Describes parameter i (0 <= i < loom_func_num_params(f), call order) of f
 * in *out, so a caller (the Python layer) can check and allocate arguments
 * before loom_module_run. Errors: LOOM_ERR_INVALID_ARG (bad handle, i out of
 * range, NULL out), LOOM_ERR_UNSUPPORTED (a dimension that is not a
 * constant, a dtype outside loom_dtype). */
loom_status loom_func_param(loom_ctx *ctx, const loom_func *f, int i, loom_param *out);

/* ======================= schedules ======================= */
/* A schedule transforms a copy of a function; the function itself is not
 * changed. Every primitive checks its preconditions and refuses an invalid
 * request with LOOM_ERR_SCHEDULE (or LOOM_ERR_INVALID_ARG for a malformed
 * argument: NULL array, n out of range, a block handle where a loop is
 * expected...), leaving the program unchanged. Every successful primitive is
 * recorded in the trace. */

/* seed 0: sampling primitives take deterministic default decisions; any
 * other seed: uniformly random valid decisions from a PRNG seeded with it. */
loom_sched *loom_sched_create(loom_ctx *ctx, const loom_func *f, uint64_t seed);
/* Releases the schedule now (otherwise loom_ctx_destroy does). Functions
 * taken from it with loom_sched_func stay valid. NULL is allowed; using the
 * handle afterwards is reported as an invalid handle. */
void loom_sched_free(loom_sched *s);
/* The current program, as a function handle (a snapshot: later primitives do
 * not change it). */
loom_func *loom_sched_func(loom_sched *s);
/* The trace as text, one primitive per line with sampled decisions (owned by
 * ctx), e.g. `l1, l2 = split(l0, [32, 8])`. */
const char *loom_sched_trace(loom_sched *s);
/* Replays a trace (text as loom_sched_trace prints) on s: all of it or,
 * on error, none of it. Errors: LOOM_ERR_PARSE, LOOM_ERR_SCHEDULE. */
loom_status loom_sched_apply_trace(loom_sched *s, const char *trace_text);

/* The block named `name`; -1 if there is none. */
loom_rv loom_sched_get_block(loom_sched *s, const char *name);
/* The loops around `block`, outermost first: writes min(count, max) handles
 * to out and returns the count (-1 on error). */
int loom_sched_get_loops(loom_sched *s, loom_rv block, loom_rv *out, int max);

/* Split `loop` into n (2..8) nested loops of the given extents, outermost
 * first; one factor may be -1 (inferred). A product beyond the extent guards
 * the body with a predicate. Writes n loops to out. */
loom_status loom_sched_split(loom_sched *s, loom_rv loop, const int64_t *factors, int n,
                             loom_rv *out);
/* Fuse n (>= 2) directly nested loops (outermost first) into one. */
loom_rv loom_sched_fuse(loom_sched *s, const loom_rv *loops, int n);
/* Put n loops of one nest into the given order. */
loom_status loom_sched_reorder(loom_sched *s, const loom_rv *loops, int n);
/* Split each of n loops into `depth` pieces (factors[i*depth .. +depth) for
 * loop i) and order all outer pieces first; writes n*depth loops to out in
 * their final order. */
loom_status loom_sched_tile(loom_sched *s, const loom_rv *loops, int n, const int64_t *factors,
                            int depth, loom_rv *out);

/* Loop annotations. vectorize and parallel refuse loops carrying a
 * reduction; parallel refuses a loop inside another parallel loop. */
loom_status loom_sched_vectorize(loom_sched *s, loom_rv loop);
loom_status loom_sched_parallel(loom_sched *s, loom_rv loop);
loom_status loom_sched_unroll(loom_sched *s, loom_rv loop);

/* Move a producer block under `loop` of its consumers (computing only the
 * region they need there) / a consumer block under `loop` of its producers. */
loom_status loom_sched_compute_at(loom_sched *s, loom_rv block, loom_rv loop);
loom_status loom_sched_reverse_compute_at(loom_sched *s, loom_rv block, loom_rv loop);
/* Inline an elementwise producer into its consumers / an elementwise
 * consumer into its producer; the block and its buffer disappear. */
loom_status loom_sched_compute_inline(loom_sched *s, loom_rv block);
loom_status loom_sched_reverse_compute_inline(loom_sched *s, loom_rv block);

/* A new block copying the read_index-th buffer `block` reads into a cache
 * of `scope` (which the block then reads) / making `block` write into a
 * cache copied out to the original buffer. Return the new block. */
loom_rv loom_sched_cache_read(loom_sched *s, loom_rv block, int read_index, loom_scope scope);
loom_rv loom_sched_cache_write(loom_sched *s, loom_rv block, int write_index, loom_scope scope);
/* Pad dimension `axis` of the buffer `block` writes (write_index) so its
 * stride is a multiple of factor (>= 1) plus offset (0 <= offset < factor). */
loom_status loom_sched_storage_align(loom_sched *s, loom_rv block, int write_index, int axis,
                                     int factor, int offset);
/* Move the init of a reduction block into its own block before `loop`.
 * Returns the init block. */
loom_rv loom_sched_decompose_reduction(loom_sched *s, loom_rv block, loom_rv loop);
/* Make reduction loop `loop` (of one block out = out op rhs, op + * max
 * min) the spatial axis of a partial-result block "<block>_rf", which it
 * returns; the block then reduces the partial results after the reduction
 * loops (docs/schedule.md). */
loom_rv loom_sched_rfactor(loom_sched *s, loom_rv loop);

/* Sampling (decisions recorded in the trace): n (1..8) factors whose product
 * is the loop's extent, innermost <= max_innermost (0: no limit) / one of
 * candidates[0..n) with probabilities probs (NULL: uniform; else n
 * non-negative weights, not all zero). */
loom_status loom_sched_sample_perfect_tile(loom_sched *s, loom_rv loop, int n,
                                           int64_t max_innermost, int64_t *out);
loom_status loom_sched_sample_categorical(loom_sched *s, const int64_t *candidates,
                                          const double *probs, int n, int64_t *out);

/* ======================= build and run ======================= */

/* Lowers funcs[0..n), generates C for all of them into one source, compiles
 * it with the system C compiler (cached by content hash) and loads it.
 * Function names must be distinct. Errors: LOOM_ERR_INVALID_ARG,
 * LOOM_ERR_UNSUPPORTED, LOOM_ERR_BUILD (compiler output in the message),
 * LOOM_ERR_IO. */
loom_module *loom_build(loom_ctx *ctx, loom_func *const *funcs, int n);
/* Unloads the module now (otherwise loom_ctx_destroy does). NULL is allowed. */
void loom_module_free(loom_module *m);
/* The generated C source of the module (owned by the module's context). */
const char *loom_module_source(loom_module *m);
/* Runs the kernel of the function `name` on args[0..n) (its parameters in
 * order: CPU tensors of the exact dtype and shape, compact row-major, data
 * aligned to 64 bytes). Outputs must not alias inputs. Errors:
 * LOOM_ERR_INVALID_ARG (unknown kernel, wrong argument count, NULL tensor),
 * LOOM_ERR_RUNTIME (the kernel rejected an argument: the message names it
 * and says what differs). */
loom_status loom_module_run(loom_module *m, const char *name, DLTensor *const *args, int n);

/* A DLTensor view of caller memory (no copy, strides NULL, CPU). shape must
 * outlive the view. */
static inline DLTensor loom_dltensor(void *data, loom_dtype t, int ndim, int64_t *shape) {
  static const DLDataType types[] = {{kDLFloat, 32, 1}, {kDLFloat, 64, 1}, {kDLInt, 8, 1},
                                     {kDLInt, 32, 1},   {kDLInt, 64, 1},   {kDLUInt, 8, 1},
                                     {kDLUInt, 8, 1}};
  DLTensor d = {0};
  d.data = data;
  d.device.device_type = kDLCPU;
  d.ndim = ndim;
  d.dtype = (unsigned)t < sizeof types / sizeof types[0] ? types[t] : types[0];
  d.shape = shape;
  return d;
}

#ifdef __cplusplus
}
#endif

#endif
