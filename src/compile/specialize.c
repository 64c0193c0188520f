/* Specializing a model to concrete input tensors.
 *
 * A static-shape compiler can still run a model whose shapes depend on the
 * values of some inputs (a Reshape whose target shape is a graph input, a
 * Slice with runtime starts, a Resize with runtime sizes, an If on an input
 * condition): it compiles one variant per distinct value, the way a JIT
 * compiles per guard. `loom run MODEL.onnx` does that (tools/loom.c).
 *
 * Every given input fixes its input's shape. Its VALUE is compiled in only
 * when the compiler cannot build the program without it:
 *
 *   an input is compiled in  <=>  it has at most SPECIALIZE_MAX_ELEMS
 *   elements and a compile-time operand (compile_input_is_data false: a
 *   shape, axes, a count, Resize's scales, Range's bounds, If's condition,
 *   Loop's trip count and condition) depends on its value.
 *
 * "Depends on its value" is a backward walk over the live nodes from those
 * operands: a node's output value depends on all its operands' values,
 * except that Shape, Size and EyeLike read only their input's shape and
 * CastLike only its target's dtype (barriers: a float tensor whose shape
 * feeds a Reshape stays a runtime input). Where an output's SHAPE matters
 * (it feeds a Shape), the walk asks for the shapes of the node's operands,
 * and for the values of those of an op whose extents depend on data
 * (NonZero, Compress, Unique, NonMaxSuppression).
 *
 * Dtypes play no part: the compile-time operands are exactly those that
 * decide shapes or what runs (op_compute.c's audit; parameters such as
 * Clip's bounds, Pad's constant_value, Resize's roi and Dropout's ratio are
 * runtime data), so float data stays a runtime input unless its value
 * truly decides a shape (Resize's float scales, Range's float bounds, a
 * float cast to a Reshape's shape), where the program cannot be built
 * without it.
 *
 * The walk runs on the graph as imported, where If/Loop/Scan are still
 * nodes whose bodies it cannot see; compile_import_specialized therefore
 * walks the prepared graph again (bodies inlined, shapes inferred) and,
 * when a body's compile-time operand reads an input kept at run time,
 * imports again with that input compiled in too. */
#include "compile/compile.h"

#include "frontend/onnx/onnx.h"
#include "graph/graph_dynamic.h"
#include "support/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SPECIALIZE_MAX_ELEMS = 4096, SPECIALIZE_MAX_ROUNDS = 4 };

/* Operands of which only the shape or the dtype is read. */
static bool value_ignored(const GraphNode *n, int k) {
  switch (n->op) {
    case GRAPH_OP_SHAPE:
    case GRAPH_OP_SIZE:
    case GRAPH_OP_EYE_LIKE: return k == 0;
    case GRAPH_OP_CAST_LIKE: return k == 1;
    default: return false;
  }
}

static bool any_output(const GraphNode *n, const bool *flag) {
  for (int o = 0; o < n->noutputs; o++)
    if (n->outputs[o] != GRAPH_NO_VALUE && flag[n->outputs[o]]) return true;
  return false;
}

/* need[v]: the value of v is needed at compile time. One backward pass
 * (g->nodes is in topological order). NULL when out of memory. */
static bool *values_needed(const Graph *g) {
  size_t nv = (size_t)g->nvalues + 1;
  bool *live = loom_calloc(nv, 1), *need = loom_calloc(nv, 1), *shape = loom_calloc(nv, 1);
  if (!live || !need || !shape) {
    loom_free(live), loom_free(need), loom_free(shape);
    return NULL;
  }
  for (int i = 0; i < g->noutputs; i++) live[g->outputs[i]] = true;
  for (int i = g->nnodes - 1; i >= 0; i--) {
    const GraphNode *n = &g->nodes[i];
    if (!any_output(n, live)) continue; /* dead: DCE drops it, its operands decide nothing */
    int which[GRAPH_MAX_DYNAMIC_OUTPUTS], nonnx;
    bool data_extents = graph_dynamic_outputs(n->op, &nonnx, which) > 0;
    bool out_value = any_output(n, need), out_shape = any_output(n, shape);
    for (int k = 0; k < n->ninputs; k++) {
      ValueId v = n->inputs[k];
      if (v == GRAPH_NO_VALUE) continue;
      live[v] = true;
      if (!compile_input_is_data(n, k)) need[v] = true;
      else if (value_ignored(n, k)) shape[v] |= out_value || out_shape;
      else if (out_value || (out_shape && data_extents)) need[v] = true;
      else if (out_shape) shape[v] = true;
    }
  }
  loom_free(live);
  loom_free(shape);
  return need;
}

static int input_slot(const Graph *g, const char *name) {
  for (int k = 0; k < g->ninputs; k++)
    if (!strcmp(g->values[g->inputs[k]].name, name)) return k;
  return -1;
}

loom_status compile_specialize_decide(const Graph *g, const loom_input_value *vals, int n, bool *bind, LoomError *err) {
  bool *need = values_needed(g);
  if (!need) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "specialize: out of memory");
  for (int i = 0; i < n; i++) {
    bind[i] = false;
    if (!vals[i].name || !vals[i].tensor) continue;
    int slot = input_slot(g, vals[i].name);
    if (slot < 0 || !need[g->inputs[slot]]) continue;
    const DLTensor *t = vals[i].tensor;
    bind[i] = graph_shape_numel(t->ndim, t->shape) <= SPECIALIZE_MAX_ELEMS;
  }
  loom_free(need);
  return LOOM_OK;
}

static bool dl_to_dtype(DLDataType d, DType *out) {
  if (d.lanes != 1) return false;
  if (d.code == kDLInt || d.code == kDLUInt || d.code == kDLFloat) *out = dtype_make((DTypeCode)d.code, d.bits, 1);
  else if (d.code == 4 /* kDLBfloat */ && d.bits == 16) *out = DT_BF16;
  else if (d.code == 6 /* bool */ && d.bits == 8) *out = DT_BOOL1;
  else if (dtype_is_narrow_float_code(d.code)) *out = dtype_make((DTypeCode)d.code, d.bits, 1); /* DLPack 1.1 fp8/fp4 */
  else return false;
  return true;
}

loom_status compile_specialize_inputs(Graph *g, const loom_input_value *vals, int n, const bool *force, bool *bound,
                                      LoomError *err) {
  for (int i = 0; i < n; i++) {
    const char *name = vals[i].name;
    const DLTensor *t = vals[i].tensor;
    if (!name || !t)
      return err_set(err, LOOM_ERR_INVALID_ARG, "specialize: input %d has no name or no tensor", i);
    int slot = input_slot(g, name);
    if (slot < 0) return err_set(err, LOOM_ERR_INVALID_ARG, "specialize: the model has no graph input \"%s\"", name);
    GraphValue *gv = &g->values[g->inputs[slot]];
    DType dt;
    if (!dl_to_dtype(t->dtype, &dt))
      return err_set(err, LOOM_ERR_UNSUPPORTED, "specialize: input \"%s\": unsupported tensor dtype", name);
    if (gv->dtype.code != DT_HANDLE && !dtype_eq(gv->dtype, dt)) {
      char a[16], b[16];
      return err_set(err, LOOM_ERR_INVALID_ARG, "specialize: input \"%s\" is %s, the tensor given for it is %s", name,
                     dtype_str(gv->dtype, a), dtype_str(dt, b));
    }
    loom_status st = graph_set_input_shape(g, name, t->ndim, t->shape, err);
    if (st) return st;
  }
  bool *bind = loom_calloc((size_t)n + 1, sizeof *bind);
  if (!bind) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "specialize: out of memory");
  loom_status st = compile_specialize_decide(g, vals, n, bind, err);
  for (int i = 0; !st && i < n; i++) {
    if (bound) bound[i] = false;
    if (!bind[i] && !(force && force[i])) continue;
    const DLTensor *t = vals[i].tensor;
    int slot = input_slot(g, vals[i].name);
    GraphValue *gv = &g->values[g->inputs[slot]];
    DType dt;
    dl_to_dtype(t->dtype, &dt);
    GraphTensor *c = graph_tensor_new(g->arena, dt, t->ndim, t->shape);
    if (c->nbytes) memcpy(c->data, (const char *)t->data + t->byte_offset, c->nbytes);
    gv->constant = c;
    memmove(&g->inputs[slot], &g->inputs[slot + 1], sizeof(ValueId) * (size_t)(g->ninputs - slot - 1));
    g->ninputs--;
    if (bound) bound[i] = true;
  }
  loom_free(bind);
  return st;
}

loom_status compile_import_specialized(const char *path, const loom_input_value *vals, int n, Graph **out,
                                       LoomError *err) {
  *out = NULL;
  bool *force = loom_calloc((size_t)n + 1, sizeof *force), *bound = loom_calloc((size_t)n + 1, sizeof *bound);
  bool *more = loom_calloc((size_t)n + 1, sizeof *more);
  /* An input the caller gives a value for stays an input even where an
   * initializer gives it a default (IR version 3 files). */
  const char **fed = loom_calloc((size_t)n + 1, sizeof *fed);
  loom_status st =
      force && bound && more && fed ? LOOM_OK : err_set(err, LOOM_ERR_OUT_OF_MEMORY, "specialize: out of memory");
  for (int i = 0; fed && i < n; i++) fed[i] = vals[i].name;
  for (int round = 0; !st; round++) {
    Graph *g = onnx_import_file_fed(path, fed, n, err);
    if (!g) {
      st = err->status ? err->status : LOOM_ERR_INTERNAL;
      break;
    }
    st = compile_specialize_inputs(g, vals, n, force, bound, err);
    if (!st) st = onnx_prepare_graph(g, path, err);
    /* Inlined bodies are graph nodes now: one of their compile-time
     * operands may read an input that the first walk could not see. */
    bool again = false;
    if (!st && round + 1 < SPECIALIZE_MAX_ROUNDS) st = compile_specialize_decide(g, vals, n, more, err);
    for (int i = 0; !st && round + 1 < SPECIALIZE_MAX_ROUNDS && i < n; i++)
      if (more[i] && !bound[i]) force[i] = again = true;
    if (st || again) {
      graph_free(g);
      continue;
    }
    *out = g;
    if (getenv("LOOM_DEBUG_SPECIALIZE"))
      for (int i = 0; i < n; i++)
        fprintf(stderr, "loom: specialize: input \"%s\" %s\n", vals[i].name,
                bound[i] ? "compiled in (its value decides shapes)" : "kept");
    break;
  }
  loom_free(force);
  loom_free(bound);
  loom_free(more);
  loom_free(fed);
  return st;
}
