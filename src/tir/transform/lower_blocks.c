/* tir_lower_blocks: blocks -> plain loop code.
 *
 * A realize of block B becomes, inside out:
 *   body with B's iterators replaced by their bindings;
 *   preceded by `if (every reduction binding == its domain min) { init }`
 *     when B has an init (unconditionally when B has no reduction iterator);
 *   wrapped in Allocate for each of B's alloc_buffers;
 *   wrapped in `if (predicate)` unless the predicate is the constant true.
 * Nested blocks are lowered first, so by the time a block is lowered its
 * body is plain statements; the root block (no iterators) just leaves its
 * allocations at the top of the function. */
#include "support/ptrmap.h"
#include "tir/transform/transform.h"
#include "tir/transform/transform_util.h"

typedef struct LowerBlocksCtx {
  LoomError *err;
  bool failed;
} LowerBlocksCtx;

static const Stmt *lower_realize(Arena *a, const Stmt *s, LowerBlocksCtx *c) {
  const Block *b = s->realize.block;
  if (s->realize.n != b->n_iters) {
    err_set(c->err, LOOM_ERR_INVALID_ARG,
            "lower_blocks: block \"%s\" has %d iterators but its realize binds %d values", b->name,
            b->n_iters, s->realize.n);
    c->failed = true;
    return s;
  }
  PtrMap vm;
  ptrmap_init(&vm, a);
  for (int i = 0; i < b->n_iters; i++) ptrmap_put(&vm, b->iters[i].var, (void *)s->realize.iter_values[i]);

  const Stmt *body = stmt_substitute(a, b->body, &vm);
  if (b->init) {
    const Stmt *init = stmt_substitute(a, b->init, &vm);
    const Expr *first = NULL; /* all reduction iterators at their minimum */
    for (int i = 0; i < b->n_iters; i++) {
      if (b->iters[i].type != ITER_REDUCE) continue;
      const Expr *mn = expr_substitute(a, b->iters[i].min, &vm);
      const Expr *eq = expr_binary(a, EXPR_EQ, s->realize.iter_values[i], mn);
      first = first ? expr_and(a, first, eq) : eq;
    }
    if (first) init = stmt_if(a, first, init, NULL);
    body = stmt_seq2(a, init, body);
  }
  for (int i = b->n_alloc - 1; i >= 0; i--) body = stmt_allocate(a, b->alloc_buffers[i], body);
  int64_t always;
  const Expr *pred = s->realize.predicate;
  if (!(expr_as_int(pred, &always) && always)) body = stmt_if(a, pred, body, NULL);
  return body;
}

static const Stmt *lower_blocks_stmt_cb(Mutator *m, const Stmt *s) {
  LowerBlocksCtx *c = m->user;
  if (c->failed) return s;
  s = mutate_stmt_children(m, s); /* nested blocks first */
  if (c->failed || s->kind != STMT_BLOCK_REALIZE) return s;
  return lower_realize(m->arena, s, c);
}

static const Expr *keep_expr_cb(Mutator *m, const Expr *e) { return e; }

const PrimFunc *tir_lower_blocks(Arena *a, const PrimFunc *f, LoomError *err) {
  LowerBlocksCtx c = {err, false};
  Mutator m = {a, lower_blocks_stmt_cb, keep_expr_cb, &c};
  const Stmt *body = mutate_stmt(&m, f->body);
  if (c.failed) {
    err_prefix(err, "in function \"%s\": ", f->name);
    return NULL;
  }
  return body == f->body ? f : transform_func_with_body(a, f, body);
}
