/* Operator library: compute definitions (te) for the operators Loom compiles.
 *
 * Each topi_<op> builds the compute DAG of one operator and lowers it with
 * te_create_primfunc: the PrimFunc's parameters are the inputs then the
 * output, all compact row-major. Shapes are parameters; a shape that makes no
 * sense (non-positive extent, kernel larger than the padded input, channels
 * not divisible by the block) returns NULL with a message naming the operator
 * and the argument. Block names say what each stage computes ("pad",
 * "conv2d", "T_max", ...), so schedules can look them up by name.
 *
 * Element type: f32 unless a DType argument says otherwise (matmul and
 * reduce_sum accept i32 too, for exact integer checks). */
#ifndef LOOM_TOPI_TOPI_H
#define LOOM_TOPI_TOPI_H

#include "te/te.h"

/* ---- building blocks (te level) ---- */

/* name[i...] = in-bounds ? data[i - before] : pad_value, with output extent
 * shape[d] + before[d] + after[d] along each dimension. */
TeTensor *topi_pad(Arena *a, const char *name, const TeTensor *data, const int64_t *before,
                   const int64_t *after, const Expr *pad_value, LoomError *err);

/* ---- operators (PrimFunc level) ---- */

/* C[M, N] = sum_k A[M, K] * B[K, N]; dt is f32 or i32. Block "C". */
PrimFunc *topi_matmul(Arena *a, int64_t M, int64_t N, int64_t K, DType dt, LoomError *err);
/* C[b, M, N] = sum_k A[b, M, K] * B[b, K, N]. Block "C". */
PrimFunc *topi_batch_matmul(Arena *a, int64_t B, int64_t M, int64_t N, int64_t K, LoomError *err);

typedef struct TopiConv2d {
  int64_t N, C, H, W; /* data */
  int64_t K, R, S;    /* output channels, kernel height and width */
  int64_t stride, pad;
} TopiConv2d;

/* Output spatial extent (H + 2 pad - R) / stride + 1, or 0 when invalid. */
int64_t topi_conv_out_extent(int64_t in, int64_t kernel, int64_t stride, int64_t pad);

/* data [N, C, H, W], weight [K, C, R, S] -> out [N, K, OH, OW].
 * Stages "pad" (only when pad > 0) and "conv2d". */
PrimFunc *topi_conv2d_nchw(Arena *a, const TopiConv2d *p, LoomError *err);
/* Blocked layout (x86 NCHWc): data [N, C/cb, H, W, cb], weight
 * [K/kb, C/cb, R, S, cb, kb] -> out [N, K/kb, OH, OW, kb]. Stages "pad",
 * "conv2d_NCHWc". */
PrimFunc *topi_conv2d_nchwc(Arena *a, const TopiConv2d *p, int64_t cb, int64_t kb,
                            LoomError *err);
/* data [N, C, H, W], weight [C, 1, R, S] -> out [N, C, OH, OW] (K ignored).
 * Stages "pad", "depthwise_conv2d". */
PrimFunc *topi_depthwise_conv2d_nchw(Arena *a, const TopiConv2d *p, LoomError *err);

typedef enum TopiPoolKind { TOPI_POOL_MAX, TOPI_POOL_AVG } TopiPoolKind;
/* data [N, C, H, W] -> out [N, C, OH, OW], square kernel/stride/pad. Max
 * pools pad with -inf (stages "pad", "pool_max"); average pools pad with 0
 * and divide by the window's in-bounds count, or by kernel*kernel when
 * count_include_pad (stages "pad", "pool_sum", "pool_avg"). */
PrimFunc *topi_pool2d(Arena *a, TopiPoolKind kind, int64_t N, int64_t C, int64_t H, int64_t W,
                      int64_t kernel, int64_t stride, int64_t pad, bool count_include_pad,
                      LoomError *err);

/* Softmax over the last axis of an ndim tensor. Stages "T_max", "T_exp",
 * "T_sum", "T_softmax". */
PrimFunc *topi_softmax(Arena *a, int ndim, const int64_t *shape, LoomError *err);
/* Layer norm over the last axis: inputs data [..., D], gamma [D], beta [D].
 * Stages "T_sum", "T_var_sum", "T_layer_norm". */
PrimFunc *topi_layer_norm(Arena *a, int ndim, const int64_t *shape, double eps, LoomError *err);

/* out[i_0, ..., i_{n-1}] = in[j] where j[perm[d]] = i_d; out shape[d] =
 * shape[perm[d]]. Block "T_transpose". */
PrimFunc *topi_transpose(Arena *a, int ndim, const int64_t *shape, const int *perm,
                         LoomError *err);
/* Numpy broadcasting of two tensors of equal rank (each dimension equal or
 * 1). Block "T_add". */
PrimFunc *topi_broadcast_add(Arena *a, int ndim, const int64_t *a_shape, const int64_t *b_shape,
                             LoomError *err);
/* Sum over one axis (the axis is dropped from the output); dt f32 or i32.
 * Block "T_sum". */
PrimFunc *topi_reduce_sum(Arena *a, int ndim, const int64_t *shape, int axis, DType dt,
                          LoomError *err);

#endif
