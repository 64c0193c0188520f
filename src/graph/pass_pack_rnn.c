/* graph_pass_pack_rnn: RNN, GRU and LSTM read their weights W [D, G*H, I]
 * and R [D, G*H, H] along the gates: the input product and each step's
 * H R^T vectorize over the gate axis, so they want W^T [D, I, G*H] and
 * R^T [D, H, G*H] (topi/op_rnn.c). The op used to transpose both in stages
 * of its own on every run (0.1 MiB to 0.5 MiB a layer of bench/lstm.py's
 * model); constant weights are transposed here, once, at compile time, as
 * ONNX Runtime does when its session is created:
 *
 *   LSTM(X, W, R, ...)  ->  LSTM(X, W^T, R^T, ...) {weights_transposed = 1}
 *
 * Both W and R must be constant f32 (one transposed without the other
 * would need a second flag for no model we know). infer_rnn.c and the op
 * read the attribute; the unpacked weights are dropped by DCE when nothing
 * else reads them. */
#include "graph/pass_internal.h"
#include "graph/passes.h"

#include <string.h>

/* t [D, A, B] -> [D, B, A]. */
static GraphTensor *transpose_last2(Graph *g, const GraphTensor *t) {
  int64_t d = t->dims[0], r = t->dims[1], c = t->dims[2];
  GraphTensor *out = graph_tensor_new(g->arena, t->dtype, 3, (int64_t[]){d, c, r});
  const float *src = t->data;
  float *dst = out->data;
  for (int64_t k = 0; k < d; k++)
    for (int64_t i = 0; i < r; i++)
      for (int64_t j = 0; j < c; j++) dst[(k * c + j) * r + i] = src[(k * r + i) * c + j];
  return out;
}

static bool packable_weight(const GraphTensor *t) {
  return t && t->rank == 3 && dtype_eq(t->dtype, DT_F32) && t->data;
}

loom_status graph_pass_pack_rnn(Graph *g, LoomError *err) {
  bool any = false;
  for (int i = 0; i < g->nnodes; i++) {
    GraphOp op = g->nodes[i].op;
    if ((op != GRAPH_OP_LSTM && op != GRAPH_OP_GRU && op != GRAPH_OP_RNN) || g->nodes[i].ninputs < 3 ||
        graph_node_int(&g->nodes[i], "weights_transposed"))
      continue;
    const GraphTensor *w = graph_value_constant(g, g->nodes[i].inputs[1]),
                      *r = graph_value_constant(g, g->nodes[i].inputs[2]);
    if (!packable_weight(w) || !packable_weight(r)) continue;
    ValueId wv = g->nodes[i].inputs[1], rv = g->nodes[i].inputs[2];
    ValueId wt = graph_add_constant_derived(g, g->values[wv].name, "t", transpose_last2(g, w));
    ValueId rt = graph_add_constant_derived(g, g->values[rv].name, "t", transpose_last2(g, r));
    GraphNode *n = &g->nodes[i];
    ValueId *inputs = arena_alloc(g->arena, sizeof(ValueId) * (size_t)n->ninputs);
    memcpy(inputs, n->inputs, sizeof(ValueId) * (size_t)n->ninputs);
    inputs[1] = wt, inputs[2] = rt;
    n->inputs = inputs;
    graph_node_set_attr(g, n, graph_attr_make_int(g, "weights_transposed", 1));
    any = true;
  }
  if (!any) return LOOM_OK;
  loom_status st = graph_pass_infer(g, err);
  return st ? st : graph_verify(g, err);
}
