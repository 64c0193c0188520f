/* Shared helpers and the per-op inference functions named by the GRAPH_OPS
 * table. Inference is best effort: an input with unknown rank or a
 * non-constant shape operand leaves the outputs unknown (not an error);
 * contradictions (mismatched extents, bad axes) are errors naming the node.
 * Inference also canonicalizes attributes it can resolve (auto_pad -> pads). */
#ifndef LOOM_GRAPH_INFER_INTERNAL_H
#define LOOM_GRAPH_INFER_INTERNAL_H

#include "graph/graph.h"

#define INFER_MAX_RANK 16

loom_status infer_fail(const Graph *g, const GraphNode *n, LoomError *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Input k, or NULL when omitted. */
const GraphValue *infer_input(const Graph *g, const GraphNode *n, int k);
/* True when input k is present with known rank and dtype. */
bool infer_known(const Graph *g, const GraphNode *n, int k);
/* Reads a constant integer operand (any int dtype) into the arena. */
bool infer_const_ints(const Graph *g, ValueId v, int64_t **out, int *count);
/* Normalizes a possibly negative axis into [0, rank). */
loom_status infer_axis(const Graph *g, const GraphNode *n, LoomError *err, int64_t axis, int rank, int *out);
void infer_set(Graph *g, GraphNode *n, int k, DType dtype, int rank, const int64_t *dims);
/* Multidirectional (numpy) broadcasting of two shapes into out (rank is the
 * larger one). Unknown extents stay unknown unless the other side decides. */
loom_status infer_broadcast_shapes(const Graph *g, const GraphNode *n, LoomError *err, int ra, const int64_t *a, int rb,
                                   const int64_t *b, int *rout, int64_t *out);
/* Integer list attribute, or NULL/0 when absent. */
const int64_t *infer_attr_ints(const GraphNode *n, const char *name, int *count);

/* fold_reduce.c: the constant a Reduce* node gives when it reduces an empty
 * set (a reduced extent of 0, a non-empty result), or NULL. */
GraphTensor *graph_fold_empty_reduce(Graph *g, const GraphNode *n);

/* Clamps one axis of Slice bounds as the ONNX spec does (shared with the
 * constant folder); count is the number of elements taken. */
void graph_slice_bounds(int64_t extent, int64_t step, int64_t *start, int64_t *end, int64_t *count);

/* Overflow-checked extent arithmetic: shapes come from untrusted files. */
static inline bool infer_add(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline bool infer_mul(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }

#define INFER_DECL(x) loom_status infer_##x(Graph *g, GraphNode *n, LoomError *err);
INFER_DECL(unary)
INFER_DECL(control_flow)
INFER_DECL(broadcast)
INFER_DECL(compare)
INFER_DECL(where)
INFER_DECL(cast)
INFER_DECL(dropout)
INFER_DECL(is_class) /* infer_math.c */
INFER_DECL(cast_like)
INFER_DECL(size)
INFER_DECL(conv)
INFER_DECL(pool)
INFER_DECL(global_pool)
INFER_DECL(gemm)
INFER_DECL(matmul)
INFER_DECL(reduce)
INFER_DECL(layer_norm)
INFER_DECL(arg_reduce) /* infer_reduce.c */
INFER_DECL(loss)
INFER_DECL(flatten)
INFER_DECL(reshape)
INFER_DECL(transpose)
INFER_DECL(concat)
INFER_DECL(split)
INFER_DECL(slice)
INFER_DECL(gather)
INFER_DECL(squeeze)
INFER_DECL(unsqueeze)
INFER_DECL(expand)
INFER_DECL(pad)
INFER_DECL(tile)
INFER_DECL(resize)
INFER_DECL(shape)
INFER_DECL(constant_of_shape)
INFER_DECL(range)
INFER_DECL(attention) /* infer_attention.c */
INFER_DECL(rotary_embedding)
INFER_DECL(swiglu)
INFER_DECL(linear_attention)
INFER_DECL(causal_conv_with_state)
INFER_DECL(tensor_scatter)
INFER_DECL(rnn) /* infer_rnn.c */
INFER_DECL(window) /* infer_signal.c */
INFER_DECL(dft)
INFER_DECL(stft)
INFER_DECL(mel_weight_matrix)
INFER_DECL(det)
INFER_DECL(grid_sample) /* infer_vision.c */
INFER_DECL(affine_grid)
INFER_DECL(roi_align)
INFER_DECL(deform_conv)
INFER_DECL(bit_cast)
INFER_DECL(top_k)
INFER_DECL(non_zero)
INFER_DECL(compress)
INFER_DECL(unique)
INFER_DECL(non_max_suppression)
INFER_DECL(gather_elements) /* infer_index.c */
INFER_DECL(gather_nd)
INFER_DECL(scatter)
INFER_DECL(one_hot)
INFER_DECL(trilu)
INFER_DECL(eye_like)
INFER_DECL(depth_to_space)
INFER_DECL(reverse_sequence)
INFER_DECL(center_crop_pad)
INFER_DECL(einsum)
INFER_DECL(conv_transpose) /* infer_window.c */
INFER_DECL(conv_integer)
INFER_DECL(col2im)
INFER_DECL(max_unpool)
INFER_DECL(layout_transform) /* infer_nchwc.c */
INFER_DECL(conv_nchwc)
INFER_DECL(pool_nchwc)
INFER_DECL(matmul_packed) /* infer_matmul_packed.c */
INFER_DECL(external)      /* infer_external.c */
INFER_DECL(quantize_linear) /* infer_quant.c */
INFER_DECL(dequantize_linear)
INFER_DECL(dynamic_quantize_linear)
INFER_DECL(matmul_integer)
INFER_DECL(qlinear_matmul)
INFER_DECL(qlinear_conv)
#undef INFER_DECL

#endif
