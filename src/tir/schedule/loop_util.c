/* Helpers shared by the loop primitives: binding simplification and naming. */
#include "arith/arith.h"
#include "tir/schedule/sched_internal.h"

#include <string.h>

typedef struct LoopRange {
  const Expr *var, *min, *extent;
} LoopRange;

typedef struct SimplifyCtx {
  const Expr *const *vars;
  int n_vars;
  LoopRange stack[256];
  int depth;
} SimplifyCtx;

static bool uses_any(const Expr *e, const Expr *const *vars, int n) {
  for (int i = 0; i < n; i++)
    if (expr_uses_var(e, vars[i])) return true;
  return false;
}

/* Every enclosing loop's range is known, so floordiv/floormod of split and
 * fused iterators fold back to plain affine forms. */
static Analyzer *analyzer_for(Arena *a, const SimplifyCtx *c) {
  Analyzer *az = arith_analyzer_new(a);
  for (int i = 0; i < c->depth; i++) arith_bind_range(az, c->stack[i].var, c->stack[i].min, c->stack[i].extent);
  return az;
}

static const Stmt *simplify_stmt_cb(Mutator *m, const Stmt *s) {
  SimplifyCtx *c = m->user;
  if (s->kind == STMT_FOR) {
    /* Inner loop bounds may mention a replaced loop (after compute_at the
     * region a loop covers depends on the outer loops). */
    if (uses_any(s->loop.min, c->vars, c->n_vars) || uses_any(s->loop.extent, c->vars, c->n_vars)) {
      Analyzer *az = analyzer_for(m->arena, c);
      Stmt *n = arena_memdup(m->arena, s, sizeof *n);
      n->loop.min = arith_simplify(az, s->loop.min);
      n->loop.extent = arith_simplify(az, s->loop.extent);
      s = n;
    }
    LOOM_ASSERT(c->depth < 256);
    c->stack[c->depth++] = (LoopRange){s->loop.var, s->loop.min, s->loop.extent};
    const Stmt *r = mutate_stmt_children(m, s);
    c->depth--;
    return r;
  }
  s = mutate_stmt_children(m, s);
  if (s->kind != STMT_BLOCK_REALIZE) return s;
  bool touched = uses_any(s->realize.predicate, c->vars, c->n_vars);
  for (int i = 0; i < s->realize.n && !touched; i++)
    touched = uses_any(s->realize.iter_values[i], c->vars, c->n_vars);
  if (!touched) return s;
  Analyzer *az = analyzer_for(m->arena, c);
  const Expr **vals = ARENA_ARRAY(m->arena, const Expr *, s->realize.n);
  for (int i = 0; i < s->realize.n; i++) vals[i] = arith_simplify(az, s->realize.iter_values[i]);
  const Expr *pred = arith_simplify(az, s->realize.predicate);
  return stmt_realize(m->arena, vals, s->realize.n, pred, s->realize.block);
}

/* Expressions are only rewritten at realizes, so the walk skips them. */
static const Expr *keep_expr_cb(Mutator *m, const Expr *e) { return e; }

const Stmt *sch_simplify_bindings(Schedule *s, const Stmt *root, const Expr *const *vars, int n) {
  SimplifyCtx *c = arena_alloc(s->arena, sizeof *c);
  c->vars = vars;
  c->n_vars = n;
  Mutator m = {s->arena, simplify_stmt_cb, keep_expr_cb, c};
  return mutate_stmt(&m, root);
}

typedef struct NameSearch {
  const char *name;
  bool found;
} NameSearch;

static bool find_loop_name_cb(Visitor *v, const Stmt *st) {
  NameSearch *ns = v->user;
  if (st->kind == STMT_FOR && strcmp(st->loop.var->var.name, ns->name) == 0) ns->found = true;
  return !ns->found;
}

static bool loop_name_used(const Stmt *body, const char *name) {
  NameSearch ns = {name, false};
  Visitor v = {.visit_stmt = find_loop_name_cb, .user = &ns};
  visit_stmt(&v, body);
  return ns.found;
}

/* Names are made unique among the loops of the current program: variables
 * are ordered by name in the simplifier's canonical form (identity only
 * breaks ties), so two fresh loops sharing a name would be ordered by
 * address, and a replayed trace could print (and compare) differently. */
const Expr *sch_new_loop_var(Schedule *s, const char *base) {
  const char *name = base;
  for (int i = 1; loop_name_used(s->func->body, name); i++) name = arena_printf(s->arena, "%s_%d", base, i);
  return expr_var(s->arena, name, DT_I64);
}

const char *sch_loop_name(const Stmt *loop) { return loop->loop.var->var.name; }
