/* tir_plan_local_mem: the local buffers of a scratchpad kernel placed at
 * fixed byte offsets of one local memory region (docs/schedule.md
 * "Scratchpad targets", docs/export.md "Local memory plan").
 *
 * The plan follows the allocation tree, as a stack: an allocation sits at
 * the first free offset of its parent's region and its body's allocations
 * above it; statements in sequence (and the two arms of an if) reuse the
 * same region, since what one allocates ends before the next begins. The
 * plan's size is then exactly the peak that tir_verify_scratchpad checks
 * against local_mem, plus alignment: each buffer starts on a 16-byte
 * boundary (what DMA engines commonly want, and a 128-bit vector's) when
 * that still fits local_mem, else on its element size. Generated code
 * places each buffer at LOOM_LOCAL_MEM_BASE + offset (the project's local
 * memory; by default a slice of the kernel's workspace). Buffers inside
 * a parallel loop (other stages of the kernel) stay on the stack. */
#include "tir/transform/transform.h"

enum { LOCAL_ALIGN = 16 };

typedef struct Plan {
  Arena *a;
  int64_t align; /* 0: each buffer's element size */
  bool changed;
} Plan;

static int64_t buffer_bytes(const Buffer *b) {
  int64_t n = dtype_bytes(dtype_element(b->dtype)) * (b->dtype.lanes > 1 ? b->dtype.lanes : 1), e;
  for (int d = 0; d < b->ndim; d++) n *= expr_as_int(b->shape[d], &e) ? e : -1;
  return n;
}

static int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/* s with its local allocations placed from byte `base` up; *end: the
 * highest byte used + 1 (base when none). NULL when a local buffer's
 * size is not constant. */
static const Stmt *place(Plan *p, const Stmt *s, int64_t base, int64_t *end) {
  *end = base;
  if (!s) return s;
  switch (s->kind) {
    case STMT_ALLOCATE: {
      const Buffer *b = s->alloc.buffer;
      int64_t inner_base = base, offset = -1;
      if (b->scope == SCOPE_LOCAL) {
        int64_t bytes = buffer_bytes(b);
        if (bytes < 0) return NULL;
        int64_t elem = dtype_bytes(dtype_element(b->dtype));
        offset = align_up(base, p->align ? p->align : (elem > 0 ? elem : 1));
        inner_base = offset + bytes;
      }
      int64_t inner_end;
      const Stmt *body = place(p, s->alloc.body, inner_base, &inner_end);
      if (!body && s->alloc.body) return NULL;
      *end = inner_end > inner_base ? inner_end : inner_base;
      if (body == s->alloc.body && offset == s->alloc.offset) return s;
      p->changed = true;
      return stmt_allocate_at(p->a, b, body, offset);
    }
    case STMT_SEQ: {
      const Stmt **items = ARENA_ARRAY(p->a, const Stmt *, s->seq.n);
      bool same = true;
      for (int i = 0; i < s->seq.n; i++) {
        int64_t e;
        if (!(items[i] = place(p, s->seq.stmts[i], base, &e))) return NULL;
        same &= items[i] == s->seq.stmts[i];
        if (e > *end) *end = e;
      }
      return same ? s : stmt_seq(p->a, items, s->seq.n);
    }
    case STMT_FOR: {
      /* Each thread of a parallel loop needs its own: those stay on the stack. */
      if (s->loop.kind == FOR_PARALLEL || s->loop.kind == FOR_THREAD_BINDING) return s;
      const Stmt *body = place(p, s->loop.body, base, end);
      if (!body) return NULL;
      if (body == s->loop.body) return s;
      Stmt *n = arena_memdup(p->a, s, sizeof *n);
      n->loop.body = body;
      return n;
    }
    case STMT_IF: {
      int64_t te, ee;
      const Stmt *t = place(p, s->if_.then_s, base, &te), *e = place(p, s->if_.else_s, base, &ee);
      if (!t || (!e && s->if_.else_s)) return NULL;
      *end = te > ee ? te : ee;
      return t == s->if_.then_s && e == s->if_.else_s ? s : stmt_if(p->a, s->if_.cond, t, e);
    }
    default: return s;
  }
}

const PrimFunc *tir_plan_local_mem(Arena *a, const PrimFunc *f, LoomError *err) {
  if (f->local_mem_bytes <= 0) return f;
  int64_t end = 0;
  const Stmt *body = NULL;
  for (int pass = 0; pass < 2; pass++) {
    Plan p = {a, pass == 0 ? LOCAL_ALIGN : 0, false};
    body = place(&p, f->body, 0, &end);
    if (!body) {
      err_set(err, LOOM_ERR_INVALID_ARG, "kernel \"%s\": a local buffer of non-constant size cannot be placed in local memory",
              f->name);
      return NULL;
    }
    if (end <= f->local_mem_bytes) break;
  }
  if (end > f->local_mem_bytes) {
    err_set(err, LOOM_ERR_INVALID_ARG, "kernel \"%s\": its local memory plan takes %lld bytes, more than local_mem=%lld",
            f->name, (long long)end, (long long)f->local_mem_bytes);
    return NULL;
  }
  if (body == f->body) return f;
  PrimFunc *n = arena_memdup(a, f, sizeof *n);
  n->body = body;
  return n;
}

static int64_t plan_end(const Stmt *s) {
  if (!s) return 0;
  int64_t m = 0, x;
  switch (s->kind) {
    case STMT_ALLOCATE:
      m = plan_end(s->alloc.body);
      x = s->alloc.offset >= 0 ? s->alloc.offset + buffer_bytes(s->alloc.buffer) : 0;
      return x > m ? x : m;
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n; i++)
        if ((x = plan_end(s->seq.stmts[i])) > m) m = x;
      return m;
    case STMT_FOR: return plan_end(s->loop.body);
    case STMT_IF:
      m = plan_end(s->if_.then_s), x = plan_end(s->if_.else_s);
      return x > m ? x : m;
    default: return 0;
  }
}

int64_t tir_local_plan_bytes(const PrimFunc *f) { return plan_end(f->body); }
