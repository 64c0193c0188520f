/* Loop IR parser: reads what printer.c writes (grammar in docs/tir.md).
 *
 * The statements and functions of the loop IR, on the lexer, token helpers,
 * scope and expression parser of ir/expr_parser.h. Every failure sets one
 * LOOM_ERR_PARSE message "line L, column C: expected X, got Y" and unwinds
 * by returning NULL; nothing is allocated outside the caller's arena.
 * Nesting is capped so hostile input cannot exhaust the stack here or in the
 * recursive printer/verifier that later walk the result. */
#include "tir/text.h"

#include "ir/expr_parser.h"
#include "support/vec.h"

#include <string.h>

/* ---- buffers and regions ---- */

/* `A: f32[shape] [strides[...]] [global|local|shared] [align(N)] [storage_align(axis, factor, offset)]` */
static Buffer *parse_buffer_decl(TextParser *p) {
  const TextToken *t = parse_expect_ident(p, "a buffer name");
  DType dt;
  if (!t || !parse_expect(p, ":") || !parse_dtype(p, &dt) || !parse_expect(p, "[")) return NULL;
  const Expr **shape;
  int ndim = parse_expr_list(p, "]", &shape);
  if (ndim < 0) return NULL;
  Buffer *b = buffer_new(p->a, parse_token_str(p, t), dt, ndim, shape);
  for (;;) {
    if (parse_is_word(p, "strides")) {
      const TextToken *st = parse_advance(p);
      const Expr **strides;
      if (!parse_expect(p, "[")) return NULL;
      int n = parse_expr_list(p, "]", &strides);
      if (n < 0) return NULL;
      if (n != ndim) return parse_fail(p, st, "one stride per dimension");
      b->strides = strides;
    } else if (parse_is_word(p, "global") || parse_is_word(p, "local") || parse_is_word(p, "shared")) {
      const TextToken *s = parse_advance(p);
      b->scope = s->start[0] == 'g' ? SCOPE_GLOBAL : s->start[0] == 'l' ? SCOPE_LOCAL : SCOPE_SHARED;
    } else if (parse_is_word(p, "align")) {
      int64_t v;
      parse_advance(p);
      if (!parse_expect(p, "(") || !parse_small_int(p, 0, 1 << 30, &v) || !parse_expect(p, ")")) return NULL;
      b->align = (int)v;
    } else if (parse_is_word(p, "storage_align")) {
      int64_t axis, factor, offset;
      parse_advance(p);
      if (!parse_expect(p, "(") || !parse_small_int(p, 0, ndim > 0 ? ndim - 1 : 0, &axis) || !parse_expect(p, ",") ||
          !parse_small_int(p, 0, 1 << 30, &factor) || !parse_expect(p, ",") ||
          !parse_small_int(p, -(1 << 30), 1 << 30, &offset) || !parse_expect(p, ")"))
        return NULL;
      b->align_axis = (int)axis;
      b->align_factor = (int)factor;
      b->align_offset = (int)offset;
    } else {
      return b;
    }
  }
}

/* `A[min, min:extent, ...]` */
static bool parse_region(TextParser *p, BufferRegion *r) {
  const TextToken *t = parse_expect_ident(p, "a buffer name");
  if (!t) return false;
  const Buffer *b = parse_scope_find(p, t, true);
  if (!b) return parse_fail(p, t, "a buffer in scope");
  if (!parse_expect(p, "[")) return false;
  const Expr **mins = ARENA_ARRAY(p->a, const Expr *, b->ndim);
  const Expr **exts = ARENA_ARRAY(p->a, const Expr *, b->ndim);
  int d = 0;
  if (!parse_accept(p, "]")) {
    do {
      if (d == b->ndim) return parse_fail(p, parse_peek(p), "']' (the buffer has fewer dimensions)");
      if (!(mins[d] = parse_expr(p))) return false;
      if (parse_accept(p, ":")) {
        if (!(exts[d] = parse_expr(p))) return false;
      } else {
        exts[d] = expr_i64(p->a, 1);
      }
      d++;
    } while (parse_accept(p, ","));
    if (!parse_expect(p, "]")) return false;
  }
  if (d != b->ndim) {
    return parse_fail_count(p, t, d, "%d dimensions in the region of buffer '%s'", b->ndim, b->name);
  }
  r->buffer = b;
  r->min = mins;
  r->extent = exts;
  return true;
}

static bool parse_regions(TextParser *p, BufferRegion **out, int *n) {
  VEC(BufferRegion) rs = {0};
  for (int i = 0; i < *n; i++) VEC_PUSH(p->a, rs, (*out)[i]);
  do {
    BufferRegion r;
    if (!parse_region(p, &r)) return false;
    VEC_PUSH(p->a, rs, r);
  } while (parse_accept(p, ","));
  *out = rs.items;
  *n = rs.n;
  return true;
}

/* ---- statements ---- */

static const Stmt *parse_stmt(TextParser *p);

/* Statements up to the closing '}' (consumed). */
static const Stmt *parse_stmt_list(TextParser *p) {
  VEC(const Stmt *) ss = {0};
  while (!parse_accept(p, "}")) {
    const Stmt *s = parse_stmt(p);
    if (!s) return NULL;
    VEC_PUSH(p->a, ss, s);
  }
  /* stmt_seq drops Evaluate nodes; a lone `eval` is kept as written */
  if (ss.n == 1) return ss.items[0];
  return stmt_seq(p->a, ss.items, ss.n);
}

static const Stmt *parse_braced(TextParser *p) {
  if (!parse_expect(p, "{")) return NULL;
  return parse_stmt_list(p);
}

static const Stmt *parse_for(TextParser *p) {
  const Expr *var, *min, *extent;
  if (!(var = parse_var_decl(p)) || !parse_expect_word(p, "in") || !(min = parse_expr(p)) || !parse_expect(p, ":") ||
      !(extent = parse_expr(p)))
    return NULL;
  ForKind kind = FOR_SERIAL;
  const char *tag = NULL;
  static const struct { const char *word; ForKind kind; } kinds[] = {
      {"serial", FOR_SERIAL}, {"parallel", FOR_PARALLEL}, {"vectorized", FOR_VECTORIZED},
      {"unroll", FOR_UNROLLED}, {"thread", FOR_THREAD_BINDING}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (parse_is_word(p, kinds[i].word)) {
      kind = kinds[i].kind;
      parse_advance(p);
      break;
    }
  if (kind == FOR_THREAD_BINDING) {
    if (!parse_expect(p, "(")) return NULL;
    if (parse_peek(p)->kind != TOK_STRING) return parse_fail(p, parse_peek(p), "a thread tag string such as \"threadIdx.x\"");
    tag = parse_advance(p)->str;
    if (!parse_expect(p, ")")) return NULL;
  }
  int saved = p->n_syms;
  parse_scope_push_var(p, var);
  const Stmt *body = parse_braced(p);
  p->n_syms = saved;
  if (!body) return NULL;
  if (kind == FOR_THREAD_BINDING) return stmt_for_thread(p->a, var, min, extent, tag, body);
  return stmt_for(p->a, var, min, extent, kind, body);
}

static const Stmt *parse_block(TextParser *p) {
  Block *b = ARENA_NEW(p->a, Block);
  if (!(b->name = parse_label(p, "a block name")) || !parse_expect(p, "(")) return NULL;
  VEC(IterVar) iters = {0};
  VEC(const Expr *) values = {0};
  if (!parse_accept(p, ")")) {
    do {
      IterVar iv = {0};
      const Expr *value;
      if (!(iv.var = parse_var_decl(p)) || !parse_expect(p, ":")) return NULL;
      if (parse_is_word(p, "spatial")) iv.type = ITER_SPATIAL;
      else if (parse_is_word(p, "reduce")) iv.type = ITER_REDUCE;
      else return parse_fail(p, parse_peek(p), "'spatial' or 'reduce'");
      parse_advance(p);
      if (!parse_expect(p, "[") || !(iv.min = parse_expr(p)) || !parse_expect(p, ":") || !(iv.extent = parse_expr(p)) ||
          !parse_expect(p, "]") || !parse_expect(p, "=") || !(value = parse_expr(p)))
        return NULL;
      VEC_PUSH(p->a, iters, iv);
      VEC_PUSH(p->a, values, value);
    } while (parse_accept(p, ","));
    if (!parse_expect(p, ")")) return NULL;
  }
  const Expr *pred = NULL;
  if (parse_is_word(p, "where")) {
    parse_advance(p);
    if (!(pred = parse_expr(p))) return NULL;
  } else {
    pred = expr_bool(p->a, true);
  }
  if (!parse_expect(p, "{")) return NULL;
  int saved = p->n_syms;
  for (int i = 0; i < iters.n; i++) parse_scope_push_var(p, iters.items[i].var);
  b->iters = iters.items;
  b->n_iters = iters.n;
  VEC(const Buffer *) allocs = {0};
  BufferRegion *reads = NULL, *writes = NULL;
  int n_reads = 0, n_writes = 0;
  for (;;) {
    if (parse_is_word(p, "alloc")) {
      parse_advance(p);
      Buffer *buf = parse_buffer_decl(p);
      if (!buf) return NULL;
      VEC_PUSH(p->a, allocs, buf);
      parse_scope_push_buffer(p, buf);
    } else if (parse_is_word(p, "rule")) {
      parse_advance(p);
      if (b->schedule_rule) return parse_fail(p, parse_peek(p), "one 'rule' per block");
      if (parse_peek(p)->kind != TOK_STRING) return parse_fail(p, parse_peek(p), "a schedule rule name string such as \"matmul\"");
      b->schedule_rule = parse_advance(p)->str;
    } else if (parse_is_word(p, "reads")) {
      parse_advance(p);
      if (!parse_regions(p, &reads, &n_reads)) return NULL;
    } else if (parse_is_word(p, "writes")) {
      parse_advance(p);
      if (!parse_regions(p, &writes, &n_writes)) return NULL;
    } else if (parse_is_word(p, "init")) {
      if (b->init) return parse_fail(p, parse_peek(p), "one 'init' per block");
      parse_advance(p);
      if (!(b->init = parse_braced(p))) return NULL;
    } else {
      break;
    }
  }
  b->alloc_buffers = allocs.items;
  b->n_alloc = allocs.n;
  b->reads = reads;
  b->n_reads = n_reads;
  b->writes = writes;
  b->n_writes = n_writes;
  if (!(b->body = parse_stmt_list(p))) return NULL;
  p->n_syms = saved;
  return stmt_realize(p->a, values.items, values.n, pred, b);
}

static const Stmt *parse_store(TextParser *p) {
  const TextToken *t = parse_advance(p);
  const Buffer *b = parse_scope_find(p, t, true);
  if (!b) return parse_fail(p, t, "a buffer in scope");
  const Expr **idx;
  if (!parse_expect(p, "[")) return NULL;
  int n = parse_expr_list(p, "]", &idx);
  if (n < 0) return NULL;
  if (n != b->ndim) {
    return parse_fail_count(p, t, n, "%d indices for buffer '%s'", b->ndim, b->name);
  }
  const Expr *value;
  if (!parse_expect(p, "=") || !(value = parse_expr(p))) return NULL;
  return stmt_store(p->a, b, value, idx, n);
}

/* `dma_get(dst[i], src[j], row_elems, rows, dst_stride, src_stride)`, or
 * dma_put: dst and src are element accesses of flat (1-d) buffers of one
 * dtype; `dma_get_async(ticket, ...)` / dma_put_async: the same started
 * asynchronously; `dma_wait(ticket)`. */
static const Stmt *parse_dma(TextParser *p) {
  const TextToken *t = parse_advance(p);
  DmaDir dir = t->start[4] == 'g' ? DMA_GET : DMA_PUT;
  bool async = t->len > 7;
  const char *what = async ? (dir == DMA_GET ? "dma_get_async" : "dma_put_async") : (dir == DMA_GET ? "dma_get" : "dma_put");
  const Expr **args;
  if (!parse_expect(p, "(")) return NULL;
  int n = parse_expr_list(p, ")", &args);
  if (n < 0) return NULL;
  const Expr *ticket = NULL;
  if (async && n > 0) ticket = args[0], args++, n--;
  if (n != 6)
    return parse_fail_count(p, t, n, async ? "7 arguments of %s (ticket, dst, src, row_elems, rows, dst_stride, src_stride)"
                                           : "6 arguments of %s (dst, src, row_elems, rows, dst_stride, src_stride)",
                            what);
  for (int i = 0; i < 2; i++)
    if (args[i]->kind != EXPR_LOAD || args[i]->load.n != 1 || args[i]->load.buffer->ndim != 1 ||
        args[i]->dtype.lanes != 1)
      return parse_fail(p, t, i == 0 ? "a first argument (dst) that is an element of a 1-d buffer, such as A_local[0]"
                                     : "a second argument (src) that is an element of a 1-d buffer, such as A[i * 64]");
  if (!dtype_eq(args[0]->dtype, args[1]->dtype)) return parse_fail(p, t, "dst and src of one dtype");
  const Stmt *copy = stmt_dma(p->a, dir, args[0], args[1], args[2], args[3], args[4], args[5]);
  return ticket ? stmt_dma_async(p->a, copy, ticket) : copy;
}

static const Stmt *parse_dma_wait(TextParser *p) {
  parse_advance(p);
  const Expr *ticket;
  if (!parse_expect(p, "(") || !(ticket = parse_expr(p)) || !parse_expect(p, ")")) return NULL;
  return stmt_dma_wait(p->a, ticket);
}

static const Stmt *parse_stmt_inner(TextParser *p) {
  const TextToken *t = parse_peek(p);
  if (t->kind != TOK_IDENT) return parse_fail(p, t, "a statement");
  if (parse_is_word(p, "for")) {
    parse_advance(p);
    return parse_for(p);
  }
  if (parse_is_word(p, "block")) {
    parse_advance(p);
    return parse_block(p);
  }
  if (parse_is_word(p, "if")) {
    parse_advance(p);
    const Expr *cond = parse_expr(p);
    const Stmt *then_s, *else_s = NULL;
    if (!cond || !(then_s = parse_braced(p))) return NULL;
    if (parse_is_word(p, "else")) {
      parse_advance(p);
      if (!(else_s = parse_braced(p))) return NULL;
    }
    return stmt_if(p->a, cond, then_s, else_s);
  }
  if (parse_is_word(p, "nop")) {
    parse_advance(p);
    return stmt_nop(p->a);
  }
  if (parse_is_word(p, "eval")) {
    parse_advance(p);
    const Expr *v = parse_expr(p);
    if (!v) return NULL;
    Stmt *s = (Stmt *)stmt_nop(p->a); /* fresh node: no constructor takes a value */
    s->eval.value = v;
    return s;
  }
  if (parse_is_word(p, "allocate")) {
    parse_advance(p);
    Buffer *b = parse_buffer_decl(p);
    if (!b) return NULL;
    int64_t offset = -1;
    if (parse_is_word(p, "at")) { /* `at(N)`: placed in the local memory (tir_plan_local_mem) */
      parse_advance(p);
      if (!parse_expect(p, "(") || !parse_small_int(p, 0, (int64_t)1 << 40, &offset) || !parse_expect(p, ")"))
        return NULL;
    }
    int saved = p->n_syms;
    parse_scope_push_buffer(p, b);
    const Stmt *body = parse_braced(p);
    p->n_syms = saved;
    return body ? stmt_allocate_at(p->a, b, body, offset) : NULL;
  }
  if (parse_is_word(p, "dma_get") || parse_is_word(p, "dma_put") || parse_is_word(p, "dma_get_async") ||
      parse_is_word(p, "dma_put_async"))
    return parse_dma(p);
  if (parse_is_word(p, "dma_wait")) return parse_dma_wait(p);
  if (token_is(parse_peek_at(p, 1), TOK_PUNCT, "[")) return parse_store(p);
  return parse_fail(p, t,
                    "a statement (for, block, if, nop, eval, allocate, dma_get, dma_put, dma_get_async, "
                    "dma_put_async, dma_wait or a store A[...] = ...)");
}

static const Stmt *parse_stmt(TextParser *p) {
  if (!parse_enter(p)) return NULL;
  const Stmt *s = parse_stmt_inner(p);
  p->depth--;
  return s;
}

/* ---- entry points ---- */

static PrimFunc *parse_func(TextParser *p) {
  const char *name;
  if (!parse_expect_word(p, "func") || !(name = parse_label(p, "a function name"))) return NULL;
  if (parse_accept(p, "[")) { /* free variables: shape variables of the parameters */
    do {
      const Expr *v = parse_var_decl(p);
      if (!v) return NULL;
      parse_scope_push_var(p, v);
    } while (parse_accept(p, ","));
    if (!parse_expect(p, "]")) return NULL;
  }
  if (!parse_expect(p, "(")) return NULL;
  VEC(const Buffer *) params = {0};
  if (!parse_accept(p, ")")) {
    do {
      Buffer *b = parse_buffer_decl(p);
      if (!b) return NULL;
      VEC_PUSH(p->a, params, b);
      parse_scope_push_buffer(p, b);
    } while (parse_accept(p, ","));
    if (!parse_expect(p, ")")) return NULL;
  }
  int64_t local_mem = 0;
  bool double_buffer = false;
  int64_t tickets = 0;
  if (parse_is_word(p, "local_mem")) { /* `local_mem(N[, double_buffer][, dma_tickets(K)])` */
    parse_advance(p);
    if (!parse_expect(p, "(") || !parse_small_int(p, 1, (int64_t)1 << 40, &local_mem)) return NULL;
    while (parse_accept(p, ",")) {
      if (parse_is_word(p, "double_buffer") && !double_buffer) {
        parse_advance(p);
        double_buffer = true;
      } else if (parse_is_word(p, "dma_tickets") && !tickets) {
        parse_advance(p);
        if (!parse_expect(p, "(") || !parse_small_int(p, 1, 1 << 20, &tickets) || !parse_expect(p, ")")) return NULL;
      } else {
        return parse_fail(p, parse_peek(p), "double_buffer or dma_tickets(K)");
      }
    }
    if (!parse_expect(p, ")")) return NULL;
  }
  const Stmt *body = parse_braced(p);
  if (!body) return NULL;
  if (parse_peek(p)->kind != TOK_EOF) return parse_fail(p, parse_peek(p), "end of input after the function");
  PrimFunc *f = primfunc_new(p->a, name, params.items, params.n, body);
  f->local_mem_bytes = local_mem;
  f->dma_double_buffer = double_buffer;
  f->dma_tickets = (int)tickets;
  return f;
}

PrimFunc *tir_parse_func(Arena *a, const char *text, LoomError *err) {
  TextParser p;
  parser_init(&p, a, err);
  if (!text) {
    err_set(err, LOOM_ERR_INVALID_ARG, "tir_parse_func: text is NULL");
    return NULL;
  }
  if (!parser_tokenize(&p, text)) return NULL;
  return parse_func(&p);
}
