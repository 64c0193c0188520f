/* The compute half of the op strategy for the sequence-model and signal
 * ops (Attention, RotaryEmbedding, SwiGLU, LinearAttention,
 * CausalConvWithState, TensorScatter, RNN/GRU/LSTM, Det, the window
 * functions, DFT, STFT, MelWeightMatrix): node attributes and compile-time
 * operands -> the topi calls of src/topi/topi_ops_seq.h, one row per op in
 * compile_seq_computes. */
#include "compile/compile.h"

#include "topi/topi_ops.h"

#include <stdio.h>
#include <string.h>

static loom_status fail(const GraphNode *n, LoomError *err, loom_status st, const char *msg) {
  return err_set(err, st, "%s (node \"%s\"): %s", graph_op_info(n->op)->name, n->name ? n->name : "?", msg);
}

static const TeTensor *opt_in(const GraphNode *n, TeTensor *const *ins, int k) {
  return k < n->ninputs && n->inputs[k] != GRAPH_NO_VALUE ? ins[k] : NULL;
}

/* A compile-time scalar integer operand; false when absent or not constant. */
static bool const_int(const Graph *g, const GraphNode *n, int k, int64_t *out) {
  if (k >= n->ninputs || n->inputs[k] == GRAPH_NO_VALUE) return false;
  const GraphTensor *t = graph_value_constant(g, n->inputs[k]);
  if (!t || graph_tensor_numel(t) != 1 || !dtype_is_int(t->dtype)) return false;
  *out = graph_tensor_get_i64(t, 0);
  return true;
}

static bool present(const GraphNode *n, int k) { return k < n->ninputs && n->inputs[k] != GRAPH_NO_VALUE; }

/* The RNN family's attributes: direction, layout, clip, activations with
 * their alpha/beta lists (consumed in order by the activations that take
 * them, as ONNX Runtime does). */
static loom_status rnn_params(const Graph *g, const GraphNode *n, TopiRnnParams *p, LoomError *err) {
  TopiRnnKind kind = n->op == GRAPH_OP_LSTM ? TOPI_RNN_LSTM : n->op == GRAPH_OP_GRU ? TOPI_RNN_GRU : TOPI_RNN_SIMPLE;
  *p = topi_rnn_defaults(kind);
  const char *dir = graph_node_string(n, "direction");
  p->directions = !strcmp(dir, "bidirectional") ? 2 : 1;
  p->reverse = !strcmp(dir, "reverse");
  p->layout = (int)graph_node_int(n, "layout");
  p->clip = graph_attr_float(n, "clip", 0);
  p->linear_before_reset = kind == TOPI_RNN_GRU && graph_node_int(n, "linear_before_reset") != 0;
  p->input_forget = kind == TOPI_RNN_LSTM && graph_node_int(n, "input_forget") != 0;
  const GraphValue *r = &g->values[n->inputs[2]];
  p->weights_transposed = graph_node_int(n, "weights_transposed") != 0;
  p->hidden = graph_attr_int(n, "hidden_size", r->rank == 3 ? r->dims[p->weights_transposed ? 1 : 2] : 0);
  int per = kind == TOPI_RNN_LSTM ? 3 : kind == TOPI_RNN_GRU ? 2 : 1;
  const char *acts = graph_attr_string(n, "activations", NULL);
  if (!acts || !*acts) return LOOM_OK;
  /* The importer joined the STRINGS attribute with commas. */
  TopiRnnAct list[6];
  int count = 0;
  for (const char *s = acts; *s; count++) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    char tok[32];
    snprintf(tok, sizeof tok, "%.*s", (int)(len < sizeof tok ? len : sizeof tok - 1), s);
    if (count >= 6 || len >= sizeof tok || !topi_rnn_act_parse(tok, &list[count]))
      return err_set(err, LOOM_ERR_UNSUPPORTED, "%s (node \"%s\"): activation \"%s\" is not supported (or too many)",
                     graph_op_info(n->op)->name, n->name, tok);
    s = end ? end + 1 : s + len;
  }
  if (count != per * p->directions)
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s (node \"%s\"): %d activations given, expected %d",
                   graph_op_info(n->op)->name, n->name, count, per * p->directions);
  const GraphAttr *al = graph_node_attr(n, "activation_alpha"), *be = graph_node_attr(n, "activation_beta");
  bool fa = al && al->kind == GRAPH_ATTR_FLOATS, fb = be && be->kind == GRAPH_ATTR_FLOATS;
  topi_rnn_set_activations(p, list, count, fa ? al->floats : NULL, fa ? al->n : 0, fb ? be->floats : NULL, fb ? be->n : 0);
  return LOOM_OK;
}

static loom_status attention(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                             TeTensor **outs, LoomError *err) {
  TopiAttentionParams p;
  memset(&p, 0, sizeof p);
  p.q_num_heads = graph_attr_int(n, "q_num_heads", 0);
  p.kv_num_heads = graph_attr_int(n, "kv_num_heads", 0);
  p.has_scale = graph_node_attr(n, "scale") != NULL;
  p.scale = graph_attr_float(n, "scale", 0);
  p.is_causal = graph_node_int(n, "is_causal") != 0;
  p.softcap = graph_node_float(n, "softcap");
  p.qk_mode = (int)graph_node_int(n, "qk_matmul_output_mode");
  return topi_attention(a, name, ins[0], ins[1], ins[2], opt_in(n, ins, 3), opt_in(n, ins, 4), opt_in(n, ins, 5),
                        opt_in(n, ins, 6), &p, outs, err)
             ? LOOM_OK
             : LOOM_ERR_INVALID_ARG;
}

static loom_status done(bool ok) { return ok ? LOOM_OK : LOOM_ERR_INVALID_ARG; }

static loom_status rotary_embedding(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                    const char *name, TeTensor **outs, LoomError *err) {
  return done((outs[0] = topi_rotary_embedding(a, name, ins[0], ins[1], ins[2], opt_in(n, ins, 3),
                                               graph_node_int(n, "interleaved") != 0,
                                               graph_node_int(n, "rotary_embedding_dim"),
                                               graph_node_int(n, "num_heads"), err)) != NULL);
}

static loom_status swiglu(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                          TeTensor **outs, LoomError *err) {
  return done((outs[0] = topi_swiglu(a, name, ins[0], ins[1], graph_node_float(n, "alpha"), err)) != NULL);
}

static loom_status linear_attention(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                    const char *name, TeTensor **outs, LoomError *err) {
  const char *rule = graph_node_string(n, "update_rule");
  TopiLinearRule r = !strcmp(rule, "linear")  ? TOPI_LINEAR_ATTN_LINEAR
                     : !strcmp(rule, "gated") ? TOPI_LINEAR_ATTN_GATED
                     : !strcmp(rule, "delta") ? TOPI_LINEAR_ATTN_DELTA
                                              : TOPI_LINEAR_ATTN_GATED_DELTA;
  return done(topi_linear_attention(a, name, ins[0], ins[1], ins[2], opt_in(n, ins, 3), opt_in(n, ins, 4),
                                    opt_in(n, ins, 5), graph_attr_int(n, "q_num_heads", 0),
                                    graph_attr_int(n, "kv_num_heads", 0), graph_attr_float(n, "scale", 0), r, outs,
                                    err));
}

static loom_status causal_conv_with_state(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                          const char *name, TeTensor **outs, LoomError *err) {
  const char *act = graph_node_string(n, "activation");
  return done(topi_causal_conv_with_state(a, name, ins[0], ins[1], opt_in(n, ins, 2), opt_in(n, ins, 3),
                                          !strcmp(act, "silu") || !strcmp(act, "swish"), outs, err));
}

static loom_status tensor_scatter(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                                  TeTensor **outs, LoomError *err) {
  return done((outs[0] = topi_tensor_scatter(a, name, ins[0], ins[1], opt_in(n, ins, 2), graph_node_int(n, "axis"),
                                             !strcmp(graph_node_string(n, "mode"), "circular"), err)) != NULL);
}

/* RNN, GRU and LSTM. */
static loom_status rnn(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                       TeTensor **outs, LoomError *err) {
  TopiRnnParams p;
  loom_status st = rnn_params(g, n, &p, err);
  if (st) return st;
  bool lstm = n->op == GRAPH_OP_LSTM;
  return done(topi_rnn(a, name, &p, ins[0], ins[1], ins[2], opt_in(n, ins, 3), opt_in(n, ins, 4), opt_in(n, ins, 5),
                       lstm ? opt_in(n, ins, 6) : NULL, lstm ? opt_in(n, ins, 7) : NULL, outs, err));
}

static loom_status det(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                       TeTensor **outs, LoomError *err) {
  return done((outs[0] = topi_det(a, name, ins[0], err)) != NULL);
}

/* BlackmanWindow, HammingWindow and HannWindow. */
static loom_status window(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                          TeTensor **outs, LoomError *err) {
  int64_t size;
  DType dt;
  if (!const_int(g, n, 0, &size)) return fail(n, err, LOOM_ERR_UNSUPPORTED, "size must be a compile-time constant");
  if (!dtype_parse(graph_attr_string(n, "output_datatype", "f32"), &dt))
    return fail(n, err, LOOM_ERR_INVALID_ARG, "bad output_datatype");
  TopiWindowKind k = n->op == GRAPH_OP_BLACKMAN_WINDOW  ? TOPI_WINDOW_BLACKMAN
                     : n->op == GRAPH_OP_HAMMING_WINDOW ? TOPI_WINDOW_HAMMING
                                                        : TOPI_WINDOW_HANN;
  return done((outs[0] = topi_window(a, name, k, size, graph_node_int(n, "periodic") != 0, dt, err)) != NULL);
}

static loom_status dft(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                       TeTensor **outs, LoomError *err) {
  /* Inference resolved dft_length's default into the output shape. */
  int64_t axis = -2, len;
  if (present(n, 2) && !const_int(g, n, 2, &axis))
    return fail(n, err, LOOM_ERR_UNSUPPORTED, "axis must be a compile-time constant");
  const GraphValue *x = &g->values[n->inputs[0]];
  bool inverse = graph_node_int(n, "inverse") != 0, onesided = graph_node_int(n, "onesided") != 0;
  if (present(n, 1)) {
    if (!const_int(g, n, 1, &len)) return fail(n, err, LOOM_ERR_UNSUPPORTED, "dft_length must be a compile-time constant");
  } else {
    int ax = (int)(axis < 0 ? axis + x->rank : axis);
    if (ax < 0 || ax >= x->rank) return fail(n, err, LOOM_ERR_INVALID_ARG, "axis out of range");
    len = inverse && onesided ? 2 * (x->dims[ax] - 1) : x->dims[ax];
  }
  return done((outs[0] = topi_dft(a, name, ins[0], axis, len, inverse, onesided, err)) != NULL);
}

static loom_status stft(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins, const char *name,
                        TeTensor **outs, LoomError *err) {
  int64_t step, fl = -1;
  if (!const_int(g, n, 1, &step)) return fail(n, err, LOOM_ERR_UNSUPPORTED, "frame_step must be a compile-time constant");
  if (present(n, 3) && !const_int(g, n, 3, &fl))
    return fail(n, err, LOOM_ERR_UNSUPPORTED, "frame_length must be a compile-time constant");
  const TeTensor *w = opt_in(n, ins, 2);
  if (fl < 0) fl = w ? w->shape[0] : ins[0]->shape[1];
  return done((outs[0] = topi_stft(a, name, ins[0], step, w, fl, graph_node_int(n, "onesided") != 0, err)) != NULL);
}

static loom_status mel_weight_matrix(Arena *a, const Graph *g, const GraphNode *n, TeTensor *const *ins,
                                     const char *name, TeTensor **outs, LoomError *err) {
  int64_t bins, len;
  DType dt;
  if (!const_int(g, n, 0, &bins) || !const_int(g, n, 1, &len))
    return fail(n, err, LOOM_ERR_UNSUPPORTED, "num_mel_bins and dft_length must be compile-time constants");
  if (!dtype_parse(graph_attr_string(n, "output_datatype", "f32"), &dt))
    return fail(n, err, LOOM_ERR_INVALID_ARG, "bad output_datatype");
  return done((outs[0] = topi_mel_weight_matrix(a, name, bins, len, ins[2], ins[3], ins[4], dt, err)) != NULL);
}

const CompileComputeFn compile_seq_computes[GRAPH_OP_COUNT] = {
    [GRAPH_OP_ATTENTION] = attention,
    [GRAPH_OP_ROTARY_EMBEDDING] = rotary_embedding,
    [GRAPH_OP_SWIGLU] = swiglu,
    [GRAPH_OP_LINEAR_ATTENTION] = linear_attention,
    [GRAPH_OP_CAUSAL_CONV_WITH_STATE] = causal_conv_with_state,
    [GRAPH_OP_TENSOR_SCATTER] = tensor_scatter,
    [GRAPH_OP_RNN] = rnn,
    [GRAPH_OP_GRU] = rnn,
    [GRAPH_OP_LSTM] = rnn,
    [GRAPH_OP_DET] = det,
    [GRAPH_OP_BLACKMAN_WINDOW] = window,
    [GRAPH_OP_HAMMING_WINDOW] = window,
    [GRAPH_OP_HANN_WINDOW] = window,
    [GRAPH_OP_DFT] = dft,
    [GRAPH_OP_STFT] = stft,
    [GRAPH_OP_MEL_WEIGHT_MATRIX] = mel_weight_matrix,
};
