/* Compute definitions of the composite sequence-model and signal ops
 * (op_attention.c, op_rnn.c, op_signal.c). Included by topi_ops.h; the
 * conventions there apply (name the output, "<name>_<stage>" for the other
 * stages, NULL plus a message naming the op on bad input). Multi-output ops
 * write every output to outs[] (the caller uses the ones the graph asks
 * for; stages nothing reads are never lowered). */
#ifndef LOOM_TOPI_TOPI_OPS_SEQ_H
#define LOOM_TOPI_TOPI_OPS_SEQ_H

#include "te/te.h"

#include <stdbool.h>

/* ---------------- attention family (op_attention.c) ---------------- */

typedef struct TopiAttentionParams {
  int64_t q_num_heads, kv_num_heads; /* 3-D inputs only */
  bool has_scale;
  double scale;   /* default 1 / sqrt(head size); Q and K are each scaled by sqrt(scale) */
  bool is_causal; /* bottom-right aligned: query i sees key j <= i + offset */
  double softcap; /* > 0: softcap * tanh(qk / softcap) before the mask */
  int qk_mode;    /* qk_matmul_output: 0/1 qk (softcapped), 2 + mask, 3 softmax */
} TopiAttentionParams;

/* ONNX Attention (opset 23/24). Q [B, Hq, Sq, D] K [B, Hkv, S, D] V [B, Hkv,
 * S, Dv], or 3-D [B, S, heads * head size]. mask (bool or Q's dtype,
 * broadcast to [B, Hq, Sq, P + S], padded with -inf / false past its last
 * extent), past_k/past_v [B, Hkv, P, D/Dv], nonpad [B] (integer, valid keys
 * per batch): each may be NULL. outs: Y, present_key, present_value,
 * qk_matmul_output. Grouped-query attention when Hq > Hkv (query head h
 * reads key/value head h / (Hq / Hkv)). A row whose keys are all masked
 * gives 0. Stages "<name>_pk", "_pv", "_qk", "_logit", "_bmax", "_max",
 * "_exp", "_sum", "_prob", "_acc" (exp V), "_qkout", name. */
bool topi_attention(Arena *a, const char *name, const TeTensor *q, const TeTensor *k, const TeTensor *v,
                    const TeTensor *mask, const TeTensor *past_k, const TeTensor *past_v, const TeTensor *nonpad,
                    const TopiAttentionParams *p, TeTensor **outs, LoomError *err);

/* RotaryEmbedding: x [B, H, S, D] or [B, S, H * D] (num_heads); cos/sin
 * [max_pos, rd / 2] indexed by position_ids [B, S], or [B, S, rd / 2] when
 * pos is NULL. rotary_dim 0 = D. One stage. */
TeTensor *topi_rotary_embedding(Arena *a, const char *name, const TeTensor *x, const TeTensor *cos_cache,
                                const TeTensor *sin_cache, const TeTensor *pos, bool interleaved,
                                int64_t rotary_dim, int64_t num_heads, LoomError *err);

/* SwiGLU: x * sigmoid(alpha * x) * y, x and y of one shape. One stage. */
TeTensor *topi_swiglu(Arena *a, const char *name, const TeTensor *x, const TeTensor *y, double alpha,
                      LoomError *err);

typedef enum TopiLinearRule {
  TOPI_LINEAR_ATTN_LINEAR,
  TOPI_LINEAR_ATTN_GATED,
  TOPI_LINEAR_ATTN_DELTA,
  TOPI_LINEAR_ATTN_GATED_DELTA,
} TopiLinearRule;

/* LinearAttention: q [B, T, Hq * dk], k [B, T, Hkv * dk], v [B, T, Hkv *
 * dv], past [B, Hkv, dk, dv] or NULL (zeros), decay [B, T, Hkv or Hkv * dk]
 * (gated rules), beta [B, T, Hkv or 1] (delta rules); scale 0 = 1 /
 * sqrt(dk). outs: output [B, T, Hq * dv], present_state. The recurrence is
 * unrolled over T: per step "<name>_r<t>" (delta: S^T k), "<name>_s<t>"
 * (the state), "<name>_o<t>" (the read). */
bool topi_linear_attention(Arena *a, const char *name, const TeTensor *q, const TeTensor *k, const TeTensor *v,
                           const TeTensor *past, const TeTensor *decay, const TeTensor *beta, int64_t q_heads,
                           int64_t kv_heads, double scale, TopiLinearRule rule, TeTensor **outs, LoomError *err);

/* CausalConvWithState: depthwise causal 1-D conv of x [B, C, L] with w [C,
 * 1, K] over [past_state (or zeros), x], + bias [C], then SiLU when silu.
 * outs: output [B, C, L], present_state [B, C, K - 1] (NULL when K = 1:
 * empty). Stages "<name>_conv", name, "<name>_state". */
bool topi_causal_conv_with_state(Arena *a, const char *name, const TeTensor *x, const TeTensor *w,
                                 const TeTensor *bias, const TeTensor *past, bool silu, TeTensor **outs,
                                 LoomError *err);

/* TensorScatter: past with update [.., S_u, ..] written along axis at
 * write_indices[b] (per batch, i32/i64; NULL = 0), modulo the axis extent
 * when circular. One stage. */
TeTensor *topi_tensor_scatter(Arena *a, const char *name, const TeTensor *past, const TeTensor *update,
                              const TeTensor *write_indices, int64_t axis, bool circular, LoomError *err);

/* ---------------- recurrent (op_rnn.c) ---------------- */

typedef enum TopiRnnKind { TOPI_RNN_SIMPLE, TOPI_RNN_GRU, TOPI_RNN_LSTM } TopiRnnKind;

typedef enum TopiRnnAct {
  TOPI_ACT_RELU,
  TOPI_ACT_TANH,
  TOPI_ACT_SIGMOID,
  TOPI_ACT_AFFINE,          /* alpha * x + beta */
  TOPI_ACT_LEAKY_RELU,      /* alpha */
  TOPI_ACT_THRESHOLDED_RELU, /* alpha */
  TOPI_ACT_SCALED_TANH,     /* alpha * tanh(beta * x) */
  TOPI_ACT_HARD_SIGMOID,    /* alpha, beta */
  TOPI_ACT_ELU,             /* alpha */
  TOPI_ACT_SOFTSIGN,
  TOPI_ACT_SOFTPLUS,
} TopiRnnAct;

typedef struct TopiRnnParams {
  TopiRnnKind kind;
  int64_t hidden;
  int directions;        /* 1 or 2 (bidirectional) */
  bool reverse;          /* the single direction runs backwards */
  int layout;            /* 0: [T, B, ...]; 1: batch first */
  double clip;           /* > 0: gate pre-activations clipped to [-clip, clip] */
  bool linear_before_reset; /* GRU */
  bool input_forget;     /* LSTM: the forget gate is 1 - input gate */
  bool weights_transposed; /* W given as [D, I, G*H], R as [D, H, G*H] (pass_pack_rnn.c) */
  TopiRnnAct act[6];     /* per direction: f (and g, h): RNN 1, GRU 2, LSTM 3 */
  double alpha[6], beta[6];
} TopiRnnParams;

/* Defaults for kind: Tanh (RNN), Sigmoid + Tanh (GRU), Sigmoid + Tanh +
 * Tanh (LSTM) with ONNX's alpha/beta defaults. */
TopiRnnParams topi_rnn_defaults(TopiRnnKind kind);
/* Parses an ONNX activation name ("Sigmoid", "Tanh", ...). */
bool topi_rnn_act_parse(const char *s, TopiRnnAct *out);
/* Sets p's activations (count <= 6: the per-direction list, times the
 * directions) with ONNX's alpha/beta defaults, overridden by alpha[] /
 * beta[] consumed in order by the activations that take them (as ONNX
 * Runtime does). */
void topi_rnn_set_activations(TopiRnnParams *p, const TopiRnnAct *acts, int count, const double *alpha, int n_alpha,
                              const double *beta, int n_beta);

/* RNN / GRU / LSTM (ONNX gate orders: GRU z r h, LSTM i o f c): the cell's
 * stages in a loop over the T time steps (te_step_loop), inside a loop over
 * the directions. x, w [D, G*H, I], r
 * [D, G*H, H]; b [D, 2*G*H], seq_lens [B], h0, c0 [D, B, H] (layout 1:
 * [B, D, H]) and peephole p [D, 3*H] may be NULL. Steps past a batch
 * entry's sequence length keep its state and write 0 to Y. outs: Y, Y_h,
 * Y_c (LSTM). */
bool topi_rnn(Arena *a, const char *name, const TopiRnnParams *p, const TeTensor *x, const TeTensor *w,
              const TeTensor *r, const TeTensor *b, const TeTensor *seq_lens, const TeTensor *h0,
              const TeTensor *c0, const TeTensor *peep, TeTensor **outs, LoomError *err);

/* ---------------- signal processing and Det (op_signal.c) ---------------- */

typedef enum TopiWindowKind { TOPI_WINDOW_BLACKMAN, TOPI_WINDOW_HAMMING, TOPI_WINDOW_HANN } TopiWindowKind;

/* [size] window of dtype (computed in f64), periodic or symmetric. */
TeTensor *topi_window(Arena *a, const char *name, TopiWindowKind kind, int64_t size, bool periodic, DType dtype,
                      LoomError *err);
/* DFT along axis of x [..., 1 | 2] (real or complex, last axis) of length
 * dft_length (the input is zero-padded or cut). Forward: [..., 2] (onesided:
 * the first length / 2 + 1 bins); inverse: scaled by 1 / length, onesided
 * inverse takes a half spectrum and gives the real signal [..., 1].
 * Accumulates in f64: stages "<name>_acc", name. */
TeTensor *topi_dft(Arena *a, const char *name, const TeTensor *x, int64_t axis, int64_t dft_length, bool inverse,
                   bool onesided, LoomError *err);
/* STFT of x [B, L, 1 | 2]: frames of frame_length every frame_step,
 * times window [frame_length] (NULL = ones), DFT of each -> [B, frames,
 * bins, 2]. Stages "<name>_acc", name. */
TeTensor *topi_stft(Arena *a, const char *name, const TeTensor *x, int64_t frame_step, const TeTensor *window,
                    int64_t frame_length, bool onesided, LoomError *err);
/* MelWeightMatrix [dft_length / 2 + 1, num_mel_bins] of dtype from the
 * scalar tensors sample_rate (integer), lower/upper_edge_hertz (float).
 * Stages "<name>_bins" (the triangle corners), name. */
TeTensor *topi_mel_weight_matrix(Arena *a, const char *name, int64_t num_mel_bins, int64_t dft_length,
                                 const TeTensor *sample_rate, const TeTensor *lower, const TeTensor *upper,
                                 DType dtype, LoomError *err);
/* Det of x [..., M, M]: Gaussian elimination with partial pivoting in f64,
 * unrolled over the M columns ("<name>_p<k>" pivot row, "<name>_a<k>" the
 * eliminated matrix), then the product of the pivots. */
TeTensor *topi_det(Arena *a, const char *name, const TeTensor *x, LoomError *err);

#endif
