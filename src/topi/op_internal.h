/* Helpers shared by the op_*.c compute definitions (not a public API). */
#ifndef LOOM_TOPI_OP_INTERNAL_H
#define LOOM_TOPI_OP_INTERNAL_H

#include "topi/topi_ops.h"

#include <stdbool.h>

#define TOPI_MAX_RANK 8

/* name[i...] = in-bounds ? data[i - before] : pad_value, extent shape[d] +
 * before[d] + after[d] along each dimension (op_pad_stage.c): the padding
 * stage of the windowed ops (conv, pool), schedule rule "pad". */
TeTensor *topi_pad(Arena *a, const char *name, const TeTensor *data, const int64_t *before,
                   const int64_t *after, const Expr *pad_value, LoomError *err);
/* A constant of dtype t with value v (truncated for integers, v != 0 for bool). */
const Expr *op_const(Arena *a, DType t, double v);
/* Normalizes axis into [0, rank) (or [0, rank] when inclusive); false with a
 * message naming op and what when out of range. */
bool op_axis(const char *op, const char *what, int64_t axis, int rank, bool inclusive, int *out,
             LoomError *err);
/* Loads x at the output index `out` (rank rout) under numpy broadcasting:
 * x's dimension d aligns with output axis d + rout - x->ndim; extent-1
 * dimensions read index 0. */
const Expr *op_load_broadcast(Arena *a, const TeTensor *x, const Expr *const *out, int rout);
/* "<name>_<suffix>" in the arena. */
const char *op_stage(Arena *a, const char *name, const char *suffix);
/* Checks the common arguments: non-NULL name and tensor, rank <= TOPI_MAX_RANK. */
bool op_check_tensor(const char *op, const char *what, const TeTensor *t, LoomError *err);
bool op_check_name(const char *op, const char *name, LoomError *err);
/* f32 or f64 (the float ops). */
bool op_check_float(const char *op, const char *what, const TeTensor *t, LoomError *err);
int64_t op_numel(int ndim, const int64_t *shape);
/* ONNX Cast of a value (op_elemwise.c): to bool is v != 0; with saturate, a
 * cast to an 8-bit float clamps to its largest finite value first. */
const Expr *op_cast_value(Arena *a, const Expr *v, DType to, bool saturate);
/* An index operand (any integer dtype) as i64, negative values counted
 * from dim (i + dim); with clamp, then clamped into [0, dim) so a load
 * stays in bounds whatever the data says. */
const Expr *op_index_wrap(Arena *a, const Expr *i, int64_t dim, bool clamp);

#endif
