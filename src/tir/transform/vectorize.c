/* tir_vectorize: FOR_VECTORIZED loops -> vector statements.
 *
 * A vectorized loop v in [min, min+L) (L constant, a power of two in 2..64) whose body is
 * stores, sequences and ifs with lane-invariant conditions becomes the same
 * statements on L lanes: v is ramp(min, 1, L), loop-invariant values are
 * broadcast, and each store's (1-d) index must come out as ramp(base, 1, L)
 * (a contiguous vector store). Extents that are not a power of two are
 * emitted as power-of-two chunks (6 = 4 + 2 lanes).
 * Loads may be contiguous (ramp stride 1) or loop-invariant (broadcast).
 *
 * A select whose condition is lane-invariant keeps a scalar condition (one
 * branch evaluated, so loads in the branches are as safe as in the scalar
 * loop).
 *
 * Everything else falls back to a serial loop, which is always correct:
 * loads inside the branches of a select on the loop variable (only guarded
 * lanes may be in bounds),
 * ifs on the loop variable or on loaded data, loops/allocations in the
 * body, strided or gathered accesses, stores to a loop-invariant index (a reduction into
 * one element: lanes would race), and bodies where a buffer that is written
 * is also accessed at a different index (a dependence between iterations
 * that running all lanes at once would break).
 * Loops nested in a fallen-back loop are processed on their own. */
#include "arith/arith.h"
#include "support/ptrmap.h"
#include "support/vec.h"
#include "tir/transform/transform.h"
#include "tir/transform/transform_util.h"

enum { VECTORIZE_MAX_LANES = 64 };

typedef struct VecCtx {
  Arena *arena;
  const Expr *var;
  const Expr *min;
  int lanes;
  Analyzer *az;
} VecCtx;

static const Expr *fold_ramp(Arena *a, Analyzer *az, const Expr *e);

static bool is_unit_ramp(const Expr *e) {
  return e->kind == EXPR_RAMP && expr_is_int(e->ramp.stride, 1);
}

static const Expr *to_lanes(VecCtx *c, const Expr *e) {
  return e->dtype.lanes == c->lanes ? e : expr_broadcast(c->arena, e, c->lanes);
}

static bool find_load_cb(Visitor *v, const Expr *e) {
  if (e->kind == EXPR_LOAD) *(bool *)v->user = true;
  return !*(bool *)v->user;
}

static bool has_load(const Expr *e) {
  bool found = false;
  Visitor v = {.visit_expr = find_load_cb, .user = &found};
  visit_expr(&v, e);
  return found;
}

/* The vector form of e, or NULL when e cannot be vectorized. */
static const Expr *vec_expr(VecCtx *c, const Expr *e) {
  Arena *a = c->arena;
  if (e->dtype.lanes != 1) return NULL; /* already vector: not ours to widen */
  if (!expr_uses_var(e, c->var)) return expr_broadcast(a, e, c->lanes);
  switch (e->kind) {
    case EXPR_VAR: return expr_ramp(a, c->min, expr_i64(a, 1), c->lanes); /* e == var */
    case EXPR_LOAD: {
      /* Bool elements are bytes with no vector type in the C back end (a
       * bool mask read per key position stays scalar). */
      if (e->load.n != 1 || dtype_is_bool(e->dtype)) return NULL;
      const Expr *idx = vec_expr(c, e->load.indices[0]);
      if (!idx) return NULL;
      idx = fold_ramp(a, c->az, idx);
      if (!is_unit_ramp(idx)) return NULL;
      return expr_load(a, e->load.buffer, &idx, 1);
    }
    case EXPR_CAST: {
      const Expr *x = vec_expr(c, e->un.a);
      return x ? expr_cast(a, dtype_with_lanes(e->dtype, c->lanes), x) : NULL;
    }
    case EXPR_NOT: {
      const Expr *x = vec_expr(c, e->un.a);
      return x ? expr_not(a, x) : NULL;
    }
    case EXPR_SELECT: {
      /* A condition that is the same in every lane (no loop variable, no
       * loads) stays scalar: one branch is evaluated, as in the scalar
       * loop (C's ?:), so its loads may be out of bounds where the other
       * is taken (padding copied one channel-block vector at a time). */
      if (!expr_uses_var(e->select.cond, c->var) && transform_expr_is_plain_scalar(e->select.cond)) {
        const Expr *t = vec_expr(c, e->select.t), *f = vec_expr(c, e->select.f);
        return t && f ? expr_select(a, e->select.cond, to_lanes(c, t), to_lanes(c, f)) : NULL;
      }
      /* A vector select evaluates both branches in every lane; a load in a
       * branch is often only in bounds where the condition holds (padding:
       * cond ? A[i - 1] : 0), so vector code would read out of bounds. */
      if (has_load(e->select.t) || has_load(e->select.f)) return NULL;
      const Expr *k = vec_expr(c, e->select.cond), *t = vec_expr(c, e->select.t),
                 *f = vec_expr(c, e->select.f);
      if (!k || !t || !f) return NULL;
      return expr_select(a, k, t, f);
    }
    case EXPR_CALL: {
      /* Math calls go lane-wise or through the code generator's vector
       * versions (exp, erf, tanh); only float results, where those exist.
       * Bitwise calls are C operators, which vector types have. */
      if ((!dtype_is_float(e->dtype) && !call_op_is_bitwise(e->call.op)) || e->call.n > 4) return NULL;
      const Expr *args[4];
      for (int i = 0; i < e->call.n; i++)
        if (!(args[i] = vec_expr(c, e->call.args[i]))) return NULL;
      return expr_call(a, e->call.op, dtype_with_lanes(e->dtype, c->lanes), args, e->call.n);
    }
    case EXPR_INT:
    case EXPR_FLOAT:
    case EXPR_RAMP:
    case EXPR_BROADCAST:
    case EXPR_REDUCE:
    case EXPR_KIND_COUNT: return NULL;
    default: break;
  }
  /* binary */
  const Expr *x = vec_expr(c, e->bin.a), *y = vec_expr(c, e->bin.b);
  if (!x || !y) return NULL;
  /* Keep affine index arithmetic as ramps so accesses stay recognisably
   * contiguous: ramp(b,s) +- broadcast(o) and ramp(b,s) * broadcast(k). */
  bool xr = x->kind == EXPR_RAMP, yr = y->kind == EXPR_RAMP;
  bool xb = x->kind == EXPR_BROADCAST, yb = y->kind == EXPR_BROADCAST;
  if (dtype_is_int(e->dtype)) {
    if (e->kind == EXPR_ADD && xr && yr)
      return expr_ramp(a, expr_add(a, x->ramp.base, y->ramp.base), expr_add(a, x->ramp.stride, y->ramp.stride), c->lanes);
    if ((e->kind == EXPR_ADD || e->kind == EXPR_SUB) && xr && yb)
      return expr_ramp(a, expr_binary(a, e->kind, x->ramp.base, y->broadcast.value), x->ramp.stride, c->lanes);
    if (e->kind == EXPR_ADD && xb && yr)
      return expr_ramp(a, expr_add(a, x->broadcast.value, y->ramp.base), y->ramp.stride, c->lanes);
    if (e->kind == EXPR_MUL && xr && yb)
      return expr_ramp(a, expr_mul(a, x->ramp.base, y->broadcast.value), expr_mul(a, x->ramp.stride, y->broadcast.value), c->lanes);
    if (e->kind == EXPR_MUL && xb && yr)
      return expr_ramp(a, expr_mul(a, y->ramp.base, x->broadcast.value), expr_mul(a, y->ramp.stride, x->broadcast.value), c->lanes);
  }
  return expr_binary(a, e->kind, to_lanes(c, x), to_lanes(c, y));
}

/* Ramp strides are built from constants; fold them so is_unit_ramp sees 1. */
static const Expr *fold_ramp(Arena *a, Analyzer *az, const Expr *e) {
  if (e->kind != EXPR_RAMP) return e;
  return expr_ramp(a, arith_simplify(az, e->ramp.base), arith_simplify(az, e->ramp.stride), e->ramp.lanes);
}

static const Expr *vec_index(VecCtx *c, const Expr *idx) {
  const Expr *v = vec_expr(c, idx);
  return v ? fold_ramp(c->arena, c->az, v) : NULL;
}

typedef VEC(const Stmt *) StmtList;

/* An if whose condition does not change across lanes (no loop variable, no
 * loads: a load could see a store of an earlier lane) runs the same branch
 * for every lane, so it can stay an if around vector statements (the init
 * guard `if (k == 0)` of a reduction is the common case). */
static bool lane_invariant_if(const Stmt *s, const Expr *var) {
  return s->kind == STMT_IF && !expr_uses_var(s->if_.cond, var) && transform_expr_is_plain_scalar(s->if_.cond);
}

/* Collects the stores of a body made of stores, sequences and lane-invariant
 * ifs; false if anything else is in it. */
static bool body_stores(Arena *a, const Stmt *s, const Expr *var, StmtList *out) {
  switch (s->kind) {
    case STMT_STORE: VEC_PUSH(a, *out, s); return true;
    case STMT_EVALUATE: return true;
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n; i++)
        if (!body_stores(a, s->seq.stmts[i], var, out)) return false;
      return true;
    case STMT_IF:
      return lane_invariant_if(s, var) && body_stores(a, s->if_.then_s, var, out) &&
             (!s->if_.else_s || body_stores(a, s->if_.else_s, var, out));
    default: return false;
  }
}

typedef struct SameIndexCtx {
  const Buffer *buffer;
  const Expr *index;
  bool ok;
} SameIndexCtx;

static bool same_index_cb(Visitor *v, const Expr *e) {
  SameIndexCtx *c = v->user;
  if (e->kind == EXPR_LOAD && e->load.buffer == c->buffer &&
      (e->load.n != 1 || !expr_equal(e->load.indices[0], c->index)))
    c->ok = false;
  return c->ok;
}

/* Every access to a buffer written in the body uses the store's own index,
 * so lane l only ever touches its own element. */
static bool independent_lanes(const StmtList *stores) {
  for (int i = 0; i < stores->n; i++) {
    const Stmt *w = stores->items[i];
    if (w->store.n != 1) return false;
    SameIndexCtx c = {w->store.buffer, w->store.indices[0], true};
    Visitor v = {NULL, same_index_cb, &c};
    for (int j = 0; j < stores->n && c.ok; j++) {
      const Stmt *o = stores->items[j];
      if (o->store.buffer == w->store.buffer && (o->store.n != 1 || !expr_equal(o->store.indices[0], c.index)))
        return false;
      visit_stmt(&v, o);
    }
    if (!c.ok) return false;
  }
  return true;
}

/* The vector form of a body accepted by body_stores, or NULL. */
static const Stmt *vec_stmt(VecCtx *c, const Stmt *s) {
  Arena *a = c->arena;
  switch (s->kind) {
    case STMT_STORE: {
      /* Bool elements are bytes with no vector type in the C back end. */
      if (dtype_is_bool(s->store.buffer->dtype)) return NULL;
      const Expr *idx = vec_index(c, s->store.indices[0]);
      if (!idx || !is_unit_ramp(idx)) return NULL; /* invariant index = reduction: fall back */
      const Expr *val = vec_expr(c, s->store.value);
      if (!val) return NULL;
      return stmt_store(a, s->store.buffer, val, &idx, 1);
    }
    case STMT_EVALUATE: return s;
    case STMT_SEQ: {
      const Stmt **out = ARENA_ARRAY(a, const Stmt *, s->seq.n);
      for (int i = 0; i < s->seq.n; i++)
        if (!(out[i] = vec_stmt(c, s->seq.stmts[i]))) return NULL;
      return stmt_seq(a, out, s->seq.n);
    }
    case STMT_IF: {
      const Stmt *t = vec_stmt(c, s->if_.then_s);
      const Stmt *e = s->if_.else_s ? vec_stmt(c, s->if_.else_s) : NULL;
      if (!t || (s->if_.else_s && !e)) return NULL;
      return stmt_if(a, s->if_.cond, t, e);
    }
    default: return NULL;
  }
}

/* The vectorized body of loop s, or NULL to fall back. */
static const Stmt *vectorize_loop(Arena *a, Analyzer *az, const Stmt *s) {
  int64_t lanes;
  if (!expr_as_int(s->loop.extent, &lanes) || lanes < 2 || lanes > VECTORIZE_MAX_LANES) return NULL;
  if (!transform_expr_is_plain_scalar(s->loop.min)) return NULL;
  StmtList stores = {0};
  if (!body_stores(a, s->loop.body, s->loop.var, &stores) || !independent_lanes(&stores)) return NULL;
  /* Code generators use power-of-two vector types, so an extent like 6
   * becomes chunks of 4 and 2 lanes (a chunk of 1 is the scalar body). The
   * lanes are independent, so running chunk after chunk is the same as
   * running all lanes at once. */
  const Stmt **chunks = ARENA_ARRAY(a, const Stmt *, 8);
  int n_chunks = 0;
  int64_t offset = 0;
  while (offset < lanes) {
    int64_t width = 1;
    while (width * 2 <= lanes - offset) width *= 2;
    const Expr *base = offset ? expr_add(a, s->loop.min, expr_i64(a, offset)) : s->loop.min;
    const Stmt *chunk;
    if (width == 1) {
      PtrMap vm;
      ptrmap_init(&vm, a);
      ptrmap_put(&vm, s->loop.var, (void *)base);
      chunk = stmt_substitute(a, s->loop.body, &vm);
    } else {
      VecCtx c = {a, s->loop.var, base, (int)width, az};
      chunk = vec_stmt(&c, s->loop.body);
      if (!chunk) return NULL;
    }
    chunks[n_chunks++] = chunk;
    offset += width;
  }
  /* Chunks and vectors wider than a register multiply the body (63 lanes of
   * f64: 6 chunks, 16 AVX-512 registers): past the code-size budget, and
   * well past the scalar body, the serial loop is the better trade. */
  const Stmt *v = stmt_seq(a, chunks, n_chunks);
  int64_t size = tir_code_size(v);
  if (size > TIR_CODE_BUDGET && size > 2 * tir_code_size(s->loop.body)) return NULL;
  return v;
}

static const Expr *keep_expr_cb(Mutator *m, const Expr *e) { return e; }

static const Stmt *vectorize_stmt_cb(Mutator *m, const Stmt *s) {
  if (s->kind == STMT_FOR && s->loop.kind == FOR_VECTORIZED) {
    const Stmt *v = m->user ? vectorize_loop(m->arena, m->user, s) : NULL;
    if (v) return v;
    Stmt *serial = arena_memdup(m->arena, s, sizeof *s);
    serial->loop.kind = FOR_SERIAL;
    serial->loop.body = mutate_stmt(m, s->loop.body);
    return serial;
  }
  return mutate_stmt_children(m, s);
}

static const PrimFunc *vectorize_func(Arena *a, const PrimFunc *f, Analyzer *az) {
  Mutator m = {a, vectorize_stmt_cb, keep_expr_cb, az};
  const Stmt *body = mutate_stmt(&m, f->body);
  return body == f->body ? f : transform_func_with_body(a, f, body);
}

const PrimFunc *tir_vectorize(Arena *a, const PrimFunc *f) { return vectorize_func(a, f, arith_analyzer_new(a)); }

/* No analyzer: every vectorized loop takes the serial fallback. */
const PrimFunc *tir_vectorize_serial(Arena *a, const PrimFunc *f) { return vectorize_func(a, f, NULL); }
