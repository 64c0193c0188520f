/* Graph IR: a typed dataflow graph of tensor operators, the level between
 * a model file (ONNX) and the loop IR. Plain data in one arena:
 *
 *   values  tensors, identified by index (ValueId); each has a name, a dtype,
 *           a shape (dims, -1 where not known yet, optionally a symbolic
 *           name), at most one producer node, and for constants (weights,
 *           folded shape metadata) the data itself, owned by the graph.
 *   nodes   an op from the registry (ops.c), attributes as a small typed
 *           key-value list, input and output value ids (-1 for an omitted
 *           optional input) and the source node name for messages.
 *
 * Op semantics are those of the newest ONNX opset: operands that older
 * opsets passed as attributes (Reshape shape, Slice starts/ends, Squeeze and
 * ReduceMean axes, Pad pads, Clip min/max, Split sizes, Resize scales) are
 * inputs here, usually constant values; the importer converts old forms.
 * Nodes are kept in topological order by every pass. */
#ifndef LOOM_GRAPH_GRAPH_H
#define LOOM_GRAPH_GRAPH_H

#include "ir/dtype.h"
#include "support/arena.h"
#include "support/error.h"
#include "support/strbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef int ValueId;
#define GRAPH_NO_VALUE (-1)

/* Fusion pattern classes (TVM's OpPatternKind): ordered so that a larger
 * value is harder to fuse. */
typedef enum GraphOpPattern {
  GRAPH_PATTERN_ELEMWISE = 0,
  GRAPH_PATTERN_BROADCAST = 1,
  GRAPH_PATTERN_INJECTIVE = 2,
  GRAPH_PATTERN_REDUCTION = 3,
  GRAPH_PATTERN_OUT_ELEMWISE_FUSABLE = 4, /* conv2d, matmul, dense */
  GRAPH_PATTERN_OPAQUE = 8,
} GraphOpPattern;

/* X(ENUM, name, pattern, inference). Names are the ONNX op types; the
 * inference column names infer_<x> in graph/infer_internal.h. */
#define GRAPH_OPS(X)                                   \
  X(ADD, "Add", BROADCAST, broadcast)                             \
  X(SUB, "Sub", BROADCAST, broadcast)                             \
  X(MUL, "Mul", BROADCAST, broadcast)                             \
  X(DIV, "Div", BROADCAST, broadcast)                             \
  X(POW, "Pow", BROADCAST, broadcast)                             \
  X(MAX, "Max", BROADCAST, broadcast)                             \
  X(MIN, "Min", BROADCAST, broadcast)                             \
  X(SUM, "Sum", BROADCAST, broadcast)                             \
  X(EQUAL, "Equal", BROADCAST, compare)                         \
  X(LESS, "Less", BROADCAST, compare)                           \
  X(GREATER, "Greater", BROADCAST, compare)                     \
  X(AND, "And", BROADCAST, compare)                             \
  X(OR, "Or", BROADCAST, compare)                               \
  X(WHERE, "Where", BROADCAST, where)                         \
  X(PRELU, "PRelu", BROADCAST, broadcast)                         \
  X(RELU, "Relu", ELEMWISE, unary)                            \
  X(LEAKY_RELU, "LeakyRelu", ELEMWISE, unary)                 \
  X(CLIP, "Clip", ELEMWISE, unary)                            \
  X(SQRT, "Sqrt", ELEMWISE, unary)                            \
  X(RECIPROCAL, "Reciprocal", ELEMWISE, unary)                \
  X(EXP, "Exp", ELEMWISE, unary)                              \
  X(LOG, "Log", ELEMWISE, unary)                              \
  X(NEG, "Neg", ELEMWISE, unary)                              \
  X(ABS, "Abs", ELEMWISE, unary)                              \
  X(FLOOR, "Floor", ELEMWISE, unary)                          \
  X(CEIL, "Ceil", ELEMWISE, unary)                            \
  X(NOT, "Not", ELEMWISE, unary)                              \
  X(ERF, "Erf", ELEMWISE, unary)                              \
  X(TANH, "Tanh", ELEMWISE, unary)                            \
  X(SIGMOID, "Sigmoid", ELEMWISE, unary)                      \
  X(HARD_SIGMOID, "HardSigmoid", ELEMWISE, unary)             \
  X(HARD_SWISH, "HardSwish", ELEMWISE, unary)                 \
  X(GELU, "Gelu", ELEMWISE, unary)                            \
  /* elementwise math, logic and bitwise ops (topi/op_elemwise.c, graph/infer_math.c) */ \
  X(SIN, "Sin", ELEMWISE, unary)                            \
  X(COS, "Cos", ELEMWISE, unary)                            \
  X(TAN, "Tan", ELEMWISE, unary)                            \
  X(ASIN, "Asin", ELEMWISE, unary)                          \
  X(ACOS, "Acos", ELEMWISE, unary)                          \
  X(ATAN, "Atan", ELEMWISE, unary)                          \
  X(SINH, "Sinh", ELEMWISE, unary)                          \
  X(COSH, "Cosh", ELEMWISE, unary)                          \
  X(ASINH, "Asinh", ELEMWISE, unary)                        \
  X(ACOSH, "Acosh", ELEMWISE, unary)                        \
  X(ATANH, "Atanh", ELEMWISE, unary)                        \
  X(SIGN, "Sign", ELEMWISE, unary)                          \
  X(ROUND, "Round", ELEMWISE, unary)                        \
  X(ELU, "Elu", ELEMWISE, unary)                            \
  X(SELU, "Selu", ELEMWISE, unary)                          \
  X(CELU, "Celu", ELEMWISE, unary)                          \
  X(SOFTPLUS, "Softplus", ELEMWISE, unary)                  \
  X(SOFTSIGN, "Softsign", ELEMWISE, unary)                  \
  X(SWISH, "Swish", ELEMWISE, unary)                        \
  X(MISH, "Mish", ELEMWISE, unary)                          \
  X(SHRINK, "Shrink", ELEMWISE, unary)                      \
  X(THRESHOLDED_RELU, "ThresholdedRelu", ELEMWISE, unary)   \
  X(BITWISE_NOT, "BitwiseNot", ELEMWISE, unary)             \
  X(IS_NAN, "IsNaN", ELEMWISE, is_class)                    \
  X(IS_INF, "IsInf", ELEMWISE, is_class)                    \
  X(MOD, "Mod", BROADCAST, broadcast)                       \
  X(BITWISE_AND, "BitwiseAnd", BROADCAST, broadcast)        \
  X(BITWISE_OR, "BitwiseOr", BROADCAST, broadcast)          \
  X(BITWISE_XOR, "BitwiseXor", BROADCAST, broadcast)        \
  X(BIT_SHIFT, "BitShift", BROADCAST, broadcast)            \
  X(MEAN, "Mean", BROADCAST, broadcast)                     \
  X(GREATER_OR_EQUAL, "GreaterOrEqual", BROADCAST, compare) \
  X(LESS_OR_EQUAL, "LessOrEqual", BROADCAST, compare)       \
  X(XOR, "Xor", BROADCAST, compare)                         \
  X(CAST_LIKE, "CastLike", ELEMWISE, cast_like)             \
  X(SIZE, "Size", OPAQUE, size)                             \
  X(CAST, "Cast", ELEMWISE, cast)                            \
  X(IDENTITY, "Identity", ELEMWISE, unary)                    \
  X(DROPOUT, "Dropout", ELEMWISE, dropout)                      \
  X(BATCH_NORM, "BatchNormalization", BROADCAST, unary)       \
  X(CONV, "Conv", OUT_ELEMWISE_FUSABLE, conv)                \
  X(GEMM, "Gemm", OUT_ELEMWISE_FUSABLE, gemm)                \
  X(MATMUL, "MatMul", OUT_ELEMWISE_FUSABLE, matmul)            \
  X(MAX_POOL, "MaxPool", OUT_ELEMWISE_FUSABLE, pool)         \
  X(AVERAGE_POOL, "AveragePool", OUT_ELEMWISE_FUSABLE, pool) \
  X(GLOBAL_AVERAGE_POOL, "GlobalAveragePool", REDUCTION, global_pool) \
  X(GLOBAL_MAX_POOL, "GlobalMaxPool", REDUCTION, global_pool)       \
  X(REDUCE_MEAN, "ReduceMean", REDUCTION, reduce)              \
  X(REDUCE_SUM, "ReduceSum", REDUCTION, reduce)                \
  X(REDUCE_MAX, "ReduceMax", REDUCTION, reduce)                \
  X(SOFTMAX, "Softmax", OPAQUE, unary)                        \
  X(LAYER_NORM, "LayerNormalization", OPAQUE, layer_norm)          \
  /* reductions, normalizations, losses (op_reduce.c, op_reduce2.c, op_norm.c) */ \
  X(REDUCE_MIN, "ReduceMin", REDUCTION, reduce)                \
  X(REDUCE_PROD, "ReduceProd", REDUCTION, reduce)              \
  X(REDUCE_L1, "ReduceL1", REDUCTION, reduce)                  \
  X(REDUCE_L2, "ReduceL2", REDUCTION, reduce)                  \
  X(REDUCE_LOG_SUM, "ReduceLogSum", REDUCTION, reduce)         \
  X(REDUCE_LOG_SUM_EXP, "ReduceLogSumExp", OPAQUE, reduce)     \
  X(REDUCE_SUM_SQUARE, "ReduceSumSquare", REDUCTION, reduce)   \
  X(ARG_MAX, "ArgMax", OPAQUE, arg_reduce)                     \
  X(ARG_MIN, "ArgMin", OPAQUE, arg_reduce)                     \
  X(LOG_SOFTMAX, "LogSoftmax", OPAQUE, unary)                  \
  X(HARDMAX, "Hardmax", OPAQUE, unary)                         \
  X(CUMSUM, "CumSum", OPAQUE, unary)                           \
  X(CUMPROD, "CumProd", OPAQUE, unary)                         \
  X(RMS_NORM, "RMSNormalization", OPAQUE, unary)               \
  X(GROUP_NORM, "GroupNormalization", OPAQUE, unary)           \
  X(INSTANCE_NORM, "InstanceNormalization", OPAQUE, unary)     \
  X(LP_NORM, "LpNormalization", OPAQUE, unary)                 \
  X(MVN, "MeanVarianceNormalization", OPAQUE, unary)           \
  X(LRN, "LRN", OPAQUE, unary)                                 \
  X(NLL_LOSS, "NegativeLogLikelihoodLoss", OPAQUE, loss)       \
  X(SCE_LOSS, "SoftmaxCrossEntropyLoss", OPAQUE, loss)         \
  X(FLATTEN, "Flatten", INJECTIVE, flatten)                     \
  X(RESHAPE, "Reshape", INJECTIVE, reshape)                     \
  X(TRANSPOSE, "Transpose", INJECTIVE, transpose)                 \
  X(CONCAT, "Concat", INJECTIVE, concat)                       \
  X(SPLIT, "Split", INJECTIVE, split)                         \
  X(SLICE, "Slice", INJECTIVE, slice)                         \
  X(GATHER, "Gather", INJECTIVE, gather)                       \
  X(SQUEEZE, "Squeeze", INJECTIVE, squeeze)                     \
  X(UNSQUEEZE, "Unsqueeze", INJECTIVE, unsqueeze)                 \
  X(EXPAND, "Expand", BROADCAST, expand)                       \
  X(PAD, "Pad", INJECTIVE, pad)                             \
  X(TILE, "Tile", INJECTIVE, tile)                           \
  X(RESIZE, "Resize", INJECTIVE, resize)                       \
  X(SHAPE, "Shape", OPAQUE, shape)                            \
  X(CONSTANT_OF_SHAPE, "ConstantOfShape", OPAQUE, constant_of_shape)      \
  X(RANGE, "Range", OPAQUE, range)                                \
  /* sequence models and signal processing (topi/op_attention.c, op_rnn.c, op_signal.c) */ \
  X(ATTENTION, "Attention", OPAQUE, attention)                   \
  X(ROTARY_EMBEDDING, "RotaryEmbedding", INJECTIVE, rotary_embedding) \
  X(SWIGLU, "SwiGLU", ELEMWISE, swiglu)                          \
  X(LINEAR_ATTENTION, "LinearAttention", OPAQUE, linear_attention) \
  X(CAUSAL_CONV_WITH_STATE, "CausalConvWithState", OPAQUE, causal_conv_with_state) \
  X(TENSOR_SCATTER, "TensorScatter", INJECTIVE, tensor_scatter)  \
  X(RNN, "RNN", OPAQUE, rnn)                                     \
  X(GRU, "GRU", OPAQUE, rnn)                                     \
  X(LSTM, "LSTM", OPAQUE, rnn)                                   \
  X(DET, "Det", OPAQUE, det)                                     \
  X(BLACKMAN_WINDOW, "BlackmanWindow", OPAQUE, window)           \
  X(HAMMING_WINDOW, "HammingWindow", OPAQUE, window)             \
  X(HANN_WINDOW, "HannWindow", OPAQUE, window)                   \
  X(DFT, "DFT", OPAQUE, dft)                                     \
  X(STFT, "STFT", OPAQUE, stft)                                  \
  X(MEL_WEIGHT_MATRIX, "MelWeightMatrix", OPAQUE, mel_weight_matrix) \
  /* vision, sorting, data-dependent output shapes (topi/op_vision.c, op_sort.c, \
   * op_dynamic.c; graph/infer_vision.c; compile/dynamic.c) */ \
  X(GRID_SAMPLE, "GridSample", OPAQUE, grid_sample)                       \
  X(AFFINE_GRID, "AffineGrid", INJECTIVE, affine_grid)                    \
  X(ROI_ALIGN, "RoiAlign", OPAQUE, roi_align)                             \
  X(DEFORM_CONV, "DeformConv", OPAQUE, deform_conv)                       \
  X(BIT_CAST, "BitCast", ELEMWISE, bit_cast)                              \
  X(TOP_K, "TopK", OPAQUE, top_k)                                         \
  X(NON_ZERO, "NonZero", OPAQUE, non_zero)                                \
  X(COMPRESS, "Compress", OPAQUE, compress)                               \
  X(UNIQUE, "Unique", OPAQUE, unique)                                     \
  X(NON_MAX_SUPPRESSION, "NonMaxSuppression", OPAQUE, non_max_suppression) \
  /* indexing, rearrangements, N-D windows (topi/op_index.c, op_space.c,    \
   * op_einsum.c, op_conv_nd.c, op_pool.c; graph/infer_index.c, infer_window.c) */ \
  X(GATHER_ELEMENTS, "GatherElements", INJECTIVE, gather_elements)        \
  X(GATHER_ND, "GatherND", INJECTIVE, gather_nd)                          \
  X(SCATTER_ELEMENTS, "ScatterElements", OPAQUE, scatter)                 \
  X(SCATTER_ND, "ScatterND", OPAQUE, scatter)                             \
  X(ONE_HOT, "OneHot", INJECTIVE, one_hot)                                \
  X(TRILU, "Trilu", INJECTIVE, trilu)                                     \
  X(EYE_LIKE, "EyeLike", INJECTIVE, eye_like)                             \
  X(DEPTH_TO_SPACE, "DepthToSpace", INJECTIVE, depth_to_space)            \
  X(SPACE_TO_DEPTH, "SpaceToDepth", INJECTIVE, depth_to_space)            \
  X(REVERSE_SEQUENCE, "ReverseSequence", INJECTIVE, reverse_sequence)     \
  X(CENTER_CROP_PAD, "CenterCropPad", INJECTIVE, center_crop_pad)         \
  X(EINSUM, "Einsum", OPAQUE, einsum)                                     \
  X(CONV_TRANSPOSE, "ConvTranspose", OUT_ELEMWISE_FUSABLE, conv_transpose) \
  X(CONV_INTEGER, "ConvInteger", OUT_ELEMWISE_FUSABLE, conv_integer)       \
  X(COL2IM, "Col2Im", OPAQUE, col2im)                                     \
  X(LP_POOL, "LpPool", OUT_ELEMWISE_FUSABLE, pool)                        \
  X(MAX_UNPOOL, "MaxUnpool", OPAQUE, max_unpool)                          \
  /* quantization (topi/op_quant.c; graph/infer_quant.c; compile/op_compute_quant.c) */ \
  X(QUANTIZE_LINEAR, "QuantizeLinear", BROADCAST, quantize_linear)        \
  X(DEQUANTIZE_LINEAR, "DequantizeLinear", BROADCAST, dequantize_linear)  \
  X(DYNAMIC_QUANTIZE_LINEAR, "DynamicQuantizeLinear", OPAQUE, dynamic_quantize_linear) \
  X(MATMUL_INTEGER, "MatMulInteger", OUT_ELEMWISE_FUSABLE, matmul_integer) \
  X(QLINEAR_MATMUL, "QLinearMatMul", OPAQUE, qlinear_matmul)              \
  X(QLINEAR_CONV, "QLinearConv", OPAQUE, qlinear_conv)                    \
  /* Control flow: inlined or unrolled by the importer once the values that  \
   * decide it are known (frontend/onnx/import_control.c); never compiled. */ \
  X(IF, "If", OPAQUE, control_flow)                                       \
  X(LOOP, "Loop", OPAQUE, control_flow)                                   \
  X(SCAN, "Scan", OPAQUE, control_flow)                                   \
  /* Loom's own (pass_layout.c, infer_nchwc.c): blocked NCHWc layout */ \
  X(LAYOUT_TRANSFORM, "LayoutTransform", INJECTIVE, layout_transform) \
  X(CONV_NCHWC, "ConvNCHWc", OUT_ELEMWISE_FUSABLE, conv_nchwc)             \
  X(MAX_POOL_NCHWC, "MaxPoolNCHWc", OUT_ELEMWISE_FUSABLE, pool_nchwc)      \
  X(AVERAGE_POOL_NCHWC, "AveragePoolNCHWc", OUT_ELEMWISE_FUSABLE, pool_nchwc) \
  /* Loom's own (pass_pack_matmul.c, infer_matmul_packed.c): B in column panels */ \
  X(MATMUL_PACKED, "MatMulPacked", OUT_ELEMWISE_FUSABLE, matmul_packed)

typedef enum GraphOp {
#define X(e, name, pat, infer) GRAPH_OP_##e,
  GRAPH_OPS(X)
#undef X
  GRAPH_OP_COUNT
} GraphOp;

typedef enum GraphAttrKind {
  GRAPH_ATTR_INT,
  GRAPH_ATTR_FLOAT,
  GRAPH_ATTR_STRING,
  GRAPH_ATTR_INTS,
  GRAPH_ATTR_FLOATS,
  GRAPH_ATTR_TENSOR,
  GRAPH_ATTR_FRONTEND, /* p: the frontend's own node (control flow bodies) */
} GraphAttrKind;

typedef struct GraphTensor {
  DType dtype;
  int rank;
  int64_t *dims;
  void *data; /* dense row-major, dtype_bytes(dtype) per element; bool is 1 byte */
  size_t nbytes;
} GraphTensor;

typedef struct GraphAttr {
  const char *name;
  GraphAttrKind kind;
  int64_t i;
  double f;
  const char *s;
  int64_t *ints;
  double *floats;
  int n; /* length of ints or floats */
  GraphTensor *t;
  const void *p;
} GraphAttr;

typedef struct GraphValue {
  const char *name;
  DType dtype;       /* DT_VOID while unknown */
  int rank;          /* -1 while unknown */
  int64_t *dims;     /* rank entries; -1 for an unknown extent */
  const char **dim_params; /* NULL, or rank entries (NULL where none): symbolic names from the model */
  int producer;      /* node index, -1 for graph inputs and constants */
  GraphTensor *constant; /* non-NULL for constants (weights and folded values) */
} GraphValue;

typedef struct GraphNode {
  GraphOp op;
  const char *name; /* the source (ONNX) node name, for messages */
  ValueId *inputs;
  int ninputs;
  ValueId *outputs;
  int noutputs;
  GraphAttr *attrs;
  int nattrs;
} GraphNode;

typedef struct Graph {
  Arena *arena; /* owns everything below, including constant data */
  const char *name;
  GraphValue *values;
  int nvalues, values_cap;
  GraphNode *nodes;
  int nnodes, nodes_cap;
  ValueId *inputs, *outputs;
  int ninputs, noutputs;
  /* What the frontend keeps alive for GRAPH_ATTR_FRONTEND attributes;
   * graph_free calls frontend_free(frontend). */
  void *frontend;
  void (*frontend_free)(void *);
} Graph;

typedef loom_status (*GraphInferFn)(Graph *g, GraphNode *n, LoomError *err);

typedef struct GraphOpInfo {
  const char *name;
  GraphOpPattern pattern;
  GraphInferFn infer;
} GraphOpInfo;

/* ---- registry (ops.c) ---- */
const GraphOpInfo *graph_op_info(GraphOp op);
/* Looks an op up by name; false when no op has it. */
bool graph_op_lookup(const char *name, GraphOp *out);
const char *graph_pattern_name(GraphOpPattern p);

/* ---- building (graph.c) ---- */
/* A graph in its own arena; graph_free releases everything. */
Graph *graph_new(const char *name);
void graph_free(Graph *g);
/* A value with unknown type and shape. */
ValueId graph_add_value(Graph *g, const char *name);
/* A constant value owning `t` (which must live in g->arena). */
ValueId graph_add_constant(Graph *g, const char *name, GraphTensor *t);
/* Appends a node; inputs/outputs are copied. Returns the node index. */
int graph_add_node(Graph *g, GraphOp op, const char *name, const ValueId *inputs, int ninputs,
                   const ValueId *outputs, int noutputs);
void graph_set_type(Graph *g, ValueId v, DType dtype, int rank, const int64_t *dims);
void graph_node_set_attr(Graph *g, GraphNode *n, GraphAttr attr);
/* Attribute lookup: NULL when absent. */
const GraphAttr *graph_node_attr(const GraphNode *n, const char *name);
int64_t graph_attr_int(const GraphNode *n, const char *name, int64_t dflt);
double graph_attr_float(const GraphNode *n, const char *name, double dflt);
const char *graph_attr_string(const GraphNode *n, const char *name, const char *dflt);

/* Gives every graph-input extent named `param` (an ONNX dim_param such as
 * "batch") the value `extent`; returns how many extents were bound. Run
 * before inference to make a model with symbolic dims static. */
int graph_bind_dim_param(Graph *g, const char *param, int64_t extent);
/* Sets the shape of graph input `name` (all extents >= 0; the rank must
 * match a known rank). Errors name the input. */
loom_status graph_set_input_shape(Graph *g, const char *name, int rank, const int64_t *dims, LoomError *err);

/* ---- tensors ---- */
GraphTensor *graph_tensor_new(Arena *a, DType dtype, int rank, const int64_t *dims);
int64_t graph_tensor_numel(const GraphTensor *t);
/* Element k converted to int64 / double (any dtype). */
int64_t graph_tensor_get_i64(const GraphTensor *t, int64_t k);
double graph_tensor_get_f64(const GraphTensor *t, int64_t k);
void graph_tensor_set_i64(GraphTensor *t, int64_t k, int64_t v);
void graph_tensor_set_f64(GraphTensor *t, int64_t k, double v);
/* Number of elements of a shape, -1 when any extent is unknown or negative,
 * -2 on overflow. */
int64_t graph_shape_numel(int rank, const int64_t *dims);
/* True when the value's dtype and every extent are known. */
bool graph_value_is_static(const GraphValue *v);
/* The constant tensor behind a value or NULL. */
const GraphTensor *graph_value_constant(const Graph *g, ValueId v);

/* ---- printing (print.c) ---- */
/* Stable text form (`loom inspect --dump graph`):
 *   graph NAME(%x: f32[1, 3, 224, 224]) {
 *     %w = const f32[64, 3, 7, 7]
 *     %shape = const i64[2] [1, -1]
 *     %y: f32[1, 64, 112, 112] = Conv(%x, %w) {strides=[2, 2]}  # "conv0"
 *     return %y
 *   }
 * Constants with at most 16 elements print their values. */
void graph_print(const Graph *g, StrBuf *sb);
void graph_print_value_type(const Graph *g, ValueId v, StrBuf *sb);

/* ---- passes ---- */
/* Shape and dtype inference over every node, in order (pass_infer.c).
 * Errors name the node and what mismatched. */
loom_status graph_pass_infer(Graph *g, LoomError *err);
/* Infers and then folds nodes whose inputs are all constant (or Shape of a
 * static value) into constants, when the result is small shape-like
 * metadata (pass_fold.c). Runs inference as it goes. */
loom_status graph_pass_fold_constants(Graph *g, LoomError *err);
/* Removes Identity and Dropout (pass_simplify.c). */
loom_status graph_pass_remove_identity(Graph *g, LoomError *err);
/* Removes nodes whose outputs reach no graph output, and unused constants
 * (pass_dce.c). */
loom_status graph_pass_dce(Graph *g, LoomError *err);
/* Deletes the nodes with remove[i] set, keeping the order of the rest and
 * fixing up producer indices. */
void graph_remove_nodes(Graph *g, const bool *remove);
/* Appends copies of nodes as they are (their arrays and attributes are
 * shared, not copied); their outputs' producers follow. */
void graph_append_nodes(Graph *g, const GraphNode *nodes, int n);
/* Replaces every use of `from` (node inputs, graph outputs) with `to`. */
void graph_replace_uses(Graph *g, ValueId from, ValueId to);
/* Checks that nodes are in topological order and every input is defined. */
loom_status graph_verify(const Graph *g, LoomError *err);

#endif
