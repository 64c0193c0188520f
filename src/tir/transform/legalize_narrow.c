/* tir_legalize_narrow: storage-only element types are computed in f32 / i32.
 *
 * f16, bf16, the 8- and 4-bit floats and the 4- and 2-bit integers live in
 * memory in their own format (dtype_is_narrow; include/loom/loom_convert.h
 * has the formats) but no arithmetic happens in them, as TVM and XLA do
 * on CPUs without native half math. After this pass:
 *   - a load of a narrow buffer is cast(C, load) with C = dtype_compute_type
 *     (f32, or i32 for the integers): a widening conversion;
 *   - a store to a narrow buffer stores cast(S, v): a rounding conversion
 *     (to nearest even; integers wrap); a value that is already S (a copy
 *     from a buffer of the same type, or an explicit cast) is stored as is;
 *   - arithmetic, comparisons, selects, calls and constants of a narrow
 *     dtype are done in C (constants rounded to S first);
 *   - an explicit cast to S in the middle of an expression rounds through S
 *     and widens again: cast(C, cast(S, x)), so Cast(f16) keeps its meaning
 *     inside a fused kernel.
 * So the only narrow-typed expressions left are loads and casts, and the
 * only casts that involve a narrow type are S -> C and (f32, f64 or i64)
 * -> S, which the code generator emits with loom_convert.h's helpers.
 * f64 -> f16 stays direct (numpy rounds it once); every other source goes
 * through f32 (ints to f16 are exact that way: f16 overflows long before
 * f32 loses integer precision).
 *
 * Within one stage, an expression of a narrow dtype is thus evaluated in
 * f32 and rounded once, on store, which is at least as precise as rounding
 * after every operation; each stage (te compute) still rounds its result. */
#include "tir/transform/transform.h"
#include "tir/transform/transform_util.h"


/* x (already legal, so not narrow) as the operand of a conversion to the
 * narrow type `to` (lanes of x). */
static const Expr *conversion_operand(Arena *a, DType to, const Expr *x) {
  DType t = x->dtype;
  int lanes = t.lanes;
  if (dtype_is_int(to)) return dtype_is_int(t) ? x : expr_cast(a, dtype_make(DT_INT, 64, lanes), x);
  if (t.code == DT_FLOAT && t.bits == 32) return x;
  if (t.code == DT_FLOAT && t.bits == 64 && to.code == DT_FLOAT && to.bits == 16) return x;
  return expr_cast(a, dtype_make(DT_FLOAT, 32, lanes), x);
}

static const Expr *round_to(Arena *a, DType s, const Expr *x) {
  return expr_cast(a, dtype_with_lanes(s, x->dtype.lanes), conversion_operand(a, s, x));
}

static const Expr *legal_expr(Mutator *m, const Expr *e) {
  Arena *a = m->arena;
  DType t = e->dtype, c = dtype_compute_type(t);
  bool narrow = dtype_is_narrow(t);
  switch (e->kind) {
    case EXPR_FLOAT:
      return narrow ? expr_float(a, c, dtype_narrow_round(dtype_element(t), e->float_value)) : e;
    case EXPR_INT:
      return narrow ? expr_int(a, c, dtype_narrow_wrap(t, e->int_value)) : e;
    case EXPR_LOAD: {
      const Expr *x = mutate_expr_children(m, e);
      return narrow ? expr_cast(a, c, x) : x;
    }
    case EXPR_CAST: {
      const Expr *x = mutate_expr(m, e->un.a);
      if (narrow) return expr_cast(a, c, round_to(a, t, x));
      return dtype_eq(x->dtype, t) ? x : expr_cast(a, t, x);
    }
    case EXPR_CALL: {
      const Expr *x = mutate_expr_children(m, e);
      return narrow ? expr_call(a, x->call.op, c, x->call.args, x->call.n) : x;
    }
    default:
      /* binary, compare, select, not, broadcast, ramp: the result dtype
       * follows the (now legal) operands */
      return mutate_expr_children(m, e);
  }
}

static const Stmt *legal_stmt(Mutator *m, const Stmt *s) {
  const Stmt *r = mutate_stmt_children(m, s);
  if (r->kind != STMT_STORE || !dtype_is_narrow(r->store.buffer->dtype)) return r;
  DType st = dtype_element(r->store.buffer->dtype);
  const Expr *v = r->store.value;
  /* cast(C, y) with y already of the stored type: store y (a copy or an
   * explicit rounding; no second conversion) */
  if (v->kind == EXPR_CAST && dtype_eq(dtype_element(v->un.a->dtype), st))
    v = v->un.a;
  else
    v = round_to(m->arena, st, v);
  return stmt_store(m->arena, r->store.buffer, v, r->store.indices, r->store.n);
}

static bool uses_narrow(const PrimFunc *f);

const PrimFunc *tir_legalize_narrow(Arena *a, const PrimFunc *f) {
  if (!uses_narrow(f)) return f;
  Mutator m = {a, legal_stmt, legal_expr, NULL};
  const Stmt *body = mutate_stmt(&m, f->body);
  return body == f->body ? f : transform_func_with_body(a, f, body);
}

/* ---- is there anything to do? ---- */

typedef struct Found {
  bool narrow;
} Found;

static bool find_expr(Visitor *v, const Expr *e) {
  Found *fd = v->user;
  if (dtype_is_narrow(e->dtype)) fd->narrow = true;
  return !fd->narrow;
}

static bool find_stmt(Visitor *v, const Stmt *s) {
  Found *fd = v->user;
  if (s->kind == STMT_STORE && dtype_is_narrow(s->store.buffer->dtype)) fd->narrow = true;
  return !fd->narrow;
}

static bool uses_narrow(const PrimFunc *f) {
  Found fd = {false};
  for (int i = 0; i < f->n_params; i++)
    if (dtype_is_narrow(f->params[i]->dtype)) return true;
  Visitor v = {find_stmt, find_expr, &fd};
  visit_stmt(&v, f->body);
  return fd.narrow;
}
