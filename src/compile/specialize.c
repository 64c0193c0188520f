/* Specializing a model to concrete input tensors, before the graph passes.
 *
 * A static-shape compiler can still run a model whose shapes depend on the
 * values of some inputs (a Reshape whose target shape is a graph input, a
 * Slice with runtime starts, a Resize with runtime sizes): it compiles one
 * variant per distinct value, the way a JIT compiles per guard. `loom run
 * MODEL.onnx` does that, caching each variant by a hash of the model and
 * those values (tools/loom.c).
 *
 * An input is compiled in as a constant only when its value decides shapes:
 * it has at most SPECIALIZE_MAX_ELEMS elements and it reaches, directly or
 * through integer-valued nodes (shape arithmetic), an operand the compiler
 * consumes at compile time (compile_input_is_data false: Reshape's shape,
 * Resize's scales, Range's bounds...).
 * Every other input keeps its place and only takes the tensor's shape. */
#include "compile/compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SPECIALIZE_MAX_ELEMS = 4096 };

static bool is_integer(DType t) { return t.code == DT_INT || t.code == DT_UINT; }

/* True when value v feeds a compile-time operand, directly or through
 * integer-valued nodes. */
static bool decides_shapes(const Graph *g, ValueId v) {
  bool *seen = calloc((size_t)g->nvalues, sizeof *seen);
  ValueId *work = malloc(sizeof(ValueId) * (size_t)g->nvalues);
  if (!seen || !work) {
    free(seen);
    free(work);
    return false;
  }
  int top = 0;
  bool found = false;
  work[top++] = v;
  seen[v] = true;
  while (top && !found) {
    ValueId cur = work[--top];
    for (int i = 0; i < g->nnodes && !found; i++) {
      const GraphNode *n = &g->nodes[i];
      for (int k = 0; k < n->ninputs && !found; k++) {
        if (n->inputs[k] != cur) continue;
        if (!compile_input_is_data(n, k)) {
          found = true;
          break;
        }
        for (int o = 0; o < n->noutputs; o++) {
          ValueId out = n->outputs[o];
          if (out == GRAPH_NO_VALUE || seen[out]) continue;
          /* Shape arithmetic is integer; conditions (If, Loop) are bool.
           * Before inference an output's dtype is unknown: follow it, the
           * consumer decides. */
          const GraphValue *ov = &g->values[out];
          if (ov->dtype.code != DT_HANDLE && ov->dtype.code != DT_BOOL && !is_integer(ov->dtype)) continue;
          seen[out] = true;
          work[top++] = out;
        }
      }
    }
  }
  free(seen);
  free(work);
  return found;
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

loom_status compile_specialize_inputs(Graph *g, const LoomInputValue *vals, int n, LoomError *err) {
  for (int i = 0; i < n; i++) {
    const char *name = vals[i].name;
    const DLTensor *t = vals[i].tensor;
    if (!name || !t)
      return err_set(err, LOOM_ERR_INVALID_ARG, "specialize: input %d has no name or no tensor", i);
    int slot = -1;
    for (int k = 0; k < g->ninputs; k++)
      if (!strcmp(g->values[g->inputs[k]].name, name)) slot = k;
    if (slot < 0) return err_set(err, LOOM_ERR_INVALID_ARG, "specialize: the model has no graph input \"%s\"", name);
    ValueId v = g->inputs[slot];
    GraphValue *gv = &g->values[v];
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
    int64_t numel = graph_shape_numel(t->ndim, t->shape);
    bool bind = numel <= SPECIALIZE_MAX_ELEMS && decides_shapes(g, v);
    if (getenv("LOOM_DEBUG_SPECIALIZE"))
      fprintf(stderr, "loom: specialize: input \"%s\" %s\n", name, bind ? "compiled in (its value decides shapes)" : "kept");
    if (!bind) continue;
    GraphTensor *c = graph_tensor_new(g->arena, dt, t->ndim, t->shape);
    if (c->nbytes) memcpy(c->data, (const char *)t->data + t->byte_offset, c->nbytes);
    gv->constant = c;
    memmove(&g->inputs[slot], &g->inputs[slot + 1], sizeof(ValueId) * (size_t)(g->ninputs - slot - 1));
    g->ninputs--;
  }
  return LOOM_OK;
}
