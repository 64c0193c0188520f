/* Static memory planning: every intermediate tensor of the fused kernel
 * sequence gets an offset in one arena, fixed at compile time.
 *
 * Liveness is an interval of kernel indices [writer, last reader]. Kernels
 * are visited in order; at kernel t the buffers it writes are placed first
 * (their readers at t are still live), then the buffers whose last reader is
 * t are released. Placement is best fit over a free list kept sorted by
 * offset and coalesced on release (the greedy-by-size "size class" of each
 * buffer is its 64-byte aligned size); a release that touches the top of the
 * arena lowers it, so a later larger buffer grows from there instead of
 * leaving a hole. In place: a kernel whose output has the shape of an input
 * that dies at this kernel writes over that input when it reads the input
 * only elementwise, at the index it writes (group_may_overwrite: every
 * element is read before the same element is written, by the same thread). */
#include "graph/pass_internal.h"
#include "graph/passes.h"
#include "support/alloc.h"

#include <stdlib.h>
#include <string.h>

typedef struct MemBlock {
  int64_t off, size;
} MemBlock;

typedef struct FreeList {
  MemBlock *b;
  int n, cap;
  int64_t top, high;
} FreeList;

typedef struct MemEvent {
  int time, kind, idx; /* kind 0: place (start), 1: release (end) */
} MemEvent;

static int64_t align_up(int64_t x) { return (x + GRAPH_MEM_ALIGN - 1) / GRAPH_MEM_ALIGN * GRAPH_MEM_ALIGN; }

static int event_cmp(const void *pa, const void *pb) {
  const MemEvent *a = pa, *b = pb;
  if (a->time != b->time) return a->time < b->time ? -1 : 1;
  if (a->kind != b->kind) return a->kind - b->kind;
  return a->idx - b->idx;
}

static int64_t fl_alloc(FreeList *fl, int64_t need) {
  int best = -1;
  for (int k = 0; k < fl->n; k++)
    if (fl->b[k].size >= need && (best < 0 || fl->b[k].size < fl->b[best].size)) best = k;
  if (best >= 0) {
    int64_t off = fl->b[best].off;
    fl->b[best].off += need;
    fl->b[best].size -= need;
    if (fl->b[best].size == 0) {
      memmove(&fl->b[best], &fl->b[best + 1], sizeof(MemBlock) * (size_t)(fl->n - best - 1));
      fl->n--;
    }
    return off;
  }
  /* Nothing fits: grow the arena; a free block ending at the top is reused
   * as the start of the new one. Release keeps the top free of blocks, so
   * that case cannot arise, but growing from `top` is right either way. */
  int64_t off = fl->top;
  fl->top += need;
  if (fl->top > fl->high) fl->high = fl->top;
  return off;
}

static bool fl_release(FreeList *fl, int64_t off, int64_t size) {
  if (off + size == fl->top) {
    fl->top = off;
    /* The block below may now touch the top as well. */
    while (fl->n && fl->b[fl->n - 1].off + fl->b[fl->n - 1].size == fl->top) fl->top = fl->b[--fl->n].off;
    return true;
  }
  if (fl->n == fl->cap) {
    int cap = fl->cap ? fl->cap * 2 : 16;
    MemBlock *p = loom_realloc(fl->b, sizeof(MemBlock) * (size_t)cap);
    if (!p) return false;
    fl->b = p;
    fl->cap = cap;
  }
  int at = 0;
  while (at < fl->n && fl->b[at].off < off) at++;
  memmove(&fl->b[at + 1], &fl->b[at], sizeof(MemBlock) * (size_t)(fl->n - at));
  fl->b[at] = (MemBlock){off, size};
  fl->n++;
  if (at + 1 < fl->n && fl->b[at].off + fl->b[at].size == fl->b[at + 1].off) {
    fl->b[at].size += fl->b[at + 1].size;
    memmove(&fl->b[at + 1], &fl->b[at + 2], sizeof(MemBlock) * (size_t)(fl->n - at - 2));
    fl->n--;
  }
  if (at > 0 && fl->b[at - 1].off + fl->b[at - 1].size == fl->b[at].off) {
    fl->b[at - 1].size += fl->b[at].size;
    memmove(&fl->b[at], &fl->b[at + 1], sizeof(MemBlock) * (size_t)(fl->n - at - 1));
    fl->n--;
  }
  return true;
}

int64_t mem_plan_intervals(int n, const MemInterval *iv, int64_t *offsets, bool *inplace) {
  MemEvent *ev = loom_malloc(sizeof(MemEvent) * (size_t)(2 * n + 1));
  /* owner[i]: the interval whose release frees i's block (in-place chains
   * hand a block on); taken[j]: j's block was handed to a successor. */
  bool *taken = loom_calloc((size_t)n + 1, 1);
  FreeList fl = {0};
  if (!ev || !taken) {
    loom_free(ev);
    loom_free(taken);
    return -1;
  }
  int ne = 0;
  for (int i = 0; i < n; i++) {
    offsets[i] = 0;
    inplace[i] = false;
    if (iv[i].size <= 0) continue;
    ev[ne++] = (MemEvent){iv[i].start, 0, i};
    ev[ne++] = (MemEvent){iv[i].end < iv[i].start ? iv[i].start : iv[i].end, 1, i};
  }
  qsort(ev, (size_t)ne, sizeof *ev, event_cmp);
  int64_t result = 0;
  for (int e = 0; e < ne && result >= 0; e++) {
    int i = ev[e].idx;
    if (ev[e].kind == 0) {
      int j = iv[i].inplace_of;
      if (j >= 0 && j < n && j != i && !taken[j] && iv[j].size > 0 && iv[j].end == iv[i].start &&
          iv[j].start < iv[i].start && align_up(iv[j].size) == align_up(iv[i].size)) {
        /* j is still held here: releases at this time come after placements. */
        taken[j] = true;
        offsets[i] = offsets[j];
        inplace[i] = true;
        continue;
      }
      offsets[i] = fl_alloc(&fl, align_up(iv[i].size));
    } else if (!taken[i]) {
      if (!fl_release(&fl, offsets[i], align_up(iv[i].size))) result = -1;
    }
  }
  if (result >= 0) result = fl.high;
  loom_free(fl.b);
  loom_free(ev);
  loom_free(taken);
  return result;
}

/* Can the group's output v overwrite its input u? When every op of the group
 * has an output of v's shape and is elementwise or broadcast, except at
 * most one (the anchor: a conv or matmul whose epilogue the group is) that
 * does not read u: then u is read only at the index of v being written, by
 * the statement that writes it (a residual Add folded into a conv's tile
 * store writes over the residual, as ONNX Runtime's fused Conv+Sum does). */
static bool group_may_overwrite(const Graph *g, const GraphFusedGroup *grp, ValueId v, ValueId u) {
  const GraphValue *ov = &g->values[v];
  int anchors = 0;
  for (int m = 0; m < grp->nnodes; m++) {
    const GraphNode *n = &g->nodes[grp->nodes[m]];
    if (graph_op_info(n->op)->pattern > GRAPH_PATTERN_BROADCAST) {
      for (int k = 0; k < n->ninputs; k++)
        if (n->inputs[k] == u) return false;
      if (++anchors > 1) return false;
    }
    for (int k = 0; k < n->noutputs; k++) {
      const GraphValue *o = n->outputs[k] >= 0 ? &g->values[n->outputs[k]] : NULL;
      if (!o || o->rank != ov->rank) return false;
      for (int d = 0; d < o->rank; d++)
        if (o->dims[d] != ov->dims[d]) return false;
    }
  }
  return true;
}

static bool same_type(const GraphValue *a, const GraphValue *b) {
  if (!dtype_eq(a->dtype, b->dtype) || a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

loom_status graph_plan_memory(const Graph *g, const GraphFusionPlan *plan, Arena *a, GraphMemoryPlan *out, LoomError *err) {
  memset(out, 0, sizeof *out);
  int nv = g->nvalues;
  out->nvalues = nv;
  out->offset = ARENA_ARRAY(a, int64_t, nv);
  out->size = ARENA_ARRAY(a, int64_t, nv);
  out->inplace_of = ARENA_ARRAY(a, ValueId, nv);
  int *interval_of = loom_malloc(sizeof(int) * ((size_t)nv + 1));
  MemInterval *iv = loom_malloc(sizeof(MemInterval) * ((size_t)nv + 1));
  ValueId *value_of = loom_malloc(sizeof(ValueId) * ((size_t)nv + 1));
  int64_t *offs = loom_malloc(sizeof(int64_t) * ((size_t)nv + 1));
  bool *inpl = loom_malloc((size_t)nv + 1);
  loom_status st = LOOM_OK;
  if (!interval_of || !iv || !value_of || !offs || !inpl) {
    st = err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int v = 0; v < nv; v++) {
    out->offset[v] = -1;
    out->inplace_of[v] = -1;
    interval_of[v] = -1;
  }
  /* Intervals: one per group output that is neither a graph output nor a constant. */
  int n = 0;
  for (int gi = 0; gi < plan->ngroups; gi++) {
    const GraphFusedGroup *grp = &plan->groups[gi];
    for (int k = 0; k < grp->noutputs; k++) {
      ValueId v = grp->outputs[k];
      const GraphValue *val = &g->values[v];
      if (graph_is_output(g, v) || val->constant) continue;
      if (!graph_value_is_static(val)) {
        st = err_set(err, LOOM_ERR_INVALID_ARG, "memory planning: value \"%s\" (written by node \"%s\") has no static shape",
                     val->name, val->producer >= 0 ? g->nodes[val->producer].name : "?");
        goto done;
      }
      int64_t numel = graph_shape_numel(val->rank, val->dims);
      int bytes = dtype_bytes(val->dtype);
      if (numel < 0 || (numel && INT64_MAX / numel < bytes + GRAPH_MEM_ALIGN)) {
        st = err_set(err, LOOM_ERR_INVALID_ARG, "memory planning: value \"%s\" is too large", val->name);
        goto done;
      }
      iv[n] = (MemInterval){numel * bytes, gi, gi, -1};
      value_of[n] = v;
      interval_of[v] = n++;
    }
  }
  for (int gi = 0; gi < plan->ngroups; gi++) {
    const GraphFusedGroup *grp = &plan->groups[gi];
    for (int k = 0; k < grp->ninputs; k++) {
      int i = interval_of[grp->inputs[k]];
      if (i >= 0 && iv[i].end < gi) iv[i].end = gi;
    }
  }
  for (int gi = 0; gi < plan->ngroups; gi++) {
    const GraphFusedGroup *grp = &plan->groups[gi];
    if (grp->noutputs != 1 || interval_of[grp->outputs[0]] < 0) continue;
    ValueId v = grp->outputs[0];
    for (int k = 0; k < grp->ninputs; k++) {
      int j = interval_of[grp->inputs[k]];
      if (j >= 0 && iv[j].end == gi && same_type(&g->values[grp->inputs[k]], &g->values[v]) &&
          group_may_overwrite(g, grp, v, grp->inputs[k])) {
        iv[interval_of[v]].inplace_of = j;
        break;
      }
    }
  }
  int64_t arena = mem_plan_intervals(n, iv, offs, inpl);
  if (arena < 0) {
    st = err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  out->arena_size = arena;
  for (int i = 0; i < n; i++) {
    ValueId v = value_of[i];
    out->offset[v] = offs[i];
    out->size[v] = iv[i].size;
    out->intermediate_bytes += iv[i].size;
    if (inpl[i]) out->inplace_of[v] = value_of[iv[i].inplace_of];
  }
done:
  loom_free(interval_of);
  loom_free(iv);
  loom_free(value_of);
  loom_free(offs);
  loom_free(inpl);
  return st;
}
