/* The compute half of the op strategy for the quantization ops: node
 * attributes -> the topi calls of topi/topi_ops_quant.h. Every input is
 * data (scales and zero points are read at run time). One row per op in
 * compile_quant_computes. */
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

/* The node's first output, NULL when it has none. */
static const GraphValue *out_value(const Graph *g, const GraphNode *n) {
  return n->noutputs > 0 && n->outputs[0] >= 0 ? &g->values[n->outputs[0]] : NULL;
}

static loom_status quantize_linear(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                                   TeTensor **outs, LoomError *err) {
  const GraphValue *out = out_value(g, n);
  return done(outs[0] = topi_quantize_linear(a, name, ins[0], ins[1], opt_in(n, ins, 2), graph_node_int(n, "axis"),
                                             graph_node_int(n, "block_size"), out ? out->dtype : DT_U8,
                                             graph_node_int(n, "saturate") != 0, attr_dtype(n, "precision", DT_VOID),
                                             err),
              err);
}

static loom_status dequantize_linear(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                     const char *name, TeTensor **outs, LoomError *err) {
  const GraphValue *out = out_value(g, n);
  return done(outs[0] = topi_dequantize_linear(a, name, ins[0], ins[1], opt_in(n, ins, 2), graph_node_int(n, "axis"),
                                               graph_node_int(n, "block_size"), out ? out->dtype : ins[1]->dtype, err),
              err);
}

static loom_status dynamic_quantize_linear(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                           const char *name, TeTensor **outs, LoomError *err) {
  return topi_dynamic_quantize_linear(a, name, ins[0], outs, err) ? LOOM_OK
                                                                 : (err->status ? err->status : LOOM_ERR_INVALID_ARG);
}

static loom_status matmul_integer(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                                  TeTensor **outs, LoomError *err) {
  return done(outs[0] = topi_matmul_integer(a, name, ins[0], ins[1], opt_in(n, ins, 2), opt_in(n, ins, 3), err), err);
}

static loom_status qlinear_matmul(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                                  TeTensor **outs, LoomError *err) {
  return done(outs[0] = topi_qlinear_matmul(a, name, ins[0], ins[1], ins[2], ins[3], ins[4], ins[5], ins[6],
                                            opt_in(n, ins, 7), err),
              err);
}

static loom_status qlinear_conv(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                                TeTensor **outs, LoomError *err) {
  TopiWindowParams p;
  loom_status st = compile_window_params(n, ins[0]->ndim - 2, &p, err);
  if (st) return st;
  return done(outs[0] = topi_qlinear_conv(a, name, ins[0], ins[1], opt_in(n, ins, 2), ins[3], ins[4], opt_in(n, ins, 5),
                                          ins[6], opt_in(n, ins, 7), opt_in(n, ins, 8), &p, err),
              err);
}

const CompileComputeFn compile_quant_computes[GRAPH_OP_COUNT] = {
    [GRAPH_OP_QUANTIZE_LINEAR] = quantize_linear,
    [GRAPH_OP_DEQUANTIZE_LINEAR] = dequantize_linear,
    [GRAPH_OP_DYNAMIC_QUANTIZE_LINEAR] = dynamic_quantize_linear,
    [GRAPH_OP_MATMUL_INTEGER] = matmul_integer,
    [GRAPH_OP_QLINEAR_MATMUL] = qlinear_matmul,
    [GRAPH_OP_QLINEAR_CONV] = qlinear_conv,
};
