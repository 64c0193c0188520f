/* Compute definitions (ONNX semantics) for indexing and data movement
 * (op_index.c, op_space.c, op_einsum.c) and for the N-D sliding-window ops
 * (op_conv_nd.c, op_pool.c). Included by topi_ops.h; the conventions there
 * apply (names, stages, errors naming the op and argument). */
#ifndef LOOM_TOPI_TOPI_OPS_TENSOR_H
#define LOOM_TOPI_TOPI_OPS_TENSOR_H

#include "te/te.h"

#include <stdbool.h>

/* Spatial dimensions of the N-D window ops (rank 2 + TOPI_MAX_SPATIAL <= 8). */
#define TOPI_MAX_SPATIAL 6

/* ---------------- indexing (op_index.c) ---------------- */

/* out[i] = data[i with i[axis] = indices[i]]: indices have data's rank,
 * i32/i64, negative ones wrap (then clamp, as Gather). */
TeTensor *topi_gather_elements(Arena *a, const char *name, const TeTensor *data, const TeTensor *indices,
                               int64_t axis, LoomError *err);
/* GatherND with batch_dims: out = indices.shape[:-1] + data.shape[batch_dims + q:]
 * where q = indices.shape[-1]. */
TeTensor *topi_gather_nd(Arena *a, const char *name, const TeTensor *data, const TeTensor *indices,
                         int64_t batch_dims, LoomError *err);

typedef enum TopiScatterReduce {
  TOPI_SCATTER_NONE, /* duplicates: the last update wins */
  TOPI_SCATTER_ADD,
  TOPI_SCATTER_MUL,
  TOPI_SCATTER_MAX,
  TOPI_SCATTER_MIN,
} TopiScatterReduce;

/* ScatterElements: a copy of data where data[i with i[axis] = indices[i]]
 * combines with updates[i] for every i of indices' shape. Expressed as a
 * gather: each output element reduces over the updates that land on it
 * (stages "<name>_hit" (the last matching update's position, for NONE) or
 * "<name>_red", then name). */
TeTensor *topi_scatter_elements(Arena *a, const char *name, const TeTensor *data, const TeTensor *indices,
                                const TeTensor *updates, int64_t axis, TopiScatterReduce red, LoomError *err);
/* ScatterND: indices [..., q] address data's first q axes; updates have
 * shape indices.shape[:-1] + data.shape[q:]. Same stages. */
TeTensor *topi_scatter_nd(Arena *a, const char *name, const TeTensor *data, const TeTensor *indices,
                          const TeTensor *updates, TopiScatterReduce red, LoomError *err);

/* OneHot: out has indices' rank + 1 with `depth` inserted at axis; values =
 * [off, on]. Indices of any numeric dtype (truncated); negative ones count
 * from depth; out-of-range ones give an all-off row. */
TeTensor *topi_one_hot(Arena *a, const char *name, const TeTensor *indices, int64_t depth,
                       const TeTensor *values, int64_t axis, LoomError *err);
/* Trilu on the last two axes: upper keeps j - i >= k, lower keeps j - i <= k. */
TeTensor *topi_trilu(Arena *a, const char *name, const TeTensor *x, int64_t k, bool upper, LoomError *err);
/* EyeLike: a 2-D tensor of x's shape and dtype `dtype`, 1 where j - i == k. */
TeTensor *topi_eye_like(Arena *a, const char *name, const TeTensor *x, DType dtype, int64_t k, LoomError *err);
/* A tensor of x's shape filled with `value` (Dropout's all-true mask). */
TeTensor *topi_full_like(Arena *a, const char *name, const TeTensor *x, DType dtype, double value, LoomError *err);
/* ConstantOfShape: a tensor of the given shape (ndim 0: a scalar) whose
 * every element is `value`, a constant scalar expression whose dtype is
 * the tensor's (an integer one keeps all 64 bits, which a double would not). */
TeTensor *topi_full(Arena *a, const char *name, int ndim, const int64_t *shape, const Expr *value, LoomError *err);
/* A 1-D tensor of `count` given integer values (Shape of a static tensor):
 * a select chain on the index, for the few entries of a shape. */
TeTensor *topi_int_values(Arena *a, const char *name, DType dtype, const int64_t *values, int64_t count,
                          LoomError *err);
/* Range: out[i] = start + i * delta for i < count, in the dtype of start
 * and delta (constant or not: scalar expressions of one dtype). */
TeTensor *topi_arange(Arena *a, const char *name, int64_t count, const Expr *start, const Expr *delta,
                      LoomError *err);

/* ---------------- rearrangements (op_space.c) ---------------- */

/* [N, C, H, W] -> [N, C/(b*b), H*b, W*b]; crd selects the CRD order
 * (else DCR). */
TeTensor *topi_depth_to_space(Arena *a, const char *name, const TeTensor *x, int64_t block, bool crd,
                              LoomError *err);
/* [N, C, H, W] -> [N, C*b*b, H/b, W/b] (DCR order). */
TeTensor *topi_space_to_depth(Arena *a, const char *name, const TeTensor *x, int64_t block, LoomError *err);
/* Reverses the first seq_lens[b] elements along time_axis of each batch b. */
TeTensor *topi_reverse_sequence(Arena *a, const char *name, const TeTensor *x, const TeTensor *seq_lens,
                                int64_t batch_axis, int64_t time_axis, LoomError *err);
/* CenterCropPad: each listed axis becomes shape[i] long, centered (crops
 * and zero-pads; the odd element goes to the end). axes NULL = all. */
TeTensor *topi_center_crop_pad(Arena *a, const char *name, const TeTensor *x, const int64_t *shape,
                               const int64_t *axes, int n, LoomError *err);

/* ---------------- einsum (op_einsum.c) ---------------- */

/* Einsum for an explicit, letters-only equation ("bij,bjk->bik"; graph
 * inference rewrites "..." and implicit outputs into that form). Repeated
 * letters read diagonals; extent-1 axes broadcast. One stage: a te_sum of
 * the product of the operands over the letters not in the output (or the
 * plain product when there are none). */
TeTensor *topi_einsum(Arena *a, const char *name, const char *equation, const TeTensor *const *xs, int n,
                      LoomError *err);

/* ---------------- N-D windows (op_conv_nd.c, op_pool.c) ---------------- */

typedef struct TopiWindowParams {
  int nsp;                             /* spatial dims, 1..TOPI_MAX_SPATIAL */
  int64_t kernel[TOPI_MAX_SPATIAL];    /* pools and Col2Im; convs take it from W */
  int64_t strides[TOPI_MAX_SPATIAL];   /* 0 = 1 */
  int64_t dilations[TOPI_MAX_SPATIAL]; /* 0 = 1 */
  int64_t pads[2 * TOPI_MAX_SPATIAL];  /* all begins, then all ends */
  int64_t group;                       /* convs; 0 = 1 */
  int64_t output_padding[TOPI_MAX_SPATIAL]; /* ConvTranspose */
  bool ceil_mode, count_include_pad;   /* pools */
  int64_t p;                           /* LpPool's exponent */
} TopiWindowParams;

/* N-D convolution, x [N, C, d1..dn], w [K, C/group, k1..kn], bias [K] or
 * NULL; f32, f64 or i32. Stages "<name>_pad" (when padded), "<name>_conv" + name (bias) or
 * name. topi_conv2d_onnx is this with n = 2. */
TeTensor *topi_conv_nd_onnx(Arena *a, const char *name, const TeTensor *x, const TeTensor *w,
                            const TeTensor *bias, const TopiWindowParams *p, LoomError *err);
/* ConvInteger: i8/u8 x and w minus their zero points (x: a scalar; w: a
 * scalar or one per output channel), convolved in i32 as
 * topi_conv_nd_onnx ("<name>_x", "<name>_w" the shifted operands; zero
 * padding after the shift is padding with the zero point before it). */
TeTensor *topi_conv_integer_nd(Arena *a, const char *name, const TeTensor *x, const TeTensor *w, const TeTensor *x_zp,
                               const TeTensor *w_zp, const TopiWindowParams *p, LoomError *err);
/* ConvTranspose: x [N, C, d...], w [C, K/group, k...] -> [N, K, o...] with
 * o = s (d - 1) + output_padding + (k - 1) dil + 1 - pads. Stages
 * "<name>_up" (x spread by the strides and padded), "<name>_w" (the flipped,
 * transposed kernel), then the convolution as topi_conv_nd_onnx. */
TeTensor *topi_conv_transpose_nd(Arena *a, const char *name, const TeTensor *x, const TeTensor *w,
                                 const TeTensor *bias, const TopiWindowParams *p, LoomError *err);
/* Col2Im: x [N, C * prod(block), L] -> [N, C, image...], summing the
 * overlapping blocks. p->kernel is block_shape. One reduction stage. */
TeTensor *topi_col2im(Arena *a, const char *name, const TeTensor *x, const int64_t *image, const TopiWindowParams *p,
                      LoomError *err);

/* N-D MaxPool / AveragePool (kind) on [N, C, d...], or on the blocked
 * [N, C/c, d..., c] when blocked. Max accepts integer dtypes too. Stages as
 * topi_pool2d_onnx ("<name>_pad", "<name>_sum" for Avg, name). */
TeTensor *topi_pool_nd_onnx(Arena *a, const char *name, TopiPoolKind kind, const TeTensor *x,
                            const TopiWindowParams *p, bool blocked, LoomError *err);
/* LpPool: (sum |x|^p)^(1/p) over each window (zero padding). Stages
 * "<name>_pad", "<name>_sum", name. */
TeTensor *topi_lp_pool_nd(Arena *a, const char *name, const TeTensor *x, const TopiWindowParams *p,
                          LoomError *err);
/* MaxPool's Indices: the flat (row-major, or for storage_order 1 spatially
 * column-major) offset into x of each window's first maximum; maxv is the
 * pooled output. Stages "<name>_pad" and name. */
TeTensor *topi_max_pool_indices(Arena *a, const char *name, const TeTensor *x, const TeTensor *maxv,
                                const TopiWindowParams *p, int storage_order, LoomError *err);
/* MaxUnpool: y [N, C, index_spatial...] is zero except y.flat[i[j]] = x[j]
 * (the indices MaxPool gives); the output [N, C, out_spatial...] is y
 * zero-extended at the end of each spatial axis (out >= index). Stages
 * "<name>_hit", name. */
TeTensor *topi_max_unpool(Arena *a, const char *name, const TeTensor *x, const TeTensor *indices,
                          const int64_t *index_spatial, const int64_t *out_spatial, LoomError *err);

#endif
