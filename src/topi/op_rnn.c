/* RNN, GRU and LSTM as te stages, the recurrence a loop over the time
 * steps (te_step_loop), so the sequence length costs nothing at compile
 * time. Both directions of a bidirectional op run in the same stages: axis
 * d of every state tensor is the direction, and the time step a stage
 * processes for direction d and batch entry b is
 *   forward: s,  reverse: len[b] - 1 - s   (len = sequence_lens or T);
 * a step with s >= len[b] keeps the state (Y there is 0).
 *
 * Stages: "<name>_xw" (X W^T for every time step and gate, one reduction
 * before the loop), then the loop
 *   for dir in [0, D) (independent: parallel), for step in [0, T) (in order):
 *     "<name>_hp"  H(s-1) (initial_h at step 0), one row per (d, b)
 *     "<name>_rh"  H(s-1) R^T for every gate (GRU without
 *                  linear_before_reset: z and r only)
 *     GRU: "<name>_r" (reset gate), "<name>_rhp" (r * H) and "<name>_rhh"
 *          ((r * H) Rh^T) unless linear_before_reset
 *     LSTM: "<name>_cp" C(s-1), "<name>_c" (the cell, every step kept:
 *           [D, T, B, H])
 *     "<name>_h" (the hidden state, every step kept: [D, T, B, H]).
 * Y gathers the steps' hidden states; Y_h / Y_c copy the last ones. The
 * kept states cost D*T*B*H elements each (5 MiB for 5,000 steps of two
 * directions of 128): what a double buffer would save, and Y needs every
 * step's h anyway. */
#include "topi/op_internal.h"

#include <math.h>
#include <string.h>

static const Expr *I(Arena *a, int64_t v) { return expr_i64(a, v); }

static const Expr *call1(Arena *a, CallOp op, const Expr *x) { return expr_call(a, op, x->dtype, &x, 1); }

typedef struct ActDefault {
  const char *name;
  TopiRnnAct act;
  bool uses_alpha, uses_beta;
  double alpha, beta;
} ActDefault;

static const ActDefault act_defaults[] = {
    {"Relu", TOPI_ACT_RELU, false, false, 0, 0},
    {"Tanh", TOPI_ACT_TANH, false, false, 0, 0},
    {"Sigmoid", TOPI_ACT_SIGMOID, false, false, 0, 0},
    {"Affine", TOPI_ACT_AFFINE, true, true, 1.0, 0.0},
    {"LeakyRelu", TOPI_ACT_LEAKY_RELU, true, false, 0.01, 0},
    {"ThresholdedRelu", TOPI_ACT_THRESHOLDED_RELU, true, false, 1.0, 0},
    {"ScaledTanh", TOPI_ACT_SCALED_TANH, true, true, 1.0, 1.0},
    {"HardSigmoid", TOPI_ACT_HARD_SIGMOID, true, true, 0.2, 0.5},
    {"Elu", TOPI_ACT_ELU, true, false, 1.0, 0},
    {"Softsign", TOPI_ACT_SOFTSIGN, false, false, 0, 0},
    {"Softplus", TOPI_ACT_SOFTPLUS, false, false, 0, 0},
};
enum { N_ACTS = sizeof act_defaults / sizeof act_defaults[0] };

bool topi_rnn_act_parse(const char *s, TopiRnnAct *out) {
  for (int k = 0; k < N_ACTS; k++)
    if (!strcmp(s, act_defaults[k].name)) {
      *out = act_defaults[k].act;
      return true;
    }
  return false;
}

static const ActDefault *act_info(TopiRnnAct act) {
  for (int k = 0; k < N_ACTS; k++)
    if (act_defaults[k].act == act) return &act_defaults[k];
  return &act_defaults[1];
}

TopiRnnParams topi_rnn_defaults(TopiRnnKind kind) {
  TopiRnnParams p;
  memset(&p, 0, sizeof p);
  p.kind = kind;
  p.directions = 1;
  for (int d = 0; d < 2; d++) {
    if (kind == TOPI_RNN_SIMPLE) {
      p.act[d] = TOPI_ACT_TANH;
    } else {
      int n = kind == TOPI_RNN_GRU ? 2 : 3;
      p.act[d * n] = TOPI_ACT_SIGMOID;
      for (int k = 1; k < n; k++) p.act[d * n + k] = TOPI_ACT_TANH;
    }
  }
  for (int k = 0; k < 6; k++) p.alpha[k] = act_info(p.act[k])->alpha, p.beta[k] = act_info(p.act[k])->beta;
  return p;
}

void topi_rnn_set_activations(TopiRnnParams *p, const TopiRnnAct *acts, int count, const double *alpha, int n_alpha,
                              const double *beta, int n_beta) {
  int ia = 0, ib = 0;
  for (int k = 0; k < count && k < 6; k++) {
    const ActDefault *d = act_info(acts[k]);
    p->act[k] = acts[k];
    p->alpha[k] = d->uses_alpha && ia < n_alpha ? alpha[ia++] : d->alpha;
    p->beta[k] = d->uses_beta && ib < n_beta ? beta[ib++] : d->beta;
  }
}

static const Expr *apply_act(Arena *a, TopiRnnAct act, double alpha, double beta, const Expr *x) {
  DType t = x->dtype;
  const Expr *zero = op_const(a, t, 0), *one = op_const(a, t, 1), *al = op_const(a, t, alpha), *be = op_const(a, t, beta);
  switch (act) {
  case TOPI_ACT_RELU: return expr_max(a, x, zero);
  case TOPI_ACT_TANH: return call1(a, CALL_TANH, x);
  case TOPI_ACT_SIGMOID:
    return expr_binary(a, EXPR_DIV, one, expr_add(a, one, call1(a, CALL_EXP, expr_sub(a, zero, x))));
  case TOPI_ACT_AFFINE: return expr_add(a, expr_mul(a, al, x), be);
  case TOPI_ACT_LEAKY_RELU: return expr_select(a, expr_lt(a, x, zero), expr_mul(a, al, x), x);
  case TOPI_ACT_THRESHOLDED_RELU: return expr_select(a, expr_binary(a, EXPR_GT, x, al), x, zero);
  case TOPI_ACT_SCALED_TANH: return expr_mul(a, al, call1(a, CALL_TANH, expr_mul(a, be, x)));
  case TOPI_ACT_HARD_SIGMOID: return expr_max(a, zero, expr_min(a, one, expr_add(a, expr_mul(a, al, x), be)));
  case TOPI_ACT_ELU:
    return expr_select(a, expr_lt(a, x, zero), expr_mul(a, al, expr_sub(a, call1(a, CALL_EXP, x), one)), x);
  case TOPI_ACT_SOFTSIGN: return expr_binary(a, EXPR_DIV, x, expr_add(a, one, call1(a, CALL_FABS, x)));
  case TOPI_ACT_SOFTPLUS: return call1(a, CALL_LOG, expr_add(a, one, call1(a, CALL_EXP, x)));
  }
  return x;
}

typedef struct Rnn {
  const TopiRnnParams *p;
  const TeTensor *x, *w, *r, *b, *len, *h0, *c0, *peep;
  const TeStepLoop *loop;
  const TeTensor *wt, *rt, *xw, *hp, *cp, *rh, *rgate, *rhp, *rhh, *hs, *cs; /* hs, cs: [D, T, B, H], every step */
  int64_t t, bsz, in, h, gates;
  int nact; /* activations per direction */
} Rnn;

/* The sequence length of batch entry b (i64). */
static const Expr *seq_len(Arena *a, const Rnn *t, const Expr *b) {
  return t->len ? expr_cast(a, DT_I64, te_load(a, t->len, &b)) : I(a, t->t);
}

/* Is direction d (an expression) a reverse one? NULL when never. */
static const Expr *is_reverse(Arena *a, const Rnn *t, const Expr *d) {
  if (t->p->directions == 2) return expr_binary(a, EXPR_EQ, d, I(a, 1));
  return t->p->reverse ? expr_bool(a, true) : NULL;
}

/* The time index step s processes for (d, b), clamped into [0, T): also
 * the step that processed time index s (the map is its own inverse). */
static const Expr *time_of(Arena *a, const Rnn *t, const Expr *d, const Expr *b, const Expr *s) {
  const Expr *rev = is_reverse(a, t, d);
  if (!rev) return s;
  const Expr *back = expr_max(a, expr_sub(a, expr_sub(a, seq_len(a, t, b), I(a, 1)), s), I(a, 0));
  if (t->p->directions == 1) return back;
  return expr_select(a, rev, back, s);
}

/* Whether step s is inside the sequence of b (NULL: always). */
static const Expr *step_valid(Arena *a, const Rnn *t, const Expr *b, const Expr *s) {
  return t->len ? expr_lt(a, s, seq_len(a, t, b)) : NULL;
}

/* wt[d, k, g] = W[d, g, k]: the product's vector loop (over g) then reads
 * W contiguously (read along k, W's rows 4H apart, the 2-layer LSTM of
 * bench/lstm.py took 150 ms at 512 steps, 19 ms with it). */
static const Expr *wt_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user;
  return te_load(a, t->w, (const Expr *[]){ax[0], ax[2], ax[1]});
}

/* rt[d, k, g] = R[d, g, k], for the same reason: each step's product
 * then runs over g in vectors, k outside, instead of one dot product per
 * row and its horizontal sum (19.0 -> 15.4 ms at 512 steps, 1 thread). */
static const Expr *rt_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user;
  return te_load(a, t->r, (const Expr *[]){ax[0], ax[2], ax[1]});
}

/* xw[d, time * B + b, g]: the time steps and batch entries are one row
 * axis, so the matmul schedule sees a T*B x K by K x 4H product per
 * direction and tiles its rows (as [D, T, B, 4H] its row loop was the
 * batch, one row: a GEMV per time step that streamed all of W^T from L2
 * for every step). */
static const Expr *xw_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user; /* ax: d, row, g */
  IterVar ki = te_reduce_axis(a, "ki", t->in);
  const Expr *tt = expr_floordiv(a, ax[1], I(a, t->bsz)), *b = expr_floormod(a, ax[1], I(a, t->bsz));
  const Expr *xi = t->p->layout ? te_load(a, t->x, (const Expr *[]){b, tt, ki.var})
                                : te_load(a, t->x, (const Expr *[]){tt, b, ki.var});
  return te_sum(a, expr_mul(a, xi, te_load(a, t->wt, (const Expr *[]){ax[0], ki.var, ax[2]})), &ki, 1, NULL);
}

/* Initial hidden / cell state at (d, b, j): the input (layout-mapped) or 0. */
static const Expr *initial(Arena *a, const Rnn *t, const TeTensor *init, const Expr *d, const Expr *b, const Expr *j) {
  if (!init) return op_const(a, t->x->dtype, 0);
  return t->p->layout ? te_load(a, init, (const Expr *[]){b, d, j}) : te_load(a, init, (const Expr *[]){d, b, j});
}

/* The state before the current step: the initial one at step 0, else the
 * previous step's (its index clamped, so no load is ever out of bounds). */
static const Expr *previous(Arena *a, const Rnn *t, const TeTensor *all, const TeTensor *init, const Expr *d,
                            const Expr *b, const Expr *j) {
  const Expr *s = t->loop->step;
  const Expr *prev = te_load(a, all, (const Expr *[]){d, expr_max(a, expr_sub(a, s, I(a, 1)), I(a, 0)), b, j});
  return expr_select(a, expr_binary(a, EXPR_EQ, s, I(a, 0)), initial(a, t, init, d, b, j), prev);
}

/* hp[d, b, j]: H(s-1), one contiguous row for the products to read. */
static const Expr *hp_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user;
  return previous(a, t, t->hs, t->h0, ax[0], ax[1], ax[2]);
}

/* cp[d, b, j]: C(s-1) (LSTM). The cell then reads a buffer it does not
 * write, and its loop vectorizes (reading C itself at s - 1, it stayed
 * scalar: 128 expf/tanhf calls a step). */
static const Expr *cp_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user;
  return previous(a, t, t->cs, t->c0, ax[0], ax[1], ax[2]);
}

static const Expr *hprev_at(Arena *a, const Rnn *t, const Expr *d, const Expr *b, const Expr *j) {
  return te_load(a, t->hp, (const Expr *[]){d, b, j});
}

/* rh[d, b, g] = sum_j H(s-1)[d, b, j] R[d, g, j] */
static const Expr *rh_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user;
  IterVar kj = te_reduce_axis(a, "kj", t->h);
  const Expr *src = expr_mul(a, hprev_at(a, t, ax[0], ax[1], kj.var), te_load(a, t->rt, (const Expr *[]){ax[0], kj.var, ax[2]}));
  return te_sum(a, src, &kj, 1, NULL);
}

/* Pre-activation of gate `gate` at (d, b, j) without the recurrent matmul:
 * X W^T + Wb (+ Rb unless rb false). */
static const Expr *gate_input(Arena *a, const Rnn *t, int gate, const Expr *d, const Expr *b, const Expr *j, bool rb) {
  const Expr *g = expr_add(a, j, I(a, gate * t->h));
  const Expr *tt = time_of(a, t, d, b, t->loop->step);
  const Expr *row = expr_add(a, expr_mul(a, tt, I(a, t->bsz)), b);
  const Expr *v = te_load(a, t->xw, (const Expr *[]){d, row, g});
  if (t->b) {
    v = expr_add(a, v, te_load(a, t->b, (const Expr *[]){d, g}));
    if (rb) v = expr_add(a, v, te_load(a, t->b, (const Expr *[]){d, expr_add(a, g, I(a, t->gates * t->h))}));
  }
  return v;
}

static const Expr *rh_at(Arena *a, const Rnn *t, const TeTensor *rh, int gate, const Expr *d, const Expr *b,
                         const Expr *j) {
  return te_load(a, rh, (const Expr *[]){d, b, expr_add(a, j, I(a, gate * t->h))});
}

/* Activation k of direction d (a select when the two directions differ);
 * gate pre-activations are clipped first (clip), LSTM's h(C) is not. */
static const Expr *act_clip(Arena *a, const Rnn *t, int k, const Expr *d, const Expr *x, bool clip) {
  const TopiRnnParams *p = t->p;
  if (clip && p->clip > 0) x = expr_min(a, expr_max(a, x, op_const(a, x->dtype, -p->clip)), op_const(a, x->dtype, p->clip));
  const Expr *f0 = apply_act(a, p->act[k], p->alpha[k], p->beta[k], x);
  if (p->directions == 1) return f0;
  int k1 = k + t->nact;
  if (p->act[k1] == p->act[k] && p->alpha[k1] == p->alpha[k] && p->beta[k1] == p->beta[k]) return f0;
  const Expr *f1 = apply_act(a, p->act[k1], p->alpha[k1], p->beta[k1], x);
  return expr_select(a, expr_binary(a, EXPR_EQ, d, I(a, 1)), f1, f0);
}

static const Expr *act(Arena *a, const Rnn *t, int k, const Expr *d, const Expr *x) { return act_clip(a, t, k, d, x, true); }

/* Keeps the previous state past the end of b's sequence. */
static const Expr *hold(Arena *a, const Rnn *t, const Expr *b, const Expr *now, const Expr *prev) {
  const Expr *ok = step_valid(a, t, b, t->loop->step);
  return ok ? expr_select(a, ok, now, prev) : now;
}

/* The state stages' bodies get (d, s, b, j). */
static const Expr *rnn_h_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user;
  const Expr *d = ax[0], *b = ax[2], *j = ax[3];
  const Expr *pre = expr_add(a, gate_input(a, t, 0, d, b, j, true), rh_at(a, t, t->rh, 0, d, b, j));
  return hold(a, t, b, act(a, t, 0, d, pre), hprev_at(a, t, d, b, j));
}

/* GRU reset gate r = f(X Wr + Wbr + Rbr + H Rr). */
static const Expr *gru_r_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user;
  const Expr *pre = expr_add(a, gate_input(a, t, 1, ax[0], ax[1], ax[2], true), rh_at(a, t, t->rh, 1, ax[0], ax[1], ax[2]));
  return act(a, t, 0, ax[0], pre);
}

/* rhp[d, b, j] = r * H(s-1): a row of its own, so the product below is a
 * plain multiply-accumulate of two loads (the step loop's register-tiled
 * GEMV, schedule_group.c) reading Rh^T along the gates. */
static const Expr *gru_rhp_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user;
  return expr_mul(a, te_load(a, t->rgate, ax), hprev_at(a, t, ax[0], ax[1], ax[2]));
}

/* (r * H) Rh^T */
static const Expr *gru_rhh_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user;
  IterVar kj = te_reduce_axis(a, "kj", t->h);
  const Expr *rhv = te_load(a, t->rhp, (const Expr *[]){ax[0], ax[1], kj.var});
  const Expr *w = te_load(a, t->rt, (const Expr *[]){ax[0], kj.var, expr_add(a, ax[2], I(a, 2 * t->h))});
  return te_sum(a, expr_mul(a, rhv, w), &kj, 1, NULL);
}

static const Expr *gru_h_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user;
  const Expr *d = ax[0], *b = ax[2], *j = ax[3];
  const Expr *one = op_const(a, t->x->dtype, 1), *hp = hprev_at(a, t, d, b, j);
  const Expr *z = act(a, t, 0, d, expr_add(a, gate_input(a, t, 0, d, b, j, true), rh_at(a, t, t->rh, 0, d, b, j)));
  const Expr *pre;
  if (t->p->linear_before_reset) {
    const Expr *rec = rh_at(a, t, t->rh, 2, d, b, j);
    if (t->b) rec = expr_add(a, rec, te_load(a, t->b, (const Expr *[]){d, expr_add(a, j, I(a, 5 * t->h))}));
    pre = expr_add(a, gate_input(a, t, 2, d, b, j, false), expr_mul(a, te_load(a, t->rgate, (const Expr *[]){d, b, j}), rec));
  } else {
    pre = expr_add(a, gate_input(a, t, 2, d, b, j, true), te_load(a, t->rhh, (const Expr *[]){d, b, j}));
  }
  const Expr *hn = act(a, t, 1, d, pre);
  const Expr *now = expr_add(a, expr_mul(a, expr_sub(a, one, z), hn), expr_mul(a, z, hp));
  return hold(a, t, b, now, hp);
}

/* LSTM peephole term p[d, which * H + j] * c (NULL without P). */
static const Expr *peephole(Arena *a, const Rnn *t, int which, const Expr *d, const Expr *j, const Expr *c) {
  if (!t->peep) return NULL;
  return expr_mul(a, te_load(a, t->peep, (const Expr *[]){d, expr_add(a, j, I(a, which * t->h))}), c);
}

static const Expr *add_opt(Arena *a, const Expr *x, const Expr *y) { return y ? expr_add(a, x, y) : x; }

/* C = f * C(s-1) + i * g(c~)  (gate order i o f c; peepholes i o f) */
static const Expr *lstm_c_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user;
  const Expr *d = ax[0], *b = ax[2], *j = ax[3], *cp = te_load(a, t->cp, (const Expr *[]){d, b, j});
  const Expr *pi = add_opt(a, expr_add(a, gate_input(a, t, 0, d, b, j, true), rh_at(a, t, t->rh, 0, d, b, j)),
                           peephole(a, t, 0, d, j, cp));
  const Expr *ig = act(a, t, 0, d, pi), *fg;
  if (t->p->input_forget) {
    fg = expr_sub(a, op_const(a, t->x->dtype, 1), ig);
  } else {
    const Expr *pf = add_opt(a, expr_add(a, gate_input(a, t, 2, d, b, j, true), rh_at(a, t, t->rh, 2, d, b, j)),
                             peephole(a, t, 2, d, j, cp));
    fg = act(a, t, 0, d, pf);
  }
  const Expr *cc = act(a, t, 1, d, expr_add(a, gate_input(a, t, 3, d, b, j, true), rh_at(a, t, t->rh, 3, d, b, j)));
  return hold(a, t, b, expr_add(a, expr_mul(a, fg, cp), expr_mul(a, ig, cc)), cp);
}

/* H = o * h(C), o using the new cell in its peephole. */
static const Expr *lstm_h_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user;
  const Expr *d = ax[0], *b = ax[2], *j = ax[3];
  const Expr *c = te_load(a, t->cs, ax);
  const Expr *po = add_opt(a, expr_add(a, gate_input(a, t, 1, d, b, j, true), rh_at(a, t, t->rh, 1, d, b, j)),
                           peephole(a, t, 1, d, j, c));
  const Expr *now = expr_mul(a, act(a, t, 0, d, po), act_clip(a, t, 2, d, c, false));
  return hold(a, t, b, now, hprev_at(a, t, d, b, j));
}

/* Y: the hidden state of the step that processed time index tt. */
static const Expr *y_body(Arena *a, const Expr *const *ax, void *user) {
  Rnn *t = user;
  const Expr *tt, *d, *b, *j = ax[3];
  if (t->p->layout) b = ax[0], tt = ax[1], d = ax[2];
  else tt = ax[0], d = ax[1], b = ax[2];
  const Expr *v = te_load(a, t->hs, (const Expr *[]){d, time_of(a, t, d, b, tt), b, j});
  const Expr *ok = step_valid(a, t, b, tt);
  return ok ? expr_select(a, ok, v, op_const(a, t->x->dtype, 0)) : v;
}

/* Y_h / Y_c: [D, B, H] (layout 1: [B, D, H]) from the last state. */
typedef struct Last {
  const TeTensor *state; /* [D, T, B, H] */
  int layout;
  int64_t last;
} Last;

static const Expr *last_body(Arena *a, const Expr *const *ax, void *user) {
  Last *l = user;
  const Expr *s = expr_i64(a, l->last);
  return l->layout ? te_load(a, l->state, (const Expr *[]){ax[1], s, ax[0], ax[2]})
                   : te_load(a, l->state, (const Expr *[]){ax[0], s, ax[1], ax[2]});
}

static bool check_rnn_input(const char *what, const TeTensor *t, DType dt, int rank, const int64_t *dims,
                            LoomError *err) {
  const char *on = "RNN";
  if (!op_check_tensor(on, what, t, err)) return false;
  bool ok = dtype_eq(t->dtype, dt) && t->ndim == rank;
  for (int d = 0; ok && d < rank; d++) ok = t->shape[d] == dims[d];
  if (!ok) {
    err_set(err, LOOM_ERR_INVALID_ARG, "RNN: %s (\"%s\") has the wrong dtype or shape (rank %d expected)", what, t->name, rank);
    return false;
  }
  return true;
}

bool topi_rnn(Arena *a, const char *name, const TopiRnnParams *p, const TeTensor *x, const TeTensor *w,
              const TeTensor *r, const TeTensor *b, const TeTensor *seq_lens, const TeTensor *h0,
              const TeTensor *c0, const TeTensor *peep, TeTensor **outs, LoomError *err) {
  const char *on = "RNN";
  if (!op_check_name(on, name, err) || !op_check_float(on, "X", x, err)) return false;
  Rnn t;
  memset(&t, 0, sizeof t);
  t.p = p, t.x = x, t.w = w, t.r = r, t.b = b, t.len = seq_lens, t.h0 = h0, t.c0 = c0, t.peep = peep;
  t.gates = p->kind == TOPI_RNN_LSTM ? 4 : p->kind == TOPI_RNN_GRU ? 3 : 1;
  t.nact = p->kind == TOPI_RNN_LSTM ? 3 : p->kind == TOPI_RNN_GRU ? 2 : 1;
  int64_t nd = p->directions;
  if (x->ndim != 3 || (nd != 1 && nd != 2) || p->hidden < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "RNN: X must be 3-D, with 1 or 2 directions and a positive hidden size");
    return false;
  }
  t.t = x->shape[p->layout ? 1 : 0], t.bsz = x->shape[p->layout ? 0 : 1], t.in = x->shape[2], t.h = p->hidden;
  int64_t gh = t.gates * t.h;
  bool tr = p->weights_transposed;
  int64_t ws[3] = {nd, tr ? t.in : gh, tr ? gh : t.in}, rs[3] = {nd, tr ? t.h : gh, tr ? gh : t.h}, bs[2] = {nd, 2 * gh}, ps[2] = {nd, 3 * t.h};
  int64_t hs0[3] = {nd, t.bsz, t.h}, hs1[3] = {t.bsz, nd, t.h};
  if (!check_rnn_input("W", w, x->dtype, 3, ws, err) || !check_rnn_input("R", r, x->dtype, 3, rs, err) ||
      (b && !check_rnn_input("B", b, x->dtype, 2, bs, err)) ||
      (h0 && !check_rnn_input("initial_h", h0, x->dtype, 3, p->layout ? hs1 : hs0, err)) ||
      (c0 && !check_rnn_input("initial_c", c0, x->dtype, 3, p->layout ? hs1 : hs0, err)) ||
      (peep && !check_rnn_input("P", peep, x->dtype, 2, ps, err)))
    return false;
  if (seq_lens && (!op_check_tensor(on, "sequence_lens", seq_lens, err) || !dtype_is_int(seq_lens->dtype) ||
                   seq_lens->ndim != 1 || seq_lens->shape[0] != t.bsz)) {
    if (!err->status) err_set(err, LOOM_ERR_INVALID_ARG, "RNN: sequence_lens must be integers of shape [%lld]", (long long)t.bsz);
    return false;
  }
  int64_t xws[3] = {nd, t.t * t.bsz, gh}, st[3] = {nd, t.bsz, t.h}, all[4] = {nd, t.t, t.bsz, t.h};
  int64_t wts[3] = {nd, t.in, gh}, rts[3] = {nd, t.h, gh};
  /* Transposed at compile time (constant weights, pass_pack_rnn.c), else
   * on every run, in stages of their own (a rule of its own keeps a copy
   * a stage, not inlined into the product). */
  if (tr) {
    t.wt = w, t.rt = r;
  } else if (!(t.wt = te_set_schedule_rule(te_compute(a, op_stage(a, name, "wt"), 3, wts, wt_body, &t, err), "transpose")) ||
             !(t.rt = te_set_schedule_rule(te_compute(a, op_stage(a, name, "rt"), 3, rts, rt_body, &t, err), "transpose"))) {
    return false;
  }
  if (!(t.xw = te_set_schedule_rule(te_compute(a, op_stage(a, name, "xw"), 3, xws, xw_body, &t, err), "matmul")))
    return false;
  /* The recurrence: for dir (independent), for step (ordered), the cell. */
  DType dt = x->dtype;
  int64_t rhs[3] = {nd, t.bsz, p->kind == TOPI_RNN_GRU && !p->linear_before_reset ? 2 * t.h : gh};
  if (!(t.loop = te_step_loop(a, "step", t.t, 1, (const char *[]){"dir"}, &nd, err)) ||
      !(t.hs = te_step_declare(a, t.loop, true, op_stage(a, name, "h"), dt, 4, all, err)) ||
      (p->kind == TOPI_RNN_LSTM && !(t.cs = te_step_declare(a, t.loop, true, op_stage(a, name, "c"), dt, 4, all, err))) ||
      !(t.hp = te_compute_step(a, t.loop, false, op_stage(a, name, "hp"), dt, 3, st, hp_body, &t, err)) ||
      !(t.rh = te_compute_step(a, t.loop, false, op_stage(a, name, "rh"), dt, 3, rhs, rh_body, &t, err)))
    return false;
  TeTensor *hs = (TeTensor *)t.hs, *cs = (TeTensor *)t.cs;
  if (p->kind == TOPI_RNN_SIMPLE) {
    if (!te_step_define(a, hs, rnn_h_body, &t, err)) return false;
  } else if (p->kind == TOPI_RNN_GRU) {
    if (!(t.rgate = te_compute_step(a, t.loop, false, op_stage(a, name, "r"), dt, 3, st, gru_r_body, &t, err)) ||
        (!p->linear_before_reset &&
         (!(t.rhp = te_compute_step(a, t.loop, false, op_stage(a, name, "rhp"), dt, 3, st, gru_rhp_body, &t, err)) ||
          !(t.rhh = te_compute_step(a, t.loop, false, op_stage(a, name, "rhh"), dt, 3, st, gru_rhh_body, &t, err)))) ||
        !te_step_define(a, hs, gru_h_body, &t, err))
      return false;
  } else if (!(t.cp = te_compute_step(a, t.loop, false, op_stage(a, name, "cp"), dt, 3, st, cp_body, &t, err)) ||
             !te_step_define(a, cs, lstm_c_body, &t, err) || !te_step_define(a, hs, lstm_h_body, &t, err)) {
    return false;
  }
  int64_t ys0[4] = {t.t, nd, t.bsz, t.h}, ys1[4] = {t.bsz, t.t, nd, t.h};
  Last lh = {t.hs, p->layout, t.t - 1}, lc = {t.cs, p->layout, t.t - 1};
  if (!(outs[0] = te_compute(a, name, 4, p->layout ? ys1 : ys0, y_body, &t, err)) ||
      !(outs[1] = te_compute(a, op_stage(a, name, "yh"), 3, p->layout ? hs1 : hs0, last_body, &lh, err)))
    return false;
  outs[2] = NULL;
  if (p->kind == TOPI_RNN_LSTM && !(outs[2] = te_compute(a, op_stage(a, name, "yc"), 3, p->layout ? hs1 : hs0, last_body, &lc, err)))
    return false;
  return true;
}
