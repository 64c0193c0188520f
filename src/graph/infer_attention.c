/* Inference for the composite sequence-model ops: Attention (opset 23/24),
 * RotaryEmbedding, SwiGLU, LinearAttention, CausalConvWithState and
 * TensorScatter. Shapes follow the ONNX operator specification; inputs whose
 * shapes are not all known leave the outputs with their dtype and rank
 * only. */
#include "graph/infer_internal.h"

#include <string.h>

/* Every named input is present (or optional and omitted) with a static
 * shape. */
static bool inputs_static(const Graph *g, const GraphNode *n, int count) {
  for (int k = 0; k < count; k++) {
    const GraphValue *v = infer_input(g, n, k);
    if (v && !graph_value_is_static(v)) return false;
  }
  return true;
}

static void set_unknown(Graph *g, GraphNode *n, int k, DType dt, int rank) {
  int64_t dims[INFER_MAX_RANK];
  for (int d = 0; d < rank; d++) dims[d] = -1;
  infer_set(g, n, k, dt, rank, dims);
}

static loom_status need_rank(const Graph *g, const GraphNode *n, LoomError *err, int k, const char *what, int rank) {
  const GraphValue *v = infer_input(g, n, k);
  if (v && v->rank != rank)
    return infer_fail(g, n, err, "%s (\"%s\") has rank %d, expected %d", what, v->name, v->rank, rank);
  return LOOM_OK;
}

static loom_status need_dim(const Graph *g, const GraphNode *n, LoomError *err, int k, const char *what, int d,
                            int64_t want) {
  const GraphValue *v = infer_input(g, n, k);
  if (v && v->dims[d] != want)
    return infer_fail(g, n, err, "%s (\"%s\") has extent %lld in dimension %d, expected %lld", what, v->name,
                      (long long)v->dims[d], d, (long long)want);
  return LOOM_OK;
}

static loom_status same_dtype(const Graph *g, const GraphNode *n, LoomError *err, int k, int ref) {
  const GraphValue *v = infer_input(g, n, k), *r = infer_input(g, n, ref);
  if (v && r && v->dtype.bits && !dtype_eq(v->dtype, r->dtype))
    return infer_fail(g, n, err, "input %d (\"%s\") has a different dtype than input %d", k, v->name, ref);
  return LOOM_OK;
}

/* heads from attribute `attr` (> 0) dividing `hidden`. */
static loom_status heads_of(const Graph *g, const GraphNode *n, LoomError *err, const char *attr, int64_t hidden,
                            int64_t *heads, int64_t *head_size) {
  int64_t h = graph_attr_int(n, attr, 0);
  if (h <= 0) return infer_fail(g, n, err, "3-D inputs need a positive %s attribute", attr);
  if (hidden % h) return infer_fail(g, n, err, "hidden size %lld is not divisible by %s %lld", (long long)hidden, attr, (long long)h);
  *heads = h;
  *head_size = hidden / h;
  return LOOM_OK;
}

/* Attention(Q, K, V, attn_mask?, past_key?, past_value?, nonpad_kv_seqlen?)
 * -> Y, present_key?, present_value?, qk_matmul_output?. Q/K/V are 4-D
 * [B, heads, S, head_size] or 3-D [B, S, heads * head_size]. */
loom_status infer_attention(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 3) return infer_fail(g, n, err, "expected Q, K and V");
  for (int k = 0; k < 3; k++)
    if (!infer_known(g, n, k)) return LOOM_OK;
  const GraphValue *q = infer_input(g, n, 0), *kk = infer_input(g, n, 1), *v = infer_input(g, n, 2);
  int r = q->rank;
  if (r != 3 && r != 4) return infer_fail(g, n, err, "Q has rank %d, expected 3 or 4", r);
  if (kk->rank != r || v->rank != r) return infer_fail(g, n, err, "Q, K and V must have the same rank");
  loom_status st;
  if ((st = same_dtype(g, n, err, 1, 0)) || (st = same_dtype(g, n, err, 2, 0)) || (st = same_dtype(g, n, err, 4, 0)) ||
      (st = same_dtype(g, n, err, 5, 0)))
    return st;
  DType dt = q->dtype;
  int yrank = r;
  if (!inputs_static(g, n, n->ninputs)) {
    set_unknown(g, n, 0, dt, yrank);
    for (int k = 1; k < 4; k++) set_unknown(g, n, k, dt, 4);
    return LOOM_OK;
  }
  int64_t b = q->dims[0], hq, sq, d, hkv, skv, dv;
  if (r == 4) {
    hq = q->dims[1], sq = q->dims[2], d = q->dims[3];
    hkv = kk->dims[1], skv = kk->dims[2], dv = v->dims[3];
    if (kk->dims[3] != d) return infer_fail(g, n, err, "K head size %lld differs from Q's %lld", (long long)kk->dims[3], (long long)d);
    if (v->dims[1] != hkv) return infer_fail(g, n, err, "V has %lld heads, K has %lld", (long long)v->dims[1], (long long)hkv);
  } else {
    int64_t dk;
    sq = q->dims[1], skv = kk->dims[1];
    if ((st = heads_of(g, n, err, "q_num_heads", q->dims[2], &hq, &d)) ||
        (st = heads_of(g, n, err, "kv_num_heads", kk->dims[2], &hkv, &dk)) ||
        (st = heads_of(g, n, err, "kv_num_heads", v->dims[2], &hkv, &dv)))
      return st;
    if (dk != d) return infer_fail(g, n, err, "K head size %lld differs from Q's %lld", (long long)dk, (long long)d);
  }
  if (kk->dims[0] != b || v->dims[0] != b) return infer_fail(g, n, err, "Q, K and V have different batch sizes");
  if (v->dims[r - 2] != skv) return infer_fail(g, n, err, "K and V have different sequence lengths");
  if (hkv < 1 || hq % hkv) return infer_fail(g, n, err, "%lld query heads are not a multiple of %lld key/value heads", (long long)hq, (long long)hkv);
  int64_t past = 0;
  const GraphValue *pk = infer_input(g, n, 4), *pv = infer_input(g, n, 5);
  if (!pk != !pv) return infer_fail(g, n, err, "past_key and past_value must be given together");
  if (pk) {
    if ((st = need_rank(g, n, err, 4, "past_key", 4)) || (st = need_rank(g, n, err, 5, "past_value", 4))) return st;
    past = pk->dims[2];
    int64_t want_k[4] = {b, hkv, past, d}, want_v[4] = {b, hkv, past, dv};
    for (int k = 0; k < 4; k++)
      if ((st = need_dim(g, n, err, 4, "past_key", k, want_k[k])) || (st = need_dim(g, n, err, 5, "past_value", k, want_v[k])))
        return st;
  }
  const GraphValue *nonpad = infer_input(g, n, 6);
  if (nonpad && (nonpad->rank != 1 || nonpad->dims[0] != b || !dtype_is_int(nonpad->dtype)))
    return infer_fail(g, n, err, "nonpad_kv_seqlen must be an integer tensor of shape [%lld]", (long long)b);
  if (nonpad && pk) return infer_fail(g, n, err, "nonpad_kv_seqlen cannot be combined with past_key/past_value");
  int64_t total = past + skv;
  const GraphValue *mask = infer_input(g, n, 3);
  if (mask) {
    if (mask->rank < 1 || mask->rank > 4) return infer_fail(g, n, err, "attn_mask has rank %d, expected 1 to 4", mask->rank);
    if (!dtype_is_bool(mask->dtype) && !dtype_eq(mask->dtype, dt))
      return infer_fail(g, n, err, "attn_mask must be bool or Q's dtype");
    if (mask->dims[mask->rank - 1] > total)
      return infer_fail(g, n, err, "attn_mask's last extent %lld exceeds the key length %lld",
                        (long long)mask->dims[mask->rank - 1], (long long)total);
    int64_t full[4] = {b, hq, sq, total};
    for (int k = 0; k < mask->rank - 1; k++) {
      int64_t e = mask->dims[k], want = full[4 - mask->rank + k];
      if (e != 1 && e != want)
        return infer_fail(g, n, err, "attn_mask extent %lld in dimension %d does not broadcast to %lld", (long long)e, k,
                          (long long)want);
    }
  }
  int64_t mode = graph_node_int(n, "qk_matmul_output_mode");
  if (mode < 0 || mode > 3) return infer_fail(g, n, err, "qk_matmul_output_mode %lld is not 0..3", (long long)mode);
  int64_t y4[4] = {b, hq, sq, dv}, y3[3] = {b, sq, hq * dv};
  infer_set(g, n, 0, dt, yrank, r == 4 ? y4 : y3);
  int64_t pkd[4] = {b, hkv, total, d}, pvd[4] = {b, hkv, total, dv}, qkd[4] = {b, hq, sq, total};
  infer_set(g, n, 1, dt, 4, pkd);
  infer_set(g, n, 2, dt, 4, pvd);
  infer_set(g, n, 3, dt, 4, qkd);
  return LOOM_OK;
}

/* RotaryEmbedding(X, cos_cache, sin_cache, position_ids?) -> same as X. */
loom_status infer_rotary_embedding(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 3) return infer_fail(g, n, err, "expected input, cos_cache and sin_cache");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank != 3 && x->rank != 4) return infer_fail(g, n, err, "input has rank %d, expected 3 or 4", x->rank);
  loom_status st;
  if ((st = same_dtype(g, n, err, 1, 0)) || (st = same_dtype(g, n, err, 2, 0))) return st;
  const GraphValue *pos = infer_input(g, n, 3);
  if (pos && pos->dtype.bits && !dtype_is_int(pos->dtype)) return infer_fail(g, n, err, "position_ids must be integers");
  infer_set(g, n, 0, x->dtype, x->rank, x->dims);
  return LOOM_OK;
}

/* SwiGLU(A, B): A and B of one shape and dtype. */
loom_status infer_swiglu(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2) return infer_fail(g, n, err, "expected 2 inputs");
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *a = infer_input(g, n, 0), *b = infer_input(g, n, 1);
  if (!dtype_eq(a->dtype, b->dtype)) return infer_fail(g, n, err, "A and B have different dtypes");
  if (a->rank != b->rank) return infer_fail(g, n, err, "A and B have different shapes (no broadcasting)");
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] >= 0 && b->dims[d] >= 0 && a->dims[d] != b->dims[d])
      return infer_fail(g, n, err, "A and B have different shapes (no broadcasting)");
  infer_set(g, n, 0, a->dtype, a->rank, a->dims);
  return LOOM_OK;
}

/* LinearAttention(query, key, value, past_state?, decay?, beta?) ->
 * output [B, T, Hq * dv], present_state [B, Hkv, dk, dv]. */
loom_status infer_linear_attention(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 3) return infer_fail(g, n, err, "expected query, key and value");
  for (int k = 0; k < 3; k++)
    if (!infer_known(g, n, k)) return LOOM_OK;
  const GraphValue *q = infer_input(g, n, 0), *kk = infer_input(g, n, 1), *v = infer_input(g, n, 2);
  loom_status st;
  if ((st = need_rank(g, n, err, 0, "query", 3)) || (st = need_rank(g, n, err, 1, "key", 3)) ||
      (st = need_rank(g, n, err, 2, "value", 3)) || (st = same_dtype(g, n, err, 1, 0)) || (st = same_dtype(g, n, err, 2, 0)))
    return st;
  const char *rule = graph_node_string(n, "update_rule");
  bool gated = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
  bool delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
  if (!gated && !delta && strcmp(rule, "linear"))
    return infer_fail(g, n, err, "update_rule \"%s\" is not linear, gated, delta or gated_delta", rule);
  if (gated != (infer_input(g, n, 4) != NULL))
    return infer_fail(g, n, err, "update_rule \"%s\" %s the decay input", rule, gated ? "requires" : "forbids");
  if (delta != (infer_input(g, n, 5) != NULL))
    return infer_fail(g, n, err, "update_rule \"%s\" %s the beta input", rule, delta ? "requires" : "forbids");
  if (!inputs_static(g, n, n->ninputs)) {
    set_unknown(g, n, 0, q->dtype, 3);
    set_unknown(g, n, 1, q->dtype, 4);
    return LOOM_OK;
  }
  int64_t b = q->dims[0], t = q->dims[1], hq, hkv, dk, dk2, dv;
  if ((st = heads_of(g, n, err, "q_num_heads", q->dims[2], &hq, &dk)) ||
      (st = heads_of(g, n, err, "kv_num_heads", kk->dims[2], &hkv, &dk2)) ||
      (st = heads_of(g, n, err, "kv_num_heads", v->dims[2], &hkv, &dv)))
    return st;
  if (dk != dk2) return infer_fail(g, n, err, "key head size %lld differs from query's %lld", (long long)dk2, (long long)dk);
  if (hq % hkv) return infer_fail(g, n, err, "q_num_heads is not a multiple of kv_num_heads");
  for (int k = 1; k < 3; k++)
    if ((st = need_dim(g, n, err, k, k == 1 ? "key" : "value", 0, b)) || (st = need_dim(g, n, err, k, k == 1 ? "key" : "value", 1, t)))
      return st;
  int64_t sd[4] = {b, hkv, dk, dv};
  if (infer_input(g, n, 3)) {
    if ((st = need_rank(g, n, err, 3, "past_state", 4))) return st;
    for (int k = 0; k < 4; k++)
      if ((st = need_dim(g, n, err, 3, "past_state", k, sd[k]))) return st;
  }
  const GraphValue *decay = infer_input(g, n, 4), *beta = infer_input(g, n, 5);
  if (decay) {
    if ((st = need_rank(g, n, err, 4, "decay", 3)) || (st = need_dim(g, n, err, 4, "decay", 0, b)) ||
        (st = need_dim(g, n, err, 4, "decay", 1, t)) || (st = same_dtype(g, n, err, 4, 0)))
      return st;
    if (decay->dims[2] != hkv && decay->dims[2] != hkv * dk)
      return infer_fail(g, n, err, "decay's last extent %lld is neither kv_num_heads nor kv_num_heads * head size",
                        (long long)decay->dims[2]);
  }
  if (beta) {
    if ((st = need_rank(g, n, err, 5, "beta", 3)) || (st = need_dim(g, n, err, 5, "beta", 0, b)) ||
        (st = need_dim(g, n, err, 5, "beta", 1, t)) || (st = same_dtype(g, n, err, 5, 0)))
      return st;
    if (beta->dims[2] != hkv && beta->dims[2] != 1)
      return infer_fail(g, n, err, "beta's last extent %lld is neither kv_num_heads nor 1", (long long)beta->dims[2]);
  }
  int64_t od[3] = {b, t, hq * dv};
  infer_set(g, n, 0, q->dtype, 3, od);
  const GraphValue *ps = infer_input(g, n, 3);
  infer_set(g, n, 1, ps ? ps->dtype : q->dtype, 4, sd);
  return LOOM_OK;
}

/* CausalConvWithState(input [B, C, L], weight [C, 1, K], bias? [C],
 * past_state? [B, C, K-1]) -> output [B, C, L], present_state [B, C, K-1]. */
loom_status infer_causal_conv_with_state(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected input and weight");
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  loom_status st;
  if ((st = need_rank(g, n, err, 0, "input", 3)) || (st = need_rank(g, n, err, 1, "weight", 3)) ||
      (st = same_dtype(g, n, err, 1, 0)) || (st = same_dtype(g, n, err, 2, 0)) || (st = same_dtype(g, n, err, 3, 0)))
    return st;
  const char *act = graph_node_string(n, "activation");
  if (strcmp(act, "none") && strcmp(act, "silu") && strcmp(act, "swish"))
    return infer_fail(g, n, err, "activation \"%s\" is not none, silu or swish", act);
  const GraphValue *x = infer_input(g, n, 0), *w = infer_input(g, n, 1);
  if (!inputs_static(g, n, n->ninputs)) {
    set_unknown(g, n, 0, x->dtype, 3);
    set_unknown(g, n, 1, x->dtype, 3);
    return LOOM_OK;
  }
  int64_t b = x->dims[0], c = x->dims[1], k = w->dims[2];
  if ((st = need_dim(g, n, err, 1, "weight", 0, c)) || (st = need_dim(g, n, err, 1, "weight", 1, 1))) return st;
  if (infer_input(g, n, 2) && ((st = need_rank(g, n, err, 2, "bias", 1)) || (st = need_dim(g, n, err, 2, "bias", 0, c))))
    return st;
  int64_t sd[3] = {b, c, k - 1};
  if (infer_input(g, n, 3)) {
    if ((st = need_rank(g, n, err, 3, "past_state", 3))) return st;
    for (int d = 0; d < 3; d++)
      if ((st = need_dim(g, n, err, 3, "past_state", d, sd[d]))) return st;
  }
  infer_set(g, n, 0, x->dtype, 3, x->dims);
  infer_set(g, n, 1, x->dtype, 3, sd);
  return LOOM_OK;
}

/* TensorScatter(past_cache, update, write_indices?) -> like past_cache. */
loom_status infer_tensor_scatter(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected past_cache and update");
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *c = infer_input(g, n, 0), *u = infer_input(g, n, 1);
  loom_status st;
  if ((st = same_dtype(g, n, err, 1, 0))) return st;
  const char *mode = graph_node_string(n, "mode");
  if (strcmp(mode, "linear") && strcmp(mode, "circular"))
    return infer_fail(g, n, err, "mode \"%s\" is not linear or circular", mode);
  if (u->rank != c->rank || c->rank < 2) return infer_fail(g, n, err, "update must have past_cache's rank (at least 2)");
  int axis;
  if ((st = infer_axis(g, n, err, graph_node_int(n, "axis"), c->rank, &axis))) return st;
  if (axis == 0) return infer_fail(g, n, err, "axis must not be the batch axis");
  for (int d = 0; d < c->rank; d++) {
    if (c->dims[d] < 0 || u->dims[d] < 0) continue;
    if (d == axis ? u->dims[d] > c->dims[d] : u->dims[d] != c->dims[d])
      return infer_fail(g, n, err, "update extent %lld in dimension %d does not fit past_cache's %lld", (long long)u->dims[d],
                        d, (long long)c->dims[d]);
  }
  const GraphValue *wi = infer_input(g, n, 2);
  if (wi && (wi->rank != 1 || !dtype_is_int(wi->dtype)))
    return infer_fail(g, n, err, "write_indices must be a 1-D integer tensor");
  infer_set(g, n, 0, c->dtype, c->rank, c->dims);
  return LOOM_OK;
}
