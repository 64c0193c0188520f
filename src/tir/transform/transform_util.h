/* Small helpers shared by the lowering passes (internal to this folder). */
#ifndef LOOM_TIR_TRANSFORM_TRANSFORM_UTIL_H
#define LOOM_TIR_TRANSFORM_TRANSFORM_UTIL_H

#include "tir/stmt.h"

/* True for a scalar expression made only of constants, variables and
 * arithmetic/logic (no loads, calls, vectors or reductions): the kind of
 * expression handed whole to the arithmetic module. */
bool transform_expr_is_plain_scalar(const Expr *e);

/* A copy of f with a new body (name, params, orig_params kept). */
const PrimFunc *transform_func_with_body(Arena *a, const PrimFunc *f, const Stmt *body);

/* Does s (or e) load or store buffer b? */
bool transform_stmt_touches_buffer(const Stmt *s, const Buffer *b);

/* A fresh variable with the same name and dtype as v. */
const Expr *transform_var_copy(Arena *a, const Expr *v);

#endif
