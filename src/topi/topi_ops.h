/* Operator compute definitions with ONNX semantics, one per graph op that
 * produces a runtime tensor (Shape, ConstantOfShape and Range, usually
 * folded at compile time, have theirs for what folding leaves:
 * topi_ops_tensor.h). docs/topi.md lists the ops and what each supports.
 *
 * Every function works at the te level: TeTensors in, TeTensor(s) out, so the
 * graph fuser composes ops by passing one op's result to the next and lowers
 * a fused group with one te_create_primfunc. Conventions:
 *   - `name` names the output tensor (and so its block); stages an op needs
 *     besides its output are named "<name>_<stage>" ("<name>_pad",
 *     "<name>_max"...). Names must be unique within one PrimFunc, so the
 *     caller passes node-derived names.
 *   - Reductions (ReduceSum, pools, the reductions inside Softmax and
 *     LayerNormalization) are a stage of their own whose body is only the
 *     reduction; any arithmetic after it (mean's division, bias, scale) is a
 *     separate elementwise stage, which a consumer can inline or fuse.
 *   - Axes may be negative (counted from the end) wherever ONNX allows it.
 *   - Bad arguments (rank, shape mismatch, dtype, attribute out of range,
 *     an empty output) return NULL with a message naming the op and the
 *     argument; nothing aborts on user input.
 * dtypes: f32 everywhere; integer and bool where models use them (see each
 * function). */
#ifndef LOOM_TOPI_TOPI_OPS_H
#define LOOM_TOPI_TOPI_OPS_H

#include "te/te.h"

#include <stdbool.h>

/* MaxPool or AveragePool: the pools here and in topi_ops_tensor.h. */
typedef enum TopiPoolKind { TOPI_POOL_MAX, TOPI_POOL_AVG } TopiPoolKind;

/* ---------------- elementwise (op_elemwise.c) ---------------- */

/* The input dtypes an elementwise op accepts. FLOAT: every float (f16,
 * bf16 and the 8-bit floats compute in f32); FLOAT16: f16, bf16, f32, f64;
 * SIGNED: FLOAT or a signed integer; NUMERIC: FLOAT or any integer;
 * INTEGER: signed or unsigned integers; UNSIGNED; BOOL; NOT_BOOL: all but
 * bool; ANY. */
typedef enum TopiDTypeClass {
  TOPI_DTYPES_ANY,
  TOPI_DTYPES_BOOL,
  TOPI_DTYPES_NOT_BOOL,
  TOPI_DTYPES_FLOAT,
  TOPI_DTYPES_FLOAT16,
  TOPI_DTYPES_SIGNED,
  TOPI_DTYPES_NUMERIC,
  TOPI_DTYPES_INTEGER,
  TOPI_DTYPES_UNSIGNED,
} TopiDTypeClass;

/* The unary elementwise ops, one row each: X(ENUM, ONNX name, dtype class,
 * builder), where builder names unary_<builder> in op_elemwise.c, the
 * expression of one element. A row is all a new op needs here (the enum,
 * its name and its dtype check come from it); the comment says which
 * TopiUnaryParams fields the op reads. */
#define TOPI_UNARY_OPS(X)                                                          \
  X(RELU, "Relu", SIGNED, relu)                                                    \
  X(LEAKY_RELU, "LeakyRelu", FLOAT, leaky_relu)          /* alpha */               \
  X(CLIP, "Clip", SIGNED, clip)                          /* lo, hi */              \
  X(SQRT, "Sqrt", FLOAT, sqrt)                                                     \
  X(RECIPROCAL, "Reciprocal", FLOAT, reciprocal)                                   \
  X(EXP, "Exp", FLOAT, exp)                                                        \
  X(LOG, "Log", FLOAT, log)                                                        \
  X(NEG, "Neg", SIGNED, neg)                                                       \
  X(ABS, "Abs", SIGNED, abs)                                                       \
  X(FLOOR, "Floor", FLOAT, floor)                                                  \
  X(CEIL, "Ceil", FLOAT, ceil)                                                     \
  X(NOT, "Not", BOOL, logical_not)                                                        \
  X(ERF, "Erf", FLOAT, erf)                                                        \
  X(TANH, "Tanh", FLOAT, tanh)                                                     \
  X(SIGMOID, "Sigmoid", FLOAT, sigmoid)                                            \
  X(HARD_SIGMOID, "HardSigmoid", FLOAT, hard_sigmoid)    /* alpha, beta */         \
  X(HARD_SWISH, "HardSwish", FLOAT, hard_swish)                                    \
  X(GELU, "Gelu", FLOAT, gelu)                           /* gelu_tanh */           \
  X(IDENTITY, "Identity", ANY, identity)                 /* also Dropout */        \
  X(SIN, "Sin", FLOAT16, sin)                                                      \
  X(COS, "Cos", FLOAT16, cos)                                                      \
  X(TAN, "Tan", FLOAT16, tan)                                                      \
  X(ASIN, "Asin", FLOAT16, asin)                                                   \
  X(ACOS, "Acos", FLOAT16, acos)                                                   \
  X(ATAN, "Atan", FLOAT16, atan)                                                   \
  X(SINH, "Sinh", FLOAT16, sinh)                                                   \
  X(COSH, "Cosh", FLOAT16, cosh)                                                   \
  X(ASINH, "Asinh", FLOAT16, asinh)                                                \
  X(ACOSH, "Acosh", FLOAT16, acosh)                                                \
  X(ATANH, "Atanh", FLOAT16, atanh)                                                \
  X(ROUND, "Round", FLOAT16, round)                      /* half to even */        \
  X(SIGN, "Sign", NUMERIC, sign)                         /* NaN stays NaN */       \
  X(IS_NAN, "IsNaN", FLOAT16, is_nan)                    /* bool result */         \
  X(IS_INF, "IsInf", FLOAT16, is_inf)                    /* detect_positive, detect_negative */ \
  X(ELU, "Elu", FLOAT16, elu)                            /* alpha */               \
  X(SELU, "Selu", FLOAT16, selu)                         /* alpha, gamma */        \
  X(CELU, "Celu", FLOAT16, celu)                         /* alpha */               \
  X(SOFTPLUS, "Softplus", FLOAT16, softplus)             /* without overflow */    \
  X(SOFTSIGN, "Softsign", FLOAT16, softsign)                                       \
  X(SWISH, "Swish", FLOAT16, swish)                      /* alpha */               \
  X(MISH, "Mish", FLOAT16, mish)                                                   \
  X(SHRINK, "Shrink", NUMERIC, shrink)                   /* lambd, bias */         \
  X(THRESHOLDED_RELU, "ThresholdedRelu", FLOAT16, thresholded_relu) /* alpha */    \
  X(BITWISE_NOT, "BitwiseNot", INTEGER, bitwise_not)

typedef enum TopiUnaryOp {
#define X(e, name, dtypes, builder) TOPI_##e,
  TOPI_UNARY_OPS(X)
#undef X
  TOPI_UNARY_COUNT
} TopiUnaryOp;

/* The attributes of the unary ops that have some. Topi has no defaults of
 * its own: the compiler fills these from the node, whose attributes the
 * importer completed from the graph op table (graph/ops.c). */
typedef struct TopiUnaryParams {
  double alpha, beta, gamma; /* LeakyRelu, HardSigmoid, Elu, Selu, Celu, Swish, ThresholdedRelu */
  double lambd, bias;        /* Shrink */
  double lo, hi;             /* Clip; -inf / +inf for an omitted bound; integers truncate them */
  bool gelu_tanh;            /* Gelu approximate="tanh" */
  bool detect_positive, detect_negative; /* IsInf */
} TopiUnaryParams;

/* The op's name in messages ("Relu"); "?" for a code outside the table. */
const char *topi_unary_name(TopiUnaryOp op);
/* One stage. p NULL: no parameters (every field 0 / false, Clip unbounded).
 * The input's dtype must be in the op's class (TOPI_UNARY_OPS). */
TeTensor *topi_unary(Arena *a, const char *name, TopiUnaryOp op, const TeTensor *x,
                     const TopiUnaryParams *p, LoomError *err);

/* Cast to `to`: float -> int truncates toward zero (C), anything -> bool is
 * x != 0, bool -> number is 0 or 1. */
TeTensor *topi_cast(Arena *a, const char *name, const TeTensor *x, DType to, LoomError *err);
/* ONNX Cast with its saturate attribute (topi_cast: saturate = 1, ONNX's
 * default). Float -> 8-bit float clamps to the largest finite value first
 * when saturating; otherwise out-of-range values become inf or NaN. To
 * int4/int2: truncate and keep the low bits. f8e8m0: round_mode "up". */
TeTensor *topi_cast_saturate(Arena *a, const char *name, const TeTensor *x, DType to, bool saturate, LoomError *err);

/* The binary elementwise ops with numpy broadcasting, one row each:
 * X(ENUM, ONNX name, dtype class of the operands, builder), where builder
 * names binary_<builder> in op_elemwise.c. Operands share one dtype, except
 * Pow's exponent (any non-bool dtype). */
#define TOPI_BINARY_OPS(X)                                                         \
  X(ADD, "Add", NOT_BOOL, add)                                                     \
  X(SUB, "Sub", NOT_BOOL, sub)                                                     \
  X(MUL, "Mul", NOT_BOOL, mul)                                                     \
  X(DIV, "Div", NOT_BOOL, div)                   /* integers truncate toward zero */ \
  X(POW, "Pow", NOT_BOOL, pow)                   /* integer bases through f64 */   \
  X(MAX, "Max", NOT_BOOL, max)                                                     \
  X(MIN, "Min", NOT_BOOL, min)                                                     \
  X(EQUAL, "Equal", ANY, equal)                  /* bool result */                 \
  X(LESS, "Less", NOT_BOOL, less)                /* bool result */                 \
  X(GREATER, "Greater", NOT_BOOL, greater)       /* bool result */                 \
  X(GREATER_OR_EQUAL, "GreaterOrEqual", ANY, greater_equal) /* bool result */         \
  X(LESS_OR_EQUAL, "LessOrEqual", ANY, less_equal) /* bool result */                 \
  X(AND, "And", BOOL, logical_and)                                                        \
  X(OR, "Or", BOOL, logical_or)                                                          \
  X(XOR, "Xor", BOOL, logical_xor)                                                        \
  X(PRELU, "PRelu", FLOAT, prelu)                /* slope broadcasts to x's shape */ \
  X(MOD, "Mod", NUMERIC, mod)                    /* floor mod: the divisor's sign */ \
  X(FMOD, "Mod", NUMERIC, fmod)                  /* C fmod / %: the dividend's sign */ \
  X(BITWISE_AND, "BitwiseAnd", INTEGER, bitwise_and)                               \
  X(BITWISE_OR, "BitwiseOr", INTEGER, bitwise_or)                                  \
  X(BITWISE_XOR, "BitwiseXor", INTEGER, bitwise_xor)                               \
  X(SHIFT_LEFT, "BitShift", UNSIGNED, shift_left) /* a count >= the width gives 0 */ \
  X(SHIFT_RIGHT, "BitShift", UNSIGNED, shift_right)

typedef enum TopiBinaryOp {
#define X(e, name, dtypes, builder) TOPI_##e,
  TOPI_BINARY_OPS(X)
#undef X
  TOPI_BINARY_COUNT
} TopiBinaryOp;

/* The op's name in messages ("Add"); "?" for a code outside the table. */
const char *topi_binary_name(TopiBinaryOp op);
/* Numpy multidirectional broadcasting of operands of any ranks (0-d
 * included). One stage. An integer Mod by 0 gives 0 (numpy's result; C
 * would trap). */
TeTensor *topi_binary(Arena *a, const char *name, TopiBinaryOp op, const TeTensor *x,
                      const TeTensor *y, LoomError *err);
/* Sum / Max / Min of n >= 1 operands, all broadcast together (op is
 * TOPI_ADD, TOPI_MAX or TOPI_MIN). One stage. */
TeTensor *topi_variadic(Arena *a, const char *name, TopiBinaryOp op, const TeTensor *const *xs,
                        int n, LoomError *err);
/* Mean of n >= 1 float operands broadcast together. One stage. */
TeTensor *topi_mean(Arena *a, const char *name, const TeTensor *const *xs, int n, LoomError *err);
/* Clip by runtime bounds: min(max(x, lo), hi) (so lo > hi gives hi); lo and
 * hi are tensors of x's dtype that broadcast to x (ONNX: scalars), or NULL
 * for no bound. One stage. */
TeTensor *topi_clip_tensors(Arena *a, const char *name, const TeTensor *x, const TeTensor *lo,
                            const TeTensor *hi, LoomError *err);
/* cond (bool) ? x : y, the three broadcast together. */
TeTensor *topi_where(Arena *a, const char *name, const TeTensor *cond, const TeTensor *x,
                     const TeTensor *y, LoomError *err);
/* Inference batch norm: x [N, C, ...] (rank >= 2), the others [C]:
 * (x - mean) / sqrt(var + eps) * scale + bias. One stage. */
TeTensor *topi_batch_norm(Arena *a, const char *name, const TeTensor *x, const TeTensor *scale,
                          const TeTensor *bias, const TeTensor *mean, const TeTensor *var,
                          double eps, LoomError *err);

/* Output shape of broadcasting shapes x and y; false (message naming op) when
 * they do not broadcast. out must hold max(rx, ry) entries. */
bool topi_broadcast_shape(const char *op, int rx, const int64_t *x, int ry, const int64_t *y,
                          int *rout, int64_t *out, LoomError *err);

/* ---------------- nn (op_nn.c) ---------------- */

typedef struct TopiConvParams {
  int64_t strides[2];   /* h, w; 0 = 1 */
  int64_t pads[4];      /* ONNX order: h_begin, w_begin, h_end, w_end */
  int64_t dilations[2]; /* 0 = 1 */
  int64_t group;        /* 0 = 1; C for depthwise */
} TopiConvParams;

/* 2-D convolution, NCHW: x [N, C, H, W], w [K, C/group, R, S], bias [K] or
 * NULL -> [N, K, OH, OW]. f32. Stages "<name>_pad" (when any pad > 0),
 * "<name>_conv" + name (bias add) when there is a bias, else the convolution
 * is `name` itself. */
TeTensor *topi_conv2d_onnx(Arena *a, const char *name, const TeTensor *x, const TeTensor *w,
                           const TeTensor *bias, const TopiConvParams *p, LoomError *err);
/* Blocked x86 layout, g groups (p->group; 1 included): x [N, C/cb, H, W,
 * cb], w [K/kb, C/(cb g), R, S, cb, kb] (each group a whole number of
 * blocks), bias [K] or NULL -> [N, K/kb, OH, OW, kb]. Same stages. */
TeTensor *topi_conv2d_nchwc_onnx(Arena *a, const char *name, const TeTensor *x,
                                 const TeTensor *w, const TeTensor *bias, const TopiConvParams *p, LoomError *err);
/* 3x3 stride-1 conv in the blocked layout by Winograd's F(2x2, 3x3)
 * (op_winograd.c): x [N, C/cb, H, W, cb], u [4, 4, K/kb, C/cb, cb, kb] the
 * kernel already transformed (G g G^T, graph_pass_winograd), pads in ONNX
 * order (each 0..2) -> [N, K/kb, OH, OW, kb]. Stages "<name>_pad",
 * "<name>_transform", "<name>_gemm" and name. */
TeTensor *topi_conv2d_nchwc_winograd(Arena *a, const char *name, const TeTensor *x, const TeTensor *u,
                                     const int64_t pads[4], LoomError *err);
/* Depthwise in the blocked layout: x [N, C/c, H, W, c], w [C/c, 1, R, S, 1,
 * c] -> [N, C/c, OH, OW, c] (group == C). Stages "<name>_pad" (when
 * padded) and name. */
TeTensor *topi_depthwise_conv2d_nchwc_onnx(Arena *a, const char *name, const TeTensor *x, const TeTensor *w,
                                           const TopiConvParams *p, LoomError *err);
/* Layout transforms at NCHWc boundaries: [N, C, H, W] -> [N, C/cb, H, W, cb]
 * (C divisible by cb) and back. Weights: [K, C, R, S] -> [K/kb, C/cb, R, S,
 * cb, kb]. */
TeTensor *topi_nchw_to_nchwc(Arena *a, const char *name, const TeTensor *x, int64_t cb,
                             LoomError *err);
TeTensor *topi_nchwc_to_nchw(Arena *a, const char *name, const TeTensor *x, LoomError *err);
TeTensor *topi_weight_to_kcrsck(Arena *a, const char *name, const TeTensor *w, int64_t cb,
                                int64_t kb, LoomError *err);

typedef struct TopiPoolParams {
  int64_t kernel[2];    /* required, >= 1 */
  int64_t strides[2];   /* 0 = 1 */
  int64_t pads[4];      /* h_begin, w_begin, h_end, w_end */
  int64_t dilations[2]; /* 0 = 1; MaxPool only */
  bool ceil_mode;       /* a last window that would start in the end padding is dropped */
  bool count_include_pad; /* AveragePool: divide by the window clipped to the padded input */
} TopiPoolParams;

/* x [N, C, H, W] f32. Max: stages "<name>_pad" (-inf, when padded) and
 * name. Avg: "<name>_pad" (0), "<name>_sum", name (the division). */
TeTensor *topi_pool2d_onnx(Arena *a, const char *name, TopiPoolKind kind, const TeTensor *x,
                           const TopiPoolParams *p, LoomError *err);
/* The same pools on the blocked layout (op_pool.c, shared with topi_pool2d_onnx): x [N, C/c, H, W,
 * c] -> [N, C/c, OH, OW, c], each channel pooled as topi_pool2d_onnx does.
 * Same stages ("<name>_pad", "<name>_sum" for Avg, name). */
TeTensor *topi_pool2d_nchwc_onnx(Arena *a, const char *name, TopiPoolKind kind, const TeTensor *x,
                                 const TopiPoolParams *p, LoomError *err);
/* x [N, C, d1, ...] -> [N, C, 1, ...]: GlobalMaxPool is one reduction;
 * GlobalAveragePool is "<name>_sum" then the division as name. */
TeTensor *topi_global_pool(Arena *a, const char *name, TopiPoolKind kind, const TeTensor *x,
                           LoomError *err);

/* ---------------- matmul (op_matmul.c) ---------------- */

/* alpha * A' B' + beta * C, A' = transA ? A^T : A (2-D), C NULL or
 * unidirectionally broadcastable to [M, N]. f32. The product is `name` when
 * alpha == 1 and no C, else "<name>_matmul" then name. */
TeTensor *topi_gemm(Arena *a, const char *name, const TeTensor *A, const TeTensor *B,
                    const TeTensor *C, double alpha, double beta, bool trans_a, bool trans_b,
                    LoomError *err);
/* numpy.matmul: 1-D operands get a 1 prepended (A) or appended (B) and it is
 * dropped from the result; batch dims broadcast. f32, i32, i64. One stage. */
TeTensor *topi_matmul_nd(Arena *a, const char *name, const TeTensor *A, const TeTensor *B,
                         LoomError *err);
/* MatMulPacked (graph/infer_matmul_packed.c): A [..., M, K] x B given as
 * column panels Bp [ceil(n / b), K, b] -> [..., M, n], Y[..., i, j] =
 * sum_k A[..., i, k] * Bp[j / b, k, j % b]. f32. One stage, like MatMul,
 * so epilogues fuse the same way. */
TeTensor *topi_matmul_packed(Arena *a, const char *name, const TeTensor *A, const TeTensor *Bp, int64_t n,
                             LoomError *err);

/* ---------------- reductions and normalizations (op_reduce.c) ------- */

typedef enum TopiReduceOp {
  TOPI_REDUCE_SUM,
  TOPI_REDUCE_MEAN,
  TOPI_REDUCE_MAX,
  TOPI_REDUCE_MIN,
  TOPI_REDUCE_PROD,
  TOPI_REDUCE_L1,          /* sum |x| */
  TOPI_REDUCE_L2,          /* sqrt(sum x^2) */
  TOPI_REDUCE_LOG_SUM,     /* log(sum x) */
  TOPI_REDUCE_LOG_SUM_EXP, /* log(sum exp(x - max)) + max */
  TOPI_REDUCE_SUM_SQUARE,  /* sum x^2 */
} TopiReduceOp;

/* Reduce over axes (n_axes == 0: all axes, unless noop_with_empty_axes, in
 * which case the input is copied). Mean, L2, LogSum, LogSumExp need floats;
 * Sum, Max, Min, Prod, L1, SumSquare also take integers; Max and Min also
 * bool. The reduction is name, or "<name>_red" followed by name (Mean's
 * division, L2's sqrt, LogSum's log, bool's cast back); LogSumExp is
 * "<name>_max", "<name>_red", name. */
TeTensor *topi_reduce(Arena *a, const char *name, TopiReduceOp op, const TeTensor *x,
                      const int64_t *axes, int n_axes, bool keepdims, bool noop_with_empty_axes,
                      LoomError *err);
/* Softmax along one axis (opset 13). Stages "<name>_max", "<name>_exp",
 * "<name>_sum", name. */
TeTensor *topi_softmax_axis(Arena *a, const char *name, const TeTensor *x, int64_t axis,
                            LoomError *err);
/* LayerNormalization over axes [axis, rank): scale (and bias, or NULL) have
 * shape x.shape[axis:] or broadcast to it. Stages "<name>_sum",
 * "<name>_var", name. */
TeTensor *topi_layer_norm_onnx(Arena *a, const char *name, const TeTensor *x,
                               const TeTensor *scale, const TeTensor *bias, int64_t axis,
                               double eps, LoomError *err);

/* ---------- arg-reductions, softmax family, scans (op_reduce2.c) ---------- */

/* ArgMax (is_min false) / ArgMin along axis: i64 indices of the first (or
 * with select_last the last) extreme element; keepdims keeps the axis as
 * extent 1. Stages "<name>_ext" (the max / min) and name. */
TeTensor *topi_arg_reduce(Arena *a, const char *name, bool is_min, const TeTensor *x, int64_t axis,
                          bool keepdims, bool select_last, LoomError *err);
/* LogSoftmax along one axis (opset 13): x - max - log(sum(exp(x - max))).
 * Stages "<name>_max", "<name>_exp", "<name>_sum", name. Float. */
TeTensor *topi_log_softmax_axis(Arena *a, const char *name, const TeTensor *x, int64_t axis,
                                LoomError *err);
/* Hardmax along one axis (opset 13): 1 at the first maximum, 0 elsewhere.
 * Stages "<name>_ext", "<name>_idx", name. */
TeTensor *topi_hardmax_axis(Arena *a, const char *name, const TeTensor *x, int64_t axis,
                            LoomError *err);
/* CumSum (prod false) / CumProd along axis; exclusive leaves out the
 * element itself, reverse runs from the end. One stage, a reduction over
 * the axis with the positions outside the prefix masked to the identity
 * (quadratic in the axis extent). Floats and integers. */
TeTensor *topi_cumulative(Arena *a, const char *name, bool prod, const TeTensor *x, int64_t axis,
                          bool exclusive, bool reverse, LoomError *err);

/* ---------------- normalizations and losses (op_norm.c) ---------------- */

/* LayerNormalization (rms false) or RMSNormalization (rms true: the mean is
 * not subtracted, no bias) over axes [axis, rank). mean / inv_std, when not
 * NULL, receive the statistics (extent 1 on the normalized axes; mean is
 * the sum's mean also for rms). Stages "<name>_sum" (not for rms),
 * "<name>_var", "<name>_mean", "<name>_inv_std", "<name>_norm", name. */
TeTensor *topi_layer_norm_full(Arena *a, const char *name, const TeTensor *x, const TeTensor *scale,
                               const TeTensor *bias, int64_t axis, double eps, bool rms,
                               TeTensor **mean, TeTensor **inv_std, LoomError *err);
/* GroupNormalization: x [N, C, ...] in num_groups groups of C / num_groups
 * channels, normalized over each group and the spatial axes; scale and
 * bias are per channel [C] (opset 21) or per group [num_groups] (opset 18).
 * InstanceNormalization is num_groups = C. */
TeTensor *topi_group_norm(Arena *a, const char *name, const TeTensor *x, const TeTensor *scale,
                          const TeTensor *bias, int64_t num_groups, double eps, LoomError *err);
/* LpNormalization: x / ||x||_p along axis, p 1 or 2. Stages "<name>_norm", name. */
TeTensor *topi_lp_norm(Arena *a, const char *name, const TeTensor *x, int64_t axis, int64_t p,
                       LoomError *err);
/* MeanVarianceNormalization over axes (NULL: 0, 2, 3):
 * (x - E[x]) / (sqrt(E[(x - E[x])^2]) + 1e-9). */
TeTensor *topi_mvn(Arena *a, const char *name, const TeTensor *x, const int64_t *axes, int n_axes,
                   LoomError *err);
/* LRN across channels (axis 1): x / (bias + alpha / size * sum of squares
 * over the window)^beta. Stages "<name>_sq", name. */
TeTensor *topi_lrn(Arena *a, const char *name, const TeTensor *x, int64_t size, double alpha,
                   double beta, double bias, LoomError *err);

typedef enum TopiLossReduction { TOPI_LOSS_NONE, TOPI_LOSS_SUM, TOPI_LOSS_MEAN } TopiLossReduction;
/* NegativeLogLikelihoodLoss: input [N, C, d...], target [N, d...] (i32 or
 * i64), weight [C] or NULL. Elements whose target is ignore_index (when
 * has_ignore) count 0 and weigh 0. mean divides by the sum of the weights.
 * The loss is [N, d...] (none) or a scalar. Targets out of range are
 * clamped (memory safety; ONNX calls them an error). */
TeTensor *topi_nll_loss(Arena *a, const char *name, const TeTensor *input, const TeTensor *target,
                        const TeTensor *weight, TopiLossReduction reduction, bool has_ignore,
                        int64_t ignore_index, LoomError *err);
/* SoftmaxCrossEntropyLoss: topi_nll_loss of LogSoftmax(scores, axis 1);
 * *log_prob (when not NULL) receives the LogSoftmax. */
TeTensor *topi_softmax_cross_entropy(Arena *a, const char *name, const TeTensor *scores,
                                     const TeTensor *labels, const TeTensor *weights,
                                     TopiLossReduction reduction, bool has_ignore,
                                     int64_t ignore_index, TeTensor **log_prob, LoomError *err);

/* ---------------- data movement (op_transform.c) ---------------- */

/* [d0 * ... * d(axis-1), d(axis) * ... ]; axis in [-r, r]. */
TeTensor *topi_flatten(Arena *a, const char *name, const TeTensor *x, int64_t axis,
                       LoomError *err);
/* Target shape with ONNX's rules handled here: 0 copies the input extent
 * (allowzero = 0), one -1 is inferred. */
TeTensor *topi_reshape(Arena *a, const char *name, const TeTensor *x, const int64_t *shape,
                       int n, LoomError *err);
/* perm NULL = reversed axes. */
TeTensor *topi_transpose_perm(Arena *a, const char *name, const TeTensor *x, const int64_t *perm,
                              LoomError *err);
TeTensor *topi_concat(Arena *a, const char *name, const TeTensor *const *xs, int n, int64_t axis,
                      LoomError *err);
/* n outputs named "<name>_<i>" into outs; sizes NULL = equal parts (the axis
 * extent must divide by n). Each output is its own stage; a piece of size 0
 * gets NULL (te tensors are never empty). */
bool topi_split(Arena *a, const char *name, const TeTensor *x, int64_t axis, const int64_t *sizes,
                int n, TeTensor **outs, LoomError *err);
/* ONNX Slice: axes NULL = 0..n-1, steps NULL = 1; negative starts/ends count
 * from the end, then they are clamped (to [0, d] for positive steps, [-1,
 * d-1] for negative steps). An empty result is an error (te tensors have
 * extents >= 1). */
TeTensor *topi_slice(Arena *a, const char *name, const TeTensor *x, const int64_t *starts,
                     const int64_t *ends, const int64_t *axes, const int64_t *steps, int n,
                     LoomError *err);
/* out = data[:axis] + indices.shape + data[axis+1:]; indices i32 or i64;
 * negative indices wrap; indices still out of range are clamped into range
 * (keeps generated code memory safe; ONNX calls them an error). */
TeTensor *topi_gather(Arena *a, const char *name, const TeTensor *data, const TeTensor *indices,
                      int64_t axis, LoomError *err);
/* axes NULL = every extent-1 axis. */
TeTensor *topi_squeeze(Arena *a, const char *name, const TeTensor *x, const int64_t *axes,
                       int n_axes, LoomError *err);
/* axes index the output (rank + n_axes). */
TeTensor *topi_unsqueeze(Arena *a, const char *name, const TeTensor *x, const int64_t *axes,
                         int n_axes, LoomError *err);
/* Bidirectional broadcast of x to shape. */
TeTensor *topi_expand(Arena *a, const char *name, const TeTensor *x, const int64_t *shape, int n,
                      LoomError *err);

typedef enum TopiPadMode { TOPI_PAD_CONSTANT, TOPI_PAD_REFLECT, TOPI_PAD_EDGE, TOPI_PAD_WRAP } TopiPadMode;
/* pads: 2 * rank values, all begins then all ends; negative pads crop.
 * Reflect needs pads < extent. value is cast to x's dtype. */
TeTensor *topi_pad_onnx(Arena *a, const char *name, const TeTensor *x, const int64_t *pads,
                        TopiPadMode mode, double value, LoomError *err);
/* The same with the fill read at run time from `value`, a one-element
 * tensor (Pad's constant_value operand fed by a runtime input). */
TeTensor *topi_pad_onnx_tensor(Arena *a, const char *name, const TeTensor *x, const int64_t *pads,
                               TopiPadMode mode, const TeTensor *value, LoomError *err);
TeTensor *topi_tile(Arena *a, const char *name, const TeTensor *x, const int64_t *repeats,
                    LoomError *err);

typedef enum TopiResizeMode { TOPI_RESIZE_NEAREST, TOPI_RESIZE_LINEAR, TOPI_RESIZE_CUBIC } TopiResizeMode;
typedef enum TopiResizeCoord {
  TOPI_COORD_HALF_PIXEL,
  TOPI_COORD_PYTORCH_HALF_PIXEL,
  TOPI_COORD_ASYMMETRIC,
  TOPI_COORD_ALIGN_CORNERS,
  TOPI_COORD_HALF_PIXEL_SYMMETRIC,
  TOPI_COORD_TF_CROP_AND_RESIZE, /* needs roi */
} TopiResizeCoord;
typedef enum TopiResizeNearest {
  TOPI_NEAREST_ROUND_PREFER_FLOOR,
  TOPI_NEAREST_ROUND_PREFER_CEIL,
  TOPI_NEAREST_FLOOR,
  TOPI_NEAREST_CEIL,
} TopiResizeNearest;

typedef struct TopiResizeParams {
  const int64_t *out_shape; /* the output extents (the caller resolves scales, sizes, axes) */
  const double *scales;     /* per axis, as the model gave them; NULL = out / in */
  const double *roi;        /* tf_crop_and_resize: rank starts then rank ends (normalized) */
  /* tf_crop_and_resize with the region read at run time: a 1-D tensor of
   * 2 * roi_count values (roi_count starts, then the ends); roi_at[d] is
   * axis d's position among the starts, -1 for an axis it does not cover
   * (which takes `roi`'s entries). NULL: roi alone. */
  const TeTensor *roi_tensor;
  const int *roi_at;
  int roi_count;
  TopiResizeMode mode;
  TopiResizeCoord coord;
  TopiResizeNearest nearest;
  double cubic_a;             /* cubic_coeff_a (ONNX default -0.75) */
  bool exclude_outside;       /* taps outside the input weigh 0, the rest renormalized */
  bool antialias;             /* linear/cubic downscaling widens the filter by 1 / scale */
  double extrapolation_value; /* tf_crop_and_resize outside the input */
} TopiResizeParams;

/* Resize with ONNX's semantics on any axes (the reference implementation's
 * rules: the coordinate transforms use out = scale * in, a fractional
 * extent when scales were given). Nearest is one gather stage with f32
 * coordinates (as ONNX Runtime). Linear and cubic are separable: one f64
 * stage per resized axis ("<name>_ax<d>", a sum over the filter taps, with
 * "<name>_ax<d>_w" holding the tap weights' sum where they need
 * normalizing), then name casts back. Nearest: any dtype; linear and cubic:
 * f32 or f64. */
TeTensor *topi_resize_ex(Arena *a, const char *name, const TeTensor *x, const TopiResizeParams *p, LoomError *err);
/* topi_resize_ex with cubic_a -0.75 and no antialias, roi or exclusion. */
TeTensor *topi_resize(Arena *a, const char *name, const TeTensor *x, const int64_t *out_shape,
                      const double *scales, TopiResizeMode mode, TopiResizeCoord coord,
                      TopiResizeNearest nearest, LoomError *err);

/* Indexing, rearrangements, einsum and the N-D window ops. */
#include "topi/topi_ops_tensor.h"
/* Attention, recurrent and signal-processing ops (op_attention.c, op_rnn.c, op_signal.c). */
#include "topi/topi_ops_seq.h"
/* Vision ops, BitCast, TopK and the data-dependent-extent ops. */
#include "topi/topi_ops_vision.h"
/* Quantization: QuantizeLinear, DequantizeLinear, QLinearMatMul, ... */
#include "topi/topi_ops_quant.h"

#endif
