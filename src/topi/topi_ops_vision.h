/* Compute definitions (ONNX semantics) for the vision ops (op_vision.c),
 * BitCast, sorting (op_sort.c: TopK) and the ops whose output extents
 * depend on the data (op_dynamic.c: NonZero, Compress, Unique,
 * NonMaxSuppression). Included by topi_ops.h; its conventions apply.
 *
 * Data-dependent outputs (graph/graph_dynamic.h): the op returns a tensor
 * of the output's upper-bound shape whose buffer holds the real tensor
 * compactly (row-major for its real shape) from element 0, zeros after it,
 * plus an i64[rank] "extent" tensor with the real shape. Counts, positions
 * and the compaction are te stages (reductions and gathers), like
 * everything else. */
#ifndef LOOM_TOPI_TOPI_OPS_VISION_H
#define LOOM_TOPI_TOPI_OPS_VISION_H

#include "te/te.h"

#include <stdbool.h>

/* ---------------- vision (op_vision.c) ---------------- */

typedef enum TopiGridSampleMode { TOPI_GRID_NEAREST, TOPI_GRID_LINEAR, TOPI_GRID_CUBIC } TopiGridSampleMode;
typedef enum TopiGridSamplePad { TOPI_GRID_ZEROS, TOPI_GRID_BORDER, TOPI_GRID_REFLECTION } TopiGridSamplePad;

/* GridSample: X [N, C, D1..Dr] (r = 1..3), grid [N, O1..Or, r] holding
 * normalized coordinates in [-1, 1] (component 0 indexes the last axis).
 * Out [N, C, O1..Or]. f32/f64. Coordinates are computed in grid's dtype, as
 * the ONNX reference does; nearest rounds half to even. */
TeTensor *topi_grid_sample(Arena *a, const char *name, const TeTensor *x, const TeTensor *grid,
                           TopiGridSampleMode mode, TopiGridSamplePad pad, bool align_corners, LoomError *err);

/* AffineGrid: theta [N, 2, 3] (size = N, C, H, W) or [N, 3, 4] (size = N,
 * C, D, H, W) -> grid [N, H, W, 2] / [N, D, H, W, 3]. Computed in f64. */
TeTensor *topi_affine_grid(Arena *a, const char *name, const TeTensor *theta, const int64_t *size, int nsize,
                           bool align_corners, LoomError *err);

typedef struct TopiRoiAlignParams {
  int64_t out_h, out_w;
  int64_t sampling_ratio; /* > 0 (the adaptive 0 depends on the data: refused) */
  double spatial_scale;
  bool half_pixel; /* coordinate_transformation_mode half_pixel (else output_half_pixel) */
  bool max_mode;   /* mode "max" (else "avg") */
} TopiRoiAlignParams;

/* RoiAlign: X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices
 * [R] -> [R, C, out_h, out_w]. Stages `_acc` (sum or max over the
 * sampling grid), then name. */
TeTensor *topi_roi_align(Arena *a, const char *name, const TeTensor *x, const TeTensor *rois,
                         const TeTensor *batch_indices, const TopiRoiAlignParams *p, LoomError *err);

typedef struct TopiDeformConvParams {
  int64_t strides[2], pads[4], dilations[2]; /* 0 = ONNX default (1, 0, 1) */
  int64_t group, offset_group;                /* 0 = 1 */
} TopiDeformConvParams;

/* DeformConv (2-D): X [N, C, H, W], W [OC, C/group, kh, kw], offset
 * [N, offset_group*kh*kw*2, oh, ow], optional B [OC] and mask
 * [N, offset_group*kh*kw, oh, ow]. Each tap samples X bilinearly (zero
 * outside) at its offset position. Stages `_conv`, then name (+ bias). */
TeTensor *topi_deform_conv(Arena *a, const char *name, const TeTensor *x, const TeTensor *w,
                           const TeTensor *offset, const TeTensor *bias, const TeTensor *mask,
                           const TopiDeformConvParams *p, LoomError *err);

/* BitCast: x's bits as dtype `to` (same width; f16/bf16 are refused). */
TeTensor *topi_bit_cast(Arena *a, const char *name, const TeTensor *x, DType to, LoomError *err);

/* ---------------- sorting (op_sort.c) ---------------- */

/* TopK along axis: values (x's dtype) and indices (i64), both with extent
 * k on axis, in order (largest first, or smallest first); ties go to the
 * lower index, as ONNX specifies. A sort is a compute: `_rank` counts, for
 * every element, the elements that come before it (a reduction over the
 * axis), then each output position selects the element of that rank (a
 * second reduction). O(n^2) along the axis. */
bool topi_top_k(Arena *a, const char *name, const TeTensor *x, int64_t k, int64_t axis, bool largest,
                TeTensor **values, TeTensor **indices, LoomError *err);

/* ---------------- data-dependent extents (op_dynamic.c) ---------------- */

/* NonZero: y [rank, numel(x)] (upper bound), extent [2] = {rank, count}. */
bool topi_non_zero(Arena *a, const char *name, const TeTensor *x, TeTensor **y, TeTensor **extent, LoomError *err);

/* Compress along axis (has_axis false: of the flattened input). condition
 * is 1-D bool, possibly shorter than the axis. */
bool topi_compress(Arena *a, const char *name, const TeTensor *x, const TeTensor *cond, bool has_axis, int64_t axis,
                   TeTensor **y, TeTensor **extent, LoomError *err);

/* Unique: outs = Y, indices, inverse_indices, counts; extents for Y,
 * indices and counts. sorted: ascending (slices compare lexicographically
 * with an axis); else in order of first occurrence. */
bool topi_unique(Arena *a, const char *name, const TeTensor *x, bool has_axis, int64_t axis, bool sorted,
                 TeTensor **outs, TeTensor **extents, LoomError *err);

/* NonMaxSuppression: boxes [B, N, 4], scores [B, C, N]; max_output (i64,
 * one element), iou_threshold and score_threshold (one element each) may
 * be NULL (0, 0 and -inf). Selected [rows, 3] (batch, class, box) where
 * rows = the upper bound the caller chose (B*C*min(N, max_output)). */
bool topi_non_max_suppression(Arena *a, const char *name, const TeTensor *boxes, const TeTensor *scores,
                              const TeTensor *max_output, const TeTensor *iou_threshold,
                              const TeTensor *score_threshold, bool center_point_box, int64_t rows, TeTensor **y,
                              TeTensor **extent, LoomError *err);

#endif
