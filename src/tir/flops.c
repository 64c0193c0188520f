/* tir_func_flops: the rule is in flops.h. */
#include "tir/flops.h"

#include <stdbool.h>

#define FLOPS_LIMIT ((int64_t)1 << 53) /* exact in a double, and in the artifact's JSON */

typedef struct Count {
  int64_t total;
  bool unknown;
  bool min_one; /* tir_func_work: a block without arithmetic counts 1 per point */
} Count;

static bool is_arith(ExprKind k) {
  switch (k) {
    case EXPR_ADD:
    case EXPR_SUB:
    case EXPR_MUL:
    case EXPR_DIV:
    case EXPR_MOD:
    case EXPR_FLOORDIV:
    case EXPR_FLOORMOD:
    case EXPR_MIN:
    case EXPR_MAX:
    case EXPR_CALL: return true;
    default: return false;
  }
}

/* Operations in one block's body; nested blocks are counted on their own. */
static bool body_stmt(Visitor *v, const Stmt *s) {
  (void)v;
  return s->kind != STMT_BLOCK_REALIZE;
}

static bool body_expr(Visitor *v, const Expr *e) {
  if (is_arith(e->kind) && dtype_is_float(e->dtype)) *(int64_t *)v->user += e->dtype.lanes ? e->dtype.lanes : 1;
  return true;
}

static int64_t ops_per_point(const Block *b) {
  int64_t ops = 0;
  Visitor v = {body_stmt, body_expr, &ops};
  visit_stmt(&v, b->body);
  return ops;
}

static bool count_block(Visitor *v, const Stmt *s) {
  Count *c = v->user;
  if (s->kind != STMT_BLOCK_REALIZE || c->unknown) return !c->unknown;
  const Block *b = s->realize.block;
  int64_t ops = ops_per_point(b);
  if (ops == 0 && !c->min_one) return true;
  if (ops == 0) ops = 1;
  int64_t points = 1;
  for (int i = 0; i < b->n_iters; i++) {
    int64_t e;
    if (!expr_as_int(b->iters[i].extent, &e) || e < 0) {
      c->unknown = true;
      return false;
    }
    if (e == 0) return true;
    if (points > FLOPS_LIMIT / e) {
      c->unknown = true;
      return false;
    }
    points *= e;
  }
  if (points > FLOPS_LIMIT / ops || c->total > FLOPS_LIMIT - points * ops) {
    c->unknown = true;
    return false;
  }
  c->total += points * ops;
  return true;
}

static int64_t count(const PrimFunc *f, bool min_one) {
  if (!f || !f->body) return -1;
  Count c = {0, false, min_one};
  Visitor v = {count_block, NULL, &c};
  visit_stmt(&v, f->body);
  return c.unknown ? -1 : c.total;
}

int64_t tir_func_flops(const PrimFunc *f) { return count(f, false); }

int64_t tir_func_work(const PrimFunc *f) { return count(f, true); }
