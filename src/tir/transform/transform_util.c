#include "tir/transform/transform_util.h"

#include <string.h>

static bool plain_cb(Visitor *v, const Expr *e) {
  bool *ok = v->user;
  if (!*ok) return false;
  if (e->dtype.lanes > 1) *ok = false;
  switch (e->kind) {
    case EXPR_LOAD:
    case EXPR_CALL:
    case EXPR_RAMP:
    case EXPR_BROADCAST:
    case EXPR_REDUCE: *ok = false; break;
    default: break;
  }
  return *ok;
}

bool transform_expr_is_plain_scalar(const Expr *e) {
  bool ok = true;
  Visitor v = {NULL, plain_cb, &ok};
  visit_expr(&v, e);
  return ok;
}

const PrimFunc *transform_func_with_body(Arena *a, const PrimFunc *f, const Stmt *body) {
  PrimFunc *n = arena_memdup(a, f, sizeof *f);
  n->body = body;
  return n;
}

typedef struct TouchCtx {
  const Buffer *b;
  bool found;
} TouchCtx;

static bool touch_stmt_cb(Visitor *v, const Stmt *s) {
  TouchCtx *c = v->user;
  if (c->found) return false;
  if (s->kind == STMT_STORE && s->store.buffer == c->b) c->found = true;
  return !c->found;
}

static bool touch_expr_cb(Visitor *v, const Expr *e) {
  TouchCtx *c = v->user;
  if (c->found) return false;
  if (e->kind == EXPR_LOAD && e->load.buffer == c->b) c->found = true;
  return !c->found;
}

bool transform_stmt_touches_buffer(const Stmt *s, const Buffer *b) {
  TouchCtx c = {b, false};
  Visitor v = {touch_stmt_cb, touch_expr_cb, &c};
  visit_stmt(&v, s);
  return c.found;
}

const Expr *transform_var_copy(Arena *a, const Expr *v) { return expr_var(a, v->var.name, v->dtype); }
