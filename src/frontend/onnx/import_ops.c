/* Per-op conversion from ONNX nodes to graph nodes: attribute type checks
 * and defaults (one table, from the ONNX operator specification), and the
 * opset-dependent rewrites that bring every node to the newest form. */
#include "frontend/onnx/import_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef enum { A_INT, A_FLOAT, A_STRING, A_INTS, A_FLOATS, A_TENSOR } AttrType;

/* One row per attribute Loom reads. has_default rows are filled in when the
 * model leaves them out, so later passes see explicit values; required rows
 * must be present. min_opset/max_opset bound where a row applies (defaults
 * changed across opsets, e.g. Softmax's axis). */
typedef struct AttrSpec {
  const char *op, *name;
  AttrType type;
  bool required, has_default;
  int64_t i;
  double f;
  const char *s;
  int min_opset, max_opset;
} AttrSpec;

#define REQ(op, name, t) {op, name, t, true, false, 0, 0, NULL, 0, 99}
#define OPT(op, name, t) {op, name, t, false, false, 0, 0, NULL, 0, 99}
#define DEF_I(op, name, v) {op, name, A_INT, false, true, v, 0, NULL, 0, 99}
#define DEF_F(op, name, v) {op, name, A_FLOAT, false, true, 0, v, NULL, 0, 99}
#define DEF_S(op, name, v) {op, name, A_STRING, false, true, 0, 0, v, 0, 99}

static const AttrSpec attr_specs[] = {
    DEF_S("Conv", "auto_pad", "NOTSET"), DEF_I("Conv", "group", 1), OPT("Conv", "kernel_shape", A_INTS),
    OPT("Conv", "strides", A_INTS), OPT("Conv", "pads", A_INTS), OPT("Conv", "dilations", A_INTS),
    DEF_S("MaxPool", "auto_pad", "NOTSET"), REQ("MaxPool", "kernel_shape", A_INTS), OPT("MaxPool", "strides", A_INTS),
    OPT("MaxPool", "pads", A_INTS), OPT("MaxPool", "dilations", A_INTS), DEF_I("MaxPool", "ceil_mode", 0),
    DEF_I("MaxPool", "storage_order", 0),
    DEF_S("AveragePool", "auto_pad", "NOTSET"), REQ("AveragePool", "kernel_shape", A_INTS),
    OPT("AveragePool", "strides", A_INTS), OPT("AveragePool", "pads", A_INTS), OPT("AveragePool", "dilations", A_INTS),
    DEF_I("AveragePool", "ceil_mode", 0), DEF_I("AveragePool", "count_include_pad", 0),
    DEF_F("BatchNormalization", "epsilon", 1e-5), DEF_F("BatchNormalization", "momentum", 0.9),
    DEF_I("BatchNormalization", "training_mode", 0),
    DEF_F("Gemm", "alpha", 1.0), DEF_F("Gemm", "beta", 1.0), DEF_I("Gemm", "transA", 0), DEF_I("Gemm", "transB", 0),
    DEF_F("LeakyRelu", "alpha", 0.01), DEF_F("HardSigmoid", "alpha", 0.2), DEF_F("HardSigmoid", "beta", 0.5),
    DEF_S("Gelu", "approximate", "none"),
    /* elementwise math (topi/op_elemwise.c) */
    DEF_F("Elu", "alpha", 1.0), DEF_F("Selu", "alpha", 1.67326319217681884765625),
    DEF_F("Selu", "gamma", 1.05070102214813232421875), DEF_F("Celu", "alpha", 1.0),
    DEF_F("ThresholdedRelu", "alpha", 1.0), DEF_F("Shrink", "bias", 0.0), DEF_F("Shrink", "lambd", 0.5),
    DEF_F("Swish", "alpha", 1.0), DEF_I("IsInf", "detect_negative", 1), DEF_I("IsInf", "detect_positive", 1),
    DEF_I("Mod", "fmod", 0), REQ("BitShift", "direction", A_STRING),
    DEF_I("Flatten", "axis", 1), OPT("Transpose", "perm", A_INTS), REQ("Concat", "axis", A_INT),
    DEF_I("Split", "axis", 0), OPT("Split", "num_outputs", A_INT), DEF_I("Gather", "axis", 0),
    OPT("Shape", "start", A_INT), OPT("Shape", "end", A_INT), OPT("ConstantOfShape", "value", A_TENSOR),
    DEF_I("Reshape", "allowzero", 0),
    DEF_I("ReduceMean", "keepdims", 1), DEF_I("ReduceSum", "keepdims", 1), DEF_I("ReduceMax", "keepdims", 1),
    DEF_I("ReduceMean", "noop_with_empty_axes", 0), DEF_I("ReduceSum", "noop_with_empty_axes", 0),
    DEF_I("ReduceMax", "noop_with_empty_axes", 0),
    {"Softmax", "axis", A_INT, false, true, 1, 0, NULL, 0, 12}, {"Softmax", "axis", A_INT, false, true, -1, 0, NULL, 13, 99},
    DEF_I("LayerNormalization", "axis", -1), DEF_F("LayerNormalization", "epsilon", 1e-5),
    DEF_I("LayerNormalization", "stash_type", 1),
    /* reductions, softmax family, normalizations, losses */
    DEF_I("ReduceMin", "keepdims", 1), DEF_I("ReduceProd", "keepdims", 1), DEF_I("ReduceL1", "keepdims", 1),
    DEF_I("ReduceL2", "keepdims", 1), DEF_I("ReduceLogSum", "keepdims", 1), DEF_I("ReduceLogSumExp", "keepdims", 1),
    DEF_I("ReduceSumSquare", "keepdims", 1), DEF_I("ReduceMin", "noop_with_empty_axes", 0),
    DEF_I("ReduceProd", "noop_with_empty_axes", 0), DEF_I("ReduceL1", "noop_with_empty_axes", 0),
    DEF_I("ReduceL2", "noop_with_empty_axes", 0), DEF_I("ReduceLogSum", "noop_with_empty_axes", 0),
    DEF_I("ReduceLogSumExp", "noop_with_empty_axes", 0), DEF_I("ReduceSumSquare", "noop_with_empty_axes", 0),
    OPT("ReduceMin", "axes", A_INTS), OPT("ReduceProd", "axes", A_INTS), OPT("ReduceL1", "axes", A_INTS),
    OPT("ReduceL2", "axes", A_INTS), OPT("ReduceLogSum", "axes", A_INTS), OPT("ReduceLogSumExp", "axes", A_INTS),
    OPT("ReduceSumSquare", "axes", A_INTS),
    DEF_I("ArgMax", "axis", 0), DEF_I("ArgMax", "keepdims", 1), DEF_I("ArgMax", "select_last_index", 0),
    DEF_I("ArgMin", "axis", 0), DEF_I("ArgMin", "keepdims", 1), DEF_I("ArgMin", "select_last_index", 0),
    {"LogSoftmax", "axis", A_INT, false, true, 1, 0, NULL, 0, 12}, {"LogSoftmax", "axis", A_INT, false, true, -1, 0, NULL, 13, 99},
    {"Hardmax", "axis", A_INT, false, true, 1, 0, NULL, 0, 12}, {"Hardmax", "axis", A_INT, false, true, -1, 0, NULL, 13, 99},
    DEF_I("CumSum", "exclusive", 0), DEF_I("CumSum", "reverse", 0), DEF_I("CumProd", "exclusive", 0),
    DEF_I("CumProd", "reverse", 0),
    DEF_I("RMSNormalization", "axis", -1), DEF_F("RMSNormalization", "epsilon", 1e-5),
    DEF_I("RMSNormalization", "stash_type", 1),
    REQ("GroupNormalization", "num_groups", A_INT), DEF_F("GroupNormalization", "epsilon", 1e-5),
    DEF_I("GroupNormalization", "stash_type", 1), DEF_F("InstanceNormalization", "epsilon", 1e-5),
    DEF_I("LpNormalization", "axis", -1), DEF_I("LpNormalization", "p", 2),
    OPT("MeanVarianceNormalization", "axes", A_INTS),
    REQ("LRN", "size", A_INT), DEF_F("LRN", "alpha", 1e-4), DEF_F("LRN", "beta", 0.75), DEF_F("LRN", "bias", 1.0),
    DEF_S("NegativeLogLikelihoodLoss", "reduction", "mean"), OPT("NegativeLogLikelihoodLoss", "ignore_index", A_INT),
    DEF_S("SoftmaxCrossEntropyLoss", "reduction", "mean"), OPT("SoftmaxCrossEntropyLoss", "ignore_index", A_INT),
    REQ("Cast", "to", A_INT), DEF_I("Cast", "saturate", 1), DEF_S("Cast", "round_mode", "up"),
    DEF_S("Pad", "mode", "constant"),
    DEF_S("Resize", "mode", "nearest"), DEF_S("Resize", "coordinate_transformation_mode", "half_pixel"),
    DEF_S("Resize", "nearest_mode", "round_prefer_floor"), DEF_F("Resize", "cubic_coeff_a", -0.75),
    DEF_I("Resize", "exclude_outside", 0), DEF_F("Resize", "extrapolation_value", 0.0),
    /* sequence models and signal processing (graph/infer_attention.c, infer_rnn.c, infer_signal.c) */
    DEF_I("Attention", "is_causal", 0), OPT("Attention", "q_num_heads", A_INT), OPT("Attention", "kv_num_heads", A_INT),
    DEF_I("Attention", "qk_matmul_output_mode", 0), OPT("Attention", "scale", A_FLOAT), DEF_F("Attention", "softcap", 0.0),
    OPT("Attention", "softmax_precision", A_INT),
    DEF_I("RotaryEmbedding", "interleaved", 0), DEF_I("RotaryEmbedding", "rotary_embedding_dim", 0),
    DEF_I("RotaryEmbedding", "num_heads", 0), DEF_F("SwiGLU", "alpha", 1.0),
    REQ("LinearAttention", "q_num_heads", A_INT), REQ("LinearAttention", "kv_num_heads", A_INT),
    DEF_S("LinearAttention", "update_rule", "gated_delta"), OPT("LinearAttention", "scale", A_FLOAT),
    OPT("LinearAttention", "chunk_size", A_INT), DEF_S("CausalConvWithState", "activation", "none"),
    DEF_S("TensorScatter", "mode", "linear"), DEF_I("TensorScatter", "axis", -2),
    OPT("RNN", "hidden_size", A_INT), DEF_I("RNN", "layout", 0), DEF_S("RNN", "direction", "forward"),
    OPT("RNN", "clip", A_FLOAT), OPT("RNN", "activation_alpha", A_FLOATS), OPT("RNN", "activation_beta", A_FLOATS),
    OPT("GRU", "hidden_size", A_INT), DEF_I("GRU", "layout", 0), DEF_S("GRU", "direction", "forward"),
    OPT("GRU", "clip", A_FLOAT), OPT("GRU", "activation_alpha", A_FLOATS), OPT("GRU", "activation_beta", A_FLOATS),
    DEF_I("GRU", "linear_before_reset", 0),
    OPT("LSTM", "hidden_size", A_INT), DEF_I("LSTM", "layout", 0), DEF_S("LSTM", "direction", "forward"),
    OPT("LSTM", "clip", A_FLOAT), OPT("LSTM", "activation_alpha", A_FLOATS), OPT("LSTM", "activation_beta", A_FLOATS),
    DEF_I("LSTM", "input_forget", 0),
    DEF_I("BlackmanWindow", "periodic", 1), DEF_I("HammingWindow", "periodic", 1), DEF_I("HannWindow", "periodic", 1),
    OPT("BlackmanWindow", "output_datatype", A_INT), OPT("HammingWindow", "output_datatype", A_INT),
    OPT("HannWindow", "output_datatype", A_INT), OPT("MelWeightMatrix", "output_datatype", A_INT),
    DEF_I("DFT", "inverse", 0), DEF_I("DFT", "onesided", 0), OPT("DFT", "axis", A_INT), DEF_I("STFT", "onesided", 1),
    /* vision, sorting, data-dependent shapes (topi/op_vision.c, op_sort.c, op_dynamic.c) */
    REQ("BitCast", "to", A_INT), DEF_I("GridSample", "align_corners", 0), DEF_S("GridSample", "padding_mode", "zeros"),
    {"GridSample", "mode", A_STRING, false, true, 0, 0, "bilinear", 0, 19},
    {"GridSample", "mode", A_STRING, false, true, 0, 0, "linear", 20, 99}, DEF_I("AffineGrid", "align_corners", 0),
    {"RoiAlign", "coordinate_transformation_mode", A_STRING, false, true, 0, 0, "output_half_pixel", 0, 15},
    {"RoiAlign", "coordinate_transformation_mode", A_STRING, false, true, 0, 0, "half_pixel", 16, 99},
    DEF_S("RoiAlign", "mode", "avg"), DEF_I("RoiAlign", "output_height", 1), DEF_I("RoiAlign", "output_width", 1),
    DEF_I("RoiAlign", "sampling_ratio", 0), DEF_F("RoiAlign", "spatial_scale", 1.0), DEF_I("DeformConv", "group", 1),
    DEF_I("DeformConv", "offset_group", 1), OPT("DeformConv", "kernel_shape", A_INTS), OPT("DeformConv", "pads", A_INTS),
    OPT("DeformConv", "strides", A_INTS), OPT("DeformConv", "dilations", A_INTS), DEF_I("TopK", "axis", -1),
    DEF_I("TopK", "largest", 1), DEF_I("TopK", "sorted", 1), OPT("TopK", "k", A_INT), DEF_I("Unique", "sorted", 1),
    OPT("Unique", "axis", A_INT), OPT("Compress", "axis", A_INT), DEF_I("NonMaxSuppression", "center_point_box", 0),
    /* indexing, rearrangements, N-D windows (topi/op_index.c, op_space.c, op_einsum.c, op_conv_nd.c, op_pool.c) */
    DEF_I("GatherElements", "axis", 0), DEF_I("GatherND", "batch_dims", 0), DEF_I("ScatterElements", "axis", 0),
    DEF_S("ScatterElements", "reduction", "none"), DEF_I("Scatter", "axis", 0), DEF_S("ScatterND", "reduction", "none"),
    DEF_I("OneHot", "axis", -1), DEF_I("Trilu", "upper", 1), OPT("EyeLike", "dtype", A_INT), DEF_I("EyeLike", "k", 0),
    REQ("DepthToSpace", "blocksize", A_INT), DEF_S("DepthToSpace", "mode", "DCR"), REQ("SpaceToDepth", "blocksize", A_INT),
    DEF_I("ReverseSequence", "batch_axis", 1), DEF_I("ReverseSequence", "time_axis", 0), OPT("CenterCropPad", "axes", A_INTS),
    REQ("Einsum", "equation", A_STRING), DEF_S("ConvTranspose", "auto_pad", "NOTSET"), DEF_I("ConvTranspose", "group", 1),
    OPT("ConvTranspose", "kernel_shape", A_INTS), OPT("ConvTranspose", "strides", A_INTS), OPT("ConvTranspose", "pads", A_INTS),
    OPT("ConvTranspose", "dilations", A_INTS), OPT("ConvTranspose", "output_padding", A_INTS),
    OPT("ConvTranspose", "output_shape", A_INTS), OPT("Col2Im", "dilations", A_INTS), OPT("Col2Im", "pads", A_INTS),
    OPT("Col2Im", "strides", A_INTS), DEF_S("LpPool", "auto_pad", "NOTSET"), REQ("LpPool", "kernel_shape", A_INTS),
    OPT("LpPool", "strides", A_INTS), OPT("LpPool", "pads", A_INTS), OPT("LpPool", "dilations", A_INTS),
    DEF_I("LpPool", "ceil_mode", 0), DEF_I("LpPool", "p", 2), REQ("MaxUnpool", "kernel_shape", A_INTS),
    OPT("MaxUnpool", "strides", A_INTS), OPT("MaxUnpool", "pads", A_INTS), OPT("Resize", "axes", A_INTS),
    DEF_I("Resize", "antialias", 0), DEF_S("Resize", "keep_aspect_ratio_policy", "stretch"),
    DEF_S("ConvInteger", "auto_pad", "NOTSET"), DEF_I("ConvInteger", "group", 1), OPT("ConvInteger", "kernel_shape", A_INTS),
    OPT("ConvInteger", "strides", A_INTS), OPT("ConvInteger", "pads", A_INTS), OPT("ConvInteger", "dilations", A_INTS),
    /* quantization (topi/op_quant.c); output_dtype/precision become dtype names (convert_quant) */
    DEF_I("QuantizeLinear", "axis", 1), DEF_I("QuantizeLinear", "saturate", 1), DEF_I("QuantizeLinear", "block_size", 0),
    OPT("QuantizeLinear", "output_dtype", A_INT), OPT("QuantizeLinear", "precision", A_INT),
    DEF_I("DequantizeLinear", "axis", 1), DEF_I("DequantizeLinear", "block_size", 0),
    OPT("DequantizeLinear", "output_dtype", A_INT),
    DEF_S("QLinearConv", "auto_pad", "NOTSET"), DEF_I("QLinearConv", "group", 1), OPT("QLinearConv", "kernel_shape", A_INTS),
    OPT("QLinearConv", "strides", A_INTS), OPT("QLinearConv", "pads", A_INTS), OPT("QLinearConv", "dilations", A_INTS),
    /* Attributes of old opsets that become inputs; read by the rewrites. */
    OPT("Slice", "starts", A_INTS), OPT("Slice", "ends", A_INTS), OPT("Slice", "axes", A_INTS),
    OPT("Squeeze", "axes", A_INTS), OPT("Unsqueeze", "axes", A_INTS), OPT("ReduceMean", "axes", A_INTS),
    OPT("ReduceSum", "axes", A_INTS), OPT("ReduceMax", "axes", A_INTS), OPT("Split", "split", A_INTS),
    OPT("Pad", "pads", A_INTS), OPT("Pad", "value", A_FLOAT), OPT("Clip", "min", A_FLOAT), OPT("Clip", "max", A_FLOAT),
    OPT("Upsample", "scales", A_FLOATS), DEF_S("Upsample", "mode", "nearest"), OPT("Dropout", "ratio", A_FLOAT),
};

static const char *const supported_ops[] = {
    "Constant", "Upsample", /* converted, no graph op of their own */
    "Scatter",              /* ScatterElements */
};

bool onnx_op_supported(const char *op_type) {
  GraphOp op;
  if (graph_op_lookup(op_type, &op)) return true;
  for (size_t k = 0; k < sizeof supported_ops / sizeof supported_ops[0]; k++)
    if (!strcmp(op_type, supported_ops[k])) return true;
  return false;
}

const char *onnx_attr_type_name(int t) {
  switch (t) {
  case ONNX_ATTR_FLOAT: return "FLOAT";
  case ONNX_ATTR_INT: return "INT";
  case ONNX_ATTR_STRING: return "STRING";
  case ONNX_ATTR_TENSOR: return "TENSOR";
  case ONNX_ATTR_GRAPH: return "GRAPH";
  case ONNX_ATTR_FLOATS: return "FLOATS";
  case ONNX_ATTR_INTS: return "INTS";
  case ONNX_ATTR_STRINGS: return "STRINGS";
  case ONNX_ATTR_TENSORS: return "TENSORS";
  case ONNX_ATTR_GRAPHS: return "GRAPHS";
  case ONNX_ATTR_SPARSE_TENSOR: return "SPARSE_TENSOR";
  default: return "UNDEFINED";
  }
}

static int onnx_attr_type(AttrType t) {
  static const int map[] = {ONNX_ATTR_INT, ONNX_ATTR_FLOAT, ONNX_ATTR_STRING, ONNX_ATTR_INTS, ONNX_ATTR_FLOATS, ONNX_ATTR_TENSOR};
  return map[t];
}

int onnx_attr_effective_type(const OnnxAttr *a) {
  if (a->type) return a->type;
  if (a->has_f) return ONNX_ATTR_FLOAT;
  if (a->has_i) return ONNX_ATTR_INT;
  if (a->has_s) return ONNX_ATTR_STRING;
  if (a->t) return ONNX_ATTR_TENSOR;
  if (a->g) return ONNX_ATTR_GRAPH;
  if (a->floats.n) return ONNX_ATTR_FLOATS;
  if (a->ints.n) return ONNX_ATTR_INTS;
  if (a->nstrings) return ONNX_ATTR_STRINGS;
  return ONNX_ATTR_UNDEFINED;
}

static const OnnxAttr *find_attr(const OnnxNode *n, const char *name) {
  for (int k = 0; k < n->nattrs; k++)
    if (n->attrs[k].name && !strcmp(n->attrs[k].name, name)) return &n->attrs[k];
  return NULL;
}

typedef struct NodeCtx {
  Importer *im;
  const OnnxNode *n;
  ValueId ins[16];
  int nins;
  GraphAttr attrs[32];
  int nattrs;
} NodeCtx;

static loom_status node_fail(NodeCtx *c, loom_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static loom_status node_fail(NodeCtx *c, loom_status st, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return err_set(c->im->err, st, "node \"%s\" (%s): %s", c->n->name, c->n->op_type, msg);
}

/* Converts the ONNX attribute to graph form after checking its type. */
static loom_status convert_attr(NodeCtx *c, const OnnxAttr *a, const AttrSpec *spec, GraphAttr *out) {
  Arena *ar = c->im->g->arena;
  int t = onnx_attr_effective_type(a);
  if (spec && t != onnx_attr_type(spec->type))
    return node_fail(c, LOOM_ERR_INVALID_ARG, "attribute \"%s\" has type %s, expected %s", a->name, onnx_attr_type_name(t),
                     onnx_attr_type_name(onnx_attr_type(spec->type)));
  memset(out, 0, sizeof *out);
  out->name = arena_strdup(ar, a->name);
  switch (t) {
  case ONNX_ATTR_INT: out->kind = GRAPH_ATTR_INT; out->i = a->i; break;
  case ONNX_ATTR_FLOAT: out->kind = GRAPH_ATTR_FLOAT; out->f = a->f; break;
  case ONNX_ATTR_STRING:
    out->kind = GRAPH_ATTR_STRING;
    out->s = a->s.data ? arena_strndup(ar, (const char *)a->s.data, a->s.len) : "";
    break;
  case ONNX_ATTR_INTS:
    out->kind = GRAPH_ATTR_INTS;
    out->n = a->ints.n;
    out->ints = arena_memdup(ar, a->ints.items ? (const void *)a->ints.items : (const void *)"", sizeof(int64_t) * (size_t)a->ints.n);
    break;
  case ONNX_ATTR_FLOATS:
    out->kind = GRAPH_ATTR_FLOATS;
    out->n = a->floats.n;
    out->floats = arena_memdup(ar, a->floats.items ? (const void *)a->floats.items : (const void *)"", sizeof(double) * (size_t)a->floats.n);
    break;
  case ONNX_ATTR_TENSOR: {
    if (!a->t) return node_fail(c, LOOM_ERR_INVALID_ARG, "attribute \"%s\" has no tensor", a->name);
    char *what = arena_printf(c->im->scratch, "node \"%s\" (%s) attribute \"%s\"", c->n->name, c->n->op_type, a->name);
    out->kind = GRAPH_ATTR_TENSOR;
    out->t = onnx_tensor_to_graph(c->im, a->t, what);
    if (!out->t) return c->im->err->status;
    break;
  }
  default:
    return node_fail(c, LOOM_ERR_UNSUPPORTED, "attribute \"%s\" of type %s is not supported", a->name, onnx_attr_type_name(t));
  }
  return LOOM_OK;
}

static const AttrSpec *find_spec(const char *op, const char *name, int64_t opset) {
  for (size_t k = 0; k < sizeof attr_specs / sizeof attr_specs[0]; k++) {
    const AttrSpec *s = &attr_specs[k];
    if (!strcmp(s->op, op) && !strcmp(s->name, name) && opset >= s->min_opset && opset <= s->max_opset) return s;
  }
  return NULL;
}

/* Checks and converts all attributes, then adds defaults for absent ones. */
static loom_status convert_attrs(NodeCtx *c) {
  const OnnxNode *n = c->n;
  for (int k = 0; k < n->nattrs; k++) {
    const OnnxAttr *a = &n->attrs[k];
    if (!a->name || !a->name[0]) return node_fail(c, LOOM_ERR_INVALID_ARG, "attribute %d has no name", k);
    for (int j = 0; j < k; j++)
      if (n->attrs[j].name && !strcmp(n->attrs[j].name, a->name))
        return node_fail(c, LOOM_ERR_INVALID_ARG, "attribute \"%s\" appears twice", a->name);
    const AttrSpec *spec = find_spec(n->op_type, a->name, c->im->opset);
    /* Attributes Loom does not read (doc hints, training-only knobs) are
     * dropped unless they would change the result. */
    if (!spec) {
      int t = onnx_attr_effective_type(a);
      if (t == ONNX_ATTR_GRAPH || t == ONNX_ATTR_GRAPHS || t == ONNX_ATTR_TENSORS || t == ONNX_ATTR_SPARSE_TENSOR ||
          t == ONNX_ATTR_STRINGS || t == ONNX_ATTR_UNDEFINED)
        continue;
    }
    if (c->nattrs >= 32) return node_fail(c, LOOM_ERR_UNSUPPORTED, "more than 32 attributes");
    loom_status st = convert_attr(c, a, spec, &c->attrs[c->nattrs]);
    if (st) return st;
    c->nattrs++;
  }
  for (size_t k = 0; k < sizeof attr_specs / sizeof attr_specs[0]; k++) {
    const AttrSpec *s = &attr_specs[k];
    if (strcmp(s->op, n->op_type) || c->im->opset < s->min_opset || c->im->opset > s->max_opset) continue;
    if (find_attr(n, s->name)) continue;
    if (s->required) return node_fail(c, LOOM_ERR_INVALID_ARG, "required attribute \"%s\" is missing", s->name);
    if (!s->has_default || c->nattrs >= 32) continue;
    GraphAttr *a = &c->attrs[c->nattrs++];
    memset(a, 0, sizeof *a);
    a->name = s->name;
    if (s->type == A_INT) a->kind = GRAPH_ATTR_INT, a->i = s->i;
    else if (s->type == A_FLOAT) a->kind = GRAPH_ATTR_FLOAT, a->f = s->f;
    else a->kind = GRAPH_ATTR_STRING, a->s = s->s;
  }
  return LOOM_OK;
}

static GraphAttr *take_attr(NodeCtx *c, const char *name) {
  for (int k = 0; k < c->nattrs; k++) {
    if (!strcmp(c->attrs[k].name, name)) {
      GraphAttr *a = &c->attrs[k];
      return a;
    }
  }
  return NULL;
}

static void drop_attr(NodeCtx *c, const char *name) {
  for (int k = 0; k < c->nattrs; k++) {
    if (!strcmp(c->attrs[k].name, name)) {
      c->attrs[k] = c->attrs[--c->nattrs];
      return;
    }
  }
}

static ValueId const_ints(NodeCtx *c, const char *what, const int64_t *v, int count) {
  Graph *g = c->im->g;
  int64_t dims[1] = {count};
  GraphTensor *t = graph_tensor_new(g->arena, DT_I64, 1, dims);
  for (int k = 0; k < count; k++) graph_tensor_set_i64(t, k, v[k]);
  return graph_add_constant(g, arena_printf(g->arena, "%s.%s", c->n->name[0] ? c->n->name : c->n->outputs[0], what), t);
}

static ValueId const_floats(NodeCtx *c, const char *what, const double *v, int count, bool scalar) {
  Graph *g = c->im->g;
  int64_t dims[1] = {count};
  GraphTensor *t = graph_tensor_new(g->arena, DT_F32, scalar ? 0 : 1, dims);
  for (int k = 0; k < count; k++) graph_tensor_set_f64(t, k, v[k]);
  return graph_add_constant(g, arena_printf(g->arena, "%s.%s", c->n->name[0] ? c->n->name : c->n->outputs[0], what), t);
}

/* Moves an INTS attribute into input slot `slot` (old opset -> new form). */
static loom_status attr_to_input(NodeCtx *c, const char *name, int slot, bool required) {
  GraphAttr *a = take_attr(c, name);
  if (!a) {
    if (required) return node_fail(c, LOOM_ERR_INVALID_ARG, "required attribute \"%s\" is missing", name);
    return LOOM_OK;
  }
  ValueId v = const_ints(c, name, a->ints, a->n);
  drop_attr(c, name);
  while (c->nins < slot) c->ins[c->nins++] = GRAPH_NO_VALUE;
  if (slot < c->nins) c->ins[slot] = v;
  else c->ins[c->nins++] = v;
  return LOOM_OK;
}

static loom_status convert_constant(NodeCtx *c) {
  const OnnxNode *n = c->n;
  Graph *g = c->im->g;
  if (n->noutputs != 1) return node_fail(c, LOOM_ERR_INVALID_ARG, "expected 1 output, got %d", n->noutputs);
  if (n->nattrs != 1) return node_fail(c, LOOM_ERR_INVALID_ARG, "expected exactly one value attribute, got %d", n->nattrs);
  const OnnxAttr *a = &n->attrs[0];
  const char *name = a->name ? a->name : "";
  int t = onnx_attr_effective_type(a);
  GraphTensor *tensor = NULL;
  int64_t one = 1;
  if (!strcmp(name, "value") && t == ONNX_ATTR_TENSOR && a->t) {
    tensor = onnx_tensor_to_graph(c->im, a->t, arena_printf(c->im->scratch, "node \"%s\" (Constant) value", n->name));
    if (!tensor) return c->im->err->status;
  } else if (!strcmp(name, "value_float") && t == ONNX_ATTR_FLOAT) {
    tensor = graph_tensor_new(g->arena, DT_F32, 0, NULL);
    graph_tensor_set_f64(tensor, 0, a->f);
  } else if (!strcmp(name, "value_int") && t == ONNX_ATTR_INT) {
    tensor = graph_tensor_new(g->arena, DT_I64, 0, NULL);
    graph_tensor_set_i64(tensor, 0, a->i);
  } else if (!strcmp(name, "value_floats") && t == ONNX_ATTR_FLOATS) {
    one = a->floats.n;
    tensor = graph_tensor_new(g->arena, DT_F32, 1, &one);
    for (int k = 0; k < a->floats.n; k++) graph_tensor_set_f64(tensor, k, a->floats.items[k]);
  } else if (!strcmp(name, "value_ints") && t == ONNX_ATTR_INTS) {
    one = a->ints.n;
    tensor = graph_tensor_new(g->arena, DT_I64, 1, &one);
    for (int k = 0; k < a->ints.n; k++) graph_tensor_set_i64(tensor, k, a->ints.items[k]);
  } else if (!strcmp(name, "sparse_value") || !strcmp(name, "value_string") || !strcmp(name, "value_strings")) {
    return node_fail(c, LOOM_ERR_UNSUPPORTED, "attribute \"%s\" is not supported", name);
  } else {
    return node_fail(c, LOOM_ERR_INVALID_ARG, "attribute \"%s\" of type %s is not a Constant value", name, onnx_attr_type_name(t));
  }
  ValueId v = graph_add_constant(g, n->outputs[0], tensor);
  namemap_put(&c->im->names, g->values[v].name, v);
  return LOOM_OK;
}

/* Rewrites old-opset forms into the newest one. Opset numbers are those
 * where the ONNX operator changed signature. */
static loom_status rewrite_opset_forms(NodeCtx *c, const char **op_type) {
  const char *op = *op_type;
  int64_t opset = c->im->opset;
  loom_status st = LOOM_OK;
  if (!strcmp(op, "Slice") && opset < 10) {
    if (c->nins != 1) return node_fail(c, LOOM_ERR_INVALID_ARG, "opset %lld Slice takes 1 input", (long long)opset);
    if ((st = attr_to_input(c, "starts", 1, true)) || (st = attr_to_input(c, "ends", 2, true)) ||
        (st = attr_to_input(c, "axes", 3, false)))
      return st;
  } else if ((!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze")) && opset < 13) {
    if ((st = attr_to_input(c, "axes", 1, !strcmp(op, "Unsqueeze")))) return st;
  } else if (!strcmp(op, "ReduceSum") && opset < 13) {
    if ((st = attr_to_input(c, "axes", 1, false))) return st;
  } else if (!strncmp(op, "Reduce", 6) && strcmp(op, "ReduceSum") && opset < 18) {
    /* Every Reduce* but ReduceSum (above) took axes as an attribute before 18. */
    if ((st = attr_to_input(c, "axes", 1, false))) return st;
  } else if (!strcmp(op, "Split") && opset < 13) {
    if ((st = attr_to_input(c, "split", 1, false))) return st;
  } else if (!strcmp(op, "Pad") && opset < 11) {
    if ((st = attr_to_input(c, "pads", 1, true))) return st;
    GraphAttr *v = take_attr(c, "value");
    if (v) {
      c->ins[c->nins++] = const_floats(c, "value", &v->f, 1, true);
      drop_attr(c, "value");
    }
  } else if (!strcmp(op, "Clip") && opset < 11) {
    GraphAttr *mn = take_attr(c, "min");
    double lo = mn ? mn->f : -3.4028234663852886e38;
    GraphAttr *mx = take_attr(c, "max");
    double hi = mx ? mx->f : 3.4028234663852886e38;
    c->ins[c->nins++] = const_floats(c, "min", &lo, 1, true);
    c->ins[c->nins++] = const_floats(c, "max", &hi, 1, true);
    drop_attr(c, "min");
    drop_attr(c, "max");
  } else if (!strcmp(op, "Upsample") || (!strcmp(op, "Resize") && opset < 11)) {
    /* Upsample(X, scales) and Resize-10(X, scales) are Resize(X, roi, scales). */
    if (!strcmp(op, "Upsample") && opset >= 10)
      return node_fail(c, LOOM_ERR_INVALID_ARG, "Upsample was removed in opset 10 (model uses opset %lld)", (long long)opset);
    GraphAttr *sc = take_attr(c, "scales");
    if (sc) {
      c->ins[c->nins++] = const_floats(c, "scales", sc->floats, sc->n, false);
      drop_attr(c, "scales");
    }
    if (c->nins != 2) return node_fail(c, LOOM_ERR_INVALID_ARG, "expected X and scales");
    c->ins[2] = c->ins[1];
    c->ins[1] = GRAPH_NO_VALUE;
    c->nins = 3;
    GraphAttr *mode = take_attr(c, "mode");
    if (mode && !strcmp(mode->s, "linear")) mode->s = "linear";
    /* Before opset 11 the sampling grid was "asymmetric". */
    GraphAttr ctm = {0};
    ctm.name = "coordinate_transformation_mode";
    ctm.kind = GRAPH_ATTR_STRING;
    ctm.s = "asymmetric";
    drop_attr(c, "coordinate_transformation_mode");
    c->attrs[c->nattrs++] = ctm;
    GraphAttr nm = {0};
    nm.name = "nearest_mode";
    nm.kind = GRAPH_ATTR_STRING;
    nm.s = "floor";
    drop_attr(c, "nearest_mode");
    c->attrs[c->nattrs++] = nm;
    *op_type = "Resize";
  } else if (!strcmp(op, "Scatter")) {
    /* Scatter (opsets 9-10) is ScatterElements without a reduction. */
    *op_type = "ScatterElements";
  } else if (!strcmp(op, "TopK") && opset < 10) {
    /* TopK-1 took K as an attribute. */
    GraphAttr *k = take_attr(c, "k");
    if (!k) return node_fail(c, LOOM_ERR_INVALID_ARG, "required attribute \"k\" is missing");
    int64_t kv = k->i;
    drop_attr(c, "k");
    if (c->nins != 1) return node_fail(c, LOOM_ERR_INVALID_ARG, "opset %lld TopK takes 1 input", (long long)opset);
    c->ins[c->nins++] = const_ints(c, "k", &kv, 1);
  } else if ((!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax") || !strcmp(op, "Hardmax")) && opset < 13) {
    /* Before opset 13, Softmax, LogSoftmax and Hardmax flattened to 2-D at `axis`. */
    GraphAttr a = {0};
    a.name = "coerce_2d";
    a.kind = GRAPH_ATTR_INT;
    a.i = 1;
    c->attrs[c->nattrs++] = a;
  } else if (!strcmp(op, "Dropout")) {
    drop_attr(c, "ratio");
    drop_attr(c, "seed");
    if (c->nins > 1) c->nins = 1; /* ratio and training_mode inputs: inference only */
  } else if (!strcmp(op, "BatchNormalization")) {
    /* spatial=0 (opsets 7-8) gives per-activation parameters, [C, D1, ...]:
     * read per channel they would silently mean something else. */
    GraphAttr *sp = take_attr(c, "spatial");
    for (int k = 1; sp && sp->kind == GRAPH_ATTR_INT && !sp->i && k < c->nins; k++) {
      const GraphTensor *t = c->ins[k] >= 0 ? c->im->g->values[c->ins[k]].constant : NULL;
      if (!t || t->rank != 1)
        return node_fail(c, LOOM_ERR_UNSUPPORTED,
                         "attribute \"spatial\" is 0 and input %d is not a 1-D constant: per-activation statistics "
                         "are not supported",
                         k);
    }
    drop_attr(c, "spatial");
    drop_attr(c, "momentum");
    drop_attr(c, "consumed_inputs");
    drop_attr(c, "is_test");
    GraphAttr *tm = take_attr(c, "training_mode");
    if (tm && tm->i) return node_fail(c, LOOM_ERR_UNSUPPORTED, "training_mode=1 is not supported (inference only)");
    drop_attr(c, "training_mode");
  }
  return LOOM_OK;
}

/* An ONNX dtype-number attribute (Cast's "to") becomes a Loom dtype name;
 * an absent one becomes `dflt` (NULL: left absent). `what` starts the
 * message for an unsupported dtype. */
static loom_status convert_dtype_attr(NodeCtx *c, const char *name, const char *dflt, const char *what) {
  GraphAttr *to = take_attr(c, name);
  if (!to) {
    if (!dflt || c->nattrs >= 32) return LOOM_OK;
    GraphAttr a = {0};
    a.name = name;
    a.kind = GRAPH_ATTR_STRING;
    a.s = dflt;
    c->attrs[c->nattrs++] = a;
    return LOOM_OK;
  }
  DType dt;
  if (!onnx_dtype_to_loom((int)to->i, &dt))
    return node_fail(c, LOOM_ERR_UNSUPPORTED, "%s %s (%lld) is not supported", what, onnx_dtype_name((int)to->i),
                     (long long)to->i);
  char buf[16];
  to->kind = GRAPH_ATTR_STRING;
  to->s = arena_strdup(c->im->g->arena, dtype_str(dt, buf));
  return LOOM_OK;
}

static loom_status convert_cast(NodeCtx *c) { return convert_dtype_attr(c, "to", NULL, "cast to"); }

/* QuantizeLinear / DequantizeLinear: output_dtype and precision become dtype
 * names; 0 (UNDEFINED) means not given. */
static loom_status convert_quant(NodeCtx *c) {
  static const char *const names[] = {"output_dtype", "precision"};
  for (int k = 0; k < 2; k++) {
    GraphAttr *a = take_attr(c, names[k]);
    if (a && a->kind == GRAPH_ATTR_INT && a->i == 0) drop_attr(c, names[k]);
    else if (a) {
      loom_status st = convert_dtype_attr(c, names[k], NULL, names[k]);
      if (st) return st;
    }
  }
  return LOOM_OK;
}

/* Sequence-model and signal ops: output_datatype becomes a Loom dtype name,
 * DFT's axis attribute (before opset 20) becomes input 2, and the RNN
 * family's activations (STRINGS) one comma-separated string. */
static loom_status rewrite_seq_forms(NodeCtx *c, const char *op) {
  if (!strcmp(op, "BlackmanWindow") || !strcmp(op, "HammingWindow") || !strcmp(op, "HannWindow") ||
      !strcmp(op, "MelWeightMatrix"))
    return convert_dtype_attr(c, "output_datatype", "f32", "output_datatype");
  if (!strcmp(op, "DFT") && c->im->opset < 20) {
    GraphAttr *ax = take_attr(c, "axis");
    int64_t axis = ax ? ax->i : 1;
    drop_attr(c, "axis");
    if (c->nins > 2) return node_fail(c, LOOM_ERR_INVALID_ARG, "opset %lld DFT takes at most 2 inputs", (long long)c->im->opset);
    while (c->nins < 2) c->ins[c->nins++] = GRAPH_NO_VALUE;
    c->ins[c->nins++] = const_ints(c, "axis", &axis, 1);
    return LOOM_OK;
  }
  if (strcmp(op, "RNN") && strcmp(op, "GRU") && strcmp(op, "LSTM")) return LOOM_OK;
  const OnnxAttr *a = find_attr(c->n, "activations");
  if (!a) return LOOM_OK;
  if (onnx_attr_effective_type(a) != ONNX_ATTR_STRINGS)
    return node_fail(c, LOOM_ERR_INVALID_ARG, "attribute \"activations\" has type %s, expected STRINGS",
                     onnx_attr_type_name(onnx_attr_effective_type(a)));
  size_t len = 1;
  for (int k = 0; k < a->nstrings; k++) len += a->strings[k].len + 1;
  char *s = ARENA_ARRAY(c->im->g->arena, char, len), *p = s;
  for (int k = 0; k < a->nstrings; k++) {
    if (k) *p++ = ',';
    if (a->strings[k].len) memcpy(p, a->strings[k].data, a->strings[k].len);
    p += a->strings[k].len;
  }
  *p = 0;
  if (c->nattrs >= 32) return node_fail(c, LOOM_ERR_UNSUPPORTED, "more than 32 attributes");
  GraphAttr g = {0};
  g.name = "activations";
  g.kind = GRAPH_ATTR_STRING;
  g.s = s;
  c->attrs[c->nattrs++] = g;
  return LOOM_OK;
}

OnnxNode *onnx_node_new(Arena *a, const char *name, const char *op, const char *const *ins, int nins, const char *out,
                        const OnnxAttr *attrs, int nattrs) {
  OnnxNode *n = ARENA_NEW(a, OnnxNode);
  memset(n, 0, sizeof *n);
  n->name = name;
  n->op_type = op;
  n->domain = "";
  n->inputs = ARENA_ARRAY(a, const char *, nins > 0 ? nins : 1);
  if (nins) memcpy(n->inputs, ins, sizeof(const char *) * (size_t)nins);
  n->ninputs = nins;
  n->outputs = ARENA_ARRAY(a, const char *, 1);
  n->outputs[0] = out;
  n->noutputs = 1;
  n->attrs = ARENA_ARRAY(a, OnnxAttr, nattrs > 0 ? nattrs : 1);
  if (nattrs) memcpy(n->attrs, attrs, sizeof(OnnxAttr) * (size_t)nattrs);
  n->nattrs = nattrs;
  return n;
}

loom_status onnx_convert_node(Importer *im, const OnnxNode *n) {
  NodeCtx c;
  memset(&c, 0, sizeof c);
  c.im = im;
  c.n = n;
  if (onnx_is_flex_attention(n)) return onnx_convert_flex(im, n);
  /* Control-flow nodes keep the model's opset: their bodies are converted
   * later, node by node (import_control.c). */
  if (im->opset < ONNX_ADAPTED_OPSET && !onnx_is_control_flow(n->op_type)) return onnx_convert_legacy(im, n);
  if (!strcmp(n->op_type, "Constant")) return convert_constant(&c);
  if (n->ninputs > 12) {
    /* Variadic ops (Concat, Sum) can have many inputs; keep them. */
  }
  Graph *g = im->g;
  ValueId *ins = n->ninputs > 12 ? ARENA_ARRAY(im->scratch, ValueId, n->ninputs) : c.ins;
  for (int k = 0; k < n->ninputs; k++) {
    if (!n->inputs[k][0]) {
      ins[k] = GRAPH_NO_VALUE;
      continue;
    }
    ins[k] = namemap_get(&im->names, n->inputs[k]);
    LOOM_ASSERT(ins[k] >= 0); /* import.c checked every name */
  }
  c.nins = n->ninputs;
  if (onnx_is_control_flow(n->op_type)) return onnx_convert_control(im, n, ins, n->ninputs);
  /* Trailing omitted inputs carry no information. */
  while (c.nins > 0 && ins[c.nins - 1] == GRAPH_NO_VALUE) c.nins--;
  loom_status st = convert_attrs(&c);
  if (st) return st;
  const char *op_type = n->op_type;
  if (n->ninputs <= 12) {
    st = rewrite_opset_forms(&c, &op_type);
    if (st) return st;
  }
  if ((!strcmp(op_type, "Cast") || !strcmp(op_type, "BitCast")) && (st = convert_cast(&c))) return st;
  if (!strcmp(op_type, "EyeLike") && (st = convert_dtype_attr(&c, "dtype", NULL, "dtype"))) return st;
  if ((!strcmp(op_type, "QuantizeLinear") || !strcmp(op_type, "DequantizeLinear")) && (st = convert_quant(&c))) return st;
  if (n->ninputs <= 12 && (st = rewrite_seq_forms(&c, op_type))) return st;
  GraphOp op;
  LOOM_ASSERT(graph_op_lookup(op_type, &op));
  ValueId outs[16];
  if (n->noutputs > 16 && strcmp(op_type, "Split"))
    return node_fail(&c, LOOM_ERR_INVALID_ARG, "too many outputs (%d)", n->noutputs);
  ValueId *outp = n->noutputs > 16 ? ARENA_ARRAY(im->scratch, ValueId, n->noutputs) : outs;
  if (n->noutputs < 1) return node_fail(&c, LOOM_ERR_INVALID_ARG, "node has no outputs");
  for (int k = 0; k < n->noutputs; k++) {
    if (!n->outputs[k][0]) {
      outp[k] = GRAPH_NO_VALUE;
      continue;
    }
    outp[k] = graph_add_value(g, n->outputs[k]);
    namemap_put(&im->names, g->values[outp[k]].name, outp[k]);
  }
  int idx = graph_add_node(g, op, n->name, ins == c.ins ? c.ins : ins, c.nins, outp, n->noutputs);
  GraphNode *gn = &g->nodes[idx];
  for (int k = 0; k < c.nattrs; k++) graph_node_set_attr(g, gn, c.attrs[k]);
  return LOOM_OK;
}
