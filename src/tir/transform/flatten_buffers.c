/* tir_flatten_buffers: every N-d buffer becomes a 1-d buffer of the same
 * name, and every access A[i0, ..., in-1] becomes A[sum ik * stride_k].
 *
 * Strides: the buffer's own when it has them; otherwise compact row-major,
 * except that storage_align (align_axis/factor/offset) pads the stride of
 * align_axis up to the next value with stride % factor == offset, and the
 * outer strides grow with it (the padding avoids cache-set/bank conflicts).
 * The padded stride is written as s + floormod(offset - s, factor), so it
 * also works for symbolic shapes; strides and sizes are simplified here
 * (buffer shapes are not expressions the simplify pass visits).
 * The 1-d size is stride_0 * shape_0 (the whole padded extent).
 *
 * The original parameters are kept in PrimFunc.orig_params for code
 * generators that need the N-d shapes (argument checking, DLPack). */
#include "arith/arith.h"
#include "support/ptrmap.h"
#include "tir/transform/transform.h"
#include "tir/transform/transform_util.h"

typedef struct FlatBuffer {
  const Buffer *flat;
  const Expr **strides; /* one per original dimension */
} FlatBuffer;

typedef struct FlattenCtx {
  PtrMap map; /* original Buffer -> FlatBuffer */
  Analyzer *az;
  LoomError *err;
  bool failed;
} FlattenCtx;

static FlatBuffer *flatten_buffer(Arena *a, FlattenCtx *c, const Buffer *b) {
  FlatBuffer *fb = ptrmap_get(&c->map, b);
  if (fb) return fb;
  fb = ARENA_NEW(a, FlatBuffer);
  fb->strides = ARENA_ARRAY(a, const Expr *, b->ndim);
  const Expr *size = expr_i64(a, 1);
  if (b->strides) {
    for (int d = 0; d < b->ndim; d++) fb->strides[d] = arith_simplify(c->az, b->strides[d]);
    /* Extent covered: 1 + sum (shape_d - 1) * stride_d. */
    const Expr *last = expr_i64(a, 0);
    for (int d = 0; d < b->ndim; d++)
      last = expr_add(a, last, expr_mul(a, expr_sub(a, b->shape[d], expr_i64(a, 1)), b->strides[d]));
    size = expr_add(a, last, expr_i64(a, 1));
  } else {
    const Expr *stride = expr_i64(a, 1);
    for (int d = b->ndim - 1; d >= 0; d--) {
      if (d == b->align_axis && b->align_factor > 0) {
        const Expr *factor = expr_i64(a, b->align_factor);
        const Expr *pad = expr_floormod(a, expr_sub(a, expr_i64(a, b->align_offset), stride), factor);
        stride = expr_add(a, stride, pad);
      }
      stride = arith_simplify(c->az, stride);
      fb->strides[d] = stride;
      stride = expr_mul(a, stride, b->shape[d]);
    }
    size = stride;
  }
  size = arith_simplify(c->az, size);
  Buffer *flat = arena_memdup(a, b, sizeof *b);
  flat->ndim = 1;
  const Expr **shape = ARENA_ARRAY(a, const Expr *, 1);
  shape[0] = size;
  flat->shape = shape;
  flat->strides = NULL;
  flat->align_axis = 0;
  flat->align_factor = 0;
  flat->align_offset = 0;
  fb->flat = flat;
  ptrmap_put(&c->map, b, fb);
  return fb;
}

static const Expr *flat_index(Arena *a, const FlatBuffer *fb, const Expr *const *idx, int n) {
  if (n == 0) return expr_i64(a, 0);
  const Expr *off = NULL;
  for (int d = 0; d < n; d++) {
    const Expr *t = expr_is_int(fb->strides[d], 1) ? idx[d] : expr_mul(a, idx[d], fb->strides[d]);
    off = off ? expr_add(a, off, t) : t;
  }
  return off;
}

static const Expr *flatten_expr_cb(Mutator *m, const Expr *e) {
  FlattenCtx *c = m->user;
  e = mutate_expr_children(m, e);
  if (e->kind != EXPR_LOAD) return e;
  const FlatBuffer *fb = flatten_buffer(m->arena, c, e->load.buffer);
  const Expr *idx = flat_index(m->arena, fb, e->load.indices, e->load.n);
  return expr_load(m->arena, fb->flat, &idx, 1);
}

static const Stmt *flatten_stmt_cb(Mutator *m, const Stmt *s) {
  FlattenCtx *c = m->user;
  Arena *a = m->arena;
  if (c->failed) return s;
  if (s->kind == STMT_BLOCK_REALIZE) {
    err_set(c->err, LOOM_ERR_INVALID_ARG,
            "flatten_buffers: block \"%s\" is still present; run tir_lower_blocks first",
            s->realize.block->name);
    c->failed = true;
    return s;
  }
  s = mutate_stmt_children(m, s);
  if (s->kind == STMT_STORE) {
    const FlatBuffer *fb = flatten_buffer(a, c, s->store.buffer);
    const Expr *idx = flat_index(a, fb, s->store.indices, s->store.n);
    return stmt_store(a, fb->flat, s->store.value, &idx, 1);
  }
  if (s->kind == STMT_ALLOCATE) return stmt_allocate(a, flatten_buffer(a, c, s->alloc.buffer)->flat, s->alloc.body);
  return s;
}

const PrimFunc *tir_flatten_buffers(Arena *a, const PrimFunc *f, LoomError *err) {
  FlattenCtx c = {.err = err, .az = arith_analyzer_new(a)};
  ptrmap_init(&c.map, a);
  const Buffer **params = ARENA_ARRAY(a, const Buffer *, f->n_params);
  for (int i = 0; i < f->n_params; i++) params[i] = flatten_buffer(a, &c, f->params[i])->flat;
  Mutator m = {a, flatten_stmt_cb, flatten_expr_cb, &c};
  const Stmt *body = mutate_stmt(&m, f->body);
  if (c.failed) {
    err_prefix(err, "in function \"%s\": ", f->name);
    return NULL;
  }
  PrimFunc *n = arena_memdup(a, f, sizeof *f);
  n->params = params;
  n->body = body;
  /* Flattening twice must not lose the original shapes. */
  if (!f->orig_params) n->orig_params = f->params;
  return n;
}
