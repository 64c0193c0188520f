/* Loop IR printer. The grammar it writes is the one parser.c reads (see
 * docs/tir.md); the expression syntax is expr_print's, re-implemented here
 * because buffers, not only variables, need unique printed names (expr_print
 * writes buffer->name as is) and a variable must be declared before use.
 *
 * Every binding site (loop, block iterator, reduction axis, buffer
 * declaration) gets a fresh name, in print order, so the output depends only
 * on the IR, and a node bound twice (sibling loops sharing a Var) prints as
 * two names just as its reparse, with two nodes, will. A name is the node's
 * own name made into an identifier (other characters become '_', reserved
 * words get a trailing '_') and made unique in the function with a suffix
 * _1, _2, ... (vars and buffers share one namespace, which keeps the text
 * readable and the parser simple). The name is installed after the binder's
 * own expressions are printed (loop bounds, iterator domains and bindings
 * are in the enclosing scope, as the parser reads them) and removed when the
 * binder's scope ends. */
#include "tir/text.h"

#include "support/ptrmap.h"
#include "support/strbuf.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Printer {
  StrBuf *sb;
  Arena *arena;   /* names and maps; freed with the printer */
  PtrMap names;   /* Var or Buffer node -> printed name */
  const char **used; /* open-addressing set of printed names */
  int n_used, cap_used;
  /* Variables printed before any declaration: the function's free
   * variables (shape variables), declared in the function header. */
  const Expr **free_vars;
  int n_free, cap_free;
  /* tir_print_func_anonymous: every variable and buffer is named from "v"
   * (v, v_1, v_2, ... in binding order), whatever its own name. */
  bool anonymous;
} Printer;

static const char *const reserved_words[] = {
    "func", "block", "for", "in", "where", "reads", "writes", "alloc", "allocate", "init", "if",
    "else", "nop", "eval", "true", "false", "select", "cast", "ramp", "broadcast", "floordiv",
    "floormod", "min", "max", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "spatial",
    "reduce", "serial", "parallel", "vectorized", "unroll", "thread", "global", "local", "shared",
    "strides", "align", "storage_align", "inf", "nan",
};

/* True for words the parser gives a meaning: keywords, intrinsic names and
 * dtype names (f32(inf) is a literal). */
static bool name_is_reserved(const char *s) {
  for (size_t i = 0; i < sizeof reserved_words / sizeof reserved_words[0]; i++)
    if (strcmp(s, reserved_words[i]) == 0) return true;
  CallOp op;
  DType t;
  return call_op_parse(s, &op) || dtype_parse(s, &t);
}

static uint64_t str_hash(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static bool used_has(const Printer *p, const char *s) {
  if (!p->cap_used) return false;
  for (uint64_t h = str_hash(s) & (uint64_t)(p->cap_used - 1); p->used[h];
       h = (h + 1) & (uint64_t)(p->cap_used - 1))
    if (strcmp(p->used[h], s) == 0) return true;
  return false;
}

static void used_add(Printer *p, const char *s) {
  if ((p->n_used + 1) * 2 > p->cap_used) {
    int cap = p->cap_used ? p->cap_used * 2 : 64;
    const char **old = p->used;
    int old_cap = p->cap_used;
    p->used = ARENA_ARRAY(p->arena, const char *, cap);
    p->cap_used = cap;
    p->n_used = 0;
    for (int i = 0; i < old_cap; i++)
      if (old[i]) used_add(p, old[i]);
  }
  uint64_t h = str_hash(s) & (uint64_t)(p->cap_used - 1);
  while (p->used[h]) h = (h + 1) & (uint64_t)(p->cap_used - 1);
  p->used[h] = s;
  p->n_used++;
}

static bool is_ident(const char *s) {
  if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
  for (const char *c = s; *c; c++)
    if (!(isalnum((unsigned char)*c) || *c == '_')) return false;
  return true;
}

/* A new unique name derived from `want`. */
static const char *fresh_name(Printer *p, const char *want) {
  if (p->anonymous) want = "v";
  size_t n = want ? strlen(want) : 0;
  if (n > 64) n = 64; /* keep generated names readable */
  char *base = arena_alloc(p->arena, n + 3);
  size_t k = 0;
  if (n == 0 || isdigit((unsigned char)want[0])) base[k++] = 'v';
  for (size_t i = 0; i < n; i++) base[k++] = (isalnum((unsigned char)want[i]) || want[i] == '_') ? want[i] : '_';
  base[k] = '\0';
  if (name_is_reserved(base)) base[k++] = '_';
  const char *name = base;
  for (int suffix = 1; used_has(p, name); suffix++) name = arena_printf(p->arena, "%s_%d", base, suffix);
  used_add(p, name);
  return name;
}

/* Makes `name` the node's name in the current scope; returns the old one
 * (NULL when none) for restore(). */
static const char *install(Printer *p, const void *node, const char *name) {
  const char *old = ptrmap_get(&p->names, node);
  ptrmap_put(&p->names, node, (void *)name);
  return old;
}

static void restore(Printer *p, const void *node, const char *old) { ptrmap_put(&p->names, node, (void *)old); }

static const char *var_name(Printer *p, const Expr *v) {
  const char *name = ptrmap_get(&p->names, v);
  if (name) return name;
  /* used outside any binder: a free variable, declared in the header */
  if (p->n_free == p->cap_free) {
    int cap = p->cap_free ? p->cap_free * 2 : 8;
    const Expr **nv = ARENA_ARRAY(p->arena, const Expr *, cap);
    if (p->n_free) memcpy(nv, p->free_vars, sizeof(*nv) * (size_t)p->n_free);
    p->free_vars = nv;
    p->cap_free = cap;
  }
  p->free_vars[p->n_free++] = v;
  name = fresh_name(p, v->var.name);
  install(p, v, name);
  return name;
}

/* A buffer used where none is declared (invalid IR) still prints. */
static const char *buffer_name(Printer *p, const Buffer *b) {
  const char *name = ptrmap_get(&p->names, b);
  if (!name) install(p, b, name = fresh_name(p, b->name));
  return name;
}

/* A quoted string with \" \\ and \xHH escapes. */
static void print_string(StrBuf *sb, const char *s) {
  sb_putc(sb, '"');
  for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
    if (*c == '"' || *c == '\\') sb_printf(sb, "\\%c", *c);
    else if (*c < 0x20 || *c >= 0x7f) sb_printf(sb, "\\x%02x", *c);
    else sb_putc(sb, (char)*c);
  }
  sb_putc(sb, '"');
}

static void print_label(StrBuf *sb, const char *s) {
  if (is_ident(s)) sb_puts(sb, s);
  else print_string(sb, s);
}

/* Declaration of a bound variable: `name`, or `name<i32>` when not i64. */
static void print_var_decl(Printer *p, const Expr *v, const char *name) {
  sb_puts(p->sb, name);
  if (!dtype_eq(v->dtype, DT_I64)) {
    char buf[16];
    sb_printf(p->sb, "<%s>", dtype_str(v->dtype, buf));
  }
}

/* ---- expressions ---- */

/* Expressions print through the shared expression printer (ir/expr.c),
 * with this printer naming variables and buffers uniquely and declaring
 * the axes of reductions in scope. */
static void print_expr(Printer *p, const Expr *e);

static const char *hook_var(void *ctx, const Expr *v) { return var_name(ctx, v); }
static const char *hook_buffer(void *ctx, const Buffer *b) { return buffer_name(ctx, b); }

static void hook_reduce(void *ctx, StrBuf *sb, const Expr *e) {
  Printer *p = ctx;
  /* The axes are declared after the source that uses them; their bounds are
   * in the enclosing scope. */
  int n = e->reduce.n_axes;
  const char **names = ARENA_ARRAY(p->arena, const char *, n), **old = ARENA_ARRAY(p->arena, const char *, n);
  for (int i = 0; i < n; i++) names[i] = fresh_name(p, e->reduce.axes[i].var->var.name);
  for (int i = 0; i < n; i++) old[i] = install(p, e->reduce.axes[i].var, names[i]);
  sb_printf(sb, "reduce_%s(", reduce_op_name(e->reduce.op));
  print_expr(p, e->reduce.source);
  for (int i = n - 1; i >= 0; i--) restore(p, e->reduce.axes[i].var, old[i]);
  for (int i = 0; i < n; i++) {
    const IterVar *iv = &e->reduce.axes[i];
    sb_puts(sb, ", [");
    print_var_decl(p, iv->var, names[i]);
    sb_puts(sb, ", ");
    print_expr(p, iv->min);
    sb_puts(sb, ", ");
    print_expr(p, iv->extent);
    if (iv->type == ITER_SPATIAL) sb_puts(sb, ", spatial");
    sb_putc(sb, ']');
  }
  if (e->reduce.cond) {
    for (int i = 0; i < n; i++) install(p, e->reduce.axes[i].var, names[i]);
    sb_puts(sb, ", where=");
    print_expr(p, e->reduce.cond);
    for (int i = n - 1; i >= 0; i--) restore(p, e->reduce.axes[i].var, old[i]);
  }
  sb_putc(sb, ')');
}

static void print_expr(Printer *p, const Expr *e) {
  ExprPrintHooks h = {hook_var, hook_buffer, hook_reduce, p};
  expr_print_hooks(p->sb, e, &h);
}

static void print_list(Printer *p, const Expr *const *xs, int n) {
  for (int i = 0; i < n; i++) {
    if (i) sb_puts(p->sb, ", ");
    print_expr(p, xs[i]);
  }
}

/* ---- buffers and regions ---- */

static const char *scope_name(MemScope s) {
  switch (s) {
    case SCOPE_GLOBAL: return "global";
    case SCOPE_LOCAL: return "local";
    case SCOPE_SHARED: return "shared";
  }
  return "global";
}

/* `A: f32[128, 64] strides[64, 1] local align(64) storage_align(0, 16, 1)` */
static void print_buffer_decl(Printer *p, const Buffer *b, const char *name) {
  char buf[16];
  sb_printf(p->sb, "%s: %s[", name, dtype_str(b->dtype, buf));
  print_list(p, b->shape, b->ndim);
  sb_putc(p->sb, ']');
  if (b->strides) {
    sb_puts(p->sb, " strides[");
    print_list(p, b->strides, b->ndim);
    sb_putc(p->sb, ']');
  }
  if (b->scope != SCOPE_GLOBAL) sb_printf(p->sb, " %s", scope_name(b->scope));
  if (b->align) sb_printf(p->sb, " align(%d)", b->align);
  if (b->align_factor)
    sb_printf(p->sb, " storage_align(%d, %d, %d)", b->align_axis, b->align_factor, b->align_offset);
}

/* `A[vi, vk:4]`: per dimension min, and `:extent` unless the extent is 1. */
static void print_region(Printer *p, const BufferRegion *r) {
  sb_printf(p->sb, "%s[", buffer_name(p, r->buffer));
  for (int d = 0; d < r->buffer->ndim; d++) {
    if (d) sb_puts(p->sb, ", ");
    print_expr(p, r->min[d]);
    if (!expr_is_int(r->extent[d], 1) || !dtype_eq(r->extent[d]->dtype, DT_I64)) {
      sb_putc(p->sb, ':');
      print_expr(p, r->extent[d]);
    }
  }
  sb_putc(p->sb, ']');
}

static void print_regions(Printer *p, const char *what, const BufferRegion *rs, int n, int indent) {
  if (n == 0) return;
  sb_indent(p->sb, indent);
  sb_printf(p->sb, "%s ", what);
  for (int i = 0; i < n; i++) {
    if (i) sb_puts(p->sb, ", ");
    print_region(p, &rs[i]);
  }
  sb_putc(p->sb, '\n');
}

/* ---- statements ---- */

static void print_stmt(Printer *p, const Stmt *s, int indent);

/* Statements inside braces: a Seq prints its items one per line. */
static void print_body(Printer *p, const Stmt *s, int indent) {
  if (s && s->kind == STMT_SEQ) {
    for (int i = 0; i < s->seq.n; i++) print_body(p, s->seq.stmts[i], indent);
    return;
  }
  print_stmt(p, s, indent);
}

static void print_close(Printer *p, int indent) {
  sb_indent(p->sb, indent);
  sb_puts(p->sb, "}\n");
}

static void print_realize(Printer *p, const Stmt *s, int indent) {
  StrBuf *sb = p->sb;
  const Block *b = s->realize.block;
  sb_puts(sb, "block ");
  print_label(sb, b->name);
  sb_putc(sb, '(');
  /* Domains and bindings are in the enclosing scope (they use loop
   * variables, never the block's own iterators). */
  const char **names = ARENA_ARRAY(p->arena, const char *, b->n_iters);
  const char **old = ARENA_ARRAY(p->arena, const char *, b->n_iters);
  for (int i = 0; i < b->n_iters; i++) {
    const IterVar *iv = &b->iters[i];
    if (i) sb_puts(sb, ", ");
    names[i] = fresh_name(p, iv->var->var.name);
    print_var_decl(p, iv->var, names[i]);
    sb_printf(sb, ": %s[", iv->type == ITER_REDUCE ? "reduce" : "spatial");
    print_expr(p, iv->min);
    sb_putc(sb, ':');
    print_expr(p, iv->extent);
    sb_putc(sb, ']');
    if (i < s->realize.n) {
      sb_puts(sb, " = ");
      print_expr(p, s->realize.iter_values[i]);
    }
  }
  sb_putc(sb, ')');
  const Expr *pred = s->realize.predicate;
  if (pred && !(pred->kind == EXPR_INT && dtype_eq(pred->dtype, DT_BOOL1) && pred->int_value == 1)) {
    sb_puts(sb, " where ");
    print_expr(p, pred);
  }
  sb_puts(sb, " {\n");
  for (int i = 0; i < b->n_iters; i++) old[i] = install(p, b->iters[i].var, names[i]);
  const char **old_bufs = ARENA_ARRAY(p->arena, const char *, b->n_alloc);
  for (int i = 0; i < b->n_alloc; i++) {
    const Buffer *buf = b->alloc_buffers[i];
    const char *name = fresh_name(p, buf->name);
    sb_indent(sb, indent + 1);
    sb_puts(sb, "alloc ");
    print_buffer_decl(p, buf, name);
    sb_putc(sb, '\n');
    old_bufs[i] = install(p, buf, name);
  }
  if (b->schedule_rule) {
    sb_indent(sb, indent + 1);
    sb_puts(sb, "rule ");
    print_string(sb, b->schedule_rule);
    sb_putc(sb, '\n');
  }
  print_regions(p, "reads", b->reads, b->n_reads, indent + 1);
  print_regions(p, "writes", b->writes, b->n_writes, indent + 1);
  if (b->init) {
    sb_indent(sb, indent + 1);
    sb_puts(sb, "init {\n");
    print_body(p, b->init, indent + 2);
    print_close(p, indent + 1);
  }
  print_body(p, b->body, indent + 1);
  for (int i = b->n_alloc - 1; i >= 0; i--) restore(p, b->alloc_buffers[i], old_bufs[i]);
  for (int i = b->n_iters - 1; i >= 0; i--) restore(p, b->iters[i].var, old[i]);
  print_close(p, indent);
}

static void print_stmt(Printer *p, const Stmt *s, int indent) {
  StrBuf *sb = p->sb;
  if (s && s->kind == STMT_SEQ) {
    print_body(p, s, indent);
    return;
  }
  sb_indent(sb, indent);
  if (!s) { /* not valid IR, but a dump should still show something */
    sb_puts(sb, "nop\n");
    return;
  }
  switch (s->kind) {
    case STMT_FOR: {
      const char *name = fresh_name(p, s->loop.var->var.name);
      sb_puts(sb, "for ");
      print_var_decl(p, s->loop.var, name);
      sb_puts(sb, " in ");
      print_expr(p, s->loop.min);
      sb_putc(sb, ':');
      print_expr(p, s->loop.extent);
      switch (s->loop.kind) {
        case FOR_SERIAL: break;
        case FOR_PARALLEL: sb_puts(sb, " parallel"); break;
        case FOR_VECTORIZED: sb_puts(sb, " vectorized"); break;
        case FOR_UNROLLED: sb_puts(sb, " unroll"); break;
        case FOR_THREAD_BINDING:
          sb_puts(sb, " thread(");
          print_string(sb, s->loop.thread_tag);
          sb_putc(sb, ')');
          break;
      }
      sb_puts(sb, " {\n");
      const char *old = install(p, s->loop.var, name);
      print_body(p, s->loop.body, indent + 1);
      restore(p, s->loop.var, old);
      print_close(p, indent);
      return;
    }
    case STMT_BLOCK_REALIZE: print_realize(p, s, indent); return;
    case STMT_STORE:
      sb_printf(sb, "%s[", buffer_name(p, s->store.buffer));
      print_list(p, s->store.indices, s->store.n);
      sb_puts(sb, "] = ");
      print_expr(p, s->store.value);
      sb_putc(sb, '\n');
      return;
    case STMT_SEQ: break; /* handled above */
    case STMT_IF:
      sb_puts(sb, "if ");
      print_expr(p, s->if_.cond);
      sb_puts(sb, " {\n");
      print_body(p, s->if_.then_s, indent + 1);
      if (s->if_.else_s) {
        sb_indent(sb, indent);
        sb_puts(sb, "} else {\n");
        print_body(p, s->if_.else_s, indent + 1);
      }
      print_close(p, indent);
      return;
    case STMT_EVALUATE:
      if (!s->eval.value || (expr_is_int(s->eval.value, 0) && dtype_eq(s->eval.value->dtype, DT_I64))) {
        sb_puts(sb, "nop\n");
      } else {
        sb_puts(sb, "eval ");
        print_expr(p, s->eval.value);
        sb_putc(sb, '\n');
      }
      return;
    case STMT_ALLOCATE: {
      const char *name = fresh_name(p, s->alloc.buffer->name);
      sb_puts(sb, "allocate ");
      print_buffer_decl(p, s->alloc.buffer, name);
      if (s->alloc.offset >= 0) sb_printf(sb, " at(%lld)", (long long)s->alloc.offset);
      sb_puts(sb, " {\n");
      const char *old = install(p, s->alloc.buffer, name);
      print_body(p, s->alloc.body, indent + 1);
      restore(p, s->alloc.buffer, old);
      print_close(p, indent);
      return;
    }
    case STMT_DMA: {
      const Expr *args[6] = {s->dma.dst,  s->dma.src,        s->dma.row_elems,
                             s->dma.rows, s->dma.dst_stride, s->dma.src_stride};
      sb_puts(sb, s->dma.dir == DMA_GET ? "dma_get" : "dma_put");
      if (s->dma.ticket) {
        sb_puts(sb, "_async(");
        print_list(p, &s->dma.ticket, 1);
        sb_puts(sb, ", ");
      } else {
        sb_putc(sb, '(');
      }
      print_list(p, args, 6);
      sb_puts(sb, ")\n");
      return;
    }
    case STMT_DMA_WAIT:
      sb_puts(sb, "dma_wait(");
      print_list(p, &s->dma_wait.ticket, 1);
      sb_puts(sb, ")\n");
      return;
    case STMT_KIND_COUNT: break;
  }
  sb_puts(sb, "nop\n");
}

static void printer_init(Printer *p, StrBuf *sb) {
  memset(p, 0, sizeof *p);
  p->sb = sb;
  p->arena = arena_new();
  ptrmap_init(&p->names, p->arena);
}

void tir_print_stmt(StrBuf *sb, const Stmt *s, int indent) {
  Printer p;
  printer_init(&p, sb);
  print_stmt(&p, s, indent);
  arena_free(p.arena);
}

static char *print_func(const PrimFunc *f, bool anonymous) {
  StrBuf out, params, body;
  sb_init(&out);
  sb_init(&params);
  sb_init(&body);
  Printer p;
  printer_init(&p, &params);
  p.anonymous = anonymous;
  /* Parameter names first, so a parameter keeps its name over a local. */
  const char **names = ARENA_ARRAY(p.arena, const char *, f->n_params);
  for (int i = 0; i < f->n_params; i++) names[i] = fresh_name(&p, f->params[i]->name);
  for (int i = 0; i < f->n_params; i++) {
    if (i) sb_puts(&params, ", ");
    print_buffer_decl(&p, f->params[i], names[i]);
    install(&p, f->params[i], names[i]);
  }
  p.sb = &body;
  if (f->body) print_body(&p, f->body, 1);
  sb_puts(&out, "func ");
  print_label(&out, f->name && !anonymous ? f->name : "main");
  if (p.n_free) {
    p.sb = &out;
    sb_putc(&out, '[');
    for (int i = 0; i < p.n_free; i++) {
      if (i) sb_puts(&out, ", ");
      print_var_decl(&p, p.free_vars[i], ptrmap_get(&p.names, p.free_vars[i]));
    }
    sb_putc(&out, ']');
  }
  sb_printf(&out, "(%s)", sb_cstr(&params));
  if (f->local_mem_bytes > 0) {
    sb_printf(&out, " local_mem(%lld%s", (long long)f->local_mem_bytes, f->dma_double_buffer ? ", double_buffer" : "");
    if (f->dma_tickets > 0) sb_printf(&out, ", dma_tickets(%d)", f->dma_tickets);
    sb_putc(&out, ')');
  }
  sb_printf(&out, " {\n%s}\n", sb_cstr(&body));
  sb_free(&params);
  sb_free(&body);
  arena_free(p.arena);
  return sb_take(&out);
}

char *tir_print_func(const PrimFunc *f) { return print_func(f, false); }

char *tir_print_func_anonymous(const PrimFunc *f) { return print_func(f, true); }
