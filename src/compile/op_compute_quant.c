/* The compute half of the op strategy for the quantization ops: node
 * attributes -> the topi calls of topi/topi_ops_quant.h. Every input is
 * data (scales and zero points are read at run time). */
#include "compile/compile.h"

#include "topi/topi_ops.h"

#include <string.h>

static TeTensor *opt_in(const GraphNode *n, TeTensor *const *ins, int k) {
  return k < n->ninputs && n->inputs[k] != GRAPH_NO_VALUE ? ins[k] : NULL;
}

static loom_status done(TeTensor *t, LoomError *err) {
  return t ? LOOM_OK : (err->status ? err->status : LOOM_ERR_INVALID_ARG);
}

/* The dtype named by attribute `name` (imported as a dtype name), or dflt. */
static DType attr_dtype(const GraphNode *n, const char *name, DType dflt) {
  DType t;
  const char *s = graph_attr_string(n, name, NULL);
  return s && dtype_parse(s, &t) ? t : dflt;
}

loom_status compile_quant_node_compute(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                       const char *name, TeTensor **outs, LoomError *err) {
  bool qdq = n->op == GRAPH_OP_QUANTIZE_LINEAR || n->op == GRAPH_OP_DEQUANTIZE_LINEAR;
  int64_t axis = qdq ? graph_node_int(n, "axis") : 0, block = qdq ? graph_node_int(n, "block_size") : 0;
  const GraphValue *out = n->noutputs > 0 && n->outputs[0] >= 0 ? &g->values[n->outputs[0]] : NULL;
  switch (n->op) {
    case GRAPH_OP_QUANTIZE_LINEAR:
      return done(outs[0] = topi_quantize_linear(a, name, ins[0], ins[1], opt_in(n, ins, 2), axis, block,
                                                 out ? out->dtype : DT_U8, graph_node_int(n, "saturate") != 0,
                                                 attr_dtype(n, "precision", DT_VOID), err),
                  err);
    case GRAPH_OP_DEQUANTIZE_LINEAR:
      return done(outs[0] = topi_dequantize_linear(a, name, ins[0], ins[1], opt_in(n, ins, 2), axis, block,
                                                   out ? out->dtype : ins[1]->dtype, err),
                  err);
    case GRAPH_OP_DYNAMIC_QUANTIZE_LINEAR:
      return topi_dynamic_quantize_linear(a, name, ins[0], outs, err) ? LOOM_OK
                                                                     : (err->status ? err->status : LOOM_ERR_INVALID_ARG);
    case GRAPH_OP_MATMUL_INTEGER:
      return done(outs[0] = topi_matmul_integer(a, name, ins[0], ins[1], opt_in(n, ins, 2), opt_in(n, ins, 3), err), err);
    case GRAPH_OP_QLINEAR_MATMUL:
      return done(outs[0] = topi_qlinear_matmul(a, name, ins[0], ins[1], ins[2], ins[3], ins[4], ins[5], ins[6],
                                                opt_in(n, ins, 7), err),
                  err);
    case GRAPH_OP_QLINEAR_CONV: {
      TopiWindowParams p;
      loom_status st = compile_window_params(n, ins[0]->ndim - 2, &p, err);
      if (st) return st;
      return done(outs[0] = topi_qlinear_conv(a, name, ins[0], ins[1], opt_in(n, ins, 2), ins[3], ins[4],
                                              opt_in(n, ins, 5), ins[6], opt_in(n, ins, 7), opt_in(n, ins, 8), &p, err),
                  err);
    }
    default:
      return err_set(err, LOOM_ERR_INTERNAL, "compile_quant_node_compute: not a quantization op");
  }
}
