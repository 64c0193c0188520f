/* The loop IR (TensorIR): statements, blocks and PrimFuncs.
 *
 * A PrimFunc's body is the realize of a "root" block whose alloc_buffers hold
 * the intermediate buffers. A block is the unit of computation: an iterator
 * domain (spatial or reduction iterators), the regions it reads and writes,
 * an optional init (run when all reduction iterators are at their minimum)
 * and a body. A BlockRealize binds each block iterator to an expression of the
 * enclosing loop variables and carries a predicate (false = skip).
 *
 * Statements are immutable like expressions: passes and schedule primitives
 * build new trees and reuse unchanged subtrees. A loop keeps its variable
 * node when rebuilt, so the variable is the loop's identity; a block's name is
 * unique within a PrimFunc and is the block's identity. */
#ifndef LOOM_TIR_STMT_H
#define LOOM_TIR_STMT_H

#include "ir/expr.h"

typedef struct Stmt Stmt;
typedef struct Block Block;

typedef enum StmtKind {
  STMT_FOR,
  STMT_BLOCK_REALIZE,
  STMT_STORE,
  STMT_SEQ,
  STMT_IF,
  STMT_EVALUATE, /* no-op placeholder (empty body) */
  STMT_ALLOCATE, /* alloc.buffer lives for alloc.body (after block lowering) */
  STMT_DMA,      /* a copy between global and local memory (tir_inject_dma) */
  STMT_DMA_WAIT, /* waits until the asynchronous DMA of a ticket is complete */
  STMT_KIND_COUNT
} StmtKind;

/* The direction of a DMA copy: into local memory (get) or out of it (put). */
typedef enum DmaDir { DMA_GET, DMA_PUT } DmaDir;

typedef enum ForKind {
  FOR_SERIAL,
  FOR_PARALLEL,
  FOR_VECTORIZED,
  FOR_UNROLLED,
  FOR_THREAD_BINDING, /* GPU: loop.thread_tag is "blockIdx.x", "threadIdx.x", ... */
} ForKind;

/* Read or write region: per dimension [min, min + extent). */
typedef struct BufferRegion {
  const Buffer *buffer;
  const Expr *const *min;
  const Expr *const *extent;
} BufferRegion;

struct Block {
  const char *name;
  const IterVar *iters;
  int n_iters;
  const BufferRegion *reads;
  int n_reads;
  const BufferRegion *writes;
  int n_writes;
  const Buffer *const *alloc_buffers;
  int n_alloc;
  const Stmt *init; /* NULL when none */
  const Stmt *body;
  /* The default schedule that applies to this block (TVM's schedule_rule
   * attribute): set by the compute definition (te_set_schedule_rule),
   * e.g. "matmul", "conv2d_nchwc"; NULL for none. Kept by the primitives
   * that rewrite the block; new blocks they make (caches, init) have none.
   * compile/schedule_group.c dispatches on it. */
  const char *schedule_rule;
};

struct Stmt {
  StmtKind kind;
  union {
    struct {
      const Expr *var;
      const Expr *min, *extent;
      ForKind kind;
      const char *thread_tag; /* FOR_THREAD_BINDING only */
      const Stmt *body;
    } loop;
    struct {
      const Expr *const *iter_values; /* one per block iterator */
      int n;
      const Expr *predicate; /* bool; `true` when unconditional */
      const Block *block;
    } realize;
    struct {
      const Buffer *buffer;
      const Expr *value;
      const Expr *const *indices;
      int n;
    } store;
    struct {
      const Stmt *const *stmts;
      int n;
    } seq;
    struct {
      const Expr *cond;
      const Stmt *then_s, *else_s; /* else_s may be NULL */
    } if_;
    struct {
      const Expr *value;
    } eval;
    struct {
      const Buffer *buffer;
      const Stmt *body;
      /* A `local` buffer of a scratchpad kernel placed by
       * tir_plan_local_mem: its byte offset in the kernel's local memory
       * (text `allocate T: f32[8] local at(64) {`); -1 otherwise. */
      int64_t offset;
    } alloc;
    /* rows x row_elems elements from src to dst: row r starts at
     * src + r * src_stride and dst + r * dst_stride (elements). dst and src
     * are scalar loads of flat buffers (`A_local[0]`, `A[i * 64]`): their
     * buffer and index are the first element's address, and a loads as an
     * access so generic walks (buffer uses, captures, renames) see the
     * copy's buffers. rows == 1 is a contiguous copy. Emitted as a call of
     * loom_dma_get / loom_dma_put (_2d when rows may exceed 1).
     * ticket NULL: a blocking copy, complete when the statement ends.
     * Otherwise an asynchronous start (text `dma_get_async(T, ...)`, the
     * call loom_dma_get_async(&tickets[T], ...)): the copy may happen at any
     * time until the STMT_DMA_WAIT of the same ticket, so until then the
     * destination holds no defined value and the source must not change.
     * T is an int index into the kernel's PrimFunc.dma_tickets tickets. */
    struct {
      DmaDir dir;
      const Expr *dst, *src;
      const Expr *row_elems, *rows, *dst_stride, *src_stride;
      const Expr *ticket;
    } dma;
    struct {
      const Expr *ticket; /* the ticket of the start it completes */
    } dma_wait;
  };
};

typedef struct PrimFunc {
  const char *name;
  const Buffer *const *params; /* inputs then outputs, in call order */
  int n_params;
  const Stmt *body;
  /* Set by tir_flatten_buffers: the parameters as they were before
   * flattening (N-d shapes), one per params[i]; NULL before. Code generators
   * index params[i] by a flat offset and use orig_params[i] for shapes. */
  const Buffer *const *orig_params;
  /* A kernel scheduled for a target with a local memory (scratchpad): its
   * size in bytes, which its local buffers must fit; 0 for every other
   * kernel. Set by the group scheduler, it turns on tir_inject_dma and
   * tir_verify_scratchpad in tir_lower. Text form: `local_mem(N)` after
   * the parameters. */
  int64_t local_mem_bytes;
  /* The schedule asks for double-buffered input tiles (a target with
   * dma=double): tir_inject_dma gives each tile loop whose body starts
   * with DMA copies into its local buffers two of each, fetching tile i+1
   * while tile i is computed. Text form: `local_mem(N, double_buffer)`. */
  bool dma_double_buffer;
  /* How many DMA tickets its asynchronous starts use (tickets 0 ..
   * dma_tickets - 1, one per copy in flight; tir_inject_dma with
   * dma_double_buffer); 0 when every copy is blocking. Text form:
   * `local_mem(N, double_buffer, dma_tickets(K))`. */
  int dma_tickets;
} PrimFunc;

/* ---- constructors (arrays are copied into the arena) ---- */
const Stmt *stmt_for(Arena *a, const Expr *var, const Expr *min, const Expr *extent, ForKind kind,
                     const Stmt *body);
const Stmt *stmt_for_thread(Arena *a, const Expr *var, const Expr *min, const Expr *extent,
                            const char *thread_tag, const Stmt *body);
const Stmt *stmt_realize(Arena *a, const Expr *const *values, int n, const Expr *predicate,
                         const Block *block);
const Stmt *stmt_store(Arena *a, const Buffer *b, const Expr *value, const Expr *const *idx, int n);
/* Flattens nested SEQs and drops EVALUATE no-ops; one statement is returned as is. */
const Stmt *stmt_seq(Arena *a, const Stmt *const *stmts, int n);
const Stmt *stmt_seq2(Arena *a, const Stmt *x, const Stmt *y);
const Stmt *stmt_if(Arena *a, const Expr *cond, const Stmt *then_s, const Stmt *else_s);
const Stmt *stmt_nop(Arena *a);
const Stmt *stmt_allocate(Arena *a, const Buffer *b, const Stmt *body);
/* An allocation placed at byte `offset` of the local memory (-1: none). */
const Stmt *stmt_allocate_at(Arena *a, const Buffer *b, const Stmt *body, int64_t offset);
/* dst and src: scalar loads of 1-d buffers (the first elements copied). */
const Stmt *stmt_dma(Arena *a, DmaDir dir, const Expr *dst, const Expr *src, const Expr *row_elems, const Expr *rows,
                     const Expr *dst_stride, const Expr *src_stride);
/* The asynchronous start of the blocking copy `dma` (a STMT_DMA) with ticket. */
const Stmt *stmt_dma_async(Arena *a, const Stmt *dma, const Expr *ticket);
const Stmt *stmt_dma_wait(Arena *a, const Expr *ticket);
/* Shallow copy of a block so a caller can change fields before freezing it. */
Block *block_copy(Arena *a, const Block *b);
BufferRegion region_full(Arena *a, const Buffer *b); /* the whole buffer */
BufferRegion region_point(Arena *a, const Buffer *b, const Expr *const *idx); /* extent 1 */

PrimFunc *primfunc_new(Arena *a, const char *name, const Buffer *const *params, int n_params,
                       const Stmt *body);
/* The root block (body must be a realize of it). */
const Block *primfunc_root(const PrimFunc *f);

const char *for_kind_name(ForKind k); /* "serial", "parallel", "vectorized", "unroll", "thread" */

/* ---- traversal ----
 * A Mutator rebuilds a tree bottom-up. Set visit_stmt / visit_expr to
 * intercept nodes; inside them call mutate_*_children to recurse into the
 * default behaviour. Unchanged subtrees are returned as the same pointer, so
 * `mutate_stmt(m, s) == s` means nothing changed. Block iter domains, regions,
 * loop bounds, predicates and store indices all go through visit_expr. */
typedef struct Mutator Mutator;
struct Mutator {
  Arena *arena;
  const Stmt *(*visit_stmt)(Mutator *m, const Stmt *s);
  const Expr *(*visit_expr)(Mutator *m, const Expr *e);
  void *user;
};
const Stmt *mutate_stmt(Mutator *m, const Stmt *s);
const Stmt *mutate_stmt_children(Mutator *m, const Stmt *s);
const Expr *mutate_expr(Mutator *m, const Expr *e);
const Expr *mutate_expr_children(Mutator *m, const Expr *e);

/* A Visitor walks a tree in pre-order; a callback returning false skips the
 * node's children. Either callback may be NULL. */
typedef struct Visitor Visitor;
struct Visitor {
  bool (*visit_stmt)(Visitor *v, const Stmt *s);
  bool (*visit_expr)(Visitor *v, const Expr *e);
  void *user;
};
void visit_stmt(Visitor *v, const Stmt *s);
void visit_expr(Visitor *v, const Expr *e);

/* Replace variables (keys: Var nodes) by expressions. */
struct PtrMap;
const Expr *expr_substitute(Arena *a, const Expr *e, const struct PtrMap *vmap);
const Stmt *stmt_substitute(Arena *a, const Stmt *s, const struct PtrMap *vmap);
/* Replace loads and stores of buffer keys by the mapped buffers (same indices). */
const Stmt *stmt_replace_buffers(Arena *a, const Stmt *s, const struct PtrMap *bmap);

/* ---- lookup helpers used by schedule primitives and passes ---- */
/* The realize of the block named `name`, or NULL. */
const Stmt *stmt_find_block(const Stmt *root, const char *name);
/* The For loop whose variable is `var`, or NULL. */
const Stmt *stmt_find_loop(const Stmt *root, const Expr *var);
/* Replace the subtree `target` (pointer identity) by `with` (NULL removes it
 * from its SEQ / leaves a nop), rebuilding the path to it. */
const Stmt *stmt_replace(Arena *a, const Stmt *root, const Stmt *target, const Stmt *with);

#endif
