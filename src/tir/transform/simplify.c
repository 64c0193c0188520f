/* tir_simplify: arith_simplify on every expression, with the range of each
 * enclosing loop (and block iterator) known to the analyzer, plus the
 * statement-level clean-ups that simplified expressions make possible:
 * loops of extent 1 disappear (their variable becomes the loop's min),
 * empty loops and ifs with constant conditions fold away. */
#include "arith/arith.h"
#include "support/ptrmap.h"
#include "tir/transform/transform.h"
#include "tir/transform/transform_util.h"

typedef struct SimplifyCtx {
  Analyzer *az;
} SimplifyCtx;

static const Expr *simplify_expr_cb(Mutator *m, const Expr *e) {
  SimplifyCtx *c = m->user;
  /* The analyzer works on scalar index/bool/float arithmetic; loads, vectors
   * and calls are simplified piecewise (their operands) so the pass never
   * depends on how arith treats them. */
  if (transform_expr_is_plain_scalar(e)) {
    const Expr *r = arith_simplify(c->az, e);
    return expr_equal(r, e) ? e : r; /* keep sharing: unchanged means same pointer */
  }
  const Expr *r = mutate_expr_children(m, e);
  /* A vector select whose condition became a constant (unrolled transform
   * points, Winograd's) keeps one arm: kept whole, both arms went to the C
   * compiler, a third of ResNet-50's generated source. */
  int64_t v;
  if (r->kind == EXPR_SELECT && expr_as_int(r->select.cond, &v)) return v ? r->select.t : r->select.f;
  return r;
}

static bool stmt_is_nop(const Stmt *s) { return s->kind == STMT_EVALUATE; }

static const Stmt *simplify_stmt_cb(Mutator *m, const Stmt *s) {
  SimplifyCtx *c = m->user;
  Arena *a = m->arena;
  switch (s->kind) {
    case STMT_FOR: {
      const Expr *mn = mutate_expr(m, s->loop.min), *ex = mutate_expr(m, s->loop.extent);
      int64_t ext;
      bool const_ext = expr_as_int(ex, &ext);
      if (const_ext && ext <= 0) return stmt_nop(a);
      if (const_ext && ext == 1 && s->loop.kind != FOR_THREAD_BINDING) {
        PtrMap vm;
        ptrmap_init(&vm, a);
        ptrmap_put(&vm, s->loop.var, (void *)mn);
        return mutate_stmt(m, stmt_substitute(a, s->loop.body, &vm));
      }
      arith_bind_range(c->az, s->loop.var, mn, ex);
      const Stmt *body = mutate_stmt(m, s->loop.body);
      if (stmt_is_nop(body) && s->loop.kind != FOR_THREAD_BINDING) return body;
      if (mn == s->loop.min && ex == s->loop.extent && body == s->loop.body) return s;
      Stmt *n = arena_memdup(a, s, sizeof *s);
      n->loop.min = mn;
      n->loop.extent = ex;
      n->loop.body = body;
      return n;
    }
    case STMT_IF: {
      const Expr *cond = mutate_expr(m, s->if_.cond);
      int64_t v;
      if (expr_as_int(cond, &v)) {
        const Stmt *taken = v ? s->if_.then_s : s->if_.else_s;
        return taken ? mutate_stmt(m, taken) : stmt_nop(a);
      }
      const Stmt *t = mutate_stmt(m, s->if_.then_s);
      const Stmt *e = s->if_.else_s ? mutate_stmt(m, s->if_.else_s) : NULL;
      if (e && stmt_is_nop(e)) e = NULL;
      if (stmt_is_nop(t) && !e) return t;
      if (cond == s->if_.cond && t == s->if_.then_s && e == s->if_.else_s) return s;
      return stmt_if(a, cond, t, e);
    }
    case STMT_BLOCK_REALIZE: {
      /* The iterators' domains are what the block body may assume. */
      const Block *b = s->realize.block;
      for (int i = 0; i < b->n_iters; i++)
        arith_bind_range(c->az, b->iters[i].var, b->iters[i].min, b->iters[i].extent);
      return mutate_stmt_children(m, s);
    }
    case STMT_ALLOCATE: {
      const Stmt *body = mutate_stmt(m, s->alloc.body);
      if (stmt_is_nop(body)) return body;
      return body == s->alloc.body ? s : stmt_allocate(a, s->alloc.buffer, body);
    }
    default: return mutate_stmt_children(m, s);
  }
}

const PrimFunc *tir_simplify(Arena *a, const PrimFunc *f) {
  SimplifyCtx c = {arith_analyzer_new(a)};
  Mutator m = {a, simplify_stmt_cb, simplify_expr_cb, &c};
  const Stmt *body = mutate_stmt(&m, f->body);
  if (body == f->body) return f;
  return transform_func_with_body(a, f, body);
}
