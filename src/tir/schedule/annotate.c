/* Loop annotations: vectorize, parallel, unroll, bind.
 *
 * Running a loop's iterations at once (vector lanes, threads) is only safe
 * when no two iterations touch the same reduction accumulator: so every
 * block under the loop may bind only *spatial* iterators to expressions that
 * use the loop variable. (Cross-thread reductions are not supported yet, so
 * bind follows the same rule.) A block whose body uses the loop variable
 * directly, not through an iterator, is in a step loop (te_step_loop: an
 * RNN's time steps), whose iterations depend on the ones before: such a
 * loop is refused too. Unroll changes no order and is always legal. */
#include "tir/schedule/schedule_internal.h"

#include <string.h>

typedef struct ReduceCheck {
  const Expr *var;
  const char *block, *iter; /* first offender (iter NULL: the body uses var) */
  bool parallel_inside;
} ReduceCheck;

typedef struct VarUse {
  const Expr *var;
  bool found;
} VarUse;

static bool var_use_cb(Visitor *v, const Expr *e) {
  VarUse *u = v->user;
  u->found |= e == u->var;
  return !u->found;
}

/* Does block b's body or init use var itself? */
static bool uses_directly(const Block *b, const Expr *var) {
  VarUse u = {var, false};
  Visitor v = {NULL, var_use_cb, &u};
  visit_stmt(&v, b->body);
  if (b->init) visit_stmt(&v, b->init);
  return u.found;
}

static bool reduce_check_cb(Visitor *v, const Stmt *s) {
  ReduceCheck *c = v->user;
  if (s->kind == STMT_FOR && s->loop.kind == FOR_PARALLEL) c->parallel_inside = true;
  if (s->kind != STMT_BLOCK_REALIZE || c->block) return true;
  const Block *b = s->realize.block;
  for (int i = 0; i < s->realize.n; i++)
    if (b->iters[i].type != ITER_SPATIAL && expr_uses_var(s->realize.iter_values[i], c->var)) {
      c->block = b->name;
      c->iter = b->iters[i].var->var.name;
      break;
    }
  if (!c->block && uses_directly(b, c->var)) c->block = b->name;
  return true;
}

static ReduceCheck check_subtree(const Stmt *loop) {
  ReduceCheck c = {loop->loop.var, NULL, NULL, false};
  Visitor v = {reduce_check_cb, NULL, &c};
  visit_stmt(&v, loop->loop.body);
  return c;
}

static const char *const thread_tags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                          "threadIdx.y", "threadIdx.z", "vthread"};

static loom_status annotate(Schedule *s, SchRV rv, ForKind kind, const char *tag) {
  const char *what = kind == FOR_THREAD_BINDING ? "bind" : for_kind_name(kind);
  const Stmt *loop = sch_lookup_loop(s, rv);
  if (!loop) return LOOM_ERR_SCHEDULE;
  const char *name = sch_loop_name(loop);
  if (loop->loop.kind != FOR_SERIAL)
    return sch_fail(s, "%s: loop %s is already %s", what, name, for_kind_name(loop->loop.kind));
  if (kind == FOR_THREAD_BINDING) {
    bool ok = false;
    for (size_t i = 0; tag && i < sizeof thread_tags / sizeof thread_tags[0]; i++) ok |= strcmp(tag, thread_tags[i]) == 0;
    if (!ok)
      return sch_fail(s, "bind: loop %s: thread tag \"%s\" is not one of blockIdx.x/y/z, threadIdx.x/y/z, vthread",
                      name, tag ? tag : "(null)");
  }
  if (kind != FOR_UNROLLED) {
    ReduceCheck c = check_subtree(loop);
    if (c.block && !c.iter)
      return sch_fail(s, "%s: loop %s is a step loop: block \"%s\" uses its variable directly, so each "
                         "iteration may depend on the ones before",
                      what, name, c.block);
    if (c.block)
      return sch_fail(s, "%s: loop %s carries reduction iterator %s of block \"%s\"; only loops bound to "
                         "spatial iterators can run their iterations concurrently",
                      what, name, c.iter, c.block);
    if (kind == FOR_PARALLEL) {
      const Stmt *path[256];
      int d = sch_path_loops(s->func->body, loop, path, 256);
      for (int i = 0; i < d && i < 256; i++)
        if (path[i]->loop.kind == FOR_PARALLEL)
          return sch_fail(s, "parallel: loop %s is nested inside parallel loop %s", name, sch_loop_name(path[i]));
      if (c.parallel_inside) return sch_fail(s, "parallel: loop %s contains a parallel loop", name);
    }
  }
  if (kind == FOR_VECTORIZED) {
    int64_t e;
    if (!expr_as_int(loop->loop.extent, &e))
      return sch_fail(s, "vectorize: loop %s has non-constant extent %s; vector lanes must be a constant", name,
                      expr_to_string(s->arena, loop->loop.extent));
  }
  Stmt *nl = arena_memdup(s->arena, loop, sizeof *nl);
  nl->loop.kind = kind;
  nl->loop.thread_tag = tag ? arena_strdup(s->arena, tag) : NULL;
  sch_set_body(s, stmt_replace(s->arena, s->func->body, loop, nl));
  static const InstKind insts[] = {[FOR_PARALLEL] = INST_PARALLEL, [FOR_VECTORIZED] = INST_VECTORIZE,
                                   [FOR_UNROLLED] = INST_UNROLL, [FOR_THREAD_BINDING] = INST_BIND};
  Inst in = {.kind = insts[kind], .inputs = &rv, .n_inputs = 1, .str = tag};
  sch_record(s, &in);
  return LOOM_OK;
}

loom_status sch_vectorize(Schedule *s, SchRV loop) { return annotate(s, loop, FOR_VECTORIZED, NULL); }
loom_status sch_parallel(Schedule *s, SchRV loop) { return annotate(s, loop, FOR_PARALLEL, NULL); }
loom_status sch_unroll(Schedule *s, SchRV loop) { return annotate(s, loop, FOR_UNROLLED, NULL); }
loom_status sch_bind(Schedule *s, SchRV loop, const char *thread_tag) {
  return annotate(s, loop, FOR_THREAD_BINDING, thread_tag);
}
