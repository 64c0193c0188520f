/* The attention family as compositions of te stages: Attention (opset
 * 23/24, following the ONNX reference: scale split as sqrt(scale) on Q and
 * K, softcap before the mask, bottom-right causal alignment, fully masked
 * rows give 0), RotaryEmbedding, SwiGLU, LinearAttention (the recurrence
 * unrolled over time, one group of stages per step), CausalConvWithState
 * and TensorScatter. 3-D [B, S, heads * size] operands are read in place
 * (no transpose stage): every loader maps a [B, heads, S, size] index to
 * the stored layout. */
#include "topi/op_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const Expr *I(Arena *a, int64_t v) { return expr_i64(a, v); }

static const Expr *call1(Arena *a, CallOp op, const Expr *x) { return expr_call(a, op, x->dtype, &x, 1); }

static const Expr *neg_inf(Arena *a, DType t) { return op_const(a, t, -INFINITY); }

/* 1 / (1 + exp(-x)) */
static const Expr *sigmoid(Arena *a, const Expr *x) {
  const Expr *one = op_const(a, x->dtype, 1.0);
  const Expr *e = call1(a, CALL_EXP, expr_sub(a, op_const(a, x->dtype, 0.0), x));
  return expr_binary(a, EXPR_DIV, one, expr_add(a, one, e));
}

/* An index loaded from an integer tensor, as i64 clamped into [0, dim). */
static const Expr *clamp_index(Arena *a, const Expr *i, int64_t dim) {
  if (!dtype_eq(i->dtype, DT_I64)) i = expr_cast(a, DT_I64, i);
  return expr_min(a, expr_max(a, i, I(a, 0)), I(a, dim - 1));
}

/* Element (b, head h, position s, channel c) of a 4-D [B, H, S, size] or
 * 3-D [B, S, H * size] tensor. */
static const Expr *load_head(Arena *a, const TeTensor *t, const Expr *b, const Expr *h, const Expr *s,
                             const Expr *c, int64_t size) {
  if (t->ndim == 4) return te_load(a, t, (const Expr *[]){b, h, s, c});
  return te_load(a, t, (const Expr *[]){b, s, expr_add(a, expr_mul(a, h, I(a, size)), c)});
}

static bool check_same_float(const char *op, const char *what, const TeTensor *t, DType dt, LoomError *err) {
  if (!op_check_float(op, what, t, err)) return false;
  if (!dtype_eq(t->dtype, dt)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s (\"%s\") has a different dtype than the first input", op, what, t->name);
    return false;
  }
  return true;
}

static bool check_shape(const char *op, const char *what, const TeTensor *t, int rank, const int64_t *dims,
                        LoomError *err) {
  bool ok = t->ndim == rank;
  for (int d = 0; ok && d < rank; d++) ok = dims[d] < 0 || t->shape[d] == dims[d];
  if (!ok) {
    char buf[160];
    int n = 0;
    for (int d = 0; d < rank && n < 140; d++) n += snprintf(buf + n, sizeof buf - (size_t)n, d ? ", %lld" : "%lld", (long long)dims[d]);
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s (\"%s\") must have shape [%s]", op, what, t->name, buf);
  }
  return ok;
}

/* ============================ Attention ============================ */

typedef struct Attn {
  const TeTensor *q, *k, *v, *mask, *past_k, *past_v, *nonpad;
  const TeTensor *pk, *pv, *qk, *logit, *bmax, *max, *exp, *sum, *prob, *acc;
  int64_t hq, sq, d, hkv, past, total, dv, rep;
  DType dt;
  double s, softcap; /* s: sqrt(scale) in the input's precision */
  bool narrow;       /* f16 / bf16 */
  bool causal, has_bias;
  int mode;
} Attn;

static const Expr *kv_head(Arena *a, const Attn *t, const Expr *h) {
  return t->rep > 1 ? expr_floordiv(a, h, I(a, t->rep)) : h;
}

/* present_key / present_value: [past, new] along the sequence. */
static const Expr *present_body(Arena *a, const Attn *t, const Expr *const *ax, const TeTensor *past,
                                const TeTensor *cur, int64_t size) {
  if (!past) return load_head(a, cur, ax[0], ax[1], ax[2], ax[3], size);
  const Expr *now = load_head(a, cur, ax[0], ax[1], expr_sub(a, ax[2], I(a, t->past)), ax[3], size);
  return expr_select(a, expr_lt(a, ax[2], I(a, t->past)), te_load(a, past, ax), now);
}

static const Expr *pk_body(Arena *a, const Expr *const *ax, void *user) {
  Attn *t = user;
  return present_body(a, t, ax, t->past_k, t->k, t->d);
}

static const Expr *pv_body(Arena *a, const Expr *const *ax, void *user) {
  Attn *t = user;
  return present_body(a, t, ax, t->past_v, t->v, t->dv);
}

/* Q K^T as a plain multiply-accumulate of loads (the matmul schedule's
 * form); the scale is applied after it. f16/bf16 follow the reference's
 * order instead (Q and K each scaled by sqrt(scale), rounding as it does). */
static const Expr *qk_body(Arena *a, const Expr *const *ax, void *user) {
  Attn *t = user;
  IterVar kd = te_reduce_axis(a, "kd", t->d);
  const Expr *qv = load_head(a, t->q, ax[0], ax[1], ax[2], kd.var, t->d);
  const Expr *kv = te_load(a, t->pk, (const Expr *[]){ax[0], kv_head(a, t, ax[1]), ax[3], kd.var});
  if (t->narrow) {
    const Expr *s = op_const(a, t->dt, t->s);
    qv = expr_mul(a, qv, s), kv = expr_mul(a, kv, s);
  }
  return te_sum(a, expr_mul(a, qv, kv), &kd, 1, NULL);
}

/* The scaled (and softcapped) score from Q K^T. */
static const Expr *capped(Arena *a, const Attn *t, const Expr *x) {
  if (!t->narrow) x = expr_mul(a, x, op_const(a, t->dt, t->s * t->s));
  if (t->softcap <= 0) return x;
  const Expr *c = op_const(a, t->dt, t->softcap);
  return expr_mul(a, call1(a, CALL_TANH, expr_binary(a, EXPR_DIV, x, c)), c);
}

/* The additive bias at (b, h, i, j): the mask (bool: 0 / -inf; padded with
 * -inf past its last extent), + the causal frontier, + the key padding. */
static const Expr *bias_at(Arena *a, const Attn *t, const Expr *b, const Expr *h, const Expr *i, const Expr *j) {
  const Expr *zero = op_const(a, t->dt, 0), *ninf = neg_inf(a, t->dt), *bias = NULL;
  if (t->mask) {
    const TeTensor *m = t->mask;
    int r = m->ndim;
    int64_t last = m->shape[r - 1];
    const Expr *full[4] = {b, h, i, last < t->total ? expr_min(a, j, I(a, last - 1)) : j};
    const Expr *idx[4];
    for (int d = 0; d < r; d++) idx[d] = m->shape[d] == 1 ? I(a, 0) : full[4 - r + d];
    bias = te_load(a, m, idx);
    if (dtype_is_bool(m->dtype)) bias = expr_select(a, bias, zero, ninf);
    if (last < t->total) bias = expr_select(a, expr_lt(a, j, I(a, last)), bias, ninf);
  }
  const Expr *seqlen = t->nonpad ? expr_cast(a, DT_I64, te_load(a, t->nonpad, &b)) : NULL;
  if (t->causal) {
    const Expr *off = t->past ? I(a, t->past) : seqlen ? expr_sub(a, seqlen, I(a, t->sq)) : I(a, 0);
    const Expr *c = expr_select(a, expr_binary(a, EXPR_LE, j, expr_add(a, i, off)), zero, ninf);
    bias = bias ? expr_add(a, bias, c) : c;
  }
  if (seqlen) {
    const Expr *pad = expr_select(a, expr_lt(a, j, seqlen), zero, ninf);
    bias = bias ? expr_add(a, bias, pad) : pad;
  }
  return bias;
}

static const Expr *logit_body(Arena *a, const Expr *const *ax, void *user) {
  Attn *t = user;
  const Expr *x = capped(a, t, te_load(a, t->qk, ax));
  return t->has_bias ? expr_add(a, x, bias_at(a, t, ax[0], ax[1], ax[2], ax[3])) : x;
}

static const Expr *bmax_body(Arena *a, const Expr *const *ax, void *user) {
  Attn *t = user;
  IterVar kj = te_reduce_axis(a, "kj", t->total);
  return te_max(a, bias_at(a, t, ax[0], ax[1], ax[2], kj.var), &kj, 1, NULL);
}

static const Expr *rowmax_body(Arena *a, const Expr *const *ax, void *user) {
  Attn *t = user;
  IterVar kj = te_reduce_axis(a, "kj", t->total);
  return te_max(a, te_load(a, t->logit, (const Expr *[]){ax[0], ax[1], ax[2], kj.var}), &kj, 1, NULL);
}

/* exp(x - max), with max taken as 0 for an all -inf row (no NaN). */
static const Expr *exp_body(Arena *a, const Expr *const *ax, void *user) {
  Attn *t = user;
  const Expr *m = te_load(a, t->max, ax);
  m = expr_select(a, expr_binary(a, EXPR_EQ, m, neg_inf(a, t->dt)), op_const(a, t->dt, 0), m);
  return call1(a, CALL_EXP, expr_sub(a, te_load(a, t->logit, ax), m));
}

static const Expr *rowsum_body(Arena *a, const Expr *const *ax, void *user) {
  Attn *t = user;
  IterVar kj = te_reduce_axis(a, "kj", t->total);
  return te_sum(a, te_load(a, t->exp, (const Expr *[]){ax[0], ax[1], ax[2], kj.var}), &kj, 1, NULL);
}

/* x / sum over the row (b, h, i), 0 for a fully masked row. */
static const Expr *normalize(Arena *a, const Attn *t, const Expr *x, const Expr *const *row) {
  const Expr *zero = op_const(a, t->dt, 0);
  const Expr *s = te_load(a, t->sum, row);
  s = expr_select(a, expr_binary(a, EXPR_EQ, s, zero), op_const(a, t->dt, 1), s);
  const Expr *p = expr_binary(a, EXPR_DIV, x, s);
  if (!t->bmax) return p;
  return expr_select(a, expr_binary(a, EXPR_EQ, te_load(a, t->bmax, row), neg_inf(a, t->dt)), zero, p);
}

static const Expr *prob_body(Arena *a, const Expr *const *ax, void *user) {
  Attn *t = user;
  return normalize(a, t, te_load(a, t->exp, ax), ax);
}

/* Output index -> (b, h, i, e) of the [B, Hq, Sq, Dv] result. */
static void y_index(Arena *a, const Attn *t, const Expr *const *ax, const Expr **bhie) {
  bhie[0] = ax[0];
  if (t->q->ndim == 4) {
    bhie[1] = ax[1], bhie[2] = ax[2], bhie[3] = ax[3];
  } else {
    bhie[2] = ax[1], bhie[1] = expr_floordiv(a, ax[2], I(a, t->dv)), bhie[3] = expr_floormod(a, ax[2], I(a, t->dv));
  }
}

/* sum_j exp(b, h, i, j) V(j, e): the unnormalized output, a multiply-accumulate
 * (f16/bf16: the probabilities, normalized first as the reference does). */
static const Expr *acc_body(Arena *a, const Expr *const *ax, void *user) {
  Attn *t = user;
  IterVar kj = te_reduce_axis(a, "kj", t->total);
  const Expr *x[4];
  y_index(a, t, ax, x);
  const Expr *p = te_load(a, t->narrow ? t->prob : t->exp, (const Expr *[]){x[0], x[1], x[2], kj.var});
  const Expr *v = te_load(a, t->pv, (const Expr *[]){x[0], kv_head(a, t, x[1]), kj.var, x[3]});
  return te_sum(a, expr_mul(a, p, v), &kj, 1, NULL);
}

static const Expr *y_body(Arena *a, const Expr *const *ax, void *user) {
  Attn *t = user;
  const Expr *x[4];
  y_index(a, t, ax, x);
  return t->narrow ? te_load(a, t->acc, ax) : normalize(a, t, te_load(a, t->acc, ax), x);
}

static const Expr *qkout_body(Arena *a, const Expr *const *ax, void *user) {
  Attn *t = user;
  if (t->mode == 2) return te_load(a, t->logit, ax);
  if (t->mode == 3) return te_load(a, t->prob, ax);
  return capped(a, t, te_load(a, t->qk, ax));
}

bool topi_attention(Arena *a, const char *name, const TeTensor *q, const TeTensor *k, const TeTensor *v,
                    const TeTensor *mask, const TeTensor *past_k, const TeTensor *past_v, const TeTensor *nonpad,
                    const TopiAttentionParams *p, TeTensor **outs, LoomError *err) {
  const char *on = "Attention";
  if (!op_check_name(on, name, err) || !op_check_float(on, "Q", q, err) || !check_same_float(on, "K", k, q->dtype, err) ||
      !check_same_float(on, "V", v, q->dtype, err))
    return false;
  Attn t;
  memset(&t, 0, sizeof t);
  t.q = q, t.k = k, t.v = v, t.mask = mask, t.past_k = past_k, t.past_v = past_v, t.nonpad = nonpad;
  t.dt = q->dtype;
  int r = q->ndim;
  if ((r != 3 && r != 4) || k->ndim != r || v->ndim != r) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Attention: Q, K and V must all be 3-D or all 4-D");
    return false;
  }
  int64_t bsz = q->shape[0], skv = k->shape[r - 2];
  if (r == 4) {
    t.hq = q->shape[1], t.sq = q->shape[2], t.d = q->shape[3], t.hkv = k->shape[1], t.dv = v->shape[3];
  } else {
    t.hq = p->q_num_heads, t.hkv = p->kv_num_heads, t.sq = q->shape[1];
    if (t.hq < 1 || t.hkv < 1 || q->shape[2] % t.hq || k->shape[2] % t.hkv || v->shape[2] % t.hkv) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Attention: 3-D inputs need q_num_heads / kv_num_heads dividing the hidden sizes");
      return false;
    }
    t.d = q->shape[2] / t.hq, t.dv = v->shape[2] / t.hkv;
  }
  int64_t kshape4[4] = {bsz, t.hkv, skv, t.d}, vshape4[4] = {bsz, t.hkv, skv, t.dv};
  int64_t kshape3[3] = {bsz, skv, t.hkv * t.d}, vshape3[3] = {bsz, skv, t.hkv * t.dv};
  if (!check_shape(on, "K", k, r, r == 4 ? kshape4 : kshape3, err) ||
      !check_shape(on, "V", v, r, r == 4 ? vshape4 : vshape3, err))
    return false;
  if (t.hq % t.hkv) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Attention: %lld query heads are not a multiple of %lld key/value heads",
            (long long)t.hq, (long long)t.hkv);
    return false;
  }
  t.rep = t.hq / t.hkv;
  if (!past_k != !past_v) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Attention: past_key and past_value must be given together");
    return false;
  }
  if (past_k) {
    if (!check_same_float(on, "past_key", past_k, t.dt, err) || !check_same_float(on, "past_value", past_v, t.dt, err))
      return false;
    t.past = past_k->ndim == 4 ? past_k->shape[2] : -1;
    int64_t pks[4] = {bsz, t.hkv, t.past, t.d}, pvs[4] = {bsz, t.hkv, t.past, t.dv};
    if (!check_shape(on, "past_key", past_k, 4, pks, err) || !check_shape(on, "past_value", past_v, 4, pvs, err))
      return false;
  }
  t.total = t.past + skv;
  if (nonpad && (!op_check_tensor(on, "nonpad_kv_seqlen", nonpad, err) || !dtype_is_int(nonpad->dtype) ||
                 !check_shape(on, "nonpad_kv_seqlen", nonpad, 1, &bsz, err))) {
    if (!err->status) err_set(err, LOOM_ERR_INVALID_ARG, "Attention: nonpad_kv_seqlen must be integers");
    return false;
  }
  if (mask) {
    if (!op_check_tensor(on, "attn_mask", mask, err)) return false;
    int64_t full[4] = {bsz, t.hq, t.sq, t.total};
    bool ok = mask->ndim >= 1 && mask->ndim <= 4 && mask->shape[mask->ndim - 1] <= t.total &&
              (dtype_is_bool(mask->dtype) || dtype_eq(mask->dtype, t.dt));
    for (int d = 0; ok && d < mask->ndim - 1; d++)
      ok = mask->shape[d] == 1 || mask->shape[d] == full[4 - mask->ndim + d];
    if (!ok) {
      err_set(err, LOOM_ERR_INVALID_ARG,
              "Attention: attn_mask (\"%s\") must be bool or Q's dtype and broadcast to [%lld, %lld, %lld, <= %lld]",
              mask->name, (long long)bsz, (long long)t.hq, (long long)t.sq, (long long)t.total);
      return false;
    }
  }
  if (p->qk_mode < 0 || p->qk_mode > 3) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Attention: qk_matmul_output_mode %d is not 0..3", p->qk_mode);
    return false;
  }
  double scale = p->has_scale ? p->scale : 1.0 / sqrt((double)t.d);
  t.s = (float)sqrt(scale);
  t.narrow = dtype_is_narrow(t.dt);
  t.softcap = p->softcap;
  t.causal = p->is_causal;
  t.mode = p->qk_mode;
  t.has_bias = mask || nonpad || t.causal;
  int64_t pks[4] = {bsz, t.hkv, t.total, t.d}, pvs[4] = {bsz, t.hkv, t.total, t.dv};
  int64_t sc[4] = {bsz, t.hq, t.sq, t.total}, row[3] = {bsz, t.hq, t.sq};
  int64_t y4[4] = {bsz, t.hq, t.sq, t.dv}, y3[3] = {bsz, t.sq, t.hq * t.dv};
  TeTensor *pk, *pv, *qk, *logit, *mx, *ex, *sm, *prob, *y, *qkout;
  if (!(t.pk = pk = te_compute(a, op_stage(a, name, "pk"), 4, pks, pk_body, &t, err)) ||
      !(t.pv = pv = te_compute(a, op_stage(a, name, "pv"), 4, pvs, pv_body, &t, err)) ||
      !(t.qk = qk = te_set_schedule_rule(te_compute(a, op_stage(a, name, "qk"), 4, sc, qk_body, &t, err), "matmul")) ||
      !(t.logit = logit = te_compute(a, op_stage(a, name, "logit"), 4, sc, logit_body, &t, err)))
    return false;
  if (t.has_bias && !(t.bmax = te_compute(a, op_stage(a, name, "bmax"), 3, row, bmax_body, &t, err))) return false;
  if (!(t.max = mx = te_compute(a, op_stage(a, name, "max"), 3, row, rowmax_body, &t, err)) ||
      !(t.exp = ex = te_compute(a, op_stage(a, name, "exp"), 4, sc, exp_body, &t, err)) ||
      !(t.sum = sm = te_compute(a, op_stage(a, name, "sum"), 3, row, rowsum_body, &t, err)) ||
      !(t.prob = prob = te_compute(a, op_stage(a, name, "prob"), 4, sc, prob_body, &t, err)) ||
      !(t.acc = te_set_schedule_rule(te_compute(a, op_stage(a, name, "acc"), r, r == 4 ? y4 : y3, acc_body, &t, err),
                                     "matmul")) ||
      !(y = te_compute(a, name, r, r == 4 ? y4 : y3, y_body, &t, err)) ||
      !(qkout = te_compute(a, op_stage(a, name, "qkout"), 4, sc, qkout_body, &t, err)))
    return false;
  outs[0] = y, outs[1] = pk, outs[2] = pv, outs[3] = qkout;
  return true;
}

/* ========================= RotaryEmbedding ========================= */

typedef struct Rope {
  const TeTensor *x, *cos, *sin, *pos;
  int64_t heads, d, rd, half;
  bool interleaved;
} Rope;

static const Expr *rope_body(Arena *a, const Expr *const *ax, void *user) {
  Rope *t = user;
  const Expr *b = ax[0], *h, *s, *c;
  if (t->x->ndim == 4) {
    h = ax[1], s = ax[2], c = ax[3];
  } else {
    s = ax[1], h = expr_floordiv(a, ax[2], I(a, t->d)), c = expr_floormod(a, ax[2], I(a, t->d));
  }
  const Expr *x = load_head(a, t->x, b, h, s, c, t->d);
  /* Pair (c1, c2) rotated by angle index i: halves, or adjacent channels. */
  const Expr *i, *c1, *c2, *first;
  if (t->interleaved) {
    i = expr_floordiv(a, c, I(a, 2));
    c1 = expr_mul(a, i, I(a, 2));
    c2 = expr_add(a, c1, I(a, 1));
    first = expr_binary(a, EXPR_EQ, expr_floormod(a, c, I(a, 2)), I(a, 0));
  } else {
    i = expr_floormod(a, c, I(a, t->half));
    c1 = i;
    c2 = expr_add(a, i, I(a, t->half));
    first = expr_lt(a, c, I(a, t->half));
  }
  /* Channels past rotary_dim pass through; keep their (unused) angle index in range. */
  const Expr *rot = expr_lt(a, c, I(a, t->rd));
  i = expr_min(a, i, I(a, t->half - 1));
  c1 = expr_min(a, c1, I(a, t->rd - 1));
  c2 = expr_min(a, c2, I(a, t->rd - 1));
  const Expr *cs, *sn;
  if (t->pos) {
    const Expr *row = clamp_index(a, te_load(a, t->pos, (const Expr *[]){b, s}), t->cos->shape[0]);
    cs = te_load(a, t->cos, (const Expr *[]){row, i});
    sn = te_load(a, t->sin, (const Expr *[]){row, i});
  } else {
    cs = te_load(a, t->cos, (const Expr *[]){b, s, i});
    sn = te_load(a, t->sin, (const Expr *[]){b, s, i});
  }
  const Expr *x1 = load_head(a, t->x, b, h, s, c1, t->d), *x2 = load_head(a, t->x, b, h, s, c2, t->d);
  const Expr *real = expr_sub(a, expr_mul(a, cs, x1), expr_mul(a, sn, x2));
  const Expr *imag = expr_add(a, expr_mul(a, sn, x1), expr_mul(a, cs, x2));
  return expr_select(a, rot, expr_select(a, first, real, imag), x);
}

TeTensor *topi_rotary_embedding(Arena *a, const char *name, const TeTensor *x, const TeTensor *cos_cache,
                                const TeTensor *sin_cache, const TeTensor *pos, bool interleaved,
                                int64_t rotary_dim, int64_t num_heads, LoomError *err) {
  const char *on = "RotaryEmbedding";
  if (!op_check_name(on, name, err) || !op_check_float(on, "input", x, err) ||
      !check_same_float(on, "cos_cache", cos_cache, x->dtype, err) ||
      !check_same_float(on, "sin_cache", sin_cache, x->dtype, err))
    return NULL;
  Rope t = {.x = x, .cos = cos_cache, .sin = sin_cache, .pos = pos, .interleaved = interleaved};
  int64_t bsz = x->shape[0], seq;
  if (x->ndim == 4) {
    t.heads = x->shape[1], seq = x->shape[2], t.d = x->shape[3];
  } else if (x->ndim == 3) {
    if (num_heads < 1 || x->shape[2] % num_heads) {
      err_set(err, LOOM_ERR_INVALID_ARG, "RotaryEmbedding: 3-D input needs num_heads dividing its hidden size %lld",
              (long long)x->shape[2]);
      return NULL;
    }
    t.heads = num_heads, seq = x->shape[1], t.d = x->shape[2] / num_heads;
  } else {
    err_set(err, LOOM_ERR_INVALID_ARG, "RotaryEmbedding: input has rank %d, expected 3 or 4", x->ndim);
    return NULL;
  }
  t.rd = rotary_dim ? rotary_dim : t.d;
  if (t.rd < 2 || t.rd > t.d || t.rd % 2) {
    err_set(err, LOOM_ERR_INVALID_ARG, "RotaryEmbedding: rotary_embedding_dim %lld must be even and in 2..%lld",
            (long long)t.rd, (long long)t.d);
    return NULL;
  }
  t.half = t.rd / 2;
  int64_t cshape[3] = {bsz, seq, t.half};
  if (pos) {
    int64_t ps[2] = {bsz, seq};
    if (!op_check_tensor(on, "position_ids", pos, err) || !check_shape(on, "position_ids", pos, 2, ps, err)) return NULL;
    if (!dtype_is_int(pos->dtype)) {
      err_set(err, LOOM_ERR_INVALID_ARG, "RotaryEmbedding: position_ids must be integers");
      return NULL;
    }
    int64_t cs2[2] = {-1, t.half};
    if (!check_shape(on, "cos_cache", cos_cache, 2, cs2, err) || !check_shape(on, "sin_cache", sin_cache, 2, cos_cache->shape, err))
      return NULL;
  } else if (!check_shape(on, "cos_cache", cos_cache, 3, cshape, err) ||
             !check_shape(on, "sin_cache", sin_cache, 3, cshape, err)) {
    return NULL;
  }
  return te_compute(a, name, x->ndim, x->shape, rope_body, &t, err);
}

/* ============================== SwiGLU ============================== */

typedef struct Glu {
  const TeTensor *x, *y;
  double alpha;
} Glu;

static const Expr *swiglu_body(Arena *a, const Expr *const *ax, void *user) {
  Glu *t = user;
  const Expr *x = te_load(a, t->x, ax);
  const Expr *g = sigmoid(a, expr_mul(a, op_const(a, x->dtype, t->alpha), x));
  return expr_mul(a, expr_mul(a, x, g), te_load(a, t->y, ax));
}

TeTensor *topi_swiglu(Arena *a, const char *name, const TeTensor *x, const TeTensor *y, double alpha,
                      LoomError *err) {
  const char *on = "SwiGLU";
  if (!op_check_name(on, name, err) || !op_check_float(on, "A", x, err) || !check_same_float(on, "B", y, x->dtype, err) ||
      !check_shape(on, "B", y, x->ndim, x->shape, err))
    return NULL;
  Glu t = {x, y, alpha};
  return te_compute(a, name, x->ndim, x->shape, swiglu_body, &t, err);
}

/* ========================= LinearAttention ========================= */

typedef struct Lin {
  const TeTensor *q, *k, *v, *decay, *beta;
  const TeTensor *state, *retrieved, *next; /* S(t-1), S(t-1)^T k(t), S(t) */
  int64_t t, hq, hkv, dk, dv, group;
  double scale;
  bool gated, delta;
  DType ct; /* compute type: f32 for f16/bf16 inputs (the state stays f32, as the reference keeps it) */
} Lin;

static const Expr *lin_load(Arena *a, const Lin *t, const TeTensor *x, const Expr *const *idx) {
  const Expr *v = te_load(a, x, idx);
  return dtype_eq(v->dtype, t->ct) ? v : expr_cast(a, t->ct, v);
}

/* exp(decay) for state row d of kv head h at the current step. */
static const Expr *lin_gate(Arena *a, const Lin *t, const Expr *b, const Expr *h, const Expr *d) {
  const Expr *c = t->decay->shape[2] == t->hkv ? h : expr_add(a, expr_mul(a, h, I(a, t->dk)), d);
  return call1(a, CALL_EXP, lin_load(a, t, t->decay, (const Expr *[]){b, I(a, t->t), c}));
}

/* Decayed previous state S'(b, h, d, m). */
static const Expr *lin_prev(Arena *a, const Lin *t, const Expr *b, const Expr *h, const Expr *d, const Expr *m) {
  if (!t->state) return op_const(a, t->ct, 0);
  const Expr *s = lin_load(a, t, t->state, (const Expr *[]){b, h, d, m});
  return t->gated ? expr_mul(a, s, lin_gate(a, t, b, h, d)) : s;
}

static const Expr *lin_key(Arena *a, const Lin *t, const Expr *b, const Expr *h, const Expr *d) {
  return lin_load(a, t, t->k, (const Expr *[]){b, I(a, t->t), expr_add(a, expr_mul(a, h, I(a, t->dk)), d)});
}

static const Expr *lin_retrieve_body(Arena *a, const Expr *const *ax, void *user) {
  Lin *t = user; /* ax: b, h, m */
  IterVar kd = te_reduce_axis(a, "kd", t->dk);
  const Expr *src = expr_mul(a, lin_prev(a, t, ax[0], ax[1], kd.var, ax[2]), lin_key(a, t, ax[0], ax[1], kd.var));
  return te_sum(a, src, &kd, 1, NULL);
}

static const Expr *lin_state_body(Arena *a, const Expr *const *ax, void *user) {
  Lin *t = user; /* ax: b, h, d, m */
  const Expr *b = ax[0], *h = ax[1];
  const Expr *v = lin_load(a, t, t->v, (const Expr *[]){b, I(a, t->t), expr_add(a, expr_mul(a, h, I(a, t->dv)), ax[3])});
  if (t->delta) {
    const Expr *bt = lin_load(a, t, t->beta, (const Expr *[]){b, I(a, t->t), t->beta->shape[2] == 1 ? I(a, 0) : h});
    v = expr_mul(a, bt, expr_sub(a, v, te_load(a, t->retrieved, (const Expr *[]){b, h, ax[3]})));
  }
  return expr_add(a, lin_prev(a, t, b, h, ax[2], ax[3]), expr_mul(a, lin_key(a, t, b, h, ax[2]), v));
}

static const Expr *lin_read_body(Arena *a, const Expr *const *ax, void *user) {
  Lin *t = user; /* ax: b, hq, m */
  IterVar kd = te_reduce_axis(a, "kd", t->dk);
  const Expr *qv = lin_load(a, t, t->q, (const Expr *[]){ax[0], I(a, t->t), expr_add(a, expr_mul(a, ax[1], I(a, t->dk)), kd.var)});
  const Expr *h = t->group > 1 ? expr_floordiv(a, ax[1], I(a, t->group)) : ax[1];
  const Expr *s = te_load(a, t->next, (const Expr *[]){ax[0], h, kd.var, ax[2]});
  return te_sum(a, expr_mul(a, qv, s), &kd, 1, NULL);
}

typedef struct LinOut {
  const TeTensor *const *reads; /* one [B, Hq, dv] per step */
  int64_t steps, dv;
  double scale;
  DType dt; /* the output's */
} LinOut;

/* output[b, t, hq * dv + m] = scale * read_t[b, hq, m] */
static const Expr *lin_out_body(Arena *a, const Expr *const *ax, void *user) {
  LinOut *o = user;
  const Expr *h = expr_floordiv(a, ax[2], I(a, o->dv)), *m = expr_floormod(a, ax[2], I(a, o->dv));
  const Expr *r = NULL;
  for (int64_t s = o->steps - 1; s >= 0; s--) {
    const Expr *ld = te_load(a, o->reads[s], (const Expr *[]){ax[0], h, m});
    r = r ? expr_select(a, expr_binary(a, EXPR_EQ, ax[1], I(a, s)), ld, r) : ld;
  }
  r = expr_mul(a, op_const(a, r->dtype, o->scale), r);
  return dtype_eq(r->dtype, o->dt) ? r : expr_cast(a, o->dt, r);
}

typedef struct Cast {
  const TeTensor *x;
  DType to;
} Cast;

static const Expr *cast_body(Arena *a, const Expr *const *ax, void *user) {
  Cast *c = user;
  const Expr *v = te_load(a, c->x, ax);
  return dtype_eq(v->dtype, c->to) ? v : expr_cast(a, c->to, v);
}

bool topi_linear_attention(Arena *a, const char *name, const TeTensor *q, const TeTensor *k, const TeTensor *v,
                           const TeTensor *past, const TeTensor *decay, const TeTensor *beta, int64_t q_heads,
                           int64_t kv_heads, double scale, TopiLinearRule rule, TeTensor **outs, LoomError *err) {
  const char *on = "LinearAttention";
  if (!op_check_name(on, name, err) || !op_check_float(on, "query", q, err) ||
      !check_same_float(on, "key", k, q->dtype, err) || !check_same_float(on, "value", v, q->dtype, err))
    return false;
  Lin t;
  memset(&t, 0, sizeof t);
  t.q = q, t.k = k, t.v = v, t.decay = decay, t.beta = beta;
  t.ct = dtype_compute_type(q->dtype);
  t.gated = rule == TOPI_LINEAR_ATTN_GATED || rule == TOPI_LINEAR_ATTN_GATED_DELTA;
  t.delta = rule == TOPI_LINEAR_ATTN_DELTA || rule == TOPI_LINEAR_ATTN_GATED_DELTA;
  if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3 || q_heads < 1 || kv_heads < 1 || q_heads % kv_heads ||
      q->shape[2] % q_heads || k->shape[2] % kv_heads || v->shape[2] % kv_heads) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "LinearAttention: query/key/value must be [B, T, heads * size] with q_num_heads a multiple of kv_num_heads");
    return false;
  }
  t.hq = q_heads, t.hkv = kv_heads, t.group = q_heads / kv_heads;
  t.dk = q->shape[2] / q_heads, t.dv = v->shape[2] / kv_heads;
  int64_t bsz = q->shape[0], steps = q->shape[1];
  int64_t ks[3] = {bsz, steps, t.hkv * t.dk}, vs[3] = {bsz, steps, t.hkv * t.dv}, ss[4] = {bsz, t.hkv, t.dk, t.dv};
  if (!check_shape(on, "key", k, 3, ks, err) || !check_shape(on, "value", v, 3, vs, err)) return false;
  if (past && (!check_same_float(on, "past_state", past, q->dtype, err) || !check_shape(on, "past_state", past, 4, ss, err)))
    return false;
  if (t.gated != (decay != NULL) || t.delta != (beta != NULL)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "LinearAttention: the update rule %s decay and %s beta", t.gated ? "needs" : "forbids",
            t.delta ? "needs" : "forbids");
    return false;
  }
  int64_t ds[3] = {bsz, steps, -1}, bs[3] = {bsz, steps, -1};
  if (decay && (!check_same_float(on, "decay", decay, q->dtype, err) || !check_shape(on, "decay", decay, 3, ds, err) ||
                (decay->shape[2] != t.hkv && decay->shape[2] != t.hkv * t.dk))) {
    if (!err->status) err_set(err, LOOM_ERR_INVALID_ARG, "LinearAttention: decay's last extent must be kv_num_heads or kv_num_heads * head size");
    return false;
  }
  if (beta && (!check_same_float(on, "beta", beta, q->dtype, err) || !check_shape(on, "beta", beta, 3, bs, err) ||
               (beta->shape[2] != t.hkv && beta->shape[2] != 1))) {
    if (!err->status) err_set(err, LOOM_ERR_INVALID_ARG, "LinearAttention: beta's last extent must be kv_num_heads or 1");
    return false;
  }
  t.state = past;
  const TeTensor **reads = ARENA_ARRAY(a, const TeTensor *, steps);
  int64_t rs[3] = {bsz, t.hkv, t.dv}, os[3] = {bsz, t.hq, t.dv};
  for (t.t = 0; t.t < steps; t.t++) {
    if (t.delta && !(t.retrieved = te_compute(a, arena_printf(a, "%s_r%lld", name, (long long)t.t), 3, rs,
                                               lin_retrieve_body, &t, err)))
      return false;
    if (!(t.next = te_compute(a, arena_printf(a, "%s_s%lld", name, (long long)t.t), 4, ss, lin_state_body, &t, err)) ||
        !(reads[t.t] = te_compute(a, arena_printf(a, "%s_o%lld", name, (long long)t.t), 3, os, lin_read_body, &t, err)))
      return false;
    t.state = t.next;
  }
  LinOut o = {reads, steps, t.dv, scale > 0 ? scale : 1.0 / sqrt((double)t.dk), q->dtype};
  int64_t out_shape[3] = {bsz, steps, t.hq * t.dv};
  outs[0] = te_compute(a, name, 3, out_shape, lin_out_body, &o, err);
  Cast st = {t.state, past ? past->dtype : q->dtype};
  outs[1] = outs[0] ? te_compute(a, op_stage(a, name, "state"), 4, ss, cast_body, &st, err) : NULL;
  return outs[1] != NULL;
}

/* ======================= CausalConvWithState ======================= */

typedef struct CConv {
  const TeTensor *x, *w, *bias, *past, *conv;
  int64_t k, len;
  bool silu;
} CConv;

/* The padded input [past (or zeros), x] at position p (an expression). */
static const Expr *cconv_padded(Arena *a, const CConv *t, const Expr *b, const Expr *c, const Expr *p) {
  const Expr *now = te_load(a, t->x, (const Expr *[]){b, c, expr_sub(a, p, I(a, t->k - 1))});
  if (t->k == 1) return now;
  const Expr *before = t->past ? te_load(a, t->past, (const Expr *[]){b, c, p}) : op_const(a, t->x->dtype, 0);
  return expr_select(a, expr_lt(a, p, I(a, t->k - 1)), before, now);
}

static const Expr *cconv_body(Arena *a, const Expr *const *ax, void *user) {
  CConv *t = user;
  IterVar kk = te_reduce_axis(a, "kk", t->k);
  const Expr *src = expr_mul(a, cconv_padded(a, t, ax[0], ax[1], expr_add(a, ax[2], kk.var)),
                             te_load(a, t->w, (const Expr *[]){ax[1], I(a, 0), kk.var}));
  return te_sum(a, src, &kk, 1, NULL);
}

static const Expr *cconv_out_body(Arena *a, const Expr *const *ax, void *user) {
  CConv *t = user;
  const Expr *y = te_load(a, t->conv, ax);
  if (t->bias) y = expr_add(a, y, te_load(a, t->bias, &ax[1]));
  return t->silu ? expr_mul(a, y, sigmoid(a, y)) : y;
}

static const Expr *cconv_state_body(Arena *a, const Expr *const *ax, void *user) {
  CConv *t = user;
  return cconv_padded(a, t, ax[0], ax[1], expr_add(a, ax[2], I(a, t->len)));
}

bool topi_causal_conv_with_state(Arena *a, const char *name, const TeTensor *x, const TeTensor *w,
                                 const TeTensor *bias, const TeTensor *past, bool silu, TeTensor **outs,
                                 LoomError *err) {
  const char *on = "CausalConvWithState";
  if (!op_check_name(on, name, err) || !op_check_float(on, "input", x, err) ||
      !check_same_float(on, "weight", w, x->dtype, err))
    return false;
  if (x->ndim != 3 || w->ndim != 3 || w->shape[0] != x->shape[1] || w->shape[1] != 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "CausalConvWithState: input must be [B, C, L] and weight [C, 1, K]");
    return false;
  }
  CConv t = {.x = x, .w = w, .bias = bias, .past = past, .k = w->shape[2], .len = x->shape[2], .silu = silu};
  int64_t c = x->shape[1], ss[3] = {x->shape[0], c, t.k - 1};
  if (bias && (!check_same_float(on, "bias", bias, x->dtype, err) || !check_shape(on, "bias", bias, 1, &c, err)))
    return false;
  if (past && (!check_same_float(on, "past_state", past, x->dtype, err) || !check_shape(on, "past_state", past, 3, ss, err)))
    return false;
  TeTensor *conv = te_compute(a, op_stage(a, name, "conv"), 3, x->shape, cconv_body, &t, err);
  if (!(t.conv = conv)) return false;
  outs[0] = te_compute(a, name, 3, x->shape, cconv_out_body, &t, err);
  if (!outs[0]) return false;
  /* Kernel size 1: the state is empty, no tensor (the graph made it a constant). */
  outs[1] = t.k > 1 ? te_compute(a, op_stage(a, name, "state"), 3, ss, cconv_state_body, &t, err) : NULL;
  return t.k == 1 || outs[1] != NULL;
}

/* ========================== TensorScatter ========================== */

typedef struct Scatter {
  const TeTensor *past, *update, *idx;
  int axis;
  bool circular;
} Scatter;

static const Expr *scatter_body(Arena *a, const Expr *const *ax, void *user) {
  Scatter *t = user;
  int64_t cap = t->past->shape[t->axis], n = t->update->shape[t->axis];
  const Expr *w = t->idx ? expr_cast(a, DT_I64, te_load(a, t->idx, &ax[0])) : I(a, 0);
  /* Position along the axis relative to this batch entry's write start. */
  const Expr *rel = expr_sub(a, ax[t->axis], w);
  if (t->circular) rel = expr_floormod(a, rel, I(a, cap));
  const Expr *hit = expr_and(a, expr_binary(a, EXPR_GE, rel, I(a, 0)), expr_lt(a, rel, I(a, n)));
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < t->past->ndim; d++)
    idx[d] = d == t->axis ? expr_min(a, expr_max(a, rel, I(a, 0)), I(a, n - 1)) : ax[d];
  return expr_select(a, hit, te_load(a, t->update, idx), te_load(a, t->past, ax));
}

TeTensor *topi_tensor_scatter(Arena *a, const char *name, const TeTensor *past, const TeTensor *update,
                              const TeTensor *write_indices, int64_t axis, bool circular, LoomError *err) {
  const char *on = "TensorScatter";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "past_cache", past, err) ||
      !op_check_tensor(on, "update", update, err))
    return NULL;
  Scatter t = {past, update, write_indices, 0, circular};
  if (!op_axis(on, "axis", axis, past->ndim, false, &t.axis, err)) return NULL;
  bool ok = update->ndim == past->ndim && dtype_eq(update->dtype, past->dtype) && t.axis > 0;
  for (int d = 0; ok && d < past->ndim; d++)
    ok = d == t.axis ? update->shape[d] <= past->shape[d] : update->shape[d] == past->shape[d];
  if (!ok) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "TensorScatter: update (\"%s\") must match past_cache's dtype and shape except a shorter axis %d (not 0)",
            update->name, t.axis);
    return NULL;
  }
  if (write_indices && (!op_check_tensor(on, "write_indices", write_indices, err) || !dtype_is_int(write_indices->dtype) ||
                        !check_shape(on, "write_indices", write_indices, 1, past->shape, err))) {
    if (!err->status) err_set(err, LOOM_ERR_INVALID_ARG, "TensorScatter: write_indices must be integers");
    return NULL;
  }
  return te_compute(a, name, past->ndim, past->shape, scatter_body, &t, err);
}
