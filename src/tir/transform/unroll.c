/* tir_unroll: a FOR_UNROLLED loop with constant extent <= max_extent becomes
 * a sequence of copies of its body, the loop variable replaced by min + i,
 * when all the copies fit the code-size budget (tir_unroll_copies). Longer,
 * symbolic or too big unrolled loops stay loops (codegen emits an unroll
 * pragma for as many copies as fit). Inner loops are unrolled first, so
 * nested unrolls multiply out until the budget stops them: the innermost
 * loops, whose copies share the most (a register tile's columns), are the
 * ones that get unrolled. */
#include "support/ptrmap.h"
#include "tir/transform/transform.h"
#include "tir/transform/transform_util.h"

static const Stmt *unroll_stmt_cb(Mutator *m, const Stmt *s) {
  s = mutate_stmt_children(m, s);
  if (s->kind != STMT_FOR || s->loop.kind != FOR_UNROLLED) return s;
  int max_extent = *(const int *)m->user;
  int64_t ext;
  if (!expr_as_int(s->loop.extent, &ext) || ext > max_extent) return s;
  if (ext <= 0) return stmt_nop(m->arena);
  if (tir_unroll_copies(ext, tir_code_size(s->loop.body)) < ext) return s;
  Arena *a = m->arena;
  const Stmt **copies = ARENA_ARRAY(a, const Stmt *, ext);
  for (int64_t i = 0; i < ext; i++) {
    PtrMap vm;
    ptrmap_init(&vm, a);
    int64_t mn;
    const Expr *value = expr_as_int(s->loop.min, &mn) ? expr_i64(a, mn + i)
                                                      : expr_add(a, s->loop.min, expr_i64(a, i));
    ptrmap_put(&vm, s->loop.var, (void *)value);
    copies[i] = stmt_substitute(a, s->loop.body, &vm);
  }
  return stmt_seq(a, copies, (int)ext);
}

static const Expr *keep_expr_cb(Mutator *m, const Expr *e) { return e; }

const PrimFunc *tir_unroll(Arena *a, const PrimFunc *f, int max_extent) {
  Mutator m = {a, unroll_stmt_cb, keep_expr_cb, &max_extent};
  const Stmt *body = mutate_stmt(&m, f->body);
  return body == f->body ? f : transform_func_with_body(a, f, body);
}
