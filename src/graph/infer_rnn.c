/* Inference for the recurrent ops RNN, GRU and LSTM (one inference for the
 * three; they differ in the number of gates):
 *   X [T, B, I] (layout 0) or [B, T, I] (layout 1), W [D, G*H, I],
 *   R [D, G*H, H], B? [D, 2*G*H], sequence_lens? [B], initial_h? [D, B, H]
 *   (layout 1: [B, D, H]), LSTM also initial_c? and P? [D, 3*H]; with
 *   weights_transposed = 1 (pass_pack_rnn.c) W [D, I, G*H], R [D, H, G*H]
 *   -> Y [T, D, B, H] (layout 1: [B, T, D, H]), Y_h [D, B, H] (layout 1:
 *   [B, D, H]), LSTM also Y_c like Y_h. */
#include "graph/infer_internal.h"

#include <string.h>

static int rnn_gates(GraphOp op) { return op == GRAPH_OP_LSTM ? 4 : op == GRAPH_OP_GRU ? 3 : 1; }

static loom_status check_dims(const Graph *g, const GraphNode *n, LoomError *err, int k, const char *what, int rank,
                              const int64_t *want) {
  const GraphValue *v = infer_input(g, n, k);
  if (!v || v->rank < 0) return LOOM_OK;
  if (v->rank != rank) return infer_fail(g, n, err, "%s (\"%s\") has rank %d, expected %d", what, v->name, v->rank, rank);
  for (int d = 0; d < rank; d++)
    if (v->dims[d] >= 0 && want[d] >= 0 && v->dims[d] != want[d])
      return infer_fail(g, n, err, "%s (\"%s\") has extent %lld in dimension %d, expected %lld", what, v->name,
                        (long long)v->dims[d], d, (long long)want[d]);
  return LOOM_OK;
}

loom_status infer_rnn(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 3) return infer_fail(g, n, err, "expected X, W and R");
  for (int k = 0; k < 3; k++)
    if (!infer_known(g, n, k)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0), *w = infer_input(g, n, 1), *r = infer_input(g, n, 2);
  if (x->rank != 3 || w->rank != 3 || r->rank != 3) return infer_fail(g, n, err, "X, W and R must have rank 3");
  for (int k = 1; k < n->ninputs; k++) {
    const GraphValue *v = infer_input(g, n, k);
    if (k != 4 && v && v->dtype.bits && !dtype_eq(v->dtype, x->dtype))
      return infer_fail(g, n, err, "input %d (\"%s\") has a different dtype than X", k, v->name);
  }
  int64_t layout = graph_node_int(n, "layout");
  if (layout != 0 && layout != 1) return infer_fail(g, n, err, "layout %lld is not 0 or 1", (long long)layout);
  const char *dir = graph_node_string(n, "direction");
  if (strcmp(dir, "forward") && strcmp(dir, "reverse") && strcmp(dir, "bidirectional"))
    return infer_fail(g, n, err, "direction \"%s\" is not forward, reverse or bidirectional", dir);
  int64_t nd = !strcmp(dir, "bidirectional") ? 2 : 1;
  int64_t gates = rnn_gates(n->op);
  /* weights_transposed (pass_pack_rnn.c): W [D, I, G*H], R [D, H, G*H]. */
  bool tr = graph_node_int(n, "weights_transposed") != 0;
  int64_t h = graph_attr_int(n, "hidden_size", r->dims[tr ? 1 : 2]);
  if (h < 1) return infer_fail(g, n, err, "hidden_size must be positive");
  int64_t t = x->dims[layout ? 1 : 0], b = x->dims[layout ? 0 : 1], in = x->dims[2];
  int64_t gh = gates * h, wd[3] = {nd, tr ? in : gh, tr ? gh : in}, rd[3] = {nd, tr ? h : gh, tr ? gh : h}, bd[2] = {nd, 2 * gh}, sl[1] = {b};
  int64_t hd[3] = {nd, b, h}, hd1[3] = {b, nd, h}, pd[2] = {nd, 3 * h};
  loom_status st;
  if ((st = check_dims(g, n, err, 1, "W", 3, wd)) || (st = check_dims(g, n, err, 2, "R", 3, rd)) ||
      (st = check_dims(g, n, err, 3, "B", 2, bd)) || (st = check_dims(g, n, err, 4, "sequence_lens", 1, sl)) ||
      (st = check_dims(g, n, err, 5, "initial_h", 3, layout ? hd1 : hd)))
    return st;
  if (n->op == GRAPH_OP_LSTM &&
      ((st = check_dims(g, n, err, 6, "initial_c", 3, layout ? hd1 : hd)) || (st = check_dims(g, n, err, 7, "P", 2, pd))))
    return st;
  const GraphValue *seq = infer_input(g, n, 4);
  if (seq && seq->dtype.bits && !dtype_is_int(seq->dtype)) return infer_fail(g, n, err, "sequence_lens must be integers");
  int64_t y0[4] = {t, nd, b, h}, y1[4] = {b, t, nd, h};
  infer_set(g, n, 0, x->dtype, 4, layout ? y1 : y0);
  infer_set(g, n, 1, x->dtype, 3, layout ? hd1 : hd);
  if (n->op == GRAPH_OP_LSTM) infer_set(g, n, 2, x->dtype, 3, layout ? hd1 : hd);
  return LOOM_OK;
}
