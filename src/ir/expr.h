/* Expressions: immutable, arena-allocated, compared and hashed structurally.
 *
 * Identity rules: a variable is its node (pointer identity; names are only
 * for printing and may repeat). A buffer is its node too. Everything else is
 * a value: two expressions are the same iff expr_equal says so.
 *
 * Integer division comes in three flavours, because the arithmetic module
 * needs them apart: FLOORDIV/FLOORMOD (round toward -inf; the index
 * arithmetic of schedules), and DIV/MOD with C semantics (truncation for
 * integers, true division for floats). */
#ifndef LOOM_IR_EXPR_H
#define LOOM_IR_EXPR_H

#include "ir/dtype.h"
#include "support/arena.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct Expr Expr;
typedef struct Buffer Buffer;

typedef enum ExprKind {
  EXPR_INT,   /* int_value; integer or bool dtype */
  EXPR_FLOAT, /* float_value */
  EXPR_VAR,
  /* binary: bin.a, bin.b (same dtype) */
  EXPR_ADD, EXPR_SUB, EXPR_MUL, EXPR_DIV, EXPR_MOD, EXPR_FLOORDIV, EXPR_FLOORMOD,
  EXPR_MIN, EXPR_MAX,
  /* comparisons: bool result, operands of one dtype */
  EXPR_EQ, EXPR_NE, EXPR_LT, EXPR_LE, EXPR_GT, EXPR_GE,
  EXPR_AND, EXPR_OR, /* bool operands */
  EXPR_NOT,          /* un.a */
  EXPR_CAST,         /* un.a converted to dtype */
  EXPR_SELECT,       /* select.cond ? select.t : select.f (both evaluated is fine) */
  EXPR_LOAD,         /* load.buffer[load.indices...] */
  EXPR_CALL,         /* intrinsic math call */
  EXPR_RAMP,         /* vector {base, base+stride, ...} of ramp.lanes */
  EXPR_BROADCAST,    /* vector of broadcast.lanes copies */
  EXPR_REDUCE,       /* only in compute definitions (te); lowered into blocks */
  EXPR_KIND_COUNT
} ExprKind;

/* Intrinsics: X(enum, name in IR text, C function for f32, number of args) */
#define LOOM_CALL_OPS(X)               \
  X(CALL_EXP, "exp", "expf", 1)        \
  X(CALL_LOG, "log", "logf", 1)        \
  X(CALL_SQRT, "sqrt", "sqrtf", 1)     \
  X(CALL_TANH, "tanh", "tanhf", 1)     \
  X(CALL_ERF, "erf", "erff", 1)        \
  X(CALL_FABS, "fabs", "fabsf", 1)     \
  X(CALL_FLOOR, "floor", "floorf", 1)  \
  X(CALL_CEIL, "ceil", "ceilf", 1)     \
  X(CALL_ROUND, "round", "nearbyintf", 1) \
  X(CALL_SIN, "sin", "sinf", 1)        \
  X(CALL_COS, "cos", "cosf", 1)        \
  X(CALL_POW, "pow", "powf", 2)        \
  X(CALL_TAN, "tan", "tanf", 1)        \
  X(CALL_ASIN, "asin", "asinf", 1)     \
  X(CALL_ACOS, "acos", "acosf", 1)     \
  X(CALL_ATAN, "atan", "atanf", 1)     \
  X(CALL_SINH, "sinh", "sinhf", 1)     \
  X(CALL_COSH, "cosh", "coshf", 1)     \
  X(CALL_ASINH, "asinh", "asinhf", 1)  \
  X(CALL_ACOSH, "acosh", "acoshf", 1)  \
  X(CALL_ATANH, "atanh", "atanhf", 1)  \
  X(CALL_LOG1P, "log1p", "log1pf", 1)  \
  /* integer operands and result (call_op_is_bitwise): C operators */ \
  X(CALL_BITAND, "bitwise_and", "loom_bitwise_and", 2) \
  X(CALL_BITOR, "bitwise_or", "loom_bitwise_or", 2)    \
  X(CALL_BITXOR, "bitwise_xor", "loom_bitwise_xor", 2) \
  X(CALL_BITNOT, "bitwise_not", "loom_bitwise_not", 1) \
  X(CALL_SHL, "shift_left", "loom_shift_left", 2)      \
  X(CALL_SHR, "shift_right", "loom_shift_right", 2)      \
  /* the argument's bits as the call's dtype (same width; BitCast) */ \
  X(CALL_REINTERPRET, "reinterpret", "loom_reinterpret", 1)

typedef enum CallOp {
#define X(e, name, cfn, nargs) e,
  LOOM_CALL_OPS(X)
#undef X
  CALL_OP_COUNT
} CallOp;

typedef enum ReduceOp { REDUCE_SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD } ReduceOp;

typedef enum IterType { ITER_SPATIAL, ITER_REDUCE } IterType;

/* An iteration variable with its domain [min, min + extent). Used by block
 * iterators and by reduction axes of compute definitions. */
typedef struct IterVar {
  const Expr *var;
  const Expr *min, *extent;
  IterType type;
} IterVar;

struct Expr {
  ExprKind kind;
  DType dtype;
  union {
    int64_t int_value;
    double float_value;
    struct { const char *name; } var;
    struct { const Expr *a, *b; } bin;
    struct { const Expr *a; } un;
    struct { const Expr *cond, *t, *f; } select;
    struct { const Buffer *buffer; const Expr *const *indices; int n; } load;
    struct { CallOp op; const Expr *const *args; int n; } call;
    struct { const Expr *base, *stride; int lanes; } ramp;
    struct { const Expr *value; int lanes; } broadcast;
    struct {
      ReduceOp op;
      const Expr *source;
      const IterVar *axes;
      int n_axes;
      const Expr *cond; /* NULL = always; else only where cond holds */
    } reduce;
  };
};

typedef enum MemScope { SCOPE_GLOBAL, SCOPE_LOCAL, SCOPE_SHARED } MemScope;

/* A multi-dimensional buffer. Function parameters and allocations. strides
 * NULL = compact row-major. After buffer flattening every buffer is 1-D. */
struct Buffer {
  const char *name;
  DType dtype;
  int ndim;
  const Expr *const *shape;
  const Expr *const *strides;
  MemScope scope;
  int align; /* bytes; 0 = natural */
  /* storage_align: pad the stride of dimension align_axis so it is a
   * multiple of align_factor elements plus align_offset (0 factor = none). */
  int align_axis, align_factor, align_offset;
  /* The compute definition (TeTensor) that produces this buffer, if any:
   * lets te lowering walk from loads back to producers. */
  const void *te_origin;
};

/* ---- constructors (all allocate in `a`; operands must be non-NULL) ---- */
const Expr *expr_int(Arena *a, DType t, int64_t v);
const Expr *expr_i64(Arena *a, int64_t v); /* index constant */
const Expr *expr_bool(Arena *a, bool v);
const Expr *expr_float(Arena *a, DType t, double v);
const Expr *expr_var(Arena *a, const char *name, DType t);
const Expr *expr_binary(Arena *a, ExprKind k, const Expr *x, const Expr *y);
const Expr *expr_add(Arena *a, const Expr *x, const Expr *y);
const Expr *expr_sub(Arena *a, const Expr *x, const Expr *y);
const Expr *expr_mul(Arena *a, const Expr *x, const Expr *y);
const Expr *expr_floordiv(Arena *a, const Expr *x, const Expr *y);
const Expr *expr_floormod(Arena *a, const Expr *x, const Expr *y);
const Expr *expr_min(Arena *a, const Expr *x, const Expr *y);
const Expr *expr_max(Arena *a, const Expr *x, const Expr *y);
const Expr *expr_lt(Arena *a, const Expr *x, const Expr *y);
const Expr *expr_and(Arena *a, const Expr *x, const Expr *y);
const Expr *expr_not(Arena *a, const Expr *x);
const Expr *expr_cast(Arena *a, DType t, const Expr *x);
const Expr *expr_select(Arena *a, const Expr *c, const Expr *t, const Expr *f);
const Expr *expr_load(Arena *a, const Buffer *b, const Expr *const *idx, int n);
const Expr *expr_call(Arena *a, CallOp op, DType t, const Expr *const *args, int n);
const Expr *expr_ramp(Arena *a, const Expr *base, const Expr *stride, int lanes);
const Expr *expr_broadcast(Arena *a, const Expr *v, int lanes);
const Expr *expr_reduce(Arena *a, ReduceOp op, const Expr *src, const IterVar *axes, int n_axes,
                        const Expr *cond);

/* Allocates a Buffer (compact, global scope). shape is copied. */
Buffer *buffer_new(Arena *a, const char *name, DType t, int ndim, const Expr *const *shape);

/* ---- queries ---- */
static inline bool expr_is_int(const Expr *e, int64_t v) { return e->kind == EXPR_INT && e->int_value == v; }
/* True and *v set when e is an integer constant. */
bool expr_as_int(const Expr *e, int64_t *v);
bool expr_is_binary(ExprKind k);
bool expr_is_compare(ExprKind k);
const char *expr_kind_name(ExprKind k); /* "add", "floordiv", ... */
const char *call_op_name(CallOp op);
const char *call_op_c_name(CallOp op);
int call_op_arity(CallOp op);
/* The integer intrinsics (bitwise and/or/xor/not, shifts): C operators on
 * integer operands, not libm functions. A shift count must be in [0, bits). */
bool call_op_is_bitwise(CallOp op);
bool call_op_parse(const char *name, CallOp *out);
const char *reduce_op_name(ReduceOp op);
/* The identity element of a reduction for dtype t (0, -inf/min, +inf/max, 1). */
const Expr *reduce_identity(Arena *a, ReduceOp op, DType t);
/* combine(acc, x) as an expression. */
const Expr *reduce_combine(Arena *a, ReduceOp op, const Expr *acc, const Expr *x);

bool expr_equal(const Expr *x, const Expr *y);
uint64_t expr_hash(const Expr *e);
/* Does e mention variable v (pointer identity)? */
bool expr_uses_var(const Expr *e, const Expr *v);
/* Does e read buffer b? */
bool expr_reads_buffer(const Expr *e, const Buffer *b);

/* ---- printing (the loop IR's text syntax for expressions) ---- */
/* Syntax: literals `5` (i64), `5i32`, `1.5f32`, `true`, `f32(inf)`; vars by
 * name; `(a + b)` `(a - b)` `(a * b)` `(a / b)` `(a % b)` `floordiv(a, b)`
 * `floormod(a, b)` `min(a, b)` `max(a, b)`, comparisons `(a < b)` ..., `(a && b)`
 * `(a || b)` `!a`, `cast(f32, a)`, `select(c, t, f)`, loads `A[i, j]`, calls
 * `exp(x)`, `ramp(b, s, 8)`, `broadcast(v, 8)`, and (compute definitions only)
 * `reduce_sum(src, [k, 0, 16], ...)`. A call whose result dtype differs
 * from its first argument's writes it: `sqrt<f64>(x)`. */
struct StrBuf;
typedef const char *(*VarNameFn)(void *ctx, const Expr *var);
/* How a printer names what has identity, and prints a reduction (whose
 * axes it must declare); NULL members use the node's own name / the default
 * form. The loop-IR printer (tir/printer.c) makes every name unique. */
typedef struct ExprPrintHooks {
  const char *(*var)(void *ctx, const Expr *var);
  const char *(*buffer)(void *ctx, const Buffer *b);
  void (*reduce)(void *ctx, struct StrBuf *sb, const Expr *reduce);
  void *ctx;
} ExprPrintHooks;
void expr_print(struct StrBuf *sb, const Expr *e);
void expr_print_named(struct StrBuf *sb, const Expr *e, VarNameFn name_var, void *ctx);
void expr_print_hooks(struct StrBuf *sb, const Expr *e, const ExprPrintHooks *hooks);
/* For error messages: prints into an arena string. */
const char *expr_to_string(Arena *a, const Expr *e);

#endif
