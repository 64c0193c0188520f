/* 2-D MaxPool / AveragePool with ONNX's attributes, on NCHW [N, C, H, W] and
 * on the blocked NCHWc layout [N, C/c, H, W, c] (so a network whose
 * convolutions run blocked keeps its pools blocked too: no LayoutTransform
 * around every pool). One implementation: the blocked form only adds the
 * innermost channel-block axis, which is what lets a schedule vectorize
 * across it. */
#include "topi/op_internal.h"

#include <math.h>
#include <string.h>

static const char *const pool_axis_names[5] = {"n", "c", "h", "w", "cb"};

typedef struct PoolNchwcArgs {
  const TeTensor *x, *sum;
  int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, H, W;
  bool include_pad;
  int64_t fixed_count; /* > 0: every window counts this many (no clipping) */
  bool blocked;        /* a trailing channel-block axis */
  IterVar ry, rx;
} PoolNchwcArgs;

static int64_t or_one(int64_t v) { return v == 0 ? 1 : v; }

static const Expr *window_load(Arena *a, PoolNchwcArgs *p, const Expr *const *ax) {
  const Expr *ih = expr_add(a, expr_mul(a, ax[2], expr_i64(a, p->sh)), expr_mul(a, p->ry.var, expr_i64(a, p->dh)));
  const Expr *iw = expr_add(a, expr_mul(a, ax[3], expr_i64(a, p->sw)), expr_mul(a, p->rx.var, expr_i64(a, p->dw)));
  const Expr *i[5] = {ax[0], ax[1], ih, iw, p->blocked ? ax[4] : NULL};
  return te_load(a, p->x, i);
}

static const Expr *max_body(Arena *a, const Expr *const *ax, void *user) {
  PoolNchwcArgs *p = user;
  IterVar axes[2] = {p->ry, p->rx};
  return te_max(a, window_load(a, p, ax), axes, 2, NULL);
}

static const Expr *sum_body(Arena *a, const Expr *const *ax, void *user) {
  PoolNchwcArgs *p = user;
  IterVar axes[2] = {p->ry, p->rx};
  return te_sum(a, window_load(a, p, ax), axes, 2, NULL);
}

/* Window extent along one axis: clipped to the padded input when padding
 * counts, to the input itself otherwise (ONNX Runtime's and PyTorch's rule,
 * as topi_pool2d_onnx). */
static const Expr *window_count(Arena *a, const Expr *o, int64_t s, int64_t pad_begin, int64_t pad_end, int64_t k,
                                int64_t n, bool include_pad) {
  const Expr *start = expr_sub(a, expr_mul(a, o, expr_i64(a, s)), expr_i64(a, pad_begin));
  const Expr *end = expr_add(a, start, expr_i64(a, k));
  if (include_pad) return expr_sub(a, expr_min(a, end, expr_i64(a, n + pad_end)), start);
  return expr_sub(a, expr_min(a, end, expr_i64(a, n)), expr_max(a, start, expr_i64(a, 0)));
}

static const Expr *avg_body(Arena *a, const Expr *const *ax, void *user) {
  PoolNchwcArgs *p = user;
  if (p->fixed_count > 0)
    return expr_binary(a, EXPR_DIV, te_load(a, p->sum, ax), expr_float(a, p->sum->dtype, (double)p->fixed_count));
  const Expr *ch = window_count(a, ax[2], p->sh, p->pt, p->pb, p->kh, p->H, p->include_pad);
  const Expr *cw = window_count(a, ax[3], p->sw, p->pl, p->pr, p->kw, p->W, p->include_pad);
  const Expr *cnt = expr_cast(a, p->sum->dtype, expr_mul(a, ch, cw));
  return expr_binary(a, EXPR_DIV, te_load(a, p->sum, ax), cnt);
}

/* True when no window along this axis is clipped by the counting rule, so
 * every window counts k elements (DenseNet's 2x2 / 2 transitions,
 * Inception's explicitly padded 3x3 / 1 pools): the division is then by a
 * constant instead of a min/max expression per output. */
static bool window_never_clipped(int64_t o, int64_t s, int64_t pad_begin, int64_t pad_end, int64_t k, int64_t n,
                                 bool include_pad) {
  int64_t last_end = (o - 1) * s - pad_begin + k;
  if (include_pad) return last_end <= n + pad_end;
  return pad_begin == 0 && last_end <= n;
}

static int64_t out_extent(int64_t n, int64_t pb, int64_t pe, int64_t eff, int64_t s, bool ceil_mode) {
  int64_t span = n + pb + pe - eff;
  if (span < 0) return 0;
  if (!ceil_mode) return span / s + 1;
  int64_t o = (span + s - 1) / s + 1;
  if ((o - 1) * s >= n + pb) o--; /* the last window would start in the end padding */
  return o;
}

static TeTensor *pool2d(Arena *a, const char *name, TopiPoolKind kind, const TeTensor *x, const TopiPoolParams *pp,
                        bool blocked, LoomError *err) {
  const char *on = kind == TOPI_POOL_MAX ? (blocked ? "MaxPoolNCHWc" : "MaxPool")
                                         : (blocked ? "AveragePoolNCHWc" : "AveragePool");
  int rank = blocked ? 5 : 4;
  if (!op_check_name(on, name, err) || !op_check_float(on, "X", x, err)) return NULL;
  if (!pp) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: kernel_shape is required", on);
    return NULL;
  }
  if (x->ndim != rank) {
    err_set(err, blocked ? LOOM_ERR_INVALID_ARG : LOOM_ERR_UNSUPPORTED,
            "%s: X (\"%s\") has rank %d, expected %s", on, x->name, x->ndim,
            blocked ? "5 (N, C/c, H, W, c)" : "4 (only 2-D pooling is supported)");
    return NULL;
  }
  PoolNchwcArgs p = {.x = x, .kh = pp->kernel[0], .kw = pp->kernel[1], .sh = or_one(pp->strides[0]),
                     .sw = or_one(pp->strides[1]), .dh = or_one(pp->dilations[0]), .dw = or_one(pp->dilations[1]),
                     .pt = pp->pads[0], .pl = pp->pads[1], .pb = pp->pads[2], .pr = pp->pads[3],
                     .H = x->shape[2], .W = x->shape[3], .include_pad = pp->count_include_pad,
                     .blocked = blocked};
  if (p.kh < 1 || p.kw < 1 || p.sh < 1 || p.sw < 1 || p.dh < 1 || p.dw < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: kernel_shape, strides and dilations must be >= 1", on);
    return NULL;
  }
  if (p.pt < 0 || p.pl < 0 || p.pb < 0 || p.pr < 0 || p.pt >= p.kh * p.dh || p.pl >= p.kw * p.dw ||
      p.pb >= p.kh * p.dh || p.pr >= p.kw * p.dw) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: pads must be >= 0 and smaller than the kernel", on);
    return NULL;
  }
  if (kind == TOPI_POOL_AVG && (p.dh != 1 || p.dw != 1)) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "%s: dilations other than 1 are not supported", on);
    return NULL;
  }
  int64_t effh = p.dh * (p.kh - 1) + 1, effw = p.dw * (p.kw - 1) + 1;
  int64_t oh = out_extent(p.H, p.pt, p.pb, effh, p.sh, pp->ceil_mode);
  int64_t ow = out_extent(p.W, p.pl, p.pr, effw, p.sw, pp->ceil_mode);
  if (oh < 1 || ow < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: kernel %lldx%lld is larger than the padded input", on, (long long)p.kh,
            (long long)p.kw);
    return NULL;
  }
  /* ceil_mode windows may run past the end padding: pad that far too. */
  int64_t eb = (oh - 1) * p.sh + effh - p.H - p.pt, er = (ow - 1) * p.sw + effw - p.W - p.pl;
  if (eb < p.pb) eb = p.pb;
  if (er < p.pr) er = p.pr;
  if (p.pt || p.pl || eb || er) {
    int64_t before[5] = {0, 0, p.pt, p.pl, 0}, after[5] = {0, 0, eb, er, 0}; /* [4] unused for NCHW */
    const Expr *padv = kind == TOPI_POOL_MAX ? expr_float(a, x->dtype, -INFINITY) : op_const(a, x->dtype, 0);
    p.x = topi_pad(a, op_stage(a, name, "pad"), x, before, after, padv, err);
    if (!p.x) return NULL;
  }
  if (window_never_clipped(oh, p.sh, p.pt, p.pb, p.kh, p.H, p.include_pad) &&
      window_never_clipped(ow, p.sw, p.pl, p.pr, p.kw, p.W, p.include_pad))
    p.fixed_count = p.kh * p.kw;
  p.ry = te_reduce_axis(a, "ry", p.kh);
  p.rx = te_reduce_axis(a, "rx", p.kw);
  int64_t oshape[5] = {x->shape[0], x->shape[1], oh, ow, blocked ? x->shape[4] : 1};
  if (kind == TOPI_POOL_MAX) return te_compute_named(a, name, rank, oshape, pool_axis_names, max_body, &p, err);
  TeTensor *sum = te_compute_named(a, op_stage(a, name, "sum"), rank, oshape, pool_axis_names, sum_body, &p, err);
  if (!(p.sum = sum)) return NULL;
  return te_compute_named(a, name, rank, oshape, pool_axis_names, avg_body, &p, err);
}

TeTensor *topi_pool2d_onnx(Arena *a, const char *name, TopiPoolKind kind, const TeTensor *x,
                           const TopiPoolParams *pp, LoomError *err) {
  return pool2d(a, name, kind, x, pp, false, err);
}

TeTensor *topi_pool2d_nchwc_onnx(Arena *a, const char *name, TopiPoolKind kind, const TeTensor *x,
                                 const TopiPoolParams *pp, LoomError *err) {
  return pool2d(a, name, kind, x, pp, true, err);
}
