/* Convolutions over any number of spatial axes with ONNX's attributes:
 * Conv (NCHW-style [N, C, d1..dn]; the blocked NCHWc fast path for 2-D is
 * op_nn.c), ConvTranspose and Col2Im.
 *
 * ConvTranspose is a convolution of the input spread out by the strides
 * (stride - 1 zeros between elements) and padded by (k - 1) * dilation -
 * pad on each side, with the kernel flipped and its two channel axes
 * swapped (TVM's conv2d_transpose). Both rearrangements are injective
 * stages the schedule inlines into the reduction. Col2Im sums, for every
 * image position, the column entries of the blocks that cover it: one
 * reduction over the block offsets whose condition keeps the offsets that
 * land on a block position. */
#include "topi/op_internal.h"

#include <string.h>

enum { MS = TOPI_MAX_SPATIAL };

static int64_t or_one(int64_t v) { return v == 0 ? 1 : v; }

typedef struct ConvNdArgs {
  const TeTensor *x, *w, *bias, *conv;
  int nsp;
  int64_t s[MS], d[MS], group, cg, kg;
  int64_t pb[MS], up_s[MS], up_n[MS], cin, kout; /* ConvTranspose */
  int64_t k[MS];
  IterVar rc, r[MS];
} ConvNdArgs;

static const char *const *conv_axis_names(int nsp) {
  static const char *const n1[] = {"n", "c", "w"}, *const n2[] = {"n", "c", "h", "w"},
                           *const n3[] = {"n", "c", "d", "h", "w"};
  return nsp == 1 ? n1 : nsp == 2 ? n2 : nsp == 3 ? n3 : NULL;
}

static const char *kernel_axis_name(Arena *a, int nsp, int i) {
  static const char *const names[3] = {"rz", "ry", "rx"};
  return nsp <= 3 ? names[3 - nsp + i] : arena_printf(a, "r%d", i);
}

static const Expr *conv_body(Arena *a, const Expr *const *ax, void *user) {
  ConvNdArgs *c = user;
  const Expr *ch = c->rc.var;
  if (c->group > 1) {
    const Expr *g = expr_floordiv(a, ax[1], expr_i64(a, c->kg));
    ch = expr_add(a, expr_mul(a, g, expr_i64(a, c->cg)), ch);
  }
  const Expr *xi[TOPI_MAX_RANK], *wi[TOPI_MAX_RANK];
  IterVar axes[MS + 1];
  xi[0] = ax[0], xi[1] = ch, wi[0] = ax[1], wi[1] = c->rc.var, axes[0] = c->rc;
  for (int i = 0; i < c->nsp; i++) {
    xi[2 + i] = expr_add(a, expr_mul(a, ax[2 + i], expr_i64(a, c->s[i])), expr_mul(a, c->r[i].var, expr_i64(a, c->d[i])));
    wi[2 + i] = c->r[i].var;
    axes[1 + i] = c->r[i];
  }
  const Expr *prod = expr_mul(a, te_load(a, c->x, xi), te_load(a, c->w, wi));
  return te_sum(a, prod, axes, 1 + c->nsp, NULL);
}

static const Expr *bias_body(Arena *a, const Expr *const *ax, void *user) {
  ConvNdArgs *c = user;
  return expr_add(a, te_load(a, c->conv, ax), te_load(a, c->bias, &ax[1]));
}

/* f32/f64, or i32 (ConvInteger's shifted operands). */
static bool check_conv_dtype(const char *on, const char *what, const TeTensor *t, LoomError *err) {
  if (t && dtype_eq(t->dtype, DT_I32)) return op_check_tensor(on, what, t, err);
  return op_check_float(on, what, t, err);
}

static bool check_conv_operands(const char *on, const char *name, const TeTensor *x, const TeTensor *w,
                                const TopiWindowParams *p, LoomError *err) {
  if (!op_check_name(on, name, err) || !check_conv_dtype(on, "X", x, err) || !check_conv_dtype(on, "W", w, err))
    return false;
  if (!p || p->nsp < 1 || p->nsp > MS || x->ndim != 2 + p->nsp || w->ndim != x->ndim ||
      !dtype_eq(x->dtype, w->dtype)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: X and W must both have rank %d ([N, C, spatial...]; got %d and %d)", on,
            p ? 2 + p->nsp : 3, x->ndim, w->ndim);
    return false;
  }
  return true;
}

TeTensor *topi_conv_nd_onnx(Arena *a, const char *name, const TeTensor *x, const TeTensor *w,
                            const TeTensor *bias, const TopiWindowParams *p, LoomError *err) {
  const char *on = "Conv";
  if (!check_conv_operands(on, name, x, w, p, err)) return NULL;
  int nsp = p->nsp;
  ConvNdArgs c = {.w = w, .bias = bias, .nsp = nsp, .group = or_one(p->group)};
  int64_t C = x->shape[1], K = w->shape[0];
  if (c.group < 1 || C % c.group != 0 || K % c.group != 0 || w->shape[1] != C / c.group) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "%s: X has %lld channels, W is [%lld, %lld, ...], group %lld: expected channels divisible by group "
            "and W[1] == C / group",
            on, (long long)C, (long long)K, (long long)w->shape[1], (long long)c.group);
    return NULL;
  }
  if (bias && !check_conv_dtype(on, "B", bias, err)) return NULL;
  if (bias && (bias->ndim != 1 || bias->shape[0] != K)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: bias B (\"%s\") must have shape [%lld]", on, bias->name, (long long)K);
    return NULL;
  }
  int64_t oshape[TOPI_MAX_RANK] = {x->shape[0], K}, before[TOPI_MAX_RANK] = {0}, after[TOPI_MAX_RANK] = {0};
  bool padded = false;
  for (int i = 0; i < nsp; i++) {
    c.s[i] = or_one(p->strides[i]), c.d[i] = or_one(p->dilations[i]);
    before[2 + i] = p->pads[i], after[2 + i] = p->pads[nsp + i];
    if (c.s[i] < 1 || c.d[i] < 1 || before[2 + i] < 0 || after[2 + i] < 0) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: strides and dilations must be >= 1, pads >= 0", on);
      return NULL;
    }
    padded |= before[2 + i] || after[2 + i];
    int64_t span = x->shape[2 + i] + before[2 + i] + after[2 + i] - c.d[i] * (w->shape[2 + i] - 1) - 1;
    if (span < 0) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: kernel extent %lld (dilated) is larger than the padded input %lld", on,
              (long long)w->shape[2 + i], (long long)(x->shape[2 + i] + before[2 + i] + after[2 + i]));
      return NULL;
    }
    oshape[2 + i] = span / c.s[i] + 1;
    c.r[i] = te_reduce_axis(a, kernel_axis_name(a, nsp, i), w->shape[2 + i]);
  }
  c.x = padded ? topi_pad(a, op_stage(a, name, "pad"), x, before, after, op_const(a, x->dtype, 0), err) : x;
  if (!c.x) return NULL;
  c.cg = C / c.group, c.kg = K / c.group;
  c.rc = te_reduce_axis(a, "rc", c.cg);
  const char *const *names = conv_axis_names(nsp);
  TeTensor *conv = te_compute_named(a, bias ? op_stage(a, name, "conv") : name, x->ndim, oshape, names, conv_body, &c,
                                    err);
  if (!conv || !bias) return conv;
  c.conv = conv;
  return te_compute_named(a, name, x->ndim, oshape, names, bias_body, &c, err);
}

/* ---------------- ConvInteger ---------------- */

typedef struct ShiftArgs {
  const TeTensor *x, *zp;
} ShiftArgs;

/* i32(x) - i32(zero point): a scalar, or one per index of axis 0 (W's
 * output channels). */
static const Expr *shift_body(Arena *a, const Expr *const *ax, void *user) {
  ShiftArgs *s = user;
  const Expr *v = expr_cast(a, DT_I32, te_load(a, s->x, ax));
  if (!s->zp) return v;
  const Expr *zi[TOPI_MAX_RANK] = {0};
  if (s->zp->ndim == 1) zi[0] = s->zp->shape[0] > 1 ? ax[0] : expr_i64(a, 0);
  for (int d = 1; d < s->zp->ndim; d++) zi[d] = expr_i64(a, 0);
  return expr_sub(a, v, expr_cast(a, DT_I32, te_load(a, s->zp, zi)));
}

static TeTensor *shifted(Arena *a, const char *name, const char *on, const TeTensor *x, const TeTensor *zp,
                         bool per_channel, LoomError *err) {
  if (!op_check_tensor(on, "input", x, err) || (zp && !op_check_tensor(on, "zero point", zp, err))) return NULL;
  int64_t n = zp ? op_numel(zp->ndim, zp->shape) : 1;
  bool ok = dtype_is_int(x->dtype) && x->dtype.bits == 8 && (!zp || dtype_eq(zp->dtype, x->dtype)) &&
            (n == 1 || (per_channel && zp->ndim == 1 && x->ndim > 0 && n == x->shape[0]));
  if (!ok) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: \"%s\" must be i8/u8 with a zero point of its dtype (a scalar%s)", on,
            x->name, per_channel ? " or one per output channel" : "");
    return NULL;
  }
  ShiftArgs s = {x, zp};
  return te_compute(a, name, x->ndim, x->shape, shift_body, &s, err);
}

TeTensor *topi_conv_integer_nd(Arena *a, const char *name, const TeTensor *x, const TeTensor *w, const TeTensor *x_zp,
                               const TeTensor *w_zp, const TopiWindowParams *p, LoomError *err) {
  const char *on = "ConvInteger";
  if (!op_check_name(on, name, err)) return NULL;
  TeTensor *xs = shifted(a, op_stage(a, name, "x"), on, x, x_zp, false, err);
  TeTensor *ws = xs ? shifted(a, op_stage(a, name, "w"), on, w, w_zp, true, err) : NULL;
  return ws ? topi_conv_nd_onnx(a, name, xs, ws, NULL, p, err) : NULL;
}

/* ---------------- ConvTranspose ---------------- */

/* x spread by the strides: up[j] = x[(j - pb) / s] where (j - pb) is a
 * non-negative multiple of s inside x, else 0. */
static const Expr *spread_body(Arena *a, const Expr *const *ax, void *user) {
  ConvNdArgs *c = user;
  const Expr *xi[TOPI_MAX_RANK], *inside = NULL;
  xi[0] = ax[0], xi[1] = ax[1];
  for (int i = 0; i < c->nsp; i++) {
    const Expr *q = expr_sub(a, ax[2 + i], expr_i64(a, c->pb[i]));
    const Expr *s = expr_i64(a, c->up_s[i]);
    const Expr *ok = expr_and(a, expr_binary(a, EXPR_GE, q, expr_i64(a, 0)),
                              expr_lt(a, q, expr_i64(a, (c->up_n[i] - 1) * c->up_s[i] + 1)));
    if (c->up_s[i] > 1) ok = expr_and(a, ok, expr_binary(a, EXPR_EQ, expr_floormod(a, q, s), expr_i64(a, 0)));
    inside = inside ? expr_and(a, inside, ok) : ok;
    const Expr *src = c->up_s[i] > 1 ? expr_floordiv(a, q, s) : q;
    xi[2 + i] = expr_min(a, expr_max(a, src, expr_i64(a, 0)), expr_i64(a, c->up_n[i] - 1));
  }
  return expr_select(a, inside, te_load(a, c->x, xi), op_const(a, c->x->dtype, 0));
}

/* W [C, K/g, k...] -> [K, C/g, k...] flipped: w'[o, ci, r] = W[g * C/g + ci, o - g * K/g, k - 1 - r]. */
static const Expr *flip_body(Arena *a, const Expr *const *ax, void *user) {
  ConvNdArgs *c = user;
  const Expr *wi[TOPI_MAX_RANK];
  const Expr *g = expr_floordiv(a, ax[0], expr_i64(a, c->kg));
  wi[0] = c->group > 1 ? expr_add(a, expr_mul(a, g, expr_i64(a, c->cg)), ax[1]) : ax[1];
  wi[1] = c->group > 1 ? expr_floormod(a, ax[0], expr_i64(a, c->kg)) : ax[0];
  for (int i = 0; i < c->nsp; i++) wi[2 + i] = expr_sub(a, expr_i64(a, c->k[i] - 1), ax[2 + i]);
  return te_load(a, c->w, wi);
}

TeTensor *topi_conv_transpose_nd(Arena *a, const char *name, const TeTensor *x, const TeTensor *w,
                                 const TeTensor *bias, const TopiWindowParams *p, LoomError *err) {
  const char *on = "ConvTranspose";
  if (!check_conv_operands(on, name, x, w, p, err)) return NULL;
  int nsp = p->nsp;
  ConvNdArgs c = {.x = x, .w = w, .nsp = nsp, .group = or_one(p->group)};
  int64_t C = x->shape[1];
  if (c.group < 1 || w->shape[0] != C || C % c.group != 0) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: W is [%lld, ...] for %lld input channels and group %lld (expected W[0] == C)",
            on, (long long)w->shape[0], (long long)C, (long long)c.group);
    return NULL;
  }
  c.cg = C / c.group, c.kg = w->shape[1];
  int64_t K = c.kg * c.group;
  int64_t ushape[TOPI_MAX_RANK] = {x->shape[0], C}, wshape[TOPI_MAX_RANK] = {K, c.cg};
  TopiWindowParams cp;
  memset(&cp, 0, sizeof cp);
  cp.nsp = nsp, cp.group = c.group;
  for (int i = 0; i < nsp; i++) {
    int64_t s = or_one(p->strides[i]), d = or_one(p->dilations[i]), k = w->shape[2 + i];
    int64_t pb = p->pads[i], pe = p->pads[nsp + i], op = p->output_padding[i];
    /* Negative pads (an output_shape beyond the full output) extend it. */
    if (s < 1 || d < 1 || op < 0) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: strides and dilations must be >= 1, output_padding >= 0", on);
      return NULL;
    }
    /* The spread input, with (k - 1) d - pad on each side (output_padding
     * at the end); a pad larger than that crops instead. */
    int64_t lead = (k - 1) * d - pb, trail = (k - 1) * d - pe + op;
    int64_t ext = (x->shape[2 + i] - 1) * s + 1 + lead + trail;
    if (ext < (k - 1) * d + 1) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: pads leave no output on spatial axis %d", on, i);
      return NULL;
    }
    c.pb[i] = lead, c.up_s[i] = s, c.up_n[i] = x->shape[2 + i], c.k[i] = k;
    ushape[2 + i] = ext;
    wshape[2 + i] = k;
    cp.dilations[i] = d;
  }
  TeTensor *up = te_compute_named(a, op_stage(a, name, "up"), x->ndim, ushape, conv_axis_names(nsp), spread_body, &c,
                                  err);
  TeTensor *wf = up ? te_compute(a, op_stage(a, name, "w"), w->ndim, wshape, flip_body, &c, err) : NULL;
  return wf ? topi_conv_nd_onnx(a, name, up, wf, bias, &cp, err) : NULL;
}

/* ---------------- Col2Im ---------------- */

typedef struct Col2ImArgs {
  const TeTensor *x;
  int nsp;
  int64_t img[MS], blk[MS], s[MS], d[MS], pb[MS], nb[MS]; /* nb: blocks along each axis */
  IterVar r[MS];
} Col2ImArgs;

static const Expr *col2im_body(Arena *a, const Expr *const *ax, void *user) {
  Col2ImArgs *c = user;
  const Expr *cond = NULL, *bflat = expr_i64(a, 0), *lflat = expr_i64(a, 0);
  for (int i = 0; i < c->nsp; i++) {
    /* Image position p (padded: p + pb) = l * s + r * d for block l. */
    const Expr *q = expr_sub(a, expr_add(a, ax[2 + i], expr_i64(a, c->pb[i])), expr_mul(a, c->r[i].var, expr_i64(a, c->d[i])));
    const Expr *ok = expr_and(a, expr_binary(a, EXPR_GE, q, expr_i64(a, 0)),
                              expr_lt(a, q, expr_i64(a, (c->nb[i] - 1) * c->s[i] + 1)));
    if (c->s[i] > 1) ok = expr_and(a, ok, expr_binary(a, EXPR_EQ, expr_floormod(a, q, expr_i64(a, c->s[i])), expr_i64(a, 0)));
    cond = cond ? expr_and(a, cond, ok) : ok;
    const Expr *l = c->s[i] > 1 ? expr_floordiv(a, q, expr_i64(a, c->s[i])) : q;
    l = expr_min(a, expr_max(a, l, expr_i64(a, 0)), expr_i64(a, c->nb[i] - 1));
    bflat = expr_add(a, expr_mul(a, bflat, expr_i64(a, c->blk[i])), c->r[i].var);
    lflat = expr_add(a, expr_mul(a, lflat, expr_i64(a, c->nb[i])), l);
  }
  int64_t B = 1;
  for (int i = 0; i < c->nsp; i++) B *= c->blk[i];
  const Expr *xi[3] = {ax[0], expr_add(a, expr_mul(a, ax[1], expr_i64(a, B)), bflat), lflat};
  return te_sum(a, te_load(a, c->x, xi), c->r, c->nsp, cond);
}

TeTensor *topi_col2im(Arena *a, const char *name, const TeTensor *x, const int64_t *image, const TopiWindowParams *p,
                      LoomError *err) {
  const char *on = "Col2Im";
  if (!op_check_name(on, name, err) || !op_check_float(on, "input", x, err)) return NULL;
  if (!p || !image || p->nsp < 1 || p->nsp > MS || x->ndim != 3) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: input must be [N, C * prod(block_shape), L] with 1..%d image axes", on, MS);
    return NULL;
  }
  int nsp = p->nsp;
  Col2ImArgs c = {.x = x, .nsp = nsp};
  int64_t B = 1, L = 1, oshape[TOPI_MAX_RANK] = {x->shape[0], 0};
  for (int i = 0; i < nsp; i++) {
    c.img[i] = image[i], c.blk[i] = p->kernel[i], c.s[i] = or_one(p->strides[i]), c.d[i] = or_one(p->dilations[i]);
    c.pb[i] = p->pads[i];
    int64_t span = image[i] + p->pads[i] + p->pads[nsp + i] - (c.blk[i] - 1) * c.d[i] - 1;
    if (image[i] < 1 || c.blk[i] < 1 || c.s[i] < 1 || c.d[i] < 1 || p->pads[i] < 0 || p->pads[nsp + i] < 0 || span < 0) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: image_shape, block_shape, strides, dilations or pads out of range (axis %d)",
              on, i);
      return NULL;
    }
    c.nb[i] = span / c.s[i] + 1;
    B *= c.blk[i], L *= c.nb[i];
    oshape[2 + i] = image[i];
    c.r[i] = te_reduce_axis(a, arena_printf(a, "rb%d", i), c.blk[i]);
  }
  if (x->shape[1] % B != 0 || x->shape[2] != L) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: input is [%lld, %lld, %lld], expected [N, C * %lld, %lld]", on,
            (long long)x->shape[0], (long long)x->shape[1], (long long)x->shape[2], (long long)B, (long long)L);
    return NULL;
  }
  oshape[1] = x->shape[1] / B;
  return te_compute_named(a, name, 2 + nsp, oshape, conv_axis_names(nsp), col2im_body, &c, err);
}
