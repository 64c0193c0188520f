/* Helpers shared by the loop primitives: binding simplification and naming. */
#include "arith/arith.h"
#include "tir/schedule/schedule_internal.h"

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

/* The loop names of a program taken by `base` and its numbered forms
 * base_1, base_2, ...: taken[i] for base_i (taken[0]: base itself). */
typedef struct NameUse {
  const char *base;
  size_t len;
  bool *taken;
  int64_t n;
} NameUse;

static bool name_use_cb(Visitor *v, const Stmt *st) {
  NameUse *u = v->user;
  if (st->kind != STMT_FOR) return true;
  const char *name = st->loop.var->var.name;
  if (strncmp(name, u->base, u->len) != 0) return true;
  if (name[u->len] == '\0') {
    u->taken[0] = true;
  } else if (name[u->len] == '_' && name[u->len + 1] >= '1' && name[u->len + 1] <= '9') {
    int64_t i = 0;
    const char *d = name + u->len + 1;
    for (; *d >= '0' && *d <= '9' && i <= u->n; d++) i = i * 10 + (*d - '0');
    if (*d == '\0' && i < u->n) u->taken[i] = true;
  }
  return true;
}

/* Loop names live on statements: the walk skips every expression. */
static bool skip_expr_cb(Visitor *v, const Expr *e) {
  (void)v, (void)e;
  return false;
}

static bool count_loops_cb(Visitor *v, const Stmt *st) {
  *(int64_t *)v->user += st->kind == STMT_FOR;
  return true;
}

/* Names are made unique among the loops of the current program: variables
 * are ordered by name in the simplifier's canonical form (identity only
 * breaks ties), so two fresh loops sharing a name would be ordered by
 * address, and a replayed trace could print (and compare) differently.
 * The first free one of base, base_1, base_2, ... from one walk over the
 * statements (a walk per candidate, expressions included, made scheduling
 * an LSTM unrolled over 300 steps cubic in its stages). */
const Expr *sch_new_loop_var(Schedule *s, const char *base) {
  int64_t loops = 0;
  Visitor count = {count_loops_cb, skip_expr_cb, &loops};
  visit_stmt(&count, s->func->body);
  /* n loops take at most n of the n + 1 candidates. */
  NameUse u = {base, strlen(base), arena_alloc(s->arena, (size_t)(loops + 1) * sizeof(bool)), loops + 1};
  Visitor v = {name_use_cb, skip_expr_cb, &u};
  visit_stmt(&v, s->func->body);
  int64_t i = 0;
  while (u.taken[i]) i++;
  const char *name = i ? arena_printf(s->arena, "%s_%lld", base, (long long)i) : base;
  return expr_var(s->arena, name, DT_I64);
}

const char *sch_loop_name(const Stmt *loop) { return loop->loop.var->var.name; }
