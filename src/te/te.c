/* Compute definitions and their lowering to a PrimFunc of blocks.
 *
 * Lowering follows TVM's CreatePrimFunc: tensors are visited in topological
 * order (producers first) and each compute tensor becomes one loop nest whose
 * innermost statement realizes a block named after the tensor. Block
 * iterators are fresh variables ("vi") bound one-to-one to fresh loop
 * variables ("i"), so schedule primitives can rebind loops without touching
 * the block body. */
#include "te/te.h"

#include "support/ptrmap.h"
#include "support/vec.h"

#include <string.h>

static bool shape_check(const char *name, int ndim, const int64_t *shape, LoomError *err) {
  if (ndim < 0 || (ndim > 0 && !shape)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "tensor \"%s\": bad rank %d", name, ndim);
    return false;
  }
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 1) {
      err_set(err, LOOM_ERR_INVALID_ARG,
              "tensor \"%s\": dimension %d has extent %lld, expected >= 1", name, d,
              (long long)shape[d]);
      return false;
    }
  }
  return true;
}

static const int64_t *copy_shape(Arena *a, int ndim, const int64_t *shape) {
  int64_t *s = ARENA_ARRAY(a, int64_t, ndim);
  for (int d = 0; d < ndim; d++) s[d] = shape[d];
  return s;
}

static Buffer *tensor_buffer(Arena *a, TeTensor *t) {
  const Expr **shape = ARENA_ARRAY(a, const Expr *, t->ndim);
  for (int d = 0; d < t->ndim; d++) shape[d] = expr_i64(a, t->shape[d]);
  Buffer *b = buffer_new(a, t->name, t->dtype, t->ndim, shape);
  b->te_origin = t;
  return b;
}

static TeTensor *tensor_new(Arena *a, TeKind kind, const char *name, DType dt, int ndim, const int64_t *shape) {
  TeTensor *t = ARENA_NEW(a, TeTensor);
  t->kind = kind;
  t->name = arena_strdup(a, name);
  t->dtype = dt;
  t->ndim = ndim;
  t->shape = copy_shape(a, ndim, shape);
  t->buffer = tensor_buffer(a, t);
  return t;
}

TeTensor *te_placeholder(Arena *a, const char *name, DType dt, int ndim, const int64_t *shape,
                         LoomError *err) {
  if (!name || !*name) {
    err_set(err, LOOM_ERR_INVALID_ARG, "te_placeholder: empty tensor name");
    return NULL;
  }
  if (!shape_check(name, ndim, shape, err)) return NULL;
  if (dt.lanes != 1 || !dtype_c_type(dt)) {
    char buf[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "placeholder \"%s\": unsupported dtype %s", name,
            dtype_str(dt, buf));
    return NULL;
  }
  return tensor_new(a, TE_PLACEHOLDER, name, dt, ndim, shape);
}

static const char *default_axis_name(Arena *a, int d) {
  if (d == 0) return "i";
  if (d == 1) return "j";
  return arena_printf(a, "i%d", d);
}

typedef struct NarrowAcc {
  const TeTensor *acc;
  DType to;
} NarrowAcc;

static const Expr *narrow_acc_body(Arena *a, const Expr *const *ax, void *user) {
  NarrowAcc *n = user;
  return expr_cast(a, n->to, te_load(a, n->acc, ax));
}

TeTensor *te_compute_named(Arena *a, const char *name, int ndim, const int64_t *shape,
                           const char *const *axis_names, TeComputeFn body, void *user,
                           LoomError *err) {
  if (!name || !*name) {
    err_set(err, LOOM_ERR_INVALID_ARG, "te_compute: empty tensor name");
    return NULL;
  }
  if (!shape_check(name, ndim, shape, err)) return NULL;
  IterVar *axes = ARENA_ARRAY(a, IterVar, ndim);
  const Expr **vars = ARENA_ARRAY(a, const Expr *, ndim);
  for (int d = 0; d < ndim; d++) {
    const char *an = axis_names ? axis_names[d] : default_axis_name(a, d);
    axes[d].var = vars[d] = expr_var(a, an, DT_I64);
    axes[d].min = expr_i64(a, 0);
    axes[d].extent = expr_i64(a, shape[d]);
    axes[d].type = ITER_SPATIAL;
  }
  const Expr *e = body(a, vars, user);
  if (!e) {
    err_set(err, LOOM_ERR_INVALID_ARG, "compute \"%s\": body function returned NULL", name);
    return NULL;
  }
  if (e->dtype.lanes != 1 || !dtype_c_type(e->dtype)) {
    char buf[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "compute \"%s\": unsupported element dtype %s", name,
            dtype_str(e->dtype, buf));
    return NULL;
  }
  /* A reduction of a narrow type (f16, bf16...) accumulates in its compute
   * type (f32): stage "<name>_acc" reduces, `name` rounds the result once, as
   * numpy's and ONNX Runtime's half reductions do. */
  DType narrow = e->dtype;
  bool narrow_reduce = e->kind == EXPR_REDUCE && dtype_is_narrow(narrow);
  if (narrow_reduce)
    e = expr_reduce(a, e->reduce.op, expr_cast(a, dtype_compute_type(narrow), e->reduce.source), e->reduce.axes,
                    e->reduce.n_axes, e->reduce.cond);
  TeTensor *t = ARENA_NEW(a, TeTensor);
  t->kind = TE_COMPUTE;
  t->name = narrow_reduce ? arena_printf(a, "%s_acc", name) : arena_strdup(a, name);
  t->dtype = e->dtype;
  t->ndim = ndim;
  t->shape = copy_shape(a, ndim, shape);
  t->axes = axes;
  t->body = e;
  t->buffer = tensor_buffer(a, t);
  if (narrow_reduce) {
    NarrowAcc na = {t, narrow};
    TeTensor *cast = te_compute_named(a, name, ndim, shape, axis_names, narrow_acc_body, &na, err);
    if (cast) cast->accumulator = t;
    return cast;
  }
  return t;
}

TeTensor *te_set_schedule_rule(TeTensor *t, const char *rule) {
  if (t) (t->accumulator ? t->accumulator : t)->schedule_rule = rule;
  return t;
}

TeTensor *te_compute(Arena *a, const char *name, int ndim, const int64_t *shape, TeComputeFn body,
                     void *user, LoomError *err) {
  return te_compute_named(a, name, ndim, shape, NULL, body, user, err);
}

TeStepLoop *te_step_loop(Arena *a, const char *step_name, int64_t steps, int n_outer, const char *const *outer_names,
                         const int64_t *outer_extents, LoomError *err) {
  if (!step_name || !*step_name || n_outer < 0 || (n_outer > 0 && (!outer_names || !outer_extents))) {
    err_set(err, LOOM_ERR_INVALID_ARG, "te_step_loop: bad arguments");
    return NULL;
  }
  if (!shape_check(step_name, 1, &steps, err) || !shape_check(step_name, n_outer, outer_extents, err)) return NULL;
  TeStepLoop *l = ARENA_NEW(a, TeStepLoop);
  const Expr **outer = ARENA_ARRAY(a, const Expr *, n_outer);
  for (int d = 0; d < n_outer; d++) outer[d] = expr_var(a, outer_names[d], DT_I64);
  l->n_outer = n_outer;
  l->outer = outer;
  l->outer_extents = copy_shape(a, n_outer, outer_extents);
  l->step = expr_var(a, step_name, DT_I64);
  l->steps = steps;
  return l;
}

TeTensor *te_step_declare(Arena *a, const TeStepLoop *loop, bool per_step, const char *name, DType dt, int ndim,
                          const int64_t *shape, LoomError *err) {
  if (!loop || !name || !*name) {
    err_set(err, LOOM_ERR_INVALID_ARG, "te_step_declare: no loop or an empty name");
    return NULL;
  }
  int lead = loop->n_outer + (per_step ? 1 : 0);
  if (!shape_check(name, ndim, shape, err)) return NULL;
  bool ok = ndim >= lead;
  for (int d = 0; ok && d < loop->n_outer; d++) ok = shape[d] == loop->outer_extents[d];
  if (ok && per_step) ok = shape[loop->n_outer] == loop->steps;
  if (!ok) {
    err_set(err, LOOM_ERR_INVALID_ARG, "compute \"%s\": its shape must start with its step loop's extents", name);
    return NULL;
  }
  if (dt.lanes != 1 || !dtype_c_type(dt) || dtype_is_narrow(dt)) {
    char buf[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "compute \"%s\": dtype %s is not supported in a step loop", name,
            dtype_str(dt, buf));
    return NULL;
  }
  IterVar *axes = ARENA_ARRAY(a, IterVar, ndim);
  for (int d = 0; d < ndim; d++) {
    const Expr *v = d < loop->n_outer ? loop->outer[d] : d < lead ? loop->step : expr_var(a, default_axis_name(a, d), DT_I64);
    axes[d] = (IterVar){v, expr_i64(a, 0), expr_i64(a, shape[d]), ITER_SPATIAL};
  }
  TeTensor *t = tensor_new(a, TE_COMPUTE, name, dt, ndim, shape);
  t->axes = axes;
  t->loop = loop;
  t->per_step = per_step;
  return t;
}

bool te_step_define(Arena *a, TeTensor *t, TeComputeFn body, void *user, LoomError *err) {
  if (!t || !t->loop || t->body) {
    err_set(err, LOOM_ERR_INVALID_ARG, "te_step_define: not a declared stage of a step loop, or defined twice");
    return false;
  }
  const Expr **vars = ARENA_ARRAY(a, const Expr *, t->ndim);
  for (int d = 0; d < t->ndim; d++) vars[d] = t->axes[d].var;
  const Expr *e = body(a, vars, user);
  if (!e || !dtype_eq(e->dtype, t->dtype)) {
    char b1[16], b2[16];
    err_set(err, LOOM_ERR_INVALID_ARG, "compute \"%s\": the body returned %s, declared %s", t->name,
            e ? dtype_str(e->dtype, b1) : "nothing", dtype_str(t->dtype, b2));
    return false;
  }
  t->body = e;
  return true;
}

TeTensor *te_compute_step(Arena *a, const TeStepLoop *loop, bool per_step, const char *name, DType dt, int ndim,
                          const int64_t *shape, TeComputeFn body, void *user, LoomError *err) {
  TeTensor *t = te_step_declare(a, loop, per_step, name, dt, ndim, shape, err);
  return t && te_step_define(a, t, body, user, err) ? t : NULL;
}

IterVar te_reduce_axis(Arena *a, const char *name, int64_t extent) {
  IterVar iv = {expr_var(a, name, DT_I64), expr_i64(a, 0), expr_i64(a, extent), ITER_REDUCE};
  return iv;
}

const Expr *te_load(Arena *a, const TeTensor *t, const Expr *const *idx) {
  return expr_load(a, t->buffer, idx, t->ndim);
}

const Expr *te_sum(Arena *a, const Expr *src, const IterVar *axes, int n, const Expr *cond) {
  return expr_reduce(a, REDUCE_SUM, src, axes, n, cond);
}
const Expr *te_max(Arena *a, const Expr *src, const IterVar *axes, int n, const Expr *cond) {
  return expr_reduce(a, REDUCE_MAX, src, axes, n, cond);
}
const Expr *te_min(Arena *a, const Expr *src, const IterVar *axes, int n, const Expr *cond) {
  return expr_reduce(a, REDUCE_MIN, src, axes, n, cond);
}
const Expr *te_prod(Arena *a, const Expr *src, const IterVar *axes, int n, const Expr *cond) {
  return expr_reduce(a, REDUCE_PROD, src, axes, n, cond);
}

/* ---------------------------------------------------------------- lowering */

typedef struct Lower {
  Arena *a;
  LoomError *err;
  TeTensor *const *args;
  int n_args;
  PtrMap state; /* TeTensor* -> (void*)1 visiting, (void*)2 done */
  VEC(TeTensor *) order; /* every reached tensor, producers first */
  VEC(TeTensor *) earlier; /* step-loop stages read at an earlier step, to visit */
} Lower;

static bool is_arg(const Lower *L, const TeTensor *t) {
  for (int i = 0; i < L->n_args; i++)
    if (L->args[i] == t) return true;
  return false;
}

static bool lower_visit_tensor(Lower *L, TeTensor *t);

/* A load by `owner` of an earlier step of a stage of the same step loop:
 * not an ordering edge within the step (the loop carries it). */
static bool reads_earlier_step(const TeTensor *owner, const TeTensor *src, const Expr *load) {
  return owner->loop && src->loop == owner->loop && src->per_step &&
         load->load.indices[src->loop->n_outer] != src->loop->step;
}

/* Checks the expression rules (dtypes, reduce placement, index types) and
 * visits the producers of every load. `top` allows one EXPR_REDUCE. */
static bool check_expr(Lower *L, const TeTensor *owner, const Expr *e, bool top) {
  char b1[16], b2[16];
  switch (e->kind) {
    case EXPR_INT:
    case EXPR_FLOAT:
    case EXPR_VAR: return true;
    case EXPR_REDUCE:
      if (!top) {
        err_set(L->err, LOOM_ERR_INVALID_ARG,
                "compute \"%s\": a reduction may only be the top of the body", owner->name);
        return false;
      }
      for (int i = 0; i < e->reduce.n_axes; i++) {
        int64_t ext;
        if (!expr_as_int(e->reduce.axes[i].extent, &ext) || ext < 1) {
          err_set(L->err, LOOM_ERR_INVALID_ARG,
                  "compute \"%s\": reduce axis \"%s\" needs a constant extent >= 1", owner->name,
                  e->reduce.axes[i].var->var.name);
          return false;
        }
      }
      if (e->reduce.cond) {
        if (!dtype_is_bool(e->reduce.cond->dtype)) {
          err_set(L->err, LOOM_ERR_INVALID_ARG,
                  "compute \"%s\": reduction condition must be bool, got %s", owner->name,
                  dtype_str(e->reduce.cond->dtype, b1));
          return false;
        }
        if (!check_expr(L, owner, e->reduce.cond, false)) return false;
      }
      return check_expr(L, owner, e->reduce.source, false);
    case EXPR_NOT:
    case EXPR_CAST: return check_expr(L, owner, e->un.a, false);
    case EXPR_SELECT:
      if (!dtype_is_bool(e->select.cond->dtype) || !dtype_eq(e->select.t->dtype, e->select.f->dtype)) {
        err_set(L->err, LOOM_ERR_INVALID_ARG,
                "compute \"%s\": select needs a bool condition and branches of one dtype "
                "(got %s and %s)",
                owner->name, dtype_str(e->select.t->dtype, b1), dtype_str(e->select.f->dtype, b2));
        return false;
      }
      return check_expr(L, owner, e->select.cond, false) &&
             check_expr(L, owner, e->select.t, false) && check_expr(L, owner, e->select.f, false);
    case EXPR_LOAD: {
      const Buffer *b = e->load.buffer;
      TeTensor *src = (TeTensor *)b->te_origin;
      if (!src) {
        err_set(L->err, LOOM_ERR_INVALID_ARG,
                "compute \"%s\": loads buffer \"%s\" which is not a te tensor", owner->name,
                b->name);
        return false;
      }
      if (e->load.n != b->ndim) {
        err_set(L->err, LOOM_ERR_INVALID_ARG,
                "compute \"%s\": load of \"%s\" has %d indices, expected %d", owner->name,
                b->name, e->load.n, b->ndim);
        return false;
      }
      for (int i = 0; i < e->load.n; i++) {
        if (!dtype_eq(e->load.indices[i]->dtype, DT_I64)) {
          err_set(L->err, LOOM_ERR_INVALID_ARG,
                  "compute \"%s\": index %d of \"%s\" has dtype %s, expected i64", owner->name, i,
                  b->name, dtype_str(e->load.indices[i]->dtype, b1));
          return false;
        }
        if (!check_expr(L, owner, e->load.indices[i], false)) return false;
      }
      if (reads_earlier_step(owner, src, e)) {
        VEC_PUSH(L->a, L->earlier, src);
        return true;
      }
      return lower_visit_tensor(L, src);
    }
    case EXPR_CALL:
      if (e->call.n != call_op_arity(e->call.op)) {
        err_set(L->err, LOOM_ERR_INVALID_ARG, "compute \"%s\": %s takes %d arguments, got %d",
                owner->name, call_op_name(e->call.op), call_op_arity(e->call.op), e->call.n);
        return false;
      }
      for (int i = 0; i < e->call.n; i++) {
        /* reinterpret changes the dtype (same width; codegen checks it) */
        if (e->call.op != CALL_REINTERPRET && !dtype_eq(e->call.args[i]->dtype, e->dtype)) {
          err_set(L->err, LOOM_ERR_INVALID_ARG,
                  "compute \"%s\": argument of %s has dtype %s, expected %s", owner->name,
                  call_op_name(e->call.op), dtype_str(e->call.args[i]->dtype, b1),
                  dtype_str(e->dtype, b2));
          return false;
        }
        if (!check_expr(L, owner, e->call.args[i], false)) return false;
      }
      return true;
    case EXPR_RAMP:
    case EXPR_BROADCAST:
      err_set(L->err, LOOM_ERR_INVALID_ARG,
              "compute \"%s\": vector expressions are not allowed in compute definitions",
              owner->name);
      return false;
    default:
      if (!dtype_eq(e->bin.a->dtype, e->bin.b->dtype)) {
        err_set(L->err, LOOM_ERR_INVALID_ARG,
                "compute \"%s\": operands of %s have different dtypes (%s and %s)", owner->name,
                expr_kind_name(e->kind), dtype_str(e->bin.a->dtype, b1),
                dtype_str(e->bin.b->dtype, b2));
        return false;
      }
      if ((e->kind == EXPR_AND || e->kind == EXPR_OR) && !dtype_is_bool(e->bin.a->dtype)) {
        err_set(L->err, LOOM_ERR_INVALID_ARG, "compute \"%s\": operands of %s must be bool",
                owner->name, expr_kind_name(e->kind));
        return false;
      }
      return check_expr(L, owner, e->bin.a, false) && check_expr(L, owner, e->bin.b, false);
  }
}

static bool lower_visit_tensor(Lower *L, TeTensor *t) {
  void *st = ptrmap_get(&L->state, t);
  if (st == (void *)2) return true;
  if (st == (void *)1) {
    err_set(L->err, LOOM_ERR_INVALID_ARG, "compute \"%s\" depends on itself", t->name);
    return false;
  }
  if (t->kind == TE_PLACEHOLDER && !is_arg(L, t)) {
    err_set(L->err, LOOM_ERR_INVALID_ARG,
            "placeholder \"%s\" is used but not listed in the function's arguments", t->name);
    return false;
  }
  if (t->kind == TE_COMPUTE && !t->body) {
    err_set(L->err, LOOM_ERR_INVALID_ARG, "compute \"%s\" was declared (te_step_declare) but not defined", t->name);
    return false;
  }
  ptrmap_put(&L->state, t, (void *)1);
  if (t->kind == TE_COMPUTE && !check_expr(L, t, t->body, true)) return false;
  ptrmap_put(&L->state, t, (void *)2);
  VEC_PUSH(L->a, L->order, t);
  return true;
}

/* e == base + off with off a constant (base NULL when e is a constant). */
static void split_offset(const Expr *e, const Expr **base, int64_t *off) {
  int64_t c;
  if (expr_as_int(e, &c)) {
    *base = NULL;
    *off = c;
    return;
  }
  if ((e->kind == EXPR_ADD || e->kind == EXPR_SUB) && expr_as_int(e->bin.b, &c)) {
    split_offset(e->bin.a, base, off);
    *off += e->kind == EXPR_ADD ? c : -c;
    return;
  }
  *base = e;
  *off = 0;
}

static bool expr_has_load(const Expr *e) {
  switch (e->kind) {
    case EXPR_INT:
    case EXPR_FLOAT:
    case EXPR_VAR: return false;
    case EXPR_LOAD: return true;
    case EXPR_NOT:
    case EXPR_CAST: return expr_has_load(e->un.a);
    case EXPR_SELECT:
      return expr_has_load(e->select.cond) || expr_has_load(e->select.t) ||
             expr_has_load(e->select.f);
    case EXPR_CALL:
      for (int i = 0; i < e->call.n; i++)
        if (expr_has_load(e->call.args[i])) return true;
      return false;
    default:
      if (expr_is_binary(e->kind)) return expr_has_load(e->bin.a) || expr_has_load(e->bin.b);
      return true; /* conservative for anything else */
  }
}

typedef struct LoadList {
  VEC(const Expr *) loads;
} LoadList;

static void collect_loads(Arena *a, const Expr *e, LoadList *out) {
  switch (e->kind) {
    case EXPR_INT:
    case EXPR_FLOAT:
    case EXPR_VAR: return;
    case EXPR_LOAD:
      VEC_PUSH(a, out->loads, e);
      for (int i = 0; i < e->load.n; i++) collect_loads(a, e->load.indices[i], out);
      return;
    case EXPR_NOT:
    case EXPR_CAST: collect_loads(a, e->un.a, out); return;
    case EXPR_SELECT:
      collect_loads(a, e->select.cond, out);
      collect_loads(a, e->select.t, out);
      collect_loads(a, e->select.f, out);
      return;
    case EXPR_CALL:
      for (int i = 0; i < e->call.n; i++) collect_loads(a, e->call.args[i], out);
      return;
    case EXPR_REDUCE:
      collect_loads(a, e->reduce.source, out);
      if (e->reduce.cond) collect_loads(a, e->reduce.cond, out);
      return;
    default:
      if (expr_is_binary(e->kind)) {
        collect_loads(a, e->bin.a, out);
        collect_loads(a, e->bin.b, out);
      }
      return;
  }
}

/* Read regions per block instance, one per buffer in first-use order. Along a
 * dimension, indices that differ only by constants give [base+lo, base+hi];
 * anything else (different affine forms, data-dependent indices) widens that
 * dimension to the full buffer, which is always correct, only less precise. */
static int read_regions(Arena *a, const Expr *body, BufferRegion **out) {
  LoadList L = {0};
  collect_loads(a, body, &L);
  VEC(BufferRegion) regs = {0};
  bool *done = ARENA_ARRAY(a, bool, L.loads.n);
  for (int i = 0; i < L.loads.n; i++) {
    if (done[i]) continue;
    const Buffer *b = L.loads.items[i]->load.buffer;
    const Expr **mins = ARENA_ARRAY(a, const Expr *, b->ndim);
    const Expr **exts = ARENA_ARRAY(a, const Expr *, b->ndim);
    for (int d = 0; d < b->ndim; d++) {
      const Expr *base0;
      int64_t off0, lo, hi;
      const Expr *idx0 = L.loads.items[i]->load.indices[d];
      split_offset(idx0, &base0, &off0);
      lo = hi = off0;
      bool full = expr_has_load(idx0);
      for (int j = i; j < L.loads.n && !full; j++) {
        if (L.loads.items[j]->load.buffer != b) continue;
        const Expr *idx = L.loads.items[j]->load.indices[d];
        const Expr *base;
        int64_t off;
        split_offset(idx, &base, &off);
        if (expr_has_load(idx) || (base != base0 && (!base || !base0 || !expr_equal(base, base0)))) {
          full = true;
          break;
        }
        if (off < lo) lo = off;
        if (off > hi) hi = off;
      }
      if (full) {
        mins[d] = expr_i64(a, 0);
        exts[d] = b->shape[d];
      } else {
        mins[d] = base0 ? (lo == 0 ? base0 : expr_add(a, base0, expr_i64(a, lo))) : expr_i64(a, lo);
        exts[d] = expr_i64(a, hi - lo + 1);
      }
    }
    for (int j = i; j < L.loads.n; j++)
      if (L.loads.items[j]->load.buffer == b) done[j] = true;
    BufferRegion r = {b, mins, exts};
    VEC_PUSH(a, regs, r);
  }
  *out = regs.items;
  return regs.n;
}

static const char *iter_name(Arena *a, const Expr *var) { return arena_printf(a, "v%s", var->var.name); }

/* One loop nest + block for compute tensor t. A stage of a step loop gets
 * no loops for the loop's dimensions: its block binds iterators to the
 * loop's outer variables and writes at the step variable itself. */
static const Stmt *lower_compute(Arena *a, const TeTensor *t) {
  const Expr *body = t->body;
  bool is_reduce = body->kind == EXPR_REDUCE;
  int n_red = is_reduce ? body->reduce.n_axes : 0;
  int n_outer = t->loop ? t->loop->n_outer : 0, step_dim = t->loop && t->per_step ? n_outer : -1;
  int n_iter = t->ndim + n_red - (step_dim >= 0);

  IterVar *iters = ARENA_ARRAY(a, IterVar, n_iter);
  const Expr **values = ARENA_ARRAY(a, const Expr *, n_iter);
  const Expr **loop_vars = ARENA_ARRAY(a, const Expr *, n_iter);
  const Expr **out_idx = ARENA_ARRAY(a, const Expr *, t->ndim);
  PtrMap sub;
  ptrmap_init(&sub, a);
  int n_loops = 0;
  for (int d = 0, k = 0; d < t->ndim + n_red; d++) {
    const IterVar *src = d < t->ndim ? &t->axes[d] : &body->reduce.axes[d - t->ndim];
    if (d == step_dim) {
      out_idx[d] = t->loop->step;
      continue;
    }
    iters[k] = *src;
    iters[k].var = expr_var(a, iter_name(a, src->var), DT_I64);
    iters[k].type = d < t->ndim ? ITER_SPATIAL : ITER_REDUCE;
    if (d < n_outer) {
      values[k] = t->loop->outer[d];
    } else {
      values[k] = loop_vars[n_loops] = expr_var(a, src->var->var.name, DT_I64);
      n_loops++;
    }
    ptrmap_put(&sub, src->var, (void *)iters[k].var);
    if (d < t->ndim) out_idx[d] = iters[k].var;
    k++;
  }

  Block *blk = ARENA_NEW(a, Block);
  blk->name = t->name;
  blk->schedule_rule = t->schedule_rule;
  blk->iters = iters;
  blk->n_iters = n_iter;
  const Expr *vbody = expr_substitute(a, body, &sub);
  BufferRegion *reads;
  int n_reads = read_regions(a, vbody, &reads);
  BufferRegion *writes = ARENA_NEW(a, BufferRegion);
  *writes = region_point(a, t->buffer, out_idx);
  if (is_reduce) {
    /* As in TVM, the accumulator T[v...] is not listed in reads: a
     * reduction block's update of its own write region is implied by init. */
    const Expr *old = expr_load(a, t->buffer, out_idx, t->ndim);
    const Expr *val = reduce_combine(a, body->reduce.op, old, vbody->reduce.source);
    if (vbody->reduce.cond) val = expr_select(a, vbody->reduce.cond, val, old);
    blk->body = stmt_store(a, t->buffer, val, out_idx, t->ndim);
    blk->init =
        stmt_store(a, t->buffer, reduce_identity(a, body->reduce.op, t->dtype), out_idx, t->ndim);
  } else {
    blk->body = stmt_store(a, t->buffer, vbody, out_idx, t->ndim);
  }
  blk->reads = reads;
  blk->n_reads = n_reads;
  blk->writes = writes;
  blk->n_writes = 1;

  const Stmt *s = stmt_realize(a, values, n_iter, expr_bool(a, true), blk);
  for (int d = n_iter - 1, l = n_loops - 1; d >= n_outer; d--, l--)
    s = stmt_for(a, loop_vars[l], iters[d].min, iters[d].extent, FOR_SERIAL, s);
  return s;
}

/* Does compute tensor t read a stage of `loop`? */
static bool reads_loop(Arena *a, const TeTensor *t, const TeStepLoop *loop) {
  LoadList ll = {0};
  collect_loads(a, t->body, &ll);
  for (int i = 0; i < ll.loads.n; i++) {
    const TeTensor *src = ll.loads.items[i]->load.buffer->te_origin;
    if (src && src->loop == loop) return true;
  }
  return false;
}

typedef VEC(const Stmt *) StmtVec;

/* The nests of L->order, producers first; the stages of a step loop become
 * one nest at the place of its last stage. A tensor between its first and
 * last stage is lowered before the loop (a later stage may read it); one
 * that reads a stage of the loop (then not through another tensor between:
 * that one is refused first) cannot be, and is refused. */
static bool lower_nests(Lower *L, const char *name, StmtVec *nests) {
  Arena *a = L->a;
  for (int i = 0; i < L->order.n; i++) {
    TeTensor *t = L->order.items[i];
    if (t->kind != TE_COMPUTE) continue;
    if (!t->loop) {
      VEC_PUSH(a, *nests, lower_compute(a, t));
      continue;
    }
    int last = i;
    for (int j = i + 1; j < L->order.n; j++)
      if (L->order.items[j]->loop == t->loop) last = j;
    for (int j = i + 1; j < last; j++) {
      TeTensor *o = L->order.items[j];
      if (o->loop == t->loop || o->kind != TE_COMPUTE) continue;
      if (o->loop || reads_loop(a, o, t->loop)) {
        err_set(L->err, LOOM_ERR_INVALID_ARG,
                "te_create_primfunc \"%s\": \"%s\" reads a stage of the step loop of \"%s\" before the loop ends",
                name, o->name, t->name);
        return false;
      }
    }
    StmtVec body = {0};
    for (int j = i; j <= last; j++) {
      TeTensor *o = L->order.items[j];
      if (o->loop == t->loop) VEC_PUSH(a, body, lower_compute(a, o));
      else if (o->kind == TE_COMPUTE) VEC_PUSH(a, *nests, lower_compute(a, o));
    }
    const TeStepLoop *lp = t->loop;
    const Stmt *s = stmt_for(a, lp->step, expr_i64(a, 0), expr_i64(a, lp->steps), FOR_SERIAL,
                             stmt_seq(a, body.items, body.n));
    for (int d = lp->n_outer - 1; d >= 0; d--)
      s = stmt_for(a, lp->outer[d], expr_i64(a, 0), expr_i64(a, lp->outer_extents[d]), FOR_SERIAL, s);
    VEC_PUSH(a, *nests, s);
    i = last;
  }
  return true;
}

/* Outside its loop, a stage that keeps one step only has no defined value. */
static bool check_loop_reads(Lower *L) {
  for (int i = 0; i < L->order.n; i++) {
    TeTensor *t = L->order.items[i];
    if (t->kind != TE_COMPUTE) continue;
    LoadList ll = {0};
    collect_loads(L->a, t->body, &ll);
    for (int k = 0; k < ll.loads.n; k++) {
      const TeTensor *src = ll.loads.items[k]->load.buffer->te_origin;
      if (src && src->loop && src->loop != t->loop && !src->per_step) {
        err_set(L->err, LOOM_ERR_INVALID_ARG,
                "compute \"%s\" reads \"%s\", a stage of a step loop that keeps one step only", t->name, src->name);
        return false;
      }
    }
  }
  return true;
}

PrimFunc *te_create_primfunc(Arena *a, const char *name, TeTensor *const *args, int n_args,
                             LoomError *err) {
  if (n_args < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "te_create_primfunc \"%s\": no arguments", name);
    return NULL;
  }
  Lower L = {.a = a, .err = err, .args = args, .n_args = n_args};
  ptrmap_init(&L.state, a);
  for (int i = 0; i < n_args; i++) {
    if (!args[i]) {
      err_set(err, LOOM_ERR_INVALID_ARG, "te_create_primfunc \"%s\": argument %d is NULL", name, i);
      return NULL;
    }
    for (int j = 0; j < i; j++)
      if (args[j] == args[i]) {
        err_set(err, LOOM_ERR_INVALID_ARG,
                "te_create_primfunc \"%s\": tensor \"%s\" is listed twice in the arguments", name,
                args[i]->name);
        return NULL;
      }
  }
  for (int i = 0; i < n_args; i++)
    if (!lower_visit_tensor(&L, args[i])) return NULL;
  for (int i = 0; i < L.earlier.n; i++) /* grows while visiting */
    if (!lower_visit_tensor(&L, L.earlier.items[i])) return NULL;
  if (!check_loop_reads(&L)) return NULL;
  for (int i = 0; i < L.order.n; i++)
    for (int j = 0; j < i; j++)
      if (strcmp(L.order.items[i]->name, L.order.items[j]->name) == 0) {
        err_set(err, LOOM_ERR_INVALID_ARG,
                "te_create_primfunc \"%s\": two tensors are named \"%s\"; names must be unique",
                name, L.order.items[i]->name);
        return NULL;
      }

  StmtVec nests = {0};
  VEC(const Buffer *) allocs = {0};
  if (!lower_nests(&L, name, &nests)) return NULL;
  for (int i = 0; i < L.order.n; i++) {
    TeTensor *t = L.order.items[i];
    if (t->kind == TE_COMPUTE && !is_arg(&L, t)) VEC_PUSH(a, allocs, t->buffer);
  }
  if (nests.n == 0) {
    err_set(err, LOOM_ERR_INVALID_ARG, "te_create_primfunc \"%s\": nothing is computed", name);
    return NULL;
  }
  Block *root = ARENA_NEW(a, Block);
  root->name = "root";
  root->alloc_buffers = allocs.items;
  root->n_alloc = allocs.n;
  root->body = stmt_seq(a, nests.items, nests.n);
  const Stmt *body = stmt_realize(a, NULL, 0, expr_bool(a, true), root);
  const Buffer **params = ARENA_ARRAY(a, const Buffer *, n_args);
  for (int i = 0; i < n_args; i++) params[i] = args[i]->buffer;
  return primfunc_new(a, name, params, n_args, body);
}
