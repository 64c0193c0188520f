/* Helpers shared by the block primitives (compute_at, inlining, caching,
 * decompose_reduction): program order of blocks, who reads and writes a
 * buffer, loop nests to remove or rebuild, region arithmetic. Not a public
 * header. */
#ifndef LOOM_TIR_SCHEDULE_BLOCK_UTIL_H
#define LOOM_TIR_SCHEDULE_BLOCK_UTIL_H

#include "arith/arith.h"
#include "support/ptrmap.h"
#include "tir/schedule/schedule_internal.h"

/* Every block realize under `body` (the root realize itself excluded) in
 * program (pre-)order. */
typedef struct BlockOrder {
  const Stmt **items;
  int n;
} BlockOrder;
BlockOrder blocks_in_order(Arena *a, const Stmt *body);
int block_order_index(const BlockOrder *o, const Stmt *realize); /* -1 if absent */

/* Does the block read / write buffer b? Looks at the declared regions and at
 * the loads / stores in init and body, so an under-declared block is still
 * seen. */
bool block_reads(const Block *blk, const Buffer *b);
bool block_writes(const Block *blk, const Buffer *b);
bool buffer_is_param(const PrimFunc *f, const Buffer *b);
/* Is buffer b allocated by the root block? */
bool buffer_is_root_alloc(const PrimFunc *f, const Buffer *b);

/* Is `target` (pointer identity) inside `root` (or root itself)? */
bool stmt_contains(const Stmt *root, const Stmt *target);

/* The highest statement that holds nothing but `realize`: climbs through
 * For loops whose body is exactly the child. Removing it removes the block
 * and the loops that only existed for it. */
const Stmt *block_nest_top(const Stmt *func_body, const Stmt *realize);
/* The statement directly in the root block's body (a SEQ element, or the
 * whole body) that contains `target`. */
const Stmt *root_child_of(const Stmt *func_body, const Stmt *target);

/* The function body with `nest` inserted in the root block's body just
 * before (or after) its child `anchor` (a root_child_of result). */
const Stmt *root_insert(Arena *a, const Stmt *func_body, const Stmt *anchor, const Stmt *nest, bool after);

/* A copy of buffer b named `name` in `scope` (compact, no alignment). */
Buffer *buffer_clone(Arena *a, const Buffer *b, const char *name, MemScope scope);
const char *mem_scope_name(MemScope scope);

/* The root realize with its alloc_buffers replaced (body kept). */
const Stmt *root_with_allocs(Arena *a, const Stmt *func_body, const Buffer *const *allocs, int n);
/* Same with `b` added / removed. */
const Stmt *root_add_alloc(Arena *a, const Stmt *func_body, const Buffer *b);
const Stmt *root_remove_alloc(Arena *a, const Stmt *func_body, const Buffer *b);

/* For each loop path[0..np) above `realize`: does it carry (appear in the
 * binding of) a spatial / a reduction iterator of the block? */
void block_loop_kinds(const Stmt *realize, const Stmt *const *path, int np, bool *spatial, bool *reduce);

/* Map: block iterator var -> its binding in `realize`. */
PtrMap *block_binding_map(Arena *a, const Stmt *realize);

/* Loads of buffer b in s (init and body of nested blocks included); returns
 * the count and the EXPR_LOAD nodes in *out. */
int loads_of(Arena *a, const Stmt *s, const Buffer *b, const Expr ***out);

/* Rebuilds a block's read regions from the loads in its init and body: one
 * region per buffer, the per-dimension hull of the load indices (in terms of
 * the block's own iterators). The block's write buffers read by a reduction
 * body stay listed. */
const BufferRegion *block_reads_from_loads(Arena *a, Analyzer *az, const Block *blk, int *n_out);

/* A region with expressions substituted. */
BufferRegion region_substitute(Arena *a, BufferRegion r, const PtrMap *vmap);

/* Builds `for v in [0, extents[k]) ...` around body for k = n-1 .. 0 and
 * returns the loop vars (fresh, named base0, base1, ...). Extent-1 loops
 * are still created, so every dimension has a loop. */
const Stmt *loop_nest_build(Arena *a, const char *base, const Expr *const *mins,
                            const Expr *const *extents, int n, const Stmt *body,
                            const Expr **vars_out);

/* Block-level copy `dst[v...] = src[v...]` over the whole shape, with its own
 * loop nest. */
const Stmt *copy_block_nest(Schedule *s, const char *name, const Buffer *src, const Buffer *dst);

/* Simplifies under an analyzer, tolerating NULL. */
const Expr *sched_simplify(Analyzer *az, const Expr *e);

#endif
