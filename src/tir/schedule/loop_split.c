/* split: one loop becomes n nested loops.
 *
 * The old variable v is replaced everywhere under the loop by
 * min + ((v_0 * f_1 + v_1) * f_2 + v_2)... and, when the factors' product
 * exceeds the extent (imperfect split), every block directly under the loop
 * gets the predicate `fused < extent` conjoined to its own, so no iteration
 * outside the original domain runs (no out-of-range access). */
#include "arith/arith.h"
#include "support/ptrmap.h"
#include "tir/schedule/schedule_internal.h"

#include <string.h>

typedef struct PredCtx {
  const Expr *pred;
} PredCtx;

/* Conjoins the predicate to the outermost realizes only: a block nested in a
 * block body is already guarded by its parent's predicate. */
static const Stmt *add_pred_cb(Mutator *m, const Stmt *s) {
  if (s->kind != STMT_BLOCK_REALIZE) return mutate_stmt_children(m, s);
  const Expr *p = ((PredCtx *)m->user)->pred;
  const Expr *old = s->realize.predicate;
  const Expr *np = (old->kind == EXPR_INT && old->int_value != 0) ? p : expr_and(m->arena, old, p);
  return stmt_realize(m->arena, s->realize.iter_values, s->realize.n, np, s->realize.block);
}

static const Expr *keep_expr_cb(Mutator *m, const Expr *e) { return e; }

/* Checks factors and computes the extents of the new loops; fills *perfect. */
static bool split_extents(Schedule *s, const Stmt *loop, const int64_t *factors, int n,
                          const Expr **extents, bool *perfect) {
  Arena *a = s->arena;
  const char *name = sch_loop_name(loop);
  int inferred = -1;
  int64_t known = 1;
  for (int i = 0; i < n; i++) {
    if (factors[i] == -1) {
      if (inferred >= 0) {
        sch_fail(s, "split of loop %s: at most one factor may be -1, factors %d and %d are", name,
                 inferred, i);
        return false;
      }
      inferred = i;
      continue;
    }
    if (factors[i] < 1) {
      sch_fail(s, "split of loop %s: factor %d is %lld; expected a positive integer or -1", name, i,
               (long long)factors[i]);
      return false;
    }
    if (__builtin_mul_overflow(known, factors[i], &known)) {
      sch_fail(s, "split of loop %s: the product of the factors overflows int64", name);
      return false;
    }
  }
  int64_t ext;
  bool const_ext = expr_as_int(loop->loop.extent, &ext);
  if (!const_ext && inferred < 0) {
    sch_fail(s, "split of loop %s: its extent %s is not a constant, so one factor must be -1", name,
             expr_to_string(a, loop->loop.extent));
    return false;
  }
  for (int i = 0; i < n; i++) extents[i] = i == inferred ? NULL : expr_i64(a, factors[i]);
  if (const_ext) {
    if (inferred >= 0) {
      int64_t f = (ext + known - 1) / known;
      extents[inferred] = expr_i64(a, f);
      known *= f;
    } else if (known < ext) {
      sch_fail(s, "split of loop %s: the product of the factors (%lld) is less than its extent %lld", name,
               (long long)known, (long long)ext);
      return false;
    }
    *perfect = known == ext;
  } else {
    /* Symbolic extent: ceildiv(extent, product of the others). */
    const Expr *k = expr_i64(a, known);
    extents[inferred] = expr_floordiv(a, expr_add(a, loop->loop.extent, expr_i64(a, known - 1)), k);
    *perfect = known == 1;
  }
  return true;
}

int sch_split(Schedule *s, SchRV loop_rv, const int64_t *factors, int n, SchRV *out) {
  const Stmt *loop = sch_lookup_loop(s, loop_rv);
  if (!loop) return -1;
  const char *name = sch_loop_name(loop);
  if (n < 1 || !factors) {
    sch_fail(s, "split of loop %s: expected at least one factor, got %d", name, n);
    return -1;
  }
  if (loop->loop.kind != FOR_SERIAL) {
    sch_fail(s, "split of loop %s: the loop is %s; split it before annotating it", name,
             for_kind_name(loop->loop.kind));
    return -1;
  }
  Arena *a = s->arena;
  const Expr **extents = ARENA_ARRAY(a, const Expr *, n);
  bool perfect = false;
  if (!split_extents(s, loop, factors, n, extents, &perfect)) return -1;

  const Expr **vars = ARENA_ARRAY(a, const Expr *, n);
  const Expr *fused = NULL;
  for (int i = 0; i < n; i++) {
    vars[i] = sch_new_loop_var(s, arena_printf(a, "%s_%d", name, i));
    fused = fused ? expr_add(a, expr_mul(a, fused, extents[i]), vars[i]) : vars[i];
  }
  PtrMap vmap;
  ptrmap_init(&vmap, a);
  const Expr *value = expr_is_int(loop->loop.min, 0) ? fused : expr_add(a, loop->loop.min, fused);
  ptrmap_put(&vmap, loop->loop.var, (void *)value);
  const Stmt *body = stmt_substitute(a, loop->loop.body, &vmap);
  if (!perfect) {
    PredCtx pc = {expr_lt(a, fused, loop->loop.extent)};
    Mutator m = {a, add_pred_cb, keep_expr_cb, &pc};
    body = mutate_stmt(&m, body);
  }
  for (int i = n - 1; i >= 0; i--) body = stmt_for(a, vars[i], expr_i64(a, 0), extents[i], FOR_SERIAL, body);
  const Stmt *root = stmt_replace(a, s->func->body, loop, body);
  sch_set_body(s, sch_simplify_bindings(s, root, vars, n));

  SchRV *rvs = ARENA_ARRAY(a, SchRV, n);
  for (int i = 0; i < n; i++) {
    rvs[i] = sch_new_loop_rv(s, vars[i]);
    if (out) out[i] = rvs[i];
  }
  Inst in = {.kind = INST_SPLIT, .inputs = &loop_rv, .n_inputs = 1, .ints = factors, .n_ints = n,
             .outputs = rvs, .n_outputs = n};
  sch_record(s, &in);
  return 0;
}
