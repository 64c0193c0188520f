/* The schedule's state: RV table, decision source, trace recording, lookups. */
#include "support/alloc.h"
#include "support/oom.h"
#include "tir/schedule/schedule_internal.h"

#include <stdio.h>
#include <string.h>

static const char *const inst_names[] = {
#define X(e, name) name,
    SCH_INSTS(X)
#undef X
};

const char *inst_kind_name(InstKind k) { return (unsigned)k < INST_KIND_COUNT ? inst_names[k] : "?"; }

bool inst_kind_parse(const char *name, InstKind *out) {
  for (int i = 0; i < INST_KIND_COUNT; i++)
    if (strcmp(inst_names[i], name) == 0) {
      *out = (InstKind)i;
      return true;
    }
  return false;
}

Trace *trace_new(Arena *a) {
  Trace *t = ARENA_NEW(a, Trace);
  t->arena = a;
  return t;
}

void trace_append(Trace *t, const Inst *in) {
  if (t->n == t->cap) {
    int cap = t->cap ? t->cap * 2 : 16;
    Inst *p = ARENA_ARRAY(t->arena, Inst, cap);
    if (t->n) memcpy(p, t->insts, sizeof(Inst) * (size_t)t->n);
    t->insts = p;
    t->cap = cap;
  }
  Arena *a = t->arena;
  Inst c = *in;
  c.inputs = in->n_inputs ? arena_memdup(a, in->inputs, sizeof(SchRV) * (size_t)in->n_inputs) : NULL;
  c.ints = in->n_ints ? arena_memdup(a, in->ints, sizeof(int64_t) * (size_t)in->n_ints) : NULL;
  c.str = in->str ? arena_strdup(a, in->str) : NULL;
  c.floats = in->n_floats ? arena_memdup(a, in->floats, sizeof(double) * (size_t)in->n_floats) : NULL;
  c.outputs = in->n_outputs ? arena_memdup(a, in->outputs, sizeof(SchRV) * (size_t)in->n_outputs) : NULL;
  c.decision =
      in->n_decision ? arena_memdup(a, in->decision, sizeof(int64_t) * (size_t)in->n_decision) : NULL;
  t->insts[t->n++] = c;
}

int trace_length(const Trace *t) { return t->n; }

void sch_record(Schedule *s, const Inst *inst) {
  if (s->record_depth == 0) trace_append(s->trace, inst);
}

static Schedule *sch_alloc(const PrimFunc *f) {
  Arena *a = arena_new();
  Schedule *s = ARENA_NEW(a, Schedule);
  s->arena = a;
  s->orig = f;
  s->func = f;
  s->trace = trace_new(a);
  return s;
}

Schedule *sch_create(const PrimFunc *f, DecisionMode mode, uint64_t seed) {
  Schedule *s = sch_alloc(f);
  s->mode = mode == DECIDE_TRACE || mode == DECIDE_TRACE_OR_RANDOM ? DECIDE_DEFAULT : mode;
  s->rng = seed ^ 0x853c49e6748fea9bULL;
  return s;
}

Schedule *sch_create_from_decisions(const PrimFunc *f, const Trace *decisions) {
  Schedule *s = sch_alloc(f);
  s->mode = DECIDE_TRACE;
  s->decisions = decisions;
  return s;
}

Schedule *sch_create_from_decisions_or_random(const PrimFunc *f, const Trace *decisions, uint64_t seed) {
  Schedule *s = sch_create(f, DECIDE_RANDOM, seed);
  s->mode = DECIDE_TRACE_OR_RANDOM;
  s->decisions = decisions;
  return s;
}

void sch_free(Schedule *s) {
  if (s) arena_free(s->arena);
}

const PrimFunc *sch_func(const Schedule *s) { return s->func; }
const PrimFunc *sch_original(const Schedule *s) { return s->orig; }
const Trace *sch_trace(const Schedule *s) { return s->trace; }
const char *sch_error(const Schedule *s) { return s->err.msg; }
Arena *sch_arena(Schedule *s) { return s->arena; }

loom_status sch_fail(Schedule *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  err_vset(&s->err, LOOM_ERR_SCHEDULE, fmt, ap);
  va_end(ap);
  return LOOM_ERR_SCHEDULE;
}

static SchRV sch_new_rv(Schedule *s, RVEntry e) {
  if (s->n_rvs == s->cap_rvs) {
    int cap = s->cap_rvs ? s->cap_rvs * 2 : 32;
    RVEntry *p = ARENA_ARRAY(s->arena, RVEntry, cap);
    if (s->n_rvs) memcpy(p, s->rvs, sizeof(RVEntry) * (size_t)s->n_rvs);
    s->rvs = p;
    s->cap_rvs = cap;
  }
  s->rvs[s->n_rvs] = e;
  return s->n_rvs++;
}

SchRV sch_new_block_rv(Schedule *s, const char *name) {
  RVEntry e = {RV_BLOCK, arena_strdup(s->arena, name), NULL};
  return sch_new_rv(s, e);
}

SchRV sch_new_loop_rv(Schedule *s, const Expr *var) {
  RVEntry e = {RV_LOOP, NULL, var};
  return sch_new_rv(s, e);
}

const Expr *sch_loop_var(const Schedule *s, SchRV rv) {
  if (rv < 0 || rv >= s->n_rvs || s->rvs[rv].kind != RV_LOOP) return NULL;
  return s->rvs[rv].loop_var;
}

const char *sch_block_name(const Schedule *s, SchRV rv) {
  if (rv < 0 || rv >= s->n_rvs || s->rvs[rv].kind != RV_BLOCK) return NULL;
  return s->rvs[rv].block_name;
}

const Stmt *sch_lookup_block(Schedule *s, SchRV rv) {
  const char *name = sch_block_name(s, rv);
  if (!name) {
    sch_fail(s, "handle %d is not a block", (int)rv);
    return NULL;
  }
  const Stmt *r = stmt_find_block(s->func->body, name);
  if (!r) sch_fail(s, "block \"%s\" no longer exists", name);
  return r;
}

const Stmt *sch_lookup_loop(Schedule *s, SchRV rv) {
  const Expr *var = sch_loop_var(s, rv);
  if (!var) {
    sch_fail(s, "handle %d is not a loop", (int)rv);
    return NULL;
  }
  const Stmt *l = stmt_find_loop(s->func->body, var);
  if (!l) sch_fail(s, "loop \"%s\" no longer exists (it was split, fused or inlined away)", var->var.name);
  return l;
}

void sch_set_local_mem(Schedule *s, int64_t bytes, bool double_buffer) {
  PrimFunc *f = arena_memdup(s->arena, s->func, sizeof *f);
  f->local_mem_bytes = bytes;
  f->dma_double_buffer = double_buffer;
  s->func = f;
}

void sch_set_body(Schedule *s, const Stmt *body) {
  PrimFunc *f = arena_memdup(s->arena, s->func, sizeof *f);
  f->body = body;
  s->func = f;
}

const char *sch_unique_block_name(Schedule *s, const char *base) {
  if (!stmt_find_block(s->func->body, base)) return arena_strdup(s->arena, base);
  for (int i = 1;; i++) {
    const char *n = arena_printf(s->arena, "%s_%d", base, i);
    if (!stmt_find_block(s->func->body, n)) return n;
  }
}

uint64_t sch_rand(Schedule *s) {
  uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* ---- tree paths ---- */

typedef struct PathCtx {
  const Stmt *target;
  const Stmt **stack;
  int depth, max_depth;
  bool found;
  const Stmt *found_stack[256];
  int found_depth;
} PathCtx;

/* Depth-first search keeping the chain of ancestors of every node. */
static bool path_search(PathCtx *c, const Stmt *s) {
  if (!s) return false;
  if (s == c->target) {
    memcpy(c->found_stack, c->stack, sizeof(Stmt *) * (size_t)c->depth);
    c->found_depth = c->depth;
    return true;
  }
  if (c->depth >= c->max_depth) return false;
  c->stack[c->depth++] = s;
  bool r = false;
  switch (s->kind) {
    case STMT_FOR: r = path_search(c, s->loop.body); break;
    case STMT_BLOCK_REALIZE:
      r = path_search(c, s->realize.block->init) || path_search(c, s->realize.block->body);
      break;
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n && !r; i++) r = path_search(c, s->seq.stmts[i]);
      break;
    case STMT_IF: r = path_search(c, s->if_.then_s) || path_search(c, s->if_.else_s); break;
    case STMT_ALLOCATE: r = path_search(c, s->alloc.body); break;
    default: break;
  }
  c->depth--;
  return r;
}

static int ancestors(const Stmt *root, const Stmt *target, const Stmt **out) {
  const Stmt *stack[256];
  PathCtx *c = loom_calloc(1, sizeof *c);
  /* Not -1: callers read that as "not found" and would schedule on. */
  if (!c) oom_raise("a schedule path search (%zu bytes)", sizeof *c);
  c->target = target;
  c->stack = stack;
  c->max_depth = 256;
  int n = -1;
  if (path_search(c, root)) {
    n = c->found_depth;
    memcpy(out, c->found_stack, sizeof(Stmt *) * (size_t)n);
  }
  loom_free(c);
  return n;
}

int sch_path_loops(const Stmt *root, const Stmt *target, const Stmt **out, int max) {
  const Stmt *anc[256];
  int n = ancestors(root, target, anc);
  if (n < 0) return -1;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (anc[i]->kind == STMT_FOR) {
      if (k < max) out[k] = anc[i];
      k++;
    }
  return k;
}

const Stmt *sch_parent(const Stmt *root, const Stmt *target) {
  const Stmt *anc[256];
  int n = ancestors(root, target, anc);
  return n > 0 ? anc[n - 1] : NULL;
}

const Stmt *sch_enclosing_block(const Stmt *root, const Stmt *target) {
  const Stmt *anc[256];
  int n = ancestors(root, target, anc);
  for (int i = n - 1; i >= 0; i--)
    if (anc[i]->kind == STMT_BLOCK_REALIZE) return anc[i];
  return NULL;
}
