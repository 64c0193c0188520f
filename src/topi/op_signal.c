/* Signal-processing ops and Det as te compute definitions:
 *   - the window functions (Blackman, Hamming, Hann): one stage of cosines;
 *   - DFT and STFT: a reduction over the summed index of x * e^(-+i theta)
 *     with theta = 2 pi ((k n) mod N) / N (the mod keeps the angle small and
 *     exact), accumulated in f64, then a cast (and 1/N for the inverse);
 *   - MelWeightMatrix: the triangle corners as an integer stage, then the
 *     triangular filters;
 *   - Det: Gaussian elimination with partial pivoting unrolled over the
 *     columns, in f64.
 * Values follow the ONNX reference implementation. */
#include "topi/op_internal.h"

#include <math.h>
#include <string.h>

#define PI 3.14159265358979323846 /* M_PI is not C11 */

static const Expr *I(Arena *a, int64_t v) { return expr_i64(a, v); }
static const Expr *F(Arena *a, double v) { return expr_float(a, DT_F64, v); }
static const Expr *call1(Arena *a, CallOp op, const Expr *x) { return expr_call(a, op, x->dtype, &x, 1); }
static const Expr *to_f64(Arena *a, const Expr *x) { return dtype_eq(x->dtype, DT_F64) ? x : expr_cast(a, DT_F64, x); }
static const Expr *quot(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_DIV, x, y); }

static bool check_out_dtype(const char *op, DType t, LoomError *err) {
  if (!dtype_is_float(t) && !dtype_is_int(t)) {
    char b[16];
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: output_datatype %s is not supported", op, dtype_str(t, b));
    return false;
  }
  return true;
}

/* =============================== windows =============================== */

typedef struct Window {
  TopiWindowKind kind;
  double n1; /* N (periodic) or N - 1 */
  DType dt;
} Window;

static const Expr *window_body(Arena *a, const Expr *const *ax, void *user) {
  Window *w = user;
  const Expr *n = to_f64(a, ax[0]), *v;
  const Expr *two = quot(a, expr_mul(a, n, F(a, 2 * PI)), F(a, w->n1));
  if (w->kind == TOPI_WINDOW_BLACKMAN) {
    const Expr *four = quot(a, expr_mul(a, n, F(a, 4 * PI)), F(a, w->n1));
    v = expr_add(a, expr_add(a, expr_mul(a, call1(a, CALL_COS, two), F(a, -0.5)), expr_mul(a, call1(a, CALL_COS, four), F(a, 0.08))),
                 F(a, 0.42));
  } else if (w->kind == TOPI_WINDOW_HAMMING) {
    v = expr_sub(a, F(a, 25.0 / 46.0), expr_mul(a, call1(a, CALL_COS, two), F(a, 1 - 25.0 / 46.0)));
  } else {
    const Expr *s = call1(a, CALL_SIN, quot(a, expr_mul(a, n, F(a, PI)), F(a, w->n1)));
    v = expr_mul(a, s, s);
  }
  return dtype_eq(w->dt, DT_F64) ? v : expr_cast(a, w->dt, v);
}

TeTensor *topi_window(Arena *a, const char *name, TopiWindowKind kind, int64_t size, bool periodic, DType dtype,
                      LoomError *err) {
  const char *on = kind == TOPI_WINDOW_BLACKMAN ? "BlackmanWindow" : kind == TOPI_WINDOW_HAMMING ? "HammingWindow" : "HannWindow";
  if (!op_check_name(on, name, err) || !check_out_dtype(on, dtype, err)) return NULL;
  if (size < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: size %lld must be positive", on, (long long)size);
    return NULL;
  }
  Window w = {kind, (double)(periodic ? size : size - 1), dtype};
  return te_compute(a, name, 1, &size, window_body, &w, err);
}

/* ============================== DFT / STFT ============================== */

typedef struct Dft {
  const TeTensor *x, *window, *acc;
  int axis, rank;
  int64_t n, m;        /* DFT length, input extent along the axis */
  int64_t step;        /* STFT frame step (0 for DFT) */
  bool inverse, onesided, complex_in;
  DType dt;
} Dft;

/* theta = 2 pi ((k n) mod N) / N */
static const Expr *angle(Arena *a, const Dft *t, const Expr *k, const Expr *n) {
  const Expr *kn = expr_floormod(a, expr_mul(a, k, n), I(a, t->n));
  return expr_mul(a, to_f64(a, kn), F(a, 2 * PI / (double)t->n));
}

/* x at output index ax with the axis index replaced by `pos` and the last
 * (real/imaginary) index by comp (0 / 1): f64, 0 for the imaginary part of
 * a real input. */
static const Expr *x_at(Arena *a, const Dft *t, const Expr *const *ax, const Expr *pos, int comp) {
  if (comp == 1 && !t->complex_in) return F(a, 0);
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < t->rank; d++) idx[d] = ax[d];
  idx[t->axis] = pos;
  idx[t->rank - 1] = I(a, comp);
  return to_f64(a, te_load(a, t->x, idx));
}

/* Forward or inverse sum of (re, im) * e^(-+i theta) for output component
 * comp: forward re = xr cos + xi sin, im = xi cos - xr sin; the inverse
 * flips the sign of sin. */
static const Expr *rotate(Arena *a, const Dft *t, const Expr *xr, const Expr *xi, const Expr *th, const Expr *comp) {
  const Expr *c = call1(a, CALL_COS, th), *s = call1(a, CALL_SIN, th);
  if (t->inverse) s = expr_sub(a, F(a, 0), s);
  const Expr *re = expr_add(a, expr_mul(a, xr, c), expr_mul(a, xi, s));
  const Expr *im = expr_sub(a, expr_mul(a, xi, c), expr_mul(a, xr, s));
  return expr_select(a, expr_binary(a, EXPR_EQ, comp, I(a, 0)), re, im);
}

static const Expr *dft_acc_body(Arena *a, const Expr *const *ax, void *user) {
  Dft *t = user;
  const Expr *k = ax[t->axis], *comp = ax[t->rank - 1];
  if (t->inverse && t->onesided) {
    /* Half spectrum -> real signal: bin j > N/2 is conj(X[N - j]). */
    IterVar kj = te_reduce_axis(a, "kj", t->n);
    const Expr *j = kj.var, *upper = expr_binary(a, EXPR_GT, j, I(a, t->n / 2));
    const Expr *src = expr_select(a, upper, expr_sub(a, I(a, t->n), j), j);
    const Expr *in = expr_lt(a, src, I(a, t->m));
    const Expr *pos = expr_min(a, src, I(a, t->m - 1));
    const Expr *xr = x_at(a, t, ax, pos, 0), *xi = x_at(a, t, ax, pos, 1);
    xi = expr_select(a, upper, expr_sub(a, F(a, 0), xi), xi);
    const Expr *th = angle(a, t, k, j);
    const Expr *v = expr_sub(a, expr_mul(a, xr, call1(a, CALL_COS, th)), expr_mul(a, xi, call1(a, CALL_SIN, th)));
    return te_sum(a, expr_select(a, in, v, F(a, 0)), &kj, 1, NULL);
  }
  int64_t count = t->m < t->n ? t->m : t->n;
  IterVar kn = te_reduce_axis(a, "kn", count);
  const Expr *xr = x_at(a, t, ax, kn.var, 0), *xi = x_at(a, t, ax, kn.var, 1);
  return te_sum(a, rotate(a, t, xr, xi, angle(a, t, k, kn.var), comp), &kn, 1, NULL);
}

static const Expr *dft_out_body(Arena *a, const Expr *const *ax, void *user) {
  Dft *t = user;
  const Expr *v = te_load(a, t->acc, ax);
  if (t->inverse) v = quot(a, v, F(a, (double)t->n));
  return dtype_eq(t->dt, DT_F64) ? v : expr_cast(a, t->dt, v);
}

TeTensor *topi_dft(Arena *a, const char *name, const TeTensor *x, int64_t axis, int64_t dft_length, bool inverse,
                   bool onesided, LoomError *err) {
  const char *on = "DFT";
  if (!op_check_name(on, name, err) || !op_check_float(on, "input", x, err)) return NULL;
  Dft t;
  memset(&t, 0, sizeof t);
  t.x = x, t.rank = x->ndim, t.inverse = inverse, t.onesided = onesided, t.dt = x->dtype, t.n = dft_length;
  if (x->ndim < 2 || (x->shape[x->ndim - 1] != 1 && x->shape[x->ndim - 1] != 2)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "DFT: input (\"%s\") must end in an axis of extent 1 (real) or 2 (complex)", x->name);
    return NULL;
  }
  t.complex_in = x->shape[x->ndim - 1] == 2;
  if (!op_axis(on, "axis", axis, x->ndim, false, &t.axis, err)) return NULL;
  if (t.axis == x->ndim - 1 || dft_length < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "DFT: axis must not be the last axis and dft_length (%lld) must be positive",
            (long long)dft_length);
    return NULL;
  }
  t.m = x->shape[t.axis];
  int64_t shape[TOPI_MAX_RANK];
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
  shape[t.axis] = onesided && !inverse ? dft_length / 2 + 1 : dft_length;
  shape[x->ndim - 1] = inverse && onesided ? 1 : 2;
  TeTensor *acc = te_compute(a, op_stage(a, name, "acc"), x->ndim, shape, dft_acc_body, &t, err);
  if (!(t.acc = acc)) return NULL;
  return te_compute(a, name, x->ndim, shape, dft_out_body, &t, err);
}

/* out[b, f, k, comp] = sum_n w[n] x[b, f * step + n] e^(-i theta(k, n)) */
static const Expr *stft_acc_body(Arena *a, const Expr *const *ax, void *user) {
  Dft *t = user;
  IterVar kn = te_reduce_axis(a, "kn", t->n);
  const Expr *pos = expr_add(a, expr_mul(a, ax[1], I(a, t->step)), kn.var);
  const Expr *xr = te_load(a, t->x, (const Expr *[]){ax[0], pos, I(a, 0)});
  const Expr *xi = t->complex_in ? te_load(a, t->x, (const Expr *[]){ax[0], pos, I(a, 1)}) : NULL;
  if (t->window) {
    /* The reference weights the frame in the signal's dtype before the DFT. */
    const Expr *w = te_load(a, t->window, &kn.var);
    xr = expr_mul(a, xr, w);
    if (xi) xi = expr_mul(a, xi, w);
  }
  xr = to_f64(a, xr);
  xi = xi ? to_f64(a, xi) : F(a, 0);
  return te_sum(a, rotate(a, t, xr, xi, angle(a, t, ax[2], kn.var), ax[3]), &kn, 1, NULL);
}

TeTensor *topi_stft(Arena *a, const char *name, const TeTensor *x, int64_t frame_step, const TeTensor *window,
                    int64_t frame_length, bool onesided, LoomError *err) {
  const char *on = "STFT";
  if (!op_check_name(on, name, err) || !op_check_float(on, "signal", x, err)) return NULL;
  if (x->ndim != 3 || (x->shape[2] != 1 && x->shape[2] != 2) || frame_step < 1 || frame_length < 1 ||
      frame_length > x->shape[1]) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "STFT: signal must be [batch, length, 1 or 2], frame_step positive and frame_length in 1..length");
    return NULL;
  }
  if (window && (!op_check_tensor(on, "window", window, err) || window->ndim != 1 || window->shape[0] != frame_length ||
                 !dtype_eq(window->dtype, x->dtype))) {
    if (!err->status) err_set(err, LOOM_ERR_INVALID_ARG, "STFT: window must be [%lld] of the signal's dtype", (long long)frame_length);
    return NULL;
  }
  Dft t;
  memset(&t, 0, sizeof t);
  t.x = x, t.window = window, t.n = frame_length, t.step = frame_step, t.complex_in = x->shape[2] == 2, t.dt = x->dtype;
  int64_t shape[4] = {x->shape[0], 1 + (x->shape[1] - frame_length) / frame_step, onesided ? frame_length / 2 + 1 : frame_length, 2};
  t.rank = 4;
  TeTensor *acc = te_compute(a, op_stage(a, name, "acc"), 4, shape, stft_acc_body, &t, err);
  if (!(t.acc = acc)) return NULL;
  return te_compute(a, name, 4, shape, dft_out_body, &t, err);
}

/* ============================ MelWeightMatrix ============================ */

typedef struct Mel {
  const TeTensor *rate, *lower, *upper, *bins;
  int64_t nbins, len;
  DType dt;
} Mel;

/* 2595 * log10(1 + hz / 700), the first steps in the input's float type
 * as the reference does. */
static const Expr *hz_to_mel(Arena *a, const TeTensor *hz) {
  const Expr *h = te_load(a, hz, NULL);
  const Expr *l = call1(a, CALL_LOG, expr_add(a, op_const(a, h->dtype, 1), quot(a, h, op_const(a, h->dtype, 700))));
  return quot(a, to_f64(a, expr_mul(a, op_const(a, h->dtype, 2595), l)), F(a, log(10.0)));
}

/* The corner bin of filter point k: floor((len + 1) * hz(mel_k) / rate). */
static const Expr *mel_bins_body(Arena *a, const Expr *const *ax, void *user) {
  Mel *t = user;
  const Expr *lo = hz_to_mel(a, t->lower), *hi = hz_to_mel(a, t->upper);
  const Expr *step = quot(a, expr_sub(a, hi, lo), F(a, (double)(t->nbins + 2)));
  const Expr *mel = expr_add(a, expr_mul(a, to_f64(a, ax[0]), step), lo);
  const Expr *hz = expr_mul(a, F(a, 700), expr_sub(a, call1(a, CALL_EXP, expr_mul(a, quot(a, mel, F(a, 2595)), F(a, log(10.0)))), F(a, 1)));
  const Expr *v = quot(a, expr_mul(a, F(a, (double)(t->len + 1)), hz), to_f64(a, te_load(a, t->rate, NULL)));
  return expr_cast(a, DT_I64, call1(a, CALL_FLOOR, v));
}

static const Expr *mel_body(Arena *a, const Expr *const *ax, void *user) {
  Mel *t = user;
  const Expr *j = ax[0], *i = ax[1];
  const Expr *l = te_load(a, t->bins, &i), *c = te_load(a, t->bins, (const Expr *[]){expr_add(a, i, I(a, 1))});
  const Expr *h = te_load(a, t->bins, (const Expr *[]){expr_add(a, i, I(a, 2))});
  const Expr *zero = F(a, 0), *one = F(a, 1);
  /* Rising edge [l, c] (a single 1 at c when l == c), then the falling edge [c, h) overrides. */
  const Expr *ge = expr_binary(a, EXPR_GE, j, l), *le = expr_binary(a, EXPR_LE, j, c);
  const Expr *rise = quot(a, to_f64(a, expr_sub(a, j, l)), to_f64(a, expr_max(a, expr_sub(a, c, l), I(a, 1))));
  const Expr *up = expr_select(a, expr_binary(a, EXPR_EQ, c, l), expr_select(a, expr_binary(a, EXPR_EQ, j, c), one, zero),
                               expr_select(a, expr_and(a, ge, le), rise, zero));
  const Expr *fall = quot(a, to_f64(a, expr_sub(a, h, j)), to_f64(a, expr_max(a, expr_sub(a, h, c), I(a, 1))));
  const Expr *down = expr_and(a, expr_binary(a, EXPR_GT, h, c),
                              expr_and(a, expr_binary(a, EXPR_GE, j, c), expr_lt(a, j, h)));
  const Expr *v = expr_select(a, down, fall, up);
  return dtype_eq(t->dt, DT_F64) ? v : expr_cast(a, t->dt, v);
}

TeTensor *topi_mel_weight_matrix(Arena *a, const char *name, int64_t num_mel_bins, int64_t dft_length,
                                 const TeTensor *sample_rate, const TeTensor *lower, const TeTensor *upper,
                                 DType dtype, LoomError *err) {
  const char *on = "MelWeightMatrix";
  if (!op_check_name(on, name, err) || !check_out_dtype(on, dtype, err) ||
      !op_check_tensor(on, "sample_rate", sample_rate, err) || !op_check_float(on, "lower_edge_hertz", lower, err) ||
      !op_check_float(on, "upper_edge_hertz", upper, err))
    return NULL;
  if (sample_rate->ndim != 0 || lower->ndim != 0 || upper->ndim != 0 || !dtype_is_int(sample_rate->dtype) ||
      num_mel_bins < 1 || dft_length < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "MelWeightMatrix: sample_rate (integer) and the edge frequencies must be scalars, the bin counts positive");
    return NULL;
  }
  Mel t = {sample_rate, lower, upper, NULL, num_mel_bins, dft_length, dtype};
  int64_t nb = num_mel_bins + 2, shape[2] = {dft_length / 2 + 1, num_mel_bins};
  TeTensor *bins = te_compute(a, op_stage(a, name, "bins"), 1, &nb, mel_bins_body, &t, err);
  if (!(t.bins = bins)) return NULL;
  return te_compute(a, name, 2, shape, mel_body, &t, err);
}

/* ================================== Det ================================== */

typedef struct Det {
  const TeTensor *x, *cur, *pmax, *prow;
  const TeTensor *const *rows; /* pivot row of every column */
  int nb;                      /* batch rank */
  int64_t m, k;
  DType dt;
} Det;

/* cur[batch..., r, c] (f64; the input itself before the first column). */
static const Expr *det_at(Arena *a, const Det *t, const Expr *const *batch, const Expr *r, const Expr *c) {
  const Expr *idx[TOPI_MAX_RANK];
  for (int d = 0; d < t->nb; d++) idx[d] = batch[d];
  idx[t->nb] = r, idx[t->nb + 1] = c;
  return to_f64(a, te_load(a, t->cur, idx));
}

static const Expr *det_pmax_body(Arena *a, const Expr *const *ax, void *user) {
  Det *t = user;
  IterVar kr = te_reduce_axis(a, "kr", t->m);
  const Expr *v = call1(a, CALL_FABS, det_at(a, t, ax, kr.var, I(a, t->k)));
  return te_max(a, v, &kr, 1, expr_binary(a, EXPR_GE, kr.var, I(a, t->k)));
}

/* The first row r >= k holding the column's largest magnitude. */
static const Expr *det_prow_body(Arena *a, const Expr *const *ax, void *user) {
  Det *t = user;
  IterVar kr = te_reduce_axis(a, "kr", t->m);
  const Expr *is_max = expr_binary(a, EXPR_EQ, call1(a, CALL_FABS, det_at(a, t, ax, kr.var, I(a, t->k))), te_load(a, t->pmax, ax));
  const Expr *cond = expr_and(a, expr_binary(a, EXPR_GE, kr.var, I(a, t->k)), is_max);
  return te_min(a, kr.var, &kr, 1, cond);
}

/* Rows k and p swapped, then rows below k eliminated with row k. */
static const Expr *det_step_body(Arena *a, const Expr *const *ax, void *user) {
  Det *t = user;
  const Expr *r = ax[t->nb], *c = ax[t->nb + 1], *k = I(a, t->k);
  /* A pivot found nowhere (a NaN column) leaves the rows in place. */
  const Expr *row = te_load(a, t->prow, ax);
  const Expr *p = expr_select(a, expr_lt(a, row, I(a, t->m)), row, k);
  const Expr *src = expr_select(a, expr_binary(a, EXPR_EQ, r, k), p, expr_select(a, expr_binary(a, EXPR_EQ, r, p), k, r));
  const Expr *v = det_at(a, t, ax, src, c);
  const Expr *pivot = det_at(a, t, ax, p, k);
  const Expr *f = quot(a, det_at(a, t, ax, src, k), pivot);
  f = expr_select(a, expr_binary(a, EXPR_EQ, pivot, F(a, 0)), F(a, 0), f);
  const Expr *elim = expr_sub(a, v, expr_mul(a, f, det_at(a, t, ax, p, c)));
  return expr_select(a, expr_binary(a, EXPR_GT, r, k), elim, v);
}

static const Expr *det_out_body(Arena *a, const Expr *const *ax, void *user) {
  Det *t = user;
  const Expr *v = F(a, 1);
  for (int64_t k = 0; k < t->m; k++) {
    v = expr_mul(a, v, det_at(a, t, ax, I(a, k), I(a, k)));
    if (k + 1 < t->m) {
      const Expr *swapped = expr_binary(a, EXPR_NE, te_load(a, t->rows[k], ax), I(a, k));
      v = expr_select(a, swapped, expr_sub(a, F(a, 0), v), v);
    }
  }
  return dtype_eq(t->dt, DT_F64) ? v : expr_cast(a, t->dt, v);
}

TeTensor *topi_det(Arena *a, const char *name, const TeTensor *x, LoomError *err) {
  const char *on = "Det";
  if (!op_check_name(on, name, err) || !op_check_float(on, "X", x, err)) return NULL;
  if (x->ndim < 2 || x->shape[x->ndim - 1] != x->shape[x->ndim - 2]) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Det: X (\"%s\") must be [..., M, M]", x->name);
    return NULL;
  }
  Det t;
  memset(&t, 0, sizeof t);
  t.x = t.cur = x, t.nb = x->ndim - 2, t.m = x->shape[x->ndim - 1], t.dt = x->dtype;
  const TeTensor **rows = ARENA_ARRAY(a, const TeTensor *, t.m);
  for (t.k = 0; t.k + 1 < t.m; t.k++) {
    long long k = (long long)t.k;
    if (!(t.pmax = te_compute(a, arena_printf(a, "%s_m%lld", name, k), t.nb, x->shape, det_pmax_body, &t, err)) ||
        !(t.prow = rows[t.k] = te_compute(a, arena_printf(a, "%s_p%lld", name, k), t.nb, x->shape, det_prow_body, &t, err)))
      return NULL;
    TeTensor *next = te_compute(a, arena_printf(a, "%s_a%lld", name, k), x->ndim, x->shape, det_step_body, &t, err);
    if (!(t.cur = next)) return NULL;
  }
  t.rows = rows;
  return te_compute(a, name, t.nb, x->shape, det_out_body, &t, err);
}
