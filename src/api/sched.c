/* Schedules: checked wrappers over tir/schedule/schedule.h. The wrappers
 * validate what the schedule layer cannot see (NULL arrays, counts, handle
 * kinds, scopes) and turn the schedule's refusal message into the
 * context's error. */
#include "api/api_internal.h"
#include "support/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LOOPS 16

/* The context of a live schedule handle, NULL otherwise. When the handle
 * leads to a context (a freed schedule, another kind of handle) the reason
 * is recorded there. */
static loom_ctx *sched_ctx(loom_sched *s, const char *fn) {
  if (!s) return NULL;
  loom_ctx *ctx = ((ApiHead *)s)->ctx;
  if (!api_ctx_ok(ctx) || !api_check(ctx, s, API_SCHED, fn, "s")) return NULL;
  return ctx;
}

static loom_status refused(loom_sched *s, const char *fn) {
  const char *msg = sch_error(s->s);
  return api_fail(s->h.ctx, LOOM_ERR_SCHEDULE, fn, "%s", msg && *msg ? msg : "refused");
}

static bool check_loop(loom_sched *s, loom_rv rv, const char *fn, const char *arg) {
  if (sch_loop_var(s->s, rv)) return true;
  const char *block = sch_block_name(s->s, rv);
  if (block)
    api_fail(s->h.ctx, LOOM_ERR_INVALID_ARG, fn,
             "%s: handle %d is the block \"%s\", expected a loop", arg, (int)rv, block);
  else
    api_fail(s->h.ctx, LOOM_ERR_INVALID_ARG, fn, "%s: %d is not a loop handle of this schedule",
             arg, (int)rv);
  return false;
}

static bool check_block(loom_sched *s, loom_rv rv, const char *fn, const char *arg) {
  if (sch_block_name(s->s, rv)) return true;
  const Expr *loop = sch_loop_var(s->s, rv);
  if (loop)
    api_fail(s->h.ctx, LOOM_ERR_INVALID_ARG, fn,
             "%s: handle %d is the loop \"%s\", expected a block", arg, (int)rv, loop->var.name);
  else
    api_fail(s->h.ctx, LOOM_ERR_INVALID_ARG, fn, "%s: %d is not a block handle of this schedule",
             arg, (int)rv);
  return false;
}

static bool check_loops(loom_sched *s, const loom_rv *loops, int n, int lo, const char *fn) {
  if (!loops || n < lo || n > MAX_LOOPS) {
    api_fail(s->h.ctx, LOOM_ERR_INVALID_ARG, fn, "%d loops%s, expected %d..%d", n,
             loops ? "" : " (loops is NULL)", lo, MAX_LOOPS);
    return false;
  }
  for (int i = 0; i < n; i++) {
    if (!check_loop(s, loops[i], fn, "loops[]")) return false;
    for (int j = 0; j < i; j++)
      if (loops[j] == loops[i]) {
        api_fail(s->h.ctx, LOOM_ERR_INVALID_ARG, fn, "loops[%d] and loops[%d] are the same loop",
                 j, i);
        return false;
      }
  }
  return true;
}

static bool check_scope(loom_sched *s, loom_scope scope, MemScope *out, const char *fn) {
  switch (scope) {
  case LOOM_SCOPE_GLOBAL: *out = SCOPE_GLOBAL; return true;
  case LOOM_SCOPE_LOCAL: *out = SCOPE_LOCAL; return true;
  case LOOM_SCOPE_SHARED: *out = SCOPE_SHARED; return true;
  }
  api_fail(s->h.ctx, LOOM_ERR_INVALID_ARG, fn, "scope %d is not a loom_scope", (int)scope);
  return false;
}

/* ---- lifetime ---- */

loom_sched *loom_sched_create(loom_ctx *ctx, const loom_func *f, uint64_t seed) {
  if (!api_ctx_ok(ctx) || !api_check(ctx, f, API_FUNC, "loom_sched_create", "f")) return NULL;
  Schedule *sch = sch_create(f->f, seed ? DECIDE_RANDOM : DECIDE_DEFAULT, seed);
  if (!sch) {
    api_fail(ctx, LOOM_ERR_INTERNAL, "loom_sched_create", "could not create a schedule");
    return NULL;
  }
  loom_sched *s = ARENA_NEW(ctx->arena, loom_sched);
  s->h.magic = API_SCHED;
  s->h.ctx = ctx;
  s->s = sch;
  s->next = ctx->scheds;
  ctx->scheds = s;
  return s;
}

void loom_sched_free(loom_sched *s) {
  if (!api_ctx_of(s, API_SCHED)) return;
  s->h.magic = API_DEAD;
  /* Functions handed out live in the schedule's arena: then the memory
   * waits for loom_ctx_destroy. */
  if (!s->funcs_taken) {
    sch_free(s->s);
    s->s = NULL;
  }
}

loom_func *loom_sched_func(loom_sched *s) {
  loom_ctx *ctx = sched_ctx(s, "loom_sched_func");
  if (!ctx) return NULL;
  s->funcs_taken = true;
  return api_wrap_func(ctx, sch_func(s->s));
}

const char *loom_sched_trace(loom_sched *s) {
  loom_ctx *ctx = sched_ctx(s, "loom_sched_trace");
  if (!ctx) return NULL;
  char *t = trace_to_text(sch_trace(s->s));
  const char *r = arena_strdup(ctx->arena, t ? t : "");
  loom_free(t);
  return r;
}

loom_status loom_sched_apply_trace(loom_sched *s, const char *trace_text) {
  const char *fn = "loom_sched_apply_trace";
  loom_ctx *ctx = sched_ctx(s, fn);
  if (!ctx) return LOOM_ERR_INVALID_ARG;
  if (!trace_text) return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "trace_text is NULL");
  LoomError err = {0};
  Trace *t = trace_parse(ctx->arena, trace_text, &err);
  if (!t) return api_fail_err(ctx, fn, &err);
  if (trace_apply(t, s->s) != LOOM_OK) return refused(s, fn);
  return LOOM_OK;
}

/* ---- handles ---- */

loom_rv loom_sched_get_block(loom_sched *s, const char *name) {
  const char *fn = "loom_sched_get_block";
  loom_ctx *ctx = sched_ctx(s, fn);
  if (!ctx) return -1;
  if (!name) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "name is NULL, expected a block name");
    return -1;
  }
  loom_rv b = sch_get_block(s->s, name);
  if (b < 0) refused(s, fn);
  return b;
}

int loom_sched_get_loops(loom_sched *s, loom_rv block, loom_rv *out, int max) {
  const char *fn = "loom_sched_get_loops";
  loom_ctx *ctx = sched_ctx(s, fn);
  if (!ctx || !check_block(s, block, fn, "block")) return -1;
  if (max < 0 || (max > 0 && !out)) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "max is %d with out %s, expected max >= 0 and out "
             "non-NULL when max > 0", max, out ? "non-NULL" : "NULL");
    return -1;
  }
  loom_rv tmp[1];
  int n = sch_get_loops(s->s, block, out ? out : tmp, out ? max : 0);
  if (n < 0) refused(s, fn);
  return n;
}

/* ---- loop transformations ---- */

loom_status loom_sched_split(loom_sched *s, loom_rv loop, const int64_t *factors, int n,
                             loom_rv *out) {
  const char *fn = "loom_sched_split";
  loom_ctx *ctx = sched_ctx(s, fn);
  if (!ctx) return LOOM_ERR_INVALID_ARG;
  if (!check_loop(s, loop, fn, "loop")) return LOOM_ERR_INVALID_ARG;
  if (n < 2 || n > 8 || !factors || !out)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "%d factors%s%s, expected 2..8", n,
                    factors ? "" : " (factors is NULL)", out ? "" : " (out is NULL)");
  int inferred = 0;
  for (int i = 0; i < n; i++) {
    if (factors[i] == -1) inferred++;
    else if (factors[i] < 1)
      return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "factor %d is %lld, expected >= 1 or -1", i,
                      (long long)factors[i]);
  }
  if (inferred > 1)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "%d factors are -1, at most one may be",
                    inferred);
  if (sch_split(s->s, loop, factors, n, out) != 0) return refused(s, fn);
  return LOOM_OK;
}

loom_rv loom_sched_fuse(loom_sched *s, const loom_rv *loops, int n) {
  const char *fn = "loom_sched_fuse";
  if (!sched_ctx(s, fn) || !check_loops(s, loops, n, 2, fn)) return -1;
  loom_rv r = sch_fuse(s->s, loops, n);
  if (r < 0) refused(s, fn);
  return r;
}

loom_status loom_sched_reorder(loom_sched *s, const loom_rv *loops, int n) {
  const char *fn = "loom_sched_reorder";
  if (!sched_ctx(s, fn)) return LOOM_ERR_INVALID_ARG;
  if (!check_loops(s, loops, n, 1, fn)) return LOOM_ERR_INVALID_ARG;
  if (sch_reorder(s->s, loops, n) != LOOM_OK) return refused(s, fn);
  return LOOM_OK;
}

loom_status loom_sched_tile(loom_sched *s, const loom_rv *loops, int n, const int64_t *factors,
                            int depth, loom_rv *out) {
  const char *fn = "loom_sched_tile";
  loom_ctx *ctx = sched_ctx(s, fn);
  if (!ctx) return LOOM_ERR_INVALID_ARG;
  if (!check_loops(s, loops, n, 1, fn)) return LOOM_ERR_INVALID_ARG;
  if (depth < 2 || depth > 8 || !factors || !out)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "depth %d%s%s, expected 2..8", depth,
                    factors ? "" : " (factors is NULL)", out ? "" : " (out is NULL)");
  for (int i = 0; i < n * depth; i++)
    if (factors[i] < 1 && factors[i] != -1)
      return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn,
                      "factor %d of loop %d is %lld, expected >= 1 or -1", i % depth, i / depth,
                      (long long)factors[i]);
  if (sch_tile(s->s, loops, n, factors, depth, out) != LOOM_OK) return refused(s, fn);
  return LOOM_OK;
}

/* ---- annotations ---- */

typedef loom_status (*LoopPrim)(Schedule *, SchRV);

static loom_status loop_prim(loom_sched *s, loom_rv loop, LoopPrim prim, const char *fn) {
  if (!sched_ctx(s, fn)) return LOOM_ERR_INVALID_ARG;
  if (!check_loop(s, loop, fn, "loop")) return LOOM_ERR_INVALID_ARG;
  if (prim(s->s, loop) != LOOM_OK) return refused(s, fn);
  return LOOM_OK;
}

loom_status loom_sched_vectorize(loom_sched *s, loom_rv loop) {
  return loop_prim(s, loop, sch_vectorize, "loom_sched_vectorize");
}
loom_status loom_sched_parallel(loom_sched *s, loom_rv loop) {
  return loop_prim(s, loop, sch_parallel, "loom_sched_parallel");
}
loom_status loom_sched_unroll(loom_sched *s, loom_rv loop) {
  return loop_prim(s, loop, sch_unroll, "loom_sched_unroll");
}

/* ---- block movement ---- */

typedef loom_status (*BlockLoopPrim)(Schedule *, SchRV, SchRV);

static loom_status block_loop_prim(loom_sched *s, loom_rv block, loom_rv loop, BlockLoopPrim prim,
                                   const char *fn) {
  if (!sched_ctx(s, fn)) return LOOM_ERR_INVALID_ARG;
  if (!check_block(s, block, fn, "block") || !check_loop(s, loop, fn, "loop"))
    return LOOM_ERR_INVALID_ARG;
  if (prim(s->s, block, loop) != LOOM_OK) return refused(s, fn);
  return LOOM_OK;
}

loom_status loom_sched_compute_at(loom_sched *s, loom_rv block, loom_rv loop) {
  return block_loop_prim(s, block, loop, sch_compute_at, "loom_sched_compute_at");
}
loom_status loom_sched_reverse_compute_at(loom_sched *s, loom_rv block, loom_rv loop) {
  return block_loop_prim(s, block, loop, sch_reverse_compute_at, "loom_sched_reverse_compute_at");
}

typedef loom_status (*BlockPrim)(Schedule *, SchRV);

static loom_status block_prim(loom_sched *s, loom_rv block, BlockPrim prim, const char *fn) {
  if (!sched_ctx(s, fn)) return LOOM_ERR_INVALID_ARG;
  if (!check_block(s, block, fn, "block")) return LOOM_ERR_INVALID_ARG;
  if (prim(s->s, block) != LOOM_OK) return refused(s, fn);
  return LOOM_OK;
}

loom_status loom_sched_compute_inline(loom_sched *s, loom_rv block) {
  return block_prim(s, block, sch_compute_inline, "loom_sched_compute_inline");
}
loom_status loom_sched_reverse_compute_inline(loom_sched *s, loom_rv block) {
  return block_prim(s, block, sch_reverse_compute_inline, "loom_sched_reverse_compute_inline");
}

/* ---- caching ---- */

loom_rv loom_sched_cache_read(loom_sched *s, loom_rv block, int read_index, loom_scope scope) {
  const char *fn = "loom_sched_cache_read";
  MemScope ms;
  if (!sched_ctx(s, fn) || !check_block(s, block, fn, "block") || !check_scope(s, scope, &ms, fn))
    return -1;
  if (read_index < 0) {
    api_fail(s->h.ctx, LOOM_ERR_INVALID_ARG, fn, "read_index %d, expected >= 0", read_index);
    return -1;
  }
  loom_rv r = sch_cache_read(s->s, block, read_index, ms);
  if (r < 0) refused(s, fn);
  return r;
}

loom_rv loom_sched_cache_write(loom_sched *s, loom_rv block, int write_index, loom_scope scope) {
  const char *fn = "loom_sched_cache_write";
  MemScope ms;
  if (!sched_ctx(s, fn) || !check_block(s, block, fn, "block") || !check_scope(s, scope, &ms, fn))
    return -1;
  if (write_index < 0) {
    api_fail(s->h.ctx, LOOM_ERR_INVALID_ARG, fn, "write_index %d, expected >= 0", write_index);
    return -1;
  }
  loom_rv r = sch_cache_write(s->s, block, write_index, ms);
  if (r < 0) refused(s, fn);
  return r;
}

loom_status loom_sched_storage_align(loom_sched *s, loom_rv block, int write_index, int axis,
                                     int factor, int offset) {
  const char *fn = "loom_sched_storage_align";
  loom_ctx *ctx = sched_ctx(s, fn);
  if (!ctx) return LOOM_ERR_INVALID_ARG;
  if (!check_block(s, block, fn, "block")) return LOOM_ERR_INVALID_ARG;
  if (write_index < 0 || axis < 0)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "write_index %d, axis %d, expected both >= 0",
                    write_index, axis);
  if (factor < 1 || offset < 0 || offset >= factor)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn,
                    "factor %d, offset %d, expected factor >= 1 and 0 <= offset < factor", factor,
                    offset);
  if (sch_storage_align(s->s, block, write_index, axis, factor, offset) != LOOM_OK)
    return refused(s, fn);
  return LOOM_OK;
}

loom_rv loom_sched_decompose_reduction(loom_sched *s, loom_rv block, loom_rv loop) {
  const char *fn = "loom_sched_decompose_reduction";
  if (!sched_ctx(s, fn) || !check_block(s, block, fn, "block") || !check_loop(s, loop, fn, "loop"))
    return -1;
  loom_rv r = sch_decompose_reduction(s->s, block, loop);
  if (r < 0) refused(s, fn);
  return r;
}

loom_rv loom_sched_rfactor(loom_sched *s, loom_rv loop) {
  const char *fn = "loom_sched_rfactor";
  if (!sched_ctx(s, fn) || !check_loop(s, loop, fn, "loop")) return -1;
  loom_rv r = sch_rfactor(s->s, loop);
  if (r < 0) refused(s, fn);
  return r;
}

/* ---- sampling ---- */

loom_status loom_sched_sample_perfect_tile(loom_sched *s, loom_rv loop, int n,
                                           int64_t max_innermost, int64_t *out) {
  const char *fn = "loom_sched_sample_perfect_tile";
  loom_ctx *ctx = sched_ctx(s, fn);
  if (!ctx) return LOOM_ERR_INVALID_ARG;
  if (!check_loop(s, loop, fn, "loop")) return LOOM_ERR_INVALID_ARG;
  if (n < 1 || n > 8 || !out)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "n is %d%s, expected 1..8", n,
                    out ? "" : " (out is NULL)");
  if (max_innermost < 0)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "max_innermost is %lld, expected >= 0",
                    (long long)max_innermost);
  if (sch_sample_perfect_tile(s->s, loop, n, max_innermost, out) != LOOM_OK) return refused(s, fn);
  return LOOM_OK;
}

loom_status loom_sched_sample_categorical(loom_sched *s, const int64_t *candidates,
                                          const double *probs, int n, int64_t *out) {
  const char *fn = "loom_sched_sample_categorical";
  loom_ctx *ctx = sched_ctx(s, fn);
  if (!ctx) return LOOM_ERR_INVALID_ARG;
  if (n < 1 || !candidates || !out)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "%d candidates%s%s, expected >= 1", n,
                    candidates ? "" : " (candidates is NULL)", out ? "" : " (out is NULL)");
  if (probs) {
    double total = 0;
    for (int i = 0; i < n; i++) {
      if (!(probs[i] >= 0) || isinf(probs[i]))
        return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "probs[%d] is %g, expected a finite weight >= 0", i,
                        probs[i]);
      total += probs[i];
    }
    if (!(total > 0))
      return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "probs are all zero");
  }
  if (sch_sample_categorical(s->s, candidates, probs, n, out) != LOOM_OK) return refused(s, fn);
  return LOOM_OK;
}
