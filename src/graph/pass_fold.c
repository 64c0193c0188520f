/* Constant folding of shape metadata. Exporters compute reshape targets at
 * run time (Shape -> Gather -> Unsqueeze -> Concat -> Reshape); with static
 * input shapes all of that is known at compile time. A small host evaluator
 * covers the ops such chains use; it is compile-time metadata evaluation,
 * not a kernel library, so it only runs on small tensors, except for ops
 * that merely reinterpret a constant (Reshape, Squeeze...), which share the
 * data whatever its size.
 *
 * The limits (docs/graph.md, "Constant folding"): FOLD_MAX_ELEMS per
 * evaluated output, and FOLD_MAX_WEIGHT_ELEMS for a value that ends up as
 * a weight operand (Conv's W and B, Gemm's B and C, MatMul's B,
 * BatchNormalization's parameters...), directly or through foldable ops:
 * Caffe2-era exports and ONNX's "light" models make their conv weights
 * with ConstantOfShape, and a conv gets its NCHWc schedule only from a
 * constant weight, which the layout pass prepacks at compile time. Such a
 * weight's bytes are in the artifact whichever way it is stored, so
 * materializing it costs nothing an initializer would not. Any other large
 * result (a fill added to activations, a mask, a long Range) is left to
 * its node, which has a compute like every op (a fill or an iota kernel
 * that fusion can join to its consumer), rather than stored as a big
 * constant (XLA does not fold large broadcasts or iotas, for the same
 * reason). Past a limit a node simply stays unfolded: never an error. */
#include "graph/graph.h"
#include "graph/graph_dynamic.h"
#include "graph/infer_internal.h"
#include "support/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FOLD_MAX_ELEMS 65536
#define FOLD_MAX_WEIGHT_ELEMS ((int64_t)1 << 26) /* 256 MiB of f32 */

typedef struct FoldCtx {
  Graph *g;
  GraphNode *n;
  LoomError *err;
  const bool *weight; /* per value: it feeds a weight operand (weight_values) */
  int nweight;
} FoldCtx;

static const GraphTensor *in_t(FoldCtx *c, int k) { return graph_value_constant(c->g, k < c->n->ninputs ? c->n->inputs[k] : -1); }

static GraphTensor *out_t(FoldCtx *c, int k) {
  const GraphValue *v = &c->g->values[c->n->outputs[k]];
  return graph_tensor_new(c->g->arena, v->dtype, v->rank, v->dims);
}

/* Offset into an input broadcast against the output index `idx`. */
static int64_t bcast_offset(const int64_t *idx, int orank, const GraphTensor *t) {
  int64_t off = 0, stride = 1;
  for (int k = t->rank - 1; k >= 0; k--) {
    int ok = k + (orank - t->rank);
    int64_t i = t->dims[k] == 1 ? 0 : idx[ok];
    off += i * stride;
    stride *= t->dims[k];
  }
  return off;
}

static void index_next(int64_t *idx, const GraphTensor *t) {
  for (int k = t->rank - 1; k >= 0; k--) {
    if (++idx[k] < t->dims[k]) return;
    idx[k] = 0;
  }
}

static bool fold_int_binary(GraphOp op, int64_t a, int64_t b, int64_t *r) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
  case GRAPH_OP_ADD: *r = (int64_t)(ua + ub); return true;
  case GRAPH_OP_SUB: *r = (int64_t)(ua - ub); return true;
  case GRAPH_OP_MUL: *r = (int64_t)(ua * ub); return true;
  case GRAPH_OP_DIV:
    if (b == 0 || (a == INT64_MIN && b == -1)) return false;
    *r = a / b; /* ONNX integer Div truncates, as C does */
    return true;
  case GRAPH_OP_MAX: *r = a > b ? a : b; return true;
  case GRAPH_OP_MIN: *r = a < b ? a : b; return true;
  case GRAPH_OP_EQUAL: *r = a == b; return true;
  case GRAPH_OP_LESS: *r = a < b; return true;
  case GRAPH_OP_GREATER: *r = a > b; return true;
  case GRAPH_OP_GREATER_OR_EQUAL: *r = a >= b; return true;
  case GRAPH_OP_LESS_OR_EQUAL: *r = a <= b; return true;
  case GRAPH_OP_AND: *r = a && b; return true;
  case GRAPH_OP_OR: *r = a || b; return true;
  case GRAPH_OP_XOR: *r = !a != !b; return true;
  case GRAPH_OP_MOD: /* floor mod (fmod = 0; fold_elementwise handles fmod = 1) */
    if (b == 0 || b == -1) *r = 0;
    else *r = a % b + ((a % b != 0 && (a % b < 0) != (b < 0)) ? b : 0);
    return true;
  default: return false;
  }
}

static bool fold_float_binary(GraphOp op, double a, double b, double *r) {
  switch (op) {
  case GRAPH_OP_ADD: *r = a + b; return true;
  case GRAPH_OP_SUB: *r = a - b; return true;
  case GRAPH_OP_MUL: *r = a * b; return true;
  case GRAPH_OP_DIV: *r = a / b; return true;
  case GRAPH_OP_POW: *r = pow(a, b); return true;
  case GRAPH_OP_MAX: *r = a > b ? a : b; return true;
  case GRAPH_OP_MIN: *r = a < b ? a : b; return true;
  case GRAPH_OP_EQUAL: *r = a == b; return true;
  case GRAPH_OP_LESS: *r = a < b; return true;
  case GRAPH_OP_GREATER: *r = a > b; return true;
  case GRAPH_OP_GREATER_OR_EQUAL: *r = a >= b; return true;
  case GRAPH_OP_LESS_OR_EQUAL: *r = a <= b; return true;
  case GRAPH_OP_MOD: *r = a - floor(a / b) * b; return true;
  default: return false;
  }
}

static bool fold_elementwise(FoldCtx *c, GraphTensor *o) {
  const GraphNode *n = c->n;
  int64_t count = graph_tensor_numel(o);
  int64_t idx[INFER_MAX_RANK] = {0};
  const GraphTensor *a = in_t(c, 0), *b = n->ninputs > 1 ? in_t(c, 1) : NULL, *w = n->ninputs > 2 ? in_t(c, 2) : NULL;
  bool as_int = dtype_is_int(a->dtype) || dtype_is_bool(a->dtype);
  if (n->op == GRAPH_OP_WHERE) as_int = dtype_is_int(b->dtype) || dtype_is_bool(b->dtype);
  for (int64_t k = 0; k < count; k++, index_next(idx, o)) {
    int64_t oa = bcast_offset(idx, o->rank, a);
    if (n->op == GRAPH_OP_WHERE) {
      const GraphTensor *src = graph_tensor_get_i64(a, oa) ? b : w;
      int64_t os = bcast_offset(idx, o->rank, src);
      if (as_int) graph_tensor_set_i64(o, k, graph_tensor_get_i64(src, os));
      else graph_tensor_set_f64(o, k, graph_tensor_get_f64(src, os));
    } else if (n->op == GRAPH_OP_CAST || n->op == GRAPH_OP_NEG || n->op == GRAPH_OP_ABS || n->op == GRAPH_OP_NOT ||
               n->op == GRAPH_OP_SQRT || n->op == GRAPH_OP_RELU || n->op == GRAPH_OP_FLOOR || n->op == GRAPH_OP_CEIL) {
      if (as_int && !dtype_is_float(o->dtype)) {
        int64_t x = graph_tensor_get_i64(a, oa);
        switch (n->op) {
        case GRAPH_OP_NEG: x = (int64_t)(0 - (uint64_t)x); break;
        case GRAPH_OP_ABS: x = x < 0 ? (int64_t)(0 - (uint64_t)x) : x; break;
        case GRAPH_OP_NOT: x = !x; break;
        case GRAPH_OP_RELU: x = x < 0 ? 0 : x; break;
        case GRAPH_OP_SQRT: return false;
        default: break;
        }
        graph_tensor_set_i64(o, k, x);
      } else {
        double x = graph_tensor_get_f64(a, oa);
        switch (n->op) {
        case GRAPH_OP_NEG: x = -x; break;
        case GRAPH_OP_ABS: x = fabs(x); break;
        case GRAPH_OP_NOT: x = !x; break;
        case GRAPH_OP_RELU: x = x < 0 ? 0 : x; break;
        case GRAPH_OP_SQRT: x = sqrt(x); break;
        case GRAPH_OP_FLOOR: x = floor(x); break;
        case GRAPH_OP_CEIL: x = ceil(x); break;
        default: break;
        }
        if (dtype_is_float(o->dtype)) graph_tensor_set_f64(o, k, x);
        else if (dtype_is_bool(o->dtype)) graph_tensor_set_i64(o, k, x != 0);
        else if (!(x == x) || x >= 9.2e18 || x <= -9.2e18) return false;
        else graph_tensor_set_i64(o, k, (int64_t)x);
      }
    } else {
      int64_t ob = bcast_offset(idx, o->rank, b);
      bool fmod_ = n->op == GRAPH_OP_MOD && graph_node_int(n, "fmod");
      if (as_int) {
        int64_t r, x = graph_tensor_get_i64(a, oa), y = graph_tensor_get_i64(b, ob);
        if (fmod_) r = y == 0 || y == -1 ? 0 : x % y; /* C's %, as the compiled Mod (fmod = 1) */
        else if (!fold_int_binary(n->op, x, y, &r)) return false;
        graph_tensor_set_i64(o, k, r);
      } else {
        double r, x = graph_tensor_get_f64(a, oa), y = graph_tensor_get_f64(b, ob);
        if (fmod_) r = fmod(x, y);
        else if (!fold_float_binary(n->op, x, y, &r)) return false;
        graph_tensor_set_f64(o, k, r);
      }
    }
  }
  return true;
}

static void copy_elem(GraphTensor *o, int64_t ko, const GraphTensor *x, int64_t kx) {
  size_t eb = (size_t)dtype_bytes(o->dtype);
  memcpy((uint8_t *)o->data + (size_t)ko * eb, (const uint8_t *)x->data + (size_t)kx * eb, eb);
}

/* Row-major offset of idx in t. */
static int64_t offset_of(const int64_t *idx, const GraphTensor *t) {
  int64_t off = 0;
  for (int k = 0; k < t->rank; k++) off = off * t->dims[k] + idx[k];
  return off;
}

static bool fold_gather(FoldCtx *c, GraphTensor *o) {
  const GraphTensor *x = in_t(c, 0), *ind = in_t(c, 1);
  int axis = (int)graph_node_int(c->n, "axis");
  if (axis < 0) axis += x->rank;
  int64_t outer = graph_shape_numel(axis, x->dims), inner = graph_shape_numel(x->rank - axis - 1, x->dims + axis + 1);
  int64_t nind = graph_tensor_numel(ind), ext = x->dims[axis];
  for (int64_t i = 0; i < outer; i++)
    for (int64_t j = 0; j < nind; j++) {
      int64_t v = graph_tensor_get_i64(ind, j);
      if (v < 0) v += ext;
      if (v < 0 || v >= ext) {
        infer_fail(c->g, c->n, c->err, "index %lld is out of range for extent %lld", (long long)graph_tensor_get_i64(ind, j),
                   (long long)ext);
        return false;
      }
      for (int64_t k = 0; k < inner; k++) copy_elem(o, (i * nind + j) * inner + k, x, (i * ext + v) * inner + k);
    }
  return true;
}

static void fold_concat(FoldCtx *c, GraphTensor *o) {
  int axis = (int)graph_attr_int(c->n, "axis", 0);
  if (axis < 0) axis += o->rank;
  int64_t outer = graph_shape_numel(axis, o->dims), inner = graph_shape_numel(o->rank - axis - 1, o->dims + axis + 1);
  int64_t at = 0;
  for (int k = 0; k < c->n->ninputs; k++) {
    const GraphTensor *x = in_t(c, k);
    int64_t ext = x->dims[axis];
    for (int64_t i = 0; i < outer; i++)
      for (int64_t j = 0; j < ext * inner; j++) copy_elem(o, (i * o->dims[axis] + at) * inner + j, x, i * ext * inner + j);
    at += ext;
  }
}

static void fold_slice(FoldCtx *c, GraphTensor *o) {
  const GraphTensor *x = in_t(c, 0);
  int64_t start[INFER_MAX_RANK] = {0}, step[INFER_MAX_RANK];
  for (int k = 0; k < x->rank; k++) step[k] = 1;
  int64_t *starts, *ends, *axes = NULL, *steps = NULL;
  int ns, na, nst;
  infer_const_ints(c->g, c->n->inputs[1], &starts, &ns);
  infer_const_ints(c->g, c->n->inputs[2], &ends, &ns);
  if (c->n->ninputs > 3 && c->n->inputs[3] >= 0) infer_const_ints(c->g, c->n->inputs[3], &axes, &na);
  if (c->n->ninputs > 4 && c->n->inputs[4] >= 0) infer_const_ints(c->g, c->n->inputs[4], &steps, &nst);
  for (int k = 0; k < ns; k++) {
    int64_t ax = axes ? axes[k] : k;
    if (ax < 0) ax += x->rank;
    int64_t s = starts[k], e = ends[k], cnt;
    step[ax] = steps ? steps[k] : 1;
    graph_slice_bounds(x->dims[ax], step[ax], &s, &e, &cnt);
    start[ax] = s;
  }
  int64_t idx[INFER_MAX_RANK] = {0}, src[INFER_MAX_RANK];
  int64_t count = graph_tensor_numel(o);
  for (int64_t k = 0; k < count; k++, index_next(idx, o)) {
    for (int d = 0; d < x->rank; d++) src[d] = start[d] + idx[d] * step[d];
    copy_elem(o, k, x, offset_of(src, x));
  }
}

static void fold_transpose(FoldCtx *c, GraphTensor *o) {
  const GraphTensor *x = in_t(c, 0);
  int cnt;
  const int64_t *perm = infer_attr_ints(c->n, "perm", &cnt);
  int64_t idx[INFER_MAX_RANK] = {0}, src[INFER_MAX_RANK];
  int64_t count = graph_tensor_numel(o);
  for (int64_t k = 0; k < count; k++, index_next(idx, o)) {
    for (int d = 0; d < o->rank; d++) src[perm ? perm[d] : o->rank - 1 - d] = idx[d];
    copy_elem(o, k, x, offset_of(src, x));
  }
}

static void fold_expand(FoldCtx *c, GraphTensor *o) {
  const GraphTensor *x = in_t(c, 0);
  int64_t idx[INFER_MAX_RANK] = {0};
  int64_t count = graph_tensor_numel(o);
  for (int64_t k = 0; k < count; k++, index_next(idx, o)) copy_elem(o, k, x, bcast_offset(idx, o->rank, x));
}

static bool fold_range(FoldCtx *c, GraphTensor *o) {
  int64_t count = graph_tensor_numel(o);
  if (dtype_is_int(o->dtype)) {
    int64_t s = graph_tensor_get_i64(in_t(c, 0), 0), d = graph_tensor_get_i64(in_t(c, 2), 0);
    for (int64_t k = 0; k < count; k++) graph_tensor_set_i64(o, k, (int64_t)((uint64_t)s + (uint64_t)k * (uint64_t)d));
  } else {
    double s = graph_tensor_get_f64(in_t(c, 0), 0), d = graph_tensor_get_f64(in_t(c, 2), 0);
    for (int64_t k = 0; k < count; k++) graph_tensor_set_f64(o, k, s + (double)k * d);
  }
  return true;
}

static bool is_reinterpret(GraphOp op) {
  return op == GRAPH_OP_RESHAPE || op == GRAPH_OP_SQUEEZE || op == GRAPH_OP_UNSQUEEZE || op == GRAPH_OP_FLATTEN ||
         op == GRAPH_OP_IDENTITY;
}

static bool is_foldable(GraphOp op) {
  switch (op) {
  case GRAPH_OP_SHAPE: case GRAPH_OP_GATHER: case GRAPH_OP_CONCAT: case GRAPH_OP_SLICE: case GRAPH_OP_CAST:
  case GRAPH_OP_ADD: case GRAPH_OP_SUB: case GRAPH_OP_MUL: case GRAPH_OP_DIV: case GRAPH_OP_POW: case GRAPH_OP_MAX:
  case GRAPH_OP_MIN: case GRAPH_OP_EQUAL: case GRAPH_OP_LESS: case GRAPH_OP_GREATER: case GRAPH_OP_AND: case GRAPH_OP_OR:
  case GRAPH_OP_WHERE: case GRAPH_OP_NEG: case GRAPH_OP_ABS: case GRAPH_OP_NOT: case GRAPH_OP_SQRT: case GRAPH_OP_RELU:
  case GRAPH_OP_FLOOR: case GRAPH_OP_CEIL: case GRAPH_OP_CONSTANT_OF_SHAPE: case GRAPH_OP_EXPAND: case GRAPH_OP_RANGE:
  case GRAPH_OP_TRANSPOSE: case GRAPH_OP_SIZE: case GRAPH_OP_MOD: case GRAPH_OP_GREATER_OR_EQUAL:
  case GRAPH_OP_LESS_OR_EQUAL: case GRAPH_OP_XOR:
    return true;
  default:
    return is_reinterpret(op);
  }
}

/* The most elements node c->n may evaluate into value v. */
static int64_t fold_limit(const FoldCtx *c, ValueId v) {
  return v >= 0 && v < c->nweight && c->weight[v] ? FOLD_MAX_WEIGHT_ELEMS : FOLD_MAX_ELEMS;
}

/* Split of a small constant (shape arithmetic: [N, C, H, W] into its
 * extents): every output is the input's slab at its offset along axis. */
static bool fold_split(FoldCtx *c) {
  Graph *g = c->g;
  const GraphNode *n = c->n;
  const GraphTensor *x = in_t(c, 0);
  if (!x || graph_tensor_numel(x) > fold_limit(c, n->inputs[0])) return false;
  for (int k = 1; k < n->ninputs; k++)
    if (n->inputs[k] >= 0 && !in_t(c, k)) return false;
  for (int k = 0; k < n->noutputs; k++)
    if (n->outputs[k] < 0 || !graph_value_is_static(&g->values[n->outputs[k]])) return false;
  int axis = (int)graph_attr_int(n, "axis", 0);
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= x->rank) return false;
  int64_t at = 0;
  for (int k = 0; k < n->noutputs; k++) {
    GraphTensor *o = out_t(c, k);
    int64_t idx[INFER_MAX_RANK] = {0}, src[INFER_MAX_RANK];
    int64_t count = graph_tensor_numel(o);
    for (int64_t e = 0; e < count; e++, index_next(idx, o)) {
      memcpy(src, idx, sizeof(int64_t) * (size_t)x->rank);
      src[axis] += at;
      copy_elem(o, e, x, offset_of(src, x));
    }
    at += o->dims[axis];
    g->values[n->outputs[k]].constant = o;
  }
  return true;
}

/* Folds node c->n if possible: true when its outputs became constants. A
 * false return with err set is an error (an out-of-range constant index). */
static bool fold_node(FoldCtx *c) {
  GraphNode *n = c->n;
  Graph *g = c->g;
  GraphTensor *empty = graph_fold_empty_reduce(g, n); /* fold_reduce.c */
  if (empty) {
    g->values[n->outputs[0]].constant = empty;
    return true;
  }
  if (n->op == GRAPH_OP_SPLIT) return fold_split(c);
  if (!is_foldable(n->op) || n->noutputs != 1 || n->outputs[0] < 0) return false;
  const GraphValue *ov = &g->values[n->outputs[0]];
  if (!graph_value_is_static(ov)) return false;
  int64_t count = graph_shape_numel(ov->rank, ov->dims);
  /* The shape of a data-dependent output is known only at run time. */
  if ((n->op == GRAPH_OP_SHAPE || n->op == GRAPH_OP_SIZE) && graph_value_is_data_dependent(g, n->inputs[0]))
    return false;
  if (n->op == GRAPH_OP_SHAPE) {
    const GraphValue *x = infer_input(g, n, 0);
    if (!graph_value_is_static(x) && !(x->rank >= 0 && count >= 0)) return false;
    int64_t start = graph_attr_int(n, "start", 0);
    if (start < 0) start += x->rank;
    if (start < 0) start = 0;
    for (int64_t k = 0; k < count; k++)
      if (x->dims[start + k] < 0) return false;
    GraphTensor *o = out_t(c, 0);
    for (int64_t k = 0; k < count; k++) graph_tensor_set_i64(o, k, x->dims[start + k]);
    g->values[n->outputs[0]].constant = o;
    return true;
  }
  if (n->op == GRAPH_OP_SIZE) {
    const GraphValue *x = infer_input(g, n, 0);
    int64_t numel = x->rank >= 0 ? graph_shape_numel(x->rank, x->dims) : -1;
    if (numel < 0) return false;
    GraphTensor *o = out_t(c, 0);
    graph_tensor_set_i64(o, 0, numel);
    g->values[n->outputs[0]].constant = o;
    return true;
  }
  for (int k = 0; k < n->ninputs; k++)
    if (n->inputs[k] >= 0 && !graph_value_constant(g, n->inputs[k])) return false;
  if (n->ninputs < 1 && n->op != GRAPH_OP_CONSTANT_OF_SHAPE) return false;
  /* The evaluator's binary ops read exactly inputs 0 and 1 (variadic Sum,
   * Max and Min with other counts stay unfolded); omitted inputs of the
   * data-movement ops are handled by those ops themselves. */
  GraphOpPattern pat = graph_op_info(n->op)->pattern;
  if (pat == GRAPH_PATTERN_BROADCAST && n->op != GRAPH_OP_WHERE && n->op != GRAPH_OP_EXPAND && n->ninputs != 2) return false;
  if (pat == GRAPH_PATTERN_ELEMWISE && !is_reinterpret(n->op) && (n->inputs[0] < 0 || n->ninputs != 1)) return false;
  if (is_reinterpret(n->op)) {
    const GraphTensor *x = in_t(c, 0);
    GraphTensor *o = ARENA_NEW(g->arena, GraphTensor);
    *o = *x;
    o->rank = ov->rank;
    o->dims = ARENA_ARRAY(g->arena, int64_t, ov->rank);
    memcpy(o->dims, ov->dims, sizeof(int64_t) * (size_t)ov->rank);
    g->values[n->outputs[0]].constant = o;
    return true;
  }
  if (count > fold_limit(c, n->outputs[0])) return false;
  /* The evaluator computes in int64 or double; f16/bf16 values convert
   * exactly and round to nearest even on store, as kernels do. The 8- and
   * 4-bit types only move (a cast to them may saturate). */
  if (dtype_is_narrow(ov->dtype) && ov->dtype.bits < 16) return false;
  for (int k = 0; k < n->ninputs; k++) {
    const GraphTensor *t = in_t(c, k);
    if (t && dtype_is_narrow(t->dtype) && t->dtype.bits < 16 && n->op != GRAPH_OP_GATHER && n->op != GRAPH_OP_CONCAT &&
        n->op != GRAPH_OP_SLICE && n->op != GRAPH_OP_EXPAND && n->op != GRAPH_OP_TRANSPOSE)
      return false;
  }
  GraphTensor *o = out_t(c, 0);
  bool ok = true;
  switch (n->op) {
  case GRAPH_OP_GATHER: ok = fold_gather(c, o); break;
  case GRAPH_OP_CONCAT: fold_concat(c, o); break;
  case GRAPH_OP_SLICE: fold_slice(c, o); break;
  case GRAPH_OP_TRANSPOSE: fold_transpose(c, o); break;
  case GRAPH_OP_EXPAND: fold_expand(c, o); break;
  case GRAPH_OP_RANGE: ok = fold_range(c, o); break;
  case GRAPH_OP_CONSTANT_OF_SHAPE: {
    const GraphAttr *a = graph_node_attr(n, "value");
    for (int64_t k = 0; k < count; k++) {
      if (a) copy_elem(o, k, a->t, 0);
      else graph_tensor_set_f64(o, k, 0.0);
    }
    break;
  }
  default: ok = fold_elementwise(c, o); break;
  }
  if (!ok) return false;
  g->values[n->outputs[0]].constant = o;
  return true;
}

/* Per value: whether it reaches a weight operand, an input after the first
 * of an op that reads weights (conv, matmul, gemm: the
 * OUT_ELEMWISE_FUSABLE class) or a BatchNormalization parameter, either
 * directly or as an input of foldable nodes that do. One walk backwards
 * over the nodes (they are in topological order); Shape and Size read only
 * their input's shape, so the walk stops there. */
static bool *weight_values(const Graph *g) {
  bool *w = ARENA_ARRAY(g->arena, bool, g->nvalues + 1);
  for (int i = g->nnodes - 1; i >= 0; i--) {
    const GraphNode *n = &g->nodes[i];
    bool reads_weights =
        graph_op_info(n->op)->pattern == GRAPH_PATTERN_OUT_ELEMWISE_FUSABLE || n->op == GRAPH_OP_BATCH_NORM;
    bool feeds = false;
    if ((is_foldable(n->op) || n->op == GRAPH_OP_SPLIT) && n->op != GRAPH_OP_SHAPE && n->op != GRAPH_OP_SIZE)
      for (int k = 0; k < n->noutputs; k++)
        if (n->outputs[k] >= 0 && w[n->outputs[k]]) feeds = true;
    for (int k = 0; k < n->ninputs; k++)
      if (n->inputs[k] >= 0 && (feeds || (reads_weights && k >= 1))) w[n->inputs[k]] = true;
  }
  return w;
}

loom_status graph_pass_fold_constants(Graph *g, LoomError *err) {
  /* In the graph's arena: folding allocates there, and the recovery point
   * frees it whole if memory runs out (support/oom.h). */
  bool *remove = ARENA_ARRAY(g->arena, bool, g->nnodes + 1);
  const bool *weight = weight_values(g);
  int nweight = g->nvalues;
  loom_status st = LOOM_OK;
  if (err) err->status = LOOM_OK;
  for (int i = 0; i < g->nnodes; i++) {
    GraphNode *n = &g->nodes[i];
    st = graph_op_info(n->op)->infer(g, n, err);
    if (st) break;
    FoldCtx c = {g, n, err, weight, nweight};
    if (fold_node(&c)) {
      remove[i] = true;
    } else if (err && err->status) {
      st = err->status;
      break;
    }
  }
  if (!st) graph_remove_nodes(g, remove);
  return st;
}
