/* Compute definitions (ONNX semantics) of the quantization ops (op_quant.c):
 * QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
 * QLinearMatMul, QLinearConv (ConvInteger is topi_conv_integer_nd in
 * topi_ops_tensor.h). Included by topi_ops.h; its conventions apply. Every
 * op is te stages: zero-point shifts and casts are elementwise stages
 * (inlined by the default schedules), the integer products are int32
 * reductions (topi_matmul_nd / topi_conv_integer_nd), the requantization an
 * elementwise epilogue.
 *
 * Numerics follow ONNX's reference implementation (numpy) exactly:
 *  - quantize: x / scale in x's dtype (f16 rounded to f16), rint (half to
 *    even), converted to int32 as x86 does (NaN and values outside int32
 *    become INT32_MIN), plus the zero point, clamped to the output type;
 *    to the 8-bit floats: a (saturating) cast of x / scale; to e2m1:
 *    cast(x / scale + zero point);
 *  - dequantize: (f32(x) - f32(zero point)) * scale in f32 (f64 for int32
 *    x), rounded once to the output type; the zero point of an 8- or 4-bit
 *    float x is ignored (ONNX requires it to be 0);
 *  - QLinearMatMul / QLinearConv: the int32 product times
 *    (a_scale * b_scale / y_scale, in the scales' dtype) in f64, plus the
 *    output zero point, rounded half to even and clamped.
 * Scales and zero points are per tensor (rank 0, or one element), per axis
 * (1-D, x.shape[axis] elements) or blocked (x's rank, shape[axis] =
 * ceil(x.shape[axis] / block_size), the other extents x's). */
#ifndef LOOM_TOPI_TOPI_OPS_QUANT_H
#define LOOM_TOPI_TOPI_OPS_QUANT_H

#include "te/te.h"
#include "topi/topi_ops_tensor.h" /* TopiWindowParams */

#include <stdbool.h>

/* zp NULL: zero. out: the output dtype (the zero point's when given; u8,
 * i8, u16, i16, i4, u4, i2, u2 or an 8/4-bit float). saturate: ONNX's
 * attribute (8-bit float outputs only). precision: the dtype of the
 * division (DT_VOID: x's). */
TeTensor *topi_quantize_linear(Arena *a, const char *name, const TeTensor *x, const TeTensor *scale, const TeTensor *zp,
                               int64_t axis, int64_t block_size, DType out, bool saturate, DType precision,
                               LoomError *err);
/* out: the output dtype (scale's unless output_dtype says otherwise). */
TeTensor *topi_dequantize_linear(Arena *a, const char *name, const TeTensor *x, const TeTensor *scale,
                                 const TeTensor *zp, int64_t axis, int64_t block_size, DType out, LoomError *err);
/* outs: y (u8, x's shape), y_scale (f32, rank 0), y_zero_point (u8, rank 0).
 * Stages "<name>_max", "<name>_min" (the reductions), "<name>_scale",
 * "<name>_zp", then the three outputs. */
bool topi_dynamic_quantize_linear(Arena *a, const char *name, const TeTensor *x, TeTensor **outs, LoomError *err);
/* numpy.matmul of (A - a_zp) and (B - b_zp) in int32. a_zp: scalar or per
 * row of A ([M]); b_zp: scalar or per column of B ([N]); NULL: zero. */
TeTensor *topi_matmul_integer(Arena *a, const char *name, const TeTensor *A, const TeTensor *B, const TeTensor *a_zp,
                              const TeTensor *b_zp, LoomError *err);
/* Output dtype: y_zp's (a's when y_zp is NULL). */
TeTensor *topi_qlinear_matmul(Arena *a, const char *name, const TeTensor *A, const TeTensor *a_scale,
                              const TeTensor *a_zp, const TeTensor *B, const TeTensor *b_scale, const TeTensor *b_zp,
                              const TeTensor *y_scale, const TeTensor *y_zp, LoomError *err);
/* The convolution of topi_conv_integer_nd plus bias (int32 [K] or NULL),
 * requantized; w_scale scalar or per output channel. Output dtype: y_zp's
 * (x's when y_zp is NULL). */
TeTensor *topi_qlinear_conv(Arena *a, const char *name, const TeTensor *x, const TeTensor *x_scale,
                            const TeTensor *x_zp, const TeTensor *w, const TeTensor *w_scale, const TeTensor *w_zp,
                            const TeTensor *y_scale, const TeTensor *y_zp, const TeTensor *bias,
                            const TopiWindowParams *p, LoomError *err);

#endif
