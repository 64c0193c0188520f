/* Inference of the arg-reductions (ArgMax, ArgMin) and the losses
 * (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss). The Reduce* ops
 * share infer_reduce (infer_nn.c); the softmax family, CumSum/CumProd and
 * the normalizations keep their input's type (infer_unary). */
#include "graph/infer_internal.h"

#include <string.h>

/* ArgMax/ArgMin: i64 indices; the axis is dropped or kept as 1. */
loom_status infer_arg_reduce(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  if (x->rank < 1) return infer_fail(g, n, err, "input must have rank >= 1");
  int axis;
  loom_status st = infer_axis(g, n, err, graph_node_int(n, "axis"), x->rank, &axis);
  if (st) return st;
  bool keep = graph_node_int(n, "keepdims") != 0;
  int64_t dims[INFER_MAX_RANK];
  int r = 0;
  for (int k = 0; k < x->rank; k++) {
    if (k != axis) dims[r++] = x->dims[k];
    else if (keep) dims[r++] = 1;
  }
  infer_set(g, n, 0, DT_I64, r, dims);
  return LOOM_OK;
}

/* Losses: scores/input [N, C, d1...], target [N, d1...]. The loss has the
 * target's shape (reduction "none") or is a scalar; SoftmaxCrossEntropyLoss's
 * optional second output (log_prob) has the scores' shape. */
loom_status infer_loss(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected inputs scores and labels");
  const char *red = graph_node_string(n, "reduction");
  if (strcmp(red, "none") && strcmp(red, "sum") && strcmp(red, "mean"))
    return infer_fail(g, n, err, "reduction \"%s\" is not one of none, sum, mean", red);
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank < 2 || x->rank > INFER_MAX_RANK)
    return infer_fail(g, n, err, "input must have rank 2..%d, got %d", INFER_MAX_RANK, x->rank);
  int64_t dims[INFER_MAX_RANK];
  int r = 0;
  for (int k = 0; k < x->rank; k++)
    if (k != 1) dims[r++] = x->dims[k];
  if (infer_known(g, n, 1)) {
    const GraphValue *t = infer_input(g, n, 1);
    bool ok = t->rank == r && dtype_is_int(t->dtype);
    for (int k = 0; ok && k < r; k++) ok = t->dims[k] < 0 || dims[k] < 0 || t->dims[k] == dims[k];
    if (!ok) return infer_fail(g, n, err, "labels must be integers of shape [N, d1, ...] matching the input");
  }
  infer_set(g, n, 0, x->dtype, strcmp(red, "none") ? 0 : r, dims);
  infer_set(g, n, 1, x->dtype, x->rank, x->dims);
  return LOOM_OK;
}
