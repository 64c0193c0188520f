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

#include <limits.h>
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

/* Where a node's inputs are compile-time values: bit i for input i (inputs
 * past 31 share bit 31). Those are the operands that decide shapes, axes,
 * counts or which nodes run (Reshape's shape, Slice's starts, TopK's K,
 * If's condition...): the compiler needs their VALUE, and specialization
 * (compile/specialize.c) compiles in the inputs they depend on. Every other
 * input is data, which a runtime value may feed. */
#define GRAPH_INPUT(i) (1u << (i))
#define GRAPH_INPUTS_FROM(i) (~0u << (i))
/* An input or output count without an upper bound (Sum, Concat, Split). */
#define GRAPH_VARIADIC INT_MAX

/* The op registry, one row per op:
 *   X(ENUM, name, pattern, inference, min inputs, max inputs, min outputs,
 *     max outputs, compile-time inputs, attributes)
 * Names are the ONNX op types; inference names infer_<x> in
 * graph/infer_internal.h; the counts are ONNX's over all its opsets (the
 * importer refuses a node outside them; omitted trailing inputs do not
 * count); attributes names graph_attrs_<x> in ops.c, the op's attributes
 * with their kinds and ONNX defaults (the importer fills in every absent
 * one from there), `none` for none. */
#define GRAPH_OPS(X) \
  X(ADD, "Add", BROADCAST, broadcast, 2, 2, 1, 1, 0, none)                                                                \
  X(SUB, "Sub", BROADCAST, broadcast, 2, 2, 1, 1, 0, none)                                                                \
  X(MUL, "Mul", BROADCAST, broadcast, 2, 2, 1, 1, 0, none)                                                                \
  X(DIV, "Div", BROADCAST, broadcast, 2, 2, 1, 1, 0, none)                                                                \
  X(POW, "Pow", BROADCAST, broadcast, 2, 2, 1, 1, 0, none)                                                                \
  X(MAX, "Max", BROADCAST, broadcast, 1, GRAPH_VARIADIC, 1, 1, 0, none)                                                   \
  X(MIN, "Min", BROADCAST, broadcast, 1, GRAPH_VARIADIC, 1, 1, 0, none)                                                   \
  X(SUM, "Sum", BROADCAST, broadcast, 1, GRAPH_VARIADIC, 1, 1, 0, none)                                                   \
  X(EQUAL, "Equal", BROADCAST, compare, 2, 2, 1, 1, 0, none)                                                              \
  X(LESS, "Less", BROADCAST, compare, 2, 2, 1, 1, 0, none)                                                                \
  X(GREATER, "Greater", BROADCAST, compare, 2, 2, 1, 1, 0, none)                                                          \
  X(AND, "And", BROADCAST, compare, 2, 2, 1, 1, 0, none)                                                                  \
  X(OR, "Or", BROADCAST, compare, 2, 2, 1, 1, 0, none)                                                                    \
  X(WHERE, "Where", BROADCAST, where, 3, 3, 1, 1, 0, none)                                                                \
  X(PRELU, "PRelu", BROADCAST, broadcast, 2, 2, 1, 1, 0, none)                                                            \
  X(RELU, "Relu", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                   \
  X(LEAKY_RELU, "LeakyRelu", ELEMWISE, unary, 1, 1, 1, 1, 0, leaky_relu)                                                  \
  X(CLIP, "Clip", ELEMWISE, unary, 1, 3, 1, 1, 0, none)                                                                   \
  X(SQRT, "Sqrt", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                   \
  X(RECIPROCAL, "Reciprocal", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                       \
  X(EXP, "Exp", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                     \
  X(LOG, "Log", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                     \
  X(NEG, "Neg", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                     \
  X(ABS, "Abs", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                     \
  X(FLOOR, "Floor", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                 \
  X(CEIL, "Ceil", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                   \
  X(NOT, "Not", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                     \
  X(ERF, "Erf", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                     \
  X(TANH, "Tanh", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                   \
  X(SIGMOID, "Sigmoid", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                             \
  X(HARD_SIGMOID, "HardSigmoid", ELEMWISE, unary, 1, 1, 1, 1, 0, hard_sigmoid)                                            \
  X(HARD_SWISH, "HardSwish", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                        \
  X(GELU, "Gelu", ELEMWISE, unary, 1, 1, 1, 1, 0, gelu)                                                                   \
  /* elementwise math, logic and bitwise ops (topi/op_elemwise.c, graph/infer_math.c) */                                  \
  X(SIN, "Sin", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                     \
  X(COS, "Cos", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                     \
  X(TAN, "Tan", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                     \
  X(ASIN, "Asin", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                   \
  X(ACOS, "Acos", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                   \
  X(ATAN, "Atan", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                   \
  X(SINH, "Sinh", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                   \
  X(COSH, "Cosh", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                   \
  X(ASINH, "Asinh", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                 \
  X(ACOSH, "Acosh", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                 \
  X(ATANH, "Atanh", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                 \
  X(SIGN, "Sign", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                   \
  X(ROUND, "Round", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                 \
  X(ELU, "Elu", ELEMWISE, unary, 1, 1, 1, 1, 0, elu)                                                                      \
  X(SELU, "Selu", ELEMWISE, unary, 1, 1, 1, 1, 0, selu)                                                                   \
  X(CELU, "Celu", ELEMWISE, unary, 1, 1, 1, 1, 0, celu)                                                                   \
  X(SOFTPLUS, "Softplus", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                           \
  X(SOFTSIGN, "Softsign", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                           \
  X(SWISH, "Swish", ELEMWISE, unary, 1, 1, 1, 1, 0, swish)                                                                \
  X(MISH, "Mish", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                                   \
  X(SHRINK, "Shrink", ELEMWISE, unary, 1, 1, 1, 1, 0, shrink)                                                             \
  X(THRESHOLDED_RELU, "ThresholdedRelu", ELEMWISE, unary, 1, 1, 1, 1, 0, thresholded_relu)                                \
  X(BITWISE_NOT, "BitwiseNot", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                      \
  X(IS_NAN, "IsNaN", ELEMWISE, is_class, 1, 1, 1, 1, 0, none)                                                             \
  X(IS_INF, "IsInf", ELEMWISE, is_class, 1, 1, 1, 1, 0, is_inf)                                                           \
  X(MOD, "Mod", BROADCAST, broadcast, 2, 2, 1, 1, 0, mod)                                                                 \
  X(BITWISE_AND, "BitwiseAnd", BROADCAST, broadcast, 2, 2, 1, 1, 0, none)                                                 \
  X(BITWISE_OR, "BitwiseOr", BROADCAST, broadcast, 2, 2, 1, 1, 0, none)                                                   \
  X(BITWISE_XOR, "BitwiseXor", BROADCAST, broadcast, 2, 2, 1, 1, 0, none)                                                 \
  X(BIT_SHIFT, "BitShift", BROADCAST, broadcast, 2, 2, 1, 1, 0, bit_shift)                                                \
  X(MEAN, "Mean", BROADCAST, broadcast, 1, GRAPH_VARIADIC, 1, 1, 0, none)                                                 \
  X(GREATER_OR_EQUAL, "GreaterOrEqual", BROADCAST, compare, 2, 2, 1, 1, 0, none)                                          \
  X(LESS_OR_EQUAL, "LessOrEqual", BROADCAST, compare, 2, 2, 1, 1, 0, none)                                                \
  X(XOR, "Xor", BROADCAST, compare, 2, 2, 1, 1, 0, none)                                                                  \
  X(CAST_LIKE, "CastLike", ELEMWISE, cast_like, 2, 2, 1, 1, 0, none)                                                      \
  X(SIZE, "Size", OPAQUE, size, 1, 1, 1, 1, 0, none)                                                                      \
  X(CAST, "Cast", ELEMWISE, cast, 1, 1, 1, 1, 0, cast)                                                                    \
  X(IDENTITY, "Identity", ELEMWISE, unary, 1, 1, 1, 1, 0, none)                                                           \
  X(DROPOUT, "Dropout", ELEMWISE, dropout, 1, 3, 1, 2, GRAPH_INPUTS_FROM(2), none)                                        \
  X(BATCH_NORM, "BatchNormalization", BROADCAST, unary, 5, 5, 1, 5, 0, batch_norm)                                        \
  X(CONV, "Conv", OUT_ELEMWISE_FUSABLE, conv, 2, 3, 1, 1, 0, conv)                                                        \
  X(GEMM, "Gemm", OUT_ELEMWISE_FUSABLE, gemm, 2, 3, 1, 1, 0, gemm)                                                        \
  X(MATMUL, "MatMul", OUT_ELEMWISE_FUSABLE, matmul, 2, 2, 1, 1, 0, none)                                                  \
  X(MAX_POOL, "MaxPool", OUT_ELEMWISE_FUSABLE, pool, 1, 1, 1, 2, 0, max_pool)                                             \
  X(AVERAGE_POOL, "AveragePool", OUT_ELEMWISE_FUSABLE, pool, 1, 1, 1, 1, 0, average_pool)                                 \
  X(GLOBAL_AVERAGE_POOL, "GlobalAveragePool", REDUCTION, global_pool, 1, 1, 1, 1, 0, none)                                \
  X(GLOBAL_MAX_POOL, "GlobalMaxPool", REDUCTION, global_pool, 1, 1, 1, 1, 0, none)                                        \
  X(REDUCE_MEAN, "ReduceMean", REDUCTION, reduce, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), reduce)                               \
  X(REDUCE_SUM, "ReduceSum", REDUCTION, reduce, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), reduce)                                 \
  X(REDUCE_MAX, "ReduceMax", REDUCTION, reduce, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), reduce)                                 \
  X(SOFTMAX, "Softmax", OPAQUE, unary, 1, 1, 1, 1, 0, softmax)                                                            \
  X(LAYER_NORM, "LayerNormalization", OPAQUE, layer_norm, 2, 3, 1, 3, 0, layer_norm)                                      \
  /* reductions, normalizations, losses (op_reduce.c, op_reduce2.c, op_norm.c) */                                         \
  X(REDUCE_MIN, "ReduceMin", REDUCTION, reduce, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), reduce)                                 \
  X(REDUCE_PROD, "ReduceProd", REDUCTION, reduce, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), reduce)                               \
  X(REDUCE_L1, "ReduceL1", REDUCTION, reduce, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), reduce)                                   \
  X(REDUCE_L2, "ReduceL2", REDUCTION, reduce, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), reduce)                                   \
  X(REDUCE_LOG_SUM, "ReduceLogSum", REDUCTION, reduce, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), reduce)                          \
  X(REDUCE_LOG_SUM_EXP, "ReduceLogSumExp", OPAQUE, reduce, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), reduce)                      \
  X(REDUCE_SUM_SQUARE, "ReduceSumSquare", REDUCTION, reduce, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), reduce)                    \
  X(ARG_MAX, "ArgMax", OPAQUE, arg_reduce, 1, 1, 1, 1, 0, arg_reduce)                                                     \
  X(ARG_MIN, "ArgMin", OPAQUE, arg_reduce, 1, 1, 1, 1, 0, arg_reduce)                                                     \
  X(LOG_SOFTMAX, "LogSoftmax", OPAQUE, unary, 1, 1, 1, 1, 0, softmax)                                                     \
  X(HARDMAX, "Hardmax", OPAQUE, unary, 1, 1, 1, 1, 0, softmax)                                                            \
  X(CUMSUM, "CumSum", OPAQUE, unary, 2, 2, 1, 1, GRAPH_INPUTS_FROM(1), cumulative)                                        \
  X(CUMPROD, "CumProd", OPAQUE, unary, 2, 2, 1, 1, GRAPH_INPUTS_FROM(1), cumulative)                                      \
  X(RMS_NORM, "RMSNormalization", OPAQUE, unary, 2, 2, 1, 1, 0, rms_norm)                                                 \
  X(GROUP_NORM, "GroupNormalization", OPAQUE, unary, 3, 3, 1, 1, 0, group_norm)                                           \
  X(INSTANCE_NORM, "InstanceNormalization", OPAQUE, unary, 3, 3, 1, 1, 0, instance_norm)                                  \
  X(LP_NORM, "LpNormalization", OPAQUE, unary, 1, 1, 1, 1, 0, lp_norm)                                                    \
  X(MVN, "MeanVarianceNormalization", OPAQUE, unary, 1, 1, 1, 1, 0, mvn)                                                  \
  X(LRN, "LRN", OPAQUE, unary, 1, 1, 1, 1, 0, lrn)                                                                        \
  X(NLL_LOSS, "NegativeLogLikelihoodLoss", OPAQUE, loss, 2, 3, 1, 1, 0, nll_loss)                                         \
  X(SCE_LOSS, "SoftmaxCrossEntropyLoss", OPAQUE, loss, 2, 3, 1, 2, 0, sce_loss)                                           \
  X(FLATTEN, "Flatten", INJECTIVE, flatten, 1, 1, 1, 1, 0, flatten)                                                       \
  X(RESHAPE, "Reshape", INJECTIVE, reshape, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), reshape)                                    \
  X(TRANSPOSE, "Transpose", INJECTIVE, transpose, 1, 1, 1, 1, 0, transpose)                                               \
  X(CONCAT, "Concat", INJECTIVE, concat, 1, GRAPH_VARIADIC, 1, 1, 0, concat)                                              \
  X(SPLIT, "Split", INJECTIVE, split, 1, 2, 1, GRAPH_VARIADIC, GRAPH_INPUTS_FROM(1), split)                               \
  X(SLICE, "Slice", INJECTIVE, slice, 1, 5, 1, 1, GRAPH_INPUTS_FROM(1), none)                                             \
  X(GATHER, "Gather", INJECTIVE, gather, 2, 2, 1, 1, 0, gather)                                                           \
  X(SQUEEZE, "Squeeze", INJECTIVE, squeeze, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), none)                                       \
  X(UNSQUEEZE, "Unsqueeze", INJECTIVE, unsqueeze, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), none)                                 \
  X(EXPAND, "Expand", BROADCAST, expand, 2, 2, 1, 1, GRAPH_INPUTS_FROM(1), none)                                          \
  X(PAD, "Pad", INJECTIVE, pad, 1, 4, 1, 1, GRAPH_INPUT(1) | GRAPH_INPUTS_FROM(3), pad)                                   \
  X(TILE, "Tile", INJECTIVE, tile, 2, 3, 1, 1, GRAPH_INPUTS_FROM(1), none)                                                \
  X(RESIZE, "Resize", INJECTIVE, resize, 1, 4, 1, 1, GRAPH_INPUTS_FROM(2), resize)                                        \
  X(SHAPE, "Shape", OPAQUE, shape, 1, 1, 1, 1, 0, shape)                                                                  \
  X(CONSTANT_OF_SHAPE, "ConstantOfShape", INJECTIVE, constant_of_shape, 1, 1, 1, 1, GRAPH_INPUTS_FROM(0), constant_of_shape) \
  X(RANGE, "Range", INJECTIVE, range, 3, 3, 1, 1, GRAPH_INPUTS_FROM(0), none)                                             \
  /* sequence models and signal processing (topi/op_attention.c, op_rnn.c, op_signal.c) */                                \
  X(ATTENTION, "Attention", OPAQUE, attention, 3, 7, 1, 4, 0, attention)                                                  \
  X(ROTARY_EMBEDDING, "RotaryEmbedding", INJECTIVE, rotary_embedding, 3, 4, 1, 1, 0, rotary_embedding)                    \
  X(SWIGLU, "SwiGLU", ELEMWISE, swiglu, 2, 2, 1, 1, 0, swiglu)                                                            \
  X(LINEAR_ATTENTION, "LinearAttention", OPAQUE, linear_attention, 3, 6, 2, 2, 0, linear_attention)                       \
  X(CAUSAL_CONV_WITH_STATE, "CausalConvWithState", OPAQUE, causal_conv_with_state, 2, 4, 2, 2, 0, causal_conv_with_state) \
  X(TENSOR_SCATTER, "TensorScatter", INJECTIVE, tensor_scatter, 2, 3, 1, 1, 0, tensor_scatter)                            \
  X(RNN, "RNN", OPAQUE, rnn, 3, 6, 0, 2, 0, rnn)                                                                          \
  X(GRU, "GRU", OPAQUE, rnn, 3, 6, 0, 2, 0, gru)                                                                          \
  X(LSTM, "LSTM", OPAQUE, rnn, 3, 8, 0, 3, 0, lstm)                                                                       \
  X(DET, "Det", OPAQUE, det, 1, 1, 1, 1, 0, none)                                                                         \
  X(BLACKMAN_WINDOW, "BlackmanWindow", OPAQUE, window, 1, 1, 1, 1, GRAPH_INPUTS_FROM(0), window)                          \
  X(HAMMING_WINDOW, "HammingWindow", OPAQUE, window, 1, 1, 1, 1, GRAPH_INPUTS_FROM(0), window)                            \
  X(HANN_WINDOW, "HannWindow", OPAQUE, window, 1, 1, 1, 1, GRAPH_INPUTS_FROM(0), window)                                  \
  X(DFT, "DFT", OPAQUE, dft, 1, 3, 1, 1, GRAPH_INPUTS_FROM(1), dft)                                                       \
  X(STFT, "STFT", OPAQUE, stft, 2, 4, 1, 1, GRAPH_INPUT(1) | GRAPH_INPUTS_FROM(3), stft)                                  \
  X(MEL_WEIGHT_MATRIX, "MelWeightMatrix", OPAQUE, mel_weight_matrix, 5, 5, 1, 1, GRAPH_INPUT(0) | GRAPH_INPUT(1), none)   \
  /* vision, sorting, data-dependent output shapes (topi/op_vision.c, op_sort.c,                                          \
  * op_dynamic.c; graph/infer_vision.c; compile/dynamic.c) */                                                             \
  X(GRID_SAMPLE, "GridSample", OPAQUE, grid_sample, 2, 2, 1, 1, 0, grid_sample)                                           \
  X(AFFINE_GRID, "AffineGrid", INJECTIVE, affine_grid, 2, 2, 1, 1, GRAPH_INPUTS_FROM(1), affine_grid)                     \
  X(ROI_ALIGN, "RoiAlign", OPAQUE, roi_align, 3, 3, 1, 1, 0, roi_align)                                                   \
  X(DEFORM_CONV, "DeformConv", OPAQUE, deform_conv, 3, 5, 1, 1, 0, deform_conv)                                           \
  X(BIT_CAST, "BitCast", ELEMWISE, bit_cast, 1, 1, 1, 1, 0, none)                                                         \
  X(TOP_K, "TopK", OPAQUE, top_k, 1, 2, 2, 2, GRAPH_INPUTS_FROM(1), top_k)                                                \
  X(NON_ZERO, "NonZero", OPAQUE, non_zero, 1, 1, 1, 1, 0, none)                                                           \
  X(COMPRESS, "Compress", OPAQUE, compress, 2, 2, 1, 1, 0, compress)                                                      \
  X(UNIQUE, "Unique", OPAQUE, unique, 1, 1, 1, 4, 0, unique)                                                              \
  X(NON_MAX_SUPPRESSION, "NonMaxSuppression", OPAQUE, non_max_suppression, 2, 5, 1, 1, 0, non_max_suppression)            \
  /* indexing, rearrangements, N-D windows (topi/op_index.c, op_space.c,                                                  \
  * op_einsum.c, op_conv_nd.c, op_pool.c; graph/infer_index.c, infer_window.c) */                                         \
  X(GATHER_ELEMENTS, "GatherElements", INJECTIVE, gather_elements, 2, 2, 1, 1, 0, gather_elements)                        \
  X(GATHER_ND, "GatherND", INJECTIVE, gather_nd, 2, 2, 1, 1, 0, gather_nd)                                                \
  X(SCATTER_ELEMENTS, "ScatterElements", OPAQUE, scatter, 3, 3, 1, 1, 0, scatter_elements)                                \
  X(SCATTER_ND, "ScatterND", OPAQUE, scatter, 3, 3, 1, 1, 0, scatter_nd)                                                  \
  X(ONE_HOT, "OneHot", INJECTIVE, one_hot, 3, 3, 1, 1, GRAPH_INPUT(1), one_hot)                                           \
  X(TRILU, "Trilu", INJECTIVE, trilu, 1, 2, 1, 1, GRAPH_INPUTS_FROM(1), trilu)                                            \
  X(EYE_LIKE, "EyeLike", INJECTIVE, eye_like, 1, 1, 1, 1, 0, eye_like)                                                    \
  X(DEPTH_TO_SPACE, "DepthToSpace", INJECTIVE, depth_to_space, 1, 1, 1, 1, 0, depth_to_space)                             \
  X(SPACE_TO_DEPTH, "SpaceToDepth", INJECTIVE, depth_to_space, 1, 1, 1, 1, 0, space_to_depth)                             \
  X(REVERSE_SEQUENCE, "ReverseSequence", INJECTIVE, reverse_sequence, 2, 2, 1, 1, 0, reverse_sequence)                    \
  X(CENTER_CROP_PAD, "CenterCropPad", INJECTIVE, center_crop_pad, 2, 2, 1, 1, GRAPH_INPUTS_FROM(1), center_crop_pad)      \
  X(EINSUM, "Einsum", OPAQUE, einsum, 1, GRAPH_VARIADIC, 1, 1, 0, einsum)                                                 \
  X(CONV_TRANSPOSE, "ConvTranspose", OUT_ELEMWISE_FUSABLE, conv_transpose, 2, 3, 1, 1, 0, conv_transpose)                 \
  X(CONV_INTEGER, "ConvInteger", OUT_ELEMWISE_FUSABLE, conv_integer, 2, 4, 1, 1, 0, conv_integer)                         \
  X(COL2IM, "Col2Im", OPAQUE, col2im, 3, 3, 1, 1, GRAPH_INPUTS_FROM(1), col2im)                                           \
  X(LP_POOL, "LpPool", OUT_ELEMWISE_FUSABLE, pool, 1, 1, 1, 1, 0, lp_pool)                                                \
  X(MAX_UNPOOL, "MaxUnpool", OPAQUE, max_unpool, 2, 3, 1, 1, GRAPH_INPUTS_FROM(2), max_unpool)                            \
  /* quantization (topi/op_quant.c; graph/infer_quant.c; compile/op_compute_quant.c) */                                   \
  X(QUANTIZE_LINEAR, "QuantizeLinear", BROADCAST, quantize_linear, 2, 3, 1, 1, 0, quantize_linear)                        \
  X(DEQUANTIZE_LINEAR, "DequantizeLinear", BROADCAST, dequantize_linear, 2, 3, 1, 1, 0, dequantize_linear)                \
  X(DYNAMIC_QUANTIZE_LINEAR, "DynamicQuantizeLinear", OPAQUE, dynamic_quantize_linear, 1, 1, 3, 3, 0, none)               \
  X(MATMUL_INTEGER, "MatMulInteger", OUT_ELEMWISE_FUSABLE, matmul_integer, 2, 4, 1, 1, 0, none)                           \
  X(QLINEAR_MATMUL, "QLinearMatMul", OPAQUE, qlinear_matmul, 8, 8, 1, 1, 0, none)                                         \
  X(QLINEAR_CONV, "QLinearConv", OPAQUE, qlinear_conv, 8, 9, 1, 1, 0, qlinear_conv)                                       \
  /* Control flow: inlined or unrolled by the importer once the values that                                               \
  * decide it are known (frontend/onnx/import_control.c); never compiled. */                                              \
  X(IF, "If", OPAQUE, control_flow, 1, 1, 1, GRAPH_VARIADIC, GRAPH_INPUT(0), none)                                        \
  X(LOOP, "Loop", OPAQUE, control_flow, 2, GRAPH_VARIADIC, 1, GRAPH_VARIADIC, GRAPH_INPUT(0) | GRAPH_INPUT(1), none)      \
  X(SCAN, "Scan", OPAQUE, control_flow, 1, GRAPH_VARIADIC, 1, GRAPH_VARIADIC, 0, none)                                    \
  /* Loom's own (pass_layout.c, infer_nchwc.c): blocked NCHWc layout */                                                   \
  X(LAYOUT_TRANSFORM, "LayoutTransform", INJECTIVE, layout_transform, 1, 1, 1, 1, 0, layout_transform)                    \
  X(CONV_NCHWC, "ConvNCHWc", OUT_ELEMWISE_FUSABLE, conv_nchwc, 2, 3, 1, 1, 0, conv_nchwc)                                 \
  X(MAX_POOL_NCHWC, "MaxPoolNCHWc", OUT_ELEMWISE_FUSABLE, pool_nchwc, 1, 1, 1, 1, 0, max_pool)                            \
  X(AVERAGE_POOL_NCHWC, "AveragePoolNCHWc", OUT_ELEMWISE_FUSABLE, pool_nchwc, 1, 1, 1, 1, 0, average_pool)                \
  /* Loom's own (pass_pack_matmul.c, infer_matmul_packed.c): B in column panels */                                        \
  X(MATMUL_PACKED, "MatMulPacked", OUT_ELEMWISE_FUSABLE, matmul_packed, 2, 2, 1, 1, 0, matmul_packed)                  \
  /* Loom's own (src/byoc/partition.c): a region claimed by an external back end */                                      \
  X(EXTERNAL, "External", OPAQUE, external, 0, GRAPH_VARIADIC, 1, GRAPH_VARIADIC, 0, external)

typedef enum GraphOp {
#define X(e, name, pat, infer, in_min, in_max, out_min, out_max, const_in, attrs) GRAPH_OP_##e,
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

/* One attribute an op reads: its kind and whether the model must give it,
 * may leave it out, or gets ONNX's default when it leaves it out. */
typedef enum GraphAttrPresence { GRAPH_ATTR_REQUIRED, GRAPH_ATTR_OPTIONAL, GRAPH_ATTR_DEFAULT } GraphAttrPresence;

typedef struct GraphAttrDef {
  const char *name; /* NULL ends an op's list */
  GraphAttrKind kind;
  GraphAttrPresence presence;
  int64_t i; /* the default of an INT attribute */
  double f;  /* of a FLOAT one */
  const char *s; /* of a STRING one */
} GraphAttrDef;

typedef struct GraphOpInfo {
  const char *name;
  GraphOpPattern pattern;
  GraphInferFn infer;
  int min_inputs, max_inputs, min_outputs, max_outputs; /* max: GRAPH_VARIADIC when unbounded */
  unsigned const_inputs; /* GRAPH_INPUT bits: the compile-time inputs */
  const GraphAttrDef *attrs;
} GraphOpInfo;

/* ---- registry (ops.c) ---- */
const GraphOpInfo *graph_op_info(GraphOp op);
/* Whether input `input` of op is a compile-time value (const_inputs). */
bool graph_op_input_is_const(GraphOp op, int input);
/* The declaration of op's attribute `name`, NULL when the op has none. */
const GraphAttrDef *graph_op_attr(GraphOp op, const char *name);
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
/* The node's attribute, else the default its op declares (ops.c): the one
 * place an ONNX default is written. The op must declare `name` with a
 * default (an internal error otherwise, reported by LOOM_ASSERT). */
int64_t graph_node_int(const GraphNode *n, const char *name);
double graph_node_float(const GraphNode *n, const char *name);
const char *graph_node_string(const GraphNode *n, const char *name);

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
