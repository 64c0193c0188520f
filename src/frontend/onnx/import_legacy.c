/* ONNX opsets 1 to 6, by version adapters.
 *
 * Opset 7 replaced the limited broadcasting of opsets 1-6 (`broadcast` and
 * `axis` attributes) by numpy's rules, and opsets 2 to 6 changed a handful
 * of other signatures. A node of an opset before 7 is first rewritten into
 * its opset-7 form, the way ONNX's version converter would, and then
 * converted as an opset-7 node (import_ops.c takes it on to the newest
 * form). An operand aligned at `axis` needs the ranks of both operands,
 * which are not known at import: the alignment is a small shape computation
 * (Shape, Sub, Expand, Concat, Reshape, written in the newest opset) that
 * constant folding removes once shapes are inferred.
 *
 * Only the ops of `legacy_ops` are known at these opsets; every other op of
 * such a model is refused by name (onnx_check_supported), so that an old
 * form nobody checked never compiles to a different meaning. */
#include "frontend/onnx/import_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef struct Legacy {
  Importer *im;
  OnnxNode n; /* the node being rewritten, with its own inputs and attributes */
  loom_status st; /* sticky: the first error of a helper node */
} Legacy;

typedef loom_status (*AdaptFn)(Legacy *l);

/* One row per op with a form at opsets 1-6. `adapt` rewrites the forms of
 * opsets up to `upto` (the last opset before the signature changed); the
 * op's other old forms are already its opset-7 form. Every op also loses
 * `consumed_inputs` (opsets 1-5: an in-place hint). */
typedef struct LegacyOp {
  const char *op;
  int upto;
  AdaptFn adapt;
} LegacyOp;

static loom_status legacy_fail(Legacy *l, loom_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static loom_status legacy_fail(Legacy *l, loom_status st, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return err_set(l->im->err, st, "node \"%s\" (%s, opset %lld): %s", l->n.name, l->n.op_type, (long long)l->im->opset,
                 msg);
}

/* ---- the node's attributes ---- */

static OnnxAttr *find(Legacy *l, const char *name) {
  for (int k = 0; k < l->n.nattrs; k++)
    if (l->n.attrs[k].name && !strcmp(l->n.attrs[k].name, name)) return &l->n.attrs[k];
  return NULL;
}

static void drop(Legacy *l, const char *name) {
  OnnxAttr *a = find(l, name);
  if (a) *a = l->n.attrs[--l->n.nattrs];
}

/* Sets (replaces or adds) an attribute; room for 4 more was reserved. */
static void put(Legacy *l, OnnxAttr a) {
  OnnxAttr *old = find(l, a.name);
  if (old) *old = a;
  else l->n.attrs[l->n.nattrs++] = a;
}

/* The attribute when present and of type `type`; NULL when absent; an
 * error (l->st) when of another type. */
static const OnnxAttr *typed(Legacy *l, const char *name, int type) {
  const OnnxAttr *a = find(l, name);
  if (!a || l->st) return NULL;
  int t = onnx_attr_effective_type(a);
  if (t == type) return a;
  l->st = legacy_fail(l, LOOM_ERR_INVALID_ARG, "attribute \"%s\" has type %s, expected %s", name,
                      onnx_attr_type_name(t), onnx_attr_type_name(type));
  return NULL;
}

/* An INT attribute's value, `dflt` when absent. */
static int64_t int_attr(Legacy *l, const char *name, int64_t dflt) {
  const OnnxAttr *a = typed(l, name, ONNX_ATTR_INT);
  return a ? a->i : dflt;
}

static OnnxAttr make_int(const char *name, int64_t v) {
  OnnxAttr a = {.name = name, .type = ONNX_ATTR_INT, .i = v, .has_i = true};
  return a;
}

static OnnxAttr make_float(const char *name, double v) {
  OnnxAttr a = {.name = name, .type = ONNX_ATTR_FLOAT, .f = v, .has_f = true};
  return a;
}

/* ---- values the rewrite adds ---- */

/* "<node>/legacy/<what>", made unique among the names defined so far. */
static const char *fresh_name(Legacy *l, const char *what) {
  Arena *a = l->im->scratch;
  const char *base = arena_printf(a, "%s/legacy/%s", l->n.name, what);
  const char *s = base;
  for (int k = 1; namemap_get(&l->im->names, s) >= 0; k++) s = arena_printf(a, "%s%d", base, k);
  return s;
}

static const char *const_i64(Legacy *l, const char *what, const int64_t *v, int count) {
  Graph *g = l->im->g;
  int64_t dims[1] = {count};
  GraphTensor *t = graph_tensor_new(g->arena, DT_I64, 1, dims);
  for (int k = 0; k < count; k++) graph_tensor_set_i64(t, k, v[k]);
  ValueId id = graph_add_constant(g, fresh_name(l, what), t);
  namemap_put(&l->im->names, g->values[id].name, id);
  return g->values[id].name;
}

/* Converts a helper node, written in the newest opset; returns its output's
 * name ("" once an error is set). */
static const char *emit(Legacy *l, const char *op, const char *what, const char **ins, int nins, const OnnxAttr *attrs,
                        int nattrs) {
  if (l->st) return "";
  const char *name = fresh_name(l, what);
  const OnnxNode *n = onnx_node_new(l->im->scratch, name, op, ins, nins, name, attrs, nattrs);
  int64_t opset = l->im->opset;
  l->im->opset = ONNX_MAX_OPSET;
  l->st = onnx_convert_node(l->im, n);
  l->im->opset = opset;
  return l->st ? "" : n->name;
}

#define IN ONNX_NAMES
#define OP(l, op, what, ...) emit(l, op, what, IN(__VA_ARGS__), NULL, 0)

/* `count` ones (int64), count a 1-element int64 tensor. A negative count
 * (operands that do not fit) fails when folded, naming `what`. */
static const char *ones(Legacy *l, const char *what, const char *count) {
  static int64_t one = 1;
  static int64_t dims[1] = {1};
  OnnxTensor *t = ARENA_NEW(l->im->scratch, OnnxTensor);
  memset(t, 0, sizeof *t);
  t->name = "";
  t->data_type = ONNX_INT64;
  t->dims = dims;
  t->ndims = 1;
  t->int64_data.items = &one;
  t->int64_data.n = 1;
  t->ext_length = -1;
  OnnxAttr value = {.name = "value", .type = ONNX_ATTR_TENSOR, .t = t};
  return emit(l, "ConstantOfShape", what, IN(count), &value, 1);
}

/* The rank of a value when the importer knows it already (constants and
 * graph inputs), else -1. */
static int known_rank(Legacy *l, const char *name) {
  ValueId v = namemap_get(&l->im->names, name);
  return v >= 0 ? l->im->g->values[v].rank : -1;
}

/* b with trailing 1s added so that its dims line up with a's from dim
 * `axis` on: the opset 1-6 broadcast of B at `axis`. The count of 1s is
 * rank(a) - axis - rank(b); `clamp` makes a negative count 0 (b kept as
 * is), else it is an error when folded. A negative axis (counted from a's
 * end, as Caffe2 did) needs a's rank now. */
static const char *align_at(Legacy *l, const char *a, const char *b, int64_t axis, bool clamp) {
  int ra = known_rank(l, a), rb = known_rank(l, b);
  if (axis < 0 && ra >= 0 && axis + ra >= 0) axis += ra;
  if (axis < 0 && ra < 0 && !l->st)
    l->st = legacy_fail(l, LOOM_ERR_UNSUPPORTED,
                        "attribute \"axis\" is %lld: a negative axis needs the rank of \"%s\" when the model is read "
                        "(a graph input or a constant)",
                        (long long)axis, a);
  if (axis < 0 && !l->st)
    l->st = legacy_fail(l, LOOM_ERR_INVALID_ARG, "attribute \"axis\" is %lld: out of range for \"%s\" (rank %d)",
                        (long long)axis, a, ra);
  if (!clamp && ra >= 0 && rb >= 0 && ra - axis - rb < 0 && !l->st)
    l->st = legacy_fail(l, LOOM_ERR_INVALID_ARG,
                        "attribute \"axis\" is %lld: \"%s\" (rank %d) does not fit into \"%s\" (rank %d) from there",
                        (long long)axis, b, rb, a, ra);
  const char *bshape = OP(l, "Shape", "b_shape", b);
  const char *brank = OP(l, "Shape", "b_rank", bshape);
  const char *arank = OP(l, "Shape", "a_rank", OP(l, "Shape", "a_shape", a));
  const char *count = OP(l, "Sub", "count", OP(l, "Sub", "a_rest", arank, const_i64(l, "axis", &axis, 1)), brank);
  if (clamp) {
    static const int64_t zero = 0;
    count = OP(l, "Max", "count_clamped", count, const_i64(l, "zero", &zero, 1));
  }
  OnnxAttr axis0 = make_int("axis", 0);
  const char *shape = emit(l, "Concat", "aligned_shape", IN(bshape, ones(l, "broadcast_axis_ones", count)), &axis0, 1);
  return OP(l, "Reshape", "aligned", b, shape);
}

/* ---- adapters ---- */

/* Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal, Greater, Less (opsets 1-6):
 * broadcast=0 wants equal shapes, where numpy's rules give the same;
 * broadcast=1 without axis matches B's shape to A's trailing dims, as numpy
 * does; broadcast=1 with axis lines B up at that dim. */
static loom_status adapt_broadcast(Legacy *l) {
  int64_t bc = int_attr(l, "broadcast", 0);
  bool has_axis = typed(l, "axis", ONNX_ATTR_INT) != NULL;
  int64_t axis = int_attr(l, "axis", 0);
  if (l->st) return l->st;
  if (l->n.ninputs != 2 || !l->n.inputs[0][0] || !l->n.inputs[1][0])
    return legacy_fail(l, LOOM_ERR_INVALID_ARG, "expected 2 inputs, got %d", l->n.ninputs);
  if (bc && has_axis) l->n.inputs[1] = align_at(l, l->n.inputs[0], l->n.inputs[1], axis, false);
  drop(l, "broadcast");
  drop(l, "axis");
  return l->st;
}

/* PRelu (opsets 1-6): the slope is per channel (dim 1) or a single value;
 * from opset 7 it broadcasts numpy-style, so a [C] slope becomes [C,1,..]. */
static loom_status adapt_prelu(Legacy *l) {
  if (l->n.ninputs != 2 || !l->n.inputs[0][0] || !l->n.inputs[1][0])
    return legacy_fail(l, LOOM_ERR_INVALID_ARG, "expected 2 inputs (X, slope), got %d", l->n.ninputs);
  l->n.inputs[1] = align_at(l, l->n.inputs[0], l->n.inputs[1], 1, true);
  return l->st;
}

/* Gemm (opsets 1-6): `broadcast` allowed C to be broadcast to [M, N], which
 * opset 7 always allows. */
static loom_status adapt_gemm(Legacy *l) {
  int_attr(l, "broadcast", 0);
  drop(l, "broadcast");
  return l->st;
}

/* BatchNormalization (opsets 1-6): test mode is the one-output form; its
 * scale, B, mean and var are [C] whatever `spatial` says (spatial only
 * chose how training computed statistics). */
static loom_status adapt_batch_norm(Legacy *l) {
  int64_t is_test = int_attr(l, "is_test", 0);
  int64_t spatial = int_attr(l, "spatial", 1);
  if (l->st) return l->st;
  for (int k = 1; k < l->n.noutputs; k++)
    if (l->n.outputs[k][0])
      return legacy_fail(l, LOOM_ERR_UNSUPPORTED,
                         "output %d (\"%s\") is a training-mode output (is_test=%lld); Loom compiles inference only "
                         "(output Y alone)",
                         k, l->n.outputs[k], (long long)is_test);
  /* A producer that gave per-activation parameters anyway (the opset 7-8
   * meaning of spatial=0) must not be read per channel. */
  for (int k = 1; k < l->n.ninputs && !spatial; k++) {
    ValueId v = namemap_get(&l->im->names, l->n.inputs[k]);
    const GraphTensor *t = v >= 0 ? l->im->g->values[v].constant : NULL;
    if (!t || t->rank != 1)
      return legacy_fail(l, LOOM_ERR_UNSUPPORTED,
                         "attribute \"spatial\" is 0 and input %d (\"%s\") is not a 1-D constant: per-activation "
                         "statistics are not supported",
                         k, l->n.inputs[k]);
  }
  drop(l, "is_test");
  drop(l, "spatial");
  return LOOM_OK;
}

/* Dropout (opsets 1-6): is_test chose test mode; inference is test mode
 * (as for opset 12's training_mode input, import_ops.c). */
static loom_status adapt_dropout(Legacy *l) {
  int_attr(l, "is_test", 0);
  drop(l, "is_test");
  return l->st;
}

/* Cast (opsets 1-5): `to` is the name of a TensorProto.DataType ("FLOAT");
 * from opset 6 it is the number. A number is taken as it is. */
static loom_status adapt_cast(Legacy *l) {
  const OnnxAttr *to = find(l, "to");
  if (!to) return legacy_fail(l, LOOM_ERR_INVALID_ARG, "required attribute \"to\" is missing");
  int t = onnx_attr_effective_type(to);
  if (t == ONNX_ATTR_INT) return LOOM_OK;
  if (t != ONNX_ATTR_STRING)
    return legacy_fail(l, LOOM_ERR_INVALID_ARG, "attribute \"to\" has type %s, expected STRING (a data type name)",
                       onnx_attr_type_name(t));
  const char *name = to->s.data ? arena_strndup(l->im->scratch, (const char *)to->s.data, to->s.len) : "";
  for (int code = 1; code <= ONNX_INT2; code++) {
    if (!strcasecmp(onnx_dtype_name(code), name)) {
      put(l, make_int("to", code));
      return LOOM_OK;
    }
  }
  return legacy_fail(l, LOOM_ERR_INVALID_ARG,
                     "attribute \"to\" is \"%s\", expected a TensorProto data type name such as \"FLOAT\"", name);
}

/* Tile (opsets 1-5): Tile(input, tiles, axis) repeats along one axis; from
 * opset 6 Tile(input, repeats) takes one count per dim:
 * repeats = [1] * axis ++ [tiles] ++ [1] * (rank - axis - 1). */
static loom_status adapt_tile(Legacy *l) {
  if (l->n.ninputs != 3 || !l->n.inputs[0][0] || !l->n.inputs[1][0] || !l->n.inputs[2][0])
    return legacy_fail(l, LOOM_ERR_INVALID_ARG, "expected 3 inputs (input, tiles, axis), got %d", l->n.ninputs);
  ValueId ax = namemap_get(&l->im->names, l->n.inputs[2]);
  const GraphTensor *axt = ax >= 0 ? l->im->g->values[ax].constant : NULL;
  int xrank = known_rank(l, l->n.inputs[0]);
  if (axt && graph_tensor_numel(axt) == 1 && xrank >= 0) {
    int64_t axis = graph_tensor_get_i64(axt, 0);
    if (axis < 0 || axis >= xrank)
      return legacy_fail(l, LOOM_ERR_INVALID_ARG, "input \"axis\" is %lld, out of range for \"%s\" of rank %d",
                         (long long)axis, l->n.inputs[0], xrank);
  }
  static const int64_t one = 1;
  const char *flat = const_i64(l, "flat", &one, 1);
  const char *axis = OP(l, "Reshape", "axis", l->n.inputs[2], flat);
  const char *tiles = OP(l, "Reshape", "tiles", l->n.inputs[1], flat);
  const char *rank = OP(l, "Shape", "rank", OP(l, "Shape", "shape", l->n.inputs[0]));
  const char *after = OP(l, "Sub", "after", OP(l, "Sub", "rest", rank, axis), const_i64(l, "one", &one, 1));
  OnnxAttr axis0 = make_int("axis", 0);
  const char *before = ones(l, "ones_before_axis", axis);
  l->n.inputs[1] = emit(l, "Concat", "repeats", IN(before, tiles, ones(l, "ones_after_axis", after)), &axis0, 1);
  l->n.ninputs = 2;
  return l->st;
}

/* Selu (opsets 1-5): the defaults were rounded (alpha 1.6732, gamma 1.0507;
 * opset 6 has them to float precision). */
static loom_status adapt_selu(Legacy *l) {
  if (!find(l, "alpha")) put(l, make_float("alpha", (double)1.6732f));
  if (!find(l, "gamma")) put(l, make_float("gamma", (double)1.0507f));
  return LOOM_OK;
}

/* Reshape (opsets 1-4): the shape is an attribute; from opset 5 an input. */
static loom_status adapt_reshape(Legacy *l) {
  const OnnxAttr *shape = typed(l, "shape", ONNX_ATTR_INTS);
  if (l->st) return l->st;
  if (!shape)
    return legacy_fail(l, LOOM_ERR_INVALID_ARG, "attribute \"shape\" is missing (the opset 1-4 form takes it)");
  if (l->n.ninputs != 1) return legacy_fail(l, LOOM_ERR_INVALID_ARG, "expected 1 input, got %d", l->n.ninputs);
  l->n.inputs[l->n.ninputs++] = const_i64(l, "shape", shape->ints.items, shape->ints.n);
  drop(l, "shape");
  return LOOM_OK;
}

/* Concat (opsets 1-3): axis defaults to 1 (required from opset 4). */
static loom_status adapt_concat(Legacy *l) {
  if (!find(l, "axis")) put(l, make_int("axis", 1));
  return LOOM_OK;
}

/* Pad (opset 1): `paddings` is opset 2's `pads`. */
static loom_status adapt_pad(Legacy *l) {
  OnnxAttr *p = find(l, "paddings");
  if (!p) return legacy_fail(l, LOOM_ERR_INVALID_ARG, "required attribute \"paddings\" is missing");
  if (find(l, "pads")) return legacy_fail(l, LOOM_ERR_INVALID_ARG, "both \"paddings\" and \"pads\" are given");
  p->name = "pads";
  return LOOM_OK;
}

/* Split (opset 1): `axis` has no default (opset 2 gives 0), and the sizes
 * may come as the second input, which is opset 13's form. */
static loom_status adapt_split(Legacy *l) {
  if (!typed(l, "axis", ONNX_ATTR_INT))
    return l->st ? l->st
                 : legacy_fail(l, LOOM_ERR_INVALID_ARG,
                               "attribute \"axis\" is missing (Split-1 defines no default; opset 2 made it 0)");
  if (l->n.ninputs > 1 && l->n.inputs[1][0] && find(l, "split"))
    return legacy_fail(l, LOOM_ERR_INVALID_ARG, "the sizes are given twice (attribute \"split\" and input 1)");
  return LOOM_OK;
}

/* LpPool (opset 1): p is a FLOAT; from opset 2 an INT. */
static loom_status adapt_lp_pool(Legacy *l) {
  const OnnxAttr *p = typed(l, "p", ONNX_ATTR_FLOAT);
  if (l->st || !p) return l->st;
  if (p->f != floor(p->f) || p->f < 1 || p->f > 1e6)
    return legacy_fail(l, LOOM_ERR_UNSUPPORTED, "attribute \"p\" is %g: only whole p (opset 2's INT form) is supported",
                       p->f);
  put(l, make_int("p", (int64_t)p->f));
  return LOOM_OK;
}

/* Upsample (opsets 1-6): a 4-D [N, C, H, W] input scaled by height_scale
 * and width_scale; opset 7 takes scales for every dim, and calls bilinear
 * "linear". */
static loom_status adapt_upsample(Legacy *l) {
  const OnnxAttr *h = typed(l, "height_scale", ONNX_ATTR_FLOAT);
  const OnnxAttr *w = typed(l, "width_scale", ONNX_ATTR_FLOAT);
  const OnnxAttr *mode = typed(l, "mode", ONNX_ATTR_STRING);
  if (l->st) return l->st;
  if (!h || !w)
    return legacy_fail(l, LOOM_ERR_INVALID_ARG, "required attribute \"%s\" is missing",
                       h ? "width_scale" : "height_scale");
  OnnxAttr scales = {.name = "scales", .type = ONNX_ATTR_FLOATS};
  scales.floats.items = ARENA_ARRAY(l->im->scratch, double, 4);
  scales.floats.items[0] = scales.floats.items[1] = 1.0;
  scales.floats.items[2] = h->f;
  scales.floats.items[3] = w->f;
  scales.floats.n = scales.floats.cap = 4;
  if (mode && mode->s.len == 8 && !memcmp(mode->s.data, "bilinear", 8)) {
    OnnxAttr linear = {.name = "mode", .type = ONNX_ATTR_STRING, .has_s = true};
    linear.s.data = (const uint8_t *)"linear";
    linear.s.len = 6;
    put(l, linear);
  }
  drop(l, "height_scale");
  drop(l, "width_scale");
  put(l, scales);
  return LOOM_OK;
}

/* RNN, GRU, LSTM (opsets 1-6): output_sequence only said whether Y is
 * wanted, which the outputs say too. */
static loom_status adapt_rnn(Legacy *l) {
  int_attr(l, "output_sequence", 0);
  drop(l, "output_sequence");
  return l->st;
}

static const LegacyOp legacy_ops[] = {
    /* the same at opset 7, but for consumed_inputs */
    {"Abs", 0, NULL}, {"ArgMax", 0, NULL}, {"ArgMin", 0, NULL}, {"AveragePool", 0, NULL}, /* count_include_pad=0 */
    {"Ceil", 0, NULL}, {"Clip", 0, NULL}, /* opset 1's absent min/max = no bound = opset 6's defaults */
    {"Constant", 0, NULL}, {"Conv", 0, NULL}, {"ConvTranspose", 0, NULL}, {"DepthToSpace", 0, NULL},
    {"Elu", 0, NULL}, {"Exp", 0, NULL}, {"Flatten", 0, NULL}, {"Floor", 0, NULL}, {"Gather", 0, NULL},
    {"GlobalAveragePool", 0, NULL}, {"GlobalMaxPool", 0, NULL}, {"Hardmax", 0, NULL}, {"HardSigmoid", 0, NULL},
    {"Identity", 0, NULL}, {"If", 0, NULL}, {"InstanceNormalization", 0, NULL}, {"LeakyRelu", 0, NULL},
    {"Log", 0, NULL}, {"LogSoftmax", 0, NULL}, {"Loop", 0, NULL}, {"LpNormalization", 0, NULL}, {"LRN", 0, NULL},
    {"MatMul", 0, NULL}, {"Max", 0, NULL}, {"MaxPool", 0, NULL}, {"Mean", 0, NULL}, {"Min", 0, NULL},
    {"Neg", 0, NULL}, {"Not", 0, NULL}, {"Reciprocal", 0, NULL}, {"ReduceL1", 0, NULL}, {"ReduceL2", 0, NULL},
    {"ReduceLogSum", 0, NULL}, {"ReduceLogSumExp", 0, NULL}, {"ReduceMax", 0, NULL}, {"ReduceMean", 0, NULL},
    {"ReduceMin", 0, NULL}, {"ReduceProd", 0, NULL}, {"ReduceSum", 0, NULL}, {"ReduceSumSquare", 0, NULL},
    {"Relu", 0, NULL}, {"Shape", 0, NULL}, {"Sigmoid", 0, NULL}, {"Size", 0, NULL}, {"Slice", 0, NULL},
    {"Softmax", 0, NULL}, {"Softplus", 0, NULL}, {"Softsign", 0, NULL}, {"SpaceToDepth", 0, NULL},
    {"Sqrt", 0, NULL}, {"Squeeze", 0, NULL}, {"Sum", 0, NULL}, {"Tanh", 0, NULL}, {"TopK", 0, NULL},
    {"Transpose", 0, NULL}, {"Unsqueeze", 0, NULL},
    /* limited broadcasting */
    {"Add", 6, adapt_broadcast}, {"Sub", 6, adapt_broadcast}, {"Mul", 6, adapt_broadcast}, {"Div", 6, adapt_broadcast},
    {"Pow", 6, adapt_broadcast}, {"And", 6, adapt_broadcast}, {"Or", 6, adapt_broadcast}, {"Xor", 6, adapt_broadcast},
    {"Equal", 6, adapt_broadcast}, {"Greater", 6, adapt_broadcast}, {"Less", 6, adapt_broadcast},
    {"PRelu", 6, adapt_prelu}, {"Gemm", 6, adapt_gemm},
    /* other signature changes */
    {"BatchNormalization", 6, adapt_batch_norm}, {"Dropout", 6, adapt_dropout}, {"Upsample", 6, adapt_upsample},
    {"RNN", 6, adapt_rnn}, {"GRU", 6, adapt_rnn}, {"LSTM", 6, adapt_rnn}, {"Cast", 5, adapt_cast},
    {"Tile", 5, adapt_tile}, {"Selu", 5, adapt_selu}, {"Reshape", 4, adapt_reshape}, {"Concat", 3, adapt_concat},
    {"Pad", 1, adapt_pad}, {"Split", 1, adapt_split}, {"LpPool", 1, adapt_lp_pool},
};

static const LegacyOp *find_op(const char *op_type) {
  for (size_t k = 0; k < sizeof legacy_ops / sizeof legacy_ops[0]; k++)
    if (!strcmp(legacy_ops[k].op, op_type)) return &legacy_ops[k];
  return NULL;
}

bool onnx_legacy_known(const char *op_type) { return find_op(op_type) != NULL; }

loom_status onnx_convert_legacy(Importer *im, const OnnxNode *n) {
  const LegacyOp *row = find_op(n->op_type);
  Legacy l = {.im = im, .n = *n};
  if (!row) return legacy_fail(&l, LOOM_ERR_UNSUPPORTED, "no form of this op at opsets before 7 is known");
  /* Own copies: adapters replace and add inputs and attributes. */
  l.n.inputs = ARENA_ARRAY(im->scratch, const char *, n->ninputs + 4);
  if (n->ninputs) memcpy(l.n.inputs, n->inputs, sizeof(const char *) * (size_t)n->ninputs);
  l.n.attrs = ARENA_ARRAY(im->scratch, OnnxAttr, n->nattrs + 4);
  if (n->nattrs) memcpy(l.n.attrs, n->attrs, sizeof(OnnxAttr) * (size_t)n->nattrs);
  drop(&l, "consumed_inputs");
  loom_status st = row->adapt && im->opset <= row->upto ? row->adapt(&l) : LOOM_OK;
  if (st) return st;
  int64_t opset = im->opset;
  im->opset = ONNX_ADAPTED_OPSET;
  st = onnx_convert_node(im, &l.n);
  im->opset = opset;
  return st;
}
