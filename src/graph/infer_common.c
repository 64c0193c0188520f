/* Helpers shared by the inference functions, and the elementwise and
 * broadcasting ops' inference. */
#include "graph/infer_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

loom_status infer_fail(const Graph *g, const GraphNode *n, LoomError *err, const char *fmt, ...) {
  (void)g;
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return err_set(err, LOOM_ERR_INVALID_ARG, "node \"%s\" (%s): %s", n->name, graph_op_info(n->op)->name, msg);
}

const GraphValue *infer_input(const Graph *g, const GraphNode *n, int k) {
  if (k >= n->ninputs || n->inputs[k] < 0) return NULL;
  return &g->values[n->inputs[k]];
}

bool infer_known(const Graph *g, const GraphNode *n, int k) {
  const GraphValue *v = infer_input(g, n, k);
  return v && v->rank >= 0 && v->dtype.bits != 0;
}

bool infer_const_ints(const Graph *g, ValueId v, int64_t **out, int *count) {
  const GraphTensor *t = graph_value_constant(g, v);
  if (!t || !dtype_is_int(t->dtype) || t->rank > 1) return false;
  int64_t n = graph_tensor_numel(t);
  if (n < 0 || n > (1 << 20)) return false;
  int64_t *p = ARENA_ARRAY(g->arena, int64_t, n);
  for (int64_t k = 0; k < n; k++) p[k] = graph_tensor_get_i64(t, k);
  *out = p;
  *count = (int)n;
  return true;
}

loom_status infer_axis(const Graph *g, const GraphNode *n, LoomError *err, int64_t axis, int rank, int *out) {
  if (axis < -(int64_t)rank || axis >= rank)
    return infer_fail(g, n, err, "axis %lld is out of range for rank %d", (long long)axis, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return LOOM_OK;
}

void infer_set(Graph *g, GraphNode *n, int k, DType dtype, int rank, const int64_t *dims) {
  if (k < n->noutputs && n->outputs[k] >= 0) graph_set_type(g, n->outputs[k], dtype, rank, dims);
}

const int64_t *infer_attr_ints(const GraphNode *n, const char *name, int *count) {
  const GraphAttr *a = graph_node_attr(n, name);
  if (!a || a->kind != GRAPH_ATTR_INTS) {
    *count = 0;
    return NULL;
  }
  *count = a->n;
  return a->ints;
}

loom_status infer_broadcast_shapes(const Graph *g, const GraphNode *n, LoomError *err, int ra, const int64_t *a, int rb,
                                   const int64_t *b, int *rout, int64_t *out) {
  int r = ra > rb ? ra : rb;
  if (r > INFER_MAX_RANK) return infer_fail(g, n, err, "rank %d exceeds the supported %d", r, INFER_MAX_RANK);
  for (int k = 0; k < r; k++) {
    int ia = k - (r - ra), ib = k - (r - rb);
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    int64_t d;
    if (da == 1) d = db;
    else if (db == 1) d = da;
    else if (da < 0) d = db;
    else if (db < 0) d = da;
    else if (da == db) d = da;
    else
      return infer_fail(g, n, err, "cannot broadcast extent %lld with %lld at output dimension %d", (long long)da,
                        (long long)db, k);
    out[k] = d;
  }
  *rout = r;
  return LOOM_OK;
}

static loom_status broadcast_all(Graph *g, GraphNode *n, LoomError *err, int first, DType out_dtype) {
  int rank = 0;
  int64_t dims[INFER_MAX_RANK];
  for (int k = first; k < n->ninputs; k++) {
    if (!infer_known(g, n, k)) return LOOM_OK;
    const GraphValue *v = infer_input(g, n, k);
    int64_t tmp[INFER_MAX_RANK];
    int rt;
    loom_status st = infer_broadcast_shapes(g, n, err, rank, dims, v->rank, v->dims, &rt, tmp);
    if (st) return st;
    rank = rt;
    memcpy(dims, tmp, sizeof(int64_t) * (size_t)rank);
  }
  infer_set(g, n, 0, out_dtype, rank, dims);
  return LOOM_OK;
}

loom_status infer_unary(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 1 || n->inputs[0] < 0) return infer_fail(g, n, err, "missing input 0");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  infer_set(g, n, 0, x->dtype, x->rank, x->dims);
  return LOOM_OK;
}

loom_status infer_dropout(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  infer_set(g, n, 0, x->dtype, x->rank, x->dims);
  infer_set(g, n, 1, DT_BOOL1, x->rank, x->dims);
  (void)err;
  return LOOM_OK;
}

/* Binary ops take exactly two inputs; Sum, Max, Min and Mean are variadic. */
static loom_status check_arity(Graph *g, GraphNode *n, LoomError *err) {
  bool variadic = n->op == GRAPH_OP_SUM || n->op == GRAPH_OP_MAX || n->op == GRAPH_OP_MIN || n->op == GRAPH_OP_MEAN;
  if (variadic ? n->ninputs < 1 : n->ninputs != 2)
    return infer_fail(g, n, err, "expected %s inputs, got %d", variadic ? "at least 1" : "2", n->ninputs);
  for (int k = 0; k < n->ninputs; k++)
    if (n->inputs[k] < 0) return infer_fail(g, n, err, "input %d is missing", k);
  return LOOM_OK;
}

loom_status infer_broadcast(Graph *g, GraphNode *n, LoomError *err) {
  loom_status st = check_arity(g, n, err);
  if (st) return st;
  if (!infer_known(g, n, 0)) return LOOM_OK;
  DType t = infer_input(g, n, 0)->dtype;
  for (int k = 1; k < n->ninputs; k++) {
    const GraphValue *v = infer_input(g, n, k);
    /* Pow's exponent may have its own type; every other op needs one type. */
    if (n->op != GRAPH_OP_POW && v && v->dtype.bits && !dtype_eq(v->dtype, t)) {
      char b1[16], b2[16];
      return infer_fail(g, n, err, "input %d \"%s\" has dtype %s but input 0 has %s", k, v->name, dtype_str(v->dtype, b1),
                        dtype_str(t, b2));
    }
  }
  return broadcast_all(g, n, err, 0, t);
}

loom_status infer_compare(Graph *g, GraphNode *n, LoomError *err) {
  loom_status st = check_arity(g, n, err);
  return st ? st : broadcast_all(g, n, err, 0, DT_BOOL1);
}

loom_status infer_where(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 3 || n->inputs[0] < 0 || n->inputs[1] < 0 || n->inputs[2] < 0)
    return infer_fail(g, n, err, "expected 3 inputs, got %d", n->ninputs);
  if (!infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *c = infer_input(g, n, 0);
  if (c->dtype.bits && !dtype_is_bool(c->dtype)) return infer_fail(g, n, err, "condition \"%s\" must be bool", c->name);
  return broadcast_all(g, n, err, 0, infer_input(g, n, 1)->dtype);
}

loom_status infer_cast(Graph *g, GraphNode *n, LoomError *err) {
  DType to;
  const char *s = graph_attr_string(n, "to", NULL);
  if (!s || !dtype_parse(s, &to)) return infer_fail(g, n, err, "attribute \"to\" is missing or not a dtype");
  const GraphValue *x = infer_input(g, n, 0);
  if (!x) return infer_fail(g, n, err, "missing input");
  infer_set(g, n, 0, to, x->rank, x->dims);
  return LOOM_OK;
}

/* If/Loop/Scan outputs are known once the importer has inlined them. */
loom_status infer_control_flow(Graph *g, GraphNode *n, LoomError *err) {
  (void)g, (void)n, (void)err;
  return LOOM_OK;
}
