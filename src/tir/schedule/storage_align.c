/* storage_align: pad one dimension's stride of an intermediate buffer so
 * rows start at `factor * k + offset` elements, avoiding cache-set (or GPU
 * shared-memory bank) conflicts. Only the buffer's annotation changes; the
 * lowering that computes strides honours it. */
#include "tir/schedule/block_util.h"

#include <string.h>

loom_status sch_storage_align(Schedule *s, SchRV block_rv, int write_index, int axis, int factor, int offset) {
  const Stmt *r = sch_lookup_block(s, block_rv);
  if (!r) return LOOM_ERR_SCHEDULE;
  Arena *a = s->arena;
  const Block *blk = r->realize.block;
  if (write_index < 0 || write_index >= blk->n_writes)
    return sch_fail(s, "storage_align: block \"%s\" has %d writes; write_index %d is out of range", blk->name,
                    blk->n_writes, write_index);
  const Buffer *buf = blk->writes[write_index].buffer;
  if (buffer_is_param(s->func, buf))
    return sch_fail(s, "storage_align: %s (written by block \"%s\") is a function parameter; its layout is fixed",
                    buf->name, blk->name);
  if (!buffer_is_root_alloc(s->func, buf))
    return sch_fail(s, "storage_align: %s is not allocated by the root block", buf->name);
  if (axis < 0 || axis >= buf->ndim)
    return sch_fail(s, "storage_align: axis %d is out of range for %s, which has %d dimensions", axis, buf->name,
                    buf->ndim);
  if (factor <= 0) return sch_fail(s, "storage_align: factor %d must be positive", factor);
  if (offset < 0 || offset >= factor)
    return sch_fail(s, "storage_align: offset %d must be in [0, factor=%d)", offset, factor);

  Buffer *nb = arena_memdup(a, buf, sizeof *nb);
  nb->align_axis = axis;
  nb->align_factor = factor;
  nb->align_offset = offset;
  PtrMap bmap;
  ptrmap_init(&bmap, a);
  ptrmap_put(&bmap, buf, nb);
  const Stmt *body = stmt_replace_buffers(a, s->func->body, &bmap);
  const Block *root = body->realize.block;
  const Buffer **allocs = ARENA_ARRAY(a, const Buffer *, root->n_alloc);
  for (int i = 0; i < root->n_alloc; i++) allocs[i] = root->alloc_buffers[i] == buf ? nb : root->alloc_buffers[i];
  sch_set_body(s, root_with_allocs(a, body, allocs, root->n_alloc));
  SchRV in[1] = {block_rv};
  int64_t ints[4] = {write_index, axis, factor, offset};
  Inst inst = {.kind = INST_STORAGE_ALIGN, .inputs = in, .n_inputs = 1, .ints = ints, .n_ints = 4};
  sch_record(s, &inst);
  return LOOM_OK;
}
