/* cache_read and cache_write: stage a buffer through a copy in another
 * memory scope (local/shared), the building block of tiling for a memory
 * hierarchy (TensorIR §4.3, TVM cache_read_write.cc).
 *
 * The cache buffer has the whole shape of the original: simpler than TVM's
 * region-sized caches, and compute_at on the copy block then shrinks the
 * work to the region needed; a later pass may shrink the allocation. */
#include "tir/schedule/block_util.h"

#include <string.h>

static void record_cache(Schedule *s, InstKind k, SchRV block, int index, MemScope scope, SchRV out) {
  SchRV in[1] = {block};
  int64_t ints[2] = {index, (int64_t)scope};
  SchRV outs[1] = {out};
  Inst inst = {.kind = k, .inputs = in, .n_inputs = 1, .ints = ints, .n_ints = 2, .outputs = outs, .n_outputs = 1};
  sch_record(s, &inst);
}

static bool scope_valid(MemScope scope) {
  return scope == SCOPE_GLOBAL || scope == SCOPE_LOCAL || scope == SCOPE_SHARED;
}

/* `r` with every access to `from` redirected to `to`. */
static const Stmt *redirect(Arena *a, const Stmt *r, const Buffer *from, const Buffer *to) {
  PtrMap bmap;
  ptrmap_init(&bmap, a);
  ptrmap_put(&bmap, from, (void *)to);
  return stmt_replace_buffers(a, r, &bmap);
}

SchRV sch_cache_read(Schedule *s, SchRV block_rv, int read_index, MemScope scope) {
  const Stmt *r = sch_lookup_block(s, block_rv);
  if (!r) return -1;
  Arena *a = s->arena;
  const Stmt *body = s->func->body;
  const Block *blk = r->realize.block;
  if (r == body) return sch_fail(s, "cache_read: the root block has no reads"), -1;
  if (read_index < 0 || read_index >= blk->n_reads)
    return sch_fail(s, "cache_read: block \"%s\" has %d reads; read_index %d is out of range", blk->name,
                    blk->n_reads, read_index), -1;
  if (!scope_valid(scope)) return sch_fail(s, "cache_read: invalid memory scope %d", (int)scope), -1;
  const Buffer *buf = blk->reads[read_index].buffer;
  if (block_writes(blk, buf))
    return sch_fail(s, "cache_read: block \"%s\" also writes %s (read %d); use cache_write for it", blk->name,
                    buf->name, read_index), -1;
  const Stmt *top = root_child_of(body, r);
  LOOM_ASSERT(top);
  BlockOrder order = blocks_in_order(a, top);
  for (int i = 0; i < order.n; i++)
    if (block_writes(order.items[i]->realize.block, buf))
      return sch_fail(s, "cache_read: %s is written by block \"%s\" in the same loop nest as block \"%s\"; "
                      "the copy would read it too early", buf->name, order.items[i]->realize.block->name,
                      blk->name), -1;

  const char *name = sch_unique_block_name(s, arena_printf(a, "%s_%s", buf->name, mem_scope_name(scope)));
  Buffer *cache = buffer_clone(a, buf, name, scope);
  const Stmt *nbody = root_insert(a, body, top, copy_block_nest(s, name, buf, cache), false);
  nbody = stmt_replace(a, nbody, r, redirect(a, r, buf, cache));
  nbody = root_add_alloc(a, nbody, cache);
  sch_set_body(s, nbody);
  SchRV out = sch_new_block_rv(s, name);
  record_cache(s, INST_CACHE_READ, block_rv, read_index, scope, out);
  return out;
}

SchRV sch_cache_write(Schedule *s, SchRV block_rv, int write_index, MemScope scope) {
  const Stmt *r = sch_lookup_block(s, block_rv);
  if (!r) return -1;
  Arena *a = s->arena;
  const Stmt *body = s->func->body;
  const Block *blk = r->realize.block;
  if (r == body) return sch_fail(s, "cache_write: the root block has no writes"), -1;
  if (write_index < 0 || write_index >= blk->n_writes)
    return sch_fail(s, "cache_write: block \"%s\" has %d writes; write_index %d is out of range", blk->name,
                    blk->n_writes, write_index), -1;
  if (!scope_valid(scope)) return sch_fail(s, "cache_write: invalid memory scope %d", (int)scope), -1;
  const Buffer *buf = blk->writes[write_index].buffer;
  BlockOrder order = blocks_in_order(a, body);
  for (int i = 0; i < order.n; i++) {
    const Block *ob = order.items[i]->realize.block;
    if (order.items[i] != r && block_writes(ob, buf))
      return sch_fail(s, "cache_write: block \"%s\" also writes %s; expected \"%s\" to be its only producer",
                      ob->name, buf->name, blk->name), -1;
  }
  const Stmt *top = root_child_of(body, r);
  LOOM_ASSERT(top);
  order = blocks_in_order(a, top);
  for (int i = 0; i < order.n; i++)
    if (order.items[i] != r && block_reads(order.items[i]->realize.block, buf))
      return sch_fail(s, "cache_write: block \"%s\" reads %s in the same loop nest as block \"%s\"; "
                      "it would read it before the copy-out", order.items[i]->realize.block->name, buf->name,
                      blk->name), -1;

  const char *name = sch_unique_block_name(s, arena_printf(a, "%s_%s", buf->name, mem_scope_name(scope)));
  Buffer *cache = buffer_clone(a, buf, name, scope);
  const Stmt *nbody = root_insert(a, body, top, copy_block_nest(s, name, cache, buf), true);
  nbody = stmt_replace(a, nbody, r, redirect(a, r, buf, cache));
  nbody = root_add_alloc(a, nbody, cache);
  sch_set_body(s, nbody);
  SchRV out = sch_new_block_rv(s, name);
  record_cache(s, INST_CACHE_WRITE, block_rv, write_index, scope, out);
  return out;
}
