/* tir_verify_scratchpad: what a kernel for a target with a local memory
 * must satisfy after lowering (docs/schedule.md "Scratchpad targets"):
 *
 *   1. its local buffers fit: the most bytes of `local` allocations live at
 *      once (nested Allocates add up, statements in sequence take the
 *      largest) is at most PrimFunc.local_mem_bytes;
 *   2. it stages its tiles: some top-level loop nest holds a DMA statement;
 *   3. inside every such nest (the compute loops) only DMA statements touch
 *      global memory: every other load and store is of a `local` buffer,
 *      and every DMA moves between a global and a local buffer in its
 *      direction;
 *   4. its asynchronous copies are waited for before any access to what
 *      they copy (tir_verify_dma_waits, verify_dma_wait.c).
 *
 * Top-level statements are the function body's, under its allocations and
 * sequences: the stages a scratchpad schedule leaves outside (a conv's
 * padding, the epilogue, other blocks of the fused group) run on global
 * memory and are not checked. Each violation is an error naming the kernel and the
 * buffer. */
#include "tir/text.h"

#include <stdio.h>

typedef struct SpCheck {
  const PrimFunc *f;
  LoomError *err;
  const char *nest; /* the top-level loop being checked, for messages */
  bool failed;
} SpCheck;

static bool sp_fail(SpCheck *c, const char *what, const Buffer *b) {
  if (!c->failed)
    err_set(c->err, LOOM_ERR_INVALID_ARG,
            "kernel \"%s\" (local_mem=%lld bytes): %s \"%s\" inside the loop nest that stages its tiles by DMA "
            "(loop %s); on a target with a local memory only DMA copies may touch global memory there",
            c->f->name, (long long)c->f->local_mem_bytes, what, b->name, c->nest);
  c->failed = true;
  return false;
}

static bool sp_stmt(Visitor *v, const Stmt *s) {
  SpCheck *c = v->user;
  if (c->failed) return false;
  if (s->kind == STMT_STORE && s->store.buffer->scope != SCOPE_LOCAL)
    return sp_fail(c, "store to global buffer", s->store.buffer);
  if (s->kind != STMT_DMA) return true;
  const Buffer *dst = s->dma.dst->load.buffer, *src = s->dma.src->load.buffer;
  const Buffer *local = s->dma.dir == DMA_GET ? dst : src, *global = s->dma.dir == DMA_GET ? src : dst;
  if (local->scope != SCOPE_LOCAL) return sp_fail(c, "DMA with a non-local buffer on its local side,", local);
  if (global->scope == SCOPE_LOCAL) return sp_fail(c, "DMA between two local buffers, one of them", global);
  return false; /* its ends are the copy's, not accesses of the compute */
}

static bool sp_expr(Visitor *v, const Expr *e) {
  SpCheck *c = v->user;
  if (c->failed) return false;
  if (e->kind == EXPR_LOAD && e->load.buffer->scope != SCOPE_LOCAL) return sp_fail(c, "load of global buffer", e->load.buffer);
  return true;
}

static bool has_dma_cb(Visitor *v, const Stmt *s) {
  if (s->kind == STMT_DMA) *(bool *)v->user = true;
  return !*(bool *)v->user;
}

static bool has_dma(const Stmt *s) {
  bool found = false;
  Visitor v = {has_dma_cb, NULL, &found};
  visit_stmt(&v, s);
  return found;
}

/* Bytes of local allocations live at once under s (peak); *biggest: the
 * largest local buffer seen. */
typedef struct Biggest {
  const Buffer *buffer;
  int64_t bytes;
} Biggest;

static int64_t local_peak(const Stmt *s, Biggest *biggest) {
  if (!s) return 0;
  switch (s->kind) {
    case STMT_FOR: return local_peak(s->loop.body, biggest);
    case STMT_IF: {
      int64_t t = local_peak(s->if_.then_s, biggest), e = local_peak(s->if_.else_s, biggest);
      return t > e ? t : e;
    }
    case STMT_SEQ: {
      int64_t m = 0;
      for (int i = 0; i < s->seq.n; i++) {
        int64_t x = local_peak(s->seq.stmts[i], biggest);
        if (x > m) m = x;
      }
      return m;
    }
    case STMT_ALLOCATE: {
      const Buffer *b = s->alloc.buffer;
      int64_t bytes = 0;
      if (b->scope == SCOPE_LOCAL) {
        bytes = dtype_bytes(dtype_element(b->dtype)) * (b->dtype.lanes > 1 ? b->dtype.lanes : 1);
        for (int d = 0; d < b->ndim; d++) {
          int64_t e;
          bytes *= expr_as_int(b->shape[d], &e) ? e : INT64_MAX / 4; /* symbolic: never fits */
          if (bytes > INT64_MAX / 4) bytes = INT64_MAX / 4;
        }
        if (!biggest->buffer || bytes > biggest->bytes) biggest->buffer = b, biggest->bytes = bytes;
      }
      int64_t inner = local_peak(s->alloc.body, biggest);
      return bytes + inner > INT64_MAX / 4 ? INT64_MAX / 4 : bytes + inner;
    }
    default: return 0;
  }
}

/* The top-level statements of s (under allocations and sequences, which
 * compaction nests around runs of them: `allocate X_pad { pad; conv }`):
 * each that holds a DMA statement is a staged nest, checked whole. */
static int check_staged(const Stmt *s, SpCheck *c) {
  if (s->kind == STMT_ALLOCATE) return check_staged(s->alloc.body, c);
  if (s->kind == STMT_SEQ) {
    int staged = 0;
    for (int i = 0; i < s->seq.n && !c->failed; i++) staged += check_staged(s->seq.stmts[i], c);
    return staged;
  }
  if (!has_dma(s)) return 0;
  c->nest = s->kind == STMT_FOR ? s->loop.var->var.name : "(top level)";
  Visitor v = {sp_stmt, sp_expr, c};
  visit_stmt(&v, s);
  return 1;
}

loom_status tir_verify_scratchpad(const PrimFunc *f, LoomError *err) {
  if (f->local_mem_bytes <= 0) return LOOM_OK;
  Biggest big = {NULL, 0};
  int64_t peak = local_peak(f->body, &big);
  if (peak > f->local_mem_bytes)
    return err_set(err, LOOM_ERR_INVALID_ARG,
                   "kernel \"%s\": its local buffers take %lld bytes at once (the largest \"%s\", %lld bytes), "
                   "more than local_mem=%lld",
                   f->name, (long long)peak, big.buffer ? big.buffer->name : "?", (long long)big.bytes,
                   (long long)f->local_mem_bytes);
  if (tir_verify_dma_waits(f, err)) return LOOM_ERR_INVALID_ARG;
  SpCheck c = {f, err, NULL, false};
  int staged = check_staged(f->body, &c);
  if (c.failed) return LOOM_ERR_INVALID_ARG;
  if (staged == 0)
    return err_set(err, LOOM_ERR_INVALID_ARG,
                   "kernel \"%s\" is scheduled for a local memory of %lld bytes but stages nothing in it by DMA "
                   "(its conv2d/matmul tiling does not fit or its accesses are not affine; LOOM_DEBUG_SCHEDULE=1 "
                   "says which step was refused)",
                   f->name, (long long)f->local_mem_bytes);
  return LOOM_OK;
}
