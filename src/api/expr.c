/* Tensors and element expressions for compute definitions: thin, checked
 * wrappers over te.h and the expression constructors. The checks live here
 * (not in the IR constructors, which assume well-typed operands) so a
 * mistake is reported at the builder call that made it. */
#include "api/api_internal.h"

#include "support/strbuf.h"

#include <string.h>

#define MAX_RANK 8

static loom_expr *wrap_expr(loom_ctx *ctx, const Expr *e) {
  loom_expr *x = ARENA_NEW(ctx->arena, loom_expr);
  x->h.magic = API_EXPR;
  x->h.ctx = ctx;
  x->e = e;
  return x;
}

static const char *dstr(DType t) {
  static _Thread_local char buf[16];
  return dtype_str(t, buf);
}

/* An operand check: a NULL operand keeps an earlier failure's message (the
 * failure that produced the NULL) and only reports itself when there is
 * none. */
static bool operand_ok(loom_ctx *ctx, const loom_expr *e, const char *fn, const char *arg) {
  if (!e && ctx->err.status != LOOM_OK) return false;
  return api_check(ctx, e, API_EXPR, fn, arg);
}

/* ---- tensors ---- */

static bool shape_ok(loom_ctx *ctx, const char *fn, const char *name, int ndim,
                     const int64_t *shape) {
  if (!name || !*name) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "name is %s, expected a tensor name",
             name ? "empty" : "NULL");
    return false;
  }
  if (ndim < 0 || ndim > MAX_RANK) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "tensor \"%s\": ndim is %d, expected 0..%d", name,
             ndim, MAX_RANK);
    return false;
  }
  if (ndim > 0 && !shape) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "tensor \"%s\": shape is NULL for rank %d", name,
             ndim);
    return false;
  }
  for (int d = 0; d < ndim; d++)
    if (shape[d] < 1) {
      api_fail(ctx, LOOM_ERR_INVALID_ARG, fn,
               "tensor \"%s\": dimension %d is %lld, expected >= 1", name, d,
               (long long)shape[d]);
      return false;
    }
  return true;
}

static loom_tensor *wrap_tensor(loom_ctx *ctx, TeTensor *t) {
  loom_tensor *x = ARENA_NEW(ctx->arena, loom_tensor);
  x->h.magic = API_TENSOR;
  x->h.ctx = ctx;
  x->t = t;
  return x;
}

loom_tensor *loom_placeholder(loom_ctx *ctx, const char *name, loom_dtype t, int ndim,
                              const int64_t *shape) {
  const char *fn = "loom_placeholder";
  if (!api_ctx_ok(ctx)) return NULL;
  DType dt;
  if (!api_dtype(t, &dt)) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "tensor \"%s\": dtype %d is not a loom_dtype",
             name ? name : "?", (int)t);
    return NULL;
  }
  if (!shape_ok(ctx, fn, name, ndim, shape)) return NULL;
  LoomError err = {0};
  TeTensor *x = te_placeholder(ctx->arena, name, dt, ndim, ndim ? shape : (int64_t[]){1}, &err);
  if (!x) {
    api_fail_err(ctx, fn, &err);
    return NULL;
  }
  return wrap_tensor(ctx, x);
}

typedef struct ComputeClosure {
  loom_ctx *ctx;
  loom_compute_fn fn;
  void *user;
  int ndim;
  bool returned_null;
  const char *fault; /* set when the returned handle is unusable */
} ComputeClosure;

static const Expr *compute_trampoline(Arena *a, const Expr *const *axes, void *user) {
  ComputeClosure *c = user;
  loom_expr **wrapped = ARENA_ARRAY(a, loom_expr *, c->ndim);
  for (int d = 0; d < c->ndim; d++) wrapped[d] = wrap_expr(c->ctx, axes[d]);
  loom_expr *e = c->fn(c->ctx, wrapped, c->user);
  if (!e) {
    c->returned_null = true;
    return NULL;
  }
  if (!api_check(c->ctx, e, API_EXPR, "loom_compute", "(the callback's result)")) {
    c->fault = "bad";
    return NULL;
  }
  if (e->axis) {
    c->fault = "axis";
    return NULL;
  }
  return e->e;
}

loom_tensor *loom_compute(loom_ctx *ctx, const char *name, int ndim, const int64_t *shape,
                          loom_compute_fn fn, void *user) {
  const char *f = "loom_compute";
  if (!api_ctx_ok(ctx)) return NULL;
  if (!shape_ok(ctx, f, name, ndim, shape)) return NULL;
  if (!fn) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, f, "tensor \"%s\": fn is NULL", name);
    return NULL;
  }
  ComputeClosure c = {ctx, fn, user, ndim, false, NULL};
  uint64_t before = ctx->err_count;
  LoomError err = {0};
  TeTensor *t = te_compute(ctx->arena, name, ndim, ndim ? shape : (int64_t[]){1},
                           compute_trampoline, &c, &err);
  if (t) return wrap_tensor(ctx, t);
  if (c.fault && !strcmp(c.fault, "axis")) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, f,
             "tensor \"%s\": the callback returned a bare reduce axis, expected an element "
             "expression",
             name);
  } else if (c.fault) {
    /* api_check's message (bad handle) stands; name the tensor. */
    err_prefix(&ctx->err, "tensor \"%s\": ", name);
  } else if (c.returned_null && ctx->err_count != before) {
    /* The callback's own builder failure says what went wrong. */
    err_prefix(&ctx->err, "%s: tensor \"%s\": ", f, name);
  } else {
    api_fail_err(ctx, f, &err);
  }
  return NULL;
}

int loom_tensor_ndim(const loom_tensor *t) {
  return api_ctx_of(t, API_TENSOR) ? t->t->ndim : -1;
}

int64_t loom_tensor_dim(loom_ctx *ctx, const loom_tensor *t, int axis) {
  if (!api_ctx_ok(ctx) || !api_check(ctx, t, API_TENSOR, "loom_tensor_dim", "t")) return -1;
  if (axis < 0 || axis >= t->t->ndim) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, "loom_tensor_dim",
             "axis %d out of range for tensor \"%s\" of rank %d", axis, t->t->name, t->t->ndim);
    return -1;
  }
  return t->t->shape[axis];
}

loom_dtype loom_tensor_dtype(const loom_tensor *t) {
  return api_ctx_of(t, API_TENSOR) ? api_dtype_public(t->t->dtype) : (loom_dtype)-1;
}

const char *loom_tensor_name(const loom_tensor *t) {
  return api_ctx_of(t, API_TENSOR) ? t->t->name : NULL;
}

/* ---- constants and axes ---- */

loom_expr *loom_int(loom_ctx *ctx, loom_dtype t, int64_t v) {
  const char *fn = "loom_int";
  if (!api_ctx_ok(ctx)) return NULL;
  DType dt;
  if (!api_dtype(t, &dt) || !(dtype_is_int(dt) || dtype_is_bool(dt))) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "dtype %s, expected an integer or bool type",
             loom_dtype_name(t));
    return NULL;
  }
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  if (t == LOOM_I8) lo = -128, hi = 127;
  if (t == LOOM_U8) lo = 0, hi = 255;
  if (t == LOOM_I32) lo = INT32_MIN, hi = INT32_MAX;
  if (t == LOOM_BOOL) lo = 0, hi = 1;
  if (v < lo || v > hi) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "value %lld does not fit %s", (long long)v,
             loom_dtype_name(t));
    return NULL;
  }
  return wrap_expr(ctx, expr_int(ctx->arena, dt, v));
}

loom_expr *loom_float(loom_ctx *ctx, loom_dtype t, double v) {
  if (!api_ctx_ok(ctx)) return NULL;
  if (t != LOOM_F32 && t != LOOM_F64) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, "loom_float", "dtype %s, expected f32 or f64",
             loom_dtype_name(t));
    return NULL;
  }
  DType dt;
  api_dtype(t, &dt);
  return wrap_expr(ctx, expr_float(ctx->arena, dt, v));
}

loom_expr *loom_index(loom_ctx *ctx, int64_t v) { return loom_int(ctx, LOOM_I64, v); }

loom_expr *loom_reduce_axis(loom_ctx *ctx, const char *name, int64_t extent) {
  const char *fn = "loom_reduce_axis";
  if (!api_ctx_ok(ctx)) return NULL;
  if (!name || !*name) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "name is %s, expected an axis name",
             name ? "empty" : "NULL");
    return NULL;
  }
  if (extent < 1) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "axis \"%s\": extent %lld, expected >= 1", name,
             (long long)extent);
    return NULL;
  }
  IterVar *iv = ARENA_NEW(ctx->arena, IterVar);
  *iv = te_reduce_axis(ctx->arena, name, extent);
  loom_expr *x = wrap_expr(ctx, iv->var);
  x->axis = iv;
  return x;
}

/* ---- loads ---- */

loom_expr *loom_load(loom_ctx *ctx, const loom_tensor *t, loom_expr *const *idx, int n) {
  const char *fn = "loom_load";
  if (!api_ctx_ok(ctx) || !api_check(ctx, t, API_TENSOR, fn, "t")) return NULL;
  const TeTensor *x = t->t;
  if (n != x->ndim) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "tensor \"%s\" has rank %d, got %d indices", x->name,
             x->ndim, n);
    return NULL;
  }
  if (n > 0 && !idx) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "tensor \"%s\": idx is NULL", x->name);
    return NULL;
  }
  const Expr **e = ARENA_ARRAY(ctx->arena, const Expr *, n);
  for (int d = 0; d < n; d++) {
    if (!operand_ok(ctx, idx[d], fn, "idx[]")) return NULL;
    const Expr *i = idx[d]->e;
    if (!dtype_eq(i->dtype, DT_I64)) {
      api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "tensor \"%s\": index %d has dtype %s, expected i64",
               x->name, d, dstr(i->dtype));
      return NULL;
    }
    if (i->kind == EXPR_INT && (i->int_value < 0 || i->int_value >= x->shape[d])) {
      api_fail(ctx, LOOM_ERR_INVALID_ARG, fn,
               "tensor \"%s\": constant index %lld out of range [0, %lld) in dimension %d",
               x->name, (long long)i->int_value, (long long)x->shape[d], d);
      return NULL;
    }
    e[d] = i;
  }
  return wrap_expr(ctx, te_load(ctx->arena, x, e));
}

/* ---- operators ---- */

typedef enum OperandRule { ANY_NUM, INT_ONLY, BOOL_ONLY, ANY } OperandRule;

static loom_expr *binary(loom_ctx *ctx, const char *fn, ExprKind k, OperandRule rule, loom_expr *a,
                         loom_expr *b) {
  if (!api_ctx_ok(ctx)) return NULL;
  if (!operand_ok(ctx, a, fn, "a") || !operand_ok(ctx, b, fn, "b")) return NULL;
  DType ta = a->e->dtype, tb = b->e->dtype;
  if (!dtype_eq(ta, tb)) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn,
             "operand dtypes differ: %s and %s (convert one with loom_cast)", dstr(ta), dstr(tb));
    return NULL;
  }
  const char *want = NULL;
  if (rule == ANY_NUM && dtype_is_bool(ta)) want = "numeric";
  if (rule == INT_ONLY && !dtype_is_int(ta)) want = "integer";
  if (rule == BOOL_ONLY && !dtype_is_bool(ta)) want = "bool";
  if (want) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "operands are %s, expected %s", dstr(ta), want);
    return NULL;
  }
  if ((k == EXPR_DIV || k == EXPR_MOD || k == EXPR_FLOORDIV || k == EXPR_FLOORMOD) &&
      dtype_is_int(ta) && b->e->kind == EXPR_INT && b->e->int_value == 0) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "division by the constant 0");
    return NULL;
  }
  return wrap_expr(ctx, expr_binary(ctx->arena, k, a->e, b->e));
}

#define BINARY(name, kind, rule)                                        \
  loom_expr *name(loom_ctx *ctx, loom_expr *a, loom_expr *b) {          \
    return binary(ctx, #name, kind, rule, a, b);                        \
  }
BINARY(loom_add, EXPR_ADD, ANY_NUM)
BINARY(loom_sub, EXPR_SUB, ANY_NUM)
BINARY(loom_mul, EXPR_MUL, ANY_NUM)
BINARY(loom_div, EXPR_DIV, ANY_NUM)
BINARY(loom_mod, EXPR_MOD, INT_ONLY)
BINARY(loom_floordiv, EXPR_FLOORDIV, INT_ONLY)
BINARY(loom_floormod, EXPR_FLOORMOD, INT_ONLY)
BINARY(loom_min, EXPR_MIN, ANY_NUM)
BINARY(loom_max, EXPR_MAX, ANY_NUM)
BINARY(loom_eq, EXPR_EQ, ANY)
BINARY(loom_ne, EXPR_NE, ANY)
BINARY(loom_lt, EXPR_LT, ANY_NUM)
BINARY(loom_le, EXPR_LE, ANY_NUM)
BINARY(loom_gt, EXPR_GT, ANY_NUM)
BINARY(loom_ge, EXPR_GE, ANY_NUM)
BINARY(loom_and, EXPR_AND, BOOL_ONLY)
BINARY(loom_or, EXPR_OR, BOOL_ONLY)
#undef BINARY

loom_expr *loom_not(loom_ctx *ctx, loom_expr *a) {
  const char *fn = "loom_not";
  if (!api_ctx_ok(ctx) || !operand_ok(ctx, a, fn, "a")) return NULL;
  if (!dtype_is_bool(a->e->dtype)) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "operand is %s, expected bool", dstr(a->e->dtype));
    return NULL;
  }
  return wrap_expr(ctx, expr_not(ctx->arena, a->e));
}

loom_expr *loom_select(loom_ctx *ctx, loom_expr *cond, loom_expr *t, loom_expr *f) {
  const char *fn = "loom_select";
  if (!api_ctx_ok(ctx)) return NULL;
  if (!operand_ok(ctx, cond, fn, "cond") || !operand_ok(ctx, t, fn, "t") ||
      !operand_ok(ctx, f, fn, "f"))
    return NULL;
  if (!dtype_is_bool(cond->e->dtype)) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "cond is %s, expected bool", dstr(cond->e->dtype));
    return NULL;
  }
  if (!dtype_eq(t->e->dtype, f->e->dtype)) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "t is %s but f is %s, expected one dtype",
             dstr(t->e->dtype), dstr(f->e->dtype));
    return NULL;
  }
  return wrap_expr(ctx, expr_select(ctx->arena, cond->e, t->e, f->e));
}

loom_expr *loom_cast(loom_ctx *ctx, loom_dtype t, loom_expr *a) {
  const char *fn = "loom_cast";
  if (!api_ctx_ok(ctx)) return NULL;
  DType dt;
  if (!api_dtype(t, &dt)) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "dtype %d is not a loom_dtype", (int)t);
    return NULL;
  }
  if (!operand_ok(ctx, a, fn, "a")) return NULL;
  if (dtype_eq(a->e->dtype, dt)) return a;
  return wrap_expr(ctx, expr_cast(ctx->arena, dt, a->e));
}

loom_expr *loom_call(loom_ctx *ctx, const char *name, loom_expr *const *args, int n) {
  const char *fn = "loom_call";
  if (!api_ctx_ok(ctx)) return NULL;
  CallOp op;
  if (!name || !call_op_parse(name, &op)) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn,
             "unknown function \"%s\", expected exp log sqrt tanh erf fabs floor ceil round sin "
             "cos pow",
             name ? name : "(NULL)");
    return NULL;
  }
  if (n != call_op_arity(op) || !args) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "%s takes %d arguments, got %d%s", name,
             call_op_arity(op), n, args ? "" : " (args is NULL)");
    return NULL;
  }
  const Expr *e[2];
  for (int i = 0; i < n; i++) {
    if (!operand_ok(ctx, args[i], fn, "args[]")) return NULL;
    e[i] = args[i]->e;
    if (!dtype_is_float(e[i]->dtype) || !dtype_eq(e[i]->dtype, e[0]->dtype)) {
      api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "%s: argument %d is %s, expected %s", name, i,
               dstr(e[i]->dtype), i ? dstr(e[0]->dtype) : "f32 or f64");
      return NULL;
    }
  }
  return wrap_expr(ctx, expr_call(ctx->arena, op, e[0]->dtype, e, n));
}

/* ---- reductions ---- */

static loom_expr *reduce(loom_ctx *ctx, const char *fn, ReduceOp op, loom_expr *src,
                         loom_expr *const *axes, int n, loom_expr *cond) {
  if (!api_ctx_ok(ctx) || !operand_ok(ctx, src, fn, "src")) return NULL;
  if (n < 1 || n > MAX_RANK || !axes) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "%d axes%s, expected 1..%d reduce axes", n,
             axes ? "" : " (axes is NULL)", MAX_RANK);
    return NULL;
  }
  if (dtype_is_bool(src->e->dtype)) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "src is bool, expected a numeric type");
    return NULL;
  }
  if (src->e->kind == EXPR_REDUCE) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "src is itself a reduction; nest through a loom_compute");
    return NULL;
  }
  IterVar iv[MAX_RANK];
  for (int i = 0; i < n; i++) {
    if (!operand_ok(ctx, axes[i], fn, "axes[]")) return NULL;
    if (!axes[i]->axis) {
      api_fail(ctx, LOOM_ERR_INVALID_ARG, fn,
               "axes[%d] is %s, expected an axis from loom_reduce_axis", i,
               expr_to_string(ctx->arena, axes[i]->e));
      return NULL;
    }
    for (int j = 0; j < i; j++)
      if (axes[j]->e == axes[i]->e) {
        api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "axis \"%s\" given twice",
                 axes[i]->e->var.name);
        return NULL;
      }
    iv[i] = *axes[i]->axis;
  }
  if (cond) {
    if (!dtype_is_bool(cond->e->dtype)) {
      api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "cond is %s, expected bool", dstr(cond->e->dtype));
      return NULL;
    }
  }
  const Expr *c = cond ? cond->e : NULL;
  const Expr *e = op == REDUCE_SUM   ? te_sum(ctx->arena, src->e, iv, n, c)
                  : op == REDUCE_MAX ? te_max(ctx->arena, src->e, iv, n, c)
                                     : te_min(ctx->arena, src->e, iv, n, c);
  return wrap_expr(ctx, e);
}

loom_expr *loom_sum(loom_ctx *ctx, loom_expr *src, loom_expr *const *axes, int n) {
  return reduce(ctx, "loom_sum", REDUCE_SUM, src, axes, n, NULL);
}
loom_expr *loom_max_reduce(loom_ctx *ctx, loom_expr *src, loom_expr *const *axes, int n) {
  return reduce(ctx, "loom_max_reduce", REDUCE_MAX, src, axes, n, NULL);
}
loom_expr *loom_min_reduce(loom_ctx *ctx, loom_expr *src, loom_expr *const *axes, int n) {
  return reduce(ctx, "loom_min_reduce", REDUCE_MIN, src, axes, n, NULL);
}

loom_expr *loom_reduce_where(loom_ctx *ctx, loom_reduce_op op, loom_expr *src,
                             loom_expr *const *axes, int n, loom_expr *cond) {
  const char *fn = "loom_reduce_where";
  if (!api_ctx_ok(ctx)) return NULL;
  if (op != LOOM_REDUCE_SUM && op != LOOM_REDUCE_MAX && op != LOOM_REDUCE_MIN) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "op %d is not a loom_reduce_op", (int)op);
    return NULL;
  }
  /* cond is required here: a NULL from a failed builder must not silently
   * mean "no condition". */
  if (!operand_ok(ctx, cond, fn, "cond")) return NULL;
  ReduceOp r = op == LOOM_REDUCE_SUM ? REDUCE_SUM : op == LOOM_REDUCE_MAX ? REDUCE_MAX : REDUCE_MIN;
  return reduce(ctx, fn, r, src, axes, n, cond);
}

loom_dtype loom_expr_dtype(const loom_expr *e) {
  return api_ctx_of(e, API_EXPR) ? api_dtype_public(e->e->dtype) : (loom_dtype)-1;
}

const char *loom_expr_text(loom_ctx *ctx, const loom_expr *e) {
  if (!api_ctx_ok(ctx) || !api_check(ctx, e, API_EXPR, "loom_expr_text", "e")) return NULL;
  return expr_to_string(ctx->arena, e->e);
}
