/* Default CPU schedules for the operators of src/topi (TVM's topi
 * schedules): each takes a schedule of the operator's PrimFunc and the name
 * of its main block, applies a schedule written with sampling points (so the
 * defaults here are only the starting point of tuning), and returns LOOM_OK
 * or the refusal of the primitive that failed (message in sch_error).
 *
 * `epilogue` (may be NULL) names an elementwise block that consumes the
 * main block's output (bias add, activation, residual add of a fused
 * group): it is folded into the register tile's copy-out, so the
 * intermediate is never written to memory. If that is refused the
 * epilogue is left as it is (still correct). */
#ifndef LOOM_TOPI_TOPI_SCHEDULE_H
#define LOOM_TOPI_TOPI_SCHEDULE_H

#include "target/target.h"
#include "tir/schedule/schedule.h"

/* C[.., i, j] = sum_k A[.., i, k] * B[.., k, j]: register-tiled outer
 * product with a packed B panel; parallel over column tiles when
 * num_threads > 1. */
loom_status topi_schedule_matmul_cpu(Schedule *s, const char *block, const char *epilogue,
                                     const Target *target, int num_threads);

/* conv2d in the blocked layout (topi_conv2d_nchwc_onnx; block "<name>" or
 * "<name>_conv", optional "<name>_pad" stage): an output-width x
 * output-channel-block register tile (one vector of kb lanes per output
 * point), reduction loops outside the tile, the channel block innermost;
 * parallel over (batch, channel chunk, output row). Any blocks after the conv
 * (elementwise epilogue) are folded into the tile's copy-out. */
loom_status topi_schedule_conv2d_nchwc_cpu(Schedule *s, const char *block, const char *epilogue,
                                           const Target *target, int num_threads);
/* The same with input-channel blocking from block_min_channels input
 * channels on (a sampling point's likely choice; the default above: 512). */
loom_status topi_schedule_conv2d_nchwc_blocked(Schedule *s, const char *block, const char *epilogue,
                                               const Target *target, int num_threads, int64_t block_min_channels);
/* The Winograd conv's stages (topi_conv2d_nchwc_winograd): `gemm` is its
 * "<base>_gemm" block, `output` the block reading it (the output transform,
 * epilogue inlined) or NULL. LOOM_ERR_SCHEDULE when gemm is not a Winograd
 * product (no "<base>_transform" stage). */
loom_status topi_schedule_conv2d_winograd_cpu(Schedule *s, const char *gemm, const char *output, const Target *target,
                                              int num_threads);

/* depthwise conv2d in the blocked layout (topi_depthwise_conv2d_nchwc_onnx,
 * loops n, c, oh, ow, cb | ry, rx; padding stage "<name>_pad"): an
 * output-width x channel-block register tile with the R x S window
 * unrolled, the padding computed per block of output rows, parallel over
 * channel blocks x row blocks; the epilogue is folded into the tile's
 * copy-out (schedule_depthwise.c). */
loom_status topi_schedule_depthwise_conv2d_nchwc_cpu(Schedule *s, const char *block, const char *epilogue,
                                                     const Target *target, int num_threads);

/* 2-D max / average pooling (topi_pool_nd_onnx, NCHWc or NCHW: loops n, c,
 * oh, ow, [cb] | ry, rx; block "<name>" or the average's "<name>_sum", its
 * division the epilogue): an output-width x vector register tile (the
 * channel block, or output columns in NCHW), the window unrolled, the
 * padding inlined or computed per block of output rows (never for the
 * whole tensor), parallel over (n, c, row block) (schedule_pool.c). */
loom_status topi_schedule_pool2d_cpu(Schedule *s, const char *block, const char *epilogue, const Target *target,
                                     int num_threads);

/* The generated sketch of a reduction with data reuse (MetaSchedule's
 * multi-level tiling, "SSRSRS": sampled perfect tiles of every loop, the
 * output tile accumulated locally, S0 parallel, the loop over the output's
 * last dimension vectorized; schedule_tiling.c). Applies to a block whose
 * loops still bind its iterators one to one, with spatial and reduction
 * iterators and a read that some spatial iterator does not index. */
bool topi_multi_level_tiling_applies(Schedule *s, const char *block);
loom_status topi_schedule_multi_level_tiling(Schedule *s, const char *block, const char *epilogue,
                                             const Target *target, int num_threads);

/* A target with a local memory (Target.local_mem_bytes > 0: a scratchpad
 * reached by DMA): every iterator tiled once, the input tiles staged into
 * `local` buffers at the innermost reduction-tile loop, the output tile
 * accumulated in a `local` buffer, tiles the largest whose local buffers
 * (inputs twice with dma=double) fit the declared size; sampling points
 * below them (schedule_scratchpad.c, docs/schedule.md "Scratchpad
 * targets"). For the conv2d and matmul anchors; serial, and the epilogue is
 * left to its own loop nest. LOOM_ERR_SCHEDULE when the block's accesses
 * are not affine in its loops or no tiling fits. */
loom_status topi_schedule_scratchpad(Schedule *s, const char *block, const Target *target);

/* ---- what the schedules know about the machine (schedule_common.c) ----
 * Every register count, vector width and cache size a default schedule
 * uses comes from the target through these (a test greps src/topi for
 * constants that should have). */
/* Vector registers of the target's widest width (16 without AVX-512). */
int topi_vector_registers(const Target *t);
/* Registers one vector of `lanes` f32 occupies (a channel block wider than
 * the registers is split into several by the C compiler). */
int topi_registers_per_vector(const Target *t, int64_t lanes);
/* Vector accumulators of a matrix-vector product's column tile: FMA units
 * x FMA latency independent chains keep the units busy (8 on AVX-512 and
 * AVX2 cores with two FMA pipes), within the registers beside the
 * broadcast and one loaded vector. */
int topi_gemv_accumulators(const Target *t);
/* A GEMV's column tile streams several panels at once: one sequential
 * stream per thread left memory bandwidth unused (1 x 3072 x 4096 at 1
 * thread: 0.8 of OpenBLAS's sgemv with one stream, 1.0-1.1 with two to
 * four; 1 x 768 x 768 at 2 threads with AVX2: 0.83-0.93 with two panels
 * of 4 vectors, 1.03-1.07 with four of 2; issue 32), as OpenBLAS's kernels
 * read several rows at once. graph_pass_pack_matmul packs a GEMV's weights
 * in panels of topi_gemv_panel_vectors vectors (compile_model.c): the
 * accumulators split among GEMV_PANEL_STREAMS panels, two vectors at
 * least (a GEMV panel is wider than one vector: the schedule tells it
 * from the one-vector panels of bigger products by that). */
enum { GEMV_PANEL_STREAMS = 4, GEMV_MAX_STREAMS = 8 };
int topi_gemv_panel_vectors(const Target *t);
/* Panels of `panel_vecs` vectors a GEMV's column tile streams
 * (topi_schedule_matmul_cpu): the most, a power of two up to
 * GEMV_MAX_STREAMS, whose accumulators fit the vector registers (beside
 * the broadcast and one loaded vector), that divide the `panels` into
 * whole tiles, as many for each of `num_threads` threads (a tile is the
 * unit the threads share). 1 when none does. */
int topi_gemv_streams(const Target *t, int64_t panels, int64_t panel_vecs, int num_threads);
/* Whether splitting work of `flops` floating-point operations that read
 * `bytes` (a product's weights) among num_threads threads saves more than
 * the pool's fork/join (THREADPOOL_FORK_JOIN_NS): the serial time, the
 * longer of the flops at the target's peak and the bytes at its L2
 * bandwidth (a lower bound, so a split that pays is never refused for a
 * too high estimate), less its share per thread. */
bool topi_parallel_pays(const Target *t, double flops, double bytes, int num_threads);
/* The register tile of an outer-product micro-kernel (matmul, conv): `rows`
 * broadcast operands x `vecs` loaded vectors of `regs_per_vec` registers
 * each; per reduction step rows x vecs FMAs for rows + vecs loads. Fits
 * when the accumulators, the loaded vectors and one broadcast fit the
 * target's registers without spills. */
bool topi_register_tile_fits(const Target *t, int64_t rows, int64_t vecs, int regs_per_vec);
/* Sampling-point probabilities that make choice `best` of n the default
 * (p_best; the rest share 1 - p_best, or nothing where allowed[i] is false;
 * allowed may be NULL). */
void topi_probs_favoring(double *probs, int n, int best, double p_best, const bool *allowed);

/* The constant extent of a loop, -1 when it is symbolic or the handle is
 * stale. */
int64_t topi_loop_extent(const Schedule *s, SchRV loop);

/* Folds block `epilogue` (if not NULL) into its producer with
 * reverse_compute_inline; a refusal is not an error (the epilogue stays a
 * block of its own). */
void topi_fold_epilogue(Schedule *s, const char *epilogue);
/* Unrolls every loop of `block` inside loop `outer` except the innermost
 * (vector) one. For the init and copy-out of a register tile: with constant
 * indices the C compiler keeps the tile in registers (a loop with a
 * variable index into it makes the whole tile live in memory, inside the
 * k loop too). */
void topi_unroll_tile_loops(Schedule *s, SchRV block, SchRV outer);
/* Unrolls directly nested loops (outermost first) from the innermost out:
 * the innermost always (a register tile's columns, which need constant
 * indices), each further one while all the copies of the innermost body fit
 * the code-size budget (TIR_CODE_BUDGET, docs/transform.md "Code size"); the
 * loops outside the first that does not fit stay loops. A pool's or a
 * depthwise conv's window is unrolled whole when it is small (3x3, 5x5),
 * row by row or not at all when it is large. */
loom_status topi_unroll_within_budget(Schedule *s, const SchRV *loops, int n);
/* The padding stage of conv block `block`: "<name>_pad" where the conv is
 * "<name>" or "<name>_conv"; -1 when there is none. */
SchRV topi_find_pad(Schedule *s, const char *block);
/* The register tile of a reduction: its output cached (cache_write) and
 * written out under tile_loop with the epilogue folded in, its init
 * decomposed before reduce_loop. */
loom_status topi_tile_accumulator(Schedule *s, SchRV block, const char *epilogue, SchRV tile_loop, SchRV reduce_loop,
                                  SchRV *init, SchRV *copy);
/* A plain copy stage (the padding) at root level: vectorized over the
 * innermost loop, parallel over all loops but the last two, fused. */
loom_status topi_schedule_copy_stage(Schedule *s, SchRV blk, int num_threads);
/* With LOOM_DEBUG_SCHEDULE=1 in the environment, reports a refused step
 * (and sch_error) on stderr: the trail for "why is this kernel slow". */
void topi_schedule_note(const Schedule *s, const char *step);

#endif
