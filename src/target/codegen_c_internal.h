/* Shared state of the C code generator (codegen_c.c emits statements and the
 * function frame, codegen_c_expr.c expressions and vector helpers). */
#ifndef LOOM_TARGET_CODEGEN_C_INTERNAL_H
#define LOOM_TARGET_CODEGEN_C_INTERNAL_H

#include "support/ptrmap.h"
#include "support/vec.h"
#include "target/codegen_c.h"

/* Allocations up to this size live on the stack; larger ones in
 * env->workspace (worker threads get small stacks). */
#define CODEGEN_C_STACK_LIMIT (64 * 1024)

typedef struct CodegenC {
  Arena *arena; /* names and scratch IR for this function only */
  const PrimFunc *func;
  const char *func_name;
  PtrMap names;             /* Var or Buffer node -> C identifier */
  PtrMap promoted;          /* Buffer -> its register slots (codegen_c_promote.c) */
  VEC(const char *) taken;  /* identifiers in use (C keywords, libm, ours) */
  VEC(const void *) scope;  /* vars and buffers visible at the current point */
  VEC(const char *) helpers_done;
  StrBuf decls;   /* vector typedefs and helpers (each guarded by #ifndef) */
  StrBuf outlined; /* parallel-loop bodies, emitted before the kernel */
  size_t workspace_bytes;
  int n_outlined;
  int parallel_depth; /* > 0 while emitting an outlined body */
  LoomError *err;
  loom_status status; /* first error; emission continues but output is dropped */
} CodegenC;

/* Records the first error (later ones are usually consequences). */
void cg_fail(CodegenC *cg, loom_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A fresh C identifier derived from `hint` (sanitized, never a keyword or a
 * name already used in this function). */
const char *cg_fresh_name(CodegenC *cg, const char *hint);
/* The identifier bound to a Var or Buffer node (named on first use). */
const char *cg_name_of(CodegenC *cg, const void *node, const char *hint);
bool cg_in_scope(const CodegenC *cg, const void *node);

/* "float", "int64_t", ... ; NULL (and an error) for types C can't express. */
const char *cg_scalar_type(CodegenC *cg, DType t, const char *what);
/* The vector typedef name ("float32x16"), declaring it on first use. A bool
 * vector is a mask: int32 lanes, 0 or -1. */
const char *cg_vector_type(CodegenC *cg, DType t);
/* Scalar or vector C type name of t. */
const char *cg_type(CodegenC *cg, DType t, const char *what);

void cg_emit_expr(CodegenC *cg, StrBuf *sb, const Expr *e);
/* Emits helper `name` once per file (guarded by a macro); def is the full
 * definition. */
void cg_put_helper(CodegenC *cg, const char *name, const char *def);
/* codegen_c_math.c: a vector implementation of a math call on f32 vectors
 * (exp, erf, tanh), declared on first use; NULL when there is none (the
 * caller then applies the scalar function lane by lane). */
const char *cg_vector_math(CodegenC *cg, CallOp op, DType t);
/* The flat element offset of a buffer access (row-major over the buffer's
 * shape when it has more than one dimension). */
const Expr *cg_flat_index(CodegenC *cg, const Buffer *b, const Expr *const *idx, int n);
/* Emits `buf[index] = value;` (scalar, contiguous vector or scatter). */
void cg_emit_store(CodegenC *cg, StrBuf *sb, const Stmt *s);

/* codegen_c_promote.c: when every access of local allocation b in body is
 * at a constant offset and of one width (an unrolled register tile),
 * declares one C variable per vector (or element) and returns true; loads
 * and stores then go through cg_promoted_slot. */
bool cg_promote_alloc(CodegenC *cg, StrBuf *sb, const Buffer *b, int64_t n_elems, const Stmt *body, int ind);
/* The variable holding b's access at idx (lanes wide); NULL when b was not
 * promoted. */
const char *cg_promoted_slot(CodegenC *cg, const Buffer *b, const Expr *const *idx, int n, int lanes);

#endif
