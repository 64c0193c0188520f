/* Graph-level optimization passes beyond inference and folding: BatchNorm
 * folding, common subexpression elimination, operator fusion (TVM's
 * FuseOps), the NCHWc layout rewrite for x86 convolutions and the static
 * memory plan of the intermediate tensors. docs/graph.md ("Passes") has the
 * rules each pass follows.
 *
 * Every pass expects an inferred graph (graph_pass_infer) in topological
 * order and leaves it inferred, verified and in topological order. Errors
 * are values naming the node at fault. The compiler runs them in the order
 * of its one table, k_graph_pipeline (src/compile/compile_model.c), which is
 * also the list `--dump-before` / `--dump-after` name them from. */
#ifndef LOOM_GRAPH_PASSES_H
#define LOOM_GRAPH_PASSES_H

#include "graph/graph.h"

/* ---- pass_fold_bn.c ---- */
/* BatchNormalization (inference form) after a Conv with constant weights
 * (and bias) whose output has no other user is folded into new constant
 * weights and bias; any other BatchNormalization with constant parameters
 * becomes Mul + Add by per-channel constants (so fusion treats it as
 * broadcast arithmetic). Numerics in double, stored in the weight dtype. */
loom_status graph_pass_fold_batchnorm(Graph *g, LoomError *err);
/* Mul/Div (scale) and Add/Sub (shift) of a Conv output by a per-channel
 * constant ([K, 1, 1], [1, K, 1, 1] or one element), when the conv has
 * constant f32/f64 weights (and bias) and no other user, fold into new
 * weights and bias; chains fold one after another. */
loom_status graph_pass_fold_conv_affine(Graph *g, LoomError *err);

/* ---- pass_empty.c ---- */
/* Ops with only empty outputs become empty constants; Concat drops empty
 * operands. */
loom_status graph_pass_fold_empty(Graph *g, LoomError *err);

/* ---- pass_canonicalize.c ---- */
/* Exact rewrites into the forms kernels handle best: a Gemm's constant
 * transposed B is transposed at compile time (transB becomes 0); Pow by a
 * constant 2 becomes Mul(x, x), by 0.5 Sqrt(x). */
loom_status graph_pass_canonicalize(Graph *g, LoomError *err);

/* ---- pass_split_gemv.c ---- */
/* A product [1, K] x [K, N] (Gemm without transposes or scaling, or
 * MatMul) with a constant f32 matrix of 1 MiB or more and K divisible by
 * `parts` becomes a batch matmul of `parts` row ranges of the matrix
 * ([parts, 1, K/parts] x [parts, K/parts, N], the same bytes) and a
 * ReduceSum over the parts (then the Gemm's bias Add): each thread then
 * streams one contiguous range of the weights. Nothing for parts < 2. */
loom_status graph_pass_split_gemv(Graph *g, int parts, LoomError *err);

/* ---- pass_pack_rnn.c ---- */
/* RNN, GRU and LSTM with constant f32 W and R: both transposed at compile
 * time to [D, I, G*H] and [D, H, G*H], the node marked weights_transposed
 * = 1 (the layout the op's products vectorize over). */
loom_status graph_pass_pack_rnn(Graph *g, LoomError *err);

/* ---- pass_pack_matmul.c ---- */
/* A product A x B (MatMul, or Gemm without transposes or scaling) with a
 * constant f32 B [K, N] and at least 2 rows of A (batch dims flattened)
 * becomes MatMulPacked(A, Bp) {n = N} (then the Gemm's bias Add), with B
 * packed at compile time into column panels Bp [ceil(N / width), K, width]
 * (zero-padded), so each vector of the schedule's column tile reads one
 * contiguous panel. A matrix-vector product (one row of A) gets panels
 * min(gemv_width, N rounded up to width) wide, an even number of them
 * (graph_pack_matmul_panels; none when gemv_width < 1: left to
 * split_gemv). Nothing for width < 1. */
loom_status graph_pass_pack_matmul(Graph *g, int width, int gemv_width, LoomError *err);
/* The panel width the pass gives a product of `rows` rows of A (batch
 * dims flattened) and n columns: width from 2 rows on, the GEMV width for
 * one row (the GEMV schedule's tile streams several panels side by side),
 * 0 (left alone) when width < 1, n < 1 or, for one row, gemv_width < 1. */
int64_t graph_pack_matmul_width(int64_t rows, int64_t n, int width, int gemv_width);
/* The panels of that width: ceil(n / w), for one row rounded up to an even
 * count (one zero panel more) so the GEMV schedule's tiles of two or more
 * panels divide them (1 x 1000 columns in 16-column panels: 64, not 63). */
int64_t graph_pack_matmul_panels(int64_t rows, int64_t n, int64_t w);
/* B [K, N] (row-major f32) into `panels` panels dst [panels, K, width]
 * (at least ceil(N / width)), zero past column N. */
void graph_pack_panels_f32(const float *src, int64_t K, int64_t N, int64_t width, int64_t panels, float *dst);

/* ---- pass_winograd.c ---- */
/* A 3x3 stride-1, dilation-1 ConvNCHWc (group 1, pads <= 2) with a constant
 * kernel, at least 64 input and output channels and 40 2x2 output tiles
 * per image gets the kernel
 * transformed for Winograd's F(2x2, 3x3), U = G g G^T [4, 4, K/k, C/c, c, k],
 * and the attribute winograd_tile = 2 (topi_conv2d_nchwc_winograd). */
loom_status graph_pass_winograd(Graph *g, LoomError *err);

/* ---- pass_cse.c ---- */
/* Merges nodes with the same op, attributes and inputs (the later one's
 * outputs are replaced by the earlier one's), and constants with the same
 * dtype, shape and bytes. Graph outputs keep their value ids. */
loom_status graph_pass_cse(Graph *g, LoomError *err);

/* ---- pass_fuse.c ---- */
typedef struct GraphFusedGroup {
  int *nodes; /* node indices, ascending (topological) */
  int nnodes;
  int anchor; /* node index of the op that decides the schedule (conv, matmul, reduction; else the root) */
  GraphOpPattern pattern; /* the group's combined pattern (the anchor's) */
  ValueId *inputs;  /* values read from outside the group, constants included; first use order */
  int ninputs;
  ValueId *outputs; /* values used outside the group or graph outputs */
  int noutputs;
} GraphFusedGroup;

typedef struct GraphFusionPlan {
  GraphFusedGroup *groups; /* topological order: a group only reads outputs of earlier groups */
  int ngroups;
  int *group_of; /* per node index: its group */
  int nnodes;
} GraphFusionPlan;

typedef struct GraphFuseOptions {
  int max_group_size; /* nodes per group; <= 0 means GRAPH_FUSE_DEFAULT_MAX_GROUP */
  /* Also fuse a reduction with the elementwise chain after it (TVM's
   * FuseOps does not; Loom's lowering can with reverse_compute_inline). */
  bool reduce_epilogue;
} GraphFuseOptions;

#define GRAPH_FUSE_DEFAULT_MAX_GROUP 64

/* Groups the nodes of g into kernels following TVM's FuseOps rules over
 * the post-dominator tree. The plan lives in `a`; g is not changed. opts
 * may be NULL (defaults). */
loom_status graph_pass_fuse(const Graph *g, const GraphFuseOptions *opts, Arena *a, GraphFusionPlan *out, LoomError *err);
/* Text form for `loom inspect --dump fused`:
 *   group 0 anchor Conv "conv0" [Conv "conv0", Add "add0", Relu "relu0"]
 *     (%x: f32[1, 3, 8, 8], %w: f32[...], %b: f32[...]) -> (%y: f32[1, 8, 8, 8]) */
void graph_fusion_plan_print(const Graph *g, const GraphFusionPlan *plan, StrBuf *sb);

/* ---- pass_layout.c ---- */
typedef struct GraphLayoutOptions {
  int max_block; /* largest channel block tried (16, 8, 4, 2, 1); <= 0 means 16 */
} GraphLayoutOptions;

/* Rewrites 2-D NCHW convolutions (group 1, depthwise, or grouped with 8k
 * channels per group) with constant f32
 * weights into ConvNCHWc over blocked tensors, with the weights transformed
 * at compile time; elementwise and per-channel broadcast ops between them
 * run on the blocked tensors; LayoutTransform nodes appear only where a
 * consumer needs NCHW (and at graph outputs). opts may be NULL. */
loom_status graph_pass_layout_nchwc(Graph *g, const GraphLayoutOptions *opts, LoomError *err);
/* The channel block the pass gives `channels` channels: the largest of 16,
 * 8, 4, 2, 1 that divides them and is at most max_block. */
int graph_layout_channel_block(int64_t channels, int max_block);

/* ---- plan_memory.c ---- */
/* One buffer's lifetime over the kernel sequence: written by kernel
 * `start`, last read by kernel `end` (end >= start). inplace_of, when >= 0,
 * names an earlier interval whose last reader is this buffer's writer, of
 * the same size, whose memory the writer may reuse (elementwise access). */
typedef struct MemInterval {
  int64_t size;
  int start, end;
  int inplace_of;
} MemInterval;

#define GRAPH_MEM_ALIGN 64

/* Best-fit planning of n intervals into one arena with GRAPH_MEM_ALIGN
 * aligned offsets: offsets[i] per interval, inplace[i] true where the
 * in-place hint was taken. Returns the arena size, -1 when out of memory. */
int64_t mem_plan_intervals(int n, const MemInterval *iv, int64_t *offsets, bool *inplace);

typedef struct GraphMemoryPlan {
  int64_t *offset;   /* per value: byte offset in the arena, -1 when not in it */
  int64_t *size;     /* per value: bytes (unaligned), 0 when not in the arena */
  ValueId *inplace_of; /* per value: the value whose memory it reuses in place, -1 */
  int nvalues;
  int64_t arena_size;        /* bytes */
  int64_t intermediate_bytes; /* sum of the sizes of all arena values */
} GraphMemoryPlan;

/* Plans every intermediate value (produced by a group and read by a later
 * group, not a graph output, not a constant) into one arena. Values must
 * have static shapes. */
loom_status graph_plan_memory(const Graph *g, const GraphFusionPlan *plan, Arena *a, GraphMemoryPlan *out, LoomError *err);

#endif
