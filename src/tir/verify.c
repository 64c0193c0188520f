/* Well-formedness checks for a PrimFunc (see tir_verify in text.h).
 *
 * One walk with a scope: variables and buffers are pushed where they are
 * bound and popped when the binder's subtree ends. Scopes are short (loop
 * depth plus a block's iterators), so lookups are linear scans. The first
 * violation stops the walk; its message names the block (or the function)
 * it occurs in, so a refused schedule or pass can be traced to its place. */
#include "tir/text.h"

#include "support/strbuf.h"
#include "support/vec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct Verifier {
  Arena *arena;
  LoomError *err;
  const char *func;
  const char *block; /* innermost enclosing block, NULL outside any */
  VEC(const Expr *) vars;
  VEC(const Buffer *) buffers;
  VEC(const char *) block_names;
} Verifier;

static bool vfail(Verifier *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool vfail(Verifier *v, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (v->block) err_set(v->err, LOOM_ERR_INVALID_ARG, "func %s, block \"%s\": %s", v->func, v->block, msg);
  else err_set(v->err, LOOM_ERR_INVALID_ARG, "func %s: %s", v->func, msg);
  return false;
}

static const char *dstr(Verifier *v, DType t) {
  char buf[16];
  return arena_strdup(v->arena, dtype_str(t, buf));
}

static const char *estr(Verifier *v, const Expr *e) { return expr_to_string(v->arena, e); }

static bool var_in_scope(const Verifier *v, const Expr *x) {
  for (int i = v->vars.n - 1; i >= 0; i--)
    if (v->vars.items[i] == x) return true;
  return false;
}

static bool buffer_in_scope(const Verifier *v, const Buffer *b) {
  for (int i = v->buffers.n - 1; i >= 0; i--)
    if (v->buffers.items[i] == b) return true;
  return false;
}

static bool check_expr(Verifier *v, const Expr *e);

static bool check_exprs(Verifier *v, const Expr *const *xs, int n) {
  for (int i = 0; i < n; i++)
    if (!check_expr(v, xs[i])) return false;
  return true;
}

static bool check_buffer_use(Verifier *v, const Buffer *b, int n_indices, const char *what) {
  if (!buffer_in_scope(v, b))
    return vfail(v, "%s buffer \"%s\", which is neither a parameter nor allocated in an enclosing block", what,
                 b->name);
  if (n_indices != b->ndim)
    return vfail(v, "%s buffer \"%s\" with %d indices, expected %d (its ndim)", what, b->name, n_indices, b->ndim);
  return true;
}

/* Index expressions: integers (int64 scalars, or vectors of them). */
static bool check_indices(Verifier *v, const Buffer *b, const Expr *const *idx, int n) {
  for (int i = 0; i < n; i++) {
    if (!check_expr(v, idx[i])) return false;
    if (!dtype_is_int(idx[i]->dtype))
      return vfail(v, "index %d of buffer \"%s\" is %s of dtype %s, expected an integer", i, b->name,
                   estr(v, idx[i]), dstr(v, idx[i]->dtype));
  }
  return true;
}

static bool check_expr(Verifier *v, const Expr *e) {
  if (!e) return vfail(v, "missing expression (NULL)");
  switch (e->kind) {
    case EXPR_INT:
    case EXPR_FLOAT: return true;
    case EXPR_VAR:
      if (!var_in_scope(v, e))
        return vfail(v, "variable \"%s\" is used outside the loop, block or reduction that binds it", e->var.name);
      return true;
    case EXPR_NOT:
    case EXPR_CAST: return check_expr(v, e->un.a);
    case EXPR_SELECT:
      if (!check_expr(v, e->select.cond) || !check_expr(v, e->select.t) || !check_expr(v, e->select.f)) return false;
      if (!dtype_is_bool(e->select.cond->dtype))
        return vfail(v, "select condition %s has dtype %s, expected bool", estr(v, e->select.cond),
                     dstr(v, e->select.cond->dtype));
      if (!dtype_eq(e->select.t->dtype, e->select.f->dtype))
        return vfail(v, "select branches of %s have dtypes %s and %s", estr(v, e), dstr(v, e->select.t->dtype),
                     dstr(v, e->select.f->dtype));
      return true;
    case EXPR_LOAD:
      return check_buffer_use(v, e->load.buffer, e->load.n, "load from") &&
             check_indices(v, e->load.buffer, e->load.indices, e->load.n);
    case EXPR_CALL:
      if (e->call.n != call_op_arity(e->call.op))
        return vfail(v, "call to %s has %d arguments, expected %d", call_op_name(e->call.op), e->call.n,
                     call_op_arity(e->call.op));
      return check_exprs(v, e->call.args, e->call.n);
    case EXPR_RAMP: return check_expr(v, e->ramp.base) && check_expr(v, e->ramp.stride);
    case EXPR_BROADCAST: return check_expr(v, e->broadcast.value);
    case EXPR_REDUCE: {
      for (int i = 0; i < e->reduce.n_axes; i++)
        if (!check_expr(v, e->reduce.axes[i].min) || !check_expr(v, e->reduce.axes[i].extent)) return false;
      int saved = v->vars.n;
      for (int i = 0; i < e->reduce.n_axes; i++) VEC_PUSH(v->arena, v->vars, e->reduce.axes[i].var);
      bool ok = check_expr(v, e->reduce.source) && (!e->reduce.cond || check_expr(v, e->reduce.cond));
      v->vars.n = saved;
      return ok;
    }
    default:
      if (!check_expr(v, e->bin.a) || !check_expr(v, e->bin.b)) return false;
      if (!dtype_eq(e->bin.a->dtype, e->bin.b->dtype))
        return vfail(v, "operands of %s in %s have dtypes %s and %s, expected one dtype", expr_kind_name(e->kind),
                     estr(v, e), dstr(v, e->bin.a->dtype), dstr(v, e->bin.b->dtype));
      return true;
  }
}

static bool check_index_expr(Verifier *v, const Expr *e, const char *what) {
  if (!check_expr(v, e)) return false;
  if (!dtype_eq(e->dtype, DT_I64))
    return vfail(v, "%s %s has dtype %s, expected i64 (index arithmetic is int64)", what, estr(v, e),
                 dstr(v, e->dtype));
  return true;
}

static bool check_bool(Verifier *v, const Expr *e, const char *what) {
  if (!check_expr(v, e)) return false;
  if (!dtype_eq(e->dtype, DT_BOOL1)) return vfail(v, "%s %s has dtype %s, expected bool", what, estr(v, e), dstr(v, e->dtype));
  return true;
}

/* Shape and strides are evaluated where the buffer is declared. */
static bool check_buffer_decl(Verifier *v, const Buffer *b) {
  for (int d = 0; d < b->ndim; d++) {
    if (!check_index_expr(v, b->shape[d], "shape of buffer")) return false;
    if (b->strides && !check_index_expr(v, b->strides[d], "stride of buffer")) return false;
  }
  if (b->align_factor && (b->align_axis < 0 || b->align_axis >= b->ndim))
    return vfail(v, "storage_align axis %d of buffer \"%s\" is out of range [0, %d)", b->align_axis, b->name, b->ndim);
  return true;
}

static bool check_regions(Verifier *v, const BufferRegion *rs, int n, const char *what) {
  for (int i = 0; i < n; i++) {
    const Buffer *b = rs[i].buffer;
    if (!check_buffer_use(v, b, b->ndim, what)) return false;
    for (int d = 0; d < b->ndim; d++)
      if (!check_index_expr(v, rs[i].min[d], "region min") || !check_index_expr(v, rs[i].extent[d], "region extent"))
        return false;
  }
  return true;
}

static bool check_stmt(Verifier *v, const Stmt *s);

static bool check_realize(Verifier *v, const Stmt *s) {
  const Block *b = s->realize.block;
  if (!b->name || !b->name[0]) return vfail(v, "a block has no name");
  for (int i = 0; i < v->block_names.n; i++)
    if (strcmp(v->block_names.items[i], b->name) == 0) return vfail(v, "block name \"%s\" is used twice", b->name);
  VEC_PUSH(v->arena, v->block_names, b->name);
  /* Bindings, predicate and domains are in the enclosing scope; messages
   * still name this block, the thing at fault. */
  const char *outer = v->block;
  v->block = b->name;
  if (s->realize.n != b->n_iters)
    return vfail(v, "%d iterator bindings for %d block iterators", s->realize.n, b->n_iters);
  for (int i = 0; i < b->n_iters; i++) {
    const IterVar *iv = &b->iters[i];
    const char *name = iv->var->var.name;
    if (!dtype_eq(iv->var->dtype, DT_I64))
      return vfail(v, "iterator \"%s\" has dtype %s, expected i64", name, dstr(v, iv->var->dtype));
    if (!check_index_expr(v, s->realize.iter_values[i], arena_printf(v->arena, "binding of iterator \"%s\"", name)) ||
        !check_index_expr(v, iv->min, arena_printf(v->arena, "domain min of iterator \"%s\"", name)) ||
        !check_index_expr(v, iv->extent, arena_printf(v->arena, "domain extent of iterator \"%s\"", name)))
      return false;
  }
  if (!check_bool(v, s->realize.predicate, "predicate")) return false;
  int saved_vars = v->vars.n, saved_bufs = v->buffers.n;
  for (int i = 0; i < b->n_iters; i++) VEC_PUSH(v->arena, v->vars, b->iters[i].var);
  for (int i = 0; i < b->n_alloc; i++) {
    if (!check_buffer_decl(v, b->alloc_buffers[i])) return false;
    VEC_PUSH(v->arena, v->buffers, b->alloc_buffers[i]);
  }
  if (!check_regions(v, b->reads, b->n_reads, "reads") || !check_regions(v, b->writes, b->n_writes, "writes") ||
      (b->init && !check_stmt(v, b->init)) || !check_stmt(v, b->body))
    return false;
  v->vars.n = saved_vars;
  v->buffers.n = saved_bufs;
  v->block = outer;
  return true;
}

static bool check_store(Verifier *v, const Stmt *s) {
  const Buffer *b = s->store.buffer;
  if (!check_buffer_use(v, b, s->store.n, "store to") || !check_indices(v, b, s->store.indices, s->store.n) ||
      !check_expr(v, s->store.value))
    return false;
  /* A vector index (ramp) stores as many lanes as it has. */
  int lanes = 1;
  for (int i = 0; i < s->store.n; i++)
    if (s->store.indices[i]->dtype.lanes > lanes) lanes = s->store.indices[i]->dtype.lanes;
  DType want = dtype_with_lanes(b->dtype, lanes * (b->dtype.lanes ? b->dtype.lanes : 1));
  if (!dtype_eq(s->store.value->dtype, want))
    return vfail(v, "store to buffer \"%s\" of a value %s of dtype %s, expected %s", b->name,
                 estr(v, s->store.value), dstr(v, s->store.value->dtype), dstr(v, want));
  return true;
}

static bool check_stmt(Verifier *v, const Stmt *s) {
  if (!s) return vfail(v, "missing statement (NULL)");
  switch (s->kind) {
    case STMT_FOR: {
      const Expr *x = s->loop.var;
      if (x->kind != EXPR_VAR) return vfail(v, "a loop variable is not a variable");
      if (!dtype_eq(x->dtype, DT_I64))
        return vfail(v, "loop \"%s\": variable has dtype %s, expected i64", x->var.name, dstr(v, x->dtype));
      if (!check_index_expr(v, s->loop.min, arena_printf(v->arena, "min of loop \"%s\"", x->var.name)) ||
          !check_index_expr(v, s->loop.extent, arena_printf(v->arena, "extent of loop \"%s\"", x->var.name)))
        return false;
      if (s->loop.kind == FOR_THREAD_BINDING && (!s->loop.thread_tag || !s->loop.thread_tag[0]))
        return vfail(v, "loop \"%s\" is bound to a thread but has no thread tag", x->var.name);
      VEC_PUSH(v->arena, v->vars, x);
      bool ok = check_stmt(v, s->loop.body);
      v->vars.n--;
      return ok;
    }
    case STMT_BLOCK_REALIZE: return check_realize(v, s);
    case STMT_STORE: return check_store(v, s);
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n; i++)
        if (!check_stmt(v, s->seq.stmts[i])) return false;
      return true;
    case STMT_IF:
      return check_bool(v, s->if_.cond, "if condition") && check_stmt(v, s->if_.then_s) &&
             (!s->if_.else_s || check_stmt(v, s->if_.else_s));
    case STMT_EVALUATE: return !s->eval.value || check_expr(v, s->eval.value);
    case STMT_ALLOCATE: {
      if (!check_buffer_decl(v, s->alloc.buffer)) return false;
      VEC_PUSH(v->arena, v->buffers, s->alloc.buffer);
      bool ok = check_stmt(v, s->alloc.body);
      v->buffers.n--;
      return ok;
    }
    case STMT_DMA: {
      const Expr *ends[2] = {s->dma.dst, s->dma.src};
      for (int i = 0; i < 2; i++)
        if (ends[i]->kind != EXPR_LOAD || ends[i]->load.n != 1 || ends[i]->dtype.lanes != 1)
          return vfail(v, "DMA %s %s is not an element of a flat buffer", i ? "source" : "destination",
                       estr(v, ends[i]));
      if (!dtype_eq(s->dma.dst->dtype, s->dma.src->dtype))
        return vfail(v, "DMA from \"%s\" (%s) to \"%s\" (%s): expected one dtype", s->dma.src->load.buffer->name,
                     dstr(v, s->dma.src->dtype), s->dma.dst->load.buffer->name, dstr(v, s->dma.dst->dtype));
      return check_expr(v, s->dma.dst) && check_expr(v, s->dma.src) &&
             check_index_expr(v, s->dma.row_elems, "DMA row length") && check_index_expr(v, s->dma.rows, "DMA rows") &&
             check_index_expr(v, s->dma.dst_stride, "DMA destination stride") &&
             check_index_expr(v, s->dma.src_stride, "DMA source stride") &&
             (!s->dma.ticket || check_index_expr(v, s->dma.ticket, "DMA ticket"));
    }
    case STMT_DMA_WAIT: return check_index_expr(v, s->dma_wait.ticket, "DMA ticket");
    case STMT_KIND_COUNT: break;
  }
  return vfail(v, "unknown statement kind %d", (int)s->kind);
}

/* Variables in parameter shapes and strides are the function's own inputs
 * (symbolic dimensions): they are in scope everywhere. */
static void collect_shape_vars(Verifier *v, const Expr *e) {
  switch (e->kind) {
    case EXPR_VAR:
      if (!var_in_scope(v, e)) VEC_PUSH(v->arena, v->vars, e);
      return;
    case EXPR_INT:
    case EXPR_FLOAT: return;
    default:
      if (expr_is_binary(e->kind)) {
        collect_shape_vars(v, e->bin.a);
        collect_shape_vars(v, e->bin.b);
      } else if (e->kind == EXPR_CAST || e->kind == EXPR_NOT) {
        collect_shape_vars(v, e->un.a);
      }
      return;
  }
}

loom_status tir_verify(const PrimFunc *f, LoomError *err) {
  Verifier v;
  memset(&v, 0, sizeof v);
  v.arena = arena_new();
  v.err = err;
  v.func = f->name ? f->name : "?";
  bool ok = true;
  for (int i = 0; i < f->n_params; i++) {
    const Buffer *b = f->params[i];
    for (int d = 0; d < b->ndim; d++) {
      collect_shape_vars(&v, b->shape[d]);
      if (b->strides) collect_shape_vars(&v, b->strides[d]);
    }
  }
  for (int i = 0; ok && i < f->n_params; i++) {
    ok = check_buffer_decl(&v, f->params[i]);
    VEC_PUSH(v.arena, v.buffers, f->params[i]);
  }
  ok = ok && check_stmt(&v, f->body);
  arena_free(v.arena);
  if (ok) err_clear(err);
  return ok ? LOOM_OK : LOOM_ERR_INVALID_ARG;
}
