/* tir_loop_partition: remove guards that hold on a prefix of a loop.
 *
 * An imperfect split leaves `if (io*4 + ii < 62)` inside its loops. For a
 * loop v in [min, min+ext) we look at every conjunct of every if-condition
 * below it that mentions v, and find by binary search the largest k such
 * that the analyzer proves the conjunct for v in [min, min+k) (every loop
 * variable inside ranging over its whole domain, which is the stronger
 * claim). With K the smallest such positive k, the loop becomes
 *     for v in [min, min+K):   body without the conjuncts proven there
 *     for v' in [min+K, ext):  body (a tail of one iteration is inlined)
 * Each removed conjunct was proven for the whole main range, so the result is
 * exact; the search only decides how much we gain. Loops inside both parts
 * are then partitioned the same way (the tail of `io` fixes io, which makes
 * the inner `ii` guard a prefix guard too).
 *
 * Every partition copies a loop body, and nested ones multiply (a tail at
 * each of d levels: up to 2^d copies of the innermost body), so the copies
 * added to one function are bounded by TIR_PARTITION_BUDGET (code_size.c):
 * a loop whose copy would pass it keeps its guards (correct, slower), and
 * the outer loops, partitioned first, get the budget first. */
#include "arith/arith.h"
#include "support/ptrmap.h"
#include "support/vec.h"
#include "tir/transform/transform.h"
#include "tir/transform/transform_util.h"

typedef VEC(const Expr *) ExprList;

typedef struct PartitionCtx {
  Analyzer *az;
  Arena *arena;
  int64_t added; /* code-size nodes the copies made so far added */
} PartitionCtx;

/* ---- collecting guard conjuncts ---- */

static void conjuncts(Arena *a, const Expr *e, ExprList *out) {
  if (e->kind == EXPR_AND) {
    conjuncts(a, e->bin.a, out);
    conjuncts(a, e->bin.b, out);
    return;
  }
  VEC_PUSH(a, *out, e);
}

static bool list_has(const ExprList *l, const Expr *e) {
  for (int i = 0; i < l->n; i++)
    if (expr_equal(l->items[i], e)) return true;
  return false;
}

typedef struct CollectCtx {
  Arena *arena;
  const Expr *var;
  ExprList terms;
} CollectCtx;

static bool collect_cb(Visitor *v, const Stmt *s) {
  CollectCtx *c = v->user;
  if (s->kind != STMT_IF) return true;
  ExprList all = {0};
  conjuncts(c->arena, s->if_.cond, &all);
  for (int i = 0; i < all.n; i++) {
    const Expr *t = all.items[i];
    if (expr_uses_var(t, c->var) && transform_expr_is_plain_scalar(t) && !list_has(&c->terms, t))
      VEC_PUSH(c->arena, c->terms, t);
  }
  return true;
}

/* ---- removing proven conjuncts ---- */

typedef struct RemoveCtx {
  const ExprList *proven;
} RemoveCtx;

static const Stmt *remove_cb(Mutator *m, const Stmt *s) {
  RemoveCtx *c = m->user;
  s = mutate_stmt_children(m, s);
  if (s->kind != STMT_IF) return s;
  ExprList all = {0};
  conjuncts(m->arena, s->if_.cond, &all);
  const Expr *kept = NULL;
  bool removed = false;
  for (int i = 0; i < all.n; i++) {
    if (list_has(c->proven, all.items[i])) {
      removed = true;
      continue;
    }
    kept = kept ? expr_and(m->arena, kept, all.items[i]) : all.items[i];
  }
  if (!removed) return s;
  if (!kept) return s->if_.then_s;
  return stmt_if(m->arena, kept, s->if_.then_s, s->if_.else_s);
}

static const Expr *keep_expr_cb(Mutator *m, const Expr *e) { return e; }

static const Stmt *remove_terms(Arena *a, const Stmt *s, const ExprList *proven) {
  if (proven->n == 0) return s;
  RemoveCtx c = {proven};
  Mutator m = {a, remove_cb, keep_expr_cb, &c};
  return mutate_stmt(&m, s);
}

/* ---- the partition itself ---- */

/* Largest k in [0, ext] such that term is proven for var in [min, min+k). */
static int64_t proven_prefix(Analyzer *az, const Expr *var, int64_t min, int64_t ext, const Expr *term) {
  arith_bind_const_range(az, var, min, ext);
  if (arith_can_prove(az, term)) return ext;
  int64_t lo = 0, hi = ext; /* holds at lo (vacuously at 0), fails at hi */
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    arith_bind_const_range(az, var, min, mid);
    if (arith_can_prove(az, term)) lo = mid;
    else hi = mid;
  }
  return lo;
}

static const Stmt *partition_stmt_cb(Mutator *m, const Stmt *s);

static const Stmt *partition_loop(Mutator *m, const Stmt *s) {
  PartitionCtx *c = m->user;
  Arena *a = m->arena;
  const Expr *var = s->loop.var;
  int64_t min, ext;
  if (s->loop.kind == FOR_THREAD_BINDING || !expr_as_int(s->loop.min, &min) ||
      !expr_as_int(s->loop.extent, &ext) || ext <= 1)
    return mutate_stmt_children(m, s);

  CollectCtx cc = {a, var, {0}};
  Visitor v = {collect_cb, NULL, &cc};
  visit_stmt(&v, s->loop.body);
  int64_t *k = ARENA_ARRAY(a, int64_t, cc.terms.n);
  int64_t K = ext;
  bool any = false;
  for (int i = 0; i < cc.terms.n; i++) {
    k[i] = proven_prefix(c->az, var, min, ext, cc.terms.items[i]);
    if (k[i] > 0) {
      any = true;
      if (k[i] < K) K = k[i];
    }
  }
  arith_bind_const_range(c->az, var, min, ext);
  if (!any) return mutate_stmt_children(m, s);
  int64_t copy = K == ext ? 0 : tir_code_size(s->loop.body);
  if (c->added + copy > TIR_PARTITION_BUDGET) return mutate_stmt_children(m, s);
  c->added += copy;

  ExprList main_terms = {0}, tail_terms = {0};
  for (int i = 0; i < cc.terms.n; i++) {
    if (k[i] >= K && k[i] > 0) VEC_PUSH(a, main_terms, cc.terms.items[i]);
    if (k[i] == ext) VEC_PUSH(a, tail_terms, cc.terms.items[i]);
  }

  arith_bind_const_range(c->az, var, min, K);
  const Stmt *main_body = mutate_stmt(m, remove_terms(a, s->loop.body, &main_terms));
  Stmt *main_loop = (Stmt *)arena_memdup(a, s, sizeof *s);
  main_loop->loop.extent = expr_i64(a, K);
  main_loop->loop.body = main_body;
  arith_bind_const_range(c->az, var, min, ext);
  if (K == ext) return main_loop;

  const Stmt *tail_body = remove_terms(a, s->loop.body, &tail_terms);
  PtrMap vm;
  ptrmap_init(&vm, a);
  const Stmt *tail;
  if (ext - K == 1) {
    ptrmap_put(&vm, var, (void *)expr_i64(a, min + K));
    tail = mutate_stmt(m, stmt_substitute(a, tail_body, &vm));
  } else {
    const Expr *tv = transform_var_copy(a, var);
    ptrmap_put(&vm, var, (void *)tv);
    arith_bind_const_range(c->az, tv, min + K, ext - K);
    Stmt *t = (Stmt *)arena_memdup(a, s, sizeof *s);
    t->loop.var = tv;
    t->loop.min = expr_i64(a, min + K);
    t->loop.extent = expr_i64(a, ext - K);
    t->loop.body = mutate_stmt(m, stmt_substitute(a, tail_body, &vm));
    tail = t;
  }
  return stmt_seq2(a, main_loop, tail);
}

static const Stmt *partition_stmt_cb(Mutator *m, const Stmt *s) {
  if (s->kind == STMT_FOR) return partition_loop(m, s);
  return mutate_stmt_children(m, s);
}

/* Every loop variable ranges over its loop's domain while we prove guards
 * of loops around it. */
static bool bind_loops_cb(Visitor *v, const Stmt *s) {
  if (s->kind == STMT_FOR) arith_bind_range(v->user, s->loop.var, s->loop.min, s->loop.extent);
  return true;
}

const PrimFunc *tir_loop_partition(Arena *a, const PrimFunc *f) {
  PartitionCtx c = {arith_analyzer_new(a), a, 0};
  Visitor v = {bind_loops_cb, NULL, c.az};
  visit_stmt(&v, f->body);
  Mutator m = {a, partition_stmt_cb, keep_expr_cb, &c};
  const Stmt *body = mutate_stmt(&m, f->body);
  return body == f->body ? f : transform_func_with_body(a, f, body);
}
