/* tir_storage_rewrite: temporaries whose lifetimes do not overlap share one
 * allocation.
 *
 * Scope of the rewrite (kept simple on purpose): the chain of Allocates at
 * the top of the function (the root block's buffers after lowering) around a
 * sequence of top-level statements S0..Sn-1 (typically one loop nest per
 * block). A buffer's lifetime is [first, last] statement that accesses it.
 * Greedily, in order of first use, a buffer joins an existing slot of the
 * same scope and dtype whose last use is strictly earlier than its first use;
 * a slot's size is the largest of its members. Since the statements run one
 * after another, members of one slot are never live at the same time.
 * Buffers must be 1-d (run after tir_flatten_buffers); others are left alone.
 * Unused temporaries are dropped. */
#include "arith/arith.h"
#include "support/ptrmap.h"
#include "support/vec.h"
#include "tir/transform/transform.h"
#include "tir/transform/transform_util.h"

typedef struct Temp {
  const Buffer *buffer;
  int first, last; /* statement indices; first = -1 when unused */
  int slot;
} Temp;

typedef struct Slot {
  const Buffer *leader;
  const Expr *size;
  int align;
  int last;
  Buffer *merged;
} Slot;

static bool can_share(const Buffer *x, const Buffer *y) {
  return x->scope == y->scope && dtype_eq(x->dtype, y->dtype) && x->ndim == 1 && y->ndim == 1;
}

const PrimFunc *tir_storage_rewrite(Arena *a, const PrimFunc *f) {
  VEC(Temp) temps = {0};
  const Stmt *inner = f->body;
  while (inner->kind == STMT_ALLOCATE) {
    Temp t = {inner->alloc.buffer, -1, -1, -1};
    VEC_PUSH(a, temps, t);
    inner = inner->alloc.body;
  }
  if (temps.n < 1) return f;
  const Stmt *const *stmts = inner->kind == STMT_SEQ ? inner->seq.stmts : &inner;
  int n_stmts = inner->kind == STMT_SEQ ? inner->seq.n : 1;
  for (int i = 0; i < temps.n; i++)
    for (int k = 0; k < n_stmts; k++)
      if (transform_stmt_touches_buffer(stmts[k], temps.items[i].buffer)) {
        if (temps.items[i].first < 0) temps.items[i].first = k;
        temps.items[i].last = k;
      }

  /* Order by first use (insertion sort: a handful of temporaries). */
  Temp *order = temps.items;
  for (int i = 1; i < temps.n; i++)
    for (int j = i; j > 0 && order[j].first < order[j - 1].first; j--) {
      Temp t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }

  VEC(Slot) slots = {0};
  bool shared = false;
  for (int i = 0; i < temps.n; i++) {
    Temp *t = &order[i];
    if (t->first < 0) continue;
    for (int s = 0; s < slots.n && t->slot < 0; s++) {
      Slot *sl = &slots.items[s];
      if (sl->last < t->first && can_share(sl->leader, t->buffer)) {
        t->slot = s;
        sl->size = expr_max(a, sl->size, t->buffer->shape[0]);
        if (t->buffer->align > sl->align) sl->align = t->buffer->align;
        sl->last = t->last;
        shared = true;
      }
    }
    if (t->slot < 0) {
      Slot sl = {t->buffer, t->buffer->ndim == 1 ? t->buffer->shape[0] : NULL, t->buffer->align, t->last, NULL};
      t->slot = slots.n;
      VEC_PUSH(a, slots, sl);
    }
  }
  bool dropped = false;
  for (int i = 0; i < temps.n; i++) dropped |= order[i].first < 0;
  if (!shared && !dropped) return f;

  PtrMap bmap;
  ptrmap_init(&bmap, a);
  Analyzer *az = arith_analyzer_new(a); /* shapes are not visited by tir_simplify */
  for (int s = 0; s < slots.n; s++) {
    Slot *sl = &slots.items[s];
    if (!sl->size || (sl->size == sl->leader->shape[0] && sl->align == sl->leader->align)) continue;
    Buffer *m = arena_memdup(a, sl->leader, sizeof *sl->leader);
    const Expr **shape = ARENA_ARRAY(a, const Expr *, 1);
    shape[0] = arith_simplify(az, sl->size);
    m->shape = shape;
    m->align = sl->align;
    sl->merged = m;
  }
  for (int i = 0; i < temps.n; i++) {
    Temp *t = &order[i];
    if (t->first < 0) continue;
    Slot *sl = &slots.items[t->slot];
    const Buffer *target = sl->merged ? sl->merged : sl->leader;
    if (target != t->buffer) ptrmap_put(&bmap, t->buffer, (void *)target);
  }
  const Stmt *body = stmt_replace_buffers(a, inner, &bmap);
  for (int s = slots.n - 1; s >= 0; s--) {
    Slot *sl = &slots.items[s];
    body = stmt_allocate(a, sl->merged ? sl->merged : sl->leader, body);
  }
  return transform_func_with_body(a, f, body);
}
