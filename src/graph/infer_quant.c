/* Shape and dtype inference of the quantization ops: QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
 * QLinearConv (ConvInteger: infer_window.c). The products reuse MatMul's and
 * Conv's shape rules on the data operands. */
#include "graph/infer_internal.h"

#include <string.h>

/* The dtype attribute `name` (a dtype name after import), or dflt. */
static bool attr_dtype(const GraphNode *n, const char *name, DType *out) {
  const char *s = graph_attr_string(n, name, NULL);
  return s && dtype_parse(s, out);
}

static DType input_dtype(const Graph *g, const GraphNode *n, int k, DType dflt) {
  const GraphValue *v = infer_input(g, n, k);
  return v && v->dtype.bits ? v->dtype : dflt;
}

loom_status infer_quantize_linear(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected inputs x, y_scale and an optional y_zero_point");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  DType out = DT_U8, od;
  bool has_od = attr_dtype(n, "output_dtype", &od);
  if (has_od) out = od;
  if (infer_input(g, n, 2)) {
    DType z = input_dtype(g, n, 2, out);
    if (has_od && !dtype_eq(z, od)) {
      char a[16], b[16];
      return infer_fail(g, n, err, "output_dtype %s differs from y_zero_point's dtype %s", dtype_str(od, a), dtype_str(z, b));
    }
    out = z;
  }
  infer_set(g, n, 0, out, x->rank, x->dims);
  return LOOM_OK;
}

loom_status infer_dequantize_linear(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected inputs x, x_scale and an optional x_zero_point");
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  DType out = infer_input(g, n, 1)->dtype;
  attr_dtype(n, "output_dtype", &out);
  infer_set(g, n, 0, out, x->rank, x->dims);
  return LOOM_OK;
}

loom_status infer_dynamic_quantize_linear(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 1) return infer_fail(g, n, err, "expected one input, got %d", n->ninputs);
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  infer_set(g, n, 0, DT_U8, x->rank, x->dims);
  infer_set(g, n, 1, x->dtype, 0, NULL);
  infer_set(g, n, 2, DT_U8, 0, NULL);
  return LOOM_OK;
}

/* Runs `rule` on n with only the inputs `pick` (-1: absent), then gives
 * output 0 the dtype `out`. */
static loom_status infer_as(Graph *g, GraphNode *n, LoomError *err, const int *pick, int npick,
                            loom_status (*rule)(Graph *, GraphNode *, LoomError *), DType out) {
  ValueId ins[4], *saved = n->inputs;
  int nsaved = n->ninputs, cnt = 0;
  for (int k = 0; k < npick; k++)
    if (pick[k] >= 0 && pick[k] < nsaved && saved[pick[k]] != GRAPH_NO_VALUE) ins[cnt++] = saved[pick[k]];
  n->inputs = ins;
  n->ninputs = cnt;
  loom_status st = rule(g, n, err);
  n->inputs = saved;
  n->ninputs = nsaved;
  if (st || n->noutputs < 1 || n->outputs[0] < 0 || g->values[n->outputs[0]].rank < 0) return st;
  const GraphValue *y = &g->values[n->outputs[0]];
  int64_t dims[INFER_MAX_RANK + 2];
  int rank = y->rank;
  if (rank > 0) memcpy(dims, y->dims, sizeof(int64_t) * (size_t)rank);
  infer_set(g, n, 0, out, rank, dims);
  return LOOM_OK;
}

loom_status infer_matmul_integer(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2 || n->ninputs > 4) return infer_fail(g, n, err, "expected inputs A, B and optional zero points");
  return infer_as(g, n, err, (const int[]){0, 1}, 2, infer_matmul, DT_I32);
}

loom_status infer_qlinear_matmul(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 8) return infer_fail(g, n, err, "expected 8 inputs (a, its scale and zero point, b, ..., y's), got %d", n->ninputs);
  if (!infer_known(g, n, 0)) return LOOM_OK;
  DType out = input_dtype(g, n, 7, infer_input(g, n, 0)->dtype);
  return infer_as(g, n, err, (const int[]){0, 3}, 2, infer_matmul, out);
}

loom_status infer_qlinear_conv(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 8 || n->ninputs > 9)
    return infer_fail(g, n, err, "expected 8 or 9 inputs (x, its scale and zero point, w, ..., y's, B), got %d", n->ninputs);
  if (!infer_known(g, n, 0)) return LOOM_OK;
  DType out = input_dtype(g, n, 7, infer_input(g, n, 0)->dtype);
  return infer_as(g, n, err, (const int[]){0, 3, 8}, 3, infer_conv, out);
}
